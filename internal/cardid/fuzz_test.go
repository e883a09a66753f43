package cardid

import (
	"bytes"
	"testing"
)

// FuzzRegisters feeds arbitrary register and block contents to every parser: none may panic,
// and what a parser accepts must decode the same way twice (no hidden state).
func FuzzRegisters(f *testing.F) {
	f.Add([]byte("aa585951454d552101deadbeef006200"), make([]byte, 512))
	f.Add([]byte("400e00325b590000ed2f7f800a400000"), append([]byte("Transcend"), make([]byte, 503)...))
	f.Fuzz(func(t *testing.T, text, block []byte) {
		if r, err := ParseRegister(string(text)); err == nil {
			a, b := ParseSDCID(r), ParseMMCCID(r, 8)
			if a != ParseSDCID(r) || b != ParseMMCCID(r, 8) {
				t.Fatal("CID decodes differently twice")
			}
			if c, err := ParseSDCSD(r); err == nil && c.Structure > 2 {
				t.Fatalf("accepted reserved CSD structure %d", c.Structure)
			}
			_ = ParseMMCCSD(r)
		}
		_, _ = ParseExtCSD(block)
		_, _ = ParseExtCSDHex(string(text))
		if s, err := ParseTranscendSMART(block); err == nil {
			if !bytes.HasPrefix(block, []byte("Transcend")) {
				t.Fatal("accepted a block without the marker")
			}
			_ = s.Health("fuzz")
		}
		if h, err := ParseNVMeSMART(block, "fuzz"); err == nil && len(h.Values) == 0 {
			t.Fatal("an accepted NVMe log has no values")
		}
	})
}

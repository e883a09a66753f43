package dataset

import "testing"

// BenchmarkTextGen is the text generator's speed (the dataset's compressible files): run it
// against another build of the package to compare, on a quiet machine.
func BenchmarkTextGen(b *testing.B) {
	var g textGen
	g.reset(1, 2, false)
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		g.fill(buf)
	}
}

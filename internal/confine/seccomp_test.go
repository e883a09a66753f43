package confine

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestIoctlNumbers compares the requests the filter allows, as ioctl.go encodes them, with the
// values the C headers give (testdata/ioctls_amd64.txt, printed by gcc from the kernel's and
// mtd-utils' headers), in the same order.
func TestIoctlNumbers(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skipf("the reference values are amd64's; this is %s (sizes of long and pointers differ)", runtime.GOARCH)
	}
	f, err := os.Open("testdata/ioctls_amd64.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []string
	var vals []uint32
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		name, hex, _ := strings.Cut(sc.Text(), " ")
		v, err := strconv.ParseUint(strings.TrimPrefix(hex, "0x"), 16, 32)
		if err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		want, vals = append(want, name), append(vals, uint32(v))
	}
	var got []uint32
	for _, g := range ioctlGroups() {
		got = append(got, g.reqs...)
	}
	if len(got) != len(vals) {
		t.Fatalf("ioctl.go allows %d requests, the reference lists %d", len(got), len(vals))
	}
	for i := range got {
		if got[i] != vals[i] {
			t.Errorf("%s: ioctl.go has %#08x, the C header %#08x", want[i], got[i], vals[i])
		}
	}
}

// TestFilterProgram checks the program's shape: within the kernel's limit, and every allowed
// number below the x32 bit (a number there would never be reached).
func TestFilterProgram(t *testing.T) {
	p := filter()
	if len(p) > 4096 {
		t.Fatalf("%d instructions", len(p))
	}
	for _, nr := range allowed() {
		if nr >= x32Bit {
			t.Errorf("allowed call %d is at or above the x32 bit", nr)
		}
	}
	if h := HighestKnown(); h < 400 {
		t.Errorf("HighestKnown %d: the list lost its newer calls", h)
	}
	t.Logf("%d instructions, %d calls allowed, %d ioctl requests, highest call named %d", len(p), len(allowed()), len(allowedIoctls()), HighestKnown())
}

package simcard

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCardStatfs: statfs(2) of the served card says its size in 512-byte blocks. A loop device
// over the card takes its discard granularity from that block size: with 0 (go-fuse's answer
// without Statfs), Debian 12's kernel, the QEMU guest's, refused every discard of the loop
// device over the card. This kernel raises a 0 to 512 itself, so the loop device's granularity
// here is checked only to be the card's sector.
func TestCardStatfs(t *testing.T) {
	requireFUSE(t)
	const size = 16 << 20
	sc, dev := directTestCard(t, SimcardOptions{Profile: "sd-typical", Size: size, TimeScale: 0, PathOffset: "off"})
	for _, p := range []string{sc.CardPath(), sc.Dir()} {
		var st unix.Statfs_t
		if err := unix.Statfs(p, &st); err != nil {
			t.Fatal(err)
		}
		if st.Bsize != 512 || st.Frsize != 512 || st.Blocks != size/512 {
			t.Errorf("statfs %s: bsize %d, frsize %d, %d blocks: want 512, 512, %d", p, st.Bsize, st.Frsize, st.Blocks, size/512)
		}
	}
	var fst unix.Stat_t
	if err := unix.Fstat(int(dev.Fd()), &fst); err != nil {
		t.Fatal(err)
	}
	g, err := os.ReadFile(filepath.Join("/sys/dev/block", fmt.Sprintf("%d:%d", unix.Major(fst.Rdev), unix.Minor(fst.Rdev)), "queue", "discard_granularity"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(g)) != "512" {
		t.Errorf("the loop device's discard granularity is %s, want 512", g)
	}
}

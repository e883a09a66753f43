package blockdev_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/testkit/testdev"
)

// TestFingerprintSwap puts another medium behind the same loop device number, as a card swapped
// in a USB reader keeps /dev/sdb: same number, same size, and still the fingerprint tells them
// apart (the disk sequence number and the loop device's file).
func TestFingerprintSwap(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: attaches loop devices")
	}
	if testing.Short() {
		t.Skip("attaches loop devices (-short)")
	}
	dev := testdev.Loop(t, 8<<20, "the first card ")
	fp, err := blockdev.ReadFingerprint("/sys", dev)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", fp)
	if fp.Number == "" || fp.Size != 8<<20 || !strings.Contains(fp.Loop, "disk.img") {
		t.Errorf("fingerprint %+v", fp)
	}
	if err := fp.Verify("/sys"); err != nil {
		t.Fatalf("the same medium: %v", err)
	}
	// The other card: same size, at the same number.
	other := filepath.Join(t.TempDir(), "other.img")
	if err := os.WriteFile(other, make([]byte, 8<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
		t.Fatalf("losetup -d: %v: %s", err, out)
	}
	if out, err := exec.Command("losetup", dev, other).CombinedOutput(); err != nil {
		t.Fatalf("losetup %s %s: %v: %s", dev, other, err, out)
	}
	err = fp.Verify("/sys")
	var ce *blockdev.ChangedError
	if !errors.As(err, &ce) {
		t.Fatalf("another medium at %s: %v, want a ChangedError", dev, err)
	}
	t.Log(err)
	msg := err.Error()
	if !strings.Contains(msg, "other.img") || fp.DiskSeq != "" && !strings.Contains(msg, "disk sequence number") || strings.Contains(msg, "size") {
		t.Errorf("the message does not say what changed (and only that): %s", msg)
	}
}

// TestFingerprintChanges lists what differs, and nothing for the same medium.
func TestFingerprintChanges(t *testing.T) {
	a := blockdev.Fingerprint{Path: "/dev/sdb1", Number: "8:17", Size: 1 << 30, Start: "2048", DiskSeq: "12", Serial: map[string]string{"cid": "1b534d"}}
	if c := a.Changes(a); len(c) != 0 {
		t.Errorf("the same fingerprint differs: %v", c)
	}
	b := a
	b.Size, b.DiskSeq, b.Serial = 2<<30, "15", map[string]string{"cid": "035344"}
	c := a.Changes(b)
	if len(c) != 3 || !strings.Contains(strings.Join(c, "; "), "cid 035344, was 1b534d") {
		t.Errorf("changes %q", c)
	}
}

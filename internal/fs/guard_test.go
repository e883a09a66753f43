package fs

import (
	"context"
	"errors"
	"testing"
)

// TestDeviceCheck: every call runs the check, and stops on its error; a context from Verified
// skips it for that device only (a timed mkfs or mount whose check ran just before).
func TestDeviceCheck(t *testing.T) {
	var calls []string
	swapped := errors.New("another medium")
	ctx := WithDeviceCheck(context.Background(), func(dev string) error {
		calls = append(calls, dev)
		if dev == "/dev/swapped" {
			return swapped
		}
		return nil
	})
	k, _ := Lookup("ext4")
	if err := Mkfs(ctx, (&fakeRunner{}).run, k, "/dev/swapped", nil); !errors.Is(err, swapped) {
		t.Errorf("Mkfs on a swapped device: %v", err)
	}
	vctx, err := Verified(ctx, "/dev/loop9")
	if err != nil {
		t.Fatal(err)
	}
	checkDevice(vctx, "/dev/loop9")
	checkDevice(vctx, "/dev/loop8")
	if want := []string{"/dev/swapped", "/dev/loop9", "/dev/loop8"}; len(calls) != 3 || calls[1] != want[1] || calls[2] != want[2] {
		t.Errorf("checks %q, want %q", calls, want)
	}
	if _, err := Verified(ctx, "/dev/swapped"); !errors.Is(err, swapped) {
		t.Errorf("Verified on a swapped device: %v", err)
	}
}

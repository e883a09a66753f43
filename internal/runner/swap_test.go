package runner

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/targets"
	"github.com/fsbench/fsbench/internal/testkit/testdev"
)

// TestDeviceSwappedBetweenRepetitions runs on a device (a loop device standing for a card in a USB
// reader) and, between the first and the second repetition, puts another medium of the same size
// at the same device number, as a reader does when its card is swapped: the run must stop before
// writing anything to the second medium (byte-identical afterwards), fail (exit 1, not a usage
// error), and say in its error and in results.json what changed.
func TestDeviceSwappedBetweenRepetitions(t *testing.T) {
	needRoot(t)
	const size = 320 << 20
	dir := t.TempDir()
	first := filepath.Join(dir, "first-card.img")
	if err := session.CreateImage(first, size); err != nil {
		t.Fatal(err)
	}
	// The second card holds the user's data: a known pattern throughout.
	secondImg := filepath.Join(dir, "second-card.img")
	chunk := bytes.Repeat([]byte("the other card's photos "), (1<<20)/24+1)[:1<<20]
	f, err := os.Create(secondImg)
	if err != nil {
		t.Fatal(err)
	}
	for range size >> 20 {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	before := testdev.Sum(t, secondImg)
	// losetup, not session.AttachLoop, whose Loop keeps the device open: a reader's card is
	// swapped while nothing holds the device.
	b, err := exec.Command("losetup", "--find", "--show", first).Output()
	if err != nil {
		t.Fatal(err)
	}
	loop := strings.TrimSpace(string(b))
	t.Cleanup(func() { exec.Command("losetup", "-d", loop).Run() }) // if the test stops early

	cfg := smallConfig()
	cfg.Variants = cfg.Variants[:1]
	cfg.Repetitions = 2
	cfg.Tests = []string{catalog.Mkfs, catalog.Mount, catalog.Write}
	swapped := false
	swap := func(p Progress) {
		if p.Rep < 2 || swapped {
			return
		}
		swapped = true
		// The reader's card is pulled and another one goes in: same number, same size.
		for _, c := range [][]string{{"losetup", "-d", loop}, {"losetup", loop, secondImg}} {
			if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
				t.Errorf("%s: %v: %s", strings.Join(c, " "), err, out)
			}
		}
	}
	out := filepath.Join(dir, "res")
	_, err = Run(context.Background(), Options{Options: targets.Options{Request: plan.Request{Config: cfg, Out: out,
		Target: plan.TargetSpec{Kind: plan.TargetDevice, Device: loop}, Destroy: loop}, Log: t.Logf}, Progress: swap, Version: "test"})
	if !swapped {
		t.Fatal("the run never reached its second repetition: the swap was not tried")
	}
	var ce *blockdev.ChangedError
	var ie *plan.InputError
	if !errors.As(err, &ce) || errors.As(err, &ie) {
		t.Fatalf("the run on a swapped card: %v, want it stopped with the device's change (an error of the run, exit 1)", err)
	}
	t.Logf("the run stopped: %v", err)
	if !strings.Contains(err.Error(), filepath.Base(secondImg)) {
		t.Errorf("the error does not say what changed: %v", err)
	}
	if got := testdev.Sum(t, secondImg); got != before {
		t.Fatalf("the second card was written: sha256 %s, was %s", got, before)
	}
	r, lerr := results.Load(out)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if r.Status != results.RunFailed || !strings.Contains(r.Error, "changed since the run started") {
		t.Errorf("results.json: status %q, error %q; want failed, saying the device changed", r.Status, r.Error)
	}
	if m := r.Cell(cfg.Variants[0].Name, catalog.Write); len(m) == 0 || m[0].Rep != 1 || m[0].Status != results.OK {
		t.Errorf("the first repetition's write: %+v, want kept", m)
	}
	// The test's own loop device goes first: the check below looks for any over dir.
	if out, err := exec.Command("losetup", "-d", loop).CombinedOutput(); err != nil {
		t.Errorf("losetup -d %s: %v: %s", loop, err, out)
	}
	checkNoLeftovers(t, dir)
}

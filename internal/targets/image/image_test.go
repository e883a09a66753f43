package image

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/session"
)

func TestCreateImage(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "card.img")
	const size = 256 << 20
	if err := session.CreateImage(img, size); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(img)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != size {
		t.Errorf("size = %d, want %d", fi.Size(), size)
	}
	// Sparse: a 256 MiB file with (almost) no blocks allocated. st_blocks counts 512-byte
	// units; allow a little for file systems that preallocate a block.
	if blocks := fi.Sys().(*syscall.Stat_t).Blocks; blocks > 64 {
		t.Errorf("st_blocks = %d, want ~0 (sparse file)", blocks)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("mode = %v, want 0600", perm)
	}

	// A second call must refuse and leave the existing file untouched.
	if err := os.WriteFile(img, []byte("user data"), 0o600); err != nil {
		t.Fatal(err)
	}
	err = session.CreateImage(img, size)
	if err == nil || !strings.Contains(err.Error(), "remove it or choose another path") {
		t.Errorf("CreateImage over an existing file: err = %v, want a refusal saying what to do", err)
	}
	if b, _ := os.ReadFile(img); string(b) != "user data" {
		t.Errorf("existing file changed to %q", b)
	}
}

func TestCreateImageBadSize(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []uint64{0, 1000, 1<<63 + 512} {
		p := filepath.Join(dir, "x.img")
		if err := session.CreateImage(p, size); err == nil {
			t.Errorf("CreateImage(size %d) succeeded, want an error", size)
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("size %d: file left behind (stat err %v)", size, err)
		}
	}
	if err := session.CreateImage(filepath.Join(dir, "no", "such", "dir.img"), 1<<20); err == nil {
		t.Error("CreateImage in a missing directory succeeded")
	}
}

// TestImageExistingNotRecorded: --image naming a file that exists fails its exclusive create,
// and leaves the ledger without a record of it, so that no cleanup can ever delete that file.
func TestImageExistingNotRecorded(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "theirs.img")
	if err := os.WriteFile(img, []byte("someone else's"), 0o600); err != nil {
		t.Fatal(err)
	}
	ledgers := t.TempDir()
	s, err := session.OpenSession(session.SessionOptions{Dir: filepath.Join(dir, "res"), LedgerDir: ledgers})
	if err != nil {
		t.Fatal(err)
	}
	tg := &imageTarget{}
	tg.Opt.Image = img
	if _, err := tg.Prepare(context.Background(), s, plan.Config{Size: 1 << 20}); err == nil {
		t.Fatal("Prepare over an existing file succeeded")
	}
	b, err := os.ReadFile(s.Ledger.Path())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "theirs.img") {
		t.Errorf("the ledger records the file it failed to create:\n%s", b)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(img); string(got) != "someone else's" {
		t.Errorf("the existing file is now %q", got)
	}
}

// TestEnduranceRefused: the endurance suite runs a card until it fails, and an image file
// never does: it is refused before anything is made, saying where a card does wear out.
func TestEnduranceRefused(t *testing.T) {
	cfg := plan.Default()
	cfg.Suite = plan.Suites{"endurance"}
	err := (&imageTarget{}).Check(cfg)
	if err == nil || !strings.Contains(err.Error(), "never wears out") || !strings.Contains(err.Error(), "--target simcard:PROFILE") {
		t.Errorf("endurance on an image file: %v; want a refusal naming the simulated card", err)
	}
}

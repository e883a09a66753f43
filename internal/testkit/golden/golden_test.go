package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// fakeT records failures instead of failing the real test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Errorf(string, ...any) { f.failed = true }
func (f *fakeT) Fatalf(string, ...any) { f.failed = true }
func (f *fakeT) Fatal(...any)          { f.failed = true }

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	os.Chdir(dir)
	os.Mkdir("testdata", 0o755)
	os.WriteFile(filepath.Join("testdata", "x.golden"), []byte("same\n"), 0o644)

	ok := &fakeT{TB: t}
	Check(ok, "x.golden", []byte("same\n"))
	if ok.failed {
		t.Error("equal output reported as different")
	}
	bad := &fakeT{TB: t}
	Check(bad, "x.golden", []byte("other\n"))
	if !bad.failed {
		t.Error("different output accepted")
	}
	if b, err := os.ReadFile(filepath.Join("testdata", "x.golden.got")); err != nil || string(b) != "other\n" {
		t.Errorf(".got file = %q, %v", b, err)
	}
	Check(ok, "x.golden", []byte("same\n"))
	if _, err := os.Stat(filepath.Join("testdata", "x.golden.got")); err == nil {
		t.Error("a stale .got file survived a passing comparison")
	}
}

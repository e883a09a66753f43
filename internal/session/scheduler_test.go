package session

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseScheduler(t *testing.T) {
	tests := []struct {
		in        string
		available []string
		current   string
	}{
		{"none [mq-deadline] kyber bfq\n", []string{"none", "mq-deadline", "kyber", "bfq"}, "mq-deadline"},
		{"[none] mq-deadline\n", []string{"none", "mq-deadline"}, "none"},
		{"none\n", []string{"none"}, ""},
		{"", nil, ""},
	}
	for _, tc := range tests {
		a, c := ParseScheduler(tc.in)
		if !slices.Equal(a, tc.available) || c != tc.current {
			t.Errorf("ParseScheduler(%q) = %v, %q; want %v, %q", tc.in, a, c, tc.available, tc.current)
		}
	}
}

// A fake sysfs where writing the scheduler file does not change what reads back shows that
// SetScheduler believes only what the kernel reports.
func TestSetSchedulerFakeSysfs(t *testing.T) {
	sysfs := t.TempDir()
	// As in real sysfs: class/block entries are symlinks into devices/, a partition's
	// directory inside its disk's.
	disk := filepath.Join(sysfs, "devices", "mmc0", "mmcblk0")
	q := filepath.Join(disk, "queue")
	os.MkdirAll(q, 0o755)
	os.MkdirAll(filepath.Join(disk, "mmcblk0p2"), 0o755)
	os.MkdirAll(filepath.Join(sysfs, "class", "block"), 0o755)
	os.Symlink(disk, filepath.Join(sysfs, "class", "block", "mmcblk0"))
	os.Symlink(filepath.Join(disk, "mmcblk0p2"), filepath.Join(sysfs, "class", "block", "mmcblk0p2"))
	os.WriteFile(filepath.Join(q, "scheduler"), []byte("none [mq-deadline] bfq\n"), 0o644)
	if _, err := SetScheduler(sysfs, "mmcblk0p2", "cfq"); err == nil || !strings.Contains(err.Error(), "not available") {
		t.Errorf("cfq: %v, want not available", err)
	}
	// A regular file takes the write as its whole content: "bfq" reads back without brackets.
	if _, err := SetScheduler(sysfs, "mmcblk0p2", "bfq"); err == nil || !strings.Contains(err.Error(), "after setting") {
		t.Errorf("bfq on a fake file: %v, want the read-back check to fail", err)
	}
	if _, err := SetScheduler(sysfs, "sda", "none"); err == nil {
		t.Error("a device without sysfs entry was accepted")
	}
}

func TestSetSchedulerLoop(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: attaches a loop device")
	}
	img := filepath.Join(t.TempDir(), "img")
	if err := CreateImage(img, 16<<20); err != nil {
		t.Fatal(err)
	}
	l, err := AttachLoop(img, LoopOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Detach()
	file := filepath.Join("/sys/block", l.Name, "queue", "scheduler")
	b, _ := os.ReadFile(file)
	available, before := ParseScheduler(string(b))
	other := "none"
	if before == "none" {
		other = available[len(available)-1]
	}
	restore, err := SetScheduler("/sys", l.Name, other)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(file)
	if _, now := ParseScheduler(string(b)); now != other {
		t.Errorf("scheduler %q, want %q", now, other)
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(file)
	if _, now := ParseScheduler(string(b)); now != before {
		t.Errorf("after restore %q, want %q", now, before)
	}
}

package blockdev

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReadHostQueue reads a fake SD card's queue through its partition: the disk's files, the
// scheduler in brackets, the first hardware queue's tags; absent files leave zeroes.
func TestReadHostQueue(t *testing.T) {
	sysfs, disk, _ := fakeDisk(t)
	files := map[string]string{
		"queue/nr_requests": "64\n",
		"queue/scheduler":   "none [mq-deadline] kyber\n",
		"queue/write_cache": "write back\n",
		"mq/0/nr_tags":      "32\n",
		"device/type":       "SD\n",
	}
	for name, v := range files {
		p := filepath.Join(disk, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	q, err := ReadHostQueue(sysfs, "disk0p1")
	if err != nil {
		t.Fatal(err)
	}
	want := HostQueue{NrRequests: 64, Scheduler: "mq-deadline", WriteCache: "write back", HWQueues: 1, Tags: 32, Type: "SD"}
	if q != want {
		t.Errorf("got %+v, want %+v", q, want)
	}
	if _, err := ReadHostQueue(sysfs, "nosuch"); err == nil {
		t.Error("a device sysfs does not list was accepted")
	}
}

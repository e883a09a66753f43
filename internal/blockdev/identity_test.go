package blockdev

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestIdentifyFake runs Identify against a fake sysfs tree (testdata/sysfs, laid out like the
// real one: class/block symlinks into devices/, partitions inside their disk's directory,
// device/ a symlink to the hardware's directory) and compares with golden JSON.
func TestIdentifyFake(t *testing.T) {
	tests := []struct{ dev, golden string }{
		{"loop3", "loop3"},         // bound loop device
		{"loop7", "loop7"},         // unbound: no loop/ directory, few queue files
		{"sda", "sda"},             // SCSI disk: model and vendor
		{"sda1", "sda1"},           // partition: its own size, the disk's queue and device
		{"mmcblk0", "mmcblk0"},     // SD card: CID fields and erase sizes
		{"mmcblk0p2", "mmcblk0p2"}, // partition of the SD card
		{"/dev/mmcblk0p2", "mmcblk0p2"},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			id, err := Identify("testdata/sysfs", tt.dev)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(id, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := filepath.Join("testdata", "identify", tt.golden+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				gotPath := golden + ".got"
				_ = os.WriteFile(gotPath, got, 0o644)
				t.Errorf("Identify(%s) differs from %s; got written to %s", tt.dev, golden, gotPath)
			}
		})
	}
}

func TestIdentifyErrors(t *testing.T) {
	for _, dev := range []string{"", ".", "..", "../devices", "loop3/queue", "nvme9n1"} {
		if _, err := Identify("testdata/sysfs", dev); err == nil {
			t.Errorf("Identify(%q) succeeded", dev)
		}
	}
}

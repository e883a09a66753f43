package blockdev_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/blockdev"
)

// TestReadFSID makes each filesystem (and a swap area) with a UUID and a label of the test's
// choosing, in an image file, with the real tools, and reads them back: what ReadFSID finds must
// be what the tool was given and what blkid (util-linux, the oracle udev uses) finds.
func TestReadFSID(t *testing.T) {
	const uuid = "0b5e2f3c-7a41-4d2e-9c11-2f6a8d4e5b70"
	for _, tc := range []struct {
		typ, tool string
		size      int64
		args      []string // before the image
		uuid      string   // as blkid prints it
		label     string
	}{
		{"ext4", "mkfs.ext4", 32 << 20, []string{"-F", "-q", "-U", uuid, "-L", "fsb-ext4"}, uuid, "fsb-ext4"},
		{"ext2", "mkfs.ext2", 32 << 20, []string{"-F", "-q", "-U", uuid, "-L", "fsb-ext2"}, uuid, "fsb-ext2"},
		{"xfs", "mkfs.xfs", 320 << 20, []string{"-f", "-q", "-m", "uuid=" + uuid, "-L", "fsb-xfs"}, uuid, "fsb-xfs"},
		{"btrfs", "mkfs.btrfs", 128 << 20, []string{"-f", "-q", "-U", uuid, "-L", "fsb-btrfs"}, uuid, "fsb-btrfs"},
		{"f2fs", "mkfs.f2fs", 128 << 20, []string{"-f", "-q", "-U", uuid, "-l", "fsb-f2fs"}, uuid, "fsb-f2fs"},
		{"nilfs2", "mkfs.nilfs2", 128 << 20, []string{"-f", "-q", "-B", "256", "-L", "fsb-nilfs"}, "", "fsb-nilfs"},
		{"vfat", "mkfs.vfat", 64 << 20, []string{"-i", "1234abcd", "-n", "FSBVFAT"}, "1234-ABCD", "FSBVFAT"},
		{"vfat32", "mkfs.vfat", 64 << 20, []string{"-F", "32", "-i", "5678ef01", "-n", "FSBVFAT32"}, "5678-EF01", "FSBVFAT32"},
		{"swap", "mkswap", 16 << 20, []string{"-U", uuid, "-L", "fsb-swap"}, uuid, "fsb-swap"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			tool, err := exec.LookPath(tc.tool)
			if err != nil {
				if tool, err = exec.LookPath("/usr/sbin/" + tc.tool); err != nil {
					t.Skipf("%s not installed", tc.tool)
				}
			}
			img := filepath.Join(t.TempDir(), "img")
			if err := os.WriteFile(img, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(img, tc.size); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(tool, append(tc.args, img)...).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v: %s", tc.tool, err, out)
			}
			f, err := os.Open(img)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			id, ok := blockdev.ReadFSID(f)
			if !ok {
				t.Fatal("no filesystem found")
			}
			if tc.uuid != "" && !blockdev.SameUUID(id.UUID, tc.uuid) || id.Label != tc.label {
				t.Errorf("read UUID %q label %q (%s), want %q %q", id.UUID, id.Label, id.Type, tc.uuid, tc.label)
			}
			if out, err := exec.Command("blkid", "-p", "-o", "export", img).Output(); err == nil {
				got := map[string]string{}
				for _, l := range strings.Split(string(out), "\n") {
					if k, v, ok := strings.Cut(l, "="); ok {
						got[k] = v
					}
				}
				if got["UUID"] != id.UUID || got["LABEL"] != id.Label {
					t.Errorf("blkid says UUID %q LABEL %q, ReadFSID %q %q", got["UUID"], got["LABEL"], id.UUID, id.Label)
				}
			} else {
				t.Logf("blkid: %v (compared with the tool's words only)", err)
			}
		})
	}
}

package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/targets"
)

// identityWait bounds how long the superblocks of the machine's block devices are read for: a
// device that does not answer (a loop device over a stalled FUSE file) is named, not waited for.
var identityWait = 5 * time.Second

// checkIdentities refuses, before anything is made, a variant whose mkfs words give the
// filesystem a UUID or label that another block device of this machine already carries (the
// device under test and its partitions aside: they are the run's to overwrite). A guest or a
// board runs the same check on its own devices, with its own fsbench.
func checkIdentities(cfg plan.Config, t targets.Target, logf func(string, ...any)) error {
	if !t.Caps().Has(targets.LocalDevice) {
		return nil
	}
	type want struct {
		v            plan.Variant
		uuids, names []string
	}
	var wants []want
	for _, v := range cfg.Variants {
		k, ok := fs.Lookup(v.FS)
		if !ok {
			continue
		}
		if u, l := fs.MkfsIdentity(k, v.MkfsArgs); len(u)+len(l) > 0 {
			wants = append(wants, want{v, u, l})
		}
	}
	if len(wants) == 0 {
		return nil
	}
	ids, slow, err := blockdev.MachineFSIDs("/sys", deviceFamily(t.Spec().Device), identityWait)
	if err != nil {
		return err
	}
	if len(slow) > 0 && logf != nil {
		logf("warning: %s did not answer within %v: their UUIDs and labels were not compared with the variants' mkfs words", strings.Join(slow, ", "), identityWait)
	}
	for _, w := range wants {
		where := w.v.Name
		if w.v.Line > 0 {
			where += fmt.Sprintf(" (configuration line %d)", w.v.Line)
		}
		for _, id := range ids {
			for _, u := range w.uuids {
				if blockdev.SameUUID(u, id.UUID) {
					return &plan.InputError{Err: &fs.IdentityTakenError{Variant: where, What: "UUID", Value: u, Device: id.Device, Type: id.Type}}
				}
			}
			for _, l := range w.names {
				same := l == id.Label
				if w.v.FS == "vfat" || strings.Contains(id.Type, "vfat") {
					same = strings.EqualFold(l, id.Label) // FAT labels are matched without case
				}
				if same && l != "" {
					return &plan.InputError{Err: &fs.IdentityTakenError{Variant: where, What: "label", Value: l, Device: id.Device, Type: id.Type}}
				}
			}
		}
	}
	return nil
}

// deviceFamily is the device numbers of dev and of its partitions ("" or a device that cannot be
// read: none).
func deviceFamily(dev string) map[string]bool {
	out := map[string]bool{}
	var st unix.Stat_t
	if dev == "" || unix.Stat(dev, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return out
	}
	num := fmt.Sprintf("%d:%d", unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev)))
	out[num] = true
	dir, err := filepath.EvalSymlinks(filepath.Join("/sys/dev/block", num))
	if err != nil {
		return out
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "partition")); err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(dir, e.Name(), "dev")); err == nil {
			out[strings.TrimSpace(string(b))] = true
		}
	}
	return out
}

package fs

import (
	"fmt"
	"strings"
)

// A filesystem's UUID and label are how udev (/dev/disk/by-uuid, /dev/disk/by-label), systemd's
// UUID= mounts, fstab and a bootloader's root= find it. A variant's mkfs words may set them
// (`-U <UUID of /boot>`): on a device: target the copy stays on the card, and the next boot may
// mount the card where the machine's own filesystem should be. MkfsIdentity reads which UUIDs
// and labels a variant's words give, by the tool's own grammar, so that a run can refuse one
// another block device already carries.

// idOptions are, per filesystem, the options that set the filesystem's UUID and its label
// (mkfs.xfs: the uuid= sub-option of -m).
var idOptions = map[string]struct{ uuid, label string }{
	"ext2": {"-U", "-L"}, "ext3": {"-U", "-L"}, "ext4": {"-U", "-L"},
	"xfs":    {"-m", "-L"},
	"btrfs":  {"-U", "-L"},
	"f2fs":   {"-U", "-l"},
	"nilfs2": {"", "-L"},
	"vfat":   {"-i", "-n"},
	"erofs":  {"-U", "-L"},
}

// MkfsIdentity returns the UUIDs and labels a variant's mkfs words (args, for filesystem k) give
// the filesystem, as blkid would print them. mke2fs's "-U random", "time" and "clear" name none.
func MkfsIdentity(k Kind, args []string) (uuids, labels []string) {
	g, ok := grammars[k.Name]
	opts, known := idOptions[k.Name]
	if !ok || !known {
		return nil, nil
	}
	g.visit = func(canon, val string) {
		switch {
		case canon == opts.label && opts.label != "":
			labels = append(labels, val)
		case canon == opts.uuid && k.Name == "xfs":
			for _, part := range strings.Split(val, ",") {
				if u, ok := strings.CutPrefix(part, "uuid="); ok {
					uuids = append(uuids, u)
				}
			}
		case canon == opts.uuid && k.Name == "vfat":
			// mkfs.fat's volume id: 8 hex digits, shown by blkid as XXXX-XXXX.
			if len(val) == 8 {
				uuids = append(uuids, strings.ToUpper(val[:4]+"-"+val[4:]))
			}
		case canon == opts.uuid && opts.uuid != "":
			if val != "random" && val != "time" && val != "clear" && val != "null" {
				uuids = append(uuids, val)
			}
		}
	}
	_ = g.check(args) // the refusals are CheckMkfsArgs's to give
	return uuids, labels
}

// IdentityTakenError refuses a variant whose mkfs words give the filesystem a UUID or label
// that another block device of the machine already carries.
type IdentityTakenError struct {
	Variant, What, Value, Device, Type string
}

func (e *IdentityTakenError) Error() string {
	return fmt.Sprintf("variant %s: mkfs gives the filesystem the %s %q, which %s (%s) already carries: two filesystems with one %s make udev's /dev/disk/by-%s, fstab's and systemd's %s= and a bootloader's root= find either; give another %s, or leave it out",
		e.Variant, e.What, e.Value, e.Device, e.Type, e.What, strings.ToLower(e.What), strings.ToUpper(e.What), e.What)
}

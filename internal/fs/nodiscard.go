package fs

import (
	"slices"
	"strings"
)

// NoDiscardArgs returns a variant's mkfs arguments with the option that stops k's mkfs from
// discarding the device first, for a run on a used card (--card-state used): mkfs.ext4,
// mkfs.xfs, mkfs.btrfs and mkfs.nilfs2 discard the whole device by default, which tells the
// card's FTL that every block is free and so undoes the wear and the full mapping a used card
// has. mkfs.vfat never discards; read-only and raw-flash kinds have no mkfs on the device. The
// variant's own words come first and are kept: a variant that already says nodiscard (or asks
// for a discard) is left as it is.
func NoDiscardArgs(k Kind, args []string) []string {
	out := slices.Clone(args)
	switch k.Name {
	case "ext2", "ext3", "ext4":
		// mke2fs keeps only the last -E it is given, so nodiscard joins the variant's own
		// extended options instead of adding a second -E that would drop them.
		last := -1
		for i, a := range out {
			if a == "-E" && i+1 < len(out) {
				last = i + 1
			}
		}
		if last < 0 {
			return append(out, "-E", "nodiscard")
		}
		opts := strings.Split(out[last], ",")
		if slices.Contains(opts, "discard") || slices.Contains(opts, "nodiscard") {
			return out
		}
		out[last] += ",nodiscard"
		return out
	case "xfs", "btrfs", "nilfs2":
		// -K: "do not attempt to discard blocks at mkfs time" (mkfs.xfs, mkfs.btrfs,
		// mkfs.nilfs2 alike).
		if slices.Contains(out, "-K") || slices.Contains(out, "--nodiscard") {
			return out
		}
		return append(out, "-K")
	case "f2fs":
		// mkfs.f2fs -t 0: no discard (its default is -t 1).
		if slices.Contains(out, "-t") {
			return out
		}
		return append(out, "-t", "0")
	}
	return out
}

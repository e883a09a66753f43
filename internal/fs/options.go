package fs

import (
	"fmt"
	"slices"
	"strings"
)

// A variant's mkfs words and mount options come from a configuration file that may have been
// copied from somewhere, and fsbench runs the tool as root. mkfs tools take more than options:
// mkfs.btrfs formats every device it is given (`-m single /dev/loop4` made /dev/loop4 the second
// device of a new btrfs), mkfs.xfs puts its log or realtime section on another device (`-l
// logdev=`, `-r rtdev=`), mke2fs writes an undo file (`-z FILE`) or uses an external journal (`-J
// device=`), mkfs.f2fs adds devices (`-c DEV`), mkfs.vfat creates a file (`-C`), and a positional
// word takes the place of the device. fsbench passes the device (or, for image builders, the
// source and image) itself, so the words a user gives may only be options of the tool, and no
// option or value may name a path or a device. CheckMkfsArgs enforces that before anything runs.

// toolOpts says how a tool's command line is read: which options take the next word as their
// value (getopt's "x:"), and which options are refused with the reason.
type toolOpts struct {
	// value lists the options that take a value: short ones ("-b", which also accept the value
	// attached, "-b4096") and long ones ("--label", which also accept "--label=x").
	value []string
	// refused maps an option to why fsbench refuses it.
	refused map[string]string
	// subRefused maps an option taking a comma-separated list of key[=value] (mkfs.xfs -l,
	// mke2fs -J) to the keys refused in that list, with the reason.
	subRefused map[string]map[string]string
	// pathOK lists options whose value may contain a slash without naming a file on the
	// machine (mke2fs -M stores "the last mounted directory" as a label).
	pathOK []string
}

const (
	whyDevice = "it names another device, which fsbench would format or write; fsbench passes the device it made (or the one named with --destroy) itself"
	whyFile   = "it makes the tool read or write a file outside the run; fsbench passes the device (or image and source) itself"
	whyDry    = "it makes the tool create nothing (a dry run), so every test would fail on an empty device"
	whyStdin  = "it makes the tool read from standard input, where nothing comes: the run would hang"
)

var e2fsOpts = toolOpts{
	value: []string{"-b", "-C", "-d", "-e", "-E", "-g", "-G", "-i", "-I", "-J", "-l", "-L", "-m", "-M", "-N", "-o", "-O", "-r", "-t", "-T", "-U", "-z"},
	refused: map[string]string{
		"-d": "it populates the filesystem from a directory of this machine; fsbench stores its own dataset",
		"-l": whyFile, "-z": whyFile, "-n": whyDry,
	},
	subRefused: map[string]map[string]string{"-J": {"device": whyDevice}},
	pathOK:     []string{"-M"},
}

var toolOptions = map[string]toolOpts{
	"ext2": e2fsOpts, "ext3": e2fsOpts, "ext4": e2fsOpts,
	"xfs": {
		value:   []string{"-b", "-c", "-d", "-i", "-l", "-L", "-m", "-n", "-p", "-r", "-s"},
		refused: map[string]string{"-p": whyFile, "-c": whyFile, "-N": whyDry},
		subRefused: map[string]map[string]string{
			"-l": {"logdev": whyDevice},
			"-r": {"rtdev": whyDevice},
			"-d": {"name": whyDevice, "file": whyFile},
		},
	},
	"btrfs": {
		value: []string{"-A", "--alloc-start", "-b", "--byte-count", "--checksum", "--csum", "-d", "--data",
			"-m", "--metadata", "-n", "--nodesize", "-s", "--sectorsize", "-L", "--label", "-O", "--features",
			"-R", "--runtime-features", "-U", "--uuid", "--device-uuid", "-r", "--rootdir", "-u", "--subvol"},
		refused: map[string]string{
			"-r": whyFile, "--rootdir": whyFile, "-u": whyFile, "--subvol": whyFile, "--shrink": whyFile,
		},
	},
	"f2fs": {
		value:   []string{"-a", "-c", "-C", "-d", "-e", "-E", "-g", "-l", "-o", "-O", "-R", "-s", "-S", "-t", "-T", "-U", "-w", "-z", "-Z"},
		refused: map[string]string{"-c": whyDevice},
	},
	"nilfs2": {
		value:   []string{"-b", "-B", "-L", "-m", "-O"},
		refused: map[string]string{"-n": whyDry},
	},
	"vfat": {
		value: []string{"-b", "-B", "-D", "-f", "-F", "-g", "-h", "-i", "-l", "-L", "-m", "-M", "-n", "-r", "-R", "-s", "-S",
			"--codepage", "--offset", "--variant"},
		refused: map[string]string{"-C": whyFile, "-B": whyFile, "-l": whyFile, "-m": whyFile},
		// -g HEADS/SECTORS is a geometry, not a path.
		pathOK: []string{"-g"},
	},
	// mksquashfs takes single-dash long options; fsbench puts the variant's words after
	// SOURCE IMAGE -noappend -no-progress.
	"squashfs": {
		value: []string{"-comp", "-b", "-force-uid", "-force-gid", "-root-becomes", "-root-mode", "-root-uid", "-root-gid",
			"-p", "-pf", "-sort", "-ef", "-e", "-processors", "-mem", "-mem-percent", "-offset", "-o", "-throttle", "-mkfs-time",
			"-all-time", "-fstime", "-Xcompression-level", "-Xalgorithm", "-Xdict-size", "-Xbcj", "-Xwindow-size", "-Xstrategy",
			"-action", "-log-action", "-true-action", "-false-action", "-action-file", "-log-action-file", "-true-action-file",
			"-false-action-file", "-recover", "-xattrs-exclude", "-xattrs-include", "-xattrs-add", "-read-queue", "-write-queue",
			"-fragment-queue", "-percentage", "-pd", "-pd-file", "-default-mode", "-default-uid", "-default-gid"},
		refused: map[string]string{
			"-pf": whyFile, "-sort": whyFile, "-ef": whyFile, "-recover": whyFile, "-action-file": whyFile,
			"-log-action-file": whyFile, "-true-action-file": whyFile, "-false-action-file": whyFile, "-pd-file": whyFile,
			"-tar": whyStdin, "-cpiostyle": whyStdin, "-cpiostyle0": whyStdin,
			// -e takes every remaining word as a name to exclude: it would swallow what follows.
			"-e": "it takes every word after it as a name to exclude; exclude nothing from the generated dataset",
		},
	},
	"erofs": {
		value: []string{"-z", "-C", "-E", "-T", "-U", "-x", "-b", "-d", "-L", "--blobdev", "--chunksize", "--compress-hints",
			"--exclude-path", "--exclude-regex", "--file-contexts", "--force-uid", "--force-gid", "--max-extent-bytes",
			"--mount-point", "--uid-offset", "--gid-offset", "--tar", "--aufs", "--ovlfs-strip", "--random-pclusterblks",
			"--root-xattr-isize", "--workers", "--zfeature-bits", "--clean", "--incremental", "--offset", "--sort"},
		refused: map[string]string{
			"--blobdev": whyDevice, "--compress-hints": whyFile, "--exclude-path": whyFile, "--file-contexts": whyFile,
			"--tar": whyStdin, "--incremental": whyFile,
		},
	},
}

// CheckMkfsArgs returns an error saying what is wrong, and why, when a variant's mkfs words
// (args, for filesystem kind k) are anything but options of k's tool: a positional word, an
// option that names another device or a file, a value that is a path, or "--". The words are
// read as the tool's getopt would, with the value-taking options listed per tool; an option
// fsbench does not know is let through (the tool itself rejects a wrong one), but a word after
// it that is not an option is then refused as positional.
func CheckMkfsArgs(k Kind, args []string) error {
	to, ok := toolOptions[k.Name]
	if !ok {
		if len(args) > 0 {
			return fmt.Errorf("%s takes no mkfs words here", k.Name)
		}
		return nil
	}
	tool := k.Tool
	for i := 0; i < len(args); i++ {
		w := args[i]
		switch {
		case w == "--":
			return fmt.Errorf("%s: the word \"--\" ends the options, so what follows would be taken as devices or files; give options only", tool)
		case w == "" || w[0] != '-' || w == "-":
			return fmt.Errorf("%s: %q is not an option: a word that is not an option is taken as a device or file (%s); give options only, e.g. \"-O ^has_journal\"", tool, w, whyDevice)
		}
		opt, val, hasVal := splitOption(w, to)
		if why, bad := to.refused[opt]; bad {
			return fmt.Errorf("%s: option %s is refused: %s", tool, opt, why)
		}
		if !hasVal && slices.Contains(to.value, opt) {
			if i+1 >= len(args) {
				return fmt.Errorf("%s: option %s needs a value", tool, opt)
			}
			i++
			val, hasVal = args[i], true
		}
		if !hasVal {
			continue
		}
		if subs, ok := to.subRefused[opt]; ok {
			for _, part := range strings.Split(val, ",") {
				key, _, _ := strings.Cut(part, "=")
				if why, bad := subs[key]; bad {
					return fmt.Errorf("%s: %s %s is refused: %s", tool, opt, part, why)
				}
			}
		}
		if strings.Contains(val, "/") && !slices.Contains(to.pathOK, opt) {
			return fmt.Errorf("%s: the value %q of %s looks like a path: %s", tool, val, opt, whyFile)
		}
	}
	return nil
}

// splitOption splits a word into its option and an attached value: "--label=x" gives
// ("--label", "x"), "-b4096" gives ("-b", "4096") when -b takes a value, and "-Fq" is left
// whole. mksquashfs's single-dash long options ("-comp") are matched whole first.
func splitOption(w string, to toolOpts) (opt, val string, hasVal bool) {
	if strings.HasPrefix(w, "--") {
		if o, v, ok := strings.Cut(w, "="); ok {
			return o, v, true
		}
		return w, "", false
	}
	if slices.Contains(to.value, w) || to.refused[w] != "" {
		return w, "", false
	}
	if len(w) > 2 {
		short := w[:2]
		if slices.Contains(to.value, short) {
			return short, w[2:], true
		}
		if to.refused[short] != "" {
			return short, "", false
		}
		// A cluster of short flags ("-Fq") or an option fsbench does not list: a value
		// attached with '=' still counts ("-E=x" is a typo the tool reports).
		if o, v, ok := strings.Cut(w, "="); ok {
			return o, v, true
		}
	}
	return w, "", false
}

// mountRefused are mount options that make the kernel (or mount(8)) open a device or file other
// than the one mounted: btrfs's device= scans another device into the filesystem, ext4's
// journal_path= and journal_dev= and xfs's logdev= and rtdev= put part of it elsewhere, and
// mount(8)'s loop options set up a loop device over a file.
var mountRefused = map[string]string{
	"device":       whyDevice,
	"journal_path": whyDevice,
	"journal_dev":  whyDevice,
	"logdev":       whyDevice,
	"rtdev":        whyDevice,
	"loop":         "it makes mount(8) attach a loop device over a file; fsbench mounts the device it made",
	"offset":       "it is a loop option of mount(8); fsbench mounts the device it made",
	"sizelimit":    "it is a loop option of mount(8); fsbench mounts the device it made",
	"helper":       "it makes mount(8) run another program",
}

// mountPathOK are mount options whose value contains slashes without naming anything outside
// the filesystem: btrfs's subvol= is a path inside the filesystem.
var mountPathOK = []string{"subvol"}

// CheckMountOptions returns an error when a variant's mount options (as for mount -o) name a
// device or a file outside the filesystem being mounted, or are malformed.
func CheckMountOptions(options string) error {
	if options == "" {
		return nil
	}
	if _, _, err := MountFlags(options); err != nil {
		return err
	}
	for _, opt := range strings.Split(options, ",") {
		key, val, _ := strings.Cut(opt, "=")
		if why, bad := mountRefused[key]; bad {
			return fmt.Errorf("mount option %s is refused: %s", opt, why)
		}
		if strings.Contains(val, "/") && !slices.Contains(mountPathOK, key) {
			return fmt.Errorf("mount option %s looks like it names a path: %s", opt, whyFile)
		}
	}
	return nil
}

// CheckMkfs is CheckMkfsArgs for a filesystem given by name (as plan.Options.CheckMkfs wants).
func CheckMkfs(name string, args []string) error {
	k, ok := Lookup(name)
	if !ok {
		return fmt.Errorf("unknown filesystem %q", name)
	}
	return CheckMkfsArgs(k, args)
}

// CheckMount is CheckMountOptions with the filesystem's name (as plan.Options.CheckMount wants).
func CheckMount(_ string, options string) error { return CheckMountOptions(options) }

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
// device=`), mkfs.f2fs adds devices (`-c DEV`), mkfs.vfat creates a file (`-C`), mksquashfs runs
// the commands of pseudo files (`-p`), and a positional word takes the place of the device.
//
// CheckMkfsArgs reads the words as the tool itself does, by its own grammar: getopt's clusters
// of short options with values attached or separate (`-fllogdev=card` is -f, then -l with the
// value logdev=card), long options with `=` or a separate value and their unique abbreviations
// (getopt_long takes `--root` for `--rootdir`), comma-separated sub-options (-E, -J, -d, -l,
// -r, ...), mksquashfs's single-dash long options, and refuses every option or sub-option that
// names a device or a file, every positional word, and every option it does not know (a newer
// tool may have added one that names a file). The tables are the tools' own: the getopt strings
// compiled into the binaries of e2fsprogs 1.47, xfsprogs 6.1, btrfs-progs 6.2, f2fs-tools 1.15,
// nilfs-tools 2.2, dosfstools 4.2, squashfs-tools 4.5 and erofs-utils 1.5, their --help and
// manual pages, with later versions' options added. This is the first line of defence; the
// guarantee is the kernel's: each tool runs confined (package confine).

// argKind is how an option takes its value, as getopt has it.
type argKind int

const (
	noArg  argKind = iota // "x"
	reqArg                // "x:": attached ("-b4096", "--label=x") or the next word
	optArg                // "x::": attached only
)

// longOpt is a getopt_long option (or a mksquashfs single-dash one).
type longOpt struct {
	name  string
	arg   argKind
	short byte   // the short option it is another name for; 0: none
	as    string // the long option it is another name for (--csum for --checksum); "": none
}

// same reports whether a and b are names of one option: getopt_long does not call an
// abbreviation of both ambiguous.
func (a longOpt) same(b longOpt) bool {
	id := func(o longOpt) string {
		switch {
		case o.short != 0:
			return "-" + string(o.short)
		case o.as != "":
			return o.as
		}
		return o.name
	}
	return id(a) == id(b)
}

// subOpts is an option whose value is a comma-separated list of key[=value] (getsubopt).
type subOpts struct {
	keys    []string          // the keys the tool knows; others are refused
	refused map[string]string // key → why fsbench refuses it
}

// grammar is how a tool reads its command line.
type grammar struct {
	short string    // getopt's optstring, as compiled into the tool
	long  []longOpt // getopt_long's table
	// single: the tool matches whole single-dash words (mksquashfs), no clusters, no "--".
	single []longOpt
	// refused maps an option ("-d", or "--shrink" for a long one without a short name) to why.
	refused map[string]string
	subs    map[string]subOpts
	// pathOK lists options whose value may contain a slash without naming a file on the
	// machine (mke2fs -M stores "the last mounted directory" as a label).
	pathOK []string
	// visit, when set, sees every option with a value as check reads it: canon its short name
	// (or long spelling), val its value.
	visit func(canon, val string)
}

const (
	whyDevice = "it names another device, which fsbench would format or write; fsbench passes the device it made (or the one named with --destroy) itself"
	whyFile   = "it makes the tool read or write a file outside the run; fsbench passes the device (or image and source) itself"
	whyDir    = "it populates the filesystem from a directory of this machine; fsbench stores its own dataset"
	whyDry    = "it makes the tool create nothing (a dry run, help or version), so every test would fail on an empty device"
	whyStdin  = "it makes the tool read from standard input, where nothing comes: the run would hang"
	whyExec   = "it makes the tool run a program (a pseudo file's command, an action's exec() test)"
	whyUnsure = "fsbench does not know what it does (it is not in the tool's manual)"
)

// e2fsExtended are mke2fs's -E (and -R) keys, from mke2fs(8).
var e2fsExtended = subOpts{keys: []string{"encoding", "encoding_flags", "mmp_update_interval", "stride", "stripe_width", "stripe-width",
	"offset", "resize", "lazy_itable_init", "lazy_journal_init", "assume_storage_prezeroed", "no_copy_xattrs", "num_backup_sb",
	"packed_meta_blocks", "root_owner", "root_perms", "test_fs", "orphan_file_size", "discard", "nodiscard", "quotatype",
	"hash_seed", "android_sparse"}}

var e2fsGrammar = grammar{
	short: "b:cd:e:g:i:jl:m:no:qr:s:t:vC:DE:FG:I:J:KL:M:N:O:R:ST:U:Vz:",
	refused: map[string]string{
		"-d": whyDir, "-l": whyFile, "-z": whyFile, "-n": whyDry, "-V": whyDry,
	},
	subs: map[string]subOpts{
		"-E": e2fsExtended, "-R": e2fsExtended,
		"-J": {keys: []string{"size", "fast_commit_size", "location", "device"}, refused: map[string]string{"device": whyDevice}},
	},
	pathOK: []string{"-M"},
}

var grammars = map[string]grammar{
	"ext2": e2fsGrammar, "ext3": e2fsGrammar, "ext4": e2fsGrammar,
	"xfs": {
		short:   "b:c:d:i:l:L:m:n:KNp:qr:s:CfV",
		refused: map[string]string{"-c": whyFile, "-p": whyFile, "-N": whyDry, "-V": whyDry, "-C": whyUnsure},
		subs: map[string]subOpts{
			"-b": {keys: []string{"size", "log"}},
			"-d": {keys: []string{"agcount", "agsize", "cowextsize", "daxinherit", "extszinherit", "file", "name", "noalign", "projinherit",
				"rtinherit", "sectsize", "size", "su", "sunit", "sw", "swidth"}, refused: map[string]string{"name": whyDevice, "file": whyFile}},
			"-i": {keys: []string{"align", "attr", "maxpct", "nrext64", "perblock", "projid32bit", "size", "sparse", "log"}},
			"-l": {keys: []string{"agnum", "file", "internal", "lazy-count", "logdev", "name", "sectsize", "size", "su", "sunit", "version"},
				refused: map[string]string{"logdev": whyDevice, "name": whyDevice, "file": whyFile}},
			"-m": {keys: []string{"bigtime", "crc", "finobt", "inobtcount", "reflink", "rmapbt", "uuid", "autofsck", "exchange", "metadir", "parent"}},
			"-n": {keys: []string{"ftype", "size", "version", "parent", "log"}},
			"-r": {keys: []string{"extsize", "file", "name", "noalign", "rtdev", "size"},
				refused: map[string]string{"rtdev": whyDevice, "name": whyDevice, "file": whyFile}},
			"-s": {keys: []string{"size", "sectsize", "log"}},
		},
	},
	"btrfs": {
		short: "A:b:fl:n:s:m:d:L:R:O:r:U:VvMKqu:",
		long: []longOpt{{"alloc-start", reqArg, 'A', ""}, {"byte-count", reqArg, 'b', ""}, {"checksum", reqArg, 0, ""}, {"csum", reqArg, 0, "checksum"},
			{"compress", reqArg, 0, ""}, {"data", reqArg, 'd', ""}, {"device-uuid", reqArg, 0, ""}, {"features", reqArg, 'O', ""}, {"force", noArg, 'f', ""},
			{"help", noArg, 0, ""}, {"inode-flags", reqArg, 0, ""}, {"label", reqArg, 'L', ""}, {"leafsize", reqArg, 'l', ""}, {"metadata", reqArg, 'm', ""},
			{"mixed", noArg, 'M', ""}, {"nodesize", reqArg, 'n', ""}, {"nodiscard", noArg, 'K', ""}, {"quiet", noArg, 'q', ""}, {"rootdir", reqArg, 'r', ""},
			{"runtime-features", reqArg, 'R', ""}, {"sectorsize", reqArg, 's', ""}, {"shrink", noArg, 0, ""}, {"subvol", reqArg, 'u', ""},
			{"uuid", reqArg, 'U', ""}, {"verbose", noArg, 'v', ""}, {"version", noArg, 'V', ""}},
		refused: map[string]string{"-r": whyDir, "-u": whyDir, "--shrink": whyDir, "--inode-flags": whyDir, "-V": whyDry, "--help": whyDry},
	},
	"f2fs": {
		short:   "qa:c:C:d:e:E:g:hil:mo:O:rR:s:S:z:t:T:U:Vfw:",
		long:    []longOpt{{"help", noArg, 'h', ""}},
		refused: map[string]string{"-c": whyDevice, "-h": whyDry, "-V": whyDry},
	},
	"nilfs2": {
		short:   "b:B:cfhKL:m:nqvO:P:V",
		refused: map[string]string{"-n": whyDry, "-h": whyDry, "-V": whyDry, "-P": whyUnsure},
	},
	"vfat": {
		short: "aAb:cCf:D:F:g:Ii:l:m:M:n:r:R:s:S:h:v",
		long: []longOpt{{"invariant", noArg, 0, ""}, {"offset", reqArg, 0, ""}, {"codepage", reqArg, 0, ""}, {"variant", reqArg, 0, ""},
			{"mbr", optArg, 0, ""}, {"help", noArg, 0, ""}},
		refused: map[string]string{"-C": whyFile, "-l": whyFile, "-m": whyFile, "--help": whyDry},
		// -g HEADS/SECTORS is a geometry, not a path.
		pathOK: []string{"-g"},
	},
	// mksquashfs matches whole single-dash words; fsbench puts the variant's words after
	// SOURCE IMAGE -noappend -no-progress.
	"squashfs": {
		single: append(squashfsArgs("-comp", "-b", "-mkfs-time", "-fstime", "-all-time", "-root-time", "-root-mode", "-root-uid",
			"-root-gid", "-force-uid", "-force-gid", "-action", "-log-action", "-true-action", "-false-action", "-action-file",
			"-log-action-file", "-true-action-file", "-false-action-file", "-p", "-pf", "-pd", "-pd-file", "-sort", "-ef",
			"-root-becomes", "-recover", "-recovery-path", "-throttle", "-limit", "-processors", "-mem", "-mem-percent", "-offset",
			"-o", "-default-mode", "-default-uid", "-default-gid", "-xattrs-exclude", "-xattrs-include", "-xattrs-add",
			"-read-queue", "-write-queue", "-fragment-queue", "-Xcompression-level", "-Xwindow-size", "-Xstrategy",
			"-Xalgorithm", "-Xbcj", "-Xdict-size"),
			squashfsFlags("-tar", "-no-strip", "-tarstyle", "-cpiostyle", "-cpiostyle0", "-reproducible", "-not-reproducible",
				"-no-exports", "-exports", "-no-sparse", "-no-xattrs", "-xattrs", "-noI", "-noId", "-noD", "-noF", "-noX",
				"-no-tailends", "-tailends", "-no-fragments", "-always-use-fragments", "-no-duplicates", "-no-hardlinks",
				"-all-root", "-keep-as-directory", "-wildcards", "-regex", "-one-file-system", "-noappend", "-version",
				"-exit-on-error", "-no-recovery", "-quiet", "-info", "-no-progress", "-progress", "-nopad", "-root-owned",
				"-noInodeCompression", "-noIdTableCompression", "-noDataCompression", "-noFragmentCompression",
				"-noXattrCompression", "-help", "-h", "-Xhelp", "-Xhc", "-e")...),
		refused: map[string]string{
			"-tar": whyStdin, "-cpiostyle": whyStdin, "-cpiostyle0": whyStdin,
			"-p": whyExec, "-pf": whyExec, "-pd": whyExec, "-pd-file": whyExec,
			"-action": whyExec, "-log-action": whyExec, "-true-action": whyExec, "-false-action": whyExec,
			"-action-file": whyExec, "-log-action-file": whyExec, "-true-action-file": whyExec, "-false-action-file": whyExec,
			"-sort": whyFile, "-ef": whyFile, "-recover": whyFile, "-recovery-path": whyFile,
			"-version": whyDry, "-help": whyDry, "-h": whyDry, "-Xhelp": whyDry,
			// -e takes every remaining word as a name to exclude: it would swallow what follows.
			"-e": "it takes every word after it as a name to exclude; exclude nothing from the generated dataset",
		},
	},
	"erofs": {
		short: "C:E:T:U:d:x:z:b:L:",
		long: []longOpt{{"all-root", noArg, 0, ""}, {"blobdev", reqArg, 0, ""}, {"chunksize", reqArg, 0, ""}, {"compress-hints", reqArg, 0, ""},
			{"exclude-path", reqArg, 0, ""}, {"exclude-regex", reqArg, 0, ""}, {"file-contexts", reqArg, 0, ""}, {"force-uid", reqArg, 0, ""},
			{"force-gid", reqArg, 0, ""}, {"help", noArg, 0, ""}, {"ignore-mtime", noArg, 0, ""}, {"max-extent-bytes", reqArg, 0, ""},
			{"preserve-mtime", noArg, 0, ""}, {"quiet", noArg, 0, ""}, {"version", noArg, 0, ""}, {"tar", optArg, 0, ""}, {"aufs", noArg, 0, ""},
			{"ovlfs-strip", optArg, 0, ""}, {"mount-point", reqArg, 0, ""}, {"uid-offset", reqArg, 0, ""}, {"gid-offset", reqArg, 0, ""},
			{"random-pclusterblks", noArg, 0, ""}, {"random-algorithms", noArg, 0, ""}, {"root-xattr-isize", reqArg, 0, ""},
			{"workers", reqArg, 0, ""}, {"zfeature-bits", reqArg, 0, ""}, {"clean", optArg, 0, ""}, {"incremental", optArg, 0, ""},
			{"offset", reqArg, 0, ""}, {"sort", reqArg, 0, ""}, {"fs-config-file", reqArg, 0, ""}, {"product-out", reqArg, 0, ""},
			{"block-list-file", reqArg, 0, ""}, {"vmdk-desc", reqArg, 0, ""}, {"xattr-prefix", reqArg, 0, ""}, {"all-time", noArg, 0, ""},
			{"mkfs-time", noArg, 0, ""}, {"hard-dereference", noArg, 0, ""}, {"dsunit", reqArg, 0, ""}, {"ungzip", optArg, 0, ""}},
		refused: map[string]string{
			"--blobdev": whyDevice, "--compress-hints": whyFile, "--exclude-path": whyFile, "--file-contexts": whyFile,
			"--tar": whyStdin, "--incremental": whyFile, "--fs-config-file": whyFile, "--product-out": whyFile,
			"--block-list-file": whyFile, "--vmdk-desc": whyFile, "--ungzip": whyStdin, "--help": whyDry, "--version": whyDry,
		},
	},
}

func squashfsArgs(names ...string) []longOpt  { return singles(names, reqArg) }
func squashfsFlags(names ...string) []longOpt { return singles(names, noArg) }

func singles(names []string, arg argKind) []longOpt {
	out := make([]longOpt, len(names))
	for i, n := range names {
		out[i] = longOpt{name: n, arg: arg}
	}
	return out
}

// CheckMkfsArgs returns an error saying what is wrong, and why, when a variant's mkfs words
// (args, for filesystem kind k) are anything but options of k's tool that fsbench knows and
// lets through: a positional word, "--", an option or sub-option that names another device or a
// file, one that runs a program or makes nothing, one the tool's grammar does not have, or a
// value that is a path.
func CheckMkfsArgs(k Kind, args []string) error {
	g, ok := grammars[k.Name]
	if !ok {
		if len(args) > 0 {
			return fmt.Errorf("%s takes no mkfs words here: fsbench has no grammar of %s's options to check them by, and gives it the chip's geometry and the image's paths itself; remove the variant's mkfs line", k.Name, k.Tool)
		}
		return nil
	}
	if err := g.check(args); err != nil {
		return fmt.Errorf("%s: %w", k.Tool, err)
	}
	return nil
}

// positional is the refusal of a word that is not an option.
func positional(w string) error {
	return fmt.Errorf("%q is not an option: a word that is not an option is taken as a device or file (%s); give options only, e.g. \"-O ^has_journal\"", w, whyDevice)
}

// check reads args as the tool's getopt (GNU, which permutes: a positional word anywhere is a
// device or file) and judges every option and value.
func (g grammar) check(args []string) error {
	a := &argv{args: args}
	for ; a.i < len(args); a.i++ {
		w := args[a.i]
		var err error
		switch {
		case w == "--":
			return fmt.Errorf("the word \"--\" ends the options, so what follows would be taken as devices or files; give options only")
		case w == "" || w[0] != '-' || w == "-":
			return positional(w)
		case g.single != nil:
			err = g.checkSingle(a, w)
		case strings.HasPrefix(w, "--"):
			err = g.checkLong(a, w)
		default:
			err = g.checkCluster(a, w)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// argv is the arguments being read and the index of the word read now.
type argv struct {
	args []string
	i    int
}

// value takes the next word as the value of the option spelled so.
func (a *argv) value(spelled string) (string, error) {
	if a.i+1 >= len(a.args) {
		return "", fmt.Errorf("option %s needs a value", spelled)
	}
	a.i++
	return a.args[a.i], nil
}

// checkSingle judges w for a tool whose options are all whole words after one dash
// (g.single), a value being the next word.
func (g grammar) checkSingle(a *argv, w string) error {
	j := slices.IndexFunc(g.single, func(o longOpt) bool { return o.name == w })
	if j < 0 {
		return unknownOption(w)
	}
	val, has := "", false
	if g.single[j].arg == reqArg {
		v, err := a.value(w)
		if err != nil {
			return err
		}
		val, has = v, true
	}
	return g.judge(w, w, val, has)
}

// checkLong judges a long option w (--name or --name=value, the value possibly the next
// word), under the name its short form or alias has in the rules.
func (g grammar) checkLong(a *argv, w string) error {
	name, val, has := strings.Cut(w[2:], "=")
	o, err := g.lookupLong(name)
	if err != nil {
		return err
	}
	spelled := "--" + o.name
	switch {
	case o.arg == noArg && has:
		return fmt.Errorf("option %s takes no value (%q)", spelled, w)
	case o.arg == reqArg && !has:
		if val, err = a.value(spelled); err != nil {
			return err
		}
		has = true
	}
	canon := spelled
	switch {
	case o.short != 0:
		canon = "-" + string(o.short)
	case o.as != "":
		canon = "--" + o.as
	}
	return g.judge(canon, spelled, val, has)
}

// checkCluster judges a cluster of short options: each letter is an option until one that
// takes a value, which takes the rest of the word (or the next word).
func (g grammar) checkCluster(a *argv, w string) error {
	for j := 1; j < len(w); j++ {
		opt := "-" + w[j:j+1]
		arg, ok := g.shortArg(w[j])
		if !ok {
			return unknownOption(opt)
		}
		if arg == noArg {
			if err := g.judge(opt, opt, "", false); err != nil {
				return err
			}
			continue
		}
		val, has := w[j+1:], j+1 < len(w)
		if arg == reqArg && !has {
			v, err := a.value(opt)
			if err != nil {
				return err
			}
			val, has = v, true
		}
		return g.judge(opt, opt, val, has)
	}
	return nil
}

// shortArg reads getopt's optstring: c, then ":" for a required value, "::" for an optional one.
func (g grammar) shortArg(c byte) (argKind, bool) {
	if c == ':' || c == '-' || c == '+' {
		return 0, false
	}
	i := strings.IndexByte(g.short, c)
	if i < 0 {
		return 0, false
	}
	switch rest := g.short[i+1:]; {
	case strings.HasPrefix(rest, "::"):
		return optArg, true
	case strings.HasPrefix(rest, ":"):
		return reqArg, true
	}
	return noArg, true
}

// lookupLong finds a long option as getopt_long does: the exact name, or the one option whose
// name starts with it (names for the same option, --csum and --checksum, are one option).
func (g grammar) lookupLong(name string) (longOpt, error) {
	var found []longOpt
	for _, o := range g.long {
		if o.name == name {
			return o, nil
		}
		if name != "" && strings.HasPrefix(o.name, name) {
			found = append(found, o)
		}
	}
	switch {
	case len(found) == 0:
		return longOpt{}, unknownOption("--" + name)
	case slices.ContainsFunc(found[1:], func(o longOpt) bool { return !o.same(found[0]) }):
		names := make([]string, len(found))
		for i, o := range found {
			names[i] = "--" + o.name
		}
		return longOpt{}, fmt.Errorf("option --%s is ambiguous (%s): write it out", name, strings.Join(names, ", "))
	}
	return found[0], nil
}

func unknownOption(opt string) error {
	return fmt.Errorf("fsbench does not know the option %s: only options whose meaning fsbench knows are let through, so that none that names a device or a file slips in (a newer version of the tool may have added it; its manual says what it does)", opt)
}

// judge refuses an option (canon its short name or long spelling, spelled as the user wrote it,
// or as getopt_long completed it) or its value.
func (g grammar) judge(canon, spelled, val string, has bool) error {
	if g.visit != nil && has {
		g.visit(canon, val)
	}
	if why, bad := g.refused[canon]; bad {
		return fmt.Errorf("option %s is refused: %s", spelled, why)
	}
	if !has {
		return nil
	}
	if sub, ok := g.subs[canon]; ok {
		for _, part := range strings.Split(val, ",") {
			key, v, _ := strings.Cut(part, "=")
			if why, bad := sub.refused[key]; bad {
				return fmt.Errorf("%s %s is refused: %s", spelled, part, why)
			}
			if !slices.Contains(sub.keys, key) {
				return fmt.Errorf("%s %s: fsbench does not know the sub-option %q (it knows %s); a newer tool may have added it, and only known ones are let through",
					spelled, part, key, strings.Join(sub.keys, ", "))
			}
			if strings.Contains(v, "/") {
				return fmt.Errorf("the value %q of %s %s looks like a path: %s", v, spelled, key, whyFile)
			}
		}
		return nil
	}
	if strings.Contains(val, "/") && !slices.Contains(g.pathOK, canon) {
		return fmt.Errorf("the value %q of %s looks like a path: %s", val, spelled, whyFile)
	}
	return nil
}

// mountRefused are mount options that make the kernel (or mount(8)) open a device or file other
// than the one mounted: btrfs's device= scans another device into the filesystem, ext4's
// journal_path= and journal_dev= and xfs's logdev= and rtdev= put part of it elsewhere, and
// mount(8)'s loop options set up a loop device over a file.
var mountRefused = map[string]string{
	"source":       "it names the device to mount; fsbench mounts the device it made (or the one named with --destroy)",
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

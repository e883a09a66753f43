// Package plan reads fsbench's configuration: which filesystem variants to benchmark
// (filesystem type, mkfs arguments, mount options), which tests, on how large a device, how
// many times. It is a TOML file; list values in a [[variant]] table expand into a matrix, as
// in Intel LKP job files, so that
//
//	[[variant]]
//	fs = ["ext4", "xfs", "btrfs"]
//	mount = ["relatime", "noatime", "noatime,dirsync"]
//
// gives 9 variants. Every key is optional:
//
//	size = "512M"            # also a plain integer of bytes
//	repetitions = 3
//	warmup = false
//	suite = "bootlin"
//	tests = ["mkfs", "mount", "write", "read"]   # optional subset
//	timeout = "10m"
//	dataset = "/srv/rootfs"  # optional: the user's own tree
//	dataset_size = "40M"     # optional
//	video_size = "60M"       # optional
//	seed = 1
//	results = "./fsbench-results"
//
//	[[variant]]
//	fs = ["ext4", "xfs", "btrfs"]              # string or list
//	mount = ["relatime", "noatime", "noatime,dirsync"]   # string or list
//	mkfs = "-m single"                          # string (shell-split) or list of strings (expanded)
//
//	[[variant]]
//	name = "ext4-tuned"
//	fs = "ext4"
//	mkfs = "-O ^has_journal -b 4096 -E stride=4,stripe-width=1024"
//	mount = "noatime"
//
// (testdata/example.toml holds this file; a test parses it.) The rules:
//
//   - Keys the file leaves out keep their defaults (see Default). Sizes are strings with an
//     optional unit (see bytesize.Parse) or integers of bytes; timeout is a Go duration string.
//     Paths (dataset, results) are used as written: a relative one is relative to the
//     working directory of fsbench, not to the file.
//   - If the file has any [[variant]] tables they replace the default variants
//     (DefaultVariants); otherwise the defaults stay.
//   - In a [[variant]], fs, mkfs and mount are each a string or a list of strings, and expand
//     as the cartesian product fs × mkfs × mount, in that order. A mkfs string is split
//     like a shell would (SplitArgs), without expansion; each string of a mkfs list is one
//     set of arguments. mkfs and mount default to "" (no extra arguments, default options).
//     Note that one table's mkfs applies to each of its fs values: the mkfs "-m single" of
//     the example suits mkfs.btrfs only, and a real configuration would give btrfs its own
//     table.
//   - A variant's name is name if given, else the fs value; each dimension that had more
//     than one value then appends "/" and the value ("" is shown as "defaults"; mkfs values
//     keep their spaces): "ext4/noatime,dirsync", "btrfs/-m single/noatime". The example
//     above gives ext4/relatime, ext4/noatime, ext4/noatime,dirsync, xfs/relatime, ...,
//     btrfs/noatime,dirsync and ext4-tuned. Two variants with the same name are an error.
//   - partition_start (a string or list; "63s" in 512-byte sectors, "4MiB" as a size, or an
//     integer of bytes) is one more dimension: each start puts the variant's filesystem in a
//     partition window starting there, all windows as long as the device less the largest
//     start, and appends "/start=" and the start as written to the name ("ext3/start=63s"),
//     even when it is the only one. 0 is refused (the whole device is not such a window).
//     The Pandaboard study's misaligned against aligned partition is ["63s", "4MiB"].
//   - A file makes at most 1000 variants (the product of each table's list lengths, summed
//     over its tables); a larger matrix is refused before it is expanded: split it into
//     several runs.
//
// Every error names the file and line ("matrix.toml:7: unknown key \"mout\" in
// [[variant]]; did you mean \"mount\"? (known keys: fs, mkfs, mount, name, partition_start)") and says what
// would be accepted. Parse reports all problems of a file at once, except that a TOML
// syntax error stops it at the first.
package plan

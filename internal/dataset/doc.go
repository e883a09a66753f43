// Package dataset provides the data fsbench writes and reads: a deterministic rootfs-like
// tree (or the user's own tree), incompressible "video" files, and the copy and read
// operations that the benchmark times.
//
// Bootlin's method, which fsbench automates, copies a ~319 MB Debian root filesystem five
// times into the filesystem under test, reads every file back, and copies a 317 MB
// incompressible video five times. Shipping a Debian tree is not practical, so Generate
// builds a tree that stresses a filesystem the same way, scaled to the device:
//
//   - Layout: a merged-/usr Debian root. Top-level directories (boot, dev, etc, proc, root,
//     tmp, var, ...), bin/sbin/lib as symlinks to usr/*, and "packages" unpacked the way
//     dpkg does: executables in usr/bin and usr/sbin, shared libraries in
//     usr/lib/aarch64-linux-gnu with their soname links (libfoo.so.1 -> libfoo.so.1.2.3),
//     plugins, usr/share/doc/<pkg> (copyright, changelog.Debian.gz), man pages,
//     usr/share/locale/<lang>/LC_MESSAGES/<pkg>.mo, configs in etc, data in
//     usr/share/<pkg>, Python modules, dpkg's var/lib/dpkg/info files, a few empty lock files
//     and absolute or dangling symlinks (var/run -> /run, etc/alternatives). Directory depth
//     and names per directory are what path lookup, directory indexing and small-file
//     allocation see on a real root.
//   - Sizes: log-normal per kind of file, so the median is a few KiB, the mean 20-30 KiB and a
//     heavy tail reaches a few MiB (libc, libstdc++, the locale archive), never more than
//     TargetBytes/8. The file that crosses the target is shortened, so the total is exact.
//     Small files dominate the count, large ones the bytes, as on a real root; that mix is
//     what separates filesystems (inline data, tail packing, extent allocation).
//   - Contents: three generators with the compressibility of the real thing, because
//     compressing filesystems (btrfs, f2fs, squashfs, erofs) would otherwise look
//     unrealistically good (zeros) or bad (random). Text (configs, docs, scripts: Zipf-
//     distributed words, indentation, repeated boilerplate lines, numbers and hex) deflates
//     to ~0.35; ELF-like binaries (code from a dictionary of instruction blocks, string and
//     symbol tables, zero padding, some random data) to ~0.5; already compressed files
//     (.gz, .png, .jpg) are random, ~1.0. The tree as a whole deflates to ~0.46, like a
//     Debian rootfs with gzip -6.
//   - Metadata: modes 0644, 0755 (executables, scripts), 0600/0640 (shadow, locks), 0700
//     and 1777 directories; fixed mtimes (up to two years before Debian 12's release), so a
//     squashfs or erofs image of the tree is reproducible.
//
// The same Spec always gives a byte-identical tree (math/rand/v2 PCG streams: one for the
// layout, one per file for its contents). Contents are produced while writing in chunks of
// 256 KiB, so memory does not grow with the tree; only the layout (~100 bytes per entry) is
// planned up front.
//
// CopyTree and ReadTree are what the benchmark times, so they are written to cost no more
// than `cp -a` and `tar cf - | cat` (TestCopyReadVsTools measures it with FSBENCH_BENCH=1).
// Like those tools they leave their writes in the page cache: callers time the sync.
package dataset

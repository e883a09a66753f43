// Package vm runs fsbench inside a QEMU guest, so that filesystems the host's kernel lacks
// (f2fs, nilfs2, vfat, jffs2, ubifs, ...) or cannot load can be measured on any host, on an
// emulated SD card (/dev/mmcblk0 in the guest, backed by an image file on the host).
//
// # Launcher: fsbench's own, not virtme-ng
//
// The guest is Debian's kernel (/boot/vmlinuz-*, linux-image-amd64) booted with an initramfs
// this package writes in Go each run: busybox (static) as the shell of /init, the same fsbench
// binary (/proc/self/exe), the mkfs tools, mount(8), kmod and mtd-utils copied from the host
// with their ELF interpreter and shared libraries (found by reading DT_NEEDED, as ld.so would,
// without running ldd), and the kernel modules fsbench can need with their dependencies from
// modules.dep, indexed by the host's depmod -b. virtme-ng was the alternative; it was not
// chosen because it
//   - comes from PyPI (Python, pip and its own dependencies on every CI runner and board-side
//     build host), where this needs only Debian packages (qemu-system-x86, linux-image-amd64,
//     busybox-static, kmod);
//   - shares the whole host root with the guest over 9p/virtiofs, so the guest's /lib/modules,
//     /tmp and /dev are the host's, with the host's state in them, and every file fsbench reads
//     (its dataset, tools) crosses 9p; here everything but the results directory is in the
//     guest's RAM, and the card is the only block device the guest sees;
//   - adds its own boot logic between us and the kernel; an initramfs we write fails in ways we
//     can read (the console log is kept).
//
// Measured on the development machine (2 cores, TCG): boot to the command's start in 6-8 s
// with a 48 MB initramfs.
//
// # Guest
//
// /init mounts proc, sys, devtmpfs, tmpfs; points /proc/sys/kernel/modprobe at kmod's modprobe
// (the kernel runs it itself when vfat asks for nls_cp437); loads the SD host controller
// (sdhci_pci, mmc_block), virtio 9p, loop and fuse (the powercut suite serves its simulated card
// in the guest; without udev their device nodes appear only when the driver registers);
// mounts Options.OutDir over 9p at the same path as on the host, so that paths in the
// arguments mean the same inside; and runs fsbench there, as
// root. Its exit status comes back on the serial console ("fsbench-vm: exit status N"), which
// is kept in OutDir/console.log; then the guest powers off. The results directory is written
// straight to the host through the share: a guest that hangs or is killed still leaves what
// it wrote.
//
// # Accelerator
//
// TCG by default. KVM only when /dev/kvm opens and a probe boot (the kernel without initramfs,
// 15 s at most) prints its first line: on the development machine /dev/kvm opens, but QEMU
// aborts with -cpu host ("failed to set MSR 0x10a") and without it hangs at "Booting from ROM".
// Result.Accel and Result.AccelNote record which was used and why. Under TCG the guest gets one
// vCPU: with two, one run in three locked up (RCU stall, soft lockup of fsbench).
//
// No QEMU outlives Run: it is killed (by its pid) when the context ends, at Options.Timeout, on
// Stop, and on a panic (a deferred Stop); Pdeathsig kills it if this process dies first.
package vm

#!/bin/sh
# Installs what `fsbench run --target vm` (internal/vm) needs on Debian 12 or later (amd64): QEMU,
# a guest kernel with its modules (/boot/vmlinuz-*, /lib/modules/<release>), a static busybox (the
# guest's shell), kmod (modprobe in the guest, depmod on the host) and the tools fsbench runs in
# the guest, which are copied in from this machine with their shared libraries.
# Run as root. Safe to run again. No network in the guest, no root filesystem image: the guest
# boots from an initramfs fsbench builds each run.
set -eu

[ "$(id -u)" = 0 ] || { echo "setup-vm-debian.sh: run it as root (sudo $0)" >&2; exit 1; }
[ "$(dpkg --print-architecture)" = amd64 ] || {
	echo "setup-vm-debian.sh: the QEMU guest is x86-64 (linux-image-amd64); this machine is $(dpkg --print-architecture)" >&2
	exit 1
}

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# qemu-system-x86: the emulator (TCG works everywhere; KVM is used only where a probe boot works).
# linux-image-amd64: the guest kernel; it installs /boot/vmlinuz-* and its modules, f2fs,
# nilfs2, vfat, nandsim, ubi, jffs2 and ubifs among them, which the host's kernel may lack.
# busybox-static: /init and the shell of the guest. kmod: modprobe (guest) and depmod (host).
# util-linux: mount(8), which fsbench uses for nilfs2. mtd-utils: ubiformat, ubiattach,
# ubimkvol, flash_erase for flash filesystems on nandsim in the guest. dmsetup: dm-log-writes in
# the guest for make bench-powercut-reference.
apt-get install -y -qq --no-install-recommends \
	qemu-system-x86 linux-image-amd64 busybox-static kmod util-linux mtd-utils dmsetup \
	e2fsprogs xfsprogs btrfs-progs f2fs-tools nilfs-tools dosfstools squashfs-tools erofs-utils >/dev/null

# Debian installs the kernel readable by root only (0600); fsbench runs as root anyway.
k=$(ls -t /boot/vmlinuz-* 2>/dev/null | head -n1)
[ -n "$k" ] || { echo "setup-vm-debian.sh: no /boot/vmlinuz-* after installing linux-image-amd64" >&2; exit 1; }
echo "guest kernel: $k; QEMU: $(qemu-system-x86_64 --version | head -n1)"

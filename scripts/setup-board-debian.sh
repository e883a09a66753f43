#!/bin/sh
# Installs what `fsbench board up` (internal/board) needs on Debian 12 or later: QEMU for ARM
# (qemu-system-aarch64 and qemu-system-arm), the OpenSSH client and ssh-keygen (fsbench reaches
# a board with the user's ssh), dpkg and apt (the board's Debian arm packages are downloaded with
# a private apt state and unpacked with dpkg -x, never installed on this machine) and kmod's
# depmod (the kernel package ships no modules.dep).
# Run as root. Safe to run again. The arm packages themselves are fetched by `fsbench board up`
# into /var/cache/fsbench/board/ARCH, once.
set -eu

[ "$(id -u)" = 0 ] || { echo "setup-board-debian.sh: run it as root (sudo $0)" >&2; exit 1; }

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends qemu-system-arm openssh-client kmod dpkg apt ca-certificates >/dev/null
echo "board: $(qemu-system-aarch64 --version | head -n1); $(ssh -V 2>&1)"

#!/bin/sh
# Installs what make test-lava (internal/testkit/lavalab) needs on Debian 12 or later: LAVA's own
# dispatcher (lava-dispatcher: lava-run, which runs a job from a device dictionary without a
# LAVA server) with libguestfs, which builds the test overlay's disk of a QEMU device, and the
# QEMU for the emulated arm64 board it boots (scripts/setup-board-debian.sh). libguestfs boots
# a small appliance of this machine's kernel: /boot/vmlinuz-* (scripts/setup-vm-debian.sh).
# Run as root. Safe to run again. The lava-worker service the package brings (a worker for a
# LAVA server) is not started: lava-run needs none.
set -eu
[ "$(id -u)" = 0 ] || { echo "setup-lava-debian.sh: run it as root (sudo $0)" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
if ! command -v lava-run >/dev/null 2>&1; then
	# policy-rc.d is Debian's way to install a service without starting it.
	made_policy=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		made_policy=1
	fi
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends lava-dispatcher python3-guestfs qemu-utils git >/dev/null
	[ -z "$made_policy" ] || rm -f /usr/sbin/policy-rc.d
	if command -v systemctl >/dev/null 2>&1; then
		systemctl disable lava-worker.service >/dev/null 2>&1 || true
	fi
fi
echo "setup-lava-debian.sh: ready (lava-dispatcher $(dpkg-query -W -f '${Version}' lava-dispatcher))"

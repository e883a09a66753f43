#!/bin/sh
# Installs what the labgrid farm tests and make bench-farm need on Debian: OpenSSH's server
# (each "board" of the test farm is an sshd of its own on 127.0.0.1) and labgrid 26.0.1 from PyPI
# in a venv (/opt/fsbench-labgrid), which has the gRPC labgrid-coordinator, labgrid-exporter
# and labgrid-client. fsbench itself needs only labgrid-client, on the machine that runs it.
# Run as root. Safe to run again.
set -eu

[ "$(id -u)" = 0 ] || { echo "setup-labgrid.sh: run it as root (sudo $0)" >&2; exit 1; }
VENV=${FSBENCH_LABGRID_VENV:-/opt/fsbench-labgrid}
LABGRID=${FSBENCH_LABGRID_VERSION:-26.0.1}

export DEBIAN_FRONTEND=noninteractive
if [ ! -x /usr/sbin/sshd ]; then
	# The package starts a system-wide sshd on every address; the tests start their own on
	# 127.0.0.1 only. policy-rc.d is Debian's way to install a service without starting it.
	made_policy=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		made_policy=1
	fi
	apt-get install -y -qq --no-install-recommends openssh-server openssh-client >/dev/null
	[ -z "$made_policy" ] || rm -f /usr/sbin/policy-rc.d
	if command -v systemctl >/dev/null 2>&1; then
		systemctl disable ssh.service ssh.socket >/dev/null 2>&1 || true
	fi
fi
if [ ! -x "$VENV/bin/labgrid-client" ] || ! "$VENV/bin/pip" show labgrid 2>/dev/null | grep -qx "Version: $LABGRID"; then
	command -v python3 >/dev/null 2>&1 || apt-get install -y -qq --no-install-recommends python3 >/dev/null
	python3 -m venv "$VENV" 2>/dev/null || {
		apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
		python3 -m venv "$VENV"
	}
	"$VENV/bin/pip" install -q "labgrid==$LABGRID"
fi
echo "setup-labgrid.sh: ready (labgrid $("$VENV/bin/pip" show labgrid | sed -n 's/^Version: //p') in $VENV, $(/usr/sbin/sshd -V 2>&1 | head -n1))"

#!/bin/sh
# Installs what fsbench needs on a fresh Debian (12 or later) machine: the mkfs tools of every
# filesystem it measures, make, and Go 1.26 if the machine has no recent enough Go.
# Run as root. Safe to run again.
set -eu

[ "$(id -u)" = 0 ] || { echo "setup-debian.sh: run it as root (sudo $0)" >&2; exit 1; }

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
	e2fsprogs xfsprogs btrfs-progs f2fs-tools nilfs-tools dosfstools \
	squashfs-tools erofs-utils util-linux kmod procps make ca-certificates git fio bonnie++ >/dev/null

GO_WANT=1.26
go_ok() {
	command -v go >/dev/null 2>&1 || return 1
	v=$(go env GOVERSION 2>/dev/null | sed 's/^go//') || return 1
	[ "$(printf '%s\n%s\n' "$GO_WANT" "$v" | sort -V | head -n1)" = "$GO_WANT" ]
}
if ! go_ok; then
	# Debian's own Go is older than the module needs. Go toolchains are published as modules
	# (golang.org/toolchain) on the Go module proxy, so the old go command can fetch a new one.
	apt-get install -y -qq --no-install-recommends golang-go >/dev/null
	arch=$(dpkg --print-architecture)
	case "$arch" in armhf) arch=armv6l ;; esac
	tmp=$(mktemp -d)
	dir=$(cd "$tmp" && GOFLAGS=-modcacherw GOPATH=/usr/local/lib/fsbench-go /usr/bin/go mod download -json \
		"golang.org/toolchain@v0.0.1-go1.26.8.linux-$arch" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	rm -rf "$tmp"
	[ -f "$dir/bin/go" ] || { echo "setup-debian.sh: could not fetch Go 1.26 from the Go module proxy" >&2; exit 1; }
	# Module zips carry no exec bits; the go command's own toolchain switch sets them the same way.
	find "$dir/bin" "$dir/pkg/tool" -type f -exec chmod 0755 {} +
	ln -sf "$dir/bin/go" /usr/local/bin/go
	ln -sf "$dir/bin/gofmt" /usr/local/bin/gofmt
	hash -r 2>/dev/null || true
fi
# The QEMU guest (fsbench run --target vm) for the filesystems this machine's kernel lacks.
if [ "$(dpkg --print-architecture)" = amd64 ]; then
	sh "$(dirname "$0")/setup-vm-debian.sh"
else
	echo "setup-debian.sh: skipping the QEMU guest set-up: it is for amd64 machines"
fi
echo "setup-debian.sh: ready ($(go version))"

#!/bin/sh
# Installs the formats' own tools that fsbench export's tests check its output with: kcidb-io
# (KernelCI's KCIDB schema and its validator) and squad (the SQUAD server, Django on SQLite,
# which the test runs on 127.0.0.1), each from PyPI in a venv of its own under /opt, as
# scripts/setup-labgrid.sh does. fsbench itself needs neither. Run as root. Safe to run again.
set -eu

[ "$(id -u)" = 0 ] || { echo "setup-ci-formats.sh: run it as root (sudo $0)" >&2; exit 1; }
KCIDB_VENV=${FSBENCH_KCIDB_VENV:-/opt/fsbench-kcidb}
SQUAD_VENV=${FSBENCH_SQUAD_VENV:-/opt/fsbench-squad}
KCIDB_IO=${FSBENCH_KCIDB_IO_VERSION:-141}
SQUAD=${FSBENCH_SQUAD_VERSION:-1.98}

export DEBIAN_FRONTEND=noninteractive
command -v python3 >/dev/null 2>&1 || apt-get install -y -qq --no-install-recommends python3 >/dev/null
venv() {
	[ -x "$1/bin/pip" ] && return 0
	python3 -m venv "$1" 2>/dev/null || {
		apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
		python3 -m venv "$1"
	}
}
if ! "$KCIDB_VENV/bin/pip" show kcidb-io 2>/dev/null | grep -qx "Version: $KCIDB_IO"; then
	venv "$KCIDB_VENV"
	"$KCIDB_VENV/bin/pip" install -q "kcidb-io==$KCIDB_IO"
fi
if ! "$SQUAD_VENV/bin/pip" show squad 2>/dev/null | grep -qx "Version: $SQUAD"; then
	venv "$SQUAD_VENV"
	"$SQUAD_VENV/bin/pip" install -q "squad==$SQUAD"
fi
# SQUAD's web pages take their JavaScript and CSS (AngularJS, Bootstrap, Chart.js, ...) from
# the internet: importing squad.frontend runs squad/frontend/static/download, which fetches
# them, and the server does not start when that fails. CI machines reach no such site, and the
# submission API the test uses needs none of them: each asset gets an empty stand-in and the
# download's status says it is there, so that the script fetches nothing. The web pages are
# then unstyled; the API is whole.
STATIC=$("$SQUAD_VENV/bin/python3" -c 'import importlib.util, os; print(os.path.join(os.path.dirname(importlib.util.find_spec("squad").origin), "frontend", "static"))')
if [ -f "$STATIC/download.conf" ]; then
	: > "$STATIC/download.status.new"
	grep -v '^[[:space:]]*#' "$STATIC/download.conf" | while read -r dest url sha1; do
		[ -n "$dest" ] && [ -n "$url" ] || continue
		if [ ! -e "$STATIC/$dest" ]; then
			mkdir -p "$(dirname "$STATIC/$dest")"
			case "$url" in
			*.js | *.css) : > "$STATIC/$dest" ;;
			*) mkdir -p "$STATIC/$dest" ;;
			esac
		fi
		echo "$dest $url $sha1" >> "$STATIC/download.status.new"
	done
	mv -f "$STATIC/download.status.new" "$STATIC/download.status"
fi
echo "setup-ci-formats.sh: ready (kcidb-io $("$KCIDB_VENV/bin/pip" show kcidb-io | sed -n 's/^Version: //p') in $KCIDB_VENV, squad $("$SQUAD_VENV/bin/pip" show squad | sed -n 's/^Version: //p') in $SQUAD_VENV)"

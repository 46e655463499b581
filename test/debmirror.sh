#!/bin/sh
# debmirror.sh [VARIABLE]: print the Debian mirror the test roots and the
# VM image are built from: $VARIABLE when it is set and not empty, else the
# first Debian archive (not -security) of this machine's apt sources: the
# deb822 files /etc/apt/sources.list.d/*.sources (URIs:), then the one-line
# /etc/apt/sources.list and /etc/apt/sources.list.d/*.list (deb URI SUITE).
# No mirror is written into the repository: a machine without one in its
# apt configuration gets an error naming the variable to set.
set -eu
var=${1:-}
if [ -n "$var" ]; then
	eval "v=\${$var:-}"
	if [ -n "$v" ]; then
		echo "${v%/}"
		exit 0
	fi
fi
uris() {
	sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | tr ' \t' '\n\n'
	sed -n 's/^[[:space:]]*deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\([^[:space:]]\{1,\}\).*/\2/p' \
		/etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null
}
m=$(uris | grep -v -- '-security' | grep '/debian/\{0,1\}$' | head -n1 || true)
if [ -z "$m" ]; then
	echo "debmirror.sh: no Debian archive in this machine's apt sources (/etc/apt/sources.list{,.d}); set ${var:-a mirror variable} to one" >&2
	exit 1
fi
echo "${m%/}"

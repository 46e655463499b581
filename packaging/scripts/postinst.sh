#!/bin/sh
# gpuprep's postinst (deb: "configure"; rpm %post: 1 on install, 2 on
# upgrade): create /run/gpuprep now rather than at the next boot. Where
# systemd-tmpfiles is missing the prolog creates it itself.
set -e

case "$1" in
configure | 1 | 2)
	if command -v systemd-tmpfiles >/dev/null 2>&1; then
		systemd-tmpfiles --create /usr/lib/tmpfiles.d/gpuprep.conf || true
	fi
	;;
esac

exit 0

#!/bin/sh
# gpuprep's postinst (deb: "configure"; rpm %post: 1 on install, 2 on
# upgrade): create /run/gpuprep now rather than at the next boot. Where
# systemd-tmpfiles is missing the prolog creates it itself. It never
# restarts or reloads slurmd and never touches a job's settings: a running
# job's epilog, now the new one, reads the spool its prolog wrote (every
# older spool format is read; docs/admin.md "Upgrading and removing").
set -e

case "$1" in
configure)
	# The end of preinst's rm_conffile (0.1.0's unedited gpuprep.toml).
	if command -v dpkg-maintscript-helper >/dev/null 2>&1; then
		dpkg-maintscript-helper rm_conffile /etc/gpuprep/gpuprep.toml 0.2.0~ gpuprep -- "$@"
	fi
	;;
esac

case "$1" in
configure | 1 | 2)
	if command -v systemd-tmpfiles >/dev/null 2>&1; then
		systemd-tmpfiles --create /usr/lib/tmpfiles.d/gpuprep.conf || true
	fi
	;;
esac

exit 0

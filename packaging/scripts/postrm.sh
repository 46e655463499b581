#!/bin/sh
# gpuprep's post-removal script (deb postrm; rpm %postun: 0 when the
# package is erased, 1 on an upgrade). It removes what gpuprep left on the
# node only when nothing of gpuprep remains, never on an upgrade: deb
# "purge", rpm 0.
#   - the spool (/var/lib/gpuprep, or general.state_dir when its name says
#     gpuprep), the log file (/var/log/gpuprep.log and its rotations, or
#     general.log_file when its name says gpuprep), the run directory
#     (/run/gpuprep), and node_exporter's gpuprep-*.prom files (stale
#     series would fire the stale-health alerts) in general.metrics_dir
#     and the textfile directories gpuprep looks for;
#   - deb purge only: /etc/gpuprep (purge removes the configuration; rpm
#     keeps an admin's files, as it does %config ones).
# prerm refused the removal while jobs held settings.
set -e

conf=/etc/gpuprep/gpuprep.toml

# setting prints the string value of key in gpuprep.toml ("" when unset).
setting() {
	[ -f "$conf" ] || return 0
	sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*\"\([^\"]*\)\".*/\1/p" "$conf" | tail -n 1
}

# gpuprep_named says whether the absolute path $1 names gpuprep in its last
# element: a configured path is removed only then.
gpuprep_named() {
	case "$1" in
	/*) case "${1##*/}" in *gpuprep*) return 0 ;; esac ;;
	esac
	return 1
}

cleanup() {
	state=$(setting state_dir)
	log=$(setting log_file)
	metrics=$(setting metrics_dir)
	rm -rf /var/lib/gpuprep /run/gpuprep
	if gpuprep_named "$state"; then rm -rf "$state"; fi
	rm -f /var/log/gpuprep.log /var/log/gpuprep.log.*
	if gpuprep_named "$log"; then rm -f "$log" "$log".*; fi
	for dir in /var/lib/prometheus/node-exporter /var/lib/node_exporter/textfile_collector "$metrics"; do
		case "$dir" in /*) [ -d "$dir" ] && rm -f "$dir"/gpuprep-*.prom ;; esac
	done
	return 0
}

case "$1" in
purge)
	cleanup
	rm -rf /etc/gpuprep
	;;
0)
	cleanup
	;;
esac

# deb: the end of an aborted upgrade's rm_conffile (preinst).
case "$1" in
purge | remove | upgrade | failed-upgrade | abort-install | abort-upgrade | disappear)
	if command -v dpkg-maintscript-helper >/dev/null 2>&1; then
		dpkg-maintscript-helper rm_conffile /etc/gpuprep/gpuprep.toml 0.2.0~ gpuprep -- "$@"
	fi
	;;
esac

exit 0

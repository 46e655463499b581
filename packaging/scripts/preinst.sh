#!/bin/sh
# gpuprep's preinst (deb only). gpuprep 0.1.0 shipped /etc/gpuprep/gpuprep.toml
# as a conffile; later releases ship none (a missing file means the
# built-in defaults; the annotated example is
# /usr/share/doc/gpuprep/examples/gpuprep.toml). On the upgrade from 0.1.0:
#   - a file the admin never edited is removed (dpkg-maintscript-helper
#     rm_conffile: it goes when the upgrade completes, and comes back if
#     the upgrade is aborted);
#   - an edited file stays where it is and keeps working; dpkg no longer
#     asks about it on upgrades.
set -e

conffile=/etc/gpuprep/gpuprep.toml

# unedited says whether conffile is as 0.1.0 installed it: its md5sum is
# the one dpkg recorded for it.
unedited() {
	[ -f "$conffile" ] || return 1
	recorded=$(dpkg-query -W -f='${Conffiles}\n' gpuprep 2>/dev/null |
		awk -v f="$conffile" '$1 == f { print $2 }')
	[ -n "$recorded" ] || return 1
	now=$(md5sum "$conffile" | awk '{ print $1 }')
	[ "$now" = "$recorded" ]
}

if [ "$1" = upgrade ] || [ "$1" = install ]; then
	if [ -n "$2" ] && dpkg --compare-versions "$2" lt 0.2.0~ && unedited; then
		dpkg-maintscript-helper rm_conffile "$conffile" 0.2.0~ gpuprep -- "$@"
	fi
fi

exit 0

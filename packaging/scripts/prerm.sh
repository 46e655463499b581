#!/bin/sh
# gpuprep's pre-removal script (deb prerm: "remove"; rpm %preun: 0 when the
# package is erased, 1 on an upgrade). On removal, never on an upgrade:
#   - it refuses while jobs hold settings on this node (gpuprep-epilog
#     --held exits 1): without gpuprep nothing would put them back. Let the
#     jobs end (drain the node), or run gpuprep-epilog --restore-all
#     (--force to restore under jobs that still run), then remove again;
#   - it warns when slurm.conf still names gpuprep's programs: slurmd
#     would fail every job's prolog on this node.
# GPUPREP_REMOVE_ANYWAY=1 removes it when --held cannot tell (a broken
# spool); it never overrides held settings.
set -e

case "$1" in
remove | 0) ;;
*) exit 0 ;;
esac

epilog=/usr/sbin/gpuprep-epilog
if [ -x "$epilog" ]; then
	rc=0
	out=$("$epilog" --held 2>&1) || rc=$?
	case "$rc" in
	0) ;;
	1)
		echo "gpuprep: not removed: jobs still hold settings on this node:" >&2
		echo "$out" >&2
		echo "gpuprep: let them end (drain the node: their epilogs restore it) or run 'gpuprep-epilog --restore-all' (add --force to restore it under jobs that still run), then remove gpuprep again" >&2
		exit 1
		;;
	*)
		echo "gpuprep: cannot tell whether jobs hold settings: $out" >&2
		if [ "${GPUPREP_REMOVE_ANYWAY:-}" != 1 ]; then
			echo "gpuprep: not removed; set GPUPREP_REMOVE_ANYWAY=1 to remove it anyway" >&2
			exit 1
		fi
		;;
	esac
fi

for conf in /etc/slurm/slurm.conf /etc/slurm-llnl/slurm.conf /var/spool/slurmd/conf-cache/slurm.conf /run/slurm/conf/slurm.conf; do
	[ -f "$conf" ] || continue
	named=$(grep -iE '^[[:space:]]*(Prolog|Epilog|HealthCheckProgram)[[:space:]]*=.*gpuprep-' "$conf" || true)
	if [ -n "$named" ]; then
		echo "gpuprep: warning: $conf still names gpuprep; without it slurmd fails every job on this node:" >&2
		echo "$named" >&2
	fi
done

exit 0

#!/bin/bash
# EpilogSlurmctld= (slurm.conf, on the controller): gathers a finished
# job's evidence records from its nodes into one directory per job, where
#   gpuprep-epilog --report --job ID --from /srv/gpuprep-evidence/ID
# merges them, and where the fleet report reads them:
#   gpuprep-epilog --report --from /srv/gpuprep-evidence
# One way among many (Princeton's jobstats gathers its summaries much the
# same way); gpuprep needs none of it. It assumes root's ssh to the nodes;
# use the site's own transport (a shared file system, pdcp, a pull by the
# metrics host) where there is one.
#
# slurmctld runs this while the nodes' epilogs may still run: each node is
# asked for a few seconds until its record has ended. It never fails the
# job: slurmctld only logs an EpilogSlurmctld's exit status.
set -u
dest=${GPUPREP_EVIDENCE_DIR:-/srv/gpuprep-evidence}/${SLURM_JOB_ID:?}
case $SLURM_JOB_ID in *[!0-9]*) exit 0 ;; esac
mkdir -p "$dest" || exit 0
for node in $(scontrol show hostnames "${SLURM_JOB_NODELIST:-}"); do
	mkdir -p "$dest/$node/jobs"
	for _ in 1 2 3 4 5 6; do
		# The job's records on the node (a requeued job has one per run),
		# under their own names.
		ssh -o BatchMode=yes -o ConnectTimeout=5 "$node" \
			"cd /var/lib/gpuprep/jobs && tar cf - ${SLURM_JOB_ID}-*.json" 2>/dev/null |
			tar xf - -C "$dest/$node/jobs" 2>/dev/null
		if ls "$dest/$node/jobs/${SLURM_JOB_ID}-"*.json >/dev/null 2>&1 &&
			! grep -q '"running": true' "$dest/$node/jobs/${SLURM_JOB_ID}-"*.json; then
			break
		fi
		sleep 5
	done
done
exit 0

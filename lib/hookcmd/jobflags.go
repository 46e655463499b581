package hookcmd

import (
	"errors"

	"gpuprep/lib/slurm"
)

// namingFlag makes a bad job variable's error name the flag it came from
// (--job-id="abc": not a job id) when the flag, not slurmd's environment,
// gave the value: over maps SLURM_JOB_ID, SLURM_JOB_GPUS, ... to the
// flags' values ("" when not given). Other errors pass as they are.
func namingFlag(err error, over map[string]string) error {
	var ee *slurm.EnvError
	if !errors.As(err, &ee) || over[ee.Var] == "" || jobFlags[ee.Var] == "" {
		return err
	}
	named := *ee
	named.Var = "--" + jobFlags[ee.Var]
	return &named
}

// jobFlags are the flags standing for slurmd's job variables.
var jobFlags = map[string]string{
	"SLURM_JOB_ID":          "job-id",
	"SLURM_JOB_USER":        "job-user",
	"SLURM_JOB_GPUS":        "job-gpus",
	"SLURM_JOB_CONSTRAINTS": "constraints",
	"SLURM_JOB_COMMENT":     "comment",
}

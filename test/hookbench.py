# Whole-process timings of gpuprep-prolog/epilog on a simulated 8-GPU node
# (fixture root + mock GPUs); HOOKBENCH_PROFILE is TOML added to the config
# (a [profiles.default] table; none: the built-in profile). Interleaved cycles:
#   job A prolog (first apply: node at baseline)      -> "prolog, first apply"
#   job B prolog (A holds everything: nothing to change) -> "prolog, nothing to change"
#   job B epilog (A still holds: check only)          -> "epilog, job not last"
#   job A epilog (last job: restore)                  -> "epilog, restore"
import os, subprocess, sys, time, statistics, resource, tempfile, json
root, n = sys.argv[1], int(sys.argv[2])
bindir = sys.argv[3] if len(sys.argv) > 3 else "bin"
d = tempfile.mkdtemp()
cfg = os.path.join(d, "g.toml"); open(cfg, "w").write('[general]\nlog_file = ""\nmetrics_dir = ""\n' + os.environ.get("HOOKBENCH_PROFILE", ""))
args = ["--root", root, "--gpu-backend", "mock:dgxh100", "--config", cfg, "--state-dir", os.path.join(d, "spool")]
def run(op, job, gpus):
    env = {"SLURM_JOB_ID": str(job), "SLURM_JOB_USER": "alice", "SLURM_JOB_GPUS": gpus, "SLURM_SCRIPT_CONTEXT": op + "_slurmd"}
    t = time.perf_counter()
    p = subprocess.run([os.path.join(bindir, "gpuprep-" + op)] + args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = (time.perf_counter() - t) * 1000
    if p.returncode != 0: sys.exit(f"{op} {job}: {p.returncode} {p.stderr}")
    return dt
res = {k: [] for k in ["prolog, first apply", "prolog, nothing to change", "epilog, job not last", "epilog, restore"]}
run("prolog", 1, "0"); run("epilog", 1, "")
for i in range(n):
    a, b = 10 + 2 * i, 11 + 2 * i
    res["prolog, first apply"].append(run("prolog", a, "0,1"))
    res["prolog, nothing to change"].append(run("prolog", b, "0,1"))
    res["epilog, job not last"].append(run("epilog", b, ""))
    res["epilog, restore"].append(run("epilog", a, ""))
for k, v in res.items():
    v.sort(); print(f"{k:28s} n={n} median {statistics.median(v):6.1f} ms  min {v[0]:6.1f}  max {v[-1]:6.1f}")
print(f"peak RSS of any run: {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss/1024:.1f} MiB")

# Whole-process timings of gpuprep-prolog/epilog on a simulated 8-GPU node
# (fixture root + mock GPUs). Interleaved cycles:
#   job A prolog (first apply: node at baseline)      -> "prolog, first apply"
#   job B prolog (A holds everything: nothing to change) -> "prolog, nothing to change"
#   job B epilog (A still holds: check only)          -> "epilog, job not last"
#   job A epilog (last job: restore)                  -> "epilog, restore"
#
# hookbench.py ROOT N BIN: HOOKBENCH_PROFILE is TOML added to the config (a
# [profiles.default] table; none: the built-in profile).
#
# hookbench.py ROOT N BIN ROOT2: a comparison in one run. ROOT runs with
# HOOKBENCH_PROFILE, ROOT2 (a copy, so neither sees the other's changes)
# with HOOKBENCH_PROFILE2 (and the programs in HOOKBENCH_BIN2, when set:
# two builds compared), cycle by cycle in turn, so that both see the same
# machine; it prints both medians and their ratio, and, where
# HOOKBENCH_TARGETS gives the highest ratio allowed for each of the four
# rows ("1.5,1.25,1.25,1.5"), whether each ratio is within it.
import os, subprocess, sys, time, statistics, resource, tempfile

ROWS = ["prolog, first apply", "prolog, nothing to change", "epilog, job not last", "epilog, restore"]


class Setup:
    def __init__(self, root, bindir, profile):
        d = tempfile.mkdtemp()
        cfg = os.path.join(d, "g.toml")
        with open(cfg, "w") as f:
            f.write('[general]\nlog_file = ""\nmetrics_dir = ""\n' + profile)
        self.bindir = bindir
        self.args = ["--root", root, "--gpu-backend", "mock:dgxh100", "--config", cfg, "--state-dir", os.path.join(d, "spool")]
        self.times = {k: [] for k in ROWS}

    def run(self, op, job, gpus):
        env = {"SLURM_JOB_ID": str(job), "SLURM_JOB_USER": "alice", "SLURM_JOB_GPUS": gpus, "SLURM_SCRIPT_CONTEXT": op + "_slurmd"}
        t = time.perf_counter()
        p = subprocess.run([os.path.join(self.bindir, "gpuprep-" + op)] + self.args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        dt = (time.perf_counter() - t) * 1000
        if p.returncode != 0:
            sys.exit(f"{op} {job}: {p.returncode} {p.stderr}")
        return dt

    def warm_up(self):
        self.run("prolog", 1, "0")
        self.run("epilog", 1, "")

    def cycle(self, i):
        a, b = 10 + 2 * i, 11 + 2 * i
        for row, (op, job, gpus) in zip(ROWS, [("prolog", a, "0,1"), ("prolog", b, "0,1"), ("epilog", b, ""), ("epilog", a, "")]):
            self.times[row].append(self.run(op, job, gpus))

    def median(self, row):
        return statistics.median(self.times[row])


def main():
    root, n, bindir = sys.argv[1], int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "bin"
    base = Setup(root, bindir, os.environ.get("HOOKBENCH_PROFILE", ""))
    other = Setup(sys.argv[4], os.environ.get("HOOKBENCH_BIN2", bindir), os.environ.get("HOOKBENCH_PROFILE2", "")) if len(sys.argv) > 4 else None
    setups = [s for s in (base, other) if s]
    for s in setups:
        s.warm_up()
    for i in range(n):
        for s in setups:
            s.cycle(i)
    if other is None:
        for row in ROWS:
            v = sorted(base.times[row])
            print(f"{row:28s} n={n} median {statistics.median(v):6.1f} ms  min {v[0]:6.1f}  max {v[-1]:6.1f}")
    else:
        targets = [float(x) for x in os.environ["HOOKBENCH_TARGETS"].split(",")] if os.environ.get("HOOKBENCH_TARGETS") else None
        print(f"{'':28s} {'first':>9s} {'second':>9s} {'ratio':>6s}   (medians of {n}, ms)")
        for k, row in enumerate(ROWS):
            a, b = base.median(row), other.median(row)
            verdict = ""
            if targets:
                verdict = f"  target <= {targets[k]:.2f}x: " + ("met" if b / a <= targets[k] else "NOT MET")
            print(f"{row:28s} {a:9.1f} {b:9.1f} {b / a:5.2f}x{verdict}")
    print(f"peak RSS of any run: {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss/1024:.1f} MiB")


main()

#!/usr/bin/env python3
"""Whole-process medians of several commands, run interleaved (so that a
machine's drift hits them all alike), output discarded.

  times.py RUNS NAME CMD [ARG...] ::: NAME CMD [ARG...] ::: ... [--ratio NAME/NAME ...]

Each command runs once first (its exit code and the head of its output are
shown), then RUNS rounds. --ratio A/B prints median(A) / median(B).
Prints a Markdown table: command, median, min, max (milliseconds).
"""
import statistics, subprocess, sys, time


def main(argv):
    runs, rest = int(argv[0]), argv[1:]
    ratios = []
    if "--ratio" in rest:
        i = rest.index("--ratio")
        rest, ratios = rest[:i], rest[i + 1:]
    cmds, cur = [], []
    for a in rest + [":::"]:
        if a == ":::":
            if len(cur) < 2:
                sys.exit("times.py: each command needs a name and a program")
            cmds.append((cur[0], cur[1:]))
            cur = []
        else:
            cur.append(a)
    for name, c in cmds:
        p = subprocess.run(c, capture_output=True, text=True)
        head = (p.stdout + p.stderr).strip().splitlines()[:3]
        print(f"# {name}: exit {p.returncode}: {' | '.join(head)[:300]}")
    times = {name: [] for name, _ in cmds}
    for _ in range(runs):
        for name, c in cmds:
            t = time.perf_counter()
            subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[name].append((time.perf_counter() - t) * 1000)
    print(f"\n{runs} interleaved runs each, whole process:\n")
    print("| command | median | min | max |\n|---|---:|---:|---:|")
    for name, ts in times.items():
        print(f"| {name} | {statistics.median(ts):.1f} ms | {min(ts):.1f} ms | {max(ts):.1f} ms |")
    for r in ratios:
        a, b = r.split("/", 1)
        print(f"ratio {a} / {b}: {statistics.median(times[a]) / statistics.median(times[b]):.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])

# A CPU-only feeder loop, for nodes without a GPU (the VM of make test-node):
# the host-side step of test/feeder.py (a small data-loader-like transform,
# here in pure Python so that nothing but python3 is needed), timed per step.
# Prints step-time percentiles in ms as feeder.py does:
#   TAG p50=... p99=... max=... ms (n=...)
# Usage: python3 cpufeeder.py [STEPS] [WORK]
import os, sys, time
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
work = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
data = list(range(work))
times = []
for i in range(steps + 20):
    t = time.perf_counter()
    s = 0
    for x in data:
        s += (x * 7) ^ (x >> 3)
    if i >= 20:
        times.append(time.perf_counter() - t)
times.sort()
pct = lambda q: times[min(len(times) - 1, int(q * len(times)))] * 1e3
tag = os.environ.get("TAG", "")
print(f"{tag:10s} p50={pct(0.50):.3f} p99={pct(0.99):.3f} max={times[-1]*1e3:.3f} ms (n={len(times)})", flush=True)

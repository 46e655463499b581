# Copied from ../shared/tools/feeder.py (the project's shared benchmark tools) for
# test/bench-noise.sh, unchanged below this header.
# A GPU feeder loop: per step some host work (a data-loader-like CPU transform), an H2D copy
# from pinned memory, a few GPU kernels, and a sync. Prints step-time percentiles in ms.
import os, sys, time, numpy as np, torch
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
torch.set_num_threads(4)
dev = torch.device("cuda", 0)
host = torch.empty((1 << 20,), dtype=torch.float32).pin_memory()
a = np.random.rand(256, 256).astype(np.float32)
w = torch.randn(2048, 2048, device=dev)
times = []
for i in range(steps + 200):
    t = time.perf_counter()
    b = a @ a            # host-side transform (~ sub-ms)
    host[:65536] = torch.from_numpy(b.ravel())
    x = host.to(dev, non_blocking=True)
    y = (w @ w[:, :512]).sum() + x.sum()
    torch.cuda.synchronize()
    if i >= 200:
        times.append(time.perf_counter() - t)
times = np.array(times) * 1e3
tag = os.environ.get("TAG", "")
print(f"{tag:10s} p50={np.percentile(times,50):.3f} p99={np.percentile(times,99):.3f} p999={np.percentile(times,99.9):.3f} max={times.max():.3f} ms (n={len(times)})", flush=True)

#!/usr/bin/env python3
"""An independent measure of what gpuprep-health --probe measures (issue 33),
with PyTorch on GPU 0: a pinned host buffer copied to and from the GPU
(copy_, non_blocking) and a copy within the GPU's memory (counted read and
written, as the probe counts it), each timed with CUDA events over repeats,
five times. Prints JSON. With --load SECONDS it loads the GPU instead (an
FP32 matmul loop and a copy loop on two streams) for that long: the busy GPU
the probe must refuse, and measure low under --force. It reads and loads the
GPU only: no setting is changed."""
import json
import sys
import time

import torch

MiB = 1 << 20


def timed(fn, nbytes, count=1, span=0.2):
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    one = start.elapsed_time(end) / 1e3
    reps = max(2, min(1000, int(span / max(one, 1e-6))))
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return nbytes * reps * count / (start.elapsed_time(end) / 1e3) / 1e9


def measure():
    dev = torch.device("cuda:0")
    host = torch.empty(256 * MiB, dtype=torch.uint8).pin_memory()
    d = torch.empty(256 * MiB, dtype=torch.uint8, device=dev)
    a = torch.empty(512 * MiB, dtype=torch.uint8, device=dev)
    b = torch.empty_like(a)
    runs = []
    for _ in range(5):
        runs.append({
            "h2d_gbps": timed(lambda: d.copy_(host, non_blocking=True), 256 * MiB),
            "d2h_gbps": timed(lambda: host.copy_(d, non_blocking=True), 256 * MiB),
            "d2d_gbps": timed(lambda: b.copy_(a), 512 * MiB, count=2),
        })
    p = torch.cuda.get_device_properties(0)
    return {"gpu": p.name, "sms": p.multi_processor_count, "torch": torch.__version__, "runs": runs}


def load(seconds):
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda:0")
    x = torch.randn(8192, 8192, device=dev)
    y = torch.randn(8192, 8192, device=dev)
    a = torch.empty(1024 * MiB, dtype=torch.uint8, device=dev)
    b = torch.empty_like(a)
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    end = time.time() + seconds
    while time.time() < end:
        with torch.cuda.stream(s1):
            for _ in range(4):
                torch.mm(x, y)
        with torch.cuda.stream(s2):
            for _ in range(8):
                b.copy_(a)
        torch.cuda.synchronize()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--load":
        load(float(sys.argv[2]))
    else:
        json.dump(measure(), sys.stdout, indent=1)
        print()

#!/usr/bin/env python3
"""NCCL all_reduce through srunwrap against the same ranks without it.

One rank per GPU of this node, started the way srun starts a step of
`srun --ntasks-per-node=N --gpus-per-node=N --cpu-bind=none` (every rank sees
the step's Slurm variables and every GPU), once plainly and once as
`srunwrap -- python3 allreduce.py`, in alternating rounds. Each rank runs
all_reduce over a small-message sweep (8 B to 1 MiB, where latency rules)
and large messages (16 MiB to 1 GiB, where bus bandwidth does). Nothing on
the node is changed; no Slurm is needed.

  allreduce.py --srunwrap BIN [--ranks N] [--rounds R] [--json FILE]

prints, per message size, the median over rounds of each launch's time and
bus bandwidth and their ratio (srunwrap / plain bus bandwidth), and exits 1
when srunwrap's 1 GiB bus bandwidth, or the geometric mean of its ratios over
the small sizes, is below --min-ratio (0.98). Keep NCCL_NVLS_ENABLE=0 in the
environment when comparing runs on NVSwitch nodes (NVLS uses GPU memory
and its setup time varies).

Internally the same file is the rank program (--rank).
"""
import argparse, json, math, os, socket, statistics, subprocess, sys, time

SMALL = [8 << (2 * i) for i in range(9)]  # 8 B, 32 B, ... 512 KiB
SMALL.append(1 << 20)
LARGE = [16 << 20, 256 << 20, 1 << 30]


def rank_main(out):
    """One rank: all_reduce over every size; rank 0 writes the results."""
    import torch
    import torch.distributed as dist

    rank = int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0")))
    world = int(os.environ.get("WORLD_SIZE", os.environ.get("SLURM_NTASKS", "1")))
    local = int(os.environ.get("LOCAL_RANK", os.environ.get("SLURM_LOCALID", "0")))
    dev = 0 if torch.cuda.device_count() == 1 else local
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", dev))
    rows = []
    for n in SMALL + LARGE:
        x = torch.ones(max(n // 4, 2), dtype=torch.float32, device="cuda")
        iters = 200 if n <= (1 << 20) else (50 if n <= (256 << 20) else 20)
        for _ in range(max(5, iters // 10)):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        dist.barrier()
        t = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        dt = (time.perf_counter() - t) / iters
        bus = n / dt * 2 * (world - 1) / world / 1e9 if world > 1 else n / dt / 1e9
        rows.append({"bytes": n, "us": dt * 1e6, "busbw_gbs": bus})
    me = {
        "rank": rank, "gpu": torch.cuda.get_device_name(dev),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES", ""),
        "affinity": sorted(os.sched_getaffinity(0)),
        "nccl": {k: v for k, v in os.environ.items() if k.startswith("NCCL_")},
    }
    ranks = [None] * world
    dist.all_gather_object(ranks, me)
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"world": world, "sizes": rows, "ranks": ranks}, f)
    dist.destroy_process_group()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def launch(n, wrap, out, job):
    """Starts n ranks (prefixed by wrap) as one Slurm step would and waits."""
    gpus = ",".join(str(i) for i in range(n))
    base = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE=str(n),
                SLURM_JOB_ID=str(job), SLURM_STEP_ID="0", SLURM_NODEID="0", SLURM_NTASKS=str(n),
                SLURM_JOB_NUM_NODES="1", SLURM_STEP_TASKS_PER_NODE=str(n), SLURM_TASKS_PER_NODE=str(n),
                SLURM_STEP_GPUS=gpus, SLURM_JOB_GPUS=gpus, SLURM_GPUS_ON_NODE=str(n),
                CUDA_VISIBLE_DEVICES=gpus)
    procs = []
    for r in range(n):
        env = dict(base, RANK=str(r), LOCAL_RANK=str(r), SLURM_PROCID=str(r), SLURM_LOCALID=str(r))
        cmd = wrap + [sys.executable, os.path.abspath(__file__), "--rank", "--json", out]
        procs.append(subprocess.Popen(cmd, env=env))
    codes = [p.wait(timeout=900) for p in procs]
    if any(codes):
        sys.exit(f"allreduce: a rank failed ({' '.join(wrap) or 'plain'}): exit codes {codes}")
    with open(out) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rank", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--srunwrap", help="the srunwrap binary")
    ap.add_argument("--ranks", type=int, default=0, help="ranks (default: one per GPU in /proc/driver/nvidia/gpus)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-ratio", type=float, default=0.98)
    ap.add_argument("--json", default="", help="write the results here (rank mode: rank 0's output)")
    a = ap.parse_args()
    if a.rank:
        rank_main(a.json)
        return
    if not a.srunwrap:
        ap.error("--srunwrap is required")
    n = a.ranks or len(os.listdir("/proc/driver/nvidia/gpus"))
    tmp = f"/tmp/gpuprep-allreduce-{os.getpid()}.json"
    runs = {"plain": [], "srunwrap": []}
    for r in range(a.rounds):
        order = [("plain", []), ("srunwrap", [a.srunwrap, "--"])]
        if r % 2:
            order.reverse()
        for name, wrap in order:
            runs[name].append(launch(n, wrap, tmp, 4200 + r))
    os.unlink(tmp)
    table = []
    for i, row in enumerate(runs["plain"][0]["sizes"]):
        med = {k: {f: statistics.median(x["sizes"][i][f] for x in v) for f in ("us", "busbw_gbs")} for k, v in runs.items()}
        table.append({"bytes": row["bytes"], "plain": med["plain"], "srunwrap": med["srunwrap"],
                      "ratio": med["srunwrap"]["busbw_gbs"] / med["plain"]["busbw_gbs"]})
    print(f"{n} ranks, {a.rounds} rounds each, medians; ratio = srunwrap / plain bus bandwidth")
    print(f"{'bytes':>11} {'plain us':>10} {'GB/s':>8} {'srunwrap us':>12} {'GB/s':>8} {'ratio':>6}")
    for t in table:
        print(f"{t['bytes']:>11} {t['plain']['us']:>10.1f} {t['plain']['busbw_gbs']:>8.2f} "
              f"{t['srunwrap']['us']:>12.1f} {t['srunwrap']['busbw_gbs']:>8.2f} {t['ratio']:>6.3f}")
    small = [t["ratio"] for t in table if t["bytes"] in SMALL]
    gsmall = math.exp(sum(math.log(x) for x in small) / len(small))
    big = table[-1]["ratio"]
    print("binding: plain rank 0 on CPUs %s; through srunwrap:" % _span(runs["plain"][0]["ranks"][0]["affinity"]))
    for rk in runs["srunwrap"][0]["ranks"]:
        print(f"  rank {rk['rank']}: CUDA_VISIBLE_DEVICES={rk['cuda_visible_devices']} CPUs {_span(rk['affinity'])} "
              f"NCCL {' '.join(f'{k}={v}' for k, v in sorted(rk['nccl'].items()))}")
    ok = big >= a.min_ratio and gsmall >= a.min_ratio
    print(f"{'PASS' if ok else 'FAIL'}: 1 GiB ratio {big:.3f}, small-message sweep (8 B-1 MiB) geometric mean {gsmall:.3f}; "
          f"minimum {a.min_ratio}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"ranks": n, "rounds": a.rounds, "table": table, "runs": runs, "pass": ok}, f, indent=1)
    sys.exit(0 if ok else 1)


def _span(cpus):
    """CPU list as ranges: [0,1,2,5] -> "0-2,5"."""
    out, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


if __name__ == "__main__":
    main()

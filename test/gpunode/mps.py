#!/usr/bin/env python3
"""Two processes of tiny kernels on one GPU: time-sliced, then through MPS.

Each client process runs a stream of kernels that each leave the GPU
mostly idle for a fixed number of iterations, then
torch.cuda.synchronize(), and reports its own wall time. --kernel spin
(the default) launches one single-thread kernel per iteration that spins
for --spin-cycles GPU clock cycles (torch.cuda._sleep): one block on one
SM, so two clients' kernels can only overlap where the GPU runs both
processes at once (MPS); time-sliced, they take turns. --kernel tiny runs
in-place ops on 1-element tensors (bound by the CPU's launch rate, so
MPS shows little there). The parent
starts the clients, lets each initialise CUDA and warm up, then releases
them together and times until the last one is done. Phases:

  alone   one client;
  shared  two clients at once, time-sliced by the driver (no MPS);
  mps     two clients at once through the MPS control daemon whose pipe
          directory is CUDA_MPS_PIPE_DIRECTORY in this script's environment
          (CUDA_MPS_LOG_DIRECTORY is passed on too).

The iteration count is calibrated first (one client alone) so that a
client alone takes about --target seconds (2 s), unless --iters is given.

This script never starts or stops MPS and never changes a GPU setting;
the caller runs the daemon. Clients of the alone and shared phases get
an empty pipe directory of their own, so they run without MPS even while
a daemon serves the default /tmp/nvidia-mps. Without MPS:

  python3 mps.py                      # alone and shared; "mps": null

With MPS (as root; the clients are this script's children, same user):

  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
  mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
  nvidia-cuda-mps-control -d          # CUDA_VISIBLE_DEVICES=<uuid> to pick a GPU
  python3 mps.py
  echo quit | nvidia-cuda-mps-control

Keep CUDA_VISIBLE_DEVICES unset for the clients under MPS (the daemon
renumbers its GPUs from 0). Prints one JSON object: the iteration count,
each phase's wall time ("alone_s", "shared_s", "mps_s") and each client's
own loop time, and the ratios to alone. Internally the same file is the
client (--client).
"""
import argparse, json, os, subprocess, sys, tempfile, time

OPS_PER_ITER = {"tiny": 4, "spin": 1}


def client(iters, calibrate, kernel, cycles):
    """One client: init and warm up, say "ready", wait for "go", run."""
    import torch

    x = torch.ones(1, device="cuda")
    y = torch.ones(1, device="cuda")

    def burst(n):
        for _ in range(n):
            if kernel == "spin":
                torch.cuda._sleep(cycles)
                continue
            x.mul_(1.0000001)
            x.add_(y)
            y.sub_(x)
            y.abs_()
        torch.cuda.synchronize()

    burst(200)  # warm-up: kernels loaded, caching allocator primed
    if calibrate:
        t = time.perf_counter()
        burst(iters)
        dt = time.perf_counter() - t
        print(json.dumps({"calib_s": dt, "iters": iters}), flush=True)
        return
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        sys.exit("mps.py client: no go from the parent")
    t = time.perf_counter()
    burst(iters)
    dt = time.perf_counter() - t
    print(json.dumps({"loop_s": dt, "pid": os.getpid(), "device": torch.cuda.get_device_name(0)}), flush=True)


KERNEL_ARGS = []


def spawn(args, env):
    cmd = [sys.executable, os.path.abspath(__file__), "--client"] + KERNEL_ARGS + args
    return subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def phase(n, iters, env):
    """n clients at once: wall time from "go" to the last one done."""
    procs = [spawn(["--iters", str(iters)], env) for _ in range(n)]
    for p in procs:
        line = p.stdout.readline().strip()
        if line != "ready":
            sys.exit(f"mps.py: a client said {line!r} instead of ready (exit {p.wait()})")
    t = time.perf_counter()
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    results = [json.loads(p.stdout.readline()) for p in procs]
    wall = time.perf_counter() - t
    for p in procs:
        if p.wait() != 0:
            sys.exit(f"mps.py: a client exited {p.returncode}")
    return wall, results


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--client", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--calibrate", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--iters", type=int, default=0, help="iterations per client (default: calibrated)")
    ap.add_argument("--target", type=float, default=2.0, help="seconds a client alone should take (2)")
    ap.add_argument("--kernel", choices=["spin", "tiny"], default="spin", help="what each iteration launches (spin)")
    ap.add_argument("--spin-cycles", type=int, default=200000, help="GPU cycles each spin kernel takes (200000: 0.1 ms at 2 GHz)")
    a = ap.parse_args()
    KERNEL_ARGS[:] = ["--kernel", a.kernel, "--spin-cycles", str(a.spin_cycles)]
    if a.client:
        return client(a.iters, a.calibrate, a.kernel, a.spin_cycles)

    mps_pipe = os.environ.get("CUDA_MPS_PIPE_DIRECTORY")
    with tempfile.TemporaryDirectory(prefix="mps-py-none-") as none:
        plain = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=none)  # no daemon there: no MPS
        plain.pop("CUDA_MPS_LOG_DIRECTORY", None)
        iters = a.iters
        if iters <= 0:
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--client", "--calibrate", "--iters", "5000"] + KERNEL_ARGS,
                               env=plain, capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"mps.py: calibration failed: {p.stderr.strip()[-500:]}")
            c = json.loads(p.stdout.strip().splitlines()[-1])
            iters = max(1000, int(5000 * a.target / c["calib_s"]))
        out = {"iters": iters, "kernel": a.kernel, "spin_cycles": a.spin_cycles, "ops_per_iter": OPS_PER_ITER[a.kernel], "mps_pipe": mps_pipe}
        out["alone_s"], r = phase(1, iters, plain)
        out["device"] = r[0]["device"]
        out["alone_loops_s"] = [x["loop_s"] for x in r]
        out["shared_s"], r = phase(2, iters, plain)
        out["shared_loops_s"] = [x["loop_s"] for x in r]
    if mps_pipe:
        out["mps_s"], r = phase(2, iters, dict(os.environ))
        out["mps_loops_s"] = [x["loop_s"] for x in r]
        out["mps_pids"] = [x["pid"] for x in r]
    else:
        out["mps_s"] = None
    for k in ("shared_s", "mps_s"):
        if out[k] is not None:
            out[k.replace("_s", "_over_alone")] = round(out[k] / out["alone_s"], 3)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

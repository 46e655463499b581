#!/usr/bin/env python3
"""Checks a job's evidence record (gpuprep-epilog --report --job ID --json)
against nvidia-smi: integrates the power samples of SAMPLES (lines of
"timestamp, power.draw.instant [W]" from nvidia-smi --query-gpu=... -lms 100
--format=csv,noheader,nounits, local time) over the record's window (the
prolog's and the epilog's snapshot times) by the trapezoid rule, and prints
JSON: the record's energy and mean power, the samples' integral and mean,
and their ratio. Reads only."""
import json
import sys
from datetime import datetime, timezone


def parse_time(s):
    # nvidia-smi: "2026/12/06 10:00:00.123" in local time
    return datetime.strptime(s.strip(), "%Y/%m/%d %H:%M:%S.%f").astimezone(timezone.utc)


def rfc3339(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00"))


def samples(path):
    out = []
    for line in open(path):
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 2:
            continue
        try:
            out.append((parse_time(parts[0]).timestamp(), float(parts[1])))
        except ValueError:
            continue
    return out


def integral(pts, t0, t1):
    inside = [(t, p) for t, p in pts if t0 <= t <= t1]
    energy = 0.0
    for (ta, pa), (tb, pb) in zip(inside, inside[1:]):
        energy += (tb - ta) * (pa + pb) / 2
    covered = inside[-1][0] - inside[0][0] if len(inside) > 1 else 0
    return energy, covered, len(inside)


def main():
    rec = json.load(open(sys.argv[1]))
    pts = samples(sys.argv[2])
    t0, t1 = rfc3339(rec["start"]["time"]).timestamp(), rfc3339(rec["end"]["time"]).timestamp()
    g = rec["gpus"][0]
    e_smi, covered, n = integral(pts, t0, t1)
    # the samples cover [first, last] inside the window: scale to the window
    mean_smi = e_smi / covered if covered else None
    e_smi_window = mean_smi * (t1 - t0) if mean_smi else None
    out = {
        "window_s": t1 - t0,
        "samples": n,
        "samples_cover_s": covered,
        "record_energy_j": g.get("energy_j"),
        "record_mean_power_w": g.get("mean_power_w"),
        "smi_energy_j": e_smi_window,
        "smi_mean_power_w": mean_smi,
        "throttle": g.get("throttle"),
        "attributable": g.get("attributable"),
    }
    if g.get("energy_j") and e_smi_window:
        out["ratio"] = g["energy_j"] / e_smi_window
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

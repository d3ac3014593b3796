#!/usr/bin/env python3
"""Time shell commands alternately, keeping only runs the rest of the machine left alone.

    bench/alternate.py N 'CMD A' 'CMD B' [...]     [LIMIT=seconds, default 900]

Runs A, B, ... in turn until each has N clean runs (or LIMIT seconds pass) and prints,
per command, the median and minimum wall time and the median CPU time (user + system
of the command and its children). A run is clean when the machine's busy time during
it (/proc/stat, all CPUs) exceeds the run's own CPU time by less than 3 % of two
CPUs' worth of its wall time (plus 20 ms for the tick's granularity): nothing else ran.

On a shared two-vCPU machine a two-thread run cannot be timed while anyone else uses a
CPU; this keeps the runs that happened in quiet moments, so A/B comparisons stay
possible while others work (session 13 dropped 100-900 runs a sitting). Linux only.
"""
import os
import resource
import statistics
import subprocess
import sys
import time


def busy_seconds():
    """Busy time of all CPUs since boot (everything but idle and iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    n, cmds = int(sys.argv[1]), sys.argv[2:]
    deadline = time.time() + float(os.environ.get("LIMIT", 900))
    runs = {c: [] for c in cmds}
    dropped = 0
    while min(len(v) for v in runs.values()) < n and time.time() < deadline:
        for c in cmds:
            b0, r0, t0 = busy_seconds(), resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
            subprocess.run(c, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            t1, r1, b1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN), busy_seconds()
            own = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
            if (b1 - b0) - own < 0.03 * 2 * (t1 - t0) + 0.02:
                runs[c].append((t1 - t0, own))
            else:
                dropped += 1
    for c, v in runs.items():
        if not v:
            print(f"no clean run: {c}")
            continue
        wall = [w * 1000 for w, _ in v]
        cpu = [u * 1000 for _, u in v]
        print(f"{c}\n    n={len(v)}  wall median {statistics.median(wall):.1f} ms, "
              f"min {min(wall):.1f} ms;  CPU median {statistics.median(cpu):.1f} ms")
    print(f"runs dropped (machine busy): {dropped}")


if __name__ == "__main__":
    main()

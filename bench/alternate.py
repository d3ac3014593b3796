#!/usr/bin/env python3
"""Time shell commands alternately, keeping only runs the rest of the machine left alone.

    bench/alternate.py N 'CMD A' 'CMD B' [...]     [LIMIT=seconds, default 900] [ALL=1] [WARMUP=1] [CPUS=1,...]

Runs each command WARMUP times (default 1) untimed, then A, B, ... in turn until each
has N clean runs (or LIMIT seconds pass) and prints, per command, the median and
minimum wall time and the median CPU time (user + system of the command and its
children); with ALL=1, every clean run's wall time too. A run
is clean when the machine's busy time during it (/proc/stat, all CPUs) exceeds the
run's own CPU time by less than 3 % of two CPUs' worth of its wall time (plus 20 ms
for the tick's granularity): nothing else ran.

On a shared two-vCPU machine a two-thread run cannot be timed while anyone else uses a
CPU; this keeps the runs that happened in quiet moments, so A/B comparisons stay
possible while others work (session 13 dropped 100-900 runs a sitting). Linux only.

CPUS=LIST (comma-separated CPU numbers) watches and probes only those CPUs: for commands
pinned to them (`taskset -c 1 ...`) while something else keeps another CPU busy (a
build, a helper's fuzzing). The vCPUs of the EPYC guest share no cache (session 28), so
a one-core run on a CPU of its own can still be timed; the busy-time test then counts
only the listed CPUs' busy time, against their number's worth of the run's wall time.

The warm-up runs are there because this guest's idle page cache does not stay (DAMON's
proactive reclaim pages out memory idle for 60 s): a trace idle for a minute took
140-190 ms more to map and read, after 4 minutes 1.27-1.31 s more (docs/performance.md,
session 28), so the first run after a pause reads its input back.

A run is also dropped when a core ran slow around it: where the `core_speed` probe
is built (target/release/core_speed, or $CORE_SPEED), every CPU is probed just before
and just after each run, for its clock (dependent additions a nanosecond) and its
issue rate (independent additions a nanosecond), and a run any of whose probes read
below 90 % of the fastest of its kind seen so far is not kept. The host of session 19
ran its vCPUs at half speed for seconds at a time, and in session 20 another tenant's
thread on the same physical core took a third or more of its issue rate at full
clock: neither the machine's busy time nor the run's CPU time shows either.
"""
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time


def watched():
    """The CPUs whose busy time and speed are watched: $CPUS, or None for all."""
    c = os.environ.get("CPUS")
    return sorted(int(x) for x in c.split(",")) if c else None


def busy_seconds(cpus):
    """Busy time since boot (everything but idle and iowait) of all CPUs, or of `cpus`."""
    names = {"cpu"} if cpus is None else {f"cpu{c}" for c in cpus}
    total = 0
    with open("/proc/stat") as f:
        for line in f:
            name, *rest = line.split()
            if not name.startswith("cpu"):
                break
            if name in names:
                v = [int(x) for x in rest]
                total += sum(v) - v[3] - v[4]
    return total / os.sysconf("SC_CLK_TCK")


def probe_command():
    """The core_speed probe, if built: $CORE_SPEED or the release build's."""
    p = os.environ.get("CORE_SPEED") or os.path.join(
        os.environ.get("CARGO_TARGET_DIR", os.path.join(os.path.dirname(__file__), "..", "target")),
        "release", "core_speed")
    return p if os.access(p, os.X_OK) else None


def probe(cmd, cpus):
    """(clock, issue rate) of each of `cpus` (None: every CPU this process may use), one
    probe pinned to each."""
    speeds = []
    for cpu in cpus if cpus is not None else sorted(os.sched_getaffinity(0)):
        out = subprocess.run(["taskset", "-c", str(cpu), cmd], capture_output=True, text=True)
        if out.returncode == 0:
            ghz, adds = out.stdout.split()
            speeds.append((float(ghz), float(adds)))
    return speeds


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    n, cmds = int(sys.argv[1]), sys.argv[2:]
    deadline = time.time() + float(os.environ.get("LIMIT", 900))
    runs = {c: [] for c in cmds}
    dropped = slow = 0
    speed = probe_command() if shutil.which("taskset") else None
    cpus = watched()
    width = len(cpus) if cpus is not None else 2
    fastest = (0.0, 0.0)
    for _ in range(int(os.environ.get("WARMUP", 1))):
        for c in cmds:
            subprocess.run(c, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while min(len(v) for v in runs.values()) < n and time.time() < deadline:
        for c in cmds:
            before = probe(speed, cpus) if speed else []
            b0, r0, t0 = busy_seconds(cpus), resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
            subprocess.run(c, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            t1, r1, b1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN), busy_seconds(cpus)
            after = probe(speed, cpus) if speed else []
            own = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
            probes = before + after
            fastest = tuple(max([f] + [p[k] for p in probes]) for k, f in enumerate(fastest))
            if (b1 - b0) - own >= 0.03 * width * (t1 - t0) + 0.02:
                dropped += 1
            elif any(p[k] < 0.9 * fastest[k] for p in probes for k in range(2)):
                slow += 1
            else:
                runs[c].append((t1 - t0, own))
    for c, v in runs.items():
        if not v:
            print(f"no clean run: {c}")
            continue
        wall = [w * 1000 for w, _ in v]
        cpu = [u * 1000 for _, u in v]
        print(f"{c}\n    n={len(v)}  wall median {statistics.median(wall):.1f} ms, "
              f"min {min(wall):.1f} ms;  CPU median {statistics.median(cpu):.1f} ms")
        if os.environ.get("ALL"):
            print("    wall ms: " + " ".join(f"{w:.1f}" for w in sorted(wall)))
    print(f"runs dropped (machine busy): {dropped}")
    if speed:
        print(f"runs dropped (a core below 90 % of the fastest probe, {fastest[0]:.2f} GHz, "
              f"{fastest[1]:.1f} adds/ns): {slow}")
    else:
        print("no core_speed probe built (cargo build --release -p linerate-bench --bin core_speed): slow spells not detected")


if __name__ == "__main__":
    main()

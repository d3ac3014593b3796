#!/usr/bin/env bash
# End-to-end flow export benchmark: a pcap file (page cache) -> records
# exported as IPFIX over UDP to 127.0.0.1 with PACE=0, the median of RUNS
# runs (default 5) of wall time, start-up included, for
#   - linerate nfs/flowmon.click on one core,
#   - linerate --replicate -j 2 (two cores, RSS by flow hash),
#   - softflowd -r FILE -n 127.0.0.1:PORT -v 10 (IPFIX), when installed,
# on a synthetic internet-like trace (bench/src/bin/inettrace.rs, 2 M
# packets, 0.9 GB; kept in $CARGO_TARGET_DIR) and the two shared traces.
# Throughput is reported from wall time and from CPU time (user + system):
# on a shared, loaded machine the CPU figure is the per-core rate. The
# three commands' runs alternate, and a run during which a vCPU slowed
# (the `core_speed` probe around it) is measured again (see `fast`).
#
# With two CPUs or more it also times two independent one-core copies at
# once, pinned to CPUs 0 and 1 (each the whole trace, all flows): the
# most any two-core run can reach in this sitting, for the host decides
# how two busy vCPUs slow each other (session 27 saw them do so). The
# "2 copies / 1 core" column is that ceiling; "2 cores / 1 core" below
# it is what the replicated run's own work costs.
#
#   bench/flowmon.sh            [RUNS=7] [PACKETS=2000000] [TABLE=1MB] [RETAKES=10]
#                               [MTU=1400] [SNAP=bytes] [LINERATE=path/to/another/linerate binary]
#
# SNAP=96 makes the synthetic trace a header trace, each frame cut to its
# first 96 bytes with its original length kept (as MAWI publishes them;
# CAIDA's keep 64): the same packets and flows, 0.18 GB instead of 0.93.
# MTU is flowmon's (its default 1400); MTU=0 takes the path MTU, 64 KiB on
# loopback: about 40 times fewer datagrams.
#
# The collector is a UDP socket that never reads (the kernel drops what does
# not fit its buffer), so no collector competes for the CPU; the exporters'
# send errors are zero either way. Goals (issue 6): >= 10x softflowd,
# >= 15 Mpps per core on internet-like traffic, 2 cores >= 1.8x one core.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
# Session 20 found another tenant on the vCPUs' physical cores in four
# probes of five for minutes at a time: three retakes left a third of the
# runs slow, so a run is retaken up to 10 times by default.
RETAKES=${RETAKES:-10}
TABLE=${TABLE:-1MB}
MTU=${MTU:-1400}
target=${CARGO_TARGET_DIR:-target}
cargo build --release -q --bin linerate
cargo build --release -q -p linerate-bench --bin inettrace --bin core_speed
lr="${LINERATE:-$target/release/linerate}"
inet="$target/inet-${PACKETS:-2000000}${SNAP:+-s$SNAP}.pcap"
[ -s "$inet" ] || "$target/release/inettrace" "$inet" "${PACKETS:-2000000}" ${SNAP:+"$SNAP"}
traces=("$inet" ../shared/traces/pathspider-real-lan2012.pcap ../shared/traces/ndpi-tests-mix.pcap)

# A UDP sink that never reads.
port=$((30000 + RANDOM % 20000))
python3 -c "import socket,time; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('127.0.0.1', $port)); time.sleep(86400)" &
sink=$!
trap 'kill $sink 2>/dev/null || true; rm -f "$tmpf" "$tmpf".[12sp]' EXIT
sleep 0.3

# Drop the traces from the page cache, then read each back through a
# mapping (the first flowmon run below, not timed): how a trace came into
# the page cache decides what its page faults cost. Written by `inettrace`
# (or read by `cat`), the inet trace sits in small folios: 25,000 faults
# and 0.9-1.5 G kernel cycles a run (faults, and unmapping 0.9 GB of
# 4 KiB pages at exit, half the kernel's share); read back through the
# mapping, 11,800 faults and 0.41 G (2026-11-22, session 8). As
# `linerate-bench ip` does. Read back so, the trace sits in 2 MiB folios,
# each mapped by one page-table entry (session 27: mapping the inet trace
# 0.7 ms and unmapping it 5.5 ms, against 35-63 and 26-32 ms in small
# folios). Since session 27 `inettrace` (`PcapWriter`) writes 2 MiB chunks
# at 2 MiB offsets, which are cached that way from the start; the drop
# stays for traces cached otherwise (older ones, copies made by `cp`).
for t in "${traces[@]}"; do dd if="$t" iflag=nocache count=0 status=none; done

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# secs CMD...: "wall cpu" seconds of one run (cpu = user + system, all
# threads; output discarded). On a loaded machine wall time measures the
# scheduler, so the table shows both. Both are read to the microsecond
# around a fork and `wait4` (`time`'s %U and %S print 10 ms steps, 7 % of
# a 0.14 s run: the CPU column and the softflowd ratio moved in those
# steps until session 36).
secs() {
  python3 -c '
import os, sys, time
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    try:
        os.execvp(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
_, _, ru = os.wait4(pid, 0)
print("%.4f %.4f" % (time.perf_counter() - t0, ru.ru_utime + ru.ru_stime))
' "$@"
}
tmpf=$(mktemp)
# fast CMD...: `secs CMD...`, measured again (up to RETAKES times) while a
# vCPU's clock or issue rate read below 90 % of the fastest such probe so
# far just before or just after the run (`core_speed` pinned to each CPU:
# "GHz adds/ns"): this host runs its vCPUs at half speed for seconds at a
# time (session 19) and lets another tenant's thread share their physical
# cores (session 20), which neither wall nor CPU time shows. Counts
# retakes and runs kept slow.
cs="$target/release/core_speed"
fastest="0 0" slowest="0 0" retaken=0 kept_slow=0
# probe: slowest = the lowest clock and the lowest issue rate of the CPUs
# now; fastest = the highest of each seen so far.
probe() {
  local s
  s=$(for c in $(seq 0 $(($(nproc) - 1))); do taskset -c "$c" "$cs"; done)
  slowest=$(awk 'NR == 1 || $1 < g { g = $1 } NR == 1 || $2 < a { a = $2 } END { print g, a }' <<<"$s")
  fastest=$(printf '%s\n%s\n' "$fastest" "$s" | awk '$1 > g { g = $1 } $2 > a { a = $2 } END { print g, a }')
}
fast() {
  local try a line ok
  for try in $(seq 0 "$RETAKES"); do
    probe; a=$slowest
    line=$(secs "$@")
    probe
    ok=$(awk -v a="$a" -v b="$slowest" -v f="$fastest" 'BEGIN {
      split(a, x, " "); split(b, y, " "); split(f, z, " ")
      print (x[1] >= 0.9 * z[1] && y[1] >= 0.9 * z[1] && x[2] >= 0.9 * z[2] && y[2] >= 0.9 * z[2]) }')
    if [ "$ok" = 1 ] || [ "$try" = "$RETAKES" ]; then
      [ "$ok" = 1 ] || kept_slow=$((kept_slow + 1))
      echo "$line"
      return
    fi
    retaken=$((retaken + 1))
  done
}
if ! { command -v taskset && "$cs"; } >/dev/null 2>&1; then
  fast() { secs "$@"; }
fi
# stats: "median-wall median-cpu" of the "wall cpu" lines on stdin.
stats() {
  local all
  all=$(cat)
  echo "$(cut -d' ' -f1 <<<"$all" | median) $(cut -d' ' -f2 <<<"$all" | median)"
}

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "flowmon: TABLE=$TABLE MTU=$MTU PACE=0${SNAP:+; the synthetic trace cut to $SNAP bytes a frame}"
echo "Mpps = trace packets / median time; wall and CPU (user+system) seconds, median of $RUNS runs."
printf '| trace | packets | records | pkts/microflow | linerate 1 core: wall / CPU | 2 cores (RSS): wall / CPU | softflowd: wall / CPU | 1 core / softflowd (CPU) | 2 cores / 1 core (wall) | 2 copies / 1 core (wall) |\n'
printf '| --- | ---: | ---: | ---: | --- | --- | --- | ---: | ---: | ---: |\n'
# pair CMD...: CMD on CPU 0 and CMD on CPU 1 at once (for `fast`).
pair=(bash -c 'taskset -c 0 "$@" & taskset -c 1 "$@"; wait' pair)
# one: the one-core runs (linerate and softflowd alike) on CPU 1, as
# `bench/alternate.py` runs them: unpinned, the scheduler moved them
# between the vCPUs, which share no cache (session 36).
one=(taskset -c 1)
[ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null || { pair=(); one=(); }
for t in "${traces[@]}"; do
  flowmon=(nfs/flowmon.click INPUT="$t" COLLECTOR="127.0.0.1:$port" PACE=0 TABLE="$TABLE" MTU="$MTU")
  info=$("$lr" run --no-summary "${flowmon[@]}" -h src.count -h export.records \
    -h fast.packets_per_microflow -h export.dropped 2>&1)
  val() { awk -v h="$1:" '$0 == h { getline; print; exit }' <<<"$info"; }
  pk=$(val src.count)
  # The three commands' runs alternate, so that a change of the host's
  # state does not line up with one of them.
  : >"$tmpf.1"; : >"$tmpf.2"; : >"$tmpf.s"; : >"$tmpf.p"
  for _ in $(seq "$RUNS"); do
    fast "${one[@]}" "$lr" run --no-summary "${flowmon[@]}" >>"$tmpf.1"
    fast "$lr" run --no-summary --replicate -j 2 "${flowmon[@]}" >>"$tmpf.2"
    if [ ${#pair[@]} -gt 0 ]; then
      fast "${pair[@]}" "$lr" run --no-summary "${flowmon[@]}" >>"$tmpf.p"
    fi
    if command -v softflowd >/dev/null; then
      fast "${one[@]}" softflowd -r "$t" -n "127.0.0.1:$port" -v 10 -d >>"$tmpf.s"
    fi
  done
  read -r w1 c1 < <(stats <"$tmpf.1")
  read -r w2 c2 < <(stats <"$tmpf.2")
  # A run too short to measure reads 0 s.
  div() { if [ "$(echo "$2 > 0" | bc -l)" = 1 ]; then echo "scale=$3; $1 / $2" | bc -l; else echo -; fi; }
  mpps() { div "$pk" "($1 * 1000000)" 2; }
  sfcol="n/a"; ratio="n/a"
  if [ -s "$tmpf.s" ]; then
    read -r ws csf < <(stats <"$tmpf.s")
    sfcol="$(mpps "$ws") / $(mpps "$csf") Mpps"
    ratio="$(div "$csf" "$c1" 1)x"
  fi
  ceiling="n/a"
  if [ -s "$tmpf.p" ]; then
    read -r wp _ < <(stats <"$tmpf.p")
    ceiling="$(div "2 * $w1" "$wp" 2)x"
  fi
  printf '| %s | %s | %s | %s | %s / %s Mpps | %s / %s Mpps | %s | %s | %sx | %s |\n' \
    "$(basename "$t")" "$pk" "$(val export.records)" "$(val fast.packets_per_microflow)" \
    "$(mpps "$w1")" "$(mpps "$c1")" "$(mpps "$w2")" "$(mpps "$c2")" "$sfcol" "$ratio" \
    "$(div "$w1" "$w2" 2)" "$ceiling"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "runs retaken while a vCPU ran below 90 % of the fastest probe ($(awk '{ printf "%s GHz, %s adds/ns", $1, $2 }' <<<"$fastest")): $retaken; kept slow after $RETAKES retakes: $kept_slow"

#!/usr/bin/env bash
# End-to-end benchmark of SCION border routers through UDP sockets on
# loopback: the reference router (github.com/scionproto/scion v0.15.1,
# router/cmd/router, built here with Go) and linerate's live router
# (nfs/scion-br-live-fused.click), one after the other on the same loopback
# topology, each pinned to one core (taskset -c $ROUTER_CPU). A load
# generator on another core (bench/scion-e2e, pinned to $GEN_CPU) sends
# transit packets child -> parent (one hop-field MAC check) with sendmmsg as
# fast as it can and a sink on the parent's socket counts them.
#
# Reported per router and packet size (IPv4 packet bytes: 150 and 1500 by
# default), median of $RUNS runs of $SECS seconds:
# - forwarded packets per second (the router's own counter of packets sent
#   on interface 1: linerate's links.if1_tx_packets, the reference's
#   router_output_pkts_total{interface="1"}), and
# - forwarded packets per CPU-second of the router process (utime + stime
#   from /proc/PID/stat over the same window), and
# - the same with the softirq time of the router's core added (from
#   /proc/stat): on loopback, delivering what the router sends into the
#   sink's socket runs in softirq on the router's core, and with
#   IRQ-time accounting that time is not charged to the process, and
# - the one-way latency from the generator's send to the sink's receive
#   (p50 and p99 of the first packet of every batch; see bench/scion-e2e),
#   which shows what linerate's COALESCE (interrupt moderation) costs.
# On a 2-core machine the generator, the sink and the router share the
# cores, so packets per CPU-second is the fair comparison.
#
# Environment: GO (default: go on PATH, then /usr/local/go/bin/go),
# LINERATE (default: a release build), RUNS (5), SECS (5), SIZES
# ("150 1500"), BASE (first port, 41000), ROUTER_CPU (0), GEN_CPU (1),
# BURST (linerate's SCIONLinks BURST, 64), COALESCE (linerate's SCIONLinks
# interrupt moderation in microseconds, one run per value: "0 100"),
# ROUTERS ("reference linerate").
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
go="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
RUNS="${RUNS:-5}" SECS="${SECS:-5}" SIZES="${SIZES:-150 1500}" BASE="${BASE:-41000}"
ROUTER_CPU="${ROUTER_CPU:-0}" GEN_CPU="${GEN_CPU:-1}" BURST="${BURST:-64}"
ROUTERS="${ROUTERS:-reference linerate}" COALESCE="${COALESCE:-0 100}"
export GOMODCACHE="${GOMODCACHE:-$target/go/mod}" GOCACHE="${GOCACHE:-$target/go/cache}"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local

if [ -z "${LINERATE:-}" ]; then
  (cd "$root" && cargo build -q --release --bin linerate)
  LINERATE="$target/release/linerate"
fi
mkdir -p "$target/go"
gen="$target/go/scion-e2e"
(cd "$root/bench/scion-e2e" && "$go" build -o "$gen" .)
ref="$target/go/scion-router"
ref_err=""
if [[ " $ROUTERS " == *" reference "* ]]; then
  # The reference router's main package, built from the pinned module in a
  # scratch module of its own.
  mod="$target/go/refbr"
  mkdir -p "$mod"
  printf 'module refbr\n\ngo 1.26.4\n\nrequire github.com/scionproto/scion v0.15.1\n' >"$mod/go.mod"
  if ! (cd "$mod" && "$go" build -o "$ref" github.com/scionproto/scion/router/cmd/router) \
    >"$target/go/refbr.log" 2>&1; then
    ref_err="the reference router did not build: $(tail -3 "$target/go/refbr.log")"
  fi
fi

work="$(mktemp -d)"
pid=""
# Stops the router: SIGTERM, then SIGKILL after 5 seconds.
stop_router() {
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=""
}
cleanup() {
  stop_router
  rm -rf "$work"
}
trap cleanup EXIT
cfg="$work/cfg"
"$gen" config -dir "$cfg" -base "$BASE"
hz="$(getconf CLK_TCK)"

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
softirq_ticks() { awk -v c="cpu$ROUTER_CPU" '$1 == c { print $7 + $8 }' /proc/stat; }
now_s() { date +%s.%N; }
forwarded() {
  case "$1" in
  linerate)
    curl -sf "http://127.0.0.1:$((BASE + 91))/metrics" |
      awk '/^linerate_if1_tx_packets_total[{ ]/ { s += $NF } END { printf "%d\n", s }'
    ;;
  reference)
    curl -sf "http://127.0.0.1:$((BASE + 90))/metrics" |
      awk '/^router_output_pkts_total\{/ && /interface="1"/ { s += $NF } END { printf "%d\n", s }'
    ;;
  esac
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "load before: $(uptime | sed 's/.*load average/load average/')"
results=()
variants=()
for r in $ROUTERS; do
  if [ "$r" = linerate ]; then
    for c in $COALESCE; do variants+=("linerate:$c"); done
  else
    variants+=("$r")
  fi
done
for v in "${variants[@]}"; do
  r="${v%%:*}"
  label="$r"
  if [ "$r" = linerate ]; then label="linerate (COALESCE ${v#*:})"; fi
  if [ "$r" = reference ] && [ -n "$ref_err" ]; then
    echo "$r: skipped: $ref_err"
    continue
  fi
  case "$r" in
  linerate)
    taskset -c "$ROUTER_CPU" "$LINERATE" run "$root/nfs/scion-br-live-fused.click" CONFIG="$cfg" \
      BURST="$BURST" COALESCE="${v#*:}" --http "127.0.0.1:$((BASE + 91))" --no-summary >"$work/$r.log" 2>&1 &
    ;;
  reference)
    taskset -c "$ROUTER_CPU" "$ref" --config "$cfg/br.toml" >"$work/$r.log" 2>&1 &
    ;;
  esac
  pid=$!
  for _ in $(seq 100); do
    if forwarded "$r" >/dev/null 2>&1; then break; fi
    sleep 0.1
  done
  if ! forwarded "$r" >/dev/null 2>&1; then
    echo "$r: did not start:"; cat "$work/$r.log"; exit 1
  fi
  for size in $SIZES; do
    : >"$work/pps" && : >"$work/cpu" && : >"$work/cpusi" && : >"$work/p50" && : >"$work/p99"
    for run in $(seq "$RUNS"); do
      t0="$(now_s)" c0="$(cpu_ticks "$pid")" f0="$(forwarded "$r")" i0="$(softirq_ticks)"
      out="$(taskset -c "$GEN_CPU" "$gen" run -base "$BASE" -size "$size" -secs "$SECS")"
      t1="$(now_s)" c1="$(cpu_ticks "$pid")" f1="$(forwarded "$r")" i1="$(softirq_ticks)"
      line="$(awk -v f="$((f1 - f0))" -v t0="$t0" -v t1="$t1" -v c="$((c1 - c0))" -v si="$((i1 - i0))" -v hz="$hz" \
        'BEGIN { cs = c / hz; ct = (c + si) / hz
                 printf "%.0f %.0f %.0f %.2f %.2f", f / (t1 - t0), (cs > 0 ? f / cs : 0), (ct > 0 ? f / ct : 0), cs / (t1 - t0), si / hz / (t1 - t0) }')"
      read -r pps ppc ppt util siu <<<"$line"
      echo "$label size=$size run=$run: forwarded $((f1 - f0)) in $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}') s," \
        "$pps pps, $ppc per CPU-s, $ppt per CPU-s with softirq (router CPU $util, core softirq $siu), generator: $out"
      echo "$pps" >>"$work/pps"
      echo "$ppc" >>"$work/cpu"
      echo "$ppt" >>"$work/cpusi"
      read -r p50 p99 <<<"$(awk '{ for (i = 1; i < NF; i++) if ($i == "latency_us") print $(i + 1), $(i + 2) }' <<<"$out")"
      echo "$p50" >>"$work/p50"
      echo "$p99" >>"$work/p99"
    done
    results+=("| $label | $size | $(median <"$work/pps") | $(median <"$work/cpu") | $(median <"$work/cpusi") | $(median <"$work/p50") / $(median <"$work/p99") |")
  done
  stop_router
done
echo "load after: $(uptime | sed 's/.*load average/load average/')"
echo
echo "| router | IPv4 packet bytes | forwarded pps (median of $RUNS) | per router CPU-second (median) | per CPU-second incl. core softirq (median) | one-way latency p50 / p99 us (median) |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${results[@]}"

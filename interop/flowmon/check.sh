#!/usr/bin/env bash
# Verifies nfs/flowmon.click against a real collector: nfdump's nfcapd.
#
#   interop/flowmon/check.sh [LINERATE]      (run from anywhere)
#
# For each trace in ../shared/traces and each export mode (IPFIX one-way,
# IPFIX biflows, NetFlow v9; the last two also replicated on two cores,
# whose exporters are one observation domain (source ID) each, and whose
# totals must equal the one-core run's), it starts nfcapd on a free loopback port with
# a temporary directory, runs flowmon with no timeouts (ACTIVE=0 IDLE=0
# TCPEND=false) exporting to it, stops nfcapd, and reads the flows back with
# nfdump. The flow count, packet total and byte total nfdump decoded must
# equal what flowmon reports (its exporter's, fast path's and aggregator's
# handlers; metered and ignored packets must add up to the trace's) and,
# for the LAN trace, the README's reference values. A few literal flows are
# checked field by field (times to the millisecond, TCP flags, ports, ICMP
# type/code). The LAN trace is also cut to 64 bytes a frame (a header
# trace) and must give the same totals. Exit status 0 = pass, 1 = fail,
# 77 = skipped (nfdump missing and not installable).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
traces="$(cd "$root/.." && pwd)/shared/traces"
linerate="${1:-$root/target/debug/linerate}"

if ! command -v nfcapd >/dev/null || ! command -v nfdump >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get install -y nfdump >/dev/null 2>&1 || true
  fi
fi
if ! command -v nfcapd >/dev/null || ! command -v nfdump >/dev/null; then
  echo "SKIP: nfdump (nfcapd, nfdump) is not installed and could not be installed"
  exit 77
fi
[ -x "$linerate" ] || { echo "FAIL: no linerate binary at $linerate"; exit 1; }

work="$(mktemp -d)"
nfpid=""
cleanup() {
  [ -n "$nfpid" ] && kill "$nfpid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# Start nfcapd on a free UDP port of 127.0.0.1; sets $port, $nfpid, $dir.
start_collector() {
  dir="$(mktemp -d "$work/nf.XXXX")"
  for _ in $(seq 1 20); do
    port=$((20000 + RANDOM % 40000))
    ss -Huln "sport = :$port" | grep -q . && continue
    nfcapd -b 127.0.0.1 -p "$port" -w "$dir" -B 8388608 >"$dir.log" 2>&1 &
    nfpid=$!
    for _ in $(seq 1 100); do
      ss -Huln "sport = :$port" | grep -q . && return 0
      kill -0 "$nfpid" 2>/dev/null || break
      sleep 0.05
    done
    kill "$nfpid" 2>/dev/null || true
    wait "$nfpid" 2>/dev/null || true
  done
  echo "FAIL: could not start nfcapd"; exit 1
}

# nfcapd stops reading at SIGTERM and drops what is still queued in its
# socket, so wait until its receive queue has been empty twice in a row
# (a starved nfcapd can lag the exporter by seconds) before stopping it.
stop_collector() {
  local empty=0 q
  for _ in $(seq 1 600); do
    q="$(ss -Huln "sport = :$port" | awk '{ print $2; exit }')"
    if [ "${q:-0}" = 0 ]; then
      empty=$((empty + 1))
      [ "$empty" -ge 2 ] && break
    else
      empty=0
    fi
    sleep 0.05
  done
  kill -TERM "$nfpid"
  wait "$nfpid" 2>/dev/null || true
  nfpid=""
}

# Handler value NAME from flowmon's -h output in $out.
handler() { awk -v h="$1:" '$0 == h { getline; print; exit }' "$out"; }

# run TRACE PROTOCOL BIFLOW [OPTIONS] -> sets $flows $pkts $bytes (nfdump)
# and $out.
run_case() {
  local trace=$1 proto=$2 bi=$3 opts=${4:-}
  start_collector
  out="$work/out.txt"
  # shellcheck disable=SC2086
  "$linerate" run --no-summary $opts "$root/nfs/flowmon.click" INPUT="$trace" \
    COLLECTOR="127.0.0.1:$port" PROTOCOL="$proto" BIFLOW="$bi" ACTIVE=0 IDLE=0 \
    TCPEND=false PACE=20000 -h export.records -h export.dropped -h fast.packets \
    -h agg.ignored -h agg.bytes >"$out" 2>&1 || { cat "$out"; fail "flowmon failed"; }
  stop_collector
  read -r flows pkts bytes < <(nfdump -R "$dir" -q -o csv \
    | awk -F, '$1 ~ /^[0-9]/ { f++; p += $12 + $14; b += $13 + $15 } END { print f+0, p+0, b+0 }')
}

# expect_eq WHAT GOT WANT
expect_eq() { [ "$2" = "$3" ] || fail "$1: got $2, want $3"; }

# expect_lan NAME BIFLOW: the LAN trace's reference totals (its README).
expect_lan() {
  local want=11978
  [ "$2" = true ] && want=6024
  expect_eq "$1 flows (README)" "$flows" "$want"
  expect_eq "$1 packets (README)" "$pkts" 62038
  expect_eq "$1 bytes (README)" "$bytes" 3718480
}

# flow_json FILTER: nfdump's JSON for the flows matching an nfdump filter.
flow_json() { nfdump -R "$dir" -q -o json "$1"; }
# json_field JSON NAME: the value of "NAME" (first record).
json_field() { grep -m1 "\"$2\" :" <<<"$1" | sed -E 's/.*: "?([^",]*)"?,?$/\1/'; }

declare -A one_core
lan="$traces/pathspider-real-lan2012.pcap"
ndpi="$traces/ndpi-tests-mix.pcap"

for trace in "$lan" "$ndpi"; do
  [ -r "$trace" ] || { fail "missing trace $trace"; continue; }
  for mode in "ipfix false" "ipfix true" "v9 false" "ipfix true --replicate,-j,2" "v9 false --replicate,-j,2"; do
    set -- $mode
    extra="${3:-}"
    run_case "$trace" "$1" "$2" "${extra//,/ }"
    name="$(basename "$trace") $1 biflow=$2 ${extra//,/ }"
    records=$(handler export.records)
    fpkts=$(handler fast.packets)
    echo "$name: nfdump $flows flows, $pkts packets, $bytes bytes; flowmon $records records, $fpkts packets, dropped $(handler export.dropped), ignored $(handler agg.ignored)"
    expect_eq "$name flows (nfdump vs flowmon)" "$flows" "$records"
    # What nfcapd says it received, when the totals differ.
    [ "$flows" = "$records" ] || sed 's/^/  nfcapd: /' "$dir.log"
    expect_eq "$name packets (nfdump vs flowmon)" "$pkts" "$fpkts"
    expect_eq "$name bytes (nfdump vs flowmon)" "$bytes" "$(handler agg.bytes)"
    # Every packet of the trace is metered or counted as ignored
    # (ignoredPacketTotalCount): on nDPI's trace, the README's 100,978 IP
    # packets less 161 malformed (bad version, header length or IP length)
    # and 1,431 without a flow key (non-first fragments and the like) are
    # metered; its 1,053 others are not IP (or too short to tell).
    total=62781
    [ "$trace" = "$ndpi" ] && total=102031
    expect_eq "$name packets + ignored (the trace's packets)" \
      "$((fpkts + $(handler agg.ignored)))" "$total"
    expect_eq "$name dropped" "$(handler export.dropped)" 0
    # nfcapd logs each new (address, domain) exporter: one per replica. v9
    # sequence numbers count packets per source ID, so nfcapd must see no
    # gap. (nfdump 1.7 does not count IPFIX options data records, which
    # RFC 7011 counts, so its IPFIX sequence check reports false errors.)
    if grep -q "New .* exporter" "$dir.log"; then
      want_exp=1
      [ -n "$extra" ] && want_exp=2
      expect_eq "$name exporters (domains) at nfcapd" "$(grep -c "New .* exporter" "$dir.log")" "$want_exp"
    fi
    seqerr=$(sed -nE 's/.*Sequence Errors: ([0-9]+).*/\1/p' "$dir.log")
    if [ "$1" = v9 ] && [ -n "$seqerr" ]; then
      expect_eq "$name v9 sequence errors at nfcapd" "$seqerr" 0
    fi
    # Replicated runs must give exactly the one-core totals.
    key="$(basename "$trace") $1 $2"
    if [ -z "$extra" ]; then
      one_core["$key"]="$flows $pkts $bytes"
    else
      expect_eq "$name totals (vs one core)" "$flows $pkts $bytes" "${one_core[$key]:-}"
    fi
    if [ "$trace" = "$lan" ]; then
      expect_lan "$name" "$2"
      if [ "$2" = false ] && [ -z "$extra" ]; then
        # Literal flows, from tcpdump -tt -v of the trace.
        j=$(flow_json "src ip 10.64.88.105 and src port 46538 and dst port 10050")
        expect_eq "$name tcp first" "$(json_field "$j" first)" 2012-11-23T17:58:46.790
        expect_eq "$name tcp last" "$(json_field "$j" last)" 2012-11-23T17:58:46.798
        expect_eq "$name tcp packets" "$(json_field "$j" in_packets)" 5
        expect_eq "$name tcp bytes" "$(json_field "$j" in_bytes)" 282
        expect_eq "$name tcp flags" "$(json_field "$j" tcp_flags)" "...AP.SF"
        expect_eq "$name tcp dst port" "$(json_field "$j" dst_port)" 10050
        j=$(flow_json "src ip 10.64.88.105 and dst ip 10.64.88.7 and proto icmp")
        expect_eq "$name icmp type" "$(json_field "$j" icmp_type)" 3
        expect_eq "$name icmp code" "$(json_field "$j" icmp_code)" 3
        expect_eq "$name icmp packets" "$(json_field "$j" in_packets)" 6
        expect_eq "$name icmp bytes" "$(json_field "$j" in_bytes)" 818
        expect_eq "$name icmp first" "$(json_field "$j" first)" 2012-11-23T17:03:06.282
        expect_eq "$name icmp last" "$(json_field "$j" last)" 2012-11-23T17:35:35.304
        j=$(flow_json "src ip 10.64.93.135 and src port 138 and dst ip 10.64.93.255")
        expect_eq "$name udp packets" "$(json_field "$j" in_packets)" 15
        expect_eq "$name udp bytes" "$(json_field "$j" in_bytes)" 3435
        expect_eq "$name udp first" "$(json_field "$j" first)" 2012-11-23T17:01:24.464
        expect_eq "$name udp last" "$(json_field "$j" last)" 2012-11-23T17:55:14.228
      fi
    fi
  done
done

# A header trace: the LAN trace with each frame cut to 64 bytes and its
# original length kept (what `tcpdump -s 64` writes, and CAIDA publishes),
# made by Click's own elements. flowmon's fast path parses the cut frames
# as they were on the wire, so nfdump must read the whole trace's
# reference values.
if [ -r "$lan" ]; then
  cut="$work/lan-snap64.pcap"
  "$linerate" run --no-summary \
    -e "FromDump($lan, STOP true) -> Truncate(64) -> ToDump($cut, SNAPLEN 64)" ||
    fail "writing the header trace"
  run_case "$cut" ipfix false
  name="lan cut to 64 bytes ipfix biflow=false"
  echo "$name: nfdump $flows flows, $pkts packets, $bytes bytes; flowmon $(handler export.records) records"
  expect_lan "$name" false
  expect_eq "$name flows (nfdump vs flowmon)" "$flows" "$(handler export.records)"
fi

if [ "$fails" -gt 0 ]; then
  echo "$fails check(s) failed"
  exit 1
fi
echo "PASS: nfdump decodes exactly what flowmon exported"

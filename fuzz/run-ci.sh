#!/usr/bin/env bash
# Runs every fuzz target of linerate for a fixed time over the committed corpus.
#
# Usage: fuzz/run-ci.sh [SECONDS] [TARGET...]
#   SECONDS  time per target (default 20), passed to libFuzzer's -max_total_time
#   TARGET   targets to run (default: all, as `cargo fuzz list` gives them)
#
# Needs a nightly toolchain (rustup); installs cargo-fuzz if missing. Any crash
# (panic), timeout (one input running over 10 s) or out-of-memory (over 2 GiB)
# fails the run. libFuzzer's output goes to $FUZZ_LOG_DIR (default fuzz/logs/),
# one file per target; one summary line per target is printed. New inputs found
# go to a scratch directory (kept only in the logs dir), never into the
# committed corpus: see fuzz/README.md for growing and minimising it.
set -euo pipefail

secs=${1:-20}
if [ $# -gt 0 ]; then shift; fi
case $secs in
'' | *[!0-9]*)
    echo "usage: $0 [SECONDS] [TARGET...]" >&2
    exit 2
    ;;
esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"

if ! command -v rustup >/dev/null 2>&1 || ! rustup toolchain list | grep -q '^nightly'; then
    echo "error: the fuzz targets need a nightly Rust toolchain (cargo-fuzz builds with" >&2
    echo "       -Zsanitizer=address), and none is installed. Install it with:" >&2
    echo "         rustup toolchain install nightly" >&2
    exit 1
fi

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz..."
    cargo install cargo-fuzz --locked
fi

logdir=${FUZZ_LOG_DIR:-$here/logs}
mkdir -p "$logdir"

if [ $# -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

echo "building fuzz targets (log: $logdir/build.log)..."
: >"$logdir/build.log"
for t in "${targets[@]}"; do
    if ! cargo +nightly fuzz build "$t" >>"$logdir/build.log" 2>&1; then
        echo "error: building fuzz target $t failed:" >&2
        tail -n 30 "$logdir/build.log" >&2
        exit 1
    fi
done

failed=()
for t in "${targets[@]}"; do
    corpus=$here/corpus/$t
    if [ ! -d "$corpus" ]; then
        echo "$t: FAILED: no corpus directory $corpus"
        failed+=("$t")
        continue
    fi
    # libFuzzer adds new inputs to the first directory: a scratch one.
    scratch=$logdir/new-$t
    rm -rf "$scratch"
    mkdir -p "$scratch"
    log=$logdir/$t.log
    rc=0
    cargo +nightly fuzz run "$t" "$scratch" "$corpus" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 >"$log" 2>&1 || rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1 || true)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2 || true)
    corp=$(grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' "$log" | tail -n 1 | cut -d' ' -f2 || true)
    if [ "$rc" -eq 0 ]; then
        echo "$t: ok: ${runs:-?} runs in ${secs} s, coverage ${cov:-?}, corpus ${corp:-?} (log: $log)"
    else
        kind=$(grep -o 'ERROR: libFuzzer: [a-z-]*\|panicked at.*' "$log" | head -n 1 | sed 's/:$//' || true)
        artifact=$(sed -n "s/.*Test unit written to //p" "$log" | head -n 1 || true)
        echo "$t: FAILED (exit $rc): ${kind:-see log}; input: ${artifact:-none}; log: $log"
        grep -m 1 -A 1 'panicked at' "$log" || true
        failed+=("$t")
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzzing failed for: ${failed[*]}"
    exit 1
fi
echo "all ${#targets[@]} fuzz targets ran ${secs} s each without a failure"

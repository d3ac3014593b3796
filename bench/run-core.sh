#!/usr/bin/env bash
# Build the release binaries and run the core framework benchmark.
# Usage: [SUITE=core|ip] bench/run-core.sh [--runs N] [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p linerate-cli -p linerate-bench
exec target/release/linerate-bench "${SUITE:-core}" "$@"

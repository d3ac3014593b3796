#!/usr/bin/env bash
# Interoperability check of linerate's SCION border router against the
# reference implementation (github.com/scionproto/scion v0.15.1, pinned in
# go.mod): builds the checker with Go, runs nfs/scion-br.click through the
# linerate binary and decodes the output with the reference library, then
# runs the live form nfs/scion-br-live.click on a loopback topology with UDP
# sockets standing in for the neighbours and checks what they receive, both
# with the step elements as written (--no-fuse) and as linerate runs them by
# default (the steps fused into one SCIONRouter); then the same for the
# fused forms (nfs/scion-br-fused.click,
# nfs/scion-br-live-fused.click: one SCIONRouter element, with SCIONLinks'
# interrupt moderation on: COALESCE=200).
#
# Go caches live under the cargo target directory (GOMODCACHE, GOCACHE), so a
# warm CI cache makes the Go build incremental. GO (default: go on PATH, then
# /usr/local/go/bin/go) and LINERATE (default: a debug build) can be set.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
go="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
if [ ! -x "$go" ]; then
  echo "scion interop: no Go toolchain (set GO=...)" >&2
  exit 1
fi
export GOMODCACHE="$target/go/mod" GOCACHE="$target/go/cache" GOFLAGS=-mod=mod GOTOOLCHAIN=local
if [ -z "${LINERATE:-}" ]; then
  (cd "$root" && cargo build -q --bin linerate)
  LINERATE="$target/debug/linerate"
fi
(cd "$root/interop/scion" && "$go" build -o "$target/go/scion-interop" .)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$root"
"$target/go/scion-interop" -linerate "$LINERATE" -click nfs/scion-br.click -work "$work" \
  -live-click nfs/scion-br-live.click -no-fuse
"$target/go/scion-interop" -linerate "$LINERATE" -click nfs/scion-br.click -work "$work" \
  -live-click nfs/scion-br-live.click
"$target/go/scion-interop" -linerate "$LINERATE" -click nfs/scion-br-fused.click -work "$work" \
  -live-click nfs/scion-br-live-fused.click -live-args "COALESCE=200"

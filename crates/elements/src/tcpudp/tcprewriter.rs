//! Rewrites TCP packets' addresses and ports (NAPT for TCP).
//!
//! # Synopsis
//! `TCPRewriter(INPUTSPEC1, ..., INPUTSPECn [, KEYWORDS])`
//!
//! # Ports
//! One or more push inputs, one per INPUTSPEC; one or more push outputs.
//!
//! # Arguments
//! An IPRewriter for TCP only: INPUTSPECs (`drop`, `discard`, `pass OUTPUT`,
//! `keep FOUTPUT ROUTPUT`, `pattern SADDR SPORT DADDR DPORT FOUTPUT
//! ROUTPUT` with port ranges `L-H`, `L-H#`, `L-H?`) as described for
//! IPRewriter. Non-TCP packets and non-first fragments are dropped unless
//! their input is `pass`. Keywords:
//!
//! - `TCP_TIMEOUT` / `TIMEOUT` (time, default 24 hours): flows with data
//!   seen in both directions.
//! - `TCP_NODATA_TIMEOUT` (time, default 5 minutes): other flows.
//! - `TCP_DONE_TIMEOUT` (time, default 4 minutes): flows closed by FIN both
//!   ways or by RST.
//! - `TCP_GUARANTEE` / `GUARANTEE` (time, default 5 seconds).
//! - `REAP_INTERVAL` (time, default 15 minutes; `REAP_TIME`, `REAP_TCP`,
//!   `REAP_TCP_DONE` accepted, the shortest is used).
//! - `MAPPING_CAPACITY` / `CAPACITY` (integer, default 2147483647).
//! - `DST_ANNO` (boolean, default true), `REPLY_ANNO` (annotation).
//!
//! # Handlers
//! - `table` (read), `mappings` (read, deprecated): the mappings,
//!   `(SA, SP, DA, DP) => (SA', SP', DA', DP') [*F R] iN expT`, one entry a
//!   line.
//! - `lookup` (read/write): write `SADDR SPORT DADDR DPORT`, then read the
//!   rewritten flow in the same format (empty if none); Click's is a read
//!   handler with a parameter.
//! - `nmappings`, `mapping_failures`, `size` (read); `capacity`
//!   (read/write); `clear` (write); `patterns` (read); `patternN`
//!   (read/write), as for IPRewriter.
//!
//! # Example
//! ```click
//! rw :: TCPRewriter(pattern 1.0.0.1 1024-65535# - - 0 1, drop);
//! InfiniteSource(LIMIT 1) -> rw;
//! rw[0] -> Discard; rw[1] -> Discard;
//! ```
//!
//! # Implementation
//! The flow table shared by the rewriters (see IPRewriter): one hash table
//! over both directions, flows in a slab, incremental checksums, no
//! per-packet allocation. TCP state (FIN, RST, SYN, payload in each
//! direction) selects the timeout as in Click. Click's sequence-number
//! deltas, which only FTPPortMapper sets, are not supported.

use super::rwcore::{self, Kind, DEFAULT_TIMEOUTS};
use linerate_runtime::{ConfigureCtx, Element, ElementClass};

/// The `TCPRewriter` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "TCPRewriter",
    port_count: "1-/1-",
    processing: "h/h",
    doc: element_doc!("tcpudp/tcprewriter"),
    make,
};

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let mut t = DEFAULT_TIMEOUTS;
    rwcore::read_secs(&mut a, "TCP_NODATA_TIMEOUT", &mut t.tcp_nodata);
    rwcore::read_secs(&mut a, "TCP_GUARANTEE", &mut t.tcp_guarantee);
    rwcore::read_secs(&mut a, "TIMEOUT", &mut t.tcp_data);
    rwcore::read_secs(&mut a, "TCP_TIMEOUT", &mut t.tcp_data);
    rwcore::read_secs(&mut a, "TCP_DONE_TIMEOUT", &mut t.tcp_done);
    rwcore::read_secs(&mut a, "GUARANTEE", &mut t.tcp_guarantee);
    let dst_anno = a.read_or("DST_ANNO", true);
    let reply_anno = rwcore::read_reply_anno(&mut a);
    rwcore::finish(ctx, a, Kind::Tcp, t, dst_anno, reply_anno)
}

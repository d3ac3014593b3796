//! Rewrites UDP (and TCP) packets' addresses and ports.
//!
//! # Synopsis
//! `UDPRewriter(INPUTSPEC1, ..., INPUTSPECn [, KEYWORDS])`
//!
//! # Ports
//! One or more push inputs, one per INPUTSPEC; one or more push outputs.
//!
//! # Arguments
//! An IPRewriter whose flows all behave like UDP flows (it rewrites TCP,
//! UDP and DCCP packets alike, with one table keyed without the protocol).
//! INPUTSPECs (`drop`, `discard`, `pass OUTPUT`, `keep FOUTPUT ROUTPUT`,
//! `pattern SADDR SPORT DADDR DPORT FOUTPUT ROUTPUT` with port ranges
//! `L-H`, `L-H#`, `L-H?`) as described for IPRewriter. Keywords:
//!
//! - `UDP_TIMEOUT` / `TIMEOUT` (time, default 5 minutes).
//! - `UDP_STREAMING_TIMEOUT` / `STREAMING_TIMEOUT` (time, default the
//!   timeout): flows of at least 3 packets with at least one reply.
//! - `UDP_GUARANTEE` / `GUARANTEE` (time, default 5 seconds).
//! - `REAP_INTERVAL` (time, default 15 minutes; `REAP_TIME`, `REAP_UDP`
//!   accepted, the shortest is used).
//! - `MAPPING_CAPACITY` / `CAPACITY` (integer, default 2147483647).
//! - `DST_ANNO` (boolean, default true), `REPLY_ANNO` (annotation).
//!
//! # Handlers
//! - `table` (read), `mappings` (read, deprecated): the mappings,
//!   `(SA, SP, DA, DP) => (SA', SP', DA', DP') [*F R] iN expT`, one entry a
//!   line.
//! - `nmappings`, `mapping_failures`, `size` (read); `capacity`
//!   (read/write); `clear` (write); `patterns` (read); `patternN`
//!   (read/write), as for IPRewriter.
//!
//! # Example
//! ```click
//! rw :: UDPRewriter(pattern 1.0.0.1 1024-65535# - - 0 1, drop);
//! InfiniteSource(LIMIT 1) -> rw;
//! rw[0] -> Discard; rw[1] -> Discard;
//! ```
//!
//! # Implementation
//! The flow table shared by the rewriters (see IPRewriter): one hash table
//! over both directions, flows in a slab, incremental checksums (a zero UDP
//! checksum means none and stays zero), no per-packet allocation.

use super::rwcore::{self, Kind, DEFAULT_TIMEOUTS};
use linerate_runtime::{ConfigureCtx, Element, ElementClass};

/// The `UDPRewriter` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "UDPRewriter",
    port_count: "1-/1-",
    processing: "h/h",
    doc: element_doc!("tcpudp/udprewriter"),
    make,
};

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let mut t = DEFAULT_TIMEOUTS;
    let dst_anno = a.read_or("DST_ANNO", true);
    let reply_anno = rwcore::read_reply_anno(&mut a);
    rwcore::read_secs(&mut a, "UDP_TIMEOUT", &mut t.udp);
    rwcore::read_secs(&mut a, "TIMEOUT", &mut t.udp);
    t.udp_streaming = t.udp;
    rwcore::read_secs(&mut a, "UDP_STREAMING_TIMEOUT", &mut t.udp_streaming);
    rwcore::read_secs(&mut a, "STREAMING_TIMEOUT", &mut t.udp_streaming);
    rwcore::read_secs(&mut a, "UDP_GUARANTEE", &mut t.udp_guarantee);
    rwcore::read_secs(&mut a, "GUARANTEE", &mut t.udp_guarantee);
    rwcore::finish(ctx, a, Kind::Udp, t, dst_anno, reply_anno)
}

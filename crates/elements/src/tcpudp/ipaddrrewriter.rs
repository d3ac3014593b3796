//! Rewrites packets' source addresses (Basic NAT).
//!
//! # Synopsis
//! `IPAddrRewriter(INPUTSPEC1, ..., INPUTSPECn [, KEYWORDS])`
//!
//! # Ports
//! One or more push inputs, one per INPUTSPEC; one or more push outputs.
//!
//! # Arguments
//! Like IPRewriter, but mappings concern addresses only: a packet whose
//! source address has a mapping gets a new source address and leaves on
//! the mapping's forward output; a packet whose destination address is a
//! mapped address gets the original address back as destination and leaves
//! on the reply output. Ports are never changed; IP, TCP and UDP checksums
//! are updated incrementally; packets of any protocol are rewritten.
//! INPUTSPECs: `drop`, `discard`, `pass OUTPUT`, `keep FOUTPUT ROUTPUT`, and
//! `pattern SADDR - FOUTPUT ROUTPUT`, where SADDR is an address, a range
//! `A-B` or a prefix `A/LEN` (its host addresses except the first and
//! last); an address not used by another mapping is chosen (`#` after the
//! range: sequentially). Keywords:
//!
//! - `TIMEOUT` (time, default 2 hours), `GUARANTEE` (time, default 5
//!   seconds).
//! - `REAP_INTERVAL` (time, default 15 minutes).
//! - `MAPPING_CAPACITY` / `CAPACITY` (integer, default 2147483647).
//! - `REPLY_ANNO` (annotation). The destination address annotation of reply
//!   packets is always set to the restored destination.
//!
//! # Handlers
//! - `table` (read), `mappings` (read, deprecated): one entry a line,
//!   `SA => SA' [*F R] iN expT` for the forward entry and `SA' => SA
//!   [F *R] iN expT` for the reply entry (Click prints `0.0.0.0 => 0.0.0.0`
//!   for reply entries).
//! - `nmappings`, `mapping_failures`, `size` (read); `capacity`
//!   (read/write); `clear` (write); `patterns` (read); `patternN`
//!   (read/write), as for IPRewriter.
//!
//! # Example
//! ```click
//! rw :: IPAddrRewriter(pattern 18.26.4.0/24 - 0 1, drop);
//! InfiniteSource(LIMIT 1) -> rw;
//! rw[0] -> Discard; rw[1] -> Discard;
//! ```
//!
//! # Implementation
//! The flow table shared by the rewriters (see IPRewriter), keyed by the
//! source address for forward entries and by the destination address for
//! reply entries; no per-packet allocation.

use super::rwcore::{self, Kind, DEFAULT_TIMEOUTS};
use linerate_runtime::{ConfigureCtx, Element, ElementClass};

/// The `IPAddrRewriter` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "IPAddrRewriter",
    port_count: "1-/1-",
    processing: "h/h",
    doc: element_doc!("tcpudp/ipaddrrewriter"),
    make,
};

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let mut t = DEFAULT_TIMEOUTS;
    t.udp = 2 * 3600 * 1_000_000_000;
    let reply_anno = rwcore::read_reply_anno(&mut a);
    rwcore::read_secs(&mut a, "TIMEOUT", &mut t.udp);
    t.udp_streaming = t.udp;
    rwcore::read_secs(&mut a, "GUARANTEE", &mut t.udp_guarantee);
    rwcore::finish(ctx, a, Kind::Addr, t, true, reply_anno)
}

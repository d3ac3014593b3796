//! Rewrites TCP and UDP packets' addresses and ports (NAPT).
//!
//! # Synopsis
//! `IPRewriter(INPUTSPEC1, ..., INPUTSPECn [, KEYWORDS])`
//!
//! # Ports
//! One or more push inputs, one per INPUTSPEC; one or more push outputs.
//!
//! # Arguments
//! IPRewriter keeps a mapping table indexed by flow identifier (source
//! address and port, destination address and port, protocol). A packet of a
//! known flow is rewritten to the mapping's new flow identifier, with its IP
//! and TCP/UDP checksums updated incrementally, and leaves on the mapping's
//! output. A packet of an unknown flow is handled by the INPUTSPEC of its
//! input:
//!
//! - `drop` or `discard`: drop it.
//! - `pass OUTPUT` (also `passthrough`, `nochange`; OUTPUT defaults to 0):
//!   send it to OUTPUT unchanged; no mapping is installed.
//! - `keep FOUTPUT ROUTPUT`: install a mapping that keeps the flow
//!   identifier: the packet leaves on FOUTPUT, replies on ROUTPUT.
//! - `pattern SADDR SPORT DADDR DPORT FOUTPUT ROUTPUT`: rewrite by the
//!   pattern; `-` leaves a field unchanged. SPORT may be a range `L-H`: a
//!   port not used by an existing mapping is chosen, the packet's own
//!   source port if free, else a random one; `L-H#` allocates sequentially,
//!   `L-H?` randomly without preferring the source port. With no free port
//!   the packet is dropped (a mapping failure). Two mappings are installed:
//!   `(SA, SP, DA, DP) => (SA', SP', DA', DP')` on FOUTPUT and the reply
//!   `(DA', DP', SA', SP') => (DA, DP, SA, SP)` on ROUTPUT.
//!
//! Non-TCP/UDP packets and non-first fragments are dropped unless their
//! input is `pass`. Keywords:
//!
//! - `TCP_TIMEOUT` / `TIMEOUT` (time, default 24 hours): timeout of TCP
//!   flows with data seen in both directions.
//! - `TCP_NODATA_TIMEOUT` (time, default 5 minutes): other TCP flows.
//! - `TCP_DONE_TIMEOUT` (time, default 4 minutes): TCP flows closed by FIN
//!   in both directions or by RST.
//! - `TCP_GUARANTEE` / `GUARANTEE` (time, default 5 seconds): a TCP flow is
//!   kept at least this long after each packet, even when the table is full.
//! - `UDP_TIMEOUT` (time, default 5 minutes), `UDP_STREAMING_TIMEOUT` (time,
//!   default UDP_TIMEOUT; flows of at least 3 packets with a reply),
//!   `UDP_GUARANTEE` (time, default 5 seconds).
//! - `REAP_INTERVAL` (time, default 15 minutes): how often timed-out flows
//!   are removed (a timer, so simulated time works). The older `REAP_TIME`,
//!   `REAP_TCP`, `REAP_TCP_DONE` and `REAP_UDP` are accepted; the shortest
//!   interval given is used.
//! - `MAPPING_CAPACITY` / `CAPACITY` (integer, default 2147483647): the most
//!   flows; a new flow evicts the best-effort flow expiring first, or is
//!   dropped if every flow is guaranteed.
//! - `DST_ANNO` (boolean, default true): set the destination address
//!   annotation to the rewritten destination.
//! - `REPLY_ANNO` (annotation): reply packets get the value this one-byte
//!   annotation had on the packet that created the flow.
//!
//! # Handlers
//! - `tcp_table`, `udp_table` (read), `tcp_mappings`, `udp_mappings`
//!   (read, deprecated): the mappings, one entry a line:
//!   `(SA, SP, DA, DP) => (SA', SP', DA', DP') [*F R] iN expT` (the starred
//!   port is this entry's output; `iN` the creating input; `expT` seconds
//!   until expiry).
//! - `tcp_lookup` (read/write): Click's read handler with a parameter;
//!   write `SADDR SPORT DADDR DPORT`, then read the rewritten flow in the
//!   same format (empty if none).
//! - `nmappings` (read): flows created and alive; `mapping_failures` (read):
//!   flows that could not be created; `size` (read): flows in the table;
//!   `capacity` (read/write): MAPPING_CAPACITY; `clear` (write): remove
//!   every flow; `patterns` (read): each input's specification;
//!   `patternN` (read/write): input N's specification (writing replaces it
//!   and removes the flows it created).
//!
//! # Example
//! ```click
//! rw :: IPRewriter(pattern 18.26.4.44 1024-65535# - - 0 1, drop);
//! FromDump(in.pcap, STOP true) -> Strip(14) -> CheckIPHeader -> rw;
//! rw[0] -> Discard; rw[1] -> Discard;
//! ```
//!
//! # Implementation
//! One open-addressing hash table holds both directions of every flow (TCP
//! and UDP keys carry the protocol); flows live in a slab with a free list,
//! so steady-state traffic allocates nothing and a new flow allocates only
//! when the table outgrows every earlier size. Checksums are updated
//! incrementally (RFC 1624). Batches are split per output in one pass.
//! Differences from Click: named patterns (IPRewriterPatterns) and mapper
//! elements are not supported; MAPPING_CAPACITY takes a number only; TCP
//! sequence-number deltas (set only by FTPPortMapper in Click) are not
//! kept; the table lists each flow's forward entry then its reply entry in
//! creation order; a packet without a network header annotation is read as
//! an IP packet at its first byte.

use super::rwcore::{self, Kind, DEFAULT_TIMEOUTS};
use linerate_runtime::{ConfigureCtx, Element, ElementClass};

/// The `IPRewriter` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "IPRewriter",
    port_count: "1-/1-",
    processing: "h/h",
    doc: element_doc!("tcpudp/iprewriter"),
    make,
};

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let mut t = DEFAULT_TIMEOUTS;
    rwcore::read_secs(&mut a, "UDP_TIMEOUT", &mut t.udp);
    t.udp_streaming = t.udp;
    rwcore::read_secs(&mut a, "UDP_STREAMING_TIMEOUT", &mut t.udp_streaming);
    rwcore::read_secs(&mut a, "UDP_GUARANTEE", &mut t.udp_guarantee);
    rwcore::read_secs(&mut a, "TCP_NODATA_TIMEOUT", &mut t.tcp_nodata);
    rwcore::read_secs(&mut a, "TCP_GUARANTEE", &mut t.tcp_guarantee);
    rwcore::read_secs(&mut a, "TIMEOUT", &mut t.tcp_data);
    rwcore::read_secs(&mut a, "TCP_TIMEOUT", &mut t.tcp_data);
    rwcore::read_secs(&mut a, "TCP_DONE_TIMEOUT", &mut t.tcp_done);
    rwcore::read_secs(&mut a, "GUARANTEE", &mut t.tcp_guarantee);
    let dst_anno = a.read_or("DST_ANNO", true);
    let reply_anno = rwcore::read_reply_anno(&mut a);
    rwcore::finish(ctx, a, Kind::Ip, t, dst_anno, reply_anno)
}

//! Checks and strips the outer Ethernet, IP and NVGRE headers of NVGRE packets (RFC 7637).
//!
//! # Synopsis
//! `NVGREDecap([VSID, KEYWORDS])`
//!
//! # Ports
//! One agnostic input; agnostic output 0 for decapsulated packets,
//! optional push output 1 for packets that are not this tunnel's or are
//! malformed, unchanged (dropped when output 1 is not connected).
//!
//! # Arguments
//! - `VSID` (unsigned, optional): accept only this identifier; others
//!   count as `wrong_id`.
//! - `ANNO` (annotation name or `none`, default `AGGREGATE`): where the
//!   packet's VSID is stored (4 bytes, host order).
//! - `IMPL` (`fast` or `reference`, default `fast`): the optimised or the
//!   straightforward implementation (identical results).
//!
//! The input is an Ethernet frame (no VLAN tag) as `NVGREEncap` makes it.
//! The element checks an IPv4 (not fragmented) or IPv6 header with protocol
//! 47 directly after it, and an NVGRE header: GRE flags with only the key
//! bit, version 0, protocol type `0x6558`. The inner Ethernet frame (at
//! least 14 bytes) is what remains; outer link padding is dropped. It
//! strips the outer headers with `Packet::pull` and `take` (no copy),
//! clears the transport header annotation, sets `L4_PROTO` and the flow
//! hash to 0 (run `L4Parser` on the inner packet) and stores the identifier
//! in `ANNO`. Rejected packets are counted by reason: `truncated` (shorter
//! than the headers), `not_ip` (outer EtherType), `bad_ip` (version, header
//! or total length, a fragment), `not_tunnel` (another protocol or port),
//! `bad_header` (tunnel header or UDP length), `wrong_id`, `not_gpdu`
//! (GTP-U only), `bad_inner` (a too-short inner frame or a non-IP user
//! packet).
//!
//! Click has no NVGRE element; `Strip` plus `CheckIPHeader` is the nearest.
//!
//! # Handlers
//! - `count` (read): packets decapsulated.
//! - `drops` (read): packets rejected.
//! - `truncated`, `not_ip`, `bad_ip`, `not_tunnel`, `bad_header`,
//!   `wrong_id`, `not_gpdu`, `bad_inner` (read): rejections by reason.
//!
//! # Example
//! ```click
//! FromDevice(eth0) -> d :: NVGREDecap(5001) -> L4Parser -> Discard;
//! d[1] -> Discard;
//! ```
//!
//! # Implementation
//! The fast path reads the outer headers at fixed offsets (one length
//! check per header, big-endian loads, the whole NVGRE flags-and-protocol
//! word compared at once) in one loop over the batch; bad packets are
//! marked in a bitmap on the stack and split off only when there are any.
//! Nothing is allocated or copied (GTP-U rewrites the 14 bytes of Ethernet
//! header in front of the user packet). `IMPL reference` checks the same
//! rules with `linerate_wire`'s checked views and `Repr::parse`.
//!
//! Each tunnel has its own loop (the tunnel a constant in it, `IMPL` tested
//! once a batch) and each header is read as a fixed-size array after one
//! length check. An earlier form tested `IMPL` and the tunnel at
//! every packet, read the UDP and VXLAN fields byte by byte at run-time
//! offsets, each byte with its own bounds test, and was slower than the
//! reference: 8.7 against 7.1 ns a packet on `VXLANDecap`'s bench row, now
//! 5.8 (`linerate bench elements --runs 5`, alternated).
//!
//! ClickNP's optimisations: struct of arrays — not for the packets, which
//! are checked and stripped where they lie; the one per-packet fact the
//! loop keeps, rejected or not, is a bit in a bitmap (256 bits on the stack
//! for the usual batches), apart from the packets. SIMD — not used: each
//! packet needs a few dependent loads and compares at offsets that depend
//! on the IP header length, and the strip is pointer arithmetic, so there
//! is no run of equal-width data to vectorise. prefetch — not used: only
//! the outer headers of each packet are read, in batch order, and nothing
//! is looked up in a table. slow path — none is needed: every packet, good
//! or bad, takes the same loop (one per tunnel, the tunnel a constant in
//! it); a rejected packet is only marked, and the batch is split once after
//! the loop, only when a packet was rejected.

use super::{Decap, Tunnel, DECAP_HANDLERS};
use linerate_runtime::{Batch, ConfigureCtx, Element, ElementClass};

/// The `NVGREDecap` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "NVGREDecap",
    port_count: "1/1-2",
    processing: "a/ah",
    doc: element_doc!("encap/nvgredecap"),
    make,
};

/// The NVGREDecap element (public for the differential tests).
pub struct NVGREDecap {
    inner: Decap,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    NVGREDecap::configure(ctx).map(|e| Box::new(e) as Box<dyn Element>)
}

impl NVGREDecap {
    /// Configures from the arguments (see the documentation).
    pub fn configure(ctx: &ConfigureCtx<'_>) -> Result<NVGREDecap, Vec<String>> {
        Ok(NVGREDecap {
            inner: Decap::configure(ctx, Tunnel::Nvgre)?,
        })
    }

    /// Decapsulates a batch: the inner packets and, if any, the rejected
    /// ones.
    pub fn process(&mut self, batch: Batch) -> (Batch, Option<Batch>) {
        self.inner.process(batch)
    }
}

super::tunnel_element!(NVGREDecap, DECAP_HANDLERS);

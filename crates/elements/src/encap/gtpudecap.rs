//! Checks and strips the outer IP, UDP and GTP-U headers of G-PDUs (3GPP TS 29.281), leaving the user IP packet behind an Ethernet header.
//!
//! # Synopsis
//! `GTPUDecap([TEID, KEYWORDS])`
//!
//! # Ports
//! One agnostic input; agnostic output 0 for decapsulated packets,
//! optional push output 1 for packets that are not this tunnel's or are
//! malformed, unchanged (dropped when output 1 is not connected).
//!
//! # Arguments
//! - `TEID` (unsigned, optional): accept only this identifier; others
//!   count as `wrong_id`.
//! - `DPORT` (port, default 2152): the UDP destination port to accept.
//! - `ANNO` (annotation name or `none`, default `AGGREGATE`): where the
//!   packet's TEID is stored (4 bytes, host order).
//! - `IMPL` (`fast` or `reference`, default `fast`): the optimised or the
//!   straightforward implementation (identical results).
//!
//! The input is an Ethernet frame (no VLAN tag) as `GTPUEncap` makes it.
//! The element checks an IPv4 (not fragmented) or IPv6 header with UDP
//! directly after it, the UDP destination port `DPORT`, a UDP length of at
//! least 16 within the IP packet, and a GTP-U header of version 1 and PT 1
//! whose length (with the optional word and extension headers, which are
//! stepped over) fits the UDP payload. Messages other than G-PDU (echo
//! request, error indication, end marker) count as `not_gpdu`. The user
//! packet must start with IP version 4 or 6 (`bad_inner`). The result is
//! the outer Ethernet addresses, the user packet's EtherType, and the user
//! packet; its network header annotation is set (at byte 14). The UDP
//! checksum is not verified. It strips the outer headers with
//! `Packet::pull` and `take` (no copy), clears the transport header
//! annotation, sets `L4_PROTO` and the flow hash to 0 (run `L4Parser` on
//! the inner packet) and stores the identifier in `ANNO`. Rejected packets
//! are counted by reason: `truncated` (shorter than the headers), `not_ip`
//! (outer EtherType), `bad_ip` (version, header or total length, a
//! fragment), `not_tunnel` (another protocol or port), `bad_header` (tunnel
//! header or UDP length), `wrong_id`, `not_gpdu` (GTP-U only), `bad_inner`
//! (a too-short inner frame or a non-IP user packet).
//!
//! Click has no GTP-U element.
//!
//! # Handlers
//! - `count` (read): packets decapsulated.
//! - `drops` (read): packets rejected.
//! - `truncated`, `not_ip`, `bad_ip`, `not_tunnel`, `bad_header`,
//!   `wrong_id`, `not_gpdu`, `bad_inner` (read): rejections by reason.
//!
//! # Example
//! ```click
//! FromDevice(eth0) -> d :: GTPUDecap -> L4Parser -> Discard;
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

/// The `GTPUDecap` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "GTPUDecap",
    port_count: "1/1-2",
    processing: "a/ah",
    doc: element_doc!("encap/gtpudecap"),
    make,
};

/// The GTPUDecap element (public for the differential tests).
pub struct GTPUDecap {
    inner: Decap,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    GTPUDecap::configure(ctx).map(|e| Box::new(e) as Box<dyn Element>)
}

impl GTPUDecap {
    /// Configures from the arguments (see the documentation).
    pub fn configure(ctx: &ConfigureCtx<'_>) -> Result<GTPUDecap, Vec<String>> {
        Ok(GTPUDecap {
            inner: Decap::configure(ctx, Tunnel::Gtpu)?,
        })
    }

    /// Decapsulates a batch: the inner packets and, if any, the rejected
    /// ones.
    pub fn process(&mut self, batch: Batch) -> (Batch, Option<Batch>) {
        self.inner.process(batch)
    }
}

super::tunnel_element!(GTPUDecap, DECAP_HANDLERS);

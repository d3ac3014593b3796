//! Encapsulates Ethernet frames in NVGRE (RFC 7637): outer Ethernet, IPv4 or IPv6, and GRE with the VSID.
//!
//! # Synopsis
//! `NVGREEncap(SRC, DST, VSID [, KEYWORDS])`
//!
//! # Ports
//! One agnostic input; agnostic output 0 for encapsulated packets,
//! optional push output 1 for packets that cannot be encapsulated (dropped
//! when output 1 is not connected).
//!
//! # Arguments
//! - `SRC`, `DST` (IPv4 or IPv6 addresses, both of one family): the outer
//!   source and destination.
//! - `VSID` (unsigned): the 24-bit Virtual Subnet ID.
//! - `ETH_SRC`, `ETH_DST` (Ethernet addresses, default `00:00:00:00:00:00`):
//!   the outer Ethernet header.
//! - `TTL` (byte, default 64): the outer TTL or hop limit.
//! - `DSCP` (0-63, default 0): the outer DSCP (ECN 0).
//! - `IMPL` (`fast` or `reference`, default `fast`): the optimised or the
//!   straightforward implementation (identical results).
//!
//! The input is an Ethernet frame (the inner frame, encapsulated whole).
//! The element pushes outer Ethernet (14 bytes), IPv4 (20) or IPv6 (40),
//! and the 8-byte NVGRE header (GRE with the key bit, protocol type
//! `0x6558`, key = VSID << 8 | FlowID) into the headroom (`Packet::push`;
//! no copy of the payload unless the buffer is shared). The outer IPv4
//! header has DF clear, an identification that counts up per packet, and a
//! correct header checksum; over IPv4 the UDP checksum is 0 (RFC 7348),
//! over IPv6 it is computed over the whole packet. The FlowID (the key's
//! low byte) is the low byte of the flow hash annotation; when the
//! annotation is 0 (no parser ran) the element hashes the inner frame with
//! `linerate_wire::l4::parse`. Afterwards the network and transport header
//! annotations point at the outer IP and GRE/UDP headers and `L4_PROTO`
//! holds the outer protocol. A result longer than an IP packet can be
//! counts as `too_long`.
//!
//! Click has no NVGRE element; Click's `IPEncap(47, ...)` plus a GRE header is the nearest.
//!
//! # Handlers
//! - `count` (read): packets encapsulated.
//! - `drops` (read): packets that could not be.
//! - `not_ip`, `too_long` (read): those, by reason.
//!
//! # Example
//! ```click
//! FromDevice(eth0) -> L4Parser -> NVGREEncap(10.0.0.1, 10.0.0.2, 5001, ETH_SRC 2:0:0:0:0:1, ETH_DST 2:0:0:0:0:2)
//!     -> ToDevice(eth1);
//! ```
//!
//! # Implementation
//! The outer headers are built once, at configuration, with
//! `linerate_wire`'s `Repr::emit` into a template, together with the
//! one's-complement sum of its IPv4 header. A batch of up to 256 packets
//! runs in one loop, specialised on the tunnel and the outer family, that
//! calls nothing, so that its values stay in registers (in session 9's loop
//! the possible calls, copy-on-write inside `Packet::push`, `l4::parse`'s
//! general path and a `memcpy` of run-time length for the template, made it
//! spill on every packet). Per packet it checks the length, takes the flow
//! hash from the annotation or from `linerate_wire::l4::parse_common`,
//! pushes the headroom with `Packet::try_push_mut` (no copy, no call),
//! copies the template in and patches the lengths, the identification, the
//! FlowID and the IPv4 checksum: two one's-complement adds to the
//! template's sum (RFC 1624), summed in memory order (RFC 1071), so no byte
//! swaps. The header annotations are stored from the headroom read before
//! the header bytes are written (after those stores the compiler would read
//! the packet's metadata again). Packets the loop cannot finish that way (a
//! shared or external buffer, too little headroom, a frame whose hash needs
//! `l4::parse_general`) are marked and encapsulated in a second pass, each
//! with the identification it would have had in order; batches of more than
//! 256 packets run the per-packet form. Rejected packets are split off at
//! the end. Nothing is allocated. `IMPL reference` emits every header with
//! `Repr::emit` per packet (checksum computed from scratch, UDP checksum
//! with `UdpPacket::fill_checksum`).
//!
//! Measured (session 10; `perf stat -e instructions:u,cycles:u` on the
//! bench's graph and frames, `MemoryReplay -> Discard` subtracted;
//! `linerate bench elements --runs 5`, loaded 2-core machine): 230 -> 124
//! instructions and 53 -> 29 cycles a packet, 16.35 -> 9.46 ns (105.8 Mpps:
//! the issue's 100 Mpps is met on this row).
//!
//! ClickNP's optimisations: struct of arrays — not for the packets, which
//! are patched where they lie; what the loop keeps per packet sits apart
//! from them in two 256-bit bitmaps on the stack (rejected packets, packets
//! left for the second pass), and the per-packet constants (template, its
//! sums) are one `Outer` copied out before the loop. SIMD — not written by
//! hand: the template copy is a copy of constant length (the loop is
//! specialised on the tunnel and the family), which compiles to inline
//! moves rather than a `memcpy` call, and the per-packet fields are scalar
//! stores with incremental checksum updates (RFC 1624). prefetch — not
//! used: each packet's first bytes and headroom are touched once, in batch
//! order, and nothing is looked up in a table. slow path — yes, and the
//! fast path never waits on it: a packet whose flow hash needs
//! `l4::parse_general` or whose buffer is shared, external or short of
//! headroom is only marked by the call-free first loop; the second pass
//! encapsulates the marked packets after it, each with the identification
//! it would have had in order.

use super::{Encap, Tunnel, ENCAP_HANDLERS};
use linerate_runtime::{Batch, ConfigureCtx, Element, ElementClass};

/// The `NVGREEncap` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "NVGREEncap",
    port_count: "1/1-2",
    processing: "a/ah",
    doc: element_doc!("encap/nvgreencap"),
    make,
};

/// The NVGREEncap element (public for the differential tests).
pub struct NVGREEncap {
    inner: Encap,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    NVGREEncap::configure(ctx).map(|e| Box::new(e) as Box<dyn Element>)
}

impl NVGREEncap {
    /// Configures from the arguments (see the documentation).
    pub fn configure(ctx: &ConfigureCtx<'_>) -> Result<NVGREEncap, Vec<String>> {
        Ok(NVGREEncap {
            inner: Encap::configure(ctx, Tunnel::Nvgre)?,
        })
    }

    /// Encapsulates a batch: the encapsulated packets and, if any, the
    /// rejected ones.
    pub fn process(&mut self, batch: Batch) -> (Batch, Option<Batch>) {
        self.inner.process(batch)
    }
}

super::tunnel_element!(NVGREEncap, ENCAP_HANDLERS);

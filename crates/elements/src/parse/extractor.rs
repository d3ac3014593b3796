//! Reduces each packet to a fixed 56-byte record of its 5-tuple, DSCP,
//! VLAN tag, length, flow hash and timestamp (the capture tool's element).
//!
//! # Synopsis
//! `Extractor([IMPL])`
//!
//! # Ports
//! One agnostic input; agnostic output 0 for records; optional push output
//! 1 for packets that cannot be parsed, unchanged (dropped when output 1 is
//! not connected).
//!
//! # Arguments
//! - `IMPL` (`fast` or `reference`, default `fast`): the optimised or the
//!   straightforward implementation (identical results).
//!
//! The element reads the flow-key annotations (`linerate_runtime::flow`)
//! when the network header annotation is set, as after `L4Parser`;
//! otherwise it parses the Ethernet frame as `L4Parser` does (and leaves
//! the same annotations). The packet's data is then replaced by the
//! record; the header annotations are cleared, the others kept. Packets
//! that do not parse are counted by `L4Parser`'s reasons.
//!
//! The record, all multi-byte fields big-endian:
//!
//! | bytes | field |
//! |------:|-------|
//! | 0-7   | timestamp annotation, nanoseconds since the epoch (0 if unset) |
//! | 8-23  | source address (IPv4 as `::ffff:a.b.c.d`) |
//! | 24-39 | destination address (likewise) |
//! | 40-41 | source port (ICMP: echo identifier; 0 without a transport header) |
//! | 42-43 | destination port (ICMP: type << 8 \| code) |
//! | 44    | transport protocol (`FlowKey::proto`) |
//! | 45    | IP version, 4 or 6 |
//! | 46    | DSCP (IPv4 TOS or IPv6 traffic class, upper 6 bits) |
//! | 47    | ECN (the lower 2 bits) |
//! | 48-49 | outer VLAN TCI (`VLAN_TCI` annotation; 0 without a tag) |
//! | 50-51 | original packet length, saturated at 65535 |
//! | 52-55 | flow hash annotation |
//!
//! Bytes 8-45 are the fields of `FlowKey` in its order, so a record reads
//! back into a key without parsing.
//!
//! Click has no such element; `ToIPSummaryDump` writes similar fields as
//! text.
//!
//! # Handlers
//! - `count` (read): records made.
//! - `drops` (read): packets that could not be parsed.
//! - `truncated`, `not_ip`, `bad_version`, `bad_header_length`,
//!   `bad_length`, `bad_extension` (read): those, by reason.
//!
//! # Example
//! ```click
//! FromDevice(eth0) -> L4Parser -> Extractor -> ToDump(records.pcap);
//! ```
//!
//! # Implementation
//! The record is assembled in a 56-byte buffer on the stack from
//! `FlowKey::from_packet` and two header bytes; then the packet is emptied
//! with `take` and the record pushed into the headroom with `push`: only
//! the record is written, and a shared (zero-copy) packet gets a private
//! buffer with no data to copy. Unannotated packets are parsed with
//! `linerate_wire::l4::parse` (the `L4Parser` fast path). One loop per
//! batch, bad packets marked in a stack bitmap, nothing allocated.
//! `IMPL reference` parses with `L4Parser`'s reference parser and reads the
//! DSCP through `linerate_wire`'s IPv4/IPv6 views.
//!
//! ClickNP's optimisations: struct of arrays — not used: each record is
//! assembled in a buffer on the stack and written into its own packet; the
//! only per-packet side data is the stack bitmap of bad packets. SIMD — not
//! used: a record is a handful of fields of different widths gathered from
//! the flow key and two header bytes, written with scalar stores. prefetch
//! — not used: only the headers of each packet are read, in batch order,
//! and nothing is looked up in a table. slow path — an unannotated packet
//! is parsed inline in the same loop by `L4Parser`'s fast parser; an
//! unparseable one is only marked, and the batch is split once after the
//! loop, so it never holds up the others.

use super::l4parser::{annotate_fast, annotate_slow};
use crate::ip::util::partition;
use linerate_runtime::anno::offsets;
use linerate_runtime::flow::FlowKey;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use linerate_wire::l4::Reason;
use std::any::Any;

/// Length of a record.
pub const RECORD_LEN: usize = 56;

/// The `Extractor` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "Extractor",
    port_count: "1/1-2",
    processing: "a/ah",
    doc: element_doc!("parse/extractor"),
    make,
};

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::counter("count"),
    HandlerSpec::counter("drops"),
    HandlerSpec::counter("truncated"),
    HandlerSpec::counter("not_ip"),
    HandlerSpec::counter("bad_version"),
    HandlerSpec::counter("bad_header_length"),
    HandlerSpec::counter("bad_length"),
    HandlerSpec::counter("bad_extension"),
];

/// The Extractor element (public for the differential tests).
pub struct Extractor {
    fast: bool,
    has_out1: bool,
    count: u64,
    by_reason: [u64; 6],
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    Extractor::configure(ctx).map(|e| Box::new(e) as Box<dyn Element>)
}

/// The record fields common to both implementations.
#[inline(always)]
fn fill(rec: &mut [u8; RECORD_LEN], p: &Packet, k: &FlowKey, tos: u8) {
    let a = p.anno();
    rec[0..8].copy_from_slice(&a.timestamp_ns.to_be_bytes());
    rec[8..24].copy_from_slice(&k.src);
    rec[24..40].copy_from_slice(&k.dst);
    rec[40..42].copy_from_slice(&k.sport.to_be_bytes());
    rec[42..44].copy_from_slice(&k.dport.to_be_bytes());
    rec[44] = k.proto;
    rec[45] = k.version;
    rec[46] = tos >> 2;
    rec[47] = tos & 3;
    rec[48..50].copy_from_slice(&a.u16(offsets::VLAN_TCI).to_be_bytes());
    rec[50..52].copy_from_slice(&(p.len().min(0xffff) as u16).to_be_bytes());
    rec[52..56].copy_from_slice(&a.flow_hash.to_be_bytes());
}

/// Replaces the packet's data by `rec`.
#[inline(always)]
fn replace(p: &mut Packet, rec: &[u8; RECORD_LEN]) {
    p.take(p.len());
    p.push(RECORD_LEN);
    p.data_mut().copy_from_slice(rec);
    p.clear_headers();
}

impl Extractor {
    /// Configures from `IMPL`.
    pub fn configure(ctx: &ConfigureCtx<'_>) -> Result<Extractor, Vec<String>> {
        let mut a = linerate_args::Args::new(&ctx.args);
        let fast = super::read_impl(&mut a);
        a.complete().map_err(|e| e.0)?;
        Ok(Extractor {
            fast,
            has_out1: ctx.noutputs() > 1,
            count: 0,
            by_reason: [0; 6],
        })
    }

    #[inline(always)]
    fn one_fast(p: &mut Packet) -> Result<(), Reason> {
        if p.network_header_offset().is_none() {
            annotate_fast(p)?;
        }
        let Some(k) = FlowKey::from_packet(p) else {
            return Err(Reason::NotIp);
        };
        let tos = match p.network_header() {
            Some(ip) if k.version == 4 => ip[1],
            Some(ip) => ip[0] << 4 | ip[1] >> 4,
            None => 0,
        };
        let mut rec = [0u8; RECORD_LEN];
        fill(&mut rec, p, &k, tos);
        replace(p, &rec);
        Ok(())
    }

    fn one_reference(p: &mut Packet) -> Result<(), Reason> {
        use linerate_wire::prelude::*;
        if p.network_header_offset().is_none() {
            annotate_slow(p)?;
        }
        let k = FlowKey::from_packet(p).ok_or(Reason::NotIp)?;
        let ip = p.network_header().unwrap_or(&[]);
        let tos = if k.version == 4 {
            let v = Ipv4Packet::new_unchecked(ip);
            v.dscp() << 2 | v.ecn()
        } else {
            Ipv6Packet::new_unchecked(ip).traffic_class()
        };
        let mut rec = [0u8; RECORD_LEN];
        fill(&mut rec, p, &k, tos);
        replace(p, &rec);
        Ok(())
    }

    /// Makes a record of every packet of `batch`; returns the records and
    /// the unparseable packets.
    pub fn process(&mut self, mut batch: Batch) -> (Batch, Option<Batch>) {
        let n = batch.len() as u64;
        let (fast, by_reason) = (self.fast, &mut self.by_reason);
        let bad = partition(&mut batch, |p| {
            let r = if fast {
                Self::one_fast(p)
            } else {
                Self::one_reference(p)
            };
            match r {
                Ok(()) => false,
                Err(r) => {
                    by_reason[r as usize] += 1;
                    true
                }
            }
        });
        self.count += n - bad.as_ref().map_or(0, |b| b.len() as u64);
        (batch, bad)
    }
}

impl Element for Extractor {
    fn action(&mut self, batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        let (good, bad) = self.process(batch);
        if let (Some(b), true) = (bad, self.has_out1) {
            ctx.push(1, b);
        }
        good
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        match name {
            "count" => Some(self.count.to_string()),
            "drops" => Some(self.by_reason.iter().sum::<u64>().to_string()),
            _ => super::reason_handler(&self.by_reason, name),
        }
    }

    drops_or_output_1!(self, self.has_out1, super::reason_drops(&self.by_reason));

    fn as_any(&self) -> &dyn Any {
        self
    }
}

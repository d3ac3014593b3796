//! Parses Ethernet, VLAN, IPv4/IPv6 and transport headers in one pass and
//! leaves the flow-key annotations.
//!
//! # Synopsis
//! `L4Parser([IMPL])`
//!
//! # Ports
//! One agnostic input; agnostic output 0 for parsed packets, optional push
//! output 1 for packets that cannot be parsed (dropped when output 1 is not
//! connected).
//!
//! # Arguments
//! - `IMPL` (word, `fast` or `reference`, default `fast`): the optimised
//!   parser or the straightforward one built from `linerate_wire`'s header
//!   views. Both give identical results (a differential test checks it).
//!
//! Each packet must start with an Ethernet header. The parser steps over up
//! to two VLAN tags (TPID `0x8100` or `0x88a8`), an IPv4 header (options
//! included) or an IPv6 header and its extension headers (Hop-by-Hop,
//! Routing, Fragment, Destination Options, AH; the walk stops at ESP, No
//! Next Header, any other protocol, or a non-first fragment), and finds the
//! TCP, UDP, ICMP, ICMPv6 or SCTP header. On every parsed packet it sets the
//! annotations of the flow-key contract (`linerate_runtime::flow`):
//!
//! - the network header at the IP header;
//! - the transport header at the transport header, or unset for a
//!   non-first fragment, another protocol, or a transport header that does
//!   not fit in the IP packet (TCP 20 bytes, UDP/ICMP/ICMPv6 8, SCTP 12);
//! - `L4_PROTO` (byte 18): the transport protocol number (IPv4 protocol or
//!   last IPv6 next-header), also for fragments;
//! - `VLAN_TCI` (bytes 20-21): the outer tag's TCI, 0 without a tag;
//! - the flow hash: `linerate_wire::l4::flow_hash` of the 5-tuple that
//!   `FlowKey::from_packet` reads back, never 0.
//!
//! The packet data is not touched. Packets that cannot be parsed keep their
//! annotations and are counted by reason: `truncated` (shorter than the
//! Ethernet header, a tag, the fixed IP header, or IPv4 options),
//! `not_ip` (another EtherType, or a third tag), `bad_version` (IP version
//! does not match the EtherType), `bad_header_length` (IPv4 IHL below 5),
//! `bad_length` (IPv4 total length below the header or beyond the frame,
//! IPv6 payload beyond the frame), `bad_extension` (an IPv6 extension
//! header beyond the payload, Hop-by-Hop not first, more than 8 headers).
//! Bytes after the IP length are link padding and accepted.
//!
//! Captures cut short by a snap length (`tcpdump -s 96`, and the header
//! traces CAIDA and MAWI publish) are parsed as the packets they were on
//! the wire: the IP length may run past the frame by as many bytes as the
//! capture did not keep (the `EXTRA_LENGTH` annotation, which `FromDump`
//! sets from each record's original length). Every header the parser reads
//! (the IP header and options, IPv6 extension headers, the transport
//! header's first 20 bytes for TCP, 8 for UDP/ICMP/ICMPv6, 12 for SCTP)
//! must still have been captured, or the packet is `truncated`; an IP
//! length beyond the original length is still `bad_length`. So a flow
//! meter counts a cut packet's bytes from its IP length, as softflowd and
//! nfpcapd do. Packets not cut (`EXTRA_LENGTH` 0) are parsed as before.
//!
//! Click has no single element for this; `CheckIPHeader` and
//! `MarkIPHeader` set the IPv4 header annotations on packets without the
//! Ethernet header.
//!
//! # Handlers
//! - `count` (read): packets parsed.
//! - `cut` (read): packets parsed whose IP packet the capture cut short.
//! - `drops` (read): packets that could not be parsed.
//! - `truncated`, `not_ip`, `bad_version`, `bad_header_length`,
//!   `bad_length`, `bad_extension` (read): unparseable packets by reason.
//!
//! # Example
//! ```click
//! FromDump(trace.pcap, STOP true) -> p :: L4Parser -> RSS... -> Discard;
//! p[1] -> Print(unparsed) -> Discard;
//! ```
//!
//! # Implementation
//! Two passes over a batch of at most 256 packets. The first runs
//! `linerate_wire::l4::parse_common_then` on every packet whose frame ends
//! below `NO_HEADER` bytes from its buffer head (so every header offset
//! fits in its annotation): the common frames (at most one tag, IPv4 with
//! a 20-byte header or IPv6 without extension headers, TCP/UDP/SCTP or
//! another protocol without ports, headers inside the frame) read through
//! fixed-size array views, so no field needs a bounds test of its own, and
//! the 5-tuple is hashed with two multiply-xorshift rounds on two 64-bit
//! words (IPv6 addresses are folded with rotations first). The IP part is
//! compiled once per tag state and the annotations are computed in each
//! frame shape's own code, so the offsets are constants and the transport
//! header's presence needs no test; the transport rule is one load from a
//! protocol table and one compare with the payload length (the IPv4
//! fragment offset folded in). That loop calls nothing, so its values stay
//! in registers. Packets the common path does not take (ICMP, options, two
//! tags, extension headers, errors, offsets past `NO_HEADER`) are marked in
//! a bitmap and parsed afterwards by `linerate_wire::l4::parse` (extension
//! headers stepped over with a bit-set membership test and a branch-free
//! length rule); only a batch with a bad packet is split (order kept).
//!
//! Cut frames: a cut frame's IP length runs past it, so the common pass
//! declines it; the second pass reads `EXTRA_LENGTH` and parses a frame a
//! capture cut with `l4::parse_cut` instead of the general parser (which
//! equals it wherever the IP length fits the frame). Once a batch held a
//! cut frame, the next batch takes a second instance of the first pass
//! (`run_fast::<true>`, `l4::parse_common_cut_then`), which reads every
//! packet's `EXTRA_LENGTH` and takes the common cut frames as well; a batch
//! without one switches back. So whole frames pay nothing (the LAN trace:
//! 82.0 instructions a packet before and 81.8 after, callgrind), and a
//! header trace's frames one parse in the call-free pass: `nfs/flowmon.click`
//! on the inet trace cut to 96 bytes 208.3 -> 186.5 ms (session 26; until
//! then a cut frame took the common pass, the general parser and
//! `parse_cut`). Reading `EXTRA_LENGTH` in the one common pass for every
//! batch cost whole frames 15-20 % (the benchmark mix 4.6 -> 5.4 ns;
//! session 25, not kept).
//! Software prefetching of the next packets' metadata and data was tried
//! and removed (session 4): the frames of a batch are in L1/L2 already and
//! the prefetch address arithmetic cost more than it saved. Batches of
//! more than 128 packets (flowmon reads 256) no longer fit the L1 with
//! their metadata, and there the loop fetches each packet's annotations
//! and IP header 8 packets ahead (`hint::prefetch_ahead`, session 30). Nothing is
//! allocated and no packet data is copied or written, so
//! zero-copy views stay shared.
//!
//! Measured (session 9, `perf stat -e instructions:u`, 20 M packets of the
//! benchmark mix, `MemoryReplay -> Discard` subtracted): 122 instructions
//! a packet with one loop around the general parser (inlined, but with
//! calls to its rare paths, so the loop kept its values on the stack), 95
//! with the call-free common pass; session 11 (valgrind's count, 2 M
//! packets): 77 with the annotations computed per frame shape and the
//! protocol table. The bench rows are in docs/performance.md.
//!
//! `IMPL reference` parses with `linerate_wire`'s checked views
//! (`ethernet`, `vlan`, `ipv4`, `ipv6`, `ipv6ext::walk`), sets the header
//! annotations, and hashes the key `FlowKey::from_packet` reads back.
//!
//! ClickNP's optimisations: struct of arrays — partly: the loop works on
//! the batch's vector of packet handles in place, and what it keeps per
//! packet (whether the common pass left it for the general parser, whether
//! it is bad) is a bit in 256-bit bitmaps on the stack, apart from the
//! packets; the header offsets go to each packet's annotations, where the
//! next elements read them. SIMD — not used: a packet's work is a chain of
//! dependent header reads and branches on the frame's shape, with no run of
//! equal-width data to vectorise; the 5-tuple hash is two scalar
//! multiply-xorshift rounds. prefetch — only in batches of more than 128
//! packets (above). slow path —
//! the common frames never wait on the rest: the call-free first pass
//! handles them and only marks the others (ICMP, options, two tags,
//! extension headers, errors) in a bitmap; `l4::parse_general` runs on the
//! marked packets after the loop, and the batch is split only when a packet
//! is bad.

use crate::hint::{prefetch_ahead, PREFETCH_BATCH};
use crate::ip::util::partition;
use linerate_runtime::anno::{offsets, NO_HEADER};
use linerate_runtime::flow::FlowKey;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use linerate_wire::l4::{self, Parsed, Reason, NO_TRANSPORT};
use std::any::Any;

/// The `L4Parser` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "L4Parser",
    port_count: "1/1-2",
    processing: "a/ah",
    doc: element_doc!("parse/l4parser"),
    make,
};

/// The L4Parser element (public for the differential tests).
pub struct L4Parser {
    fast: bool,
    has_out1: bool,
    count: u64,
    /// Packets parsed whose IP packet a capture cut (see `parse_cut`).
    cut: u64,
    /// The previous batch held such packets: the common pass reads each
    /// packet's `EXTRA_LENGTH` and takes cut frames too.
    cut_pass: bool,
    by_reason: [u64; 6],
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    L4Parser::configure(ctx).map(|e| Box::new(e) as Box<dyn Element>)
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::counter("count"),
    HandlerSpec::counter("cut"),
    HandlerSpec::counter("drops"),
    HandlerSpec::counter("truncated"),
    HandlerSpec::counter("not_ip"),
    HandlerSpec::counter("bad_version"),
    HandlerSpec::counter("bad_header_length"),
    HandlerSpec::counter("bad_length"),
    HandlerSpec::counter("bad_extension"),
];

/// Minimum transport header length the contract requires, by protocol.
fn l4_min(proto: u8) -> usize {
    match proto {
        6 => 20,
        17 | 1 | 58 => 8,
        132 => 12,
        _ => 0,
    }
}

/// The reference parser: `linerate_wire` views, one check at a time.
/// Returns (network, transport, proto, tci, whether the capture cut the IP
/// packet). `cut`: bytes of the packet a capture did not keep (the
/// `EXTRA_LENGTH` annotation); the IP length may run that far past the
/// frame, but every header read must have been captured.
fn parse_reference(d: &[u8], cut: usize) -> Result<(usize, Option<usize>, u8, u16, bool), Reason> {
    use linerate_wire::prelude::*;
    use linerate_wire::{ipv6ext, Error};
    let eth = EthernetPacket::new_checked(d).map_err(|_| Reason::Truncated)?;
    let mut et = eth.ethertype();
    let mut off = 14;
    let mut tci = 0;
    for depth in 0..3 {
        if et != EtherType(0x8100) && et != EtherType(0x88a8) {
            break;
        }
        if depth == 2 {
            return Err(Reason::NotIp);
        }
        let tag = VlanPacket::new_checked(&d[off..]).map_err(|_| Reason::Truncated)?;
        if depth == 0 {
            tci = tag.tci();
        }
        et = tag.ethertype();
        off += 4;
    }
    let rest = &d[off..];
    if et == EtherType(0x0800) {
        if rest.len() < 20 {
            return Err(Reason::Truncated);
        }
        let ip = Ipv4Packet::new_unchecked(rest);
        if ip.version() != 4 {
            return Err(Reason::BadVersion);
        }
        match ip.check_header_len() {
            Err(Error::Malformed) => return Err(Reason::BadHeaderLength),
            Err(_) => return Err(Reason::Truncated),
            Ok(()) => {}
        }
        let total = usize::from(ip.total_len());
        let was_cut = match ip.check_len() {
            Ok(()) => false,
            Err(Error::Truncated) if total <= rest.len() + cut => true,
            Err(_) => return Err(Reason::BadLength),
        };
        let proto = ip.protocol().0;
        let min = l4_min(proto);
        let hl = ip.header_len();
        let th = (ip.frag_offset() == 0 && min != 0 && total - hl >= min).then_some(off + hl);
        if th.is_some() && rest.len() - hl < min {
            return Err(Reason::Truncated);
        }
        Ok((off, th, proto, tci, was_cut))
    } else if et == EtherType(0x86dd) {
        if rest.len() < 40 {
            return Err(Reason::Truncated);
        }
        let ip = Ipv6Packet::new_unchecked(rest);
        if ip.version() != 6 {
            return Err(Reason::BadVersion);
        }
        let declared = usize::from(ip.payload_len());
        let was_cut = match ip.check_len() {
            Ok(()) => false,
            Err(_) if 40 + declared <= rest.len() + cut => true,
            Err(_) => return Err(Reason::BadLength),
        };
        let payload = if was_cut { &rest[40..] } else { ip.payload() };
        let chain = if was_cut {
            walk_cut(ip.next_header(), payload, declared)?
        } else {
            ipv6ext::walk(ip.next_header(), payload).map_err(|_| Reason::BadExtension)?
        };
        let proto = chain.next_header.0;
        let first = !matches!(chain.fragment, Some(f) if f.offset != 0);
        let min = l4_min(proto);
        let th = (first && min != 0 && declared - chain.offset >= min)
            .then_some(off + 40 + chain.offset);
        if th.is_some() && payload.len() - chain.offset < min {
            return Err(Reason::Truncated);
        }
        Ok((off, th, proto, tci, was_cut))
    } else {
        Err(Reason::NotIp)
    }
}

/// `ipv6ext::walk` of the captured part `payload` of an IPv6 payload of
/// `declared` bytes. A header that leaves the declared payload is
/// `BadExtension` as in the whole packet; one that only leaves the captured
/// bytes is `Truncated`.
fn walk_cut(
    first: linerate_wire::ip::IpProtocol,
    payload: &[u8],
    declared: usize,
) -> Result<linerate_wire::ipv6ext::Chain, Reason> {
    use linerate_wire::{ipv6ext, Error};
    let mut it = ipv6ext::headers(first, payload);
    while let Some(h) = it.next() {
        match h {
            Ok(_) => {}
            Err(Error::Truncated) => {
                let o = it.offset();
                return Err(if o + 8 > declared {
                    Reason::BadExtension
                } else if o + 8 > payload.len() {
                    Reason::Truncated
                } else {
                    let h = ipv6ext::Packet::new_unchecked(&payload[o..], it.next_header());
                    if o + h.header_len() > declared {
                        Reason::BadExtension
                    } else {
                        Reason::Truncated
                    }
                });
            }
            Err(_) => return Err(Reason::BadExtension),
        }
    }
    // Walked without error: the same walk gives the chain.
    ipv6ext::walk(first, payload).map_err(|_| Reason::BadExtension)
}

impl L4Parser {
    /// Configures from `IMPL` (see the documentation).
    pub fn configure(ctx: &ConfigureCtx<'_>) -> Result<L4Parser, Vec<String>> {
        let mut a = linerate_args::Args::new(&ctx.args);
        let fast = super::read_impl(&mut a);
        a.complete().map_err(|e| e.0)?;
        Ok(L4Parser {
            fast,
            has_out1: ctx.noutputs() > 1,
            count: 0,
            cut: 0,
            cut_pass: false,
            by_reason: [0; 6],
        })
    }

    /// Parses every packet of `batch`; returns the parsed packets and, if
    /// any, the unparseable ones (both in order).
    pub fn process(&mut self, mut batch: Batch) -> (Batch, Option<Batch>) {
        let n = batch.len() as u64;
        let bad = if self.fast && batch.len() <= 256 {
            if self.cut_pass {
                let cut = self.cut;
                let bad = self.run_fast::<true>(&mut batch);
                self.cut_pass = self.cut != cut;
                bad
            } else {
                self.run_fast::<false>(&mut batch)
            }
        } else {
            let fast = self.fast;
            partition(&mut batch, |p| {
                let r = if fast {
                    self.parse_other(p, l4::parse).map(|r| annotate(p, &r))
                } else {
                    annotate_slow_cut(p, extra_length(p)).map(|c| self.cut += u64::from(c))
                };
                if let Err(r) = r {
                    self.by_reason[r as usize] += 1;
                }
                r.is_err()
            })
        };
        self.count += n - bad.as_ref().map_or(0, |b| b.len() as u64);
        (batch, bad)
    }

    /// The fast path over a batch of at most 256 packets: one loop, no
    /// closure, bad packets marked in a bitmap and split off only if any.
    /// With `CUT` the first pass also takes frames a capture cut short.
    fn run_fast<const CUT: bool>(&mut self, batch: &mut Batch) -> Option<Batch> {
        // Two passes: the common frames in a loop without calls (so its
        // values stay in registers), marking the others; then the marked
        // ones, if any, through the general parser.
        let mut other = [0u64; 4];
        let mut any_other = 0u64;
        let pk = batch.as_mut_slice();
        let far = pk.len() > PREFETCH_BATCH;
        for i in 0..pk.len() {
            prefetch_ahead(pk, i, far);
            let p = &mut pk[i];
            let (hr, len) = (p.headroom(), p.len());
            // Every header offset is below NO_HEADER when the frame ends
            // below it (the usual case); the other packets go to the second
            // pass, whose `annotate` stores NO_HEADER for an offset that
            // does not fit.
            let found = if hr + len >= usize::from(NO_HEADER) {
                None
            } else if CUT {
                let d = p.data();
                l4::parse_common_cut_then(d, extra_length(p), |r| {
                    self.cut += u64::from(r.ip_end(d) > len);
                    Words::of(hr as u16, &r)
                })
            } else {
                l4::parse_common_then(p.data(), |r| Words::of(hr as u16, &r))
            };
            match found {
                Some(w) => w.store(p),
                None => {
                    other[i >> 6] |= 1 << (i & 63);
                    any_other = 1;
                }
            }
        }
        if any_other == 0 {
            return None;
        }
        let mut bits = [0u64; 4];
        let mut any = false;
        for (w, &o) in other.iter().enumerate() {
            let mut o = o;
            while o != 0 {
                let i = w * 64 + o.trailing_zeros() as usize;
                o &= o - 1;
                let p = &mut pk[i];
                let parsed = self
                    .parse_other(p, l4::parse_general)
                    .map(|r| annotate(p, &r));
                if let Err(r) = parsed {
                    self.by_reason[r as usize] += 1;
                    bits[w] |= 1 << (i & 63);
                    any = true;
                }
            }
        }
        if !any {
            return None;
        }
        let mut i = 0usize;
        Some(batch.split_off_if(|_| {
            let b = (bits[i >> 6] >> (i & 63)) & 1 != 0;
            i += 1;
            b
        }))
    }

    /// `p` parsed by `whole` (`l4::parse` or `l4::parse_general`), or, if a
    /// capture cut it (`EXTRA_LENGTH` bytes short), by `l4::parse_cut`
    /// alone: that equals the general parser wherever the general parser
    /// does not refuse the IP length, so a cut frame is parsed once.
    #[inline(always)]
    fn parse_other(
        &mut self,
        p: &Packet,
        whole: fn(&[u8]) -> Result<Parsed, Reason>,
    ) -> Result<Parsed, Reason> {
        match extra_length(p) {
            0 => whole(p.data()),
            cut => self.parse_cut(p.data(), cut),
        }
    }

    /// `l4::parse_cut`, counting the frame in `cut` if its IP packet runs
    /// past what the capture kept (and then taking the common pass for cut
    /// frames from the next batch on).
    #[inline(never)]
    fn parse_cut(&mut self, d: &[u8], cut: usize) -> Result<Parsed, Reason> {
        let parsed = l4::parse_cut(d, cut)?;
        if parsed.ip_end(d) > d.len() {
            self.cut += 1;
            self.cut_pass = true;
        }
        Ok(parsed)
    }

    fn drops_total(&self) -> u64 {
        self.by_reason.iter().sum()
    }
}

/// The annotations of a parsed packet whose header offsets fit (see
/// [`annotate_at`]), computed where `l4::parse_common_then` finds the frame
/// shape, so the transport header's presence is known there.
struct Words {
    network: u16,
    transport: u16,
    hash: u32,
    proto: u8,
    tci: u16,
}

impl Words {
    /// The annotations of `r` for a packet with `hr` bytes of headroom,
    /// where the headroom plus the frame length is below `NO_HEADER`.
    #[inline(always)]
    fn of(hr: u16, r: &Parsed) -> Words {
        Words {
            network: hr + r.network,
            transport: if r.transport == NO_TRANSPORT {
                NO_HEADER
            } else {
                hr + r.transport
            },
            hash: r.hash,
            proto: r.proto,
            tci: r.vlan_tci,
        }
    }

    /// Writes them to `p` (the fields `annotate_at` writes).
    #[inline(always)]
    fn store(self, p: &mut Packet) {
        let a = p.anno_mut();
        a.network_header = self.network;
        a.transport_header = self.transport;
        a.flow_hash = self.hash;
        a.user[offsets::L4_PROTO] = self.proto;
        a.set_u16(offsets::VLAN_TCI, self.tci);
    }
}

/// Parses `p` with the fast parser and writes the contract's annotations
/// (nothing is written on error).
#[inline(always)]
pub(crate) fn annotate_fast(p: &mut Packet) -> Result<(), Reason> {
    l4::parse(p.data()).map(|r| annotate(p, &r))
}

/// Parses `p` with the reference parser and writes the annotations.
pub(crate) fn annotate_slow(p: &mut Packet) -> Result<(), Reason> {
    annotate_slow_cut(p, 0).map(|_| ())
}

/// [`annotate_slow`] of a packet a capture may have cut `cut` bytes short;
/// true if it was (see [`parse_reference`]).
pub(crate) fn annotate_slow_cut(p: &mut Packet, cut: usize) -> Result<bool, Reason> {
    let (nh, th, proto, tci, was_cut) = parse_reference(p.data(), cut)?;
    annotate_reference(p, (nh, th, proto, tci));
    Ok(was_cut)
}

/// Bytes of the packet a capture did not keep (the `EXTRA_LENGTH`
/// annotation, which `FromDump` sets).
#[inline(always)]
pub(crate) fn extra_length(p: &Packet) -> usize {
    p.anno().u32(offsets::EXTRA_LENGTH) as usize
}

/// Writes the contract's annotations from the fast parser's result.
#[inline(always)]
pub(crate) fn annotate(p: &mut Packet, r: &Parsed) {
    annotate_at(p, (p.headroom(), p.len()), r)
}

/// [`annotate`] with the packet's headroom and length read already.
#[inline(always)]
fn annotate_at(p: &mut Packet, (hr, len): (usize, usize), r: &Parsed) {
    // Header annotations are offsets from the buffer head: the headroom
    // once, plus each offset (NO_HEADER if that does not fit, as
    // `Packet::set_network_header` does).
    let (nh, th) = if hr + len < usize::from(NO_HEADER) {
        // Every offset inside the frame fits (the usual case: one test
        // instead of one an offset).
        let th = if r.transport == NO_TRANSPORT {
            NO_HEADER
        } else {
            hr as u16 + r.transport
        };
        (hr as u16 + r.network, th)
    } else {
        let at = |off: u16| {
            let v = hr + usize::from(off);
            if v < usize::from(NO_HEADER) {
                v as u16
            } else {
                NO_HEADER
            }
        };
        let th = if r.transport == NO_TRANSPORT {
            NO_HEADER
        } else {
            at(r.transport)
        };
        (at(r.network), th)
    };
    let a = p.anno_mut();
    a.network_header = nh;
    a.transport_header = th;
    a.flow_hash = r.hash;
    a.user[offsets::L4_PROTO] = r.proto;
    a.set_u16(offsets::VLAN_TCI, r.vlan_tci);
}

/// Writes the annotations from the reference parser's result, hashing the
/// key that `FlowKey::from_packet` reads back.
fn annotate_reference(p: &mut Packet, (nh, th, proto, tci): (usize, Option<usize>, u8, u16)) {
    p.set_network_header(nh as isize);
    match th {
        Some(t) => p.set_transport_header(t as isize),
        None => p.anno_mut().transport_header = NO_HEADER,
    }
    p.anno_mut().set_u8(offsets::L4_PROTO, proto);
    p.anno_mut().set_u16(offsets::VLAN_TCI, tci);
    let hash = match FlowKey::from_packet(p) {
        Some(k) if k.version == 4 => {
            let w = |a: &[u8; 16]| [a[12], a[13], a[14], a[15]];
            let addrs = l4::addr_word_v4(w(&k.src), w(&k.dst));
            l4::flow_hash(addrs, k.sport, k.dport, k.proto, 4)
        }
        Some(k) => l4::flow_hash(
            l4::addr_word_v6(&k.src, &k.dst),
            k.sport,
            k.dport,
            k.proto,
            6,
        ),
        None => 1,
    };
    p.anno_mut().flow_hash = hash;
}

impl Element for L4Parser {
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
            "cut" => Some(self.cut.to_string()),
            "drops" => Some(self.drops_total().to_string()),
            _ => super::reason_handler(&self.by_reason, name),
        }
    }

    drops_or_output_1!(self, self.has_out1, super::reason_drops(&self.by_reason));

    fn as_any(&self) -> &dyn Any {
        self
    }
}

//! Verifies or sets the IPv4 header checksum and the TCP and UDP checksums
//! (IPv4 and IPv6 pseudo-headers) over the whole packet.
//!
//! # Synopsis
//! `IPChecksum([MODE, IMPL])`
//!
//! # Ports
//! One agnostic input; agnostic output 0; optional push output 1 for
//! packets with a bad checksum (`MODE verify`) or that cannot be located
//! (dropped when output 1 is not connected).
//!
//! # Arguments
//! - `MODE` (word, `verify` or `set`, default `verify`): check the
//!   checksums, or compute and store them.
//! - `IMPL` (`fast` or `reference`, default `fast`): the optimised or the
//!   straightforward implementation (identical results).
//!
//! The element finds the IP header from the network header annotation
//! when it is set (and the transport header from its annotation and
//! `L4_PROTO`, as `L4Parser`, `CheckIPHeader` or `MarkIPHeader` leave
//! them); otherwise it locates the headers of the Ethernet frame with
//! `linerate_wire::l4::locate` (`L4Parser`'s rules). It covers the IPv4
//! header checksum, and the TCP checksum (the whole segment: IP payload
//! from the transport header) or the UDP checksum (the UDP length's bytes,
//! which must fit in the IP payload) with the IPv4 or IPv6 pseudo-header.
//! A UDP checksum of 0 over IPv4 means "none" and verifies; `set` stores
//! 0xffff for a computed 0 (RFC 768). Fragments (IPv4 MF or offset, an
//! IPv6 Fragment header) and other protocols get only the IPv4 header
//! checksum. In `set` mode shared packet data is copied first
//! (`Packet::data_mut`).
//!
//! Rejected packets are counted by reason: `unparsed` (no usable network
//! header and the frame does not parse), `bad_length` (IP, TCP or UDP
//! lengths beyond the data), and in `verify` mode `bad_ip_checksum`,
//! `bad_tcp_checksum`, `bad_udp_checksum`.
//!
//! Click's `CheckIPHeader`, `CheckTCPHeader` and `CheckUDPHeader` verify,
//! and `SetIPChecksum`, `SetTCPChecksum` and `SetUDPChecksum` set, these
//! checksums one protocol at a time.
//!
//! # Handlers
//! - `count` (read): packets passed to output 0.
//! - `drops` (read): packets rejected.
//! - `unparsed`, `bad_length`, `bad_ip_checksum`, `bad_tcp_checksum`,
//!   `bad_udp_checksum` (read): rejections by reason.
//!
//! # Example
//! ```click
//! FromDevice(eth0) -> L4Parser -> c :: IPChecksum -> Queue -> ToDevice(eth1);
//! c[1] -> Discard;
//! ```
//!
//! # Implementation
//! The one's-complement sum of a segment is `sum_wide`: where the CPU has
//! AVX2 (detected at run time; the build targets x86-64-v2) and the
//! segment is 32 bytes or more, an AVX2 loop takes 64 bytes per step, splits
//! each 256-bit load into its low and high native 16-bit halves (an AND and
//! a shift) and adds them into the 32-bit lanes of four accumulators (a lane
//! gains at most 0xffff per step: no carries to handle for 4 MiB), with one
//! horizontal sum per segment. Elsewhere a portable loop adds eight native
//! 32-bit words per 32 bytes into four 64-bit accumulators, then single
//! words and the last 0-3 bytes read one by one (a padded copy went through
//! `memcpy` and stalled the load after it: a third of the run's samples at
//! 64 bytes). One fold and one byte swap at the end (RFC 1071's byte-order
//! independence). The pseudo-header is summed from the address bytes in
//! the same way, the 20-byte IPv4 header inline as five words. Without a
//! network header annotation, the headers are found by
//! `linerate_wire::l4::locate` (inlined): `L4Parser`'s header walk without
//! its flow hash and port reads, which the checksums do not use; its IP
//! end, protocol and fragment flag are used as they are (the annotated
//! path reads them from the IP header). Session 5 replaced an inline walk
//! of the common frames (IPv4 with a 20-byte header, IPv6 without
//! extension headers) that sat beside a fallback to the full parser by
//! this one call. One loop per batch, bad packets marked in a
//! stack bitmap, nothing allocated. `IMPL reference` uses `linerate_wire`'s
//! `verify_checksum` and `fill_checksum` of the IPv4, TCP and UDP views.
//!
//! Measured (session 4, `perf stat` on the bench's cases, the element's
//! instructions per packet over the replay-only base, `verify` / `set`):
//! at 1500 bytes 1,214 / 1,241 with the portable loop, 695 / 723 with
//! AVX2; at 64 bytes 362 / 389 before, 347 / 376 with the short-input and
//! locating changes. Session 5 (`l4::locate` instead of the inline walk
//! and the fallback to `parse`, same sitting): 349 / 379 → 314 / 342 at
//! 64 bytes, 697 / 725 → 667 / 696 at 1500. The rest of the 64-byte cost
//! is locating the headers, the pseudo-header and the batch split. `set`
//! mode also copies shared (zero-copy) packets before writing.
//!
//! ClickNP's optimisations: struct of arrays — not used: each packet is
//! checked or fixed where it lies; the only per-packet side data is the
//! stack bitmap of bad packets. SIMD — used: the one's-complement sum takes
//! 64 bytes a step with AVX2 (detected at run time) into four vectors of
//! 32-bit lanes, and elsewhere a portable loop of 32-byte steps that LLVM
//! compiles to SIMD widening adds. prefetch — not used: the sum reads each
//! packet's bytes in order, a stream the hardware prefetcher follows, and
//! nothing is looked up in a table. slow path — no separate one: a packet
//! without a network header annotation has its headers located by
//! `l4::locate` inline in the same loop, and bad packets are only marked
//! and split off once after it.

use crate::ip::util::partition;
use linerate_runtime::anno::offsets;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use linerate_wire::prelude::*;
use std::any::Any;

/// The `IPChecksum` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "IPChecksum",
    port_count: "1/1-2",
    processing: "a/ah",
    doc: element_doc!("parse/ipchecksum"),
    make,
};

const REASONS: [&str; 5] = [
    "unparsed",
    "bad_length",
    "bad_ip_checksum",
    "bad_tcp_checksum",
    "bad_udp_checksum",
];
const UNPARSED: u8 = 0;
const BAD_LENGTH: u8 = 1;
const BAD_IP: u8 = 2;
const BAD_TCP: u8 = 3;
const BAD_UDP: u8 = 4;

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::counter("count"),
    HandlerSpec::counter("drops"),
    HandlerSpec::counter("unparsed"),
    HandlerSpec::counter("bad_length"),
    HandlerSpec::counter("bad_ip_checksum"),
    HandlerSpec::counter("bad_tcp_checksum"),
    HandlerSpec::counter("bad_udp_checksum"),
];

/// The IPChecksum element (public for the differential tests).
pub struct IPChecksum {
    set: bool,
    fast: bool,
    has_out1: bool,
    count: u64,
    by_reason: [u64; 5],
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    IPChecksum::configure(ctx).map(|e| Box::new(e) as Box<dyn Element>)
}

/// Where the headers are: network header, IP end, and the transport
/// segment `(offset, end, proto)` when its checksum is covered.
#[derive(Debug, Clone, Copy)]
struct Loc {
    nh: usize,
    v4: bool,
    l4: Option<(usize, usize, u8)>,
}

#[inline(always)]
fn be16(d: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([d[at], d[at + 1]])
}

/// Finds the headers (shared by both implementations: the work is in the
/// sums): from the annotations when the network header is set, else with
/// `linerate_wire::l4::locate`. Errors are reasons.
#[inline(always)]
fn locate(p: &Packet) -> Result<Loc, u8> {
    let d = p.data();
    // Network header, IP version 4, IP end, protocol, transport header
    // (not before the end of the IP header), and whether it is a fragment.
    let (nh, v4, ip_end, proto, th, fragment) = match p.network_header_offset() {
        Some(o) if o >= 0 && (o as usize) < d.len() => {
            let nh = o as usize;
            let th = p
                .transport_header_offset()
                .and_then(|t| usize::try_from(t).ok());
            let proto = p.anno().u8(offsets::L4_PROTO);
            let ip = &d[nh..];
            let (v4, ip_end, hl, proto) = match ip[0] >> 4 {
                4 if ip.len() >= 20 => {
                    let hl = usize::from(ip[0] & 15) * 4;
                    let total = usize::from(be16(ip, 2));
                    if hl < 20 || total < hl || total > ip.len() {
                        return Err(BAD_LENGTH);
                    }
                    (true, nh + total, hl, if proto != 0 { proto } else { ip[9] })
                }
                6 if ip.len() >= 40 => {
                    let end = 40 + usize::from(be16(ip, 4));
                    if end > ip.len() {
                        return Err(BAD_LENGTH);
                    }
                    (false, nh + end, 40, if proto != 0 { proto } else { ip[6] })
                }
                _ => return Err(UNPARSED),
            };
            let fragment = if v4 {
                be16(ip, 6) & 0x3fff != 0
            } else {
                th.is_some_and(|t| t != nh + 40) && v6_fragment(ip, ip_end - nh)
            };
            let th = th.filter(|&t| t >= nh + hl);
            (nh, v4, ip_end, proto, th, fragment)
        }
        _ => {
            let l = linerate_wire::l4::locate(d).map_err(|_| UNPARSED)?;
            let fragment = l.fragment != linerate_wire::l4::Fragment::Whole;
            (
                l.network,
                l.version == 4,
                l.end,
                l.proto,
                l.transport,
                fragment,
            )
        }
    };
    let l4 = match th {
        Some(t) if !fragment && (proto == 6 || proto == 17) => {
            let min = if proto == 6 { 20 } else { 8 };
            if t + min > ip_end {
                return Err(BAD_LENGTH);
            }
            let end = if proto == 17 {
                let ulen = usize::from(be16(d, t + 4));
                if ulen < 8 || t + ulen > ip_end {
                    return Err(BAD_LENGTH);
                }
                t + ulen
            } else {
                ip_end
            };
            Some((t, end, proto))
        }
        _ => None,
    };
    Ok(Loc { nh, v4, l4 })
}

/// Whether an IPv6 packet `ip` (`len` bytes of it) has a Fragment header
/// (annotated packets with extension headers only).
#[cold]
fn v6_fragment(ip: &[u8], len: usize) -> bool {
    !matches!(
        linerate_wire::ipv6ext::walk(IpProtocol(ip[6]), &ip[40..len]),
        Ok(c) if c.fragment.is_none()
    )
}

/// One's-complement sum of `data` as big-endian 16-bit words, folded but
/// not inverted (see the Implementation section): AVX2 when the CPU has it
/// and `data` is at least 32 bytes, the portable loop otherwise (inlined:
/// at 64-byte packets the segments are shorter than that).
#[inline(always)]
pub fn sum_wide(data: &[u8]) -> u16 {
    #[cfg(target_arch = "x86_64")]
    if data.len() >= 32 && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return fold_ne(unsafe { avx2::sum_ne(data) });
    }
    sum_portable(data)
}

/// The portable form of [`sum_wide`] (the fallback; public for the tests
/// that compare it with the AVX2 loop).
#[inline]
pub fn sum_portable(data: &[u8]) -> u16 {
    fold_ne(sum_ne(data))
}

/// Sum of `data` as native-order 32-bit words (the last one zero-padded)
/// in a 64-bit accumulator: 32 bytes per step into four accumulators (a
/// 64-bit accumulator cannot overflow from 32-bit addends before 2^32 of
/// them), a shape LLVM turns into SIMD widening adds.
#[inline(always)]
fn sum_ne(data: &[u8]) -> u64 {
    let mut acc = [0u64; 4];
    let mut chunks = data.chunks_exact(32);
    for c in &mut chunks {
        for k in 0..4 {
            let lo = u32::from_ne_bytes([c[8 * k], c[8 * k + 1], c[8 * k + 2], c[8 * k + 3]]);
            let hi = u32::from_ne_bytes([c[8 * k + 4], c[8 * k + 5], c[8 * k + 6], c[8 * k + 7]]);
            acc[k] += u64::from(lo) + u64::from(hi);
        }
    }
    acc[0] + acc[1] + acc[2] + acc[3] + sum_ne_short(chunks.remainder())
}

/// [`sum_ne`] of fewer than 32 bytes (or any length): 32-bit words, then
/// the last 0-3 bytes read one by one (a padded copy would go through
/// `memcpy` and stall the load that follows it).
#[inline(always)]
fn sum_ne_short(data: &[u8]) -> u64 {
    let mut words = data.chunks_exact(4);
    let mut s = 0u64;
    for w in &mut words {
        s += u64::from(u32::from_ne_bytes([w[0], w[1], w[2], w[3]]));
    }
    let t = match *words.remainder() {
        [a, b, c] => u32::from_ne_bytes([a, b, c, 0]),
        [a, b] => u32::from_ne_bytes([a, b, 0, 0]),
        [a] => u32::from_ne_bytes([a, 0, 0, 0]),
        _ => 0,
    };
    s + u64::from(t)
}

/// Folds a sum of native-order words to 16 bits (end-around carries) and
/// puts it in network order (RFC 1071's byte-order independence).
#[inline(always)]
fn fold_ne(s: u64) -> u16 {
    let s = (s >> 32) + (s & 0xffff_ffff);
    let s = (s >> 32) + (s & 0xffff_ffff);
    let s = (s >> 16) + (s & 0xffff);
    let s = (s >> 16) + (s & 0xffff);
    let s = (s >> 16) + (s & 0xffff);
    u16::from_be(s as u16)
}

/// The AVX2 loop: 64 bytes per step, each 256-bit load split into its
/// low and high native 16-bit halves (an AND and a shift) added into
/// 32-bit lanes of four accumulators; one horizontal sum per call.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// Bytes per block, 65,536 steps: a 32-bit lane gains at most 0xffff
    /// per step, and 65,536 * 0xffff < 2^32 (one more 32-byte step only in
    /// a shorter last block).
    const BLOCK: usize = 64 * 65_536;

    /// [`super::sum_ne`] with AVX2 (equal modulo 0xffff, which is all the
    /// fold keeps).
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn sum_ne(data: &[u8]) -> u64 {
        let mask = _mm256_set1_epi32(0xffff);
        let mut total = 0u64;
        let mut rest: &[u8] = &[];
        for block in data.chunks(BLOCK) {
            let mut acc = [_mm256_setzero_si256(); 4];
            let mut steps = block.chunks_exact(64);
            for c in &mut steps {
                let p = c.as_ptr().cast::<__m256i>();
                // SAFETY: two 32-byte loads within the 64-byte chunk.
                let (v0, v1) = unsafe { (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1))) };
                acc[0] = _mm256_add_epi32(acc[0], _mm256_and_si256(v0, mask));
                acc[1] = _mm256_add_epi32(acc[1], _mm256_srli_epi32::<16>(v0));
                acc[2] = _mm256_add_epi32(acc[2], _mm256_and_si256(v1, mask));
                acc[3] = _mm256_add_epi32(acc[3], _mm256_srli_epi32::<16>(v1));
            }
            rest = steps.remainder();
            if rest.len() >= 32 {
                // SAFETY: one 32-byte load within `rest`.
                let v = unsafe { _mm256_loadu_si256(rest.as_ptr().cast()) };
                acc[0] = _mm256_add_epi32(acc[0], _mm256_and_si256(v, mask));
                acc[1] = _mm256_add_epi32(acc[1], _mm256_srli_epi32::<16>(v));
                rest = &rest[32..];
            }
            // Eight 32-bit lanes per 64-bit lane: no overflow.
            let mut q = _mm256_setzero_si256();
            for a in acc {
                q = _mm256_add_epi64(q, _mm256_cvtepu32_epi64(_mm256_castsi256_si128(a)));
                q = _mm256_add_epi64(q, _mm256_cvtepu32_epi64(_mm256_extracti128_si256::<1>(a)));
            }
            let mut lanes = [0u64; 4];
            // SAFETY: a 32-byte store into `lanes`.
            unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), q) };
            total += lanes.iter().sum::<u64>();
        }
        // Only the last block can leave a remainder (the others are whole
        // multiples of 64 bytes), and it starts at an even offset.
        total + super::sum_ne_short(rest)
    }
}

#[inline(always)]
fn fold32(mut s: u32) -> u16 {
    s = (s >> 16) + (s & 0xffff);
    s = (s >> 16) + (s & 0xffff);
    s as u16
}

/// Pseudo-header sum from the IP header at `ip` for `proto` and `len`.
#[inline(always)]
fn pseudo(ip: &[u8], v4: bool, proto: u8, len: usize) -> u32 {
    let addrs = if v4 { &ip[12..20] } else { &ip[8..40] };
    // Eight or 32 address bytes as big-endian 32-bit words, inline.
    let s: u64 = addrs
        .chunks_exact(4)
        .map(|w| u64::from(u32::from_be_bytes([w[0], w[1], w[2], w[3]])))
        .sum();
    let s = (s >> 32) + (s & 0xffff_ffff);
    u32::from(fold32(((s >> 16) + (s & 0xffff)) as u32))
        + (len as u32 >> 16)
        + (len as u32 & 0xffff)
        + u32::from(proto)
}

/// 20-byte IPv4 header sum, five words inline.
#[inline(always)]
fn ip20(h: &[u8]) -> u16 {
    let w = |i: usize| u64::from(u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]));
    let s = w(0) + w(4) + w(8) + w(12) + w(16);
    let s = (s >> 32) + (s & 0xffff_ffff);
    fold32(((s >> 16) + (s & 0xffff)) as u32)
}

impl IPChecksum {
    /// Configures from `MODE` and `IMPL`.
    pub fn configure(ctx: &ConfigureCtx<'_>) -> Result<IPChecksum, Vec<String>> {
        use linerate_args::Word;
        let mut a = linerate_args::Args::new(&ctx.args);
        let set = match a.read_p::<Word>("MODE") {
            None => false,
            Some(Word(w)) if w == "verify" => false,
            Some(Word(w)) if w == "set" => true,
            Some(Word(w)) => {
                a.error(format!("MODE: expected 'verify' or 'set', not '{w}'"));
                false
            }
        };
        let fast = super::read_impl(&mut a);
        a.complete().map_err(|e| e.0)?;
        Ok(IPChecksum {
            set,
            fast,
            has_out1: ctx.noutputs() > 1,
            count: 0,
            by_reason: [0; 5],
        })
    }

    /// The fast checksums of one packet.
    #[inline(always)]
    fn one_fast(set: bool, p: &mut Packet) -> Result<(), u8> {
        let loc = locate(p)?;
        let nh = loc.nh;
        if set {
            let d = p.data_mut();
            if loc.v4 {
                let hl = usize::from(d[nh] & 15) * 4;
                d[nh + 10..nh + 12].fill(0);
                let s = if hl == 20 {
                    ip20(&d[nh..nh + 20])
                } else {
                    sum_wide(&d[nh..nh + hl])
                };
                d[nh + 10..nh + 12].copy_from_slice(&(!s).to_be_bytes());
            }
            if let Some((t, end, proto)) = loc.l4 {
                let at = t + if proto == 6 { 16 } else { 6 };
                d[at..at + 2].fill(0);
                let s = pseudo(&d[nh..], loc.v4, proto, end - t) + u32::from(sum_wide(&d[t..end]));
                let mut c = !fold32(s);
                if proto == 17 && c == 0 {
                    c = 0xffff;
                }
                d[at..at + 2].copy_from_slice(&c.to_be_bytes());
            }
            return Ok(());
        }
        let d = p.data();
        if loc.v4 {
            let hl = usize::from(d[nh] & 15) * 4;
            let s = if hl == 20 {
                ip20(&d[nh..nh + 20])
            } else {
                sum_wide(&d[nh..nh + hl])
            };
            if s != 0xffff {
                return Err(BAD_IP);
            }
        }
        if let Some((t, end, proto)) = loc.l4 {
            if proto == 17 && loc.v4 && be16(d, t + 6) == 0 {
                return Ok(());
            }
            let s = pseudo(&d[nh..], loc.v4, proto, end - t) + u32::from(sum_wide(&d[t..end]));
            if fold32(s) != 0xffff {
                return Err(if proto == 6 { BAD_TCP } else { BAD_UDP });
            }
        }
        Ok(())
    }

    /// The reference checksums of one packet: `linerate_wire` views.
    fn one_reference(set: bool, p: &mut Packet) -> Result<(), u8> {
        let loc = locate(p)?;
        let nh = loc.nh;
        let pair = |d: &[u8]| {
            let ip = &d[nh..];
            if loc.v4 {
                let a = |i: usize| std::net::Ipv4Addr::new(ip[i], ip[i + 1], ip[i + 2], ip[i + 3]);
                IpPair::V4 {
                    src: a(12),
                    dst: a(16),
                }
            } else {
                let a = |i: usize| {
                    let mut b = [0u8; 16];
                    b.copy_from_slice(&ip[i..i + 16]);
                    std::net::Ipv6Addr::from(b)
                };
                IpPair::V6 {
                    src: a(8),
                    dst: a(24),
                }
            }
        };
        if set {
            let d = p.data_mut();
            let addrs = pair(d);
            if loc.v4 {
                Ipv4Packet::new_unchecked(&mut d[nh..]).fill_checksum();
            }
            match loc.l4 {
                Some((t, end, 6)) => TcpPacket::new_unchecked(&mut d[t..end]).fill_checksum(&addrs),
                Some((t, end, _)) => UdpPacket::new_unchecked(&mut d[t..end]).fill_checksum(&addrs),
                None => {}
            }
            return Ok(());
        }
        let d = p.data();
        let addrs = pair(d);
        if loc.v4 && !Ipv4Packet::new_unchecked(&d[nh..]).verify_checksum() {
            return Err(BAD_IP);
        }
        match loc.l4 {
            Some((t, end, 6)) if !TcpPacket::new_unchecked(&d[t..end]).verify_checksum(&addrs) => {
                Err(BAD_TCP)
            }
            Some((t, end, 17)) if !UdpPacket::new_unchecked(&d[t..end]).verify_checksum(&addrs) => {
                Err(BAD_UDP)
            }
            _ => Ok(()),
        }
    }

    /// Checks or sets every packet of `batch`; returns the passed packets
    /// and the rejected ones.
    pub fn process(&mut self, mut batch: Batch) -> (Batch, Option<Batch>) {
        let n = batch.len() as u64;
        let (set, fast, by_reason) = (self.set, self.fast, &mut self.by_reason);
        let bad = partition(&mut batch, |p| {
            let r = if fast {
                Self::one_fast(set, p)
            } else {
                Self::one_reference(set, p)
            };
            match r {
                Ok(()) => false,
                Err(r) => {
                    by_reason[usize::from(r)] += 1;
                    true
                }
            }
        });
        self.count += n - bad.as_ref().map_or(0, |b| b.len() as u64);
        (batch, bad)
    }

    /// Bad packets by reason (dropped, or sent to output 1).
    fn bad(&self) -> Vec<(&'static str, u64)> {
        linerate_runtime::element::named_counts(&REASONS, &self.by_reason)
    }
}

impl Element for IPChecksum {
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
            _ => REASONS
                .iter()
                .position(|r| *r == name)
                .map(|i| self.by_reason[i].to_string()),
        }
    }

    drops_or_output_1!(self, self.has_out1, self.bad());

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::{sum_portable, sum_wide};
    use proptest::prelude::*;

    #[test]
    fn sum_wide_matches_the_wire_sum() {
        let mut x: u32 = 99;
        for len in 0..300 {
            let data: Vec<u8> = (0..len + 3)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x as u8
                })
                .collect();
            for off in 0..3 {
                let s = &data[off..off + len];
                assert_eq!(sum_wide(s), linerate_wire::checksum::sum(s), "{len} {off}");
                assert_eq!(
                    sum_portable(s),
                    linerate_wire::checksum::sum(s),
                    "{len} {off}"
                );
            }
        }
        assert_eq!(sum_wide(&[0xff; 64]), 0xffff);
        assert_eq!(sum_wide(&[0; 64]), 0);
    }

    proptest! {
        /// The AVX2 loop (where the CPU has it) against the portable one,
        /// random lengths 0..2000 at random alignments.
        #[test]
        fn avx2_sum_matches_the_portable_sum(
            buf in proptest::collection::vec(any::<u8>(), 2064),
            len in 0usize..2000,
            off in 0usize..64,
            ones in any::<bool>(),
        ) {
            let mut buf = buf;
            if ones {
                // All-ones data: the largest lane values and a sum of 0xffff.
                buf.fill(0xff);
            }
            let s = &buf[off..off + len];
            let portable = sum_portable(s);
            prop_assert_eq!(portable, linerate_wire::checksum::sum(s));
            prop_assert_eq!(sum_wide(s), portable);
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2.
                let v = super::fold_ne(unsafe { super::avx2::sum_ne(s) });
                prop_assert_eq!(v, portable);
            }
        }
    }
}

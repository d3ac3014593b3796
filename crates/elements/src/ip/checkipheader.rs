//! Checks IP headers: length, version, header length, total length,
//! checksum and (optionally) source address.
//!
//! # Synopsis
//! `CheckIPHeader([OFFSET, KEYWORDS])`
//!
//! # Ports
//! One agnostic input; agnostic output 0 for valid packets, optional push
//! output 1 for invalid packets (dropped when output 1 is not connected).
//!
//! # Arguments
//! - `OFFSET` (unsigned, default 0): where the IP header starts.
//! - `CHECKSUM` (boolean, default true): check the header checksum.
//! - `BADSRC` (space-separated IP addresses, default empty): source
//!   addresses to reject (unless the destination is in `GOODDST`).
//! - `GOODDST` (space-separated IP addresses, default empty): destinations
//!   exempt from the `BADSRC` check.
//! - `INTERFACES` (space-separated address prefixes): this router's
//!   interfaces; `18.26.4.9/24` adds `18.26.4.255` to `BADSRC` and
//!   `18.26.4.9` to `GOODDST`, and `0.0.0.0` and `255.255.255.255` are added
//!   to `BADSRC`.
//! - `VERBOSE` (boolean, default false): report every bad packet, not just
//!   the first.
//! - `DETAILS` (boolean, default false): keep counts per reason
//!   (`drop_details`).
//!
//! Click's old syntax `CheckIPHeader(BADSRC2 [, OFFSET])` is accepted: the
//! addresses act as `BADSRC` plus `0.0.0.0` and `255.255.255.255`.
//!
//! Valid packets get their network and transport header annotations set,
//! are trimmed to the IP total length (Ethernet padding), and get the
//! `DST_IP` annotation. Drop reasons (Click's): `tiny packet`, `bad IP
//! version`, `bad IP header length`, `bad IP length`, `bad IP checksum`,
//! `bad source address`. The first bad packet is reported on standard error
//! as `NAME: IP header check failed: REASON`.
//!
//! # Handlers
//! - `drops` (read): invalid packets seen.
//! - `drop_details` (read, only with `DETAILS true`): one line per reason,
//!   `COUNT<tab>REASON`.
//!
//! # Example
//! ```click
//! FromDump(trace.pcap, STOP true) -> Strip(14) -> c :: CheckIPHeader
//!     -> Discard;
//! c[1] -> Discard;
//! ```
//!
//! # Implementation
//! One pass over the batch: each packet is checked in place and nothing is
//! allocated. Until the first bad packet (usually the whole batch) the loop
//! does nothing else; from there, bad packets are marked and split off
//! (order kept). The header checksum is summed as two 64-bit and one
//! 32-bit little-endian word with end-around carry and tested with one
//! multiply (a nonzero multiple of 0xffff; options are added out of line),
//! the source-address test runs out of line and only with `BADSRC`, and
//! `DST_IP` is written with one store. Measured (session 7) on the
//! 20M-frame trace, `FromDump -> Strip(14) -> CheckIPHeader -> Discard`:
//! 221 to 195 instructions per packet (CheckIPHeader alone about 108 to
//! 82), about 55 to 51 user cycles. Session 9: without `BADSRC` the
//! batch is first checked by a loop that takes only 20-byte headers and
//! so calls nothing out of line (the calls for options and `BADSRC` kept
//! its values in callee-saved registers and on the stack), in a function
//! of its own so that it has the registers to itself; it stops at the
//! first packet that is bad or has options, and the full check goes on
//! from there: 17.5 instructions a packet fewer in the issue 3 pipeline,
//! 20 in `... -> CheckIPHeader -> AggregateIPFlows`.

use super::util::set_ip_header;
use linerate_runtime::anno::offsets;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use std::any::Any;
use std::net::Ipv4Addr;

/// The `CheckIPHeader` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "CheckIPHeader",
    port_count: "1/1-2",
    processing: "a/ah",
    doc: element_doc!("ip/checkipheader"),
    make,
};

pub(crate) const REASONS: [&str; 6] = [
    "tiny packet",
    "bad IP version",
    "bad IP header length",
    "bad IP length",
    "bad IP checksum",
    "bad source address",
];

const TINY: u8 = 0;
const BAD_VERSION: u8 = 1;
const BAD_HLEN: u8 = 2;
const BAD_IP_LEN: u8 = 3;
const BAD_CHECKSUM: u8 = 4;
const BAD_SADDR: u8 = 5;
/// Not a reason: a header with options, left to the full check.
const NOT_PLAIN: u8 = u8::MAX;

pub(crate) struct CheckIPHeader {
    name: String,
    offset: usize,
    bad_src: Vec<u32>,
    good_dst: Vec<u32>,
    checksum: bool,
    verbose: bool,
    details: bool,
    has_out1: bool,
    drops: u64,
    reason_drops: [u64; 6],
    /// Which packets of a batch with bad ones are bad (kept for reuse).
    marked: Vec<bool>,
}

fn parse_addrs(s: &str) -> Result<Vec<u32>, String> {
    s.split_ascii_whitespace()
        .map(|w| {
            w.parse::<Ipv4Addr>()
                .map(u32::from)
                .map_err(|_| "expected list of IP addresses".to_string())
        })
        .collect()
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    make_common(ctx, true).map(|e| Box::new(e) as Box<dyn Element>)
}

/// Configures CheckIPHeader, or CheckIPHeader2 when `checksum_default` is
/// false (CheckIPHeader2 never checks checksums).
pub(crate) fn make_common(
    ctx: &ConfigureCtx<'_>,
    checksum_default: bool,
) -> Result<CheckIPHeader, Vec<String>> {
    use linerate_args::{Args, Ipv4Prefix, Raw};
    let mut a = Args::new(&ctx.args);
    let mut errs = Vec::new();
    let mut bad_src = Vec::new();
    let mut good_dst = Vec::new();
    if let Some(Raw(s)) = a.read::<Raw>("INTERFACES") {
        for w in s.split_ascii_whitespace() {
            match <Ipv4Prefix as linerate_args::ArgValue>::parse_arg(w).ok() {
                Some(p) => {
                    let mask = u32::from(p.mask());
                    bad_src.push((u32::from(p.addr) & mask) | !mask);
                    good_dst.push(u32::from(p.addr));
                }
                None => errs.push("INTERFACES: expected list of IP address prefixes".to_string()),
            }
        }
        bad_src.push(0);
        bad_src.push(u32::MAX);
    }
    if let Some(Raw(s)) = a.read::<Raw>("BADSRC") {
        match parse_addrs(&s) {
            Ok(v) => bad_src = v,
            Err(e) => errs.push(format!("BADSRC: {e}")),
        }
    }
    if let Some(Raw(s)) = a.read::<Raw>("GOODDST") {
        match parse_addrs(&s) {
            Ok(v) => good_dst = v,
            Err(e) => errs.push(format!("GOODDST: {e}")),
        }
    }
    let mut offset: usize = a.read_or("OFFSET", 0usize);
    let verbose = a.read_or("VERBOSE", false);
    let details = a.read_or("DETAILS", false);
    let checksum = a.read_or("CHECKSUM", checksum_default) && checksum_default;
    let rest = a.read_rest();
    a.complete().map_err(|e| e.0)?;
    match rest.len() {
        0 => {}
        1 if rest[0].parse::<usize>().is_ok() => offset = rest[0].parse().unwrap_or(0),
        1 | 2 => {
            // Old syntax: BADSRC2 [, OFFSET].
            match parse_addrs(&rest[0]) {
                Ok(mut v) => {
                    v.push(0);
                    v.push(u32::MAX);
                    bad_src = v;
                }
                Err(e) => errs.push(format!("BADSRC: {e}")),
            }
            if let Some(o) = rest.get(1) {
                match o.parse::<usize>() {
                    Ok(o) => offset = o,
                    Err(_) => errs.push("OFFSET: expected unsigned integer".to_string()),
                }
            }
        }
        _ => errs.push("too many arguments".to_string()),
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    Ok(CheckIPHeader {
        name: ctx.name.to_string(),
        offset,
        bad_src,
        good_dst,
        checksum,
        verbose,
        details,
        has_out1: ctx.noutputs() > 1,
        drops: 0,
        reason_drops: [0; 6],
        marked: Vec::new(),
    })
}

const HANDLERS: &[HandlerSpec] = &[HandlerSpec::counter("drops")];
const HANDLERS_DETAILS: &[HandlerSpec] = &[
    HandlerSpec::counter("drops"),
    HandlerSpec::read("drop_details"),
];

/// The sum of little-endian 32-bit words of IP options (at most 40
/// bytes, a multiple of 4: no overflow); out of line, as options are rare.
#[cold]
#[inline(never)]
fn options_sum(options: &[u8]) -> u64 {
    options
        .chunks_exact(4)
        .map(|w| u64::from(u32::from_le_bytes([w[0], w[1], w[2], w[3]])))
        .sum()
}

/// Whether an IPv4 header's checksum is right: its ones'-complement sum
/// of 16-bit words folds to 0xffff. `h` is its first 20 bytes, `options`
/// the rest. Summed instead as little-endian words with end-around carry
/// (a ones'-complement sum modulo 2^64 - 1, which 0xffff divides; byte
/// order only multiplies the sum by 256, a unit modulo 0xffff): the header
/// is right exactly when that sum is a nonzero multiple of 0xffff
/// (nonzero: version 4 makes the first byte nonzero, and such a sum is
/// never 0).
#[inline(always)]
fn header_sum_ok(h: &[u8; 20], options: &[u8]) -> bool {
    let a = u64::from_le_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]);
    let b = u64::from_le_bytes([h[8], h[9], h[10], h[11], h[12], h[13], h[14], h[15]]);
    let mut c = u64::from(u32::from_le_bytes([h[16], h[17], h[18], h[19]]));
    if !options.is_empty() {
        c += options_sum(options);
    }
    let (s, carry) = a.overflowing_add(b);
    let (s, carry2) = s.overflowing_add(c + u64::from(carry));
    let s = s.wrapping_add(u64::from(carry2));
    // `s % 0xffff == 0` as a multiply by the inverse of 0xffff modulo 2^64
    // (multiples of 0xffff map to at most (2^64 - 1) / 0xffff).
    s.wrapping_mul(0xfffe_fffe_fffe_ffff) <= u64::MAX / 0xffff && s != 0
}

impl CheckIPHeader {
    /// Checks one packet; on success sets its annotations and trims it.
    /// `PLAIN` (only without `BADSRC`): a header with options is not
    /// checked but reported as [`NOT_PLAIN`], so that the loop calls
    /// nothing out of line. A packet is changed only when it passes.
    #[inline(always)]
    fn check<const PLAIN: bool>(&self, p: &mut Packet) -> Result<(), u8> {
        let off = self.offset;
        let d = p.data();
        let plen = match d.len().checked_sub(off) {
            Some(l) if l >= 20 => l,
            _ => return Err(TINY),
        };
        let ip = &d[off..];
        let h: &[u8; 20] = ip[..20].try_into().map_err(|_| TINY)?;
        if h[0] >> 4 != 4 {
            return Err(BAD_VERSION);
        }
        let hlen = usize::from(h[0] & 15) << 2;
        if hlen < 20 {
            return Err(BAD_HLEN);
        }
        let len = usize::from(u16::from_be_bytes([h[2], h[3]]));
        if PLAIN && hlen != 20 {
            return Err(NOT_PLAIN);
        }
        if len > plen || len < hlen {
            return Err(BAD_IP_LEN);
        }
        if self.checksum && !header_sum_ok(h, &ip[20..hlen]) {
            return Err(BAD_CHECKSUM);
        }
        let dst = [h[16], h[17], h[18], h[19]];
        if !PLAIN && !self.bad_src.is_empty() && self.bad_source(h) {
            return Err(BAD_SADDR);
        }
        set_ip_header(p, off, hlen);
        if plen > len {
            p.take(plen - len);
        }
        // The address in network order: one store.
        p.anno_mut()
            .set_u32(offsets::DST_IP, u32::from_ne_bytes(dst));
        Ok(())
    }

    /// Checks packets with 20-byte headers (without `BADSRC`) up to the
    /// first that is bad or has options, and returns its index. Out of
    /// line, so that its loop has the registers to itself (inlined into
    /// `run`, it kept its index and the batch on the stack).
    #[inline(never)]
    fn plain_prefix(&self, batch: &mut Batch) -> Option<usize> {
        batch
            .iter_mut()
            .position(|p| self.check::<true>(p).is_err())
    }

    /// Click's `BADSRC`/`GOODDST` test (out of line: most configurations
    /// have no `BADSRC`).
    #[inline(never)]
    fn bad_source(&self, h: &[u8; 20]) -> bool {
        let src = u32::from_be_bytes([h[12], h[13], h[14], h[15]]);
        let dst = u32::from_be_bytes([h[16], h[17], h[18], h[19]]);
        self.bad_src.contains(&src) && !self.good_dst.contains(&dst)
    }

    #[cold]
    fn note_drop(&mut self, reason: u8) {
        if self.drops == 0 || self.verbose {
            super::util::chatter(&format!(
                "{}: IP header check failed: {}",
                self.name, REASONS[reason as usize]
            ));
        }
        self.drops += 1;
        self.reason_drops[reason as usize] += 1;
    }

    pub(crate) fn run(&mut self, mut batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        // Up to the first bad packet (usually the whole batch), a loop with
        // nothing else to do: without `BADSRC`, first one that calls nothing
        // out of line, up to the first packet that is bad or has options;
        // from there the full check.
        let this = &*self;
        let plain = if this.bad_src.is_empty() {
            match this.plain_prefix(&mut batch) {
                Some(i) => i,
                None => return batch,
            }
        } else {
            0
        };
        let Some((first, reason)) = batch
            .iter_mut()
            .enumerate()
            .skip(plain)
            .find_map(|(i, p)| this.check::<false>(p).err().map(|r| (i, r)))
        else {
            return batch;
        };
        self.note_drop(reason);
        let mut marked = std::mem::take(&mut self.marked);
        marked.clear();
        marked.resize(batch.len(), false);
        marked[first] = true;
        for (i, p) in batch.iter_mut().enumerate().skip(first + 1) {
            if let Err(r) = self.check::<false>(p) {
                self.note_drop(r);
                marked[i] = true;
            }
        }
        let out = batch.split_off_marked(&marked);
        self.marked = marked;
        self.emit_bad(out, ctx);
        batch
    }

    fn emit_bad(&mut self, out: Batch, ctx: &mut Ctx<'_>) {
        if self.has_out1 {
            ctx.push(1, out);
        }
    }

    pub(crate) fn handler_list(&self) -> &'static [HandlerSpec] {
        if self.details {
            HANDLERS_DETAILS
        } else {
            HANDLERS
        }
    }

    pub(crate) fn read(&self, name: &str) -> Option<String> {
        match name {
            "drops" => Some(self.drops.to_string()),
            "drop_details" if self.details => Some(details_text(&self.reason_drops, &REASONS)),
            _ => None,
        }
    }

    pub(crate) fn drop_list(&self) -> Vec<(&'static str, u64)> {
        linerate_runtime::element::named_counts(&REASONS, &self.reason_drops)
    }
}

/// Click's `drop_details` text: `COUNT<tab>REASON` lines.
pub(crate) fn details_text(counts: &[u64], reasons: &[&str]) -> String {
    let mut s = String::new();
    for (n, r) in counts.iter().zip(reasons) {
        s.push_str(&format!("{n}\t{r}\n"));
    }
    s
}

impl Element for CheckIPHeader {
    fn action(&mut self, batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        self.run(batch, ctx)
    }

    fn handlers(&self) -> &[HandlerSpec] {
        self.handler_list()
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        self.read(name)
    }

    drops_or_output_1!(self, self.has_out1, self.drop_list());

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn header_sum_ok_matches_the_folded_sum() {
        let mut h = [0u8; 20];
        let mut x: u32 = 2463534242;
        for round in 0..200_000 {
            for b in h.iter_mut() {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                *b = x as u8;
            }
            match round % 4 {
                // A right checksum, as a sender writes it.
                0 | 1 => {
                    h[10] = 0;
                    h[11] = 0;
                    let c = !linerate_wire::checksum::sum(&h);
                    h[10..12].copy_from_slice(&c.to_be_bytes());
                }
                2 if x & 15 == 0 => h = [[0x00; 20], [0xff; 20]][(x >> 4) as usize & 1],
                _ => {}
            }
            assert_eq!(
                super::header_sum_ok(&h, &[]),
                linerate_wire::checksum::sum(&h) == 0xffff,
                "{h:?}"
            );
            // The same bytes as a 20-byte header plus options.
            let mut long = [0u8; 60];
            let n = 20 + 4 * (round % 11);
            long[..20].copy_from_slice(&h);
            long[20..n].fill((x >> 8) as u8);
            let (head, opts) = long[..n].split_at(20);
            assert_eq!(
                super::header_sum_ok(head.try_into().unwrap(), opts),
                linerate_wire::checksum::sum(&long[..n]) == 0xffff,
                "{long:?}"
            );
        }
    }
}

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
//! One pass over the batch (`util::partition`, the check inlined into the
//! loop): the settings are read once per batch, the version, header length
//! and total length are tested with one branch in the common case (the
//! reason is worked out only for a bad packet), and a 20-byte header's
//! checksum is summed inline as five 32-bit words. Bad packets are marked
//! in a bitmap on the stack, and only when some are bad is the batch split
//! (order kept). Nothing is allocated.

use super::util::{be16, set_ip_header};
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
    })
}

const HANDLERS: &[HandlerSpec] = &[HandlerSpec::counter("drops")];
const HANDLERS_DETAILS: &[HandlerSpec] = &[
    HandlerSpec::counter("drops"),
    HandlerSpec::read("drop_details"),
];

/// Checks one packet; on success sets its annotations and trims it. The
/// arguments are the element's settings, read once per batch; `bad_src` is
/// `None` when there are no bad sources to test.
#[inline(always)]
fn check(
    p: &mut Packet,
    off: usize,
    checksum: bool,
    bad_src: Option<(&[u32], &[u32])>,
) -> Result<(), u8> {
    let d = p.data();
    let plen = match d.len().checked_sub(off) {
        Some(l) if l >= 20 => l,
        _ => return Err(TINY),
    };
    let ip = &d[off..];
    let h: &[u8; 20] = match ip[..20].try_into() {
        Ok(h) => h,
        Err(_) => return Err(TINY),
    };
    let hlen = usize::from(h[0] & 15) << 2;
    let len = usize::from(be16(h, 2));
    // Common case first: version 4, a header of 20 bytes or more and a
    // length that fits; the reasons are told apart only on failure.
    if h[0] >> 4 != 4 || hlen < 20 || len > plen || len < hlen {
        return Err(if h[0] >> 4 != 4 {
            BAD_VERSION
        } else if hlen < 20 {
            BAD_HLEN
        } else {
            BAD_IP_LEN
        });
    }
    if checksum {
        let sum = if hlen == 20 {
            super::util::ip_header_sum(h)
        } else {
            super::util::ip_header_sum(&ip[..hlen])
        };
        if sum != 0xffff {
            return Err(BAD_CHECKSUM);
        }
    }
    let dst = [h[16], h[17], h[18], h[19]];
    if let Some((bad, good)) = bad_src {
        let src = u32::from_be_bytes([h[12], h[13], h[14], h[15]]);
        if bad.contains(&src) && !good.contains(&u32::from_be_bytes(dst)) {
            return Err(BAD_SADDR);
        }
    }
    set_ip_header(p, off, hlen);
    if plen > len {
        p.take(plen - len);
    }
    p.anno_mut().user[..4].copy_from_slice(&dst);
    Ok(())
}

/// Click's message for the first (or, with `VERBOSE`, every) bad packet.
#[cold]
fn report(name: &str, reason: u8) {
    super::util::chatter(&format!(
        "{name}: IP header check failed: {}",
        REASONS[reason as usize]
    ));
}

impl CheckIPHeader {
    pub(crate) fn run(&mut self, mut batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        // Settings in locals, so the loop keeps them in registers; the
        // counters are separate fields the closure borrows on their own.
        let off = self.offset;
        let checksum = self.checksum;
        let bad_src = (!self.bad_src.is_empty()).then_some((&self.bad_src[..], &self.good_dst[..]));
        let (name, verbose) = (&self.name, self.verbose);
        let (drops, reason_drops) = (&mut self.drops, &mut self.reason_drops);
        let bad = super::util::partition(&mut batch, |p| match check(p, off, checksum, bad_src) {
            Ok(()) => false,
            Err(r) => {
                if *drops == 0 || verbose {
                    report(name, r);
                }
                *drops += 1;
                reason_drops[r as usize] += 1;
                true
            }
        });
        if let Some(out) = bad {
            self.emit_bad(out, ctx);
        }
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
        REASONS
            .iter()
            .zip(self.reason_drops)
            .filter(|(_, n)| *n > 0)
            .map(|(r, n)| (*r, n))
            .collect()
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

    fn drops(&self) -> Vec<(&'static str, u64)> {
        self.drop_list()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

//! Generates ICMP error messages (RFC 792, RFC 1812) about the packets it
//! receives.
//!
//! # Synopsis
//! `ICMPError(SRC, TYPE [, CODE, BADADDRS, KEYWORDS])`
//!
//! # Ports
//! One agnostic input, one agnostic output. Each input packet is consumed;
//! the error message about it, if one may be sent, goes to the output.
//!
//! # Arguments
//! - `SRC` (IP address, mandatory): source address of the errors.
//! - `TYPE` (ICMP type, number or Click name: `unreachable`,
//!   `sourcequench`, `redirect`, `timeexceeded`, `parameterproblem`;
//!   mandatory): must be an error type.
//! - `CODE` (ICMP code, number or Click name for the type, e.g. `port`,
//!   `needfrag`, `transit`, `reassembly`; default 0).
//! - `BADADDRS` (space-separated IP addresses): destination addresses (such
//!   as subnet broadcasts) never answered.
//! - `MTU` (unsigned, default 576): the largest error packet; the quoted
//!   datagram is cut to fit.
//! - `PMTU` (unsigned, default 0): next-hop MTU for `unreachable needfrag`.
//! - `SET_FIX_ANNO` (boolean, default true): set the `FIX_IP_SRC`
//!   annotation on generated packets.
//!
//! As Click (RFC 1812 4.3.2.7), no error is sent about ICMP errors,
//! packets to broadcast, multicast or `BADADDRS` destinations, packets from
//! invalid sources (net 0, 127, class D or E, broadcast), non-first
//! fragments, or (for redirects) source-routed packets; a source route is
//! reversed into the error. Packets without a network header annotation are
//! dropped. Errors carry TTL 200, an IP ID from a counter shared by all
//! ICMPError elements, the `DST_IP` annotation (the offending source) and
//! the current time. For `parameterproblem` code 0 the pointer comes from
//! the `ICMP_PARAMPROB` annotation; for `redirect` the gateway from
//! `DST_IP`. Unlike Click, the link-level packet type is not consulted
//! (linerate has no such annotation).
//!
//! # Handlers
//! - `src`, `mtu`, `pmtu` (read/write).
//!
//! # Example
//! ```click
//! ... -> dt :: DecIPTTL -> ...;
//! dt[1] -> ICMPError(18.26.4.24, timeexceeded) -> ...;
//! ```
//!
//! # Implementation
//! The error is built in a pool packet (no heap allocation) with
//! `linerate_wire` checksums.

use super::util::{be16, nh_offset, IP_OFFMASK};
use linerate_runtime::anno::offsets;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use linerate_wire::checksum;
use std::any::Any;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU16, Ordering};

/// The `ICMPError` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "ICMPError",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("ip/icmperror"),
    make,
};

static NEXT_ID: AtomicU16 = AtomicU16::new(1);

struct ICMPError {
    src: Ipv4Addr,
    ty: u8,
    code: u8,
    bad_addrs: Vec<u32>,
    mtu: u32,
    pmtu: u32,
    fix_anno: bool,
}

fn is_error_type(t: u8) -> bool {
    matches!(t, 3 | 4 | 5 | 11 | 12)
}

fn parse_type(s: &str) -> Option<u32> {
    s.parse::<u32>().ok().or_else(|| {
        (0..=255u8)
            .find(|&t| super::ipprint::icmp_type_name(t) == Some(s))
            .map(u32::from)
    })
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    use linerate_args::{Args, Raw, Word};
    let mut a = Args::new(&ctx.args);
    let src: Option<Ipv4Addr> = a.read_mp("SRC");
    let ty: Option<Word> = a.read_mp("TYPE");
    let code: Word = a.read_p_or("CODE", Word("0".into()));
    let bad: Option<Raw> = a.read_p("BADADDRS");
    let mtu = a.read_or("MTU", 576u32);
    let pmtu = a.read_or("PMTU", 0u32);
    let fix_anno = a.read_or("SET_FIX_ANNO", true);
    a.complete().map_err(|e| e.0)?;
    let ty = match ty.as_ref().and_then(|t| parse_type(&t.0)) {
        Some(t) if t > 255 => return Err(vec!["ICMP type must be between 0 and 255".into()]),
        Some(t) if !is_error_type(t as u8) => {
            return Err(vec![format!("ICMP type {t} is not an error type")])
        }
        Some(t) => t as u8,
        None => return Err(vec!["TYPE: expected ICMP type".into()]),
    };
    let code = match code.0.parse::<u32>().ok().or_else(|| {
        (0..=255u8)
            .find(|&c| super::ipprint::icmp_code_name(ty, c) == Some(code.0.as_str()))
            .map(u32::from)
    }) {
        Some(c) if c <= 255 => c as u8,
        _ => {
            return Err(vec![
                "argument 2 takes ICMP code (integer between 0 and 255)".into(),
            ])
        }
    };
    let mut bad_addrs = Vec::new();
    for w in bad
        .map(|r| r.0)
        .unwrap_or_default()
        .split_ascii_whitespace()
    {
        match w.parse::<Ipv4Addr>() {
            Ok(x) => bad_addrs.push(u32::from(x)),
            Err(_) => return Err(vec!["BADADDRS: expected list of IP addresses".into()]),
        }
    }
    Ok(Box::new(ICMPError {
        src: src.unwrap_or(Ipv4Addr::UNSPECIFIED),
        ty,
        code,
        bad_addrs,
        mtu,
        pmtu,
        fix_anno,
    }))
}

impl ICMPError {
    fn unicast(&self, a: u32) -> bool {
        a != u32::MAX && a & 0xf000_0000 != 0xe000_0000 && !self.bad_addrs.contains(&a)
    }

    fn valid_source(&self, a: u32) -> bool {
        let net = a >> 24;
        self.unicast(a) && net != 0 && net != 127 && net & 0xf0 != 0xf0
    }

    /// Offset within the header of a usable source-route option, if any.
    fn source_route(ip: &[u8], hlen: usize) -> Option<usize> {
        let mut i = 20;
        while i < hlen {
            match ip[i] {
                1 => i += 1,
                0 => return None,
                t => {
                    let xlen = usize::from(*ip.get(i + 1)?);
                    if xlen < 2 || i + xlen > hlen {
                        return None;
                    }
                    let ptr = usize::from(*ip.get(i + 2).unwrap_or(&0));
                    if (t == 131 || t == 137)
                        && xlen >= 3
                        && ptr >= 4
                        && ptr % 4 == 0
                        && ptr <= xlen + 1
                    {
                        return Some(i);
                    }
                    i += xlen;
                }
            }
        }
        None
    }

    fn error_for(&self, p: &Packet, now: u64) -> Option<Packet> {
        let nh = nh_offset(p)?;
        let ip = &p.data()[nh..];
        if ip.len() < 20 {
            return None;
        }
        let hlen = usize::from(ip[0] & 15) << 2;
        if ip[9] == 1 {
            // Never answer ICMP errors (or ICMP too short to tell).
            match ip.get(hlen) {
                Some(&t) if hlen + 4 <= ip.len() && !is_error_type(t) => {}
                _ => return None,
            }
        }
        let src = u32::from_be_bytes([ip[12], ip[13], ip[14], ip[15]]);
        let dst = u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]);
        if !self.unicast(dst) || !self.valid_source(src) || be16(ip, 6) & IP_OFFMASK != 0 {
            return None;
        }
        let pp = usize::from(p.anno().u8(offsets::ICMP_PARAMPROB));
        let mut sr = Self::source_route(ip, hlen.min(ip.len()));
        if let Some(o) = sr {
            if self.ty == 5 {
                return None;
            }
            if self.ty == 12 && self.code == 0 && o <= pp && pp < o + usize::from(ip[o + 1]) {
                sr = None;
            }
        }
        // Build the reply header (with a reversed source route).
        let mut hdr = [0u8; 60];
        let mut out_hlen = 20;
        if let Some(o) = sr {
            let ptr = usize::from(ip[o + 2]);
            let olen = ptr - 1;
            let opt = &mut hdr[20..];
            opt[0] = ip[o];
            opt[1] = olen as u8;
            opt[2] = 4;
            let mut w = 3;
            // Hops recorded so far, most recent first.
            let mut r = o as isize + ptr as isize - 5;
            while r >= o as isize + 3 && w + 4 <= 40 {
                let r0 = r as usize;
                opt[w..w + 4].copy_from_slice(&ip[r0..r0 + 4]);
                w += 4;
                r -= 4;
            }
            if olen < 40 {
                opt[olen] = 0;
            }
            out_hlen = (20 + olen + 3) & !3;
        }
        let mtu = self.mtu as usize;
        if mtu < out_hlen + 8 {
            return None;
        }
        let xlen = (mtu - out_hlen - 8).min(ip.len());
        let total = out_hlen + 8 + xlen;
        let mut q = Packet::new(total);
        let d = q.data_mut();
        d[..out_hlen].copy_from_slice(&hdr[..out_hlen]);
        d[0] = 0x40 | (out_hlen / 4) as u8;
        d[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        d[4..6].copy_from_slice(&NEXT_ID.fetch_add(1, Ordering::Relaxed).to_be_bytes());
        d[8] = 200;
        d[9] = 1;
        d[12..16].copy_from_slice(&self.src.octets());
        d[16..20].copy_from_slice(&ip[12..16]);
        let c = checksum::compute(&d[..out_hlen]);
        d[10..12].copy_from_slice(&c.to_be_bytes());
        let icmp = &mut d[out_hlen..];
        icmp[0] = self.ty;
        icmp[1] = self.code;
        if self.ty == 12 && self.code == 0 {
            icmp[4] = pp as u8;
        }
        if self.ty == 5 {
            icmp[4..8].copy_from_slice(&p.anno().user[..4]);
        }
        if self.ty == 3 && self.code == 4 {
            icmp[6..8].copy_from_slice(&(self.pmtu as u16).to_be_bytes());
        }
        icmp[8..8 + xlen].copy_from_slice(&ip[..xlen]);
        let c = checksum::compute(icmp);
        icmp[2..4].copy_from_slice(&c.to_be_bytes());
        q.set_network_header(0);
        q.set_transport_header(out_hlen as isize);
        let a = q.anno_mut();
        a.user[..4].copy_from_slice(&ip[12..16]);
        if self.fix_anno {
            a.set_u8(offsets::FIX_IP_SRC, 1);
        }
        q.set_timestamp_ns(now);
        Some(q)
    }
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::read_write("src"),
    HandlerSpec::read_write("mtu"),
    HandlerSpec::read_write("pmtu"),
];

impl Element for ICMPError {
    fn action(&mut self, batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        let now = ctx.now_ns();
        let mut out = Batch::new();
        for p in batch.iter() {
            if let Some(q) = self.error_for(p, now) {
                out.push(q);
            }
        }
        out
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "src" => self.src.to_string(),
            "mtu" => self.mtu.to_string(),
            "pmtu" => self.pmtu.to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "src" => crate::parse_value::<Ipv4Addr>(value).map(|v| self.src = v),
            "mtu" => crate::parse_value::<u32>(value).map(|v| self.mtu = v),
            "pmtu" => crate::parse_value::<u32>(value).map(|v| self.pmtu = v),
            _ => return None,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

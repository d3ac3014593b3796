//! Fragments IP packets larger than an MTU.
//!
//! # Synopsis
//! `IPFragmenter(MTU [, HONOR_DF, VERBOSE, KEYWORDS])`
//!
//! # Ports
//! One push input; push output 0 for packets that fit and for fragments;
//! optional push output 1 for packets that need fragmenting but have the
//! Don't Fragment flag set (dropped when output 1 is not connected).
//!
//! # Arguments
//! - `MTU` (unsigned, at least 8, mandatory): the largest IP packet, header
//!   included.
//! - `HONOR_DF` (boolean, default true): if false, fragment packets with
//!   DF set anyway (clearing DF and giving them a new random IP ID).
//! - `VERBOSE` (boolean, default false): report every DF packet; otherwise
//!   the first five are reported, as in Click.
//! - `HEADROOM` (unsigned): accepted for compatibility; fragments get the
//!   pool's standard headroom.
//!
//! Expects packets with an IP network header annotation (length measured
//! from it). The first fragment is the original packet cut short (bytes in
//! front of the IP header kept); later fragments start at their IP header
//! and carry only the options whose copy flag is set. Fragment payloads are
//! multiples of 8 bytes except the last; MF is set on all but the last
//! (and on the last when the original had it); every header checksum is
//! recomputed. Packets too big for an MTU that leaves less than 8 bytes of
//! payload also go to output 1. Reports look like
//! `IPFragmenter(576) DF 10.0.0.1 10.0.0.2 len=1500`.
//!
//! # Handlers
//! - `drops` (read): packets sent to output 1.
//! - `fragments` (read): fragments emitted.
//!
//! # Example
//! ```click
//! ... -> frag :: IPFragmenter(1500) -> ...;
//! frag[1] -> ICMPError(18.26.4.24, unreachable, needfrag, PMTU 1500) -> ...;
//! ```
//!
//! # Implementation
//! Fragments come from the packet pool and are emitted in offset order in
//! one batch; packets that fit pass through untouched.

use super::util::{be16, nh_offset, IP_DF, IP_MF};
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use linerate_wire::checksum;
use std::any::Any;

/// The `IPFragmenter` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "IPFragmenter",
    port_count: "1/1-2",
    processing: "h/h",
    doc: element_doc!("ip/ipfragmenter"),
    make,
};

struct IPFragmenter {
    mtu: usize,
    honor_df: bool,
    verbose: bool,
    has_out1: bool,
    drops: u64,
    fragments: u64,
    rng: u32,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let mtu: Option<u32> = a.read_mp("MTU");
    let honor_df = a.read_p_or("HONOR_DF", true);
    let verbose = a.read_p_or("VERBOSE", false);
    let _headroom: Option<u32> = a.read("HEADROOM");
    a.complete().map_err(|e| e.0)?;
    let mtu = mtu.unwrap_or(0) as usize;
    if mtu < 8 {
        return Err(vec!["MTU must be at least 8".into()]);
    }
    Ok(Box::new(IPFragmenter {
        mtu,
        honor_df,
        verbose,
        has_out1: ctx.noutputs() > 1,
        drops: 0,
        fragments: 0,
        rng: 0x9e37_79b9,
    }))
}

/// Copies the options of `opts` whose copy flag is set into `out`, padded
/// with EOL to a multiple of 4; returns the length written.
fn optcopy(opts: &[u8], out: &mut [u8; 40]) -> usize {
    let mut i = 0;
    let mut n = 0;
    while i < opts.len() {
        let opt = opts[i];
        let optlen = if opt == 1 {
            1
        } else if opt == 0 || i + 1 >= opts.len() {
            break;
        } else {
            usize::from(opts[i + 1])
        };
        if optlen == 0 || i + optlen > opts.len() {
            break;
        }
        if opt & 0x80 != 0 {
            out[n..n + optlen].copy_from_slice(&opts[i..i + optlen]);
            n += optlen;
        }
        i += optlen;
    }
    while n & 3 != 0 {
        out[n] = 0;
        n += 1;
    }
    n
}

impl IPFragmenter {
    fn fragment(&mut self, mut p: Packet, out: &mut Batch, bad: &mut Batch) {
        let Some(nh) = nh_offset(&p) else {
            self.drops += 1;
            bad.push(p);
            return;
        };
        let ip = &p.data()[nh..];
        if ip.len() < 20 {
            self.drops += 1;
            bad.push(p);
            return;
        }
        let hlen = (usize::from(ip[0] & 15) << 2).clamp(20, ip.len());
        let first_dlen = self.mtu.saturating_sub(hlen) & !7;
        let in_dlen = usize::from(be16(ip, 2))
            .saturating_sub(hlen)
            .min(ip.len() - hlen);
        let df = be16(ip, 6) & IP_DF != 0;
        if (df && self.honor_df) || first_dlen < 8 {
            if self.verbose || self.drops < 5 {
                super::util::chatter(&format!(
                    "IPFragmenter({}) DF {}.{}.{}.{} {}.{}.{}.{} len={}",
                    self.mtu,
                    ip[12],
                    ip[13],
                    ip[14],
                    ip[15],
                    ip[16],
                    ip[17],
                    ip[18],
                    ip[19],
                    p.len()
                ));
            }
            self.drops += 1;
            bad.push(p);
            return;
        }
        let anno = *p.anno();
        let d = p.data_mut();
        let ip = &mut d[nh..];
        if df {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 17;
            self.rng ^= self.rng << 5;
            ip[4..6].copy_from_slice(&(self.rng as u16).to_be_bytes());
            ip[6] &= !0x40;
        }
        let had_mf = be16(ip, 6) & IP_MF != 0;
        let off0 = be16(ip, 6) | IP_MF;
        ip[2..4].copy_from_slice(&((hlen + first_dlen) as u16).to_be_bytes());
        ip[6..8].copy_from_slice(&off0.to_be_bytes());
        ip[10] = 0;
        ip[11] = 0;
        let c = checksum::compute(&ip[..hlen]);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        // Later fragments' header: the fixed part and copied options.
        let mut hdr = [0u8; 60];
        hdr[..20].copy_from_slice(&ip[..20]);
        let mut opts = [0u8; 40];
        let olen = optcopy(&ip[20..hlen], &mut opts);
        hdr[20..20 + olen].copy_from_slice(&opts[..olen]);
        let out_hlen = 20 + olen;
        let payload_at = nh + hlen;
        let mut rest = Batch::new();
        let mut off = first_dlen;
        while off < in_dlen {
            let mut dlen = self.mtu.saturating_sub(out_hlen) & !7;
            if dlen == 0 {
                break;
            }
            if off + dlen > in_dlen {
                dlen = in_dlen - off;
            }
            let mut q = Packet::new(out_hlen + dlen);
            let qd = q.data_mut();
            qd[..out_hlen].copy_from_slice(&hdr[..out_hlen]);
            qd[0] = 0x40 | (out_hlen / 4) as u8;
            let mut qoff = off0.wrapping_add((off >> 3) as u16);
            if off + dlen >= in_dlen && !had_mf {
                qoff &= !IP_MF;
            }
            qd[6..8].copy_from_slice(&qoff.to_be_bytes());
            qd[2..4].copy_from_slice(&((out_hlen + dlen) as u16).to_be_bytes());
            qd[10] = 0;
            qd[11] = 0;
            let c = checksum::compute(&qd[..out_hlen]);
            qd[10..12].copy_from_slice(&c.to_be_bytes());
            qd[out_hlen..].copy_from_slice(&d[payload_at + off..payload_at + off + dlen]);
            *q.anno_mut() = anno;
            q.set_network_header(0);
            q.set_transport_header(out_hlen as isize);
            rest.push(q);
            off += dlen;
        }
        let extra = p.len() - (nh + hlen + first_dlen);
        p.take(extra);
        out.push(p);
        self.fragments += 1 + rest.len() as u64;
        out.append(rest);
    }
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::counter("drops"),
    HandlerSpec::counter("fragments"),
];

impl Element for IPFragmenter {
    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        let mut out = Batch::new();
        let mut bad = Batch::new();
        for p in batch {
            let fits = match p.network_header_offset() {
                Some(o) => (p.len() as isize - o) <= self.mtu as isize,
                None => true,
            };
            if fits {
                out.push(p);
            } else {
                self.fragment(p, &mut out, &mut bad);
            }
        }
        ctx.push(0, out);
        if self.has_out1 {
            ctx.push(1, bad);
        }
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "drops" => self.drops.to_string(),
            "fragments" => self.fragments.to_string(),
            _ => return None,
        })
    }

    drops_or_output_1!(
        self,
        self.has_out1,
        vec![("DF set or MTU too small", self.drops)]
    );

    fn as_any(&self) -> &dyn Any {
        self
    }
}

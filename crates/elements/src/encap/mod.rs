//! Tunnel encapsulation and decapsulation: NVGRE, VXLAN and GTP-U.
//!
//! The six elements share one engine (this module): an encapsulator that
//! writes a precomputed outer header template and patches the per-packet
//! fields, and a decapsulator that checks the outer headers with fixed
//! offsets; each has a reference implementation built from
//! `linerate_wire`'s views and `Repr::emit`.

pub mod gtpudecap;
pub mod gtpuencap;
pub mod nvgredecap;
pub mod nvgreencap;
pub mod vxlandecap;
pub mod vxlanencap;

use linerate_args::{Args, EtherAddr};
use linerate_runtime::anno::{offsets, NO_HEADER};
use linerate_runtime::ElementClass;
use linerate_runtime::{Batch, ConfigureCtx, HandlerSpec, Packet};
use linerate_wire::prelude::*;
use linerate_wire::{gre, gtpu, vxlan};
use std::net::IpAddr;

/// The classes in this category.
pub const CLASSES: &[ElementClass] = &[
    gtpudecap::CLASS,
    gtpuencap::CLASS,
    nvgredecap::CLASS,
    nvgreencap::CLASS,
    vxlandecap::CLASS,
    vxlanencap::CLASS,
];

/// The tunnel protocol an element speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tunnel {
    Nvgre,
    Vxlan,
    Gtpu,
}

impl Tunnel {
    /// Bytes of tunnel header after the outer IP header.
    fn tunnel_len(self) -> usize {
        match self {
            Tunnel::Nvgre => gre::NVGRE_LEN,
            Tunnel::Vxlan => 8 + vxlan::HEADER_LEN,
            Tunnel::Gtpu => 8 + gtpu::HEADER_LEN,
        }
    }

    /// Name of the identifier keyword.
    fn id_name(self) -> &'static str {
        match self {
            Tunnel::Nvgre => "VSID",
            Tunnel::Vxlan => "VNI",
            Tunnel::Gtpu => "TEID",
        }
    }

    fn id_max(self) -> u32 {
        match self {
            Tunnel::Nvgre | Tunnel::Vxlan => 0x00ff_ffff,
            Tunnel::Gtpu => u32::MAX,
        }
    }

    fn default_port(self) -> u16 {
        match self {
            Tunnel::Vxlan => vxlan::UDP_PORT,
            _ => gtpu::UDP_PORT,
        }
    }
}

/// A UDP source port from a flow hash: the dynamic range 49152-65535, as
/// RFC 7348 section 5 recommends.
#[inline(always)]
pub(crate) fn entropy_port(hash: u32) -> u16 {
    0xc000 | (hash as u16 & 0x3fff)
}

/// The flow hash annotation, or, when it is 0 (no parser ran), the hash
/// `linerate_wire::l4::parse` computes for the inner frame (1 for
/// non-IP frames).
#[inline(always)]
fn flow_hash_of(p: &Packet) -> u32 {
    match p.anno().flow_hash {
        0 => linerate_wire::l4::parse(p.data()).map_or(1, |r| r.hash),
        h => h,
    }
}

/// Drop counters and the handlers over them.
pub(crate) struct Counts {
    pub reasons: &'static [&'static str],
    pub count: u64,
    pub by_reason: [u64; 8],
}

impl Counts {
    fn new(reasons: &'static [&'static str]) -> Counts {
        Counts {
            reasons,
            count: 0,
            by_reason: [0; 8],
        }
    }

    pub(crate) fn read(&self, name: &str) -> Option<String> {
        match name {
            "count" => Some(self.count.to_string()),
            "drops" => Some(self.by_reason.iter().sum::<u64>().to_string()),
            _ => self
                .reasons
                .iter()
                .position(|r| *r == name)
                .map(|i| self.by_reason[i].to_string()),
        }
    }

    pub(crate) fn drops(&self) -> Vec<(&'static str, u64)> {
        linerate_runtime::element::named_counts(self.reasons, &self.by_reason)
    }
}

/// Runs `f` over a batch (at most 256 packets use a stack bitmap), counts
/// failures by reason, and splits off the failed packets (order kept).
#[inline(always)]
fn run_batch(
    batch: &mut Batch,
    counts: &mut Counts,
    mut f: impl FnMut(&mut Packet) -> Result<(), u8>,
) -> Option<Batch> {
    let n = batch.len() as u64;
    let by_reason = &mut counts.by_reason;
    let bad = crate::ip::util::partition(batch, |p| match f(p) {
        Ok(()) => false,
        Err(r) => {
            by_reason[usize::from(r)] += 1;
            true
        }
    });
    counts.count += n - bad.as_ref().map_or(0, |b| b.len() as u64);
    bad
}

// ---------------------------------------------------------------- encap

pub(crate) const ENCAP_REASONS: &[&str] = &["not_ip", "too_long"];
const ENC_NOT_IP: u8 = 0;
const ENC_TOO_LONG: u8 = 1;

pub(crate) const ENCAP_HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::counter("count"),
    HandlerSpec::counter("drops"),
    HandlerSpec::counter("not_ip"),
    HandlerSpec::counter("too_long"),
];

/// An encapsulator's configuration and state.
pub(crate) struct Encap {
    fast: bool,
    pub has_out1: bool,
    src: IpAddr,
    dst: IpAddr,
    eth_src: [u8; 6],
    eth_dst: [u8; 6],
    ttl: u8,
    dscp: u8,
    id: u32,
    dport: u16,
    /// The tunnel, the outer family's header length and the template.
    outer: Outer,
    /// Header bytes pushed in front of the payload.
    hlen: usize,
    /// Next IPv4 identification.
    ident: u16,
    pub counts: Counts,
}

fn ip_arg(a: &mut Args, kw: &str) -> Option<IpAddr> {
    let s: String = a.read_mp(kw)?;
    match s.parse::<IpAddr>() {
        Ok(ip) => Some(ip),
        Err(_) => {
            a.error(format!("{kw}: expected IP or IPv6 address"));
            None
        }
    }
}

impl Encap {
    /// Reads `SRC, DST, ID [, ETH_SRC, ETH_DST, TTL, DSCP, DPORT, IMPL]`.
    pub(crate) fn configure(ctx: &ConfigureCtx<'_>, tunnel: Tunnel) -> Result<Encap, Vec<String>> {
        let mut a = Args::new(&ctx.args);
        let src = ip_arg(&mut a, "SRC");
        let dst = ip_arg(&mut a, "DST");
        let id: Option<u32> = a.read_mp(tunnel.id_name());
        let eth_src = a.read_or("ETH_SRC", EtherAddr([0; 6])).0;
        let eth_dst = a.read_or("ETH_DST", EtherAddr([0; 6])).0;
        let ttl = a.read_or("TTL", 64u8);
        let dscp = a.read_or("DSCP", 0u8);
        let dport = if tunnel == Tunnel::Nvgre {
            0
        } else {
            a.read_or("DPORT", tunnel.default_port())
        };
        let fast = crate::parse::read_impl(&mut a);
        if id.is_some_and(|i| i > tunnel.id_max()) {
            a.error(format!("{}: out of range", tunnel.id_name()));
        }
        if dscp > 63 {
            a.error("DSCP: out of range");
        }
        if let (Some(s), Some(d)) = (src, dst) {
            if s.is_ipv4() != d.is_ipv4() {
                a.error("SRC and DST must both be IPv4 or both IPv6");
            }
        }
        a.complete().map_err(|e| e.0)?;
        let (Some(src), Some(dst), Some(id)) = (src, dst, id) else {
            return Err(vec!["missing arguments".into()]);
        };
        let iplen = if src.is_ipv4() { 20 } else { 40 };
        let mut e = Encap {
            fast,
            has_out1: ctx.noutputs() > 1,
            src,
            dst,
            eth_src,
            eth_dst,
            ttl,
            dscp,
            id,
            dport,
            outer: Outer {
                template: [0; 80],
                ip_sum: 0,
                udp_sum: 0,
                tunnel,
                iplen,
            },
            hlen: 14 + iplen + tunnel.tunnel_len(),
            ident: 0,
            counts: Counts::new(ENCAP_REASONS),
        };
        // The template is what the reference writes for an empty payload
        // with ident 0 and source port 0, with the length fields, the
        // checksums and the NVGRE FlowID then cleared.
        let mut t = [0u8; 80];
        e.emit_headers(&mut t[..e.hlen], 0, 0, 0, 0);
        let ip = 14;
        if iplen == 20 {
            t[ip + 2..ip + 4].fill(0);
            t[ip + 10..ip + 12].fill(0);
            e.outer.ip_sum = ones_sum(&t[ip..ip + 20]);
        } else {
            t[ip + 4..ip + 6].fill(0);
        }
        let l4 = ip + iplen;
        match tunnel {
            Tunnel::Nvgre => t[l4 + 7] = 0,
            _ => {
                t[l4 + 4..l4 + 8].fill(0);
                if tunnel == Tunnel::Gtpu {
                    t[l4 + 10..l4 + 12].fill(0);
                }
            }
        }
        if iplen == 40 && tunnel != Tunnel::Nvgre {
            let fixed = ones_add(ones_sum(&t[22..54]), ones_sum(&t[l4..e.hlen]));
            e.outer.udp_sum = ones_add(fixed, 17u16.to_be());
        }
        e.outer.template = t;
        Ok(e)
    }

    /// GTP-U carries IP packets: the inner frame's Ethernet header is
    /// replaced and link padding after the IP packet dropped. Returns the
    /// bytes to strip in front and the bytes to keep after them.
    #[inline(always)]
    fn inner_range(tunnel: Tunnel, p: &Packet) -> Result<(usize, usize), u8> {
        let d = p.data();
        if tunnel != Tunnel::Gtpu {
            return Ok((0, d.len()));
        }
        let ip_len = match (d.get(12..14), d.get(14..20)) {
            (Some([0x08, 0x00]), Some(h)) if h[0] >> 4 == 4 => usize::from(be16(h, 2)),
            (Some([0x86, 0xdd]), Some(h)) if h[0] >> 4 == 6 => 40 + usize::from(be16(h, 4)),
            _ => return Err(ENC_NOT_IP),
        };
        if ip_len < 20 || 14 + ip_len > d.len() {
            return Err(ENC_NOT_IP);
        }
        Ok((14, ip_len))
    }

    /// Writes the outer headers into `h` (exactly `hlen` bytes) with
    /// `linerate_wire`'s `Repr::emit`, for `payload_len` encapsulated bytes
    /// (the UDP checksum stays 0).
    fn emit_headers(&self, h: &mut [u8], payload_len: usize, ident: u16, sport: u16, flow: u8) {
        let t = self.outer.tunnel;
        let (proto, et) = match (t, self.src) {
            (Tunnel::Nvgre, IpAddr::V4(_)) => (IpProtocol::GRE, EtherType::IPV4),
            (Tunnel::Nvgre, IpAddr::V6(_)) => (IpProtocol::GRE, EtherType::IPV6),
            (_, IpAddr::V4(_)) => (IpProtocol::UDP, EtherType::IPV4),
            (_, IpAddr::V6(_)) => (IpProtocol::UDP, EtherType::IPV6),
        };
        let tl = t.tunnel_len();
        let ip_payload = tl + payload_len;
        let eth = EthernetRepr {
            src_addr: EthernetAddress(self.eth_src),
            dst_addr: EthernetAddress(self.eth_dst),
            ethertype: et,
        };
        let _ = eth.emit(&mut EthernetPacket::new_unchecked(&mut h[..]));
        let ip = &mut h[14..];
        match (self.src, self.dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                let r = Ipv4Repr {
                    src_addr: s,
                    dst_addr: d,
                    protocol: proto,
                    payload_len: ip_payload,
                    ttl: self.ttl,
                    dscp: self.dscp,
                    ecn: 0,
                    ident,
                    dont_frag: false,
                    more_frags: false,
                    frag_offset: 0,
                    options: &[],
                };
                let _ = r.emit(&mut Ipv4Packet::new_unchecked(&mut ip[..]));
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                let r = Ipv6Repr {
                    src_addr: s,
                    dst_addr: d,
                    next_header: proto,
                    payload_len: ip_payload,
                    hop_limit: self.ttl,
                    traffic_class: self.dscp << 2,
                    flow_label: 0,
                };
                let _ = r.emit(&mut Ipv6Packet::new_unchecked(&mut ip[..]));
            }
            _ => {}
        }
        let l4 = &mut h[14 + self.outer.iplen..];
        match t {
            Tunnel::Nvgre => {
                let r = gre::Repr::nvgre(self.id, flow);
                let _ = r.emit(&mut gre::Packet::new_unchecked(&mut l4[..]));
            }
            Tunnel::Vxlan | Tunnel::Gtpu => {
                let u = UdpRepr {
                    src_port: sport,
                    dst_port: self.dport,
                    payload_len: ip_payload - 8,
                };
                let _ = u.emit(&mut UdpPacket::new_unchecked(&mut l4[..]));
                if t == Tunnel::Vxlan {
                    let v = vxlan::Repr { vni: self.id };
                    let _ = v.emit(&mut vxlan::Packet::new_unchecked(&mut l4[8..]));
                } else {
                    let g = gtpu::Repr {
                        msg_type: gtpu::G_PDU,
                        teid: self.id,
                        sequence: None,
                        payload_len,
                    };
                    let _ = g.emit(&mut gtpu::Packet::new_unchecked(&mut l4[8..]));
                }
            }
        }
    }

    /// Sets the outer header annotations with `Packet`'s setters (the
    /// reference's way).
    #[inline(always)]
    fn annotate(p: &mut Packet, tunnel: Tunnel, iplen: usize) {
        p.set_network_header(14);
        p.set_transport_header(14 + iplen as isize);
        let proto = if tunnel == Tunnel::Nvgre { 47 } else { 17 };
        p.anno_mut().set_u8(offsets::L4_PROTO, proto);
    }

    /// [`annotate`](Self::annotate) for a packet whose headroom is
    /// `headroom` (known before the header bytes are written): the header
    /// offsets as `Packet::set_network_header` computes them, stored
    /// without reading the packet's metadata back after the byte stores
    /// (which the compiler must assume may alias it).
    #[inline(always)]
    fn annotate_at(p: &mut Packet, headroom: usize, tunnel: Tunnel, iplen: usize) {
        let at = |off: usize| (headroom + off).min(usize::from(NO_HEADER)) as u16;
        let a = p.anno_mut();
        a.network_header = at(14);
        a.transport_header = at(14 + iplen);
        a.set_u8(
            offsets::L4_PROTO,
            if tunnel == Tunnel::Nvgre { 47 } else { 17 },
        );
    }

    /// One packet, the optimised way (for the second pass of
    /// [`encap_batch`](Self::encap_batch) and for batches over 256
    /// packets): the template is copied in and the lengths,
    /// identification, checksum, FlowID or source port patched.
    #[inline(always)]
    fn encap_fast(&mut self, p: &mut Packet) -> Result<(), u8> {
        let (tunnel, iplen, hlen) = (self.outer.tunnel, self.outer.iplen, self.hlen);
        let (strip, inner) = Self::inner_range(tunnel, p)?;
        let hash = flow_hash_of(p);
        if inner + hlen - 14 > 0xffff {
            return Err(ENC_TOO_LONG);
        }
        p.take(p.len() - strip - inner);
        p.pull(strip);
        p.push(hlen);
        let ident = self.ident;
        let headroom = p.headroom();
        let (h, rest) = p.data_mut().split_at_mut(hlen);
        self.outer.write(h, rest, ident, hash);
        self.ident = ident.wrapping_add(u16::from(iplen == 20));
        Self::annotate_at(p, headroom, tunnel, iplen);
        Ok(())
    }

    /// [`encap_fast`](Self::encap_fast) over a batch of at most 256
    /// packets, specialised on the tunnel and outer family (constants
    /// here). The loop calls nothing: a packet whose flow hash needs
    /// `l4::parse_general` or whose buffer needs a copy for the push is
    /// left for a second pass, which runs `encap_fast` on it with the
    /// identification it would have had in order. Returns the packets
    /// that could not be encapsulated.
    #[inline(always)]
    fn encap_batch(&mut self, batch: &mut Batch, tunnel: Tunnel, iplen: usize) -> Option<Batch> {
        let hlen = 14 + iplen + tunnel.tunnel_len();
        let v4 = iplen == 20;
        let outer = Outer {
            tunnel,
            iplen,
            ..self.outer
        };
        let by_reason = &mut self.counts.by_reason;
        let start = self.ident;
        let mut ident = start;
        let (mut bad, mut later) = ([0u64; 4], [0u64; 4]);
        let mut nbad = 0usize;
        let mut any_later = false;
        let pkts = batch.as_mut_slice();
        let mut i = 0usize;
        while let Some(p) = pkts.get_mut(i) {
            // The word and bit of packet `i` in the bitmaps (`& 3`: no
            // bounds test, the batch has at most 256 packets).
            let (w, bit) = ((i >> 6) & 3, 1u64 << (i & 63));
            i += 1;
            let (strip, inner) = match Self::inner_range(tunnel, p) {
                Ok((s, n)) if n + hlen - 14 <= 0xffff => (s, n),
                r => {
                    by_reason[usize::from(r.err().unwrap_or(ENC_TOO_LONG))] += 1;
                    bad[w] |= bit;
                    nbad += 1;
                    continue;
                }
            };
            let id = ident;
            ident = ident.wrapping_add(u16::from(v4));
            let hash = match p.anno().flow_hash {
                0 => linerate_wire::l4::parse_common(p.data()).map(|r| r.hash),
                h => Some(h),
            };
            let (tail, headroom) = (p.len() - strip - inner, p.headroom() + strip);
            let Some(hash) = hash else {
                later[w] |= bit;
                any_later = true;
                continue;
            };
            let Some(d) = p.try_push_mut(hlen - strip) else {
                later[w] |= bit;
                any_later = true;
                continue;
            };
            let (h, rest) = d.split_at_mut(hlen);
            outer.write(h, &rest[..inner], id, hash);
            p.take(tail);
            Self::annotate_at(p, headroom - hlen, tunnel, iplen);
        }
        if any_later {
            self.second_pass(batch, &mut bad, &later, start, v4);
            nbad = bad.iter().map(|b| b.count_ones() as usize).sum();
        }
        self.counts.count += (batch.len() - nbad) as u64;
        self.ident = ident;
        if nbad == 0 {
            return None;
        }
        let mut i = 0usize;
        Some(batch.split_off_if(|_| {
            let b = bad[i >> 6] >> (i & 63) & 1 != 0;
            i += 1;
            b
        }))
    }

    /// One packet, the reference way: every header emitted with
    /// `linerate_wire`'s `Repr::emit` (checksums computed from scratch).
    fn encap_reference(&mut self, p: &mut Packet) -> Result<(), u8> {
        let (strip, inner) = Self::inner_range(self.outer.tunnel, p)?;
        let hash = flow_hash_of(p);
        if inner + self.hlen - 14 > 0xffff {
            return Err(ENC_TOO_LONG);
        }
        p.take(p.len() - strip - inner);
        p.pull(strip);
        p.push(self.hlen);
        let v4 = self.outer.iplen == 20;
        let ident = if v4 { self.ident } else { 0 };
        let hlen = self.hlen;
        let d = p.data_mut();
        let mut h = [0u8; 80];
        self.emit_headers(&mut h[..hlen], inner, ident, entropy_port(hash), hash as u8);
        d[..hlen].copy_from_slice(&h[..hlen]);
        if let (IpAddr::V6(src), IpAddr::V6(dst), false) =
            (self.src, self.dst, self.outer.tunnel == Tunnel::Nvgre)
        {
            let mut u = UdpPacket::new_unchecked(&mut d[54..]);
            u.fill_checksum(&IpPair::V6 { src, dst });
        }
        if v4 {
            self.ident = self.ident.wrapping_add(1);
        }
        Self::annotate(p, self.outer.tunnel, self.outer.iplen);
        Ok(())
    }

    /// The second pass of [`encap_batch`](Self::encap_batch):
    /// `encap_fast` on each packet marked in `later`, with the
    /// identification `start` plus the number of packets before it that
    /// were not rejected. It cannot reject one (the first pass checked
    /// the same bytes), but would count and mark it as the first pass does.
    #[inline(never)]
    fn second_pass(
        &mut self,
        batch: &mut Batch,
        bad: &mut [u64; 4],
        later: &[u64; 4],
        start: u16,
        v4: bool,
    ) {
        let pkts = batch.as_mut_slice();
        for (w, &word) in later.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let k = bits.trailing_zeros();
                bits &= bits - 1;
                let i = w * 64 + k as usize;
                let rejected: u32 = bad[..w].iter().map(|b| b.count_ones()).sum::<u32>()
                    + (bad[w] & ((1u64 << k) - 1)).count_ones();
                let before = (i - rejected as usize) as u16;
                self.ident = if v4 {
                    start.wrapping_add(before)
                } else {
                    start
                };
                if let Err(r) = self.encap_fast(&mut pkts[i]) {
                    self.counts.by_reason[usize::from(r)] += 1;
                    bad[w] |= 1 << k;
                }
            }
        }
    }

    /// Encapsulates every packet of `batch`; returns the encapsulated
    /// packets and the ones that could not be.
    pub(crate) fn process(&mut self, mut batch: Batch) -> (Batch, Option<Batch>) {
        if self.fast && batch.len() <= 256 {
            let bad = match (self.outer.tunnel, self.outer.iplen) {
                (Tunnel::Nvgre, 20) => self.encap_batch(&mut batch, Tunnel::Nvgre, 20),
                (Tunnel::Nvgre, _) => self.encap_batch(&mut batch, Tunnel::Nvgre, 40),
                (Tunnel::Vxlan, 20) => self.encap_batch(&mut batch, Tunnel::Vxlan, 20),
                (Tunnel::Vxlan, _) => self.encap_batch(&mut batch, Tunnel::Vxlan, 40),
                (Tunnel::Gtpu, 20) => self.encap_batch(&mut batch, Tunnel::Gtpu, 20),
                (Tunnel::Gtpu, _) => self.encap_batch(&mut batch, Tunnel::Gtpu, 40),
            };
            return (batch, bad);
        }
        let mut counts = std::mem::replace(&mut self.counts, Counts::new(ENCAP_REASONS));
        let bad = if self.fast {
            run_batch(&mut batch, &mut counts, |p| self.encap_fast(p))
        } else {
            run_batch(&mut batch, &mut counts, |p| self.encap_reference(p))
        };
        self.counts = counts;
        (batch, bad)
    }
}

/// An encapsulator's outer headers: the tunnel, the outer IP header
/// length, the template and what patching it needs. Copied out of [`Encap`] before a batch's loop, so that the
/// compiler can keep it in registers (stores to packet bytes could
/// otherwise alias it).
#[derive(Clone, Copy)]
struct Outer {
    /// The outer headers with every per-packet field zero.
    template: [u8; 80],
    /// One's-complement sum of the IPv4 template header (checksum 0), of
    /// its 16-bit words as they lie in memory (native order).
    ip_sum: u16,
    /// Over IPv6, the one's-complement sum (memory order) of what the UDP
    /// checksum covers that the template fixes: the addresses, the
    /// protocol and the template's UDP and tunnel headers.
    udp_sum: u16,
    tunnel: Tunnel,
    /// Outer IP header length (20 or 40).
    iplen: usize,
}

impl Outer {
    /// Writes the outer headers into `h` (the bytes in front of the
    /// encapsulated bytes `rest`): the template in one copy, then the
    /// lengths, the identification `ident`, the IPv4 checksum (updated
    /// from the template's sum: two additions and two folds), the FlowID
    /// or the source port from `hash`, and over IPv6 the UDP checksum.
    #[inline(always)]
    fn write(&self, h: &mut [u8], rest: &[u8], ident: u16, hash: u32) {
        let (tunnel, iplen, hlen, inner) = (self.tunnel, self.iplen, h.len(), rest.len());
        let ip_payload = inner + hlen - 14 - iplen;
        h.copy_from_slice(&self.template[..hlen]);
        if iplen == 20 {
            // The one's-complement sum in memory order (RFC 1071: byte
            // order independent), so the words are summed as stored.
            let total = ((ip_payload + 20) as u16).to_be();
            let ident = ident.to_be();
            h[16..18].copy_from_slice(&total.to_ne_bytes());
            h[18..20].copy_from_slice(&ident.to_ne_bytes());
            let s = ones_add(ones_add(self.ip_sum, total), ident);
            h[24..26].copy_from_slice(&(!s).to_ne_bytes());
        } else {
            h[18..20].copy_from_slice(&(ip_payload as u16).to_be_bytes());
        }
        let l4 = 14 + iplen;
        match tunnel {
            Tunnel::Nvgre => h[l4 + 7] = hash as u8,
            _ => {
                let sport = entropy_port(hash).to_be();
                let ulen = (ip_payload as u16).to_be();
                let glen = (inner as u16).to_be();
                h[l4..l4 + 2].copy_from_slice(&sport.to_ne_bytes());
                h[l4 + 4..l4 + 6].copy_from_slice(&ulen.to_ne_bytes());
                if tunnel == Tunnel::Gtpu {
                    h[l4 + 10..l4 + 12].copy_from_slice(&glen.to_ne_bytes());
                }
                if iplen == 40 {
                    // The UDP checksum (mandatory over IPv6): the fixed
                    // part's sum, the length twice (pseudo-header and UDP
                    // header), the source port, GTP-U's length and the
                    // payload.
                    let mut s = ones_add(ones_add(self.udp_sum, ulen), ulen);
                    s = ones_add(s, sport);
                    if tunnel == Tunnel::Gtpu {
                        s = ones_add(s, glen);
                    }
                    let c = !ones_add(s, ones_sum(rest));
                    let c = if c == 0 { 0xffff } else { c };
                    h[l4 + 6..l4 + 8].copy_from_slice(&c.to_ne_bytes());
                }
            }
        }
    }
}

/// One's-complement addition of 16-bit words (an add and an add of the
/// carry).
#[inline(always)]
fn ones_add(a: u16, b: u16) -> u16 {
    let (s, carry) = a.overflowing_add(b);
    s + u16::from(carry)
}

/// One's-complement sum of `b` as 16-bit words in memory order: the
/// big-endian words' sum, byte-swapped on little-endian machines (RFC 1071
/// section 2(B)).
#[inline(always)]
fn ones_sum(b: &[u8]) -> u16 {
    linerate_wire::checksum::sum(b).to_be()
}

// ---------------------------------------------------------------- decap

pub(crate) const DECAP_REASONS: &[&str] = &[
    "truncated",
    "not_ip",
    "bad_ip",
    "not_tunnel",
    "bad_header",
    "wrong_id",
    "not_gpdu",
    "bad_inner",
];
const DEC_TRUNCATED: u8 = 0;
const DEC_NOT_IP: u8 = 1;
const DEC_BAD_IP: u8 = 2;
const DEC_NOT_TUNNEL: u8 = 3;
const DEC_BAD_HEADER: u8 = 4;
const DEC_WRONG_ID: u8 = 5;
const DEC_NOT_GPDU: u8 = 6;
const DEC_BAD_INNER: u8 = 7;

pub(crate) const DECAP_HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::counter("count"),
    HandlerSpec::counter("drops"),
    HandlerSpec::counter("truncated"),
    HandlerSpec::counter("not_ip"),
    HandlerSpec::counter("bad_ip"),
    HandlerSpec::counter("not_tunnel"),
    HandlerSpec::counter("bad_header"),
    HandlerSpec::counter("wrong_id"),
    HandlerSpec::counter("not_gpdu"),
    HandlerSpec::counter("bad_inner"),
];

/// A decapsulator's configuration and state.
pub(crate) struct Decap {
    tunnel: Tunnel,
    fast: bool,
    pub has_out1: bool,
    /// Accept only this VSID/VNI/TEID.
    only: Option<u32>,
    dport: u16,
    /// Where the identifier is stored (user annotation offset), if at all.
    anno: Option<usize>,
    pub counts: Counts,
}

/// What a decapsulator found: the inner bytes' range and the identifier.
#[derive(Debug, PartialEq, Eq)]
struct Found {
    start: usize,
    end: usize,
    id: u32,
}

#[inline(always)]
fn be16(d: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([d[at], d[at + 1]])
}

#[inline(always)]
fn be32(d: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]])
}

impl Decap {
    /// Reads `[ID, DPORT, ANNO, IMPL]`.
    pub(crate) fn configure(ctx: &ConfigureCtx<'_>, tunnel: Tunnel) -> Result<Decap, Vec<String>> {
        let mut a = Args::new(&ctx.args);
        let only: Option<u32> = a.read_p(tunnel.id_name());
        let dport = if tunnel == Tunnel::Nvgre {
            0
        } else {
            a.read_or("DPORT", tunnel.default_port())
        };
        let anno_name: String = a.read_or("ANNO", "AGGREGATE".to_string());
        let fast = crate::parse::read_impl(&mut a);
        let anno = match anno_name.as_str() {
            "none" => None,
            n => match linerate_runtime::anno::anno_by_name(n) {
                Some(i) if i.offset + 4 <= linerate_runtime::anno::USER_ANNO_SIZE => Some(i.offset),
                _ => {
                    a.error(format!(
                        "ANNO: expected annotation name or 'none', not '{n}'"
                    ));
                    None
                }
            },
        };
        a.complete().map_err(|e| e.0)?;
        Ok(Decap {
            tunnel,
            fast,
            has_out1: ctx.noutputs() > 1,
            only,
            dport,
            anno,
            counts: Counts::new(DECAP_REASONS),
        })
    }

    /// The outer headers checked with fixed offsets, for `tunnel` (a
    /// constant in each of [`process`](Self::process)'s loops). Each header
    /// is taken as a fixed-size array after one length check, so its
    /// fields are read without a bounds test each.
    #[inline(always)]
    fn find_fast(&self, d: &[u8], tunnel: Tunnel) -> Result<Found, u8> {
        let n = d.len();
        let Some(eth) = d.first_chunk::<14>() else {
            return Err(DEC_TRUNCATED);
        };
        let (l4, end, proto) = match u16::from_be_bytes([eth[12], eth[13]]) {
            0x0800 => {
                let Some(ip) = d.get(14..34).and_then(|s| s.first_chunk::<20>()) else {
                    return Err(DEC_TRUNCATED);
                };
                let hl = usize::from(ip[0] & 15) * 4;
                let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
                if ip[0] >> 4 != 4 || hl < 20 || total < hl || 14 + total > n {
                    return Err(DEC_BAD_IP);
                }
                if u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0 {
                    return Err(DEC_BAD_IP);
                }
                (14 + hl, 14 + total, ip[9])
            }
            0x86dd => {
                let Some(ip) = d.get(14..54).and_then(|s| s.first_chunk::<40>()) else {
                    return Err(DEC_TRUNCATED);
                };
                let end = 54 + usize::from(u16::from_be_bytes([ip[4], ip[5]]));
                if ip[0] >> 4 != 6 || end > n {
                    return Err(DEC_BAD_IP);
                }
                (54, end, ip[6])
            }
            _ => return Err(DEC_NOT_IP),
        };
        let (start, end, id) = match tunnel {
            Tunnel::Nvgre => {
                if proto != 47 {
                    return Err(DEC_NOT_TUNNEL);
                }
                if l4 + 8 > end {
                    return Err(DEC_TRUNCATED);
                }
                let Some(g) = d.get(l4..).and_then(|s| s.first_chunk::<8>()) else {
                    return Err(DEC_TRUNCATED);
                };
                if be32(g, 0) != 0x2000_6558 {
                    return Err(DEC_BAD_HEADER);
                }
                (l4 + 8, end, be32(g, 4) >> 8)
            }
            Tunnel::Vxlan | Tunnel::Gtpu => {
                if proto != 17 {
                    return Err(DEC_NOT_TUNNEL);
                }
                if l4 + 16 > end {
                    return Err(DEC_TRUNCATED);
                }
                let Some(u) = d.get(l4..).and_then(|s| s.first_chunk::<16>()) else {
                    return Err(DEC_TRUNCATED);
                };
                if be16(u, 2) != self.dport {
                    return Err(DEC_NOT_TUNNEL);
                }
                let ulen = usize::from(be16(u, 4));
                if ulen < 16 || l4 + ulen > end {
                    return Err(DEC_BAD_HEADER);
                }
                let t = l4 + 8;
                let uend = l4 + ulen;
                if tunnel == Tunnel::Vxlan {
                    if u[8] & vxlan::FLAG_I == 0 {
                        return Err(DEC_BAD_HEADER);
                    }
                    (t + 8, uend, be32(u, 12) >> 8)
                } else {
                    let g = gtpu::Packet::new_unchecked(&d[t..uend]);
                    if g.check_len().is_err() || g.version() != 1 || !g.protocol_type() {
                        return Err(DEC_BAD_HEADER);
                    }
                    if g.msg_type() != gtpu::G_PDU {
                        return Err(DEC_NOT_GPDU);
                    }
                    let s = t + g.header_len();
                    let e = t + 8 + usize::from(g.len());
                    return self.finish_gtpu(d, s, e, g.teid());
                }
            }
        };
        if end - start < 14 {
            return Err(DEC_BAD_INNER);
        }
        if self.only.is_some_and(|o| o != id) {
            return Err(DEC_WRONG_ID);
        }
        Ok(Found { start, end, id })
    }

    #[inline(always)]
    fn finish_gtpu(&self, d: &[u8], s: usize, e: usize, id: u32) -> Result<Found, u8> {
        if !matches!(d.get(s).map(|b| b >> 4), Some(4 | 6)) || s >= e {
            return Err(DEC_BAD_INNER);
        }
        if self.only.is_some_and(|o| o != id) {
            return Err(DEC_WRONG_ID);
        }
        Ok(Found {
            start: s,
            end: e,
            id,
        })
    }

    /// The outer headers checked with `linerate_wire`'s views.
    fn find_reference(&self, d: &[u8]) -> Result<Found, u8> {
        let eth = EthernetPacket::new_checked(d).map_err(|_| DEC_TRUNCATED)?;
        let rest = eth.payload();
        let (ip_hl, ip_payload, proto) = match eth.ethertype() {
            EtherType::IPV4 => {
                if rest.len() < 20 {
                    return Err(DEC_TRUNCATED);
                }
                let ip = Ipv4Packet::new_checked(rest).map_err(|_| DEC_BAD_IP)?;
                let r = Ipv4Repr::parse(&ip).map_err(|_| DEC_BAD_IP)?;
                if r.more_frags || r.frag_offset != 0 {
                    return Err(DEC_BAD_IP);
                }
                (ip.header_len(), ip.payload(), r.protocol)
            }
            EtherType::IPV6 => {
                if rest.len() < 40 {
                    return Err(DEC_TRUNCATED);
                }
                let ip = Ipv6Packet::new_checked(rest).map_err(|_| DEC_BAD_IP)?;
                let r = Ipv6Repr::parse(&ip).map_err(|_| DEC_BAD_IP)?;
                (40, ip.payload(), r.next_header)
            }
            _ => return Err(DEC_NOT_IP),
        };
        let l4 = 14 + ip_hl;
        let (start, end, id) = match self.tunnel {
            Tunnel::Nvgre => {
                if proto != IpProtocol::GRE {
                    return Err(DEC_NOT_TUNNEL);
                }
                if ip_payload.len() < gre::NVGRE_LEN {
                    return Err(DEC_TRUNCATED);
                }
                let g = gre::Packet::new_unchecked(ip_payload);
                let r = gre::Repr::parse(&g).map_err(|_| DEC_BAD_HEADER)?;
                let Some(key) = r.key else {
                    return Err(DEC_BAD_HEADER);
                };
                if r.checksum || r.sequence.is_some() || r.protocol != gre::PROTO_TEB {
                    return Err(DEC_BAD_HEADER);
                }
                (l4 + 8, l4 + ip_payload.len(), key >> 8)
            }
            Tunnel::Vxlan | Tunnel::Gtpu => {
                if proto != IpProtocol::UDP {
                    return Err(DEC_NOT_TUNNEL);
                }
                if ip_payload.len() < 16 {
                    return Err(DEC_TRUNCATED);
                }
                let u = UdpPacket::new_unchecked(ip_payload);
                if u.dst_port() != self.dport {
                    return Err(DEC_NOT_TUNNEL);
                }
                let u = UdpPacket::new_checked(ip_payload).map_err(|_| DEC_BAD_HEADER)?;
                let inner = u.payload();
                if inner.len() < 8 {
                    return Err(DEC_BAD_HEADER);
                }
                if self.tunnel == Tunnel::Vxlan {
                    let v = vxlan::Packet::new_checked(inner).map_err(|_| DEC_BAD_HEADER)?;
                    let r = vxlan::Repr::parse(&v).map_err(|_| DEC_BAD_HEADER)?;
                    (l4 + 16, l4 + 8 + inner.len(), r.vni)
                } else {
                    let g = gtpu::Packet::new_checked(inner).map_err(|_| DEC_BAD_HEADER)?;
                    let r = gtpu::Repr::parse(&g).map_err(|_| DEC_BAD_HEADER)?;
                    if r.msg_type != gtpu::G_PDU {
                        return Err(DEC_NOT_GPDU);
                    }
                    let s = l4 + 8 + g.header_len();
                    return self.finish_gtpu(d, s, s + r.payload_len, r.teid);
                }
            }
        };
        if end - start < 14 {
            return Err(DEC_BAD_INNER);
        }
        if self.only.is_some_and(|o| o != id) {
            return Err(DEC_WRONG_ID);
        }
        Ok(Found { start, end, id })
    }

    /// Strips the outer headers (and link padding) and sets the
    /// annotations. GTP-U keeps an Ethernet header: the outer addresses
    /// with the inner IP version's EtherType.
    #[inline(always)]
    fn strip(&self, p: &mut Packet, f: Found, tunnel: Tunnel) {
        let n = p.len();
        p.take(n - f.end);
        if tunnel == Tunnel::Gtpu {
            let v6 = p.data()[f.start] >> 4 == 6;
            let d = p.data_mut();
            let mut eth = [0u8; 14];
            eth[..12].copy_from_slice(&d[..12]);
            eth[12..].copy_from_slice(if v6 { &[0x86, 0xdd] } else { &[0x08, 0x00] });
            d[f.start - 14..f.start].copy_from_slice(&eth);
            p.pull(f.start - 14);
            p.set_network_header(14);
            p.anno_mut().transport_header = NO_HEADER;
        } else {
            p.pull(f.start);
            p.clear_headers();
        }
        p.anno_mut().set_u8(offsets::L4_PROTO, 0);
        p.anno_mut().flow_hash = 0;
        if let Some(o) = self.anno {
            p.anno_mut().set_u32(o, f.id);
        }
    }

    /// One packet, the fast way, for `tunnel` (a constant where inlined).
    #[inline(always)]
    fn decap_fast(&self, p: &mut Packet, tunnel: Tunnel) -> Result<(), u8> {
        let f = self.find_fast(p.data(), tunnel)?;
        self.strip(p, f, tunnel);
        Ok(())
    }

    /// Decapsulates every packet of `batch`; returns the inner packets and
    /// the rejected ones (unchanged).
    pub(crate) fn process(&mut self, mut batch: Batch) -> (Batch, Option<Batch>) {
        let mut counts = std::mem::replace(&mut self.counts, Counts::new(DECAP_REASONS));
        // One loop per tunnel for the fast path (the tunnel a constant in
        // it) and one for the reference: no per-packet test of either.
        let this = &*self;
        let bad = match (self.fast, self.tunnel) {
            (true, Tunnel::Vxlan) => run_batch(&mut batch, &mut counts, |p| {
                this.decap_fast(p, Tunnel::Vxlan)
            }),
            (true, Tunnel::Nvgre) => run_batch(&mut batch, &mut counts, |p| {
                this.decap_fast(p, Tunnel::Nvgre)
            }),
            (true, Tunnel::Gtpu) => run_batch(&mut batch, &mut counts, |p| {
                this.decap_fast(p, Tunnel::Gtpu)
            }),
            (false, t) => run_batch(&mut batch, &mut counts, |p| {
                let f = this.find_reference(p.data())?;
                this.strip(p, f, t);
                Ok(())
            }),
        };
        self.counts = counts;
        (batch, bad)
    }
}

/// Implements `Element` for an encap or decap wrapper `$t` whose field
/// `inner` has `process`, `has_out1` and `counts`.
macro_rules! tunnel_element {
    ($t:ty, $handlers:expr) => {
        impl linerate_runtime::Element for $t {
            fn action(
                &mut self,
                batch: linerate_runtime::Batch,
                ctx: &mut linerate_runtime::Ctx<'_>,
            ) -> linerate_runtime::Batch {
                let (good, bad) = self.inner.process(batch);
                if let (Some(b), true) = (bad, self.inner.has_out1) {
                    ctx.push(1, b);
                }
                good
            }
            fn handlers(&self) -> &[linerate_runtime::HandlerSpec] {
                $handlers
            }
            fn read_handler(&self, name: &str) -> Option<String> {
                self.inner.counts.read(name)
            }
            drops_or_output_1!(self, self.inner.has_out1, self.inner.counts.drops());
            fn as_any(&self) -> &dyn std::any::Any {
                self
            }
        }
    };
}
pub(crate) use tunnel_element;

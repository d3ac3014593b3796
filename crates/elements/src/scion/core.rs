//! The SCION border-router pipeline (§9 of the data-plane specification),
//! shared by the `SCIONRouter` element's fast and reference modes and by
//! the step elements (`SCIONParse` ... `SCIONSCMPError`).
//!
//! The pipeline is a sequence of step functions in §9.3 order:
//! [`Dataplane::arrival`] and [`classify`] (underlay, link, path type),
//! [`path_hop`] (steps 1-2), [`Dataplane::check_hop`] (3-8), [`hop_mac`]
//! (9-10), [`Dataplane::route`] (11-13), [`Dataplane::check_egress`]
//! (14-16), [`Dataplane::advance`] (18), then [`Dataplane::deliver`],
//! [`Dataplane::dispatch`] (path edits written, one-hop MAC work, underlay
//! rewrite) and [`Dataplane::scmp`]. Path writes are recorded as [`Edit`]s
//! and applied at the end, so frames that end on the slow path or are
//! dropped leave unchanged.
//!
//! Processing is split in two stages so that the fast mode can batch the
//! AES work of many packets: [`Dataplane::stage1`] reads a frame (never
//! writing), runs every step that does not need a MAC (underlay parse,
//! ingress link, steps 1-9 and the MAC-independent parts of 11-18) and
//! returns a [`Plan`]: up to two MAC input blocks with the MAC each must
//! match and what happens if it does not, the verdict if all match, and the
//! 16-bit writes to apply. [`Dataplane::finish`] applies a plan given the
//! computed MACs: writes the path changes, rebuilds the underlay (IP/UDP
//! checksums updated incrementally) or builds the SCMP reply.

use super::mac::{mac_equal, mac_input, HopMac};
use super::topology::{LinkType, Topology};
use linerate_runtime::Packet;
use linerate_wire::checksum;
use linerate_wire::scion::path::{self, Meta, StandardPath, StandardRepr, HOP_LEN, INFO_LEN};
use linerate_wire::scion::scmp::{self, pp, typ};
use linerate_wire::scion::{self as sw, header, path_type, proto, HostAddr, Ia};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Expiry unit (337.5 s) in nanoseconds.
pub(super) const EXP_UNIT_NS: u64 = 337_500_000_000;
/// Largest SCMP reply (SCION header and payload).
const MAX_SCMP_LEN: usize = 1232;
/// Default end-host port (§11.5).
const END_HOST_PORT: u16 = 30041;
/// Ethernet header length of the frames.
const ETH_LEN: usize = 14;

/// Why a packet was dropped silently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Drop {
    /// Not Ethernet/IPv4-or-IPv6/UDP, or truncated underlay.
    Underlay = 0,
    /// Underlay addresses match no link of this router.
    UnknownLink,
    /// The SCION header or path does not parse.
    Malformed,
    /// Steps 1-2: inconsistent path (indices, SegLens, peering).
    InvalidPath,
    /// Empty path that is not BFD; unknown path types.
    PathType,
    /// Step 6: transit from the internal network without a sibling.
    TransitSource,
    /// An SCMP error that would answer an SCMP error, or a reply that
    /// cannot be routed back.
    NoScmp,
    /// One-hop path rejected (§11.2).
    OneHop,
    /// Step 18: IncPath at the last hop; local delivery without a port.
    Undeliverable,
}

/// Drop reason names (handler `drops_<name>` and the run summary).
pub const DROP_NAMES: [&str; 9] = [
    "underlay",
    "unknown_link",
    "malformed",
    "invalid_path",
    "path_type",
    "transit_source",
    "no_scmp",
    "one_hop",
    "undeliverable",
];

/// SCMP codes the router emits, in handler order (`scmp_<code>`): PP codes,
/// then DestinationUnreachable (index 9).
pub const SCMP_CODES: [u8; 9] = [19, 33, 34, 48, 49, 50, 51, 52, 53];

/// Where a packet goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Silent drop.
    Drop(Drop),
    /// To the slow-path output, untouched.
    Slow,
    /// Answer with SCMP (type, code, pointer).
    Scmp(u8, u8, u16),
    /// Send on interface index `usize` (ours: to its remote; a sibling's:
    /// to that router's internal address).
    Forward(usize),
    /// Deliver to a local host.
    Deliver(Ep),
}

/// An underlay endpoint in compact form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ep {
    /// IPv4-mapped or IPv6 address.
    pub ip: [u8; 16],
    /// Port.
    pub port: u16,
    /// IPv4.
    pub v4: bool,
}

impl Ep {
    pub(super) fn from(a: SocketAddr) -> Ep {
        match a.ip() {
            IpAddr::V4(v) => Ep {
                ip: v.to_ipv6_mapped().octets(),
                port: a.port(),
                v4: true,
            },
            IpAddr::V6(v) => Ep {
                ip: v.octets(),
                port: a.port(),
                v4: false,
            },
        }
    }
    fn to_socket(self) -> SocketAddr {
        let ip = if self.v4 {
            IpAddr::V4(Ipv4Addr::new(
                self.ip[12],
                self.ip[13],
                self.ip[14],
                self.ip[15],
            ))
        } else {
            IpAddr::V6(Ipv6Addr::from(self.ip))
        };
        SocketAddr::new(ip, self.port)
    }
}

/// Per-interface counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IfCounters {
    /// Packets received.
    pub in_pkts: u64,
    /// Bytes received (SCION packet, without underlay).
    pub in_bytes: u64,
    /// Packets sent.
    pub out_pkts: u64,
    /// Bytes sent.
    pub out_bytes: u64,
}

/// One interface with its resolved addresses.
#[derive(Debug, Clone)]
pub struct Iface {
    /// Interface id.
    pub ifid: u16,
    /// Link type.
    pub link_to: LinkType,
    /// Neighbour.
    pub neighbor: Ia,
    /// Ours (external link of this router) or a sibling's.
    pub ours: bool,
    /// Underlay source for packets we send on it.
    pub src: Ep,
    /// Underlay destination (remote for ours, sibling internal address).
    pub dst: Ep,
    /// Local underlay address (ours).
    pub local: Ep,
    /// Remote underlay address (ours).
    pub remote: Ep,
}

/// Statistics of a [`Dataplane`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Per interface index (last entry: the internal link).
    pub ifs: Vec<IfCounters>,
    /// Drops by [`Drop`] reason.
    pub drops: [u64; 9],
    /// SCMP errors sent by code ([`SCMP_CODES`] order, then
    /// DestinationUnreachable).
    pub scmp: [u64; 10],
    /// Packets to the slow path.
    pub slow: u64,
}

/// The state the pipeline reads: topology, keys, interface table, clock.
pub struct Dataplane {
    /// Local ISD-AS.
    pub ia: Ia,
    internal: Ep,
    internal_ip: HostAddr,
    /// Interfaces (ours and siblings').
    pub ifaces: Vec<Iface>,
    by_ifid: Vec<u8>,
    mac: HopMac,
    key: [u8; 16],
    cs: Vec<SocketAddr>,
    ds: Vec<SocketAddr>,
    /// Data-plane clock (ns since the epoch).
    pub now_ns: u64,
    /// Counters.
    pub stats: Stats,
}

/// [`Frame::ingress`] of a frame from the internal network.
pub const NO_IF: u8 = 0xff;

/// One 16-bit write into the SCION header, applied when at least `stage`
/// MACs matched (the number of MACs recorded before it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Edit {
    /// Offset in the SCION packet.
    pub off: u16,
    /// New value.
    pub val: u16,
    stage: u8,
}

impl Edit {
    /// An edit to apply unconditionally (the step elements' form: their
    /// edits are recorded only once the MACs before them matched).
    pub fn new(off: u16, val: u16) -> Edit {
        Edit { off, val, stage: 0 }
    }
}

/// Where a SCION packet sits in its frame and how it arrived: what the
/// pipeline needs besides the SCION header (the step elements keep it in
/// annotations and re-read the endpoints from the untouched underlay).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// Offset of the SCION header in the frame.
    pub scion_off: u16,
    /// Length of the SCION packet (UDP payload).
    pub scion_len: u16,
    /// Arrival: interface index, or `NO_IF` (0xff) for the internal network.
    pub ingress: u8,
    /// Underlay source of the frame (SCMP replies to the internal network).
    pub src: Ep,
    /// Underlay destination of the frame.
    pub dst: Ep,
}

impl Frame {
    const EMPTY: Frame = Frame {
        scion_off: 0,
        scion_len: 0,
        ingress: NO_IF,
        src: Ep {
            ip: [0; 16],
            port: 0,
            v4: false,
        },
        dst: Ep {
            ip: [0; 16],
            port: 0,
            v4: false,
        },
    };
    /// The arrival interface index; `None` for the internal network.
    #[inline]
    pub fn ingress(&self) -> Option<usize> {
        (self.ingress != NO_IF).then_some(usize::from(self.ingress))
    }
    /// The SCION packet in frame bytes `f`.
    #[inline]
    pub fn scion<'a>(&self, f: &'a [u8]) -> &'a [u8] {
        &f[usize::from(self.scion_off)..usize::from(self.scion_off) + usize::from(self.scion_len)]
    }
    /// The SCION packet in frame bytes `f`, writable.
    #[inline]
    pub fn scion_mut<'a>(&self, f: &'a mut [u8]) -> &'a mut [u8] {
        let so = usize::from(self.scion_off);
        &mut f[so..so + usize::from(self.scion_len)]
    }
}

/// What stage 1 decided for a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// MAC inputs to compute (first `nmacs`).
    pub blocks: [[u8; 16]; 2],
    /// Number of MACs to check.
    pub nmacs: u8,
    expect: [[u8; 6]; 2],
    fail: [Verdict; 2],
    /// Verdict if every MAC matches.
    verdict: Verdict,
    edits: [Edit; 6],
    nedits: u8,
    frame: Frame,
}

impl Plan {
    /// A plan with no MAC, no edit and verdict `verdict`.
    #[inline]
    pub fn new(verdict: Verdict) -> Plan {
        Plan {
            blocks: [[0; 16]; 2],
            nmacs: 0,
            expect: [[0; 6]; 2],
            fail: [Verdict::Slow; 2],
            verdict,
            edits: [Edit::default(); 6],
            nedits: 0,
            frame: Frame::EMPTY,
        }
    }
    #[inline]
    fn edit(&mut self, off: usize, val: u16) {
        self.edits[usize::from(self.nedits)] = Edit {
            off: off as u16,
            val,
            stage: self.nmacs,
        };
        self.nedits += 1;
    }
    #[inline]
    fn meta(&mut self, off: usize, m: Meta) {
        let w = m.to_word();
        self.edit(off, (w >> 16) as u16);
        self.edit(off + 2, w as u16);
    }
    #[inline]
    fn mac(&mut self, block: [u8; 16], expect: [u8; 6], fail: Verdict) {
        let i = usize::from(self.nmacs);
        self.blocks[i] = block;
        self.expect[i] = expect;
        self.fail[i] = fail;
        self.nmacs += 1;
    }
    /// The edits recorded (in order).
    pub fn edits(&self) -> &[Edit] {
        &self.edits[..usize::from(self.nedits)]
    }
    /// MAC `i`'s expected value (the hop field's 6 bytes) and the verdict
    /// when it does not match.
    pub fn check(&self, i: usize) -> ([u8; 6], Verdict) {
        (self.expect[i], self.fail[i])
    }
    /// The verdict once the MACs (full CMAC outputs, `nmacs` of them) are
    /// known, and how many matched in order.
    pub fn decide(&self, macs: &[[u8; 16]]) -> (Verdict, u8) {
        let n = usize::from(self.nmacs);
        for (i, (m, e)) in macs.iter().zip(&self.expect).take(n).enumerate() {
            if !mac_equal(m, e) {
                return (self.fail[i], i as u8);
            }
        }
        (self.verdict, self.nmacs)
    }
}

#[inline(always)]
pub(super) fn be16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}

#[inline(always)]
pub(super) fn be32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

/// Whether the link-type pair is allowed (§9.3 step 15).
#[inline]
pub(super) fn pair_ok(from: LinkType, to: LinkType, xover: bool) -> bool {
    use LinkType::*;
    if xover {
        matches!((from, to), (Core, Child) | (Child, Core) | (Child, Child))
    } else {
        matches!(
            (from, to),
            (Core, Core) | (Child, Parent) | (Parent, Child) | (Child, Peer) | (Peer, Child)
        )
    }
}

/// What step 13 decided ([`Dataplane::route`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// On to the egress checks with the same hop.
    Transit,
    /// Crossed over: check the new hop's MAC, then the egress.
    Cross,
    /// Local destination: delivery (§11.5).
    Deliver,
    /// Finished here (slow path, expired crossover hop).
    Done(Verdict),
}

/// The hop field a standard-path packet is at, steps 1-2 passed
/// ([`path_hop`]). The step elements carry it in annotations
/// ([`Hop::to_bytes`]); [`Hop::cross`] moves it to the next segment (step
/// 13).
#[derive(Debug, Clone, Copy)]
pub struct Hop {
    po: usize,
    ninf: usize,
    nhops: usize,
    /// PathMeta, advanced past a crossover.
    meta: Meta,
    hf: usize,
    inf: usize,
    cons_dir: bool,
    peering: bool,
    xover: bool,
}

impl Hop {
    #[inline]
    fn info_at(&self, i: usize) -> usize {
        self.po + 4 + INFO_LEN * i
    }
    #[inline]
    fn hop_at(&self, j: usize) -> usize {
        self.po + 4 + INFO_LEN * self.ninf + HOP_LEN * j
    }
    #[inline]
    fn info_off(&self) -> usize {
        self.info_at(self.inf)
    }
    /// Offset of the current hop field in the SCION packet.
    #[inline]
    pub fn hop_off(&self) -> usize {
        self.hop_at(self.hf)
    }
    /// Offset of the path in the SCION packet.
    #[inline]
    pub fn po(&self) -> usize {
        self.po
    }
    /// Whether the hop is the next segment's first after a crossover.
    #[inline]
    pub fn crossed(&self) -> bool {
        self.xover
    }
    /// The hop in 8 bytes (path offset, PathMeta, flags), for the step
    /// elements' annotations.
    #[inline]
    pub fn to_bytes(&self) -> [u8; 8] {
        let po = (self.po as u16).to_be_bytes();
        let m = &self.meta;
        let flags =
            u8::from(self.cons_dir) | u8::from(self.peering) << 1 | u8::from(self.xover) << 2;
        [
            po[0],
            po[1],
            m.curr_inf,
            m.curr_hf,
            m.seg_len[0],
            m.seg_len[1],
            m.seg_len[2],
            flags,
        ]
    }
    /// The hop [`to_bytes`](Self::to_bytes) gave, if it is one of SCION
    /// packet `s`'s path (checked: the bytes come from annotations).
    #[inline]
    pub fn from_bytes(b: [u8; 8], s: &[u8]) -> Option<Hop> {
        let meta = Meta {
            curr_inf: b[2],
            curr_hf: b[3],
            seg_len: [b[4], b[5], b[6]],
        };
        let x = Hop {
            po: usize::from(u16::from_be_bytes([b[0], b[1]])),
            ninf: meta.num_inf().ok()?,
            nhops: meta.num_hops(),
            meta,
            hf: usize::from(meta.curr_hf),
            inf: usize::from(meta.curr_inf),
            cons_dir: b[7] & 1 != 0,
            peering: b[7] & 2 != 0,
            xover: b[7] & 4 != 0,
        };
        (x.hf < x.nhops && x.inf < x.ninf && x.hop_at(x.nhops) <= s.len()).then_some(x)
    }
    /// Step 13's move to the next segment's first hop.
    #[inline]
    pub fn cross(&mut self, s: &[u8]) {
        self.meta.curr_hf += 1;
        self.meta.curr_inf = self.meta.segment_of(usize::from(self.meta.curr_hf)) as u8;
        self.hf += 1;
        self.inf = usize::from(self.meta.curr_inf);
        self.cons_dir = s[self.info_off()] & path::INFO_CONS_DIR != 0;
        self.xover = true;
    }
}

/// Header and path-type dispatch: `Ok(true)` for a standard path,
/// `Ok(false)` for a one-hop path, else the verdict (slow path for BFD and
/// EPIC, drops).
#[inline]
pub fn classify(s: &[u8]) -> Result<bool, Verdict> {
    let Ok(h) = header::Packet::new_checked(s) else {
        return Err(Verdict::Drop(Drop::Malformed));
    };
    let Ok((upper, _)) = sw::upper_layer(s, h.header_len(), h.next_hdr()) else {
        return Err(Verdict::Drop(Drop::Malformed));
    };
    match h.path_type() {
        path_type::SCION => Ok(true),
        path_type::EMPTY | path_type::ONEHOP if upper == proto::BFD => Err(Verdict::Slow),
        path_type::ONEHOP => Ok(false),
        path_type::EPIC => Err(Verdict::Slow),
        _ => Err(Verdict::Drop(Drop::PathType)),
    }
}

/// Steps 1-2 for a standard path (header checked by [`classify`]): the
/// current hop, or the drop.
#[inline]
pub fn path_hop(h: &header::Packet<&[u8]>) -> Result<Hop, Verdict> {
    let bad = Verdict::Drop(Drop::InvalidPath);
    let Ok(p) = StandardPath::new_checked(h.path()) else {
        return Err(Verdict::Drop(Drop::Malformed));
    };
    let m = p.meta();
    let ninf = m.num_inf().unwrap_or(0);
    let nhops = m.num_hops();
    let hf = usize::from(m.curr_hf);
    let inf = usize::from(m.curr_inf);
    // Step 1.
    if ninf == 0 || hf >= nhops || inf >= ninf || inf != m.segment_of(hf) {
        return Err(bad);
    }
    let mut x = Hop {
        po: h.path_offset(),
        ninf,
        nhops,
        meta: m,
        hf,
        inf,
        cons_dir: false,
        peering: false,
        xover: false,
    };
    let flags = h.as_ref()[x.info_off()];
    x.cons_dir = flags & path::INFO_CONS_DIR != 0;
    // Step 2.
    if flags & path::INFO_PEER != 0 {
        if m.seg_len[0] == 0 || m.seg_len[1] == 0 || m.seg_len[2] != 0 {
            return Err(bad);
        }
        let s0 = usize::from(m.seg_len[0]);
        x.peering = hf == s0 - 1 || hf == s0;
    } else if m.seg_len.contains(&1) {
        return Err(bad);
    }
    Ok(x)
}

/// Steps 9-10 for the current hop (and step 13's MAC check of the hop after
/// a crossover): the SegID update against construction direction (an edit;
/// arrival hop of a link only) and the MAC block to check, with the SCMP
/// answer to a mismatch.
#[inline]
pub fn hop_mac(s: &[u8], x: &Hop, ingress: Option<usize>, plan: &mut Plan) {
    let (io, ho) = (x.info_off(), x.hop_off());
    let hop = &s[ho..ho + HOP_LEN];
    let mut seg_id = be16(s, io + 2);
    if !x.xover && !x.cons_dir && ingress.is_some() && !x.peering {
        seg_id ^= be16(hop, 6);
        plan.edit(io + 2, seg_id);
    }
    let mut mac = [0u8; 6];
    mac.copy_from_slice(&hop[6..12]);
    plan.mac(
        mac_input(seg_id, be32(s, io + 4), hop[1], be16(hop, 2), be16(hop, 4)),
        mac,
        Verdict::Scmp(typ::PARAMETER_PROBLEM, pp::INVALID_HOP_FIELD_MAC, ho as u16),
    );
}

/// Writes path edits into the SCION packet `s`; the ones'-complement change
/// of its bytes (for the UDP checksum).
#[inline]
pub fn apply_edits<'a>(s: &mut [u8], edits: impl Iterator<Item = &'a Edit>) -> u32 {
    let mut delta = 0u32;
    for e in edits {
        let o = usize::from(e.off);
        delta += u32::from(!be16(s, o)) + u32::from(e.val);
        s[o..o + 2].copy_from_slice(&e.val.to_be_bytes());
    }
    delta
}

impl Dataplane {
    /// Builds the tables from a topology; `now_ns` starts the clock.
    pub fn new(t: &Topology, now_ns: u64) -> Result<Dataplane, String> {
        if t.interfaces.len() >= usize::from(NO_IF) {
            return Err("too many interfaces (at most 254)".into());
        }
        let internal = Ep::from(t.internal);
        let mut by_ifid = vec![NO_IF; 65536];
        let ifaces: Vec<Iface> = t
            .interfaces
            .iter()
            .enumerate()
            .map(|(i, f)| {
                by_ifid[usize::from(f.ifid)] = i as u8;
                let ours = f.sibling.is_none();
                let (src, dst) = match f.sibling {
                    None => (Ep::from(f.local), Ep::from(f.remote)),
                    Some(s) => (internal, Ep::from(s)),
                };
                Iface {
                    ifid: f.ifid,
                    link_to: f.link_to,
                    neighbor: f.neighbor,
                    ours,
                    src,
                    dst,
                    local: Ep::from(f.local),
                    remote: Ep::from(f.remote),
                }
            })
            .collect();
        let internal_ip = match t.internal.ip() {
            IpAddr::V4(a) => HostAddr::V4(a),
            IpAddr::V6(a) => HostAddr::V6(a),
        };
        let n = ifaces.len();
        Ok(Dataplane {
            ia: t.ia,
            internal,
            internal_ip,
            ifaces,
            by_ifid,
            mac: HopMac::new(&t.key),
            key: t.key,
            cs: t.cs.clone(),
            ds: t.ds.clone(),
            now_ns,
            stats: Stats {
                ifs: vec![IfCounters::default(); n + 1],
                ..Stats::default()
            },
        })
    }

    /// The precomputed MAC.
    pub fn hop_mac(&self) -> &HopMac {
        &self.mac
    }

    /// The forwarding key.
    pub fn key(&self) -> &[u8; 16] {
        &self.key
    }

    #[inline]
    pub(super) fn iface(&self, ifid: u16) -> Option<usize> {
        let i = self.by_ifid[usize::from(ifid)];
        (i != NO_IF).then_some(usize::from(i))
    }

    /// Finds the arrival link from the underlay: `Ok(Some(i))` for our
    /// external interface `i`, `Ok(None)` for the internal address.
    #[inline]
    fn link_of(&self, src: &Ep, dst: &Ep) -> Result<Option<usize>, Drop> {
        for (i, f) in self.ifaces.iter().enumerate() {
            if f.ours && f.local == *dst && f.remote == *src {
                return Ok(Some(i));
            }
        }
        if *dst == self.internal {
            return Ok(None);
        }
        Err(Drop::UnknownLink)
    }

    /// Stage 1: everything up to the MAC checks, reading only.
    pub fn stage1(&self, f: &[u8]) -> Plan {
        match self.arrival(f) {
            Ok(fr) => {
                let mut plan = self.scion(fr.scion(f), fr.ingress(), &fr.src);
                plan.frame = fr;
                plan
            }
            Err(d) => Plan::new(Verdict::Drop(d)),
        }
    }

    /// The underlay and the ingress link of a frame.
    #[inline]
    pub fn arrival(&self, f: &[u8]) -> Result<Frame, Drop> {
        let mut fr = Self::underlay(f)?;
        fr.ingress = self.link_of(&fr.src, &fr.dst)?.map_or(NO_IF, |i| i as u8);
        Ok(fr)
    }

    /// Parses Ethernet/IP/UDP: where the SCION packet is and the
    /// endpoints (ingress left unset).
    #[inline]
    pub fn underlay(f: &[u8]) -> Result<Frame, Drop> {
        if f.len() < ETH_LEN + 20 {
            return Err(Drop::Underlay);
        }
        let (mut src, mut dst);
        let udp = match be16(f, 12) {
            0x0800 => {
                let ip = &f[ETH_LEN..];
                let hl = usize::from(ip[0] & 0xf) * 4;
                let tl = usize::from(be16(ip, 2));
                if ip[0] >> 4 != 4
                    || hl < 20
                    || tl < hl + 8
                    || tl > ip.len()
                    || ip[9] != 17
                    || be16(ip, 6) & 0x3fff != 0
                {
                    return Err(Drop::Underlay);
                }
                let mapped = |a: u32| (0xffff_u128 << 32 | u128::from(a)).to_be_bytes();
                src = Ep {
                    ip: mapped(be32(ip, 12)),
                    port: 0,
                    v4: true,
                };
                dst = Ep {
                    ip: mapped(be32(ip, 16)),
                    port: 0,
                    v4: true,
                };
                (ETH_LEN + hl, ETH_LEN + tl)
            }
            0x86dd => {
                if f.len() < ETH_LEN + 48 {
                    return Err(Drop::Underlay);
                }
                let ip = &f[ETH_LEN..];
                let pl = usize::from(be16(ip, 4));
                if ip[0] >> 4 != 6 || ip[6] != 17 || 40 + pl > ip.len() {
                    return Err(Drop::Underlay);
                }
                let a = |o: usize| {
                    let mut b = [0u8; 16];
                    b.copy_from_slice(&ip[o..o + 16]);
                    b
                };
                src = Ep {
                    ip: a(8),
                    port: 0,
                    v4: false,
                };
                dst = Ep {
                    ip: a(24),
                    port: 0,
                    v4: false,
                };
                (ETH_LEN + 40, ETH_LEN + 40 + pl)
            }
            _ => return Err(Drop::Underlay),
        };
        let (u, end) = udp;
        if end < u + 8 {
            return Err(Drop::Underlay);
        }
        let ulen = usize::from(be16(f, u + 4));
        if ulen < 8 || u + ulen > end {
            return Err(Drop::Underlay);
        }
        src.port = be16(f, u);
        dst.port = be16(f, u + 2);
        Ok(Frame {
            scion_off: (u + 8) as u16,
            scion_len: (ulen - 8) as u16,
            ingress: NO_IF,
            src,
            dst,
        })
    }

    #[inline]
    fn scion(&self, s: &[u8], ingress: Option<usize>, usrc: &Ep) -> Plan {
        match classify(s) {
            Ok(true) => self.standard(s, &header::Packet::new_unchecked(s), ingress, usrc),
            Ok(false) => Plan::new(self.onehop_check(&header::Packet::new_unchecked(s), ingress)),
            Err(v) => Plan::new(v),
        }
    }

    /// Steps 1-18 for a standard path, one step function after the other
    /// (the step elements call the same functions, one or a few each).
    #[inline]
    fn standard(
        &self,
        s: &[u8],
        h: &header::Packet<&[u8]>,
        ingress: Option<usize>,
        usrc: &Ep,
    ) -> Plan {
        let mut x = match path_hop(h) {
            Ok(x) => x,
            Err(v) => return Plan::new(v),
        };
        if let Err(v) = self.check_hop(s, h, &x, ingress, usrc) {
            return Plan::new(v);
        }
        let mut plan = Plan::new(Verdict::Slow);
        hop_mac(s, &x, ingress, &mut plan);
        plan.verdict = match self.route(s, h, &mut x, ingress, &mut plan) {
            Next::Done(v) => v,
            Next::Deliver => self.deliver(s, h),
            next => {
                if next == Next::Cross {
                    hop_mac(s, &x, ingress, &mut plan);
                }
                match self.check_egress(s, &x, ingress) {
                    Ok(eg) => self.advance(s, &x, eg, &mut plan),
                    Err(v) => v,
                }
            }
        };
        plan
    }

    /// Steps 3-8 for the arrival hop: expiry, ingress interface, packet
    /// size, transit from the internal network, source and destination
    /// addresses.
    #[inline]
    pub fn check_hop(
        &self,
        s: &[u8],
        h: &header::Packet<&[u8]>,
        x: &Hop,
        ingress: Option<usize>,
        usrc: &Ep,
    ) -> Result<(), Verdict> {
        use Verdict::*;
        let (hf, inf, nhops) = (x.hf, x.inf, x.nhops);
        let hop_off = x.hop_off();
        let hop = &s[hop_off..hop_off + HOP_LEN];
        let ts = be32(s, x.info_off() + 4);
        let pp = |code| Scmp(typ::PARAMETER_PROBLEM, code, hop_off as u16);
        // Step 3.
        if self.expired(ts, hop[1]) {
            return Err(pp(pp::PATH_EXPIRED));
        }
        let trav_in = if x.cons_dir {
            be16(hop, 2)
        } else {
            be16(hop, 4)
        };
        // Step 4.
        if let Some(i) = ingress {
            if trav_in != self.ifaces[i].ifid {
                let code = if x.cons_dir {
                    pp::UNKNOWN_HOP_FIELD_INGRESS
                } else {
                    pp::UNKNOWN_HOP_FIELD_EGRESS
                };
                return Err(pp(code));
            }
        }
        // Step 5.
        if usize::from(h.payload_len()) != s.len() - h.header_len() {
            return Err(Scmp(typ::PARAMETER_PROBLEM, pp::INVALID_PACKET_SIZE, 0));
        }
        // Step 6.
        if ingress.is_none() && hf != 0 {
            let first_after_xover = inf > 0 && x.meta.segment_of(hf - 1) == inf - 1;
            let pkt_in = if !x.peering && first_after_xover {
                let pi = x.info_at(inf - 1);
                let ph = x.hop_at(hf - 1);
                if s[pi] & path::INFO_CONS_DIR != 0 {
                    be16(s, ph + 2)
                } else {
                    be16(s, ph + 4)
                }
            } else {
                trav_in
            };
            let ok = self
                .iface(pkt_in)
                .is_some_and(|i| !self.ifaces[i].ours && self.ifaces[i].dst == *usrc);
            if !ok {
                return Err(Drop(self::Drop::TransitSource));
            }
        }
        // Step 7.
        let src_local = h.src_ia() == self.ia;
        let dst_local = h.dst_ia() == self.ia;
        let bad_src = Scmp(
            typ::PARAMETER_PROBLEM,
            pp::INVALID_SOURCE_ADDRESS,
            header::SRC_IA_OFFSET as u16,
        );
        let bad_dst = Scmp(
            typ::PARAMETER_PROBLEM,
            pp::INVALID_DESTINATION_ADDRESS,
            header::DST_IA_OFFSET as u16,
        );
        if ingress.is_none() {
            if hf == 0 && !src_local {
                return Err(bad_src);
            }
            if dst_local {
                return Err(bad_dst);
            }
        } else {
            if src_local {
                return Err(bad_src);
            }
            if (hf == nhops - 1) != dst_local {
                return Err(bad_dst);
            }
        }
        // Step 8.
        if src_local && !valid_host(h.src_code(), h.src_host_bytes()) {
            return Err(Scmp(typ::PARAMETER_PROBLEM, pp::INVALID_SOURCE_ADDRESS, 0));
        }
        Ok(())
    }

    /// Steps 11-13: an ingress alert goes to the slow path, a local
    /// destination to delivery; a crossover moves `x` to the next
    /// segment's first hop (PathMeta edit) and checks its expiry (its MAC
    /// is the caller's: [`hop_mac`] again).
    #[inline]
    pub fn route(
        &self,
        s: &[u8],
        h: &header::Packet<&[u8]>,
        x: &mut Hop,
        ingress: Option<usize>,
        plan: &mut Plan,
    ) -> Next {
        // Step 11.
        if ingress.is_some() {
            let alert = if x.cons_dir {
                path::HOP_INGRESS_ALERT
            } else {
                path::HOP_EGRESS_ALERT
            };
            if s[x.hop_off()] & alert != 0 {
                return Next::Done(Verdict::Slow);
            }
        }
        // Step 12.
        if h.dst_ia() == self.ia {
            return Next::Deliver;
        }
        // Step 13.
        if !x.peering && x.hf + 1 < x.nhops && x.meta.segment_of(x.hf + 1) != x.inf {
            x.cross(s);
            plan.meta(x.po, x.meta);
            let (io, ho) = (x.info_off(), x.hop_off());
            if self.expired(be32(s, io + 4), s[ho + 1]) {
                return Next::Done(Verdict::Scmp(
                    typ::PARAMETER_PROBLEM,
                    pp::PATH_EXPIRED,
                    ho as u16,
                ));
            }
            return Next::Cross;
        }
        Next::Transit
    }

    /// Steps 14-16: the egress interface (known; ours unless the packet
    /// came from a link), the link-type pair, an egress alert (slow path).
    /// The egress interface index.
    #[inline]
    pub fn check_egress(
        &self,
        s: &[u8],
        x: &Hop,
        ingress: Option<usize>,
    ) -> Result<usize, Verdict> {
        use Verdict::*;
        let hop_off = x.hop_off();
        let hop = &s[hop_off..hop_off + HOP_LEN];
        let pp = |code| Scmp(typ::PARAMETER_PROBLEM, code, hop_off as u16);
        // Step 14.
        let egress = if x.cons_dir {
            be16(hop, 4)
        } else {
            be16(hop, 2)
        };
        let eg = match self.iface(egress) {
            Some(e) if ingress.is_some() || self.ifaces[e].ours => e,
            _ => {
                let code = if x.cons_dir {
                    pp::UNKNOWN_HOP_FIELD_EGRESS
                } else {
                    pp::UNKNOWN_HOP_FIELD_INGRESS
                };
                return Err(pp(code));
            }
        };
        // Step 15.
        if let Some(i) = ingress {
            if !pair_ok(self.ifaces[i].link_to, self.ifaces[eg].link_to, x.xover) {
                return Err(if x.xover {
                    Scmp(
                        typ::PARAMETER_PROBLEM,
                        pp::INVALID_SEGMENT_CHANGE,
                        x.info_off() as u16,
                    )
                } else {
                    pp(pp::INVALID_PATH)
                });
            }
        }
        // Step 16.
        if self.ifaces[eg].ours {
            let alert = if x.cons_dir {
                path::HOP_EGRESS_ALERT
            } else {
                path::HOP_INGRESS_ALERT
            };
            if hop[0] & alert != 0 {
                return Err(Slow);
            }
        }
        Ok(eg)
    }

    /// Step 18 (for our own egress; a sibling's router does it): the SegID
    /// update in construction direction and the advance to the next hop.
    #[inline]
    pub fn advance(&self, s: &[u8], x: &Hop, eg: usize, plan: &mut Plan) -> Verdict {
        if self.ifaces[eg].ours {
            let io = x.info_off();
            if x.cons_dir && !x.peering {
                plan.edit(io + 2, be16(s, io + 2) ^ be16(s, x.hop_off() + 6));
            }
            if usize::from(x.meta.curr_hf) + 1 >= x.nhops {
                return Verdict::Drop(Drop::Undeliverable);
            }
            let mut meta = x.meta;
            meta.curr_hf += 1;
            meta.curr_inf = meta.segment_of(usize::from(meta.curr_hf)) as u8;
            plan.meta(x.po, meta);
        }
        Verdict::Forward(eg)
    }

    #[inline]
    pub(super) fn expired(&self, ts: u32, exp: u8) -> bool {
        let expiry = u64::from(ts) * 1_000_000_000 + (1 + u64::from(exp)) * EXP_UNIT_NS;
        expiry < self.now_ns
    }

    /// Step 12 / §11.5: the local destination and its port.
    pub fn deliver(&self, s: &[u8], h: &header::Packet<&[u8]>) -> Verdict {
        let bad_dst = Verdict::Scmp(
            typ::PARAMETER_PROBLEM,
            pp::INVALID_DESTINATION_ADDRESS,
            header::DST_IA_OFFSET as u16,
        );
        let ip = match h.dst_host() {
            HostAddr::V4(a) if !a.is_unspecified() => IpAddr::V4(a),
            HostAddr::V6(a) if !a.is_unspecified() && a.to_ipv4_mapped().is_none() => IpAddr::V6(a),
            HostAddr::Svc(v) => {
                let list = match v & !header::svc::MULTICAST {
                    header::svc::CS => &self.cs,
                    header::svc::DS | header::svc::WILDCARD => &self.ds,
                    _ => return Verdict::Scmp(typ::DESTINATION_UNREACHABLE, 0, 0),
                };
                return match list.first() {
                    Some(a) => Verdict::Deliver(Ep::from(*a)),
                    None => Verdict::Scmp(typ::DESTINATION_UNREACHABLE, 0, 0),
                };
            }
            _ => return bad_dst,
        };
        match l4_port(s, h.header_len(), h.next_hdr()) {
            Some(port) => Verdict::Deliver(Ep::from(SocketAddr::new(ip, port))),
            None => Verdict::Drop(Drop::Undeliverable),
        }
    }

    /// §11.2 checks for a one-hop path (the MAC work is done in `finish`).
    pub fn onehop_check(&self, h: &header::Packet<&[u8]>, ingress: Option<usize>) -> Verdict {
        let Ok(p) = path::OneHopPath::new_checked(h.path()) else {
            return Verdict::Drop(Drop::Malformed);
        };
        if !p.info().cons_dir() {
            return Verdict::Drop(Drop::OneHop);
        }
        match ingress {
            None => {
                let eg = p.first_hop().cons_egress();
                match self.iface(eg) {
                    Some(i)
                        if h.src_ia() == self.ia
                            && self.ifaces[i].ours
                            && self.ifaces[i].neighbor == h.dst_ia() =>
                    {
                        Verdict::Forward(i)
                    }
                    _ => Verdict::Drop(Drop::OneHop),
                }
            }
            Some(i) => {
                if h.dst_ia() != self.ia || h.src_ia() != self.ifaces[i].neighbor {
                    return Verdict::Drop(Drop::OneHop);
                }
                match self.deliver(h.as_ref(), h) {
                    v @ Verdict::Deliver(_) => v,
                    _ => Verdict::Drop(Drop::OneHop),
                }
            }
        }
    }

    /// One-hop MAC work (§11.2): outbound verifies FirstHop and chains the
    /// SegID; inbound writes SecondHop with our MAC. False to drop.
    fn onehop_apply(&self, s: &mut [u8], ingress: Option<usize>) -> bool {
        let po = {
            let h = header::Packet::new_unchecked(&*s);
            h.path_offset()
        };
        let info = path::InfoField::new_unchecked(&s[po..po + INFO_LEN]);
        let (seg, ts) = (info.seg_id(), info.timestamp());
        let f = path::HopField::new_unchecked(&s[po + INFO_LEN..po + INFO_LEN + HOP_LEN]);
        let (exp, fin, feg, fmac) = (f.exp_time(), f.cons_ingress(), f.cons_egress(), f.mac());
        match ingress {
            None => {
                let m = self.mac.cmac(&mac_input(seg, ts, exp, fin, feg));
                if !mac_equal(&m, &fmac) {
                    return false;
                }
                let v = seg ^ u16::from_be_bytes([fmac[0], fmac[1]]);
                s[po + 2..po + 4].copy_from_slice(&v.to_be_bytes());
            }
            Some(i) => {
                let x = self.ifaces[i].ifid;
                let m = self.mac.cmac(&mac_input(seg, ts, exp, x, 0));
                let o = po + INFO_LEN + HOP_LEN;
                let mut hop = path::HopField::new_unchecked(&mut s[o..o + HOP_LEN]);
                hop.set_flags(0);
                hop.set_exp_time(exp);
                hop.set_cons_ingress(x);
                hop.set_cons_egress(0);
                let mut mac = [0u8; 6];
                mac.copy_from_slice(&m[..6]);
                hop.set_mac(mac);
            }
        }
        true
    }

    /// Applies a plan to its packet with the MACs computed. Returns the
    /// verdict actually taken and, for SCMP, the reply (the packet itself
    /// is then dropped by the caller). Packets forwarded or delivered are
    /// rewritten in place.
    pub fn finish(
        &mut self,
        p: &mut Packet,
        plan: &Plan,
        macs: &[[u8; 16]],
    ) -> (Verdict, Option<Packet>) {
        let (v, passed) = plan.decide(macs);
        let fr = &plan.frame;
        if !matches!(v, Verdict::Drop(Drop::Underlay | Drop::UnknownLink)) {
            self.count_in(fr);
        }
        match v {
            Verdict::Drop(d) => self.count_drop(d),
            Verdict::Slow => self.stats.slow += 1,
            Verdict::Forward(_) | Verdict::Deliver(_) | Verdict::Scmp(..) => {
                let edits = plan.edits().iter().filter(|e| e.stage <= passed);
                let delta = apply_edits(fr.scion_mut(p.data_mut()), edits);
                return self.dispatch(p, fr, v, delta);
            }
        }
        (v, None)
    }

    /// Counts a frame received on its link (SCION bytes).
    #[inline]
    pub fn count_in(&mut self, fr: &Frame) {
        let c = &mut self.stats.ifs[fr.ingress().unwrap_or(self.ifaces.len())];
        c.in_pkts += 1;
        c.in_bytes += u64::from(fr.scion_len);
    }

    /// Counts a silent drop.
    #[inline]
    pub fn count_drop(&mut self, d: Drop) {
        self.stats.drops[d as usize] += 1;
    }

    /// The end of the pipeline for a packet whose path edits are applied
    /// (`delta`: their ones'-complement change): the one-hop MAC work, the
    /// underlay rewrite and egress count, or the SCMP reply.
    pub fn dispatch(
        &mut self,
        p: &mut Packet,
        fr: &Frame,
        v: Verdict,
        delta: u32,
    ) -> (Verdict, Option<Packet>) {
        if let Verdict::Scmp(t, c, ptr) = v {
            return self.scmp(p, fr, t, c, ptr);
        }
        let s = fr.scion_mut(p.data_mut());
        if s[8] != path_type::ONEHOP {
            self.send(p, fr, v, delta);
            return (v, None);
        }
        let before = checksum::sum(s);
        if !self.onehop_apply(s, fr.ingress()) {
            self.count_drop(Drop::OneHop);
            return (Verdict::Drop(Drop::OneHop), None);
        }
        let after = checksum::sum(s);
        self.send(p, fr, v, u32::from(!before) + u32::from(after));
        (v, None)
    }

    /// The SCMP reply to a packet (path edits applied), counted; a drop
    /// (`no_scmp`) when there is none to send.
    pub fn scmp(
        &mut self,
        p: &Packet,
        fr: &Frame,
        t: u8,
        c: u8,
        ptr: u16,
    ) -> (Verdict, Option<Packet>) {
        match self.scmp_reply(p, fr, t, c, ptr) {
            None => {
                self.count_drop(Drop::NoScmp);
                (Verdict::Drop(Drop::NoScmp), None)
            }
            Some(r) => {
                let k = SCMP_CODES
                    .iter()
                    .position(|&x| x == c && t == typ::PARAMETER_PROBLEM)
                    .unwrap_or(9);
                self.stats.scmp[k] += 1;
                (Verdict::Scmp(t, c, ptr), Some(r))
            }
        }
    }

    /// Rewrites the underlay of a forwarded or delivered packet and counts
    /// it on its egress.
    fn send(&mut self, p: &mut Packet, fr: &Frame, v: Verdict, delta: u32) {
        let (src, dst, out_idx) = match v {
            Verdict::Forward(e) => (self.ifaces[e].src, self.ifaces[e].dst, e),
            Verdict::Deliver(a) => (self.internal, a, self.ifaces.len()),
            _ => return,
        };
        let c = &mut self.stats.ifs[out_idx];
        c.out_pkts += 1;
        c.out_bytes += u64::from(fr.scion_len);
        rewrite_underlay(p, fr, &src, &dst, delta);
    }

    /// Builds the SCMP error reply (§10) from the packet as it is now.
    fn scmp_reply(&self, p: &Packet, fr: &Frame, t: u8, code: u8, ptr: u16) -> Option<Packet> {
        let s = fr.scion(p.data());
        let h = header::Packet::new_checked(s).ok()?;
        if h.path_type() != path_type::SCION {
            return None;
        }
        let (upper, l4) = sw::upper_layer(s, h.header_len(), h.next_hdr()).ok()?;
        if upper == proto::SCMP && s.get(l4).is_none_or(|&ty| ty < 128) {
            return None;
        }
        let sp = StandardPath::new_checked(h.path()).ok()?;
        let mut rev = StandardRepr::parse(&sp).ok()?.reversed().ok()?;
        let peering_of = |r: &StandardRepr| {
            let inf = r.infos[usize::from(r.meta.curr_inf)];
            let s0 = usize::from(r.meta.seg_len[0]);
            let hf = usize::from(r.meta.curr_hf);
            inf.peer
                && r.meta.seg_len[1] > 0
                && r.meta.seg_len[2] == 0
                && (hf + 1 == s0 || hf == s0)
        };
        let inc = |r: &mut StandardRepr| -> Option<()> {
            let n = r.meta.num_hops();
            if usize::from(r.meta.curr_hf) + 1 >= n {
                return None;
            }
            r.meta.curr_hf += 1;
            r.meta.curr_inf = r.meta.segment_of(usize::from(r.meta.curr_hf)) as u8;
            Some(())
        };
        let peering = peering_of(&rev);
        let hf = usize::from(rev.meta.curr_hf);
        let is_xover = hf + 1 < rev.meta.num_hops()
            && rev.meta.segment_of(hf + 1) != usize::from(rev.meta.curr_inf);
        if is_xover && !peering {
            inc(&mut rev)?;
        }
        if fr.ingress != NO_IF {
            let ci = usize::from(rev.meta.curr_inf);
            if rev.infos[ci].cons_dir && !peering {
                let m = rev.hops[usize::from(rev.meta.curr_hf)].mac;
                rev.infos[ci].seg_id ^= u16::from_be_bytes([m[0], m[1]]);
            }
            inc(&mut rev)?;
        }
        let path_len = rev.buffer_len().ok()?;
        let hdr = header::Repr {
            version: 0,
            traffic_class: h.traffic_class(),
            flow_id: h.flow_id(),
            next_hdr: proto::SCMP,
            path_type: path_type::SCION,
            path_len,
            payload_len: 0,
            dst_ia: h.src_ia(),
            src_ia: self.ia,
            dst_host: h.src_host(),
            src_host: self.internal_ip,
        };
        let hlen = hdr.buffer_len();
        if !hlen.is_multiple_of(4) || hlen > header::MAX_HEADER_LEN {
            return None;
        }
        let msg = match t {
            typ::PARAMETER_PROBLEM => scmp::Message::ParameterProblem { code, pointer: ptr },
            _ => scmp::Message::DestinationUnreachable { code },
        };
        let quote = s.len().min(MAX_SCMP_LEN.saturating_sub(hlen + 8));
        let srepr = scmp::Repr {
            message: msg,
            data: &s[..quote],
        };
        let l4len = srepr.buffer_len();
        let hdr = header::Repr {
            payload_len: l4len as u16,
            ..hdr
        };
        let (usrc, udst) = match fr.ingress {
            NO_IF => (self.internal, fr.src),
            i => (
                self.ifaces[usize::from(i)].src,
                self.ifaces[usize::from(i)].dst,
            ),
        };
        let ip_len = if udst.v4 { 20 } else { 40 };
        let total = ETH_LEN + ip_len + 8 + hlen + l4len;
        let mut out = Packet::new(total);
        {
            let d = out.data_mut();
            let s2 = &mut d[ETH_LEN + ip_len + 8..];
            let mut hp = header::Packet::new_unchecked(&mut s2[..]);
            hdr.emit(&mut hp).ok()?;
            rev.emit(&mut StandardPath::new_unchecked(hp.path_mut()))
                .ok()?;
            let mut sm = scmp::Packet::new_unchecked(&mut s2[hlen..hlen + l4len]);
            srepr.emit(&mut sm).ok()?;
            let hp = header::Packet::new_unchecked(&s2[..hlen]);
            let c = sw::udp::checksum(&hp, proto::SCMP, &s2[hlen..hlen + l4len], 2);
            s2[hlen + 2..hlen + 4].copy_from_slice(&c.to_be_bytes());
        }
        write_underlay(out.data_mut(), &usrc, &udst, hlen + l4len, None);
        Some(out)
    }
}

/// Whether a source host is a valid, non-IPv4-mapped IP address (step 8).
fn valid_host(code: u8, b: &[u8]) -> bool {
    match HostAddr::decode(code, b) {
        HostAddr::V4(_) => true,
        HostAddr::V6(a) => a.to_ipv4_mapped().is_none(),
        _ => false,
    }
}

/// The underlay port for a local delivery (§11.5).
fn l4_port(s: &[u8], hdr_len: usize, next_hdr: u8) -> Option<u16> {
    let (upper, off) = sw::upper_layer(s, hdr_len, next_hdr).ok()?;
    let l4 = &s[off..];
    match upper {
        proto::UDP | proto::TCP => (l4.len() >= 4).then(|| be16(l4, 2)),
        proto::SCMP => {
            let t = *l4.first()?;
            match t {
                typ::ECHO_REQUEST | typ::TRACEROUTE_REQUEST => Some(END_HOST_PORT),
                typ::ECHO_REPLY | typ::TRACEROUTE_REPLY => (l4.len() >= 6).then(|| be16(l4, 4)),
                t if t < 128 => {
                    let q = scmp::Packet::new_checked(l4).ok()?;
                    let quote = q.data();
                    let qh = header::Packet::new_checked(quote).ok()?;
                    let (qu, qo) = sw::upper_layer(quote, qh.header_len(), qh.next_hdr()).ok()?;
                    let ql = &quote[qo..];
                    match qu {
                        proto::UDP if ql.len() >= 2 => Some(be16(ql, 0)),
                        proto::SCMP if ql.len() >= 6 && ql[0] >= 128 => Some(be16(ql, 4)),
                        _ => None,
                    }
                }
                _ => Some(END_HOST_PORT),
            }
        }
        _ => Some(END_HOST_PORT),
    }
}

/// Sum of the eight 16-bit words of an address (an IPv4-mapped address
/// sums like its four IPv4 bytes: the 0xffff word is a ones'-complement
/// zero).
#[inline]
fn addr_sum(a: &[u8; 16]) -> u32 {
    let x = u128::from_be_bytes(*a);
    let w =
        |v: u64| ((v >> 48) + ((v >> 32) & 0xffff) + ((v >> 16) & 0xffff) + (v & 0xffff)) as u32;
    w((x >> 64) as u64) + w(x as u64)
}

#[inline]
pub(super) fn fold(mut s: u32) -> u16 {
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    s as u16
}

/// Sum of the UDP pseudo-header addresses and the ports of an endpoint pair
/// (what changes when the underlay is rewritten; protocol and length stay).
#[inline]
pub(super) fn ends_sum(src: &Ep, dst: &Ep) -> u32 {
    addr_sum(&src.ip) + addr_sum(&dst.ip) + u32::from(src.port) + u32::from(dst.port)
}

/// Writes Ethernet (zero addresses), IP and UDP headers in front of a SCION
/// packet of `scion_len` bytes that starts at `ETH_LEN + ip_len + 8`. The
/// UDP checksum is `csum` when given, else computed over the payload.
pub(super) fn write_underlay(
    d: &mut [u8],
    src: &Ep,
    dst: &Ep,
    scion_len: usize,
    csum: Option<u16>,
) {
    let ip_len = if dst.v4 { 20 } else { 40 };
    d[..12].fill(0);
    let u = ETH_LEN + ip_len;
    let ulen = (8 + scion_len) as u16;
    if dst.v4 {
        d[12..14].copy_from_slice(&[0x08, 0x00]);
        let ip = &mut d[ETH_LEN..u];
        let tl = 20 + ulen;
        let v4 = |a: &[u8; 16]| u32::from(be16(a, 12)) + u32::from(be16(a, 14));
        let sum = 0x4500 + u32::from(tl) + 0x4000 + 0x4011 + v4(&src.ip) + v4(&dst.ip);
        ip[..12].copy_from_slice(&[0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0]);
        ip[2..4].copy_from_slice(&tl.to_be_bytes());
        ip[10..12].copy_from_slice(&(!fold(sum)).to_be_bytes());
        ip[12..16].copy_from_slice(&src.ip[12..]);
        ip[16..20].copy_from_slice(&dst.ip[12..]);
    } else {
        d[12..14].copy_from_slice(&[0x86, 0xdd]);
        let ip = &mut d[ETH_LEN..u];
        ip[..8].copy_from_slice(&[0x60, 0, 0, 0, 0, 0, 17, 64]);
        ip[4..6].copy_from_slice(&ulen.to_be_bytes());
        ip[8..24].copy_from_slice(&src.ip);
        ip[24..40].copy_from_slice(&dst.ip);
    }
    d[u..u + 2].copy_from_slice(&src.port.to_be_bytes());
    d[u + 2..u + 4].copy_from_slice(&dst.port.to_be_bytes());
    d[u + 4..u + 6].copy_from_slice(&ulen.to_be_bytes());
    let c = match csum {
        Some(c) => c,
        None => {
            d[u + 6..u + 8].fill(0);
            let ps = addr_sum(&src.ip) + addr_sum(&dst.ip) + 17 + u32::from(ulen);
            let s = !checksum::combine(&[fold(ps), checksum::sum(&d[u..u + usize::from(ulen)])]);
            if s == 0 {
                0xffff
            } else {
                s
            }
        }
    };
    d[u + 6..u + 8].copy_from_slice(&c.to_be_bytes());
}

/// Replaces the frame's underlay with one from `src` to `dst`, keeping the
/// SCION packet; the UDP checksum is adjusted incrementally (RFC 1624) from
/// the received one: old addresses and ports out, new ones in, plus
/// `delta`, the ones'-complement change of the SCION bytes.
fn rewrite_underlay(p: &mut Packet, fr: &Frame, src: &Ep, dst: &Ep, delta: u32) {
    let so = usize::from(fr.scion_off);
    let sl = usize::from(fr.scion_len);
    let old_csum = be16(p.data(), so - 2);
    let csum = if old_csum == 0 && fr.src.v4 {
        None
    } else {
        let old = fold(ends_sum(&fr.src, &fr.dst));
        let s = !fold(u32::from(!old_csum) + u32::from(!old) + ends_sum(src, dst) + delta);
        Some(if s == 0 { 0xffff } else { s })
    };
    let new_off = ETH_LEN + if dst.v4 { 20 } else { 40 } + 8;
    if new_off > so {
        p.push(new_off - so);
    } else if new_off < so {
        p.pull(so - new_off);
    }
    let extra = p.len() - new_off - sl;
    if extra > 0 {
        p.take(extra);
    }
    write_underlay(p.data_mut(), src, dst, sl, csum);
}

/// Helper for tests and the element: the socket address of an endpoint.
pub fn ep_socket(e: &Ep) -> SocketAddr {
    e.to_socket()
}

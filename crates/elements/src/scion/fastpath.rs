//! The `SCIONRouter`'s fast path (`IMPL fast`): the common case of a
//! border router, a standard-path packet arriving on one of our links over
//! IPv4 that transits (one hop-field MAC) or crosses over (two) to an
//! interface reached over IPv4, handled in three passes over the batch
//! with compact per-packet records and nothing else.
//!
//! 1. [`FastPath::classify`] reads each frame once at fixed offsets (IPv4
//!    without options, UDP at 34, SCION at 42), checks exactly what §9.3
//!    checks on that route and keeps a [`Rec`]: the expected MACs, the
//!    SegID and PathMeta values to write, the ingress and egress and the
//!    part of the UDP checksum adjustment that depends on the received
//!    underlay. The MAC input blocks (already XORed with the CMAC subkey)
//!    go into one array for the whole batch. A frame that leaves this
//!    route anywhere (IPv6 or IP options, the internal network, an
//!    extension header, peering, alerts, expiry, local delivery, an error
//!    of any kind, a zero UDP checksum) takes the general pipeline of
//!    [`Dataplane::stage1`] instead, still sharing the batched AES.
//! 2. All MAC blocks of the batch are encrypted in one call (VAES, 16
//!    blocks per pass).
//! 3. [`FastPath::apply`] compares the MACs, writes the path changes,
//!    adjusts the UDP checksum incrementally and writes the new underlay
//!    from a per-interface 42-byte template. A MAC mismatch sends the
//!    frame (still unchanged) through the general pipeline, which builds
//!    the SCMP error.
//!
//! Every frame the fast path accepts gets the bytes, verdict and counters
//! the general pipeline gives it (the differential tests compare both).

use super::core::{ends_sum, fold, pair_ok, write_underlay, Dataplane, Ep, Plan, Stats, Verdict};
use super::mac::mac_input;
use linerate_runtime::{Batch, Packet};
use linerate_wire::scion::path::{self, Meta, HOP_LEN, INFO_LEN, MAX_HOPS};
use linerate_wire::scion::{path_type, proto};

/// Offset of the IPv4 header.
const IP: usize = 14;
/// Offset of the UDP header (IPv4 without options).
const UDP: usize = 34;
/// Offset of the SCION header.
const SO: usize = 42;

/// What pass 1 learnt about a frame on the fast route.
#[derive(Debug, Clone, Copy, Default)]
struct Rec {
    /// Expected MACs (6 bytes, little-endian).
    exp: [u64; 2],
    /// `!UDP checksum + !sum(old addresses and ports)`, the received part
    /// of the checksum adjustment.
    csum_base: u32,
    /// PathMeta to write (the received word when it does not change).
    meta: u32,
    /// SegID writes: offsets in the SCION header (0: none) and values.
    seg_off: [u16; 2],
    seg: [u16; 2],
    /// Offset of the path in the SCION header.
    po: u16,
    /// SCION length.
    len: u16,
    /// MACs to check: 1 or 2; 0 for a frame on the general pipeline.
    nmacs: u8,
    ingress: u8,
    egress: u8,
}

/// An external link of this router reached over IPv4, as found in a frame.
#[derive(Debug, Clone, Copy)]
struct Link {
    /// Local address and port (frame destination): `ip << 16 | port`.
    local: u64,
    /// Remote address and port (frame source).
    remote: u64,
    idx: u8,
}

/// The underlay the fast path writes for an egress interface.
#[derive(Debug, Clone, Copy)]
struct Out {
    /// Ethernet, IPv4 and UDP headers with zero lengths and checksums.
    hdr: [u8; SO],
    /// IPv4 header sum without the total length.
    ip_sum: u32,
    /// Sum of the new addresses and ports (UDP pseudo-header).
    ends: u32,
    /// Whether the interface is reached over IPv4 (else: general path).
    v4: bool,
}

/// The fast path's tables and per-batch scratch (reused: no allocation once
/// the largest batch has been seen).
pub struct FastPath {
    links: Vec<Link>,
    outs: Vec<Out>,
    recs: Vec<Rec>,
    blocks: Vec<[u8; 16]>,
    plans: Vec<Plan>,
    ports: Vec<u8>,
}

#[inline]
fn be16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}

#[inline]
fn be32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

#[inline]
fn be64(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_be_bytes(a)
}

/// The 6-byte MAC at `o`, little-endian.
#[inline]
fn mac48(b: &[u8], o: usize) -> u64 {
    let m = &b[o..o + 6];
    u64::from_le_bytes([m[0], m[1], m[2], m[3], m[4], m[5], 0, 0])
}

/// Sum of an IPv4 address as [`ends_sum`] counts it (IPv4-mapped: the
/// 0xffff word included).
#[inline]
fn v4_sum(a: u32) -> u32 {
    0xffff + (a >> 16) + (a & 0xffff)
}

impl FastPath {
    /// The tables for a data plane.
    pub fn new(dp: &Dataplane) -> FastPath {
        let key = |e: &Ep| {
            let ip = u32::from_be_bytes([e.ip[12], e.ip[13], e.ip[14], e.ip[15]]);
            u64::from(ip) << 16 | u64::from(e.port)
        };
        let links = dp
            .ifaces
            .iter()
            .enumerate()
            .filter(|(_, f)| f.ours && f.local.v4 && f.remote.v4)
            .map(|(i, f)| Link {
                local: key(&f.local),
                remote: key(&f.remote),
                idx: i as u8,
            })
            .collect();
        let outs = dp
            .ifaces
            .iter()
            .map(|f| {
                let mut hdr = [0u8; SO];
                if f.dst.v4 {
                    write_underlay(&mut hdr, &f.src, &f.dst, 0, Some(0));
                }
                let v4 = |a: &[u8; 16]| u32::from(be16(a, 12)) + u32::from(be16(a, 14));
                Out {
                    hdr,
                    ip_sum: 0x4500 + 0x4000 + 0x4011 + v4(&f.src.ip) + v4(&f.dst.ip),
                    ends: ends_sum(&f.src, &f.dst),
                    v4: f.dst.v4,
                }
            })
            .collect();
        FastPath {
            links,
            outs,
            recs: Vec::new(),
            blocks: Vec::new(),
            plans: Vec::new(),
            ports: Vec::new(),
        }
    }

    /// Runs a batch through the router. Returns the batches for outputs 0
    /// (sent: forwarded, delivered, SCMP replies), 1 (slow path) and 2
    /// (dropped), in arrival order; when every frame is sent, output 0 is
    /// the input batch itself.
    pub fn process(&mut self, dp: &mut Dataplane, mut batch: Batch) -> [Batch; 3] {
        self.recs.clear();
        self.blocks.clear();
        self.plans.clear();
        self.ports.clear();
        for p in batch.iter() {
            let rec = match self.classify(dp, p.data()) {
                Some((rec, b)) => {
                    for x in &b[..usize::from(rec.nmacs)] {
                        self.blocks.push(dp.hop_mac().prepare(x));
                    }
                    rec
                }
                None => {
                    let plan = dp.stage1(p.data());
                    for x in &plan.blocks[..usize::from(plan.nmacs)] {
                        self.blocks.push(dp.hop_mac().prepare(x));
                    }
                    self.plans.push(plan);
                    Rec::default()
                }
            };
            self.recs.push(rec);
        }
        dp.hop_mac().finish_blocks(&mut self.blocks);
        let (mut k, mut g, mut others) = (0, 0, 0usize);
        for (p, rec) in batch.as_mut_slice().iter_mut().zip(&self.recs) {
            let port = if rec.nmacs > 0 {
                let n = usize::from(rec.nmacs);
                let port = self.apply(dp, p, rec, &self.blocks[k..k + n]);
                k += n;
                port
            } else {
                let plan = &self.plans[g];
                g += 1;
                let n = usize::from(plan.nmacs);
                let port = finish(dp, p, plan, &self.blocks[k..k + n]);
                k += n;
                port
            };
            others += usize::from(port != 0);
            self.ports.push(port);
        }
        let mut outs = [Batch::new(), Batch::new(), Batch::new()];
        if others == 0 {
            outs[0] = batch;
        } else {
            for (p, &port) in batch.drain().zip(&self.ports) {
                if let Some(o) = outs.get_mut(usize::from(port)) {
                    o.push(p);
                }
            }
        }
        outs
    }

    /// Pass 1 for one frame: its record and prepared MAC blocks if it is on
    /// the fast route (see the module documentation), else `None`.
    #[inline]
    fn classify(&self, dp: &Dataplane, f: &[u8]) -> Option<(Rec, [[u8; 16]; 2])> {
        use path::{HOP_EGRESS_ALERT, HOP_INGRESS_ALERT, INFO_CONS_DIR, INFO_PEER};
        // Underlay: Ethernet, IPv4 without options, not fragmented, UDP.
        if f.len() < SO || be16(f, 12) != 0x0800 || f[IP] != 0x45 || f[IP + 9] != 17 {
            return None;
        }
        let tl = usize::from(be16(f, IP + 2));
        let ulen = usize::from(be16(f, UDP + 4));
        if tl < 28 || tl > f.len() - IP || be16(f, IP + 6) & 0x3fff != 0 {
            return None;
        }
        if ulen < 8 || UDP + ulen > IP + tl {
            return None;
        }
        let src_ip = be32(f, IP + 12);
        let dst_ip = be32(f, IP + 16);
        let (sport, dport) = (be16(f, UDP), be16(f, UDP + 2));
        let old_csum = be16(f, UDP + 6);
        if old_csum == 0 {
            return None;
        }
        let local = u64::from(dst_ip) << 16 | u64::from(dport);
        let remote = u64::from(src_ip) << 16 | u64::from(sport);
        let ingress = usize::from(
            self.links
                .iter()
                .find(|l| l.local == local && l.remote == remote)?
                .idx,
        );
        let in_if = &dp.ifaces[ingress];
        // SCION common and address header; a standard path right after
        // them, no extension header.
        let s = &f[SO..SO + ulen - 8];
        if s.len() < 28 {
            return None;
        }
        let hlen = usize::from(s[5]) * 4;
        let po = 28 + 4 * (usize::from(s[9] >> 4 & 3) + 1) + 4 * (usize::from(s[9] & 3) + 1);
        if hlen < po || s.len() < hlen || s[8] != path_type::SCION {
            return None;
        }
        if s[4] == proto::HBH || s[4] == proto::E2E {
            return None;
        }
        if hlen < po + 4 {
            return None;
        }
        let word = be32(s, po);
        let m = Meta::from_word(word);
        let ninf = m.num_inf().ok()?;
        let nhops = m.num_hops();
        if nhops > MAX_HOPS || po + 4 + INFO_LEN * ninf + HOP_LEN * nhops > hlen {
            return None;
        }
        let hf = usize::from(m.curr_hf);
        let inf = usize::from(m.curr_inf);
        // Step 1; step 7 for a transit packet from a neighbour (not from,
        // not to this AS, so not at the last hop).
        if ninf == 0 || hf + 1 >= nhops || inf >= ninf || inf != m.segment_of(hf) {
            return None;
        }
        let info_at = |i: usize| po + 4 + INFO_LEN * i;
        let hop_at = |j: usize| po + 4 + INFO_LEN * ninf + HOP_LEN * j;
        let info_off = info_at(inf);
        let hop_off = hop_at(hf);
        let flags = s[info_off];
        let mut cons_dir = flags & INFO_CONS_DIR != 0;
        // Step 2 (no peering on the fast route).
        if flags & INFO_PEER != 0 || m.seg_len.contains(&1) {
            return None;
        }
        // Steps 3 to 5, 7 and 11.
        let ts = be32(s, info_off + 4);
        let hop = &s[hop_off..hop_off + HOP_LEN];
        let (cons_in, cons_eg) = (be16(hop, 2), be16(hop, 4));
        let trav_in = if cons_dir { cons_in } else { cons_eg };
        let in_alert = if cons_dir {
            HOP_INGRESS_ALERT
        } else {
            HOP_EGRESS_ALERT
        };
        if dp.expired(ts, hop[1])
            || trav_in != in_if.ifid
            || usize::from(be16(s, 6)) != s.len() - hlen
            || be64(s, 20) == dp.ia.0
            || be64(s, 12) == dp.ia.0
            || hop[0] & in_alert != 0
        {
            return None;
        }
        let mut rec = Rec {
            csum_base: u32::from(!old_csum)
                + u32::from(!fold(
                    v4_sum(src_ip) + v4_sum(dst_ip) + u32::from(sport) + u32::from(dport),
                )),
            meta: word,
            po: po as u16,
            len: s.len() as u16,
            nmacs: 1,
            ingress: ingress as u8,
            ..Rec::default()
        };
        // Steps 9 and 10.
        let mut seg_id = be16(s, info_off + 2);
        let mut nseg = 0;
        if !cons_dir {
            seg_id ^= be16(hop, 6);
            rec.seg_off[0] = (info_off + 2) as u16;
            rec.seg[0] = seg_id;
            nseg = 1;
        }
        let mut blocks = [mac_input(seg_id, ts, hop[1], cons_in, cons_eg), [0; 16]];
        rec.exp[0] = mac48(hop, 6);
        // Step 13.
        let xover = m.segment_of(hf + 1) != inf;
        let mut meta = m;
        let (mut hop_off, mut info_off) = (hop_off, info_off);
        if xover {
            meta.curr_hf += 1;
            meta.curr_inf = meta.segment_of(usize::from(meta.curr_hf)) as u8;
            info_off = info_at(usize::from(meta.curr_inf));
            hop_off = hop_at(hf + 1);
            cons_dir = s[info_off] & INFO_CONS_DIR != 0;
            let h2 = &s[hop_off..hop_off + HOP_LEN];
            let ts2 = be32(s, info_off + 4);
            if dp.expired(ts2, h2[1]) {
                return None;
            }
            blocks[1] = mac_input(be16(s, info_off + 2), ts2, h2[1], be16(h2, 2), be16(h2, 4));
            rec.exp[1] = mac48(h2, 6);
            rec.nmacs = 2;
        }
        // Steps 14 and 15.
        let hop = &s[hop_off..hop_off + HOP_LEN];
        let egress = dp.iface(if cons_dir { be16(hop, 4) } else { be16(hop, 2) })?;
        let eg_if = &dp.ifaces[egress];
        if !self.outs[egress].v4 || !pair_ok(in_if.link_to, eg_if.link_to, xover) {
            return None;
        }
        rec.egress = egress as u8;
        if eg_if.ours {
            // Steps 16 and 18.
            let eg_alert = if cons_dir {
                HOP_EGRESS_ALERT
            } else {
                HOP_INGRESS_ALERT
            };
            if hop[0] & eg_alert != 0 || usize::from(meta.curr_hf) + 1 >= nhops {
                return None;
            }
            if cons_dir {
                rec.seg_off[nseg] = (info_off + 2) as u16;
                rec.seg[nseg] = be16(s, info_off + 2) ^ be16(hop, 6);
            }
            meta.curr_hf += 1;
            meta.curr_inf = meta.segment_of(usize::from(meta.curr_hf)) as u8;
        }
        if xover || eg_if.ours {
            rec.meta = meta.to_word();
        }
        Some((rec, blocks))
    }

    /// Pass 3 for a frame on the fast route: the output port.
    #[inline]
    fn apply(&self, dp: &mut Dataplane, p: &mut Packet, rec: &Rec, macs: &[[u8; 16]]) -> u8 {
        let got = |m: &[u8; 16]| u64::from_le_bytes([m[0], m[1], m[2], m[3], m[4], m[5], 0, 0]);
        let mut bad = got(&macs[0]) ^ rec.exp[0];
        if let Some(m) = macs.get(1) {
            bad |= got(m) ^ rec.exp[1];
        }
        if bad != 0 {
            // The general pipeline answers with SCMP (the frame is unchanged).
            let plan = dp.stage1(p.data());
            let n = usize::from(plan.nmacs);
            let mut m = [[0u8; 16]; 2];
            for (x, b) in m.iter_mut().zip(&plan.blocks).take(n) {
                *x = dp.hop_mac().cmac(b);
            }
            return finish(dp, p, &plan, &m[..n]);
        }
        let len = usize::from(rec.len);
        let d = p.data_mut();
        let s = &mut d[SO..SO + len];
        // Ones'-complement change of the SCION bytes. Every sum here is
        // positive, so folding any sum congruent modulo 0xffff to the
        // general pipeline's (which writes PathMeta once per stage) gives
        // the same checksum.
        let mut delta = 0u32;
        for (&o, &v) in rec.seg_off.iter().zip(&rec.seg) {
            if o != 0 {
                let o = usize::from(o);
                delta += u32::from(!be16(s, o)) + u32::from(v);
                s[o..o + 2].copy_from_slice(&v.to_be_bytes());
            }
        }
        let po = usize::from(rec.po);
        let old = be32(s, po);
        delta += u32::from(!(old >> 16) as u16)
            + u32::from(!(old as u16))
            + (rec.meta >> 16)
            + (rec.meta & 0xffff);
        s[po..po + 4].copy_from_slice(&rec.meta.to_be_bytes());
        let out = &self.outs[usize::from(rec.egress)];
        let c = !fold(rec.csum_base + out.ends + delta);
        let csum = if c == 0 { 0xffff } else { c };
        let ulen = (8 + len) as u16;
        let tl = 20 + ulen;
        let h = &mut d[..SO];
        h.copy_from_slice(&out.hdr);
        h[IP + 2..IP + 4].copy_from_slice(&tl.to_be_bytes());
        h[IP + 10..IP + 12].copy_from_slice(&(!fold(out.ip_sum + u32::from(tl))).to_be_bytes());
        h[UDP + 4..UDP + 6].copy_from_slice(&ulen.to_be_bytes());
        h[UDP + 6..UDP + 8].copy_from_slice(&csum.to_be_bytes());
        let extra = p.len() - SO - len;
        if extra > 0 {
            p.take(extra);
        }
        count(&mut dp.stats, rec, u64::from(rec.len));
        0
    }
}

/// Counts a forwarded frame on its ingress and egress.
#[inline]
fn count(st: &mut Stats, rec: &Rec, bytes: u64) {
    let i = &mut st.ifs[usize::from(rec.ingress)];
    i.in_pkts += 1;
    i.in_bytes += bytes;
    let e = &mut st.ifs[usize::from(rec.egress)];
    e.out_pkts += 1;
    e.out_bytes += bytes;
}

/// The general pipeline's second stage for one frame: the output port;
/// an SCMP reply takes the frame's place.
#[inline]
fn finish(dp: &mut Dataplane, p: &mut Packet, plan: &Plan, macs: &[[u8; 16]]) -> u8 {
    let (v, reply) = dp.finish(p, plan, macs);
    match v {
        Verdict::Forward(_) | Verdict::Deliver(_) => 0,
        Verdict::Scmp(..) => match reply {
            Some(r) => {
                *p = r;
                0
            }
            // Not reached: `finish` turns an SCMP verdict without a reply
            // into a drop. Discarded, as the general element did.
            None => 3,
        },
        Verdict::Slow => 1,
        Verdict::Drop(_) => 2,
    }
}

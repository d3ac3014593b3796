//! The `SCIONRouter`'s fast path (`IMPL fast`): the common case of a
//! border router, a standard-path packet arriving on one of our links over
//! IPv4 that transits (one hop-field MAC) or crosses over (two) to an
//! interface reached over IPv4, handled in chunks of 64 frames and three
//! passes with one compact record per frame and nothing else.
//!
//! 1. `Tables::classify` reads each frame once at fixed offsets (IPv4
//!    without options, UDP at 34, SCION at 42; everything up to PathMeta
//!    lies within the first `MIN_FRAME` bytes, so those reads need no
//!    bounds check), as little-endian words compared with tables kept in
//!    that form, checks exactly what §9.3 checks on that route and fills a
//!    `Rec`: the expected MACs, the SegID and PathMeta values to write, the
//!    new UDP and IPv4 checksums, ingress and egress. What depends only on
//!    the frame's *shape* (the underlay's fixed fields and link, the SCION
//!    next header, header length, path type and address types, and
//!    PathMeta: steps 1 and 2, where the current info and hop fields lie,
//!    crossover, room to leave, the new PathMeta) is derived once by
//!    `Tables::shape` and kept in a `Shape`; a frame whose masked shape
//!    bytes (`Key`: two 16-byte words and one of 8) and PathMeta equal a kept
//!    shape's takes it from there, checking per frame only the lengths,
//!    the UDP checksum's presence, the ISD-ASes and the info and hop
//!    fields. Eight shapes are kept, direct-mapped by `shape_slot`, the
//!    last frame's tried first. The MAC input blocks (K1 already XORed
//!    in) go into one array for the chunk. A frame that leaves this route
//!    anywhere (IPv6 or IP options, the internal network, an extension
//!    header, peering, alerts, expiry, local delivery, an error of any
//!    kind, a zero UDP checksum) takes the general pipeline of
//!    [`Dataplane::stage1`] instead, still sharing the batched AES.
//! 2. All MAC blocks of the chunk are encrypted in one call (VAES, 16
//!    blocks per pass).
//! 3. `Tables::apply` compares the MACs, writes the path fields and the
//!    new underlay from a per-interface 42-byte template. A MAC mismatch
//!    sends the frame (still unchanged) through the general pipeline,
//!    which builds the SCMP error.
//!
//! Every frame the fast path accepts gets the bytes, verdict and counters
//! the general pipeline gives it (the differential tests compare both).

use super::core::{
    be16, be32, ends_sum, fold, pair_ok, write_underlay, Dataplane, Ep, Plan, Stats, Verdict,
    EXP_UNIT_NS,
};
use super::mac::HopMac;
use linerate_runtime::{Batch, Packet};
use linerate_wire::scion::path::{
    HOP_EGRESS_ALERT, HOP_INGRESS_ALERT, HOP_LEN, INFO_CONS_DIR, INFO_LEN, INFO_PEER, MAX_HOPS,
};
use linerate_wire::scion::{path_type, proto};

/// Offset of the IPv4 header.
const IP: usize = 14;
/// Offset of the UDP header (IPv4 without options).
const UDP: usize = 34;
/// Offset of the SCION header.
const SO: usize = 42;
/// Frames per pass: the records and MAC blocks of a chunk stay in L1.
const CHUNK: usize = 64;
/// `by_ifid` entry of an unknown interface.
const NO_IF: u8 = 0xff;
/// Shortest frame on the fast route: underlay, SCION common and address
/// header with 4-byte hosts, PathMeta, one info field and two hop fields.
const MIN_FRAME: usize = SO + 36 + 4 + INFO_LEN + 2 * HOP_LEN;
/// Shapes kept (direct-mapped by `shape_slot`).
const SHAPES: usize = 8;
/// The 48 bits of a hop MAC in a little-endian `u64`.
const MAC_MASK: u64 = 0xffff_ffff_ffff;

/// What pass 1 learnt about a frame on the fast route: everything pass 3
/// writes, computed before the MAC is known.
#[derive(Debug, Clone, Copy, Default)]
struct Rec {
    /// Expected MACs (6 bytes, little-endian).
    exp: [u64; 2],
    /// New PathMeta (the received word when it does not change).
    meta: u32,
    /// SegID writes, in this order: offsets in the SCION header and the
    /// bytes (little-endian view of the big-endian field). Both are always
    /// made; a frame with fewer changes writes a SegID with its own value
    /// or the same write twice.
    seg_off: [u16; 2],
    seg: [u16; 2],
    /// New UDP and IPv4 header checksums.
    udp_csum: u16,
    ip_csum: u16,
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
    /// Bytes 26 to 33 of a frame on the link (IPv4 source and destination)
    /// and 34 to 37 (UDP ports), little-endian.
    addrs: u64,
    ports: u32,
    /// `!fold(sum of those addresses and ports)` as the checksum update
    /// counts them (the received part of the UDP checksum adjustment).
    nends: u32,
    /// Bit `e` of `to[xover]`: a frame from this link may leave (after a
    /// crossover, for `xover` 1) through interface index `e`: reached over
    /// IPv4, and the link-type pair allowed (§9.3 step 15). Interfaces from
    /// index 63 on take the general pipeline (bit 63 is never set, and
    /// `NO_IF & 63` is 63).
    to: [u64; 2],
    /// The interface: id (the little-endian view of its big-endian
    /// bytes) and index.
    ifid_le: u16,
    idx: u8,
}

/// What the fast path needs of an interface.
#[derive(Debug, Clone, Copy)]
struct If {
    ours: bool,
    /// Ethernet, IPv4 and UDP headers of frames sent to it, with zero
    /// lengths and checksums.
    hdr: [u8; SO],
    /// IPv4 header sum without the total length.
    ip_sum: u32,
    /// Sum of the new addresses and ports (UDP pseudo-header).
    ends: u32,
}

/// What pass 1 derives from a frame's shape (see `Tables::shape`), kept
/// for the frames after it with the same shape.
#[derive(Debug, Clone, Copy)]
struct Shape {
    /// `Key::of` the frame; `Key::NONE` before the first.
    key: Key,
    /// PathMeta as received.
    word: u32,
    /// Offset of the path in the SCION header.
    po: u16,
    /// SCION header length.
    hlen: u16,
    /// Frame offsets of the current info and hop field.
    info_off: u16,
    hop_off: u16,
    /// The current hop is the last of its segment (step 13).
    xover: bool,
    /// A hop follows the current one (after a crossover, its successor):
    /// the frame may leave through one of our interfaces (step 18).
    leave_ok: bool,
    /// New PathMeta and the ones'-complement sum of its change, for a
    /// frame to a sibling's interface (0) and through one of ours (1).
    meta: [u32; 2],
    meta_delta: [u32; 2],
    /// The ingress link.
    link: Link,
}

const NO_SHAPE: Shape = Shape {
    key: Key::NONE,
    word: 0,
    po: 0,
    hlen: 0,
    info_off: 0,
    hop_off: 0,
    xover: false,
    leave_ok: false,
    meta: [0; 2],
    meta_delta: [0; 2],
    link: Link {
        addrs: 0,
        ports: 0,
        nends: 0,
        to: [0; 2],
        ifid_le: 0,
        idx: 0,
    },
};

/// The bytes of the first `MIN_FRAME` that `Tables::shape` reads besides
/// PathMeta, as little-endian words, masked: EtherType, IPv4 version and
/// header length, flags but DF, fragment offset and protocol, addresses,
/// ports (two 16-byte words, so that the comparison is two SSE compares of
/// words never stored on the way), and the SCION next header, header
/// length, path type and address types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Key(u128, u128, u64);

impl Key {
    /// No frame's key (the second word has bytes outside the mask set).
    const NONE: Key = Key(0, u128::MAX, 0);

    #[inline(always)]
    fn of(u: &[u8; MIN_FRAME]) -> Key {
        let w = |o: usize| u128::from_le_bytes(*u[o..].first_chunk().unwrap_or(&[0; 16]));
        let c = u64::from_le_bytes(*u[44..].first_chunk().unwrap_or(&[0; 8]));
        Key(
            w(12) & 0xffff_0000_ff00_ff3f_0000_0000_00ff_ffff,
            w(28) & 0x0000_0000_0000_ffff_ffff_ffff_ffff_ffff,
            c & 0xffff_0000_ffff_0000,
        )
    }

    /// Whether two keys differ, without a branch per word.
    #[inline(always)]
    fn differs(&self, o: &Key) -> bool {
        (self.0 ^ o.0) | (self.1 ^ o.1) | u128::from(self.2 ^ o.2) != 0
    }
}

/// The `shapes` entry for a frame: a mix of bytes that tell apart the
/// shapes of one link (HdrLen, the first byte of PathMeta with 4-byte host
/// addresses: CurrINF and CurrHF) and links (the low byte of the source
/// port).
#[inline(always)]
fn shape_slot(u: &[u8; MIN_FRAME]) -> usize {
    usize::from(u[SO + 5] ^ u[SO + 36] ^ u[UDP + 1]) % SHAPES
}

/// Read-only tables.
struct Tables {
    /// Local ISD-AS as the little-endian view of its big-endian bytes.
    ia_le: u64,
    /// The CMAC subkey K1 as two little-endian words.
    k1: [u64; 2],
    links: Vec<Link>,
    ifs: Vec<If>,
    by_ifid: Box<[u8; 65536]>,
}

/// Per-chunk scratch, reused.
struct Scratch {
    recs: [Rec; CHUNK],
    blocks: [[u8; 16]; 2 * CHUNK],
    plans: Vec<Plan>,
    ports: Vec<u8>,
}

/// The fast path's tables and scratch (no allocation once the largest
/// batch has been seen).
pub struct FastPath {
    t: Tables,
    s: Box<Scratch>,
    /// Shapes of recent frames on the fast route, and the entry of the
    /// last one.
    shapes: Box<[Shape; SHAPES]>,
    last: usize,
}

/// `N` bytes at `o`, if there.
#[inline(always)]
fn arr<const N: usize>(b: &[u8], o: usize) -> Option<&[u8; N]> {
    b.get(o..)?.first_chunk()
}

impl FastPath {
    /// The tables for a data plane.
    pub fn new(dp: &Dataplane) -> FastPath {
        let ip4 = |e: &Ep| [e.ip[12], e.ip[13], e.ip[14], e.ip[15]];
        let links = dp
            .ifaces
            .iter()
            .enumerate()
            .filter(|(_, f)| f.ours && f.local.v4 && f.remote.v4)
            .map(|(i, f)| {
                let (r, l) = (ip4(&f.remote), ip4(&f.local));
                let (rp, lp) = (f.remote.port.to_be_bytes(), f.local.port.to_be_bytes());
                Link {
                    addrs: u64::from_le_bytes([r[0], r[1], r[2], r[3], l[0], l[1], l[2], l[3]]),
                    ports: u32::from_le_bytes([rp[0], rp[1], lp[0], lp[1]]),
                    nends: u32::from(!fold(ends_sum(&f.remote, &f.local))),
                    to: [false, true].map(|x| {
                        dp.ifaces
                            .iter()
                            .take(63)
                            .enumerate()
                            .filter(|(_, e)| e.dst.v4 && pair_ok(f.link_to, e.link_to, x))
                            .fold(0, |m, (e, _)| m | 1 << e)
                    }),
                    ifid_le: f.ifid.swap_bytes(),
                    idx: i as u8,
                }
            })
            .collect();
        let mut by_ifid = Box::new([NO_IF; 65536]);
        let ifs = dp
            .ifaces
            .iter()
            .enumerate()
            .map(|(i, f)| {
                by_ifid[usize::from(f.ifid)] = i as u8;
                let mut hdr = [0u8; SO];
                if f.dst.v4 {
                    write_underlay(&mut hdr, &f.src, &f.dst, 0, Some(0));
                }
                let v4 = |a: &[u8; 16]| u32::from(be16(a, 12)) + u32::from(be16(a, 14));
                If {
                    ours: f.ours,
                    hdr,
                    ip_sum: 0x4500 + 0x4000 + 0x4011 + v4(&f.src.ip) + v4(&f.dst.ip),
                    ends: ends_sum(&f.src, &f.dst),
                }
            })
            .collect();
        let k = dp.hop_mac().prepare(&[0; 16]);
        let k1 = [
            u64::from_le_bytes([k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7]]),
            u64::from_le_bytes([k[8], k[9], k[10], k[11], k[12], k[13], k[14], k[15]]),
        ];
        FastPath {
            t: Tables {
                ia_le: u64::from_le_bytes(dp.ia.0.to_be_bytes()),
                k1,
                links,
                ifs,
                by_ifid,
            },
            s: Box::new(Scratch {
                recs: [Rec::default(); CHUNK],
                blocks: [[0; 16]; 2 * CHUNK],
                plans: Vec::new(),
                ports: Vec::new(),
            }),
            shapes: Box::new([NO_SHAPE; SHAPES]),
            last: 0,
        }
    }

    /// Runs a batch through the router. Returns the batches for outputs 0
    /// (sent: forwarded, delivered, SCMP replies), 1 (slow path) and 2
    /// (dropped), in arrival order; when every frame is sent, output 0 is
    /// the input batch itself.
    pub fn process(&mut self, dp: &mut Dataplane, mut batch: Batch) -> [Batch; 3] {
        let (t, s, shapes, last) = (&self.t, &mut *self.s, &mut *self.shapes, &mut self.last);
        let n = batch.len();
        s.ports.clear();
        s.ports.resize(n, 0);
        let mut others = false;
        let mut a = 0;
        while a < n {
            let b = (a + CHUNK).min(n);
            // Pass 1: records and MAC blocks.
            s.plans.clear();
            let mut nb = 0;
            let mac: &HopMac = dp.hop_mac();
            let now = dp.now_ns;
            for (rec, p) in s.recs.iter_mut().zip(&batch.as_slice()[a..b]) {
                let f = p.data();
                if let Some(bl) = t.classify(now, f, rec, shapes, last) {
                    s.blocks[nb] = bl[0].to_le_bytes();
                    s.blocks[nb + 1] = bl[1].to_le_bytes();
                    nb += usize::from(rec.nmacs);
                } else {
                    rec.nmacs = 0;
                    nb = stage1(dp, f, &mut s.blocks, nb, &mut s.plans);
                }
            }
            // Pass 2: every MAC of the chunk in one call.
            mac.finish_blocks(&mut s.blocks[..nb]);
            // Pass 3: verdicts and rewrites.
            let (mut k, mut g) = (0, 0);
            let ports = &mut s.ports[a..b];
            for ((rec, p), slot) in s
                .recs
                .iter()
                .zip(&mut batch.as_mut_slice()[a..b])
                .zip(ports)
            {
                let port = if rec.nmacs > 0 {
                    let n = usize::from(rec.nmacs);
                    let port = t.apply(dp, p, rec, &s.blocks[k..k + n]);
                    k += n;
                    port
                } else {
                    let plan = &s.plans[g];
                    g += 1;
                    let n = usize::from(plan.nmacs);
                    let port = finish(dp, p, plan, &s.blocks[k..k + n]);
                    k += n;
                    port
                };
                if port != 0 {
                    *slot = port;
                    others = true;
                }
            }
            a = b;
        }
        let mut outs = [Batch::new(), Batch::new(), Batch::new()];
        if !others {
            outs[0] = batch;
        } else {
            for (p, &port) in batch.drain().zip(&s.ports) {
                if let Some(o) = outs.get_mut(usize::from(port)) {
                    o.push(p);
                }
            }
        }
        outs
    }
}

impl Tables {
    /// A MAC input block (§6: `0 0 SegID Timestamp 0 ExpTime ConsIngress
    /// ConsEgress 0 0`) XORed with K1, from the little-endian views of an
    /// info field with SegID `seg` and of a hop field's first 8 bytes.
    #[inline(always)]
    fn block(&self, info: u64, seg: u16, hop: u64) -> u128 {
        let w0 = (info & 0xffff_ffff_0000_0000 | u64::from(seg) << 16) ^ self.k1[0];
        let w1 = (hop & 0x0000_ffff_ffff_ff00) ^ self.k1[1];
        u128::from(w1) << 64 | u128::from(w0)
    }

    /// The part of pass 1 that depends only on the bytes of the `Key`
    /// and the PathMeta: the underlay's fixed fields and link, the SCION
    /// header's path type, next header, header length and address types,
    /// and everything §9.3 derives from PathMeta (steps 1 and 2, the current
    /// info and hop field, crossover, room to leave, the new PathMeta).
    /// `None` if a frame of this shape leaves the fast route. Out of line:
    /// consecutive frames mostly share their shape (see `classify`).
    #[inline(never)]
    fn shape(&self, u: &[u8; MIN_FRAME], key: Key) -> Option<Shape> {
        // Underlay: Ethernet, IPv4 without options (0x0800, 0x45), not
        // fragmented (flags and offset but DF zero), UDP, from one of our
        // IPv4 links.
        if key.0 as u64 != 0x0045_0008 || (key.0 >> 64) as u32 & 0xff00_ff3f != 0x1100_0000 {
            return None;
        }
        let addrs = u64::from_le_bytes([u[26], u[27], u[28], u[29], u[30], u[31], u[32], u[33]]);
        let ports = u32::from_le_bytes([u[34], u[35], u[36], u[37]]);
        let link = *self
            .links
            .iter()
            .find(|l| l.addrs == addrs && l.ports == ports)?;
        // SCION common and address header: a standard path right after
        // them, no extension header.
        let hlen = usize::from(u[SO + 5]) * 4;
        let nh = u[SO + 4];
        let dl = u[SO + 9];
        let po = 36 + 4 * usize::from(dl >> 4 & 3) + 4 * usize::from(dl & 3);
        if u[SO + 8] != path_type::SCION || nh == proto::HBH || nh == proto::E2E {
            return None;
        }
        // PathMeta: NumINF valid, no SegLen of 1 (step 2), within MaxHops,
        // the path in the header; step 1. Segment `inf` holds hops
        // `first..first + seg_len`; a `seg_len` of 0 is an info field
        // beyond NumINF.
        let word = be32(u, SO + po);
        let s0 = (word >> 12 & 0x3f) as usize;
        let s1 = (word >> 6 & 0x3f) as usize;
        let s2 = (word & 0x3f) as usize;
        if s0 <= 1 || s1 == 1 || s2 == 1 || (s1 == 0 && s2 != 0) {
            return None;
        }
        let ninf = 1 + usize::from(s1 != 0) + usize::from(s2 != 0);
        let nhops = s0 + s1 + s2;
        let hf = (word >> 24 & 0x3f) as usize;
        let inf = (word >> 30) as usize;
        // SegLen `inf` from PathMeta bits `12 - 6 inf` on (0 for `inf` 3).
        let seg_len = (u64::from(word).wrapping_shl(6 * inf as u32 + 46) >> 58) as usize;
        let first = s0 * usize::from(inf >= 1) + s1 * usize::from(inf >= 2);
        let hops = SO + po + 4 + INFO_LEN * ninf;
        if nhops > MAX_HOPS
            || hops + HOP_LEN * nhops > SO + hlen
            || hf + 1 >= nhops
            || hf.wrapping_sub(first) >= seg_len
        {
            return None;
        }
        // Step 13: a crossover checks the first hop of the next segment
        // (which has at least two hops: no SegLen is 1). The hop and info
        // indices move by one at a crossover and the hop index by one when
        // leaving through one of our interfaces (steps 16 and 18); the info
        // index never moves on leaving here, as the segment after a
        // crossover has at least two hops. A new PathMeta has the reserved
        // bits cleared.
        let xover = hf + 1 == first + seg_len;
        let inc = u32::from(xover) * 0x4100_0000;
        let metas = [inc, inc + 0x0100_0000].map(|inc| {
            let meta = if inc != 0 {
                (word & 0xff03_ffff) + inc
            } else {
                word
            };
            let delta = u32::from(!(word >> 16) as u16)
                + u32::from(!(word as u16))
                + (meta >> 16)
                + (meta & 0xffff);
            (meta, delta)
        });
        Some(Shape {
            key,
            word,
            po: po as u16,
            hlen: hlen as u16,
            info_off: (SO + po + 4 + INFO_LEN * inf) as u16,
            hop_off: (hops + HOP_LEN * hf) as u16,
            xover,
            leave_ok: hf + usize::from(xover) + 2 <= nhops,
            meta: [metas[0].0, metas[1].0],
            meta_delta: [metas[0].1, metas[1].1],
            link,
        })
    }

    /// Pass 1 for one frame: fills `rec` and returns the MAC blocks (K1
    /// applied) if the frame is on the fast route (see the module
    /// documentation), else `None`. Fields are read as little-endian views
    /// of their big-endian bytes and compared with tables in that form;
    /// everything up to the PathMeta lies in the first `MIN_FRAME` bytes,
    /// so only the info and hop fields are read at checked offsets. What
    /// depends on the frame's shape alone comes from `sh`, the shape of an
    /// earlier frame, when the shape bytes and PathMeta are the same, and
    /// from `shape` (which replaces `sh`) otherwise.
    #[inline(always)]
    fn classify(
        &self,
        now: u64,
        f: &[u8],
        rec: &mut Rec,
        shapes: &mut [Shape; SHAPES],
        last: &mut usize,
    ) -> Option<[u128; 2]> {
        let u: &[u8; MIN_FRAME] = f.first_chunk()?;
        // Lengths: UDP long enough for the shortest SCION header of this
        // route, within the IPv4 packet, within the frame; a UDP checksum.
        let tl = usize::from(be16(u, IP + 2));
        let ulen = usize::from(be16(u, UDP + 4));
        let old_csum = be16(u, UDP + 6);
        if ulen < MIN_FRAME - UDP || ulen + 20 > tl || tl + IP > f.len() || old_csum == 0 {
            return None;
        }
        let key = Key::of(u);
        let same = |sh: &Shape| {
            !key.differs(&sh.key)
                && arr::<4>(u, SO + usize::from(sh.po)) == Some(&sh.word.to_be_bytes())
        };
        // The last frame's shape first: its entry does not wait for this
        // frame's bytes.
        let mut sh = &mut shapes[*last % SHAPES];
        if !same(sh) {
            *last = shape_slot(u);
            sh = &mut shapes[*last];
            if !same(sh) {
                *sh = self.shape(u, key)?;
            }
        }
        // The SCION packet is `f[SO..SO + slen]`, within the frame (checked
        // above), its header as long as HdrLen says; neither from nor to
        // this AS (step 7 for a frame from a neighbour that is not at its
        // last hop).
        let slen = ulen - 8;
        let dst_ia = u64::from_le_bytes(*arr::<8>(u, SO + 12)?);
        let src_ia = u64::from_le_bytes(*arr::<8>(u, SO + 20)?);
        if usize::from(be16(u, SO + 6)) + usize::from(sh.hlen) != slen
            || dst_ia == self.ia_le
            || src_ia == self.ia_le
        {
            return None;
        }
        let link = &sh.link;
        let info_off = usize::from(sh.info_off);
        let info = u64::from_le_bytes(*arr::<8>(f, info_off)?);
        let hop_f: &[u8; HOP_LEN] = arr(f, usize::from(sh.hop_off))?;
        let hop = u64::from_le_bytes(*hop_f.first_chunk()?);
        let flags = info as u8;
        let mut cons_dir = flags & INFO_CONS_DIR != 0;
        // Steps 2 (no peering here) to 5 and 11.
        let expired = |info: u64, hop: u64| {
            let ts = u64::from(((info >> 32) as u32).swap_bytes());
            ts * 1_000_000_000 + (1 + (hop >> 8 & 0xff)) * EXP_UNIT_NS < now
        };
        let (trav_in, in_alert) = if cons_dir {
            ((hop >> 16) as u16, HOP_INGRESS_ALERT)
        } else {
            ((hop >> 32) as u16, HOP_EGRESS_ALERT)
        };
        if flags & INFO_PEER != 0
            || expired(info, hop)
            || trav_in != link.ifid_le
            || hop as u8 & in_alert != 0
        {
            return None;
        }
        // Steps 9 and 10. `delta` is the ones'-complement change of the
        // SCION bytes (see `apply`).
        let mut delta = 0u32;
        let mut seg_id = (info >> 16) as u16;
        let seg_off = (info_off - SO + 2) as u16;
        if !cons_dir {
            let new = seg_id ^ (hop >> 48) as u16;
            delta += u32::from(!seg_id.swap_bytes()) + u32::from(new.swap_bytes());
            seg_id = new;
        }
        rec.seg_off = [seg_off; 2];
        rec.seg = [seg_id; 2];
        let mut blocks = [self.block(info, seg_id, hop), 0];
        rec.exp[0] = u64::from_le_bytes(*hop_f.last_chunk()?) >> 16;
        rec.nmacs = 1;
        // Step 13.
        let xover = sh.xover;
        let (mut info_off, mut info, mut hop) = (info_off, info, hop);
        if xover {
            info_off += INFO_LEN;
            info = u64::from_le_bytes(*arr::<8>(f, info_off)?);
            let hop_f: &[u8; HOP_LEN] = arr(f, usize::from(sh.hop_off) + HOP_LEN)?;
            hop = u64::from_le_bytes(*hop_f.first_chunk()?);
            cons_dir = info as u8 & INFO_CONS_DIR != 0;
            if expired(info, hop) {
                return None;
            }
            blocks[1] = self.block(info, (info >> 16) as u16, hop);
            rec.exp[1] = u64::from_le_bytes(*hop_f.last_chunk()?) >> 16;
            rec.nmacs = 2;
        }
        // Steps 14 and 15.
        let egress_le = if cons_dir { hop >> 32 } else { hop >> 16 } as u16;
        let egress = self.by_ifid[usize::from(egress_le.swap_bytes())];
        if link.to[usize::from(xover)] >> (egress & 63) & 1 == 0 {
            return None;
        }
        let eg_if = self.ifs.get(usize::from(egress))?;
        if eg_if.ours {
            // Steps 16 and 18.
            let eg_alert = if cons_dir {
                HOP_EGRESS_ALERT
            } else {
                HOP_INGRESS_ALERT
            };
            if hop as u8 & eg_alert != 0 || !sh.leave_ok {
                return None;
            }
            if cons_dir {
                let old = (info >> 16) as u16;
                let new = old ^ (hop >> 48) as u16;
                delta += u32::from(!old.swap_bytes()) + u32::from(new.swap_bytes());
                rec.seg_off[1] = (info_off - SO + 2) as u16;
                rec.seg[1] = new;
            }
        }
        let ours = usize::from(eg_if.ours);
        rec.meta = sh.meta[ours];
        delta += sh.meta_delta[ours];
        // The underlay rewrite (RFC 1624 update of the received UDP
        // checksum). Every sum here is positive, so folding any sum
        // congruent modulo 0xffff to the general pipeline's (which writes
        // PathMeta once per stage) gives the same checksum.
        let c = !fold(u32::from(!old_csum) + link.nends + eg_if.ends + delta);
        rec.udp_csum = if c == 0 { 0xffff } else { c };
        rec.ip_csum = !fold(eg_if.ip_sum + 28 + slen as u32);
        rec.po = sh.po;
        rec.len = slen as u16;
        rec.ingress = link.idx;
        rec.egress = egress;
        Some(blocks)
    }

    /// Pass 3 for a frame on the fast route: the output port.
    #[inline(always)]
    fn apply(&self, dp: &mut Dataplane, p: &mut Packet, rec: &Rec, macs: &[[u8; 16]]) -> u8 {
        let got = |m: &[u8; 16]| {
            u64::from_le_bytes([m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]]) & MAC_MASK
        };
        let mut bad = got(&macs[0]) ^ rec.exp[0];
        if let Some(m) = macs.get(1) {
            bad |= got(m) ^ rec.exp[1];
        }
        let Some(out) = self.ifs.get(usize::from(rec.egress)).filter(|_| bad == 0) else {
            return general(dp, p);
        };
        let len = usize::from(rec.len);
        let d = p.data_mut();
        let Some((h, rest)) = d.split_first_chunk_mut::<SO>() else {
            return general(dp, p);
        };
        let Some(s) = rest.get_mut(..len) else {
            return general(dp, p);
        };
        for (&o, &v) in rec.seg_off.iter().zip(&rec.seg) {
            if let Some(w) = s
                .get_mut(usize::from(o)..)
                .and_then(|w| w.first_chunk_mut())
            {
                *w = v.to_le_bytes();
            }
        }
        if let Some(w) = s
            .get_mut(usize::from(rec.po)..)
            .and_then(|w| w.first_chunk_mut())
        {
            *w = rec.meta.to_be_bytes();
        }
        let ulen = (8 + len) as u16;
        *h = out.hdr;
        h[IP + 2..IP + 4].copy_from_slice(&(20 + ulen).to_be_bytes());
        h[IP + 10..IP + 12].copy_from_slice(&rec.ip_csum.to_be_bytes());
        h[UDP + 4..UDP + 6].copy_from_slice(&ulen.to_be_bytes());
        h[UDP + 6..UDP + 8].copy_from_slice(&rec.udp_csum.to_be_bytes());
        let extra = p.len().saturating_sub(SO + len);
        if extra > 0 {
            p.take(extra);
        }
        count(&mut dp.stats, rec);
        0
    }
}

/// Counts a forwarded frame on its ingress and egress.
#[inline(always)]
fn count(st: &mut Stats, rec: &Rec) {
    let bytes = u64::from(rec.len);
    if let Some(i) = st.ifs.get_mut(usize::from(rec.ingress)) {
        i.in_pkts += 1;
        i.in_bytes += bytes;
    }
    if let Some(e) = st.ifs.get_mut(usize::from(rec.egress)) {
        e.out_pkts += 1;
        e.out_bytes += bytes;
    }
}

/// Pass 1 of the general pipeline for a frame off the fast route: its
/// plan, and its MAC blocks from `nb` on. Returns the next free block.
/// Out of line, so that the fast route's loop keeps its registers.
#[cold]
#[inline(never)]
fn stage1(
    dp: &Dataplane,
    f: &[u8],
    blocks: &mut [[u8; 16]],
    mut nb: usize,
    plans: &mut Vec<Plan>,
) -> usize {
    let plan = dp.stage1(f);
    for x in &plan.blocks[..usize::from(plan.nmacs)] {
        if let Some(b) = blocks.get_mut(nb) {
            *b = dp.hop_mac().prepare(x);
        }
        nb += 1;
    }
    plans.push(plan);
    nb
}

/// A frame of the fast route whose MAC did not match, still unchanged:
/// the general pipeline answers it (SCMP).
#[cold]
fn general(dp: &mut Dataplane, p: &mut Packet) -> u8 {
    let plan = dp.stage1(p.data());
    let n = usize::from(plan.nmacs);
    let mut m = [[0u8; 16]; 2];
    for (x, b) in m.iter_mut().zip(&plan.blocks).take(n) {
        *x = dp.hop_mac().cmac(b);
    }
    finish(dp, p, &plan, &m[..n])
}

/// The general pipeline's second stage for one frame: the output port
/// (3: discarded); an SCMP reply takes the frame's place.
#[inline(never)]
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

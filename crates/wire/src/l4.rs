//! A one-pass frame parser: Ethernet, up to two VLAN tags, IPv4 or IPv6
//! (with extension headers), and the transport header's position, plus the
//! flow hash of the 5-tuple.
//!
//! [`locate`] finds the headers only: the offsets of the network and
//! transport headers, the end of the IP packet, the IP version, the
//! transport protocol, the outer VLAN tag and whether the packet is a
//! fragment ([`Located`]). [`parse`] is [`locate`] plus the flow hash of the
//! 5-tuple; it is the hot-path function behind the `L4Parser` element, and
//! elements that need the headers but not the hash (`IPChecksum`) call
//! [`locate`]. Both read each byte they need once, allocate nothing, build
//! no views and return plain offsets or the first reason the frame cannot
//! be parsed ([`Reason`]). The rules, which the element's reference
//! implementation re-states with this crate's views:
//!
//! - Ethernet (14 bytes), then at most two tags with TPID `0x8100` or
//!   `0x88a8` (4 bytes each); a third tag or any EtherType other than IPv4
//!   (`0x0800`) or IPv6 (`0x86dd`) is [`Reason::NotIp`]. The outer tag's TCI
//!   is reported (0 without a tag).
//! - IPv4: fewer than 20 bytes is [`Reason::Truncated`]; a version other
//!   than 4 is [`Reason::BadVersion`]; IHL below 5 is
//!   [`Reason::BadHeaderLength`]; a header (options) beyond the frame is
//!   [`Reason::Truncated`]; a total length below the header length or beyond
//!   the frame is [`Reason::BadLength`] (bytes after the total length are
//!   link padding and allowed).
//! - IPv6: fewer than 40 bytes is [`Reason::Truncated`], a version other
//!   than 6 [`Reason::BadVersion`], a payload beyond the frame
//!   [`Reason::BadLength`]. Extension headers (Hop-by-Hop, Routing,
//!   Fragment, Destination Options, AH) are stepped over inside the payload
//!   as [`crate::ipv6ext::walk`] does: at most
//!   [`MAX_HEADERS`](crate::ipv6ext::MAX_HEADERS), Hop-by-Hop only first,
//!   each wholly inside the payload, or [`Reason::BadExtension`]. The walk
//!   stops at ESP, No Next Header, any other protocol, or after a Fragment
//!   header with a non-zero offset.
//! - The transport protocol is the IPv4 protocol or the last next-header.
//!   Its header is reported when the packet is not a non-first fragment,
//!   the protocol is TCP (20 bytes), UDP (8), ICMP (8), ICMPv6 (8) or SCTP
//!   (12), and that many bytes lie inside the IP packet; otherwise
//!   [`Parsed::transport`] is [`NO_TRANSPORT`] ([`Located::transport`]
//!   `None`).
//! - A fragment ([`Fragment`]) is an IPv4 packet with MF set or a non-zero
//!   offset, or an IPv6 packet with a Fragment header (as
//!   [`crate::ipv6ext::walk`] reports one).
//! - [`parse_cut`] parses a frame that a capture cut short by a known
//!   number of bytes (a snap length): the IP length may run that far past
//!   the frame, every header read (IP, extension headers, the transport
//!   header's minimum length) must lie in the frame, or
//!   [`Reason::Truncated`].
//! - The flow hash is [`flow_hash`] of the 5-tuple as
//!   `FlowKey::from_packet` (linerate-runtime) reads it back: ports from
//!   the transport header (ICMP: type and code as the destination port,
//!   the echo identifier as the source port), 0 without one; the protocol
//!   is the IPv6 next-header field when the walk ends in protocol 0 (as
//!   `FlowKey` reads an `L4_PROTO` of 0).

use crate::bytes::read_u16;

/// [`Parsed::transport`] when there is no transport header to read.
pub const NO_TRANSPORT: u16 = 0xffff;

/// Why a frame could not be parsed. The discriminants index
/// [`Reason::ALL`] and the element's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Reason {
    /// Shorter than the Ethernet header, a VLAN tag or the fixed IP header,
    /// or an IPv4 header whose options run past the frame.
    Truncated = 0,
    /// An EtherType other than IPv4 or IPv6 (after at most two tags).
    NotIp = 1,
    /// The IP version does not match the EtherType.
    BadVersion = 2,
    /// IPv4 IHL below 5.
    BadHeaderLength = 3,
    /// IPv4 total length below the header length or beyond the frame; IPv6
    /// payload beyond the frame.
    BadLength = 4,
    /// An IPv6 extension header chain that leaves the payload, repeats
    /// Hop-by-Hop or is longer than `ipv6ext::MAX_HEADERS`.
    BadExtension = 5,
}

impl Reason {
    /// Every reason, by discriminant.
    pub const ALL: [Reason; 6] = [
        Reason::Truncated,
        Reason::NotIp,
        Reason::BadVersion,
        Reason::BadHeaderLength,
        Reason::BadLength,
        Reason::BadExtension,
    ];

    /// A short name (handler name style).
    pub fn name(self) -> &'static str {
        match self {
            Reason::Truncated => "truncated",
            Reason::NotIp => "not_ip",
            Reason::BadVersion => "bad_version",
            Reason::BadHeaderLength => "bad_header_length",
            Reason::BadLength => "bad_length",
            Reason::BadExtension => "bad_extension",
        }
    }
}

/// What [`parse`] found in a frame. Offsets are from the frame start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Parsed {
    /// Offset of the IPv4 or IPv6 header.
    pub network: u16,
    /// Offset of the transport header, or [`NO_TRANSPORT`].
    pub transport: u16,
    /// Transport protocol number (IPv4 protocol or last IPv6 next-header).
    pub proto: u8,
    /// IP version, 4 or 6.
    pub version: u8,
    /// The outer VLAN tag's TCI, 0 without a tag.
    pub vlan_tci: u16,
    /// [`flow_hash`] of the 5-tuple; never 0.
    pub hash: u32,
}

impl Parsed {
    /// Where the IP packet ends by its own length field (IPv4 total
    /// length, IPv6 40 + payload length), as an offset from the start of
    /// `frame`, the frame this was parsed from. Past `frame.len()` only for
    /// a frame [`parse_cut`] took as cut short.
    #[inline]
    pub fn ip_end(&self, frame: &[u8]) -> usize {
        let n = usize::from(self.network);
        if self.version == 4 {
            n + usize::from(read_u16(&frame[n + 2..n + 4]))
        } else {
            n + 40 + usize::from(read_u16(&frame[n + 4..n + 6]))
        }
    }
}

/// Whether a packet is a fragment, and which one (see the module
/// documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fragment {
    /// Not a fragment.
    Whole,
    /// The first fragment: IPv4 MF set with offset 0; IPv6 a Fragment
    /// header with offset 0 (also with M clear).
    First,
    /// A fragment with a non-zero offset: no transport header.
    Later,
}

/// What [`locate`] found in a frame. Offsets are from the frame start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Located {
    /// Offset of the IPv4 or IPv6 header.
    pub network: usize,
    /// Offset of the transport header, `None` when there is none to read
    /// (see the module documentation).
    pub transport: Option<usize>,
    /// Offset just past the IP packet (IPv4 total length, IPv6 40 bytes
    /// plus the payload length); link padding may follow.
    pub end: usize,
    /// Transport protocol number (IPv4 protocol or last IPv6 next-header).
    pub proto: u8,
    /// IP version, 4 or 6.
    pub version: u8,
    /// The outer VLAN tag's TCI, 0 without a tag.
    pub vlan_tci: u16,
    /// Whether the packet is a fragment.
    pub fragment: Fragment,
}

/// Minimum transport header length by protocol number (low 7 bits), 0
/// for protocols whose header is not reported; [`ICMP_BIT`] marks the
/// ICMP protocols, whose ports are read differently.
static L4_MIN: [u8; 256] = {
    let mut t = [0u8; 256];
    t[1] = 8 | ICMP_BIT; // ICMP
    t[6] = 20; // TCP
    t[17] = 8; // UDP
    t[58] = 8 | ICMP_BIT; // ICMPv6
    t[132] = 12; // SCTP
    t
};

/// [`L4_MIN`] flag: an ICMP protocol.
const ICMP_BIT: u8 = 0x80;

/// Extension header kinds the IPv6 walk steps over, as a bit set over the
/// protocol numbers 0..64.
const EXT_BITS: u64 = 1 << 0 | 1 << 43 | 1 << 44 | 1 << 51 | 1 << 60;

#[inline(always)]
fn is_ext(nh: u8) -> bool {
    nh < 64 && (EXT_BITS >> nh) & 1 != 0
}

#[inline(always)]
fn le64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

#[inline(always)]
fn le32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

/// Folds two 16-byte addresses into the 64-bit word [`flow_hash`] takes:
/// the four 8-byte halves read little-endian, rotated by 0, 13, 29 and 43
/// bits and XORed.
#[inline(always)]
pub fn addr_word_v6(src: &[u8; 16], dst: &[u8; 16]) -> u64 {
    fold_v6(le64(src, 0), le64(src, 8), le64(dst, 0), le64(dst, 8))
}

#[inline(always)]
fn fold_v6(s0: u64, s1: u64, d0: u64, d1: u64) -> u64 {
    s0 ^ s1.rotate_left(13) ^ d0.rotate_left(29) ^ d1.rotate_left(43)
}

/// The address word of an IPv4 pair: the 8 bytes `src, dst` read
/// little-endian (so it is one load from the header).
#[inline(always)]
pub fn addr_word_v4(src: [u8; 4], dst: [u8; 4]) -> u64 {
    u64::from_le_bytes([
        src[0], src[1], src[2], src[3], dst[0], dst[1], dst[2], dst[3],
    ])
}

/// The ports word: the wire bytes of `sport, dport` read little-endian
/// (one load from a TCP, UDP or SCTP header).
#[inline(always)]
fn ports_word(sport: u16, dport: u16) -> u32 {
    let (s, d) = (sport.to_be_bytes(), dport.to_be_bytes());
    u32::from_le_bytes([s[0], s[1], d[0], d[1]])
}

/// The flow hash of a 5-tuple: `addrs` from [`addr_word_v4`] or
/// [`addr_word_v6`], ports and protocol as `FlowKey` holds them. Two
/// multiply-xorshift rounds over the address word and a word of ports,
/// protocol and version; the result is never 0 (0 becomes 1), since 0
/// means "not computed".
#[inline(always)]
pub fn flow_hash(addrs: u64, sport: u16, dport: u16, proto: u8, version: u8) -> u32 {
    hash_words(addrs, ports_word(sport, dport), proto, version)
}

#[inline(always)]
fn hash_words(addrs: u64, ports: u32, proto: u8, version: u8) -> u32 {
    let b = u64::from(ports) << 32 | u64::from(proto) << 8 | u64::from(version);
    let mut h = addrs.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ b;
    h = (h ^ (h >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 32;
    (h as u32).max(1)
}

/// The ports word of the 5-tuple from a transport header `l4` (at least
/// the protocol's minimum length), as `FlowKey::from_packet` reads it:
/// for ICMP and ICMPv6 the echo identifier and `type << 8 | code`.
#[inline(always)]
fn ports(l4: &[u8], proto: u8, entry: u8) -> u32 {
    if entry & ICMP_BIT != 0 {
        icmp_ports(l4, proto)
    } else {
        le32(l4, 0)
    }
}

#[cold]
#[inline(never)]
fn icmp_ports(l4: &[u8], proto: u8) -> u32 {
    let echo = matches!((proto, l4[0]), (1, 0 | 8) | (58, 128 | 129));
    let id = if echo { read_u16(&l4[4..6]) } else { 0 };
    ports_word(id, read_u16(&l4[0..2]))
}

/// The link layer of `frame`: Ethernet and up to two VLAN tags. Returns
/// the EtherType after the tags, the network header's offset and the outer
/// TCI.
#[inline(always)]
fn link(frame: &[u8]) -> Result<(u16, usize, u16), Reason> {
    let n = frame.len();
    if n < 14 {
        return Err(Reason::Truncated);
    }
    let mut et = read_u16(&frame[12..14]);
    let mut off = 14usize;
    let mut tci = 0u16;
    if et == 0x8100 || et == 0x88a8 {
        if n < 18 {
            return Err(Reason::Truncated);
        }
        tci = read_u16(&frame[14..16]);
        et = read_u16(&frame[16..18]);
        off = 18;
        if et == 0x8100 || et == 0x88a8 {
            if n < 22 {
                return Err(Reason::Truncated);
            }
            et = read_u16(&frame[20..22]);
            off = 22;
        }
    }
    Ok((et, off, tci))
}

/// Finds the headers of `frame` (starting with the Ethernet header); see
/// the module documentation for the rules. Never panics, never allocates;
/// always inlined (the caller uses a few of the fields).
#[inline(always)]
pub fn locate(frame: &[u8]) -> Result<Located, Reason> {
    let (et, off, tci) = link(frame)?;
    let ip = &frame[off..];
    let found = match et {
        0x0800 => locate_v4::<false>(ip, off, tci, 0),
        0x86dd => locate_v6::<false>(ip, off, tci, 0),
        _ => Err(Reason::NotIp),
    };
    found.map(|(l, _)| l)
}

/// Parses `frame` (starting with the Ethernet header): [`locate`] plus the
/// flow hash; see the module documentation for the rules. Never panics,
/// never allocates. Always inlined: a call and its result returned through
/// memory cost a fifth of the function (measured).
///
/// The common frames (at most one tag, IPv4 without options or IPv6
/// without extension headers, the headers and the ports within the frame)
/// take a straight path whose reads need no bounds tests of their own
/// ([`parse_common`]); the rest, errors included, go through the general
/// parser out of line, which keeps the loop around a call of this function
/// small enough for its registers (measured with the `L4Parser` benchmark
/// mix: see that element's documentation).
#[inline(always)]
pub fn parse(frame: &[u8]) -> Result<Parsed, Reason> {
    match parse_common(frame) {
        Some(p) => Ok(p),
        None => parse_general(frame),
    }
}

/// [`parse`] of a common frame, `None` for any other (which [`parse`]
/// then parses, or rejects with its reason): a frame of at least 42 bytes,
/// Ethernet with at most one tag, then IPv4 with a 20-byte header or IPv6
/// whose next header is not an extension, the fixed header and four bytes
/// after it inside the frame, the IP length within the frame, and a
/// protocol other than ICMP and ICMPv6 (their ports are read differently)
/// and the IPv6 extension header numbers (also after IPv4).
/// Calls nothing, so a loop around it keeps its values in registers. Same
/// result as the general path for those frames (a property test compares
/// them).
#[inline(always)]
pub fn parse_common(frame: &[u8]) -> Option<Parsed> {
    parse_common_then(frame, |p| p)
}

/// [`parse_common`] with `then` applied to the result where it is found:
/// each frame shape (tag or none, IPv4 or IPv6, transport header or none)
/// calls `then` on its own, so in the code of each, the offsets and the
/// presence of the transport header are constants, and what `then`
/// derives from them (e.g. annotations) needs no tests of its own.
#[inline(always)]
pub fn parse_common_then<R>(frame: &[u8], then: impl FnOnce(Parsed) -> R) -> Option<R> {
    common::<false, R>(frame, 0, then)
}

/// [`parse_common_then`] of a frame that a capture cut `cut` bytes short:
/// where it answers, the answer is [`parse_cut`]'s. The IP length may run
/// up to `cut` bytes past the frame, and a transport header the IP length
/// holds must have its minimum captured (a frame whose header was cut is
/// left to [`parse_cut`], which reports it). One compare more a frame
/// than [`parse_common_then`], for a loop over frames that may be cut.
#[inline(always)]
pub fn parse_common_cut_then<R>(
    frame: &[u8],
    cut: usize,
    then: impl FnOnce(Parsed) -> R,
) -> Option<R> {
    common::<true, R>(frame, cut, then)
}

/// [`parse_common_then`] (`CUT` false, `cut` 0) or
/// [`parse_common_cut_then`] (`CUT` true).
#[inline(always)]
fn common<const CUT: bool, R>(
    frame: &[u8],
    cut: usize,
    then: impl FnOnce(Parsed) -> R,
) -> Option<R> {
    // 42 bytes hold the link header, one tag and an IPv4 header with the
    // ports: one length test for both offsets.
    let head: &[u8; 42] = frame.get(..42)?.try_into().ok()?;
    let outer = u16::from_ne_bytes([head[12], head[13]]);
    if outer == TAG_Q || outer == TAG_AD {
        let tci = u16::from_be_bytes([head[14], head[15]]);
        let et = u16::from_ne_bytes([head[16], head[17]]);
        common_ip::<18, CUT, R>(frame, cut, head, et, tci, then)
    } else {
        common_ip::<14, CUT, R>(frame, cut, head, outer, 0, then)
    }
}

/// The EtherTypes and tags [`parse_common`] compares, as they lie in
/// memory.
const TAG_Q: u16 = u16::from_ne_bytes([0x81, 0x00]);
const TAG_AD: u16 = u16::from_ne_bytes([0x88, 0xa8]);
const ET_IPV4: u16 = u16::from_ne_bytes([0x08, 0x00]);
const ET_IPV6: u16 = u16::from_ne_bytes([0x86, 0xdd]);

/// [`common`] after the link header: the IP header at the constant offset
/// `OFF` (14 or 18), EtherType `et` as it lies in memory.
#[inline(always)]
fn common_ip<const OFF: usize, const CUT: bool, R>(
    frame: &[u8],
    cut: usize,
    head: &[u8; 42],
    et: u16,
    tci: u16,
    then: impl FnOnce(Parsed) -> R,
) -> Option<R> {
    let found = |transport: u16, proto: u8, version: u8, hash: u32| Parsed {
        network: OFF as u16,
        transport,
        proto,
        version,
        vlan_tci: tci,
        hash,
    };
    if et == ET_IPV4 {
        let ip: &[u8; 24] = head[OFF..OFF + 24].try_into().ok()?;
        let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        // Version 4, IHL 5; 20 <= total length <= what the frame holds
        // (and the capture cut).
        let room = frame.len() - (OFF + 20);
        if ip[0] != 0x45 || total.wrapping_sub(20) > room + cut {
            return None;
        }
        let proto = ip[9];
        let min = COMMON_MIN[usize::from(proto)];
        if min == 0 {
            return None;
        }
        // A fragment with a non-zero offset has no transport header: its
        // offset, read above bit 16 (past any payload length), fails the
        // one compare.
        let frag = le32(ip, 4) & 0xff1f_0000;
        let addrs = u64::from_le_bytes([
            ip[12], ip[13], ip[14], ip[15], ip[16], ip[17], ip[18], ip[19],
        ]);
        Some(if (min | frag) as usize <= total - 20 {
            // The transport header's minimum captured (always, uncut).
            if CUT && min as usize > room {
                return None;
            }
            let pw = u32::from_le_bytes([ip[20], ip[21], ip[22], ip[23]]);
            let hash = hash_words(addrs, pw, proto, 4);
            then(found((OFF + 20) as u16, proto, 4, hash))
        } else {
            then(found(
                NO_TRANSPORT,
                proto,
                4,
                hash_words(addrs, 0, proto, 4),
            ))
        })
    } else if et == ET_IPV6 {
        let ip: &[u8; 44] = frame.get(OFF..OFF + 44)?.try_into().ok()?;
        let plen = usize::from(u16::from_be_bytes([ip[4], ip[5]]));
        let nh = ip[6];
        let room = frame.len() - (OFF + 40);
        if ip[0] >> 4 != 6 || plen > room + cut {
            return None;
        }
        let min = COMMON_MIN[usize::from(nh)];
        if min == 0 {
            return None;
        }
        let addrs = fold_v6(le64(ip, 8), le64(ip, 16), le64(ip, 24), le64(ip, 32));
        Some(if min as usize <= plen {
            if CUT && min as usize > room {
                return None;
            }
            let pw = u32::from_le_bytes([ip[40], ip[41], ip[42], ip[43]]);
            then(found(
                (OFF + 40) as u16,
                nh,
                6,
                hash_words(addrs, pw, nh, 6),
            ))
        } else {
            then(found(NO_TRANSPORT, nh, 6, hash_words(addrs, 0, nh, 6)))
        })
    } else {
        None
    }
}

/// The transport rule of [`parse_common`] by protocol number, derived
/// from [`L4_MIN`] and [`EXT_BITS`]: the minimum transport header length
/// of TCP (20), UDP (8) and SCTP (12); [`NO_PORTS`] for a protocol whose
/// header is not reported; 0 for the protocols left to the general path:
/// ICMP and ICMPv6 (their ports are read differently) and the IPv6
/// extension headers (also after IPv4, where the general path reports
/// them as protocols without ports). One load and one compare with the IP
/// payload length instead of a switch.
static COMMON_MIN: [u32; 256] = {
    let mut t = [NO_PORTS; 256];
    let mut p = 0;
    while p < 256 {
        let m = L4_MIN[p];
        if m & ICMP_BIT != 0 || (p < 64 && (EXT_BITS >> p) & 1 != 0) {
            t[p] = 0;
        } else if m != 0 {
            t[p] = m as u32;
        }
        p += 1;
    }
    t
};

/// [`COMMON_MIN`] of a protocol without a reported transport header: more
/// than any IP payload length.
const NO_PORTS: u32 = 1 << 16;

/// [`parse`] of any frame: the general path, out of line. For a frame
/// [`parse_common`] declined, this is [`parse`] without trying the common
/// path again.
#[inline(never)]
pub fn parse_general(frame: &[u8]) -> Result<Parsed, Reason> {
    parse_any(frame, 0)
}

/// [`parse`] of a frame that a capture cut `cut` bytes short (its snap
/// length: a pcap record's original length less its captured length, the
/// `EXTRA_LENGTH` annotation): the IP length may run up to `cut` bytes past
/// the frame, as it did on the wire. Every header the parse reads (the IP
/// header, IPv6 extension headers, the transport header's minimum) must
/// still lie in the frame: one that the capture cut is
/// [`Reason::Truncated`]. With `cut` 0 this is [`parse_general`]; with
/// any `cut` it is [`parse_general`] wherever that does not answer
/// [`Reason::BadLength`] (the same packet or the same reason), so a frame
/// that may have been cut needs one parse, not two. Never panics, never
/// allocates.
#[inline(never)]
pub fn parse_cut(frame: &[u8], cut: usize) -> Result<Parsed, Reason> {
    parse_any(frame, cut)
}

#[inline(always)]
fn parse_any(frame: &[u8], cut: usize) -> Result<Parsed, Reason> {
    let (et, off, tci) = link(frame)?;
    let ip = &frame[off..];
    match et {
        0x0800 => parse_v4(ip, off, tci, cut),
        0x86dd => parse_v6(ip, off, tci, cut),
        _ => Err(Reason::NotIp),
    }
}

/// [`locate`] of the IPv4 packet `ip` at offset `off` of the frame, and
/// with `PORTS` what [`parse`] takes from the transport header: its offset
/// ([`NO_TRANSPORT`] without one) and the ports word (0 without one). The
/// ports are read inside the branch that found the header (a second test
/// on [`Located::transport`] in [`parse`] cost 5-15 instructions a packet,
/// measured). `cut`: bytes of the packet a capture did not keep (see
/// [`parse_cut`]; 0 everywhere else, where it folds away).
#[inline(always)]
fn locate_v4<const PORTS: bool>(
    ip: &[u8],
    off: usize,
    tci: u16,
    cut: usize,
) -> Result<(Located, (u16, u32)), Reason> {
    if ip.len() < 20 {
        return Err(Reason::Truncated);
    }
    // The common header (version 4, IHL 5) needs none of the header
    // length checks.
    let hl = if ip[0] == 0x45 {
        20
    } else {
        v4_header_len(ip[0], ip.len())?
    };
    let total = usize::from(read_u16(&ip[2..4]));
    // One comparison for `hl <= total <= ip.len() + cut` (hl <= ip.len()
    // holds).
    if total.wrapping_sub(hl) > ip.len() + cut - hl {
        return Err(Reason::BadLength);
    }
    let proto = ip[9];
    // Fragment offset and MF bits, tested on the bytes as they lie in
    // memory.
    let ff = u16::from_ne_bytes([ip[6], ip[7]]);
    let first = ff & u16::from_ne_bytes([0x1f, 0xff]) == 0;
    let fragment = match (first, ff & u16::from_ne_bytes([0x20, 0]) != 0) {
        (false, _) => Fragment::Later,
        (true, true) => Fragment::First,
        (true, false) => Fragment::Whole,
    };
    // The same transport test as `locate_v6`'s, written in each: as one
    // inlined helper it cost `parse` 6 instructions a packet (measured).
    let entry = L4_MIN[usize::from(proto)];
    let min = usize::from(entry & !ICMP_BIT);
    let (transport, t) = if first && min != 0 && hl + min <= total {
        let have = total.min(ip.len());
        if hl + min > have {
            return Err(Reason::Truncated);
        }
        let th = off + hl;
        let pw = if PORTS {
            ports(&ip[hl..have], proto, entry)
        } else {
            0
        };
        (Some(th), (th as u16, pw))
    } else {
        (None, (NO_TRANSPORT, 0))
    };
    let l = Located {
        network: off,
        transport,
        end: off + total,
        proto,
        version: 4,
        vlan_tci: tci,
        fragment,
    };
    Ok((l, t))
}

#[inline(always)]
fn parse_v4(ip: &[u8], off: usize, tci: u16, cut: usize) -> Result<Parsed, Reason> {
    let (l, (transport, pw)) = locate_v4::<true>(ip, off, tci, cut)?;
    let h: &[u8; 20] = ip[..20].try_into().map_err(|_| Reason::Truncated)?;
    Ok(parsed(
        &l,
        transport,
        hash_words(le64(h, 12), pw, l.proto, 4),
    ))
}

/// The [`Parsed`] of a [`Located`], its transport offset and hash.
#[inline(always)]
fn parsed(l: &Located, transport: u16, hash: u32) -> Parsed {
    Parsed {
        network: l.network as u16,
        transport,
        proto: l.proto,
        version: l.version,
        vlan_tci: l.vlan_tci,
        hash,
    }
}

/// The IPv4 header length for a first byte other than `0x45`, checked in
/// the parser's order: version, IHL, header within `len`.
#[cold]
#[inline(never)]
fn v4_header_len(b0: u8, len: usize) -> Result<usize, Reason> {
    let hl = usize::from(b0 & 15) * 4;
    if b0 >> 4 != 4 {
        Err(Reason::BadVersion)
    } else if hl < 20 {
        Err(Reason::BadHeaderLength)
    } else if hl > len {
        Err(Reason::Truncated)
    } else {
        Ok(hl)
    }
}

/// [`locate`] of the IPv6 packet `ip` at offset `off` of the frame, and
/// with `PORTS` the transport offset and ports word as in [`locate_v4`]
/// (and `cut` as there).
#[inline(always)]
fn locate_v6<const PORTS: bool>(
    ip: &[u8],
    off: usize,
    tci: u16,
    cut: usize,
) -> Result<(Located, (u16, u32)), Reason> {
    if ip.len() < 40 {
        return Err(Reason::Truncated);
    }
    if ip[0] >> 4 != 6 {
        return Err(Reason::BadVersion);
    }
    let end = 40 + usize::from(read_u16(&ip[4..6]));
    if end > ip.len() + cut {
        return Err(Reason::BadLength);
    }
    let have = end.min(ip.len());
    let (nh, pos, fragment) = if is_ext(ip[6]) {
        walk_ext(ip, end, have, ip[6])?
    } else {
        (ip[6], 40, Fragment::Whole)
    };
    let entry = L4_MIN[usize::from(nh)];
    let min = usize::from(entry & !ICMP_BIT);
    let (transport, t) = if fragment != Fragment::Later && min != 0 && pos + min <= end {
        if pos + min > have {
            return Err(Reason::Truncated);
        }
        let th = off + pos;
        let pw = if PORTS {
            ports(&ip[pos..have], nh, entry)
        } else {
            0
        };
        (Some(th), (th as u16, pw))
    } else {
        (None, (NO_TRANSPORT, 0))
    };
    let l = Located {
        network: off,
        transport,
        end: off + end,
        proto: nh,
        version: 6,
        vlan_tci: tci,
        fragment,
    };
    Ok((l, t))
}

#[inline(always)]
fn parse_v6(ip: &[u8], off: usize, tci: u16, cut: usize) -> Result<Parsed, Reason> {
    let (l, (transport, pw)) = locate_v6::<true>(ip, off, tci, cut)?;
    let h: &[u8; 40] = ip[..40].try_into().map_err(|_| Reason::Truncated)?;
    let addrs = fold_v6(le64(h, 8), le64(h, 16), le64(h, 24), le64(h, 32));
    // The key's protocol: `FlowKey::from_packet` falls back to the IPv6
    // next-header field when the protocol found is 0 (a non-first fragment
    // whose next header is Hop-by-Hop).
    let proto = if l.proto == 0 { h[6] } else { l.proto };
    Ok(parsed(&l, transport, hash_words(addrs, pw, proto, 6)))
}

/// Steps over the extension headers of an IPv6 packet `ip` whose payload
/// ends at `end`, of which the first `have` bytes were captured, from
/// next-header `nh` (an extension). Returns the protocol reached, its
/// offset in `ip`, and whether a Fragment header was seen (the walk stops
/// after one with a non-zero offset). A header that the capture cut is
/// [`Reason::Truncated`]. Out of line: most packets have no extension
/// header.
#[inline(never)]
fn walk_ext(
    ip: &[u8],
    end: usize,
    have: usize,
    mut nh: u8,
) -> Result<(u8, usize, Fragment), Reason> {
    let mut pos = 40usize;
    let mut count = 0usize;
    let mut fragment = Fragment::Whole;
    while is_ext(nh) {
        if count == crate::ipv6ext::MAX_HEADERS || (nh == 0 && count != 0) || pos + 8 > end {
            return Err(Reason::BadExtension);
        }
        if pos + 8 > have {
            return Err(Reason::Truncated);
        }
        let len_byte = usize::from(ip[pos + 1]);
        let len = match nh {
            44 => 8,
            51 => (len_byte + 2) * 4,
            _ => (len_byte + 1) * 8,
        };
        if pos + len > end {
            return Err(Reason::BadExtension);
        }
        if pos + len > have {
            return Err(Reason::Truncated);
        }
        count += 1;
        let next = ip[pos];
        if nh == 44 {
            fragment = if read_u16(&ip[pos + 2..pos + 4]) & !7 != 0 {
                Fragment::Later
            } else {
                Fragment::First
            };
        }
        nh = next;
        pos += len;
        if fragment == Fragment::Later {
            break;
        }
    }
    Ok((nh, pos, fragment))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eth(et: u16) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        f[0..6].copy_from_slice(&[0, 1, 2, 3, 4, 5]);
        f[6..12].copy_from_slice(&[6, 7, 8, 9, 10, 11]);
        f.extend_from_slice(&et.to_be_bytes());
        f
    }

    /// `f` with VLAN tag bytes `tags` inserted after the MAC addresses.
    fn tagged(f: &[u8], tags: &[u8]) -> Vec<u8> {
        let mut g = f[..12].to_vec();
        g.extend_from_slice(tags);
        g.extend_from_slice(&f[12..]);
        g
    }

    /// Ethernet/IPv4/UDP 10.0.0.1:1024 -> 10.0.0.2:53, 4 payload bytes.
    fn v4_udp() -> Vec<u8> {
        let mut f = eth(0x0800);
        f.extend_from_slice(&[
            0x45, 0, 0, 32, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, // IPv4
            0x04, 0x00, 0x00, 0x35, 0, 12, 0, 0, // UDP
            1, 2, 3, 4,
        ]);
        f
    }

    #[test]
    fn ipv4_udp() {
        let p = parse(&v4_udp()).unwrap();
        assert_eq!(
            (p.network, p.transport, p.proto, p.version, p.vlan_tci),
            (14, 34, 17, 4, 0)
        );
        let a = addr_word_v4([10, 0, 0, 1], [10, 0, 0, 2]);
        assert_eq!(p.hash, flow_hash(a, 1024, 53, 17, 4));
        assert_ne!(p.hash, 0);
    }

    #[test]
    fn two_vlan_tags_and_padding() {
        let f = v4_udp();
        let mut g = tagged(&f, &[0x88, 0xa8, 0x20, 0x05, 0x81, 0x00, 0x00, 0x07]);
        g.extend_from_slice(&[0; 6]); // link padding
        let p = parse(&g).unwrap();
        assert_eq!((p.network, p.transport, p.vlan_tci), (22, 42, 0x2005));
        // A third tag is not IP.
        let h = tagged(&g, &[0x81, 0x00, 0, 1]);
        assert_eq!(parse(&h), Err(Reason::NotIp));
    }

    #[test]
    fn ipv4_errors_in_order() {
        let f = v4_udp();
        assert_eq!(parse(&f[..13]), Err(Reason::Truncated));
        assert_eq!(parse(&f[..33]), Err(Reason::Truncated));
        assert_eq!(parse(&eth(0x0806)), Err(Reason::NotIp));
        let mut g = f.clone();
        g[14] = 0x65;
        assert_eq!(parse(&g), Err(Reason::BadVersion));
        g[14] = 0x44;
        assert_eq!(parse(&g), Err(Reason::BadHeaderLength));
        g[14] = 0x4f; // 60-byte header in a 32-byte packet
        assert_eq!(parse(&g), Err(Reason::Truncated));
        g[14] = 0x45;
        g[17] = 33; // total length past the frame
        assert_eq!(parse(&g), Err(Reason::BadLength));
        g[17] = 19;
        assert_eq!(parse(&g), Err(Reason::BadLength));
    }

    #[test]
    fn ipv4_fragments_and_short_transport() {
        let mut f = v4_udp();
        f[20] = 0x20; // MF, offset 0: first fragment keeps its header
        assert_eq!(parse(&f).unwrap().transport, 34);
        f[21] = 1; // offset 8: no transport header
        let p = parse(&f).unwrap();
        assert_eq!((p.transport, p.proto), (NO_TRANSPORT, 17));
        assert_eq!(
            p.hash,
            flow_hash(addr_word_v4([10, 0, 0, 1], [10, 0, 0, 2]), 0, 0, 17, 4)
        );
        let mut g = v4_udp();
        g[23] = 6; // TCP needs 20 bytes, the packet has 12
        assert_eq!(parse(&g).unwrap().transport, NO_TRANSPORT);
    }

    #[test]
    fn icmp_echo_ports() {
        let mut f = eth(0x0800);
        f.extend_from_slice(&[
            0x45, 0, 0, 28, 0, 0, 0, 0, 64, 1, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
        ]);
        f.extend_from_slice(&[8, 0, 0xf7, 0xff, 0x12, 0x34, 0, 1]);
        let p = parse(&f).unwrap();
        let a = addr_word_v4([1, 1, 1, 1], [2, 2, 2, 2]);
        assert_eq!(p.hash, flow_hash(a, 0x1234, 0x0800, 1, 4));
    }

    fn v6(next: u8, payload: &[u8]) -> Vec<u8> {
        let mut f = eth(0x86dd);
        let mut h = [0u8; 40];
        h[0] = 0x60;
        h[4..6].copy_from_slice(&(payload.len() as u16).to_be_bytes());
        h[6] = next;
        h[7] = 64;
        h[8] = 0x20;
        h[23] = 1;
        h[24] = 0x20;
        h[39] = 2;
        f.extend_from_slice(&h);
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn ipv6_extension_chain() {
        let mut pl = vec![
            60, 0, 1, 4, 0, 0, 0, 0, // hop-by-hop -> dest opts
            43, 0, 1, 4, 0, 0, 0, 0, // dest opts -> routing
            44, 0, 0, 0, 0, 0, 0, 0, // routing -> fragment
            51, 0, 0, 1, 0, 0, 0, 1, // fragment (offset 0, M) -> AH
            6, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // AH (len 1: 12 bytes) -> TCP
        ];
        pl.extend_from_slice(&[0x00, 0x50, 0x1f, 0x90]);
        pl.extend_from_slice(&[0; 16]);
        let p = parse(&v6(0, &pl)).unwrap();
        assert_eq!(
            (p.network, p.transport, p.proto, p.version),
            (14, 14 + 40 + 44, 6, 6)
        );
        let s: [u8; 16] = v6(0, &pl)[22..38].try_into().unwrap();
        let d: [u8; 16] = v6(0, &pl)[38..54].try_into().unwrap();
        assert_eq!(p.hash, flow_hash(addr_word_v6(&s, &d), 80, 8080, 6, 6));
        // Non-first fragment: walk stops, no transport header.
        pl[26] = 0;
        pl[27] = 8;
        let p = parse(&v6(0, &pl)).unwrap();
        assert_eq!((p.transport, p.proto), (NO_TRANSPORT, 51));
        // ESP stops the walk, no transport header.
        let p = parse(&v6(50, &[0; 16])).unwrap();
        assert_eq!((p.transport, p.proto), (NO_TRANSPORT, 50));
        // Hop-by-hop not first.
        assert_eq!(
            parse(&v6(60, &[0, 0, 0, 0, 0, 0, 0, 0, 59, 0, 0, 0, 0, 0, 0, 0])),
            Err(Reason::BadExtension)
        );
        // Chain past the payload.
        assert_eq!(
            parse(&v6(60, &[6, 1, 0, 0, 0, 0, 0, 0])),
            Err(Reason::BadExtension)
        );
        // Payload past the frame; bad version.
        let mut f = v6(17, &[0; 8]);
        f[19] = 9;
        assert_eq!(parse(&f), Err(Reason::BadLength));
        f[14] = 0x40;
        assert_eq!(parse(&f), Err(Reason::BadVersion));
        assert_eq!(parse(&f[..53]), Err(Reason::Truncated));
    }

    #[test]
    fn cut_ipv4_parses_like_the_whole_frame() {
        // TCP 10.0.0.1:1024 -> 10.0.0.2:80 with 100 payload bytes, captured
        // up to the end of the TCP header (a 54-byte snap length).
        let mut f = eth(0x0800);
        f.extend_from_slice(&[
            0x45, 0, 0, 140, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, // IPv4
            0x04, 0x00, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0x20, 0, 0, 0, 0, 0,
        ]);
        let mut whole = f.clone();
        whole.extend_from_slice(&[0xaa; 100]);
        let want = parse(&whole).unwrap();
        assert_eq!(parse(&f), Err(Reason::BadLength));
        assert_eq!(parse_cut(&f, 100), Ok(want));
        assert_eq!(parse_cut(&f, 1000), Ok(want));
        // The IP length beyond what the wire carried is still bad.
        assert_eq!(parse_cut(&f, 99), Err(Reason::BadLength));
        // A transport header the capture cut cannot give ports.
        assert_eq!(parse_cut(&f[..50], 104), Err(Reason::Truncated));
        // ... unless the packet has none to give: a later fragment.
        let mut g = f[..34].to_vec();
        g[20] = 0x20;
        g[21] = 0x10;
        let p = parse_cut(&g, 120).unwrap();
        assert_eq!((p.network, p.transport, p.proto), (14, NO_TRANSPORT, 6));
        // Cut 0 is the general parser.
        assert_eq!(parse_cut(&v4_udp(), 0), parse_general(&v4_udp()));
        assert_eq!(parse_cut(&f, 0), parse_general(&f));
    }

    #[test]
    fn cut_ipv6_walks_only_captured_headers() {
        // Destination options (8 bytes) -> UDP 80 -> 8080, 40 payload bytes.
        let mut pl = vec![17, 0, 1, 4, 0, 0, 0, 0];
        pl.extend_from_slice(&[0x00, 0x50, 0x1f, 0x90, 0, 48, 0, 0]);
        pl.extend_from_slice(&[0x55; 40]);
        let whole = v6(60, &pl);
        let want = parse(&whole).unwrap();
        assert_eq!(want.transport, 14 + 40 + 8);
        let head = &whole[..14 + 40 + 16];
        assert_eq!(parse(head), Err(Reason::BadLength));
        assert_eq!(parse_cut(head, 40), Ok(want));
        assert_eq!(parse_cut(head, 39), Err(Reason::BadLength));
        // Cut inside the extension header, or inside the UDP header.
        assert_eq!(parse_cut(&whole[..14 + 44], 52), Err(Reason::Truncated));
        assert_eq!(parse_cut(&whole[..14 + 52], 44), Err(Reason::Truncated));
        // A chain that leaves the payload is bad however much was cut.
        let bad = v6(60, &[6, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(parse_cut(&bad, 100), Err(Reason::BadExtension));
    }

    /// `locate`'s fields as `parse` reports them.
    fn as_parsed(l: &Located) -> (u16, u16, u8, u8, u16) {
        let t = l.transport.map_or(NO_TRANSPORT, |t| t as u16);
        (l.network as u16, t, l.proto, l.version, l.vlan_tci)
    }

    /// `locate` and `parse` agree: same error, or the same offsets.
    fn agree(f: &[u8]) -> Result<Located, Reason> {
        let l = locate(f);
        match (&l, parse(f)) {
            (Ok(l), Ok(p)) => assert_eq!(
                as_parsed(l),
                (p.network, p.transport, p.proto, p.version, p.vlan_tci)
            ),
            (Err(a), Err(b)) => assert_eq!(*a, b),
            (a, b) => panic!("locate {a:?}, parse {b:?}"),
        }
        l
    }

    #[test]
    fn locate_ipv4_udp() {
        let l = agree(&v4_udp()).unwrap();
        assert_eq!(
            l,
            Located {
                network: 14,
                transport: Some(34),
                end: 46,
                proto: 17,
                version: 4,
                vlan_tci: 0,
                fragment: Fragment::Whole,
            }
        );
    }

    #[test]
    fn locate_vlan_and_qinq() {
        let f = v4_udp();
        // One 802.1Q tag, PCP 5, VID 100.
        let g = tagged(&f, &[0x81, 0x00, 0xa0, 0x64]);
        let l = agree(&g).unwrap();
        assert_eq!(
            (l.network, l.transport, l.end, l.vlan_tci),
            (18, Some(38), 50, 0xa064)
        );
        // 802.1ad outer tag, 802.1Q inner tag: the outer TCI is reported.
        let q = tagged(&f, &[0x88, 0xa8, 0x20, 0x05, 0x81, 0x00, 0x00, 0x07]);
        let l = agree(&q).unwrap();
        assert_eq!(
            (l.network, l.transport, l.end, l.vlan_tci),
            (22, Some(42), 54, 0x2005)
        );
        // A third tag is not IP.
        let t = tagged(&q, &[0x81, 0x00, 0, 1]);
        assert_eq!(agree(&t), Err(Reason::NotIp));
    }

    #[test]
    fn locate_ipv4_options_and_fragments() {
        // IHL 6: one option word; total length 36.
        let f = v4_udp();
        let mut g = f[..34].to_vec();
        g[14] = 0x46;
        g[17] = 36;
        g.extend_from_slice(&[1, 1, 1, 0]); // NOP NOP NOP EOL
        g.extend_from_slice(&f[34..]);
        let l = agree(&g).unwrap();
        assert_eq!((l.transport, l.end), (Some(38), 50));
        let mut f = v4_udp();
        f[20] = 0x20; // MF, offset 0
        let l = agree(&f).unwrap();
        assert_eq!((l.transport, l.fragment), (Some(34), Fragment::First));
        f[20] = 0x00;
        f[21] = 1; // offset 8, last fragment
        let l = agree(&f).unwrap();
        assert_eq!(
            (l.transport, l.proto, l.fragment),
            (None, 17, Fragment::Later)
        );
    }

    /// The extension chain of `ipv6_extension_chain`: Hop-by-Hop, Destination
    /// Options, Routing, Fragment (offset 0, M), AH, then TCP.
    fn v6_chain() -> Vec<u8> {
        let mut pl = vec![
            60, 0, 1, 4, 0, 0, 0, 0, // hop-by-hop -> dest opts
            43, 0, 1, 4, 0, 0, 0, 0, // dest opts -> routing
            44, 0, 0, 0, 0, 0, 0, 0, // routing -> fragment
            51, 0, 0, 1, 0, 0, 0, 1, // fragment (offset 0, M) -> AH
            6, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // AH (len 1: 12 bytes) -> TCP
        ];
        pl.extend_from_slice(&[0x00, 0x50, 0x1f, 0x90]);
        pl.extend_from_slice(&[0; 16]);
        v6(0, &pl)
    }

    #[test]
    fn locate_ipv6_extension_headers() {
        let f = v6_chain();
        let l = agree(&f).unwrap();
        assert_eq!(
            l,
            Located {
                network: 14,
                transport: Some(98),
                end: f.len(),
                proto: 6,
                version: 6,
                vlan_tci: 0,
                fragment: Fragment::First,
            }
        );
        // Non-first fragment: the walk stops after the Fragment header.
        let mut g = f.clone();
        g[54 + 26] = 0;
        g[54 + 27] = 8;
        let l = agree(&g).unwrap();
        assert_eq!(
            (l.transport, l.proto, l.fragment),
            (None, 51, Fragment::Later)
        );
        // Hop-by-Hop straight to UDP: no fragment.
        let mut pl = vec![17, 0, 1, 4, 0, 0, 0, 0];
        pl.extend_from_slice(&[0x04, 0x00, 0x00, 0x35, 0, 8, 0, 0]);
        let l = agree(&v6(0, &pl)).unwrap();
        assert_eq!(
            (l.transport, l.proto, l.fragment),
            (Some(62), 17, Fragment::Whole)
        );
        // UDP directly.
        let l = agree(&v6(17, &[0; 8])).unwrap();
        assert_eq!(
            (l.transport, l.end, l.fragment),
            (Some(54), 62, Fragment::Whole)
        );
        // The fragment flag is `ipv6ext::walk`'s.
        for h in [&f, &g] {
            let c = crate::ipv6ext::walk(crate::ip::IpProtocol(h[20]), &h[54..]).unwrap();
            assert!(c.fragment.is_some());
        }
    }

    #[test]
    fn truncated_at_every_length_is_an_error() {
        let f = v4_udp();
        let mut q = f[..12].to_vec();
        q.extend_from_slice(&[0x88, 0xa8, 0x20, 0x05, 0x81, 0x00, 0x00, 0x07]);
        q.extend_from_slice(&v6_chain()[12..]);
        for frame in [f, q, v6_chain()] {
            let end = agree(&frame).unwrap().end;
            assert_eq!(end, frame.len());
            for k in 0..frame.len() {
                assert!(agree(&frame[..k]).is_err(), "{k} of {} bytes", frame.len());
            }
        }
    }

    proptest::proptest! {
        /// `locate` agrees with `parse` on frames built to reach deep: an
        /// IP EtherType after 0-3 tags, the version nibble set, extension
        /// header numbers as next headers; its fragment flag is the one
        /// `ipv6ext::walk` reports.
        #[test]
        fn locate_agrees_with_parse(
            mut f in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::strategy::Just(0u8), proptest::strategy::Just(44),
                    proptest::strategy::Just(60), proptest::strategy::Just(6),
                    proptest::strategy::Just(17), proptest::prelude::any::<u8>()
                ],
                0..160,
            ),
            tags in 0usize..4,
            v6 in proptest::prelude::any::<bool>(),
        ) {
            let et: [u8; 2] = if v6 { [0x86, 0xdd] } else { [0x08, 0x00] };
            let off = 12 + 4 * tags;
            for k in 0..tags {
                if let Some(t) = f.get_mut(12 + 4 * k..14 + 4 * k) {
                    t.copy_from_slice(&[0x81, 0x00]);
                }
            }
            if let Some(t) = f.get_mut(off..off + 2) {
                t.copy_from_slice(&et);
            }
            if let Some(b) = f.get_mut(off + 2) {
                *b = if v6 { 0x60 } else { 0x45 } | (*b & 0x0f);
            }
            if let Ok(l) = agree(&f) {
                proptest::prop_assert!(l.end <= f.len());
                if l.version == 6 {
                    let first = crate::ip::IpProtocol(f[l.network + 6]);
                    let c = crate::ipv6ext::walk(first, &f[l.network + 40..l.end]);
                    let seen = c.map(|c| c.fragment.is_some());
                    proptest::prop_assert_eq!(seen, Ok(l.fragment != Fragment::Whole));
                }
            }
        }
    }

    /// Protocol numbers for the parser proptests: the transports, ICMP and
    /// ICMPv6, IPv6 extension headers (hop-by-hop 0, fragment 44,
    /// destination options 60), and any byte.
    fn protocol() -> impl proptest::strategy::Strategy<Value = u8> {
        proptest::prop_oneof![
            proptest::strategy::Just(6u8),
            proptest::strategy::Just(17),
            proptest::strategy::Just(132),
            proptest::strategy::Just(1),
            proptest::strategy::Just(58),
            proptest::strategy::Just(0),
            proptest::strategy::Just(44),
            proptest::strategy::Just(60),
            proptest::prelude::any::<u8>()
        ]
    }

    /// Shapes random bytes `f` into a frame for the property tests: `tags`
    /// 802.1Q tags (802.1ad with `ad`), the IPv4 or IPv6 (`v6`) EtherType
    /// and version, protocol `proto`, an IPv4 header length of 5 words with
    /// `ihl5` (else random); with `fit` the IP length is the frame's and
    /// IPv4 is no later fragment, else it is one of the header's random
    /// bytes.
    fn shape_frame(
        f: &mut [u8],
        tags: usize,
        ad: bool,
        v6: bool,
        proto: u8,
        ihl5: bool,
        fit: bool,
    ) {
        let tpid: [u8; 2] = if ad { [0x88, 0xa8] } else { [0x81, 0x00] };
        for k in 0..tags {
            if let Some(t) = f.get_mut(12 + 4 * k..14 + 4 * k) {
                t.copy_from_slice(&tpid);
            }
        }
        let off = 14 + 4 * tags;
        let et: [u8; 2] = if v6 { [0x86, 0xdd] } else { [0x08, 0x00] };
        if let Some(t) = f.get_mut(off - 2..off) {
            t.copy_from_slice(&et);
        }
        let avail = f.len().saturating_sub(off);
        if let Some(ip) = f.get_mut(off..) {
            if v6 && ip.len() >= 40 {
                ip[0] = 0x60 | (ip[0] & 0x0f);
                ip[6] = proto;
                let plen = if fit { avail - 40 } else { usize::from(ip[5]) };
                ip[4..6].copy_from_slice(&(plen as u16).to_be_bytes());
            } else if !v6 && ip.len() >= 20 {
                ip[0] = if ihl5 { 0x45 } else { 0x40 | (ip[0] & 0x0f) };
                ip[9] = proto;
                let total = if fit { avail } else { usize::from(ip[3]) };
                ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
                if fit {
                    ip[6] &= 0x20;
                    ip[7] = 0;
                }
            }
        }
    }

    proptest::proptest! {
        /// Where the common path answers, the general path gives the same
        /// result: frames with 0-2 tags, IPv4 or IPv6 headers with random
        /// lengths, header lengths, fragment fields and protocols.
        #[test]
        fn common_path_agrees_with_general(
            mut f in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..120),
            tags in 0usize..3,
            v6 in proptest::prelude::any::<bool>(),
            ad in proptest::prelude::any::<bool>(),
            ihl5 in proptest::prelude::any::<bool>(),
            proto in protocol(),
            short in proptest::prelude::any::<bool>(),
        ) {
            shape_frame(&mut f, tags, ad, v6, proto, ihl5, short);
            if let Some(p) = parse_common(&f) {
                proptest::prop_assert_eq!(Ok(p), parse_general(&f));
                proptest::prop_assert_eq!(Ok(p), parse(&f));
            }
        }
    }

    proptest::proptest! {
        /// `parse_cut` is `parse_general` wherever that does not answer
        /// `BadLength`, so a frame that may be cut needs one parse: frames
        /// from `shape_frame` (their IP length the frame's with `whole`),
        /// then `k` bytes cut from their end and a
        /// `cut` allowance near `k` or anywhere. `Parsed::ip_end` runs past
        /// the frame exactly when the general parser refused it. Where the
        /// common path for cut frames answers, it answers as `parse_cut`.
        #[test]
        fn cut_parse_is_general_unless_bad_length(
            mut f in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..140),
            tags in 0usize..3,
            v6 in proptest::prelude::any::<bool>(),
            proto in protocol(),
            whole in proptest::prelude::any::<bool>(),
            ihl5 in proptest::prelude::any::<bool>(),
            k in 0usize..80,
            near in proptest::prelude::any::<bool>(),
            slack in -3i64..3,
            far in 0usize..70_000,
        ) {
            // The allowance near the bytes cut (off by up to 3), or anything.
            let cut = if near { (k as i64 + slack).max(0) as usize } else { far };
            shape_frame(&mut f, tags, false, v6, proto, ihl5, whole);
            let fr = &f[..f.len().saturating_sub(k)];
            let (g, c) = (parse_general(fr), parse_cut(fr, cut));
            if let Some(p) = parse_common_cut_then(fr, cut, |p| p) {
                proptest::prop_assert_eq!(Ok(p), c);
            }
            if g == Err(Reason::BadLength) {
                if let Ok(p) = c {
                    proptest::prop_assert!(p.ip_end(fr) > fr.len());
                    proptest::prop_assert!(p.ip_end(fr) <= fr.len() + cut);
                }
            } else {
                proptest::prop_assert_eq!(c, g);
                if let Ok(p) = g {
                    proptest::prop_assert!(p.ip_end(fr) <= fr.len());
                }
            }
        }
    }

    #[test]
    fn common_path_takes_the_usual_frames() {
        // IPv4/UDP untagged and IPv6/TCP behind a tag take the common path;
        // ICMP, options and a second tag do not (and parse still answers).
        assert!(parse_common(&v4_udp()).is_some());
        let mut icmp = v4_udp();
        icmp[23] = 1;
        assert!(parse_common(&icmp).is_none());
        assert!(parse(&icmp).is_ok());
        let qinq = tagged(&v4_udp(), &[0x88, 0xa8, 0, 1, 0x81, 0x00, 0, 2]);
        assert!(parse_common(&qinq).is_none());
        assert_eq!(parse(&qinq).unwrap().network, 22);
        let mut f = tagged(&eth(0x86dd), &[0x81, 0x00, 0, 7]);
        let mut ip = vec![0u8; 40];
        ip[0] = 0x60;
        ip[4..6].copy_from_slice(&20u16.to_be_bytes());
        ip[6] = 6;
        f.extend_from_slice(&ip);
        f.extend_from_slice(&[0x12, 0x34, 0x00, 0x50]);
        f.extend_from_slice(&[0u8; 16]);
        let p = parse_common(&f).expect("common");
        assert_eq!(
            (p.network, p.transport, p.proto, p.vlan_tci),
            (18, 58, 6, 7)
        );
        assert_eq!(Ok(p), parse_general(&f));
    }

    #[test]
    fn common_path_transport_rule() {
        // Where the common path answers, its transport header follows the
        // rule: none for a later fragment, a protocol without ports or a
        // payload shorter than the header; the protocols it leaves to the
        // general path (IPv6 extension header numbers, also after IPv4).
        let common = |f: &[u8]| {
            let p = parse_common(f);
            if let Some(p) = p {
                assert_eq!(Ok(p), parse_general(f));
            }
            p.map(|p| p.transport)
        };
        let v4 = |b6: u8, b7: u8, proto: u8| {
            let mut f = v4_udp();
            f[14 + 6] = b6;
            f[14 + 7] = b7;
            f[14 + 9] = proto;
            f
        };
        assert_eq!(common(&v4(0, 0, 17)), Some(34));
        assert_eq!(common(&v4(0x20, 0, 17)), Some(34)); // first fragment
        assert_eq!(common(&v4(0x40, 0, 6)), Some(NO_TRANSPORT)); // 12 bytes: short for TCP
        assert_eq!(common(&v4(0x40, 0, 17)), Some(34));
        for (b6, b7) in [(0, 1), (0x01, 0), (0x10, 0), (0x20, 0x80), (0x1f, 0xff)] {
            assert_eq!(common(&v4(b6, b7, 17)), Some(NO_TRANSPORT), "{b6:x} {b7:x}");
        }
        assert_eq!(common(&v4(0, 0, 47)), Some(NO_TRANSPORT));
        for proto in [0, 1, 43, 44, 51, 58, 60] {
            assert_eq!(common(&v4(0, 0, proto)), None, "{proto}");
            assert!(parse(&v4(0, 0, proto)).is_ok());
        }
        assert_eq!(common(&v6(17, &[0; 8])), Some(54));
        assert_eq!(common(&v6(17, &[0; 7])), Some(NO_TRANSPORT));
        assert_eq!(common(&v6(132, &[0; 12])), Some(54));
        assert_eq!(common(&v6(132, &[0; 11])), Some(NO_TRANSPORT));
        assert_eq!(common(&v6(59, &[0; 8])), Some(NO_TRANSPORT));
        for nh in [0, 1, 43, 44, 51, 58, 60] {
            assert_eq!(common(&v6(nh, &[0; 8])), None, "{nh}");
        }
    }

    #[test]
    fn hash_is_never_zero() {
        // Search a few thousand tuples; flow_hash maps any 0 to 1.
        for i in 0..5000u64 {
            assert_ne!(
                flow_hash(i.wrapping_mul(0x1234_5678_9abc), i as u16, 0, 6, 4),
                0
            );
        }
    }
}

//! The flow-key contract between parsers and the elements that key on flows.
//!
//! A parser (`L4Parser`, or Click's `CheckIPHeader`/`MarkIPHeader` for IPv4)
//! leaves on each packet it accepts:
//!
//! - the network header annotation at the IPv4 or IPv6 header;
//! - the transport header annotation at the TCP, UDP, ICMP, ICMPv6 or SCTP
//!   header (after any IPv6 extension headers), or unset when there is none
//!   to read: a non-first fragment, an unknown protocol, a truncated header;
//! - `L4_PROTO` (user annotation byte 18): the transport protocol number
//!   (IPv4 protocol, or the last IPv6 next-header), also for fragments;
//!   0 if the parser set none;
//! - `VLAN_TCI` (bytes 20-21, host order): the outer 802.1Q tag's TCI, 0
//!   if the frame had no tag;
//! - the flow hash annotation: a 32-bit hash of the 5-tuple, never 0.
//!
//! [`FlowKey::from_packet`] reads a 5-tuple back from those annotations
//! without parsing again; tables, caches and flow meters use it.
//! [`key_words`] reads the same 5-tuple straight into the five-word key
//! layout the hash tables compare ([`KeyWords`]), with the rules on which
//! its callers differ (VLAN id, fragments, short transport headers) as
//! [`KeyRules`]; `CuckooHash`/`FlowCache` and `MicroflowTable` use it.

use crate::anno::offsets;
use crate::packet::Packet;

/// A flow's 5-tuple. IPv4 addresses are stored as IPv4-mapped IPv6
/// addresses (`::ffff:a.b.c.d`) so both versions share one key type.
/// The layout is fixed (`repr(C)`, 38 bytes, no padding).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FlowKey {
    /// Source address (IPv4-mapped for IPv4).
    pub src: [u8; 16],
    /// Destination address (IPv4-mapped for IPv4).
    pub dst: [u8; 16],
    /// Source port (TCP, UDP, SCTP); for ICMP, the echo identifier.
    pub sport: u16,
    /// Destination port (TCP, UDP, SCTP); for ICMP, `type << 8 | code`.
    pub dport: u16,
    /// Transport protocol number.
    pub proto: u8,
    /// IP version: 4 or 6.
    pub version: u8,
}

/// IPv4-mapped IPv6 form of an IPv4 address.
#[inline]
pub fn map_v4(a: [u8; 4]) -> [u8; 16] {
    let mut m = [0u8; 16];
    m[10] = 0xff;
    m[11] = 0xff;
    m[12..].copy_from_slice(&a);
    m
}

impl FlowKey {
    /// Read the 5-tuple a parser left in `p`'s annotations (see the module
    /// documentation). `None` without a network header or when the
    /// addresses lie beyond the data. Ports are 0 when the transport header
    /// is unset or too short to hold them.
    #[inline]
    pub fn from_packet(p: &Packet) -> Option<FlowKey> {
        let ip = p.network_header()?;
        let proto = p.anno().u8(offsets::L4_PROTO);
        let mut k = match ip.first()? >> 4 {
            4 if ip.len() >= 20 => FlowKey {
                src: map_v4(ip[12..16].try_into().ok()?),
                dst: map_v4(ip[16..20].try_into().ok()?),
                proto: if proto != 0 { proto } else { ip[9] },
                version: 4,
                ..FlowKey::default()
            },
            6 if ip.len() >= 40 => FlowKey {
                src: ip[8..24].try_into().ok()?,
                dst: ip[24..40].try_into().ok()?,
                proto: if proto != 0 { proto } else { ip[6] },
                version: 6,
                ..FlowKey::default()
            },
            _ => return None,
        };
        let ports = ports(p.transport_header().unwrap_or(&[]), k.proto);
        k.sport = ports as u16;
        k.dport = (ports >> 16) as u16;
        Some(k)
    }

    /// The key of the reverse direction.
    pub fn reversed(&self) -> FlowKey {
        FlowKey {
            src: self.dst,
            dst: self.src,
            sport: self.dport,
            dport: self.sport,
            ..*self
        }
    }
}

/// A 5-tuple as five 64-bit words, the key layout of the flow tables: the
/// source address's 16 bytes read as two little-endian words, the
/// destination address's likewise (IPv4 addresses as the bytes of
/// `::ffff:a.b.c.d`, like [`FlowKey`]), then one word of source port (bits
/// 0-15), destination port (16-31), protocol (32-39), IP version (40-47)
/// and, with [`KeyRules::vlan`], the VLAN id (48-59). It is the in-memory
/// layout of a [`FlowKey`] followed by a `u16` VLAN id, on a little-endian
/// machine.
pub type KeyWords = [u64; 5];

/// The rules on which readers of [`key_words`] differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRules {
    /// Put the VLAN id (the low 12 bits of `VLAN_TCI`) in bits 48-59 of
    /// the last word; otherwise they are 0.
    pub vlan: bool,
    /// No key for an IPv4 fragment with a non-zero offset.
    pub skip_later_fragments: bool,
    /// No key when the transport header is unset or too short for the
    /// ports: under 4 bytes for TCP, UDP, SCTP or UDP-Lite, under 8 for ICMP
    /// and ICMPv6. Otherwise such a packet is keyed as
    /// [`FlowKey::from_packet`] keys it (ports 0; an ICMP header of 4-7
    /// bytes read as ports).
    pub need_ports: bool,
}

impl KeyRules {
    /// [`FlowKey::from_packet`]'s rules: every packet with a network header
    /// is keyed, no VLAN id.
    pub const FLOW_KEY: KeyRules = KeyRules {
        vlan: false,
        skip_later_fragments: false,
        need_ports: false,
    };
}

/// What [`key_words`] read: the key, and the IP header fields and
/// transport header that flow meters summarise (read in the same pass;
/// callers that do not use them pay nothing, the function being inlined).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRead<'a> {
    /// The key.
    pub words: KeyWords,
    /// The IP packet's length: IPv4 total length, IPv6 40 plus the payload
    /// length (saturating at 65535).
    pub ip_len: u16,
    /// IPv4 TOS, IPv6 traffic class.
    pub tos: u8,
    /// IPv4 TTL, IPv6 hop limit.
    pub ttl: u8,
    /// From the transport header on to the end of the data, or empty.
    pub l4: &'a [u8],
}

/// `p`'s 5-tuple from the annotations a parser left (see the module
/// documentation), as [`KeyWords`]: the words of
/// [`FlowKey::from_packet`]'s key (with `rules` [`KeyRules::FLOW_KEY`])
/// without building the 38-byte [`FlowKey`]. `None` where `from_packet`
/// gives `None`, and for the packets `rules` exclude. Always inlined, so
/// that the rules fold away.
#[inline(always)]
pub fn key_words(p: &Packet, rules: KeyRules) -> Option<KeyRead<'_>> {
    let ip = p.network_header()?;
    let (mut w, proto, ip_len, tos, ttl) = match *ip.first()? >> 4 {
        4 if ip.len() >= 20 => {
            let h: &[u8; 20] = ip[..20].try_into().ok()?;
            if rules.skip_later_fragments && u16::from_be_bytes([h[6], h[7]]) & 0x1fff != 0 {
                return None;
            }
            let w = ipv4_address_words(h);
            (w, h[9], u16::from_be_bytes([h[2], h[3]]), h[1], h[8])
        }
        6 if ip.len() >= 40 => {
            let h: &[u8; 40] = ip[..40].try_into().ok()?;
            let a = |o: usize| {
                u64::from_le_bytes([
                    h[o],
                    h[o + 1],
                    h[o + 2],
                    h[o + 3],
                    h[o + 4],
                    h[o + 5],
                    h[o + 6],
                    h[o + 7],
                ])
            };
            let len = u16::from_be_bytes([h[4], h[5]]).saturating_add(40);
            let tos = (h[0] << 4) | (h[1] >> 4);
            ([a(8), a(16), a(24), a(32), 6 << 40], h[6], len, tos, h[7])
        }
        _ => return None,
    };
    let proto = match p.anno().u8(offsets::L4_PROTO) {
        0 => proto,
        a => a,
    };
    let l4 = p.transport_header().unwrap_or(&[]);
    // Two shapes of one rule, chosen at compile time: where a short header
    // rejects the packet, the length first; else `FlowKey`'s [`ports`]
    // (each the faster shape for its callers, measured).
    let ports = if rules.need_ports {
        // The common case (ports, header long enough) first: one length
        // test and the ICMP test instead of a walk over the protocols.
        let icmp = matches!(proto, 1 | 58);
        if l4.len() >= 4 && !icmp {
            port_pair(l4)
        } else if icmp {
            if l4.len() < 8 {
                return None;
            }
            icmp_ports(l4, proto)
        } else if matches!(proto, 6 | 17 | 132 | 136) {
            return None;
        } else {
            0
        }
    } else {
        ports(l4, proto)
    };
    let tci = if rules.vlan {
        p.anno().u16(offsets::VLAN_TCI)
    } else {
        0
    };
    w[4] |= key_tail(ports, proto, tci);
    Some(KeyRead {
        words: w,
        ip_len,
        tos,
        ttl,
        l4,
    })
}

/// The [`KeyWords`] of IPv4 header `h` before the protocol, ports and
/// VLAN are or-ed into the last word: the addresses IPv4-mapped (bytes 10
/// and 11 0xff, 12..16 the address) and the version.
#[inline(always)]
pub fn ipv4_address_words(h: &[u8; 20]) -> KeyWords {
    let a = |o: usize| u64::from(u32::from_le_bytes([h[o], h[o + 1], h[o + 2], h[o + 3]]));
    let mapped = |x: u64| 0xffff_0000 | x << 32;
    [0, mapped(a(12)), 0, mapped(a(16)), 4 << 40]
}

/// The ports [`FlowKey`] keeps for transport header `l4` (empty: none) of
/// protocol `proto`, source port in bits 0-15, destination port in 16-31:
/// ICMP's of an ICMP or ICMPv6 header of at least 8 bytes, else the first
/// two 16-bit words of a header of at least 4 bytes, else 0.
#[inline(always)]
pub fn ports(l4: &[u8], proto: u8) -> u64 {
    if matches!(proto, 1 | 58) && l4.len() >= 8 {
        icmp_ports(l4, proto)
    } else if l4.len() >= 4 {
        port_pair(l4)
    } else {
        0
    }
}

/// What the last of the [`KeyWords`] carries besides the version: the
/// ports (as [`ports`] gives them) in bits 0-31, the protocol in
/// bits 32-39 and the VLAN id of `vlan_tci` in bits 48-59 (pass 0 where
/// the key has no VLAN).
#[inline(always)]
pub fn key_tail(ports: u64, proto: u8, vlan_tci: u16) -> u64 {
    ports | u64::from(proto) << 32 | u64::from(vlan_tci & 0x0fff) << 48
}

/// The ports of a TCP, UDP or SCTP-like header (at least 4 bytes): source
/// port in bits 0-15, destination port in bits 16-31.
#[inline(always)]
fn port_pair(l4: &[u8]) -> u64 {
    be16(l4, 0) | be16(l4, 2) << 16
}

/// The ports of an ICMP or ICMPv6 header (at least 8 bytes): the echo
/// identifier of an echo request or reply (v4 8/0, v6 128/129) as the
/// source port, `type << 8 | code` as the destination port.
#[inline(always)]
fn icmp_ports(l4: &[u8], proto: u8) -> u64 {
    let echo = matches!((proto, l4[0]), (1, 0 | 8) | (58, 128 | 129));
    be16(l4, 0) << 16 | if echo { be16(l4, 4) } else { 0 }
}

/// The big-endian 16-bit word at `o` of `b`, widened.
#[inline(always)]
fn be16(b: &[u8], o: usize) -> u64 {
    u64::from(u16::from_be_bytes([b[o], b[o + 1]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4_udp() -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 8];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[14 + 9] = 17;
        f[14 + 12..14 + 16].copy_from_slice(&[10, 0, 0, 1]);
        f[14 + 16..14 + 20].copy_from_slice(&[10, 0, 0, 2]);
        f[34..38].copy_from_slice(&[0x04, 0x00, 0x13, 0x88]);
        f
    }

    #[test]
    fn reads_ipv4_udp() {
        let mut p = Packet::from_slice(&v4_udp());
        assert_eq!(FlowKey::from_packet(&p), None, "no network header yet");
        p.set_network_header(14);
        let k = FlowKey::from_packet(&p).unwrap();
        assert_eq!((k.sport, k.dport, k.proto, k.version), (0, 0, 17, 4));
        p.set_transport_header(34);
        let k = FlowKey::from_packet(&p).unwrap();
        assert_eq!((k.sport, k.dport), (1024, 5000));
        assert_eq!(k.src, map_v4([10, 0, 0, 1]));
        assert_eq!(k.reversed().dst, map_v4([10, 0, 0, 1]));
        assert_eq!(k.reversed().dport, 1024);
    }

    #[test]
    fn icmp_echo_uses_identifier() {
        let mut f = v4_udp();
        f[14 + 9] = 1;
        f[34..42].copy_from_slice(&[8, 0, 0, 0, 0x12, 0x34, 0, 1]);
        let mut p = Packet::from_slice(&f);
        p.set_network_header(14);
        p.set_transport_header(34);
        let k = FlowKey::from_packet(&p).unwrap();
        assert_eq!((k.sport, k.dport, k.proto), (0x1234, 0x0800, 1));
    }

    #[test]
    fn ipv6_and_l4_proto_annotation() {
        let mut f = vec![0u8; 14 + 40 + 8 + 4];
        f[12..14].copy_from_slice(&[0x86, 0xdd]);
        f[14] = 0x60;
        f[14 + 6] = 0; // hop-by-hop options header first
        f[14 + 8] = 0x20;
        f[14 + 24] = 0x30;
        f[62..66].copy_from_slice(&[0, 80, 0x1f, 0x90]);
        let mut p = Packet::from_slice(&f);
        p.set_network_header(14);
        p.set_transport_header(62);
        p.anno_mut().set_u8(offsets::L4_PROTO, 6);
        let k = FlowKey::from_packet(&p).unwrap();
        assert_eq!((k.version, k.proto, k.sport, k.dport), (6, 6, 80, 8080));
        assert_eq!(k.src[0], 0x20);
        assert_eq!(k.dst[0], 0x30);
    }

    /// The [`KeyWords`] of a [`FlowKey`] and VLAN id (the layout stated
    /// on the type).
    fn words_of(k: &FlowKey, vlan: u16) -> KeyWords {
        let w = |a: &[u8; 16], i: usize| u64::from_le_bytes(a[i..i + 8].try_into().unwrap());
        let last = u64::from(k.sport)
            | u64::from(k.dport) << 16
            | u64::from(k.proto) << 32
            | u64::from(k.version) << 40
            | u64::from(vlan) << 48;
        [w(&k.src, 0), w(&k.src, 8), w(&k.dst, 0), w(&k.dst, 8), last]
    }

    const MICROFLOW: KeyRules = KeyRules {
        vlan: true,
        skip_later_fragments: true,
        need_ports: true,
    };

    #[test]
    fn key_words_ipv4_udp() {
        let mut p = Packet::from_slice(&v4_udp());
        assert_eq!(key_words(&p, KeyRules::FLOW_KEY), None);
        p.set_network_header(14);
        p.set_transport_header(34);
        p.anno_mut().set_u16(offsets::VLAN_TCI, 0xa064);
        let r = key_words(&p, KeyRules::FLOW_KEY).unwrap();
        let k = FlowKey::from_packet(&p).unwrap();
        assert_eq!(r.words, words_of(&k, 0));
        assert_eq!(
            r.words,
            [
                0,
                0x0100_000a_ffff_0000,
                0,
                0x0200_000a_ffff_0000,
                0x0000_0411_1388_0400
            ]
        );
        assert_eq!((r.ip_len, r.tos, r.ttl, r.l4), (0, 0, 0, &v4_udp()[34..]));
        let mut g = v4_udp();
        g[14 + 1] = 0x10; // TOS
        g[14 + 3] = 28; // total length
        g[14 + 8] = 63; // TTL
        let mut q = Packet::from_slice(&g);
        q.set_network_header(14);
        let r = key_words(&q, KeyRules::FLOW_KEY).unwrap();
        assert_eq!((r.ip_len, r.tos, r.ttl, r.l4), (28, 0x10, 63, &[][..]));
        // The VLAN id (12 bits) only when asked for.
        let r = key_words(&p, MICROFLOW).unwrap();
        assert_eq!(r.words, words_of(&k, 0x064));
    }

    #[test]
    fn key_words_ipv6_and_icmp() {
        let mut f = vec![0u8; 14 + 40 + 8];
        f[12..14].copy_from_slice(&[0x86, 0xdd]);
        f[14..16].copy_from_slice(&[0x6b, 0x80]); // traffic class 0xb8
        f[14 + 5] = 8; // payload length
        f[14 + 6] = 58;
        f[14 + 7] = 64; // hop limit
        f[14 + 8] = 0x20;
        f[14 + 24] = 0x30;
        f[54..62].copy_from_slice(&[128, 0, 0, 0, 0x12, 0x34, 0, 1]); // echo request
        let mut p = Packet::from_slice(&f);
        p.set_network_header(14);
        p.set_transport_header(54);
        let k = FlowKey::from_packet(&p).unwrap();
        assert_eq!((k.sport, k.dport, k.proto), (0x1234, 0x8000, 58));
        for rules in [KeyRules::FLOW_KEY, MICROFLOW] {
            let r = key_words(&p, rules).unwrap();
            assert_eq!(r.words, words_of(&k, 0));
            assert_eq!((r.ip_len, r.tos, r.ttl), (48, 0xb8, 64));
        }
        // A 4-byte ICMPv6 header: type and code read as ports, or no key.
        let mut p = Packet::from_slice(&f[..58]);
        p.set_network_header(14);
        p.set_transport_header(54);
        let k = FlowKey::from_packet(&p).unwrap();
        assert_eq!((k.sport, k.dport), (0x8000, 0));
        let r = key_words(&p, KeyRules::FLOW_KEY).unwrap();
        assert_eq!(r.words, words_of(&k, 0));
        assert_eq!(key_words(&p, MICROFLOW), None);
    }

    /// A packet of frame `f` with its network header at 14 and the
    /// transport header at `transport`.
    fn at(f: &[u8], transport: Option<isize>) -> Packet {
        let mut p = Packet::from_slice(f);
        p.set_network_header(14);
        if let Some(t) = transport {
            p.set_transport_header(t);
        }
        p
    }

    #[test]
    fn key_words_rules() {
        let f = v4_udp();
        let mut p = at(&f, None);
        // No transport header: ports 0, or no key when ports are needed.
        let k = FlowKey::from_packet(&p).unwrap();
        assert_eq!(
            key_words(&p, KeyRules::FLOW_KEY).unwrap().words,
            words_of(&k, 0)
        );
        assert_eq!(key_words(&p, MICROFLOW), None);
        // An unknown protocol needs no ports.
        p.anno_mut().set_u8(offsets::L4_PROTO, 99);
        assert_eq!(
            key_words(&p, MICROFLOW).unwrap().words[4],
            0x0000_0463_0000_0000
        );
        // A non-first fragment: keyed, or not.
        let mut g = f.clone();
        g[20] = 0x20;
        g[21] = 0x01;
        let p = at(&g, Some(34));
        let k = FlowKey::from_packet(&p).unwrap();
        assert_eq!(
            key_words(&p, KeyRules::FLOW_KEY).unwrap().words,
            words_of(&k, 0)
        );
        assert_eq!(key_words(&p, MICROFLOW), None);
        g[21] = 0; // MF only: the first fragment is keyed
        let p = at(&g, Some(34));
        assert!(key_words(&p, MICROFLOW).is_some());
        // A header too short for its version, or another version.
        let p = at(&f[..33], None);
        assert_eq!(key_words(&p, KeyRules::FLOW_KEY), None);
        let mut h = f.clone();
        h[14] = 0x55;
        let p = at(&h, None);
        assert_eq!(key_words(&p, KeyRules::FLOW_KEY), None);
    }

    #[test]
    fn truncated_headers_do_not_panic() {
        let f = v4_udp();
        let mut p = Packet::from_slice(&f[..20]);
        p.set_network_header(14);
        assert_eq!(FlowKey::from_packet(&p), None);
        let mut p = Packet::from_slice(&f[..36]);
        p.set_network_header(14);
        p.set_transport_header(34);
        assert_eq!(FlowKey::from_packet(&p).unwrap().sport, 0);
    }
}

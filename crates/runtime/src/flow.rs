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
        if let Some(l4) = p.transport_header() {
            match k.proto {
                1 | 58 if l4.len() >= 8 => {
                    k.dport = u16::from_be_bytes([l4[0], l4[1]]);
                    // Echo request/reply (v4 8/0, v6 128/129) carry an identifier.
                    if matches!((k.proto, l4[0]), (1, 0 | 8) | (58, 128 | 129)) {
                        k.sport = u16::from_be_bytes([l4[4], l4[5]]);
                    }
                }
                _ if l4.len() >= 4 => {
                    k.sport = u16::from_be_bytes([l4[0], l4[1]]);
                    k.dport = u16::from_be_bytes([l4[2], l4[3]]);
                }
                _ => {}
            }
        }
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

//! The commonly used types under protocol-prefixed names:
//! `use linerate_wire::prelude::*;`.

pub use std::net::{Ipv4Addr, Ipv6Addr};

pub use crate::arp::{Operation as ArpOperation, Packet as ArpPacket, Repr as ArpRepr};
pub use crate::checksum;
pub use crate::ethernet::{
    EtherType, EthernetAddress, Packet as EthernetPacket, Repr as EthernetRepr,
};
pub use crate::icmpv4::{Message as Icmpv4Message, Packet as Icmpv4Packet, Repr as Icmpv4Repr};
pub use crate::icmpv6::{Message as Icmpv6Message, Packet as Icmpv6Packet, Repr as Icmpv6Repr};
pub use crate::ip::{IpPair, IpProtocol};
pub use crate::ipv4::{Packet as Ipv4Packet, Repr as Ipv4Repr};
pub use crate::ipv6::{Packet as Ipv6Packet, Repr as Ipv6Repr};
pub use crate::ipv6ext::{
    Chain as Ipv6ExtChain, Fragment as Ipv6Fragment, Packet as Ipv6ExtPacket, Repr as Ipv6ExtRepr,
};
pub use crate::tcp::{Flags as TcpFlags, Packet as TcpPacket, Repr as TcpRepr};
pub use crate::udp::{Packet as UdpPacket, Repr as UdpRepr};
pub use crate::vlan::{Packet as VlanPacket, Repr as VlanRepr};
pub use crate::{Error as WireError, Result as WireResult};

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes a whole Ethernet/VLAN/IPv4/UDP frame through the prelude
    /// names, the way an element would.
    #[test]
    fn layered_decode() {
        let mut frame = vec![
            0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x00, 0x1b, 0x21, 0x3a, 0x4f, 0x10, 0x81, 0x00,
            0x00, 0x0a, 0x08, 0x00,
        ];
        let ip_start = frame.len();
        frame.resize(ip_start + 20 + 8 + 3, 0);
        let ip = Ipv4Repr {
            src_addr: Ipv4Addr::new(10, 0, 0, 1),
            dst_addr: Ipv4Addr::new(10, 0, 0, 2),
            protocol: IpProtocol::UDP,
            payload_len: 11,
            ttl: 64,
            dscp: 0,
            ecn: 0,
            ident: 1,
            dont_frag: true,
            more_frags: false,
            frag_offset: 0,
            options: &[],
        };
        let mut ip_packet = Ipv4Packet::new_unchecked(&mut frame[ip_start..]);
        ip.emit(&mut ip_packet).unwrap();
        let mut udp_packet = UdpPacket::new_unchecked(ip_packet.payload_mut());
        UdpRepr {
            src_port: 1000,
            dst_port: 2000,
            payload_len: 3,
        }
        .emit(&mut udp_packet)
        .unwrap();
        udp_packet.payload_mut().copy_from_slice(b"abc");
        let pair = IpPair::V4 {
            src: ip.src_addr,
            dst: ip.dst_addr,
        };
        udp_packet.fill_checksum(&pair);

        let eth = EthernetPacket::new_checked(&frame[..]).unwrap();
        assert_eq!(eth.ethertype(), EtherType::VLAN);
        let tag = VlanPacket::new_checked(eth.payload()).unwrap();
        assert_eq!(tag.vid(), 10);
        let ip = Ipv4Packet::new_checked(tag.payload()).unwrap();
        assert!(ip.verify_checksum());
        let udp = UdpPacket::new_checked(ip.payload()).unwrap();
        assert!(udp.verify_checksum(&pair));
        assert_eq!(udp.payload(), b"abc");
        let err: WireResult<_> = TcpPacket::new_checked(udp.payload());
        assert_eq!(err, Err(WireError::Truncated));
    }
}

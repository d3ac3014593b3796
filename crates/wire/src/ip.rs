//! Types shared by IPv4 and IPv6: protocol numbers and address pairs.

use core::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::checksum;

/// An IP protocol / IPv6 next-header number (IANA "Protocol Numbers").
///
/// Unknown values are kept as they are; the associated constants can be
/// used in `match` patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IpProtocol(pub u8);

impl IpProtocol {
    /// IPv6 Hop-by-Hop Options.
    pub const HOPOPT: IpProtocol = IpProtocol(0);
    /// Internet Control Message Protocol.
    pub const ICMP: IpProtocol = IpProtocol(1);
    /// Internet Group Management Protocol.
    pub const IGMP: IpProtocol = IpProtocol(2);
    /// IPv4 encapsulation (IP-in-IP).
    pub const IPIP: IpProtocol = IpProtocol(4);
    /// Transmission Control Protocol.
    pub const TCP: IpProtocol = IpProtocol(6);
    /// User Datagram Protocol.
    pub const UDP: IpProtocol = IpProtocol(17);
    /// IPv6 encapsulation.
    pub const IPV6: IpProtocol = IpProtocol(41);
    /// IPv6 Routing Header.
    pub const IPV6_ROUTE: IpProtocol = IpProtocol(43);
    /// IPv6 Fragment Header.
    pub const IPV6_FRAG: IpProtocol = IpProtocol(44);
    /// Generic Routing Encapsulation.
    pub const GRE: IpProtocol = IpProtocol(47);
    /// Encapsulating Security Payload.
    pub const ESP: IpProtocol = IpProtocol(50);
    /// Authentication Header.
    pub const AH: IpProtocol = IpProtocol(51);
    /// ICMP for IPv6.
    pub const ICMPV6: IpProtocol = IpProtocol(58);
    /// IPv6 No Next Header.
    pub const IPV6_NONXT: IpProtocol = IpProtocol(59);
    /// IPv6 Destination Options.
    pub const IPV6_OPTS: IpProtocol = IpProtocol(60);
    /// Stream Control Transmission Protocol.
    pub const SCTP: IpProtocol = IpProtocol(132);
}

impl From<u8> for IpProtocol {
    fn from(value: u8) -> Self {
        IpProtocol(value)
    }
}

impl From<IpProtocol> for u8 {
    fn from(value: IpProtocol) -> Self {
        value.0
    }
}

impl fmt::Display for IpProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match *self {
            IpProtocol::HOPOPT => "HOPOPT",
            IpProtocol::ICMP => "ICMP",
            IpProtocol::IGMP => "IGMP",
            IpProtocol::IPIP => "IPIP",
            IpProtocol::TCP => "TCP",
            IpProtocol::UDP => "UDP",
            IpProtocol::IPV6 => "IPv6",
            IpProtocol::IPV6_ROUTE => "IPv6-Route",
            IpProtocol::IPV6_FRAG => "IPv6-Frag",
            IpProtocol::GRE => "GRE",
            IpProtocol::ESP => "ESP",
            IpProtocol::AH => "AH",
            IpProtocol::ICMPV6 => "ICMPv6",
            IpProtocol::IPV6_NONXT => "IPv6-NoNxt",
            IpProtocol::IPV6_OPTS => "IPv6-Opts",
            IpProtocol::SCTP => "SCTP",
            IpProtocol(other) => return write!(f, "{other}"),
        };
        f.write_str(name)
    }
}

/// The source and destination addresses of an IP packet, as needed for the
/// transport-layer pseudo-header checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpPair {
    /// Addresses of an IPv4 packet.
    V4 {
        /// Source address.
        src: Ipv4Addr,
        /// Destination address.
        dst: Ipv4Addr,
    },
    /// Addresses of an IPv6 packet.
    V6 {
        /// Source address.
        src: Ipv6Addr,
        /// Destination address.
        dst: Ipv6Addr,
    },
}

impl IpPair {
    /// Sum of the pseudo-header for `protocol` carrying `length` bytes of
    /// upper-layer data (see [`checksum::pseudo_header_v4`] and
    /// [`checksum::pseudo_header_v6`]). For IPv4 only the low 16 bits of
    /// `length` are used, as the field is 16 bits wide there.
    #[inline]
    pub fn pseudo_header_sum(&self, protocol: IpProtocol, length: u32) -> u16 {
        match *self {
            IpPair::V4 { src, dst } => {
                checksum::pseudo_header_v4(src, dst, protocol, length as u16)
            }
            IpPair::V6 { src, dst } => checksum::pseudo_header_v6(src, dst, protocol, length),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_display_and_conversions() {
        assert_eq!(IpProtocol::TCP.to_string(), "TCP");
        assert_eq!(IpProtocol(253).to_string(), "253");
        assert_eq!(IpProtocol::from(17), IpProtocol::UDP);
        assert_eq!(u8::from(IpProtocol::ICMPV6), 58);
    }

    #[test]
    fn pair_dispatches_by_family() {
        let v4 = IpPair::V4 {
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 0, 2),
        };
        // 0a00 + 0001 + 0a00 + 0002 + 0011 + 0008
        assert_eq!(
            v4.pseudo_header_sum(IpProtocol::UDP, 8),
            0x1400 + 0x0003 + 0x0019
        );
        let v6 = IpPair::V6 {
            src: Ipv6Addr::LOCALHOST,
            dst: Ipv6Addr::LOCALHOST,
        };
        // 1 + 1 + length 0x10 + next header 6
        assert_eq!(v6.pseudo_header_sum(IpProtocol::TCP, 0x10), 0x18);
    }
}

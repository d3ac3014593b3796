//! Link-layer header types as stored in pcap and pcapng files.

/// A link-layer header type, holding the number the file carries (`LINKTYPE_*`, or one
/// of the platform `DLT_*` values that libpcap maps onto them).
///
/// The number is kept as found so that a trace copied through [`crate::pcap::PcapWriter`]
/// keeps its header byte-identical; [`LinkType::kind`] tells what the number means. The
/// default is 0 (`LINKTYPE_NULL`, BSD loopback).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct LinkType(pub u32);

impl LinkType {
    /// Ethernet (`LINKTYPE_ETHERNET`, 1).
    pub const ETHERNET: LinkType = LinkType(1);
    /// Raw IPv4 or IPv6, version in the first nibble (`LINKTYPE_RAW`, 101).
    pub const RAW: LinkType = LinkType(101);
    /// Raw IP as `DLT_RAW` on most platforms (12); Click's `ToDump` writes this for `IP`.
    pub const RAW_DLT12: LinkType = LinkType(12);
    /// Raw IP as `DLT_RAW` on OpenBSD (14).
    pub const RAW_DLT14: LinkType = LinkType(14);
    /// Linux cooked capture v1 (`LINKTYPE_LINUX_SLL`, 113).
    pub const LINUX_SLL: LinkType = LinkType(113);
    /// Raw IPv4 only (`LINKTYPE_IPV4`, 228).
    pub const IPV4: LinkType = LinkType(228);
    /// Raw IPv6 only (`LINKTYPE_IPV6`, 229).
    pub const IPV6: LinkType = LinkType(229);
    /// Linux cooked capture v2 (`LINKTYPE_LINUX_SLL2`, 276).
    pub const LINUX_SLL2: LinkType = LinkType(276);

    /// What the number means, for the link types this crate decodes.
    pub fn kind(self) -> LinkKind {
        match self.0 {
            1 => LinkKind::Ethernet,
            12 | 14 | 101 => LinkKind::RawIp,
            113 => LinkKind::LinuxSll,
            228 => LinkKind::Ipv4,
            229 => LinkKind::Ipv6,
            276 => LinkKind::LinuxSll2,
            _ => LinkKind::Other,
        }
    }
}

/// The classification of a [`LinkType`] number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkKind {
    /// 14-byte Ethernet II header (or 802.3), possibly VLAN-tagged.
    Ethernet,
    /// A bare IPv4 or IPv6 header; the version nibble says which.
    RawIp,
    /// A bare IPv4 header.
    Ipv4,
    /// A bare IPv6 header.
    Ipv6,
    /// 16-byte Linux cooked-capture header (SLL).
    LinuxSll,
    /// 20-byte Linux cooked-capture header, version 2 (SLL2).
    LinuxSll2,
    /// Any other link type; the records are still delivered, undecoded.
    Other,
}

impl LinkKind {
    /// Whether records start with the IP header (`RawIp`, `Ipv4`, `Ipv6`).
    #[inline]
    pub fn is_raw_ip(self) -> bool {
        matches!(self, LinkKind::RawIp | LinkKind::Ipv4 | LinkKind::Ipv6)
    }
}

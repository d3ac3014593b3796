//! Ethernet II frames: destination, source, EtherType, payload.
//!
//! The frame check sequence is not part of the view (NICs strip it).

use core::fmt;
use core::str::FromStr;

use crate::bytes::{read_u16, write_u16};
use crate::{Error, Result};

/// An EtherType (IEEE 802 numbers). Unknown values are kept as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EtherType(pub u16);

impl EtherType {
    /// Internet Protocol version 4.
    pub const IPV4: EtherType = EtherType(0x0800);
    /// Address Resolution Protocol.
    pub const ARP: EtherType = EtherType(0x0806);
    /// IEEE 802.1Q VLAN tag (C-tag).
    pub const VLAN: EtherType = EtherType(0x8100);
    /// IEEE 802.1ad service tag (S-tag, "QinQ").
    pub const QINQ: EtherType = EtherType(0x88a8);
    /// Internet Protocol version 6.
    pub const IPV6: EtherType = EtherType(0x86dd);
    /// MPLS unicast.
    pub const MPLS: EtherType = EtherType(0x8847);
    /// MPLS multicast.
    pub const MPLS_MULTICAST: EtherType = EtherType(0x8848);
    /// PPPoE discovery stage.
    pub const PPPOE_DISCOVERY: EtherType = EtherType(0x8863);
    /// PPPoE session stage.
    pub const PPPOE_SESSION: EtherType = EtherType(0x8864);
    /// Link Layer Discovery Protocol.
    pub const LLDP: EtherType = EtherType(0x88cc);

    /// Whether this value is a VLAN tag protocol identifier (802.1Q or
    /// 802.1ad), i.e. a [`vlan`](crate::vlan) tag follows.
    #[inline]
    pub fn is_vlan_tag(self) -> bool {
        self == EtherType::VLAN || self == EtherType::QINQ
    }
}

impl From<u16> for EtherType {
    fn from(value: u16) -> Self {
        EtherType(value)
    }
}

impl From<EtherType> for u16 {
    fn from(value: EtherType) -> Self {
        value.0
    }
}

impl fmt::Display for EtherType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:04x}", self.0)
    }
}

/// A six-byte Ethernet (EUI-48) address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct EthernetAddress(pub [u8; 6]);

impl EthernetAddress {
    /// The broadcast address `FF-FF-FF-FF-FF-FF`.
    pub const BROADCAST: EthernetAddress = EthernetAddress([0xff; 6]);

    /// Reads an address from exactly six bytes; `None` for any other length.
    pub fn from_bytes(data: &[u8]) -> Option<EthernetAddress> {
        <[u8; 6]>::try_from(data).ok().map(EthernetAddress)
    }

    /// The address octets.
    #[inline]
    pub fn as_bytes(&self) -> &[u8; 6] {
        &self.0
    }

    /// Whether this is the broadcast address.
    #[inline]
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }

    /// Whether the group bit is set (multicast, which includes broadcast).
    #[inline]
    pub fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    /// Whether the group bit is clear.
    #[inline]
    pub fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }

    /// Whether the locally-administered bit is set.
    #[inline]
    pub fn is_local(&self) -> bool {
        self.0[0] & 0x02 != 0
    }
}

/// Formats like Click's `EtherAddress::unparse`: `00-05-4E-50-3C-1A`.
impl fmt::Display for EthernetAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.0;
        write!(
            f,
            "{:02X}-{:02X}-{:02X}-{:02X}-{:02X}-{:02X}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

/// Parses six hex octets separated by all `-` or all `:`; each octet is one
/// or two hex digits, in either case. Fails with [`Error::Malformed`].
impl FromStr for EthernetAddress {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let sep = if s.contains('-') { '-' } else { ':' };
        let mut out = [0u8; 6];
        let mut parts = s.split(sep);
        for slot in out.iter_mut() {
            let part = parts.next().ok_or(Error::Malformed)?;
            if part.is_empty() || part.len() > 2 || !part.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(Error::Malformed);
            }
            *slot = u8::from_str_radix(part, 16).map_err(|_| Error::Malformed)?;
        }
        if parts.next().is_some() {
            return Err(Error::Malformed);
        }
        Ok(EthernetAddress(out))
    }
}

mod field {
    use crate::field::{Field, Rest};

    pub const DESTINATION: Field = 0..6;
    pub const SOURCE: Field = 6..12;
    pub const ETHERTYPE: Field = 12..14;
    pub const PAYLOAD: Rest = 14..;
}

/// Length of an Ethernet II header.
pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// A read/write view of an Ethernet II frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Ensures the buffer holds a whole header ([`Error::Truncated`]
    /// otherwise), so that every accessor is in bounds.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Destination address.
    #[inline]
    pub fn dst_addr(&self) -> EthernetAddress {
        let d = &self.buffer.as_ref()[field::DESTINATION];
        EthernetAddress([d[0], d[1], d[2], d[3], d[4], d[5]])
    }

    /// Source address.
    #[inline]
    pub fn src_addr(&self) -> EthernetAddress {
        let d = &self.buffer.as_ref()[field::SOURCE];
        EthernetAddress([d[0], d[1], d[2], d[3], d[4], d[5]])
    }

    /// EtherType field.
    #[inline]
    pub fn ethertype(&self) -> EtherType {
        EtherType(read_u16(&self.buffer.as_ref()[field::ETHERTYPE]))
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// Bytes after the header.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, value: EthernetAddress) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&value.0);
    }

    /// Sets the source address.
    #[inline]
    pub fn set_src_addr(&mut self, value: EthernetAddress) {
        self.buffer.as_mut()[field::SOURCE].copy_from_slice(&value.0);
    }

    /// Sets the EtherType field.
    #[inline]
    pub fn set_ethertype(&mut self, value: EtherType) {
        write_u16(&mut self.buffer.as_mut()[field::ETHERTYPE], value.0);
    }

    /// Mutable bytes after the header.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A decoded Ethernet II header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source address.
    pub src_addr: EthernetAddress,
    /// Destination address.
    pub dst_addr: EthernetAddress,
    /// EtherType of the payload.
    pub ethertype: EtherType,
}

impl Repr {
    /// Decodes the header of a frame.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr> {
        packet.check_len()?;
        Ok(Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            ethertype: packet.ethertype(),
        })
    }

    /// Number of bytes [`emit`](Self::emit) writes.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into the start of `packet`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<()> {
        packet.check_len()?;
        packet.set_dst_addr(self.dst_addr);
        packet.set_src_addr(self.src_addr);
        packet.set_ethertype(self.ethertype);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::assert_prefixes_rejected;

    /// Start of an ARP request frame: broadcast from 00:1b:21:3a:4f:10.
    const FRAME: [u8; 18] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x1b, 0x21, 0x3a, 0x4f, 0x10, 0x08, 0x06, 0x00,
        0x01, 0x08, 0x00,
    ];

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&FRAME[..]).unwrap();
        assert!(p.dst_addr().is_broadcast());
        assert_eq!(
            p.src_addr(),
            EthernetAddress([0x00, 0x1b, 0x21, 0x3a, 0x4f, 0x10])
        );
        assert_eq!(p.ethertype(), EtherType::ARP);
        assert_eq!(p.payload(), &[0x00, 0x01, 0x08, 0x00]);
    }

    #[test]
    fn parse_emit_round_trip() {
        let repr = Repr::parse(&Packet::new_checked(&FRAME[..]).unwrap()).unwrap();
        let mut buf = [0u8; 18];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        repr.emit(&mut p).unwrap();
        p.payload_mut().copy_from_slice(&FRAME[14..]);
        assert_eq!(buf, FRAME);
        assert_eq!(repr.buffer_len(), 14);
    }

    #[test]
    fn emit_into_short_buffer_fails() {
        let repr = Repr::parse(&Packet::new_unchecked(&FRAME[..])).unwrap();
        let mut buf = [0u8; 13];
        assert_eq!(
            repr.emit(&mut Packet::new_unchecked(&mut buf[..])),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn truncated_prefixes_rejected() {
        assert_prefixes_rejected(&FRAME[..14], |b| {
            Repr::parse(&Packet::new_unchecked(b)).map(|_| ())
        });
    }

    #[test]
    fn address_display_and_parse() {
        let a = EthernetAddress([0x00, 0x05, 0x4e, 0x50, 0x3c, 0x1a]);
        assert_eq!(a.to_string(), "00-05-4E-50-3C-1A");
        assert_eq!("00-05-4e-50-3c-1a".parse::<EthernetAddress>(), Ok(a));
        assert_eq!("0:5:4E:50:3C:1A".parse::<EthernetAddress>(), Ok(a));
        for bad in [
            "",
            "00-05-4e-50-3c",
            "00-05-4e-50-3c-1a-00",
            "00:05-4e:50:3c:1a",
            "0g:00:00:00:00:00",
            "000:0:0:0:0:0",
            "+1:0:0:0:0:0",
        ] {
            assert_eq!(
                bad.parse::<EthernetAddress>(),
                Err(Error::Malformed),
                "{bad}"
            );
        }
    }

    #[test]
    fn address_classes() {
        assert!(EthernetAddress::BROADCAST.is_multicast());
        let mcast = EthernetAddress([0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb]);
        assert!(mcast.is_multicast() && !mcast.is_broadcast() && !mcast.is_unicast());
        let local = EthernetAddress([0x02, 0, 0, 0, 0, 1]);
        assert!(local.is_unicast() && local.is_local());
        assert_eq!(
            EthernetAddress::from_bytes(&[1, 2, 3, 4, 5, 6]),
            Some(EthernetAddress([1, 2, 3, 4, 5, 6]))
        );
        assert_eq!(EthernetAddress::from_bytes(&[1, 2, 3]), None);
    }

    #[test]
    fn ethertype_helpers() {
        assert!(EtherType::VLAN.is_vlan_tag() && EtherType::QINQ.is_vlan_tag());
        assert!(!EtherType::IPV4.is_vlan_tag());
        assert_eq!(EtherType::IPV6.to_string(), "0x86dd");
        assert_eq!(u16::from(EtherType::MPLS), 0x8847);
    }
}

//! ARP (RFC 826) for the Ethernet/IPv4 pair.
//!
//! The view reads the generic fixed fields (hardware and protocol types and
//! lengths, operation) and the four address fields at their Ethernet/IPv4
//! offsets. [`Packet::check_len`] requires the 28 bytes of that layout;
//! [`Repr::parse`] additionally requires the type and length fields to
//! describe Ethernet/IPv4 and fails with [`Error::Unsupported`] otherwise.

use core::fmt;
use std::net::Ipv4Addr;

use crate::bytes::{read_u16, write_u16};
use crate::ethernet::{EtherType, EthernetAddress};
use crate::{Error, Result};

/// An ARP operation code. Unknown values are kept as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Operation(pub u16);

impl Operation {
    /// ARP request.
    pub const REQUEST: Operation = Operation(1);
    /// ARP reply.
    pub const REPLY: Operation = Operation(2);
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Operation::REQUEST => f.write_str("request"),
            Operation::REPLY => f.write_str("reply"),
            Operation(other) => write!(f, "op{other}"),
        }
    }
}

/// ARP hardware type for Ethernet.
pub const HARDWARE_ETHERNET: u16 = 1;

mod field {
    use crate::field::Field;

    pub const HTYPE: Field = 0..2;
    pub const PTYPE: Field = 2..4;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: Field = 6..8;
    pub const SHA: Field = 8..14;
    pub const SPA: Field = 14..18;
    pub const THA: Field = 18..24;
    pub const TPA: Field = 24..28;
}

/// Length of an Ethernet/IPv4 ARP packet.
pub const PACKET_LEN: usize = field::TPA.end;

/// A read/write view of an Ethernet/IPv4 ARP packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

fn read_ipv4(data: &[u8]) -> Ipv4Addr {
    Ipv4Addr::new(data[0], data[1], data[2], data[3])
}

fn read_ether(data: &[u8]) -> EthernetAddress {
    EthernetAddress([data[0], data[1], data[2], data[3], data[4], data[5]])
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

    /// Ensures the buffer holds the 28-byte Ethernet/IPv4 layout
    /// ([`Error::Truncated`] otherwise). Bytes past it (Ethernet padding)
    /// are ignored.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < PACKET_LEN {
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

    /// Hardware type (1 for Ethernet).
    #[inline]
    pub fn hardware_type(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::HTYPE])
    }

    /// Protocol type (an EtherType; IPv4 here).
    #[inline]
    pub fn protocol_type(&self) -> EtherType {
        EtherType(read_u16(&self.buffer.as_ref()[field::PTYPE]))
    }

    /// Hardware address length.
    #[inline]
    pub fn hardware_len(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }

    /// Protocol address length.
    #[inline]
    pub fn protocol_len(&self) -> u8 {
        self.buffer.as_ref()[field::PLEN]
    }

    /// Operation code.
    #[inline]
    pub fn operation(&self) -> Operation {
        Operation(read_u16(&self.buffer.as_ref()[field::OPER]))
    }

    /// Sender hardware address.
    #[inline]
    pub fn source_hardware_addr(&self) -> EthernetAddress {
        read_ether(&self.buffer.as_ref()[field::SHA])
    }

    /// Sender protocol address.
    #[inline]
    pub fn source_protocol_addr(&self) -> Ipv4Addr {
        read_ipv4(&self.buffer.as_ref()[field::SPA])
    }

    /// Target hardware address.
    #[inline]
    pub fn target_hardware_addr(&self) -> EthernetAddress {
        read_ether(&self.buffer.as_ref()[field::THA])
    }

    /// Target protocol address.
    #[inline]
    pub fn target_protocol_addr(&self) -> Ipv4Addr {
        read_ipv4(&self.buffer.as_ref()[field::TPA])
    }

    /// Whether the type and length fields describe Ethernet/IPv4.
    #[inline]
    pub fn is_ethernet_ipv4(&self) -> bool {
        self.hardware_type() == HARDWARE_ETHERNET
            && self.protocol_type() == EtherType::IPV4
            && self.hardware_len() == 6
            && self.protocol_len() == 4
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the hardware type.
    #[inline]
    pub fn set_hardware_type(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::HTYPE], value);
    }

    /// Sets the protocol type.
    #[inline]
    pub fn set_protocol_type(&mut self, value: EtherType) {
        write_u16(&mut self.buffer.as_mut()[field::PTYPE], value.0);
    }

    /// Sets the hardware address length.
    #[inline]
    pub fn set_hardware_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::HLEN] = value;
    }

    /// Sets the protocol address length.
    #[inline]
    pub fn set_protocol_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::PLEN] = value;
    }

    /// Sets the operation code.
    #[inline]
    pub fn set_operation(&mut self, value: Operation) {
        write_u16(&mut self.buffer.as_mut()[field::OPER], value.0);
    }

    /// Sets the sender hardware address.
    #[inline]
    pub fn set_source_hardware_addr(&mut self, value: EthernetAddress) {
        self.buffer.as_mut()[field::SHA].copy_from_slice(&value.0);
    }

    /// Sets the sender protocol address.
    #[inline]
    pub fn set_source_protocol_addr(&mut self, value: Ipv4Addr) {
        self.buffer.as_mut()[field::SPA].copy_from_slice(&value.octets());
    }

    /// Sets the target hardware address.
    #[inline]
    pub fn set_target_hardware_addr(&mut self, value: EthernetAddress) {
        self.buffer.as_mut()[field::THA].copy_from_slice(&value.0);
    }

    /// Sets the target protocol address.
    #[inline]
    pub fn set_target_protocol_addr(&mut self, value: Ipv4Addr) {
        self.buffer.as_mut()[field::TPA].copy_from_slice(&value.octets());
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A decoded Ethernet/IPv4 ARP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Operation code.
    pub operation: Operation,
    /// Sender hardware address.
    pub source_hardware_addr: EthernetAddress,
    /// Sender protocol address.
    pub source_protocol_addr: Ipv4Addr,
    /// Target hardware address.
    pub target_hardware_addr: EthernetAddress,
    /// Target protocol address.
    pub target_protocol_addr: Ipv4Addr,
}

impl Repr {
    /// Decodes an ARP packet; [`Error::Unsupported`] unless it is
    /// Ethernet/IPv4.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr> {
        packet.check_len()?;
        if !packet.is_ethernet_ipv4() {
            return Err(Error::Unsupported);
        }
        Ok(Repr {
            operation: packet.operation(),
            source_hardware_addr: packet.source_hardware_addr(),
            source_protocol_addr: packet.source_protocol_addr(),
            target_hardware_addr: packet.target_hardware_addr(),
            target_protocol_addr: packet.target_protocol_addr(),
        })
    }

    /// Number of bytes [`emit`](Self::emit) writes.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        PACKET_LEN
    }

    /// Writes the whole ARP packet.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<()> {
        packet.check_len()?;
        packet.set_hardware_type(HARDWARE_ETHERNET);
        packet.set_protocol_type(EtherType::IPV4);
        packet.set_hardware_len(6);
        packet.set_protocol_len(4);
        packet.set_operation(self.operation);
        packet.set_source_hardware_addr(self.source_hardware_addr);
        packet.set_source_protocol_addr(self.source_protocol_addr);
        packet.set_target_hardware_addr(self.target_hardware_addr);
        packet.set_target_protocol_addr(self.target_protocol_addr);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::assert_prefixes_rejected;

    /// "Who has 192.168.1.1? Tell 192.168.1.23" from 00:1b:21:3a:4f:10.
    const REQUEST: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x00, 0x1b, 0x21, 0x3a, 0x4f, 0x10, 0xc0,
        0xa8, 0x01, 0x17, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc0, 0xa8, 0x01, 0x01,
    ];

    fn request_repr() -> Repr {
        Repr {
            operation: Operation::REQUEST,
            source_hardware_addr: EthernetAddress([0x00, 0x1b, 0x21, 0x3a, 0x4f, 0x10]),
            source_protocol_addr: Ipv4Addr::new(192, 168, 1, 23),
            target_hardware_addr: EthernetAddress([0; 6]),
            target_protocol_addr: Ipv4Addr::new(192, 168, 1, 1),
        }
    }

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&REQUEST[..]).unwrap();
        assert_eq!(p.hardware_type(), 1);
        assert_eq!(p.protocol_type(), EtherType::IPV4);
        assert_eq!((p.hardware_len(), p.protocol_len()), (6, 4));
        assert_eq!(p.operation(), Operation::REQUEST);
        assert_eq!(p.target_protocol_addr(), Ipv4Addr::new(192, 168, 1, 1));
    }

    #[test]
    fn parse_and_emit() {
        let repr = Repr::parse(&Packet::new_checked(&REQUEST[..]).unwrap()).unwrap();
        assert_eq!(repr, request_repr());
        let mut buf = [0xaau8; 28];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..])).unwrap();
        assert_eq!(buf, REQUEST);
    }

    #[test]
    fn padded_frame_is_accepted() {
        let mut padded = [0u8; 46];
        padded[..28].copy_from_slice(&REQUEST);
        assert_eq!(
            Repr::parse(&Packet::new_checked(&padded[..]).unwrap()),
            Ok(request_repr())
        );
    }

    #[test]
    fn other_layouts_unsupported() {
        let mut bytes = REQUEST;
        bytes[1] = 6; // IEEE 802 hardware
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&bytes[..])),
            Err(Error::Unsupported)
        );
        let mut bytes = REQUEST;
        bytes[5] = 16; // IPv6-sized protocol addresses
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&bytes[..])),
            Err(Error::Unsupported)
        );
    }

    #[test]
    fn truncated_prefixes_rejected() {
        assert_prefixes_rejected(&REQUEST, |b| {
            Repr::parse(&Packet::new_unchecked(b)).map(|_| ())
        });
        let mut short = [0u8; 27];
        assert_eq!(
            request_repr().emit(&mut Packet::new_unchecked(&mut short[..])),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn operation_display() {
        assert_eq!(Operation::REPLY.to_string(), "reply");
        assert_eq!(Operation(9).to_string(), "op9");
    }
}

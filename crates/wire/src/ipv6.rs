//! The IPv6 fixed header (RFC 8200 section 3).
//!
//! Extension headers are walked with [`crate::ipv6ext`]. A buffer longer
//! than 40 + payload length (Ethernet padding) is accepted; `payload()`
//! stops at the payload length. Jumbograms (payload length 0 with a
//! Jumbo Payload option) are not decoded: their payload appears empty.

use std::net::Ipv6Addr;

use crate::bytes::{read_u16, read_u32, write_u16, write_u32};
use crate::ip::IpProtocol;
use crate::{Error, Result};

mod field {
    use crate::field::Field;

    pub const VER_TC_FLOW: Field = 0..4;
    pub const LENGTH: Field = 4..6;
    pub const NXT_HDR: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC_ADDR: Field = 8..24;
    pub const DST_ADDR: Field = 24..40;
}

/// Length of the IPv6 fixed header.
pub const HEADER_LEN: usize = field::DST_ADDR.end;

const FLOW_MASK: u32 = 0x000f_ffff;

/// A read/write view of an IPv6 packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

fn read_addr(data: &[u8]) -> Ipv6Addr {
    let mut octets = [0u8; 16];
    octets.copy_from_slice(&data[..16]);
    Ipv6Addr::from(octets)
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

    /// Ensures the fixed header is present ([`Error::Truncated`] otherwise);
    /// suitable for headers quoted inside ICMPv6 errors.
    #[inline]
    pub fn check_header_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// [`check_header_len`](Self::check_header_len), then
    /// [`Error::Truncated`] if the payload length exceeds the buffer.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        self.check_header_len()?;
        if self.buffer.as_ref().len() < HEADER_LEN + usize::from(self.payload_len()) {
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

    fn ver_tc_flow(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::VER_TC_FLOW])
    }

    /// Version field (6 for IPv6).
    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[0] >> 4
    }

    /// Traffic class (DSCP and ECN).
    #[inline]
    pub fn traffic_class(&self) -> u8 {
        (self.ver_tc_flow() >> 20) as u8
    }

    /// Differentiated services code point (6 bits).
    #[inline]
    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> 2
    }

    /// Explicit congestion notification (2 bits).
    #[inline]
    pub fn ecn(&self) -> u8 {
        self.traffic_class() & 0x03
    }

    /// Flow label (20 bits).
    #[inline]
    pub fn flow_label(&self) -> u32 {
        self.ver_tc_flow() & FLOW_MASK
    }

    /// Payload length field (extension headers included).
    #[inline]
    pub fn payload_len(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::LENGTH])
    }

    /// Next header field.
    #[inline]
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[field::NXT_HDR])
    }

    /// Hop limit.
    #[inline]
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }

    /// Source address.
    #[inline]
    pub fn src_addr(&self) -> Ipv6Addr {
        read_addr(&self.buffer.as_ref()[field::SRC_ADDR])
    }

    /// Destination address.
    #[inline]
    pub fn dst_addr(&self) -> Ipv6Addr {
        read_addr(&self.buffer.as_ref()[field::DST_ADDR])
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// Bytes after the fixed header, up to the payload length.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[HEADER_LEN..HEADER_LEN + usize::from(self.payload_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_ver_tc_flow(&mut self, value: u32) {
        write_u32(&mut self.buffer.as_mut()[field::VER_TC_FLOW], value);
    }

    /// Sets the version field (low 4 bits of `value`).
    #[inline]
    pub fn set_version(&mut self, value: u8) {
        let word = (self.ver_tc_flow() & 0x0fff_ffff) | (u32::from(value & 0x0f) << 28);
        self.set_ver_tc_flow(word);
    }

    /// Sets the traffic class.
    #[inline]
    pub fn set_traffic_class(&mut self, value: u8) {
        let word = (self.ver_tc_flow() & 0xf00f_ffff) | (u32::from(value) << 20);
        self.set_ver_tc_flow(word);
    }

    /// Sets the DSCP (low 6 bits of `value`), keeping ECN.
    #[inline]
    pub fn set_dscp(&mut self, value: u8) {
        let tc = (self.traffic_class() & 0x03) | (value << 2);
        self.set_traffic_class(tc);
    }

    /// Sets the ECN bits (low 2 bits of `value`), keeping DSCP.
    #[inline]
    pub fn set_ecn(&mut self, value: u8) {
        let tc = (self.traffic_class() & !0x03) | (value & 0x03);
        self.set_traffic_class(tc);
    }

    /// Sets the flow label (low 20 bits of `value`).
    #[inline]
    pub fn set_flow_label(&mut self, value: u32) {
        let word = (self.ver_tc_flow() & !FLOW_MASK) | (value & FLOW_MASK);
        self.set_ver_tc_flow(word);
    }

    /// Sets the payload length field.
    #[inline]
    pub fn set_payload_len(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::LENGTH], value);
    }

    /// Sets the next header field.
    #[inline]
    pub fn set_next_header(&mut self, value: IpProtocol) {
        self.buffer.as_mut()[field::NXT_HDR] = value.0;
    }

    /// Sets the hop limit.
    #[inline]
    pub fn set_hop_limit(&mut self, value: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = value;
    }

    /// Sets the source address.
    #[inline]
    pub fn set_src_addr(&mut self, value: Ipv6Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&value.octets());
    }

    /// Sets the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, value: Ipv6Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&value.octets());
    }

    /// Mutable bytes after the fixed header, up to the payload length.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = HEADER_LEN + usize::from(self.payload_len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A decoded IPv6 fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source address.
    pub src_addr: Ipv6Addr,
    /// Destination address.
    pub dst_addr: Ipv6Addr,
    /// Next header (first extension header or upper-layer protocol).
    pub next_header: IpProtocol,
    /// Payload length (extension headers included).
    pub payload_len: usize,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class (DSCP << 2 | ECN).
    pub traffic_class: u8,
    /// Flow label, 0..=0xfffff.
    pub flow_label: u32,
}

impl Repr {
    /// Decodes the fixed header: [`Error::Malformed`] if the version is not
    /// 6, plus the length errors of [`Packet::check_len`].
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr> {
        packet.check_len()?;
        if packet.version() != 6 {
            return Err(Error::Malformed);
        }
        Ok(Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            next_header: packet.next_header(),
            payload_len: usize::from(packet.payload_len()),
            hop_limit: packet.hop_limit(),
            traffic_class: packet.traffic_class(),
            flow_label: packet.flow_label(),
        })
    }

    /// Number of bytes [`emit`](Self::emit) writes (the fixed header).
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the fixed header. [`Error::Malformed`] if `payload_len`
    /// exceeds 65535 or the flow label 20 bits; [`Error::Truncated`] if the
    /// buffer is shorter than 40 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<()> {
        let payload_len = u16::try_from(self.payload_len).map_err(|_| Error::Malformed)?;
        if self.flow_label > FLOW_MASK {
            return Err(Error::Malformed);
        }
        packet.check_header_len()?;
        packet.set_ver_tc_flow((6 << 28) | (u32::from(self.traffic_class) << 20) | self.flow_label);
        packet.set_payload_len(payload_len);
        packet.set_next_header(self.next_header);
        packet.set_hop_limit(self.hop_limit);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::assert_prefixes_rejected;

    /// A UDP datagram 2001:db8::1 -> 2001:db8::2, traffic class 0xb8
    /// (DSCP 46), flow label 0x12345, hop limit 64, 12 payload bytes.
    const PACKET: [u8; 52] = [
        0x6b, 0x81, 0x23, 0x45, 0x00, 0x0c, 0x11, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x9c, 0x40, 0x00, 0x35, 0x00,
        0x0c, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04,
    ];

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&PACKET[..]).unwrap();
        assert_eq!(p.version(), 6);
        assert_eq!(p.traffic_class(), 0xb8);
        assert_eq!((p.dscp(), p.ecn()), (46, 0));
        assert_eq!(p.flow_label(), 0x12345);
        assert_eq!(p.payload_len(), 12);
        assert_eq!(p.next_header(), IpProtocol::UDP);
        assert_eq!(p.hop_limit(), 64);
        assert_eq!(p.src_addr(), "2001:db8::1".parse::<Ipv6Addr>().unwrap());
        assert_eq!(p.dst_addr(), "2001:db8::2".parse::<Ipv6Addr>().unwrap());
        assert_eq!(p.payload(), &PACKET[40..]);
    }

    #[test]
    fn round_trip() {
        let repr = Repr::parse(&Packet::new_checked(&PACKET[..]).unwrap()).unwrap();
        let mut buf = [0u8; 52];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        repr.emit(&mut p).unwrap();
        p.payload_mut().copy_from_slice(&PACKET[40..]);
        assert_eq!(buf, PACKET);
    }

    #[test]
    fn setters() {
        let mut buf = PACKET;
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_ecn(3);
        assert_eq!((p.dscp(), p.ecn()), (46, 3));
        p.set_dscp(0);
        assert_eq!(p.traffic_class(), 3);
        p.set_flow_label(0xfffff);
        assert_eq!(p.flow_label(), 0xfffff);
        assert_eq!(p.traffic_class(), 3);
        p.set_version(6);
        assert_eq!(p.version(), 6);
        assert_eq!(p.flow_label(), 0xfffff);
    }

    #[test]
    fn errors() {
        let mut v4 = PACKET;
        v4[0] = 0x45;
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&v4[..])),
            Err(Error::Malformed)
        );
        let mut out = [0u8; 40];
        let repr = Repr::parse(&Packet::new_unchecked(&PACKET[..])).unwrap();
        let big = Repr {
            payload_len: 70000,
            ..repr
        };
        assert_eq!(
            big.emit(&mut Packet::new_unchecked(&mut out[..])),
            Err(Error::Malformed)
        );
        let flow = Repr {
            flow_label: 0x100000,
            ..repr
        };
        assert_eq!(
            flow.emit(&mut Packet::new_unchecked(&mut out[..])),
            Err(Error::Malformed)
        );
        assert_eq!(
            repr.emit(&mut Packet::new_unchecked(&mut out[..39])),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn truncated_prefixes_rejected() {
        assert_prefixes_rejected(&PACKET, |b| {
            Repr::parse(&Packet::new_unchecked(b)).map(|_| ())
        });
    }
}

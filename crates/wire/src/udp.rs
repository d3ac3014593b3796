//! UDP datagrams (RFC 768) with the IPv4/IPv6 pseudo-header checksum.
//!
//! The checksum covers the pseudo-header of the enclosing IP packet, given
//! as an [`IpPair`]. Over IPv4 a zero checksum means "none" and verifies;
//! over IPv6 it is mandatory (RFC 8200 section 8.1).

use crate::bytes::{read_u16, write_u16};
use crate::checksum;
use crate::ip::{IpPair, IpProtocol};
use crate::{Error, Result};

mod field {
    use crate::field::Field;

    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const LENGTH: Field = 4..6;
    pub const CHECKSUM: Field = 6..8;
}

/// Length of a UDP header.
pub const HEADER_LEN: usize = field::CHECKSUM.end;

/// A read/write view of a UDP datagram.
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

    /// [`Error::Truncated`] if the header or the length the header claims
    /// is not in the buffer; [`Error::Malformed`] if the length field is
    /// below 8. Bytes past the length field's end are ignored.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let claimed = usize::from(self.len());
        if claimed < HEADER_LEN {
            Err(Error::Malformed)
        } else if len < claimed {
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

    /// Source port.
    #[inline]
    pub fn src_port(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::SRC_PORT])
    }

    /// Destination port.
    #[inline]
    pub fn dst_port(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::DST_PORT])
    }

    /// Length field (header and payload).
    #[inline]
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::LENGTH])
    }

    /// Checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    fn compute_sum(&self, addrs: &IpPair) -> u16 {
        let len = self.len();
        let data = &self.buffer.as_ref()[..usize::from(len)];
        checksum::combine(&[
            addrs.pseudo_header_sum(IpProtocol::UDP, u32::from(len)),
            checksum::sum(data),
        ])
    }

    /// Whether the checksum is correct for the given IP addresses. A zero
    /// checksum over IPv4 means "not computed" and is accepted.
    #[inline]
    pub fn verify_checksum(&self, addrs: &IpPair) -> bool {
        if self.checksum() == 0 && matches!(addrs, IpPair::V4 { .. }) {
            return true;
        }
        self.compute_sum(addrs) == 0xffff
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// Payload bytes, up to the length field.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the source port.
    #[inline]
    pub fn set_src_port(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::SRC_PORT], value);
    }

    /// Sets the destination port.
    #[inline]
    pub fn set_dst_port(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::DST_PORT], value);
    }

    /// Sets the length field.
    #[inline]
    pub fn set_len(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::LENGTH], value);
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::CHECKSUM], value);
    }

    /// Computes and stores the checksum over the pseudo-header, header and
    /// payload (up to the length field). A computed zero is sent as 0xffff.
    #[inline]
    pub fn fill_checksum(&mut self, addrs: &IpPair) {
        self.set_checksum(0);
        let sum = !self.compute_sum(addrs);
        self.set_checksum(if sum == 0 { 0xffff } else { sum });
    }

    /// Mutable payload bytes, up to the length field.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A decoded UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Payload length (length field − 8).
    pub payload_len: usize,
}

impl Repr {
    /// Decodes a UDP header (errors of [`Packet::check_len`]). The checksum
    /// is not verified (see [`Packet::verify_checksum`]).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr> {
        packet.check_len()?;
        Ok(Repr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            payload_len: usize::from(packet.len()) - HEADER_LEN,
        })
    }

    /// Number of bytes [`emit`](Self::emit) writes (the header).
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header with length = 8 + `payload_len` and a zero
    /// checksum; write the payload, then call [`Packet::fill_checksum`].
    /// [`Error::Malformed`] if the length exceeds 65535.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<()> {
        let len = u16::try_from(HEADER_LEN + self.payload_len).map_err(|_| Error::Malformed)?;
        if packet.buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len(len);
        packet.set_checksum(0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::assert_prefixes_rejected;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn v4_pair() -> IpPair {
        IpPair::V4 {
            src: Ipv4Addr::new(192, 168, 1, 23),
            dst: Ipv4Addr::new(8, 8, 8, 8),
        }
    }

    /// A DNS query for example.com (A, IN) from port 51234 to 53 sent by
    /// 192.168.1.23 to 8.8.8.8; checksum 0xea41.
    const DNS_QUERY: [u8; 37] = [
        0xc8, 0x22, 0x00, 0x35, 0x00, 0x25, 0xea, 0x41, 0xab, 0xcd, 0x01, 0x00, 0x00, 0x01, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x07, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0x03, b'c',
        b'o', b'm', 0x00, 0x00, 0x01, 0x00, 0x01,
    ];

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&DNS_QUERY[..]).unwrap();
        assert_eq!(p.src_port(), 51234);
        assert_eq!(p.dst_port(), 53);
        assert_eq!(p.len(), 37);
        assert_eq!(p.checksum(), 0xea41);
        assert_eq!(p.payload(), &DNS_QUERY[8..]);
        assert!(p.verify_checksum(&v4_pair()));
        let other = IpPair::V4 {
            src: Ipv4Addr::new(192, 168, 1, 24),
            dst: Ipv4Addr::new(8, 8, 8, 8),
        };
        assert!(!p.verify_checksum(&other));
    }

    #[test]
    fn round_trip_and_fill() {
        let repr = Repr::parse(&Packet::new_checked(&DNS_QUERY[..]).unwrap()).unwrap();
        assert_eq!(
            repr,
            Repr {
                src_port: 51234,
                dst_port: 53,
                payload_len: 29
            }
        );
        let mut buf = [0u8; 37];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        repr.emit(&mut p).unwrap();
        assert_eq!(p.checksum(), 0);
        p.payload_mut().copy_from_slice(&DNS_QUERY[8..]);
        p.fill_checksum(&v4_pair());
        assert_eq!(buf, DNS_QUERY);
    }

    #[test]
    fn ipv6_checksum() {
        let pair = IpPair::V6 {
            src: "2001:db8::1".parse::<Ipv6Addr>().unwrap(),
            dst: "2001:db8::2".parse::<Ipv6Addr>().unwrap(),
        };
        // 40000 -> 53, four payload bytes; checksum computed independently.
        let mut buf = [
            0x9c, 0x40, 0x00, 0x35, 0x00, 0x0c, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04,
        ];
        let mut p = Packet::new_checked(&mut buf[..]).unwrap();
        assert!(
            !p.verify_checksum(&pair),
            "zero checksum is invalid over IPv6"
        );
        p.fill_checksum(&pair);
        assert_eq!(p.checksum(), 0x03e6);
        assert!(p.verify_checksum(&pair));
    }

    #[test]
    fn zero_checksum_over_ipv4_is_accepted() {
        let mut bytes = DNS_QUERY;
        bytes[6] = 0;
        bytes[7] = 0;
        assert!(Packet::new_unchecked(&bytes[..]).verify_checksum(&v4_pair()));
    }

    #[test]
    fn length_field_errors() {
        let mut short = DNS_QUERY;
        short[5] = 7;
        assert_eq!(Packet::new_checked(&short[..]), Err(Error::Malformed));
        let mut long = DNS_QUERY;
        long[5] = 38;
        assert_eq!(Packet::new_checked(&long[..]), Err(Error::Truncated));
        let big = Repr {
            src_port: 1,
            dst_port: 2,
            payload_len: 65528,
        };
        let mut out = [0u8; 8];
        assert_eq!(
            big.emit(&mut Packet::new_unchecked(&mut out[..])),
            Err(Error::Malformed)
        );
        assert_eq!(
            Repr {
                payload_len: 0,
                ..big
            }
            .emit(&mut Packet::new_unchecked(&mut out[..7])),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn truncated_prefixes_rejected() {
        assert_prefixes_rejected(&DNS_QUERY, |b| {
            Repr::parse(&Packet::new_unchecked(b)).map(|_| ())
        });
    }
}

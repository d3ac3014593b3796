//! IPv4 headers (RFC 791), including options, DSCP/ECN (RFC 2474, RFC 3168)
//! and the header checksum.
//!
//! [`Packet::check_header_len`] checks only that the header (with options)
//! is present; use it for headers quoted inside ICMP errors, whose payload
//! is cut short. [`Packet::check_len`] additionally checks the total length
//! field against the buffer. A buffer longer than the total length (Ethernet
//! padding) is accepted; `payload()` stops at the total length.

use std::net::Ipv4Addr;

use crate::bytes::{read_u16, write_u16};
use crate::checksum;
use crate::ip::IpProtocol;
use crate::{Error, Result};

mod field {
    use crate::field::Field;

    pub const VER_IHL: usize = 0;
    pub const DSCP_ECN: usize = 1;
    pub const LENGTH: Field = 2..4;
    pub const IDENT: Field = 4..6;
    pub const FLG_OFF: Field = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Field = 10..12;
    pub const SRC_ADDR: Field = 12..16;
    pub const DST_ADDR: Field = 16..20;
}

/// Length of an IPv4 header without options.
pub const HEADER_LEN: usize = field::DST_ADDR.end;

/// Longest IPv4 header (IHL 15).
pub const MAX_HEADER_LEN: usize = 60;

const FLAG_RESERVED: u16 = 0x8000;
const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;
const OFFSET_MASK: u16 = 0x1fff;

/// A read/write view of an IPv4 packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

fn read_addr(data: &[u8]) -> Ipv4Addr {
    Ipv4Addr::new(data[0], data[1], data[2], data[3])
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

    /// Ensures the whole header, options included, is in the buffer:
    /// [`Error::Truncated`] if the buffer is too short, [`Error::Malformed`]
    /// if the header length field is below 20 bytes. After this, every
    /// header getter and [`options`](Self::options) are in bounds.
    #[inline]
    pub fn check_header_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let header_len = self.header_len();
        if header_len < HEADER_LEN {
            Err(Error::Malformed)
        } else if len < header_len {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// [`check_header_len`](Self::check_header_len), then checks the total
    /// length field: [`Error::Malformed`] if it is smaller than the header,
    /// [`Error::Truncated`] if it exceeds the buffer. After this the payload
    /// accessors are in bounds too.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        self.check_header_len()?;
        let total_len = usize::from(self.total_len());
        if total_len < self.header_len() {
            Err(Error::Malformed)
        } else if self.buffer.as_ref().len() < total_len {
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

    /// Version field (4 for IPv4).
    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Header length in bytes (IHL × 4).
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }

    /// Length of the options in bytes (header length − 20; zero if the
    /// header length field is invalid).
    #[inline]
    pub fn options_len(&self) -> usize {
        self.header_len().saturating_sub(HEADER_LEN)
    }

    /// The whole type-of-service byte (DSCP and ECN).
    #[inline]
    pub fn tos(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN]
    }

    /// Differentiated services code point (6 bits).
    #[inline]
    pub fn dscp(&self) -> u8 {
        self.tos() >> 2
    }

    /// Explicit congestion notification (2 bits).
    #[inline]
    pub fn ecn(&self) -> u8 {
        self.tos() & 0x03
    }

    /// Total length field (header and payload).
    #[inline]
    pub fn total_len(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::LENGTH])
    }

    /// Identification field.
    #[inline]
    pub fn ident(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::IDENT])
    }

    /// The flags and fragment offset word as on the wire.
    #[inline]
    pub fn flags_frag_offset(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::FLG_OFF])
    }

    /// The reserved (evil) flag bit.
    #[inline]
    pub fn reserved_flag(&self) -> bool {
        self.flags_frag_offset() & FLAG_RESERVED != 0
    }

    /// Don't Fragment flag.
    #[inline]
    pub fn dont_frag(&self) -> bool {
        self.flags_frag_offset() & FLAG_DF != 0
    }

    /// More Fragments flag.
    #[inline]
    pub fn more_frags(&self) -> bool {
        self.flags_frag_offset() & FLAG_MF != 0
    }

    /// Fragment offset in bytes (the field × 8).
    #[inline]
    pub fn frag_offset(&self) -> u16 {
        (self.flags_frag_offset() & OFFSET_MASK) << 3
    }

    /// Whether this packet is a fragment (MF set or non-zero offset).
    #[inline]
    pub fn is_fragment(&self) -> bool {
        self.flags_frag_offset() & (FLAG_MF | OFFSET_MASK) != 0
    }

    /// Time to live.
    #[inline]
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    /// Protocol of the payload.
    #[inline]
    pub fn protocol(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[field::PROTOCOL])
    }

    /// Header checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// Source address.
    #[inline]
    pub fn src_addr(&self) -> Ipv4Addr {
        read_addr(&self.buffer.as_ref()[field::SRC_ADDR])
    }

    /// Destination address.
    #[inline]
    pub fn dst_addr(&self) -> Ipv4Addr {
        read_addr(&self.buffer.as_ref()[field::DST_ADDR])
    }

    /// The option bytes (between the fixed header and the payload).
    #[inline]
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.header_len().max(HEADER_LEN)]
    }

    /// Whether the header checksum is correct.
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        checksum::sum(&self.buffer.as_ref()[..self.header_len()]) == 0xffff
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// Bytes after the header, up to the total length.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        let range = self.header_len()..usize::from(self.total_len());
        &self.buffer.as_ref()[range]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the version field.
    #[inline]
    pub fn set_version(&mut self, value: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0x0f) | (value << 4);
    }

    /// Sets the header length in bytes (rounded down to a multiple of 4;
    /// only the 4-bit IHL field is written, so values above 60 wrap).
    #[inline]
    pub fn set_header_len(&mut self, value: usize) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0xf0) | ((value / 4) & 0x0f) as u8;
    }

    /// Sets the whole type-of-service byte.
    #[inline]
    pub fn set_tos(&mut self, value: u8) {
        self.buffer.as_mut()[field::DSCP_ECN] = value;
    }

    /// Sets the DSCP (low 6 bits of `value`), keeping ECN.
    #[inline]
    pub fn set_dscp(&mut self, value: u8) {
        let tos = (self.tos() & 0x03) | (value << 2);
        self.set_tos(tos);
    }

    /// Sets the ECN bits (low 2 bits of `value`), keeping DSCP.
    #[inline]
    pub fn set_ecn(&mut self, value: u8) {
        let tos = (self.tos() & !0x03) | (value & 0x03);
        self.set_tos(tos);
    }

    /// Sets the total length field.
    #[inline]
    pub fn set_total_len(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::LENGTH], value);
    }

    /// Sets the identification field.
    #[inline]
    pub fn set_ident(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::IDENT], value);
    }

    /// Sets the flags and fragment offset word as on the wire.
    #[inline]
    pub fn set_flags_frag_offset(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::FLG_OFF], value);
    }

    fn set_flag(&mut self, flag: u16, value: bool) {
        let word = self.flags_frag_offset();
        self.set_flags_frag_offset(if value { word | flag } else { word & !flag });
    }

    /// Sets the reserved flag bit.
    #[inline]
    pub fn set_reserved_flag(&mut self, value: bool) {
        self.set_flag(FLAG_RESERVED, value);
    }

    /// Sets the Don't Fragment flag.
    #[inline]
    pub fn set_dont_frag(&mut self, value: bool) {
        self.set_flag(FLAG_DF, value);
    }

    /// Sets the More Fragments flag.
    #[inline]
    pub fn set_more_frags(&mut self, value: bool) {
        self.set_flag(FLAG_MF, value);
    }

    /// Sets the fragment offset in bytes (rounded down to a multiple of 8).
    #[inline]
    pub fn set_frag_offset(&mut self, value: u16) {
        let word = (self.flags_frag_offset() & !OFFSET_MASK) | (value >> 3);
        self.set_flags_frag_offset(word);
    }

    /// Sets the time to live.
    #[inline]
    pub fn set_ttl(&mut self, value: u8) {
        self.buffer.as_mut()[field::TTL] = value;
    }

    /// Sets the protocol field.
    #[inline]
    pub fn set_protocol(&mut self, value: IpProtocol) {
        self.buffer.as_mut()[field::PROTOCOL] = value.0;
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::CHECKSUM], value);
    }

    /// Sets the source address.
    #[inline]
    pub fn set_src_addr(&mut self, value: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&value.octets());
    }

    /// Sets the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, value: Ipv4Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&value.octets());
    }

    /// Mutable option bytes.
    #[inline]
    pub fn options_mut(&mut self) -> &mut [u8] {
        let end = self.header_len().max(HEADER_LEN);
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }

    /// Decrements the TTL (if non-zero) and patches the checksum
    /// incrementally (RFC 1624), as a router does. Returns the new TTL.
    #[inline]
    pub fn decrement_ttl(&mut self) -> u8 {
        let ttl = self.ttl();
        if ttl == 0 {
            return 0;
        }
        let proto = self.buffer.as_ref()[field::PROTOCOL];
        let old = u16::from_be_bytes([ttl, proto]);
        let new = u16::from_be_bytes([ttl - 1, proto]);
        let sum = checksum::update_u16(self.checksum(), old, new);
        self.set_ttl(ttl - 1);
        self.set_checksum(sum);
        ttl - 1
    }

    /// Computes and stores the header checksum.
    #[inline]
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let sum = checksum::compute(&self.buffer.as_ref()[..self.header_len()]);
        self.set_checksum(sum);
    }

    /// Mutable bytes after the header, up to the total length.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let range = self.header_len()..usize::from(self.total_len());
        &mut self.buffer.as_mut()[range]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A decoded IPv4 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr<'a> {
    /// Source address.
    pub src_addr: Ipv4Addr,
    /// Destination address.
    pub dst_addr: Ipv4Addr,
    /// Protocol of the payload.
    pub protocol: IpProtocol,
    /// Payload length (total length − header length).
    pub payload_len: usize,
    /// Time to live.
    pub ttl: u8,
    /// DSCP, 0..=63.
    pub dscp: u8,
    /// ECN, 0..=3.
    pub ecn: u8,
    /// Identification.
    pub ident: u16,
    /// Don't Fragment flag.
    pub dont_frag: bool,
    /// More Fragments flag.
    pub more_frags: bool,
    /// Fragment offset in bytes (a multiple of 8).
    pub frag_offset: u16,
    /// Option bytes; a multiple of 4 bytes long, at most 40.
    pub options: &'a [u8],
}

impl<'a> Repr<'a> {
    /// Decodes an IPv4 header: [`Error::Malformed`] if the version is not 4,
    /// plus the length errors of [`Packet::check_len`]. The checksum is not
    /// verified (see [`Packet::verify_checksum`]); the reserved flag is
    /// ignored.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&'a T>) -> Result<Repr<'a>> {
        packet.check_len()?;
        if packet.version() != 4 {
            return Err(Error::Malformed);
        }
        let header_len = packet.header_len();
        Ok(Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            protocol: packet.protocol(),
            payload_len: usize::from(packet.total_len()) - header_len,
            ttl: packet.ttl(),
            dscp: packet.dscp(),
            ecn: packet.ecn(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
            more_frags: packet.more_frags(),
            frag_offset: packet.frag_offset(),
            options: &packet.buffer.as_ref()[HEADER_LEN..header_len],
        })
    }

    /// Header length in bytes: what [`emit`](Self::emit) writes.
    #[inline]
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.options.len()
    }

    /// Writes the header, with total length = header + `payload_len` and a
    /// correct checksum. [`Error::Malformed`] if the options are not a
    /// multiple of 4 bytes or longer than 40, the total length exceeds
    /// 65535, DSCP/ECN are out of range or the fragment offset is not a
    /// multiple of 8; [`Error::Truncated`] if the buffer is shorter than
    /// [`buffer_len`](Self::buffer_len).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<()> {
        let header_len = self.buffer_len();
        if self.options.len() % 4 != 0
            || header_len > MAX_HEADER_LEN
            || self.dscp > 63
            || self.ecn > 3
            || self.frag_offset % 8 != 0
        {
            return Err(Error::Malformed);
        }
        let total_len =
            u16::try_from(header_len + self.payload_len).map_err(|_| Error::Malformed)?;
        if packet.buffer.as_ref().len() < header_len {
            return Err(Error::Truncated);
        }
        packet.set_version(4);
        packet.set_header_len(header_len);
        packet.set_tos((self.dscp << 2) | self.ecn);
        packet.set_total_len(total_len);
        packet.set_ident(self.ident);
        let mut word = self.frag_offset >> 3;
        if self.dont_frag {
            word |= FLAG_DF;
        }
        if self.more_frags {
            word |= FLAG_MF;
        }
        packet.set_flags_frag_offset(word);
        packet.set_ttl(self.ttl);
        packet.set_protocol(self.protocol);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        packet.options_mut().copy_from_slice(self.options);
        packet.fill_checksum();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::assert_prefixes_rejected;

    /// IPv4 header of a UDP datagram 192.168.0.1 -> 192.168.0.199, total
    /// length 0x73, DF set, TTL 64, checksum 0xb861.
    const HEADER: [u8; 20] = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00,
        0x01, 0xc0, 0xa8, 0x00, 0xc7,
    ];

    /// A fragment with a Router Alert option (RFC 2113) and 4 payload
    /// bytes: protocol 1, 10.0.0.1 -> 224.0.0.22, TTL 1, DSCP 46 ECN 1,
    /// ident 0x1234, MF set, fragment offset 1480.
    const WITH_OPTIONS: [u8; 28] = [
        0x46, 0xb9, 0x00, 0x1c, 0x12, 0x34, 0x20, 0xb9, 0x01, 0x01, 0x07, 0x20, 0x0a, 0x00, 0x00,
        0x01, 0xe0, 0x00, 0x00, 0x16, 0x94, 0x04, 0x00, 0x00, 0xde, 0xad, 0xbe, 0xef,
    ];

    fn packet_with_payload() -> Vec<u8> {
        let mut v = HEADER.to_vec();
        v.resize(0x73, 0x5a);
        v
    }

    #[test]
    fn deconstruct() {
        let bytes = packet_with_payload();
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(p.version(), 4);
        assert_eq!(p.header_len(), 20);
        assert_eq!(p.options_len(), 0);
        assert_eq!((p.dscp(), p.ecn()), (0, 0));
        assert_eq!(p.total_len(), 0x73);
        assert!(p.dont_frag() && !p.more_frags() && !p.reserved_flag());
        assert_eq!(p.frag_offset(), 0);
        assert!(!p.is_fragment());
        assert_eq!(p.ttl(), 64);
        assert_eq!(p.protocol(), IpProtocol::UDP);
        assert_eq!(p.checksum(), 0xb861);
        assert_eq!(p.src_addr(), Ipv4Addr::new(192, 168, 0, 1));
        assert_eq!(p.dst_addr(), Ipv4Addr::new(192, 168, 0, 199));
        assert!(p.verify_checksum());
        assert_eq!(p.payload().len(), 0x73 - 20);
    }

    #[test]
    fn deconstruct_options_and_fragment() {
        let p = Packet::new_checked(&WITH_OPTIONS[..]).unwrap();
        assert_eq!(p.header_len(), 24);
        assert_eq!(p.options(), &[0x94, 0x04, 0x00, 0x00]);
        assert_eq!((p.dscp(), p.ecn()), (46, 1));
        assert!(p.more_frags() && !p.dont_frag() && p.is_fragment());
        assert_eq!(p.frag_offset(), 1480);
        assert!(p.verify_checksum());
        assert_eq!(p.payload(), &[0xde, 0xad, 0xbe, 0xef]);
    }

    #[test]
    fn round_trip_with_options() {
        let repr = Repr::parse(&Packet::new_checked(&WITH_OPTIONS[..]).unwrap()).unwrap();
        assert_eq!(repr.payload_len, 4);
        assert_eq!(repr.buffer_len(), 24);
        let mut buf = [0u8; 28];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        repr.emit(&mut p).unwrap();
        p.payload_mut().copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(buf, WITH_OPTIONS);
    }

    #[test]
    fn round_trip_plain() {
        let bytes = packet_with_payload();
        let repr = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap();
        let mut buf = [0u8; 20];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..])).unwrap();
        assert_eq!(buf, HEADER);
    }

    #[test]
    fn setters_and_checksum() {
        let mut buf = HEADER;
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_dscp(10);
        p.set_ecn(3);
        assert_eq!(p.tos(), 0x2b);
        p.set_more_frags(true);
        p.set_dont_frag(false);
        p.set_reserved_flag(true);
        p.set_frag_offset(8 * 100);
        assert_eq!(p.flags_frag_offset(), 0x8000 | 0x2000 | 100);
        assert!(!p.verify_checksum());
        p.fill_checksum();
        assert!(p.verify_checksum());
    }

    #[test]
    fn decrement_ttl_keeps_checksum_valid() {
        let mut buf = HEADER;
        let mut p = Packet::new_unchecked(&mut buf[..]);
        assert_eq!(p.decrement_ttl(), 63);
        assert!(p.verify_checksum());
        let mut expect = HEADER;
        expect[8] = 63;
        let mut q = Packet::new_unchecked(&mut expect[..]);
        q.fill_checksum();
        assert_eq!(p.checksum(), q.checksum());
        p.set_ttl(0);
        p.fill_checksum();
        assert_eq!(p.decrement_ttl(), 0);
        assert!(p.verify_checksum());
    }

    #[test]
    fn malformed_lengths() {
        let mut bad_ihl = HEADER;
        bad_ihl[0] = 0x44;
        assert_eq!(Packet::new_checked(&bad_ihl[..]), Err(Error::Malformed));
        let mut short_total = HEADER;
        short_total[3] = 19;
        assert_eq!(Packet::new_checked(&short_total[..]), Err(Error::Malformed));
        let mut bad_version = packet_with_payload();
        bad_version[0] = 0x65;
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&bad_version[..])),
            Err(Error::Malformed)
        );
        // Header present, total length exceeds the buffer (ICMP quote).
        let quoted = Packet::new_unchecked(&HEADER[..]);
        assert_eq!(quoted.check_header_len(), Ok(()));
        assert_eq!(quoted.check_len(), Err(Error::Truncated));
    }

    #[test]
    fn padding_is_not_payload() {
        let mut padded = WITH_OPTIONS.to_vec();
        padded.extend_from_slice(&[0; 18]);
        let p = Packet::new_checked(&padded[..]).unwrap();
        assert_eq!(p.payload(), &[0xde, 0xad, 0xbe, 0xef]);
    }

    #[test]
    fn emit_rejects_bad_reprs() {
        let good = Repr::parse(&Packet::new_checked(&WITH_OPTIONS[..]).unwrap()).unwrap();
        let mut buf = [0u8; 64];
        let bad = [
            Repr {
                options: &[1, 1, 1],
                ..good
            },
            Repr {
                options: &[1; 44],
                ..good
            },
            Repr {
                payload_len: 65536 - 24,
                ..good
            },
            Repr { dscp: 64, ..good },
            Repr { ecn: 4, ..good },
            Repr {
                frag_offset: 12,
                ..good
            },
        ];
        for repr in bad {
            assert_eq!(
                repr.emit(&mut Packet::new_unchecked(&mut buf[..])),
                Err(Error::Malformed)
            );
        }
        assert_eq!(
            good.emit(&mut Packet::new_unchecked(&mut buf[..23])),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn truncated_prefixes_rejected() {
        assert_prefixes_rejected(&WITH_OPTIONS, |b| {
            Repr::parse(&Packet::new_unchecked(b)).map(|_| ())
        });
        let full = packet_with_payload();
        assert_prefixes_rejected(&full, |b| {
            Repr::parse(&Packet::new_unchecked(b)).map(|_| ())
        });
    }
}

//! TCP segment headers (RFC 9293): ports, sequence numbers, data offset,
//! flags, window, checksum, urgent pointer and raw option bytes.
//!
//! TCP has no length field: the segment is the whole buffer, so view
//! exactly the IP payload. The checksum covers the IP pseudo-header, given
//! as an [`IpPair`].

use core::fmt;
use core::ops::{BitAnd, BitOr, BitOrAssign, Not};

use crate::bytes::{read_u16, read_u32, write_u16, write_u32};
use crate::checksum;
use crate::ip::{IpPair, IpProtocol};
use crate::{Error, Result};

/// The eight TCP control bits (byte 13 of the header).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Flags(pub u8);

impl Flags {
    /// No flags.
    pub const NONE: Flags = Flags(0);
    /// No more data from sender.
    pub const FIN: Flags = Flags(0x01);
    /// Synchronize sequence numbers.
    pub const SYN: Flags = Flags(0x02);
    /// Reset the connection.
    pub const RST: Flags = Flags(0x04);
    /// Push function.
    pub const PSH: Flags = Flags(0x08);
    /// Acknowledgment field is significant.
    pub const ACK: Flags = Flags(0x10);
    /// Urgent pointer field is significant.
    pub const URG: Flags = Flags(0x20);
    /// ECN-Echo (RFC 3168).
    pub const ECE: Flags = Flags(0x40);
    /// Congestion Window Reduced (RFC 3168).
    pub const CWR: Flags = Flags(0x80);

    /// Whether every flag in `other` is set in `self`.
    #[inline]
    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether any flag in `other` is set in `self`.
    #[inline]
    pub const fn intersects(self, other: Flags) -> bool {
        self.0 & other.0 != 0
    }
}

impl BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

impl BitOrAssign for Flags {
    fn bitor_assign(&mut self, rhs: Flags) {
        self.0 |= rhs.0;
    }
}

impl BitAnd for Flags {
    type Output = Flags;
    fn bitand(self, rhs: Flags) -> Flags {
        Flags(self.0 & rhs.0)
    }
}

impl Not for Flags {
    type Output = Flags;
    fn not(self) -> Flags {
        Flags(!self.0)
    }
}

/// Formats like tcpdump, one letter per flag in the order `FSRPAUEC`
/// (`.` for none).
impl fmt::Display for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return f.write_str(".");
        }
        for (i, letter) in "FSRPAUEC".chars().enumerate() {
            if self.0 & (1 << i) != 0 {
                write!(f, "{letter}")?;
            }
        }
        Ok(())
    }
}

mod field {
    use crate::field::Field;

    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const SEQ_NUM: Field = 4..8;
    pub const ACK_NUM: Field = 8..12;
    pub const DATA_OFF: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WIN_SIZE: Field = 14..16;
    pub const CHECKSUM: Field = 16..18;
    pub const URGENT: Field = 18..20;
}

/// Length of a TCP header without options.
pub const HEADER_LEN: usize = field::URGENT.end;

/// Longest TCP header (data offset 15).
pub const MAX_HEADER_LEN: usize = 60;

/// A read/write view of a TCP segment.
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

    /// [`Error::Truncated`] unless the header, options included, is in the
    /// buffer; [`Error::Malformed`] if the data offset is below 5 words.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
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

    /// Sequence number.
    #[inline]
    pub fn seq_number(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::SEQ_NUM])
    }

    /// Acknowledgment number.
    #[inline]
    pub fn ack_number(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::ACK_NUM])
    }

    /// Data offset field in 32-bit words.
    #[inline]
    pub fn data_offset(&self) -> u8 {
        self.buffer.as_ref()[field::DATA_OFF] >> 4
    }

    /// Header length in bytes (data offset × 4).
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.data_offset()) * 4
    }

    /// The control bits.
    #[inline]
    pub fn flags(&self) -> Flags {
        Flags(self.buffer.as_ref()[field::FLAGS])
    }

    /// FIN flag.
    #[inline]
    pub fn fin(&self) -> bool {
        self.flags().contains(Flags::FIN)
    }

    /// SYN flag.
    #[inline]
    pub fn syn(&self) -> bool {
        self.flags().contains(Flags::SYN)
    }

    /// RST flag.
    #[inline]
    pub fn rst(&self) -> bool {
        self.flags().contains(Flags::RST)
    }

    /// PSH flag.
    #[inline]
    pub fn psh(&self) -> bool {
        self.flags().contains(Flags::PSH)
    }

    /// ACK flag.
    #[inline]
    pub fn ack(&self) -> bool {
        self.flags().contains(Flags::ACK)
    }

    /// URG flag.
    #[inline]
    pub fn urg(&self) -> bool {
        self.flags().contains(Flags::URG)
    }

    /// ECE flag.
    #[inline]
    pub fn ece(&self) -> bool {
        self.flags().contains(Flags::ECE)
    }

    /// CWR flag.
    #[inline]
    pub fn cwr(&self) -> bool {
        self.flags().contains(Flags::CWR)
    }

    /// Window size.
    #[inline]
    pub fn window_len(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::WIN_SIZE])
    }

    /// Checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// Urgent pointer.
    #[inline]
    pub fn urgent_at(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::URGENT])
    }

    /// Raw option bytes (between the fixed header and the data).
    #[inline]
    pub fn options(&self) -> &[u8] {
        let end = self.header_len().max(HEADER_LEN);
        &self.buffer.as_ref()[HEADER_LEN..end]
    }

    /// Length of the segment data (buffer length − header length).
    #[inline]
    pub fn payload_len(&self) -> usize {
        self.buffer.as_ref().len().saturating_sub(self.header_len())
    }

    fn compute_sum(&self, addrs: &IpPair) -> u16 {
        let data = self.buffer.as_ref();
        checksum::combine(&[
            addrs.pseudo_header_sum(IpProtocol::TCP, data.len() as u32),
            checksum::sum(data),
        ])
    }

    /// Whether the checksum over pseudo-header and whole buffer is correct.
    #[inline]
    pub fn verify_checksum(&self, addrs: &IpPair) -> bool {
        self.compute_sum(addrs) == 0xffff
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// Segment data after the header.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[self.header_len()..]
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

    /// Sets the sequence number.
    #[inline]
    pub fn set_seq_number(&mut self, value: u32) {
        write_u32(&mut self.buffer.as_mut()[field::SEQ_NUM], value);
    }

    /// Sets the acknowledgment number.
    #[inline]
    pub fn set_ack_number(&mut self, value: u32) {
        write_u32(&mut self.buffer.as_mut()[field::ACK_NUM], value);
    }

    /// Sets the header length in bytes (rounded down to a multiple of 4;
    /// only the 4-bit data offset is written, so values above 60 wrap),
    /// keeping the reserved bits.
    #[inline]
    pub fn set_header_len(&mut self, value: usize) {
        let b = &mut self.buffer.as_mut()[field::DATA_OFF];
        *b = (*b & 0x0f) | ((((value / 4) & 0x0f) as u8) << 4);
    }

    /// Sets all control bits.
    #[inline]
    pub fn set_flags(&mut self, value: Flags) {
        self.buffer.as_mut()[field::FLAGS] = value.0;
    }

    /// Sets or clears the control bits in `flags`, keeping the others.
    #[inline]
    pub fn set_flag(&mut self, flags: Flags, value: bool) {
        let current = self.flags();
        self.set_flags(if value {
            current | flags
        } else {
            current & !flags
        });
    }

    /// Sets the window size.
    #[inline]
    pub fn set_window_len(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::WIN_SIZE], value);
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::CHECKSUM], value);
    }

    /// Sets the urgent pointer.
    #[inline]
    pub fn set_urgent_at(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::URGENT], value);
    }

    /// Mutable option bytes.
    #[inline]
    pub fn options_mut(&mut self) -> &mut [u8] {
        let end = self.header_len().max(HEADER_LEN);
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }

    /// Computes and stores the checksum over pseudo-header and whole buffer.
    #[inline]
    pub fn fill_checksum(&mut self, addrs: &IpPair) {
        self.set_checksum(0);
        let sum = !self.compute_sum(addrs);
        self.set_checksum(sum);
    }

    /// Mutable segment data after the header.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = self.header_len();
        &mut self.buffer.as_mut()[start..]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A decoded TCP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr<'a> {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq_number: u32,
    /// Acknowledgment number (meaningful when ACK is set).
    pub ack_number: u32,
    /// Control bits.
    pub flags: Flags,
    /// Window size.
    pub window_len: u16,
    /// Urgent pointer.
    pub urgent_at: u16,
    /// Raw option bytes; a multiple of 4 bytes long, at most 40.
    pub options: &'a [u8],
}

impl<'a> Repr<'a> {
    /// Decodes a TCP header (errors of [`Packet::check_len`]). The checksum
    /// is not verified (see [`Packet::verify_checksum`]).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&'a T>) -> Result<Repr<'a>> {
        packet.check_len()?;
        let header_len = packet.header_len();
        Ok(Repr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            seq_number: packet.seq_number(),
            ack_number: packet.ack_number(),
            flags: packet.flags(),
            window_len: packet.window_len(),
            urgent_at: packet.urgent_at(),
            options: &packet.buffer.as_ref()[HEADER_LEN..header_len],
        })
    }

    /// Header length in bytes: what [`emit`](Self::emit) writes.
    #[inline]
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.options.len()
    }

    /// Writes the header with a zero checksum; write the data, then call
    /// [`Packet::fill_checksum`] on a view of exactly the segment.
    /// [`Error::Malformed`] if the options are not a multiple of 4 bytes or
    /// longer than 40; [`Error::Truncated`] if the buffer is too short.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<()> {
        let header_len = self.buffer_len();
        if self.options.len() % 4 != 0 || header_len > MAX_HEADER_LEN {
            return Err(Error::Malformed);
        }
        if packet.buffer.as_ref().len() < header_len {
            return Err(Error::Truncated);
        }
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_seq_number(self.seq_number);
        packet.set_ack_number(self.ack_number);
        packet.buffer.as_mut()[field::DATA_OFF] = 0;
        packet.set_header_len(header_len);
        packet.set_flags(self.flags);
        packet.set_window_len(self.window_len);
        packet.set_checksum(0);
        packet.set_urgent_at(self.urgent_at);
        packet.options_mut().copy_from_slice(self.options);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::assert_prefixes_rejected;
    use std::net::Ipv4Addr;

    fn pair() -> IpPair {
        IpPair::V4 {
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 0, 2),
        }
    }

    /// A Linux SYN 10.0.0.1:43210 -> 10.0.0.2:80 with MSS 1460, SACK
    /// permitted, timestamps, NOP, window scale 7.
    const SYN: [u8; 40] = [
        0xa8, 0xca, 0x00, 0x50, 0x3b, 0x9a, 0xca, 0x00, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x02, 0xfa,
        0xf0, 0xa8, 0x15, 0x00, 0x00, 0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0x00, 0x01,
        0xe2, 0x40, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x07,
    ];

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&SYN[..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port()), (43210, 80));
        assert_eq!(p.seq_number(), 1_000_000_000);
        assert_eq!(p.ack_number(), 0);
        assert_eq!((p.data_offset(), p.header_len()), (10, 40));
        assert_eq!(p.flags(), Flags::SYN);
        assert!(p.syn() && !p.ack() && !p.fin() && !p.rst() && !p.psh());
        assert!(!p.urg() && !p.ece() && !p.cwr());
        assert_eq!(p.window_len(), 64240);
        assert_eq!(p.urgent_at(), 0);
        assert_eq!(p.options().len(), 20);
        assert_eq!(&p.options()[..4], &[0x02, 0x04, 0x05, 0xb4]);
        assert_eq!(p.payload_len(), 0);
        assert!(p.payload().is_empty());
        assert!(p.verify_checksum(&pair()));
    }

    #[test]
    fn round_trip_and_fill() {
        let repr = Repr::parse(&Packet::new_checked(&SYN[..]).unwrap()).unwrap();
        let mut buf = [0u8; 40];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        repr.emit(&mut p).unwrap();
        assert_eq!(p.checksum(), 0);
        p.fill_checksum(&pair());
        assert_eq!(buf, SYN);
    }

    #[test]
    fn segment_with_data() {
        // ACK|PSH with 5 bytes of data and no options.
        let repr = Repr {
            src_port: 80,
            dst_port: 43210,
            seq_number: 7,
            ack_number: 1_000_000_001,
            flags: Flags::ACK | Flags::PSH,
            window_len: 512,
            urgent_at: 0,
            options: &[],
        };
        let mut buf = [0u8; 25];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        repr.emit(&mut p).unwrap();
        p.payload_mut().copy_from_slice(b"hello");
        p.fill_checksum(&pair());
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert!(p.verify_checksum(&pair()));
        assert_eq!(p.payload(), b"hello");
        assert_eq!(Repr::parse(&p).unwrap(), repr);
        assert_eq!(p.flags().to_string(), "PA");
    }

    #[test]
    fn flag_helpers() {
        let mut buf = SYN;
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_flag(Flags::ACK, true);
        assert_eq!(p.flags(), Flags::SYN | Flags::ACK);
        assert!(p.flags().contains(Flags::SYN | Flags::ACK));
        assert!(!p.flags().contains(Flags::SYN | Flags::FIN));
        assert!(p.flags().intersects(Flags::SYN | Flags::FIN));
        p.set_flag(Flags::SYN, false);
        assert_eq!(p.flags(), Flags::ACK);
        let mut f = Flags::NONE;
        f |= Flags::FIN;
        assert_eq!(f.to_string(), "F");
        assert_eq!(Flags::NONE.to_string(), ".");
        assert_eq!(Flags(0xff).to_string(), "FSRPAUEC");
    }

    #[test]
    fn header_len_errors() {
        let mut bad = SYN;
        bad[12] = 0x40;
        assert_eq!(Packet::new_checked(&bad[..]), Err(Error::Malformed));
        let mut out = [0u8; 64];
        let repr = Repr::parse(&Packet::new_unchecked(&SYN[..])).unwrap();
        assert_eq!(
            Repr {
                options: &[1, 1, 1],
                ..repr
            }
            .emit(&mut Packet::new_unchecked(&mut out[..])),
            Err(Error::Malformed)
        );
        assert_eq!(
            Repr {
                options: &[1; 44],
                ..repr
            }
            .emit(&mut Packet::new_unchecked(&mut out[..])),
            Err(Error::Malformed)
        );
        assert_eq!(
            repr.emit(&mut Packet::new_unchecked(&mut out[..39])),
            Err(Error::Truncated)
        );
        let mut p = Packet::new_unchecked(&mut out[..]);
        p.set_header_len(24);
        assert_eq!(p.header_len(), 24);
    }

    #[test]
    fn truncated_prefixes_rejected() {
        assert_prefixes_rejected(&SYN, |b| Repr::parse(&Packet::new_unchecked(b)).map(|_| ()));
    }
}

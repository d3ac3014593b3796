//! ICMP for IPv6 (RFC 4443): type, code, checksum over the IPv6
//! pseudo-header, the four "rest of header" bytes (echo identifier and
//! sequence number, packet-too-big MTU, parameter-problem pointer) and, for
//! error messages, the quoted original packet.
//!
//! The checksum covers the pseudo-header and the whole ICMPv6 message, so
//! view exactly the upper-layer payload (after any extension headers).

use core::fmt;
use std::net::Ipv6Addr;

use crate::bytes::{read_u16, read_u32, write_u16, write_u32};
use crate::checksum;
use crate::ip::IpProtocol;
use crate::{Error, Result};

/// An ICMPv6 message type. Unknown values are kept as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Message(pub u8);

impl Message {
    /// Destination unreachable.
    pub const DST_UNREACHABLE: Message = Message(1);
    /// Packet too big.
    pub const PKT_TOO_BIG: Message = Message(2);
    /// Time exceeded.
    pub const TIME_EXCEEDED: Message = Message(3);
    /// Parameter problem.
    pub const PARAM_PROBLEM: Message = Message(4);
    /// Echo request.
    pub const ECHO_REQUEST: Message = Message(128);
    /// Echo reply.
    pub const ECHO_REPLY: Message = Message(129);
    /// Multicast listener query (RFC 2710).
    pub const MLD_QUERY: Message = Message(130);
    /// Multicast listener report (RFC 2710).
    pub const MLD_REPORT: Message = Message(131);
    /// Multicast listener done (RFC 2710).
    pub const MLD_DONE: Message = Message(132);
    /// Router solicitation (RFC 4861).
    pub const ROUTER_SOLICIT: Message = Message(133);
    /// Router advertisement (RFC 4861).
    pub const ROUTER_ADVERT: Message = Message(134);
    /// Neighbor solicitation (RFC 4861).
    pub const NEIGHBOR_SOLICIT: Message = Message(135);
    /// Neighbor advertisement (RFC 4861).
    pub const NEIGHBOR_ADVERT: Message = Message(136);
    /// Redirect (RFC 4861).
    pub const REDIRECT: Message = Message(137);
    /// Version 2 multicast listener report (RFC 3810).
    pub const MLDV2_REPORT: Message = Message(143);

    /// Whether this is an error message (types 0–127), which quotes the
    /// packet that caused it.
    #[inline]
    pub fn is_error(self) -> bool {
        self.0 < 128
    }
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match *self {
            Message::DST_UNREACHABLE => "destination unreachable",
            Message::PKT_TOO_BIG => "packet too big",
            Message::TIME_EXCEEDED => "time exceeded",
            Message::PARAM_PROBLEM => "parameter problem",
            Message::ECHO_REQUEST => "echo request",
            Message::ECHO_REPLY => "echo reply",
            Message::MLD_QUERY => "multicast listener query",
            Message::MLD_REPORT => "multicast listener report",
            Message::MLD_DONE => "multicast listener done",
            Message::ROUTER_SOLICIT => "router solicitation",
            Message::ROUTER_ADVERT => "router advertisement",
            Message::NEIGHBOR_SOLICIT => "neighbor solicitation",
            Message::NEIGHBOR_ADVERT => "neighbor advertisement",
            Message::REDIRECT => "redirect",
            Message::MLDV2_REPORT => "multicast listener report v2",
            Message(other) => return write!(f, "type {other}"),
        };
        f.write_str(name)
    }
}

mod field {
    use crate::field::{Field, Rest};

    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Field = 2..4;
    pub const REST: Field = 4..8;
    pub const ECHO_IDENT: Field = 4..6;
    pub const ECHO_SEQNO: Field = 6..8;
    pub const PAYLOAD: Rest = 8..;
}

/// Length of the ICMPv6 header (type, code, checksum, rest of header).
pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// A read/write view of an ICMPv6 message.
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

    /// [`Error::Truncated`] unless the 8-byte header is in the buffer.
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

    /// Message type.
    #[inline]
    pub fn msg_type(&self) -> Message {
        Message(self.buffer.as_ref()[field::TYPE])
    }

    /// Message code.
    #[inline]
    pub fn msg_code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    /// Checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// The four type-specific header bytes after the checksum.
    #[inline]
    pub fn rest_of_header(&self) -> [u8; 4] {
        let r = &self.buffer.as_ref()[field::REST];
        [r[0], r[1], r[2], r[3]]
    }

    /// Echo request/reply identifier.
    #[inline]
    pub fn echo_ident(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::ECHO_IDENT])
    }

    /// Echo request/reply sequence number.
    #[inline]
    pub fn echo_seq_no(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::ECHO_SEQNO])
    }

    /// Packet too big: MTU of the next-hop link.
    #[inline]
    pub fn mtu(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::REST])
    }

    /// Parameter problem: offset of the offending byte.
    #[inline]
    pub fn pointer(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::REST])
    }

    fn compute_sum(&self, src: Ipv6Addr, dst: Ipv6Addr) -> u16 {
        let data = self.buffer.as_ref();
        checksum::combine(&[
            checksum::pseudo_header_v6(src, dst, IpProtocol::ICMPV6, data.len() as u32),
            checksum::sum(data),
        ])
    }

    /// Whether the checksum over the pseudo-header and the whole buffer is
    /// correct.
    #[inline]
    pub fn verify_checksum(&self, src: Ipv6Addr, dst: Ipv6Addr) -> bool {
        self.compute_sum(src, dst) == 0xffff
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// Bytes after the 8-byte header.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }

    /// For error messages ([`Message::is_error`]), the quoted leading bytes
    /// of the packet that caused the error; `None` for other types. View
    /// the quote with [`crate::ipv6::Packet::check_header_len`].
    #[inline]
    pub fn original_datagram(&self) -> Option<&'a [u8]> {
        self.msg_type().is_error().then(|| self.payload())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the message type.
    #[inline]
    pub fn set_msg_type(&mut self, value: Message) {
        self.buffer.as_mut()[field::TYPE] = value.0;
    }

    /// Sets the message code.
    #[inline]
    pub fn set_msg_code(&mut self, value: u8) {
        self.buffer.as_mut()[field::CODE] = value;
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::CHECKSUM], value);
    }

    /// Sets the four type-specific header bytes.
    #[inline]
    pub fn set_rest_of_header(&mut self, value: [u8; 4]) {
        self.buffer.as_mut()[field::REST].copy_from_slice(&value);
    }

    /// Sets the echo identifier.
    #[inline]
    pub fn set_echo_ident(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::ECHO_IDENT], value);
    }

    /// Sets the echo sequence number.
    #[inline]
    pub fn set_echo_seq_no(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::ECHO_SEQNO], value);
    }

    /// Sets the packet-too-big MTU.
    #[inline]
    pub fn set_mtu(&mut self, value: u32) {
        write_u32(&mut self.buffer.as_mut()[field::REST], value);
    }

    /// Sets the parameter-problem pointer.
    #[inline]
    pub fn set_pointer(&mut self, value: u32) {
        write_u32(&mut self.buffer.as_mut()[field::REST], value);
    }

    /// Computes and stores the checksum over the pseudo-header and the
    /// whole buffer.
    #[inline]
    pub fn fill_checksum(&mut self, src: Ipv6Addr, dst: Ipv6Addr) {
        self.set_checksum(0);
        let sum = !self.compute_sum(src, dst);
        self.set_checksum(sum);
    }

    /// Mutable bytes after the 8-byte header.
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

/// A decoded ICMPv6 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Repr {
    /// Echo request.
    EchoRequest {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
    },
    /// Echo reply.
    EchoReply {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
    },
    /// Destination unreachable.
    DstUnreachable {
        /// Reason code.
        code: u8,
    },
    /// Packet too big.
    PktTooBig {
        /// MTU of the next-hop link.
        mtu: u32,
    },
    /// Time exceeded.
    TimeExceeded {
        /// Reason code.
        code: u8,
    },
    /// Parameter problem.
    ParamProblem {
        /// Reason code.
        code: u8,
        /// Offset of the offending byte.
        pointer: u32,
    },
    /// Any other message (including neighbor discovery), kept verbatim.
    Other {
        /// Message type.
        msg_type: Message,
        /// Message code.
        code: u8,
        /// The four type-specific header bytes.
        rest_of_header: [u8; 4],
    },
}

impl Repr {
    /// Decodes the ICMPv6 header ([`Error::Truncated`] if shorter than 8
    /// bytes). The checksum is not verified (see
    /// [`Packet::verify_checksum`]). Messages whose code or unused header
    /// bytes do not fit a variant (an echo with a non-zero code, a
    /// destination unreachable with non-zero unused bytes, ...) are returned
    /// verbatim as [`Repr::Other`], so parse/emit never loses bytes.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr> {
        packet.check_len()?;
        let code = packet.msg_code();
        Ok(match (packet.msg_type(), code) {
            (Message::ECHO_REQUEST, 0) => Repr::EchoRequest {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
            },
            (Message::ECHO_REPLY, 0) => Repr::EchoReply {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
            },
            (Message::DST_UNREACHABLE, _) if packet.rest_of_header() == [0; 4] => {
                Repr::DstUnreachable { code }
            }
            (Message::PKT_TOO_BIG, 0) => Repr::PktTooBig { mtu: packet.mtu() },
            (Message::TIME_EXCEEDED, _) if packet.rest_of_header() == [0; 4] => {
                Repr::TimeExceeded { code }
            }
            (Message::PARAM_PROBLEM, _) => Repr::ParamProblem {
                code,
                pointer: packet.pointer(),
            },
            (msg_type, _) => Repr::Other {
                msg_type,
                code,
                rest_of_header: packet.rest_of_header(),
            },
        })
    }

    /// Number of bytes [`emit`](Self::emit) writes (the 8-byte header).
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header with a zero checksum; write the payload, then
    /// call [`Packet::fill_checksum`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<()> {
        packet.check_len()?;
        let (msg_type, code, rest) = match *self {
            Repr::EchoRequest { ident, seq_no } => (
                Message::ECHO_REQUEST,
                0,
                (u32::from(ident) << 16 | u32::from(seq_no)).to_be_bytes(),
            ),
            Repr::EchoReply { ident, seq_no } => (
                Message::ECHO_REPLY,
                0,
                (u32::from(ident) << 16 | u32::from(seq_no)).to_be_bytes(),
            ),
            Repr::DstUnreachable { code } => (Message::DST_UNREACHABLE, code, [0; 4]),
            Repr::PktTooBig { mtu } => (Message::PKT_TOO_BIG, 0, mtu.to_be_bytes()),
            Repr::TimeExceeded { code } => (Message::TIME_EXCEEDED, code, [0; 4]),
            Repr::ParamProblem { code, pointer } => {
                (Message::PARAM_PROBLEM, code, pointer.to_be_bytes())
            }
            Repr::Other {
                msg_type,
                code,
                rest_of_header,
            } => (msg_type, code, rest_of_header),
        };
        packet.set_msg_type(msg_type);
        packet.set_msg_code(code);
        packet.set_checksum(0);
        packet.set_rest_of_header(rest);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipv6;
    use crate::testutil::assert_prefixes_rejected;

    fn addrs() -> (Ipv6Addr, Ipv6Addr) {
        ("fe80::1".parse().unwrap(), "fe80::2".parse().unwrap())
    }

    /// Echo request fe80::1 -> fe80::2, ident 0x2a, seq 7, payload "ping".
    const ECHO: [u8; 12] = [
        0x80, 0x00, 0xa3, 0xb2, 0x00, 0x2a, 0x00, 0x07, b'p', b'i', b'n', b'g',
    ];

    #[test]
    fn deconstruct_echo() {
        let (src, dst) = addrs();
        let p = Packet::new_checked(&ECHO[..]).unwrap();
        assert_eq!(p.msg_type(), Message::ECHO_REQUEST);
        assert_eq!(p.msg_code(), 0);
        assert_eq!(p.checksum(), 0xa3b2);
        assert_eq!((p.echo_ident(), p.echo_seq_no()), (0x2a, 7));
        assert_eq!(p.payload(), b"ping");
        assert_eq!(p.original_datagram(), None);
        assert!(p.verify_checksum(src, dst));
        assert!(!p.verify_checksum(dst, "fe80::3".parse().unwrap()));
    }

    #[test]
    fn round_trip_echo() {
        let (src, dst) = addrs();
        let repr = Repr::parse(&Packet::new_checked(&ECHO[..]).unwrap()).unwrap();
        assert_eq!(
            repr,
            Repr::EchoRequest {
                ident: 0x2a,
                seq_no: 7
            }
        );
        let mut buf = [0u8; 12];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        repr.emit(&mut p).unwrap();
        p.payload_mut().copy_from_slice(b"ping");
        p.fill_checksum(src, dst);
        assert_eq!(buf, ECHO);
    }

    #[test]
    fn packet_too_big_quotes_original() {
        let (src, dst) = addrs();
        let mut quoted = [0u8; 48];
        quoted[0] = 0x60;
        quoted[6] = 17;
        let repr = Repr::PktTooBig { mtu: 1280 };
        let mut buf = [0u8; 56];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        repr.emit(&mut p).unwrap();
        p.payload_mut().copy_from_slice(&quoted);
        p.fill_checksum(src, dst);
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert!(p.verify_checksum(src, dst));
        assert_eq!(p.mtu(), 1280);
        let orig = ipv6::Packet::new_unchecked(p.original_datagram().unwrap());
        assert_eq!(orig.check_header_len(), Ok(()));
        assert_eq!(orig.next_header(), IpProtocol::UDP);
        assert_eq!(Repr::parse(&p), Ok(repr));
    }

    #[test]
    fn other_variants_round_trip() {
        let reprs = [
            Repr::EchoReply {
                ident: 1,
                seq_no: 2,
            },
            Repr::DstUnreachable { code: 4 },
            Repr::TimeExceeded { code: 1 },
            Repr::ParamProblem {
                code: 1,
                pointer: 40,
            },
            Repr::Other {
                msg_type: Message::NEIGHBOR_SOLICIT,
                code: 0,
                rest_of_header: [0; 4],
            },
            Repr::Other {
                msg_type: Message::ROUTER_ADVERT,
                code: 0,
                rest_of_header: [64, 0, 7, 8],
            },
            Repr::Other {
                msg_type: Message::DST_UNREACHABLE,
                code: 0,
                rest_of_header: [0, 0, 0, 1],
            },
        ];
        for repr in reprs {
            let mut buf = [0u8; 8];
            repr.emit(&mut Packet::new_unchecked(&mut buf[..])).unwrap();
            assert_eq!(Repr::parse(&Packet::new_unchecked(&buf[..])), Ok(repr));
        }
        let mut short = [0u8; 4];
        assert_eq!(
            reprs[0].emit(&mut Packet::new_unchecked(&mut short[..])),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn message_helpers() {
        assert!(Message::PKT_TOO_BIG.is_error());
        assert!(!Message::NEIGHBOR_ADVERT.is_error());
        assert_eq!(
            Message::NEIGHBOR_SOLICIT.to_string(),
            "neighbor solicitation"
        );
        assert_eq!(Message(200).to_string(), "type 200");
    }

    #[test]
    fn truncated_prefixes_rejected() {
        assert_prefixes_rejected(&ECHO[..8], |b| {
            Repr::parse(&Packet::new_unchecked(b)).map(|_| ())
        });
    }
}

//! ICMP for IPv4 (RFC 792): type, code, checksum, the four "rest of
//! header" bytes (echo identifier and sequence number, next-hop MTU,
//! parameter-problem pointer, redirect gateway) and, for error messages,
//! the quoted original datagram.
//!
//! The checksum covers the whole ICMP message, so view exactly the IP
//! payload.

use core::fmt;
use std::net::Ipv4Addr;

use crate::bytes::{read_u16, write_u16};
use crate::checksum;
use crate::{Error, Result};

/// An ICMPv4 message type. Unknown values are kept as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Message(pub u8);

impl Message {
    /// Echo reply.
    pub const ECHO_REPLY: Message = Message(0);
    /// Destination unreachable.
    pub const DST_UNREACHABLE: Message = Message(3);
    /// Source quench (deprecated, RFC 6633).
    pub const SOURCE_QUENCH: Message = Message(4);
    /// Redirect.
    pub const REDIRECT: Message = Message(5);
    /// Echo request.
    pub const ECHO_REQUEST: Message = Message(8);
    /// Router advertisement.
    pub const ROUTER_ADVERT: Message = Message(9);
    /// Router solicitation.
    pub const ROUTER_SOLICIT: Message = Message(10);
    /// Time exceeded.
    pub const TIME_EXCEEDED: Message = Message(11);
    /// Parameter problem.
    pub const PARAM_PROBLEM: Message = Message(12);
    /// Timestamp request.
    pub const TIMESTAMP: Message = Message(13);
    /// Timestamp reply.
    pub const TIMESTAMP_REPLY: Message = Message(14);

    /// Whether messages of this type quote the datagram that caused them.
    #[inline]
    pub fn is_error(self) -> bool {
        matches!(
            self,
            Message::DST_UNREACHABLE
                | Message::SOURCE_QUENCH
                | Message::REDIRECT
                | Message::TIME_EXCEEDED
                | Message::PARAM_PROBLEM
        )
    }
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match *self {
            Message::ECHO_REPLY => "echo reply",
            Message::DST_UNREACHABLE => "destination unreachable",
            Message::SOURCE_QUENCH => "source quench",
            Message::REDIRECT => "redirect",
            Message::ECHO_REQUEST => "echo request",
            Message::ROUTER_ADVERT => "router advertisement",
            Message::ROUTER_SOLICIT => "router solicitation",
            Message::TIME_EXCEEDED => "time exceeded",
            Message::PARAM_PROBLEM => "parameter problem",
            Message::TIMESTAMP => "timestamp",
            Message::TIMESTAMP_REPLY => "timestamp reply",
            Message(other) => return write!(f, "type {other}"),
        };
        f.write_str(name)
    }
}

/// Codes for [`Message::DST_UNREACHABLE`] used by routers and hosts.
pub mod dst_unreachable {
    /// Network unreachable.
    pub const NET: u8 = 0;
    /// Host unreachable.
    pub const HOST: u8 = 1;
    /// Protocol unreachable.
    pub const PROTOCOL: u8 = 2;
    /// Port unreachable.
    pub const PORT: u8 = 3;
    /// Fragmentation needed and DF set (carries the next-hop MTU).
    pub const NEED_FRAG: u8 = 4;
    /// Communication administratively prohibited (RFC 1812).
    pub const ADMIN_PROHIBITED: u8 = 13;
}

/// Codes for [`Message::TIME_EXCEEDED`].
pub mod time_exceeded {
    /// TTL exceeded in transit.
    pub const TTL: u8 = 0;
    /// Fragment reassembly time exceeded.
    pub const REASSEMBLY: u8 = 1;
}

mod field {
    use crate::field::{Field, Rest};

    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Field = 2..4;
    pub const REST: Field = 4..8;
    pub const ECHO_IDENT: Field = 4..6;
    pub const ECHO_SEQNO: Field = 6..8;
    pub const POINTER: usize = 4;
    pub const MTU: Field = 6..8;
    pub const PAYLOAD: Rest = 8..;
}

/// Length of the ICMPv4 header (type, code, checksum, rest of header).
pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// A read/write view of an ICMPv4 message.
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

    /// Destination unreachable / fragmentation needed: next-hop MTU
    /// (RFC 1191).
    #[inline]
    pub fn next_hop_mtu(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::MTU])
    }

    /// Parameter problem: offset of the offending byte.
    #[inline]
    pub fn pointer(&self) -> u8 {
        self.buffer.as_ref()[field::POINTER]
    }

    /// Redirect: gateway address.
    #[inline]
    pub fn gateway(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.rest_of_header())
    }

    /// Whether the checksum over the whole buffer is correct.
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        checksum::sum(self.buffer.as_ref()) == 0xffff
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// Bytes after the 8-byte header.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }

    /// For error messages ([`Message::is_error`]), the quoted IP header and
    /// leading payload bytes of the datagram that caused the error; `None`
    /// for other types. The quote is normally cut short: view it with
    /// [`crate::ipv4::Packet::check_header_len`], not `new_checked`.
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

    /// Sets the next-hop MTU.
    #[inline]
    pub fn set_next_hop_mtu(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::MTU], value);
    }

    /// Sets the parameter-problem pointer.
    #[inline]
    pub fn set_pointer(&mut self, value: u8) {
        self.buffer.as_mut()[field::POINTER] = value;
    }

    /// Sets the redirect gateway.
    #[inline]
    pub fn set_gateway(&mut self, value: Ipv4Addr) {
        self.set_rest_of_header(value.octets());
    }

    /// Computes and stores the checksum over the whole buffer.
    #[inline]
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let sum = checksum::compute(self.buffer.as_ref());
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

/// A decoded ICMPv4 header.
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
    /// Destination unreachable (see [`dst_unreachable`] for codes).
    DstUnreachable {
        /// Reason code.
        code: u8,
        /// Next-hop MTU (code 4), otherwise normally zero.
        next_hop_mtu: u16,
    },
    /// Redirect.
    Redirect {
        /// Reason code.
        code: u8,
        /// Better first-hop router.
        gateway: Ipv4Addr,
    },
    /// Time exceeded (see [`time_exceeded`] for codes).
    TimeExceeded {
        /// Reason code.
        code: u8,
    },
    /// Parameter problem.
    ParamProblem {
        /// Reason code.
        code: u8,
        /// Offset of the offending byte.
        pointer: u8,
    },
    /// Any other message, kept verbatim.
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
    /// Decodes the ICMPv4 header ([`Error::Truncated`] if shorter than 8
    /// bytes). The checksum is not verified (see
    /// [`Packet::verify_checksum`]). Messages whose code or unused header
    /// bytes do not fit a variant (an echo with a non-zero code, a time
    /// exceeded with non-zero unused bytes, ...) are returned verbatim as
    /// [`Repr::Other`], so parse/emit never loses bytes.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr> {
        packet.check_len()?;
        let code = packet.msg_code();
        let rest = packet.rest_of_header();
        Ok(match (packet.msg_type(), code) {
            (Message::ECHO_REQUEST, 0) => Repr::EchoRequest {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
            },
            (Message::ECHO_REPLY, 0) => Repr::EchoReply {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
            },
            (Message::DST_UNREACHABLE, _) if rest[..2] == [0, 0] => Repr::DstUnreachable {
                code,
                next_hop_mtu: packet.next_hop_mtu(),
            },
            (Message::REDIRECT, _) => Repr::Redirect {
                code,
                gateway: packet.gateway(),
            },
            (Message::TIME_EXCEEDED, _) if rest == [0; 4] => Repr::TimeExceeded { code },
            (Message::PARAM_PROBLEM, _) if rest[1..] == [0, 0, 0] => Repr::ParamProblem {
                code,
                pointer: packet.pointer(),
            },
            (msg_type, _) => Repr::Other {
                msg_type,
                code,
                rest_of_header: rest,
            },
        })
    }

    /// Number of bytes [`emit`](Self::emit) writes (the 8-byte header).
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header with a zero checksum; write the payload (for
    /// errors, the original datagram), then call [`Packet::fill_checksum`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<()> {
        packet.check_len()?;
        let (msg_type, code, rest) = match *self {
            Repr::EchoRequest { ident, seq_no } => {
                (Message::ECHO_REQUEST, 0, echo_rest(ident, seq_no))
            }
            Repr::EchoReply { ident, seq_no } => (Message::ECHO_REPLY, 0, echo_rest(ident, seq_no)),
            Repr::DstUnreachable { code, next_hop_mtu } => {
                let m = next_hop_mtu.to_be_bytes();
                (Message::DST_UNREACHABLE, code, [0, 0, m[0], m[1]])
            }
            Repr::Redirect { code, gateway } => (Message::REDIRECT, code, gateway.octets()),
            Repr::TimeExceeded { code } => (Message::TIME_EXCEEDED, code, [0; 4]),
            Repr::ParamProblem { code, pointer } => {
                (Message::PARAM_PROBLEM, code, [pointer, 0, 0, 0])
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

fn echo_rest(ident: u16, seq_no: u16) -> [u8; 4] {
    let i = ident.to_be_bytes();
    let s = seq_no.to_be_bytes();
    [i[0], i[1], s[0], s[1]]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::IpProtocol;
    use crate::ipv4;
    use crate::testutil::assert_prefixes_rejected;

    /// An echo request as sent by Linux `ping`: ident 0x1c2b, seq 1, a
    /// 16-byte payload.
    const ECHO: [u8; 24] = [
        0x08, 0x00, 0x23, 0x13, 0x1c, 0x2b, 0x00, 0x01, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16,
        0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
    ];

    /// Port unreachable quoting a UDP datagram 192.168.1.23:51234 ->
    /// 192.168.1.1:53 (IPv4 header + 8 bytes of UDP header).
    const UNREACH: [u8; 36] = [
        0x03, 0x03, 0x34, 0x7c, 0x00, 0x00, 0x00, 0x00, // ICMP header
        0x45, 0x00, 0x00, 0x3d, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0xa5, 0x13, 0xc0, 0xa8, 0x01,
        0x17, 0xc0, 0xa8, 0x01, 0x01, // quoted IPv4 header
        0xc8, 0x22, 0x00, 0x35, 0x00, 0x29, 0x00, 0x00, // quoted UDP header
    ];

    #[test]
    fn deconstruct_echo() {
        let p = Packet::new_checked(&ECHO[..]).unwrap();
        assert_eq!(p.msg_type(), Message::ECHO_REQUEST);
        assert_eq!(p.msg_code(), 0);
        assert_eq!(p.checksum(), 0x2313);
        assert_eq!((p.echo_ident(), p.echo_seq_no()), (0x1c2b, 1));
        assert_eq!(p.payload(), &ECHO[8..]);
        assert_eq!(p.original_datagram(), None);
        assert!(p.verify_checksum());
    }

    #[test]
    fn echo_reply_from_request() {
        // What an ICMPPingResponder does: flip the type, patch the checksum.
        let mut buf = ECHO;
        let mut p = Packet::new_checked(&mut buf[..]).unwrap();
        let old = u16::from_be_bytes([p.msg_type().0, p.msg_code()]);
        p.set_msg_type(Message::ECHO_REPLY);
        let sum = checksum::update_u16(p.checksum(), old, 0);
        p.set_checksum(sum);
        assert!(p.verify_checksum());
        let repr = Repr::parse(&Packet::new_unchecked(&buf[..])).unwrap();
        assert_eq!(
            repr,
            Repr::EchoReply {
                ident: 0x1c2b,
                seq_no: 1
            }
        );
    }

    #[test]
    fn round_trip_echo() {
        let repr = Repr::parse(&Packet::new_checked(&ECHO[..]).unwrap()).unwrap();
        assert_eq!(
            repr,
            Repr::EchoRequest {
                ident: 0x1c2b,
                seq_no: 1
            }
        );
        let mut buf = [0u8; 24];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        repr.emit(&mut p).unwrap();
        p.payload_mut().copy_from_slice(&ECHO[8..]);
        p.fill_checksum();
        assert_eq!(buf, ECHO);
    }

    #[test]
    fn original_datagram_of_error() {
        let p = Packet::new_checked(&UNREACH[..]).unwrap();
        assert!(p.verify_checksum());
        let repr = Repr::parse(&p).unwrap();
        assert_eq!(
            repr,
            Repr::DstUnreachable {
                code: dst_unreachable::PORT,
                next_hop_mtu: 0
            }
        );
        let quoted = p.original_datagram().unwrap();
        let ip = ipv4::Packet::new_unchecked(quoted);
        assert_eq!(ip.check_header_len(), Ok(()));
        assert_eq!(ip.check_len(), Err(Error::Truncated));
        assert!(ip.verify_checksum());
        assert_eq!(ip.protocol(), IpProtocol::UDP);
        assert_eq!(ip.dst_addr(), Ipv4Addr::new(192, 168, 1, 1));
        assert_eq!(&quoted[20..22], &[0xc8, 0x22]);

        let mut buf = [0u8; 36];
        let mut out = Packet::new_unchecked(&mut buf[..]);
        repr.emit(&mut out).unwrap();
        out.payload_mut().copy_from_slice(quoted);
        out.fill_checksum();
        assert_eq!(buf, UNREACH);
    }

    #[test]
    fn other_variants_round_trip() {
        let reprs = [
            Repr::DstUnreachable {
                code: dst_unreachable::NEED_FRAG,
                next_hop_mtu: 1400,
            },
            Repr::Redirect {
                code: 1,
                gateway: Ipv4Addr::new(10, 0, 0, 254),
            },
            Repr::TimeExceeded {
                code: time_exceeded::TTL,
            },
            Repr::ParamProblem {
                code: 0,
                pointer: 9,
            },
            Repr::Other {
                msg_type: Message::TIMESTAMP,
                code: 0,
                rest_of_header: [1, 2, 3, 4],
            },
            Repr::Other {
                msg_type: Message::ECHO_REQUEST,
                code: 5,
                rest_of_header: [1, 2, 3, 4],
            },
            Repr::Other {
                msg_type: Message::DST_UNREACHABLE,
                code: 3,
                rest_of_header: [0, 1, 0, 0],
            },
            Repr::Other {
                msg_type: Message::TIME_EXCEEDED,
                code: 0,
                rest_of_header: [0, 0, 0, 1],
            },
            Repr::Other {
                msg_type: Message::PARAM_PROBLEM,
                code: 0,
                rest_of_header: [4, 0, 1, 0],
            },
        ];
        for repr in reprs {
            let mut buf = [0u8; 8];
            repr.emit(&mut Packet::new_unchecked(&mut buf[..])).unwrap();
            assert_eq!(Repr::parse(&Packet::new_unchecked(&buf[..])), Ok(repr));
        }
        let mut short = [0u8; 7];
        assert_eq!(
            reprs[0].emit(&mut Packet::new_unchecked(&mut short[..])),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn message_helpers() {
        assert!(Message::TIME_EXCEEDED.is_error());
        assert!(!Message::ECHO_REPLY.is_error());
        assert_eq!(
            Message::DST_UNREACHABLE.to_string(),
            "destination unreachable"
        );
        assert_eq!(Message(42).to_string(), "type 42");
    }

    #[test]
    fn truncated_prefixes_rejected() {
        assert_prefixes_rejected(&ECHO[..8], |b| {
            Repr::parse(&Packet::new_unchecked(b)).map(|_| ())
        });
    }
}

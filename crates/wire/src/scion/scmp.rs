//! SCMP messages (§10): `Type(1) Code(1) Checksum(2) InfoBlock DataBlock`.
//! The checksum covers the SCION pseudo-header (NextHdr 202) and the
//! whole message (see [`super::udp::checksum`]).

use crate::bytes::{read_u16, write_u16};
use crate::scion::header::Ia;
use crate::{Error, Result};

/// SCMP type numbers.
pub mod typ {
    /// Destination unreachable.
    pub const DESTINATION_UNREACHABLE: u8 = 1;
    /// Packet too big.
    pub const PACKET_TOO_BIG: u8 = 2;
    /// Parameter problem.
    pub const PARAMETER_PROBLEM: u8 = 4;
    /// External interface down.
    pub const EXTERNAL_INTERFACE_DOWN: u8 = 5;
    /// Internal connectivity down.
    pub const INTERNAL_CONNECTIVITY_DOWN: u8 = 6;
    /// Echo request.
    pub const ECHO_REQUEST: u8 = 128;
    /// Echo reply.
    pub const ECHO_REPLY: u8 = 129;
    /// Traceroute request.
    pub const TRACEROUTE_REQUEST: u8 = 130;
    /// Traceroute reply.
    pub const TRACEROUTE_REPLY: u8 = 131;
}

/// ParameterProblem codes the router emits (§10).
pub mod pp {
    /// InvalidPacketSize.
    pub const INVALID_PACKET_SIZE: u8 = 19;
    /// InvalidSourceAddress.
    pub const INVALID_SOURCE_ADDRESS: u8 = 33;
    /// InvalidDestinationAddress.
    pub const INVALID_DESTINATION_ADDRESS: u8 = 34;
    /// InvalidPath.
    pub const INVALID_PATH: u8 = 48;
    /// UnknownHopFieldIngress.
    pub const UNKNOWN_HOP_FIELD_INGRESS: u8 = 49;
    /// UnknownHopFieldEgress.
    pub const UNKNOWN_HOP_FIELD_EGRESS: u8 = 50;
    /// InvalidHopFieldMAC.
    pub const INVALID_HOP_FIELD_MAC: u8 = 51;
    /// PathExpired.
    pub const PATH_EXPIRED: u8 = 52;
    /// InvalidSegmentChange.
    pub const INVALID_SEGMENT_CHANGE: u8 = 53;
}

/// Length of type, code and checksum.
pub const HEADER_LEN: usize = 4;

/// Length of the info block of a message type (`None` if unknown).
pub const fn info_len(t: u8) -> Option<usize> {
    match t {
        typ::DESTINATION_UNREACHABLE | typ::PACKET_TOO_BIG | typ::PARAMETER_PROBLEM => Some(4),
        typ::EXTERNAL_INTERFACE_DOWN => Some(16),
        typ::INTERNAL_CONNECTIVITY_DOWN => Some(24),
        typ::ECHO_REQUEST | typ::ECHO_REPLY => Some(4),
        typ::TRACEROUTE_REQUEST | typ::TRACEROUTE_REPLY => Some(20),
        _ => None,
    }
}

/// A read/write view of an SCMP message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }
    /// Wraps a buffer that holds the header and the info block of a known
    /// type (4 bytes of info for unknown types).
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Packet { buffer };
        p.check_len()?;
        Ok(p)
    }
    /// See [`new_checked`](Self::new_checked).
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        if b.len() < HEADER_LEN || b.len() < HEADER_LEN + self.info_len() {
            return Err(Error::Truncated);
        }
        Ok(())
    }
    fn info_len(&self) -> usize {
        info_len(self.msg_type()).unwrap_or(0)
    }
    /// Type.
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[0]
    }
    /// Code.
    pub fn code(&self) -> u8 {
        self.buffer.as_ref()[1]
    }
    /// Checksum.
    pub fn checksum(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[2..4])
    }
    /// Whether this is an error message (type < 128).
    pub fn is_error(&self) -> bool {
        self.msg_type() < 128
    }
    /// Info block.
    pub fn info(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..HEADER_LEN + self.info_len()]
    }
    /// Data block (the quote of an error, the payload of echo).
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN + self.info_len()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets type and code.
    pub fn set_type_code(&mut self, t: u8, c: u8) {
        self.buffer.as_mut()[0] = t;
        self.buffer.as_mut()[1] = c;
    }
    /// Sets the checksum.
    pub fn set_checksum(&mut self, v: u16) {
        write_u16(&mut self.buffer.as_mut()[2..4], v);
    }
}

/// A decoded SCMP message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Message {
    /// Type 1.
    DestinationUnreachable {
        /// Code.
        code: u8,
    },
    /// Type 2.
    PacketTooBig {
        /// MTU.
        mtu: u16,
    },
    /// Type 4.
    ParameterProblem {
        /// Code.
        code: u8,
        /// Byte offset of the offending field from the SCION header start.
        pointer: u16,
    },
    /// Type 5.
    ExternalInterfaceDown {
        /// ISD-AS.
        ia: Ia,
        /// Interface.
        ifid: u64,
    },
    /// Type 6.
    InternalConnectivityDown {
        /// ISD-AS.
        ia: Ia,
        /// Ingress interface.
        ingress: u64,
        /// Egress interface.
        egress: u64,
    },
    /// Types 128/129.
    Echo {
        /// Reply (129) rather than request (128).
        reply: bool,
        /// Identifier.
        id: u16,
        /// Sequence number.
        seq: u16,
    },
    /// Types 130/131.
    Traceroute {
        /// Reply (131) rather than request (130).
        reply: bool,
        /// Identifier.
        id: u16,
        /// Sequence number.
        seq: u16,
        /// ISD-AS.
        ia: Ia,
        /// Interface.
        ifid: u64,
    },
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_be_bytes(a)
}

/// A decoded SCMP message and its data block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr<'a> {
    /// Message.
    pub message: Message,
    /// Data block.
    pub data: &'a [u8],
}

impl<'a> Repr<'a> {
    /// Decodes a message; [`Error::Unsupported`] for unknown types.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(p: &Packet<&'a T>) -> Result<Repr<'a>> {
        p.check_len()?;
        let b: &'a [u8] = p.buffer.as_ref();
        let i = &b[HEADER_LEN..];
        let message = match p.msg_type() {
            typ::DESTINATION_UNREACHABLE => Message::DestinationUnreachable { code: p.code() },
            typ::PACKET_TOO_BIG => Message::PacketTooBig {
                mtu: read_u16(&i[2..]),
            },
            typ::PARAMETER_PROBLEM => Message::ParameterProblem {
                code: p.code(),
                pointer: read_u16(&i[2..]),
            },
            typ::EXTERNAL_INTERFACE_DOWN => Message::ExternalInterfaceDown {
                ia: Ia(u64_at(i, 0)),
                ifid: u64_at(i, 8),
            },
            typ::INTERNAL_CONNECTIVITY_DOWN => Message::InternalConnectivityDown {
                ia: Ia(u64_at(i, 0)),
                ingress: u64_at(i, 8),
                egress: u64_at(i, 16),
            },
            t @ (typ::ECHO_REQUEST | typ::ECHO_REPLY) => Message::Echo {
                reply: t == typ::ECHO_REPLY,
                id: read_u16(i),
                seq: read_u16(&i[2..]),
            },
            t @ (typ::TRACEROUTE_REQUEST | typ::TRACEROUTE_REPLY) => Message::Traceroute {
                reply: t == typ::TRACEROUTE_REPLY,
                id: read_u16(i),
                seq: read_u16(&i[2..]),
                ia: Ia(u64_at(i, 4)),
                ifid: u64_at(i, 12),
            },
            _ => return Err(Error::Unsupported),
        };
        Ok(Repr {
            message,
            data: &b[HEADER_LEN + p.info_len()..],
        })
    }

    fn type_code(&self) -> (u8, u8) {
        match self.message {
            Message::DestinationUnreachable { code } => (typ::DESTINATION_UNREACHABLE, code),
            Message::PacketTooBig { .. } => (typ::PACKET_TOO_BIG, 0),
            Message::ParameterProblem { code, .. } => (typ::PARAMETER_PROBLEM, code),
            Message::ExternalInterfaceDown { .. } => (typ::EXTERNAL_INTERFACE_DOWN, 0),
            Message::InternalConnectivityDown { .. } => (typ::INTERNAL_CONNECTIVITY_DOWN, 0),
            Message::Echo { reply, .. } => (
                if reply {
                    typ::ECHO_REPLY
                } else {
                    typ::ECHO_REQUEST
                },
                0,
            ),
            Message::Traceroute { reply, .. } => (
                if reply {
                    typ::TRACEROUTE_REPLY
                } else {
                    typ::TRACEROUTE_REQUEST
                },
                0,
            ),
        }
    }

    /// Bytes [`emit`](Self::emit) writes (header, info and data).
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + info_len(self.type_code().0).unwrap_or(0) + self.data.len()
    }

    /// Writes the message with a zero checksum; compute it afterwards with
    /// [`super::udp::checksum`] (checksum field at offset 2).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) -> Result<()> {
        let len = self.buffer_len();
        if p.buffer.as_ref().len() < len {
            return Err(Error::Truncated);
        }
        let (t, c) = self.type_code();
        p.set_type_code(t, c);
        p.set_checksum(0);
        let b = &mut p.buffer.as_mut()[HEADER_LEN..len];
        let il = info_len(t).unwrap_or(0);
        b[..il].fill(0);
        match self.message {
            Message::DestinationUnreachable { .. } => {}
            Message::PacketTooBig { mtu } => write_u16(&mut b[2..], mtu),
            Message::ParameterProblem { pointer, .. } => write_u16(&mut b[2..], pointer),
            Message::ExternalInterfaceDown { ia, ifid } => {
                b[..8].copy_from_slice(&ia.0.to_be_bytes());
                b[8..16].copy_from_slice(&ifid.to_be_bytes());
            }
            Message::InternalConnectivityDown {
                ia,
                ingress,
                egress,
            } => {
                b[..8].copy_from_slice(&ia.0.to_be_bytes());
                b[8..16].copy_from_slice(&ingress.to_be_bytes());
                b[16..24].copy_from_slice(&egress.to_be_bytes());
            }
            Message::Echo { id, seq, .. } => {
                write_u16(b, id);
                write_u16(&mut b[2..], seq);
            }
            Message::Traceroute {
                id, seq, ia, ifid, ..
            } => {
                write_u16(b, id);
                write_u16(&mut b[2..], seq);
                b[4..12].copy_from_slice(&ia.0.to_be_bytes());
                b[12..20].copy_from_slice(&ifid.to_be_bytes());
            }
        }
        b[il..].copy_from_slice(self.data);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::assert_prefixes_rejected;

    #[test]
    fn parameter_problem_bytes() {
        let bytes = [4u8, 51, 0, 0, 0, 0, 0, 0x3c, 0xaa, 0xbb];
        let r = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(
            r.message,
            Message::ParameterProblem {
                code: 51,
                pointer: 60
            }
        );
        assert_eq!(r.data, &[0xaa, 0xbb]);
        let mut out = [0u8; 10];
        r.emit(&mut Packet::new_unchecked(&mut out[..])).unwrap();
        assert_eq!(out, bytes);
        assert_prefixes_rejected(&bytes[..8], |b| {
            Repr::parse(&Packet::new_unchecked(b)).map(|_| ())
        });
    }

    #[test]
    fn all_messages_round_trip() {
        let ia = Ia(0x0001_ff00_0000_0110);
        for m in [
            Message::DestinationUnreachable { code: 0 },
            Message::PacketTooBig { mtu: 1280 },
            Message::ExternalInterfaceDown { ia, ifid: 7 },
            Message::InternalConnectivityDown {
                ia,
                ingress: 1,
                egress: 2,
            },
            Message::Echo {
                reply: true,
                id: 9,
                seq: 3,
            },
            Message::Traceroute {
                reply: false,
                id: 1,
                seq: 2,
                ia,
                ifid: 5,
            },
        ] {
            let r = Repr {
                message: m,
                data: &[1, 2, 3],
            };
            let mut out = vec![0u8; r.buffer_len()];
            r.emit(&mut Packet::new_unchecked(&mut out[..])).unwrap();
            assert_eq!(
                Repr::parse(&Packet::new_checked(&out[..]).unwrap()).unwrap(),
                r
            );
        }
        let unknown = [99u8, 0, 0, 0];
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&unknown[..])),
            Err(Error::Unsupported)
        );
    }
}

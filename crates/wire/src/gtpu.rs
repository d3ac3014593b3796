//! GTP-U, the GPRS Tunnelling Protocol user plane (3GPP TS 29.281), over
//! UDP port 2152.
//!
//! The mandatory header is 8 bytes: flags (version 1 in bits 7-5, PT = 1,
//! E, S and PN flags), message type (255 for a G-PDU carrying a user IP
//! packet), a length counting every byte after these 8, and the tunnel
//! endpoint identifier (TEID). When any of E, S or PN is set, 4 more bytes
//! follow (sequence number, N-PDU number, next extension header type), and
//! when the next type is non-zero a chain of extension headers, each a
//! length byte in 4-byte units, contents, and the next type in its last
//! byte. [`Packet::header_len`] covers all of them; [`Packet::payload`] is
//! the T-PDU up to the length field's end.

use crate::bytes::{read_u16, read_u32, write_u16, write_u32};
use crate::{Error, Result};

mod field {
    use crate::field::Field;

    pub const FLAGS: usize = 0;
    pub const MSG_TYPE: usize = 1;
    pub const LENGTH: Field = 2..4;
    pub const TEID: Field = 4..8;
    pub const SEQ: Field = 8..10;
    pub const NPDU: usize = 10;
    pub const NEXT_EXT: usize = 11;
}

/// Length of the mandatory header.
pub const HEADER_LEN: usize = 8;
/// Length of the header with the optional sequence/N-PDU/next-type word.
pub const LONG_HEADER_LEN: usize = 12;
/// Flags byte of a plain version-1 GTP-U header (PT = 1, no E/S/PN).
pub const FLAGS_V1: u8 = 0x30;
/// The S flag (sequence number present).
pub const FLAG_S: u8 = 0x02;
/// E, S and PN flags: any of them adds the optional word.
pub const FLAGS_OPT: u8 = 0x07;
/// Message type of a G-PDU (an encapsulated user packet).
pub const G_PDU: u8 = 255;
/// The registered UDP port.
pub const UDP_PORT: u16 = 2152;
/// Most extension headers [`Packet::header_len`] walks.
pub const MAX_EXTENSIONS: usize = 8;

/// A read/write view of a GTP-U header and its payload.
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

    /// [`Error::Truncated`] unless the header (optional word and extension
    /// headers included) and the length field's bytes are in the buffer;
    /// [`Error::Malformed`] for a zero extension length, more than
    /// [`MAX_EXTENSIONS`] extension headers, or a header longer than the
    /// length field allows.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let hl = self.walk()?;
        let end = HEADER_LEN + usize::from(self.len());
        if hl > end {
            Err(Error::Malformed)
        } else if end > len {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Header length including the optional word and extension headers.
    fn walk(&self) -> Result<usize> {
        let b = self.buffer.as_ref();
        if b[field::FLAGS] & FLAGS_OPT == 0 {
            return Ok(HEADER_LEN);
        }
        if b.len() < LONG_HEADER_LEN {
            return Err(Error::Truncated);
        }
        let mut next = b[field::NEXT_EXT];
        let mut at = LONG_HEADER_LEN;
        let mut n = 0;
        while next != 0 {
            if n == MAX_EXTENSIONS {
                return Err(Error::Malformed);
            }
            let units = usize::from(*b.get(at).ok_or(Error::Truncated)?);
            if units == 0 {
                return Err(Error::Malformed);
            }
            at += 4 * units;
            next = *b.get(at - 1).ok_or(Error::Truncated)?;
            n += 1;
        }
        Ok(at)
    }

    /// Returns the underlying buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The flags byte.
    #[inline]
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    /// The version (bits 7-5 of the flags; 1 for GTP-U).
    #[inline]
    pub fn version(&self) -> u8 {
        self.flags() >> 5
    }

    /// The protocol type bit (1 for GTP, 0 for GTP').
    #[inline]
    pub fn protocol_type(&self) -> bool {
        self.flags() & 0x10 != 0
    }

    /// Message type.
    #[inline]
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[field::MSG_TYPE]
    }

    /// The length field: bytes after the mandatory 8.
    #[inline]
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::LENGTH])
    }

    /// Tunnel endpoint identifier.
    #[inline]
    pub fn teid(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::TEID])
    }

    /// The sequence number, when the S flag is set.
    #[inline]
    pub fn sequence(&self) -> Option<u16> {
        (self.flags() & FLAG_S != 0).then(|| read_u16(&self.buffer.as_ref()[field::SEQ]))
    }

    /// The N-PDU number, when the PN flag is set.
    #[inline]
    pub fn npdu(&self) -> Option<u8> {
        (self.flags() & 0x01 != 0).then(|| self.buffer.as_ref()[field::NPDU])
    }

    /// Header length (after [`check_len`](Self::check_len)).
    #[inline]
    pub fn header_len(&self) -> usize {
        self.walk().unwrap_or(HEADER_LEN)
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The T-PDU: from the end of the header to the length field's end.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        let end = HEADER_LEN + usize::from(self.len());
        &self.buffer.as_ref()[self.header_len()..end]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the flags byte.
    #[inline]
    pub fn set_flags(&mut self, value: u8) {
        self.buffer.as_mut()[field::FLAGS] = value;
    }

    /// Sets the message type.
    #[inline]
    pub fn set_msg_type(&mut self, value: u8) {
        self.buffer.as_mut()[field::MSG_TYPE] = value;
    }

    /// Sets the length field.
    #[inline]
    pub fn set_len(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::LENGTH], value);
    }

    /// Sets the TEID.
    #[inline]
    pub fn set_teid(&mut self, value: u32) {
        write_u32(&mut self.buffer.as_mut()[field::TEID], value);
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A decoded GTP-U header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Message type ([`G_PDU`] for user packets).
    pub msg_type: u8,
    /// Tunnel endpoint identifier.
    pub teid: u32,
    /// Sequence number, if present.
    pub sequence: Option<u16>,
    /// Length of the payload (the T-PDU).
    pub payload_len: usize,
}

impl Repr {
    /// Decodes a header (extension headers are stepped over): the errors of
    /// [`Packet::check_len`], and [`Error::Unsupported`] unless version is
    /// 1 and PT is 1.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr> {
        packet.check_len()?;
        if packet.version() != 1 || !packet.protocol_type() {
            return Err(Error::Unsupported);
        }
        Ok(Repr {
            msg_type: packet.msg_type(),
            teid: packet.teid(),
            sequence: packet.sequence(),
            payload_len: packet.payload().len(),
        })
    }

    /// Number of bytes [`emit`](Self::emit) writes: 8, or 12 with a
    /// sequence number.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        if self.sequence.is_some() {
            LONG_HEADER_LEN
        } else {
            HEADER_LEN
        }
    }

    /// Writes the header (no extension headers); [`Error::Malformed`] if
    /// the length does not fit in 16 bits, [`Error::Truncated`] if the
    /// buffer is short.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<()> {
        let hl = self.buffer_len();
        let len =
            u16::try_from(hl - HEADER_LEN + self.payload_len).map_err(|_| Error::Malformed)?;
        if packet.buffer.as_ref().len() < hl {
            return Err(Error::Truncated);
        }
        packet.set_flags(FLAGS_V1 | if self.sequence.is_some() { FLAG_S } else { 0 });
        packet.set_msg_type(self.msg_type);
        packet.set_len(len);
        packet.set_teid(self.teid);
        if let Some(s) = self.sequence {
            let b = packet.buffer.as_mut();
            write_u16(&mut b[field::SEQ], s);
            b[field::NPDU] = 0;
            b[field::NEXT_EXT] = 0;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// G-PDU, TEID 0x01020304, 4 payload bytes.
    const GPDU: [u8; 12] = [0x30, 0xff, 0x00, 0x04, 1, 2, 3, 4, 0x45, 0, 0, 0];

    /// G-PDU with sequence 0x1234 and one PDU session container extension
    /// header (type 0x85, 4 bytes), then 2 payload bytes.
    const EXT: [u8; 18] = [
        0x36, 0xff, 0x00, 0x0a, 0, 0, 0, 9, 0x12, 0x34, 0, 0x85, 1, 0x10, 0x09, 0, 0xaa, 0xbb,
    ];

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&GPDU[..]).unwrap();
        assert_eq!(
            (p.version(), p.protocol_type(), p.msg_type()),
            (1, true, G_PDU)
        );
        assert_eq!((p.len(), p.teid(), p.sequence()), (4, 0x01020304, None));
        assert_eq!(p.header_len(), 8);
        assert_eq!(p.payload(), &[0x45, 0, 0, 0]);
        let r = Repr::parse(&p).unwrap();
        assert_eq!(
            r,
            Repr {
                msg_type: G_PDU,
                teid: 0x01020304,
                sequence: None,
                payload_len: 4
            }
        );
        for n in 0..GPDU.len() {
            assert!(Packet::new_checked(&GPDU[..n]).is_err(), "{n}");
        }
    }

    #[test]
    fn extension_headers_are_stepped_over() {
        let p = Packet::new_checked(&EXT[..]).unwrap();
        assert_eq!(p.header_len(), 16);
        assert_eq!((p.sequence(), p.npdu()), (Some(0x1234), None));
        assert_eq!(p.payload(), &[0xaa, 0xbb]);
        for n in 0..EXT.len() {
            assert!(Packet::new_checked(&EXT[..n]).is_err(), "{n}");
        }
        let mut b = EXT;
        b[12] = 0; // zero-length extension
        assert_eq!(Packet::new_checked(&b[..]), Err(Error::Malformed));
        let mut b = EXT;
        b[3] = 6; // length shorter than the header
        assert_eq!(Packet::new_checked(&b[..]), Err(Error::Malformed));
        let mut b = EXT;
        b[0] = 0x46; // version 2
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&b[..])),
            Err(Error::Unsupported)
        );
    }

    #[test]
    fn construct() {
        let r = Repr {
            msg_type: G_PDU,
            teid: 0x01020304,
            sequence: None,
            payload_len: 4,
        };
        let mut b = [0xeeu8; 8];
        r.emit(&mut Packet::new_unchecked(&mut b[..])).unwrap();
        assert_eq!(b, GPDU[..8]);
        let r = Repr {
            sequence: Some(7),
            ..r
        };
        let mut b = [0xeeu8; 12];
        r.emit(&mut Packet::new_unchecked(&mut b[..])).unwrap();
        assert_eq!(b, [0x32, 0xff, 0, 8, 1, 2, 3, 4, 0, 7, 0, 0]);
        assert_eq!(
            r.emit(&mut Packet::new_unchecked(&mut [0u8; 11][..])),
            Err(Error::Truncated)
        );
    }
}

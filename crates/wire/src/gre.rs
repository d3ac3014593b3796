//! GRE (RFC 2784 with the key and sequence extensions of RFC 2890) and
//! NVGRE (RFC 7637).
//!
//! The header is 4 bytes (flags and version, protocol type) followed by
//! the optional checksum and reserved word (C bit), key (K bit) and
//! sequence number (S bit), 4 bytes each, in that order. NVGRE is GRE with
//! C = 0, K = 1, S = 0 and protocol type `0x6558` (Transparent Ethernet
//! Bridging); its key holds the 24-bit Virtual Subnet ID and an 8-bit
//! FlowID ([`Packet::vsid`], [`Packet::flow_id`]).

use crate::bytes::{read_u16, read_u32, write_u16, write_u32};
use crate::checksum;
use crate::ethernet::EtherType;
use crate::{Error, Result};

mod field {
    use crate::field::Field;

    pub const FLAGS_VER: Field = 0..2;
    pub const PROTOCOL: Field = 2..4;
    pub const OPTIONAL: usize = 4;
}

/// Flag: checksum present.
pub const FLAG_C: u16 = 0x8000;
/// Flag: key present.
pub const FLAG_K: u16 = 0x2000;
/// Flag: sequence number present.
pub const FLAG_S: u16 = 0x1000;

/// Length of the base GRE header (no optional fields).
pub const BASE_LEN: usize = field::OPTIONAL;
/// Length of an NVGRE header (base header and key).
pub const NVGRE_LEN: usize = 8;
/// Protocol type of NVGRE: Transparent Ethernet Bridging.
pub const PROTO_TEB: EtherType = EtherType(0x6558);

/// A read/write view of a GRE header and its payload.
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

    /// [`Error::Truncated`] unless the base header and the optional fields
    /// its flags announce are in the buffer.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < BASE_LEN || len < self.header_len() {
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

    /// The flags and version word.
    #[inline]
    pub fn flags_version(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::FLAGS_VER])
    }

    /// Whether the checksum field is present (C bit).
    #[inline]
    pub fn checksum_present(&self) -> bool {
        self.flags_version() & FLAG_C != 0
    }

    /// Whether the key field is present (K bit).
    #[inline]
    pub fn key_present(&self) -> bool {
        self.flags_version() & FLAG_K != 0
    }

    /// Whether the sequence number field is present (S bit).
    #[inline]
    pub fn seq_present(&self) -> bool {
        self.flags_version() & FLAG_S != 0
    }

    /// The version (3 bits; 0 for GRE).
    #[inline]
    pub fn version(&self) -> u8 {
        (self.flags_version() & 7) as u8
    }

    /// Protocol type of the payload.
    #[inline]
    pub fn protocol(&self) -> EtherType {
        EtherType(read_u16(&self.buffer.as_ref()[field::PROTOCOL]))
    }

    /// Header length from the flags: 4 bytes plus 4 per optional field.
    #[inline]
    pub fn header_len(&self) -> usize {
        let f = self.flags_version();
        BASE_LEN
            + 4 * (usize::from(f & FLAG_C != 0)
                + usize::from(f & FLAG_K != 0)
                + usize::from(f & FLAG_S != 0))
    }

    fn key_at(&self) -> usize {
        BASE_LEN + if self.checksum_present() { 4 } else { 0 }
    }

    /// The checksum field, if present.
    #[inline]
    pub fn checksum(&self) -> Option<u16> {
        self.checksum_present()
            .then(|| read_u16(&self.buffer.as_ref()[BASE_LEN..BASE_LEN + 2]))
    }

    /// The key, if present.
    #[inline]
    pub fn key(&self) -> Option<u32> {
        let at = self.key_at();
        self.key_present()
            .then(|| read_u32(&self.buffer.as_ref()[at..at + 4]))
    }

    /// The sequence number, if present.
    #[inline]
    pub fn sequence(&self) -> Option<u32> {
        let at = self.key_at() + if self.key_present() { 4 } else { 0 };
        self.seq_present()
            .then(|| read_u32(&self.buffer.as_ref()[at..at + 4]))
    }

    /// NVGRE: the Virtual Subnet ID (key bits 31..8), if a key is present.
    #[inline]
    pub fn vsid(&self) -> Option<u32> {
        self.key().map(|k| k >> 8)
    }

    /// NVGRE: the FlowID (key bits 7..0), if a key is present.
    #[inline]
    pub fn flow_id(&self) -> Option<u8> {
        self.key().map(|k| k as u8)
    }

    /// Whether the checksum (if present) is correct over the header and
    /// the whole rest of the buffer. True without a checksum.
    pub fn verify_checksum(&self) -> bool {
        !self.checksum_present() || checksum::sum(self.buffer.as_ref()) == 0xffff
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The bytes after the header.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the flags and version word.
    #[inline]
    pub fn set_flags_version(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::FLAGS_VER], value);
    }

    /// Sets the protocol type.
    #[inline]
    pub fn set_protocol(&mut self, value: EtherType) {
        write_u16(&mut self.buffer.as_mut()[field::PROTOCOL], value.0);
    }

    /// Sets the key (the K bit must be set).
    #[inline]
    pub fn set_key(&mut self, value: u32) {
        let at = self.key_at();
        write_u32(&mut self.buffer.as_mut()[at..at + 4], value);
    }

    /// Sets the sequence number (the S bit must be set).
    #[inline]
    pub fn set_sequence(&mut self, value: u32) {
        let at = self.key_at() + if self.key_present() { 4 } else { 0 };
        write_u32(&mut self.buffer.as_mut()[at..at + 4], value);
    }

    /// Computes and stores the checksum over the header and the rest of
    /// the buffer (the C bit must be set).
    pub fn fill_checksum(&mut self) {
        let b = self.buffer.as_mut();
        b[BASE_LEN..BASE_LEN + 4].fill(0);
        let c = checksum::compute(b);
        write_u16(&mut b[BASE_LEN..BASE_LEN + 2], c);
    }

    /// Mutable bytes after the header.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let at = self.header_len();
        &mut self.buffer.as_mut()[at..]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A decoded GRE header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Protocol type of the payload.
    pub protocol: EtherType,
    /// Whether a checksum is present (`emit` writes 0; see
    /// [`Packet::fill_checksum`]).
    pub checksum: bool,
    /// The key, if present.
    pub key: Option<u32>,
    /// The sequence number, if present.
    pub sequence: Option<u32>,
}

impl Repr {
    /// An NVGRE header for `vsid` (24 bits) and `flow_id`.
    pub fn nvgre(vsid: u32, flow_id: u8) -> Repr {
        Repr {
            protocol: PROTO_TEB,
            checksum: false,
            key: Some((vsid << 8) | u32::from(flow_id)),
            sequence: None,
        }
    }

    /// Decodes a GRE header: the errors of [`Packet::check_len`], and
    /// [`Error::Unsupported`] for a version other than 0 or reserved flag
    /// bits (routing, strict source route, recursion) set.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr> {
        packet.check_len()?;
        if packet.version() != 0 || packet.flags_version() & 0x4ff8 != 0 {
            return Err(Error::Unsupported);
        }
        Ok(Repr {
            protocol: packet.protocol(),
            checksum: packet.checksum_present(),
            key: packet.key(),
            sequence: packet.sequence(),
        })
    }

    /// Number of bytes [`emit`](Self::emit) writes.
    #[inline]
    pub fn buffer_len(&self) -> usize {
        BASE_LEN
            + 4 * (usize::from(self.checksum)
                + usize::from(self.key.is_some())
                + usize::from(self.sequence.is_some()))
    }

    /// Writes the header (a zero checksum if present);
    /// [`Error::Truncated`] if the buffer is too short.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<()> {
        if packet.buffer.as_ref().len() < self.buffer_len() {
            return Err(Error::Truncated);
        }
        let mut f = 0;
        if self.checksum {
            f |= FLAG_C;
        }
        if self.key.is_some() {
            f |= FLAG_K;
        }
        if self.sequence.is_some() {
            f |= FLAG_S;
        }
        packet.set_flags_version(f);
        packet.set_protocol(self.protocol);
        if self.checksum {
            packet.buffer.as_mut()[BASE_LEN..BASE_LEN + 4].fill(0);
        }
        if let Some(k) = self.key {
            packet.set_key(k);
        }
        if let Some(s) = self.sequence {
            packet.set_sequence(s);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::assert_prefixes_rejected;

    /// NVGRE header, VSID 0x123456, FlowID 0x78, then 2 payload bytes.
    const NVGRE: [u8; 10] = [0x20, 0x00, 0x65, 0x58, 0x12, 0x34, 0x56, 0x78, 0xaa, 0xbb];

    #[test]
    fn deconstruct_nvgre() {
        let p = Packet::new_checked(&NVGRE[..]).unwrap();
        assert!(p.key_present() && !p.checksum_present() && !p.seq_present());
        assert_eq!(p.version(), 0);
        assert_eq!(p.protocol(), PROTO_TEB);
        assert_eq!(p.header_len(), NVGRE_LEN);
        assert_eq!(p.key(), Some(0x1234_5678));
        assert_eq!((p.vsid(), p.flow_id()), (Some(0x123456), Some(0x78)));
        assert_eq!(p.sequence(), None);
        assert_eq!(p.payload(), &[0xaa, 0xbb]);
        assert_eq!(Repr::parse(&p).unwrap(), Repr::nvgre(0x123456, 0x78));
        assert_prefixes_rejected(&NVGRE[..8], |b| Packet::new_checked(b).map(|_| ()));
    }

    #[test]
    fn construct_nvgre() {
        let mut b = [0xffu8; 8];
        let r = Repr::nvgre(0x123456, 0x78);
        assert_eq!(r.buffer_len(), 8);
        r.emit(&mut Packet::new_unchecked(&mut b[..])).unwrap();
        assert_eq!(b, NVGRE[..8]);
        assert_eq!(
            r.emit(&mut Packet::new_unchecked(&mut [0u8; 7][..])),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn all_optional_fields_and_checksum() {
        let r = Repr {
            protocol: EtherType::IPV4,
            checksum: true,
            key: Some(7),
            sequence: Some(9),
        };
        let mut b = vec![0u8; 16 + 3];
        b[16..].copy_from_slice(&[1, 2, 3]);
        let mut p = Packet::new_unchecked(&mut b[..]);
        r.emit(&mut p).unwrap();
        p.fill_checksum();
        assert_eq!(
            &b[..16],
            &[0xb0, 0, 0x08, 0, 0x43, 0xed, 0, 0, 0, 0, 0, 7, 0, 0, 0, 9]
        );
        let p = Packet::new_checked(&b[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!(Repr::parse(&p).unwrap(), r);
        let mut bad = b.clone();
        bad[18] ^= 1;
        assert!(!Packet::new_checked(&bad[..]).unwrap().verify_checksum());
    }

    #[test]
    fn unsupported_versions_and_flags() {
        let mut b = NVGRE;
        b[1] = 1; // version 1 (PPTP's enhanced GRE)
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&b[..])),
            Err(Error::Unsupported)
        );
        b[1] = 0;
        b[0] |= 0x40; // routing present
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&b[..])),
            Err(Error::Unsupported)
        );
    }
}

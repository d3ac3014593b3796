//! IEEE 802.1Q / 802.1ad VLAN tags.
//!
//! The view starts *after* the tag protocol identifier (the outer EtherType
//! `0x8100` or `0x88a8`): two bytes of tag control information (PCP, DEI,
//! VID) followed by the inner EtherType, then the payload.

use crate::bytes::{read_u16, write_u16};
use crate::ethernet::EtherType;
use crate::{Error, Result};

mod field {
    use crate::field::{Field, Rest};

    pub const TCI: Field = 0..2;
    pub const ETHERTYPE: Field = 2..4;
    pub const PAYLOAD: Rest = 4..;
}

/// Length of a VLAN tag (TCI and inner EtherType).
pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// Largest VLAN identifier (4095, reserved).
pub const MAX_VID: u16 = 0x0fff;

/// A read/write view of a VLAN tag and what follows it.
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

    /// Ensures the buffer holds a whole tag ([`Error::Truncated`] otherwise).
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

    /// The whole 16-bit tag control information.
    #[inline]
    pub fn tci(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::TCI])
    }

    /// Priority code point (3 bits).
    #[inline]
    pub fn pcp(&self) -> u8 {
        (self.tci() >> 13) as u8
    }

    /// Drop eligible indicator.
    #[inline]
    pub fn dei(&self) -> bool {
        self.tci() & 0x1000 != 0
    }

    /// VLAN identifier (12 bits).
    #[inline]
    pub fn vid(&self) -> u16 {
        self.tci() & MAX_VID
    }

    /// EtherType of the encapsulated payload.
    #[inline]
    pub fn ethertype(&self) -> EtherType {
        EtherType(read_u16(&self.buffer.as_ref()[field::ETHERTYPE]))
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// Bytes after the tag.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the whole tag control information.
    #[inline]
    pub fn set_tci(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::TCI], value);
    }

    /// Sets the priority code point (only the low 3 bits are used).
    #[inline]
    pub fn set_pcp(&mut self, value: u8) {
        let tci = (self.tci() & 0x1fff) | (u16::from(value & 0x07) << 13);
        self.set_tci(tci);
    }

    /// Sets the drop eligible indicator.
    #[inline]
    pub fn set_dei(&mut self, value: bool) {
        let tci = (self.tci() & !0x1000) | if value { 0x1000 } else { 0 };
        self.set_tci(tci);
    }

    /// Sets the VLAN identifier (only the low 12 bits are used).
    #[inline]
    pub fn set_vid(&mut self, value: u16) {
        let tci = (self.tci() & !MAX_VID) | (value & MAX_VID);
        self.set_tci(tci);
    }

    /// Sets the inner EtherType.
    #[inline]
    pub fn set_ethertype(&mut self, value: EtherType) {
        write_u16(&mut self.buffer.as_mut()[field::ETHERTYPE], value.0);
    }

    /// Mutable bytes after the tag.
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

/// A decoded VLAN tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Priority code point, 0..=7.
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN identifier, 0..=4095.
    pub vid: u16,
    /// EtherType of the encapsulated payload.
    pub ethertype: EtherType,
}

impl Repr {
    /// Decodes a tag.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr> {
        packet.check_len()?;
        Ok(Repr {
            pcp: packet.pcp(),
            dei: packet.dei(),
            vid: packet.vid(),
            ethertype: packet.ethertype(),
        })
    }

    /// Number of bytes [`emit`](Self::emit) writes.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the tag. Fails with [`Error::Malformed`] if `pcp > 7` or
    /// `vid > 4095`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<()> {
        if self.pcp > 7 || self.vid > MAX_VID {
            return Err(Error::Malformed);
        }
        packet.check_len()?;
        let tci = (u16::from(self.pcp) << 13) | if self.dei { 0x1000 } else { 0 } | self.vid;
        packet.set_tci(tci);
        packet.set_ethertype(self.ethertype);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ethernet;
    use crate::testutil::assert_prefixes_rejected;

    /// An 802.1Q-tagged IPv4 frame header: VLAN 100, priority 5, then the
    /// first bytes of the IPv4 header.
    const FRAME: [u8; 20] = [
        0x00, 0x1b, 0x21, 0x3a, 0x4f, 0x10, 0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x81, 0x00, 0xa0,
        0x64, 0x08, 0x00, 0x45, 0x00,
    ];

    #[test]
    fn deconstruct_inside_ethernet() {
        let eth = ethernet::Packet::new_checked(&FRAME[..]).unwrap();
        assert!(eth.ethertype().is_vlan_tag());
        let tag = Packet::new_checked(eth.payload()).unwrap();
        assert_eq!(tag.tci(), 0xa064);
        assert_eq!(tag.pcp(), 5);
        assert!(!tag.dei());
        assert_eq!(tag.vid(), 100);
        assert_eq!(tag.ethertype(), EtherType::IPV4);
        assert_eq!(tag.payload(), &[0x45, 0x00]);
    }

    #[test]
    fn setters_touch_only_their_bits() {
        let mut buf = [0xffu8, 0xff, 0x08, 0x00];
        let mut tag = Packet::new_checked(&mut buf[..]).unwrap();
        tag.set_dei(false);
        assert_eq!(tag.tci(), 0xefff);
        tag.set_pcp(2);
        assert_eq!(tag.tci(), 0x4fff);
        tag.set_vid(0x123);
        assert_eq!(tag.tci(), 0x4123);
        tag.set_dei(true);
        assert_eq!((tag.pcp(), tag.dei(), tag.vid()), (2, true, 0x123));
    }

    #[test]
    fn parse_emit_round_trip() {
        let bytes = &FRAME[14..];
        let repr = Repr::parse(&Packet::new_checked(bytes).unwrap()).unwrap();
        assert_eq!(
            repr,
            Repr {
                pcp: 5,
                dei: false,
                vid: 100,
                ethertype: EtherType::IPV4
            }
        );
        let mut out = [0u8; 4];
        repr.emit(&mut Packet::new_unchecked(&mut out[..])).unwrap();
        assert_eq!(&out[..], &bytes[..4]);
    }

    #[test]
    fn emit_rejects_out_of_range() {
        let mut out = [0u8; 4];
        let bad_vid = Repr {
            pcp: 0,
            dei: false,
            vid: 4096,
            ethertype: EtherType::IPV4,
        };
        assert_eq!(
            bad_vid.emit(&mut Packet::new_unchecked(&mut out[..])),
            Err(Error::Malformed)
        );
        let bad_pcp = Repr {
            pcp: 8,
            dei: false,
            vid: 1,
            ethertype: EtherType::IPV4,
        };
        assert_eq!(
            bad_pcp.emit(&mut Packet::new_unchecked(&mut out[..])),
            Err(Error::Malformed)
        );
        let ok = Repr {
            pcp: 7,
            dei: true,
            vid: 4095,
            ethertype: EtherType::IPV6,
        };
        assert_eq!(
            ok.emit(&mut Packet::new_unchecked(&mut out[..2])),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn truncated_prefixes_rejected() {
        assert_prefixes_rejected(&FRAME[14..18], |b| {
            Repr::parse(&Packet::new_unchecked(b)).map(|_| ())
        });
    }
}

//! VXLAN (RFC 7348): an 8-byte header after UDP (destination port 4789)
//! carrying a 24-bit VXLAN Network Identifier, followed by an Ethernet
//! frame.
//!
//! Byte 0 holds the flags (only I, `0x08`, "VNI valid", is defined and must
//! be set); bytes 1-3 are reserved; bytes 4-6 hold the VNI; byte 7 is
//! reserved. Receivers ignore the reserved bits.

use crate::bytes::{read_u32, write_u32};
use crate::{Error, Result};

mod field {
    use crate::field::Field;

    pub const FLAGS: usize = 0;
    pub const VNI_RSVD: Field = 4..8;
}

/// Length of a VXLAN header.
pub const HEADER_LEN: usize = 8;
/// The I flag: the VNI is valid.
pub const FLAG_I: u8 = 0x08;
/// The IANA-assigned UDP destination port.
pub const UDP_PORT: u16 = 4789;

/// A read/write view of a VXLAN header and the frame after it.
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

    /// [`Error::Truncated`] if the buffer is shorter than the header.
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

    /// The flags byte.
    #[inline]
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    /// The VXLAN Network Identifier (24 bits).
    #[inline]
    pub fn vni(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::VNI_RSVD]) >> 8
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The encapsulated frame.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the flags byte.
    #[inline]
    pub fn set_flags(&mut self, value: u8) {
        self.buffer.as_mut()[field::FLAGS] = value;
    }

    /// Sets the VNI (24 bits) and clears the reserved byte after it.
    #[inline]
    pub fn set_vni(&mut self, value: u32) {
        write_u32(&mut self.buffer.as_mut()[field::VNI_RSVD], value << 8);
    }

    /// Mutable encapsulated frame.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A decoded VXLAN header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// The VXLAN Network Identifier (24 bits).
    pub vni: u32,
}

impl Repr {
    /// Decodes a header: [`Error::Truncated`] if short,
    /// [`Error::Malformed`] if the I flag is clear.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr> {
        packet.check_len()?;
        if packet.flags() & FLAG_I == 0 {
            return Err(Error::Malformed);
        }
        Ok(Repr { vni: packet.vni() })
    }

    /// Number of bytes [`emit`](Self::emit) writes.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header (I flag, reserved bits zero); [`Error::Malformed`]
    /// if the VNI does not fit in 24 bits, [`Error::Truncated`] if the
    /// buffer is short.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<()> {
        if self.vni > 0x00ff_ffff {
            return Err(Error::Malformed);
        }
        let b = packet.buffer.as_mut();
        if b.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        b[..4].copy_from_slice(&[FLAG_I, 0, 0, 0]);
        packet.set_vni(self.vni);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::assert_prefixes_rejected;

    /// VXLAN header for VNI 0xabcdef, then two frame bytes.
    const HDR: [u8; 10] = [0x08, 0, 0, 0, 0xab, 0xcd, 0xef, 0, 0x11, 0x22];

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&HDR[..]).unwrap();
        assert_eq!((p.flags(), p.vni()), (FLAG_I, 0xabcdef));
        assert_eq!(p.payload(), &[0x11, 0x22]);
        assert_eq!(Repr::parse(&p), Ok(Repr { vni: 0xabcdef }));
        assert_prefixes_rejected(&HDR[..8], |b| Packet::new_checked(b).map(|_| ()));
        let mut b = HDR;
        b[0] = 0;
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&b[..])),
            Err(Error::Malformed)
        );
    }

    #[test]
    fn construct() {
        let mut b = [0xffu8; 8];
        Repr { vni: 0xabcdef }
            .emit(&mut Packet::new_unchecked(&mut b[..]))
            .unwrap();
        assert_eq!(b, HDR[..8]);
        assert_eq!(
            Repr { vni: 1 << 24 }.emit(&mut Packet::new_unchecked(&mut b[..])),
            Err(Error::Malformed)
        );
    }
}

//! SCION hop-by-hop (NextHdr 200) and end-to-end (201) extension headers
//! (§1): `NextHdr(1) ExtLen(1) options`, total length `(ExtLen + 1) * 4`.
//! Options are TLVs (Pad1 = type 0, a single byte; PadN = type 1).

use crate::{Error, Result};

/// Pad1 option type.
pub const OPT_PAD1: u8 = 0;
/// PadN option type.
pub const OPT_PADN: u8 = 1;

/// A read/write view of an extension header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }
    /// Wraps a buffer that holds the whole extension header.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Packet { buffer };
        p.check_len()?;
        Ok(p)
    }
    /// [`Error::Truncated`] if the 2 fixed bytes or `(ExtLen + 1) * 4` bytes
    /// are not in the buffer.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        if b.len() < 2 || b.len() < self.header_len() {
            return Err(Error::Truncated);
        }
        Ok(())
    }
    /// NextHdr.
    pub fn next_hdr(&self) -> u8 {
        self.buffer.as_ref()[0]
    }
    /// ExtLen.
    pub fn ext_len(&self) -> u8 {
        self.buffer.as_ref()[1]
    }
    /// Header length in bytes.
    pub fn header_len(&self) -> usize {
        (usize::from(self.ext_len()) + 1) * 4
    }
    /// Option bytes.
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[2..self.header_len()]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets NextHdr.
    pub fn set_next_hdr(&mut self, v: u8) {
        self.buffer.as_mut()[0] = v;
    }
    /// Sets ExtLen.
    pub fn set_ext_len(&mut self, v: u8) {
        self.buffer.as_mut()[1] = v;
    }
    /// Mutable option bytes.
    pub fn options_mut(&mut self) -> &mut [u8] {
        let e = self.header_len();
        &mut self.buffer.as_mut()[2..e]
    }
}

/// A decoded extension header (borrows the option bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr<'a> {
    /// NextHdr.
    pub next_hdr: u8,
    /// Option bytes (length + 2 must be a multiple of 4).
    pub options: &'a [u8],
}

impl<'a> Repr<'a> {
    /// Decodes an extension header; [`Error::Malformed`] if a TLV runs past
    /// the option bytes.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(p: &Packet<&'a T>) -> Result<Repr<'a>> {
        p.check_len()?;
        let b: &'a [u8] = p.buffer.as_ref();
        let opts = &b[2..p.header_len()];
        let mut i = 0;
        while i < opts.len() {
            if opts[i] == OPT_PAD1 {
                i += 1;
                continue;
            }
            let l = *opts.get(i + 1).ok_or(Error::Malformed)?;
            i += 2 + usize::from(l);
        }
        if i != opts.len() {
            return Err(Error::Malformed);
        }
        Ok(Repr {
            next_hdr: p.next_hdr(),
            options: opts,
        })
    }
    /// Bytes [`emit`](Self::emit) writes.
    pub const fn buffer_len(&self) -> usize {
        2 + self.options.len()
    }
    /// Writes the header; [`Error::Malformed`] unless `2 + options` is a
    /// multiple of 4 and at most 1024.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) -> Result<()> {
        let len = self.buffer_len();
        if len % 4 != 0 || len > 1024 {
            return Err(Error::Malformed);
        }
        if p.buffer.as_ref().len() < len {
            return Err(Error::Truncated);
        }
        p.set_next_hdr(self.next_hdr);
        p.set_ext_len((len / 4 - 1) as u8);
        p.options_mut().copy_from_slice(self.options);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::assert_prefixes_rejected;

    /// An HBH header (next UDP) holding a PadN of 4 bytes and a Pad1.
    /// (2 fixed + 2 + 4 + 0 ... = 8 bytes with a final Pad1 not needed.)
    const HBH: [u8; 8] = [17, 1, 1, 4, 0, 0, 0, 0];

    #[test]
    fn round_trip() {
        let p = Packet::new_checked(&HBH[..]).unwrap();
        assert_eq!((p.next_hdr(), p.header_len()), (17, 8));
        let r = Repr::parse(&p).unwrap();
        assert_eq!(r.options, &HBH[2..]);
        let mut out = [0xffu8; 8];
        r.emit(&mut Packet::new_unchecked(&mut out[..])).unwrap();
        assert_eq!(out, HBH);
        assert_prefixes_rejected(&HBH, |b| Repr::parse(&Packet::new_unchecked(b)).map(|_| ()));
        let bad = [17u8, 0, 1, 9];
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&bad[..])),
            Err(Error::Malformed)
        );
        let odd = Repr {
            next_hdr: 17,
            options: &[0],
        };
        assert_eq!(
            odd.emit(&mut Packet::new_unchecked(&mut out[..])),
            Err(Error::Malformed)
        );
    }
}

//! IPFIX messages (RFC 7011), the sets they carry and template records.
//!
//! A message is a 16-byte header (version 10, total length, export time,
//! sequence number, observation domain) followed by sets. Each set starts
//! with a 4-byte [`Set`] header (set ID, length): ID 2 holds template
//! records, ID 3 options template records, IDs from 256 data records laid
//! out by the template of that ID.
//!
//! * [`Packet`] is the message view, [`Set`] the set view; [`Packet::sets`]
//!   walks the sets with length checks.
//! * [`FieldSpec`] is one field specifier (information element, length,
//!   enterprise number when the enterprise bit is set).
//! * [`TemplateRepr`] describes a (options) template record for `emit`;
//!   [`TemplateRecord`] is the parsed view of one in a received set, whose
//!   [`fields`](TemplateRecord::fields) iterate without allocating.
//! * [`read_uint`] decodes an unsigned integer in full or reduced-size
//!   encoding; [`read_varlen`] the length prefix of a variable-length field.

use crate::bytes::{read_u16, read_u32, write_u16, write_u32};
use crate::{Error, Result};

mod field {
    use crate::field::Field;

    pub const VERSION: Field = 0..2;
    pub const LENGTH: Field = 2..4;
    pub const EXPORT_TIME: Field = 4..8;
    pub const SEQUENCE: Field = 8..12;
    pub const DOMAIN: Field = 12..16;

    pub const SET_ID: Field = 0..2;
    pub const SET_LENGTH: Field = 2..4;
}

/// Length of a message header.
pub const HEADER_LEN: usize = field::DOMAIN.end;
/// Length of a set header.
pub const SET_HEADER_LEN: usize = field::SET_LENGTH.end;
/// The version number of IPFIX.
pub const VERSION: u16 = 10;
/// Set ID of a template set.
pub const TEMPLATE_SET_ID: u16 = 2;
/// Set ID of an options template set.
pub const OPTIONS_TEMPLATE_SET_ID: u16 = 3;
/// The smallest template (and data set) ID.
pub const MIN_TEMPLATE_ID: u16 = 256;
/// Field length that marks a variable-length field.
pub const VARIABLE_LENGTH: u16 = 65535;
/// The enterprise bit of a field specifier's element ID.
pub const ENTERPRISE_BIT: u16 = 0x8000;
/// Private enterprise number of the RFC 5103 reverse information elements.
pub const REVERSE_PEN: u32 = 29305;

/// A read/write view of an IPFIX message.
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
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// [`Error::Truncated`] if the header or the length it claims is not in
    /// the buffer; [`Error::Malformed`] if the length is below the header.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let claimed = usize::from(self.len());
        if claimed < HEADER_LEN {
            Err(Error::Malformed)
        } else if claimed > len {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Version number (10 for IPFIX).
    pub fn version(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::VERSION])
    }

    /// Total length of the message, header included.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::LENGTH])
    }

    /// Export time, seconds since the UNIX epoch.
    pub fn export_time(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::EXPORT_TIME])
    }

    /// Sequence number: data records sent before this message in this
    /// observation domain, modulo 2^32.
    pub fn sequence(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::SEQUENCE])
    }

    /// Observation domain ID.
    pub fn domain_id(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::DOMAIN])
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The sets: the bytes after the header up to the length field.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }

    /// Iterate over the sets of a checked message.
    pub fn sets(&self) -> SetIter<'a> {
        SetIter {
            rest: self.payload(),
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the version number.
    pub fn set_version(&mut self, v: u16) {
        write_u16(&mut self.buffer.as_mut()[field::VERSION], v);
    }
    /// Sets the total length.
    pub fn set_len(&mut self, v: u16) {
        write_u16(&mut self.buffer.as_mut()[field::LENGTH], v);
    }
    /// Sets the export time.
    pub fn set_export_time(&mut self, v: u32) {
        write_u32(&mut self.buffer.as_mut()[field::EXPORT_TIME], v);
    }
    /// Sets the sequence number.
    pub fn set_sequence(&mut self, v: u32) {
        write_u32(&mut self.buffer.as_mut()[field::SEQUENCE], v);
    }
    /// Sets the observation domain ID.
    pub fn set_domain_id(&mut self, v: u32) {
        write_u32(&mut self.buffer.as_mut()[field::DOMAIN], v);
    }
}

/// The decoded message header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// Total message length.
    pub length: u16,
    /// Export time (seconds since the epoch).
    pub export_time: u32,
    /// Sequence number.
    pub sequence: u32,
    /// Observation domain ID.
    pub domain_id: u32,
}

impl Repr {
    /// Parse a checked message header; [`Error::Unsupported`] unless the
    /// version is 10.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        if p.version() != VERSION {
            return Err(Error::Unsupported);
        }
        Ok(Repr {
            length: p.len(),
            export_time: p.export_time(),
            sequence: p.sequence(),
            domain_id: p.domain_id(),
        })
    }

    /// Bytes `emit` writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write the header (version 10).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) -> Result<()> {
        if p.buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        p.set_version(VERSION);
        p.set_len(self.length);
        p.set_export_time(self.export_time);
        p.set_sequence(self.sequence);
        p.set_domain_id(self.domain_id);
        Ok(())
    }
}

/// A read/write view of a set (template, options template or data set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Set<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Set<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Set<T> {
        Set { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Set<T>> {
        let s = Self::new_unchecked(buffer);
        s.check_len()?;
        Ok(s)
    }

    /// [`Error::Truncated`] if the set header or the length it claims is
    /// not in the buffer; [`Error::Malformed`] if the length is below 4.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < SET_HEADER_LEN {
            return Err(Error::Truncated);
        }
        let claimed = usize::from(self.len());
        if claimed < SET_HEADER_LEN {
            Err(Error::Malformed)
        } else if claimed > len {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Set ID.
    pub fn set_id(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::SET_ID])
    }

    /// Set length, header included.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::SET_LENGTH])
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Set<&'a T> {
    /// The records (and any padding) after the set header.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[SET_HEADER_LEN..usize::from(self.len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Set<T> {
    /// Sets the set ID.
    pub fn set_set_id(&mut self, v: u16) {
        write_u16(&mut self.buffer.as_mut()[field::SET_ID], v);
    }
    /// Sets the set length.
    pub fn set_len(&mut self, v: u16) {
        write_u16(&mut self.buffer.as_mut()[field::SET_LENGTH], v);
    }
}

/// Iterator over the sets of a message; yields one error and stops on a
/// set whose length does not fit.
#[derive(Debug, Clone)]
pub struct SetIter<'a> {
    rest: &'a [u8],
}

impl<'a> SetIter<'a> {
    /// Iterate over the sets in `bytes` (a message's or packet's payload).
    pub fn new(bytes: &'a [u8]) -> SetIter<'a> {
        SetIter { rest: bytes }
    }
}

impl<'a> Iterator for SetIter<'a> {
    type Item = Result<Set<&'a [u8]>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        match Set::new_checked(self.rest) {
            Ok(s) => {
                let n = usize::from(s.len());
                let (head, tail) = self.rest.split_at(n);
                self.rest = tail;
                Some(Ok(Set::new_unchecked(head)))
            }
            Err(e) => {
                self.rest = &[];
                Some(Err(e))
            }
        }
    }
}

/// A field specifier of a template record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FieldSpec {
    /// Information element ID (without the enterprise bit).
    pub id: u16,
    /// Field length in bytes, or [`VARIABLE_LENGTH`].
    pub len: u16,
    /// Private enterprise number; 0 for IANA elements.
    pub enterprise: u32,
}

impl FieldSpec {
    /// An IANA information element.
    pub const fn iana(id: u16, len: u16) -> FieldSpec {
        FieldSpec {
            id,
            len,
            enterprise: 0,
        }
    }

    /// An enterprise-specific information element.
    pub const fn enterprise(id: u16, len: u16, enterprise: u32) -> FieldSpec {
        FieldSpec {
            id,
            len,
            enterprise,
        }
    }

    /// Bytes the specifier takes: 4, or 8 with an enterprise number.
    pub const fn buffer_len(&self) -> usize {
        if self.enterprise != 0 {
            8
        } else {
            4
        }
    }

    /// Parse one specifier from the front of `b`.
    pub fn parse(b: &[u8]) -> Result<FieldSpec> {
        if b.len() < 4 {
            return Err(Error::Truncated);
        }
        let raw = read_u16(&b[0..2]);
        let len = read_u16(&b[2..4]);
        if raw & ENTERPRISE_BIT == 0 {
            return Ok(FieldSpec::iana(raw, len));
        }
        if b.len() < 8 {
            return Err(Error::Truncated);
        }
        let pen = read_u32(&b[4..8]);
        if pen == 0 {
            return Err(Error::Malformed);
        }
        Ok(FieldSpec::enterprise(raw & !ENTERPRISE_BIT, len, pen))
    }

    /// Write the specifier to the front of `b`; returns the bytes written.
    pub fn emit(&self, b: &mut [u8]) -> Result<usize> {
        let n = self.buffer_len();
        if b.len() < n {
            return Err(Error::Truncated);
        }
        if self.id & ENTERPRISE_BIT != 0 {
            return Err(Error::Malformed);
        }
        if self.enterprise != 0 {
            write_u16(&mut b[0..2], self.id | ENTERPRISE_BIT);
            write_u32(&mut b[4..8], self.enterprise);
        } else {
            write_u16(&mut b[0..2], self.id);
        }
        write_u16(&mut b[2..4], self.len);
        Ok(n)
    }
}

/// A template or options template record to emit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TemplateRepr<'a> {
    /// Template ID (at least 256).
    pub id: u16,
    /// `Some(n)` for an options template whose first `n` fields are scope
    /// fields; `None` for a plain template.
    pub scope_count: Option<u16>,
    /// The field specifiers.
    pub fields: &'a [FieldSpec],
}

impl TemplateRepr<'_> {
    /// Bytes `emit` writes.
    pub fn buffer_len(&self) -> usize {
        let head = if self.scope_count.is_some() { 6 } else { 4 };
        head + self.fields.iter().map(FieldSpec::buffer_len).sum::<usize>()
    }

    /// Length of a data record in this template; `None` if a field is
    /// variable-length.
    pub fn record_len(&self) -> Option<usize> {
        self.fields
            .iter()
            .map(|f| (f.len != VARIABLE_LENGTH).then_some(usize::from(f.len)))
            .sum()
    }

    /// Write the record; returns the bytes written. [`Error::Malformed`]
    /// for an ID below 256, a zero or too large scope count.
    pub fn emit(&self, b: &mut [u8]) -> Result<usize> {
        let n = self.buffer_len();
        if self.id < MIN_TEMPLATE_ID || self.fields.len() > usize::from(u16::MAX) {
            return Err(Error::Malformed);
        }
        if let Some(s) = self.scope_count {
            if s == 0 || usize::from(s) > self.fields.len() {
                return Err(Error::Malformed);
            }
        }
        if b.len() < n {
            return Err(Error::Truncated);
        }
        write_u16(&mut b[0..2], self.id);
        write_u16(&mut b[2..4], self.fields.len() as u16);
        let mut at = 4;
        if let Some(s) = self.scope_count {
            write_u16(&mut b[4..6], s);
            at = 6;
        }
        for f in self.fields {
            at += f.emit(&mut b[at..])?;
        }
        Ok(at)
    }
}

/// A template or options template record as received (borrowed bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TemplateRecord<'a> {
    id: u16,
    field_count: u16,
    scope_count: Option<u16>,
    specs: &'a [u8],
}

impl<'a> TemplateRecord<'a> {
    /// Parse the record at the front of `b` (`options`: from an options
    /// template set). The specifiers are length-checked here.
    pub fn parse(b: &'a [u8], options: bool) -> Result<TemplateRecord<'a>> {
        let head = if options { 6 } else { 4 };
        if b.len() < head {
            return Err(Error::Truncated);
        }
        let id = read_u16(&b[0..2]);
        let field_count = read_u16(&b[2..4]);
        let scope_count = options.then(|| read_u16(&b[4..6]));
        if id < MIN_TEMPLATE_ID {
            return Err(Error::Malformed);
        }
        if let Some(s) = scope_count {
            if s == 0 || s > field_count {
                return Err(Error::Malformed);
            }
        }
        let mut at = head;
        for _ in 0..field_count {
            at += FieldSpec::parse(&b[at..])?.buffer_len();
        }
        Ok(TemplateRecord {
            id,
            field_count,
            scope_count,
            specs: &b[head..at],
        })
    }

    /// Template ID.
    pub fn id(&self) -> u16 {
        self.id
    }

    /// Number of fields.
    pub fn field_count(&self) -> u16 {
        self.field_count
    }

    /// Number of scope fields (options templates).
    pub fn scope_count(&self) -> Option<u16> {
        self.scope_count
    }

    /// Bytes the record took.
    pub fn buffer_len(&self) -> usize {
        self.specs.len() + if self.scope_count.is_some() { 6 } else { 4 }
    }

    /// The field specifiers, in order.
    pub fn fields(&self) -> impl Iterator<Item = FieldSpec> + 'a {
        let mut rest = self.specs;
        std::iter::from_fn(move || {
            let f = FieldSpec::parse(rest).ok()?;
            rest = &rest[f.buffer_len()..];
            Some(f)
        })
    }

    /// Length of a data record; `None` if a field is variable-length.
    pub fn record_len(&self) -> Option<usize> {
        self.fields()
            .map(|f| (f.len != VARIABLE_LENGTH).then_some(usize::from(f.len)))
            .sum()
    }
}

/// Decode an unsigned integer of 1 to 8 bytes (full or reduced-size
/// encoding); [`Error::Malformed`] for other lengths.
pub fn read_uint(b: &[u8]) -> Result<u64> {
    if b.is_empty() || b.len() > 8 {
        return Err(Error::Malformed);
    }
    Ok(b.iter().fold(0u64, |a, &x| a << 8 | u64::from(x)))
}

/// The length prefix of a variable-length field at the front of `b`:
/// `(value length, prefix length)`, checked against `b`.
pub fn read_varlen(b: &[u8]) -> Result<(usize, usize)> {
    let first = *b.first().ok_or(Error::Truncated)?;
    let (len, head) = if first < 255 {
        (usize::from(first), 1)
    } else {
        if b.len() < 3 {
            return Err(Error::Truncated);
        }
        (usize::from(read_u16(&b[1..3])), 3)
    };
    if b.len() < head + len {
        return Err(Error::Truncated);
    }
    Ok((len, head))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::assert_prefixes_rejected;

    /// RFC 7011 Appendix A.2: a template set (template 256 with
    /// sourceIPv4Address, destinationIPv4Address, ipNextHopIPv4Address,
    /// packetDeltaCount, octetDeltaCount, all 4 bytes) and a data set with
    /// three records, in one message.
    fn rfc7011_a2() -> Vec<u8> {
        let mut m = vec![
            0x00, 0x0a, 0x00, 0x6c, // version 10, length 108
            0x3c, 0x00, 0x00, 0x00, // export time
            0x00, 0x00, 0x00, 0x00, // sequence 0
            0x00, 0x00, 0x30, 0x39, // domain 12345
            0x00, 0x02, 0x00, 0x1c, // template set, 28 bytes
            0x01, 0x00, 0x00, 0x05, // template 256, 5 fields
            0x00, 0x08, 0x00, 0x04, // sourceIPv4Address
            0x00, 0x0c, 0x00, 0x04, // destinationIPv4Address
            0x00, 0x0f, 0x00, 0x04, // ipNextHopIPv4Address
            0x00, 0x02, 0x00, 0x04, // packetDeltaCount
            0x00, 0x01, 0x00, 0x04, // octetDeltaCount
            0x01, 0x00, 0x00, 0x40, // data set 256, 64 bytes
        ];
        for (s, d, n, p, o) in [
            (12u8, 254u8, 1u8, 5009u32, 5_344_385u32),
            (27, 23, 2, 748, 388_934),
            (56, 65, 3, 5, 6534),
        ] {
            m.extend_from_slice(&[192, 0, 2, s, 192, 0, 2, d, 192, 0, 2, n]);
            m.extend_from_slice(&p.to_be_bytes());
            m.extend_from_slice(&o.to_be_bytes());
        }
        m
    }

    #[test]
    fn parses_rfc7011_example() {
        let m = rfc7011_a2();
        assert_eq!(m.len(), 108);
        let p = Packet::new_checked(&m[..]).unwrap();
        let r = Repr::parse(&p).unwrap();
        assert_eq!((r.length, r.sequence, r.domain_id), (108, 0, 12345));
        let sets: Vec<_> = p.sets().collect::<Result<_>>().unwrap();
        assert_eq!(sets.len(), 2);
        assert_eq!(sets[0].set_id(), TEMPLATE_SET_ID);
        let t = TemplateRecord::parse(sets[0].payload(), false).unwrap();
        assert_eq!((t.id(), t.field_count(), t.buffer_len()), (256, 5, 24));
        let ids: Vec<u16> = t.fields().map(|f| f.id).collect();
        assert_eq!(ids, [8, 12, 15, 2, 1]);
        assert_eq!(t.record_len(), Some(20));
        assert_eq!(sets[1].set_id(), 256);
        let recs: Vec<_> = sets[1].payload().chunks(20).collect();
        assert_eq!(recs.len(), 3);
        assert_eq!(read_uint(&recs[0][12..16]), Ok(5009));
        assert_eq!(read_uint(&recs[2][16..20]), Ok(6534));
    }

    #[test]
    fn emits_rfc7011_example_bytes() {
        let m = rfc7011_a2();
        let fields = [
            FieldSpec::iana(8, 4),
            FieldSpec::iana(12, 4),
            FieldSpec::iana(15, 4),
            FieldSpec::iana(2, 4),
            FieldSpec::iana(1, 4),
        ];
        let t = TemplateRepr {
            id: 256,
            scope_count: None,
            fields: &fields,
        };
        let mut buf = [0u8; 44];
        Repr {
            length: 108,
            export_time: 0x3c00_0000,
            sequence: 0,
            domain_id: 12345,
        }
        .emit(&mut Packet::new_unchecked(&mut buf[..]))
        .unwrap();
        let mut s = Set::new_unchecked(&mut buf[16..20]);
        s.set_set_id(TEMPLATE_SET_ID);
        s.set_len(28);
        assert_eq!(t.emit(&mut buf[20..]), Ok(24));
        assert_eq!(t.record_len(), Some(20));
        assert_eq!(&buf[..], &m[..44]);
    }

    #[test]
    fn enterprise_and_options_templates_round_trip() {
        let fields = [
            FieldSpec::iana(346, 4),
            FieldSpec::iana(303, 2),
            FieldSpec::enterprise(1, 8, 32473),
            FieldSpec::enterprise(1, 8, REVERSE_PEN),
            FieldSpec::iana(341, VARIABLE_LENGTH),
        ];
        let t = TemplateRepr {
            id: 300,
            scope_count: Some(2),
            fields: &fields,
        };
        let mut b = vec![0u8; t.buffer_len()];
        assert_eq!(t.emit(&mut b), Ok(34));
        assert_eq!(&b[14..22], &[0x80, 0x01, 0x00, 0x08, 0, 0, 0x7e, 0xd9]);
        let r = TemplateRecord::parse(&b, true).unwrap();
        assert_eq!(r.scope_count(), Some(2));
        assert_eq!(r.fields().collect::<Vec<_>>(), fields);
        assert_eq!(r.record_len(), None);
        assert_prefixes_rejected(&b, |x| TemplateRecord::parse(x, true).map(|_| ()));
        let bad = TemplateRepr {
            scope_count: Some(0),
            ..t
        };
        assert_eq!(bad.emit(&mut b), Err(Error::Malformed));
    }

    #[test]
    fn rejects_bad_lengths_without_panicking() {
        let m = rfc7011_a2();
        assert_prefixes_rejected(&m, |x| Packet::new_checked(x).map(|_| ()));
        let mut bad = m.clone();
        bad[3] = 8; // length below the header
        assert_eq!(Packet::new_checked(&bad[..]), Err(Error::Malformed));
        let mut bad = m.clone();
        bad[19] = 200; // template set longer than the message
        let p = Packet::new_checked(&bad[..]).unwrap();
        let sets: Vec<_> = p.sets().collect();
        assert_eq!(sets, vec![Err(Error::Truncated)]);
        assert_eq!(read_varlen(&[3, b'a', b'b']), Err(Error::Truncated));
        assert_eq!(read_varlen(&[255, 0, 1, b'x']), Ok((1, 3)));
        assert_eq!(read_uint(&[]), Err(Error::Malformed));
        assert_eq!(
            FieldSpec::parse(&[0x80, 1, 0, 4, 0, 0, 0, 0]),
            Err(Error::Malformed)
        );
    }
}

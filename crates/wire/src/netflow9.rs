//! NetFlow version 9 export packets (RFC 3954).
//!
//! A packet is a 20-byte header (version 9, record count, sysUpTime in ms,
//! UNIX seconds, sequence number counting export packets, source ID)
//! followed by FlowSets, which have the same 4-byte header as IPFIX sets
//! ([`FlowSet`]): ID 0 holds template records, ID 1 options template
//! records, IDs from 256 data records. Field types have no enterprise bit
//! and no variable length.
//!
//! * [`Packet`] is the header view; [`Packet::flowsets`] walks the
//!   FlowSets.
//! * [`TemplateRepr`] / [`TemplateRecord`] are a template record to emit /
//!   as received; [`OptionsTemplateRepr`] / [`OptionsTemplateRecord`] the
//!   same for options templates, whose scope and option lengths are in
//!   bytes.

use crate::bytes::{read_u16, read_u32, write_u16, write_u32};
use crate::ipfix::SetIter;
use crate::{Error, Result};

/// A FlowSet: the same layout as an IPFIX set.
pub use crate::ipfix::Set as FlowSet;

mod field {
    use crate::field::Field;

    pub const VERSION: Field = 0..2;
    pub const COUNT: Field = 2..4;
    pub const SYS_UPTIME: Field = 4..8;
    pub const UNIX_SECS: Field = 8..12;
    pub const SEQUENCE: Field = 12..16;
    pub const SOURCE_ID: Field = 16..20;
}

/// Length of the packet header.
pub const HEADER_LEN: usize = field::SOURCE_ID.end;
/// The version number.
pub const VERSION: u16 = 9;
/// FlowSet ID of a template FlowSet.
pub const TEMPLATE_FLOWSET_ID: u16 = 0;
/// FlowSet ID of an options template FlowSet.
pub const OPTIONS_TEMPLATE_FLOWSET_ID: u16 = 1;
/// The smallest template (and data FlowSet) ID.
pub const MIN_TEMPLATE_ID: u16 = 256;

/// A read/write view of a NetFlow v9 packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// [`Error::Truncated`] if the header is not in the buffer (v9 has no
    /// length field: the packet is the whole datagram).
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Version number (9).
    pub fn version(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::VERSION])
    }
    /// Records of any kind (template, options, data) in the packet.
    pub fn count(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::COUNT])
    }
    /// Milliseconds since the exporting device booted.
    pub fn sys_uptime(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::SYS_UPTIME])
    }
    /// Export time, seconds since the UNIX epoch.
    pub fn unix_secs(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::UNIX_SECS])
    }
    /// Sequence number: export packets sent before this one.
    pub fn sequence(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::SEQUENCE])
    }
    /// Source ID (observation domain).
    pub fn source_id(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::SOURCE_ID])
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The FlowSets after the header.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }

    /// Iterate over the FlowSets.
    pub fn flowsets(&self) -> SetIter<'a> {
        SetIter::new(self.payload())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the version.
    pub fn set_version(&mut self, v: u16) {
        write_u16(&mut self.buffer.as_mut()[field::VERSION], v);
    }
    /// Sets the record count.
    pub fn set_count(&mut self, v: u16) {
        write_u16(&mut self.buffer.as_mut()[field::COUNT], v);
    }
    /// Sets sysUpTime.
    pub fn set_sys_uptime(&mut self, v: u32) {
        write_u32(&mut self.buffer.as_mut()[field::SYS_UPTIME], v);
    }
    /// Sets the UNIX seconds.
    pub fn set_unix_secs(&mut self, v: u32) {
        write_u32(&mut self.buffer.as_mut()[field::UNIX_SECS], v);
    }
    /// Sets the sequence number.
    pub fn set_sequence(&mut self, v: u32) {
        write_u32(&mut self.buffer.as_mut()[field::SEQUENCE], v);
    }
    /// Sets the source ID.
    pub fn set_source_id(&mut self, v: u32) {
        write_u32(&mut self.buffer.as_mut()[field::SOURCE_ID], v);
    }
}

/// The decoded packet header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// Records in the packet.
    pub count: u16,
    /// sysUpTime, ms.
    pub sys_uptime: u32,
    /// UNIX seconds.
    pub unix_secs: u32,
    /// Sequence number.
    pub sequence: u32,
    /// Source ID.
    pub source_id: u32,
}

impl Repr {
    /// Parse a header; [`Error::Unsupported`] unless the version is 9.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        if p.version() != VERSION {
            return Err(Error::Unsupported);
        }
        Ok(Repr {
            count: p.count(),
            sys_uptime: p.sys_uptime(),
            unix_secs: p.unix_secs(),
            sequence: p.sequence(),
            source_id: p.source_id(),
        })
    }

    /// Bytes `emit` writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write the header (version 9).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) -> Result<()> {
        p.check_len()?;
        p.set_version(VERSION);
        p.set_count(self.count);
        p.set_sys_uptime(self.sys_uptime);
        p.set_unix_secs(self.unix_secs);
        p.set_sequence(self.sequence);
        p.set_source_id(self.source_id);
        Ok(())
    }
}

/// A field of a template: (type, length in bytes).
pub type Field = (u16, u16);

fn emit_fields(b: &mut [u8], fields: &[Field]) {
    for (k, &(t, l)) in fields.iter().enumerate() {
        write_u16(&mut b[4 * k..4 * k + 2], t);
        write_u16(&mut b[4 * k + 2..4 * k + 4], l);
    }
}

fn fields_of(b: &[u8]) -> impl Iterator<Item = Field> + '_ {
    b.chunks_exact(4)
        .map(|c| (read_u16(&c[0..2]), read_u16(&c[2..4])))
}

/// A template record to emit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TemplateRepr<'a> {
    /// Template ID (at least 256).
    pub id: u16,
    /// The fields.
    pub fields: &'a [Field],
}

impl TemplateRepr<'_> {
    /// Bytes `emit` writes.
    pub fn buffer_len(&self) -> usize {
        4 + 4 * self.fields.len()
    }

    /// Length of a data record.
    pub fn record_len(&self) -> usize {
        self.fields.iter().map(|f| usize::from(f.1)).sum()
    }

    /// Write the record; returns the bytes written.
    pub fn emit(&self, b: &mut [u8]) -> Result<usize> {
        if self.id < MIN_TEMPLATE_ID || self.fields.len() > 16383 {
            return Err(Error::Malformed);
        }
        let n = self.buffer_len();
        if b.len() < n {
            return Err(Error::Truncated);
        }
        write_u16(&mut b[0..2], self.id);
        write_u16(&mut b[2..4], self.fields.len() as u16);
        emit_fields(&mut b[4..n], self.fields);
        Ok(n)
    }
}

/// A template record as received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TemplateRecord<'a> {
    id: u16,
    fields: &'a [u8],
}

impl<'a> TemplateRecord<'a> {
    /// Parse the record at the front of `b`.
    pub fn parse(b: &'a [u8]) -> Result<TemplateRecord<'a>> {
        if b.len() < 4 {
            return Err(Error::Truncated);
        }
        let id = read_u16(&b[0..2]);
        if id < MIN_TEMPLATE_ID {
            return Err(Error::Malformed);
        }
        let n = 4 + 4 * usize::from(read_u16(&b[2..4]));
        if b.len() < n {
            return Err(Error::Truncated);
        }
        Ok(TemplateRecord {
            id,
            fields: &b[4..n],
        })
    }
    /// Template ID.
    pub fn id(&self) -> u16 {
        self.id
    }
    /// Bytes the record took.
    pub fn buffer_len(&self) -> usize {
        4 + self.fields.len()
    }
    /// The fields, in order.
    pub fn fields(&self) -> impl Iterator<Item = Field> + 'a {
        fields_of(self.fields)
    }
    /// Length of a data record.
    pub fn record_len(&self) -> usize {
        self.fields().map(|f| usize::from(f.1)).sum()
    }
}

/// An options template record to emit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionsTemplateRepr<'a> {
    /// Template ID (at least 256).
    pub id: u16,
    /// Scope fields (type 1 system, 2 interface, 3 line card, 4 cache,
    /// 5 template).
    pub scopes: &'a [Field],
    /// Option fields.
    pub options: &'a [Field],
}

impl OptionsTemplateRepr<'_> {
    /// Bytes `emit` writes.
    pub fn buffer_len(&self) -> usize {
        6 + 4 * (self.scopes.len() + self.options.len())
    }

    /// Length of a data record.
    pub fn record_len(&self) -> usize {
        self.scopes
            .iter()
            .chain(self.options)
            .map(|f| usize::from(f.1))
            .sum()
    }

    /// Write the record; returns the bytes written.
    pub fn emit(&self, b: &mut [u8]) -> Result<usize> {
        if self.id < MIN_TEMPLATE_ID || self.scopes.is_empty() || self.buffer_len() > 65535 {
            return Err(Error::Malformed);
        }
        let n = self.buffer_len();
        if b.len() < n {
            return Err(Error::Truncated);
        }
        let s = 4 * self.scopes.len();
        write_u16(&mut b[0..2], self.id);
        write_u16(&mut b[2..4], s as u16);
        write_u16(&mut b[4..6], (4 * self.options.len()) as u16);
        emit_fields(&mut b[6..6 + s], self.scopes);
        emit_fields(&mut b[6 + s..n], self.options);
        Ok(n)
    }
}

/// An options template record as received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionsTemplateRecord<'a> {
    id: u16,
    scopes: &'a [u8],
    options: &'a [u8],
}

impl<'a> OptionsTemplateRecord<'a> {
    /// Parse the record at the front of `b`; [`Error::Malformed`] if a
    /// length is not a multiple of 4.
    pub fn parse(b: &'a [u8]) -> Result<OptionsTemplateRecord<'a>> {
        if b.len() < 6 {
            return Err(Error::Truncated);
        }
        let id = read_u16(&b[0..2]);
        let s = usize::from(read_u16(&b[2..4]));
        let o = usize::from(read_u16(&b[4..6]));
        if id < MIN_TEMPLATE_ID || s % 4 != 0 || o % 4 != 0 {
            return Err(Error::Malformed);
        }
        if b.len() < 6 + s + o {
            return Err(Error::Truncated);
        }
        Ok(OptionsTemplateRecord {
            id,
            scopes: &b[6..6 + s],
            options: &b[6 + s..6 + s + o],
        })
    }
    /// Template ID.
    pub fn id(&self) -> u16 {
        self.id
    }
    /// Bytes the record took.
    pub fn buffer_len(&self) -> usize {
        6 + self.scopes.len() + self.options.len()
    }
    /// The scope fields.
    pub fn scopes(&self) -> impl Iterator<Item = Field> + 'a {
        fields_of(self.scopes)
    }
    /// The option fields.
    pub fn options(&self) -> impl Iterator<Item = Field> + 'a {
        fields_of(self.options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::assert_prefixes_rejected;

    /// RFC 3954 section 5.2's template FlowSet example layout with the
    /// fields of its section 8 example (IPV4_SRC_ADDR, IPV4_DST_ADDR,
    /// IPV4_NEXT_HOP, PKTS_32, BYTES_32) and one data record.
    fn packet() -> Vec<u8> {
        vec![
            0x00, 0x09, 0x00, 0x02, // version 9, 2 records
            0x00, 0x00, 0x27, 0x10, // sysUpTime 10,000 ms
            0x5f, 0x5e, 0x10, 0x00, // unix secs
            0x00, 0x00, 0x00, 0x07, // sequence 7
            0x00, 0x00, 0x00, 0x01, // source ID 1
            0x00, 0x00, 0x00, 0x1c, // template FlowSet, 28 bytes
            0x01, 0x00, 0x00, 0x05, // template 256, 5 fields
            0x00, 0x08, 0x00, 0x04, // IPV4_SRC_ADDR
            0x00, 0x0c, 0x00, 0x04, // IPV4_DST_ADDR
            0x00, 0x0f, 0x00, 0x04, // IPV4_NEXT_HOP
            0x00, 0x02, 0x00, 0x04, // IN_PKTS
            0x00, 0x01, 0x00, 0x04, // IN_BYTES
            0x01, 0x00, 0x00, 0x18, // data FlowSet 256, 24 bytes
            198, 168, 1, 12, 10, 5, 12, 254, 192, 168, 1, 1, // addresses
            0x00, 0x00, 0x13, 0x91, 0x00, 0x51, 0x8d, 0x81, // 5009, 5,344,641
        ]
    }

    #[test]
    fn parses_and_emits_the_example() {
        let m = packet();
        let p = Packet::new_checked(&m[..]).unwrap();
        let r = Repr::parse(&p).unwrap();
        assert_eq!(
            (r.count, r.sys_uptime, r.sequence, r.source_id),
            (2, 10_000, 7, 1)
        );
        let sets: Vec<_> = p.flowsets().collect::<Result<_>>().unwrap();
        assert_eq!(sets.len(), 2);
        assert_eq!(sets[0].set_id(), TEMPLATE_FLOWSET_ID);
        let t = TemplateRecord::parse(sets[0].payload()).unwrap();
        assert_eq!(t.fields().collect::<Vec<_>>()[4], (1, 4));
        assert_eq!(t.record_len(), 20);
        assert_eq!(sets[1].payload().len(), 20);

        let fields: Vec<Field> = t.fields().collect();
        let mut out = [0u8; 48];
        r.emit(&mut Packet::new_unchecked(&mut out[..])).unwrap();
        let mut s = FlowSet::new_unchecked(&mut out[20..24]);
        s.set_set_id(0);
        s.set_len(28);
        let tr = TemplateRepr {
            id: 256,
            fields: &fields,
        };
        assert_eq!(tr.emit(&mut out[24..]), Ok(24));
        assert_eq!(&out[..], &m[..48]);
    }

    #[test]
    fn options_template_round_trip() {
        let o = OptionsTemplateRepr {
            id: 257,
            scopes: &[(1, 4)],
            options: &[(41, 4), (42, 4)],
        };
        let mut b = vec![0u8; o.buffer_len()];
        assert_eq!(o.emit(&mut b), Ok(18));
        assert_eq!(&b[..6], &[1, 1, 0, 4, 0, 8]);
        let r = OptionsTemplateRecord::parse(&b).unwrap();
        assert_eq!(r.scopes().collect::<Vec<_>>(), [(1, 4)]);
        assert_eq!(r.options().collect::<Vec<_>>(), [(41, 4), (42, 4)]);
        assert_eq!(o.record_len(), 12);
        assert_prefixes_rejected(&b, |x| OptionsTemplateRecord::parse(x).map(|_| ()));
        b[3] = 3;
        assert_eq!(OptionsTemplateRecord::parse(&b), Err(Error::Malformed));
    }

    #[test]
    fn truncated_input_never_panics() {
        let m = packet();
        assert_prefixes_rejected(&m[..20], |x| Packet::new_checked(x).map(|_| ()));
        for n in 20..m.len() {
            let p = Packet::new_checked(&m[..n]).unwrap();
            for s in p.flowsets().flatten() {
                let _ = TemplateRecord::parse(s.payload());
            }
        }
    }
}

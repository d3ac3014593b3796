//! The SCION common header (12 bytes, §2) and address header (§3).
//!
//! [`Packet`] views a buffer that starts at the SCION common header;
//! `check_len` guarantees the common header, the address header and the
//! `HdrLen * 4` bytes of SCION header are present. The path bytes
//! ([`Packet::path`]) are the header bytes after the address header; their
//! layout depends on [`Packet::path_type`] (see [`super::path`]).

use crate::bytes::{read_u16, read_u32, write_u16, write_u32};
use crate::{Error, Result};
use core::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

mod field {
    use crate::field::Field;

    pub const VER_TC_FLOW: Field = 0..4;
    pub const NEXT_HDR: usize = 4;
    pub const HDR_LEN: usize = 5;
    pub const PAYLOAD_LEN: Field = 6..8;
    pub const PATH_TYPE: usize = 8;
    pub const ADDR_TYPES: usize = 9;
    pub const RSV: Field = 10..12;
    pub const DST_IA: Field = 12..20;
    pub const SRC_IA: Field = 20..28;
    pub const DST_HOST: usize = 28;
}

/// Length of the common header.
pub const COMMON_LEN: usize = 12;
/// Offset of the destination ISD-AS (the SCMP pointer for PP 34).
pub const DST_IA_OFFSET: usize = field::DST_IA.start;
/// Offset of the source ISD-AS (the SCMP pointer for PP 33).
pub const SRC_IA_OFFSET: usize = field::SRC_IA.start;
/// Largest SCION header (`HdrLen` 255).
pub const MAX_HEADER_LEN: usize = 1020;

/// An ISD-AS number: ISD in the top 16 bits, AS in the low 48.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Ia(pub u64);

impl Ia {
    /// ISD number.
    pub const fn isd(self) -> u16 {
        (self.0 >> 48) as u16
    }
    /// AS number (48 bits).
    pub const fn asn(self) -> u64 {
        self.0 & 0xffff_ffff_ffff
    }
    /// Parses `ISD-AS` (`1-ff00:0:110` or `1-64512`).
    pub fn parse(s: &str) -> Option<Ia> {
        let (isd, asn) = s.split_once('-')?;
        let isd: u16 = isd.parse().ok()?;
        let asn = if asn.contains(':') {
            let groups: Vec<&str> = asn.split(':').collect();
            if groups.len() != 3 {
                return None;
            }
            let mut v = 0u64;
            for g in groups {
                if g.is_empty() || g.len() > 4 {
                    return None;
                }
                v = v << 16 | u64::from(u16::from_str_radix(g, 16).ok()?);
            }
            v
        } else {
            let v: u64 = asn.parse().ok()?;
            if v > u64::from(u32::MAX) {
                return None;
            }
            v
        };
        Some(Ia(u64::from(isd) << 48 | asn))
    }
}

impl fmt::Display for Ia {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = self.asn();
        if a <= u64::from(u32::MAX) {
            write!(f, "{}-{}", self.isd(), a)
        } else {
            write!(
                f,
                "{}-{:x}:{:x}:{:x}",
                self.isd(),
                a >> 32,
                (a >> 16) & 0xffff,
                a & 0xffff
            )
        }
    }
}

/// SVC (service anycast) values (§2).
pub mod svc {
    /// Discovery service.
    pub const DS: u16 = 0x0001;
    /// Control service.
    pub const CS: u16 = 0x0002;
    /// Wildcard.
    pub const WILDCARD: u16 = 0x0010;
    /// No service.
    pub const NONE: u16 = 0xffff;
    /// Multicast flag.
    pub const MULTICAST: u16 = 0x8000;
}

/// A host address of the address header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostAddr {
    /// Code 0x0.
    V4(Ipv4Addr),
    /// Code 0x3.
    V6(Ipv6Addr),
    /// Code 0x4: the 2-byte SVC value (the two padding bytes are zero).
    Svc(u16),
    /// Any other code: kept as raw bytes (`len` = 4, 8, 12 or 16).
    Other {
        /// The 4-bit type/length code.
        code: u8,
        /// Raw bytes (first `len` used).
        bytes: [u8; 16],
    },
}

/// Host address length for a 4-bit type/length code.
#[inline]
pub const fn host_len(code: u8) -> usize {
    4 * ((code & 3) as usize + 1)
}

impl HostAddr {
    /// The 4-bit type/length code.
    pub const fn code(&self) -> u8 {
        match self {
            HostAddr::V4(_) => 0x0,
            HostAddr::V6(_) => 0x3,
            HostAddr::Svc(_) => 0x4,
            HostAddr::Other { code, .. } => *code & 0xf,
        }
    }
    /// Encoded length.
    pub const fn len(&self) -> usize {
        host_len(self.code())
    }
    /// Always false (a host address has at least 4 bytes).
    pub const fn is_empty(&self) -> bool {
        false
    }
    /// Decodes `bytes` (at least `host_len(code)` long) for `code`.
    pub fn decode(code: u8, bytes: &[u8]) -> HostAddr {
        match code & 0xf {
            0x0 => HostAddr::V4(Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3])),
            0x3 => {
                let mut a = [0u8; 16];
                a.copy_from_slice(&bytes[..16]);
                HostAddr::V6(Ipv6Addr::from(a))
            }
            0x4 => HostAddr::Svc(read_u16(bytes)),
            c => {
                let mut b = [0u8; 16];
                let n = host_len(c);
                b[..n].copy_from_slice(&bytes[..n]);
                HostAddr::Other { code: c, bytes: b }
            }
        }
    }
    /// Writes the address into `out` (exactly [`len`](Self::len) bytes).
    pub fn encode(&self, out: &mut [u8]) {
        match self {
            HostAddr::V4(a) => out[..4].copy_from_slice(&a.octets()),
            HostAddr::V6(a) => out[..16].copy_from_slice(&a.octets()),
            HostAddr::Svc(s) => {
                write_u16(out, *s);
                out[2] = 0;
                out[3] = 0;
            }
            HostAddr::Other { code, bytes } => {
                let n = host_len(*code);
                out[..n].copy_from_slice(&bytes[..n]);
            }
        }
    }
}

/// A read/write view of a SCION header (common, address and path).
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

    /// [`Error::Truncated`] if the common header, the address header or the
    /// `HdrLen * 4` header bytes are not in the buffer; [`Error::Malformed`]
    /// if `HdrLen * 4` is shorter than common + address header.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        if b.len() < field::DST_HOST {
            return Err(Error::Truncated);
        }
        let addr_end = field::DST_HOST + self.dst_host_len() + self.src_host_len();
        if self.header_len() < addr_end {
            return Err(Error::Malformed);
        }
        if b.len() < self.header_len() {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Returns the underlying buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Version (top 4 bits).
    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[0] >> 4
    }
    /// Traffic class.
    #[inline]
    pub fn traffic_class(&self) -> u8 {
        (read_u32(&self.buffer.as_ref()[field::VER_TC_FLOW]) >> 20) as u8
    }
    /// Flow ID (20 bits).
    #[inline]
    pub fn flow_id(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::VER_TC_FLOW]) & 0xf_ffff
    }
    /// NextHdr.
    #[inline]
    pub fn next_hdr(&self) -> u8 {
        self.buffer.as_ref()[field::NEXT_HDR]
    }
    /// HdrLen field (4-byte units).
    #[inline]
    pub fn hdr_len(&self) -> u8 {
        self.buffer.as_ref()[field::HDR_LEN]
    }
    /// SCION header length in bytes (`HdrLen * 4`).
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.hdr_len()) * 4
    }
    /// PayloadLen.
    #[inline]
    pub fn payload_len(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::PAYLOAD_LEN])
    }
    /// PathType.
    #[inline]
    pub fn path_type(&self) -> u8 {
        self.buffer.as_ref()[field::PATH_TYPE]
    }
    /// Destination host type/length code.
    #[inline]
    pub fn dst_code(&self) -> u8 {
        self.buffer.as_ref()[field::ADDR_TYPES] >> 4
    }
    /// Source host type/length code.
    #[inline]
    pub fn src_code(&self) -> u8 {
        self.buffer.as_ref()[field::ADDR_TYPES] & 0xf
    }
    /// Destination host length.
    #[inline]
    pub fn dst_host_len(&self) -> usize {
        host_len(self.dst_code())
    }
    /// Source host length.
    #[inline]
    pub fn src_host_len(&self) -> usize {
        host_len(self.src_code())
    }
    /// Reserved field.
    #[inline]
    pub fn rsv(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::RSV])
    }
    /// Destination ISD-AS.
    #[inline]
    pub fn dst_ia(&self) -> Ia {
        Ia(u64::from_be_bytes(
            self.buffer.as_ref()[field::DST_IA]
                .try_into()
                .unwrap_or_default(),
        ))
    }
    /// Source ISD-AS.
    #[inline]
    pub fn src_ia(&self) -> Ia {
        Ia(u64::from_be_bytes(
            self.buffer.as_ref()[field::SRC_IA]
                .try_into()
                .unwrap_or_default(),
        ))
    }
    /// Address header length (16 + host lengths).
    #[inline]
    pub fn addr_len(&self) -> usize {
        16 + self.dst_host_len() + self.src_host_len()
    }
    /// Offset of the path from the start of the SCION header.
    #[inline]
    pub fn path_offset(&self) -> usize {
        COMMON_LEN + self.addr_len()
    }
    /// Raw destination host bytes.
    #[inline]
    pub fn dst_host_bytes(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DST_HOST..field::DST_HOST + self.dst_host_len()]
    }
    /// Raw source host bytes.
    #[inline]
    pub fn src_host_bytes(&self) -> &[u8] {
        let s = field::DST_HOST + self.dst_host_len();
        &self.buffer.as_ref()[s..s + self.src_host_len()]
    }
    /// Destination host address.
    #[inline]
    pub fn dst_host(&self) -> HostAddr {
        HostAddr::decode(self.dst_code(), self.dst_host_bytes())
    }
    /// Source host address.
    #[inline]
    pub fn src_host(&self) -> HostAddr {
        HostAddr::decode(self.src_code(), self.src_host_bytes())
    }
    /// The path bytes (between the address header and `HdrLen * 4`).
    #[inline]
    pub fn path(&self) -> &[u8] {
        &self.buffer.as_ref()[self.path_offset()..self.header_len()]
    }
    /// The bytes after the SCION header (extensions and L4), whatever
    /// PayloadLen says.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets version, traffic class and flow ID.
    #[inline]
    pub fn set_ver_tc_flow(&mut self, version: u8, tc: u8, flow: u32) {
        let w = u32::from(version & 0xf) << 28 | u32::from(tc) << 20 | (flow & 0xf_ffff);
        write_u32(&mut self.buffer.as_mut()[field::VER_TC_FLOW], w);
    }
    /// Sets NextHdr.
    #[inline]
    pub fn set_next_hdr(&mut self, v: u8) {
        self.buffer.as_mut()[field::NEXT_HDR] = v;
    }
    /// Sets HdrLen (4-byte units).
    #[inline]
    pub fn set_hdr_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::HDR_LEN] = v;
    }
    /// Sets PayloadLen.
    #[inline]
    pub fn set_payload_len(&mut self, v: u16) {
        write_u16(&mut self.buffer.as_mut()[field::PAYLOAD_LEN], v);
    }
    /// Sets PathType.
    #[inline]
    pub fn set_path_type(&mut self, v: u8) {
        self.buffer.as_mut()[field::PATH_TYPE] = v;
    }
    /// Sets both host address codes.
    #[inline]
    pub fn set_addr_codes(&mut self, dst: u8, src: u8) {
        self.buffer.as_mut()[field::ADDR_TYPES] = (dst & 0xf) << 4 | (src & 0xf);
    }
    /// Sets the reserved field.
    #[inline]
    pub fn set_rsv(&mut self, v: u16) {
        write_u16(&mut self.buffer.as_mut()[field::RSV], v);
    }
    /// Sets the destination ISD-AS.
    #[inline]
    pub fn set_dst_ia(&mut self, ia: Ia) {
        self.buffer.as_mut()[field::DST_IA].copy_from_slice(&ia.0.to_be_bytes());
    }
    /// Sets the source ISD-AS.
    #[inline]
    pub fn set_src_ia(&mut self, ia: Ia) {
        self.buffer.as_mut()[field::SRC_IA].copy_from_slice(&ia.0.to_be_bytes());
    }
    /// Mutable path bytes.
    #[inline]
    pub fn path_mut(&mut self) -> &mut [u8] {
        let (s, e) = (self.path_offset(), self.header_len());
        &mut self.buffer.as_mut()[s..e]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A decoded common and address header (the path is described separately).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Version (0).
    pub version: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Flow ID (20 bits).
    pub flow_id: u32,
    /// NextHdr.
    pub next_hdr: u8,
    /// Path type.
    pub path_type: u8,
    /// Path length in bytes (a multiple of 4).
    pub path_len: usize,
    /// PayloadLen.
    pub payload_len: u16,
    /// Destination ISD-AS.
    pub dst_ia: Ia,
    /// Source ISD-AS.
    pub src_ia: Ia,
    /// Destination host.
    pub dst_host: HostAddr,
    /// Source host.
    pub src_host: HostAddr,
}

impl Repr {
    /// Decodes the common and address header (errors of
    /// [`Packet::check_len`]; [`Error::Truncated`] if fewer than PayloadLen
    /// bytes follow the header). Version and reserved bits are not checked,
    /// as in the reference router.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(p: &Packet<&T>) -> Result<Repr> {
        p.check_len()?;
        if p.payload().len() < usize::from(p.payload_len()) {
            return Err(Error::Truncated);
        }
        Ok(Repr {
            version: p.version(),
            traffic_class: p.traffic_class(),
            flow_id: p.flow_id(),
            next_hdr: p.next_hdr(),
            path_type: p.path_type(),
            path_len: p.header_len() - p.path_offset(),
            payload_len: p.payload_len(),
            dst_ia: p.dst_ia(),
            src_ia: p.src_ia(),
            dst_host: p.dst_host(),
            src_host: p.src_host(),
        })
    }

    /// Address header length.
    pub const fn addr_len(&self) -> usize {
        16 + self.dst_host.len() + self.src_host.len()
    }

    /// Number of bytes [`emit`](Self::emit) writes: common, address header
    /// and the path area (filled by the caller through
    /// [`Packet::path_mut`]).
    pub const fn buffer_len(&self) -> usize {
        COMMON_LEN + self.addr_len() + self.path_len
    }

    /// Writes the common and address header; HdrLen covers `path_len`.
    /// [`Error::Malformed`] if the header is not a multiple of 4 bytes or
    /// longer than 1020; [`Error::Truncated`] if the buffer is too short.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) -> Result<()> {
        let len = self.buffer_len();
        if len % 4 != 0 || len > MAX_HEADER_LEN {
            return Err(Error::Malformed);
        }
        if p.buffer.as_ref().len() < len {
            return Err(Error::Truncated);
        }
        p.set_ver_tc_flow(self.version, self.traffic_class, self.flow_id);
        p.set_next_hdr(self.next_hdr);
        p.set_hdr_len((len / 4) as u8);
        p.set_payload_len(self.payload_len);
        p.set_path_type(self.path_type);
        p.set_addr_codes(self.dst_host.code(), self.src_host.code());
        p.set_rsv(0);
        p.set_dst_ia(self.dst_ia);
        p.set_src_ia(self.src_ia);
        let b = p.buffer.as_mut();
        let d = field::DST_HOST;
        self.dst_host.encode(&mut b[d..]);
        self.src_host.encode(&mut b[d + self.dst_host.len()..]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scion::tests::example;
    use crate::testutil::assert_prefixes_rejected;

    #[test]
    fn deconstruct_example() {
        let v = example();
        let p = Packet::new_checked(&v[..]).unwrap();
        assert_eq!(p.version(), 0);
        assert_eq!(p.traffic_class(), 0xb8);
        assert_eq!(p.flow_id(), 0xbeef);
        assert_eq!(p.next_hdr(), 17);
        assert_eq!(p.header_len(), 84);
        assert_eq!(p.payload_len(), 39);
        assert_eq!(p.path_type(), 1);
        assert_eq!(p.dst_ia(), Ia::parse("1-ff00:0:100").unwrap());
        assert_eq!(p.src_ia().to_string(), "1-ff00:0:111");
        assert_eq!(p.dst_host(), HostAddr::V4(Ipv4Addr::new(10, 1, 0, 1)));
        assert_eq!(p.src_host(), HostAddr::V4(Ipv4Addr::new(10, 2, 0, 1)));
        assert_eq!(p.path_offset(), 36);
        assert_eq!(p.path().len(), 48);
        assert_eq!(p.payload().len(), 39);
    }

    #[test]
    fn round_trip() {
        let v = example();
        let r = Repr::parse(&Packet::new_checked(&v[..]).unwrap()).unwrap();
        assert_eq!(r.path_len, 48);
        let mut out = vec![0u8; 84];
        r.emit(&mut Packet::new_unchecked(&mut out[..])).unwrap();
        out[36..].copy_from_slice(&v[36..84]);
        assert_eq!(out, v[..84]);
        assert_eq!(
            r.emit(&mut Packet::new_unchecked(&mut out[..83])),
            Err(Error::Truncated)
        );
        let odd = Repr { path_len: 2, ..r };
        assert_eq!(
            odd.emit(&mut Packet::new_unchecked(&mut out[..])),
            Err(Error::Malformed)
        );
    }

    #[test]
    fn host_codes() {
        let mut b = [0u8; 16];
        for h in [
            HostAddr::V4(Ipv4Addr::new(1, 2, 3, 4)),
            HostAddr::V6("2001:db8::1".parse().unwrap()),
            HostAddr::Svc(svc::CS),
            HostAddr::Other {
                code: 0x1,
                bytes: [7; 16],
            }
            .pipe_trim(),
        ] {
            h.encode(&mut b);
            assert_eq!(HostAddr::decode(h.code(), &b), h);
        }
        assert_eq!(HostAddr::Svc(2).len(), 4);
    }

    trait Trim {
        fn pipe_trim(self) -> Self;
    }
    impl Trim for HostAddr {
        fn pipe_trim(self) -> Self {
            match self {
                HostAddr::Other { code, mut bytes } => {
                    bytes[host_len(code)..].fill(0);
                    HostAddr::Other { code, bytes }
                }
                h => h,
            }
        }
    }

    #[test]
    fn ia_text() {
        let ia = Ia::parse("1-ff00:0:110").unwrap();
        assert_eq!(ia.0, 0x0001_ff00_0000_0110);
        assert_eq!(ia.to_string(), "1-ff00:0:110");
        assert_eq!(Ia::parse("2-64512").unwrap().to_string(), "2-64512");
        assert_eq!(Ia::parse("1-ff00:0"), None);
        assert_eq!(Ia::parse("1-4294967296"), None);
    }

    #[test]
    fn header_length_errors() {
        let mut v = example();
        v[5] = 8; // 32 B < 36 B of common + address header
        assert_eq!(Packet::new_checked(&v[..]).err(), Some(Error::Malformed));
        let v = example();
        assert_prefixes_rejected(&v[..123], |b| {
            Repr::parse(&Packet::new_unchecked(b)).map(|_| ())
        });
    }
}

//! IPv6 extension headers (RFC 8200 section 4, RFC 4302 for AH) and a
//! bounded walk over a chain of them.
//!
//! Every extension header starts with a next-header byte. Hop-by-Hop,
//! Routing and Destination Options headers then carry a length in 8-byte
//! units not counting the first 8; the Fragment header is always 8 bytes;
//! the Authentication Header's length is in 4-byte units not counting the
//! first 8. Because the length rule depends on the header type, a
//! [`Packet`] view is created with its type: `Packet::new_checked(buf, kind)`.
//!
//! [`walk`] follows the chain from the IPv6 next-header field to the
//! upper-layer protocol, visiting at most [`MAX_HEADERS`] headers.

use crate::bytes::{read_u16, read_u32, write_u16, write_u32};
use crate::ip::IpProtocol;
use crate::{Error, Result};

/// Most extension headers [`walk`] and [`Headers`] visit before giving up
/// with [`Error::Malformed`]. RFC 8200 allows each kind at most once or
/// twice, so real chains are far shorter.
pub const MAX_HEADERS: usize = 8;

/// Whether `protocol` is an extension header that [`walk`] steps over:
/// Hop-by-Hop, Routing, Fragment, Destination Options or AH. ESP is not:
/// what follows it is encrypted.
#[inline]
pub fn is_extension(protocol: IpProtocol) -> bool {
    matches!(
        protocol,
        IpProtocol::HOPOPT
            | IpProtocol::IPV6_ROUTE
            | IpProtocol::IPV6_FRAG
            | IpProtocol::IPV6_OPTS
            | IpProtocol::AH
    )
}

mod field {
    use crate::field::Field;

    pub const NXT_HDR: usize = 0;
    pub const LENGTH: usize = 1;
    pub const DATA_START: usize = 2;
    // Fragment header.
    pub const FRAG_OFF_M: Field = 2..4;
    pub const FRAG_IDENT: Field = 4..8;
    pub const FRAG_LEN: usize = 8;
}

/// Length of the Fragment header.
pub const FRAGMENT_HEADER_LEN: usize = field::FRAG_LEN;

/// A read/write view of one extension header (of type `kind`) and the bytes
/// after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
    kind: IpProtocol,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer holding an extension header of type `kind` without
    /// checking its length.
    #[inline]
    pub const fn new_unchecked(buffer: T, kind: IpProtocol) -> Packet<T> {
        Packet { buffer, kind }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    #[inline]
    pub fn new_checked(buffer: T, kind: IpProtocol) -> Result<Packet<T>> {
        let packet = Self::new_unchecked(buffer, kind);
        packet.check_len()?;
        Ok(packet)
    }

    /// [`Error::Unsupported`] if `kind` is not an extension header
    /// ([`is_extension`]); [`Error::Truncated`] unless the whole header, as
    /// its length field describes it, is in the buffer.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        if !is_extension(self.kind) {
            return Err(Error::Unsupported);
        }
        let len = self.buffer.as_ref().len();
        if len < field::FRAG_LEN || len < self.header_len() {
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

    /// The type of this header, as given when the view was created.
    #[inline]
    pub fn kind(&self) -> IpProtocol {
        self.kind
    }

    /// Next header field.
    #[inline]
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[field::NXT_HDR])
    }

    /// The raw length byte (reserved and ignored for the Fragment header).
    #[inline]
    pub fn len_field(&self) -> u8 {
        self.buffer.as_ref()[field::LENGTH]
    }

    /// Length of this header in bytes, from its length field and type.
    #[inline]
    pub fn header_len(&self) -> usize {
        header_len_for(self.kind, self.len_field())
    }

    /// Fragment header: fragment offset in bytes (a multiple of 8).
    #[inline]
    pub fn frag_offset(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::FRAG_OFF_M]) & !0x7
    }

    /// Fragment header: More Fragments flag.
    #[inline]
    pub fn more_frags(&self) -> bool {
        read_u16(&self.buffer.as_ref()[field::FRAG_OFF_M]) & 0x1 != 0
    }

    /// Fragment header: identification.
    #[inline]
    pub fn frag_ident(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::FRAG_IDENT])
    }
}

fn header_len_for(kind: IpProtocol, len_field: u8) -> usize {
    match kind {
        IpProtocol::IPV6_FRAG => field::FRAG_LEN,
        IpProtocol::AH => (usize::from(len_field) + 2) * 4,
        _ => (usize::from(len_field) + 1) * 8,
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// Header bytes after the next-header and length bytes (options, routing
    /// data, fragment fields or AH fields).
    #[inline]
    pub fn data(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::DATA_START..self.header_len()]
    }

    /// Bytes after this header.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the next header field.
    #[inline]
    pub fn set_next_header(&mut self, value: IpProtocol) {
        self.buffer.as_mut()[field::NXT_HDR] = value.0;
    }

    /// Sets the raw length byte.
    #[inline]
    pub fn set_len_field(&mut self, value: u8) {
        self.buffer.as_mut()[field::LENGTH] = value;
    }

    /// Fragment header: sets the offset in bytes (rounded down to 8) and the
    /// More Fragments flag.
    #[inline]
    pub fn set_frag_offset_more(&mut self, offset: u16, more_frags: bool) {
        let word = (offset & !0x7) | u16::from(more_frags);
        write_u16(&mut self.buffer.as_mut()[field::FRAG_OFF_M], word);
    }

    /// Fragment header: sets the identification.
    #[inline]
    pub fn set_frag_ident(&mut self, value: u32) {
        write_u32(&mut self.buffer.as_mut()[field::FRAG_IDENT], value);
    }

    /// Mutable header bytes after the next-header and length bytes.
    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        let end = self.header_len();
        &mut self.buffer.as_mut()[field::DATA_START..end]
    }

    /// Mutable bytes after this header.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = self.header_len();
        &mut self.buffer.as_mut()[start..]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// A decoded extension header: its type, next header and body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr<'a> {
    /// Type of this header.
    pub kind: IpProtocol,
    /// Next header field.
    pub next_header: IpProtocol,
    /// Bytes after the next-header and length bytes (see [`Packet::data`]).
    pub data: &'a [u8],
}

impl<'a> Repr<'a> {
    /// Decodes an extension header (errors of [`Packet::check_len`]).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&'a T>) -> Result<Repr<'a>> {
        packet.check_len()?;
        Ok(Repr {
            kind: packet.kind(),
            next_header: packet.next_header(),
            data: packet.data(),
        })
    }

    /// Number of bytes [`emit`](Self::emit) writes.
    #[inline]
    pub fn buffer_len(&self) -> usize {
        field::DATA_START + self.data.len()
    }

    /// Writes the header, deriving the length byte from `data`.
    /// [`Error::Malformed`] if the total length is not representable for
    /// this kind (Fragment: exactly 8; AH: a multiple of 4 from 8 to 1028;
    /// others: a multiple of 8 up to 2048); [`Error::Unsupported`] if `kind`
    /// is not an extension header; [`Error::Truncated`] if the buffer is
    /// shorter than [`buffer_len`](Self::buffer_len). The packet view's
    /// kind is set to `self.kind`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<()> {
        let total = self.buffer_len();
        let len_field = match self.kind {
            IpProtocol::IPV6_FRAG if total == field::FRAG_LEN => 0,
            IpProtocol::IPV6_FRAG => return Err(Error::Malformed),
            IpProtocol::AH if total % 4 == 0 && total >= 8 => total / 4 - 2,
            IpProtocol::AH => return Err(Error::Malformed),
            kind if is_extension(kind) && total % 8 == 0 => total / 8 - 1,
            kind if is_extension(kind) => return Err(Error::Malformed),
            _ => return Err(Error::Unsupported),
        };
        let len_field = u8::try_from(len_field).map_err(|_| Error::Malformed)?;
        if packet.buffer.as_ref().len() < total {
            return Err(Error::Truncated);
        }
        packet.kind = self.kind;
        packet.set_next_header(self.next_header);
        packet.set_len_field(len_field);
        packet.data_mut().copy_from_slice(self.data);
        Ok(())
    }
}

/// Fragment header fields found by [`walk`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fragment {
    /// Fragment offset in bytes.
    pub offset: u16,
    /// More Fragments flag.
    pub more_frags: bool,
    /// Identification.
    pub ident: u32,
    /// Offset of the Fragment header from the start of the walked buffer.
    pub header_offset: usize,
}

/// Where a chain of extension headers ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Chain {
    /// The first protocol that is not an extension header (the upper-layer
    /// protocol, ESP, or No Next Header).
    pub next_header: IpProtocol,
    /// Offset of the upper-layer header from the start of the walked buffer.
    pub offset: usize,
    /// Number of extension headers stepped over.
    pub headers: usize,
    /// The Fragment header, if one was seen.
    pub fragment: Option<Fragment>,
}

/// Iterator over the extension headers of an IPv6 payload; see [`headers`].
#[derive(Debug, Clone)]
pub struct Headers<'a> {
    buffer: &'a [u8],
    next_header: IpProtocol,
    offset: usize,
    count: usize,
    failed: bool,
    stopped_at_fragment: bool,
}

/// Iterates over the extension headers of `payload` (the bytes after the
/// IPv6 fixed header), starting with type `first` (the IPv6 next-header
/// field). Yields each header, or one error and then nothing:
/// [`Error::Truncated`] for a header cut short, [`Error::Malformed`] for a
/// Hop-by-Hop header that is not first or more than [`MAX_HEADERS`]
/// headers. Iteration stops after a Fragment header with non-zero offset,
/// since what follows it is not a header.
pub fn headers(first: IpProtocol, payload: &[u8]) -> Headers<'_> {
    Headers {
        buffer: payload,
        next_header: first,
        offset: 0,
        count: 0,
        failed: false,
        stopped_at_fragment: false,
    }
}

impl<'a> Headers<'a> {
    /// The next-header value reached so far: after the iterator is
    /// exhausted without error, the upper-layer protocol.
    #[inline]
    pub fn next_header(&self) -> IpProtocol {
        self.next_header
    }

    /// Offset of the next header to visit (after exhaustion, of the
    /// upper-layer header or fragment data).
    #[inline]
    pub fn offset(&self) -> usize {
        self.offset
    }
}

impl<'a> Iterator for Headers<'a> {
    type Item = Result<Packet<&'a [u8]>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.stopped_at_fragment || !is_extension(self.next_header) {
            return None;
        }
        let fail = |this: &mut Self, e| {
            this.failed = true;
            Some(Err(e))
        };
        if self.count == MAX_HEADERS || (self.next_header == IpProtocol::HOPOPT && self.count != 0)
        {
            return fail(self, Error::Malformed);
        }
        let rest = self.buffer.get(self.offset..).unwrap_or(&[]);
        let header = match Packet::new_checked(rest, self.next_header) {
            Ok(h) => h,
            Err(e) => return fail(self, e),
        };
        self.count += 1;
        self.offset += header.header_len();
        self.next_header = header.next_header();
        if header.kind() == IpProtocol::IPV6_FRAG && header.frag_offset() != 0 {
            self.stopped_at_fragment = true;
        }
        Some(Ok(header))
    }
}

/// Walks the extension headers of `payload` (see [`headers`]) and reports
/// the upper-layer protocol and its offset in `payload`. For a non-first
/// fragment the walk ends after the Fragment header: `offset` is then the
/// start of the fragment data and `next_header` what that data continues.
pub fn walk(first: IpProtocol, payload: &[u8]) -> Result<Chain> {
    let mut iter = headers(first, payload);
    let mut fragment = None;
    let mut count = 0;
    let mut header_offset = 0;
    while let Some(header) = iter.next() {
        let header = header?;
        if header.kind() == IpProtocol::IPV6_FRAG {
            fragment = Some(Fragment {
                offset: header.frag_offset(),
                more_frags: header.more_frags(),
                ident: header.frag_ident(),
                header_offset,
            });
        }
        count += 1;
        header_offset = iter.offset();
    }
    Ok(Chain {
        next_header: iter.next_header(),
        offset: iter.offset(),
        headers: count,
        fragment,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipv6;
    use crate::testutil::assert_prefixes_rejected;

    /// IPv6 payload: Hop-by-Hop (Router Alert + PadN), Destination Options
    /// (Pad1 ×6), Routing (type 3 segment left 0, 16 bytes), Fragment
    /// (offset 0, M=1, ident 0xdeadbeef), then UDP header.
    const CHAIN: [u8; 8 + 8 + 24 + 8 + 8] = [
        // Hop-by-Hop: next = Destination Options, len 0.
        0x3c, 0x00, 0x05, 0x02, 0x00, 0x00, 0x01, 0x00,
        // Destination Options: next = Routing, len 0.
        0x2b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        // Routing: next = Fragment, len 2 (24 bytes).
        0x2c, 0x02, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09,
        // Fragment: next = UDP, offset 0, M = 1, ident.
        0x11, 0x00, 0x00, 0x01, 0xde, 0xad, 0xbe, 0xef, // UDP header.
        0x9c, 0x40, 0x00, 0x35, 0x00, 0x08, 0x00, 0x00,
    ];

    #[test]
    fn walk_full_chain() {
        let chain = walk(IpProtocol::HOPOPT, &CHAIN).unwrap();
        assert_eq!(chain.next_header, IpProtocol::UDP);
        assert_eq!(chain.offset, 48);
        assert_eq!(chain.headers, 4);
        assert_eq!(
            chain.fragment,
            Some(Fragment {
                offset: 0,
                more_frags: true,
                ident: 0xdeadbeef,
                header_offset: 40
            })
        );
    }

    #[test]
    fn iterate_headers() {
        let kinds: Vec<_> = headers(IpProtocol::HOPOPT, &CHAIN)
            .map(|h| {
                let h = h.unwrap();
                (h.kind(), h.header_len())
            })
            .collect();
        assert_eq!(
            kinds,
            [
                (IpProtocol::HOPOPT, 8),
                (IpProtocol::IPV6_OPTS, 8),
                (IpProtocol::IPV6_ROUTE, 24),
                (IpProtocol::IPV6_FRAG, 8),
            ]
        );
        let hbh = Packet::new_checked(&CHAIN[..], IpProtocol::HOPOPT).unwrap();
        assert_eq!(hbh.data(), &[0x05, 0x02, 0x00, 0x00, 0x01, 0x00]);
        assert_eq!(hbh.payload().len(), CHAIN.len() - 8);
    }

    #[test]
    fn no_extensions() {
        let chain = walk(IpProtocol::TCP, &[]).unwrap();
        assert_eq!(
            chain,
            Chain {
                next_header: IpProtocol::TCP,
                offset: 0,
                headers: 0,
                fragment: None
            }
        );
        let chain = walk(IpProtocol::IPV6_OPTS, &[0x3b, 0, 1, 4, 0, 0, 0, 0]).unwrap();
        assert_eq!(
            (chain.next_header, chain.offset),
            (IpProtocol::IPV6_NONXT, 8)
        );
    }

    #[test]
    fn walk_inside_ipv6_packet() {
        let mut packet = vec![0x60, 0, 0, 0, 0, CHAIN.len() as u8, 0x00, 64];
        packet.extend_from_slice(&[0; 32]);
        packet.extend_from_slice(&CHAIN);
        let ip = ipv6::Packet::new_checked(&packet[..]).unwrap();
        let chain = walk(ip.next_header(), ip.payload()).unwrap();
        assert_eq!(ipv6::HEADER_LEN + chain.offset, 88);
    }

    #[test]
    fn ah_length_in_4_byte_units() {
        // AH: next = TCP, len 4 -> (4 + 2) * 4 = 24 bytes, then ESP stops.
        let mut ah = [0u8; 24];
        ah[0] = 6;
        ah[1] = 4;
        let chain = walk(IpProtocol::AH, &ah).unwrap();
        assert_eq!((chain.next_header, chain.offset), (IpProtocol::TCP, 24));
        let esp = walk(IpProtocol::ESP, &[0; 16]).unwrap();
        assert_eq!(
            (esp.next_header, esp.offset, esp.headers),
            (IpProtocol::ESP, 0, 0)
        );
    }

    #[test]
    fn later_fragment_stops_walk() {
        // Fragment with offset 1232, next header = Destination Options:
        // the data that follows is not a header.
        let bytes = [0x3c, 0x00, 0x04, 0xd0, 0x00, 0x00, 0x00, 0x07, 0xff, 0xff];
        let chain = walk(IpProtocol::IPV6_FRAG, &bytes).unwrap();
        assert_eq!(chain.next_header, IpProtocol::IPV6_OPTS);
        assert_eq!(chain.offset, 8);
        let frag = chain.fragment.unwrap();
        assert_eq!((frag.offset, frag.more_frags, frag.ident), (1232, false, 7));
    }

    #[test]
    fn misplaced_hop_by_hop_is_malformed() {
        let bytes = [0x00, 0x00, 0, 0, 0, 0, 0, 0, 0x11, 0x00, 0, 0, 0, 0, 0, 0];
        assert_eq!(walk(IpProtocol::IPV6_OPTS, &bytes), Err(Error::Malformed));
    }

    #[test]
    fn loop_is_bounded() {
        // Destination Options headers pointing at each other, 1000 times.
        let bytes: Vec<u8> = [0x3c, 0, 0, 0, 0, 0, 0, 0].repeat(1000);
        assert_eq!(walk(IpProtocol::IPV6_OPTS, &bytes), Err(Error::Malformed));
        let mut iter = headers(IpProtocol::IPV6_OPTS, &bytes);
        assert_eq!(iter.by_ref().filter(|h| h.is_ok()).count(), MAX_HEADERS);
        assert!(iter.next().is_none());
    }

    #[test]
    fn truncated_prefixes_rejected() {
        // Every prefix of the chain that cuts into a header fails; prefixes
        // ending exactly at the UDP header succeed (the walk does not look
        // at upper-layer bytes), so check only up to the last extension.
        assert_prefixes_rejected(&CHAIN[..48], |b| walk(IpProtocol::HOPOPT, b).map(|_| ()));
        for len in 0..8 {
            assert_eq!(
                Repr::parse(&Packet::new_unchecked(&CHAIN[..len], IpProtocol::HOPOPT)),
                Err(Error::Truncated)
            );
        }
    }

    #[test]
    fn repr_round_trip_each_kind() {
        let mut offset = 0;
        for kind in [
            IpProtocol::HOPOPT,
            IpProtocol::IPV6_OPTS,
            IpProtocol::IPV6_ROUTE,
            IpProtocol::IPV6_FRAG,
        ] {
            let packet = Packet::new_checked(&CHAIN[offset..], kind).unwrap();
            let repr = Repr::parse(&packet).unwrap();
            let mut out = vec![0u8; repr.buffer_len()];
            repr.emit(&mut Packet::new_unchecked(&mut out[..], kind))
                .unwrap();
            assert_eq!(&out[..], &CHAIN[offset..offset + packet.header_len()]);
            offset += packet.header_len();
        }
    }

    #[test]
    fn repr_emit_errors() {
        let mut out = [0u8; 64];
        let odd = Repr {
            kind: IpProtocol::IPV6_OPTS,
            next_header: IpProtocol::TCP,
            data: &[0; 5],
        };
        assert_eq!(
            odd.emit(&mut Packet::new_unchecked(&mut out[..], odd.kind)),
            Err(Error::Malformed)
        );
        let frag = Repr {
            kind: IpProtocol::IPV6_FRAG,
            next_header: IpProtocol::TCP,
            data: &[0; 14],
        };
        assert_eq!(
            frag.emit(&mut Packet::new_unchecked(&mut out[..], frag.kind)),
            Err(Error::Malformed)
        );
        let ah = Repr {
            kind: IpProtocol::AH,
            next_header: IpProtocol::TCP,
            data: &[0; 10],
        };
        ah.emit(&mut Packet::new_unchecked(&mut out[..], IpProtocol::AH))
            .unwrap();
        assert_eq!(out[1], 1);
        let tcp = Repr {
            kind: IpProtocol::TCP,
            next_header: IpProtocol::TCP,
            data: &[0; 6],
        };
        assert_eq!(
            tcp.emit(&mut Packet::new_unchecked(&mut out[..], tcp.kind)),
            Err(Error::Unsupported)
        );
        let ok = Repr {
            kind: IpProtocol::IPV6_ROUTE,
            next_header: IpProtocol::TCP,
            data: &[0; 14],
        };
        assert_eq!(
            ok.emit(&mut Packet::new_unchecked(&mut out[..15], ok.kind)),
            Err(Error::Truncated)
        );
        assert_eq!(
            Packet::new_checked(&out[..], IpProtocol::UDP),
            Err(Error::Unsupported)
        );
    }

    #[test]
    fn fragment_setters() {
        let mut buf = [0u8; 8];
        let mut p = Packet::new_unchecked(&mut buf[..], IpProtocol::IPV6_FRAG);
        p.set_next_header(IpProtocol::UDP);
        p.set_frag_offset_more(1232, true);
        p.set_frag_ident(0x01020304);
        assert_eq!(
            (p.frag_offset(), p.more_frags(), p.frag_ident()),
            (1232, true, 0x01020304)
        );
        assert_eq!(buf, [0x11, 0x00, 0x04, 0xd1, 0x01, 0x02, 0x03, 0x04]);
    }
}

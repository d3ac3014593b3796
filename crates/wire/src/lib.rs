//! Zero-copy wire formats for the protocols linerate elements look at.
//!
//! Every protocol lives in its own module and follows the same shape, so code
//! that handles one header reads like code that handles any other:
//!
//! * **`Packet<T: AsRef<[u8]>>`** is a *view* over a byte buffer that is
//!   never copied. `Packet::new_unchecked(buf)` wraps without looking;
//!   `Packet::new_checked(buf)` calls [`check_len`](ethernet::Packet::check_len)
//!   first, after which **every getter and `payload()` is guaranteed to be in
//!   bounds**. Getters read fields in network byte order; setters (available
//!   when `T: AsMut<[u8]>`) write them. `payload()` (on `Packet<&T>`, returning
//!   a slice that lives as long as the buffer) and `payload_mut()` give the
//!   bytes after the header. `into_inner()` returns the buffer.
//! * A private `mod field` in each module holds the byte ranges of the header.
//! * **`Repr`** is the decoded description of a header (`Copy`; it borrows
//!   the option bytes of IPv4, TCP and IPv6 extension headers).
//!   `Repr::parse(&packet)` validates semantics (version numbers, lengths,
//!   supported layouts) and returns [`Error`] on anything it cannot accept;
//!   `repr.buffer_len()` is the number of header bytes `repr.emit(&mut packet)`
//!   writes. `emit` returns [`Error::Truncated`] instead of panicking when the
//!   buffer is too small and [`Error::Malformed`] when the `Repr` cannot be
//!   encoded (for example options whose length is not a multiple of four).
//!
//! Conventions shared by all modules:
//!
//! * `Repr::parse` never verifies checksums; use `Packet::verify_checksum`.
//!   `Repr::emit` fills only the IPv4 header checksum (the one checksum that
//!   covers nothing but the bytes `emit` writes). For UDP, TCP, ICMPv4 and
//!   ICMPv6, write the payload and then call `Packet::fill_checksum`.
//! * Reprs describe headers. Payloads are reached through `payload()` /
//!   `payload_mut()`, so nothing is ever copied or allocated per packet.
//! * Accessors on a `new_unchecked` view of a too-short buffer panic (as slice
//!   indexing does); bad input handled through `new_checked` never panics.
//! * Addresses use [`EthernetAddress`], [`std::net::Ipv4Addr`] and
//!   [`std::net::Ipv6Addr`]; numeric registries (EtherType, IP protocol, ICMP
//!   types, TCP flags) are transparent newtypes with associated constants, so
//!   unknown values round-trip unchanged and known ones can be matched on.
//!
//! The [`checksum`] module provides the Internet checksum (RFC 1071) with an
//! 8-bytes-at-a-time inner loop, pseudo-header sums and RFC 1624 incremental
//! updates. [`prelude`] re-exports the commonly used types under
//! protocol-prefixed names.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use core::fmt;

pub mod arp;
pub mod checksum;
pub mod ethernet;
pub mod gre;
pub mod gtpu;
pub mod icmpv4;
pub mod icmpv6;
pub mod ip;
pub mod ipfix;
pub mod ipv4;
pub mod ipv6;
pub mod ipv6ext;
pub mod l4;
pub mod netflow9;
pub mod prelude;
pub mod scion;
pub mod tcp;
pub mod udp;
pub mod vlan;
pub mod vxlan;

pub use ethernet::{EtherType, EthernetAddress};
pub use ip::{IpPair, IpProtocol};

/// Why a buffer could not be viewed, parsed or emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Error {
    /// The buffer is shorter than the header or than a length field claims.
    Truncated,
    /// A field holds a value that is impossible for this protocol
    /// (wrong version, a length smaller than the fixed header, ...).
    Malformed,
    /// The packet is well formed but uses a variant this crate does not
    /// decode (for example ARP for a non-Ethernet/IPv4 pair).
    Unsupported,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Error::Truncated => "truncated packet",
            Error::Malformed => "malformed packet",
            Error::Unsupported => "unsupported packet format",
        })
    }
}

impl std::error::Error for Error {}

/// Result type used throughout this crate.
pub type Result<T> = core::result::Result<T, Error>;

/// Byte ranges of header fields, shared by every `mod field`.
pub(crate) mod field {
    /// A byte range within a header.
    pub type Field = core::ops::Range<usize>;
    /// An offset from which the rest of the buffer starts.
    pub type Rest = core::ops::RangeFrom<usize>;
}

/// Big-endian integer reads and writes on slices of exact length.
pub(crate) mod bytes {
    #[inline]
    pub fn read_u16(data: &[u8]) -> u16 {
        u16::from_be_bytes([data[0], data[1]])
    }

    #[inline]
    pub fn read_u32(data: &[u8]) -> u32 {
        u32::from_be_bytes([data[0], data[1], data[2], data[3]])
    }

    #[inline]
    pub fn write_u16(data: &mut [u8], value: u16) {
        data[..2].copy_from_slice(&value.to_be_bytes());
    }

    #[inline]
    pub fn write_u32(data: &mut [u8], value: u32) {
        data[..4].copy_from_slice(&value.to_be_bytes());
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    /// Asserts that `check` rejects every strict prefix of `bytes` with an
    /// error (and, by returning at all, that it never panicked).
    pub fn assert_prefixes_rejected<E: core::fmt::Debug>(
        bytes: &[u8],
        check: impl Fn(&[u8]) -> Result<(), E>,
    ) {
        for len in 0..bytes.len() {
            assert!(
                check(&bytes[..len]).is_err(),
                "prefix of length {len} was accepted"
            );
        }
        assert!(check(bytes).is_ok(), "full packet rejected");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    /// Runs every read accessor of every view over `data`: `new_checked`
    /// must either fail or make all of them safe, and `Repr::parse` must
    /// never panic.
    fn exercise_all(data: &[u8], first: IpProtocol) {
        let v4 = IpPair::V4 {
            src: Ipv4Addr::LOCALHOST,
            dst: Ipv4Addr::LOCALHOST,
        };
        let v6 = Ipv6Addr::LOCALHOST;
        if let Ok(p) = ethernet::Packet::new_checked(data) {
            let _ = (p.src_addr(), p.dst_addr(), p.ethertype(), p.payload());
        }
        let _ = ethernet::Repr::parse(&ethernet::Packet::new_unchecked(data));
        if let Ok(p) = vlan::Packet::new_checked(data) {
            let _ = (p.pcp(), p.dei(), p.vid(), p.ethertype(), p.payload());
        }
        let _ = vlan::Repr::parse(&vlan::Packet::new_unchecked(data));
        if let Ok(p) = arp::Packet::new_checked(data) {
            let _ = (
                p.operation(),
                p.source_hardware_addr(),
                p.target_protocol_addr(),
            );
        }
        let _ = arp::Repr::parse(&arp::Packet::new_unchecked(data));
        let p = ipv4::Packet::new_unchecked(data);
        if p.check_header_len().is_ok() {
            let _ = (
                p.options(),
                p.options_len(),
                p.verify_checksum(),
                p.frag_offset(),
            );
        }
        if p.check_len().is_ok() {
            let _ = p.payload();
        }
        let _ = ipv4::Repr::parse(&p);
        if let Ok(p) = ipv6::Packet::new_checked(data) {
            let _ = (p.flow_label(), p.src_addr(), p.dst_addr(), p.payload());
        }
        let _ = ipv6::Repr::parse(&ipv6::Packet::new_unchecked(data));
        let _ = ipv6ext::walk(first, data);
        let _ = (l4::parse(data), l4::locate(data));
        let _ = gre::Repr::parse(&gre::Packet::new_unchecked(data));
        let _ = gtpu::Repr::parse(&gtpu::Packet::new_unchecked(data));
        let _ = vxlan::Repr::parse(&vxlan::Packet::new_unchecked(data));
        if let Ok(p) = ipv6ext::Packet::new_checked(data, first) {
            let _ = (p.data(), p.payload(), p.frag_offset(), p.frag_ident());
        }
        let _ = ipv6ext::Repr::parse(&ipv6ext::Packet::new_unchecked(data, first));
        if let Ok(p) = udp::Packet::new_checked(data) {
            let _ = (p.payload(), p.verify_checksum(&v4));
        }
        let _ = udp::Repr::parse(&udp::Packet::new_unchecked(data));
        if let Ok(p) = tcp::Packet::new_checked(data) {
            let _ = (
                p.options(),
                p.payload(),
                p.payload_len(),
                p.verify_checksum(&v4),
            );
        }
        let _ = tcp::Repr::parse(&tcp::Packet::new_unchecked(data));
        if let Ok(p) = icmpv4::Packet::new_checked(data) {
            let _ = (
                p.payload(),
                p.original_datagram(),
                p.verify_checksum(),
                p.gateway(),
            );
        }
        let _ = icmpv4::Repr::parse(&icmpv4::Packet::new_unchecked(data));
        if let Ok(p) = icmpv6::Packet::new_checked(data) {
            let _ = (
                p.payload(),
                p.original_datagram(),
                p.verify_checksum(v6, v6),
                p.mtu(),
            );
        }
        let _ = icmpv6::Repr::parse(&icmpv6::Packet::new_unchecked(data));
    }

    proptest! {
        #[test]
        fn arbitrary_input_never_panics(data in proptest::collection::vec(any::<u8>(), 0..160),
                                        first in any::<u8>()) {
            exercise_all(&data, IpProtocol(first));
        }

        #[test]
        fn extension_chains_never_panic(
            data in proptest::collection::vec(
                prop_oneof![Just(0u8), Just(43), Just(44), Just(51), Just(60), any::<u8>()], 0..200),
            first in prop_oneof![Just(0u8), Just(43), Just(44), Just(51), Just(60)],
        ) {
            exercise_all(&data, IpProtocol(first));
        }
    }

    #[test]
    fn error_display() {
        assert_eq!(Error::Truncated.to_string(), "truncated packet");
        assert_eq!(Error::Malformed.to_string(), "malformed packet");
        assert_eq!(Error::Unsupported.to_string(), "unsupported packet format");
    }
}

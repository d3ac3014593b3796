//! SCION (scionproto v0.15.1 data plane): the common and address header,
//! path types, extension headers, SCION/UDP and SCMP.
//!
//! Byte layouts follow the reference packet library `pkg/slayers`; section
//! numbers in the documentation refer to linerate's data-plane specification
//! (`specs/scion-dataplane.md`).
//!
//! * [`header`]: the 12-byte common header and the address header
//!   (ISD-AS numbers and host addresses), `Packet` view and `Repr`.
//! * [`path`]: the standard SCION path (PathMeta, info fields, hop fields),
//!   the one-hop path, the empty path and EPIC-HP.
//! * [`ext`]: hop-by-hop and end-to-end extension headers (skipped, not
//!   interpreted, as the router does).
//! * [`udp`]: SCION/UDP (an 8-byte UDP header whose checksum covers the SCION
//!   pseudo-header) and the pseudo-header sum shared with SCMP.
//! * [`scmp`]: SCMP messages.

pub mod ext;
pub mod header;
pub mod path;
pub mod scmp;
pub mod udp;

pub use header::{HostAddr, Ia};

/// SCION `NextHdr` protocol numbers (§1).
pub mod proto {
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// Hop-by-hop options extension.
    pub const HBH: u8 = 200;
    /// End-to-end options extension.
    pub const E2E: u8 = 201;
    /// SCMP.
    pub const SCMP: u8 = 202;
    /// BFD.
    pub const BFD: u8 = 203;
}

/// SCION `PathType` values (§4).
pub mod path_type {
    /// Empty path.
    pub const EMPTY: u8 = 0;
    /// Standard SCION path.
    pub const SCION: u8 = 1;
    /// One-hop path.
    pub const ONEHOP: u8 = 2;
    /// EPIC-HP.
    pub const EPIC: u8 = 3;
}

/// Result of walking the extension headers after the SCION header: the
/// upper-layer protocol and its offset from the start of the SCION header.
///
/// [`crate::Error::Malformed`] for a second HBH, an E2E before an HBH or a
/// second E2E; [`crate::Error::Truncated`] when an extension header runs past
/// the buffer.
#[inline]
pub fn upper_layer(scion: &[u8], hdr_len: usize, next_hdr: u8) -> crate::Result<(u8, usize)> {
    let mut nh = next_hdr;
    let mut off = hdr_len;
    if nh == proto::HBH {
        let e = ext::Packet::new_checked(scion.get(off..).ok_or(crate::Error::Truncated)?)?;
        nh = e.next_hdr();
        off += e.header_len();
        if nh == proto::HBH {
            return Err(crate::Error::Malformed);
        }
    }
    if nh == proto::E2E {
        let e = ext::Packet::new_checked(scion.get(off..).ok_or(crate::Error::Truncated)?)?;
        nh = e.next_hdr();
        off += e.header_len();
        if nh == proto::HBH || nh == proto::E2E {
            return Err(crate::Error::Malformed);
        }
    }
    if off > scion.len() {
        return Err(crate::Error::Truncated);
    }
    Ok((nh, off))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The worked example of §5.4: transit from child IF 2 to parent IF 1.
    pub(crate) const EXAMPLE: &str = concat!(
        "0b80beef11150027010000000001ff00000001000001ff0000000111",
        "0a0100010a02000101003000",
        "0000e3746b01f32e",
        "003f001500003985e1eab0df",
        "003f00010002f2659aab41da",
        "003f0000000b000000000000",
        "9caf9d1e002789a9",
    );

    pub(crate) fn hex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }

    pub(crate) fn example() -> Vec<u8> {
        let mut v = hex(EXAMPLE);
        v.extend(std::iter::repeat(0x5a).take(31));
        v
    }

    #[test]
    fn upper_layer_walks_extensions() {
        let mut v = vec![0u8; 16];
        // HBH (next E2E, ExtLen 0 => 4 B) then E2E (next UDP, ExtLen 1 => 8 B).
        v[0] = proto::E2E;
        v[4] = proto::UDP;
        v[5] = 1;
        assert_eq!(upper_layer(&v, 0, proto::HBH), Ok((proto::UDP, 12)));
        assert_eq!(
            upper_layer(&v[..8], 0, proto::HBH),
            Err(crate::Error::Truncated)
        );
        v[0] = proto::HBH;
        assert_eq!(upper_layer(&v, 0, proto::HBH), Err(crate::Error::Malformed));
        assert_eq!(upper_layer(&v, 16, proto::UDP), Ok((proto::UDP, 16)));
        assert_eq!(
            upper_layer(&v, 17, proto::UDP),
            Err(crate::Error::Truncated)
        );
    }

    fn exercise(data: &[u8]) {
        if let Ok(h) = header::Packet::new_checked(data) {
            let _ = (h.dst_ia(), h.src_ia(), h.dst_host(), h.src_host(), h.path());
            let _ = header::Repr::parse(&h);
            let _ = upper_layer(data, h.header_len(), h.next_hdr());
            if let Ok(p) = path::StandardPath::new_checked(h.path()) {
                for i in 0..p.num_inf() {
                    let _ = (p.info(i).seg_id(), p.info(i).timestamp());
                }
                for j in 0..p.num_hops() {
                    let _ = (p.hop(j).mac(), p.hop(j).cons_ingress(), p.segment_of(j));
                }
                let _ = path::StandardRepr::parse(&p);
            }
            let _ = path::OneHopPath::new_checked(h.path()).map(|p| path::OneHopRepr::parse(&p));
            let _ = path::EpicPath::new_checked(h.path())
                .map(|p| (p.pkt_id(), p.standard().num_hops()));
        }
        let _ = header::Repr::parse(&header::Packet::new_unchecked(data));
        let _ = ext::Packet::new_checked(data).map(|e| ext::Repr::parse(&e));
        let _ = scmp::Packet::new_checked(data).map(|s| scmp::Repr::parse(&s));
    }

    proptest! {
        #[test]
        fn arbitrary_scion_never_panics(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            exercise(&data);
        }

        #[test]
        fn mutated_example_never_panics(pos in 0usize..123, val in any::<u8>(), cut in 0usize..124) {
            let mut v = example();
            v[pos] = val;
            v.truncate(cut);
            exercise(&v);
        }
    }
}

//! The packet annotation block: a fixed, documented 64-byte layout.
//!
//! Every packet carries one [`Anno`] block in the second cache line of its
//! metadata. The layout is part of linerate's ABI: the XDP and GPU offload
//! paths read and write the same bytes, so fields never move.
//!
//! | offset | size | field | Click name |
//! |-------:|-----:|-------|------------|
//! | 0  | 8  | `timestamp_ns`: nanoseconds since the UNIX epoch | timestamp annotation |
//! | 8  | 4  | `flow_hash`: 32-bit flow hash (RSS) | — |
//! | 12 | 2  | `network_header`: offset from the buffer head, `0xFFFF` if unset | network header |
//! | 14 | 2  | `transport_header`: offset from the buffer head, `0xFFFF` if unset | transport header |
//! | 16 | 48 | `user`: Click's 48-byte annotation area, Click's offsets below | `anno_u8()` |
//!
//! Inside `user`, offsets are exactly Click 2.1's (`packet_anno.hh`):
//! `DST_IP` 0 (4 bytes), `DST_IP6` 0 (16), `PAINT` 16 (1), `ICMP_PARAMPROB` 17 (1),
//! `L4_PROTO` 18 (1, linerate's: see [`crate::flow`]),
//! `FIX_IP_SRC` 19 (1), `VLAN_TCI` 20 (2), `AGGREGATE` 20 (4), `FWD_RATE` 20 (4),
//! `EXTRA_PACKETS` 24 (4), `REV_RATE` 24 (4), `SEND_ERR` 26 (1),
//! `EXTRA_LENGTH` 28 (4), `FIRST_TIMESTAMP` 32 (8), `PACKET_NUMBER` 32 (4),
//! `SEQUENCE_NUMBER` 36 (4), `PERFCTR` 40 (8). Multi-byte values are stored in
//! host byte order, except addresses, which are stored in network byte order as
//! Click does. As in Click, several annotations share bytes; elements that use
//! them document which.

/// Size of Click's user annotation area in bytes.
pub const USER_ANNO_SIZE: usize = 48;

/// Marker for an unset header offset.
pub const NO_HEADER: u16 = 0xFFFF;

/// A named annotation: offset into the user area and size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnnoInfo {
    /// Offset within the 48-byte user area.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
}

/// Click's named annotations, as accepted by `ANNO` arguments (e.g. `Paint(1, ANNO PAINT)`).
pub const NAMED_ANNOS: &[(&str, AnnoInfo)] = &[
    ("DST_IP", AnnoInfo { offset: 0, size: 4 }),
    (
        "DST_IP6",
        AnnoInfo {
            offset: 0,
            size: 16,
        },
    ),
    (
        "PAINT",
        AnnoInfo {
            offset: 16,
            size: 1,
        },
    ),
    (
        "ICMP_PARAMPROB",
        AnnoInfo {
            offset: 17,
            size: 1,
        },
    ),
    (
        "L4_PROTO",
        AnnoInfo {
            offset: 18,
            size: 1,
        },
    ),
    (
        "FIX_IP_SRC",
        AnnoInfo {
            offset: 19,
            size: 1,
        },
    ),
    (
        "VLAN_TCI",
        AnnoInfo {
            offset: 20,
            size: 2,
        },
    ),
    (
        "AGGREGATE",
        AnnoInfo {
            offset: 20,
            size: 4,
        },
    ),
    (
        "FWD_RATE",
        AnnoInfo {
            offset: 20,
            size: 4,
        },
    ),
    (
        "EXTRA_PACKETS",
        AnnoInfo {
            offset: 24,
            size: 4,
        },
    ),
    (
        "REV_RATE",
        AnnoInfo {
            offset: 24,
            size: 4,
        },
    ),
    (
        "SEND_ERR",
        AnnoInfo {
            offset: 26,
            size: 1,
        },
    ),
    (
        "EXTRA_LENGTH",
        AnnoInfo {
            offset: 28,
            size: 4,
        },
    ),
    (
        "FIRST_TIMESTAMP",
        AnnoInfo {
            offset: 32,
            size: 8,
        },
    ),
    (
        "PACKET_NUMBER",
        AnnoInfo {
            offset: 32,
            size: 4,
        },
    ),
    (
        "SEQUENCE_NUMBER",
        AnnoInfo {
            offset: 36,
            size: 4,
        },
    ),
    (
        "PERFCTR",
        AnnoInfo {
            offset: 40,
            size: 8,
        },
    ),
];

/// Offsets of Click's most used annotations, for element code.
pub mod offsets {
    /// `DST_IP_ANNO`: destination IPv4 address (network order).
    pub const DST_IP: usize = 0;
    /// `PAINT_ANNO`: one byte of colour.
    pub const PAINT: usize = 16;
    /// `ICMP_PARAMPROB_ANNO`.
    pub const ICMP_PARAMPROB: usize = 17;
    /// `L4_PROTO`: the transport protocol `L4Parser` found (after IPv6
    /// extension headers), 0 if none. linerate's, not Click's.
    pub const L4_PROTO: usize = 18;
    /// `FIX_IP_SRC_ANNO`.
    pub const FIX_IP_SRC: usize = 19;
    /// `VLAN_TCI_ANNO` (host order).
    pub const VLAN_TCI: usize = 20;
    /// `AGGREGATE_ANNO` (host order).
    pub const AGGREGATE: usize = 20;
    /// `EXTRA_PACKETS_ANNO`.
    pub const EXTRA_PACKETS: usize = 24;
    /// `EXTRA_LENGTH_ANNO`.
    pub const EXTRA_LENGTH: usize = 28;
    /// `FIRST_TIMESTAMP_ANNO`.
    pub const FIRST_TIMESTAMP: usize = 32;
    /// `PACKET_NUMBER_ANNO`.
    pub const PACKET_NUMBER: usize = 32;
    /// `SEQUENCE_NUMBER_ANNO`.
    pub const SEQUENCE_NUMBER: usize = 36;
}

/// Look up an annotation by Click name or by a plain byte offset (`"16"`).
pub fn anno_by_name(name: &str) -> Option<AnnoInfo> {
    if let Some((_, info)) = NAMED_ANNOS.iter().find(|(n, _)| *n == name) {
        return Some(*info);
    }
    let off: usize = name.parse().ok()?;
    (off < USER_ANNO_SIZE).then_some(AnnoInfo {
        offset: off,
        size: 1,
    })
}

/// The 64-byte annotation block. See the module documentation for the layout.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Anno {
    /// Timestamp in nanoseconds since the UNIX epoch (0 = unset).
    pub timestamp_ns: u64,
    /// 32-bit flow hash (0 = not computed).
    pub flow_hash: u32,
    /// Network header offset from the buffer head, [`NO_HEADER`] if unset.
    pub network_header: u16,
    /// Transport header offset from the buffer head, [`NO_HEADER`] if unset.
    pub transport_header: u16,
    /// Click's user annotation area.
    pub user: [u8; USER_ANNO_SIZE],
}

impl Default for Anno {
    fn default() -> Self {
        Anno::EMPTY
    }
}

impl Anno {
    /// A cleared annotation block.
    pub const EMPTY: Anno = Anno {
        timestamp_ns: 0,
        flow_hash: 0,
        network_header: NO_HEADER,
        transport_header: NO_HEADER,
        user: [0; USER_ANNO_SIZE],
    };

    /// Read a byte of the user area.
    #[inline]
    pub fn u8(&self, off: usize) -> u8 {
        self.user[off]
    }
    /// Write a byte of the user area.
    #[inline]
    pub fn set_u8(&mut self, off: usize, v: u8) {
        self.user[off] = v;
    }
    /// Read a host-order u16 of the user area.
    #[inline]
    pub fn u16(&self, off: usize) -> u16 {
        u16::from_ne_bytes([self.user[off], self.user[off + 1]])
    }
    /// Write a host-order u16 of the user area.
    #[inline]
    pub fn set_u16(&mut self, off: usize, v: u16) {
        self.user[off..off + 2].copy_from_slice(&v.to_ne_bytes());
    }
    /// Read a host-order u32 of the user area.
    #[inline]
    pub fn u32(&self, off: usize) -> u32 {
        let mut b = [0u8; 4];
        b.copy_from_slice(&self.user[off..off + 4]);
        u32::from_ne_bytes(b)
    }
    /// Write a host-order u32 of the user area.
    #[inline]
    pub fn set_u32(&mut self, off: usize, v: u32) {
        self.user[off..off + 4].copy_from_slice(&v.to_ne_bytes());
    }
    /// Read a host-order u64 of the user area.
    #[inline]
    pub fn u64(&self, off: usize) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.user[off..off + 8]);
        u64::from_ne_bytes(b)
    }
    /// Write a host-order u64 of the user area.
    #[inline]
    pub fn set_u64(&mut self, off: usize, v: u64) {
        self.user[off..off + 8].copy_from_slice(&v.to_ne_bytes());
    }
    /// `PAINT_ANNO`.
    #[inline]
    pub fn paint(&self) -> u8 {
        self.user[offsets::PAINT]
    }
    /// Set `PAINT_ANNO`.
    #[inline]
    pub fn set_paint(&mut self, v: u8) {
        self.user[offsets::PAINT] = v;
    }
    /// `DST_IP_ANNO` as an address.
    #[inline]
    pub fn dst_ip(&self) -> std::net::Ipv4Addr {
        std::net::Ipv4Addr::new(self.user[0], self.user[1], self.user[2], self.user[3])
    }
    /// Set `DST_IP_ANNO`.
    #[inline]
    pub fn set_dst_ip(&mut self, a: std::net::Ipv4Addr) {
        self.user[0..4].copy_from_slice(&a.octets());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_fixed() {
        assert_eq!(std::mem::size_of::<Anno>(), 64);
        assert_eq!(std::mem::offset_of!(Anno, timestamp_ns), 0);
        assert_eq!(std::mem::offset_of!(Anno, flow_hash), 8);
        assert_eq!(std::mem::offset_of!(Anno, network_header), 12);
        assert_eq!(std::mem::offset_of!(Anno, transport_header), 14);
        assert_eq!(std::mem::offset_of!(Anno, user), 16);
    }

    #[test]
    fn named_annotations() {
        assert_eq!(
            anno_by_name("PAINT"),
            Some(AnnoInfo {
                offset: 16,
                size: 1
            })
        );
        assert_eq!(anno_by_name("AGGREGATE").unwrap().size, 4);
        assert_eq!(anno_by_name("5"), Some(AnnoInfo { offset: 5, size: 1 }));
        assert_eq!(anno_by_name("48"), None);
        assert_eq!(anno_by_name("NOPE"), None);
        let mut a = Anno::EMPTY;
        a.set_u32(offsets::AGGREGATE, 0xdeadbeef);
        assert_eq!(a.u32(20), 0xdeadbeef);
        a.set_paint(7);
        assert_eq!(a.u8(16), 7);
        a.set_dst_ip(std::net::Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(&a.user[..4], &[10, 0, 0, 1]);
    }
}

//! The flow record that flow meters hand to exporters.
//!
//! `FlowAggregator` emits each finished flow as a packet whose data is one
//! [`FlowRecord`] in its in-memory layout (`#[repr(C)]`, host byte order);
//! exporters (`IPFIXExport`, `NetFlowV9Export`, `FlowCSV`, `FlowJSON`) read
//! it back with [`FlowRecord::at`] (in place) or [`FlowRecord::from_bytes`]
//! (a copy), which check the length and magic. Records never leave the
//! process in this form: exporters encode them in their own wire or text
//! format.

use linerate_runtime::flow::FlowKey;
use linerate_runtime::{Batch, Ctx};

/// Why a flow ended: IPFIX's `flowEndReason` (IANA element 136) codes.
pub mod end_reason {
    /// The flow was idle for the idle timeout.
    pub const IDLE_TIMEOUT: u8 = 1;
    /// The flow lasted the active timeout.
    pub const ACTIVE_TIMEOUT: u8 = 2;
    /// TCP FIN or RST seen (end of flow detected).
    pub const END_OF_FLOW: u8 = 3;
    /// Flushed at the end of the run or on a stop signal (forced end).
    pub const FORCED_END: u8 = 4;
    /// Evicted because a table was full (lack of resources).
    pub const LACK_OF_RESOURCES: u8 = 5;
}

/// Per-direction counters and features of a flow.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Direction {
    /// Packets.
    pub packets: u64,
    /// Bytes of IP (IPv4 total length or IPv6 40 + payload length).
    pub bytes: u64,
    /// First packet's timestamp, ns since the UNIX epoch.
    pub first_ns: u64,
    /// Last packet's timestamp, ns since the UNIX epoch.
    pub last_ns: u64,
    /// Smallest gap between consecutive packets, ns (0 with fewer than two).
    pub min_iat_ns: u64,
    /// Largest gap between consecutive packets, ns.
    pub max_iat_ns: u64,
    /// Smallest IP length.
    pub min_len: u16,
    /// Largest IP length.
    pub max_len: u16,
    /// IP length of the first packet.
    pub first_len: u16,
    /// IP length of the second packet (0 with fewer than two).
    pub second_len: u16,
    /// TCP flags seen (OR of every packet's flags byte; 0 for other protocols).
    pub tcp_flags: u8,
    /// IPv4 ToS or IPv6 traffic class of the first packet.
    pub tos: u8,
    /// Smallest TTL or hop limit.
    pub min_ttl: u8,
    /// Largest TTL or hop limit.
    pub max_ttl: u8,
    /// Padding (zero).
    pub _pad: [u8; 4],
}

/// One finished flow. `rev.packets == 0` means a one-way record (or a
/// biflow whose reverse direction carried nothing).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FlowRecord {
    /// [`FlowRecord::MAGIC`].
    pub magic: u32,
    /// Outer VLAN id (0 if none or not part of the key).
    pub vlan: u16,
    /// Why the flow ended ([`end_reason`]).
    pub end_reason: u8,
    /// 1 for a biflow record (RFC 5103), 0 otherwise.
    pub biflow: u8,
    /// The 5-tuple of the forward direction (the flow's first packet).
    pub key: FlowKey,
    /// Padding (zero).
    pub _pad: [u8; 2],
    /// Forward direction.
    pub fwd: Direction,
    /// Reverse direction (biflows only).
    pub rev: Direction,
}

impl FlowRecord {
    /// Marks packet data as a flow record.
    pub const MAGIC: u32 = 0x464c_5752;
    /// Size of a record in bytes.
    pub const SIZE: usize = std::mem::size_of::<FlowRecord>();

    /// The record's bytes (to become a packet's data).
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: FlowRecord is repr(C) with no implicit padding (explicit
        // `_pad` fields; FlowKey is repr(C), 38 bytes), so every byte is an
        // initialized integer byte.
        unsafe { std::slice::from_raw_parts(self as *const Self as *const u8, Self::SIZE) }
    }

    /// A record with every field zero except the magic.
    pub fn new() -> FlowRecord {
        // SAFETY: all-zero bytes are a valid FlowRecord (integers and arrays).
        let mut r: FlowRecord = unsafe { std::mem::zeroed() };
        r.magic = Self::MAGIC;
        r
    }

    /// The record that is packet data `b`: read in place where `b` is
    /// aligned for it (as `FlowAggregator`'s packets are: their data starts
    /// behind the pool's headroom), else copied into `copy`; `None` if the
    /// length or magic is wrong. Exporters read each record this way:
    /// [`from_bytes`](Self::from_bytes) copies its 176 bytes twice (into a
    /// value, then into the `Option`), and those copies were most of the
    /// 2.8 % of flowmon's samples in `memcpy` (session 28).
    #[inline]
    pub fn at<'a>(b: &'a [u8], copy: &'a mut Option<FlowRecord>) -> Option<&'a FlowRecord> {
        record_at(b, copy)
    }

    /// Read a record from packet data; `None` if the length or magic is wrong.
    pub fn from_bytes(b: &[u8]) -> Option<FlowRecord> {
        record_from(b)
    }

    /// Flow duration in ns over both directions.
    pub fn duration_ns(&self) -> u64 {
        let first = if self.rev.packets > 0 {
            self.fwd.first_ns.min(self.rev.first_ns)
        } else {
            self.fwd.first_ns
        };
        let last = self.fwd.last_ns.max(self.rev.last_ns);
        last.saturating_sub(first)
    }
}

/// An exporter's output: pass `batch` on to output 0, if the element has
/// one, without the packets that are not flow records (`rejected` of them,
/// which the exporter counted: its documentation says they are dropped).
/// A batch of records only, the usual case, goes on untouched.
pub(crate) fn pass_on(mut batch: Batch, rejected: u64, ctx: &mut Ctx<'_>) {
    if ctx.noutputs() == 0 {
        return;
    }
    if rejected > 0 {
        let mut copy = None;
        drop(batch.split_off_if(|p| FlowRecord::at(p.data(), &mut copy).is_none()));
    }
    ctx.push(0, batch);
}

/// A record that packets carry in its in-memory layout (`FlowRecord`,
/// `Microflow`), marked by a magic number.
///
/// # Safety
/// The type is `#[repr(C)]` of integers and byte arrays only: every bit
/// pattern of its size is a valid value.
pub(crate) unsafe trait PacketRecord: Copy {
    /// Whether the record carries its type's magic.
    fn has_magic(&self) -> bool;
}

// SAFETY: repr(C), integers and byte arrays only (see `as_bytes`).
unsafe impl PacketRecord for FlowRecord {
    fn has_magic(&self) -> bool {
        self.magic == Self::MAGIC
    }
}

/// The record that is packet data `b`, in place, when `b` is exactly one
/// record at an address aligned for it; `None` otherwise, or without the
/// magic. Reading in place matters: a record copied out and read back
/// waits on store-to-load forwarding (the copy's wide stores straddle the
/// fields read).
#[inline]
pub(crate) fn record_in<T: PacketRecord>(b: &[u8]) -> Option<&T> {
    let p = b.as_ptr();
    if !is_record_room::<T>(p, b.len()) {
        return None;
    }
    // SAFETY: `b` holds exactly `size_of::<T>()` bytes at an address aligned
    // for `T`, every bit pattern is a valid `T` (`PacketRecord`), and the
    // reference borrows `b`, so the bytes cannot change while it lives.
    let r = unsafe { &*(p as *const T) };
    r.has_magic().then_some(r)
}

/// Whether `len` bytes at `p` are exactly one `T` at an address aligned
/// for it.
#[inline(always)]
fn is_record_room<T>(p: *const u8, len: usize) -> bool {
    len == std::mem::size_of::<T>() && p.align_offset(std::mem::align_of::<T>()) == 0
}

/// Room for a record to be written in place: `b` as a `T` when it is
/// exactly one record at an address aligned for it, whatever its bytes
/// hold (no magic test: the writer sets every field).
#[inline]
pub(crate) fn record_in_mut<T: PacketRecord>(b: &mut [u8]) -> Option<&mut T> {
    let p = b.as_mut_ptr();
    if !is_record_room::<T>(p, b.len()) {
        return None;
    }
    // SAFETY: as in `record_in`: the size and alignment are checked, every
    // bit pattern is a valid `T`, and the reference borrows `b` mutably.
    Some(unsafe { &mut *(p as *mut T) })
}

/// The record that is packet data `b`, copied out (any alignment); `None`
/// if the length or magic is wrong.
#[inline]
pub(crate) fn record_from<T: PacketRecord>(b: &[u8]) -> Option<T> {
    if b.len() != std::mem::size_of::<T>() {
        return None;
    }
    // SAFETY: length checked; `read_unaligned` copes with any alignment, and
    // every bit pattern is a valid `T` (`PacketRecord`).
    let r: T = unsafe { std::ptr::read_unaligned(b.as_ptr() as *const T) };
    r.has_magic().then_some(r)
}

/// The record that is packet data `b`: in place ([`record_in`]) or, where
/// `b` is not aligned for it, copied into `copy`. `None` if `b` is no
/// record.
#[inline(always)]
pub(crate) fn record_at<'a, T: PacketRecord>(
    b: &'a [u8],
    copy: &'a mut Option<T>,
) -> Option<&'a T> {
    match record_in(b) {
        Some(r) => Some(r),
        None => {
            *copy = record_from(b);
            copy.as_ref()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_has_no_implicit_padding() {
        assert_eq!(std::mem::size_of::<FlowKey>(), 38);
        assert_eq!(std::mem::size_of::<Direction>(), 64);
        assert_eq!(std::mem::offset_of!(FlowRecord, fwd), 48);
        assert_eq!(FlowRecord::SIZE, 176);
    }

    #[test]
    fn round_trip_and_checks() {
        let mut r = FlowRecord::new();
        r.key.sport = 1234;
        r.key.version = 6;
        r.fwd.packets = 3;
        r.fwd.first_ns = 10;
        r.fwd.last_ns = 50;
        r.rev.packets = 1;
        r.rev.first_ns = 5;
        r.rev.last_ns = 60;
        r.end_reason = end_reason::END_OF_FLOW;
        let b = r.as_bytes().to_vec();
        assert_eq!(b.len(), FlowRecord::SIZE);
        assert_eq!(FlowRecord::from_bytes(&b), Some(r));
        assert_eq!(r.duration_ns(), 55);
        assert_eq!(FlowRecord::from_bytes(&b[1..]), None);
        let mut bad = b.clone();
        bad[0] ^= 1;
        assert_eq!(FlowRecord::from_bytes(&bad), None);
    }

    /// `at` reads an aligned record in place and copies a misaligned one;
    /// either way the record is `from_bytes`'s, and a wrong length or magic
    /// is none.
    #[test]
    fn at_reads_in_place_where_aligned() {
        let mut r = FlowRecord::new();
        r.key.dport = 443;
        r.fwd.packets = 7;
        r.fwd.bytes = 4_000;
        // Room to place the record at an aligned and a misaligned address.
        #[repr(C, align(8))]
        struct Aligned([u8; FlowRecord::SIZE + 16]);
        let mut words = Aligned([0; FlowRecord::SIZE + 16]);
        let buf = &mut words.0;
        for off in [0, 8, 1, 3] {
            buf[off..off + FlowRecord::SIZE].copy_from_slice(r.as_bytes());
            let b = &buf[off..off + FlowRecord::SIZE];
            let mut copy = None;
            let got = FlowRecord::at(b, &mut copy);
            assert_eq!(got, Some(&r), "offset {off}");
            let in_place = std::ptr::eq(got.unwrap() as *const FlowRecord as *const u8, b.as_ptr());
            assert_eq!(in_place, off % 8 == 0, "offset {off}");
            assert_eq!(copy.is_some(), off % 8 != 0, "offset {off}");
            let mut copy = None;
            assert_eq!(FlowRecord::at(&b[..FlowRecord::SIZE - 1], &mut copy), None);
        }
        let mut bad = r.as_bytes().to_vec();
        bad[0] ^= 1;
        assert_eq!(FlowRecord::at(&bad, &mut None), None);
    }
}

//! Hints to the processor shared by the elements' batch loops.

/// `_mm_prefetch`'s hints (x86-64's `_MM_HINT_T0` and `_MM_HINT_T1`).
const T0: i32 = 3;
const T1: i32 = 2;

/// Starts loading the cache line at `p` with the prefetch instruction of
/// hint `H` (nothing outside x86-64).
#[inline(always)]
fn prefetch_hint<const H: i32, T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint: it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<H>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Starts loading the cache line at `p` into all cache levels
/// (`prefetcht0` on x86-64; nothing elsewhere). Tables use it on a whole
/// batch's buckets before resolving any of them, so the misses overlap.
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    prefetch_hint::<T0, T>(p);
}

/// Starts loading the cache line at `p` into the second-level cache and
/// beyond, not the first (`prefetcht1` on x86-64; nothing elsewhere).
#[inline(always)]
pub(crate) fn prefetch_l2<T>(p: *const T) {
    prefetch_hint::<T1, T>(p);
}

/// How many packets ahead [`prefetch_ahead`] fetches.
const PACKET_AHEAD: usize = 8;

/// Batches longer than this get [`prefetch_ahead`]: their packets'
/// metadata (two lines each) and first frame lines no longer fit the L1
/// together, so each packet's have left it since the element before
/// wrote or read them. flowmon reads batches of 256 packets (32 KiB of
/// metadata alone); with L4Parser and MicroflowTable fetching ahead, one
/// core took 174.4 -> 170.9 ms on the inet trace cut to 96 bytes and
/// 221.6 -> 219.6 ms on the whole trace, and two replicas, whose owners
/// read frames the other core walked, 120.9 -> 99.1 and 126.3 -> 117.2 ms
/// (session 30, docs/performance.md). The element bench's batches of 32
/// fit the L1 and stay without: there the prefetches were instructions
/// for nothing (L4Parser, session 4; the table's hit row 1-2 % slower).
pub(crate) const PREFETCH_BATCH: usize = 128;

/// In a batch loop at packet `i` of `pkts`, start loading the
/// annotations of the packet [`PACKET_AHEAD`] further on and the line of
/// its frame after an Ethernet header (where parsers read the IP header).
/// `far` is `pkts.len() > PREFETCH_BATCH`, tested once before the loop.
#[inline(always)]
pub(crate) fn prefetch_ahead(pkts: &[linerate_runtime::Packet], i: usize, far: bool) {
    if far {
        if let Some(q) = pkts.get(i + PACKET_AHEAD) {
            prefetch(q.anno());
            prefetch(q.data().as_ptr().wrapping_add(14));
        }
    }
}

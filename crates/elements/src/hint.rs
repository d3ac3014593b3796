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

/// How many packets ahead a batch loop fetches with [`prefetch_packet`].
pub(crate) const PACKET_AHEAD: usize = 8;

/// Batches longer than this get [`prefetch_packet`]: their packets'
/// metadata (two lines each) and first frame lines no longer fit the L1
/// together, so each packet's have left it since the element before
/// wrote or read them. flowmon's batches of 256 packets (32 KiB of
/// metadata alone) on the inet trace cut to 96 bytes, one core: 174.1 ->
/// 171.2 ms with L4Parser and MicroflowTable fetching ahead (-1.7 %;
/// the table alone 172.5 -> 169.5, 171.7 -> 169.3 and 174.1 -> 172.2 in
/// three sittings), the whole trace 223.3 -> 220.1 ms (session 30). The
/// element bench's batches of 32 fit the L1 and stay without: there the
/// prefetches were instructions for nothing (L4Parser, session 4; the
/// table's hit row 1-2 % slower with them).
pub(crate) const PREFETCH_BATCH: usize = 128;

/// Starts loading packet `p`'s annotations and the line of its frame that
/// follows an Ethernet header (where parsers read the IP header).
#[inline(always)]
pub(crate) fn prefetch_packet(p: &linerate_runtime::Packet) {
    prefetch(p.anno());
    prefetch(p.data().as_ptr().wrapping_add(14));
}

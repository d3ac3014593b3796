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

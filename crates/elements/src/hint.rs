//! Hints to the processor shared by the elements' batch loops.

/// Starts loading the cache line at `p` into all cache levels
/// (`prefetcht0` on x86-64; nothing elsewhere). Tables use it on a whole
/// batch's buckets before resolving any of them, so the misses overlap.
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint: it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Starts loading the cache line at `p` into the second-level cache and
/// beyond, not the first (`prefetcht1` on x86-64; nothing elsewhere).
#[inline(always)]
pub(crate) fn prefetch_l2<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint: it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T1);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

//! Arrays backed by 2 MiB pages, for tables of megabytes that packets
//! index at random: a lookup then costs a cache miss, not also a TLB miss
//! and a page walk. Shared by the cuckoo tables, LPM and FlowAggregator.

/// Give `advice` (`MADV_HUGEPAGE`, `MADV_COLLAPSE`) for the whole 2 MiB
/// pages inside `bytes` bytes from `start`, memory the caller owns.
#[cfg(target_os = "linux")]
fn advise(start: usize, bytes: usize, advice: libc::c_int) {
    const HUGE: usize = 2 << 20;
    let (a, b) = (start.next_multiple_of(HUGE), (start + bytes) & !(HUGE - 1));
    if b > a {
        // SAFETY: the range lies inside an allocation the caller owns;
        // MADV_HUGEPAGE and MADV_COLLAPSE only change the size of the pages
        // backing it, never its contents. Failure (an older kernel, no
        // free huge page) is harmless and ignored.
        unsafe { libc::madvise(a as *mut libc::c_void, b - a, advice) };
    }
}

/// Ask the kernel to back `v` with 2 MiB pages: pages not touched yet get
/// them when first written (`MADV_HUGEPAGE`) and, with `collapse`, pages
/// already mapped with 4 KiB pages are folded into huge pages now
/// (`MADV_COLLAPSE`, Linux 6.1 and later; it also fills untouched ranges,
/// so it is for tables that are mostly written).
pub(crate) fn huge_pages<T>(v: &[T], collapse: bool) {
    #[cfg(target_os = "linux")]
    {
        let (start, bytes) = (v.as_ptr() as usize, std::mem::size_of_val(v));
        advise(start, bytes, libc::MADV_HUGEPAGE);
        if collapse {
            advise(start, bytes, libc::MADV_COLLAPSE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (v, collapse);
}

/// Types for which all-zero bytes are a valid value, the element type of
/// a [`Huge`] array.
///
/// # Safety
/// Implement only for integers, arrays of them and structs whose fields
/// are all of these (no references, `bool`s, enums or `NonZero`s); the
/// bytes of a struct's padding may hold anything.
pub(crate) unsafe trait Zeroed: Copy {}

// SAFETY: an integer.
unsafe impl Zeroed for u64 {}

/// A fixed-length, zero-filled array whose memory starts at a 2 MiB
/// boundary and is backed by 2 MiB pages where it spans one or more (a
/// random access to a table of tens of megabytes then costs a cache
/// miss, not also a TLB miss and a page walk). A `Vec`'s memory starts
/// wherever the allocator puts it, often inside the heap already mapped
/// with 4 KiB pages: a 2 MiB index there got no huge page at all, and a
/// grown slab only some (measured: a 4 KiB page walk every other
/// microflow in `FlowAggregator`).
pub(crate) struct Huge<T: Zeroed> {
    ptr: std::ptr::NonNull<T>,
    len: usize,
}

/// A fresh anonymous mapping of `bytes` (a multiple of 2 MiB) starting at
/// a 2 MiB boundary, advised into huge pages and populated now: the
/// kernel zero-fills its pages as it maps them, so nothing is written
/// twice (the allocator's memory had to be zeroed again by `memset`, after
/// the kernel had zeroed it on the first write), and no page faults are
/// left for the first packets. `None` if the mapping fails; a kernel
/// without `MADV_POPULATE_WRITE` (before Linux 5.14) leaves the pages to
/// be faulted in on first use, still zero.
#[cfg(target_os = "linux")]
fn map_zeroed(bytes: usize) -> Option<std::ptr::NonNull<u8>> {
    const HUGE: usize = 2 << 20;
    let span = bytes.checked_add(HUGE)?;
    let p = linerate_runtime::mem::map_anonymous(span)?.as_ptr();
    let (start, a) = (p as usize, (p as usize).next_multiple_of(HUGE));
    // SAFETY: the head and tail trimmed here lie inside the mapping just
    // made and are not used; the advice only changes how the kept range is
    // backed (all of it is zero either way).
    unsafe {
        if a > start {
            libc::munmap(p as *mut libc::c_void, a - start);
        }
        if start + span > a + bytes {
            libc::munmap((a + bytes) as *mut libc::c_void, start + span - (a + bytes));
        }
        libc::madvise(a as *mut libc::c_void, bytes, libc::MADV_HUGEPAGE);
        libc::madvise(a as *mut libc::c_void, bytes, libc::MADV_POPULATE_WRITE);
    }
    std::ptr::NonNull::new(a as *mut u8)
}

impl<T: Zeroed> Huge<T> {
    const PAGE: usize = 2 << 20;

    /// The allocation of `len` entries (`None` for no bytes).
    fn layout(len: usize) -> Option<std::alloc::Layout> {
        let bytes = len.checked_mul(std::mem::size_of::<T>())?;
        let align = if bytes >= Self::PAGE / 2 {
            Self::PAGE
        } else {
            std::mem::align_of::<T>()
        };
        let l = std::alloc::Layout::from_size_align(bytes.next_multiple_of(align), align);
        (bytes > 0).then(|| l.expect("table too large"))
    }

    /// Whether an allocation of layout `l` is a [`map_zeroed`] mapping (on
    /// Linux, every one of 1 MiB or more) rather than the allocator's.
    fn mapped(l: std::alloc::Layout) -> bool {
        cfg!(target_os = "linux") && l.align() == Self::PAGE
    }

    /// `len` all-zero entries.
    pub(crate) fn new(len: usize) -> Huge<T> {
        let Some(l) = Self::layout(len) else {
            return Huge {
                ptr: std::ptr::NonNull::dangling(),
                len,
            };
        };
        #[cfg(target_os = "linux")]
        let p = if Self::mapped(l) {
            map_zeroed(l.size()).map_or(std::ptr::null_mut(), |p| p.as_ptr())
        } else {
            // SAFETY: `l` has a non-zero size.
            unsafe { std::alloc::alloc_zeroed(l) }
        };
        #[cfg(not(target_os = "linux"))]
        // SAFETY: `l` has a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(l) };
        let Some(ptr) = std::ptr::NonNull::new(p as *mut T) else {
            std::alloc::handle_alloc_error(l)
        };
        // All-zero bytes are a valid `T` (`Zeroed`).
        Huge { ptr, len }
    }
}

impl<T: Zeroed> std::ops::Deref for Huge<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` holds `len` initialized entries (or is dangling
        // with no bytes) and lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Zeroed> std::ops::DerefMut for Huge<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as `deref`, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Zeroed> Drop for Huge<T> {
    fn drop(&mut self) {
        let Some(l) = Self::layout(self.len) else {
            return;
        };
        #[cfg(target_os = "linux")]
        if Self::mapped(l) {
            // SAFETY: mapped by `map_zeroed` with this size; the entries
            // are not used after this.
            unsafe { libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, l.size()) };
            return;
        }
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr() as *mut u8, l) };
    }
}

// SAFETY: `Huge` owns its entries like a `Box<[T]>`.
unsafe impl<T: Zeroed + Send> Send for Huge<T> {}

#[cfg(test)]
mod tests {
    use super::Huge;

    #[test]
    fn arrays_are_zeroed_and_large_ones_start_on_a_2_mib_boundary() {
        // Small (allocator) and large (mapped) arrays, each written all
        // over, dropped and made again: a new one is zero, whatever memory
        // it reuses.
        for len in [1usize, 1000, (1 << 20) / 8, (3 << 20) / 8 + 5] {
            for _ in 0..3 {
                let mut v = Huge::<u64>::new(len);
                assert_eq!(v.len(), len);
                assert!(v.iter().all(|&x| x == 0), "len {len}");
                if len * 8 >= 1 << 20 {
                    assert_eq!(v.as_ptr() as usize % (2 << 20), 0, "len {len}");
                }
                v.fill(u64::MAX);
                assert_eq!(v[len - 1], u64::MAX);
            }
        }
        assert!(Huge::<u64>::new(0).is_empty());
    }
}

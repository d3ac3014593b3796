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

// SAFETY: integers.
unsafe impl Zeroed for u64 {}
unsafe impl Zeroed for u32 {}
// SAFETY: integers.
#[cfg(test)]
unsafe impl Zeroed for (u64, u64) {}

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
    /// Whether mapped pages are populated when made (see [`Huge::lazy`]).
    populate: bool,
}

/// A fresh anonymous mapping of `bytes` (a multiple of the page size),
/// populated now if `populate` (else as its pages are first touched): the
/// kernel zero-fills its pages as it maps them, so nothing is written
/// twice (the allocator's memory had to be zeroed again by `memset`, after
/// the kernel had zeroed it on the first write), and, populated, no page
/// faults are left for the first packets. With `huge` (`bytes` a
/// multiple of 2 MiB) it starts at a 2 MiB boundary and is advised into
/// huge pages first. `None` if the mapping fails; a kernel without
/// `MADV_POPULATE_WRITE` (before Linux 5.14) leaves the pages to be
/// faulted in on first use, still zero.
///
/// Populating matters for arrays below a huge page too: the allocator's
/// fresh memory maps the shared zero page on a first read, and the first
/// write after it is a copy-on-write fault whose TLB flush interrupts
/// every other core running the process (in replicated mode, the other
/// replicas: `do_wp_page` under `FlowAggregator`'s inserts was 1-2 % of a
/// two-core run's samples).
///
/// With `old`, a huge mapping of this kind (address and size, less than
/// `bytes`), its pages are moved to the head of the new mapping (`mremap`:
/// page tables moved, nothing copied or zeroed again) and only the rest is
/// populated (if at all); `old` is gone then, and untouched if this
/// returns `None`.
#[cfg(target_os = "linux")]
fn map_zeroed(
    bytes: usize,
    huge: bool,
    old: Option<(*mut u8, usize)>,
    populate: bool,
) -> Option<std::ptr::NonNull<u8>> {
    const HUGE: usize = 2 << 20;
    let span = if huge {
        bytes.checked_add(HUGE)?
    } else {
        bytes
    };
    let p = linerate_runtime::mem::map_anonymous(span)?.as_ptr();
    let (start, a) = (p as usize, (p as usize).next_multiple_of(HUGE));
    // SAFETY: the head and tail trimmed here lie inside the mapping just
    // made and are not used; the advice only changes how the kept range is
    // backed (all of it is zero either way).
    unsafe {
        if !huge {
            if populate {
                libc::madvise(p as *mut libc::c_void, bytes, libc::MADV_POPULATE_WRITE);
            }
            return std::ptr::NonNull::new(p);
        }
        if a > start {
            libc::munmap(p as *mut libc::c_void, a - start);
        }
        if start + span > a + bytes {
            libc::munmap((a + bytes) as *mut libc::c_void, start + span - (a + bytes));
        }
        libc::madvise(a as *mut libc::c_void, bytes, libc::MADV_HUGEPAGE);
        let mut fresh = a;
        if let Some((o, n)) = old {
            let flags = libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED;
            let to = a as *mut libc::c_void;
            if libc::mremap(o as *mut libc::c_void, n, n, flags, to) == libc::MAP_FAILED {
                libc::munmap(to, bytes);
                return None;
            }
            fresh += n;
        }
        if populate {
            libc::madvise(
                fresh as *mut libc::c_void,
                a + bytes - fresh,
                libc::MADV_POPULATE_WRITE,
            );
        }
    }
    std::ptr::NonNull::new(a as *mut u8)
}

impl<T: Zeroed> Huge<T> {
    const PAGE: usize = 2 << 20;
    /// Arrays of this many bytes or more are fresh mappings.
    const MAPPED: usize = 64 << 10;

    /// The allocation of `len` entries (`None` for no bytes).
    fn layout(len: usize) -> Option<std::alloc::Layout> {
        let bytes = len.checked_mul(std::mem::size_of::<T>())?;
        let align = if bytes >= Self::PAGE / 2 {
            Self::PAGE
        } else if bytes >= Self::MAPPED {
            4096
        } else {
            std::mem::align_of::<T>()
        };
        let l = std::alloc::Layout::from_size_align(bytes.next_multiple_of(align), align);
        (bytes > 0).then(|| l.expect("table too large"))
    }

    /// Whether an allocation of layout `l` is a [`map_zeroed`] mapping (on
    /// Linux, every one of 64 KiB or more; from 1 MiB on, of huge pages)
    /// rather than the allocator's.
    fn mapped(l: std::alloc::Layout) -> bool {
        cfg!(target_os = "linux") && l.size() >= Self::MAPPED
    }

    /// `len` all-zero entries.
    pub(crate) fn new(len: usize) -> Huge<T> {
        Self::make(len, true)
    }

    /// `len` all-zero entries whose pages, where the array is a mapping,
    /// are mapped as they are first touched rather than now: for an array
    /// written in order before it is read (a slab handed out from its
    /// start), whose tail may never be needed. Populating is for arrays
    /// read at random: a first read of an untouched page maps the shared
    /// zero page, and the write after it takes a copy-on-write fault (see
    /// [`map_zeroed`]); a first write maps a zeroed page at once. Growing
    /// keeps the choice.
    pub(crate) fn lazy(len: usize) -> Huge<T> {
        Self::make(len, false)
    }

    fn make(len: usize, populate: bool) -> Huge<T> {
        let Some(l) = Self::layout(len) else {
            return Huge {
                ptr: std::ptr::NonNull::dangling(),
                len,
                populate,
            };
        };
        #[cfg(target_os = "linux")]
        let p = if Self::mapped(l) {
            map_zeroed(l.size(), l.align() == Self::PAGE, None, populate)
                .map_or(std::ptr::null_mut(), |p| p.as_ptr())
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
        Huge { ptr, len, populate }
    }

    /// Lengthen the array to `len` entries (at least as many as now), the
    /// new ones zero. A huge mapping's pages move into the longer one
    /// (see [`map_zeroed`]); anything else is copied.
    pub(crate) fn grow(&mut self, len: usize) {
        assert!(len >= self.len, "Huge::grow cannot shrink");
        #[cfg(target_os = "linux")]
        if let (Some(o), Some(l)) = (Self::layout(self.len), Self::layout(len)) {
            if o.align() == Self::PAGE && l.align() == Self::PAGE {
                let old = (self.ptr.as_ptr() as *mut u8, o.size());
                if let Some(p) = map_zeroed(l.size(), true, Some(old), self.populate) {
                    // The old mapping's pages are the new one's head.
                    (self.ptr, self.len) = (p.cast(), len);
                    return;
                }
            }
        }
        let mut v = Huge::make(len, self.populate);
        v[..self.len].copy_from_slice(self);
        *self = v;
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
            // SAFETY: mapped by `map_zeroed` with this size (a huge one
            // trimmed to it); the entries are not used after this.
            unsafe { libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, l.size()) };
            return;
        }
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr() as *mut u8, l) };
    }
}

// SAFETY: `Huge` owns its entries like a `Box<[T]>`.
unsafe impl<T: Zeroed + Send> Send for Huge<T> {}

/// A binary min-heap whose entries live in a [`Huge`] array, mapped lazily
/// and grown by moving its 2 MiB pages: a heap that only grows (a flow
/// table's deadlines, pushed for every new flow and popped only as they
/// come due) takes a page fault every 2 MiB, where `BinaryHeap`'s vector
/// took one every 4 KiB (1,445 faults, 4 % of flowmon's time on a 2 M
/// packet trace, session 36).
pub(crate) struct MinHeap<T: Zeroed + Ord> {
    v: Huge<T>,
    len: usize,
}

impl<T: Zeroed + Ord> MinHeap<T> {
    /// An empty heap with room for a 2 MiB page of entries (mapped when
    /// first written).
    pub(crate) fn new() -> MinHeap<T> {
        MinHeap {
            v: Huge::lazy(((2 << 20) / std::mem::size_of::<T>().max(1)).max(1)),
            len: 0,
        }
    }

    /// The smallest entry.
    #[inline]
    pub(crate) fn peek(&self) -> Option<&T> {
        self.v[..self.len].first()
    }

    pub(crate) fn push(&mut self, x: T) {
        if self.len == self.v.len() {
            self.v.grow(self.len * 2);
        }
        let mut i = self.len;
        self.len += 1;
        while i > 0 {
            let up = (i - 1) / 2;
            if self.v[up] <= x {
                break;
            }
            self.v[i] = self.v[up];
            i = up;
        }
        self.v[i] = x;
    }

    /// Remove and return the smallest entry.
    pub(crate) fn pop(&mut self) -> Option<T> {
        let n = self.len.checked_sub(1)?;
        let top = self.v[0];
        let x = self.v[n];
        self.len = n;
        if n > 0 {
            let mut i = 0;
            loop {
                let mut c = 2 * i + 1;
                if c >= n {
                    break;
                }
                if c + 1 < n && self.v[c + 1] < self.v[c] {
                    c += 1;
                }
                if x <= self.v[c] {
                    break;
                }
                self.v[i] = self.v[c];
                i = c;
            }
            self.v[i] = x;
        }
        Some(top)
    }

    /// Remove every entry (the memory stays).
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::{Huge, MinHeap};

    /// How many of `v`'s pages are mapped (`mincore`; `v` starts on a
    /// page boundary).
    #[cfg(target_os = "linux")]
    fn resident_pages(v: &[u64]) -> usize {
        let pages = (v.len() * 8).div_ceil(4096);
        let mut vec = vec![0u8; pages];
        // SAFETY: `v` is page-aligned here and spans `pages` pages; `vec`
        // has a byte for each.
        let r = unsafe {
            libc::mincore(
                v.as_ptr() as *mut libc::c_void,
                v.len() * 8,
                vec.as_mut_ptr(),
            )
        };
        assert_eq!(r, 0, "mincore");
        vec.iter().filter(|&&b| b & 1 == 1).count()
    }

    /// Whether every page of `v` is mapped.
    #[cfg(target_os = "linux")]
    fn resident(v: &[u64]) -> bool {
        resident_pages(v) == (v.len() * 8).div_ceil(4096)
    }

    #[test]
    fn arrays_are_zeroed_and_mapped_ones_start_on_a_page_boundary() {
        // Small (allocator) and large (mapped) arrays, each written all
        // over, dropped and made again: a new one is zero, whatever memory
        // it reuses.
        for len in [
            1usize,
            1000,
            (64 << 10) / 8,
            (1 << 20) / 8 - 1,
            (1 << 20) / 8,
            (3 << 20) / 8 + 5,
        ] {
            for _ in 0..3 {
                let mut v = Huge::<u64>::new(len);
                assert_eq!(v.len(), len);
                #[cfg(target_os = "linux")]
                if len * 8 >= 64 << 10 {
                    assert!(resident(&v), "len {len}: mapped arrays are populated");
                }
                assert!(v.iter().all(|&x| x == 0), "len {len}");
                if len * 8 >= 1 << 20 {
                    assert_eq!(v.as_ptr() as usize % (2 << 20), 0, "len {len}");
                } else if len * 8 >= 64 << 10 {
                    assert_eq!(v.as_ptr() as usize % 4096, 0, "len {len}");
                }
                v.fill(u64::MAX);
                assert_eq!(v[len - 1], u64::MAX);
            }
        }
        assert!(Huge::<u64>::new(0).is_empty());
    }

    #[test]
    fn grown_arrays_keep_their_entries_and_add_zeros() {
        // From nothing, within the allocator, from the allocator to a
        // mapping, from a mapping to a larger one (moved), twice.
        let lens = [
            0usize,
            3,
            1000,
            (1 << 20) / 8,
            (3 << 20) / 8 + 5,
            (8 << 20) / 8,
        ];
        let mut v = Huge::<u64>::new(0);
        for w in lens.windows(2) {
            v.grow(w[1]);
            assert_eq!(v.len(), w[1]);
            for (i, &x) in v.iter().enumerate() {
                let want = if i < w[0] { i as u64 * 7 + 1 } else { 0 };
                assert_eq!(x, want, "grown {} -> {}: entry {i}", w[0], w[1]);
            }
            for (i, x) in v.iter_mut().enumerate() {
                *x = i as u64 * 7 + 1;
            }
            if w[1] * 8 >= 1 << 20 {
                assert_eq!(v.as_ptr() as usize % (2 << 20), 0);
                #[cfg(target_os = "linux")]
                assert!(resident(&v));
            }
        }
    }

    proptest::proptest! {
        /// The heap gives what `BinaryHeap` gives, through pushes, pops and
        /// clears, and as its array grows (from 4 entries here, not a
        /// page's worth, so that it grows several times).
        #[test]
        fn min_heap_pops_as_binary_heap_does(
            ops in proptest::collection::vec((0u8..10, 0u64..50), 0..3000),
        ) {
            let mut h = MinHeap::<(u64, u64)> { v: Huge::lazy(4), len: 0 };
            let mut want = std::collections::BinaryHeap::new();
            for (i, (op, t)) in ops.into_iter().enumerate() {
                match op {
                    0..=5 => {
                        h.push((t, i as u64));
                        want.push(std::cmp::Reverse((t, i as u64)));
                    }
                    6..=8 => proptest::prop_assert_eq!(h.pop(), want.pop().map(|r| r.0)),
                    _ if t == 0 => {
                        h.clear();
                        want.clear();
                    }
                    _ => {}
                }
                proptest::prop_assert_eq!(h.peek(), want.peek().map(|r| &r.0));
                proptest::prop_assert_eq!(h.len, want.len());
            }
            while let Some(r) = want.pop() {
                proptest::prop_assert_eq!(h.pop(), Some(r.0));
            }
            proptest::prop_assert_eq!(h.pop(), None);
        }
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn lazy_arrays_map_pages_as_they_are_written_and_grow_lazily() {
        let half = (8 << 20) / 8;
        let mut v = Huge::<u64>::lazy(half);
        assert_eq!(resident_pages(&v), 0, "nothing mapped before a write");
        v[0] = 7;
        v[half - 1] = 9;
        let r = resident_pages(&v);
        // A 4 KiB or a 2 MiB page at each end.
        assert!((2..=1024).contains(&r), "{r} pages mapped after two writes");
        v.grow(2 * half);
        assert_eq!(
            resident_pages(&v[half..]),
            0,
            "the added half is not populated"
        );
        assert_eq!((v[0], v[half - 1]), (7, 9));
        assert!(v[half..].iter().all(|&x| x == 0));
        v[2 * half - 1] = 1;
        assert_eq!(v[2 * half - 1], 1);
    }
}

//! Memory straight from the kernel, for the packet pool's slabs and the
//! element library's large tables.

use std::ptr::NonNull;

/// A fresh private anonymous mapping of `bytes` bytes, readable and
/// writable, page-aligned: zero, and faulted in page by page on first use
/// (so, unlike the allocator's `alloc_zeroed` with an alignment above 16
/// bytes, nothing is written with `memset`). `None` if the mapping fails.
/// Unmap with `libc::munmap` and the same size.
#[cfg(unix)]
pub fn map_anonymous(bytes: usize) -> Option<NonNull<u8>> {
    // SAFETY: a new private anonymous mapping; no existing memory changes.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    NonNull::new(p as *mut u8)
}

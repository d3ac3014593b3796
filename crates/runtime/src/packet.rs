//! Packets: pre-allocated buffers from per-thread pools, Click-style
//! annotations, cheap clones with copy-on-write, and zero-copy views of
//! external read-only memory (memory-mapped trace files).
//!
//! # Memory layout
//! A pool block is 2,304 bytes: 128 bytes of metadata ([`Meta`]: 64 bytes of
//! runtime fields, then the 64-byte [`Anno`] block), followed by a 2,176-byte
//! buffer area holding [`HEADROOM`] (128) bytes of headroom and
//! [`DATA_ROOM`] (2,048) bytes for data and tailroom. Packets larger than
//! that (jumbo frames, snap lengths up to 64 KiB, reassembled datagrams) use a
//! heap block of the needed size; that is the only per-packet heap
//! allocation, and it happens only for such packets.
//!
//! # Pools
//! Blocks come from a global pool of 4,096-block slabs, fronted by a
//! per-thread cache (DPDK's mempool design): allocation and release touch only
//! the thread-local cache, which exchanges 256 blocks at a time with the
//! global pool. A packet released on another thread than the one that
//! allocated it simply goes into that thread's cache.
//!
//! # Sharing
//! [`Packet::clone`] (Click's `clone()`, used by Tee) makes a new handle whose
//! data points into the original's buffer and holds a reference on it; the
//! first write through [`Packet::data_mut`] (or a `push`/`put` that needs room)
//! copies the data into a buffer of its own (Click's `uniqueify()`).
//! [`Packet::from_external`] wraps read-only memory owned by something that
//! outlives every packet it is read through (in practice an element's file
//! mapping: elements live as long as their router, packets never outlive the
//! router, and dropping a packet never reads its data); it is copied on
//! first write.

use crate::anno::{Anno, NO_HEADER};
use std::cell::UnsafeCell;
use std::ptr::{self, NonNull};
use std::sync::atomic::{fence, AtomicU32, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Bytes of headroom in front of freshly allocated packet data.
pub const HEADROOM: usize = 128;
/// Bytes for data and tailroom in a pool block.
pub const DATA_ROOM: usize = 2048;
const META_SIZE: usize = 128;
const AREA: usize = HEADROOM + DATA_ROOM;
const BLOCK: usize = META_SIZE + AREA;
const SLAB_BLOCKS: usize = 4096;
/// Distance between the blocks of a slab: an odd number of 64-byte lines,
/// so that consecutive blocks' metadata and first data lines fall in every
/// L1 set in turn. With the 36 lines of `BLOCK` (a multiple of 4) they
/// shared 16 of the 64 sets of a 48 KiB, 12-way L1d: a burst of 128 packets
/// put 16 lines in each of those sets and missed; a burst of 64 ran 5 %
/// slower than with the padding (`docs/performance.md`, session 15). DPDK's
/// mempool pads its objects in the same way, for its memory channels.
const STRIDE: usize = BLOCK + 64;
const _: () = assert!(STRIDE.is_multiple_of(64) && !(STRIDE / 64).is_multiple_of(2));
const CACHE_MAX: usize = 1024;
const EXCHANGE: usize = 256;

const KIND_POOL: u8 = 0;
const KIND_HEAP: u8 = 1;

/// Per-packet runtime metadata (first cache line) and annotations (second).
#[repr(C, align(64))]
pub(crate) struct Meta {
    data: *mut u8,
    head: *mut u8,
    len: u32,
    cap: u32,
    /// Block whose buffer holds our data (a clone's source), or null.
    owner: *mut Meta,
    /// References to this block's buffer: the block's own handle plus clones.
    refcnt: AtomicU32,
    kind: u8,
    external: u8,
    anno: Anno,
}

const _: () = assert!(std::mem::size_of::<Meta>() == META_SIZE);
const _: () =
    assert!(std::mem::offset_of!(Meta, len) == 16 && std::mem::offset_of!(Meta, cap) == 20);
const _: () = assert!(std::mem::offset_of!(Meta, refcnt) == 32);
const _: () =
    assert!(std::mem::offset_of!(Meta, kind) == 36 && std::mem::offset_of!(Meta, external) == 37);
const _: () = assert!(
    cfg!(target_endian = "little"),
    "init_meta packs fields for little-endian targets"
);
const _: () = assert!(std::mem::offset_of!(Meta, anno) == 64);
const _: () = assert!(
    std::mem::offset_of!(Anno, network_header) == 12
        && std::mem::offset_of!(Anno, transport_header) == 14
        && NO_HEADER == u16::MAX
);

struct SendPtr(*mut Meta);
// SAFETY: free blocks are plain memory owned by the pool; moving their
// addresses between threads is sound.
unsafe impl Send for SendPtr {}

static GLOBAL_FREE: Mutex<Vec<SendPtr>> = Mutex::new(Vec::new());
static SLABS: AtomicUsize = AtomicUsize::new(0);
static HEAP_LIVE: AtomicUsize = AtomicUsize::new(0);

struct LocalCache {
    free: Vec<*mut Meta>,
}

impl Drop for LocalCache {
    fn drop(&mut self) {
        if let Ok(mut g) = GLOBAL_FREE.lock() {
            g.extend(self.free.drain(..).map(SendPtr));
        }
    }
}

thread_local! {
    static CACHE: UnsafeCell<LocalCache> = const { UnsafeCell::new(LocalCache { free: Vec::new() }) };
}

fn block_layout(area: usize) -> std::alloc::Layout {
    // META_SIZE + area never overflows for area <= u32::MAX.
    std::alloc::Layout::from_size_align(META_SIZE + area, 64).expect("valid block layout")
}

/// Zeroed memory for a slab (never freed: the pool keeps its slabs), so
/// headroom exposed by `push` is always initialised memory. On Unix a
/// fresh anonymous mapping, which the kernel zero-fills page by page as
/// blocks are first used: the allocator's aligned `alloc_zeroed` wrote all
/// 9 MiB with `memset` while holding the pool's lock, faulting in every
/// page, about half the CPU time of starting a short run.
fn slab_memory(layout: std::alloc::Layout) -> *mut u8 {
    #[cfg(unix)]
    if let Some(p) = crate::mem::map_anonymous(layout.size()) {
        // Page-aligned, which covers the layout's alignment.
        return p.as_ptr();
    }
    // SAFETY: non-zero size layout.
    unsafe { std::alloc::alloc_zeroed(layout) }
}

fn new_slab(out: &mut Vec<SendPtr>) {
    let layout =
        std::alloc::Layout::from_size_align(STRIDE * SLAB_BLOCKS, 4096).expect("slab layout");
    let base = slab_memory(layout);
    if base.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    SLABS.fetch_add(1, Ordering::Relaxed);
    for i in 0..SLAB_BLOCKS {
        // SAFETY: within the slab just allocated.
        out.push(SendPtr(unsafe { base.add(i * STRIDE) } as *mut Meta));
    }
}

#[cold]
fn refill(cache: &mut LocalCache) {
    let mut g = GLOBAL_FREE.lock().unwrap_or_else(|e| e.into_inner());
    if g.len() < EXCHANGE {
        new_slab(&mut g);
    }
    let n = g.len() - EXCHANGE;
    cache.free.extend(g.drain(n..).map(|p| p.0));
}

#[cold]
fn spill(cache: &mut LocalCache) {
    let mut g = GLOBAL_FREE.lock().unwrap_or_else(|e| e.into_inner());
    let n = cache.free.len().saturating_sub(EXCHANGE);
    g.extend(cache.free.drain(n..).map(SendPtr));
}

/// Run `f` on the calling thread's cache. `f` runs in the caller, not in
/// a closure handed to `LocalKey::with`: a packet loop inside that closure
/// was compiled as a function of its own, with its captured values read
/// through pointers (MemoryReplay's view loop, 150 -> 161 instructions a
/// packet when unrelated code changed the inlining).
#[inline]
fn with_cache<R>(f: impl FnOnce(&mut LocalCache) -> R) -> R {
    let c = CACHE.with(UnsafeCell::get);
    // SAFETY: the cache is thread-local (the pointer is this thread's, and
    // the thread is running, so it is alive) and never borrowed
    // re-entrantly: the closures below do not call back into the pool.
    f(unsafe { &mut *c })
}

#[inline]
fn pool_get(cache: &mut LocalCache) -> *mut Meta {
    if cache.free.is_empty() {
        refill(cache);
    }
    // refill guarantees EXCHANGE blocks.
    cache.free.pop().unwrap_or(ptr::null_mut())
}

/// Return a block to the pool or heap. `m` must have no remaining references.
#[inline]
unsafe fn return_block(cache: &mut LocalCache, m: *mut Meta) {
    if (*m).kind == KIND_POOL {
        if cache.free.len() >= CACHE_MAX {
            spill(cache);
        }
        cache.free.push(m);
    } else {
        let area = (*m).cap as usize;
        HEAP_LIVE.fetch_sub(1, Ordering::Relaxed);
        std::alloc::dealloc(m as *mut u8, block_layout(area));
    }
}

/// Drop one reference to `m`'s buffer, returning the block when it was the last.
#[inline]
unsafe fn unref_block(cache: &mut LocalCache, m: *mut Meta) {
    let rc = &(*m).refcnt;
    if rc.load(Ordering::Relaxed) == 1 || rc.fetch_sub(1, Ordering::Release) == 1 {
        fence(Ordering::Acquire);
        return_block(cache, m);
    }
}

/// Release a packet handle's block and its reference on a clone source.
#[inline]
unsafe fn release(cache: &mut LocalCache, m: *mut Meta) {
    let owner = (*m).owner;
    if !owner.is_null() {
        unref_block(cache, owner);
    }
    unref_block(cache, m);
}

/// Initialise a block's metadata in place. Fields are written one by one
/// (not as one struct value built on the stack and copied: that copy costs
/// store-forwarding stalls on the hot allocation path).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn init_meta(
    m: *mut Meta,
    head: *mut u8,
    cap: u32,
    headroom: usize,
    len: u32,
    kind: u8,
    external: bool,
    ts_ns: u64,
) {
    use std::ptr::addr_of_mut;
    addr_of_mut!((*m).data).write(head.add(headroom));
    addr_of_mut!((*m).head).write(head);
    // `len` and `cap` are adjacent u32s, and `refcnt`, `kind`, `external`
    // share the next 8 bytes (see the layout assertions): one 64-bit store
    // each instead of five narrow ones.
    (addr_of_mut!((*m).len) as *mut u64).write(len as u64 | (cap as u64) << 32);
    addr_of_mut!((*m).owner).write(ptr::null_mut());
    (addr_of_mut!((*m).refcnt) as *mut u64)
        .write(1 | (kind as u64) << 32 | (external as u64) << 40);
    // The timestamp goes in with the rest of the annotations (one write of
    // each byte: measured one store a packet less in FromDump's loop).
    addr_of_mut!((*m).anno).write(Anno {
        timestamp_ns: ts_ns,
        ..Anno::EMPTY
    });
}

/// Pool statistics, for tests and the run summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Blocks ever carved from slabs.
    pub blocks: usize,
    /// Heap blocks (large packets) currently alive.
    pub heap_live: usize,
}

/// Current pool statistics.
pub fn pool_stats() -> PoolStats {
    PoolStats {
        blocks: SLABS.load(Ordering::Relaxed) * SLAB_BLOCKS,
        heap_live: HEAP_LIVE.load(Ordering::Relaxed),
    }
}

/// Number of free blocks in the calling thread's cache plus the global pool.
pub fn pool_free_blocks() -> usize {
    local_free_blocks() + GLOBAL_FREE.lock().map(|g| g.len()).unwrap_or(0)
}

/// Number of free blocks in the calling thread's cache alone (unaffected by
/// other threads, unlike [`pool_free_blocks`]).
pub fn local_free_blocks() -> usize {
    with_cache(|c| c.free.len())
}

/// A packet: an owned handle on a buffer with data, headroom, tailroom and annotations.
///
/// Moving a `Packet` is moving one pointer. Dropping it returns its buffer to
/// the calling thread's pool.
#[repr(transparent)]
pub struct Packet {
    m: NonNull<Meta>,
}

// SAFETY: a Packet is the unique handle on its metadata; shared buffers are
// reference-counted atomically, and only read through shared handles.
unsafe impl Send for Packet {}

impl Packet {
    #[inline]
    fn meta(&self) -> &Meta {
        // SAFETY: the handle owns a live block.
        unsafe { self.m.as_ref() }
    }

    #[inline]
    fn meta_mut(&mut self) -> &mut Meta {
        // SAFETY: the handle uniquely owns its metadata.
        unsafe { self.m.as_mut() }
    }

    /// Allocate a packet of `len` bytes (contents unspecified but initialised
    /// memory is not guaranteed: callers write the data) with [`HEADROOM`]
    /// bytes of headroom. Data is zero-filled.
    #[inline]
    pub fn new(len: usize) -> Packet {
        let mut p = Self::uninit(HEADROOM, len);
        p.data_mut_unchecked().fill(0);
        p
    }

    /// Allocate a packet holding a copy of `data`.
    #[inline]
    pub fn from_slice(data: &[u8]) -> Packet {
        let mut p = Self::uninit(HEADROOM, data.len());
        p.data_mut_unchecked().copy_from_slice(data);
        p
    }

    /// Allocate a packet of `len` bytes whose data `fill` writes in place,
    /// for data built field by field (a record): no zero fill as in
    /// [`Packet::new`], and no staging value on the stack to copy as in
    /// [`Packet::from_slice`] (read back in wider loads than it was
    /// written in, such a value stalls on store forwarding). The bytes
    /// `fill` finds are a reused buffer's (an earlier packet's data, or
    /// zeros), never uninitialised memory; it must overwrite all of them.
    #[inline]
    pub fn filled(len: usize, fill: impl FnOnce(&mut [u8])) -> Packet {
        let mut p = Self::uninit(HEADROOM, len);
        fill(p.data_mut_unchecked());
        p
    }

    /// Allocate with the given headroom and length; the data bytes are
    /// whatever the buffer held before and must be overwritten by the caller.
    #[inline]
    fn uninit(headroom: usize, len: usize) -> Packet {
        if headroom + len <= AREA {
            with_cache(|c| {
                let m = pool_get(c);
                // SAFETY: m is a free pool block of BLOCK bytes.
                unsafe {
                    let head = (m as *mut u8).add(META_SIZE);
                    init_meta(
                        m,
                        head,
                        AREA as u32,
                        headroom,
                        len as u32,
                        KIND_POOL,
                        false,
                        0,
                    );
                    Packet {
                        m: NonNull::new_unchecked(m),
                    }
                }
            })
        } else {
            Self::heap(headroom, len, 64)
        }
    }

    #[cold]
    fn heap(headroom: usize, len: usize, tailroom: usize) -> Packet {
        let area = headroom + len + tailroom;
        let layout = block_layout(area);
        // SAFETY: non-zero layout; the block is initialised before use, and
        // its data area is zeroed so no uninitialised bytes are ever read.
        unsafe {
            let b = std::alloc::alloc_zeroed(layout);
            if b.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            HEAP_LIVE.fetch_add(1, Ordering::Relaxed);
            let m = b as *mut Meta;
            init_meta(
                m,
                b.add(META_SIZE),
                area as u32,
                headroom,
                len as u32,
                KIND_HEAP,
                false,
                0,
            );
            Packet {
                m: NonNull::new_unchecked(m),
            }
        }
    }

    /// Wrap `len` bytes of external read-only memory at `data` without copying.
    ///
    /// # Safety
    /// The memory must stay valid and unchanged for as long as this packet or
    /// any clone of it may be read. Memory owned by an element qualifies:
    /// elements are dropped only with their router, together with every
    /// packet, and dropping a packet never reads its data.
    #[inline]
    pub unsafe fn from_external(data: *const u8, len: usize) -> Packet {
        with_cache(|c| {
            let m = pool_get(c);
            init_meta(
                m,
                data as *mut u8,
                len as u32,
                0,
                len as u32,
                KIND_POOL,
                true,
                0,
            );
            Packet {
                m: NonNull::new_unchecked(m),
            }
        })
    }

    /// Packet length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.meta().len as usize
    }

    /// True if the packet has no data.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.meta().len == 0
    }

    /// The packet data.
    #[inline]
    pub fn data(&self) -> &[u8] {
        let m = self.meta();
        // SAFETY: data..data+len is within the buffer and initialised.
        unsafe { std::slice::from_raw_parts(m.data, m.len as usize) }
    }

    /// True if the data is shared with a clone or lives in external memory.
    #[inline]
    pub fn is_shared(&self) -> bool {
        let m = self.meta();
        !m.owner.is_null() || m.external != 0 || m.refcnt.load(Ordering::Relaxed) != 1
    }

    #[inline]
    fn data_mut_unchecked(&mut self) -> &mut [u8] {
        let m = self.meta_mut();
        // SAFETY: only called on exclusively owned buffers.
        unsafe { std::slice::from_raw_parts_mut(m.data, m.len as usize) }
    }

    /// Writable packet data; copies shared data first (Click's `uniqueify`).
    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        if self.is_shared() {
            self.unshare();
        }
        self.data_mut_unchecked()
    }

    /// Bytes of headroom in front of the data.
    #[inline]
    pub fn headroom(&self) -> usize {
        let m = self.meta();
        m.data as usize - m.head as usize
    }

    /// Bytes of tailroom after the data.
    #[inline]
    pub fn tailroom(&self) -> usize {
        let m = self.meta();
        m.cap as usize - self.headroom() - m.len as usize
    }

    /// Copy the packet into a fresh, exclusively owned buffer with at least
    /// `headroom` and `tailroom` bytes around the data, keeping annotations and
    /// header positions. The bytes in front of the data (headroom, e.g. a
    /// header removed by `pull`) are copied too, as far as the new headroom
    /// holds them, so a later [`unstrip`](Self::unstrip) restores them as
    /// Click's `uniqueify` (which copies the whole buffer) does.
    #[inline(never)]
    fn make_unique(&mut self, headroom: usize, tailroom: usize) {
        // An external view or a clone does not use its own block's buffer
        // (nothing can reference it): copy the data there, no allocation.
        // This is the common case (every first write to a packet read from
        // a trace file or replayed from memory), so it is kept short: one
        // copy, the two header offsets moved, four fields stored.
        let m = self.m.as_ptr();
        // SAFETY: the handle owns its live block.
        let (borrowed, pool, len) = unsafe {
            (
                (*m).external != 0 || !(*m).owner.is_null(),
                (*m).kind == KIND_POOL,
                (*m).len as usize,
            )
        };
        let hr = headroom.max(HEADROOM);
        if borrowed && pool && hr + len + tailroom <= AREA {
            // SAFETY: the block is ours; its area is unused and does not
            // overlap the (external or owner's) data being copied.
            unsafe {
                self.copy_into_own_block(hr);
                let owner = std::mem::replace(&mut (*m).owner, ptr::null_mut());
                if !owner.is_null() {
                    with_cache(|c| unref_block(c, owner));
                }
            }
            return;
        }
        self.make_unique_realloc(headroom, tailroom);
    }

    /// [`make_unique`](Self::make_unique) for [`data_mut`](Self::data_mut):
    /// no room asked for, so the room test folds to a length test; and the
    /// usual case, an external view copied into its own pool block, is a
    /// leaf that saves no registers (clones, which drop a reference, and
    /// everything else go to `make_unique`). Measured on the issue 3
    /// pipeline (one copy a packet, session 9): 489.3 to 466.3
    /// instructions a packet, and 6 more fewer from moving the header
    /// offsets with one saturating add each.
    #[inline(never)]
    fn unshare(&mut self) {
        if !self.view_into_own_block(0) {
            self.make_unique(0, 0);
        }
    }

    /// [`make_unique`](Self::make_unique) for [`push`](Self::push) `n`
    /// bytes, with [`unshare`](Self::unshare)'s leaf for an external view
    /// (the first push on a packet read from a trace or replayed from
    /// memory, e.g. VLANEncap's): 193.9 to 175.7 instructions a packet at
    /// the performance model's C point (session 11).
    ///
    /// It pushes the `n` bytes too and returns the data, so that
    /// [`push_mut`](Self::push_mut)'s caller has it in registers instead
    /// of reading the moved metadata back.
    #[inline(never)]
    fn unshare_for_push(&mut self, n: usize) -> &mut [u8] {
        if !self.view_into_own_block(n) {
            // A tail call: the leaf above saves no registers.
            return self.make_unique_for_push(n);
        }
        // SAFETY: the buffer is now the packet's own with `n` bytes of
        // headroom.
        unsafe { self.push_within(n) };
        self.data_mut_unchecked()
    }

    /// [`unshare_for_push`](Self::unshare_for_push) for everything but an
    /// external view: [`make_unique`](Self::make_unique), then the push.
    #[inline(never)]
    fn make_unique_for_push(&mut self, n: usize) -> &mut [u8] {
        self.make_unique(n.max(HEADROOM), 0);
        // SAFETY: the buffer is now the packet's own with `n` bytes of
        // headroom.
        unsafe { self.push_within(n) };
        self.data_mut_unchecked()
    }

    /// If the packet is an external view whose data (with [`HEADROOM`]
    /// bytes, of which `n` are wanted, in front) fits its own pool block,
    /// copies it there and returns true; otherwise false, nothing changed.
    #[inline(always)]
    fn view_into_own_block(&mut self, n: usize) -> bool {
        let m = self.m.as_ptr();
        // SAFETY: the handle owns its live block.
        // `kind` and `external` (0 or 1) are adjacent bytes (see the layout
        // assertions): an external pool block is one 16-bit value.
        let (view, len) = unsafe {
            (
                (ptr::addr_of!((*m).kind) as *const u16).read()
                    == u16::from_le_bytes([KIND_POOL, 1])
                    && (*m).owner.is_null(),
                (*m).len as usize,
            )
        };
        if view && n <= HEADROOM && HEADROOM + len <= AREA {
            // SAFETY: the block is ours; its area is unused and does not
            // overlap the external data being copied.
            unsafe { self.copy_into_own_block(HEADROOM) };
            return true;
        }
        false
    }

    /// Copies the data (and as much of the headroom in front of it as `hr`
    /// holds) into this block's own buffer at headroom `hr`, moves the two
    /// header offsets, and makes the buffer the packet's.
    ///
    /// # Safety
    /// The packet's data is external or a clone's (the block's own area is
    /// unused) and `hr + len <= AREA` in a pool block.
    #[inline(always)]
    unsafe fn copy_into_own_block(&mut self, hr: usize) {
        let m = self.m.as_ptr();
        let old_hr = (*m).data as usize - (*m).head as usize;
        let len = (*m).len as usize;
        let area = (m as *mut u8).add(META_SIZE);
        let keep = old_hr.min(hr);
        copy_chunked((*m).data.sub(keep), area.add(hr - keep), keep + len);
        let a = &mut (*m).anno;
        // The two offsets are adjacent u16s (see the layout assertions):
        // whether either is set is one 32-bit test.
        if (ptr::addr_of!(a.network_header) as *const u32).read() == u32::MAX {
            // Neither set (a packet no element has parsed yet, as every
            // view fresh from its source): nothing to move.
        } else if let Some(up) = hr.checked_sub(old_hr) {
            // Moved away from the head (the usual case): an offset past
            // the field's range, [`NO_HEADER`] included, becomes unset.
            let shift = |h: u16| (usize::from(h) + up).min(usize::from(NO_HEADER)) as u16;
            a.network_header = shift(a.network_header);
            a.transport_header = shift(a.transport_header);
        } else {
            let delta = hr as isize - old_hr as isize;
            a.network_header = shift_header(a.network_header, delta);
            a.transport_header = shift_header(a.transport_header, delta);
        }
        (*m).head = area;
        (*m).data = area.add(hr);
        (*m).cap = AREA as u32;
        (*m).external = 0;
    }

    /// [`make_unique`](Self::make_unique) into a new buffer: the packet's
    /// own buffer is shared with clones, or the data needs more room than a
    /// pool block has.
    #[cold]
    fn make_unique_realloc(&mut self, headroom: usize, tailroom: usize) {
        let old_hr = self.headroom();
        let len = self.len();
        let hr = headroom.max(if self.meta().external != 0 {
            HEADROOM
        } else {
            old_hr
        });
        let tr = tailroom;
        let mut n = if hr + len + tr <= AREA {
            Self::uninit(hr, len)
        } else {
            Self::heap(hr, len, tr)
        };
        let keep = old_hr.min(hr);
        // SAFETY: `keep` bytes of headroom in front of both data areas
        // (keep <= old_hr, keep <= hr), `len` bytes of data in each; the new
        // buffer is exclusively ours and distinct from the old one.
        unsafe {
            ptr::copy_nonoverlapping(
                self.meta().data.sub(keep),
                n.meta_mut().data.sub(keep),
                keep + len,
            );
        }
        let delta = hr as isize - old_hr as isize;
        let mut anno = self.meta().anno;
        anno.network_header = shift_header(anno.network_header, delta);
        anno.transport_header = shift_header(anno.transport_header, delta);
        n.meta_mut().anno = anno;
        std::mem::swap(self, &mut n);
    }

    /// Remove `n` bytes from the front (Click's `pull`). Removes at most `len()`.
    #[inline]
    pub fn pull(&mut self, n: usize) {
        let n = n.min(self.len());
        let m = self.meta_mut();
        // SAFETY: n <= len keeps data within the buffer.
        m.data = unsafe { m.data.add(n) };
        m.len -= n as u32;
    }

    /// Add `n` bytes at the front (Click's `push`), using headroom or
    /// reallocating; the new bytes are uninitialised in meaning (zeroed only
    /// if reallocated) and must be written by the caller.
    #[inline]
    pub fn push(&mut self, n: usize) {
        self.push_mut(n);
    }

    /// Moves the data's start `n` bytes back into the headroom.
    ///
    /// # Safety
    /// The packet's buffer is its own and has at least `n` bytes of
    /// headroom.
    #[inline(always)]
    unsafe fn push_within(&mut self, n: usize) {
        let m = self.meta_mut();
        m.data = m.data.sub(n);
        m.len += n as u32;
    }

    /// [`push`](Self::push) `n` bytes and return the writable data, with
    /// one test for sharing instead of the two of `push` then
    /// [`data_mut`](Self::data_mut).
    #[inline]
    pub fn push_mut(&mut self, n: usize) -> &mut [u8] {
        if self.is_shared() || self.headroom() < n {
            return self.unshare_for_push(n);
        }
        // SAFETY: the buffer is the packet's own and holds `n` bytes of
        // headroom.
        unsafe { self.push_within(n) };
        self.data_mut_unchecked()
    }

    /// [`push_mut`](Self::push_mut) without the copy: when the buffer is
    /// this packet's own (not shared, not external) and has `n` bytes of
    /// headroom, pushes them and returns the writable data; otherwise
    /// `None`, the packet unchanged. It calls nothing, so a per-packet loop
    /// built on it keeps its values in registers and leaves the other
    /// packets to `push` in a second pass (the possible call to
    /// `make_unique` inside `push` made NVGREEncap's loop spill, session 10).
    #[inline(always)]
    pub fn try_push_mut(&mut self, n: usize) -> Option<&mut [u8]> {
        if self.is_shared() || self.headroom() < n {
            return None;
        }
        // SAFETY: tested just above.
        unsafe { self.push_within(n) };
        Some(self.data_mut_unchecked())
    }

    /// Remove `n` bytes from the end (Click's `take`). Removes at most `len()`.
    #[inline]
    pub fn take(&mut self, n: usize) {
        let n = n.min(self.len());
        self.meta_mut().len -= n as u32;
    }

    /// Grow the data by `n` bytes at the end and return them, without a
    /// copy or a fill: when the buffer is this packet's own (not shared,
    /// not external) and has `n` bytes of tailroom; otherwise `None`, the
    /// packet unchanged. The bytes are whatever the buffer held (an earlier
    /// packet's data, or zeros), never uninitialised memory, and the caller
    /// must overwrite all of them (as with [`filled`](Self::filled)).
    #[inline(always)]
    pub fn try_put_mut(&mut self, n: usize) -> Option<&mut [u8]> {
        if self.is_shared() || self.tailroom() < n {
            return None;
        }
        let old = self.len();
        self.meta_mut().len += n as u32;
        Some(&mut self.data_mut_unchecked()[old..])
    }

    /// Add `n` zero bytes at the end (Click's `put`), reallocating if needed.
    #[inline]
    pub fn put(&mut self, n: usize) {
        if self.is_shared() || self.tailroom() < n {
            self.make_unique(0, n);
        }
        let old = self.len();
        self.meta_mut().len += n as u32;
        self.data_mut_unchecked()[old..].fill(0);
    }

    /// Restore `n` bytes in front of the data that were removed by `pull`
    /// (Click's Unstrip): unlike [`push`](Self::push) the bytes keep their old
    /// contents. Restores at most the available headroom.
    #[inline]
    pub fn unstrip(&mut self, n: usize) {
        let n = n.min(self.headroom());
        let m = self.meta_mut();
        // SAFETY: n <= headroom.
        m.data = unsafe { m.data.sub(n) };
        m.len += n as u32;
    }

    /// The annotations.
    #[inline]
    pub fn anno(&self) -> &Anno {
        &self.meta().anno
    }

    /// Mutable annotations (never copies data).
    #[inline]
    pub fn anno_mut(&mut self) -> &mut Anno {
        &mut self.meta_mut().anno
    }

    /// Timestamp annotation in nanoseconds since the epoch.
    #[inline]
    pub fn timestamp_ns(&self) -> u64 {
        self.meta().anno.timestamp_ns
    }

    /// Set the timestamp annotation.
    #[inline]
    pub fn set_timestamp_ns(&mut self, t: u64) {
        self.meta_mut().anno.timestamp_ns = t;
    }

    fn header_offset(&self, h: u16) -> Option<isize> {
        (h != NO_HEADER).then(|| h as isize - self.headroom() as isize)
    }

    fn set_header(&mut self, offset_from_data: isize) -> u16 {
        let v = self.headroom() as isize + offset_from_data;
        if (0..NO_HEADER as isize).contains(&v) {
            v as u16
        } else {
            NO_HEADER
        }
    }

    /// Network header offset relative to the data start (negative after a
    /// `pull` past it), or `None` if unset.
    #[inline]
    pub fn network_header_offset(&self) -> Option<isize> {
        self.header_offset(self.meta().anno.network_header)
    }

    /// Set the network header to `offset` bytes from the data start.
    #[inline]
    pub fn set_network_header(&mut self, offset: isize) {
        let h = self.set_header(offset);
        self.meta_mut().anno.network_header = h;
    }

    /// Transport header offset relative to the data start, or `None` if unset.
    #[inline]
    pub fn transport_header_offset(&self) -> Option<isize> {
        self.header_offset(self.meta().anno.transport_header)
    }

    /// Set the transport header to `offset` bytes from the data start.
    #[inline]
    pub fn set_transport_header(&mut self, offset: isize) {
        let h = self.set_header(offset);
        self.meta_mut().anno.transport_header = h;
    }

    /// Clear both header annotations.
    #[inline]
    pub fn clear_headers(&mut self) {
        let a = &mut self.meta_mut().anno;
        a.network_header = NO_HEADER;
        a.transport_header = NO_HEADER;
    }

    /// Bytes from the network header to the end of the data, if the network
    /// header is set and lies within the data.
    #[inline]
    pub fn network_header(&self) -> Option<&[u8]> {
        let off = self.network_header_offset()?;
        self.data().get(usize::try_from(off).ok()?..)
    }

    /// Bytes from the transport header to the end of the data.
    #[inline]
    pub fn transport_header(&self) -> Option<&[u8]> {
        let off = self.transport_header_offset()?;
        self.data().get(usize::try_from(off).ok()?..)
    }
}

impl Clone for Packet {
    /// A new handle sharing this packet's data (Click's `clone()`): no data is
    /// copied until one of them writes.
    fn clone(&self) -> Packet {
        let src = self.meta();
        let owner = if !src.owner.is_null() {
            src.owner
        } else if src.external != 0 {
            ptr::null_mut()
        } else {
            self.m.as_ptr()
        };
        if !owner.is_null() {
            // SAFETY: owner is live while self holds a reference to it.
            unsafe { (*owner).refcnt.fetch_add(1, Ordering::Relaxed) };
        }
        with_cache(|c| {
            let m = pool_get(c);
            // SAFETY: m is a free block; copying self's runtime fields and annotations.
            unsafe {
                ptr::write(
                    m,
                    Meta {
                        data: src.data,
                        head: src.head,
                        len: src.len,
                        cap: src.cap,
                        owner,
                        refcnt: AtomicU32::new(1),
                        kind: KIND_POOL,
                        external: src.external,
                        anno: src.anno,
                    },
                );
                Packet {
                    m: NonNull::new_unchecked(m),
                }
            }
        })
    }
}

impl Drop for Packet {
    #[inline]
    fn drop(&mut self) {
        let m = self.m.as_ptr();
        // SAFETY: the handle owns its reference.
        with_cache(|c| unsafe { release(c, m) });
    }
}

impl std::fmt::Debug for Packet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Packet")
            .field("len", &self.len())
            .field("anno", self.anno())
            .finish()
    }
}

/// Release many packets with one thread-local cache access.
#[inline]
pub(crate) fn release_all(ptrs: &[*mut Meta]) {
    with_cache(|c| {
        if c.free.len() + ptrs.len() > CACHE_MAX {
            spill(c);
        }
        c.free.reserve(ptrs.len());
        // Plain frees (own block, sole reference, pool kind) are written
        // straight into the list's spare capacity, 64 handles at a time; the
        // others of those 64 (clones, their sources, heap blocks) are noted
        // in a bit mask and take the general path right after, so each
        // handle's test is made once, when it is released, and nothing is
        // allocated.
        // SAFETY: each pointer is an owned handle, released exactly once;
        // the writes stay within the capacity reserved above (the general
        // path only ever frees fewer blocks into the list than it skipped).
        unsafe {
            for chunk in ptrs.chunks(64) {
                let base = c.free.as_mut_ptr().add(c.free.len());
                let mut n = 0;
                let mut slow = 0u64;
                for (i, &m) in chunk.iter().enumerate() {
                    let plain = (*m).owner.is_null()
                        && (*m).refcnt.load(Ordering::Relaxed) == 1
                        && (*m).kind == KIND_POOL;
                    if plain {
                        base.add(n).write(m);
                        n += 1;
                    } else {
                        slow |= 1 << i;
                    }
                }
                c.free.set_len(c.free.len() + n);
                while slow != 0 {
                    let i = slow.trailing_zeros() as usize;
                    slow &= slow - 1;
                    release(c, chunk[i]);
                }
            }
        }
    });
}

/// The calling thread's packet pool, borrowed for a batch of allocations
/// (one thread-local access per batch instead of one per packet).
pub struct Pool<'a> {
    cache: &'a mut LocalCache,
}

impl Pool<'_> {
    /// A zero-copy view of `data` with timestamp `ts_ns` (see
    /// [`Packet::from_external`]).
    ///
    /// # Safety
    /// As for [`Packet::from_external`].
    #[inline(always)]
    pub unsafe fn view(&mut self, data: &[u8], ts_ns: u64) -> Packet {
        let m = pool_get(self.cache);
        init_view(m, data, ts_ns);
        Packet {
            m: NonNull::new_unchecked(m),
        }
    }

    /// A packet holding a copy of `data` in its own pool buffer (with
    /// [`HEADROOM`]), timestamped `ts_ns`: what a NIC's receive DMA leaves.
    /// Frames too large for a pool block go to the heap like
    /// [`Packet::from_slice`].
    #[inline]
    pub fn copy(&mut self, data: &[u8], ts_ns: u64) -> Packet {
        if HEADROOM + data.len() > AREA {
            let mut p = Packet::heap(HEADROOM, data.len(), 64);
            p.data_mut_unchecked().copy_from_slice(data);
            p.set_timestamp_ns(ts_ns);
            return p;
        }
        let m = pool_get(self.cache);
        // SAFETY: m is a free pool block of BLOCK bytes; the copy stays
        // within its data area (checked above).
        unsafe {
            let head = (m as *mut u8).add(META_SIZE);
            let len = data.len() as u32;
            init_meta(m, head, AREA as u32, HEADROOM, len, KIND_POOL, false, ts_ns);
            copy_chunked(data.as_ptr(), head.add(HEADROOM), data.len());
            Packet {
                m: NonNull::new_unchecked(m),
            }
        }
    }

    /// Append `n` zero-copy views of `data`, all with timestamp `ts_ns`.
    /// Blocks are taken from the free list as one slice, so the loop does
    /// no per-packet bookkeeping on the list. (Its own loop rather than
    /// [`views_with`](Self::views_with): written through a `ViewWriter`,
    /// `InfiniteSource -> Discard` costs 9 more instructions per packet.)
    ///
    /// # Safety
    /// As for [`Packet::from_external`].
    #[inline]
    pub unsafe fn views(&mut self, data: &[u8], n: usize, ts_ns: u64, out: &mut Vec<Packet>) {
        while self.cache.free.len() < n {
            refill(self.cache);
        }
        let start = self.cache.free.len() - n;
        out.reserve(n);
        let dst = out.as_mut_ptr().add(out.len()) as *mut *mut Meta;
        for (i, &m) in self.cache.free[start..].iter().enumerate() {
            init_view(m, data, ts_ns);
            dst.add(i).write(m);
        }
        out.set_len(out.len() + n);
        self.cache.free.set_len(start);
    }
}

impl Pool<'_> {
    /// Append up to `max` zero-copy views, written by `fill` through a
    /// [`ViewWriter`]. The blocks are reserved from the free list as one
    /// slice before `fill` runs and the unused ones are given back after,
    /// so writing a view is only its metadata stores. Returns the number
    /// appended.
    ///
    /// # Safety
    /// Every view written must describe memory valid as required by
    /// [`Packet::from_external`].
    #[inline]
    pub unsafe fn views_with(
        &mut self,
        max: usize,
        out: &mut Vec<Packet>,
        fill: impl FnOnce(&mut ViewWriter<'_>),
    ) -> usize {
        while self.cache.free.len() < max {
            refill(self.cache);
        }
        let start = self.cache.free.len() - max;
        out.reserve(max);
        let mut w = ViewWriter {
            // Blocks are taken from the top of the reserved slice downwards,
            // so that the ones not used stay contiguous below it.
            top: self.cache.free.as_ptr().add(start + max),
            dst: out.as_mut_ptr().add(out.len()) as *mut *mut Meta,
            n: 0,
            max,
            _borrow: std::marker::PhantomData,
        };
        fill(&mut w);
        let n = w.n;
        out.set_len(out.len() + n);
        self.cache.free.set_len(start + max - n);
        n
    }
}

impl Pool<'_> {
    /// Append up to `max` packets holding copies of frames, each in a pool
    /// buffer of its own with [`HEADROOM`], written by `fill` through a
    /// [`CopyWriter`]: what a NIC's receive DMA leaves, without
    /// [`copy`](Self::copy)'s free-list bookkeeping and size test a packet
    /// (the blocks are reserved as one slice, as for
    /// [`views_with`](Self::views_with)). Returns the number appended.
    #[inline]
    pub fn copies_with(
        &mut self,
        max: usize,
        out: &mut Vec<Packet>,
        fill: impl FnOnce(&mut CopyWriter<'_, '_>),
    ) -> usize {
        // SAFETY: a CopyWriter writes no views, only fresh pool buffers.
        unsafe { self.views_with(max, out, |w| fill(&mut CopyWriter { w })) }
    }
}

/// The longest frame a [`CopyWriter`] takes: a pool block's data room
/// after its [`HEADROOM`].
pub const MAX_COPY: usize = AREA - HEADROOM;

/// Writes copies of frames into blocks reserved by [`Pool::copies_with`].
pub struct CopyWriter<'a, 'b> {
    w: &'b mut ViewWriter<'a>,
}

impl CopyWriter<'_, '_> {
    /// Run `f` with a copy of this writer held in a local (its position
    /// written back after): a loop of pushes inlined into `f` then keeps
    /// the position in registers, where through `self` it is reloaded and
    /// stored around every block written (the compiler cannot tell the
    /// blocks' stores from the writer's fields).
    #[inline(always)]
    pub fn local<R>(&mut self, f: impl FnOnce(&mut CopyWriter<'_, '_>) -> R) -> R {
        let w = &mut *self.w;
        let mut local = ViewWriter {
            top: w.top,
            dst: w.dst,
            n: w.n,
            max: w.max,
            _borrow: std::marker::PhantomData,
        };
        let r = f(&mut CopyWriter { w: &mut local });
        w.n = local.n;
        r
    }

    /// Write a packet holding a copy of the `len` bytes at `src`, with
    /// timestamp `ts_ns`. False (and nothing written) when there is no room
    /// left. The copy moves whole 64-byte lines, as a NIC's DMA writes
    /// them: the bytes after `len` up to the end of its last line land in
    /// the tailroom, whose contents are unspecified.
    ///
    /// # Safety
    /// `len <= MAX_COPY`, and `src` is valid for reads of `len` rounded up
    /// to a multiple of 64 bytes (at least 64).
    #[inline(always)]
    pub unsafe fn push(&mut self, src: *const u8, len: usize, ts_ns: u64) -> bool {
        self.write_block(|m, head| {
            init_meta(
                m,
                head,
                AREA as u32,
                HEADROOM,
                len as u32,
                KIND_POOL,
                false,
                ts_ns,
            );
            copy_lines(src, head.add(HEADROOM), len);
        })
    }

    /// Hand the next reserved block and its buffer's head to `fill`, then
    /// count the block written; false (`fill` not called) when there is no
    /// room left.
    #[inline(always)]
    unsafe fn write_block(&mut self, fill: impl FnOnce(*mut Meta, *mut u8)) -> bool {
        let w = &mut *self.w;
        if w.n >= w.max {
            return false;
        }
        let m = *w.top.sub(1 + w.n);
        fill(m, (m as *mut u8).add(META_SIZE));
        w.dst.add(w.n).write(m);
        w.n += 1;
        true
    }
}

#[cfg(target_arch = "x86_64")]
impl CopyWriter<'_, '_> {
    /// [`push`](Self::push) with 64-byte AVX-512 stores: the metadata's
    /// first line and the annotations are one store each, built in
    /// registers (as a NIC driver rearms its receive buffers from a
    /// template), and each line of the frame is one load and one store:
    /// three stores for a 64-byte frame instead of fourteen. The block's
    /// metadata is the same as [`push`](Self::push) writes (the first
    /// line's padding is zeroed too).
    ///
    /// # Safety
    /// As for [`push`](Self::push), and the CPU has AVX-512F.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub unsafe fn push_avx512(&mut self, src: *const u8, len: usize, ts_ns: u64) -> bool {
        use std::arch::x86_64::*;
        self.write_block(|m, head| {
            // The first line as init_meta writes it: data, head, len | cap,
            // owner (null), refcount 1 | kind | external, padding (the layout
            // assertions above fix the offsets).
            let line = _mm512_set_epi64(
                0,
                0,
                0,
                1 | i64::from(KIND_POOL) << 32,
                0,
                len as i64 | (AREA as i64) << 32,
                head as i64,
                head.add(HEADROOM) as i64,
            );
            _mm512_storeu_si512(m as *mut __m512i, line);
            // The annotations: `Anno::EMPTY` with the timestamp.
            let anno = _mm512_set_epi64(0, 0, 0, 0, 0, 0, EMPTY_WORD1, ts_ns as i64);
            _mm512_storeu_si512(ptr::addr_of_mut!((*m).anno) as *mut __m512i, anno);
            let dst = head.add(HEADROOM);
            let mut i = 0;
            loop {
                let v = _mm512_loadu_si512(src.add(i) as *const __m512i);
                _mm512_storeu_si512(dst.add(i) as *mut __m512i, v);
                i += 64;
                if i >= len {
                    break;
                }
            }
        })
    }
}

/// The second 8 bytes of `Anno::EMPTY`: flow hash 0, both header offsets
/// unset.
#[cfg(target_arch = "x86_64")]
const EMPTY_WORD1: i64 = ((NO_HEADER as u64) << 32 | (NO_HEADER as u64) << 48) as i64;
const _: () = assert!(
    std::mem::offset_of!(Anno, timestamp_ns) == 0 && std::mem::offset_of!(Anno, flow_hash) == 8
);

/// Writes zero-copy views into blocks reserved by [`Pool::views_with`].
pub struct ViewWriter<'a> {
    top: *const *mut Meta,
    dst: *mut *mut Meta,
    n: usize,
    max: usize,
    _borrow: std::marker::PhantomData<&'a mut ()>,
}

impl ViewWriter<'_> {
    /// Views that can still be written.
    #[inline(always)]
    pub fn room(&self) -> usize {
        self.max - self.n
    }

    /// Write a view of `len` bytes at `ptr` with timestamp `ts_ns` and
    /// `EXTRA_LENGTH` annotation `extra`. False (and nothing written) when
    /// there is no room left.
    ///
    /// # Safety
    /// `ptr` and `len` describe memory valid as required by
    /// [`Packet::from_external`].
    #[inline(always)]
    pub unsafe fn push(&mut self, ptr: *const u8, len: usize, ts_ns: u64, extra: u32) -> bool {
        if self.n >= self.max {
            return false;
        }
        let m = *self.top.sub(1 + self.n);
        init_view(m, std::slice::from_raw_parts(ptr, len), ts_ns);
        // Stored even when 0: in a header trace whether a frame was cut is
        // chance, and a test of it mispredicted.
        (*m).anno.set_u32(crate::anno::offsets::EXTRA_LENGTH, extra);
        self.dst.add(self.n).write(m);
        self.n += 1;
        true
    }
}

/// Initialise `m` as a zero-copy view of `data`.
#[inline(always)]
unsafe fn init_view(m: *mut Meta, data: &[u8], ts_ns: u64) {
    let len = data.len() as u32;
    init_meta(
        m,
        data.as_ptr() as *mut u8,
        len,
        0,
        len,
        KIND_POOL,
        true,
        ts_ns,
    );
}

/// Run `f` with the calling thread's pool.
///
/// # Safety
/// `f` must not allocate, clone or drop packets except through the [`Pool`]
/// it is given (the pool is borrowed exclusively for the duration).
#[inline]
pub unsafe fn with_pool<R>(f: impl FnOnce(&mut Pool<'_>) -> R) -> R {
    with_cache(|cache| f(&mut Pool { cache }))
}

/// A header offset (from the buffer head) after the data moved `delta`
/// bytes further from the head; [`NO_HEADER`] stays unset, and an offset
/// that falls outside the buffer becomes unset.
#[inline(always)]
fn shift_header(h: u16, delta: isize) -> u16 {
    if h == NO_HEADER {
        return h;
    }
    let v = h as isize + delta;
    if (0..NO_HEADER as isize).contains(&v) {
        v as u16
    } else {
        NO_HEADER
    }
}

/// Copy `len` bytes in 16- and 64-byte moves, the last move overlapping the
/// one before it instead of a byte-sized tail. For packet-sized copies this
/// costs a steady amount per byte, where the C library's `memcpy` changes
/// strategy at some sizes (on this machine a step of about 100 cycles
/// between 1 KiB and 1.5 KiB); and a 64-byte frame is four loads and four
/// stores, where a call to `memcpy` for the tail cost more than the copy.
///
/// # Safety
/// `src` and `dst` valid for `len` bytes, not overlapping.
#[inline]
unsafe fn copy_chunked(src: *const u8, dst: *mut u8, len: usize) {
    #[inline(always)]
    unsafe fn mv<const N: usize>(src: *const u8, dst: *mut u8) {
        ptr::write_unaligned(
            dst as *mut [u8; N],
            ptr::read_unaligned(src as *const [u8; N]),
        );
    }
    /// `N`-byte moves, the last one ending at `len` (`len >= N`).
    #[inline(always)]
    unsafe fn steps<const N: usize>(src: *const u8, dst: *mut u8, len: usize) {
        let mut i = 0;
        while i + N <= len {
            mv::<N>(src.add(i), dst.add(i));
            i += N;
        }
        if i < len {
            mv::<N>(src.add(len - N), dst.add(len - N));
        }
    }
    if len >= 64 {
        steps::<64>(src, dst, len);
    } else if len >= 16 {
        steps::<16>(src, dst, len);
    } else if len >= 8 {
        steps::<8>(src, dst, len);
    } else {
        for i in 0..len {
            *dst.add(i) = *src.add(i);
        }
    }
}

/// Copy the 64-byte lines that hold `len` bytes (at least one line): one
/// move of four 16-byte loads and stores for a frame of up to 64 bytes,
/// with no length dispatch in front of it (`copy_chunked` picks a move
/// size and works out a trip count first).
///
/// # Safety
/// `src` and `dst` valid for `len` rounded up to a multiple of 64 bytes
/// (at least 64), not overlapping.
#[inline(always)]
unsafe fn copy_lines(src: *const u8, dst: *mut u8, len: usize) {
    /// Four 16-byte moves (a `[u8; 64]` value went through the stack).
    #[inline(always)]
    unsafe fn line(src: *const u8, dst: *mut u8) {
        let (s, d) = (src as *const u128, dst as *mut u128);
        for k in 0..4 {
            ptr::write_unaligned(d.add(k), ptr::read_unaligned(s.add(k)));
        }
    }
    line(src, dst);
    let mut i = 64;
    while i < len {
        line(src.add(i), dst.add(i));
        i += 64;
    }
}

/// Allocate `n` packets that view `template` without copying it (the fast
/// path for sources that repeat one packet); the first write to a packet
/// copies the data into the packet's own buffer.
///
/// # Safety
/// `template` must stay valid and unchanged while any of the packets may be
/// read (see [`Packet::from_external`]): an element's own buffer qualifies.
#[inline]
pub unsafe fn alloc_views(template: &[u8], n: usize, ts_ns: u64, out: &mut Vec<Packet>) {
    with_pool(|pool| pool.views(template, n, ts_ns, out));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Held by every test that allocates heap packets or reads the global
    /// heap count: tests run on parallel threads, and one test's jumbo
    /// packet moved another's count (seen in CI: `heap_live` 2, expected 0).
    static HEAP: Mutex<()> = Mutex::new(());

    fn heap_lock() -> std::sync::MutexGuard<'static, ()> {
        HEAP.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[test]
    fn pool_copy_owns_its_data() {
        let _heap = heap_lock();
        let small = [7u8; 60];
        let big = vec![9u8; DATA_ROOM + 100];
        // SAFETY: only the pool's own allocations inside the closure.
        let (a, b) = unsafe { with_pool(|pool| (pool.copy(&small, 5), pool.copy(&big, 6))) };
        assert_eq!(
            (a.data(), a.timestamp_ns(), a.headroom()),
            (&small[..], 5, HEADROOM)
        );
        assert!(!a.is_shared());
        assert_eq!((b.data(), b.timestamp_ns()), (&big[..], 6));
    }

    #[test]
    fn filled_packets_hold_what_fill_wrote() {
        let _heap = heap_lock();
        for len in [0, 120, DATA_ROOM + 100] {
            let p = Packet::filled(len, |d| {
                assert_eq!(d.len(), len);
                for (i, b) in d.iter_mut().enumerate() {
                    *b = i as u8 ^ 0x5a;
                }
            });
            assert_eq!((p.len(), p.headroom()), (len, HEADROOM));
            assert!(p
                .data()
                .iter()
                .enumerate()
                .all(|(i, &b)| b == i as u8 ^ 0x5a));
            assert!(!p.is_shared());
        }
    }

    #[test]
    fn alloc_push_pull_put_take() {
        let mut p = Packet::from_slice(&[1, 2, 3, 4]);
        assert_eq!(p.len(), 4);
        assert_eq!(p.headroom(), HEADROOM);
        assert_eq!(p.tailroom(), DATA_ROOM - 4);
        p.pull(2);
        assert_eq!(p.data(), &[3, 4]);
        p.unstrip(2);
        assert_eq!(p.data(), &[1, 2, 3, 4]);
        p.push(2);
        p.data_mut()[..2].copy_from_slice(&[9, 9]);
        assert_eq!(p.data(), &[9, 9, 1, 2, 3, 4]);
        p.take(1);
        p.put(2);
        assert_eq!(p.data(), &[9, 9, 1, 2, 3, 0, 0]);
        p.pull(100);
        assert!(p.is_empty());
    }

    #[test]
    fn push_beyond_headroom_reallocates_and_keeps_headers() {
        let mut p = Packet::from_slice(&[0xaa; 40]);
        p.set_network_header(14);
        p.anno_mut().set_paint(3);
        p.push(HEADROOM + 10);
        assert_eq!(p.len(), 40 + HEADROOM + 10);
        assert_eq!(p.network_header_offset(), Some(14 + HEADROOM as isize + 10));
        assert_eq!(p.anno().paint(), 3);
        assert_eq!(&p.data()[HEADROOM + 10..], &[0xaa; 40][..]);
    }

    #[test]
    fn clone_is_copy_on_write() {
        let mut a = Packet::from_slice(b"hello");
        a.anno_mut().set_paint(1);
        let mut b = a.clone();
        assert!(a.is_shared() && b.is_shared());
        assert_eq!(b.data(), b"hello");
        b.data_mut()[0] = b'j';
        assert_eq!(a.data(), b"hello");
        assert_eq!(b.data(), b"jello");
        assert!(!b.is_shared());
        assert_eq!(b.anno().paint(), 1);
        let c = a.clone();
        drop(a);
        assert_eq!(c.data(), b"hello");
        let d = c.clone();
        drop(c);
        assert_eq!(d.data(), b"hello");
    }

    #[test]
    fn external_data_is_zero_copy_until_written() {
        static BYTES: [u8; 6] = [1, 2, 3, 4, 5, 6];
        // SAFETY: static memory outlives the packet.
        let mut p = unsafe { Packet::from_external(BYTES.as_ptr(), 6) };
        assert_eq!(p.data().as_ptr(), BYTES.as_ptr());
        p.set_network_header(2);
        let q = p.clone();
        p.data_mut()[0] = 9;
        assert_eq!(p.data(), &[9, 2, 3, 4, 5, 6]);
        assert_eq!(p.network_header(), Some(&[3, 4, 5, 6][..]));
        assert_eq!(q.data(), &BYTES[..]);
        assert!(p.headroom() >= HEADROOM);
    }

    #[test]
    fn views_are_copied_in_place_on_write() {
        static T: [u8; 4] = [1, 2, 3, 4];
        let mut v = Vec::new();
        // SAFETY: static template.
        unsafe { alloc_views(&T, 2, 7, &mut v) };
        let before = local_free_blocks();
        let mut p = v.pop().unwrap();
        assert_eq!(p.data().as_ptr(), T.as_ptr());
        assert_eq!(p.timestamp_ns(), 7);
        p.set_network_header(1);
        p.push(2);
        p.data_mut()[..2].copy_from_slice(&[8, 9]);
        assert_eq!(p.data(), &[8, 9, 1, 2, 3, 4]);
        assert_eq!(p.network_header_offset(), Some(3));
        assert_eq!(local_free_blocks(), before, "no block allocated to unshare");
        let mut c = p.clone();
        c.data_mut()[0] = 0;
        assert_eq!(p.data()[0], 8);
        assert_eq!(c.data(), &[0, 9, 1, 2, 3, 4]);
        assert_eq!(T, [1, 2, 3, 4]);
    }

    #[test]
    fn unsharing_a_view_copies_every_length_exactly() {
        // Every length from 0 to 300 (the copy's 8-, 16- and 64-byte moves
        // and their overlapping tails), with and without a stripped header
        // in front of the data: the copy holds the same bytes, what lies
        // in front is kept for unstrip, the source is untouched.
        let src: Vec<u8> = (0..400u32).map(|i| (i * 7 + 3) as u8).collect();
        for len in 0..=300usize {
            for strip in [0usize, 14] {
                let f = &src[..strip + len];
                // SAFETY: `src` outlives the packets, which are dropped in
                // this iteration.
                let mut p = unsafe { with_pool(|pool| pool.view(f, 0)) };
                p.pull(strip);
                assert_eq!(p.data_mut(), &f[strip..], "len {len}, strip {strip}");
                assert!(!p.is_shared());
                p.unstrip(strip);
                assert_eq!(p.data(), f, "len {len}, strip {strip}");
                // A push on a view: within the pool block's headroom, all
                // of it, and more than it holds (a larger buffer).
                for n in [4, HEADROOM, HEADROOM + 1] {
                    let mut q = unsafe { with_pool(|pool| pool.view(f, 0)) };
                    q.pull(strip);
                    let d = q.push_mut(n);
                    d[..n].fill(0xEE);
                    assert_eq!(&d[n..], &f[strip..], "len {len}, strip {strip}, push {n}");
                    assert!(!q.is_shared());
                    // The data starts inside the packet's buffer.
                    assert_eq!(
                        q.headroom(),
                        HEADROOM.saturating_sub(n),
                        "len {len}, push {n}"
                    );
                }
            }
        }
        assert!(src.iter().enumerate().all(|(i, &b)| b == (i * 7 + 3) as u8));
    }

    #[test]
    fn unsharing_a_view_moves_exactly_the_header_offsets_that_are_set() {
        // Each of the two offsets set or not (the copy tests both at once
        // and moves nothing when neither is set), by a push and by a first
        // write, with and without a stripped header in front.
        static F: [u8; 64] = [5; 64];
        for (net, tr) in [
            (None, None),
            (Some(14), None),
            (None, Some(34)),
            (Some(14), Some(34)),
        ] {
            for strip in [0usize, 6] {
                for push in [0usize, 4] {
                    // SAFETY: static frame.
                    let mut p = unsafe { with_pool(|pool| pool.view(&F, 0)) };
                    p.pull(strip);
                    let at = |o: Option<isize>| o.map(|o| o - strip as isize);
                    if let Some(o) = at(net) {
                        p.set_network_header(o);
                    }
                    if let Some(o) = at(tr) {
                        p.set_transport_header(o);
                    }
                    if push == 0 {
                        p.data_mut()[0] = 1;
                    } else {
                        p.push_mut(push)[0] = 1;
                    }
                    assert!(!p.is_shared());
                    let want = |o: Option<isize>| at(o).map(|o| o + push as isize);
                    let case = format!("{net:?} {tr:?} strip {strip} push {push}");
                    assert_eq!(p.network_header_offset(), want(net), "{case}");
                    assert_eq!(p.transport_header_offset(), want(tr), "{case}");
                }
            }
        }
    }

    #[test]
    fn try_push_mut_pushes_only_into_an_own_buffer_with_room() {
        let f: Vec<u8> = (0..64u8).collect();
        let mut p = Packet::from_slice(&f);
        let d = p.try_push_mut(HEADROOM).expect("own buffer with room");
        d[..HEADROOM].fill(0xEE);
        assert_eq!(&d[HEADROOM..], &f[..]);
        assert_eq!((p.len(), p.headroom()), (64 + HEADROOM, 0));
        assert!(p.try_push_mut(1).is_none());
        assert_eq!(p.len(), 64 + HEADROOM);
        // A clone's buffer and an external view are left as they are.
        let mut q = Packet::from_slice(&f);
        let c = q.clone();
        assert!(q.try_push_mut(4).is_none());
        drop(c);
        assert!(q.try_push_mut(4).is_some());
        // SAFETY: `f` outlives the view.
        let mut v = unsafe { Packet::from_external(f.as_ptr(), f.len()) };
        assert!(v.try_push_mut(0).is_none());
        assert_eq!(v.data(), &f[..]);
    }

    #[test]
    fn try_put_mut_grows_only_an_own_buffer_with_room() {
        let f: Vec<u8> = (0..64u8).collect();
        let mut p = Packet::from_slice(&f);
        let room = p.tailroom();
        let d = p.try_put_mut(8).expect("own buffer with room");
        assert_eq!(d.len(), 8);
        d.fill(0xEE);
        assert_eq!(&p.data()[..64], &f[..]);
        assert_eq!(&p.data()[64..], &[0xEE; 8]);
        assert_eq!((p.len(), p.tailroom()), (72, room - 8));
        assert!(p.try_put_mut(room - 7).is_none());
        assert_eq!(p.len(), 72);
        assert!(p.try_put_mut(room - 8).is_some());
        assert_eq!(p.tailroom(), 0);
        // A clone's buffer and an external view are left as they are.
        let mut q = Packet::from_slice(&f);
        let c = q.clone();
        assert!(q.try_put_mut(4).is_none());
        assert_eq!(c.len(), 64);
        drop(c);
        assert!(q.try_put_mut(4).is_some());
        // SAFETY: `f` outlives the view.
        let mut v = unsafe { Packet::from_external(f.as_ptr(), f.len()) };
        assert!(v.try_put_mut(0).is_none());
        assert_eq!(v.data(), &f[..]);
    }

    #[test]
    fn views_with_a_writer_and_mixed_release() {
        static D: [u8; 8] = [1, 2, 3, 4, 5, 6, 7, 8];
        let mut v = Vec::new();
        // At least 5 free blocks in the cache, so that no refill happens below.
        drop((0..5).map(|_| Packet::new(8)).collect::<Vec<_>>());
        let before = local_free_blocks();
        // SAFETY: static data.
        let n = unsafe {
            with_pool(|pool| {
                pool.views_with(5, &mut v, |w| {
                    for k in 1..=3usize {
                        assert_eq!(w.room(), 6 - k);
                        assert!(w.push(D.as_ptr().add(k), 8 - k, k as u64, k as u32 * 10));
                    }
                })
            })
        };
        // The two blocks reserved but not written went back to the cache.
        assert_eq!(local_free_blocks() + 3, before);
        // A full writer refuses more views.
        let mut full = Vec::new();
        // SAFETY: static data.
        unsafe {
            with_pool(|pool| {
                pool.views_with(1, &mut full, |w| {
                    assert!(w.push(D.as_ptr(), 8, 0, 0));
                    assert!(!w.push(D.as_ptr(), 8, 0, 0));
                    assert_eq!(w.room(), 0);
                })
            })
        };
        assert_eq!(full.len(), 1);
        assert_eq!(full[0].anno().u32(crate::anno::offsets::EXTRA_LENGTH), 0);
        drop(full);
        assert_eq!(n, 3);
        assert_eq!(v.len(), 3);
        assert_eq!(v[1].data(), &D[2..]);
        assert_eq!(v[2].timestamp_ns(), 3);
        assert_eq!(v[2].anno().u32(crate::anno::offsets::EXTRA_LENGTH), 30);
        let free = local_free_blocks();
        // A batch mixing plain packets and a clone whose source is in it.
        let a = Packet::from_slice(b"abc");
        let c = a.clone();
        v.push(a);
        v.push(c);
        let mut b = crate::Batch::new();
        b.vec_mut().extend(v);
        drop(b);
        assert_eq!(local_free_blocks(), free + 3);
    }

    #[test]
    fn copies_with_fills_fresh_buffers_line_by_line() {
        // Source frames in 64-byte slots (as MemoryReplay holds them), a
        // byte pattern with no zeros so that a line not copied shows.
        let src: Vec<u8> = (0..MAX_COPY + 64)
            .map(|i| (i * 7 % 251 + 1) as u8)
            .collect();
        let lens = [1, 60, 64, 65, 128, 129, 1000, MAX_COPY];
        let mut v = Vec::new();
        // At least as many free blocks as below, so that no refill happens.
        drop((0..10).map(|_| Packet::new(8)).collect::<Vec<_>>());
        let before = local_free_blocks();
        // SAFETY: the pool is used only through the closure's `pool`, and
        // `src` holds every `len` rounded up to 64 bytes.
        let n = unsafe {
            with_pool(|pool| {
                pool.copies_with(lens.len() + 2, &mut v, |w| {
                    for (k, &len) in lens.iter().enumerate() {
                        assert!(w.push(src.as_ptr(), len, k as u64));
                    }
                })
            })
        };
        assert_eq!(n, lens.len());
        // The two blocks reserved but not written went back to the cache.
        assert_eq!(local_free_blocks() + lens.len(), before);
        for (k, (p, &len)) in v.iter_mut().zip(&lens).enumerate() {
            assert_eq!(p.data(), &src[..len], "length {len}");
            assert_eq!(p.timestamp_ns(), k as u64);
            assert!(!p.is_shared());
            assert_eq!(p.network_header_offset(), None);
            assert_eq!(p.headroom(), HEADROOM);
            // A push writes in place, into the headroom.
            let at = p.data().as_ptr() as usize;
            p.push_mut(4)[..4].copy_from_slice(b"vlan");
            assert_eq!(p.data().as_ptr() as usize, at - 4);
            assert_eq!(&p.data()[4..], &src[..len]);
        }
        // A full writer refuses more copies.
        let mut full = Vec::new();
        // SAFETY: as above.
        unsafe {
            with_pool(|pool| {
                pool.copies_with(1, &mut full, |w| {
                    assert!(w.push(src.as_ptr(), 8, 0));
                    assert!(!w.push(src.as_ptr(), 8, 0));
                })
            })
        };
        assert_eq!(full.len(), 1);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn copies_with_avx512_stores_write_the_same_packets() {
        if !std::arch::is_x86_feature_detected!("avx512f") {
            return;
        }
        let src: Vec<u8> = (0..MAX_COPY + 64)
            .map(|i| (i * 7 % 251 + 1) as u8)
            .collect();
        let lens = [1, 60, 64, 65, 128, 129, 1000, MAX_COPY];
        // Blocks reused from earlier packets, with other metadata and
        // annotations in them: every field must be written.
        let mut old: Vec<Packet> = (0..20).map(|_| Packet::from_slice(&[9; 300])).collect();
        for p in &mut old {
            p.anno_mut().set_u32(0, 0xdead_beef);
            p.set_network_header(14);
        }
        drop(old);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        // SAFETY: the pool is used only through `pool`; `src` holds every
        // length rounded up to 64 bytes; the CPU has AVX-512F.
        unsafe {
            with_pool(|pool| {
                pool.copies_with(lens.len(), &mut a, |w| {
                    for (k, &len) in lens.iter().enumerate() {
                        assert!(w.push(src.as_ptr(), len, k as u64 + 7));
                    }
                });
                // Through a local copy of the writer, whose position must
                // come back: the packets are appended, and the writer is full.
                pool.copies_with(lens.len(), &mut b, |w| {
                    w.local(|w| {
                        for (k, &len) in lens.iter().enumerate() {
                            assert!(w.push_avx512(src.as_ptr(), len, k as u64 + 7));
                        }
                    });
                    assert!(!w.push_avx512(src.as_ptr(), 8, 0));
                });
            })
        };
        assert_eq!(b.len(), lens.len());
        for ((p, q), &len) in a.iter().zip(&b).zip(&lens) {
            let (m, n) = (p.meta(), q.meta());
            assert_eq!(q.data(), &src[..len]);
            assert_eq!(q.anno(), p.anno(), "length {len}");
            assert_eq!(
                (
                    q.headroom(),
                    q.len(),
                    q.tailroom(),
                    n.cap,
                    n.kind,
                    n.external
                ),
                (
                    p.headroom(),
                    p.len(),
                    p.tailroom(),
                    m.cap,
                    m.kind,
                    m.external
                )
            );
            assert!(n.owner.is_null() && n.refcnt.load(Ordering::Relaxed) == 1);
            assert_eq!(n.head as usize, q.m.as_ptr() as usize + META_SIZE);
        }
    }

    #[test]
    fn batch_release_with_clones_across_chunks_returns_every_block() {
        let _heap = heap_lock();
        // 130 handles: originals, clones whose sources are released in an
        // earlier or a later chunk of 64, and a heap packet.
        drop((0..200).map(|_| Packet::new(8)).collect::<Vec<_>>());
        let free = local_free_blocks();
        let heap = pool_stats().heap_live;
        let mut v: Vec<Packet> = (0..126)
            .map(|i| Packet::from_slice(&[i as u8; 8]))
            .collect();
        let early = v[3].clone(); // source in chunk 0, clone in chunk 2
        let late_src = Packet::from_slice(b"late");
        let late = late_src.clone(); // clone in chunk 1, source in chunk 2
        v.insert(70, late);
        v.push(early);
        v.push(late_src);
        v.push(Packet::new(9000));
        assert_eq!(v.len(), 130);
        let mut b = crate::Batch::new();
        b.vec_mut().extend(v);
        drop(b);
        assert_eq!(local_free_blocks(), free);
        assert_eq!(pool_stats().heap_live, heap);
    }

    #[test]
    fn copy_on_write_keeps_the_headroom_a_later_unstrip_restores() {
        let _heap = heap_lock();
        static FRAME: [u8; 20] = [
            1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x08, 0x00, 0x45, 0, 0, 20, 0xaa, 0xbb,
        ];
        // A zero-copy view (its own block's buffer is unused).
        // SAFETY: static data.
        let mut v = unsafe { Packet::from_external(FRAME.as_ptr(), FRAME.len()) };
        v.pull(14);
        v.data_mut()[0] = 0x46;
        v.unstrip(14);
        assert_eq!(&v.data()[..14], &FRAME[..14]);
        assert_eq!(v.data()[14], 0x46);
        // A clone of a pool packet.
        let mut a = Packet::from_slice(&FRAME);
        a.pull(14);
        let mut c = a.clone();
        c.data_mut()[0] = 0x47;
        c.unstrip(14);
        assert_eq!(&c.data()[..14], &FRAME[..14]);
        assert_eq!(a.data()[0], 0x45);
        // A clone of a heap packet (the general path).
        let mut big = Packet::new(9000);
        big.data_mut()[..20].copy_from_slice(&FRAME);
        big.pull(14);
        let mut bc = big.clone();
        bc.data_mut()[0] = 0x48;
        bc.unstrip(14);
        assert_eq!(&bc.data()[..14], &FRAME[..14]);
        assert_eq!(bc.len(), 9000);
    }

    #[test]
    fn large_packets_use_the_heap() {
        let _heap = heap_lock();
        let before = pool_stats().heap_live;
        let mut p = Packet::new(9000);
        assert_eq!(pool_stats().heap_live, before + 1);
        p.data_mut()[8999] = 1;
        let q = p.clone();
        assert_eq!(q.data()[8999], 1);
        drop(p);
        drop(q);
        assert_eq!(pool_stats().heap_live, before);
    }

    #[test]
    fn header_offsets_survive_pull() {
        let mut p = Packet::new(60);
        p.set_network_header(14);
        p.set_transport_header(34);
        p.pull(14);
        assert_eq!(p.network_header_offset(), Some(0));
        assert_eq!(p.transport_header_offset(), Some(20));
        assert_eq!(p.transport_header().map(|t| t.len()), Some(26));
        p.pull(30);
        assert_eq!(p.network_header_offset(), Some(-30));
        assert_eq!(p.network_header(), None);
    }

    #[test]
    fn packets_cross_threads() {
        let v: Vec<Packet> = (0..3000)
            .map(|i| Packet::from_slice(&[i as u8; 64]))
            .collect();
        let h = std::thread::spawn(move || v.into_iter().map(|p| p.data()[0] as u64).sum::<u64>());
        let s = h.join().unwrap();
        assert_eq!(s, (0..3000u64).map(|i| i % 256).sum());
    }
}

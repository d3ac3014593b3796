//! Batches: the unit of work passed between elements (FastClick/VPP style).
//!
//! A [`Batch`] is a vector of packet handles. Its backing vector is recycled
//! through a per-thread free list, so moving packets through a graph
//! allocates nothing in steady state, and dropping a batch releases all its
//! packets with a single pool access.

use crate::packet::{release_all, Packet};
use std::cell::UnsafeCell;

/// Largest batch a source produces; also the initial capacity of every batch.
pub const MAX_BATCH: usize = 256;

/// Default `BURST` of sources and pulling tasks: packets per task run, sent
/// as one batch. FastClick uses 32; 64 halves the per-element dispatch cost
/// per packet (0.8 to 0.4 ns, `bench/run-core.sh`) and is still far below
/// a queue's usual capacity.
pub const DEFAULT_BURST: usize = 64;
const RECYCLE_MAX: usize = 64;

/// Outputs up to which [`Batch::split_into`] counts first.
pub const SPLIT_COUNTED_MAX: usize = 8;

/// An output number as elements keep them per packet ([`Batch::split_into`]):
/// `u8`, `u16` or `u32`.
pub trait OutputIndex: Copy {
    /// The number as an index.
    fn index(self) -> usize;
}

impl OutputIndex for u8 {
    #[inline(always)]
    fn index(self) -> usize {
        usize::from(self)
    }
}

impl OutputIndex for u16 {
    #[inline(always)]
    fn index(self) -> usize {
        usize::from(self)
    }
}

impl OutputIndex for u32 {
    #[inline(always)]
    fn index(self) -> usize {
        self as usize
    }
}

thread_local! {
    static VECS: UnsafeCell<Vec<Vec<Packet>>> = const { UnsafeCell::new(Vec::new()) };
}

fn take_vec() -> Vec<Packet> {
    // SAFETY: thread-local, not re-entered.
    VECS.with(|v| unsafe { &mut *v.get() }.pop())
        .unwrap_or_else(|| Vec::with_capacity(MAX_BATCH))
}

fn give_vec(v: Vec<Packet>) {
    debug_assert!(v.is_empty());
    if v.capacity() < MAX_BATCH {
        return;
    }
    VECS.with(|s| {
        // SAFETY: thread-local, not re-entered.
        let s = unsafe { &mut *s.get() };
        if s.len() < RECYCLE_MAX {
            s.push(v);
        }
    });
}

/// An ordered group of packets travelling together through the graph.
pub struct Batch {
    v: Vec<Packet>,
}

impl Default for Batch {
    fn default() -> Self {
        Batch::new()
    }
}

impl Batch {
    /// An empty batch (reusing a recycled vector when one is available).
    #[inline]
    pub fn new() -> Batch {
        Batch { v: take_vec() }
    }

    /// A batch holding one packet.
    #[inline]
    pub fn single(p: Packet) -> Batch {
        let mut b = Batch::new();
        b.v.push(p);
        b
    }

    /// Number of packets.
    #[inline]
    pub fn len(&self) -> usize {
        self.v.len()
    }

    /// True if the batch has no packets.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.v.is_empty()
    }

    /// Append a packet.
    #[inline]
    pub fn push(&mut self, p: Packet) {
        self.v.push(p);
    }

    /// Remove and return the last packet.
    #[inline]
    pub fn pop(&mut self) -> Option<Packet> {
        self.v.pop()
    }

    /// Append all packets of `other`, keeping order.
    #[inline]
    pub fn append(&mut self, mut other: Batch) {
        if self.v.is_empty() {
            std::mem::swap(&mut self.v, &mut other.v);
        } else {
            self.v.append(&mut other.v);
        }
    }

    /// Packets as a slice.
    #[inline]
    pub fn as_slice(&self) -> &[Packet] {
        &self.v
    }

    /// Packets as a mutable slice.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [Packet] {
        &mut self.v
    }

    /// Iterate over the packets.
    #[inline]
    pub fn iter(&self) -> std::slice::Iter<'_, Packet> {
        self.v.iter()
    }

    /// Iterate mutably over the packets.
    #[inline]
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Packet> {
        self.v.iter_mut()
    }

    /// The underlying vector, for sources that fill batches in bulk.
    #[inline]
    pub fn vec_mut(&mut self) -> &mut Vec<Packet> {
        &mut self.v
    }

    /// Remove and return all packets as an iterator (the batch stays usable).
    #[inline]
    pub fn drain(&mut self) -> std::vec::Drain<'_, Packet> {
        self.v.drain(..)
    }

    /// Keep packets for which `f` returns true; drop the others in bulk.
    /// Returns the number dropped.
    #[inline]
    pub fn retain(&mut self, f: impl FnMut(&mut Packet) -> bool) -> usize {
        let mut f = f;
        let dropped = self.split_off_if(|p| !f(p));
        dropped.len()
    }

    /// Split off packets for which `f` returns true into a new batch,
    /// preserving order in both.
    #[inline]
    pub fn split_off_if(&mut self, mut f: impl FnMut(&mut Packet) -> bool) -> Batch {
        let mut out = Batch::new();
        let mut keep = Batch::new();
        for mut p in self.v.drain(..) {
            if f(&mut p) {
                out.v.push(p);
            } else {
                keep.v.push(p);
            }
        }
        std::mem::swap(&mut self.v, &mut keep.v);
        out
    }

    /// Moves the packets whose flag in `marked` is set (by position; packets
    /// past its end stay) to a new batch, keeping the order of both.
    pub fn split_off_marked(&mut self, marked: &[bool]) -> Batch {
        let mut i = 0;
        self.split_off_if(|_| {
            i += 1;
            marked.get(i - 1).copied().unwrap_or(false)
        })
    }

    /// Moves every packet to `outs[out[i]]` (`out`: one output a packet,
    /// each below `outs.len()`, else this panics before moving anything),
    /// in order, after whatever the outputs hold. Up to
    /// [`SPLIT_COUNTED_MAX`] outputs the packets are counted per output
    /// first, room is reserved, and each packet is written to its output's
    /// next free place: no capacity test, length update or bounds test a
    /// packet (a `push` a packet, with the output's length read back from
    /// memory, cost HashTCAM's cached path about 13 cycles of 81 a packet,
    /// session 9). Beyond that, one push a packet.
    pub fn split_into<O: OutputIndex>(mut self, out: &[O], outs: &mut [Batch]) {
        assert_eq!(self.v.len(), out.len(), "one output a packet");
        if outs.len() > SPLIT_COUNTED_MAX {
            for (p, &o) in self.v.drain(..).zip(out) {
                outs[o.index()].v.push(p);
            }
            return;
        }
        let mut count = [0usize; SPLIT_COUNTED_MAX];
        let count = &mut count[..outs.len()];
        // Panics (before anything moves) if an output is out of range.
        for &o in out {
            count[o.index()] += 1;
        }
        let mut next = [std::ptr::null_mut::<Packet>(); SPLIT_COUNTED_MAX];
        for ((n, b), &c) in next.iter_mut().zip(outs.iter_mut()).zip(&*count) {
            b.v.reserve(c);
            // SAFETY: `len` is within the allocation (one past its end at most).
            *n = unsafe { b.v.as_mut_ptr().add(b.v.len()) };
        }
        // SAFETY: every packet is read once and written once, to a place of
        // the spare room reserved above (`count[o]` places for the packets of
        // output `o`, all `o < outs.len()`, checked by the count); this
        // batch's length is then 0, so it drops none of them, and each
        // output's length grows by its count, so it owns exactly the packets
        // written to it. Nothing between the reads and the length updates
        // can panic.
        unsafe {
            for (p, &o) in self.v.iter().zip(out) {
                let n = next.get_unchecked_mut(o.index());
                n.write(std::ptr::read(p));
                *n = n.add(1);
            }
            self.v.set_len(0);
            for (b, &c) in outs.iter_mut().zip(&*count) {
                b.v.set_len(b.v.len() + c);
            }
        }
    }

    /// Remove and return the first `n` packets (or all if fewer).
    pub fn split_front(&mut self, n: usize) -> Batch {
        let mut out = Batch::new();
        let n = n.min(self.v.len());
        out.v.extend(self.v.drain(..n));
        out
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        if !self.v.is_empty() {
            let n = self.v.len();
            // SAFETY: Packet is repr(transparent) over a pointer; we take
            // ownership of every handle and release them together.
            unsafe {
                self.v.set_len(0);
                let raw = std::slice::from_raw_parts(
                    self.v.as_ptr() as *const *mut crate::packet::Meta,
                    n,
                );
                release_all(raw);
            }
        }
        give_vec(std::mem::take(&mut self.v));
    }
}

impl IntoIterator for Batch {
    type Item = Packet;
    type IntoIter = BatchIntoIter;
    fn into_iter(mut self) -> BatchIntoIter {
        let v = std::mem::take(&mut self.v);
        BatchIntoIter {
            inner: v.into_iter(),
        }
    }
}

/// Owning iterator over a batch's packets.
pub struct BatchIntoIter {
    inner: std::vec::IntoIter<Packet>,
}

impl Iterator for BatchIntoIter {
    type Item = Packet;
    #[inline]
    fn next(&mut self) -> Option<Packet> {
        self.inner.next()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl FromIterator<Packet> for Batch {
    fn from_iter<I: IntoIterator<Item = Packet>>(it: I) -> Batch {
        let mut b = Batch::new();
        b.v.extend(it);
        b
    }
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Batch({} packets)", self.v.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `split_into` keeps every packet, in order, after what the outputs
    /// held, for output counts on both sides of `SPLIT_COUNTED_MAX`.
    #[test]
    fn split_into_keeps_every_packet_in_order() {
        let id = |p: &Packet| u32::from_le_bytes(p.data()[..4].try_into().unwrap());
        let mut x = 0x9e37_79b9u32;
        for n in 1usize..12 {
            for held in 0usize..3 {
                for len in [0usize, 1, 7, 64, 199] {
                    let out: Vec<u32> = (0..len)
                        .map(|_| {
                            x ^= x << 13;
                            x ^= x >> 17;
                            x ^= x << 5;
                            x % n as u32
                        })
                        .collect();
                    let mut batch = Batch::new();
                    for i in 0..len {
                        batch.push(Packet::from_slice(&(i as u32).to_le_bytes()));
                    }
                    let mut outs: Vec<Batch> = (0..n).map(|_| Batch::new()).collect();
                    for b in &mut outs {
                        for _ in 0..held {
                            b.push(Packet::from_slice(&u32::MAX.to_le_bytes()));
                        }
                    }
                    batch.split_into(&out, &mut outs);
                    for (k, b) in outs.iter().enumerate() {
                        let got: Vec<u32> = b.iter().map(id).collect();
                        let mut want = vec![u32::MAX; held];
                        want.extend((0..len as u32).filter(|&i| out[i as usize] == k as u32));
                        assert_eq!(got, want, "n {n} held {held} len {len} output {k}");
                    }
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "index out of bounds")]
    fn split_into_rejects_an_output_out_of_range() {
        let mut batch = Batch::new();
        batch.push(Packet::from_slice(&[1]));
        let mut outs = vec![Batch::new(), Batch::new()];
        batch.split_into(&[2u8], &mut outs);
    }

    fn b(vals: &[u8]) -> Batch {
        vals.iter().map(|&v| Packet::from_slice(&[v])).collect()
    }
    fn vals(b: &Batch) -> Vec<u8> {
        b.iter().map(|p| p.data()[0]).collect()
    }

    #[test]
    fn split_and_retain_keep_order() {
        let mut x = b(&[1, 2, 3, 4, 5, 6]);
        let even = x.split_off_if(|p| p.data()[0] % 2 == 0);
        assert_eq!(vals(&x), vec![1, 3, 5]);
        assert_eq!(vals(&even), vec![2, 4, 6]);
        let dropped = x.retain(|p| p.data()[0] != 3);
        assert_eq!(dropped, 1);
        assert_eq!(vals(&x), vec![1, 5]);
        let mut y = b(&[7, 8]);
        let front = y.split_front(1);
        x.append(front);
        x.append(y);
        assert_eq!(vals(&x), vec![1, 5, 7, 8]);
        let v: Vec<u8> = x.into_iter().map(|p| p.data()[0]).collect();
        assert_eq!(v, vec![1, 5, 7, 8]);
        let mut z = b(&[1, 2, 3, 4]);
        let marked = z.split_off_marked(&[false, true, true]);
        assert_eq!(vals(&marked), vec![2, 3]);
        assert_eq!(vals(&z), vec![1, 4], "past the flags' end: kept");
    }

    #[test]
    fn dropping_batches_returns_packets() {
        // Counts of this thread's cache only: other tests run concurrently
        // and exchange blocks with the global pool. The warm-up leaves at
        // least 300 blocks here, so the 200 below need no refill, and the
        // cache stays under its spill limit.
        let _warm = b(&[0; 300]);
        drop(_warm);
        let before = crate::packet::local_free_blocks();
        let x = b(&[1; 200]);
        assert_eq!(crate::packet::local_free_blocks(), before - 200);
        drop(x);
        assert_eq!(crate::packet::local_free_blocks(), before);
    }
}

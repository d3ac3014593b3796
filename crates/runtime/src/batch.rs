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

//! A bounded lock-free single-producer single-consumer ring of packets, the
//! only way packets cross threads.
//!
//! Classic Lamport ring with cached indices: the producer keeps its own copy
//! of the consumer's head and re-reads the shared one only when the ring looks
//! full (and vice versa), so in steady state each batch costs one release
//! store and no cache-line ping-pong per packet.

use crate::batch::Batch;
use crate::packet::Packet;
use crossbeam_utils::CachePadded;
use std::cell::{Cell, UnsafeCell};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};

/// SPSC ring of packets.
pub struct Ring {
    buf: Box<[UnsafeCell<MaybeUninit<Packet>>]>,
    mask: usize,
    head: CachePadded<AtomicUsize>,
    tail: CachePadded<AtomicUsize>,
    prod_head_cache: CachePadded<Cell<usize>>,
    cons_tail_cache: CachePadded<Cell<usize>>,
}

// SAFETY: exactly one producer thread calls `push_batch` and one consumer
// thread calls `pop_batch` (enforced by the router, which gives each side to
// one thread); slots are handed over with release/acquire on head and tail.
// The two Cell caches are each touched only by their own side.
unsafe impl Send for Ring {}
// SAFETY: see above.
unsafe impl Sync for Ring {}

impl Ring {
    /// A ring holding up to `capacity` (rounded up to a power of two) packets.
    pub fn new(capacity: usize) -> Ring {
        let cap = capacity.next_power_of_two().max(2);
        Ring {
            buf: (0..cap)
                .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
                .collect(),
            mask: cap - 1,
            head: CachePadded::new(AtomicUsize::new(0)),
            tail: CachePadded::new(AtomicUsize::new(0)),
            prod_head_cache: CachePadded::new(Cell::new(0)),
            cons_tail_cache: CachePadded::new(Cell::new(0)),
        }
    }

    /// Capacity in packets.
    pub fn capacity(&self) -> usize {
        self.mask + 1
    }

    /// Producer: move as many packets from the front of `b` as fit; the rest
    /// stay in `b`. Returns the number moved.
    pub fn push_batch(&self, b: &mut Batch) -> usize {
        let tail = self.tail.load(Ordering::Relaxed);
        let mut head = self.prod_head_cache.get();
        let cap = self.mask + 1;
        if tail - head + b.len() > cap {
            head = self.head.load(Ordering::Acquire);
            self.prod_head_cache.set(head);
        }
        let n = (cap - (tail - head)).min(b.len());
        for (i, p) in b.vec_mut().drain(..n).enumerate() {
            // SAFETY: slot (tail+i) is free: the consumer has passed it.
            unsafe { (*self.buf[(tail + i) & self.mask].get()).write(p) };
        }
        self.tail.store(tail + n, Ordering::Release);
        n
    }

    /// Consumer: pop up to `max` packets into a new batch.
    pub fn pop_batch(&self, max: usize) -> Option<Batch> {
        let head = self.head.load(Ordering::Relaxed);
        let mut tail = self.cons_tail_cache.get();
        if tail == head {
            tail = self.tail.load(Ordering::Acquire);
            self.cons_tail_cache.set(tail);
            if tail == head {
                return None;
            }
        }
        let n = (tail - head).min(max);
        let mut b = Batch::new();
        let v = b.vec_mut();
        for i in 0..n {
            // SAFETY: slots head..tail were published by the producer.
            v.push(unsafe { (*self.buf[(head + i) & self.mask].get()).assume_init_read() });
        }
        self.head.store(head + n, Ordering::Release);
        Some(b)
    }

    /// Packets currently in the ring (approximate from either side).
    pub fn len(&self) -> usize {
        self.tail.load(Ordering::Acquire) - self.head.load(Ordering::Acquire)
    }

    /// True if the ring is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        while self.pop_batch(usize::MAX).is_some() {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_across_threads() {
        let r = std::sync::Arc::new(Ring::new(64));
        let r2 = r.clone();
        let prod = std::thread::spawn(move || {
            let mut i = 0u32;
            while i < 100_000 {
                let mut b: Batch = (i..(i + 17).min(100_000))
                    .map(|k| Packet::from_slice(&k.to_le_bytes()))
                    .collect();
                while !b.is_empty() {
                    let n = r2.push_batch(&mut b);
                    i += n as u32;
                    if n == 0 {
                        std::thread::yield_now();
                    }
                }
            }
        });
        let mut expect = 0u32;
        while expect < 100_000 {
            if let Some(b) = r.pop_batch(32) {
                for p in b.iter() {
                    let mut x = [0u8; 4];
                    x.copy_from_slice(p.data());
                    assert_eq!(u32::from_le_bytes(x), expect);
                    expect += 1;
                }
            } else {
                std::thread::yield_now();
            }
        }
        prod.join().unwrap();
        assert!(r.is_empty());
    }

    #[test]
    fn partial_push_when_full() {
        let r = Ring::new(4);
        let mut b: Batch = (0..6u8).map(|k| Packet::from_slice(&[k])).collect();
        assert_eq!(r.push_batch(&mut b), 4);
        assert_eq!(b.len(), 2);
        assert_eq!(b.as_slice()[0].data(), &[4]);
        let out = r.pop_batch(10).unwrap();
        assert_eq!(
            out.iter().map(|p| p.data()[0]).collect::<Vec<_>>(),
            vec![0, 1, 2, 3]
        );
        assert!(r.pop_batch(1).is_none());
    }
}

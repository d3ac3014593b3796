//! A shallow priority queue (pFabric): always dequeues the highest-priority
//! packet and, when full, drops the lowest-priority one.
//!
//! # Synopsis
//! `SRPrioQueue([CAPACITY, KEYWORDS])`
//!
//! # Ports
//! One push input; one pull output, and an optional push output 1 that
//! receives dropped packets: the lowest-priority packet when the queue
//! overflows, and packets too short for the priority field.
//!
//! # Arguments
//! - `CAPACITY` (unsigned integer 1-4096, default 32): maximum queue
//!   length. pFabric's queues are shallow (a few dozen packets); an
//!   insertion may cost time linear in the capacity.
//! - `ANNO` (annotation): take the priority from this annotation: a Click
//!   name (`PAINT`, `AGGREGATE`...) or a byte offset into the user area,
//!   read in host byte order.
//! - `SIZE` (1, 2 or 4): the size of the `ANNO` annotation in bytes
//!   (default: the named annotation's size; 1 for an offset).
//! - `OFFSET` (unsigned integer): instead of `ANNO`, take the priority from
//!   the packet bytes at this offset (from the start of the packet data),
//!   big-endian.
//! - `LENGTH` (1-4, default 4): the number of bytes read at `OFFSET`.
//! - `IMPL` (`fast` or `reference`, default `fast`): the implementation;
//!   both behave identically (see Implementation).
//!
//! Exactly one of `ANNO` and `OFFSET` must be given.
//!
//! A **lower value is a higher priority**, as with pFabric's priority, the
//! flow's remaining size: the packet with the smallest value leaves first.
//! Among packets of equal priority the queue is FIFO: the earliest arrival
//! leaves first. When a packet arrives at a full queue, the queued packets
//! and the arrival are ranked by (priority, arrival order) and the last one
//! is dropped: the lowest-priority packet, and among several of the lowest
//! priority the most recent, which is the arriving packet if it ties.
//! pFabric (Alizadeh et al., SIGCOMM 2013) dequeues the earliest packet of
//! the flow that holds the highest-priority packet, to avoid reordering
//! within a flow; with priorities that are the remaining flow size, packets
//! of a flow arrive with falling values, so this queue's order differs
//! only when one flow's later packet carries a smaller value than its
//! earlier one, where it leaves first. Click has no such queue (Click's
//! `PrioSched` pulls from its inputs in port order).
//!
//! # Handlers
//! - `length` (read): packets in the queue now.
//! - `highwater_length` (read): the largest length seen.
//! - `capacity` (read/write): maximum length; shrinking it below the
//!   length drops the lowest-priority packets (counted in `drops`).
//! - `drops` (read): packets dropped because the queue was full.
//! - `short` (read): packets too short for the priority field (sent to
//!   output 1 or dropped).
//! - `reset_counts` (write): reset `drops` and `short`, and
//!   `highwater_length` to the current length.
//! - `reset` (write): drop every queued packet (freed, as in Queue).
//!
//! # Example
//! ```click
//! // pFabric: the sender writes the remaining flow size into the packet.
//! FromDump(in.pcap, STOP true)
//!   -> q :: SRPrioQueue(32, OFFSET 42, LENGTH 4)
//!   -> Unqueue -> Discard;
//! q[1] -> dropped :: Counter -> Discard;
//! ```
//!
//! # Implementation
//! The fast implementation keeps the queue sorted best first in two
//! parallel arrays, 32-bit priority keys and packet handles, on a window
//! `[head, head + length)` of buffers twice the capacity long: a pull takes
//! its packets from the front of the window without a search or a move;
//! the window goes back to the start when the queue empties, or when an
//! insertion would run past the end. Order among equal priorities is the
//! order in the array, so no arrival numbers are kept.
//!
//! A pushed batch is inserted in chunks of up to 64 packets, each chunk at
//! once. For each arrival the chunk counts the arrivals with a greater
//! priority value, over all pairs: with AVX2 (detected at run time), 32 or
//! 64 keys held in registers are compared with each key broadcast, 8 pairs
//! per instruction; a portable loop otherwise. An arrival's rank among
//! the chunk is its count from the worst end less the later arrivals of
//! equal priority (one backward pass). Into an empty queue each arrival
//! goes straight to its rank and those ranked past the capacity are
//! dropped; otherwise the ranked arrivals are merged into the queue from
//! its worst end, the first packets out (the worst) being the dropped
//! ones, and a few arrivals into a long queue (more than 8 queued packets
//! per arrival) find their places by binary search and move the queue
//! behind them in blocks. A chunk keeps exactly what one-at-a-time
//! insertion keeps, the best `CAPACITY` packets by (priority, arrival).
//! When output 1 is connected its packets leave in the one-at-a-time
//! order too: each dropped packet leaves at an arrival that finds the
//! queue full, and taken worst first, each leaves at the first such
//! arrival from its own on that a worse one has not taken (a bit scan);
//! when it is not, the dropped packets are freed in any order. Nothing is
//! allocated per packet.
//!
//! Measured (`linerate bench elements SRPrioQueue`, session 6): 32 packets
//! in 64-packet bursts, half dropped, 21.7 ns → 7.5 ns a packet (204 → 96
//! instructions); about 3 ns of that is the bench graph's push-and-pull
//! path, which costs as much with a plain `Queue(32)` (44-47 instructions,
//! 10-12 cycles a packet). The sorted array it replaces spent half its
//! time in its per-arrival insert loop and `memmove`. The AVX2 count
//! instead of the portable loop saves 36 of those 96 instructions and
//! about 15 % of the run's cycles.
//!
//! `IMPL reference` keeps the packets in the standard library's ordered map
//! (`BTreeMap`) keyed by (priority, 64-bit arrival number): `pop_first`
//! dequeues and `pop_last` drops.
//!
//! ClickNP's optimisations: struct of arrays — used: the queue is two
//! parallel arrays, the 32-bit priority keys and the packet handles, so the
//! counts, merges and binary searches read only the dense key array; a
//! chunk's arrivals are gathered into a key array of their own. SIMD —
//! used: each chunk's pairwise priority counts compare one broadcast key
//! with 8 keys per AVX2 instruction (detected at run time), with a portable
//! loop elsewhere. prefetch — not used: the key array is read in order (the
//! merge walks it from the worst end), a pattern the hardware prefetcher
//! follows, and there is no hashed or scattered access to hide. slow path —
//! the usual insertion (ranks, then a merge or a direct placement into an
//! empty queue) runs per chunk without per-packet calls; a few arrivals
//! into a long queue take a binary search and block moves instead, and the
//! drop order for output 1 is worked out only when output 1 is connected.

use super::{anno_get, parse_anno, read_impl, Impl};
use linerate_runtime::anno::AnnoInfo;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use std::any::Any;
use std::collections::BTreeMap;

/// The `SRPrioQueue` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "SRPrioQueue",
    port_count: "1/1-2",
    processing: "h/lh",
    doc: element_doc!("sched/srprioqueue"),
    make,
};

/// Largest `CAPACITY`.
pub const MAX_CAPACITY: usize = 4096;

/// Arrivals handled together: ranked against each other, then merged into
/// the queue in one pass.
const CHUNK: usize = 64;

/// A priority as a signed key: `prio ^ 1 << 31`, so that signed
/// comparisons (one vector instruction each) order priorities unsigned.
#[inline(always)]
fn key(prio: u32) -> i32 {
    (prio ^ 1 << 31) as i32
}

/// Bits `from..64` of a word (none if `from >= 64`).
#[inline(always)]
fn bits_from(from: usize) -> u64 {
    if from >= 64 {
        0
    } else {
        !0 << from
    }
}

/// One chunk of arrivals being inserted (scratch kept in the queue, so
/// nothing is allocated per batch).
struct Chunk {
    /// Keys of the valid arrivals, in arrival order; lanes past the count
    /// hold stale values that are never read as results.
    key: [i32; CHUNK],
    /// Their packets.
    pkt: [Option<Packet>; CHUNK],
    /// Their positions in the chunk (among the too-short packets).
    pos: [u8; CHUNK],
    /// For each arrival, the number of arrivals with a greater key.
    greater: [u32; CHUNK],
    /// The arrivals best first: ties in arrival order.
    ord: [u8; CHUNK],
    /// The dropped arrivals, best first (when the queue was empty).
    dropped: [u8; CHUNK],
    /// The packets the chunk sends to output 1, by chunk position (only
    /// when the order of that output matters).
    out: [Option<Packet>; CHUNK],
}

impl Chunk {
    /// Put dropped packet `p`, which arrived as valid arrival `at` (0 for a
    /// queued packet), at the first free drop event from `at` on.
    #[inline(always)]
    fn drop_at_event(&mut self, events: &mut u64, at: usize, p: Option<Packet>) {
        let e = (*events & bits_from(at)).trailing_zeros() as usize % CHUNK;
        *events &= !(1 << e);
        self.out[self.pos[e] as usize % CHUNK] = p;
    }
}

/// For each of the first `m` keys, the number of them greater than it.
#[inline(always)]
fn greater_counts(key: &[i32; CHUNK], m: usize, greater: &mut [u32; CHUNK]) {
    let keys = &key[..m];
    for (g, &k) in greater.iter_mut().zip(keys) {
        *g = keys.iter().map(|&x| (x > k) as u32).sum();
    }
}

/// [`greater_counts`] with AVX2: 32 or 64 keys in 4 or 8 registers, each
/// compared with every key broadcast (one compare and one subtract per 8
/// pairs).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn greater_counts_avx2(key: &[i32; CHUNK], m: usize, greater: &mut [u32; CHUNK]) {
    if m <= 32 {
        greater_lanes::<4>(key, m, greater)
    } else {
        greater_lanes::<8>(key, m, greater)
    }
}

/// The first `8 * V` keys against the first `m`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn greater_lanes<const V: usize>(key: &[i32; CHUNK], m: usize, greater: &mut [u32; CHUNK]) {
    use std::arch::x86_64::*;
    const { assert!(8 * V <= CHUNK) };
    let mut mine = [_mm256_setzero_si256(); V];
    let mut acc = [_mm256_setzero_si256(); V];
    for (v, x) in mine.iter_mut().enumerate() {
        // SAFETY: lanes 8v..8v+8 lie within the CHUNK keys (8V <= CHUNK);
        // the load is unaligned.
        *x = _mm256_loadu_si256(key.as_ptr().add(8 * v).cast());
    }
    for &k in &key[..m] {
        let k = _mm256_set1_epi32(k);
        for (a, &x) in acc.iter_mut().zip(&mine) {
            *a = _mm256_sub_epi32(*a, _mm256_cmpgt_epi32(k, x));
        }
    }
    for (v, a) in acc.iter().enumerate() {
        // SAFETY: as for the loads, within the CHUNK counts.
        _mm256_storeu_si256(greater.as_mut_ptr().add(8 * v).cast(), *a);
    }
}

/// The fast queue: priority keys and packets sorted best first on
/// `[head, head + len)` of two parallel buffers, see the module docs.
pub struct ArrayQueue {
    /// Keys (see [`key`]), ascending on `[head, head + len)`; among equal
    /// keys, earlier arrivals first.
    keys: Vec<i32>,
    /// Packets beside their keys; `None` outside `[head, head + len)`.
    pkts: Vec<Option<Packet>>,
    head: usize,
    len: usize,
    capacity: usize,
    avx2: bool,
    chunk: Box<Chunk>,
}

impl ArrayQueue {
    /// An empty queue of `capacity` packets (1 to [`MAX_CAPACITY`]).
    pub fn new(capacity: usize) -> ArrayQueue {
        let capacity = capacity.clamp(1, MAX_CAPACITY);
        #[cfg(target_arch = "x86_64")]
        let avx2 = std::is_x86_feature_detected!("avx2");
        #[cfg(not(target_arch = "x86_64"))]
        let avx2 = false;
        ArrayQueue {
            keys: vec![0; 2 * capacity],
            pkts: (0..2 * capacity).map(|_| None).collect(),
            head: 0,
            len: 0,
            capacity,
            avx2,
            chunk: Box::new(Chunk {
                key: [0; CHUNK],
                pkt: [const { None }; CHUNK],
                pos: [0; CHUNK],
                greater: [0; CHUNK],
                ord: [0; CHUNK],
                dropped: [0; CHUNK],
                out: [const { None }; CHUNK],
            }),
        }
    }

    /// Packets queued.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if no packet is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Enqueue `p` with priority `prio`; returns the packet dropped to make
    /// room (possibly `p` itself), if the queue was full.
    pub fn push(&mut self, prio: u32, p: Packet) -> Option<Packet> {
        let mut b = Batch::single(p);
        let mut out = Batch::new();
        self.push_all(&mut b, |_| Some(prio), &mut out, false);
        out.pop()
    }

    /// Enqueue every packet of `batch` with the priority `prio` gives; the
    /// packets it has none for (too short) and the dropped ones go to `out`,
    /// in the order one-at-a-time insertion would send them if `ordered`,
    /// in some order otherwise. Returns (too short, dropped). The loop is
    /// compiled for AVX2 too and chosen once per batch.
    #[inline]
    pub fn push_all(
        &mut self,
        batch: &mut Batch,
        prio: impl Fn(&Packet) -> Option<u32>,
        out: &mut Batch,
        ordered: bool,
    ) -> (u64, u64) {
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: AVX2 was detected on this CPU in `new`.
            return unsafe { self.push_all_avx2(batch, prio, out, ordered) };
        }
        self.push_all_inner(batch, prio, out, ordered)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn push_all_avx2(
        &mut self,
        batch: &mut Batch,
        prio: impl Fn(&Packet) -> Option<u32>,
        out: &mut Batch,
        ordered: bool,
    ) -> (u64, u64) {
        self.push_all_inner(batch, prio, out, ordered)
    }

    #[inline(always)]
    fn push_all_inner(
        &mut self,
        batch: &mut Batch,
        prio: impl Fn(&Packet) -> Option<u32>,
        out: &mut Batch,
        ordered: bool,
    ) -> (u64, u64) {
        let (mut short, mut full) = (0, 0);
        let mut it = batch.drain();
        loop {
            let c = &mut *self.chunk;
            let (mut n, mut m) = (0, 0);
            while n < CHUNK {
                let Some(p) = it.next() else { break };
                match prio(&p) {
                    Some(v) => {
                        c.key[m] = key(v);
                        c.pkt[m] = Some(p);
                        c.pos[m] = n as u8;
                        m += 1;
                    }
                    None => {
                        short += 1;
                        if ordered {
                            c.out[n] = Some(p);
                        } else {
                            out.push(p);
                        }
                    }
                }
                n += 1;
            }
            if n == 0 {
                return (short, full);
            }
            full += self.insert_chunk(m, out, ordered);
            if ordered {
                let c = &mut *self.chunk;
                out.vec_mut()
                    .extend(c.out[..n].iter_mut().filter_map(Option::take));
            }
        }
    }

    /// Insert the chunk's `m` arrivals: rank them against each other, then
    /// place them into the queue (an empty one) or merge them into it from
    /// the worst end, dropping what does not fit. Returns the number
    /// dropped. With `ordered`, the dropped packets go to the chunk's
    /// output slots (see [`Chunk::out`]), otherwise straight to `out`.
    #[inline(always)]
    fn insert_chunk(&mut self, m: usize, out: &mut Batch, ordered: bool) -> u64 {
        if m == 0 {
            return 0;
        }
        let c = &mut *self.chunk;
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: AVX2 was detected on this CPU in `new`.
            unsafe { greater_counts_avx2(&c.key, m, &mut c.greater) };
        } else {
            greater_counts(&c.key, m, &mut c.greater);
        }
        #[cfg(not(target_arch = "x86_64"))]
        greater_counts(&c.key, m, &mut c.greater);
        // Arrival `i`'s rank, best first, is `m - 1 - greater[i]` less the
        // number of later arrivals with an equal key (a backward pass
        // counts those per group).
        let mut later = [0u8; CHUNK];
        let q = self.len;
        let cap = self.capacity;
        // One-at-a-time insertion drops at the arrivals that find the queue
        // full (events `cap - q..m`), each time the worst packet present;
        // so taking the dropped packets worst first, each leaves at the
        // first event not yet taken from its own arrival on.
        let mut events = bits_from(cap.saturating_sub(q)) & !bits_from(m);
        if q == 0 {
            // Nothing to merge with: each arrival goes straight to its rank.
            let keep = m.min(cap);
            self.head = 0;
            for i in (0..m).rev() {
                let g = c.greater[i] as usize % CHUNK;
                let r = m - 1 - g - later[g] as usize;
                later[g] += 1;
                if r < keep {
                    self.keys[r] = c.key[i];
                    self.pkts[r] = c.pkt[i].take();
                } else if ordered {
                    c.dropped[r - keep] = i as u8;
                } else if let Some(p) = c.pkt[i].take() {
                    out.push(p);
                }
            }
            if ordered {
                for d in (0..m - keep).rev() {
                    let i = c.dropped[d] as usize;
                    let p = c.pkt[i].take();
                    c.drop_at_event(&mut events, i, p);
                }
            }
            self.len = keep;
            return (m - keep) as u64;
        }
        for i in (0..m).rev() {
            let g = c.greater[i] as usize % CHUNK;
            c.ord[m - 1 - g - later[g] as usize] = i as u8;
            later[g] += 1;
        }
        let total = q + m;
        let keep = total.min(cap);
        if self.head + keep > self.keys.len() {
            self.keys.copy_within(self.head..self.head + q, 0);
            self.pkts[..self.head + q].rotate_left(self.head);
            self.head = 0;
        }
        let (keys, pkts) = (&mut self.keys[self.head..], &mut self.pkts[self.head..]);
        let (mut iq, mut ia, mut t) = (q, m, total);
        // Merge from the worst end: an arrival is worse than a queued packet
        // of equal key, as it came later. The first `total - keep` out are
        // dropped, worst first.
        while t > keep {
            t -= 1;
            let arrival = ia > 0 && (iq == 0 || c.key[c.ord[ia - 1] as usize] >= keys[iq - 1]);
            let (p, at) = if arrival {
                ia -= 1;
                let a = c.ord[ia] as usize;
                (c.pkt[a].take(), a)
            } else {
                iq -= 1;
                (pkts[iq].take(), 0)
            };
            if ordered {
                c.drop_at_event(&mut events, at, p);
            } else if let Some(p) = p {
                out.push(p);
            }
        }
        if iq > 8 * ia {
            // Few arrivals into a long queue: find each one's place by
            // binary search and move the queued packets after it in one
            // block (two `memmove`s), not one at a time.
            while ia > 0 {
                let a = c.ord[ia - 1] as usize;
                let j = keys[..iq].partition_point(|&k| k <= c.key[a]);
                keys.copy_within(j..iq, j + ia);
                pkts[j..iq + ia].rotate_right(ia);
                iq = j;
                ia -= 1;
                keys[j + ia] = c.key[a];
                pkts[j + ia] = c.pkt[a].take();
            }
        }
        while ia > 0 {
            t -= 1;
            let a = c.ord[ia - 1] as usize;
            if iq == 0 || c.key[a] >= keys[iq - 1] {
                ia -= 1;
                keys[t] = c.key[a];
                pkts[t] = c.pkt[a].take();
            } else {
                iq -= 1;
                keys[t] = keys[iq];
                pkts[t] = pkts[iq].take();
            }
        }
        self.len = keep;
        (total - keep) as u64
    }

    /// Dequeue the highest-priority packet.
    #[inline]
    pub fn pop(&mut self) -> Option<Packet> {
        let mut b = Batch::new();
        self.pop_into(1, &mut b);
        b.pop()
    }

    /// Dequeue up to `max` packets, best first, into `out`.
    #[inline]
    pub fn pop_into(&mut self, max: usize, out: &mut Batch) {
        let k = max.min(self.len);
        let h = self.head;
        out.vec_mut()
            .extend(self.pkts[h..h + k].iter_mut().filter_map(Option::take));
        self.len -= k;
        self.head = if self.len == 0 { 0 } else { h + k };
    }

    /// Change the capacity; returns the packets beyond it, worst first.
    pub fn set_capacity(&mut self, capacity: usize) -> Batch {
        let capacity = capacity.clamp(1, MAX_CAPACITY);
        let (h, n) = (self.head, self.len);
        let keep = n.min(capacity);
        let gone: Batch = self.pkts[h + keep..h + n]
            .iter_mut()
            .rev()
            .filter_map(Option::take)
            .collect();
        self.keys.copy_within(h..h + keep, 0);
        self.pkts[..h + keep].rotate_left(h);
        self.keys.resize(2 * capacity, 0);
        self.pkts.resize_with(2 * capacity, || None);
        self.head = 0;
        self.len = keep;
        self.capacity = capacity;
        gone
    }

    /// Drop every packet.
    pub fn clear(&mut self) {
        self.pkts.iter_mut().for_each(|p| *p = None);
        self.head = 0;
        self.len = 0;
    }
}

/// The reference queue: an ordered map keyed by (priority, arrival).
pub struct TreeQueue {
    map: BTreeMap<(u32, u64), Packet>,
    capacity: usize,
    seq: u64,
}

impl TreeQueue {
    /// An empty queue of `capacity` packets (1 to [`MAX_CAPACITY`]).
    pub fn new(capacity: usize) -> TreeQueue {
        TreeQueue {
            map: BTreeMap::new(),
            capacity: capacity.clamp(1, MAX_CAPACITY),
            seq: 0,
        }
    }

    /// Packets queued.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True if no packet is queued.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Enqueue; returns the packet dropped (the worst), if the queue was full.
    pub fn push(&mut self, prio: u32, p: Packet) -> Option<Packet> {
        self.seq += 1;
        self.map.insert((prio, self.seq), p);
        if self.map.len() > self.capacity {
            self.map.pop_last().map(|(_, p)| p)
        } else {
            None
        }
    }

    /// Dequeue the highest-priority packet.
    pub fn pop(&mut self) -> Option<Packet> {
        self.map.pop_first().map(|(_, p)| p)
    }

    /// Change the capacity; returns the packets beyond it, worst first.
    pub fn set_capacity(&mut self, capacity: usize) -> Batch {
        self.capacity = capacity.clamp(1, MAX_CAPACITY);
        let mut gone = Batch::new();
        while self.map.len() > self.capacity {
            if let Some((_, p)) = self.map.pop_last() {
                gone.push(p);
            }
        }
        gone
    }

    /// Drop every packet.
    pub fn clear(&mut self) {
        self.map.clear();
    }
}

enum Store {
    Fast(ArrayQueue),
    Reference(TreeQueue),
}

impl Store {
    fn len(&self) -> usize {
        match self {
            Store::Fast(q) => q.len(),
            Store::Reference(q) => q.len(),
        }
    }
}

/// Where the priority comes from.
#[derive(Debug, Clone, Copy)]
enum Source {
    Anno(AnnoInfo),
    Field { offset: usize, length: usize },
}

struct SRPrioQueue {
    store: Store,
    source: Source,
    capacity: usize,
    highwater: usize,
    drops: u64,
    short: u64,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let capacity: u32 = a.read_p_or("CAPACITY", 32u32);
    let anno: Option<String> = a.read("ANNO");
    let size: Option<u32> = a.read("SIZE");
    let offset: Option<u32> = a.read("OFFSET");
    let length: u32 = a.read_or("LENGTH", 4u32);
    let imp = read_impl(&mut a);
    a.complete().map_err(|e| e.0)?;
    let capacity = capacity as usize;
    if !(1..=MAX_CAPACITY).contains(&capacity) {
        return Err(vec![format!("CAPACITY must be 1 to {MAX_CAPACITY}")]);
    }
    let source = match (anno, offset) {
        (Some(name), None) => Source::Anno(parse_anno(&name, size).map_err(|e| vec![e])?),
        (None, Some(offset)) => {
            if !(1..=4).contains(&length) {
                return Err(vec!["LENGTH must be 1 to 4".into()]);
            }
            Source::Field {
                offset: offset as usize,
                length: length as usize,
            }
        }
        _ => return Err(vec!["specify exactly one of ANNO and OFFSET".into()]),
    };
    let store = match imp {
        Impl::Fast => Store::Fast(ArrayQueue::new(capacity)),
        Impl::Reference => Store::Reference(TreeQueue::new(capacity)),
    };
    Ok(Box::new(SRPrioQueue {
        store,
        source,
        capacity,
        highwater: 0,
        drops: 0,
        short: 0,
    }))
}

impl Source {
    /// The priority of `p`, `None` if it is too short for the field.
    #[inline]
    fn prio(self, p: &Packet) -> Option<u32> {
        match self {
            Source::Anno(info) => Some(anno_get(p, info)),
            Source::Field { offset, length } => {
                let b = p.data().get(offset..offset + length)?;
                Some(b.iter().fold(0u32, |v, &x| v << 8 | x as u32))
            }
        }
    }
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::gauge("length"),
    HandlerSpec::gauge("highwater_length"),
    HandlerSpec::read_write("capacity"),
    HandlerSpec::counter("drops"),
    HandlerSpec::counter("short"),
    HandlerSpec::write("reset_counts"),
    HandlerSpec::write("reset"),
];

impl Element for SRPrioQueue {
    fn push(&mut self, _port: usize, mut batch: Batch, ctx: &mut Ctx<'_>) {
        let src = self.source;
        let mut out = Batch::new();
        let mut short = 0u64;
        let mut full = 0u64;
        match &mut self.store {
            Store::Fast(q) => {
                let ordered = ctx.noutputs() > 1;
                (short, full) = match src {
                    Source::Field { offset, length: 4 } => q.push_all(
                        &mut batch,
                        |p| {
                            let b = p.data().get(offset..offset + 4)?;
                            Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
                        },
                        &mut out,
                        ordered,
                    ),
                    _ => q.push_all(&mut batch, |p| src.prio(p), &mut out, ordered),
                }
            }
            Store::Reference(q) => {
                for p in batch.drain() {
                    match src.prio(&p) {
                        None => {
                            short += 1;
                            out.push(p);
                        }
                        Some(prio) => {
                            if let Some(d) = q.push(prio, p) {
                                full += 1;
                                out.push(d);
                            }
                        }
                    }
                }
            }
        }
        self.short += short;
        self.drops += full;
        self.highwater = self.highwater.max(self.store.len());
        if ctx.noutputs() > 1 {
            ctx.push(1, out);
        }
    }

    fn pull(&mut self, _port: usize, max: usize, _ctx: &mut Ctx<'_>) -> Option<Batch> {
        if self.store.len() == 0 || max == 0 {
            return None;
        }
        let mut b = Batch::new();
        match &mut self.store {
            Store::Fast(q) => q.pop_into(max, &mut b),
            Store::Reference(q) => {
                while b.len() < max {
                    let Some(p) = q.pop() else { break };
                    b.push(p);
                }
            }
        }
        Some(b)
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "length" => self.store.len().to_string(),
            "highwater_length" => self.highwater.to_string(),
            "capacity" => self.capacity.to_string(),
            "drops" => self.drops.to_string(),
            "short" => self.short.to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "capacity" => crate::parse_value::<u32>(value).and_then(|c| {
                let c = c as usize;
                if !(1..=MAX_CAPACITY).contains(&c) {
                    return Err(format!("capacity must be 1 to {MAX_CAPACITY}"));
                }
                let gone = match &mut self.store {
                    Store::Fast(q) => q.set_capacity(c),
                    Store::Reference(q) => q.set_capacity(c),
                };
                self.drops += gone.len() as u64;
                self.capacity = c;
                Ok(())
            }),
            "reset_counts" => {
                self.drops = 0;
                self.short = 0;
                self.highwater = self.store.len();
                Ok(())
            }
            "reset" => {
                match &mut self.store {
                    Store::Fast(q) => q.clear(),
                    Store::Reference(q) => q.clear(),
                }
                Ok(())
            }
            _ => return None,
        })
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![("queue full", self.drops), ("too short", self.short)]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A packet carrying its tag, then its priority unless it has none
    /// (too short).
    fn packet(tag: u32, prio: Option<u32>) -> Packet {
        let mut d = tag.to_be_bytes().to_vec();
        if let Some(v) = prio {
            d.extend(v.to_be_bytes());
        }
        Packet::from_slice(&d)
    }

    fn prio_of(p: &Packet) -> Option<u32> {
        let b = p.data().get(4..8)?;
        Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn tags<'a>(ps: impl Iterator<Item = &'a Packet>) -> Vec<u32> {
        ps.map(|p| u32::from_be_bytes([p.data()[0], p.data()[1], p.data()[2], p.data()[3]]))
            .collect()
    }

    fn prio() -> impl Strategy<Value = Option<u32>> {
        prop_oneof![
            1 => Just(None),
            4 => (0u32..4).prop_map(Some),
            4 => any::<u32>().prop_map(Some),
            1 => prop_oneof![Just(0), Just(u32::MAX), Just(1 << 31)].prop_map(Some),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// Whole batches (several chunks, queue empty or not, with and
        /// without AVX2) against one-at-a-time insertion into the ordered
        /// map: the same output 1 in the same order, counts, and pulls.
        #[test]
        fn batches_match_one_at_a_time_insertion(
            cap in 1usize..100,
            avx2 in any::<bool>(),
            ops in prop::collection::vec(
                (prop::collection::vec(prio(), 0..150), 0usize..120, any::<bool>()),
                1..10,
            ),
        ) {
            let mut fast = ArrayQueue::new(cap);
            fast.avx2 &= avx2;
            let mut slow = TreeQueue::new(cap);
            let mut tag = 0;
            for (prios, pops, ordered) in ops {
                let mut batch = Batch::new();
                let mut want = Vec::new();
                let mut want_counts = (0, 0);
                for p in prios {
                    tag += 1;
                    batch.push(packet(tag, p));
                    match p {
                        None => {
                            want_counts.0 += 1;
                            want.push(tag);
                        }
                        Some(v) => {
                            if let Some(d) = slow.push(v, packet(tag, p)) {
                                want_counts.1 += 1;
                                want.extend(tags([d].iter()));
                            }
                        }
                    }
                }
                let mut out = Batch::new();
                let counts = fast.push_all(&mut batch, prio_of, &mut out, ordered);
                prop_assert_eq!(counts, want_counts);
                let mut got = tags(out.iter());
                if !ordered {
                    got.sort_unstable();
                    want.sort_unstable();
                }
                prop_assert_eq!(got, want);
                prop_assert_eq!(fast.len(), slow.len());
                let mut pulled = Batch::new();
                fast.pop_into(pops, &mut pulled);
                let want: Vec<u32> = (0..pops)
                    .map_while(|_| slow.pop())
                    .flat_map(|p| tags([p].iter()))
                    .collect();
                prop_assert_eq!(tags(pulled.iter()), want);
            }
        }
    }
}

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
//!   length. pFabric's queues are shallow (a few dozen packets); every
//!   operation costs time linear in the capacity.
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
//! The fast implementation keeps the queue as a small array sorted by a
//! 64-bit key, priority in the high 32 bits and a 32-bit arrival number in
//! the low ones, worst key first, in struct-of-arrays form: a key array
//! padded to a multiple of 4 lanes, and the packet handles beside it. An
//! arrival finds its rank with one branch-free count of the keys greater
//! than its own (a SIMD compare-and-count over the whole array; the batch
//! loop is compiled for the baseline and for AVX2, chosen once per batch
//! by run-time detection), then a short `memmove` opens its
//! slot; dequeueing takes the best packet from the end and dropping the
//! worst takes slot 0, both without a search. Compared with a binary heap
//! (which cannot find the lowest priority to drop without a scan) and with
//! an unsorted array scanned for the minimum at each dequeue and the
//! maximum at each overflow, the sorted array does one vector pass per
//! arrival and none per departure. When the arrival number wraps, the
//! queued packets are renumbered in order, so FIFO order among equal
//! priorities holds forever. Nothing is allocated per packet.
//!
//! `IMPL reference` keeps the packets in the standard library's ordered map
//! (`BTreeMap`) keyed by (priority, 64-bit arrival number): `pop_first`
//! dequeues and `pop_last` drops.

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

/// The fast queue: a key-sorted array (worst first), see the module docs.
pub struct ArrayQueue {
    /// Keys `prio << 32 | arrival`, descending on `[0, len)`, 0 beyond
    /// (padding that never counts as greater).
    keys: Vec<u64>,
    /// Packets in key order.
    pkts: Vec<Packet>,
    capacity: usize,
    seq: u32,
    avx2: bool,
}

fn padded(n: usize) -> usize {
    (n + 3) & !3
}

#[inline(always)]
fn count_greater_scalar(keys: &[u64], k: u64) -> usize {
    keys.iter().map(|&x| (x > k) as usize).sum()
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
            keys: vec![0; padded(capacity)],
            pkts: Vec::with_capacity(capacity),
            capacity,
            seq: 0,
            avx2,
        }
    }

    /// An empty queue whose first arrival number is `first` (tests use a
    /// value near `u32::MAX` to exercise the renumbering at wrap-around).
    pub fn starting_at(capacity: usize, first: u32) -> ArrayQueue {
        ArrayQueue {
            seq: first,
            ..ArrayQueue::new(capacity)
        }
    }

    /// Packets queued.
    pub fn len(&self) -> usize {
        self.pkts.len()
    }

    /// True if no packet is queued.
    pub fn is_empty(&self) -> bool {
        self.pkts.is_empty()
    }

    /// Number of keys greater than `k` (the rank of `k` from the worst end),
    /// inlined into callers compiled with or without AVX2.
    #[inline(always)]
    fn rank(&self, k: u64) -> usize {
        count_greater_scalar(&self.keys[..padded(self.pkts.len())], k)
    }

    fn next_key(&mut self, prio: u32) -> u64 {
        if self.seq == u32::MAX {
            // Renumber in order: index i (worst first) gets len - 1 - i.
            let n = self.pkts.len();
            for (i, k) in self.keys[..n].iter_mut().enumerate() {
                *k = (*k & !0xffff_ffff) | (n - 1 - i) as u64;
            }
            self.seq = n as u32;
        }
        let k = (prio as u64) << 32 | self.seq as u64;
        self.seq += 1;
        k
    }

    /// Enqueue `p` with priority `prio`; returns the packet dropped to make
    /// room (possibly `p` itself), if the queue was full.
    pub fn push(&mut self, prio: u32, p: Packet) -> Option<Packet> {
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: AVX2 was detected on this CPU in `new`.
            return unsafe { self.push_avx2(prio, p) };
        }
        self.push_one(prio, p)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn push_avx2(&mut self, prio: u32, p: Packet) -> Option<Packet> {
        self.push_one(prio, p)
    }

    /// Enqueue every packet of `batch` with the priority `prio` gives; the
    /// packets it has none for (too short) and the dropped ones go to `out`
    /// in order. Returns (too short, dropped). The loop is compiled for
    /// AVX2 too and chosen once per batch.
    #[inline]
    pub fn push_all(
        &mut self,
        batch: &mut Batch,
        prio: impl Fn(&Packet) -> Option<u32>,
        out: &mut Batch,
    ) -> (u64, u64) {
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: AVX2 was detected on this CPU in `new`.
            return unsafe { self.push_all_avx2(batch, prio, out) };
        }
        self.push_all_inner(batch, prio, out)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn push_all_avx2(
        &mut self,
        batch: &mut Batch,
        prio: impl Fn(&Packet) -> Option<u32>,
        out: &mut Batch,
    ) -> (u64, u64) {
        self.push_all_inner(batch, prio, out)
    }

    #[inline(always)]
    fn push_all_inner(
        &mut self,
        batch: &mut Batch,
        prio: impl Fn(&Packet) -> Option<u32>,
        out: &mut Batch,
    ) -> (u64, u64) {
        let (mut short, mut full) = (0, 0);
        for p in batch.drain() {
            let Some(v) = prio(&p) else {
                short += 1;
                out.push(p);
                continue;
            };
            if let Some(d) = self.push_one(v, p) {
                full += 1;
                out.push(d);
            }
        }
        (short, full)
    }

    #[inline(always)]
    fn push_one(&mut self, prio: u32, p: Packet) -> Option<Packet> {
        let n = self.pkts.len();
        let k = self.next_key(prio);
        if n < self.capacity {
            let pos = self.rank(k);
            self.keys.copy_within(pos..n, pos + 1);
            self.keys[pos] = k;
            self.pkts.insert(pos, p);
            return None;
        }
        if k > self.keys[0] {
            return Some(p);
        }
        // Evict slot 0 (the worst); slots 1..pos move down one.
        let pos = self.rank(k);
        self.keys.copy_within(1..pos, 0);
        self.keys[pos - 1] = k;
        self.pkts[..pos].rotate_left(1);
        Some(std::mem::replace(&mut self.pkts[pos - 1], p))
    }

    /// Dequeue the highest-priority packet.
    #[inline]
    pub fn pop(&mut self) -> Option<Packet> {
        let p = self.pkts.pop()?;
        self.keys[self.pkts.len()] = 0;
        Some(p)
    }

    /// Dequeue up to `max` packets, best first, into `out`.
    #[inline]
    pub fn pop_into(&mut self, max: usize, out: &mut Batch) {
        let n = self.pkts.len();
        let k = max.min(n);
        self.keys[n - k..n].fill(0);
        out.vec_mut().extend(self.pkts.drain(n - k..).rev());
    }

    /// Change the capacity; returns the packets beyond it, worst first.
    pub fn set_capacity(&mut self, capacity: usize) -> Batch {
        let capacity = capacity.clamp(1, MAX_CAPACITY);
        let n = self.pkts.len();
        let excess = n.saturating_sub(capacity);
        self.keys.copy_within(excess..n, 0);
        self.keys[n - excess..].fill(0);
        let gone: Batch = self.pkts.drain(..excess).collect();
        self.keys.resize(padded(capacity), 0);
        self.capacity = capacity;
        gone
    }

    /// Drop every packet.
    pub fn clear(&mut self) {
        self.keys.fill(0);
        self.pkts.clear();
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
            Store::Fast(q) => (short, full) = q.push_all(&mut batch, |p| src.prio(p), &mut out),
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

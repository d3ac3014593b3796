//! Limits traffic to a rate with a token bucket per flow class: conforming
//! packets to output 0, the excess to output 1.
//!
//! # Synopsis
//! `RateLimiter(RATE [, KEYWORDS])`
//!
//! # Ports
//! One push input; one or two push outputs. Conforming packets leave on
//! output 0; the excess leaves on output 1 if it is connected and is
//! dropped (and counted) otherwise.
//!
//! # Arguments
//! - `RATE` (mandatory): packets per second (`1000`, `1000pps`, `10kpps`,
//!   `2Mpps`, `1Gpps`: an integer with an optional `k`, `M` or `G` prefix
//!   before `pps`), or a bandwidth in Click's syntax (`10Mbps`, `1.5Gbps`,
//!   `125kBps`: a number with a `bps`, `b/s`, `Bps` or `B/s` unit), for
//!   which a packet costs its length in bits (the frame as the element sees
//!   it, without preamble, gap or FCS).
//! - `BURST` (integer): the bucket size in packets (packet rates) or bytes
//!   (bandwidths). Default: 20 ms of the rate (Click's default
//!   `BURST_DURATION`), at least 1 packet or 1,518 bytes. A packet larger
//!   than the bucket never conforms.
//! - `ANNO` (annotation): the flow class is this annotation's value (a Click
//!   name such as `PAINT`, or a byte offset; host order) modulo `CLASSES`.
//! - `SIZE` (1, 2 or 4): the size of `ANNO` in bytes (default: the named
//!   annotation's size, 1 for an offset).
//! - `HASH` (boolean, default false): the flow class is the flow hash
//!   annotation (from `L4Parser` or `RSS`) modulo `CLASSES`.
//! - `CLASSES` (integer 1-65536): the number of classes, each with its own
//!   bucket of `RATE` and `BURST`. Default 256 with `ANNO` or `HASH`, else 1
//!   (one bucket for everything).
//! - `IMPL` (`fast` or `reference`, default `fast`): the implementation;
//!   both behave identically (see Implementation).
//!
//! Each bucket starts full, stays full (at the current `BURST`) until its
//! class's first packet, and is refilled at `RATE` with the time of the
//! scheduler round (Click's `Timestamp::recent()`; a round whose time is
//! earlier than one already seen counts as that time); a packet conforms if
//! its class's bucket holds its cost (1 token, or its length in bits),
//! which is then removed.
//!
//! Click's `RatedSplitter(RATE)` is `RateLimiter(RATE)` and
//! `BandwidthRatedSplitter(RATE)` is close to `RateLimiter(RATE)` with a
//! bandwidth, except that Click counts bandwidth in bytes and adds 128 KiB
//! of slack to the bucket; both have a single bucket. Click's
//! `BandwidthMeter` instead compares a moving average of the measured rate
//! with its thresholds, so it passes whole bursts above the rate until the
//! average catches up, where the token bucket passes at most `BURST` above
//! it.
//!
//! # Handlers
//! - `rate` (read/write): the rate; a write keeps the kind (packets or
//!   bandwidth) and takes effect at once, bucket levels kept.
//! - `burst` (read/write): the bucket size in packets or bytes; a write
//!   caps the levels to it.
//! - `passed` (read): packets that conformed, all classes.
//! - `dropped` (read): packets that did not (sent to output 1 or dropped).
//! - `classes` (read): one line per class that saw packets:
//!   `CLASS PASSED DROPPED`.
//! - `reset_counts` (write): zero the counters.
//!
//! # Example
//! ```click
//! // 1 Mbps for each of 4 painted classes; the excess is counted.
//! FromDump(in.pcap, STOP true) -> Paint(1)
//!   -> rl :: RateLimiter(1Mbps, BURST 15000, ANNO PAINT, CLASSES 4);
//! rl[0] -> Queue -> ToDevice(eth0);
//! rl[1] -> excess :: Counter -> Discard;
//! ```
//!
//! # Implementation
//! Integer token math only: a bucket is kept in nano-tokens (tokens times
//! 10^9), so a refill is `elapsed ns × rate` and a packet costs `10^9` or
//! `length × 8 × 10^9`, with no float or division per packet. A bucket
//! holds its *deficit* (nano-tokens missing from full), so a refill is one
//! subtraction floored at 0 and needs no cap, and a packet conforms when
//! deficit plus cost is at most the bucket size; the elapsed time is
//! capped at the time that fills an empty bucket, and a bucket is at most
//! 2^63 nano-tokens, so nothing can overflow and nothing saturates.
//! Each class has one 32-byte record (deficit, last refill time, and one
//! word of 32-bit seen and dropped counts, a single addition a packet,
//! folded into 64-bit counters before 2^32 packets could carry one over),
//! so a packet touches one half cache line and no bounds check; the class
//! is the annotation or flow hash modulo `CLASSES`, a mask when `CLASSES`
//! is a power of two and Lemire's multiply-only remainder otherwise, and
//! the loop is compiled once per unit, way of reading the class and kind
//! of remainder, so it asks none of them per packet. A bucket is refilled
//! at each of its packets, which adds nothing after the first of a round
//! (an empty batch starts no clock). The refill's cap and floor compile to
//! two branches that follow whether a packet is its class's first of the
//! round; the conform decision is a branch too, and only the excess
//! packets' indices are written down (the excess is the exception: a
//! decision stored for every packet cost more, 1080 → 1030 ms for the
//! graph below, and with 45 % of the packets in excess 1328 → 1300 ms).
//! `MemoryReplay -> L4Parser -> RateLimiter(100Gbps, HASH true, CLASSES
//! 1024) -> Discard`, 100 M packets, alternated: the mask and the
//! unchecked index took it from 1195 to 1131 ms (session 20); the deficit,
//! the capped elapsed time and the one-word counters from 1158 to 1070 ms,
//! the excess indices to 1030 (session 21; the limiter's share 3.8 → 2.8
//! ns). Prefetching the bucket 8 packets ahead was slower (1046 ms).
//! A single bucket keeps its level in a register: with a packet rate the
//! batch's first `level / cost` packets conform; with a bandwidth the loop
//! runs to the first packet that does not, then checks the rest (a
//! smaller packet may still fit). When the conforming packets lead the
//! batch (always with one packet size), the batch is cut once (`split_front`)
//! instead of being split packet by packet; otherwise it is split once in
//! order. Nothing is allocated per packet. Instructions per packet
//! (`perf stat`, source subtracted, 64-byte frames), before → after this
//! form: one bits/s bucket with excess 65 → 17, 1,024 classes by
//! annotation 72 → 43 (session 12; fewer since).
//!
//! `IMPL reference` refills and tests each packet's bucket one packet at a
//! time with 128-bit arithmetic and builds the two output batches packet
//! by packet.
//!
//! ClickNP's optimisations: struct of arrays — deliberately not: a class's
//! deficit, last refill time and counts form one 32-byte record, because a
//! packet reads and writes all of them, so it touches one half cache line
//! rather than one line per field array; only the indices of excess packets
//! go to an array of their own. SIMD — not used: a packet's verdict depends
//! on its bucket's state after the class's previous packet, a serial
//! dependence, and a single bucket with a packet rate already takes the
//! batch's conforming count at once. prefetch — tried and not used:
//! prefetching the bucket 8 packets ahead was slower (1046 against 1030 ms,
//! above). slow path — the conforming packets are the fast path: the loop
//! writes down only the excess packets, a batch whose conforming packets
//! lead it is cut once (`split_front`) and any other split once in order,
//! so no conforming packet waits on excess handling.

use super::{anno_get, parse_anno, read_impl, Impl};
use linerate_runtime::anno::AnnoInfo;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use std::any::Any;

/// The `RateLimiter` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "RateLimiter",
    port_count: "1/1-2",
    processing: "h/h",
    doc: element_doc!("sched/ratelimiter"),
    make,
};

/// Nano-tokens per token.
const NS: u64 = 1_000_000_000;
/// Largest bucket in tokens: its nano-tokens fit 63 bits, so that a
/// bucket's deficit plus a packet's cost, and a refill of at most a
/// bucket plus one nanosecond's nano-tokens, never overflow 64 bits.
pub const MAX_BURST_TOKENS: u64 = (1 << 63) / NS;

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// One token per packet.
    Packets,
    /// One token per bit of the packet.
    Bits,
}

/// A rate: tokens per second of a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Tokens per second.
    pub per_sec: u64,
    /// What a token is.
    pub unit: Unit,
}

impl Rate {
    /// Parse `1000`, `10kpps` (packets) or a Click bandwidth (`10Mbps`).
    pub fn parse(s: &str) -> Result<Rate, String> {
        let t = s.trim();
        let (num, mult) = match t.strip_suffix("pps") {
            Some(n) => match n.as_bytes().last() {
                Some(b'k' | b'K') => (&n[..n.len() - 1], 1_000),
                Some(b'M') => (&n[..n.len() - 1], 1_000_000),
                Some(b'G') => (&n[..n.len() - 1], 1_000_000_000),
                _ => (n, 1),
            },
            None => (t, 1),
        };
        if let Ok(v) = <u64 as linerate_args::ArgValue>::parse_arg(num) {
            return v
                .checked_mul(mult)
                .map(|per_sec| Rate {
                    per_sec,
                    unit: Unit::Packets,
                })
                .ok_or_else(|| "rate out of range".to_string());
        }
        if t.ends_with("pps") {
            return Err(format!("expected packet rate, not '{t}'"));
        }
        let bw = <linerate_args::Bandwidth as linerate_args::ArgValue>::parse_arg(t)
            .map_err(|_| format!("expected packet rate or bandwidth, not '{t}'"))?;
        let bits = bw.bits_per_second().round();
        if !(0.0..1.8e19).contains(&bits) {
            return Err("rate out of range".into());
        }
        Ok(Rate {
            per_sec: bits as u64,
            unit: Unit::Bits,
        })
    }

    /// The rate as text that parses back to it (`1000`, `10Mbps`).
    pub fn unparse(&self) -> String {
        match self.unit {
            Unit::Packets => self.per_sec.to_string(),
            Unit::Bits => {
                let r = self.per_sec;
                for (div, p) in [(1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")] {
                    if r >= div && r.is_multiple_of(div) {
                        return format!("{}{p}bps", r / div);
                    }
                }
                format!("{r}bps")
            }
        }
    }
}

/// How a packet's class is found.
#[derive(Debug, Clone, Copy)]
pub enum Classify {
    /// One bucket.
    Single,
    /// Annotation value modulo the class count.
    Anno(AnnoInfo),
    /// Flow hash annotation modulo the class count.
    Hash,
}

impl Classify {
    /// The class of `p` among `n` (the reference's form).
    fn class(self, p: &Packet, n: u32) -> usize {
        match self {
            Classify::Single => 0,
            Classify::Anno(info) => (anno_get(p, info) % n) as usize,
            Classify::Hash => (p.anno().flow_hash % n) as usize,
        }
    }
}

/// Per-class counters, shared by both implementations.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    /// Conforming packets per class.
    pub passed: Vec<u64>,
    /// Excess packets per class.
    pub dropped: Vec<u64>,
}

/// The fast implementation: one 32-byte record per bucket, in nano-tokens.
pub struct FastBuckets {
    rate: Rate,
    cap: u64,
    /// The longest time whose refill matters: `ceil(cap / rate)` ns (0 for
    /// a zero rate), which refills any bucket from empty to full.
    fill_ns: u64,
    /// The latest time seen: a round's time never runs back before it.
    clock: u64,
    buckets: Vec<Bucket>,
    /// Each class's (seen, dropped) counts folded in from the buckets'
    /// 32-bit counters.
    folded: Vec<[u64; 2]>,
    /// Packets counted in the buckets since the last fold: no class's
    /// 32-bit counter can pass this, which stays below 2^32.
    unfolded: u64,
    /// `x % classes` as two multiplications.
    modulus: FastMod,
    /// The indices of a batch's excess packets, in order.
    over: Vec<u32>,
}

/// A bucket's `counts` word: packets seen in its low 32 bits, dropped in
/// its high 32 bits.
const SEEN: u64 = 1;
const DROPPED: u64 = 1 << 32;

/// A `counts` word's (seen, dropped) counts.
fn unpack(counts: u64) -> [u64; 2] {
    [counts & 0xffff_ffff, counts >> 32]
}

/// A class's bucket and counters: what a packet of the class touches, in
/// one aligned half cache line.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(32))]
struct Bucket {
    /// Nano-tokens missing from a full bucket (0: full), so that a refill
    /// is one saturating subtraction and needs no cap.
    deficit: u64,
    /// Time of the last refill; 0 before the class's first packet (times
    /// are at least 1).
    last: u64,
    /// Packets seen and dropped since the last fold, one word (`SEEN`,
    /// `DROPPED`): one addition a packet.
    counts: u64,
}

impl Bucket {
    /// The deficit refilled at `now` (at least `last`); the caller stores
    /// it and `now`. The elapsed time is capped at
    /// `fill_ns`, which fills any bucket, so the product cannot overflow
    /// (see [`MAX_BURST_TOKENS`]); the first sight of a class (`last` 0)
    /// finds it full and leaves it so.
    #[inline]
    fn refilled(&self, rate: u64, fill_ns: u64, now: u64) -> u64 {
        // LLVM compiles the cap and the floor to branches, whatever their
        // form (masks and `select_unpredictable` included); they follow
        // whether a class's packet is its first of the round.
        let add = (now - self.last).min(fill_ns) * rate;
        self.deficit.saturating_sub(add)
    }
}

/// `x % d` for a fixed divisor `d` of 32 bits without a division (Lemire,
/// Kaser and Kurz, "Faster remainder by direct computation", 2019: with a
/// 64-bit multiplier the remainder is exact for every 32-bit `x` and `d`).
#[derive(Debug, Clone, Copy)]
struct FastMod {
    d: u32,
    m: u64,
}

impl FastMod {
    fn new(d: u32) -> FastMod {
        // For d = 1 the multiplier wraps to 0 and every remainder is 0.
        FastMod {
            d,
            m: (u64::MAX / d as u64).wrapping_add(1),
        }
    }

    /// Whether `d` is a power of two (`x % d` is then `x & (d - 1)`).
    fn pow2(self) -> bool {
        self.d.is_power_of_two()
    }

    #[inline]
    fn rem(self, x: u32) -> u32 {
        let low = self.m.wrapping_mul(x as u64);
        ((low as u128 * self.d as u128) >> 64) as u32
    }
}

/// Moves the packets after the first `ok` of `batch` into the returned
/// batch (the excess when the conforming packets are a prefix).
fn split_prefix(batch: &mut Batch, ok: usize) -> Batch {
    if ok == batch.len() {
        return Batch::new();
    }
    let front = batch.split_front(ok);
    std::mem::replace(batch, front)
}

/// Nano-seconds that refill a bucket of `cap` nano-tokens from empty at
/// `rate` nano-tokens per ns (0 for a zero rate, which never refills).
fn fill_ns(rate: u64, cap: u64) -> u64 {
    if rate == 0 {
        0
    } else {
        cap.div_ceil(rate)
    }
}

impl FastBuckets {
    /// `classes` full buckets of `burst` tokens (at most [`MAX_BURST_TOKENS`]).
    pub fn new(rate: Rate, burst: u64, classes: usize) -> FastBuckets {
        let cap = burst.min(MAX_BURST_TOKENS) * NS;
        let full = Bucket {
            deficit: 0,
            last: 0,
            counts: 0,
        };
        FastBuckets {
            rate,
            cap,
            fill_ns: fill_ns(rate.per_sec, cap),
            clock: 1,
            buckets: vec![full; classes],
            folded: vec![[0; 2]; classes],
            unfolded: 0,
            modulus: FastMod::new(classes as u32),
            over: Vec::with_capacity(linerate_runtime::MAX_BATCH),
        }
    }

    /// The counters.
    pub fn counts(&self) -> Counts {
        let all = self.buckets.iter().zip(&self.folded).map(|(b, f)| {
            let [seen, dropped] = unpack(b.counts);
            let (seen, dropped) = (f[0] + seen, f[1] + dropped);
            (seen - dropped, dropped)
        });
        Counts {
            passed: all.clone().map(|c| c.0).collect(),
            dropped: all.map(|c| c.1).collect(),
        }
    }

    /// Zero the counters.
    pub fn reset_counts(&mut self) {
        for (b, f) in self.buckets.iter_mut().zip(&mut self.folded) {
            b.counts = 0;
            *f = [0; 2];
        }
        self.unfolded = 0;
    }

    /// Counts `n` more packets, first folding the buckets' 32-bit counters
    /// into the wide ones if `n` more could carry one of them over.
    fn count(&mut self, n: usize) {
        if self.unfolded + n as u64 > u32::MAX as u64 {
            for (b, f) in self.buckets.iter_mut().zip(&mut self.folded) {
                let [seen, dropped] = unpack(b.counts);
                f[0] += seen;
                f[1] += dropped;
                b.counts = 0;
            }
            self.unfolded = 0;
        }
        self.unfolded += n as u64;
    }

    /// Change the rate.
    pub fn set_rate(&mut self, rate: Rate) {
        self.rate = rate;
        self.fill_ns = fill_ns(rate.per_sec, self.cap);
    }

    /// Change the bucket size; levels are capped to it, and the buckets of
    /// classes not seen yet stay full.
    pub fn set_burst(&mut self, burst: u64) {
        let cap = burst.min(MAX_BURST_TOKENS) * NS;
        for b in &mut self.buckets {
            let level = (self.cap - b.deficit).min(cap);
            b.deficit = if b.last == 0 { 0 } else { cap - level };
        }
        self.cap = cap;
        self.fill_ns = fill_ns(self.rate.per_sec, cap);
    }

    /// Split `batch` at time `now`: it keeps the conforming packets, the
    /// excess is returned (empty if every packet conforms).
    pub fn split(&mut self, now: u64, batch: &mut Batch, how: Classify) -> Batch {
        // A bucket's clock starts with its first packet, not an empty batch.
        if batch.is_empty() {
            return Batch::new();
        }
        let now = now.max(self.clock);
        self.clock = now;
        self.count(batch.len());
        match (how, self.rate.unit) {
            (Classify::Single, _) => self.split_single(now, batch),
            // A power-of-two class count takes the class with a mask.
            (_, Unit::Bits) if self.modulus.pow2() => self.split_by::<true, true>(now, batch, how),
            (_, Unit::Bits) => self.split_by::<true, false>(now, batch, how),
            (_, Unit::Packets) if self.modulus.pow2() => {
                self.split_by::<false, true>(now, batch, how)
            }
            (_, Unit::Packets) => self.split_by::<false, false>(now, batch, how),
        }
    }

    /// [`split_classes`](Self::split_classes) for the way `how` reads the
    /// class value (`BITS` and `POW2` chosen by [`split`](Self::split)).
    #[inline]
    fn split_by<const BITS: bool, const POW2: bool>(
        &mut self,
        now: u64,
        batch: &mut Batch,
        how: Classify,
    ) -> Batch {
        match how {
            Classify::Anno(AnnoInfo { offset, size: 1 }) => {
                self.split_classes::<BITS, POW2>(now, batch, |p| p.anno().u8(offset) as u32)
            }
            Classify::Anno(AnnoInfo { offset, size: 2 }) => {
                self.split_classes::<BITS, POW2>(now, batch, |p| p.anno().u16(offset) as u32)
            }
            Classify::Anno(AnnoInfo { offset, .. }) => {
                self.split_classes::<BITS, POW2>(now, batch, |p| p.anno().u32(offset))
            }
            _ => self.split_classes::<BITS, POW2>(now, batch, |p| p.anno().flow_hash),
        }
    }

    /// [`split`](Self::split) with a bucket per class, monomorphised for
    /// the unit (`BITS`), the way of reading the class value and the kind of
    /// remainder (`POW2`: a mask), so that the loop asks none of them per
    /// packet.
    #[inline]
    fn split_classes<const BITS: bool, const POW2: bool>(
        &mut self,
        now: u64,
        batch: &mut Batch,
        value: impl Fn(&Packet) -> u32,
    ) -> Batch {
        let (rate, cap, fill, modulus) = (self.rate.per_sec, self.cap, self.fill_ns, self.modulus);
        let buckets = &mut self.buckets[..];
        self.over.clear();
        for (i, p) in batch.iter().enumerate() {
            // Both reads of the packet before the bucket's stores, which
            // the compiler cannot tell apart from its metadata.
            let cost = if BITS { p.len() as u64 * (8 * NS) } else { NS };
            let c = if POW2 {
                value(p) & (modulus.d - 1)
            } else {
                modulus.rem(value(p))
            };
            // SAFETY: a remainder modulo the class count (`d`, the length
            // of `buckets`) is below it.
            let b = unsafe { buckets.get_unchecked_mut(c as usize) };
            let deficit = b.refilled(rate, fill, now);
            // The level (cap - deficit) covers the cost.
            let after = deficit + cost;
            let ok = after <= cap;
            b.last = now;
            // A branch: the excess is the exception, so only it is written
            // down (a decision stored for every packet cost more).
            if ok {
                b.deficit = after;
                b.counts += SEEN;
            } else {
                b.deficit = deficit;
                b.counts += SEEN + DROPPED;
                self.over.push(i as u32);
            }
        }
        let ok_n = batch.len() - self.over.len();
        // Cut the batch when the conforming packets lead it.
        if self.over.first().is_none_or(|&i| i as usize == ok_n) {
            return split_prefix(batch, ok_n);
        }
        let (mut i, mut next) = (0u32, self.over.iter().copied().peekable());
        batch.split_off_if(|_| {
            let excess = next.next_if_eq(&i).is_some();
            i += 1;
            excess
        })
    }

    /// One bucket: the conforming packets are those whose cost the level
    /// still covers, in order, decided with the level in a register. When
    /// they lead the batch (always for packet rates and for packets of one
    /// size) the batch is cut there; otherwise the same decisions are made
    /// again while it is split.
    fn split_single(&mut self, now: u64, batch: &mut Batch) -> Batch {
        let b = &mut self.buckets[0];
        let start = self.cap - b.refilled(self.rate.per_sec, self.fill_ns, now);
        b.last = now;
        let n = batch.len();
        let (ok_n, prefix, end) = match self.rate.unit {
            Unit::Packets => {
                let k = ((start / NS) as usize).min(n);
                (k, k, start - k as u64 * NS)
            }
            Unit::Bits => {
                let pk = batch.as_slice();
                let (mut level, mut i) = (start, 0);
                // The conforming packets that lead the batch...
                while let Some(p) = pk.get(i) {
                    let cost = p.len() as u64 * (8 * NS);
                    if level < cost {
                        break;
                    }
                    level -= cost;
                    i += 1;
                }
                // ...and smaller ones after the first that did not.
                let mut ok_n = i;
                for p in &pk[i..] {
                    let cost = p.len() as u64 * (8 * NS);
                    let ok = level >= cost;
                    level -= if ok { cost } else { 0 };
                    ok_n += ok as usize;
                }
                (ok_n, i, level)
            }
        };
        b.deficit = self.cap - end;
        b.counts += n as u64 * SEEN + (n - ok_n) as u64 * DROPPED;
        if ok_n == prefix {
            return split_prefix(batch, ok_n);
        }
        let mut level = start;
        batch.split_off_if(|p| {
            let cost = p.len() as u64 * (8 * NS);
            let ok = level >= cost;
            level -= if ok { cost } else { 0 };
            !ok
        })
    }
}

/// The reference implementation: one packet at a time, 128-bit math.
pub struct RefBuckets {
    rate: Rate,
    burst: u64,
    level: Vec<u128>,
    last: Vec<Option<u64>>,
    /// The latest time seen (times start at 1).
    clock: u64,
    /// Counters.
    pub counts: Counts,
}

impl RefBuckets {
    /// `classes` full buckets of `burst` tokens (at most [`MAX_BURST_TOKENS`]).
    pub fn new(rate: Rate, burst: u64, classes: usize) -> RefBuckets {
        let burst = burst.min(MAX_BURST_TOKENS);
        RefBuckets {
            rate,
            burst,
            level: vec![burst as u128 * NS as u128; classes],
            last: vec![None; classes],
            clock: 1,
            counts: Counts {
                passed: vec![0; classes],
                dropped: vec![0; classes],
            },
        }
    }

    /// Change the rate.
    pub fn set_rate(&mut self, rate: Rate) {
        self.rate = rate;
    }

    /// Change the bucket size; levels are capped to it.
    pub fn set_burst(&mut self, burst: u64) {
        self.burst = burst.min(MAX_BURST_TOKENS);
        let cap = self.burst as u128 * NS as u128;
        for l in &mut self.level {
            *l = (*l).min(cap);
        }
    }

    /// Does one packet of `len` bytes in class `c` conform at `now`?
    pub fn conform(&mut self, now: u64, c: usize, len: usize) -> bool {
        let cap = self.burst as u128 * NS as u128;
        // Time never runs back: an earlier time counts as the latest seen.
        let now = now.max(self.clock);
        self.clock = now;
        match self.last[c] {
            // Full (at the current burst) until the class's first packet.
            None => {
                self.level[c] = cap;
                self.last[c] = Some(now);
            }
            Some(t) if now > t => {
                let add = (now - t) as u128 * self.rate.per_sec as u128;
                self.level[c] = (self.level[c] + add).min(cap);
                self.last[c] = Some(now);
            }
            Some(_) => {}
        }
        let cost = match self.rate.unit {
            Unit::Packets => NS as u128,
            Unit::Bits => len as u128 * 8 * NS as u128,
        };
        if self.level[c] >= cost {
            self.level[c] -= cost;
            self.counts.passed[c] += 1;
            true
        } else {
            self.counts.dropped[c] += 1;
            false
        }
    }

    /// Split `batch` at `now` like [`FastBuckets::split`].
    pub fn split(&mut self, now: u64, batch: &mut Batch, how: Classify) -> Batch {
        let n = self.level.len() as u32;
        let (mut ok, mut over) = (Batch::new(), Batch::new());
        for p in batch.drain() {
            let c = how.class(&p, n);
            if self.conform(now, c, p.len()) {
                ok.push(p);
            } else {
                over.push(p);
            }
        }
        *batch = ok;
        over
    }
}

enum Buckets {
    Fast(FastBuckets),
    Reference(RefBuckets),
}

impl Buckets {
    fn counts(&self) -> Counts {
        match self {
            Buckets::Fast(b) => b.counts(),
            Buckets::Reference(b) => b.counts.clone(),
        }
    }
}

struct RateLimiter {
    rate: Rate,
    burst: u64,
    how: Classify,
    buckets: Buckets,
    /// Excess packets freed because output 1 is not connected.
    freed: u64,
}

/// Default bucket: 20 ms of the rate, at least one packet or 1518 bytes.
fn default_burst(rate: Rate) -> u64 {
    let t = rate.per_sec / 50;
    match rate.unit {
        Unit::Packets => t.max(1),
        Unit::Bits => (t / 8).max(1518),
    }
}

/// Bucket tokens for a `BURST` value (packets, or bytes for bandwidths).
fn burst_tokens(rate: Rate, burst: u64) -> Result<u64, String> {
    let t = match rate.unit {
        Unit::Packets => Some(burst),
        Unit::Bits => burst.checked_mul(8),
    };
    match t {
        Some(t) if (1..=MAX_BURST_TOKENS).contains(&t) => Ok(t),
        _ => Err(format!(
            "BURST must be 1 to {}",
            match rate.unit {
                Unit::Packets => MAX_BURST_TOKENS,
                Unit::Bits => MAX_BURST_TOKENS / 8,
            }
        )),
    }
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let rate: Option<linerate_args::Raw> = a.read_mp("RATE");
    let burst: Option<u64> = a.read("BURST");
    let anno: Option<String> = a.read("ANNO");
    let size: Option<u32> = a.read("SIZE");
    let hash: bool = a.read_or("HASH", false);
    let classes: Option<u32> = a.read("CLASSES");
    let imp = read_impl(&mut a);
    a.complete().map_err(|e| e.0)?;
    let rate = Rate::parse(&rate.map(|r| r.0).unwrap_or_default()).map_err(|e| vec![e])?;
    let how = match (anno, hash) {
        (Some(_), true) => return Err(vec!["specify at most one of ANNO and HASH".into()]),
        (Some(name), false) => Classify::Anno(parse_anno(&name, size).map_err(|e| vec![e])?),
        (None, true) => Classify::Hash,
        (None, false) => Classify::Single,
    };
    let classes = match (classes, how) {
        (Some(n), _) if !(1..=65536).contains(&n) => {
            return Err(vec!["CLASSES must be 1 to 65536".into()])
        }
        (Some(n), Classify::Single) if n != 1 => {
            return Err(vec!["CLASSES needs ANNO or HASH".into()])
        }
        (Some(n), _) => n as usize,
        (None, Classify::Single) => 1,
        (None, _) => 256,
    };
    let burst = match burst {
        Some(b) => b,
        None => default_burst(rate),
    };
    let tokens = burst_tokens(rate, burst).map_err(|e| vec![e])?;
    let buckets = match imp {
        Impl::Fast => Buckets::Fast(FastBuckets::new(rate, tokens, classes)),
        Impl::Reference => Buckets::Reference(RefBuckets::new(rate, tokens, classes)),
    };
    Ok(Box::new(RateLimiter {
        rate,
        burst,
        how,
        buckets,
        freed: 0,
    }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::read_write("rate"),
    HandlerSpec::read_write("burst"),
    HandlerSpec::counter("passed"),
    HandlerSpec::counter("dropped"),
    HandlerSpec::read("classes"),
    HandlerSpec::write("reset_counts"),
];

impl Element for RateLimiter {
    fn push(&mut self, _port: usize, mut batch: Batch, ctx: &mut Ctx<'_>) {
        let now = ctx.recent_ns();
        let over = match &mut self.buckets {
            Buckets::Fast(b) => b.split(now, &mut batch, self.how),
            Buckets::Reference(b) => b.split(now, &mut batch, self.how),
        };
        ctx.push(0, batch);
        if !over.is_empty() {
            if ctx.noutputs() > 1 {
                ctx.push(1, over);
            } else {
                self.freed += over.len() as u64;
            }
        }
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        let c = self.buckets.counts();
        Some(match name {
            "rate" => self.rate.unparse(),
            "burst" => self.burst.to_string(),
            "passed" => c.passed.iter().sum::<u64>().to_string(),
            "dropped" => c.dropped.iter().sum::<u64>().to_string(),
            "classes" => {
                let mut s = String::new();
                for (k, (p, d)) in c.passed.iter().zip(&c.dropped).enumerate() {
                    if p + d > 0 {
                        s.push_str(&format!("{k} {p} {d}\n"));
                    }
                }
                s.pop();
                s
            }
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "rate" => Rate::parse(value).and_then(|r| {
                if r.unit != self.rate.unit {
                    return Err("a rate write keeps the kind (packets or bandwidth)".into());
                }
                self.rate = r;
                match &mut self.buckets {
                    Buckets::Fast(b) => b.set_rate(r),
                    Buckets::Reference(b) => b.set_rate(r),
                }
                Ok(())
            }),
            "burst" => crate::parse_value::<u64>(value).and_then(|v| {
                let t = burst_tokens(self.rate, v)?;
                self.burst = v;
                match &mut self.buckets {
                    Buckets::Fast(b) => b.set_burst(t),
                    Buckets::Reference(b) => b.set_burst(t),
                }
                Ok(())
            }),
            "reset_counts" => {
                match &mut self.buckets {
                    Buckets::Fast(b) => b.reset_counts(),
                    Buckets::Reference(b) => {
                        b.counts.passed.fill(0);
                        b.counts.dropped.fill(0);
                    }
                }
                self.freed = 0;
                Ok(())
            }
            _ => return None,
        })
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![("over rate", self.freed)]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::{Classify, FastBuckets, FastMod, Rate, Unit, DROPPED};
    use linerate_runtime::{Batch, Packet};

    /// The buckets' 32-bit counters are folded into the wide ones before
    /// they could carry over: counts stay exact past 2^32 packets.
    #[test]
    fn counters_fold_before_they_carry() {
        let rate = Rate {
            per_sec: 10,
            unit: Unit::Packets,
        };
        let mut fb = FastBuckets::new(rate, 5, 2);
        // As if class 1 had seen u32::MAX - 3 packets, 7 of them dropped.
        fb.buckets[1].counts = (u32::MAX - 3) as u64 + 7 * DROPPED;
        fb.buckets[1].last = 1;
        fb.unfolded = (u32::MAX - 3) as u64;
        let batch = |n: usize| -> Batch {
            (0..n)
                .map(|_| {
                    let mut p = Packet::from_slice(&[0u8; 60]);
                    p.anno_mut().flow_hash = 1;
                    p
                })
                .collect()
        };
        // 10 packets at one time: the bucket's 5 tokens pass 5 of them.
        let over = fb.split(2, &mut batch(10), Classify::Hash);
        assert_eq!(over.len(), 5);
        let c = fb.counts();
        assert_eq!(c.dropped, [0, 12]);
        assert_eq!(c.passed, [0, (u32::MAX - 3) as u64 - 7 + 5]);
        assert_eq!(fb.unfolded, 10);
    }

    #[test]
    fn fastmod_is_the_remainder() {
        let xs = [0u32, 1, 2, 3, 255, 256, 1023, 1024, 65535, 65536, 1 << 31];
        let ds = [1u32, 2, 3, 5, 7, 255, 256, 1000, 1024, 65535, 65536];
        for &d in &ds {
            let m = FastMod::new(d);
            for x in xs.iter().copied().chain([u32::MAX, u32::MAX - 1]) {
                assert_eq!(m.rem(x), x % d, "{x} % {d}");
            }
            let mut x = 0x9e37_79b9u32;
            for _ in 0..10_000 {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                assert_eq!(m.rem(x), x % d, "{x} % {d}");
            }
        }
    }
}

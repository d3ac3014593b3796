//! A set-associative flow cache in front of a large flow table: packets of
//! cached flows get their flow id at once; the others go to a slow path
//! that never holds up the fast one.
//!
//! # Synopsis
//! `FlowCache([KEYWORDS])`
//!
//! # Ports
//! Push inputs: 0 for traffic, optional 1 for packets coming back from the
//! slow path. Push outputs: 0 for packets with a flow id (annotated), 1 for
//! cache misses (the slow path), optional 2 for packets without a 5-tuple
//! (no network header: run `L4Parser`, `CheckIPHeader` or `MarkIPHeader`
//! first) and for packets whose new flow finds the flow table full. Those
//! are counted in `drops` and dropped when output 2 is not connected.
//!
//! # Arguments
//! - `LINES` (unsigned, default 16384): cache lines; a multiple of `WAYS`.
//! - `WAYS` (1 to 16, default 4): lines per set, replaced least recently
//!   used first.
//! - `FLOWS` (unsigned, default 1000000): the flow table's capacity.
//! - `TIMEOUT` (time, default 60s; 0 never): a flow idle for longer
//!   expires. Time is the packets' timestamp annotation (the router's clock
//!   for packets without one), in units of 2^20 ns (about 1 ms).
//! - `ANNO` (annotation, default `AGGREGATE`): where the flow id goes (4
//!   bytes, host order).
//! - `FILE` (filename): load flows into the flow table at configuration
//!   time, one 5-tuple `SADDR SPORT DADDR DPORT PROTO` a line (as
//!   `CuckooHash`'s `KEY FLOW`); ids are given in file order.
//! - `IMPL` (`fast` or `reference`, default `fast`): `reference` is the
//!   straightforward implementation (a list per set kept in recency order,
//!   a `std` `HashMap` flow table, one packet at a time) kept for
//!   differential tests and the benchmark's speed-up.
//!
//! # Design
//! The key is the 5-tuple (`FlowKey::from_packet`). A flow's id is its
//! index in the flow table, the smallest free one when it is created.
//!
//! - **Fast path (input 0).** A packet whose flow is in the cache gets the
//!   flow id in `ANNO` and leaves on output 0; every other packet leaves on
//!   output 1 at once, in the same batch: the fast path never looks at the
//!   flow table.
//! - **Slow path.** A packet that comes back on input 1 (typically
//!   `fc[1] -> ... -> [1]fc`, possibly through a Queue and another thread)
//!   is looked up in the flow table, which creates the flow if it is new;
//!   the flow is installed in the cache (evicting the set's least recently
//!   used line) and the packet leaves on output 0 with its id. The `insert`
//!   handler installs a flow the same way without a packet.
//! - **Expiry.** A flow idle for longer than `TIMEOUT` is removed when its
//!   next packet arrives (the packet then starts a new flow), and by a
//!   sweep of the whole table every `TIMEOUT` of packet time. Flows loaded
//!   from a file or inserted by handler do not expire before their first
//!   packet. A TCP packet with FIN or RST is delivered with its flow's id,
//!   then the flow is removed.
//!
//! Click has no such element; `AggregateIPFlows` assigns flow ids with one
//! table and no cache.
//!
//! # Handlers
//! - `insert` (write): `SADDR SPORT DADDR DPORT PROTO`: create the flow if
//!   it is new and install it in the cache.
//! - `delete` (write): remove a flow; fails with `no such flow`.
//! - `lookup` (read/write): write a 5-tuple, then read its flow id (`-1`
//!   if none).
//! - `load` (write): `FILE`: add the flows of a file to the table.
//! - `count` (read): flows in the table. `cached` (read): cache lines in
//!   use. `capacity` (read): `FLOWS`.
//! - `hits`, `misses` (read): fast-path packets that found, or did not
//!   find, their flow in the cache (an expired flow is a miss).
//! - `expired`, `closed` (read): flows removed on timeout, on FIN or RST.
//! - `drops` (read): packets without a 5-tuple or refused by a full table.
//!
//! # Example
//! ```click
//! FromDump(trace.pcap, STOP true) -> MarkIPHeader(14)
//!     -> fc :: FlowCache(LINES 16384, WAYS 4, FLOWS 1000000, TIMEOUT 30s);
//! fc[0] -> ToIPSummaryDump(flows.txt, FIELDS aggregate ip_src sport);
//! fc[1] -> Queue -> Unqueue -> [1]fc;
//! ```
//!
//! # Implementation
//! The cache is struct-of-arrays within a set: four lines take two
//! adjacent 64-byte cache lines, the first holding their 32-bit hash
//! signatures, flow ids, last-seen times and LRU stamps field by field
//! (the four signatures compared at once: one SSE2 compare and a mask),
//! the second their keys in 16 bytes each. An IPv4 key fits: the two
//! addresses and the word of ports, protocol, version and VLAN. Any other
//! key (IPv6) is kept there as its 64-bit hash and that word with a mark
//! bit, its 40-byte key in a side array that only such flows touch; a
//! match on the short form is confirmed there. So an IPv4 lookup reads
//! one 128-byte set and nothing else, and a 16K-line cache is 512 KiB
//! (session 22; the keys were a separate 640 KiB array before, read one
//! dependent miss after the set).
//!
//! A batch is processed 64 packets at a time in two passes: read the
//! 5-tuples (straight into key words, as `CuckooHash`'s `KEY FLOW`; the
//! reference goes through `FlowKey`), hash them, make the short keys and
//! prefetch both lines of each set; then compare signatures and keys,
//! update the line (last seen, LRU stamp) and annotate. The group's
//! arrays (keys, short keys, hashes, sets) are kept from batch to batch,
//! not zeroed for each. The second pass calls nothing: it stops at a hit
//! whose flow expired or whose packet closes it (FIN, RST), which an
//! out-of-line step handles before the pass goes on from the next packet,
//! so the order of removals (a later packet of the group no longer finds
//! a removed line) is the reference's, and the pass's values stay in
//! registers. Every packet's output starts as "hit" (one fill a batch)
//! and the pass marks misses; hits and misses are counted in registers.
//! The last-seen times are written back to the flow table only when a
//! line is evicted or the table is swept, so a hit touches nothing but
//! its set.
//!
//! A batch with misses and nothing else (no packet without a 5-tuple)
//! keeps its hits for output 0: up to 8 misses are moved out of it, from
//! the back, into one batch for output 1 (both in order); more are split
//! with `Batch::split_into`. Nothing is allocated per packet.
//!
//! The flow table is `CuckooHash`'s bucketized cuckoo table. The slow
//! path looks a whole group of up to 16 returning packets up at once
//! (its staged bulk lookup, arrays 16 long) and uses those answers until
//! a packet of the group creates or removes a flow (then it looks up
//! again); before the lookup it prefetches the last-seen time of the flow
//! each install will evict, after it those of the flows found. The
//! table's arrays start at 2 MiB boundaries and lie on 2 MiB pages.
//!
//! ClickNP's optimisations: struct of arrays within a set: the first line
//! holds the ways' signatures, flow ids, last-seen times and LRU stamps
//! field by field, the second their keys, and the group's keys, hashes and
//! sets are arrays kept from batch to batch. SIMD for the signature
//! compare: a four-way set's signatures against the key's with one SSE2
//! compare and a `movemask` (other set sizes compare in a loop). The first
//! pass prefetches both lines of every packet's set before the second pass
//! compares them; the slow path prefetches the last-seen time of each flow
//! an install will evict, and after its bulk lookup those of the flows
//! found. The slow path is ClickNP's: a miss leaves on output 1 at once, in
//! the same batch, and comes back on input 1 (possibly through a queue and
//! another thread) to be looked up in the cuckoo flow table in groups of 16
//! and installed, so the fast path never waits for the table.
//!
//! Measured (`linerate bench elements FlowCache`, 16K lines, 4-way,
//! 1,000,000 flows; docs/performance.md, sessions 12 and 22), two rows.
//! With the misses (5 %) returning through the slow path on the same
//! core: 34.3-35.4 ns a packet on the 2-vCPU AMD EPYC guest of session 22
//! (`MarkIPHeader` included; 38.2-38.9 with the keys apart). The fast
//! path alone, misses leaving on output 1 as the issue's design has them
//! ("so that the fast path never waits") and the cache filled when the
//! router starts (94.5 % hits): 25.3-26.9 ns (29.8-30.2 with the keys
//! apart). The issue's 80 Mpps (12.5 ns) is judged on the second row and
//! is not met: the fast path runs about 270 instructions a packet
//! (`valgrind`, `MarkIPHeader` excluded) and still stalls on its sets'
//! prefetches, which the source's stream of frames keeps evicting from
//! the 1 MiB L2. With the slow path each miss costs about 180 ns more
//! (the flow table and the last-seen array are random accesses in tens
//! of megabytes).

use super::cuckoocore::{
    flow_key, hash, key_eq, packet_flow_key, parse_flow, read_table, reduce, table_lines, Cuckoo,
    IdAlloc, Key,
};
use crate::hint::prefetch;
use linerate_args::{Args, Seconds};
use linerate_runtime::anno::anno_by_name;
use linerate_runtime::flow::FlowKey;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use std::any::Any;
use std::collections::HashMap;

/// The `FlowCache` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "FlowCache",
    port_count: "1-2/2-3",
    processing: "h/h",
    doc: element_doc!("tables/flowcache"),
    make,
};

const HIT: u8 = 0;
const MISS: u8 = 1;
const BAD: u8 = 2;
/// Packets processed together on the fast path.
const GROUP: usize = 64;
/// Packets processed together on the slow path: its batches are the few
/// misses of a fast-path batch, and its group arrays (and the flow
/// table's staged lookup) are zeroed per group, so they are kept short
/// (64 cost FlowCache about 10 instructions a packet more, `perf stat`).
const SLOW_GROUP: usize = 16;
/// Misses up to which a fast-path batch is split by moving them out
/// ([`FlowCache::split_misses`]) rather than by a full split.
const FEW_MISSES: u64 = 8;

/// Packet time in 2^20 ns units, never 0 (0 means "not seen yet").
#[inline(always)]
fn tick(p: &Packet, now: u32) -> u32 {
    match p.timestamp_ns() {
        0 => now,
        t => ((t >> 20) as u32).max(1),
    }
}

/// The cache signature of a hash (never 0: 0 marks a free line).
#[inline(always)]
fn sig(h: u64) -> u32 {
    let s = (h >> 32) as u32;
    s | u32::from(s == 0)
}

/// True if `p` is TCP with FIN or RST (`k` its key).
#[inline(always)]
fn closes(p: &Packet, k: &Key) -> bool {
    (k[4] >> 32) as u8 == 6
        && p.transport_header()
            .and_then(|t| t.get(13))
            .is_some_and(|f| f & 0x05 != 0)
}

/// What both implementations share: configuration, counters, flow ids
/// and the flows' last-seen times (up to date for flows not in the cache).
struct Common {
    anno: usize,
    /// `TIMEOUT` in ticks; 0 never.
    timeout: u32,
    capacity: usize,
    ids: IdAlloc,
    seen: Vec<u32>,
    /// Tick of the next sweep (0: not yet set).
    next_sweep: u32,
    /// Tick used for packets without a timestamp, read once per batch.
    now: u32,
    hits: u64,
    misses: u64,
    expired: u64,
    closed: u64,
    drops: u64,
}

impl Common {
    #[inline(always)]
    fn expired(&self, t: u32, seen: u32) -> bool {
        self.timeout != 0 && seen != 0 && t.wrapping_sub(seen) as i32 > self.timeout as i32
    }

    fn new_id(&mut self) -> u32 {
        let id = self.ids.alloc();
        if self.seen.len() < self.ids.span() {
            self.seen.resize(self.ids.span(), 0);
        }
        self.seen[id as usize] = 0;
        id
    }
}

/// The cache and flow table of one implementation.
trait Store: Send {
    /// The fast path: classify each packet of `batch` into `class` (hits
    /// annotated, their lines updated, expired and closed flows removed).
    fn fast(&mut self, batch: &mut Batch, c: &mut Common, class: &mut Vec<u8>);
    /// The cached line of `k`: (flow id, last seen).
    fn cache_get(&self, k: &Key, h: u64) -> Option<(u32, u32)>;
    /// Install `k` (or refresh it) with last-seen `t`, evicting the set's
    /// least recently used line (its last-seen time written back).
    fn cache_put(&mut self, k: &Key, h: u64, id: u32, t: u32, seen: &mut [u32]);
    fn cache_remove(&mut self, k: &Key, h: u64);
    fn cached(&self) -> usize;
    /// Write every cached line's last-seen time back to `seen`.
    fn write_back(&self, seen: &mut [u32]);
    /// Keep the lines for which `f(last seen)` is true.
    fn cache_retain(&mut self, f: &mut dyn FnMut(u32) -> bool);
    fn flow_get(&self, k: &Key) -> Option<u32>;
    /// Start loading the last-seen time (in `seen`) of the flow that
    /// installing `k` would evict.
    fn prefetch_victim(&self, k: &Key, h: u64, seen: &[u32]);
    /// The flows of up to `SLOW_GROUP` keys (`None` for no key), looked
    /// up together so that their memory accesses overlap.
    fn flow_get_batch(&self, keys: &[Option<Key>], out: &mut [Option<u32>]);
    fn flow_insert(&mut self, k: Key, id: u32) -> bool;
    fn flow_remove(&mut self, k: &Key) -> Option<u32>;
    fn flows(&self) -> usize;
    fn flow_retain(&mut self, f: &mut dyn FnMut(u32) -> bool);
}

/// One cache line's metadata (a copy: the cache keeps the fields apart).
#[derive(Clone, Copy, Default)]
struct Line {
    sig: u32,
    id: u32,
    seen: u32,
    /// LRU stamp: the cache clock at the last use.
    age: u32,
}

/// Four lines, field by field, in two 64-byte cache lines: first their
/// metadata (the four signatures side by side, one 16-byte compare), then
/// their keys in short form ([`short_key`]). A 4-way set is one `Quad`, so
/// a lookup reads two adjacent lines and nothing else (for IPv4 keys).
#[derive(Clone, Copy, Default)]
#[repr(C, align(128))]
struct Quad {
    sig: [u32; 4],
    id: [u32; 4],
    seen: [u32; 4],
    age: [u32; 4],
    key: [Short; 4],
}

/// A key in 16 bytes: an IPv4 key exactly (the two addresses, then the
/// last word: ports, protocol, version, VLAN), any other key as its hash
/// and last word with [`WIDE`] set, its full key kept apart.
type Short = [u64; 2];

/// Marks a [`Short`] that stands for a key it does not hold (bit 63 of
/// the last word, which no key uses).
const WIDE: u64 = 1 << 63;

/// `k`'s [`Short`] form (`h` its hash) and whether that is all of it.
#[inline(always)]
fn short_key(k: &Key, h: u64) -> (Short, bool) {
    // IPv4 keys are IPv4-mapped: words 0 and 2 zero, the low halves of
    // words 1 and 3 0xffff_0000, the addresses in their high halves.
    const MAPPED: u64 = 0xffff_0000;
    let v4 = (k[4] >> 40) as u8 == 4
        && (k[0] | k[2]) == 0
        && k[1] as u32 as u64 == MAPPED
        && k[3] as u32 as u64 == MAPPED;
    if v4 {
        ([k[1] >> 32 | (k[3] & !0xffff_ffff), k[4]], true)
    } else {
        ([h, k[4] | WIDE], false)
    }
}

/// Bit `j` set where `sigs[j] == s`.
#[inline(always)]
fn sig4(sigs: &[u32; 4], s: u32) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86_64 baseline; `sigs` is 16 bytes
        // (read unaligned).
        unsafe {
            let eq = _mm_cmpeq_epi32(
                _mm_loadu_si128(sigs.as_ptr() as *const __m128i),
                _mm_set1_epi32(s as i32),
            );
            _mm_movemask_ps(_mm_castsi128_ps(eq)) as u32
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        sig4_portable(sigs, s)
    }
}

/// [`sig4`] without SIMD.
#[cfg(any(test, not(target_arch = "x86_64")))]
#[inline(always)]
fn sig4_portable(sigs: &[u32; 4], s: u32) -> u32 {
    (0..4).fold(0, |m, j| m | u32::from(sigs[j] == s) << j)
}

/// The cache and the flow table.
struct Table {
    ways: usize,
    sets: u32,
    meta: Vec<Quad>,
    /// The full keys of lines whose short key is [`WIDE`] (IPv6), by line.
    wide: Vec<Key>,
    clock: u32,
    cached: usize,
    flows: Cuckoo,
}

/// The fast implementation: the table and the fast path's group arrays,
/// kept between batches so that they are not zeroed for each (every
/// entry a packet reads is written for that packet first).
struct Fast {
    t: Table,
    g: Box<Group>,
}

impl Fast {
    fn new(lines: usize, ways: usize, flows: usize) -> Fast {
        Fast {
            t: Table {
                ways,
                sets: (lines / ways) as u32,
                meta: vec![Quad::default(); lines.div_ceil(4)],
                wide: vec![[0; 5]; lines],
                clock: 0,
                cached: 0,
                flows: Cuckoo::new(flows),
            },
            g: Box::new(Group {
                keys: [[0u64; 5]; GROUP],
                shorts: [[0u64; 2]; GROUP],
                exact: [true; GROUP],
                hs: [0u64; GROUP],
                firsts: [usize::MAX; GROUP],
            }),
        }
    }
}

impl Table {
    /// Cache lines (`wide` has an entry for each).
    fn lines(&self) -> usize {
        self.wide.len()
    }

    /// The line an install of an uncached key with hash `h` takes at
    /// `clock`: a free line of its set (`true`), else the set's least
    /// recently used one (`false`, its flow evicted).
    fn slot_for(&self, h: u64, clock: u32) -> (usize, bool) {
        let first = self.set_of(h);
        let set = first..first + self.ways;
        match set.clone().find(|&g| self.line(g).sig == 0) {
            Some(g) => (g, true),
            None => (
                set.max_by_key(|&g| clock.wrapping_sub(self.line(g).age))
                    .unwrap_or(first),
                false,
            ),
        }
    }

    #[inline(always)]
    fn line(&self, g: usize) -> Line {
        let (q, j) = (&self.meta[g / 4], g % 4);
        Line {
            sig: q.sig[j],
            id: q.id[j],
            seen: q.seen[j],
            age: q.age[j],
        }
    }

    #[inline(always)]
    fn set_line(&mut self, g: usize, l: Line) {
        let (q, j) = (&mut self.meta[g / 4], g % 4);
        q.sig[j] = l.sig;
        q.id[j] = l.id;
        q.seen[j] = l.seen;
        q.age[j] = l.age;
    }

    /// The first line of `h`'s set.
    #[inline(always)]
    fn set_of(&self, h: u64) -> usize {
        reduce(h as u32, self.sets) as usize * self.ways
    }

    /// Bit `j` set where way `j` of the set starting at `first` has
    /// signature `s` (a 4-way set is one `Quad`: one compare, no loop).
    #[inline(always)]
    fn sig_mask(&self, first: usize, s: u32) -> u32 {
        if self.ways == 4 {
            sig4(&self.meta[first / 4].sig, s)
        } else {
            (0..self.ways).fold(0, |m, j| {
                let g = first + j;
                m | u32::from(self.meta[g / 4].sig[g % 4] == s) << j
            })
        }
    }

    /// Among the ways of `mask` in the set at `first`, the line holding `k`
    /// (`short` its [`short_key`]; `exact` if that is all of it).
    #[inline(always)]
    fn find_in(
        &self,
        first: usize,
        mut mask: u32,
        k: &Key,
        short: &Short,
        exact: bool,
    ) -> Option<usize> {
        while mask != 0 {
            let g = first + mask.trailing_zeros() as usize;
            let s = &self.meta[g / 4].key[g % 4];
            if ((s[0] ^ short[0]) | (s[1] ^ short[1])) == 0 && (exact || key_eq(&self.wide[g], k)) {
                return Some(g);
            }
            mask &= mask - 1;
        }
        None
    }

    /// The line holding `k`.
    #[inline(always)]
    fn find(&self, k: &Key, h: u64) -> Option<usize> {
        let first = self.set_of(h);
        let (short, exact) = short_key(k, h);
        self.find_in(first, self.sig_mask(first, sig(h)), k, &short, exact)
    }

    fn remove_line(&mut self, g: usize) {
        self.meta[g / 4].sig[g % 4] = 0;
        self.cached -= 1;
    }

    /// A hit on line `g` at tick `t`: its last-seen time and LRU age.
    #[inline(always)]
    fn touch(&mut self, g: usize, t: u32) {
        let clock = self.clock;
        self.clock = clock.wrapping_add(1);
        let (q, j) = (&mut self.meta[g / 4], g % 4);
        q.seen[j] = t;
        q.age[j] = clock;
    }

    /// Line `g` (holding `k`) and `k`'s flow removed, its id freed.
    fn forget(&mut self, g: usize, k: &Key, c: &mut Common) {
        self.remove_line(g);
        if let Some(id) = self.flows.remove(k) {
            c.ids.free(id);
        }
    }
}

/// One group's keys, their short forms and whether those are exact,
/// hashes, and first lines of their sets (`usize::MAX`: no 5-tuple).
struct Group {
    keys: [Key; GROUP],
    shorts: [Short; GROUP],
    exact: [bool; GROUP],
    hs: [u64; GROUP],
    firsts: [usize; GROUP],
}

impl Table {
    /// Pass 2 from packet `i` on: compare keys, update the lines of hits
    /// and annotate them, mark misses and packets without a key in `cls`.
    /// Stops at the first hit whose flow expired or closes, which
    /// [`end_flow`](Self::end_flow) handles, and returns its index and
    /// line (index `n` when there is none): this loop calls nothing, so
    /// its values stay in registers. `counts` are (hits, misses).
    #[inline(always)]
    fn hits_from(
        &mut self,
        g: &Group,
        ps: &mut [Packet],
        cls: &mut [u8],
        mut i: usize,
        c: &Common,
        counts: &mut (u64, u64),
    ) -> (usize, usize) {
        while i < ps.len().min(cls.len()).min(GROUP) {
            let (p, first) = (&mut ps[i], g.firsts[i]);
            if first == usize::MAX {
                cls[i] = BAD;
                i += 1;
                continue;
            }
            let (k, h) = (&g.keys[i], g.hs[i]);
            let mask = self.sig_mask(first, sig(h));
            let Some(l) = self.find_in(first, mask, k, &g.shorts[i], g.exact[i]) else {
                counts.1 += 1;
                cls[i] = MISS;
                i += 1;
                continue;
            };
            let t = tick(p, c.now);
            let line = self.line(l);
            if c.expired(t, line.seen) || closes(p, k) {
                return (i, l);
            }
            self.touch(l, t);
            p.anno_mut().set_u32(c.anno, line.id);
            counts.0 += 1;
            i += 1;
        }
        (i, 0)
    }

    /// Pass 2 for a hit [`hits_from`](Self::hits_from) stopped at, in
    /// line `l`: its flow expired (a miss, the flow removed) or the packet
    /// closes it (annotated, then the flow removed).
    #[inline(never)]
    fn end_flow(&mut self, k: &Key, l: usize, p: &mut Packet, c: &mut Common) -> u8 {
        let t = tick(p, c.now);
        let line = self.line(l);
        if c.expired(t, line.seen) {
            self.forget(l, k, c);
            c.expired += 1;
            c.misses += 1;
            return MISS;
        }
        self.touch(l, t);
        p.anno_mut().set_u32(c.anno, line.id);
        self.forget(l, k, c);
        c.closed += 1;
        c.hits += 1;
        HIT
    }
}

impl Store for Fast {
    fn fast(&mut self, batch: &mut Batch, c: &mut Common, class: &mut Vec<u8>) {
        let Fast { t, g } = self;
        // Every packet a hit unless pass 2 says otherwise.
        class.clear();
        class.resize(batch.len(), HIT);
        for (group, cls) in batch
            .as_mut_slice()
            .chunks_mut(GROUP)
            .zip(class.chunks_mut(GROUP))
        {
            // Pass 1: 5-tuples, hashes, short keys, prefetch the sets
            // (both lines of a quad).
            for (i, p) in group.iter().enumerate().take(GROUP) {
                g.firsts[i] = usize::MAX;
                if let Some(k) = packet_flow_key(p) {
                    g.keys[i] = k;
                    let h = hash(&g.keys[i]);
                    g.hs[i] = h;
                    (g.shorts[i], g.exact[i]) = short_key(&g.keys[i], h);
                    g.firsts[i] = t.set_of(h);
                    let q = t.meta.as_ptr().wrapping_add(g.firsts[i] / 4);
                    prefetch(q);
                    prefetch((q as *const u8).wrapping_add(64));
                }
            }
            // Pass 2: compare signatures and keys, update lines, annotate;
            // flows that expired or close in a second, out-of-line step,
            // in order.
            let mut counts = (0, 0);
            let mut i = 0;
            while i < group.len() {
                let l;
                (i, l) = t.hits_from(g, group, cls, i, c, &mut counts);
                if i < group.len() {
                    cls[i] = t.end_flow(&g.keys[i], l, &mut group[i], c);
                    i += 1;
                }
            }
            c.hits += counts.0;
            c.misses += counts.1;
        }
    }

    fn cache_get(&self, k: &Key, h: u64) -> Option<(u32, u32)> {
        self.t
            .find(k, h)
            .map(|g| (self.t.line(g).id, self.t.line(g).seen))
    }

    fn cache_put(&mut self, k: &Key, h: u64, id: u32, t: u32, seen: &mut [u32]) {
        let clock = self.t.clock;
        self.t.clock = clock.wrapping_add(1);
        let g = match self.t.find(k, h) {
            Some(g) => g,
            None => {
                let (g, free) = self.t.slot_for(h, clock);
                if free {
                    self.t.cached += 1;
                } else {
                    let old = self.t.line(g);
                    seen[old.id as usize] = old.seen;
                }
                let (short, exact) = short_key(k, h);
                self.t.meta[g / 4].key[g % 4] = short;
                if !exact {
                    self.t.wide[g] = *k;
                }
                g
            }
        };
        self.t.set_line(
            g,
            Line {
                sig: sig(h),
                id,
                seen: t,
                age: clock,
            },
        );
    }

    fn cache_remove(&mut self, k: &Key, h: u64) {
        if let Some(g) = self.t.find(k, h) {
            self.t.remove_line(g);
        }
    }

    fn cached(&self) -> usize {
        self.t.cached
    }

    fn write_back(&self, seen: &mut [u32]) {
        for g in 0..self.t.lines() {
            let l = self.t.line(g);
            if l.sig != 0 {
                seen[l.id as usize] = l.seen;
            }
        }
    }

    fn cache_retain(&mut self, f: &mut dyn FnMut(u32) -> bool) {
        for g in 0..self.t.lines() {
            let l = self.t.line(g);
            if l.sig != 0 && !f(l.seen) {
                self.t.remove_line(g);
            }
        }
    }

    fn flow_get(&self, k: &Key) -> Option<u32> {
        self.t.flows.get(k)
    }

    fn prefetch_victim(&self, k: &Key, h: u64, seen: &[u32]) {
        if self.t.find(k, h).is_some() {
            return;
        }
        let (g, free) = self.t.slot_for(h, self.t.clock);
        if !free {
            prefetch(seen.as_ptr().wrapping_add(self.t.line(g).id as usize));
        }
    }

    fn flow_get_batch(&self, keys: &[Option<Key>], out: &mut [Option<u32>]) {
        self.t.flows.get_batch::<SLOW_GROUP>(keys, out);
    }

    fn flow_insert(&mut self, k: Key, id: u32) -> bool {
        self.t.flows.insert(k, id).is_ok()
    }

    fn flow_remove(&mut self, k: &Key) -> Option<u32> {
        self.t.flows.remove(k)
    }

    fn flows(&self) -> usize {
        self.t.flows.len()
    }

    fn flow_retain(&mut self, f: &mut dyn FnMut(u32) -> bool) {
        self.t.flows.retain(|_, id| f(id));
    }
}

/// The reference: each set a list of `(key, id, last seen)`, most recently
/// used first; the flow table a `HashMap`.
struct Reference {
    ways: usize,
    sets: Vec<Vec<(Key, u32, u32)>>,
    flows: HashMap<Key, u32>,
}

impl Reference {
    fn set(&self, h: u64) -> usize {
        reduce(h as u32, self.sets.len() as u32) as usize
    }

    fn pos(&self, k: &Key, h: u64) -> Option<(usize, usize)> {
        let s = self.set(h);
        self.sets[s]
            .iter()
            .position(|e| key_eq(&e.0, k))
            .map(|i| (s, i))
    }
}

impl Store for Reference {
    fn fast(&mut self, batch: &mut Batch, c: &mut Common, class: &mut Vec<u8>) {
        for p in batch.iter_mut() {
            let Some(f) = FlowKey::from_packet(p) else {
                class.push(BAD);
                continue;
            };
            let k = flow_key(&f);
            let h = hash(&k);
            let Some((s, i)) = self.pos(&k, h) else {
                c.misses += 1;
                class.push(MISS);
                continue;
            };
            let t = tick(p, c.now);
            let (_, id, seen) = self.sets[s].remove(i);
            if c.expired(t, seen) {
                self.flows.remove(&k);
                c.ids.free(id);
                c.expired += 1;
                c.misses += 1;
                class.push(MISS);
                continue;
            }
            p.anno_mut().set_u32(c.anno, id);
            if closes(p, &k) {
                self.flows.remove(&k);
                c.ids.free(id);
                c.closed += 1;
            } else {
                self.sets[s].insert(0, (k, id, t));
            }
            c.hits += 1;
            class.push(HIT);
        }
    }

    fn cache_get(&self, k: &Key, h: u64) -> Option<(u32, u32)> {
        self.pos(k, h).map(|(s, i)| {
            let e = self.sets[s][i];
            (e.1, e.2)
        })
    }

    fn cache_put(&mut self, k: &Key, h: u64, id: u32, t: u32, seen: &mut [u32]) {
        if let Some((s, i)) = self.pos(k, h) {
            self.sets[s].remove(i);
        }
        let s = self.set(h);
        if self.sets[s].len() == self.ways {
            if let Some((_, old, when)) = self.sets[s].pop() {
                seen[old as usize] = when;
            }
        }
        self.sets[s].insert(0, (*k, id, t));
    }

    fn cache_remove(&mut self, k: &Key, h: u64) {
        if let Some((s, i)) = self.pos(k, h) {
            self.sets[s].remove(i);
        }
    }

    fn cached(&self) -> usize {
        self.sets.iter().map(Vec::len).sum()
    }

    fn write_back(&self, seen: &mut [u32]) {
        for e in self.sets.iter().flatten() {
            seen[e.1 as usize] = e.2;
        }
    }

    fn cache_retain(&mut self, f: &mut dyn FnMut(u32) -> bool) {
        for s in &mut self.sets {
            s.retain(|e| f(e.2));
        }
    }

    fn flow_get(&self, k: &Key) -> Option<u32> {
        self.flows.get(k).copied()
    }

    fn prefetch_victim(&self, _k: &Key, _h: u64, _seen: &[u32]) {}

    fn flow_get_batch(&self, keys: &[Option<Key>], out: &mut [Option<u32>]) {
        for (o, k) in out.iter_mut().zip(keys) {
            *o = k.as_ref().and_then(|k| self.flows.get(k).copied());
        }
    }

    fn flow_insert(&mut self, k: Key, id: u32) -> bool {
        self.flows.insert(k, id);
        true
    }

    fn flow_remove(&mut self, k: &Key) -> Option<u32> {
        self.flows.remove(k)
    }

    fn flows(&self) -> usize {
        self.flows.len()
    }

    fn flow_retain(&mut self, f: &mut dyn FnMut(u32) -> bool) {
        self.flows.retain(|_, id| f(*id));
    }
}

struct FlowCache {
    c: Common,
    store: Box<dyn Store>,
    noutputs: usize,
    lookup_result: String,
    class: Vec<u8>,
    /// Flows created or removed (by the handlers too): the slow path's
    /// group lookups hold while it does not change.
    writes: u64,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = Args::new(&ctx.args);
    let lines: u32 = a.read_or("LINES", 16384u32);
    let ways: u32 = a.read_or("WAYS", 4u32);
    let flows: u32 = a.read_or("FLOWS", 1_000_000u32);
    let timeout: Seconds = a.read_or(
        "TIMEOUT",
        Seconds {
            nanos: 60_000_000_000,
        },
    );
    let anno = a.read_or("ANNO", "AGGREGATE".to_string());
    let file = a.read::<String>("FILE");
    let imp = a.read_or("IMPL", "fast".to_string());
    a.complete().map_err(|e| e.0)?;
    let (lines, ways) = (lines as usize, ways as usize);
    let mut errs = Vec::new();
    if !(1..=16).contains(&ways) {
        errs.push("WAYS: must be 1 to 16".to_string());
    } else if lines == 0 || lines % ways != 0 {
        errs.push("LINES: must be a positive multiple of WAYS".to_string());
    }
    let anno = match anno_by_name(&anno) {
        Some(i) if i.offset + 4 <= linerate_runtime::anno::USER_ANNO_SIZE => i.offset,
        _ => {
            errs.push(format!("ANNO: no 4-byte annotation '{anno}'"));
            0
        }
    };
    let store: Box<dyn Store> = match imp.as_str() {
        _ if !errs.is_empty() => return Err(errs),
        "fast" => Box::new(Fast::new(lines, ways, flows as usize)),
        "reference" => Box::new(Reference {
            ways,
            sets: vec![Vec::new(); lines / ways],
            flows: HashMap::new(),
        }),
        other => {
            return Err(vec![format!(
                "IMPL: expected fast or reference, got '{other}'"
            )])
        }
    };
    let mut e = FlowCache {
        c: Common {
            anno,
            timeout: (timeout.nanos >> 20).min(i32::MAX as u64) as u32,
            capacity: flows as usize,
            ids: IdAlloc::default(),
            seen: Vec::new(),
            next_sweep: 0,
            now: 1,
            hits: 0,
            misses: 0,
            expired: 0,
            closed: 0,
            drops: 0,
        },
        store,
        noutputs: ctx.noutputs(),
        lookup_result: String::new(),
        class: Vec::new(),
        writes: 0,
    };
    if let Some(f) = file {
        e.load(&f).map_err(|m| vec![format!("FILE: {m}")])?;
    }
    Ok(Box::new(e))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::write("insert"),
    HandlerSpec::write("delete"),
    HandlerSpec::read_write("lookup"),
    HandlerSpec::write("load"),
    HandlerSpec::gauge("count"),
    HandlerSpec::gauge("cached"),
    HandlerSpec::read("capacity"),
    HandlerSpec::counter("hits"),
    HandlerSpec::counter("misses"),
    HandlerSpec::counter("expired"),
    HandlerSpec::counter("closed"),
    HandlerSpec::counter("drops"),
];

fn parse_key(s: &str) -> Result<Key, String> {
    let w: Vec<&str> = s.split_ascii_whitespace().collect();
    parse_flow(&w).map(|f| flow_key(&f))
}

impl FlowCache {
    /// A new flow's id; `None` if the table is full.
    fn create(&mut self, k: Key) -> Option<u32> {
        self.writes += 1;
        if self.store.flows() >= self.c.capacity {
            return None;
        }
        let id = self.c.new_id();
        if self.store.flow_insert(k, id) {
            Some(id)
        } else {
            self.c.ids.free(id);
            None
        }
    }

    fn remove_flow(&mut self, k: &Key, h: u64) -> bool {
        self.writes += 1;
        self.store.cache_remove(k, h);
        match self.store.flow_remove(k) {
            Some(id) => {
                self.c.ids.free(id);
                true
            }
            None => false,
        }
    }

    fn load(&mut self, path: &str) -> Result<(), String> {
        let text = read_table(path)?;
        let mut keys = Vec::new();
        for (n, l) in table_lines(&text) {
            keys.push(parse_key(l).map_err(|e| format!("{path}:{n}: {e}"))?);
        }
        for (i, k) in keys.into_iter().enumerate() {
            if self.store.flow_get(&k).is_none() && self.create(k).is_none() {
                return Err(format!("{path}: flow table full after {i} flows"));
            }
        }
        Ok(())
    }

    /// Sweep expired flows when packet time `t` reaches the next sweep.
    fn maybe_sweep(&mut self, t: u32) {
        if self.c.timeout == 0 {
            return;
        }
        if self.c.next_sweep == 0 {
            self.c.next_sweep = t.wrapping_add(self.c.timeout).max(1);
            return;
        }
        if (t.wrapping_sub(self.c.next_sweep) as i32) < 0 {
            return;
        }
        self.c.next_sweep = t.wrapping_add(self.c.timeout).max(1);
        let c = &mut self.c;
        self.store.write_back(&mut c.seen);
        let (seen, ids, expired) = (&c.seen, &mut c.ids, &mut c.expired);
        let timeout = c.timeout;
        let dead = |s: u32| s != 0 && t.wrapping_sub(s) as i32 > timeout as i32;
        self.store.flow_retain(&mut |id| {
            let keep = !dead(seen[id as usize]);
            if !keep {
                ids.free(id);
                *expired += 1;
            }
            keep
        });
        self.store.cache_retain(&mut |s| !dead(s));
    }

    /// The slow path: find or create each packet's flow, install it in
    /// the cache, annotate.
    fn slow(&mut self, batch: &mut Batch) {
        self.class.clear();
        for group in batch.as_mut_slice().chunks_mut(SLOW_GROUP) {
            let mut keys = [None; SLOW_GROUP];
            for (k, p) in keys.iter_mut().zip(group.iter()) {
                *k = FlowKey::from_packet(p).map(|f| flow_key(&f));
            }
            // Look the whole group up in the flow table at once, so that
            // its buckets and entries load together; the answers hold
            // until a packet of the group creates or removes a flow.
            let n = group.len().min(SLOW_GROUP);
            let seen = &self.c.seen;
            for k in keys[..n].iter().flatten() {
                self.store.prefetch_victim(k, hash(k), seen);
            }
            let mut found = [None; SLOW_GROUP];
            self.store.flow_get_batch(&keys[..n], &mut found[..n]);
            for &id in found[..n].iter().flatten() {
                prefetch(seen.as_ptr().wrapping_add(id as usize));
            }
            let writes = self.writes;
            for ((p, k), f) in group.iter_mut().zip(keys).zip(found) {
                let f = match k {
                    Some(k) if self.writes != writes => self.store.flow_get(&k),
                    _ => f,
                };
                self.slow_one(p, k, f);
            }
        }
    }

    /// The slow path for one packet with key `k`, whose flow in the flow
    /// table is `flow`.
    fn slow_one(&mut self, p: &mut Packet, k: Option<Key>, flow: Option<u32>) {
        let Some(k) = k else {
            self.class.push(BAD);
            return;
        };
        let h = hash(&k);
        let t = tick(p, self.c.now);
        let known = match self.store.cache_get(&k, h) {
            Some((id, seen)) => Some((id, seen)),
            None => flow.map(|id| (id, self.c.seen[id as usize])),
        };
        let id = match known {
            Some((id, seen)) if !self.c.expired(t, seen) => Some(id),
            Some(_) => {
                self.remove_flow(&k, h);
                self.c.expired += 1;
                None
            }
            None => None,
        };
        let Some(id) = id.or_else(|| self.create(k)) else {
            self.class.push(BAD);
            return;
        };
        self.store.cache_put(&k, h, id, t, &mut self.c.seen);
        p.anno_mut().set_u32(self.c.anno, id);
        if closes(p, &k) {
            self.remove_flow(&k, h);
            self.c.closed += 1;
        }
        self.class.push(HIT);
    }

    /// A fast-path batch whose only other packets are a few misses
    /// (`class` says which): they leave it for output 1, from the back
    /// (a few short moves), and the hits stay for output 0, both in order,
    /// without the three-way split of [`route`](Self::route).
    fn split_misses(&mut self, mut batch: Batch, ctx: &mut Ctx<'_>) {
        let mut miss = Batch::new();
        let v = batch.vec_mut();
        for (i, &c) in self.class.iter().enumerate().rev() {
            if c == MISS && i < v.len() {
                miss.push(v.remove(i));
            }
        }
        miss.vec_mut().reverse();
        ctx.push(0, batch);
        ctx.push(1, miss);
    }

    /// Send the packets of `batch` where `self.class` says.
    fn route(&mut self, batch: Batch, ctx: &mut Ctx<'_>) {
        // Class = output: HIT 0, MISS 1, BAD 2 (released without output 2).
        let mut outs = [Batch::new(), Batch::new(), Batch::new()];
        batch.split_into(&self.class, &mut outs);
        let [hit, miss, bad] = outs;
        self.c.drops += bad.len() as u64;
        ctx.push(0, hit);
        ctx.push(1, miss);
        if self.noutputs > 2 {
            ctx.push(2, bad);
        }
    }
}

impl Element for FlowCache {
    fn push(&mut self, port: usize, mut batch: Batch, ctx: &mut Ctx<'_>) {
        let Some(first) = batch.as_slice().first() else {
            return;
        };
        self.c.now = ((ctx.recent_ns() >> 20) as u32).max(1);
        self.maybe_sweep(tick(first, self.c.now));
        if port == 0 {
            self.class.clear();
            let (hits, misses) = (self.c.hits, self.c.misses);
            self.store.fast(&mut batch, &mut self.c, &mut self.class);
            let (hits, misses) = (self.c.hits - hits, self.c.misses - misses);
            if hits == batch.len() as u64 {
                ctx.push(0, batch);
            } else if hits + misses == batch.len() as u64 && misses <= FEW_MISSES {
                self.split_misses(batch, ctx);
            } else {
                self.route(batch, ctx);
            }
        } else {
            self.slow(&mut batch);
            if self.class.iter().all(|&c| c == HIT) {
                ctx.push(0, batch);
            } else {
                self.route(batch, ctx);
            }
        }
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        let c = &self.c;
        Some(match name {
            "lookup" => self.lookup_result.clone(),
            "count" => self.store.flows().to_string(),
            "cached" => self.store.cached().to_string(),
            "capacity" => c.capacity.to_string(),
            "hits" => c.hits.to_string(),
            "misses" => c.misses.to_string(),
            "expired" => c.expired.to_string(),
            "closed" => c.closed.to_string(),
            "drops" => c.drops.to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "insert" => parse_key(value).and_then(|k| {
                let h = hash(&k);
                let id = match self.store.flow_get(&k) {
                    Some(id) => id,
                    None => self.create(k).ok_or("flow table full")?,
                };
                self.store.cache_put(&k, h, id, 0, &mut self.c.seen);
                Ok(())
            }),
            "delete" => parse_key(value).and_then(|k| {
                if self.remove_flow(&k, hash(&k)) {
                    Ok(())
                } else {
                    Err("no such flow".into())
                }
            }),
            "lookup" => parse_key(value).map(|k| {
                self.lookup_result = match self.store.flow_get(&k) {
                    Some(id) => id.to_string(),
                    None => "-1".into(),
                };
            }),
            "load" => self.load(value.trim()),
            _ => return None,
        })
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![("no 5-tuple or flow table full", self.c.drops)]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The SIMD signature compare answers as the portable one.
        #[test]
        fn sig4_as_portable(
            sigs in proptest::array::uniform4(0u32..4),
            s in 0u32..4,
            high in any::<u32>(),
        ) {
            // Few values, so that several ways match; `high` spreads them.
            let sigs = sigs.map(|x| x ^ high);
            let s = s ^ high;
            prop_assert_eq!(sig4(&sigs, s), sig4_portable(&sigs, s));
        }

        /// Two IPv4 keys have the same short form only if they are equal,
        /// and the short form of any other key is marked as not all of it.
        #[test]
        fn short_keys(
            a in any::<[u8; 14]>(),
            at in 0usize..14,
            flip in 0u8..3,
            h in any::<u64>(),
        ) {
            // Key `x`, its last byte the VLAN id's low bits.
            let v4 = |x: [u8; 14]| {
                let mut f = FlowKey {
                    version: 4,
                    sport: u16::from_be_bytes([x[8], x[9]]),
                    dport: u16::from_be_bytes([x[10], x[11]]),
                    proto: x[12],
                    ..FlowKey::default()
                };
                f.src[10..12].fill(0xff);
                f.src[12..16].copy_from_slice(&x[0..4]);
                f.dst[10..12].fill(0xff);
                f.dst[12..16].copy_from_slice(&x[4..8]);
                let mut k = flow_key(&f);
                k[4] |= u64::from(x[13]) << 48;
                k
            };
            // `b` is `a` with one byte changed, or `a` itself (flip 0).
            let mut b = a;
            b[at] ^= flip;
            let (ka, kb) = (v4(a), v4(b));
            let (sa, exact_a) = short_key(&ka, h);
            let (sb, exact_b) = short_key(&kb, h);
            prop_assert!(exact_a && exact_b);
            prop_assert_eq!(sa == sb, ka == kb);
            // The same words as an IPv6 key (an IPv4-mapped address).
            let mut k6 = ka;
            k6[4] = k6[4] & !(0xff << 40) | 6 << 40;
            let (s6, exact6) = short_key(&k6, h);
            prop_assert!(!exact6 && s6[1] & WIDE != 0 && s6 != sa);
        }
    }

    /// An IPv6 flow's line holds its full key: another key with the same
    /// hash and last word is not taken for it.
    #[test]
    fn wide_keys_compared_in_full() {
        let mut f = Fast::new(8, 4, 16);
        let mut seen = vec![0u32; 16];
        let k1: Key = [1, 2, 3, 4, 6 << 40 | 17 << 32 | 80];
        let mut k2 = k1;
        k2[0] = 9;
        let h = hash(&k1);
        f.cache_put(&k1, h, 5, 1, &mut seen);
        assert_eq!(f.cache_get(&k1, h), Some((5, 1)));
        assert_eq!(f.cache_get(&k2, h), None, "same short key, other flow");
        f.cache_put(&k2, h, 6, 2, &mut seen);
        assert_eq!(f.cache_get(&k1, h), Some((5, 1)));
        assert_eq!(f.cache_get(&k2, h), Some((6, 2)));
    }
}

//! Exact-match table: looks up a key taken from each packet and annotates
//! the packets that match with the key's 32-bit value.
//!
//! # Synopsis
//! `CuckooHash([KEYWORDS])`
//!
//! # Ports
//! One agnostic input. Agnostic output 0 receives the packets whose key is
//! in the table (the value written to `ANNO`); push output 1 the packets
//! whose key is not; optional push output 2 the packets that have no key
//! (no network header for `FLOW`, `SRC` and `DST`, shorter than the bytes of
//! `OFFSET`), counted in `drops` and dropped when output 2 is not
//! connected.
//!
//! # Arguments
//! - `KEY` (default `FLOW`): what the key is.
//!   - `FLOW`: the 5-tuple a parser left in the annotations
//!     (`FlowKey::from_packet`: `L4Parser`, or `CheckIPHeader` /
//!     `MarkIPHeader` for IPv4). Written `SADDR SPORT DADDR DPORT PROTO`,
//!     e.g. `10.0.0.1 1024 10.0.0.2 80 tcp` (protocol by number or as
//!     `tcp`, `udp`, `icmp`, `icmp6`, `sctp`).
//!   - `SRC`, `DST`: the source or destination address at the network
//!     header, IPv4 or IPv6 (IPv4 held as `::ffff:a.b.c.d`). Written as an
//!     address.
//!   - `OFFSET O LEN N`: `N` bytes (1 to 40) of packet data from byte `O`.
//!     Written as `2N` hexadecimal digits.
//!   - `ANNO NAME`: the bytes of an annotation (`PAINT`, `DST_IP`, or a
//!     byte offset for one byte). Written in hexadecimal.
//! - `CAPACITY` (unsigned, default 65536): the most keys the table holds.
//! - `ANNO` (annotation, default `AGGREGATE`): where a match's value goes,
//!   4 bytes in host order from the annotation's offset; `NONE` writes
//!   nothing (the element then only splits hits from misses).
//! - `FILE` (filename): load the table from this file at configuration
//!   time: one `KEY VALUE` a line (`VALUE` an unsigned 32-bit integer);
//!   blank lines and `#` comments are skipped.
//! - `IMPL` (`fast` or `reference`, default `fast`): `reference` is the
//!   straightforward implementation (a `std` `HashMap`, one packet at a
//!   time) kept for differential tests and the benchmark's speed-up.
//!
//! Click has no such element; its nearest relatives are `IPRouteTable`
//! lookups by address and `HashSwitch`.
//!
//! # Handlers
//! - `insert` (write): `KEY VALUE`: add a key or replace its value; fails
//!   with `table full` when `CAPACITY` keys are held.
//! - `delete` (write): `KEY`: remove a key; fails with `no such key`.
//! - `lookup` (read/write): Click's read handlers cannot take a parameter
//!   here: write a key, then read its value (`-1` if absent).
//! - `load` (write): `FILE`: insert every line of a table file (checked in
//!   full before any is inserted).
//! - `count` (read): keys held. `capacity` (read): `CAPACITY`.
//! - `hits`, `misses` (read): packets that found, or did not find, their
//!   key. `drops` (read): packets without a key.
//!
//! # Example
//! ```click
//! FromDump(trace.pcap, STOP true) -> MarkIPHeader(14)
//!     -> t :: CuckooHash(KEY FLOW, CAPACITY 1000000, FILE flows.txt);
//! t[0] -> ToDump(known.pcap);
//! t[1] -> Discard;
//! ```
//!
//! # Implementation
//! A bucketized cuckoo hash table, at most 85 % full, in one of two
//! layouts chosen by the key's length.
//!
//! Keys of at most 12 bytes (`OFFSET O LEN N` with `N` up to 12, `ANNO`)
//! lie inside their buckets: a bucket is one 64-byte line of four slots,
//! each the key's 12 bytes and its 4-byte value, no tags (1M keys: 18.8
//! MB). A lookup compares a line's four keys at once (four SSE2 compares
//! packed to one mask); the first bucket's line is prefetched when the key
//! is hashed, into the second-level cache (`prefetcht1`: it is compared
//! only once the group's 64 keys are hashed; about 2 ns a packet faster
//! than `prefetcht0`), and the second bucket's only for the keys not in
//! the first. Inserts fill a key's first bucket first, so a hit reads
//! 1.19 lines on average (81 % of a million keys sit in their first
//! bucket; at 3.4 keys a bucket on average, at most 86 % could) and a
//! miss two. An empty slot holds a key that cannot be looked up in
//! its bucket (one whose buckets are elsewhere), so the compare needs no
//! occupancy test and every 12-byte key, zero included, can be stored.
//! Session 23 measured it against the tagged layout below on the same
//! keys: all hit 19.8-22.5 ns against 29.1-30.1, the keys in cache 9.0
//! against 10.9-11.3, 50 % hit 29.3-29.5 against 28.6 (a miss reads two
//! lines where the tagged layout reads only tags).
//!
//! Longer keys (`FLOW`, `SRC`, `DST`, `OFFSET` up to 40 bytes) use two
//! candidate buckets of 8 slots per key in struct-of-arrays form: the
//! buckets' 16-bit tags in one array (16 bytes a bucket, four buckets a
//! cache line), keys and values in another, one 64-byte line per slot. A
//! batch is looked up
//! 64 packets at a time in stages, as DPDK's `rte_hash_lookup_bulk`: each
//! packet's key is read, hashed and both candidate buckets' tags
//! prefetched at once, so the misses overlap the reading of the following
//! packets; then every key's tags are compared (one SSE2 compare and pack
//! a bucket) and its matching slot prefetched; then keys are compared and
//! hits annotated. The group's keys, locations and values are arrays kept
//! in the element from batch to batch (session 22: on the stack they were
//! zeroed for every group, 3.5 KiB, a `memset` a group; an entry is read
//! only for a packet whose bit says it was written for this group, and
//! the cache-resident row went from 11.60-11.66 to 10.87-11.47 ns); which
//! packets have a key, and which were found, are two
//! 64-bit masks a group, so the later stages skip the others without a
//! branch a packet, and a batch whose packets all hit leaves without a
//! byte of per-packet bookkeeping (the output classes are built only for
//! a batch that is split).
//!
//! The first stage is one loop per key reading, none of which calls
//! anything (a call in the loop, even on a rare path, kept its values in
//! memory for every packet): `OFFSET O LEN N` reads the key as whole
//! little-endian words (a generic over their number, so the hash and the
//! compares see the other words as zero; `OFFSET 26 LEN 12` is two loads
//! and a mask), `KEY FLOW` the 5-tuple straight into key words (the
//! reference goes through `FlowKey`, so the differential tests compare
//! the two readings). Packets that reading declines (shorter than the
//! whole words, no network header) go through the general extraction in
//! a second pass; tag collisions (a matching tag, another key) search
//! both buckets after the key loop. With all this the 1M-key `OFFSET` row
//! went from 249 to 147 instructions a packet, 50 % hit 259 to 172 (`perf
//! stat`, session 10). Tried and dropped: prefetching only the first
//! bucket's tags (most keys live there; no change in cycles); locating
//! the next group's keys before resolving this group's, to give the
//! prefetches a group's more time (session 23, inline layout: 21.2 and
//! 22.9 ns against 20.1 and 21.3; the misses are not late, there are too
//! many in flight); for the inline layout's misses, a count per bucket of
//! the keys moved to their second bucket, so that a miss could skip the
//! second line where it is 0 (half the buckets have one; the 50 % row
//! 1 ns slower), a first pass without branches (no faster, the
//! cache-resident row 1.2 ns slower), and the second buckets' compares
//! deferred until the next group's first ones (no change). Inserts move
//! keys to their other bucket along the shortest path a breadth-first
//! search finds (at most 512 buckets).
//!
//! Both arrays are `Huge` arrays: their memory starts at a 2 MiB boundary
//! and is advised and collapsed into 2 MiB pages, so that the 2.35 MB tag
//! array of the 1M-key table lies on huge pages too (a `Vec` of that size
//! held no whole 2 MiB page: AnonHugePages 70 -> 78 MB, 140-150 -> 122-130
//! cycles a packet, session 10). A random lookup in the 75 MB table then
//! costs a cache miss, not also a guest page walk. Nothing is allocated per
//! packet; a batch of hits goes on whole, and a mixed batch is split with
//! `Batch::split_into` (each output's packets counted first, then written
//! to their places, order kept: the 50 %-hit row 42.1 / 42.9 -> 38.9 /
//! 39.5 ns in two alternated runs, session 9, against a push a packet).
//!
//! ClickNP's optimisations: struct of arrays where it pays: the tagged
//! layout (keys over 12 bytes) keeps the buckets' 16-bit tags in one array
//! and the keys and values in another, so that a probe reads a line of tags
//! and a miss nothing else; the short-key layout keeps each key beside its
//! value in the bucket's one line on purpose (a hit then reads that line
//! alone), and a group's keys, locations and values are arrays kept in the
//! element. SIMD for the compares: a short-key bucket's four keys with four
//! SSE2 compares packed to one mask, a tagged bucket's eight tags with one
//! SSE2 compare and pack (the hash is scalar multiply-add). The lookups
//! prefetch in stages, 64 packets a group: the first bucket's line
//! (`prefetcht1`) as each key is hashed, the second only for the keys not
//! in the first; in the tagged layout both buckets' tags, then the matching
//! slot. No slow path inside: a miss leaves on output 1 in the same batch,
//! so a configuration can build one there (as `FlowCache` does around this
//! table), and the table changes only through handlers, between batches.
//!
//! Measured (`linerate bench elements CuckooHash`, 1,000,000 keys, on a
//! shared 2-vCPU VM; docs/performance.md): about 20 ns per packet with
//! all 12-byte keys found (48-50 Mpps; the tagged layout about 29 ns, as
//! the 5-tuple row's 38 bytes still take), short of the issue's 60 Mpps
//! (16.7 ns). The profile (session 23, `perf record -e cpu-clock`): a
//! quarter of the element's samples on the first bucket's prefetch, which
//! waits for a free miss buffer, and most of the rest on the compares
//! that wait for the lines: the lookups are bound by how many random
//! lines of an 18.8 MB table one core can have in flight (3-4 ns a line
//! at that size by `mem_floor`), not by their 9 ns of work.

use super::cuckoocore::{
    packet_flow_key, read_table, table_lines, Cuckoo, Inline, Key, KeySpec, Layout, Loc, Tagged,
    INLINE_KEY,
};
use linerate_args::{Args, Raw};
use linerate_runtime::anno::anno_by_name;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use std::any::Any;
use std::collections::HashMap;

/// The `CuckooHash` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "CuckooHash",
    port_count: "1/2-3",
    processing: "a/ah",
    doc: element_doc!("tables/cuckoohash"),
    make,
};

const HIT: u8 = 0;
const MISS: u8 = 1;
const BAD: u8 = 2;
/// Packets looked up together.
const GROUP: usize = 64;

/// The table: the optimised one (keys inside their buckets where they
/// are short enough) or the reference.
enum Table {
    Tagged(Cuckoo<Tagged>),
    Inline(Cuckoo<Inline>),
    Reference(HashMap<Key, u32>, usize),
}

impl Table {
    fn get(&self, k: &Key) -> Option<u32> {
        match self {
            Table::Tagged(t) => t.get(k),
            Table::Inline(t) => t.get(k),
            Table::Reference(m, _) => m.get(k).copied(),
        }
    }

    fn insert(&mut self, k: Key, v: u32) -> Result<(), String> {
        match self {
            Table::Tagged(t) => t.insert(k, v).map(drop).map_err(str::to_string),
            Table::Inline(t) => t.insert(k, v).map(drop).map_err(str::to_string),
            Table::Reference(m, cap) => {
                if m.len() >= *cap && !m.contains_key(&k) {
                    return Err("table full".into());
                }
                m.insert(k, v);
                Ok(())
            }
        }
    }

    fn remove(&mut self, k: &Key) -> Option<u32> {
        match self {
            Table::Tagged(t) => t.remove(k),
            Table::Inline(t) => t.remove(k),
            Table::Reference(m, _) => m.remove(k),
        }
    }

    fn len(&self) -> usize {
        match self {
            Table::Tagged(t) => t.len(),
            Table::Inline(t) => t.len(),
            Table::Reference(m, _) => m.len(),
        }
    }

    fn capacity(&self) -> usize {
        match self {
            Table::Tagged(t) => t.capacity(),
            Table::Inline(t) => t.capacity(),
            Table::Reference(_, c) => *c,
        }
    }
}

struct CuckooHash {
    spec: KeySpec,
    anno: Option<usize>,
    table: Table,
    noutputs: usize,
    hits: u64,
    misses: u64,
    drops: u64,
    lookup_result: String,
    /// Per-packet output of the current batch, for a split (kept to
    /// avoid allocating).
    class: Vec<u8>,
    /// Per group of [`GROUP`] packets: which have a key, which were
    /// found (kept to avoid allocating).
    masks: Vec<(u64, u64)>,
    /// The fast lookup's group arrays.
    stage: Box<Stage>,
}

/// A group's keys, where they may live and the values found, kept from
/// batch to batch rather than zeroed for each group (3.5 KiB): an entry is
/// read only for the packets whose bit says it was written for this group.
struct Stage {
    keys: [Key; GROUP],
    locs: [Loc; GROUP],
    vals: [u32; GROUP],
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = Args::new(&ctx.args);
    let key = a.read::<Raw>("KEY").map(|r| r.0);
    let capacity: u32 = a.read_or("CAPACITY", 65536u32);
    let anno = a.read::<String>("ANNO");
    let file = a.read::<String>("FILE");
    let imp = a.read::<String>("IMPL");
    a.complete().map_err(|e| e.0)?;
    let mut errs = Vec::new();
    let spec = KeySpec::parse(key.as_deref().unwrap_or("FLOW")).unwrap_or_else(|e| {
        errs.push(e);
        KeySpec::Flow
    });
    let anno = match anno.as_deref().unwrap_or("AGGREGATE") {
        "NONE" => None,
        n => match anno_by_name(n) {
            Some(i) if i.offset + 4 <= linerate_runtime::anno::USER_ANNO_SIZE => Some(i.offset),
            _ => {
                errs.push(format!("ANNO: no 4-byte annotation '{n}'"));
                None
            }
        },
    };
    let capacity = capacity as usize;
    let table = match imp.as_deref().unwrap_or("fast") {
        "fast" if spec.len() <= INLINE_KEY => Table::Inline(Cuckoo::new(capacity)),
        "fast" => Table::Tagged(Cuckoo::new(capacity)),
        "reference" => Table::Reference(HashMap::new(), capacity),
        other => {
            errs.push(format!("IMPL: expected fast or reference, got '{other}'"));
            Table::Reference(HashMap::new(), capacity)
        }
    };
    let mut e = CuckooHash {
        spec,
        anno,
        table,
        noutputs: ctx.noutputs(),
        hits: 0,
        misses: 0,
        drops: 0,
        lookup_result: String::new(),
        class: Vec::new(),
        masks: Vec::new(),
        stage: Box::new(Stage {
            keys: [[0; 5]; GROUP],
            locs: [Loc::default(); GROUP],
            vals: [0; GROUP],
        }),
    };
    if let Some(f) = file {
        if let Err(m) = e.load(&f) {
            errs.push(format!("FILE: {m}"));
        }
    }
    if errs.is_empty() {
        Ok(Box::new(e))
    } else {
        Err(errs)
    }
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::write("insert"),
    HandlerSpec::write("delete"),
    HandlerSpec::read_write("lookup"),
    HandlerSpec::write("load"),
    HandlerSpec::gauge("count"),
    HandlerSpec::read("capacity"),
    HandlerSpec::counter("hits"),
    HandlerSpec::counter("misses"),
    HandlerSpec::counter("drops"),
];

impl CuckooHash {
    /// Split `KEY VALUE` text.
    fn parse_entry(&self, s: &str) -> Result<(Key, u32), String> {
        let (k, v) = s
            .trim_end()
            .rsplit_once(|c: char| c.is_ascii_whitespace())
            .ok_or_else(|| format!("expected 'KEY VALUE', got '{s}'"))?;
        let v = v
            .parse::<u32>()
            .map_err(|_| format!("expected 32-bit unsigned value, got '{v}'"))?;
        Ok((self.spec.parse_key(k)?, v))
    }

    fn load(&mut self, path: &str) -> Result<(), String> {
        let text = read_table(path)?;
        let mut entries = Vec::new();
        for (n, l) in table_lines(&text) {
            entries.push(
                self.parse_entry(l)
                    .map_err(|e| format!("{path}:{n}: {e}"))?,
            );
        }
        for (i, (k, v)) in entries.into_iter().enumerate() {
            self.table
                .insert(k, v)
                .map_err(|e| format!("{path}: {e} after {i} entries"))?;
        }
        Ok(())
    }

    /// Look up the packets of `batch`, annotate hits and leave a group's
    /// masks of packets with a key and of keys found in `self.masks`;
    /// returns the numbers of hits and of packets without a key.
    fn classify(&mut self, batch: &mut Batch) -> (usize, usize) {
        self.masks.clear();
        let (spec, anno, masks, st) = (self.spec, self.anno, &mut self.masks, &mut *self.stage);
        match &self.table {
            Table::Tagged(t) => classify_fast(t, spec, anno, batch, masks, st),
            Table::Inline(t) => classify_fast(t, spec, anno, batch, masks, st),
            Table::Reference(m, _) => classify_reference(m, spec, anno, batch, masks),
        }
    }

    /// Each packet's output (`HIT`, `MISS`, `BAD`) into `self.class`, from
    /// the masks of [`classify`](Self::classify).
    fn classes(&mut self, n: usize) {
        self.class.clear();
        for (g, &(valid, found)) in self.masks.iter().enumerate() {
            for i in 0..(n - g * GROUP).min(GROUP) {
                self.class.push(if found >> i & 1 != 0 {
                    HIT
                } else if valid >> i & 1 != 0 {
                    MISS
                } else {
                    BAD
                });
            }
        }
    }
}

/// [`CuckooHash::classify`] with a fast table: one loop per key reading,
/// so that each reads its key inline.
fn classify_fast<S: Layout>(
    t: &Cuckoo<S>,
    spec: KeySpec,
    anno: Option<usize>,
    batch: &mut Batch,
    masks: &mut Vec<(u64, u64)>,
    st: &mut Stage,
) -> (usize, usize) {
    let ps = batch.as_mut_slice();
    match spec {
        KeySpec::Bytes { off, len } => {
            let last = KeySpec::last_word_mask(len);
            match len.div_ceil(8) {
                1 => lookup(t, spec, anno, ps, masks, st, |p| {
                    KeySpec::read_words::<1>(p, off, last)
                }),
                2 => lookup(t, spec, anno, ps, masks, st, |p| {
                    KeySpec::read_words::<2>(p, off, last)
                }),
                3 => lookup(t, spec, anno, ps, masks, st, |p| {
                    KeySpec::read_words::<3>(p, off, last)
                }),
                4 => lookup(t, spec, anno, ps, masks, st, |p| {
                    KeySpec::read_words::<4>(p, off, last)
                }),
                _ => lookup(t, spec, anno, ps, masks, st, |p| {
                    KeySpec::read_words::<5>(p, off, last)
                }),
            }
        }
        KeySpec::Flow => lookup(t, spec, anno, ps, masks, st, packet_flow_key),
        _ => lookup(t, spec, anno, ps, masks, st, |p| spec.extract(p)),
    }
}

/// The fast table's lookup of `ps`, [`GROUP`] packets at a time in
/// stages: `read` each packet's key (inline, calling nothing), hash it
/// and prefetch both candidate buckets' tags; then the packets `read`
/// left without a key through [`KeySpec::extract`] (out of line: short
/// packets, keys the fast reading does not take); then compare tags,
/// prefetch the matching entries and compare keys
/// ([`Cuckoo::resolve`]); then annotate the hits. Pushes each group's
/// masks (packets with a key, keys found); returns hits and packets
/// without a key.
#[inline(always)]
fn lookup<S: Layout>(
    t: &Cuckoo<S>,
    spec: KeySpec,
    anno: Option<usize>,
    ps: &mut [Packet],
    masks: &mut Vec<(u64, u64)>,
    st: &mut Stage,
    read: impl Fn(&Packet) -> Option<Key>,
) -> (usize, usize) {
    let (mut hits, mut bad) = (0, 0);
    let Stage { keys, locs, vals } = st;
    for group in ps.chunks_mut(GROUP) {
        let mut valid = 0u64;
        let n = group.len();
        for (i, p) in group.iter().enumerate() {
            if let Some(k) = read(p) {
                locs[i] = t.locate(&k);
                keys[i] = k;
                valid |= 1 << i;
            }
        }
        let mut rest = !valid & (u64::MAX >> (64 - n));
        while rest != 0 {
            let i = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            if let Some(k) = extract_slow(spec, &group[i]) {
                locs[i] = t.locate(&k);
                keys[i] = k;
                valid |= 1 << i;
            }
        }
        let found = t.resolve(&keys[..n], &locs[..n], valid, &mut vals[..n]);
        if let Some(o) = anno {
            let mut f = found;
            while f != 0 {
                let i = f.trailing_zeros() as usize;
                f &= f - 1;
                group[i].anno_mut().set_u32(o, vals[i]);
            }
        }
        hits += found.count_ones() as usize;
        bad += n - valid.count_ones() as usize;
        masks.push((valid, found));
    }
    (hits, bad)
}

/// [`KeySpec::extract`] out of line, for the packets the inline reading
/// did not take.
#[inline(never)]
fn extract_slow(spec: KeySpec, p: &Packet) -> Option<Key> {
    spec.extract(p)
}

/// The reference: one packet at a time through a `HashMap`, the same
/// masks as [`lookup`].
fn classify_reference(
    m: &HashMap<Key, u32>,
    spec: KeySpec,
    anno: Option<usize>,
    batch: &mut Batch,
    masks: &mut Vec<(u64, u64)>,
) -> (usize, usize) {
    let (mut hits, mut bad) = (0, 0);
    for group in batch.as_mut_slice().chunks_mut(GROUP) {
        let (mut valid, mut found) = (0u64, 0u64);
        for (i, p) in group.iter_mut().enumerate() {
            let Some(k) = spec.extract(p) else {
                bad += 1;
                continue;
            };
            valid |= 1 << i;
            if let Some(&v) = m.get(&k) {
                if let Some(o) = anno {
                    p.anno_mut().set_u32(o, v);
                }
                hits += 1;
                found |= 1 << i;
            }
        }
        masks.push((valid, found));
    }
    (hits, bad)
}

impl Element for CuckooHash {
    fn action(&mut self, mut batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        let (hits, bad) = self.classify(&mut batch);
        self.hits += hits as u64;
        self.drops += bad as u64;
        self.misses += (batch.len() - hits - bad) as u64;
        if hits == batch.len() {
            return batch;
        }
        self.classes(batch.len());
        // Class = output: HIT 0, MISS 1, BAD 2 (released without output 2).
        let mut outs = [Batch::new(), Batch::new(), Batch::new()];
        batch.split_into(&self.class, &mut outs);
        let [keep, miss, err] = outs;
        ctx.push(1, miss);
        if self.noutputs > 2 {
            ctx.push(2, err);
        }
        keep
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "lookup" => self.lookup_result.clone(),
            "count" => self.table.len().to_string(),
            "capacity" => self.table.capacity().to_string(),
            "hits" => self.hits.to_string(),
            "misses" => self.misses.to_string(),
            "drops" => self.drops.to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "insert" => self
                .parse_entry(value)
                .and_then(|(k, v)| self.table.insert(k, v)),
            "delete" => self.spec.parse_key(value).and_then(|k| {
                self.table
                    .remove(&k)
                    .map(drop)
                    .ok_or_else(|| "no such key".to_string())
            }),
            "lookup" => self.spec.parse_key(value).map(|k| {
                self.lookup_result = match self.table.get(&k) {
                    Some(v) => v.to_string(),
                    None => "-1".into(),
                };
            }),
            "load" => self.load(value.trim()),
            _ => return None,
        })
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![("no key", self.drops)]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

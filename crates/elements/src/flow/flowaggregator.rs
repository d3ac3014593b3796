//! Merges microflow records into flow records (the TurboFlow aggregator).
//!
//! # Synopsis
//! `FlowAggregator([KEYWORDS])`
//!
//! # Ports
//! One push input: microflow records from `MicroflowTable` (packets whose
//! data is one or more `Microflow`s back to back; a packet of another
//! length, or a record without the magic, is counted as `bad` and dropped;
//! the counters of records from elsewhere, a crafted file say, add up
//! saturating at 2^64 - 1).
//! One push output: flow records, one per packet (the data is one
//! `FlowRecord` in its in-memory layout, the contract with the exporters
//! `FlowCSV`, `FlowJSON`, `IPFIXExport`, `NetFlowV9Export`; the packet's
//! timestamp is the flow's last packet).
//!
//! # Arguments
//! - `ACTIVE` (seconds, default 300; 0 = off): a flow is exported when it
//!   has lasted this long (reason active timeout); later packets start a
//!   new record.
//! - `IDLE` (seconds, default 60; 0 = off): a flow is exported when no
//!   packet was seen for longer than this (reason idle timeout).
//! - `TCPEND` (boolean, default true): end a TCP flow on RST, or on FIN
//!   (one-way records) or FIN in both directions (biflows) (reason end of
//!   flow).
//! - `BIFLOW` (boolean, default false): RFC 5103 bidirectional records: the
//!   reverse 5-tuple joins the record of the direction seen first, in `rev`.
//! - `VLAN` (boolean, default false): the VLAN id is part of the flow key
//!   (and of the record); otherwise records carry VLAN 0.
//! - `TIME` (`packet`, `wall` or `auto`, default `auto`): the clock of the
//!   timeouts: the largest packet time seen (files), or the system clock
//!   (live; checked per batch and every second). `auto` picks wall time if
//!   the first microflow's timestamp is within 60 s of the system clock.
//! - `CAPACITY` (integer, default 65536): initial flow table size; it grows
//!   (doubling) beyond half load.
//! - `IMPL` (`fast` or `reference`, default `fast`).
//!
//! A flow's times come from its microflows, which reach the aggregator when
//! the fast path evicts them, out of time order. Two rules make the records
//! exact and independent of when the fast path evicts (table size, sweep
//! position, replicas' batch boundaries):
//! - Expiry waits for `MicroflowTable`'s watermark: a flow is timed out
//!   only when both the clock and the watermark have passed its deadline,
//!   so no microflow of it can still be in the fast path.
//! - A microflow that starts after its flow's deadline starts a new record
//!   (the old one is exported with its timeout reason) whenever it
//!   arrives. If the watermark has not passed the deadline yet, a microflow
//!   still in the fast path (the other direction of a biflow, another VLAN
//!   without `VLAN`) might bridge the gap, so the microflow waits; waiting
//!   microflows are merged in the order of their first packets once the
//!   watermark passes, and at the end of the run.
//!
//! A microflow spans no gap: keep the fast path's idle timeout below `IDLE`
//! here (and its active timeout well below `ACTIVE`), or gaps inside its
//! microflows cannot end a flow; without fast-path timeouts a microflow can
//! also stay in a slot no other flow hits, holding the watermark, and so
//! this table's timeouts, back until it leaves. Without watermarks (records from another
//! source) expiry follows the clock alone.
//!
//! # Handlers
//! - `microflows` (read): microflow records received.
//! - `flows` (read): flows created; `active` (read): flows in the table.
//! - `records` (read): flow records emitted; `idle_timeouts`,
//!   `active_timeouts`, `end_of_flow`, `forced_end` (read): by reason.
//! - `ignored` (read): packets the fast path ignored
//!   (ignoredPacketTotalCount), carried in-band by the microflow records;
//!   exporters read this handler.
//! - `packets` (read): packets in the microflows received.
//! - `bytes` (read): their bytes (IP lengths): what the records exported
//!   add up to (a collector's octet total).
//! - `bad` (read): input packets of the wrong length and records without
//!   the magic.
//! - `flush` (write): export every flow (forced end) at the next batch or
//!   timer tick (1 s).
//!
//! # Example
//! ```click
//! FromDump(trace.pcap, STOP true) -> CheckIPHeader(14) -> MicroflowTable
//!   -> FlowAggregator(ACTIVE 300, IDLE 60, BIFLOW true) -> FlowCSV(flows.csv);
//! ```
//!
//! # Implementation
//! Open addressing with linear probing over one array of 64-bit entries
//! (32-bit tag and slab index; 0 = empty), so a probe reads 8 bytes of one
//! cache line (two parallel arrays of tags and indices cost a second line,
//! and a second miss, per microflow); the tag is the hash's low 32 bits,
//! so an entry's home slot is its tag's low bits and the backward shift of
//! a deletion reads nothing but the index (a separate array of hashes cost
//! a miss per shifted entry; a flow keeps its hash in its key line).
//! Flows live in a slab (stable indices, free list) so that deletions
//! (backward shift) move only index entries. The index and the slab are
//! fixed-size zeroed arrays that start at a 2 MiB boundary and ask for
//! 2 MiB pages (a random access to 20 MB of flows otherwise costs a
//! longer page walk as well as the cache miss); growing makes a new index
//! and moves the slab's pages into a longer one (no copy). The index is
//! populated when made (it is read at random); the slab's pages are mapped
//! as flows are first written to them (it is handed out from its start),
//! so no run zeroes slab beyond the most flows it held: populating each
//! replica's 6 MB slab took the main thread 1-16 ms before the replicas
//! could start, and a doubling's 12 MB 15 ms (session 16). As `Vec`s they
//! started wherever the allocator put them: a 2 MiB index inside the heap
//! got no huge page at all and a grown slab only part (session 9: 6-9
//! cycles a microflow fewer, 129-145 instead of 138-156 with 100,000
//! flows; instructions unchanged). Under this VM a
//! microflow still takes about 0.5 TLB misses that need a page walk (the
//! host maps guest memory with small pages). Tried and dropped (session
//! 9): one-way flows in 128 bytes (key and forward counters; a biflow's
//! reverse counters in a second block or their own array): 24-33 more
//! instructions a microflow (the merge's reverse-counter pointer), cycles
//! the same or, for biflows, 9 % more; growing the index at 3/4 load
//! instead of 1/2: 5 % more cycles (longer probes). With `BIFLOW` the hash is
//! symmetric (computed over the endpoints in canonical order), so one
//! probe sequence finds the forward or the reverse key; keys compare as
//! 16-byte words. Timeouts are kept
//! in a binary min-heap of (deadline, flow id) with lazy updates: a flow's
//! entry is re-inserted with its current deadline only when the old one
//! comes due, so a microflow costs a heap peek, not a scan. Each batch is
//! processed in two passes: check and hash every record, then merge in
//! order as a software pipeline: while record k merges, the home tag of
//! record k + 16 is prefetched and record k + 8's tags are probed, its
//! flow's key and counter lines (and the reverse direction's for biflows;
//! one-way flows never read it) prefetched. The record's packet is not
//! prefetched: it was just written upstream and is in cache, and the two
//! prefetches a record cost 15 instructions and miss buffers that the
//! flow lines wait for (session 6, feat/flowagg2: 363 instead of 378
//! instructions a microflow). The probe's
//! candidate is a hint that the merge checks (merging may insert and
//! remove flows) before probing again. Records are read in place from the
//! packet data (aligned behind its headroom; copied out only if not):
//! copying each record out, as before, stalled every read of it on
//! store-to-load forwarding. With 100,000 flows and no timeouts a
//! microflow costs three cache lines (index, key, counters), 379
//! instructions and 141 cycles (495 and 194 before; `linerate bench
//! elements FlowAggregator`: 47 ns, 21 M microflows/s, against 62 ns,
//! session 6); with 1,000 flows, all in cache, 92 cycles. After a merge
//! the deadline is recomputed only if the flow's first packet moved
//! earlier: merging moves the idle deadline only later. At the end of the
//! run (`Element::flush`) every flow is exported in creation order
//! (forced end), 256 per call; creation order is not slab order (freed
//! entries are reused), so the flush prefetches each flow's lines 16 flows
//! ahead and its index line 8 ahead (all 297,912 flows of the inet trace
//! held to the end: 246.8 -> 226.0 ms, session 25). Without `BIFLOW` a
//! flow's reverse line is never read or written: not by its record (whose
//! reverse direction is zero), not when the flow is inserted (only the key
//! and forward lines are stored), not by expiry or the flush (which build
//! the record in place instead of copying the 192-byte flow). It had been
//! written whole on insert and read for every record: a third line of the
//! slab a flow, from memory (`nfs/flowmon.click` on the inet trace 297 ->
//! 281 ms, session 25).
//! Waiting microflows sit in one vector with the earliest deadline among
//! their flows, so the per-microflow cost is one comparison; each flow
//! counts its waiting microflows so that later ones queue behind them.
//! When the watermark passes that deadline, the microflows whose flows are
//! due are merged in order of (first packet, arrival), sorting 12-byte
//! keys rather than records. On the 2 M-packet internet-like trace the two
//! rules and the fast path's two-direction TCP eviction cost 6 % more
//! instructions in `nfs/flowmon.click` (11 % more microflows), for records
//! that no longer depend on the fast path.
//!
//! `IMPL reference` keeps a `HashMap` of flows and finds expired flows by
//! a full scan per microflow (sorted by deadline and flow id); its records
//! and handler values are identical.
//!
//! Not in Click.

use super::microflowtable::{hash_key, Microflow};
use super::record::{end_reason, record_at, record_in_mut, Direction, FlowRecord};
use crate::hint::prefetch;
use crate::tables::huge::{Huge, MinHeap, Zeroed};
use linerate_runtime::flow::FlowKey;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, MAX_BATCH};
use std::any::Any;
use std::cmp::Reverse;
use std::collections::HashMap;

/// The `FlowAggregator` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "FlowAggregator",
    port_count: "1/1",
    processing: "h/h",
    doc: element_doc!("flow/flowaggregator"),
    make,
};

const TICK_NS: u64 = 1_000_000_000;
const FLUSH_CHUNK: usize = 256;
/// How many flows ahead the end-of-run flush prefetches.
const FLUSH_AHEAD: usize = 16;

/// No slab entry (a [`Fast::probe`] that found no candidate).
const NO_HINT: u32 = u32::MAX;
/// How many microflows ahead of the one being merged `push` probes the
/// index and prefetches the flow.
const AHEAD: usize = 8;

/// The widest span of flow ids [`newest_first`] places rather than sorts
/// (a 64 MiB table, mapped only where written).
const PLACE_SPAN: u64 = 1 << 24;

/// The slots of the live flows of slab `flows` (those whose id is not
/// `u64::MAX`, `live` of them, every id below `next_id`), ordered by id
/// from the largest down (the flush pops the oldest flow from the end).
/// Flow ids are handed out in sequence, so the live ones span a small
/// multiple of their number (69,308 flows left over 297,863 ids at the end
/// of the internet-like trace): each flow whose id is within 32 times their
/// number of the newest (and within [`PLACE_SPAN`]) goes straight to its
/// place in a table that long, read back in order (8.3 M instructions
/// fewer than sorting those 69,308, session 33); older ones are sorted
/// after them. The table lies in 2 MiB pages mapped as it is written, and
/// the slab is read once: a table filled with a marker by `memset` and
/// vectors grown by doubling took 740 of a run's 1,467 page faults
/// (session 36).
fn newest_first(flows: &[Flow], live: usize, next_id: u64) -> Vec<u32> {
    let span = PLACE_SPAN.min(32 * live as u64).min(next_id);
    let newest = next_id.wrapping_sub(1);
    // Slot + 1 at `newest - id` (0: no flow).
    let mut place = Huge::<u32>::lazy(span as usize);
    let mut end = 0;
    let mut older = Vec::new();
    for (s, f) in flows.iter().enumerate() {
        if f.id == u64::MAX {
            continue;
        }
        match newest.checked_sub(f.id).filter(|&o| o < span) {
            Some(o) => {
                place[o as usize] = s as u32 + 1;
                end = end.max(o as usize + 1);
            }
            None => older.push((f.id, s as u32)),
        }
    }
    older.sort_unstable_by_key(|&(id, _)| Reverse(id));
    let mut order = Vec::with_capacity(live);
    order.extend(place[..end].iter().filter(|&&x| x != 0).map(|&x| x - 1));
    order.extend(older.iter().map(|&(_, s)| s));
    order
}

/// Ports, protocol and version of `k` in one word (`swap`: ports swapped).
#[inline]
fn tail(k: &FlowKey, swap: bool) -> u64 {
    let (a, b) = if swap {
        (k.dport, k.sport)
    } else {
        (k.sport, k.dport)
    };
    a as u64 | (b as u64) << 16 | (k.proto as u64) << 32 | (k.version as u64) << 40
}

/// `a == *b`, as three word compares without a branch per field.
#[inline]
fn same_key(a: &FlowKey, b: &FlowKey) -> bool {
    let x = u128::from_ne_bytes(a.src) ^ u128::from_ne_bytes(b.src);
    let y = u128::from_ne_bytes(a.dst) ^ u128::from_ne_bytes(b.dst);
    (x | y) == 0 && tail(a, false) == tail(b, false)
}

/// `a == b.reversed()`, without building the reversed key.
#[inline]
fn same_key_reversed(a: &FlowKey, b: &FlowKey) -> bool {
    let x = u128::from_ne_bytes(a.src) ^ u128::from_ne_bytes(b.dst);
    let y = u128::from_ne_bytes(a.dst) ^ u128::from_ne_bytes(b.src);
    (x | y) == 0 && tail(a, false) == tail(b, true)
}

/// Push `b` on `port` in batches of at most `MAX_BATCH` packets.
pub(crate) fn push_chunks(ctx: &mut Ctx<'_>, port: usize, mut b: Batch) {
    while b.len() > MAX_BATCH {
        let rest = b.split_off_tail(MAX_BATCH);
        ctx.push(port, b);
        b = rest;
    }
    ctx.push(port, b);
}

trait SplitTail {
    fn split_off_tail(&mut self, keep: usize) -> Batch;
}

impl SplitTail for Batch {
    /// Keep the first `keep` packets; return the rest.
    fn split_off_tail(&mut self, keep: usize) -> Batch {
        let mut rest = Batch::new();
        rest.vec_mut().extend(self.vec_mut().drain(keep..));
        rest
    }
}

/// Merge a microflow's direction into a flow's.
pub(crate) fn merge(a: &mut Direction, m: &Direction) {
    if a.packets == 0 {
        *a = *m;
        return;
    }
    let gap = m.first_ns.saturating_sub(a.last_ns);
    let mut min = if a.packets >= 2 {
        a.min_iat_ns.min(gap)
    } else {
        gap
    };
    if m.packets >= 2 {
        min = min.min(m.min_iat_ns);
    }
    a.min_iat_ns = min;
    a.max_iat_ns = a.max_iat_ns.max(gap).max(m.max_iat_ns);
    if a.packets == 1 {
        a.second_len = m.first_len;
    }
    // Saturating: a record that reached the aggregator by another path
    // than a MicroflowTable (`FromDump -> FlowAggregator`) is untrusted.
    a.packets = a.packets.saturating_add(m.packets);
    a.bytes = a.bytes.saturating_add(m.bytes);
    a.first_ns = a.first_ns.min(m.first_ns);
    a.last_ns = a.last_ns.max(m.last_ns);
    a.min_len = a.min_len.min(m.min_len);
    a.max_len = a.max_len.max(m.max_len);
    a.tcp_flags |= m.tcp_flags;
    a.min_ttl = a.min_ttl.min(m.min_ttl);
    a.max_ttl = a.max_ttl.max(m.max_ttl);
}

/// One flow in the table (each direction's counters on their own line).
#[repr(C, align(64))]
#[derive(Clone, Copy, Default)]
struct Flow {
    key: FlowKey,
    vlan: u16,
    /// FIN seen: bit 0 forward, bit 1 reverse.
    fin: u8,
    /// Microflows of this flow waiting in `deferred`.
    deferred: u32,
    id: u64,
    /// The key's table hash (where [`Fast::remove`] starts looking).
    hash: u64,
    fwd: Direction,
    rev: Direction,
}

// SAFETY: integers and arrays of them.
unsafe impl Zeroed for Flow {}

/// A flow's deadline in the fast table's heap: ordered by time, then flow
/// id (unique), so the order is total. An entry whose flow has left or
/// whose deadline has moved is dropped or pushed again when it comes due.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Due {
    t: u64,
    id: u64,
    slot: u32,
}

// SAFETY: integers.
unsafe impl Zeroed for Due {}

impl Flow {
    /// A new flow keyed by microflow `m`'s key (its direction forward).
    fn new(m: &Microflow, vlan: u16, id: u64) -> Flow {
        Flow {
            key: m.key,
            vlan,
            id,
            ..Flow::default()
        }
    }
}

/// Microflows waiting for the watermark, in arrival order, and the
/// earliest deadline among their flows.
struct Waiting {
    items: Vec<(Microflow, u64)>,
    due: u64,
}

impl Waiting {
    /// Queue microflow `m` (hash `h`) of flow `f`, due at `dl`.
    fn push(&mut self, f: &mut Flow, dl: u64, m: &Microflow, h: u64) {
        f.deferred += 1;
        self.due = self.due.min(dl);
        self.items.push((*m, h));
    }
}

/// [`Config::gate`]'s verdict.
/// (Each with the flow's deadline, or its end reason.)
enum Gate {
    Merge(u64),
    Split(u8),
    Defer(u64),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum TimeMode {
    Packet,
    Wall,
    Auto,
}

#[derive(Clone, Copy)]
struct Config {
    active: u64,
    idle: u64,
    tcpend: bool,
    biflow: bool,
    vlan: bool,
}

impl Config {
    /// When `f` expires, and why (`u64::MAX`: never).
    fn deadline(&self, f: &Flow) -> (u64, u8) {
        // One-way flows never touch `rev` (all zero): not reading it saves
        // a cache line per microflow.
        let (first, last) = if !self.biflow {
            (f.fwd.first_ns, f.fwd.last_ns)
        } else if f.rev.packets > 0 {
            (
                f.fwd.first_ns.min(f.rev.first_ns),
                f.fwd.last_ns.max(f.rev.last_ns),
            )
        } else {
            (f.fwd.first_ns, f.fwd.last_ns.max(f.rev.last_ns))
        };
        let idle = last.saturating_add(self.idle).saturating_add(1);
        let active = first.saturating_add(self.active);
        let idle = if self.idle == 0 { u64::MAX } else { idle };
        let active = if self.active == 0 { u64::MAX } else { active };
        if idle <= active {
            (idle, end_reason::IDLE_TIMEOUT)
        } else {
            (active, end_reason::ACTIVE_TIMEOUT)
        }
    }

    /// What to do with microflow `m` of the flow `f` in the table, given
    /// the watermark `w`. If `f` was due before `m` began, `m` starts a new
    /// record (whenever the expiry itself runs) unless a microflow still in
    /// the fast path (the other direction, another VLAN) may bridge the
    /// gap: then `m` waits until the watermark passes the deadline. A flow's
    /// microflows wait in order.
    fn gate(&self, f: &Flow, m: &Microflow, w: Option<u64>) -> Gate {
        let (dl, reason) = if self.timeouts() {
            self.deadline(f)
        } else {
            (u64::MAX, 0)
        };
        if f.deferred > 0 || (dl <= m.dir.first_ns && w.is_some_and(|w| dl > w)) {
            Gate::Defer(dl)
        } else if dl > m.dir.first_ns {
            Gate::Merge(dl)
        } else {
            Gate::Split(reason)
        }
    }

    fn timeouts(&self) -> bool {
        self.active != 0 || self.idle != 0
    }

    /// Table hash of a key: symmetric for biflows.
    fn hash(&self, k: &FlowKey, vlan: u16) -> u64 {
        if self.biflow && (k.dst, k.dport) < (k.src, k.sport) {
            hash_key(&k.reversed(), vlan)
        } else {
            hash_key(k, vlan)
        }
    }

    /// Write the record of `f` into `r`; a biflow's forward direction is
    /// the one whose first packet came first (its microflows may arrive in
    /// either order). A one-way flow's reverse line is never read (nor
    /// written: see [`Fast::insert`]), here either: it would be a cache
    /// miss a record. Every field is written, `r` may hold anything.
    #[inline(always)]
    fn write_record(&self, f: &Flow, reason: u8, r: &mut FlowRecord) {
        let swap = self.biflow && f.rev.packets > 0 && f.rev.first_ns < f.fwd.first_ns;
        (r.magic, r.vlan, r.end_reason) = (FlowRecord::MAGIC, f.vlan, reason);
        (r.biflow, r._pad) = (self.biflow as u8, [0; 2]);
        // Field by field: a tuple of the three was built on the stack and
        // then copied.
        if swap {
            r.key = f.key.reversed();
            r.fwd = f.rev;
            r.rev = f.fwd;
        } else {
            r.key = f.key;
            r.fwd = f.fwd;
            r.rev = if self.biflow {
                f.rev
            } else {
                Direction::default()
            };
        }
    }

    /// Write the record of `f` into packet data `b` (a record's length):
    /// in place where `b` is aligned for a record, as a packet's data is;
    /// else built aside and copied.
    #[inline(always)]
    fn write_record_bytes(&self, f: &Flow, reason: u8, b: &mut [u8]) {
        match record_in_mut::<FlowRecord>(b) {
            Some(r) => self.write_record(f, reason, r),
            None => {
                let mut r = FlowRecord::new();
                self.write_record(f, reason, &mut r);
                b.copy_from_slice(r.as_bytes());
            }
        }
    }

    /// Whether `m` alone ends a flow it starts: [`Config::apply`]'s answer
    /// for a new flow's first microflow, without the flow (a RST, or a FIN
    /// when each direction is its own flow).
    #[inline(always)]
    fn ends_alone(&self, m: &Microflow) -> bool {
        let flags = m.dir.tcp_flags;
        self.tcpend && m.key.proto == 6 && (flags & 0x04 != 0 || self.fins_end(flags & 0x01))
    }

    /// Whether FIN bits `fin` (bit 0 forward, bit 1 reverse) end a TCP
    /// flow: both sides' for a biflow, either for a one-way flow.
    #[inline(always)]
    fn fins_end(&self, fin: u8) -> bool {
        if self.biflow {
            fin == 3
        } else {
            fin != 0
        }
    }

    /// Merge `m` into `f` (reverse direction if `rev`); true if the flow
    /// ended (TCP end of flow).
    #[inline(always)]
    fn apply(&self, f: &mut Flow, m: &Microflow, rev: bool) -> bool {
        merge(if rev { &mut f.rev } else { &mut f.fwd }, &m.dir);
        if !self.tcpend || m.key.proto != 6 {
            return false;
        }
        if m.dir.tcp_flags & 0x04 != 0 {
            return true;
        }
        // FIN or not is chance microflow by microflow: a shift, not a test.
        f.fin |= (m.dir.tcp_flags & 0x01) << rev as u8;
        self.fins_end(f.fin)
    }
}

#[derive(Default, Clone, Copy)]
struct Stats {
    microflows: u64,
    packets: u64,
    bytes: u64,
    flows: u64,
    records: u64,
    by_reason: [u64; 6],
    ignored: u64,
    bad: u64,
    now: u64,
}

/// The fast table.
struct Fast {
    /// Open-addressing index: [`entry`]`(hash, slab index)` per slot, 0 =
    /// empty.
    index: Huge<u64>,
    mask: usize,
    len: usize,
    /// The slab: room for as many flows as the index may hold; the first
    /// `used` have been handed out.
    flows: Huge<Flow>,
    used: usize,
    free: Vec<u32>,
    heap: MinHeap<Due>,
    /// `push`'s records of a batch: (hash, packet's index in the batch,
    /// record's index in the packet).
    scratch: Vec<(u64, u32, u32)>,
    /// The slots of the flows left to flush, last to flush first.
    flush_order: Vec<u32>,
}

struct Reference {
    flows: HashMap<(FlowKey, u16), Flow>,
    flush_order: Vec<(FlowKey, u16)>,
}

impl Reference {
    /// The table key of `m`'s flow, and whether `m` is its reverse
    /// direction; `None` if the flow is not in the table.
    fn find(&self, cfg: &Config, m: &Microflow, vlan: u16) -> Option<((FlowKey, u16), bool)> {
        let fk = (m.key, vlan);
        let rk = (m.key.reversed(), vlan);
        if self.flows.contains_key(&fk) {
            Some((fk, false))
        } else if cfg.biflow && self.flows.contains_key(&rk) {
            Some((rk, true))
        } else {
            None
        }
    }
}

enum Table {
    Fast(Box<Fast>),
    Reference(Reference),
}

struct FlowAggregator {
    cfg: Config,
    time: TimeMode,
    table: Table,
    stats: Stats,
    next_id: u64,
    timer_armed: bool,
    flush_requested: bool,
    flushing: bool,
    /// The upstream `MicroflowTable`'s watermark: every microflow whose first
    /// packet is before it has arrived (`None` without one).
    watermark: Option<u64>,
    /// Microflows waiting for the watermark ([`Config::gate`]).
    waiting: Waiting,
    /// Scratch space of `replay` (reused).
    replay_items: Vec<(Microflow, u64)>,
    replay_order: Vec<(u64, u32)>,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    use linerate_args::{Args, Seconds, Word};
    let mut a = Args::new(&ctx.args);
    let active: Seconds = a.read_or(
        "ACTIVE",
        Seconds {
            nanos: 300_000_000_000,
        },
    );
    let idle: Seconds = a.read_or(
        "IDLE",
        Seconds {
            nanos: 60_000_000_000,
        },
    );
    let tcpend = a.read_or("TCPEND", true);
    let biflow = a.read_or("BIFLOW", false);
    let vlan = a.read_or("VLAN", false);
    let time = a.read_or("TIME", Word("auto".into())).0;
    let capacity: usize = a.read_or("CAPACITY", 65536usize);
    let imp = a.read_or("IMPL", Word("fast".into())).0;
    a.complete().map_err(|e| e.0)?;
    let time = match time.as_str() {
        "packet" => TimeMode::Packet,
        "wall" => TimeMode::Wall,
        "auto" => TimeMode::Auto,
        _ => return Err(vec!["TIME must be 'packet', 'wall' or 'auto'".into()]),
    };
    let cap = capacity.clamp(16, 1 << 30).next_power_of_two();
    let table = match imp.as_str() {
        "fast" => Table::Fast(Box::new(Fast {
            index: Huge::new(cap),
            mask: cap - 1,
            len: 0,
            flows: Huge::lazy(cap / 2),
            used: 0,
            free: Vec::new(),
            heap: MinHeap::new(),
            scratch: Vec::with_capacity(MAX_BATCH),
            flush_order: Vec::new(),
        })),
        "reference" => Table::Reference(Reference {
            flows: HashMap::new(),
            flush_order: Vec::new(),
        }),
        _ => return Err(vec!["IMPL must be 'fast' or 'reference'".into()]),
    };
    Ok(Box::new(FlowAggregator {
        cfg: Config {
            active: active.nanos,
            idle: idle.nanos,
            tcpend,
            biflow,
            vlan,
        },
        time,
        table,
        stats: Stats::default(),
        next_id: 0,
        timer_armed: false,
        flush_requested: false,
        flushing: false,
        watermark: None,
        waiting: Waiting {
            items: Vec::new(),
            due: u64::MAX,
        },
        replay_items: Vec::new(),
        replay_order: Vec::new(),
    }))
}

/// The index entry of slab entry `s`, whose key hashes to `h`: the tag
/// (the hash's low 32 bits, so the entry's home slot is the tag's low bits
/// and the backward shift of [`Fast::remove`] needs no other table) over
/// `s + 1` (never 0, the empty slot).
#[inline]
fn entry(h: u64, s: u32) -> u64 {
    (h as u32 as u64) << 32 | (s as u64 + 1)
}

/// The tag of index entry `e`.
#[inline]
fn tag(e: u64) -> u32 {
    (e >> 32) as u32
}

/// The slab entry of index entry `e` (`u32::MAX` for an empty slot).
#[inline]
fn slab(e: u64) -> u32 {
    (e as u32).wrapping_sub(1)
}

impl Fast {
    /// Whether slab entry `s` is the live flow of `k` (or of its reverse for
    /// biflows): `Some(reverse)`. Keys are unique in the table (a biflow's
    /// key or its reverse, never both), so a match is the one `find` gives.
    #[inline]
    fn is_flow_of(&self, s: u32, biflow: bool, k: &FlowKey, vlan: u16) -> Option<bool> {
        let f = self.flows[..self.used].get(s as usize)?;
        if f.id == u64::MAX || f.vlan != vlan {
            return None;
        }
        if same_key(&f.key, k) {
            Some(false)
        } else if biflow && same_key_reversed(&f.key, k) {
            Some(true)
        } else {
            None
        }
    }

    /// Find `k` (or its reverse for biflows): (slab index, reverse).
    #[inline]
    fn find(&self, cfg: &Config, h: u64, k: &FlowKey, vlan: u16) -> Option<(u32, bool)> {
        let mut i = h as usize & self.mask;
        loop {
            let e = self.index[i];
            if e == 0 {
                return None;
            }
            if tag(e) == h as u32 {
                let s = slab(e);
                if let Some(rev) = self.is_flow_of(s, cfg.biflow, k, vlan) {
                    return Some((s, rev));
                }
            }
            i = (i + 1) & self.mask;
        }
    }

    /// [`Fast::find`], trying slab entry `hint` (from [`Fast::probe`]) first.
    #[inline]
    fn find_hinted(
        &self,
        cfg: &Config,
        hint: u32,
        h: u64,
        k: &FlowKey,
        vlan: u16,
    ) -> Option<(u32, bool)> {
        match self.is_flow_of(hint, cfg.biflow, k, vlan) {
            Some(rev) => Some((hint, rev)),
            None => self.find(cfg, h, k, vlan),
        }
    }

    /// The first slab entry whose tag matches `h`'s (`NO_HINT` if none),
    /// with its key and counter lines prefetched: a hint for
    /// [`Fast::find_hinted`], which checks it.
    #[inline]
    fn probe(&self, h: u64, biflow: bool) -> u32 {
        let mut i = h as usize & self.mask;
        loop {
            let e = self.index[i];
            if e == 0 {
                return NO_HINT;
            }
            if tag(e) == h as u32 {
                let s = slab(e);
                // A reference reads nothing: only the prefetches touch memory.
                if let Some(f) = self.flows.get(s as usize) {
                    prefetch(&f.key);
                    prefetch(&f.fwd);
                    if biflow {
                        prefetch(&f.rev);
                    }
                }
                return s;
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Put flow `f` (hash `h`) in the table. A one-way flow (`biflow`
    /// false) is written without its reverse line, which no one-way flow
    /// reads: a store to a line of the slab not otherwise touched.
    fn insert(&mut self, h: u64, mut f: Flow, biflow: bool) -> u32 {
        if (self.len + 1) * 2 > self.index.len() {
            self.grow();
        }
        f.hash = h;
        let s = match self.free.pop() {
            Some(s) => s,
            None => {
                self.used += 1;
                (self.used - 1) as u32
            }
        };
        let slot = &mut self.flows[s as usize];
        if biflow {
            *slot = f;
        } else {
            // Every field but `rev`, named so that a new field cannot be
            // left out.
            let Flow {
                key,
                vlan,
                fin,
                deferred,
                id,
                hash,
                fwd,
                rev: _,
            } = f;
            (slot.key, slot.vlan, slot.fin, slot.deferred) = (key, vlan, fin, deferred);
            (slot.id, slot.hash, slot.fwd) = (id, hash, fwd);
        }
        self.place(entry(h, s));
        self.len += 1;
        s
    }

    /// Put index entry `e` in the first free slot from its home on.
    fn place(&mut self, e: u64) {
        let mut i = tag(e) as usize & self.mask;
        while self.index[i] != 0 {
            i = (i + 1) & self.mask;
        }
        self.index[i] = e;
    }

    /// Double the index and re-place every entry by its tag (the index
    /// stays within 2^32 slots, where the tag holds the home: its flows
    /// would take hundreds of GiB); make room for as many flows as the
    /// index may hold (the slab's pages move, see [`Huge::grow`]).
    fn grow(&mut self) {
        let n = self.index.len() * 2;
        let live: Vec<u64> = self.index.iter().copied().filter(|&e| e != 0).collect();
        self.flows.grow(n / 2);
        self.index = Huge::new(n);
        self.mask = n - 1;
        for e in live {
            self.place(e);
        }
    }

    /// Remove slab entry `s` from the index (backward shift) and free it.
    /// Homes come from the entries' tags: reading each shifted entry's
    /// flow for its hash would cost a cache miss per entry.
    fn remove(&mut self, s: u32) {
        let mut i = self.flows[s as usize].hash as usize & self.mask;
        while slab(self.index[i]) != s {
            i = (i + 1) & self.mask;
        }
        let mut hole = i;
        let mut j = i;
        loop {
            j = (j + 1) & self.mask;
            if self.index[j] == 0 {
                break;
            }
            let home = tag(self.index[j]) as usize & self.mask;
            // j may move back to the hole unless its home lies in (hole, j].
            if (j.wrapping_sub(home) & self.mask) >= (j.wrapping_sub(hole) & self.mask) {
                self.index[hole] = self.index[j];
                hole = j;
            }
        }
        self.index[hole] = 0;
        self.flows[s as usize].id = u64::MAX;
        self.free.push(s);
        self.len -= 1;
    }
}

impl FlowAggregator {
    /// Export and remove every flow whose deadline is at or before `now`,
    /// in (deadline, flow id) order.
    fn expire(&mut self, now: u64, out: &mut Batch) {
        if !self.cfg.timeouts() {
            return;
        }
        let cfg = self.cfg;
        match &mut self.table {
            Table::Fast(f) => {
                while let Some(&Due { t, id, slot: s }) = f.heap.peek() {
                    if t > now {
                        break;
                    }
                    f.heap.pop();
                    let fl = &f.flows[s as usize];
                    if fl.id != id {
                        continue; // exported already
                    }
                    let (dl, reason) = cfg.deadline(fl);
                    if dl > t {
                        f.heap.push(Due { t: dl, id, slot: s });
                        continue;
                    }
                    emit(&mut self.stats, out, &cfg, fl, reason);
                    f.remove(s);
                }
            }
            Table::Reference(r) => {
                let mut due: Vec<(u64, u64, (FlowKey, u16), u8)> = r
                    .flows
                    .iter()
                    .filter_map(|(k, fl)| {
                        let (dl, reason) = cfg.deadline(fl);
                        (dl <= now).then_some((dl, fl.id, *k, reason))
                    })
                    .collect();
                due.sort();
                for (_, _, k, reason) in due {
                    if let Some(fl) = r.flows.remove(&k) {
                        emit(&mut self.stats, out, &cfg, &fl, reason);
                    }
                }
            }
        }
    }

    /// Merge one microflow (already counted), given the watermark `w`, or
    /// defer it ([`Config::gate`]). `hint` is a slab entry that may hold
    /// the flow ([`Fast::probe`]).
    #[inline(always)]
    fn add(&mut self, m: &Microflow, h: u64, hint: u32, out: &mut Batch, w: Option<u64>) {
        let cfg = self.cfg;
        let vlan = if cfg.vlan { m.vlan } else { 0 };
        let id = self.next_id;
        let new = match &mut self.table {
            Table::Fast(f) => 'fast: {
                let mut found = f.find_hinted(&cfg, hint, h, &m.key, vlan);
                let mut before = u64::MAX;
                if let Some((s, _)) = found {
                    let fl = &mut f.flows[s as usize];
                    match cfg.gate(fl, m, w) {
                        Gate::Merge(dl) => before = dl,
                        Gate::Split(reason) => {
                            emit(&mut self.stats, out, &cfg, fl, reason);
                            f.remove(s);
                            found = None;
                        }
                        Gate::Defer(dl) => return self.waiting.push(fl, dl, m, h),
                    }
                }
                if found.is_none() && cfg.ends_alone(m) {
                    // A flow that starts and ends in this microflow (a
                    // short connection's FIN or RST) is recorded straight
                    // away, never indexed: 17 % of the internet-like
                    // trace's flows, 2.8 % less time (session 33).
                    let mut fl = Flow::new(m, vlan, id);
                    cfg.apply(&mut fl, m, false);
                    emit(&mut self.stats, out, &cfg, &fl, end_reason::END_OF_FLOW);
                    break 'fast true;
                }
                let (s, rev, new) = match found {
                    Some((s, rev)) => (s, rev, false),
                    None => (f.insert(h, Flow::new(m, vlan, id), cfg.biflow), false, true),
                };
                let fl = &mut f.flows[s as usize];
                // The deadline the heap knows (none for a new flow).
                let before = if new { u64::MAX } else { before };
                // Merging moves the idle deadline only later; the deadline
                // can come earlier only if the flow's first packet does
                // (the flow's first is at most its forward one's).
                let earlier = new || m.dir.first_ns < fl.fwd.first_ns;
                let ended = cfg.apply(fl, m, rev);
                if ended {
                    // The fast path evicted the other direction's microflow
                    // with this one (TCP end), so nothing can join the flow.
                    emit(&mut self.stats, out, &cfg, fl, end_reason::END_OF_FLOW);
                    f.remove(s);
                } else if cfg.timeouts() && earlier {
                    // Later deadlines are found lazily when the old entry
                    // comes due; an earlier one (a biflow's reverse side or
                    // another VLAN starting before) needs its own entry.
                    let (dl, _) = cfg.deadline(fl);
                    if dl < before {
                        f.heap.push(Due {
                            t: dl,
                            id: fl.id,
                            slot: s,
                        });
                    }
                }
                new
            }
            Table::Reference(r) => {
                let fk = (m.key, vlan);
                let mut found = r.find(&cfg, m, vlan);
                if let Some((k, _)) = found {
                    if let Some(fl) = r.flows.get_mut(&k) {
                        match cfg.gate(fl, m, w) {
                            Gate::Merge(_) => {}
                            Gate::Split(reason) => {
                                emit(&mut self.stats, out, &cfg, fl, reason);
                                r.flows.remove(&k);
                                found = None;
                            }
                            Gate::Defer(dl) => return self.waiting.push(fl, dl, m, h),
                        }
                    }
                }
                let (k, rev, new) = match found {
                    Some((k, rev)) => (k, rev, false),
                    None => {
                        r.flows.insert(fk, Flow::new(m, vlan, id));
                        (fk, false, true)
                    }
                };
                let ended = match r.flows.get_mut(&k) {
                    Some(fl) => cfg.apply(fl, m, rev),
                    None => false,
                };
                if ended {
                    if let Some(fl) = r.flows.remove(&k) {
                        emit(&mut self.stats, out, &cfg, &fl, end_reason::END_OF_FLOW);
                    }
                }
                new
            }
        };
        if new {
            self.next_id += 1;
            self.stats.flows += 1;
        }
    }

    /// The flow microflow `m` (hash `h`) belongs to, if it is in the table.
    fn flow_of(&mut self, m: &Microflow, h: u64) -> Option<&mut Flow> {
        let cfg = self.cfg;
        let vlan = if cfg.vlan { m.vlan } else { 0 };
        match &mut self.table {
            Table::Fast(f) => {
                let (s, _) = f.find(&cfg, h, &m.key, vlan)?;
                Some(&mut f.flows[s as usize])
            }
            Table::Reference(r) => {
                let (k, _) = r.find(&cfg, m, vlan)?;
                r.flows.get_mut(&k)
            }
        }
    }

    /// Retry the deferred microflows if the watermark passed one of their
    /// flows' deadlines (first: one of them may bridge its flow's gap), then
    /// expire the flows due at `now` (held back to the watermark).
    #[inline(always)]
    fn advance(&mut self, now: u64, out: &mut Batch) {
        if self.replay_due() || self.expiry_due(now) {
            self.advance_now(now, out);
        }
    }

    /// [`FlowAggregator::advance`], when there may be something to do.
    fn advance_now(&mut self, now: u64, out: &mut Batch) {
        if self.replay_due() {
            self.replay(self.watermark, out);
        }
        self.expire(self.bounded(now), out);
    }

    /// Whether the watermark passed a waiting microflow's flow's deadline.
    #[inline(always)]
    fn replay_due(&self) -> bool {
        !self.waiting.items.is_empty() && self.watermark.is_none_or(|w| w >= self.waiting.due)
    }

    /// Whether `expire` may find a flow due at `now` (the fast table: its
    /// earliest heap entry is due; the reference scans every time).
    #[inline(always)]
    fn expiry_due(&self, now: u64) -> bool {
        self.cfg.timeouts()
            && match &self.table {
                Table::Fast(f) => f.heap.peek().is_some_and(|d| d.t <= self.bounded(now)),
                Table::Reference(_) => true,
            }
    }

    /// Retry the deferred microflows whose flows' deadlines the watermark
    /// `w` has passed (or that left the table; `u64::MAX` at the end:
    /// everything has arrived), in the order of their first packets: a
    /// direction's microflows keep their order, and a bridging microflow of
    /// the other direction goes before those that start after it. The
    /// others keep waiting.
    fn replay(&mut self, w: Option<u64>, out: &mut Batch) {
        let w = w.unwrap_or(u64::MAX);
        let cfg = self.cfg;
        let mut items = std::mem::replace(
            &mut self.waiting.items,
            std::mem::take(&mut self.replay_items),
        );
        let mut order = std::mem::take(&mut self.replay_order);
        self.waiting.due = u64::MAX;
        for (i, (m, h)) in items.iter().enumerate() {
            let waits = match self.flow_of(m, *h) {
                Some(fl) => {
                    let dl = cfg.deadline(fl).0;
                    if dl <= w {
                        fl.deferred = 0;
                    }
                    (dl > w).then_some(dl)
                }
                None => None,
            };
            match waits {
                Some(dl) => {
                    self.waiting.due = self.waiting.due.min(dl);
                    self.waiting.items.push((*m, *h));
                }
                None => order.push((m.dir.first_ns, i as u32)),
            }
        }
        // (time, arrival index) pairs are distinct: the order is total.
        order.sort_unstable();
        for &(_, i) in &order {
            let (m, h) = items[i as usize];
            self.add(&m, h, NO_HINT, out, Some(w));
        }
        items.clear();
        order.clear();
        self.replay_items = items;
        self.replay_order = order;
    }

    /// `now`, held back to the watermark: a flow is not expired while a
    /// microflow of it may still be in the fast path.
    #[inline(always)]
    fn bounded(&self, now: u64) -> u64 {
        self.watermark.map_or(now, |w| now.min(w))
    }

    fn now_for(&mut self, m: &Microflow, ctx: &Ctx<'_>) -> u64 {
        if self.time == TimeMode::Auto {
            let wall = ctx.now_ns();
            self.time = if wall.abs_diff(m.dir.last_ns) < 60_000_000_000 {
                TimeMode::Wall
            } else {
                TimeMode::Packet
            };
        }
        match self.time {
            TimeMode::Wall => ctx.recent_ns(),
            _ => {
                self.stats.now = self.stats.now.max(m.dir.first_ns);
                self.stats.now
            }
        }
    }

    /// Export up to `max` flows (forced end) in creation order; true when
    /// the table is empty.
    fn flush_some(&mut self, max: usize, out: &mut Batch) -> bool {
        if !self.flushing && !self.waiting.items.is_empty() {
            self.replay(Some(u64::MAX), out);
        }
        let cfg = self.cfg;
        let reason = end_reason::FORCED_END;
        match &mut self.table {
            Table::Fast(f) => {
                if !self.flushing {
                    // Ordered by id, read once from each flow in slab
                    // order (by comparing flows, the sort loaded two flows
                    // from the slab at random, 24 M instructions and most
                    // of the flush's cache misses for 69,000 flows).
                    f.flush_order = newest_first(&f.flows[..f.used], f.len, self.next_id);
                    self.flushing = true;
                }
                for _ in 0..max {
                    // Creation order is not slab order (freed entries are
                    // reused): prefetch the flow FLUSH_AHEAD places on
                    // (its lines) and the index line of the one half as
                    // far on (its hash is in the line prefetched before).
                    let n = f.flush_order.len();
                    if let Some(&a) = n.checked_sub(FLUSH_AHEAD + 1).map(|i| &f.flush_order[i]) {
                        let fa = &f.flows[a as usize];
                        prefetch(&fa.key);
                        prefetch(&fa.fwd);
                        if cfg.biflow {
                            prefetch(&fa.rev);
                        }
                    }
                    if let Some(&b) = n
                        .checked_sub(FLUSH_AHEAD / 2 + 1)
                        .map(|i| &f.flush_order[i])
                    {
                        let h = f.flows[b as usize].hash as usize;
                        prefetch(f.index.as_ptr().wrapping_add(h & f.mask));
                    }
                    let Some(s) = f.flush_order.pop() else {
                        break;
                    };
                    emit(&mut self.stats, out, &cfg, &f.flows[s as usize], reason);
                    f.remove(s);
                }
                if f.flush_order.is_empty() {
                    f.heap.clear();
                    self.flushing = false;
                }
            }
            Table::Reference(r) => {
                if !self.flushing {
                    let mut v: Vec<(u64, (FlowKey, u16))> =
                        r.flows.iter().map(|(k, f)| (f.id, *k)).collect();
                    v.sort_by_key(|x| Reverse(x.0));
                    r.flush_order = v.into_iter().map(|x| x.1).collect();
                    self.flushing = true;
                }
                for _ in 0..max {
                    let Some(k) = r.flush_order.pop() else { break };
                    if let Some(fl) = r.flows.remove(&k) {
                        emit(&mut self.stats, out, &cfg, &fl, reason);
                    }
                }
                if r.flush_order.is_empty() {
                    self.flushing = false;
                }
            }
        }
        !self.flushing
    }

    fn live(&self) -> usize {
        match &self.table {
            Table::Fast(f) => f.len,
            Table::Reference(r) => r.flows.len(),
        }
    }
}

/// Export flow `f`, ended for `reason`: its record is written in place in
/// a packet's buffer (built on the stack and then copied, as until session
/// 36, it cost about 80 instructions a record more).
fn emit(stats: &mut Stats, out: &mut Batch, cfg: &Config, f: &Flow, reason: u8) {
    stats.records += 1;
    stats.by_reason[reason as usize] += 1;
    let mut p = linerate_runtime::Packet::filled(FlowRecord::SIZE, |b| {
        cfg.write_record_bytes(f, reason, b)
    });
    let last = if cfg.biflow {
        f.fwd.last_ns.max(f.rev.last_ns)
    } else {
        f.fwd.last_ns
    };
    p.set_timestamp_ns(last);
    out.push(p);
}

impl Element for FlowAggregator {
    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        let mut out = Batch::new();
        let cfg = self.cfg;
        // Pass 1: check and hash every record (reading its key only).
        let mut scratch = match &mut self.table {
            Table::Fast(f) => std::mem::take(&mut f.scratch),
            Table::Reference(_) => Vec::new(),
        };
        let pkts = batch.as_slice();
        let hash = |m: &Microflow| cfg.hash(&m.key, if cfg.vlan { m.vlan } else { 0 });
        for (i, p) in pkts.iter().enumerate() {
            let d = p.data();
            if d.is_empty() || !d.len().is_multiple_of(Microflow::SIZE) {
                self.stats.bad += 1;
                continue;
            }
            for (r, b) in d.chunks_exact(Microflow::SIZE).enumerate() {
                let mut copy = None;
                match record_at::<Microflow>(b, &mut copy) {
                    Some(m) => scratch.push((hash(m), i as u32, r as u32)),
                    None => self.stats.bad += 1,
                }
            }
        }
        // Pass 2: merge in order, a software pipeline: while merging record k, probe the
        // (prefetched) tags of record k + AHEAD and prefetch its flow's key
        // and counters (not its packet: just written, it is in cache), and
        // prefetch the home tag of record
        // k + 2 AHEAD, so that the misses of a few records overlap the
        // merges before them and never more than the core can keep in
        // flight. The probe is a hint: merging may insert and remove
        // flows, so `add` checks the candidate and probes again if it is
        // not the flow.
        let mut hints = [NO_HINT; AHEAD];
        let tag = |t: &Table, k: usize| {
            if let (Table::Fast(f), Some(&(h, _, _))) = (t, scratch.get(k)) {
                prefetch(f.index.as_ptr().wrapping_add(h as usize & f.mask));
            }
        };
        let probe = |t: &Table, k: usize| match (t, scratch.get(k)) {
            (Table::Fast(f), Some(&(h, _, _))) => f.probe(h, cfg.biflow),
            _ => NO_HINT,
        };
        for k in 0..2 * AHEAD {
            tag(&self.table, k);
        }
        for (k, hint) in hints.iter_mut().enumerate() {
            *hint = probe(&self.table, k);
        }
        for (k, &(h, i, r)) in scratch.iter().enumerate() {
            let hint = hints[k % AHEAD];
            hints[k % AHEAD] = probe(&self.table, k + AHEAD);
            tag(&self.table, k + 2 * AHEAD);
            let mut copy = None;
            let at = r as usize * Microflow::SIZE;
            let b = &pkts[i as usize].data()[at..at + Microflow::SIZE];
            let Some(m) = record_at::<Microflow>(b, &mut copy) else {
                continue; // (counted as bad in pass 1)
            };
            self.stats.ignored = self.stats.ignored.saturating_add(m.ignored);
            if m.dir.packets == 0 {
                // A watermark: flows due before it can go.
                let w = self.watermark.unwrap_or(0).max(m.dir.first_ns);
                self.watermark = Some(w);
                let now = match self.time {
                    TimeMode::Wall => ctx.recent_ns(),
                    TimeMode::Packet => self.stats.now,
                    TimeMode::Auto => continue,
                };
                self.advance(now, &mut out);
                continue;
            }
            self.stats.microflows += 1;
            self.stats.packets = self.stats.packets.saturating_add(m.dir.packets);
            self.stats.bytes = self.stats.bytes.saturating_add(m.dir.bytes);
            let now = self.now_for(m, ctx);
            self.advance(now, &mut out);
            self.add(m, h, hint, &mut out, self.watermark);
        }
        drop(batch);
        scratch.clear();
        if let Table::Fast(f) = &mut self.table {
            f.scratch = scratch;
        }
        if self.time == TimeMode::Wall {
            self.advance(ctx.recent_ns(), &mut out);
        }
        if self.flush_requested && self.flush_some(usize::MAX, &mut out) {
            self.flush_requested = false;
        }
        if !self.timer_armed {
            self.timer_armed = true;
            ctx.schedule_after(TICK_NS);
        }
        push_chunks(ctx, 0, out);
    }

    fn run_timer(&mut self, ctx: &mut Ctx<'_>) {
        let mut out = Batch::new();
        if self.time == TimeMode::Wall {
            self.advance(ctx.now_ns(), &mut out);
        }
        if self.flush_requested && self.flush_some(usize::MAX, &mut out) {
            self.flush_requested = false;
        }
        push_chunks(ctx, 0, out);
        ctx.schedule_after(TICK_NS);
    }

    fn flush(&mut self, ctx: &mut Ctx<'_>) -> bool {
        let mut out = Batch::new();
        let done = self.flush_some(FLUSH_CHUNK, &mut out);
        ctx.push(0, out);
        !done
    }

    fn handlers(&self) -> &[HandlerSpec] {
        const H: &[HandlerSpec] = &[
            HandlerSpec::counter("microflows"),
            HandlerSpec::counter("packets"),
            HandlerSpec::counter("bytes"),
            HandlerSpec::counter("flows"),
            HandlerSpec::gauge("active"),
            HandlerSpec::counter("records"),
            HandlerSpec::counter("idle_timeouts"),
            HandlerSpec::counter("active_timeouts"),
            HandlerSpec::counter("end_of_flow"),
            HandlerSpec::counter("forced_end"),
            HandlerSpec::counter("ignored"),
            HandlerSpec::counter("bad"),
            HandlerSpec::write("flush"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        let s = &self.stats;
        Some(match name {
            "microflows" => s.microflows.to_string(),
            "packets" => s.packets.to_string(),
            "bytes" => s.bytes.to_string(),
            "flows" => s.flows.to_string(),
            "active" => self.live().to_string(),
            "records" => s.records.to_string(),
            "idle_timeouts" => s.by_reason[end_reason::IDLE_TIMEOUT as usize].to_string(),
            "active_timeouts" => s.by_reason[end_reason::ACTIVE_TIMEOUT as usize].to_string(),
            "end_of_flow" => s.by_reason[end_reason::END_OF_FLOW as usize].to_string(),
            "forced_end" => s.by_reason[end_reason::FORCED_END as usize].to_string(),
            "ignored" => s.ignored.to_string(),
            "bad" => s.bad.to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Option<Result<(), String>> {
        match name {
            "flush" => {
                self.flush_requested = true;
                Some(Ok(()))
            }
            _ => None,
        }
    }

    fn summary_counts(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        vec![
            ("microflows", s.microflows),
            ("flows", s.flows),
            ("records", s.records),
        ]
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        if self.stats.bad == 0 {
            Vec::new()
        } else {
            vec![("not a microflow record", self.stats.bad)]
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::flow::record::record_in;

    proptest::proptest! {
        /// The flush order is the ids' order from the largest down, both
        /// when the ids are placed (span within 32 times their number)
        /// and when they are sorted (wider).
        #[test]
        fn newest_first_orders_by_id(
            ids in proptest::collection::hash_set(0u64..2000, 0..200),
            free in proptest::collection::vec(proptest::prelude::any::<bool>(), 0..400),
            base in proptest::prelude::any::<u64>(),
            gap in 0u64..5000,
        ) {
            // Live flows in slab order with free slots between them; the
            // newest ids placed, older ones (beyond 32 times the live
            // flows) sorted.
            let base = base / 2;
            let mut slab = Vec::new();
            let mut want = Vec::new();
            let mut free = free.into_iter();
            for &id in &ids {
                while free.next() == Some(true) {
                    slab.push(Flow { id: u64::MAX, ..Flow::default() });
                }
                want.push((base + id, slab.len() as u32));
                slab.push(Flow { id: base + id, ..Flow::default() });
            }
            want.sort_by_key(|&(id, _)| Reverse(id));
            let want: Vec<u32> = want.into_iter().map(|(_, s)| s).collect();
            proptest::prop_assert_eq!(newest_first(&slab, ids.len(), base + 2000 + gap), want);
        }
    }

    proptest::proptest! {
        /// `ends_alone` says what `apply` says of a new flow's first
        /// microflow, whatever the protocol, flags and rules.
        #[test]
        fn ends_alone_is_apply_on_a_new_flow(
            proto in proptest::prop_oneof![proptest::prelude::Just(6u8), proptest::prelude::Just(17u8), proptest::prelude::any::<u8>()],
            flags in proptest::prelude::any::<u8>(),
            tcpend in proptest::prelude::any::<bool>(),
            biflow in proptest::prelude::any::<bool>(),
        ) {
            let mut m = Microflow::new();
            m.key.proto = proto;
            m.dir.tcp_flags = flags;
            m.dir.packets = 1;
            let cfg = Config { active: u64::MAX, idle: u64::MAX, tcpend, biflow, vlan: false };
            let mut fl = Flow::new(&m, 0, 0);
            proptest::prop_assert_eq!(cfg.ends_alone(&m), cfg.apply(&mut fl, &m, false));
        }
    }

    /// A record is written whole, in place or through a copy, over bytes
    /// that held anything: aligned and misaligned buffers read back the
    /// same record.
    #[test]
    fn records_are_written_whole_aligned_or_not() {
        let cfg = Config {
            active: u64::MAX,
            idle: u64::MAX,
            tcpend: true,
            biflow: false,
            vlan: true,
        };
        let mut m = Microflow::new();
        m.key.sport = 443;
        m.key.proto = 6;
        m.dir.packets = 5;
        m.dir.last_ns = 77;
        let mut fl = Flow::new(&m, 12, 3);
        fl.fwd = m.dir;
        fl.rev.packets = 9; // never read for a one-way flow
        #[repr(C, align(8))]
        struct Buf([u8; FlowRecord::SIZE + 8]);
        let mut want = None;
        for off in [0, 8, 1, 5] {
            let mut buf = Buf([0xa5; FlowRecord::SIZE + 8]);
            let b = &mut buf.0[off..off + FlowRecord::SIZE];
            cfg.write_record_bytes(&fl, end_reason::END_OF_FLOW, b);
            let r = FlowRecord::from_bytes(b).expect("a record");
            assert_eq!(
                (r.vlan, r.end_reason, r.biflow),
                (12, end_reason::END_OF_FLOW, 0)
            );
            assert_eq!((r.key, r.fwd, r.rev), (m.key, m.dir, Direction::default()));
            assert_eq!(r._pad, [0; 2], "offset {off}");
            assert_eq!(*want.get_or_insert(r), r, "offset {off}");
        }
    }

    /// Bytes at an address aligned for a `Microflow`.
    #[repr(C, align(8))]
    struct Aligned([u8; Microflow::SIZE + 8]);

    #[test]
    fn records_read_in_place_only_when_aligned() {
        let mut m = Microflow::new();
        m.dir.packets = 3;
        m.ignored = 7;
        let mut buf = Aligned([0; Microflow::SIZE + 8]);
        buf.0[..Microflow::SIZE].copy_from_slice(m.as_bytes());
        let inplace = record_in::<Microflow>(&buf.0[..Microflow::SIZE]).copied();
        assert_eq!(inplace, Some(m));
        // Misaligned: not read in place, still a record for `from_bytes`.
        buf.0.copy_within(0..Microflow::SIZE, 1);
        let b = &buf.0[1..1 + Microflow::SIZE];
        assert!(record_in::<Microflow>(b).is_none());
        assert_eq!(Microflow::from_bytes(b), Some(m));
        // Wrong length or magic: never a record.
        assert!(record_in::<Microflow>(&buf.0[..Microflow::SIZE - 8]).is_none());
        buf.0[..Microflow::SIZE].copy_from_slice(m.as_bytes());
        buf.0[0] ^= 1;
        assert!(record_in::<Microflow>(&buf.0[..Microflow::SIZE]).is_none());
    }
}

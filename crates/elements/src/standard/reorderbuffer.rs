//! Restores the original order of packets by a sequence-number annotation
//! after stages that may reorder them (parallel crypto, several threads).
//!
//! # Synopsis
//! `ReorderBuffer([WINDOW, KEYWORDS])`
//!
//! # Ports
//! One push input; push output 0 for packets in sequence order; optional
//! push output 1 for late and duplicate packets (dropped when output 1 is
//! not connected).
//!
//! # Arguments
//! - `WINDOW` (unsigned, default 1024): how far ahead of the next expected
//!   number a packet may be; rounded up to a power of two. A packet further
//!   ahead moves the window: the packets it passes over are released in
//!   order and the missing numbers are counted as lost.
//! - `ANNO` (annotation, default `SEQUENCE_NUMBER`): a 4-byte annotation
//!   holding the sequence number (host order, as Click stores it); a name
//!   or a byte offset. Numbers wrap around at 2^32 (serial arithmetic).
//! - `START` (unsigned): the first expected number; by default the number
//!   of the first packet.
//! - `TIMEOUT` (time, default 10ms; 0 disables): how long a gap may hold
//!   back the packets behind it; then the missing numbers are counted as
//!   lost and the buffered packets move on.
//! - `IMPL` (`fast` or `reference`, default `fast`): `reference` keeps
//!   waiting packets in an ordered map and handles packets one at a time;
//!   `fast` is described below. Both give identical results.
//!
//! A packet whose number is behind the next expected one is late (its
//! slot was already released or skipped); one whose number is already
//! buffered is a duplicate; both go to output 1.
//!
//! # Handlers
//! - `count` (read): packets released on output 0.
//! - `reordered` (read): packets that waited in the buffer.
//! - `late` (read), `duplicates` (read): packets sent to output 1.
//! - `lost` (read): sequence numbers skipped (timeout, window, flush).
//! - `timeouts` (read): gaps skipped because of `TIMEOUT`.
//! - `buffered` (read): packets waiting now.
//! - `next` (read): the next expected sequence number.
//! - `flush` (write): release every buffered packet in order, skipping
//!   gaps; done at the next batch or timer (a handler call cannot send
//!   packets itself).
//!
//! # Example
//! ```click
//! // Packets numbered in the AGGREGATE annotation by an earlier stage.
//! FromDump(in.pcap, STOP true)
//!     -> r :: ReorderBuffer(256, ANNO AGGREGATE, TIMEOUT 1ms)
//!     -> ToDump(out.pcap);
//! r[1] -> Discard;
//! ```
//!
//! # Implementation
//! Waiting packets sit in a ring of `WINDOW` slots indexed by the low bits
//! of their number (struct-of-arrays: the packets in one vector, nothing
//! else per slot), so placing and releasing are O(1) and allocate nothing.
//! Fast path: when nothing is buffered and a batch is exactly the next
//! numbers in order (the usual case), the whole batch is forwarded as it
//! is, after one pass reading the annotations. Timeouts use one element
//! timer, armed when a gap appears. Click has no such element.
//!
//! ClickNP's optimisations: struct of arrays — the ring is a vector of
//! packet slots only, indexed by the low bits of the sequence number: the
//! numbers are not stored (a slot's index is its number) and the counters
//! live once in the element, so placing and releasing touch one slot each.
//! SIMD — not used: the in-order test compares each packet's annotation
//! with a running number and stops at the first mismatch, and placing a
//! packet depends on the state the previous one left. prefetch — not used:
//! with packets mostly in order the slots filled and taken are consecutive,
//! a pattern the hardware prefetcher follows, and the annotations read are
//! in packets the previous element just touched. slow path — yes: a batch
//! that is exactly the next numbers while nothing is buffered is forwarded
//! whole after one read pass; any other batch takes the per-packet path. A
//! gap holds back only the packets behind it, at most `TIMEOUT` (checked at
//! each batch and by the element's timer, so a stalled flow needs no
//! further arrival).

use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use std::any::Any;
use std::collections::BTreeMap;

/// The `ReorderBuffer` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "ReorderBuffer",
    port_count: "1/1-2",
    processing: "h/h",
    doc: element_doc!("standard/reorderbuffer"),
    make,
};

/// Where waiting packets are kept.
enum Store {
    /// Ring of slots indexed by `seq & mask`.
    Ring(Vec<Option<Packet>>),
    /// The reference: an ordered map.
    Map(BTreeMap<u32, Packet>),
}

impl Store {
    #[inline]
    fn take(&mut self, seq: u32) -> Option<Packet> {
        match self {
            Store::Ring(v) => {
                let m = v.len() - 1;
                v[seq as usize & m].take()
            }
            Store::Map(m) => m.remove(&seq),
        }
    }

    /// Stores `p`; gives it back if `seq` is already there.
    #[inline]
    fn put(&mut self, seq: u32, p: Packet) -> Result<(), Packet> {
        match self {
            Store::Ring(v) => {
                let m = v.len() - 1;
                let s = &mut v[seq as usize & m];
                if s.is_some() {
                    return Err(p);
                }
                *s = Some(p);
            }
            Store::Map(m) => {
                if m.contains_key(&seq) {
                    return Err(p);
                }
                m.insert(seq, p);
            }
        }
        Ok(())
    }
}

struct ReorderBuffer {
    store: Store,
    window: u32,
    anno: usize,
    start: Option<u32>,
    timeout: u64,
    fast: bool,
    has_out1: bool,
    next: u32,
    started: bool,
    buffered: usize,
    stall_since: u64,
    armed: u64,
    flush: bool,
    count: u64,
    reordered: u64,
    late: u64,
    duplicates: u64,
    lost: u64,
    timeouts: u64,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    use linerate_args::{Args, Word};
    use std::time::Duration;
    let mut a = Args::new(&ctx.args);
    let window = a.read_p_or("WINDOW", 1024u32);
    let anno = a.read_or("ANNO", Word("SEQUENCE_NUMBER".into())).0;
    let start: Option<u32> = a.read("START");
    let timeout = a.read_or("TIMEOUT", Duration::from_millis(10));
    let imp = a.read_or("IMPL", Word("fast".into())).0;
    a.complete().map_err(|e| e.0)?;
    let mut errs = Vec::new();
    let anno = match linerate_runtime::anno::anno_by_name(&anno) {
        Some(i) if i.offset + 4 <= linerate_runtime::anno::USER_ANNO_SIZE => i.offset,
        _ => {
            errs.push(format!("ANNO: no 4-byte annotation {anno}"));
            0
        }
    };
    if window == 0 || window > 1 << 20 {
        errs.push("WINDOW: expected 1 to 1048576".into());
    }
    let fast = match imp.as_str() {
        "fast" => true,
        "reference" => false,
        _ => {
            errs.push("IMPL: expected fast or reference".into());
            true
        }
    };
    if !errs.is_empty() {
        return Err(errs);
    }
    let window = window.next_power_of_two();
    let store = if fast {
        Store::Ring((0..window).map(|_| None).collect())
    } else {
        Store::Map(BTreeMap::new())
    };
    Ok(Box::new(ReorderBuffer {
        store,
        window,
        anno,
        start,
        timeout: timeout.as_nanos().min(u64::MAX as u128) as u64,
        fast,
        has_out1: ctx.noutputs() > 1,
        next: 0,
        started: false,
        buffered: 0,
        stall_since: 0,
        armed: 0,
        flush: false,
        count: 0,
        reordered: 0,
        late: 0,
        duplicates: 0,
        lost: 0,
        timeouts: 0,
    }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::counter("count"),
    HandlerSpec::counter("reordered"),
    HandlerSpec::counter("late"),
    HandlerSpec::counter("duplicates"),
    HandlerSpec::counter("lost"),
    HandlerSpec::counter("timeouts"),
    HandlerSpec::gauge("buffered"),
    HandlerSpec::read("next"),
    HandlerSpec::write("flush"),
];

impl ReorderBuffer {
    /// Rejected packets by reason (dropped, or sent to output 1).
    fn bad_list(&self) -> Vec<(&'static str, u64)> {
        [("late", self.late), ("duplicate", self.duplicates)]
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    #[inline]
    fn seq(&self, p: &Packet) -> u32 {
        p.anno().u32(self.anno)
    }

    /// Releases the consecutive run of buffered packets from `next`.
    fn drain(&mut self, out: &mut Batch, now: u64) {
        while self.buffered > 0 {
            match self.store.take(self.next) {
                Some(p) => {
                    out.push(p);
                    self.next = self.next.wrapping_add(1);
                    self.buffered -= 1;
                    self.count += 1;
                }
                None => break,
            }
        }
        self.stall_since = now;
    }

    /// Moves `next` forward to `to`, releasing buffered packets on the way
    /// and counting missing numbers as lost.
    fn advance(&mut self, to: u32, out: &mut Batch) {
        while self.next != to {
            match self.store.take(self.next) {
                Some(p) => {
                    out.push(p);
                    self.buffered -= 1;
                    self.count += 1;
                }
                None => self.lost += 1,
            }
            self.next = self.next.wrapping_add(1);
        }
    }

    /// Skips the gap at `next` up to the first buffered packet.
    fn skip_gap(&mut self, out: &mut Batch, now: u64) {
        if self.buffered == 0 {
            return;
        }
        loop {
            match self.store.take(self.next) {
                Some(p) => {
                    out.push(p);
                    self.buffered -= 1;
                    self.count += 1;
                    self.next = self.next.wrapping_add(1);
                    break;
                }
                None => {
                    self.lost += 1;
                    self.next = self.next.wrapping_add(1);
                }
            }
        }
        self.drain(out, now);
    }

    /// One packet through the buffer.
    fn one(&mut self, p: Packet, out: &mut Batch, rej: &mut Batch, now: u64) {
        let s = self.seq(&p);
        if !self.started {
            self.started = true;
            self.next = self.start.unwrap_or(s);
        }
        let d = s.wrapping_sub(self.next);
        if d as i32 <= -1 {
            self.late += 1;
            rej.push(p);
            return;
        }
        if d >= self.window {
            self.advance(s.wrapping_sub(self.window - 1), out);
            self.drain(out, now);
        }
        if s == self.next {
            out.push(p);
            self.count += 1;
            self.next = self.next.wrapping_add(1);
            self.drain(out, now);
            return;
        }
        match self.store.put(s, p) {
            Ok(()) => {
                if self.buffered == 0 {
                    self.stall_since = now;
                }
                self.buffered += 1;
                self.reordered += 1;
            }
            Err(p) => {
                self.duplicates += 1;
                rej.push(p);
            }
        }
    }

    /// Handles a pending flush and an expired gap; arms the timer.
    fn housekeeping(&mut self, out: &mut Batch, ctx: &mut Ctx<'_>) {
        let now = ctx.now_ns();
        if self.flush {
            self.flush = false;
            while self.buffered > 0 {
                self.skip_gap(out, now);
            }
        }
        if self.timeout > 0 && self.buffered > 0 {
            if now >= self.stall_since.saturating_add(self.timeout) {
                self.timeouts += 1;
                self.skip_gap(out, now);
            }
            let due = self.stall_since.saturating_add(self.timeout);
            if self.buffered > 0 && self.armed != due {
                self.armed = due;
                ctx.schedule_at(due);
            }
        }
    }

    /// True if the batch is exactly the next numbers, in order.
    fn in_sequence(&self, batch: &Batch) -> bool {
        let mut want = self.next;
        for p in batch.iter() {
            if self.seq(p) != want {
                return false;
            }
            want = want.wrapping_add(1);
        }
        true
    }

    fn emit(&mut self, out: Batch, rej: Batch, ctx: &mut Ctx<'_>) {
        if !out.is_empty() {
            ctx.push(0, out);
        }
        if !rej.is_empty() && self.has_out1 {
            ctx.push(1, rej);
        }
    }
}

impl Element for ReorderBuffer {
    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        let mut out = Batch::new();
        if self.fast
            && self.started
            && self.buffered == 0
            && !self.flush
            && self.in_sequence(&batch)
        {
            self.next = self.next.wrapping_add(batch.len() as u32);
            self.count += batch.len() as u64;
            out = batch;
        } else {
            let mut rej = Batch::new();
            let now = ctx.now_ns();
            for p in batch {
                self.one(p, &mut out, &mut rej, now);
            }
            self.housekeeping(&mut out, ctx);
            self.emit(out, rej, ctx);
            return;
        }
        ctx.push(0, out);
    }

    fn run_timer(&mut self, ctx: &mut Ctx<'_>) {
        self.armed = 0;
        let mut out = Batch::new();
        self.housekeeping(&mut out, ctx);
        self.emit(out, Batch::new(), ctx);
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        let v = match name {
            "count" => self.count,
            "reordered" => self.reordered,
            "late" => self.late,
            "duplicates" => self.duplicates,
            "lost" => self.lost,
            "timeouts" => self.timeouts,
            "buffered" => self.buffered as u64,
            "next" => u64::from(self.next),
            _ => return None,
        };
        Some(v.to_string())
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Option<Result<(), String>> {
        (name == "flush").then(|| {
            self.flush = true;
            Ok(())
        })
    }

    drops_or_output_1!(self, self.has_out1, self.bad_list());

    fn as_any(&self) -> &dyn Any {
        self
    }
}

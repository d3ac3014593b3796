//! Sets the aggregate annotation to a TCP/UDP flow number and the paint
//! annotation to the packet's direction within its flow.
//!
//! # Synopsis
//! `AggregateIPFlows([KEYWORDS])`
//!
//! # Ports
//! One input, agnostic; output 0 agnostic; optional push output 1 for
//! packets that are not TCP/UDP, too short, or non-first fragments (dropped
//! when output 1 is absent).
//!
//! # Arguments
//! - `TCP_TIMEOUT` (seconds, default 86400): timeout for active TCP flows.
//! - `TCP_DONE_TIMEOUT` (seconds, default 30): timeout for TCP flows that
//!   have seen FIN in both directions, or RST.
//! - `UDP_TIMEOUT` (seconds, default 60): timeout for UDP flows.
//! - `FRAGMENT_TIMEOUT` (seconds, default 30): accepted (see below).
//! - `REAP` (seconds, default 1200): interval, in packet time, at which
//!   dead flows are removed from the table.
//! - `ICMP` (boolean, default false): give ICMP errors the aggregate of the
//!   flow of the packet they quote, with paint 2 + that packet's direction.
//! - `FRAGMENTS` (boolean): accepted; fragments are handled as Click does
//!   with `FRAGMENTS false` (see Implementation).
//!
//! Flows are numbered from 1 in order of appearance, as in Click; the first
//! packet of a flow gets paint 0, replies paint 1. A flow that has been idle
//! for longer than its timeout (in packet time, whole seconds), or a closed
//! TCP flow that sees a new SYN, gets a new number.
//!
//! # Handlers
//! - `clear` (write): forget every flow (later packets get new numbers).
//! - `nflows` (read): flows in the table now.
//!
//! # Example
//! ```click
//! FromDump(trace.pcap, STOP true, FORCE_IP true)
//!     -> AggregateIPFlows -> ac :: AggregateCounter -> Discard;
//! ```
//!
//! # Implementation
//! One flat open-addressing hash table (linear probing, power-of-two size,
//! at most a quarter full) keyed by the canonical 5-tuple: the ordered
//! address pair, the ports in the matching order and TCP/UDP. Each slot is
//! 32 bytes, aligned, so a probe touches one cache line: the key as two
//! 64-bit words compared directly, the flow number, last-seen second and
//! the TCP close state and direction bits. Dead flows are found lazily on
//! lookup (which gives Click's numbering) and removed in a rebuild every
//! REAP seconds of packet time, so steady state allocates nothing. A batch
//! is processed in two passes: key, hash and prefetch every slot first
//! (the table is grown before the batch, never during it, so the slot
//! positions stay valid), then update in one plain loop over packets and
//! keys; packets without a key are split off afterwards only when there
//! are some. The key of a packet with a 20-byte header and 14 bytes of
//! TCP/UDP header behind it (nearly all) comes from one length check, two
//! 64-bit loads and one bit test for TCP/UDP, with the canonical order
//! chosen by compare and conditional moves; every other packet (options,
//! fragments, ICMP errors, short or odd headers) goes to an out-of-line
//! general path. Timeouts cost one comparison per packet (against the
//! smallest timeout; the flow's own timeout is looked up only past it).
//! The last-seen second is written only when it changes, so most packets
//! leave their slot's cache line clean and its eviction (the table does
//! not stay in L2 under a streamed trace) costs no write-back: about 4
//! cycles a packet. A packet with no timestamp gets the current time
//! (Click's behaviour).
//!
//! Measured (session 7) on the 20M-frame trace, `FromDump -> Strip(14) ->
//! CheckIPHeader -> AggregateIPFlows -> Discard`: AggregateIPFlows from
//! about 230 to 151 instructions and from about 76 to 45 user cycles per
//! packet (the pipeline 1.00-1.02 s to 0.78-0.80 s). Of the layouts tried, 32-byte slots a quarter full were fastest
//! (about 97 cycles per packet for the pipeline; 24-byte slots half full
//! 110, three-quarters full 126; 32-byte slots half full 100, an eighth
//! full 99-106); prefetching saves about 4 cycles; interleaving key and
//! update stages 16 packets apart, and CRC32 instead of a multiply for the
//! hash, saved no cycles and were dropped. Difference from Click:
//! fragments are not held back; second and later fragments go to output 1
//! (Click's behaviour with `FRAGMENTS false`).

use crate::hint::prefetch;
use linerate_runtime::anno::{offsets, NO_HEADER};
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use std::any::Any;

/// The `AggregateIPFlows` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "AggregateIPFlows",
    port_count: "1/1-2",
    processing: "a/ah",
    doc: element_doc!("analysis/aggregateipflows"),
    make,
};

/// One flow, aligned to 32 bytes so that it never straddles two cache
/// lines.
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct Slot {
    /// Ordered address pair (`min | max << 32` of Click's raw `s_addr`
    /// values); 0 marks an empty slot (the all-zero pair is never
    /// aggregated).
    hosts: u64,
    /// Ports in canonical order (the raw 32-bit word as Click loads it),
    /// bit 32 TCP.
    key: u64,
    agg: u32,
    last_sec: u32,
    /// Bits 0-1 the TCP close state (Click's `flow_over`: bit 0 FIN seen
    /// forward, bit 1 FIN seen in reply, 3 closed), bit 2 the flow's first
    /// packet went from the higher address (`reverse`).
    state: u32,
}

const REVERSE: u32 = 4;

/// What pass 1 learns about a packet for pass 2: its key (`hosts` 0 when
/// it has none and goes to output 1), the first slot of its probe
/// sequence and `info`: its paint before the flow's `reverse` bit in bits
/// 0-1 (bit 0: it goes from the higher address; bit 1: an ICMP error), the
/// flags of its own TCP header from bit 8 (0 for UDP, ICMP errors and TCP
/// headers cut short).
#[derive(Clone, Copy, Default)]
struct Entry {
    hosts: u64,
    key: u64,
    slot: u32,
    info: u32,
}

struct AggregateIPFlows {
    slots: Vec<Slot>,
    mask: usize,
    used: usize,
    next: u32,
    timeouts: Timeouts,
    gc_interval: u32,
    active_sec: u32,
    gc_sec: u32,
    icmp: bool,
    has_out1: bool,
    entries: Vec<Entry>,
    dropped: u64,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let secs = |s: Option<linerate_args::Seconds>, d: u32| {
        s.map(|s| (s.nanos / 1_000_000_000) as u32).unwrap_or(d)
    };
    let tcp_timeout = secs(a.read("TCP_TIMEOUT"), 24 * 60 * 60);
    let tcp_done_timeout = secs(a.read("TCP_DONE_TIMEOUT"), 30);
    let udp_timeout = secs(a.read("UDP_TIMEOUT"), 60);
    let _frag_timeout = secs(a.read("FRAGMENT_TIMEOUT"), 30);
    let gc_interval = secs(a.read("REAP"), 20 * 60);
    let icmp = a.read_or("ICMP", false);
    let _fragments: Option<bool> = a.read("FRAGMENTS");
    a.complete().map_err(|e| e.0)?;
    let cap = 1 << 12;
    Ok(Box::new(AggregateIPFlows {
        slots: vec![Slot::default(); cap],
        mask: cap - 1,
        used: 0,
        next: 1,
        timeouts: Timeouts {
            tcp: tcp_timeout,
            tcp_done: tcp_done_timeout,
            udp: udp_timeout,
            smallest: tcp_timeout.min(tcp_done_timeout).min(udp_timeout),
        },
        gc_interval,
        active_sec: 0,
        gc_sec: 0,
        icmp,
        has_out1: ctx.noutputs() > 1,
        entries: Vec::new(),
        dropped: 0,
    }))
}

/// The hash of a key: one 64 x 64 -> 128-bit multiply, folded.
#[inline(always)]
fn hash(hosts: u64, key: u64) -> u64 {
    let m = u128::from(hosts ^ 0x243f_6a88_85a3_08d3) * u128::from(key ^ 0x1319_8a2e_0370_7344);
    (m as u64) ^ (m >> 64) as u64
}

/// The key of a flow seen from a packet whose address pair, loaded as one
/// little-endian word, is `pair` (source in the low half), with this ports
/// word: `(hosts, ports word, paint bit)`; the paint bit is set when the
/// packet goes from the higher address (or, between equal addresses, from
/// the higher port), as Click orders Click's raw `s_addr` values.
#[inline(always)]
fn canonical(pair: u64, ports: u32) -> (u64, u32, u32) {
    let (src, dst) = (pair as u32, (pair >> 32) as u32);
    let swap = src > dst;
    let tie = (src == dst) & (((ports << 16).wrapping_sub(ports) as i32) < 0);
    let paint = (swap ^ tie) as u32;
    let hosts = if swap { pair.rotate_left(32) } else { pair };
    (hosts, ports.rotate_left(16 * paint), paint)
}

/// The key of a packet with a 20-byte IPv4 header and at least 14 bytes of
/// TCP/UDP header, not a fragment (nearly all packets): `(hosts, key,
/// info)` as in [`Entry`], or `None` to leave the packet to [`key_of`],
/// which handles every case.
#[inline(always)]
fn fast_key(p: &Packet) -> Option<(u64, u64, u32)> {
    let nh = p.anno().network_header;
    let at = usize::from(nh).wrapping_sub(p.headroom());
    // One length check for the header, the ports and the TCP flags.
    let h: &[u8; 34] = p.data().get(at..at.wrapping_add(34))?.try_into().ok()?;
    let le = |i: usize| u64::from(u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]));
    // Bytes 0-7: version and header length 0x45; fragment offset (bytes
    // 6-7, the low 13 bits in network order) zero.
    let le64 = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().unwrap_or_default());
    let w0 = le64(0);
    let pair = le64(12);
    let proto = h[9];
    let tcp = proto == 6;
    // TCP (6) or UDP (17): one bit test.
    let tcp_udp = (1u32 << 6 | 1 << 17)
        .checked_shr(u32::from(proto))
        .unwrap_or(0)
        & 1
        != 0;
    if (nh == NO_HEADER) | (w0 & 0xff1f_0000_0000_00ff != 0x45) | !tcp_udp | (pair == 0) {
        return None;
    }
    let (hosts, ports, paint) = canonical(pair, le(20) as u32);
    // The TCP flags (UDP: none).
    let flags = u32::from(h[33]) & 0u32.wrapping_sub(tcp as u32);
    Some((
        hosts,
        u64::from(ports) | (tcp as u64) << 32,
        paint | flags << 8,
    ))
}

/// The key of any packet, as [`fast_key`] gives it; `None` for packets
/// that go to output 1.
#[cold]
#[inline(never)]
fn key_of(p: &Packet, icmp: bool) -> Option<(u64, u64, u32)> {
    let nh = usize::try_from(p.network_header_offset()?).ok()?;
    let d = p.data();
    // Fixed-size views of the headers: one length check each, and the
    // field reads below need no bounds checks of their own.
    let outer: &[u8; 20] = d.get(nh..nh + 20)?.try_into().ok()?;
    if outer[0] >> 4 != 4 {
        return None;
    }
    let ff = |h: &[u8; 20]| u16::from_be_bytes([h[6], h[7]]) & 0x1fff == 0;
    let (ip, h, embedded) = if icmp && outer[9] == 1 && ff(outer) {
        let hl = ((outer[0] & 15) as usize) * 4;
        let icmph = d.get(nh + hl..)?;
        if icmph.len() < 8 || !matches!(icmph[0], 3 | 4 | 5 | 11 | 12) {
            return None;
        }
        let e = &icmph[8..];
        let ehl = ((*e.first()? & 15) as usize) * 4;
        if ehl < 20 || e.len() < ehl {
            return None;
        }
        let ip = nh + hl + 8;
        let h: &[u8; 20] = d.get(ip..ip + 20)?.try_into().ok()?;
        (ip, h, true)
    } else {
        (nh, outer, false)
    };
    let proto = h[9];
    if proto != 6 && proto != 17 {
        return None;
    }
    let pair = u64::from_le_bytes([h[12], h[13], h[14], h[15], h[16], h[17], h[18], h[19]]);
    if pair == 0 || !ff(h) {
        return None;
    }
    let hl = ((h[0] & 15) as usize) * 4;
    let pp: [u8; 4] = d.get(ip + hl..ip + hl + 4)?.try_into().ok()?;
    let (hosts, ports, paint) = canonical(pair, u32::from_le_bytes(pp));
    let tcp = proto == 6;
    // An ICMP error's paint is 2 or 3, and the flags of the TCP header it
    // quotes change nothing (Click looks at flags only for paint 0 and 1,
    // and restarts a closed flow only on a TCP packet's own SYN).
    let info = if embedded {
        2 | paint
    } else if tcp {
        paint | d.get(ip + hl + 13).map_or(0, |&f| u32::from(f) << 8)
    } else {
        paint
    };
    Some((hosts, u64::from(ports) | (tcp as u64) << 32, info))
}

/// The timeouts, in seconds.
#[derive(Clone, Copy)]
struct Timeouts {
    tcp: u32,
    tcp_done: u32,
    udp: u32,
    smallest: u32,
}

impl Timeouts {
    fn relevant(&self, s: &Slot) -> u32 {
        if s.key & (1 << 32) == 0 {
            self.udp
        } else if s.state & 3 == 3 {
            self.tcp_done
        } else {
            self.tcp
        }
    }

    /// Whether a found flow is dead for a packet (`info` as in [`Entry`])
    /// `age` seconds after its last one: Click's timeouts, or a packet's
    /// own SYN on a closed TCP flow.
    #[cold]
    #[inline(never)]
    fn dead(&self, s: &Slot, age: i32, info: u32) -> bool {
        (age > self.smallest as i32 && age > self.relevant(s) as i32)
            || (s.state & 3 == 3 && info & 0x200 != 0)
    }
}

impl AggregateIPFlows {
    /// Rebuild the table at `cap` slots, dropping flows dead at `now` (when
    /// `reap`) or every flow (when `clear`).
    fn rebuild(&mut self, cap: usize, reap: bool, clear: bool) {
        let old = std::mem::replace(&mut self.slots, vec![Slot::default(); cap]);
        self.mask = cap - 1;
        self.used = 0;
        if clear {
            return;
        }
        for s in old.into_iter().filter(|s| s.hosts != 0) {
            if reap {
                let age = self.active_sec.wrapping_sub(s.last_sec) as i32;
                if age > self.timeouts.relevant(&s) as i32 {
                    continue;
                }
            }
            let mut i = hash(s.hosts, s.key) as usize & self.mask;
            while self.slots[i].hosts != 0 {
                i = (i + 1) & self.mask;
            }
            self.slots[i] = s;
            self.used += 1;
        }
    }

    fn process(&mut self, mut batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        let n = batch.len();
        // Grow the table first so that it stays at most a quarter full
        // whatever this batch inserts: slot positions found in pass 1 stay
        // valid and the update loop has no per-packet size check.
        while (self.used + n) * 4 > self.slots.len() {
            let cap = self.slots.len() * 2;
            self.rebuild(cap, false, false);
        }
        if self.entries.len() < n {
            self.entries.resize(n, Entry::default());
        }
        // Pass 1: keys, first slots and prefetches.
        let (icmp, mask) = (self.icmp, self.mask);
        let base = self.slots.as_ptr();
        // Both key paths store through here (no merged, spilled result).
        let put = |e: &mut Entry, (hosts, key, info): (u64, u64, u32)| {
            let i = hash(hosts, key) as usize & mask;
            // `i` is within the table (a prefetch needs no bounds check).
            prefetch(base.wrapping_add(i));
            *e = Entry {
                hosts,
                key,
                slot: i as u32,
                info,
            };
        };
        for (p, e) in batch.iter().zip(self.entries.iter_mut()) {
            if let Some(k) = fast_key(p) {
                put(e, k);
            } else if let Some(k) = key_of(p, icmp) {
                put(e, k);
            } else {
                e.hosts = 0;
            }
        }
        // Pass 2: update; packets without a key are split off afterwards.
        let mut next = self.next;
        let mut active = self.active_sec;
        let mut rejected = false;
        let t = self.timeouts;
        // Sliced to `mask + 1` slots, so that indexes `& mask` need no
        // bounds checks.
        let slots = &mut self.slots[..=mask];
        for (p, e) in batch.iter_mut().zip(&self.entries) {
            if e.hosts == 0 {
                rejected = true;
                continue;
            }
            let mut ts = p.timestamp_ns();
            if ts == 0 {
                ts = ctx.now_ns();
                p.anno_mut().timestamp_ns = ts;
            }
            let sec = (ts / 1_000_000_000) as u32;
            let mut i = e.slot as usize & mask;
            let s = loop {
                let s = &slots[i];
                if (s.hosts == e.hosts) & (s.key == e.key) {
                    let age = sec.wrapping_sub(s.last_sec) as i32;
                    if (age > t.smallest as i32) | (s.state & 3 == 3) && t.dead(s, age, e.info) {
                        let s = &mut slots[i];
                        s.agg = next;
                        next = next.wrapping_add(1);
                        s.state = (e.info & 1) * REVERSE;
                    }
                    break &mut slots[i];
                }
                if s.hosts == 0 {
                    slots[i] = Slot {
                        hosts: e.hosts,
                        key: e.key,
                        agg: next,
                        last_sec: sec,
                        state: (e.info & 1) * REVERSE,
                    };
                    next = next.wrapping_add(1);
                    self.used += 1;
                    break &mut slots[i];
                }
                i = (i + 1) & mask;
            };
            let paint = (e.info & 3) ^ (s.state >> 2);
            // Written only when it changes: most packets then leave the
            // slot's cache line clean, and evicting it costs no write-back.
            if s.last_sec != sec {
                s.last_sec = sec;
            }
            let f = e.info >> 8;
            if f & 0x07 != 0 {
                if f & 0x04 != 0 {
                    s.state |= 3;
                } else if f & 0x01 != 0 {
                    s.state |= 1 << paint;
                } else {
                    s.state &= REVERSE;
                }
            }
            let agg = s.agg;
            let a = p.anno_mut();
            a.set_u32(offsets::AGGREGATE, agg);
            a.set_paint(paint as u8);
            active = sec;
        }
        self.next = next;
        self.active_sec = active;
        // Reap dead flows every REAP seconds of packet time.
        if self.active_sec >= self.gc_sec {
            if self.gc_sec != 0 {
                let cap = self.slots.len();
                self.rebuild(cap, true, false);
            }
            self.gc_sec = self.active_sec.saturating_add(self.gc_interval);
        }
        if rejected {
            let mut j = 0;
            let entries = &self.entries;
            let out = batch.split_off_if(|_| {
                j += 1;
                entries[j - 1].hosts == 0
            });
            if self.has_out1 {
                ctx.push(1, out);
            } else {
                self.dropped += out.len() as u64;
            }
        }
        batch
    }
}

impl Element for AggregateIPFlows {
    fn action(&mut self, batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        self.process(batch, ctx)
    }

    fn handlers(&self) -> &[HandlerSpec] {
        const H: &[HandlerSpec] = &[HandlerSpec::write("clear"), HandlerSpec::gauge("nflows")];
        H
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        (name == "nflows").then(|| self.used.to_string())
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Option<Result<(), String>> {
        if name != "clear" {
            return None;
        }
        let cap = self.slots.len();
        self.rebuild(cap, false, true);
        Some(Ok(()))
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![("not TCP/UDP or unaggregated fragment", self.dropped)]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

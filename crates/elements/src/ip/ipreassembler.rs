//! Reassembles fragmented IP packets.
//!
//! # Synopsis
//! `IPReassembler([KEYWORDS])`
//!
//! # Ports
//! One agnostic input; agnostic output 0 for unfragmented and reassembled
//! packets; optional push output 1 for incomplete datagrams given up on.
//!
//! # Arguments
//! - `HIMEM` (unsigned, default 262144): memory bound in bytes; above it,
//!   the least recently active datagrams are given up until usage is below
//!   three quarters of it. `MAX_MEMORY` is accepted as a synonym.
//! - `MAX_MTU_ANNO` (2-byte annotation): on reassembled packets, set to the
//!   largest fragment's network length.
//!
//! Expects packets with an IP network header annotation (CheckIPHeader).
//! Fragments are held until every byte of the datagram has arrived; the
//! reassembled packet has the link-level bytes, IP header (with options) and
//! annotations of the fragment at offset 0, the flags of the first fragment
//! seen with MF cleared, a recomputed length and checksum, and the timestamp
//! of the fragment that completed it. Fragments whose length or offset is
//! impossible (beyond 65535 bytes, empty, a middle fragment not a multiple
//! of 8 bytes, shorter than the IP length says, or beyond the end of a
//! datagram whose last fragment was seen) are dropped and counted. A
//! datagram with no new fragment for 30 seconds (checked every 10 seconds
//! by a timer, on the router's clock) is given up: with output 1 connected,
//! one packet holding the fragments received so far at their offsets goes
//! there; otherwise it is dropped. Click checks the timeout against packet
//! timestamps when fragments arrive instead.
//!
//! # Handlers
//! None (the end-of-run summary reports bad fragments and datagrams given
//! up).
//!
//! # Example
//! ```click
//! ... -> CheckIPHeader -> r :: IPReassembler -> ...;
//! r[1] -> ICMPError(18.26.4.24, timeexceeded, reassembly) -> ...;
//! ```
//!
//! # Implementation
//! A hash table keyed by (source, destination, protocol, IP ID) holds one
//! buffer per datagram in reassembly and the byte ranges received;
//! unfragmented packets pass through without a lookup. State is allocated
//! per datagram, never per unfragmented packet.

use super::util::{be16, nh_offset, IP_MF, IP_OFFMASK};
use linerate_runtime::anno::anno_by_name;
use linerate_runtime::{Anno, Batch, ConfigureCtx, Ctx, Element, ElementClass, Packet};
use linerate_wire::checksum;
use std::any::Any;
use std::collections::HashMap;

/// The `IPReassembler` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "IPReassembler",
    port_count: "1/1-2",
    processing: "a/ah",
    doc: element_doc!("ip/ipreassembler"),
    make,
};

const REAP_TIMEOUT_NS: u64 = 30_000_000_000;
const REAP_INTERVAL_NS: u64 = 10_000_000_000;
const IPH_MEM_USED: usize = 40;

type Key = (u32, u32, u16, u8);

struct Datagram {
    /// Link-level bytes and IP header of the offset-0 fragment, or the
    /// first 20 header bytes of the first fragment seen.
    head: Vec<u8>,
    nh: usize,
    have_first: bool,
    anno: Anno,
    /// Flags and offset word of the first fragment seen, offset cleared.
    ip_off: u16,
    payload: Vec<u8>,
    /// Received byte ranges, sorted and merged.
    ranges: Vec<(usize, usize)>,
    total: Option<usize>,
    max_frag: u16,
    last_ns: u64,
}

impl Datagram {
    fn mem(&self) -> usize {
        IPH_MEM_USED + self.payload.len()
    }

    fn add_range(&mut self, a: usize, b: usize) {
        self.ranges.push((a, b));
        self.ranges.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(self.ranges.len());
        for &(x, y) in &self.ranges {
            match merged.last_mut() {
                Some(l) if x <= l.1 => l.1 = l.1.max(y),
                _ => merged.push((x, y)),
            }
        }
        self.ranges = merged;
    }

    /// The datagram as one packet (complete or not).
    fn into_packet(self, ts: u64, mtu_anno: Option<usize>) -> Option<Packet> {
        let hlen = self.head.len() - self.nh;
        let total_len = hlen + self.payload.len();
        if total_len > 0xffff {
            return None;
        }
        let mut q = Packet::new(self.head.len() + self.payload.len());
        let d = q.data_mut();
        d[..self.head.len()].copy_from_slice(&self.head);
        d[self.head.len()..].copy_from_slice(&self.payload);
        let ip = &mut d[self.nh..];
        ip[2..4].copy_from_slice(&(total_len as u16).to_be_bytes());
        ip[6..8].copy_from_slice(&self.ip_off.to_be_bytes());
        ip[10] = 0;
        ip[11] = 0;
        let c = checksum::compute(&ip[..hlen]);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        *q.anno_mut() = self.anno;
        q.set_network_header(self.nh as isize);
        q.set_transport_header((self.nh + hlen) as isize);
        q.set_timestamp_ns(ts);
        if let Some(a) = mtu_anno {
            q.anno_mut().set_u16(a, self.max_frag);
        }
        Some(q)
    }
}

struct IPReassembler {
    himem: usize,
    lowmem: usize,
    mtu_anno: Option<usize>,
    has_out1: bool,
    map: HashMap<Key, Datagram>,
    mem_used: usize,
    timer_set: bool,
    frags_seen: u64,
    good: u64,
    failed: u64,
    /// Of those, the ones sent to output 1.
    failed_out: u64,
    bad: u64,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let mut himem = a.read_or("HIMEM", 256 * 1024usize);
    if let Some(m) = a.read::<usize>("MAX_MEMORY") {
        himem = m;
    }
    let anno: Option<linerate_args::Word> = a.read("MAX_MTU_ANNO");
    a.complete().map_err(|e| e.0)?;
    let mtu_anno = match anno {
        None => None,
        Some(w) => match anno_by_name(&w.0) {
            Some(i) if i.offset + 2 <= 48 && (i.size == 2 || i.size == 1 || i.size == 4) => {
                Some(i.offset)
            }
            _ => return Err(vec![format!("MAX_MTU_ANNO: bad annotation '{}'", w.0)]),
        },
    };
    Ok(Box::new(IPReassembler {
        himem,
        lowmem: (himem >> 2) * 3,
        mtu_anno,
        has_out1: ctx.noutputs() > 1,
        map: HashMap::new(),
        mem_used: 0,
        timer_set: false,
        frags_seen: 0,
        good: 0,
        failed: 0,
        failed_out: 0,
        bad: 0,
    }))
}

impl IPReassembler {
    /// Handles one fragment; returns the reassembled packet when complete.
    fn fragment(&mut self, p: Packet, nh: usize, now: u64, failed: &mut Batch) -> Option<Packet> {
        self.frags_seen += 1;
        let d = p.data();
        let ip = &d[nh..];
        let hlen = usize::from(ip[0] & 15) << 2;
        let off = be16(ip, 6);
        let mf = off & IP_MF != 0;
        let p_off = usize::from(off & IP_OFFMASK) << 3;
        let p_lastoff = (p_off + usize::from(be16(ip, 2))).wrapping_sub(hlen);
        let dlen = ip.len().saturating_sub(hlen);
        if hlen < 20
            || hlen > ip.len()
            || usize::from(be16(ip, 2)) < hlen
            || p_lastoff > 0xffff
            || p_lastoff <= p_off
            || (p_lastoff & 7 != 0 && mf)
            || dlen < p_lastoff - p_off
        {
            self.bad += 1;
            return None;
        }
        if self.mem_used > self.himem {
            self.reap_overfull(failed);
        }
        let key: Key = (
            u32::from_be_bytes([ip[12], ip[13], ip[14], ip[15]]),
            u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]),
            be16(ip, 4),
            ip[9],
        );
        let nl = (ip.len()).min(0xffff) as u16;
        let dg = self.map.entry(key).or_insert_with(|| Datagram {
            head: ip[..20].to_vec(),
            nh: 0,
            have_first: false,
            anno: *p.anno(),
            ip_off: off & !IP_OFFMASK,
            payload: Vec::new(),
            ranges: Vec::new(),
            total: None,
            max_frag: 0,
            last_ns: now,
        });
        if dg.total.is_some_and(|t| p_lastoff > t) {
            self.bad += 1;
            return None;
        }
        let before = if dg.ranges.is_empty() { 0 } else { dg.mem() };
        if dg.payload.len() < p_lastoff {
            dg.payload.resize(p_lastoff, 0);
        }
        dg.payload[p_off..p_lastoff].copy_from_slice(&ip[hlen..hlen + (p_lastoff - p_off)]);
        dg.add_range(p_off, p_lastoff);
        dg.max_frag = dg.max_frag.max(nl);
        dg.last_ns = now;
        if p_off == 0 {
            dg.head.clear();
            dg.head.extend_from_slice(&d[..nh + hlen]);
            dg.nh = nh;
            dg.have_first = true;
            dg.anno = *p.anno();
        }
        if !mf {
            dg.total = Some(p_lastoff);
            dg.ip_off &= !IP_MF;
        }
        self.mem_used = self.mem_used + dg.mem() - before;
        let done = dg.have_first
            && dg
                .total
                .is_some_and(|t| dg.ranges.len() == 1 && dg.ranges[0] == (0, t));
        if !done {
            return None;
        }
        let dg = self.map.remove(&key)?;
        self.mem_used -= dg.mem();
        let mut dg = dg;
        if let Some(t) = dg.total {
            dg.payload.truncate(t);
        }
        self.good += 1;
        let q = dg.into_packet(p.timestamp_ns(), self.mtu_anno);
        if q.is_none() {
            self.bad += 1;
        }
        q
    }

    fn give_up(&mut self, key: Key, failed: &mut Batch) {
        if let Some(dg) = self.map.remove(&key) {
            self.mem_used -= dg.mem();
            self.failed += 1;
            let ts = dg.anno.timestamp_ns;
            if self.has_out1 {
                if let Some(q) = dg.into_packet(ts, None) {
                    failed.push(q);
                    self.failed_out += 1;
                }
            }
        }
    }

    fn reap_overfull(&mut self, failed: &mut Batch) {
        let mut keys: Vec<(u64, Key)> = self.map.iter().map(|(k, d)| (d.last_ns, *k)).collect();
        keys.sort_unstable();
        for (_, k) in keys {
            if self.mem_used <= self.lowmem {
                return;
            }
            self.give_up(k, failed);
        }
    }
}

impl Element for IPReassembler {
    fn action(&mut self, batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        let mut out = Batch::new();
        let mut failed = Batch::new();
        let mut now = 0;
        for p in batch {
            let frag = match nh_offset(&p) {
                Some(nh) if p.len() - nh >= 20 => {
                    (be16(&p.data()[nh..], 6) & (IP_MF | IP_OFFMASK) != 0).then_some(nh)
                }
                _ => None,
            };
            match frag {
                None => out.push(p),
                Some(nh) => {
                    if now == 0 {
                        now = ctx.now_ns();
                    }
                    if let Some(q) = self.fragment(p, nh, now, &mut failed) {
                        out.push(q);
                    }
                }
            }
        }
        if !self.map.is_empty() && !self.timer_set {
            ctx.schedule_after(REAP_INTERVAL_NS);
            self.timer_set = true;
        }
        if self.has_out1 {
            ctx.push(1, failed);
        }
        out
    }

    fn run_timer(&mut self, ctx: &mut Ctx<'_>) {
        let now = ctx.now_ns();
        let mut old: Vec<Key> = self
            .map
            .iter()
            .filter(|(_, d)| now.saturating_sub(d.last_ns) >= REAP_TIMEOUT_NS)
            .map(|(k, _)| *k)
            .collect();
        old.sort_unstable();
        let mut failed = Batch::new();
        for k in old {
            self.give_up(k, &mut failed);
        }
        if self.has_out1 {
            ctx.push(1, failed);
        }
        self.timer_set = !self.map.is_empty();
        if self.timer_set {
            ctx.schedule_after(REAP_INTERVAL_NS);
        }
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("bad fragments", self.bad),
            (
                "incomplete datagrams given up",
                self.failed - self.failed_out,
            ),
        ]
    }

    fn diverted(&self) -> Vec<(usize, &'static str, u64)> {
        vec![(1, "incomplete datagrams given up", self.failed_out)]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

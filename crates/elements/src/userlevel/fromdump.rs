//! Reads packets from a pcap or pcapng file.
//!
//! # Synopsis
//! `FromDump(FILENAME [, KEYWORDS])`
//!
//! # Ports
//! No inputs; one or two outputs. Output 0 is agnostic: FromDump has a task
//! when it is push and answers pulls otherwise. Output 1 (push, optional)
//! receives non-IP packets when `FORCE_IP` is true.
//!
//! # Arguments
//! - `FILENAME` (string): classic pcap (micro- or nanosecond, either byte
//!   order), pcapng, or either gzip-compressed; `-` reads standard input.
//!   Link types Ethernet, raw IPv4/IPv6 and Linux cooked capture.
//! - `STOP` (boolean, default false): stop the driver at the end of the file.
//! - `TIMING` (boolean, default false): replay with the trace's timing.
//! - `ACTIVE` (boolean, default true): whether packets are emitted.
//! - `SAMPLE` (real in [0,1], default 1): emit each packet with this
//!   probability (deterministic pseudo-random sequence).
//! - `FORCE_IP` (boolean, default false): emit only IP packets, with their
//!   network header annotation set; others go to output 1 or are dropped.
//! - `START`, `END` (timestamps): emit packets with timestamps in [START, END).
//! - `START_AFTER`, `END_AFTER` (times): relative to the first packet.
//! - `INTERVAL` (time): stop at the first packet this long after the first
//!   packet emitted.
//! - `BURST` (integer, default 64): packets per batch (FastClick's argument;
//!   FastClick's default is 32).
//! - `MMAP` (boolean, default true): accepted for Click compatibility; files
//!   are always memory-mapped when possible.
//!
//! In replicated mode (`--replicate`), each replica gets the packets whose
//! symmetric flow hash falls to it (receive-side scaling), in file order, so
//! every flow (both directions) is processed on one thread. The file is
//! mapped once and each record is read once, by whichever replica walks that
//! part of the file (see Implementation).
//!
//! # Handlers
//! - `count` (read): packets emitted.
//! - `active` (read/write).
//! - `encap` (read): the file's link type (`ETHER`, `IP`, `LINUX_SLL`, ...).
//! - `filesize` (read): file size in bytes, or `-`.
//! - `filepos` (read): position in the file, in bytes (in replicated mode
//!   replica 0 reports the shared position and the others 0, so the sum
//!   over replicas is the position).
//! - `sampling_prob` (read): the sampling probability.
//! - `stop` (write): stop reading (and stop the driver if `STOP` is true).
//!
//! # Annotations
//! Sets the timestamp annotation from the record, `EXTRA_LENGTH` to the
//! bytes not captured, and, with `FORCE_IP` or raw-IP link types, the
//! network header. Sets the flow-hash annotation in replicated mode.
//!
//! # Example
//! ```click
//! FromDump(trace.pcap, STOP true, FORCE_IP true) -> c :: Counter -> Discard;
//! ```
//!
//! # Implementation
//! The file is memory-mapped and packets point into the mapping (zero copy);
//! an element that writes to a packet gets a private copy first. The mapping
//! lives as long as the element, which lives as long as the router: packets
//! never outlive it, and dropping a packet never touches its data.
//! Bad records end the file with an error message (the packets before them
//! are delivered); the file is checked when the router is built.
//!
//! The mapping asks for 2 MiB pages and is populated 32 MiB ahead of the
//! reader. Where the page cache holds the file in 2 MiB folios (a
//! filesystem with large folios, ext4 since Linux 6.16 or XFS, that read
//! the file through such a mapping, or had it written in 2 MiB pieces at
//! 2 MiB offsets, as `ToDump` writes), each 2 MiB is mapped by one
//! page-table entry: for the 0.93 GB trace of `bench/flowmon.sh`, mapping
//! it took 0.7 ms and unmapping it 5.5 ms, against 35-63 and 26-32 ms for
//! the same file cached in small folios (written in 256 KiB pieces or
//! copied by `cp`), and `nfs/flowmon.click` ran in 223 instead of 267 ms
//! (session 27). To have a trace cached that way, drop it from the page
//! cache (`dd if=TRACE iflag=nocache count=0`) and let the first run read
//! it back.
//!
//! Without per-record decisions (no `TIMING`, `SAMPLE`, time window,
//! `FORCE_IP` or replicas) a batch of a classic pcap file is read in one
//! loop of the reader (`PcapReader::read_fast`: byte order chosen once per
//! batch, one combined length test per record) that writes each record's
//! view straight into a pool block reserved for the batch
//! (`Pool::views_with`); unusual records (empty, oversized, oversnap,
//! truncated) and pcapng files go through the general record path one at a
//! time. Against a per-record call of the general path this took the
//! `FromDump -> Discard` benchmark from 142 to 102 instructions per packet.
//!
//! Replicated mode without `TIMING`, `SAMPLE`, `START`/`END`/`START_AFTER`/
//! `END_AFTER`/`INTERVAL` shares one reader between the replicas (they are
//! built one after the other on one thread, which hands the shared state
//! from replica 0 to the others): a replica that runs out of packets takes
//! the reader's lock and walks the next 2,048 records, computing each one's
//! flow hash once and appending a small descriptor (offset, length,
//! timestamp, hash, IP offset) to the share of the replica that owns it;
//! the shares go to per-replica inboxes while the lock is held, so each
//! replica receives its packets in file order. An untagged Ethernet frame
//! of 54 bytes or more carrying IPv4 or IPv6 is hashed after one length
//! test (the general offset and hash functions test each field; 33 fewer
//! instructions a packet on a trace of such frames). The walk's loop is
//! compiled once for Ethernet files, with the other frames' general path
//! out of line, and once for the other link types: its descriptor values
//! no longer merge with the general path's, and the loop moves fewer
//! values to and from the stack (with the descriptors written into the
//! shares' reserved room and the hash finished in one multiply round, 163
//! -> 134 instructions a record on the header trace). A replica keeps one
//! chunk in
//! hand and walks ahead (without waiting) when its inbox is empty, so it
//! rarely waits for another's walk; when it must, it spins a while
//! before it sleeps on the lock (a walk takes tens of microseconds, a futex
//! sleep and wake-up about as long). It stops walking ahead while another
//! replica has 64 chunks queued. The walk unmaps the file behind it, 64 MiB
//! at a time and 64 MiB back, so the mapping's unmapping at the end, while
//! every replica is idle, is short. Page faults, record parsing and hashing are
//! thus done once per record instead of once per replica; descriptors are
//! reused chunk vectors (no allocation per packet). A replica's batch gets
//! its network headers in a pass of their own only where a record can
//! have one set (`FORCE_IP`, raw-IP link types, pcapng): 11 instructions a
//! packet less for an Ethernet file. Each batch prefetches
//! the first two cache lines of the next batch's frames, which the walk may
//! have left in another core's cache. With those options, each
//! replica reads the whole file and keeps its share (packet-time decisions
//! then see every record, as with one thread). Owner of a hash `h` among `n`
//! replicas: `(h * n) >> 32`.

use crate::hint::prefetch;
use linerate_io::pcap::{LinkKind, PcapReader, Record, RecordError, RecordSink};
use linerate_runtime::anno::offsets;
use linerate_runtime::{
    Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, InitCtx, IoCounts, Packet,
    MAX_BATCH,
};
use std::any::Any;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

/// The `FromDump` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "FromDump",
    port_count: "0/1-2",
    processing: "a/ah",
    doc: element_doc!("userlevel/fromdump"),
    make,
};

struct FromDump {
    filename: String,
    reader: Option<PcapReader>,
    filesize: Option<u64>,
    stop: bool,
    timing: bool,
    active: bool,
    force_ip: bool,
    sample: f64,
    sample_threshold: u32,
    rng: u64,
    start: Option<u64>,
    end: Option<u64>,
    start_after: Option<u64>,
    end_after: Option<u64>,
    interval: Option<u64>,
    burst: usize,
    push: bool,
    has_out1: bool,
    replica: (usize, usize),
    /// The reader shared between replicas (replicated mode, see Implementation).
    shared: Option<Replicated>,
    // Run state.
    count: u64,
    bytes: u64,
    first_ts: Option<u64>,
    first_emitted: Option<u64>,
    timing_base: Option<(u64, u64)>,
    pending: Option<Packet>,
    done: bool,
    error_reported: bool,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let filename: Option<String> = a.read_mp("FILENAME");
    let timing = a.read_p_or("TIMING", false);
    let stop = a.read_or("STOP", false);
    let active = a.read_or("ACTIVE", true);
    let force_ip = a.read_or("FORCE_IP", false);
    let sample = a.read_or("SAMPLE", 1.0f64);
    let start: Option<linerate_args::Timestamp> = a.read("START");
    let end: Option<linerate_args::Timestamp> = a.read("END");
    let start_after: Option<linerate_args::Seconds> = a.read("START_AFTER");
    let end_after: Option<linerate_args::Seconds> = a.read("END_AFTER");
    let interval: Option<linerate_args::Seconds> = a.read("INTERVAL");
    let burst = a.read_or("BURST", ctx.default_burst).max(1);
    let _mmap: bool = a.read_or("MMAP", true);
    a.complete().map_err(|e| e.0)?;
    let mut errs = Vec::new();
    if !(0.0..=1.0).contains(&sample) {
        errs.push("SAMPLE must be between 0 and 1".to_string());
    }
    if start.is_some() && start_after.is_some() {
        errs.push("supply at most one of START and START_AFTER".to_string());
    }
    if [end.is_some(), end_after.is_some(), interval.is_some()]
        .iter()
        .filter(|x| **x)
        .count()
        > 1
    {
        errs.push("supply at most one of END, END_AFTER and INTERVAL".to_string());
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    let filename = filename.unwrap_or_default();
    let per_record = timing
        || sample < 1.0
        || start.is_some()
        || end.is_some()
        || start_after.is_some()
        || end_after.is_some()
        || interval.is_some();
    let shared = (ctx.replica.1 > 1 && !per_record && filename != "-")
        .then(|| join_shared(ctx.name, &filename, ctx.replica))
        .flatten()
        .map(|shared| Replicated {
            shared,
            base: 0,
            headers: true,
            cur: Vec::new(),
            pos: 0,
            stopped: false,
        });
    Ok(Box::new(FromDump {
        filename,
        reader: None,
        filesize: None,
        stop,
        timing,
        active,
        force_ip,
        sample,
        sample_threshold: (sample * u32::MAX as f64) as u32,
        rng: 0x9e37_79b9_7f4a_7c15,
        start: start.map(|t| t.nanos),
        end: end.map(|t| t.nanos),
        start_after: start_after.map(|t| t.nanos),
        end_after: end_after.map(|t| t.nanos),
        interval: interval.map(|t| t.nanos),
        burst,
        push: ctx.output_is_push(0),
        has_out1: ctx.noutputs() > 1,
        replica: ctx.replica,
        shared,
        count: 0,
        bytes: 0,
        first_ts: None,
        first_emitted: None,
        timing_base: None,
        pending: None,
        done: false,
        error_reported: false,
    }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::counter("count"),
    HandlerSpec::read_write("active"),
    HandlerSpec::read("encap"),
    HandlerSpec::gauge("filesize"),
    HandlerSpec::gauge("filepos"),
    HandlerSpec::read("sampling_prob"),
    HandlerSpec::write("stop"),
];

/// Offset of the IP header in a frame of link kind `k`, if it carries IP.
fn ip_offset(k: LinkKind, d: &[u8]) -> Option<usize> {
    let ipver = |off: usize| {
        d.get(off)
            .map(|b| b >> 4)
            .filter(|v| *v == 4 || *v == 6)
            .map(|_| off)
    };
    match k {
        LinkKind::RawIp | LinkKind::Ipv4 | LinkKind::Ipv6 => ipver(0),
        LinkKind::Ethernet => {
            let mut off = 12;
            let mut et = u16::from_be_bytes([*d.get(off)?, *d.get(off + 1)?]);
            while et == 0x8100 || et == 0x88a8 {
                off += 4;
                et = u16::from_be_bytes([*d.get(off)?, *d.get(off + 1)?]);
            }
            matches!(et, 0x0800 | 0x86dd)
                .then(|| ipver(off + 2))
                .flatten()
        }
        LinkKind::LinuxSll => {
            let et = u16::from_be_bytes([*d.get(14)?, *d.get(15)?]);
            matches!(et, 0x0800 | 0x86dd).then(|| ipver(16)).flatten()
        }
        LinkKind::LinuxSll2 => {
            let et = u16::from_be_bytes([*d.first()?, *d.get(1)?]);
            matches!(et, 0x0800 | 0x86dd).then(|| ipver(20)).flatten()
        }
        LinkKind::Other => None,
    }
}

/// A symmetric flow hash (both directions of a flow hash alike), for
/// spreading flows over replicas: IPv4 addresses, protocol and TCP/UDP/SCTP
/// ports; IPv6 addresses only, since extension headers (a fragment header,
/// say) change the first next-header and hide the ports in some packets of
/// a flow and not in others, which would split the flow. 0 for non-IP.
fn flow_hash(d: &[u8], ip: Option<usize>) -> u32 {
    let Some(off) = ip else { return 0 };
    let ip = &d[off..];
    match ip[0] >> 4 {
        4 if ip.len() >= 20 => {
            let l4 = ((ip[0] & 15) as usize) * 4;
            hash_v4(&ip[..20], ip.get(l4..l4 + 4))
        }
        6 if ip.len() >= 40 => hash_v6(&ip[..40]),
        _ => 0,
    }
}

/// [`ip_offset`] and [`flow_hash`] of an untagged Ethernet frame of at
/// least 54 bytes carrying IPv4 (ports within its first 40 bytes) or IPv6:
/// the IP header is at 14. One length test instead of one a field: the
/// shared walk's common case (`None` for anything else, which takes the
/// general pair).
#[inline(always)]
fn ether_ip_hash(d: &[u8]) -> Option<u32> {
    let f: &[u8; 54] = d.get(..54)?.try_into().ok()?;
    let (et, ip) = ([f[12], f[13]], &f[14..]);
    match (et, ip[0] >> 4) {
        ([0x08, 0x00], 4) => {
            let l4 = ((ip[0] & 15) as usize) * 4;
            Some(hash_v4(&ip[..20], Some(ip.get(l4..l4 + 4)?)))
        }
        ([0x86, 0xdd], 6) => Some(hash_v6(ip)),
        _ => None,
    }
}

/// Symmetric in the two addresses (and the two ports): sums and xors.
#[inline(always)]
fn sym(a: u64, b: u64) -> u64 {
    a.wrapping_add(b) ^ (a ^ b).rotate_left(29)
}

#[inline(always)]
fn w4(b: &[u8]) -> u64 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64
}

/// [`flow_hash`] of a 20-byte IPv4 header and the 4 bytes at its header
/// length, if the packet has them (the ports count for TCP, UDP and SCTP).
#[inline(always)]
fn hash_v4(ip: &[u8], ports: Option<&[u8]>) -> u32 {
    let mut h = sym(w4(&ip[12..16]), w4(&ip[16..20])) ^ (ip[9] as u64) << 56;
    if let (6 | 17 | 132, Some(p)) = (ip[9], ports) {
        // Both ports in one load.
        let w = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) as u64;
        let (sp, dp) = (w >> 16, w & 0xffff);
        h ^= (sp + dp) << 33 ^ (sp ^ dp) << 17;
    }
    mix(h)
}

/// [`flow_hash`] of a 40-byte IPv6 header: the addresses.
#[inline(always)]
fn hash_v6(ip: &[u8]) -> u32 {
    let w8 = |b: &[u8]| w4(b) | w4(&b[4..]) << 32;
    let fold = |a: &[u8]| w8(a) ^ w8(&a[8..]).rotate_left(23);
    mix(sym(fold(&ip[8..24]), fold(&ip[24..40])))
}

/// The finish of [`flow_hash`]; never 0. One multiply-xorshift round:
/// the owner function spreads flows as evenly as after two (the test
/// `flow_hash_spreads_flows`), and the shared walk does 5 instructions a
/// record fewer.
#[inline(always)]
fn mix(mut h: u64) -> u32 {
    h = (h ^ (h >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    ((h ^ (h >> 32)) as u32) | 1
}

/// A record read by the general path, or `None` at the end of the file or
/// at a bad record, whose message goes to `err`: reading stops either way.
fn usable<'a>(
    item: Option<Result<Record<'a>, RecordError>>,
    err: &mut Option<String>,
) -> Option<Record<'a>> {
    match item {
        Some(Ok(r)) => Some(r),
        Some(Err(e)) => {
            *err = Some(e.to_string());
            None
        }
        None => None,
    }
}

/// The replica (of `n`) that owns flow hash `h`: multiply-shift on the
/// hash's high bits (its low bit is always 1, so `h % n` would not spread).
#[inline]
fn owner(h: u32, n: usize) -> usize {
    ((h as u64 * n as u64) >> 32) as usize
}

/// Records walked per turn in shared replicated mode.
const WALK: usize = 2048;
/// A replica stops walking ahead while another has this many chunks queued.
const INBOX_MAX: usize = 64;
/// Rounds of 64 spin-loop hints a replica with nothing queued waits for
/// the walking replica before it sleeps on the walker's lock (about 0.1 ms).
const SPINS: u32 = 32;
/// `Desc::ip` for a record without an IP header.
const NO_IP: u16 = u16::MAX;

/// One record as the shared walker hands it to the replica that owns it.
#[derive(Clone, Copy)]
struct Desc {
    /// Offset of the data in the reader's mapping.
    off: usize,
    len: u32,
    extra: u32,
    ts: u64,
    hash: u32,
    /// Offset of the IP header, or [`NO_IP`].
    ip: u16,
    /// A raw-IP link type (the network header is set as without replicas).
    raw: bool,
}

/// The shared walk's destination: each replica's share of the records.
/// `ETHER`: the records are Ethernet frames (a classic file's run of
/// ordinary records, whose link type is the file's), so the one-test path
/// is tried first; otherwise each record's link type is `kind`.
struct Sharer<'a, const ETHER: bool> {
    shares: &'a mut [Vec<Desc>],
    /// Address of the reader's mapping (descriptors hold offsets).
    base: usize,
    /// The records' link type.
    kind: LinkKind,
}

impl<const ETHER: bool> Sharer<'_, ETHER> {
    /// Hash one record and queue it for its owner: an untagged Ethernet
    /// frame carrying IP inline, anything else in [`Self::share_other`]
    /// (out of line for Ethernet files: its own descriptor values, merged
    /// with the common path's, kept the walk's loop short of registers).
    #[inline(always)]
    fn share(&mut self, data: &[u8], ts: u64, orig_len: u32) {
        if !ETHER {
            return self.share_general(data, ts, orig_len);
        }
        match ether_ip_hash(data) {
            // The IP header is at 14; an Ethernet frame is not raw IP.
            Some(hash) => self.push(data, ts, orig_len, hash, 14, false),
            None => self.share_other(data, ts, orig_len),
        }
    }

    #[cold]
    #[inline(never)]
    fn share_other(&mut self, data: &[u8], ts: u64, orig_len: u32) {
        self.share_general(data, ts, orig_len);
    }

    /// [`ip_offset`] and [`flow_hash`] of any record.
    #[inline(always)]
    fn share_general(&mut self, data: &[u8], ts: u64, orig_len: u32) {
        let kind = self.kind;
        // (An IP header past 64 KiB, behind thousands of VLAN tags in a
        // crafted file, is treated as no IP header.)
        let ip = ip_offset(kind, data).filter(|&o| o < NO_IP as usize);
        let hash = flow_hash(data, ip);
        let raw = kind.is_raw_ip();
        self.push(
            data,
            ts,
            orig_len,
            hash,
            ip.map_or(NO_IP, |o| o as u16),
            raw,
        );
    }

    #[inline(always)]
    fn push(&mut self, data: &[u8], ts: u64, orig_len: u32, hash: u32, ip: u16, raw: bool) {
        let shares = &mut *self.shares;
        let share = &mut shares[owner(hash, shares.len())];
        let d = Desc {
            off: data.as_ptr() as usize - self.base,
            len: data.len() as u32,
            extra: orig_len.saturating_sub(data.len() as u32),
            ts,
            hash,
            ip,
            raw,
        };
        // Into the room the share was made with (a walk queues at most
        // `WALK` records), not through `Vec::push`: its growing path made
        // the loop keep more values on the stack (6 instructions a record).
        match share.spare_capacity_mut().first_mut() {
            Some(slot) => {
                slot.write(d);
                // SAFETY: the slot just written is the first past the length.
                unsafe { share.set_len(share.len() + 1) };
            }
            None => share.push(d),
        }
    }
}

/// Compiled into the reader's loop (a closure there was called out of
/// line: 22 instructions a record in calls and spills).
impl<const ETHER: bool> RecordSink for Sharer<'_, ETHER> {
    #[inline(always)]
    fn record(&mut self, data: &[u8], ts_ns: u64, orig_len: u32) -> bool {
        self.share(data, ts_ns, orig_len);
        true
    }
}

/// The reader and the per-replica shares of the walk in progress.
struct Walker {
    reader: PcapReader,
    shares: Vec<Vec<Desc>>,
    /// File offset below which the mapping was released.
    released: u64,
}

/// The shared walk releases the file's mapping (`release_before`) this far
/// behind its position, in steps of this size: unmapping a 0.9 GB trace at
/// the end took 4-9 ms with every replica idle, and this way the replicas
/// do it as they go. (A frame still queued that far behind reads as before,
/// faulted back in.)
const RELEASE: u64 = 64 << 20;

/// What the replicas of one `FromDump` share (see Implementation).
struct Shared {
    walker: Mutex<Option<Walker>>,
    inbox: Vec<Mutex<VecDeque<Vec<Desc>>>>,
    spare: Mutex<Vec<Vec<Desc>>>,
    /// Set (after the last chunk was queued) when the file has ended.
    eof: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `m`'s guard if nobody holds it.
fn try_lock<T>(m: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(g) => Some(g),
        Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

impl Shared {
    fn new(n: usize) -> Shared {
        Shared {
            walker: Mutex::new(None),
            inbox: (0..n).map(|_| Mutex::new(VecDeque::new())).collect(),
            spare: Mutex::new(Vec::new()),
            eof: AtomicBool::new(false),
        }
    }

    fn pop(&self, r: usize) -> Option<Vec<Desc>> {
        lock(&self.inbox[r]).pop_front()
    }

    fn queued(&self, r: usize) -> usize {
        lock(&self.inbox[r]).len()
    }

    /// Walk the next [`WALK`] records (the walker's lock held) and queue
    /// each replica's share. Returns a read error to report, if any.
    fn walk(&self, w: &mut Walker) -> Option<String> {
        let Walker {
            reader,
            shares,
            released,
        } = w;
        for s in shares.iter_mut() {
            if s.capacity() == 0 {
                *s = lock(&self.spare)
                    .pop()
                    .unwrap_or_else(|| Vec::with_capacity(WALK));
            }
        }
        let base = reader.data_base().as_ptr() as usize;
        let mut err = None;
        let mut end = false;
        // Classic pcap's usual records in runs (one link type), anything
        // else one record at a time.
        let kind = reader.link_type().kind();
        let mut left = WALK;
        while left > 0 {
            let shares = &mut shares[..];
            left -= if kind == LinkKind::Ethernet {
                let sink = Sharer::<true> { shares, base, kind };
                reader.read_fast_with(left, sink)
            } else {
                let sink = Sharer::<false> { shares, base, kind };
                reader.read_fast_with(left, sink)
            };
            if left == 0 {
                break;
            }
            let Some(rec) = usable(reader.next_record(), &mut err) else {
                end = true;
                break;
            };
            let kind = rec.link_type.kind();
            Sharer::<false> { shares, base, kind }.share(rec.data, rec.ts_ns, rec.orig_len);
            left -= 1;
        }
        for (r, s) in shares.iter_mut().enumerate() {
            if !s.is_empty() {
                lock(&self.inbox[r]).push_back(std::mem::take(s));
            }
        }
        let done = reader.position().saturating_sub(RELEASE);
        if done >= *released + RELEASE {
            reader.release_before(done);
            *released = done;
        }
        if end {
            self.eof.store(true, Ordering::Release);
        }
        err
    }
}

/// A replica's end of the shared reader.
struct Replicated {
    shared: Arc<Shared>,
    /// Base address of the mapping (set by `initialize`).
    base: usize,
    /// Whether any record may get its network header: with `FORCE_IP`, or
    /// a file whose records may be raw IP (a raw-IP link type, or pcapng).
    /// Set by `initialize`.
    headers: bool,
    cur: Vec<Desc>,
    pos: usize,
    stopped: bool,
}

/// A shared reader being built: element name, file, replica count.
type Building = (String, String, usize, Arc<Shared>);

thread_local! {
    /// Shared readers being built: replica 0 leaves one here (keyed by
    /// element name, file and replica count) for the replicas built after
    /// it on the same thread; the last one takes it away.
    static BUILDING: RefCell<Vec<Building>> =
        const { RefCell::new(Vec::new()) };
}

/// The shared reader of replica `r` of `n` of element `name` reading `file`.
fn join_shared(name: &str, file: &str, (r, n): (usize, usize)) -> Option<Arc<Shared>> {
    BUILDING.with(|b| {
        let mut b = b.borrow_mut();
        let i = b
            .iter()
            .position(|(e, f, k, _)| e == name && f == file && *k == n);
        if r == 0 {
            let s = Arc::new(Shared::new(n));
            match i {
                Some(i) => b[i].3 = s.clone(),
                None => b.push((name.to_string(), file.to_string(), n, s.clone())),
            }
            return Some(s);
        }
        let i = i?;
        let s = b[i].3.clone();
        if r + 1 == n {
            b.swap_remove(i);
        }
        Some(s)
    })
}

fn encap_name(k: LinkKind) -> &'static str {
    match k {
        LinkKind::Ethernet => "ETHER",
        LinkKind::RawIp | LinkKind::Ipv4 | LinkKind::Ipv6 => "IP",
        LinkKind::LinuxSll => "LINUX_SLL",
        LinkKind::LinuxSll2 => "LINUX_SLL2",
        LinkKind::Other => "UNKNOWN",
    }
}

enum Next {
    Packet(Packet, bool),
    Wait(u64),
    End,
}

impl FromDump {
    fn finish(&mut self, ctx: &mut Ctx<'_>) {
        if !self.done {
            self.done = true;
            if self.stop {
                ctx.stop_router();
            }
        }
    }

    /// Xorshift sampling decision with a fixed-point threshold.
    fn sampled(rng: &mut u64, threshold: u32) -> bool {
        if threshold == u32::MAX {
            return true;
        }
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        (*rng >> 32) as u32 <= threshold
    }

    /// The next packet to emit, or why there is none.
    fn next(&mut self, now: u64) -> Next {
        if let Some(p) = self.pending.take() {
            if let Some(w) = self.wait_for(&p, now) {
                self.pending = Some(p);
                return Next::Wait(w);
            }
            let ip = p.network_header_offset().is_some();
            return Next::Packet(p, ip || !self.force_ip);
        }
        loop {
            let Some(reader) = self.reader.as_mut() else {
                return Next::End;
            };
            let rec = match reader.next_record() {
                None => return Next::End,
                Some(Err(e)) => {
                    if !self.error_reported {
                        self.error_reported = true;
                        eprintln!("{}: {}", self.filename, e);
                    }
                    return Next::End;
                }
                Some(Ok(r)) => r,
            };
            let first = *self.first_ts.get_or_insert(rec.ts_ns);
            if let Some(s) = self.start.or(self.start_after.map(|x| first + x)) {
                if rec.ts_ns < s {
                    continue;
                }
            }
            if let Some(e) = self.end.or(self.end_after.map(|x| first + x)) {
                if rec.ts_ns >= e {
                    return Next::End;
                }
            }
            if let (Some(iv), Some(f)) = (self.interval, self.first_emitted) {
                if rec.ts_ns >= f + iv {
                    return Next::End;
                }
            }
            let kind = rec.link_type.kind();
            let need_ip = self.force_ip || self.replica.1 > 1 || kind.is_raw_ip();
            let ip = if need_ip {
                ip_offset(kind, rec.data)
            } else {
                None
            };
            let mut hash = 0;
            if self.replica.1 > 1 {
                hash = flow_hash(rec.data, ip);
                if owner(hash, self.replica.1) != self.replica.0 {
                    continue;
                }
            }
            if !Self::sampled(&mut self.rng, self.sample_threshold) {
                continue;
            }
            // SAFETY: the data lives in the reader's mapping, which lives as
            // long as this element, i.e. as long as the router (see module doc).
            let mut p = unsafe { Packet::from_external(rec.data.as_ptr(), rec.data.len()) };
            let a = p.anno_mut();
            a.timestamp_ns = rec.ts_ns;
            a.flow_hash = hash;
            a.set_u32(
                offsets::EXTRA_LENGTH,
                rec.orig_len.saturating_sub(rec.data.len() as u32),
            );
            // Without FORCE_IP, only raw-IP link types get the network
            // header, with or without replicas (the parser downstream then
            // sees the same packets either way).
            let raw = kind.is_raw_ip();
            if let Some(off) = ip.filter(|_| self.force_ip || raw) {
                p.set_network_header(off as isize);
            }
            self.first_emitted.get_or_insert(rec.ts_ns);
            if let Some(w) = self.wait_for(&p, now) {
                self.pending = Some(p);
                return Next::Wait(w);
            }
            return Next::Packet(p, ip.is_some() || !self.force_ip);
        }
    }

    /// With TIMING, the real time `p` is due if that is later than `now`.
    fn wait_for(&mut self, p: &Packet, now: u64) -> Option<u64> {
        if !self.timing {
            return None;
        }
        let (real0, ts0) = *self.timing_base.get_or_insert((now, p.timestamp_ns()));
        let due = real0 + p.timestamp_ns().saturating_sub(ts0);
        (due > now).then_some(due)
    }

    /// True when no per-record decision is needed beyond reading: no time
    /// window, sampling, timing, replica split or IP filtering.
    fn plain(&self) -> bool {
        self.start.is_none()
            && self.end.is_none()
            && self.start_after.is_none()
            && self.end_after.is_none()
            && self.interval.is_none()
            && self.sample_threshold == u32::MAX
            && !self.timing
            && !self.force_ip
            && self.replica.1 == 1
            && self.pending.is_none()
    }

    /// The fast path: records become zero-copy packets with timestamp and
    /// extra-length annotations, allocated with one pool access per batch.
    fn fill_plain(&mut self, max: usize, ctx: &mut Ctx<'_>) -> Option<Batch> {
        let reader = self.reader.as_mut()?;
        let mut out = Batch::new();
        let v = out.vec_mut();
        let mut bytes = 0u64;
        let mut err = None;
        let mut end = false;
        let max = max.min(MAX_BATCH);
        // Classic files have one link type for every record; pcapng
        // records (which never take the fast path) carry their own.
        let fast_raw = !reader.is_pcapng() && reader.link_type().kind().is_raw_ip();
        let mut raw_ip = [false; MAX_BATCH];
        let mut any_raw = fast_raw;
        // SAFETY: the views point into the reader's mapping, which lives as
        // long as this element (see the module documentation).
        unsafe {
            linerate_runtime::packet::with_pool(|pool| {
                pool.views_with(max, v, |w| loop {
                    // Runs of ordinary classic records, then one record
                    // through the general path (an unusual record, an
                    // error, the end of the file, or any pcapng record).
                    reader.read_fast(w.room(), |d, ts, orig_len| {
                        bytes += d.len() as u64;
                        w.push(
                            d.as_ptr(),
                            d.len(),
                            ts,
                            orig_len.saturating_sub(d.len() as u32),
                        )
                    });
                    if w.room() == 0 {
                        break;
                    }
                    let Some(r) = usable(reader.next_record(), &mut err) else {
                        end = true;
                        break;
                    };
                    if r.link_type.kind().is_raw_ip() {
                        raw_ip[max - w.room()] = true;
                        any_raw = true;
                    }
                    bytes += r.data.len() as u64;
                    let extra = r.orig_len.saturating_sub(r.data.len() as u32);
                    w.push(r.data.as_ptr(), r.data.len(), r.ts_ns, extra);
                })
            })
        };
        if any_raw {
            // Raw-IP link types: the network header is at offset 0.
            for (p, raw) in v.iter_mut().zip(raw_ip) {
                if (raw || fast_raw) && ip_offset(LinkKind::RawIp, p.data()).is_some() {
                    p.set_network_header(0);
                }
            }
        }
        if let Some(e) = err {
            if !std::mem::replace(&mut self.error_reported, true) {
                eprintln!("{}: {}", self.filename, e);
            }
        }
        if end {
            self.finish(ctx);
        }
        self.bytes += bytes;
        self.count += out.len() as u64;
        (!out.is_empty()).then_some(out)
    }

    /// Replicated mode with a shared reader: the next chunk of this
    /// replica's share, walking the file if it has none queued. False at
    /// the end of the file, after a `stop`, or while another replica lags
    /// [`INBOX_MAX`] chunks behind (no packets for now).
    fn next_chunk(&mut self, ctx: &mut Ctx<'_>) -> bool {
        let r = self.replica.0;
        let Some(rep) = self.shared.as_mut() else {
            return false;
        };
        let sh = rep.shared.clone();
        if rep.cur.capacity() > 0 {
            rep.cur.clear();
            lock(&sh.spare).push(std::mem::take(&mut rep.cur));
        }
        rep.pos = 0;
        let mut err = None;
        let mut spins = 0;
        let got = loop {
            if rep.stopped {
                break false;
            }
            let eof = sh.eof.load(Ordering::Acquire);
            if let Some(c) = sh.pop(r) {
                rep.cur = c;
                // Walk ahead while nobody else is walking, so the next
                // chunk is ready when this one is done.
                if !eof && sh.queued(r) == 0 {
                    if let Some(mut g) = try_lock(&sh.walker) {
                        if let Some(w) = g.as_mut() {
                            err = sh.walk(w);
                        }
                    }
                }
                break true;
            }
            if eof {
                break false;
            }
            if (0..sh.inbox.len()).any(|o| o != r && sh.queued(o) >= INBOX_MAX) {
                // Another replica lags behind: let it catch up.
                return false;
            }
            // Nothing queued: walk, or wait for the replica walking now to
            // queue this one's share. A walk takes tens of microseconds, so
            // spin a while first: sleeping on the lock at once cost a futex
            // wait and a wake-up interrupt about 80 times a run per replica.
            // Then sleep (spinning on a CPU shared with the walker would
            // only slow it).
            let mut g = match try_lock(&sh.walker) {
                Some(g) => g,
                None if spins < SPINS => {
                    spins += 1;
                    for _ in 0..64 {
                        std::hint::spin_loop();
                    }
                    continue;
                }
                None => lock(&sh.walker),
            };
            if sh.queued(r) == 0 && !sh.eof.load(Ordering::Acquire) {
                match g.as_mut() {
                    Some(w) => err = sh.walk(w),
                    None => break false,
                }
            }
        };
        if let Some(e) = err {
            if !std::mem::replace(&mut self.error_reported, true) {
                eprintln!("{}: {}", self.filename, e);
            }
        }
        if !got {
            self.finish(ctx);
        }
        got
    }

    /// Replicated mode with a shared reader: up to `max` packets of this
    /// replica's share, with the flow-hash and (for IP) network header
    /// annotations.
    fn fill_shared(&mut self, max: usize, ctx: &mut Ctx<'_>) -> Option<Batch> {
        let have = self
            .shared
            .as_ref()
            .is_some_and(|rep| rep.pos < rep.cur.len());
        if !have && !self.next_chunk(ctx) {
            return None;
        }
        let rep = self.shared.as_mut()?;
        let max = max.min(MAX_BATCH);
        let take = &rep.cur[rep.pos..rep.cur.len().min(rep.pos + max)];
        rep.pos += take.len();
        let base = rep.base;
        let mut out = Batch::new();
        let v = out.vec_mut();
        let mut bytes = 0u64;
        // SAFETY: every descriptor points into the shared reader's mapping,
        // which lives as long as the replicas' elements (see the module
        // documentation).
        unsafe {
            linerate_runtime::packet::with_pool(|pool| {
                pool.views_with(take.len(), v, |w| {
                    for d in take {
                        bytes += d.len as u64;
                        w.push((base + d.off) as *const u8, d.len as usize, d.ts, d.extra);
                    }
                })
            })
        };
        // The next batch's frames were walked (read) by whichever replica
        // walked their chunk, maybe another core: start fetching their first
        // lines now, so the parser downstream finds them in cache next time.
        for d in &rep.cur[rep.pos..rep.cur.len().min(rep.pos + max)] {
            let p = (base + d.off) as *const u8;
            prefetch(p);
            prefetch(p.wrapping_add(63));
        }
        let mut non_ip = Batch::new();
        for (p, d) in v.iter_mut().zip(take) {
            p.anno_mut().flow_hash = d.hash;
        }
        if rep.headers {
            for (p, d) in v.iter_mut().zip(take) {
                if d.ip != NO_IP && (d.raw || self.force_ip) {
                    p.set_network_header(d.ip as isize);
                }
            }
        }
        if self.force_ip && take.iter().any(|d| d.ip == NO_IP) {
            for d in take.iter().filter(|d| d.ip == NO_IP) {
                bytes -= d.len as u64;
            }
            non_ip.append(out.split_off_if(|p| p.network_header_offset().is_none()));
        }
        self.bytes += bytes;
        self.count += out.len() as u64;
        if self.has_out1 {
            ctx.push(1, non_ip);
        }
        (!out.is_empty()).then_some(out)
    }

    fn fill(&mut self, max: usize, ctx: &mut Ctx<'_>) -> Option<Batch> {
        if !self.active || self.done {
            return None;
        }
        if self.shared.is_some() {
            return self.fill_shared(max, ctx);
        }
        if self.plain() {
            return self.fill_plain(max, ctx);
        }
        let now = if self.timing { ctx.now_ns() } else { 0 };
        let mut out = Batch::new();
        let mut non_ip = Batch::new();
        while out.len() < max {
            match self.next(now) {
                Next::Packet(p, true) => {
                    self.bytes += p.len() as u64;
                    out.push(p);
                }
                Next::Packet(p, false) => non_ip.push(p),
                Next::Wait(t) => {
                    ctx.schedule_at(t);
                    break;
                }
                Next::End => {
                    self.finish(ctx);
                    break;
                }
            }
        }
        self.count += out.len() as u64;
        if self.has_out1 {
            ctx.push(1, non_ip);
        }
        (!out.is_empty()).then_some(out)
    }
}

impl Element for FromDump {
    fn initialize(&mut self, _ctx: &mut InitCtx<'_>) -> Result<(), String> {
        self.filesize = (self.filename != "-")
            .then(|| std::fs::metadata(&self.filename).map(|m| m.len()).ok())
            .flatten();
        if let Some(rep) = self.shared.as_mut() {
            let mut g = lock(&rep.shared.walker);
            if g.is_none() {
                let reader = PcapReader::open(&self.filename).map_err(|e| e.to_string())?;
                let shares = vec![Vec::new(); rep.shared.inbox.len()];
                *g = Some(Walker {
                    reader,
                    shares,
                    released: 0,
                });
            }
            if let Some(w) = g.as_ref() {
                let r = &w.reader;
                rep.base = r.data_base().as_ptr() as usize;
                let raw = r.link_type().kind().is_raw_ip();
                rep.headers = self.force_ip || raw || r.is_pcapng();
            }
            return Ok(());
        }
        let r = PcapReader::open(&self.filename).map_err(|e| e.to_string())?;
        self.reader = Some(r);
        Ok(())
    }

    fn is_task(&self) -> bool {
        self.push
    }

    fn run_task(&mut self, ctx: &mut Ctx<'_>) -> bool {
        match self.fill(self.burst, ctx) {
            Some(b) => {
                ctx.push(0, b);
                true
            }
            None => false,
        }
    }

    fn run_timer(&mut self, _ctx: &mut Ctx<'_>) {
        // The task polls; the timer only wakes an idle thread in time.
    }

    fn pull(&mut self, _port: usize, max: usize, ctx: &mut Ctx<'_>) -> Option<Batch> {
        self.fill(max, ctx)
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "count" => self.count.to_string(),
            "active" => self.active.to_string(),
            "encap" => match &self.shared {
                Some(rep) => lock(&rep.shared.walker)
                    .as_ref()
                    .map(|w| encap_name(w.reader.link_type().kind())),
                None => self
                    .reader
                    .as_ref()
                    .map(|r| encap_name(r.link_type().kind())),
            }
            .unwrap_or("UNKNOWN")
            .to_string(),
            "filesize" => self
                .filesize
                .map(|s| s.to_string())
                .unwrap_or_else(|| "-".into()),
            "filepos" => match &self.shared {
                Some(rep) if self.replica.0 == 0 => lock(&rep.shared.walker)
                    .as_ref()
                    .map_or(0, |w| w.reader.position()),
                Some(_) => 0,
                None => self.reader.as_ref().map_or(0, |r| r.position()),
            }
            .to_string(),
            "sampling_prob" => self.sample.to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "active" => crate::parse_value::<bool>(value).map(|v| self.active = v),
            "stop" => {
                self.reader = None;
                if let Some(rep) = self.shared.as_mut() {
                    rep.stopped = true;
                }
                Ok(())
            }
            _ => return None,
        })
    }

    fn io_counts(&self) -> Option<IoCounts> {
        Some(IoCounts {
            source: true,
            packets: self.count,
            bytes: self.bytes,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_ip_headers() {
        let mut eth = vec![0u8; 60];
        eth[12..14].copy_from_slice(&[0x81, 0x00]);
        eth[16..18].copy_from_slice(&[0x08, 0x00]);
        eth[18] = 0x45;
        assert_eq!(ip_offset(LinkKind::Ethernet, &eth), Some(18));
        eth[16..18].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(ip_offset(LinkKind::Ethernet, &eth), None);
        assert_eq!(ip_offset(LinkKind::Ethernet, &eth[..13]), None);
        assert_eq!(ip_offset(LinkKind::RawIp, &[0x60, 0, 0]), Some(0));
        assert_eq!(ip_offset(LinkKind::RawIp, &[0x20]), None);
        assert_eq!(ip_offset(LinkKind::RawIp, &[]), None);
    }

    /// The shared walk's fast path agrees with the general pair wherever
    /// it answers, and answers for the common frames.
    #[test]
    fn ether_fast_path_matches_general() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut answered = [0usize; 2];
        for i in 0..20_000 {
            let mut f = vec![0u8; 40 + i % 60];
            for b in f.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = x as u8;
            }
            // Mostly IPv4 or IPv6 with plausible versions, header lengths
            // and transports; some VLAN tags and other types.
            let v6 = i % 3 == 0;
            match i % 11 {
                0 => f[12..14].copy_from_slice(&[0x81, 0x00]),
                1 => f[12..14].copy_from_slice(&[0x08, 0x06]),
                _ if v6 => f[12..14].copy_from_slice(&[0x86, 0xdd]),
                _ => f[12..14].copy_from_slice(&[0x08, 0x00]),
            }
            if i % 7 != 0 && f.len() > 23 {
                f[14] = if v6 {
                    0x60
                } else {
                    0x40 | (5 + (i % 13) as u8 % 11)
                };
                f[23] = [6, 17, 132, 1][i % 4];
            }
            let ip = ip_offset(LinkKind::Ethernet, &f);
            let general = flow_hash(&f, ip);
            if let Some(h) = ether_ip_hash(&f) {
                assert_eq!((ip, h), (Some(14), general), "frame {i}: {f:02x?}");
                answered[v6 as usize] += 1;
            }
        }
        assert!(answered.iter().all(|&n| n > 1000), "{answered:?}");
    }

    /// Flows spread evenly over any replica count by the owner function,
    /// also for structured tuples: one client's sequential source ports,
    /// or sequential addresses.
    #[test]
    fn flow_hash_spreads_flows() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let tuple = |src: u32, dst: u32, sp: u16, dp: u16| {
            let mut ip = [0u8; 24];
            ip[0] = 0x45;
            ip[9] = 6;
            ip[12..16].copy_from_slice(&src.to_be_bytes());
            ip[16..20].copy_from_slice(&dst.to_be_bytes());
            ip[20..22].copy_from_slice(&sp.to_be_bytes());
            ip[22..24].copy_from_slice(&dp.to_be_bytes());
            flow_hash(&ip, Some(0))
        };
        let sets: [Vec<u32>; 3] = [
            (0..60_000)
                .map(|_| {
                    let r = rnd();
                    tuple(r as u32, (r >> 32) as u32, rnd() as u16, rnd() as u16)
                })
                .collect(),
            (0..60_000u32)
                .map(|i| tuple(0x0a00_0001, 0xc0a8_0001, 1024 + i as u16, 443))
                .collect(),
            (0..60_000u32)
                .map(|i| tuple(0x0a00_0000 + i, 0xc0a8_0001, 40_000, 80))
                .collect(),
        ];
        for (k, hashes) in sets.iter().enumerate() {
            for n in 2..=8usize {
                let mut share = vec![0usize; n];
                for &h in hashes {
                    share[owner(h, n)] += 1;
                }
                let fair = hashes.len() / n;
                for c in &share {
                    assert!(c.abs_diff(fair) * 25 < fair, "set {k}, n {n}: {share:?}");
                }
            }
        }
    }

    #[test]
    fn flow_hash_is_symmetric() {
        let mut ip = [0u8; 28];
        ip[0] = 0x45;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&[10, 0, 0, 1]);
        ip[16..20].copy_from_slice(&[10, 0, 0, 2]);
        ip[20..24].copy_from_slice(&[0x30, 0x39, 0x00, 0x35]);
        let h1 = flow_hash(&ip, Some(0));
        ip[12..16].copy_from_slice(&[10, 0, 0, 2]);
        ip[16..20].copy_from_slice(&[10, 0, 0, 1]);
        ip[20..24].copy_from_slice(&[0x00, 0x35, 0x30, 0x39]);
        assert_eq!(flow_hash(&ip, Some(0)), h1);
        ip[21] = 0x3a;
        assert_ne!(flow_hash(&ip, Some(0)), h1);
        assert_eq!(flow_hash(&ip[..10], Some(0)), 0);
    }
}

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
//! In replicated mode (`--replicate`), each replica reads the file and keeps
//! the packets whose flow hash falls to it (receive-side scaling), so every
//! flow is processed on one thread.
//!
//! # Handlers
//! - `count` (read): packets emitted.
//! - `active` (read/write).
//! - `encap` (read): the file's link type (`ETHER`, `IP`, `LINUX_SLL`, ...).
//! - `filesize` (read): file size in bytes, or `-`.
//! - `filepos` (read): position in the file, in bytes.
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

use linerate_io::pcap::{LinkKind, PcapReader};
use linerate_runtime::anno::offsets;
use linerate_runtime::{
    Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, InitCtx, IoCounts, Packet,
    MAX_BATCH,
};
use std::any::Any;

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
    Ok(Box::new(FromDump {
        filename: filename.unwrap_or_default(),
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

/// A symmetric flow hash over addresses and ports (both directions of a flow
/// hash alike), for spreading flows over replicas. 0 for non-IP packets.
fn flow_hash(d: &[u8], ip: Option<usize>) -> u32 {
    let Some(off) = ip else { return 0 };
    let ip = &d[off..];
    let (addrs, proto, l4): (&[u8], u8, usize) = match ip[0] >> 4 {
        4 if ip.len() >= 20 => (&ip[12..20], ip[9], ((ip[0] & 15) as usize) * 4),
        6 if ip.len() >= 40 => (&ip[8..40], ip[6], 40),
        _ => return 0,
    };
    let half = addrs.len() / 2;
    let mix = |b: &[u8]| {
        b.iter()
            .fold(0u64, |h, x| h.wrapping_mul(31).wrapping_add(*x as u64))
    };
    let (a, b) = (mix(&addrs[..half]), mix(&addrs[half..]));
    let mut h = a.wrapping_add(b) ^ (a ^ b).rotate_left(17) ^ proto as u64;
    if matches!(proto, 6 | 17 | 132) && ip.len() >= l4 + 4 {
        let (sp, dp) = (
            u16::from_be_bytes([ip[l4], ip[l4 + 1]]),
            u16::from_be_bytes([ip[l4 + 2], ip[l4 + 3]]),
        );
        h ^= (sp as u64 + dp as u64) << 24 ^ (sp ^ dp) as u64;
    }
    h = (h ^ (h >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    ((h ^ (h >> 29)) as u32) | 1
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
            let need_ip = self.force_ip
                || self.replica.1 > 1
                || matches!(kind, LinkKind::RawIp | LinkKind::Ipv4 | LinkKind::Ipv6);
            let ip = if need_ip {
                ip_offset(kind, rec.data)
            } else {
                None
            };
            let mut hash = 0;
            if self.replica.1 > 1 {
                hash = flow_hash(rec.data, ip);
                if (hash as usize) % self.replica.1 != self.replica.0 {
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
            if let Some(off) = ip {
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
        let mut raw_ip = [false; MAX_BATCH];
        let mut any_raw = false;
        let mut idx = 0;
        // SAFETY: the closure allocates only through the pool; the records
        // live in the reader's mapping, which lives as long as this element
        // (see the module documentation).
        unsafe {
            linerate_runtime::packet::with_pool(|pool| {
                pool.views_from(max, v, || match reader.next_record() {
                    Some(Ok(r)) => {
                        bytes += r.data.len() as u64;
                        if matches!(
                            r.link_type.kind(),
                            LinkKind::RawIp | LinkKind::Ipv4 | LinkKind::Ipv6
                        ) {
                            raw_ip[idx] = true;
                            any_raw = true;
                        }
                        idx += 1;
                        let extra = r.orig_len.saturating_sub(r.data.len() as u32);
                        Some((r.data.as_ptr(), r.data.len(), r.ts_ns, extra))
                    }
                    Some(Err(e)) => {
                        err = Some(e.to_string());
                        end = true;
                        None
                    }
                    None => {
                        end = true;
                        None
                    }
                })
            })
        };
        if any_raw {
            // Raw-IP link types: the network header is at offset 0.
            for (p, raw) in v.iter_mut().zip(raw_ip) {
                if raw && ip_offset(LinkKind::RawIp, p.data()).is_some() {
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

    fn fill(&mut self, max: usize, ctx: &mut Ctx<'_>) -> Option<Batch> {
        if !self.active || self.done {
            return None;
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
        let r = PcapReader::open(&self.filename).map_err(|e| e.to_string())?;
        self.filesize = (self.filename != "-")
            .then(|| std::fs::metadata(&self.filename).map(|m| m.len()).ok())
            .flatten();
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
            "encap" => self
                .reader
                .as_ref()
                .map(|r| encap_name(r.link_type().kind()))
                .unwrap_or("UNKNOWN")
                .to_string(),
            "filesize" => self
                .filesize
                .map(|s| s.to_string())
                .unwrap_or_else(|| "-".into()),
            "filepos" => self
                .reader
                .as_ref()
                .map(|r| r.position())
                .unwrap_or(0)
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

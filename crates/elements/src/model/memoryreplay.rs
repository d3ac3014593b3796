//! Replays distinct pre-built Ethernet/IPv4/UDP frames from memory: the
//! in-memory I/O path of `linerate model`.
//!
//! # Synopsis
//! `MemoryReplay([LENGTH, KEYWORDS])`
//!
//! # Ports
//! No inputs; one output, agnostic. In push mode MemoryReplay has a task that
//! pushes `BURST` packets per run; in pull mode it answers pulls.
//!
//! # Arguments
//! - `LENGTH` (integer 42-65535, default 64): frame length in bytes as an
//!   element sees it (Ethernet header to end of payload, no FCS).
//! - `PACKETS` (integer, default 1024): distinct frames held, replayed in
//!   order round-robin.
//! - `LIMIT` (integer, default -1): total packets to send; -1 means no limit.
//! - `STOP` (boolean, default false): stop the driver when `LIMIT` is reached.
//! - `BURST` (integer, default 64): packets per task run, sent as one batch.
//! - `ACTIVE` (boolean, default true): whether the task runs.
//! - `TIMESTAMP` (boolean, default true): set each packet's timestamp
//!   annotation (the clock is read once per batch).
//! - `FILE` (filename): replay the frames of this pcap or pcapng file
//!   instead of built ones (loaded into memory at configure time, at most
//!   16,777,216 frames and 1 GiB; `LENGTH` and `PACKETS` are then ignored).
//!   `linerate bench elements` feeds each element its traffic this way.
//! - `COPY` (boolean, default false): copy each frame into the packet's own
//!   pool buffer, as a NIC's DMA engine fills a receive buffer, instead of
//!   handing out a zero-copy view. Elements that write to packets then do
//!   not pay for a copy-on-write; the copy is the source's cost.
//!
//! Frame `i` (from 0) is `02:00:00:00:00:01 > 02:00:00:00:00:02`, IPv4
//! (`ttl 64`, id `i`, valid header checksum) from `10.0.0.0 + i` to
//! `10.128.0.0 + i` (mod 2^24), UDP from port `1024 + i mod 60000` to port
//! `5000 + i mod 1000` (checksum 0), payload bytes `(i + k) mod 256`. Every
//! frame has its own 5-tuple.
//!
//! In replicated mode each replica sends its share of `LIMIT`.
//!
//! # Handlers
//! - `count` (read): packets sent.
//! - `reset` (write): reset the count and restart.
//! - `active` (read/write), `limit` (read/write).
//!
//! # Example
//! ```click
//! MemoryReplay(LENGTH 1518, PACKETS 4096, LIMIT 1000000, STOP true) -> Discard;
//! ```
//!
//! # Implementation
//! The frames are built once, 64-byte aligned, in one buffer owned by the
//! element; packets are zero-copy views of them taken from the per-thread
//! pool, one pool access per batch (as a NIC's receive ring hands out
//! buffers a DMA engine filled). The first element that writes to a packet
//! gets a private copy, which is where the per-byte cost of receiving lies
//! on this path. With `COPY true` the blocks of a batch are reserved from
//! the pool at once too, and each packet is its metadata stores and a copy
//! of whole 64-byte lines into its buffer (`Pool::copies_with`), with no
//! test of the length against the buffer: frames longer than a pool
//! buffer's 1,920 bytes after the headroom are copied one at a time into
//! heap buffers instead. At the C point of `linerate model` (64-byte frames,
//! `ParseSteps(0) -> VLANEncap -> Discard`) a packet costs 114 instructions
//! this way against 151 for a view and VLANEncap's copy-on-write (155 with
//! `Pool::copy` a packet). On a CPU with AVX-512F (detected at start) the
//! copies use `CopyWriter::push_avx512`: the metadata's first line and the
//! cleared annotations are one 64-byte store each, built in registers (as
//! DPDK drivers rearm receive buffers from a template), and each frame line
//! one load and one store: 3 stores for a 64-byte frame instead of 14, and
//! the C point 9 % faster. Nothing is allocated on the heap while running.

#[cfg(target_arch = "x86_64")]
use linerate_runtime::packet::CopyWriter;
use linerate_runtime::packet::{with_pool, MAX_COPY};
use linerate_runtime::{
    Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, IoCounts, Packet, DEFAULT_BURST,
};
use std::any::Any;

/// The `MemoryReplay` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "MemoryReplay",
    port_count: "0/1",
    processing: "a/a",
    doc: element_doc!("model/memoryreplay"),
    make,
};

/// Build frame number `i` of `len` bytes (`len` >= 42) into `out`.
pub fn build_frame(i: u32, out: &mut [u8]) {
    let len = out.len();
    out[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    out[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    out[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip = &mut out[14..34];
    ip[0] = 0x45;
    ip[1] = 0;
    ip[2..4].copy_from_slice(&((len - 14) as u16).to_be_bytes());
    ip[4..6].copy_from_slice(&(i as u16).to_be_bytes());
    ip[6..8].copy_from_slice(&[0, 0]);
    ip[8] = 64;
    ip[9] = 17;
    ip[10..12].copy_from_slice(&[0, 0]);
    ip[12..16].copy_from_slice(&(0x0A00_0000 | (i & 0x00FF_FFFF)).to_be_bytes());
    ip[16..20].copy_from_slice(&(0x0A80_0000 | (i & 0x00FF_FFFF)).to_be_bytes());
    let mut sum: u32 = ip
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    let udp = &mut out[34..42];
    udp[0..2].copy_from_slice(&((1024 + i % 60000) as u16).to_be_bytes());
    udp[2..4].copy_from_slice(&((5000 + i % 1000) as u16).to_be_bytes());
    udp[4..6].copy_from_slice(&((len - 34) as u16).to_be_bytes());
    udp[6..8].copy_from_slice(&[0, 0]);
    for (k, b) in out[42..].iter_mut().enumerate() {
        *b = (i as usize + k) as u8;
    }
}

struct MemoryReplay {
    /// Frames, `stride` bytes apart, in a 64-byte aligned buffer.
    buf: Vec<u64>,
    /// Length of each frame.
    lens: Vec<u32>,
    bytes: u64,
    stride: usize,
    next: usize,
    limit: i64,
    burst: usize,
    active: bool,
    stop: bool,
    timestamp: bool,
    count: u64,
    push: bool,
    stopped: bool,
    copy: bool,
    /// The CPU has AVX-512F: copies go through `CopyWriter::push_avx512`.
    #[cfg(target_arch = "x86_64")]
    avx512: bool,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let len: usize = a.read_p_or("LENGTH", 64);
    let nframes: usize = a.read_or("PACKETS", 1024);
    let mut limit: i64 = a.read_or("LIMIT", -1);
    let stop = a.read_or("STOP", false);
    let burst: usize = a.read_or("BURST", DEFAULT_BURST);
    let active = a.read_or("ACTIVE", true);
    let timestamp = a.read_or("TIMESTAMP", true);
    let file: Option<String> = a.read("FILE");
    let copy = a.read_or("COPY", false);
    a.complete().map_err(|e| e.0)?;
    let mut errs = Vec::new();
    if file.is_none() && !(42..=65535).contains(&len) {
        errs.push("LENGTH must be between 42 and 65535".to_string());
    }
    if file.is_none() && (nframes == 0 || nframes > 1 << 24) {
        errs.push("PACKETS must be between 1 and 16777216".to_string());
    }
    if burst == 0 {
        errs.push("BURST must be at least 1".to_string());
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    let frames: Vec<Vec<u8>> = match file {
        Some(f) => load_frames(&f).map_err(|e| vec![e])?,
        None => {
            if len.div_ceil(64) * 64 * nframes > 1 << 30 {
                return Err(vec!["LENGTH * PACKETS must be at most 1 GiB".into()]);
            }
            (0..nframes)
                .map(|i| {
                    let mut f = vec![0u8; len];
                    build_frame(i as u32, &mut f);
                    f
                })
                .collect()
        }
    };
    if limit >= 0 && ctx.replica.1 > 1 {
        let (r, n) = (ctx.replica.0 as i64, ctx.replica.1 as i64);
        limit = limit / n + i64::from(r < limit % n);
    }
    let mut m = MemoryReplay::new(frames, ctx, limit, burst, active, stop, timestamp)?;
    m.copy = copy;
    Ok(Box::new(m))
}

/// Read every frame of a pcap or pcapng file.
fn load_frames(path: &str) -> Result<Vec<Vec<u8>>, String> {
    let mut r = linerate_io::pcap::PcapReader::open(path).map_err(|e| format!("FILE: {e}"))?;
    let mut frames = Vec::new();
    while let Some(rec) = r.next_record() {
        let rec = rec.map_err(|e| format!("FILE {path}: {e}"))?;
        frames.push(rec.data.to_vec());
        if frames.len() > 1 << 24 {
            return Err(format!("FILE {path}: more than 16777216 frames"));
        }
    }
    if frames.is_empty() {
        return Err(format!("FILE {path}: no frames"));
    }
    Ok(frames)
}

impl MemoryReplay {
    fn new(
        frames: Vec<Vec<u8>>,
        ctx: &ConfigureCtx<'_>,
        limit: i64,
        burst: usize,
        active: bool,
        stop: bool,
        timestamp: bool,
    ) -> Result<MemoryReplay, Vec<String>> {
        let maxlen = frames.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let stride = maxlen.div_ceil(64) * 64;
        let nframes = frames.len();
        if stride.saturating_mul(nframes) > 1 << 30 {
            return Err(vec!["the frames must fit in 1 GiB".into()]);
        }
        let mut buf = vec![0u64; stride * nframes / 8];
        // SAFETY: viewing the u64 buffer as bytes (alignment 1 <= 8).
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(buf.as_mut_ptr() as *mut u8, stride * nframes)
        };
        for (dst, f) in bytes.chunks_exact_mut(stride).zip(&frames) {
            dst[..f.len()].copy_from_slice(f);
        }
        Ok(MemoryReplay {
            buf,
            lens: frames.iter().map(|f| f.len() as u32).collect(),
            bytes: 0,
            stride,
            next: 0,
            limit,
            burst,
            active,
            stop,
            timestamp,
            count: 0,
            push: ctx.output_is_push(0),
            stopped: false,
            copy: false,
            #[cfg(target_arch = "x86_64")]
            avx512: std::arch::is_x86_feature_detected!("avx512f"),
        })
    }
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::counter("count"),
    HandlerSpec::write("reset"),
    HandlerSpec::read_write("active"),
    HandlerSpec::read_write("limit"),
];

/// The held frames as the replay loops walk them: frame `k` is `lens[k]`
/// bytes at `base + k * stride`, in a slot of `stride` bytes (a multiple
/// of 64).
#[derive(Clone, Copy)]
struct Frames<'a> {
    base: *const u8,
    stride: usize,
    lens: &'a [u32],
}

impl Frames<'_> {
    /// Hand the frames to `push` round-robin from frame `next` until it
    /// refuses one (the pool writer's room test is the loop's); returns the
    /// next frame and the bytes handed over.
    ///
    /// # Safety
    /// `next < lens.len()`.
    #[inline(always)]
    unsafe fn replay(
        self,
        mut next: usize,
        mut push: impl FnMut(*const u8, usize) -> bool,
    ) -> (usize, u64) {
        let Frames { base, stride, lens } = self;
        let mut bytes = 0u64;
        let mut frame = base.add(next * stride);
        loop {
            let len = *lens.get_unchecked(next) as usize;
            if !push(frame, len) {
                break;
            }
            bytes += len as u64;
            next += 1;
            frame = frame.add(stride);
            if next == lens.len() {
                next = 0;
                frame = base;
            }
        }
        (next, bytes)
    }

    /// `n` frames as zero-copy views, the blocks reserved as one slice of
    /// the free list: each packet costs its metadata stores only.
    ///
    /// # Safety
    /// As for [`replay`](Self::replay), and the frames outlive the packets.
    #[inline(never)]
    unsafe fn views(self, next: usize, n: usize, ts: u64, out: &mut Vec<Packet>) -> (usize, u64) {
        with_pool(|pool| {
            let mut r = (next, 0);
            pool.views_with(n, out, |w| {
                r = self.replay(next, |f, len| w.push(f, len, ts, 0));
            });
            r
        })
    }

    /// `n` frames copied into pool buffers of their own (every frame fits
    /// one: `len <= stride <= MAX_COPY`, and a frame's slot holds its
    /// length rounded up to 64 bytes), the blocks reserved as one slice;
    /// with `avx512`, through `CopyWriter::push_avx512`.
    ///
    /// # Safety
    /// As for [`replay`](Self::replay), and `avx512` only where the CPU has
    /// AVX-512F.
    #[inline(never)]
    unsafe fn copies(
        self,
        next: usize,
        n: usize,
        ts: u64,
        avx512: bool,
        out: &mut Vec<Packet>,
    ) -> (usize, u64) {
        with_pool(|pool| {
            let mut r = (next, 0);
            pool.copies_with(n, out, |w| {
                #[cfg(target_arch = "x86_64")]
                if avx512 {
                    r = self.copies_avx512(w, next, ts);
                    return;
                }
                let _ = avx512;
                r = self.replay(next, |f, len| w.push(f, len, ts));
            });
            r
        })
    }

    /// [`replay`](Self::replay) into `w` with `CopyWriter::push_avx512`,
    /// compiled for AVX-512F so that the push's stores inline into the loop.
    ///
    /// # Safety
    /// As for [`copies`](Self::copies), and the CPU has AVX-512F.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn copies_avx512(
        self,
        w: &mut CopyWriter<'_, '_>,
        next: usize,
        ts: u64,
    ) -> (usize, u64) {
        w.local(|w| self.replay(next, |f, len| w.push_avx512(f, len, ts)))
    }

    /// `n` frames too large for a pool buffer, each copied into a heap
    /// buffer of its own (rare).
    ///
    /// # Safety
    /// As for [`replay`](Self::replay).
    #[cold]
    #[inline(never)]
    unsafe fn to_heap(self, next: usize, n: usize, ts: u64, out: &mut Vec<Packet>) -> (usize, u64) {
        with_pool(|pool| {
            self.replay(next, |f, len| {
                if out.len() == n {
                    return false;
                }
                out.push(pool.copy(std::slice::from_raw_parts(f, len), ts));
                true
            })
        })
    }
}

impl MemoryReplay {
    fn make_batch(&mut self, max: usize, ctx: &mut Ctx<'_>) -> Option<Batch> {
        if !self.active {
            return None;
        }
        let mut n = max;
        if self.limit >= 0 {
            let left = (self.limit as u64).saturating_sub(self.count);
            if left == 0 {
                if self.stop && !self.stopped {
                    self.stopped = true;
                    ctx.stop_router();
                }
                return None;
            }
            n = n.min(left as usize);
        }
        let ts = if self.timestamp { ctx.recent_ns() } else { 0 };
        let frames = Frames {
            base: self.buf.as_ptr() as *const u8,
            stride: self.stride,
            lens: &self.lens,
        };
        let mut b = Batch::new();
        let out = b.vec_mut();
        // SAFETY: the frames are owned by this element, which lives as long
        // as the router and so longer than any packet that may be read;
        // `self.next < lens.len()`.
        let (next, bytes) = unsafe {
            if self.copy && self.stride <= MAX_COPY {
                #[cfg(target_arch = "x86_64")]
                let avx512 = self.avx512;
                #[cfg(not(target_arch = "x86_64"))]
                let avx512 = false;
                frames.copies(self.next, n, ts, avx512, out)
            } else if self.copy {
                frames.to_heap(self.next, n, ts, out)
            } else {
                frames.views(self.next, n, ts, out)
            }
        };
        self.next = next;
        self.count += n as u64;
        self.bytes += bytes;
        Some(b)
    }
}

impl Element for MemoryReplay {
    fn is_task(&self) -> bool {
        self.push
    }

    fn run_task(&mut self, ctx: &mut Ctx<'_>) -> bool {
        match self.make_batch(self.burst, ctx) {
            Some(b) => {
                ctx.push(0, b);
                true
            }
            None => false,
        }
    }

    fn pull(&mut self, _port: usize, max: usize, ctx: &mut Ctx<'_>) -> Option<Batch> {
        self.make_batch(max, ctx)
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "count" => self.count.to_string(),
            "active" => self.active.to_string(),
            "limit" => self.limit.to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "reset" => {
                self.count = 0;
                self.bytes = 0;
                self.next = 0;
                self.stopped = false;
                Ok(())
            }
            "active" => crate::parse_value::<bool>(value).map(|v| self.active = v),
            "limit" => crate::parse_value::<i64>(value).map(|v| self.limit = v),
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

//! The trace reader: file loading, classic pcap header and record parsing.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use memmap2::Mmap;

use super::error::{PcapError, RecordError};
use super::link::LinkType;
use super::ng::{self, NgState};

/// Largest captured length accepted in a record (libpcap's `MAXIMUM_SNAPLEN`, 256 KiB).
/// A record claiming more is taken as a sign of a corrupt file and ends the reading.
pub const MAX_CAPLEN: u32 = 262_144;

const MAGIC_USEC: u32 = 0xa1b2_c3d4;
const MAGIC_NSEC: u32 = 0xa1b2_3c4d;
const MAGIC_MODIFIED: u32 = 0xa1b2_cd34;
const MAGIC_PCAPNG: u32 = 0x0a0d_0d0a;
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const FILE_HEADER_LEN: usize = 24;
/// Smallest possible section header block.
const NG_MIN_SHB_LEN: usize = 28;

/// One packet record, borrowed from the reader's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// Timestamp in nanoseconds since the Unix epoch (0 for pcapng simple packet blocks,
    /// which carry none).
    pub ts_ns: u64,
    /// Length of the packet on the wire (may exceed `data.len()` when the capture was cut
    /// to a snaplen).
    pub orig_len: u32,
    /// The captured bytes.
    pub data: &'a [u8],
    /// Link type of the interface the record was captured on.
    pub link_type: LinkType,
}

/// Counters of what the reader delivered, skipped or found wrong; see the module
/// documentation for the rules.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReadStats {
    /// Records delivered (the unusual ones below included).
    pub records: u64,
    /// Delivered records whose captured length exceeds the file's (interface's) snaplen.
    pub over_snaplen: u64,
    /// Delivered records with a captured length of 0.
    pub empty: u64,
    /// Delivered records whose captured length exceeded the original length (data
    /// clamped to the original length).
    pub caplen_over_len: u64,
    /// Records cut short by the end of the file (0 or 1: reading stops there).
    pub truncated: u64,
    /// Corrupt records or blocks that stopped the reading (0 or 1).
    pub corrupt: u64,
    /// pcapng blocks skipped: unknown types and non-packet blocks other than section
    /// and interface headers.
    pub skipped_blocks: u64,
}

/// Where the bytes live.
enum Backing {
    Mapped(Mmap),
    Owned(Vec<u8>),
}

fn bytes(b: &Backing) -> &[u8] {
    match b {
        Backing::Mapped(m) => m,
        Backing::Owned(v) => v,
    }
}

/// Classic pcap parameters, copied out for the record loop.
#[derive(Debug, Clone, Copy)]
struct Classic {
    big_endian: bool,
    /// Multiplier from the header's fraction field to nanoseconds (1000 or 1).
    frac_mul: u64,
    /// Record header length: 16, or 24 for the modified format.
    hdr_len: usize,
    /// Snaplen as a limit (0 in the header means none).
    snap_limit: u32,
    /// `min(snap_limit, MAX_CAPLEN)`: records with `1..=fast_max` bytes take the fast path.
    fast_max: u32,
    /// Prefetch turns (two lines each) a record in `classic_run`: the
    /// previous call's average record length, in 128-byte turns (1..=16).
    turns: usize,
}

enum Format {
    Classic(Classic),
    Ng(NgState),
}

/// A pcap or pcapng trace, opened for sequential reading.
///
/// See the [module documentation](crate::pcap) for the formats and the bad-input rules.
pub struct PcapReader {
    backing: Backing,
    pos: usize,
    /// End of the part of a mapped file mapped in ahead of the reader
    /// ([`POPULATE`]); `usize::MAX` once the whole file is, or for a file
    /// read into memory.
    populated: usize,
    format: Format,
    link_type: LinkType,
    snaplen: u32,
    nanosecond: bool,
    stats: ReadStats,
    name: String,
}

impl std::fmt::Debug for PcapReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PcapReader")
            .field("name", &self.name)
            .field("pcapng", &self.is_pcapng())
            .field("link_type", &self.link_type)
            .field("snaplen", &self.snaplen)
            .field("position", &self.pos)
            .field("stats", &self.stats)
            .finish()
    }
}

#[inline(always)]
fn rd32(b: &[u8; 4], big_endian: bool) -> u32 {
    let v = u32::from_le_bytes(*b);
    if big_endian {
        v.swap_bytes()
    } else {
        v
    }
}

/// Reads the 32-bit word at `at` of a 16-byte header.
#[inline(always)]
fn word(h: &[u8; 16], at: usize, big_endian: bool) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&h[at..at + 4]);
    rd32(&w, big_endian)
}

/// A mapped file is mapped into the process (`MADV_POPULATE_READ`) this
/// far ahead of the fast reader, in steps of this size, instead of page
/// fault by page fault: on the 0.9 GB inet trace in the page cache, 12,000
/// faults a one-core flowmon run, 16 ms of its kernel time.
const POPULATE: usize = 32 << 20;

fn populated_start(b: &Backing) -> usize {
    match b {
        Backing::Mapped(_) => 0,
        _ => usize::MAX,
    }
}

/// Populate the next [`POPULATE`] bytes of the mapping from `*populated`
/// (or from `pos`, if the reader has passed it) and move `*populated` to
/// their end; `usize::MAX` at the end of the file.
#[cold]
fn populate_ahead(b: &Backing, pos: usize, populated: &mut usize) {
    let Backing::Mapped(map) = b else {
        *populated = usize::MAX;
        return;
    };
    let start = (*populated).max(pos / POPULATE * POPULATE);
    let end = (start + POPULATE).min(map.len());
    #[cfg(target_os = "linux")]
    if start < end {
        // Advice only: a kernel without it faults the pages in as before.
        let _ = map.advise_range(memmap2::Advice::PopulateRead, start, end - start);
    }
    *populated = if end >= map.len() { usize::MAX } else { end };
}

impl PcapReader {
    /// Opens a trace file: `-` reads standard input. Regular files are memory-mapped;
    /// anything that cannot be mapped is read fully into memory, and gzip data is
    /// decompressed into memory. The file header is checked here.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, PcapError> {
        let path = path.as_ref();
        if path == Path::new("-") {
            let name = "<stdin>".to_string();
            let mut buf = Vec::new();
            if let Err(source) = io::stdin().lock().read_to_end(&mut buf) {
                return Err(PcapError::Io { path: name, source });
            }
            return Self::from_vec(name, buf);
        }
        let name = path.display().to_string();
        let io_err = |source| PcapError::Io {
            path: name.clone(),
            source,
        };
        let mut file = File::open(path).map_err(io_err)?;
        let meta = file.metadata().map_err(io_err)?;
        if meta.is_file() && meta.len() >= FILE_HEADER_LEN as u64 {
            // SAFETY: the mapping is read-only and private to this reader. As with any
            // mapped file, another process truncating or rewriting the file while we read
            // it is outside what we can guard against (reading then faults or sees the new
            // bytes); trace files are not written while being replayed.
            if let Ok(map) = unsafe { Mmap::map(&file) } {
                #[cfg(unix)]
                {
                    // Advice only: a failure changes nothing but read-ahead.
                    let _ = map.advise(memmap2::Advice::Sequential);
                }
                // A file read in through a huge-page mapping lands in the page
                // cache as 2 MiB folios, which this mapping and every later
                // one map whole (one fault and one TLB entry per 2 MiB instead
                // of 512 of each; on a 0.9 GB trace, 464 mappings to undo at
                // the end instead of 226,000). Pages already cached keep
                // their size. Advice only, as above.
                #[cfg(target_os = "linux")]
                let _ = map.advise(memmap2::Advice::HugePage);
                if map.starts_with(&GZIP_MAGIC) {
                    let data = gunzip(&map, &name)?;
                    return Self::from_backing(name, Backing::Owned(data));
                }
                return Self::from_backing(name, Backing::Mapped(map));
            }
        }
        let mut buf = Vec::new();
        file.read_to_end(&mut buf).map_err(io_err)?;
        Self::from_vec(name, buf)
    }

    /// Parses a trace already in memory (gzip data is decompressed first). `name` is used
    /// in error messages.
    pub fn from_vec(name: impl Into<String>, data: Vec<u8>) -> Result<Self, PcapError> {
        let name = name.into();
        if data.starts_with(&GZIP_MAGIC) {
            let plain = gunzip(&data, &name)?;
            return Self::from_backing(name, Backing::Owned(plain));
        }
        Self::from_backing(name, Backing::Owned(data))
    }

    fn from_backing(name: String, backing: Backing) -> Result<Self, PcapError> {
        let data = bytes(&backing);
        let Some(magic) = data.first_chunk::<4>().copied() else {
            return Err(PcapError::TruncatedHeader {
                path: name,
                needed: FILE_HEADER_LEN as u64,
                found: data.len() as u64,
            });
        };
        let le = u32::from_le_bytes(magic);
        if le == MAGIC_PCAPNG {
            return Self::open_pcapng(name, backing);
        }
        let big_endian = match le {
            MAGIC_USEC | MAGIC_NSEC | MAGIC_MODIFIED => false,
            _ if matches!(le.swap_bytes(), MAGIC_USEC | MAGIC_NSEC | MAGIC_MODIFIED) => true,
            _ => return Err(PcapError::BadMagic { path: name, magic }),
        };
        let Some(h) = data.first_chunk::<FILE_HEADER_LEN>() else {
            return Err(PcapError::TruncatedHeader {
                path: name,
                needed: FILE_HEADER_LEN as u64,
                found: data.len() as u64,
            });
        };
        let magic_value = if big_endian { le.swap_bytes() } else { le };
        let rd16 = |at: usize| {
            let v = u16::from_le_bytes([h[at], h[at + 1]]);
            if big_endian {
                v.swap_bytes()
            } else {
                v
            }
        };
        let rd = |at: usize| rd32(&[h[at], h[at + 1], h[at + 2], h[at + 3]], big_endian);
        let (major, minor) = (rd16(4), rd16(6));
        if major != 2 {
            return Err(PcapError::UnsupportedVersion {
                path: name,
                major,
                minor,
            });
        }
        let snaplen = rd(16);
        // The upper bits of the link-type word carry FCS information (LT_LINKTYPE mask).
        let link_type = LinkType(rd(20) & 0x03ff_ffff);
        let nanosecond = magic_value == MAGIC_NSEC;
        let snap_limit = if snaplen == 0 { u32::MAX } else { snaplen };
        let classic = Classic {
            big_endian,
            frac_mul: if nanosecond { 1 } else { 1000 },
            hdr_len: if magic_value == MAGIC_MODIFIED {
                24
            } else {
                16
            },
            snap_limit,
            fast_max: snap_limit.min(MAX_CAPLEN),
            turns: 1,
        };
        Ok(PcapReader {
            populated: populated_start(&backing),
            backing,
            pos: FILE_HEADER_LEN,
            format: Format::Classic(classic),
            link_type,
            snaplen,
            nanosecond,
            stats: ReadStats::default(),
            name,
        })
    }

    fn open_pcapng(name: String, backing: Backing) -> Result<Self, PcapError> {
        let data = bytes(&backing);
        if data.len() < NG_MIN_SHB_LEN {
            return Err(PcapError::TruncatedHeader {
                path: name,
                needed: NG_MIN_SHB_LEN as u64,
                found: data.len() as u64,
            });
        }
        let first = match ng::first_interface(data) {
            Ok(first) => first,
            Err((offset, reason)) => {
                return Err(PcapError::BadPcapng {
                    path: name,
                    offset: offset as u64,
                    reason,
                })
            }
        };
        Ok(PcapReader {
            populated: populated_start(&backing),
            pos: 0,
            format: Format::Ng(NgState::new()),
            link_type: first.link_type,
            snaplen: first.snaplen,
            nanosecond: first.finer_than_microsecond(),
            stats: ReadStats::default(),
            name,
            backing,
        })
    }

    /// Returns the next record, `None` at the end of the file, or an error for a
    /// truncated or corrupt record, after which the reader returns `None`.
    ///
    /// Allocation-free; the common classic-pcap case is one combined test per record.
    #[inline]
    pub fn next_record(&mut self) -> Option<Result<Record<'_>, RecordError>> {
        let PcapReader {
            backing,
            pos,
            format,
            link_type,
            stats,
            ..
        } = self;
        let data = bytes(backing);
        // One arm per byte order, so the record loop has no byte-swap selection in it.
        match format {
            Format::Classic(c) if !c.big_endian => {
                classic_next::<false>(data, pos, stats, c, *link_type)
            }
            Format::Classic(c) => classic_next::<true>(data, pos, stats, c, *link_type),
            Format::Ng(st) => ng::next_record(st, data, pos, stats),
        }
    }

    /// The classic-pcap fast path over many records: hands `f` each record's data,
    /// timestamp (ns) and original length, for up to `max` records, stopping early at
    /// the first record the combined test of [`next_record`](Self::next_record) sends to
    /// the general path (the end of the file, truncation, an empty, oversized or
    /// oversnap record, caplen > len) or when `f` returns false (that record is not
    /// consumed). Read such a record with `next_record`. Returns the records consumed;
    /// pcapng files consume none.
    ///
    /// The byte order and the format are chosen once per call, not per record.
    #[inline]
    pub fn read_fast(&mut self, max: usize, f: impl FnMut(&[u8], u64, u32) -> bool) -> usize {
        self.read_fast_with(max, f)
    }

    /// [`read_fast`](Self::read_fast) handing the records to a [`RecordSink`] (one whose
    /// `record` is `#[inline(always)]` is compiled into the loop).
    #[inline]
    pub fn read_fast_with(&mut self, max: usize, mut f: impl RecordSink) -> usize {
        let PcapReader {
            backing,
            pos,
            populated,
            format,
            stats,
            ..
        } = self;
        let Format::Classic(c) = format else {
            return 0;
        };
        let data = bytes(backing);
        let start = *pos;
        let n = if c.big_endian {
            classic_run::<true>(data, pos, c, max, &mut f)
        } else {
            classic_run::<false>(data, pos, c, max, &mut f)
        };
        if let Some(avg) = (*pos - start).checked_div(n) {
            c.turns = avg.div_ceil(128).clamp(1, 16);
        }
        // For the next call (here, after the loop, the loop compiles as
        // without it: before it, 4 instructions a record more).
        if *pos + POPULATE > *populated {
            populate_ahead(backing, *pos, populated);
        }
        stats.records += n as u64;
        n
    }

    /// The whole file as read (decompressed for gzip input): the records' `data` slices
    /// point into it, and it stays valid and unmoved for as long as the reader lives.
    pub fn data_base(&self) -> &[u8] {
        bytes(&self.backing)
    }

    /// Unmap the file's bytes before `offset`, rounded down to 2 MiB, from
    /// this process (the mapping stays, its page-table entries go; the pages
    /// stay in the page cache, and reading them again maps them back). For a
    /// reader done with the start of a large file: the unmapping that ending
    /// the reader does is shorter by as much, and it is serial at the end of
    /// a run. Nothing happens for a file read into memory.
    pub fn release_before(&self, offset: u64) {
        const STEP: u64 = 2 << 20;
        let len = (offset.min(self.data_base().len() as u64) & !(STEP - 1)) as usize;
        #[cfg(unix)]
        if let (Backing::Mapped(map), true) = (&self.backing, len > 0) {
            // SAFETY: the mapping is read-only and the file is not written
            // while it is read (see `open`), so dropping its pages changes no
            // byte that a record slice may still read: a read after this
            // faults the same file bytes in again.
            let _ =
                unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, 0, len) };
        }
        #[cfg(not(unix))]
        let _ = len;
    }

    /// Byte offset of the next record or block to read (the file's length once the end
    /// or an error has been reached). For gzip input, an offset in the decompressed data.
    pub fn position(&self) -> u64 {
        self.pos as u64
    }

    /// Link type from the file header (pcapng: of the first interface). Records carry
    /// their own, which differs only in pcapng files with several interfaces.
    pub fn link_type(&self) -> LinkType {
        self.link_type
    }

    /// Snaplen from the file header (pcapng: of the first interface); 0 means none.
    pub fn snaplen(&self) -> u32 {
        self.snaplen
    }

    /// Whether timestamps are finer than a microsecond: the nanosecond pcap magic, or a
    /// pcapng first interface with `if_tsresol` finer than 10^-6 (or 2^-20) s.
    pub fn is_nanosecond(&self) -> bool {
        self.nanosecond
    }

    /// Whether the file is pcapng (otherwise classic pcap).
    pub fn is_pcapng(&self) -> bool {
        matches!(self.format, Format::Ng(_))
    }

    /// Whether the file is memory-mapped (otherwise read or decompressed into memory).
    pub fn is_mapped(&self) -> bool {
        matches!(self.backing, Backing::Mapped(_))
    }

    /// Counters of delivered, unusual, skipped and bad records so far.
    pub fn stats(&self) -> &ReadStats {
        &self.stats
    }

    /// The file name used in error messages (`<stdin>` for `-`).
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// The combined test of the classic fast path for the record at `p`: a whole
/// record of 1 to `fast_max` bytes with caplen <= len. Returns its data, timestamp
/// (ns), original length and the offset after it; `None` for anything the general
/// path must see.
#[inline(always)]
fn classic_fast<'a, const BIG: bool>(
    data: &'a [u8],
    p: usize,
    c: &Classic,
) -> Option<(&'a [u8], u64, u32, usize)> {
    let h = data.get(p..)?.first_chunk::<16>()?;
    let caplen = word(h, 8, BIG);
    let orig_len = word(h, 12, BIG);
    let start = p + c.hdr_len;
    // Cannot wrap on 64-bit targets; where it could, `get` below sees end < start.
    let end = start.wrapping_add(caplen as usize);
    let fits = (caplen.wrapping_sub(1) < c.fast_max) & (caplen <= orig_len);
    let rec = data.get(start..end).filter(|_| fits)?;
    let ts = word(h, 0, BIG) as u64 * 1_000_000_000 + word(h, 4, BIG) as u64 * c.frac_mul;
    Some((rec, ts, orig_len, end))
}

/// The classic pcap record path for one byte order: [`classic_fast`] for the common
/// case, the rest in `classic_slow`.
#[inline(always)]
fn classic_next<'a, const BIG: bool>(
    data: &'a [u8],
    pos: &mut usize,
    stats: &mut ReadStats,
    c: &Classic,
    link_type: LinkType,
) -> Option<Result<Record<'a>, RecordError>> {
    match classic_fast::<BIG>(data, *pos, c) {
        Some((rec, ts_ns, orig_len, end)) => {
            *pos = end;
            stats.records += 1;
            Some(Ok(Record {
                ts_ns,
                orig_len,
                data: rec,
                link_type,
            }))
        }
        None => classic_slow(data, pos, stats, *c, link_type),
    }
}

/// What [`PcapReader::read_fast_with`] hands each record to: a closure
/// `FnMut(data, timestamp_ns, orig_len) -> bool`, or a type whose `record`
/// is marked `#[inline(always)]` so that it is compiled into the reader's
/// loop (a closure is called from the loop's two byte-order instances,
/// and a large one is then compiled out of line: a call a record).
/// Returning false stops the run before that record.
pub trait RecordSink {
    /// One record's data, timestamp (ns) and original length.
    fn record(&mut self, data: &[u8], ts_ns: u64, orig_len: u32) -> bool;
}

impl<F: FnMut(&[u8], u64, u32) -> bool> RecordSink for F {
    #[inline(always)]
    fn record(&mut self, data: &[u8], ts_ns: u64, orig_len: u32) -> bool {
        self(data, ts_ns, orig_len)
    }
}

/// How far ahead of the record being read `read_fast` prefetches the file.
const PREFETCH_AHEAD: usize = 2048;

/// How far behind its target `classic_run`'s prefetch may fall before it
/// catches up: half the distance.
const PREFETCH_SLACK: usize = PREFETCH_AHEAD / 2;

/// [`PcapReader::read_fast`]'s loop for one byte order: [`classic_fast`] record
/// after record, with the position kept in a register.
#[inline(always)]
fn classic_run<const BIG: bool>(
    data: &[u8],
    pos: &mut usize,
    c: &Classic,
    max: usize,
    f: &mut impl RecordSink,
) -> usize {
    let mut p = *pos;
    let mut n = 0;
    // Next line of the file to prefetch: every line before it has been,
    // and it stays between PREFETCH_AHEAD - PREFETCH_SLACK bytes past the
    // record just read and a line past PREFETCH_AHEAD, so that records of
    // any length find their header in cache (one prefetch a record at a
    // fixed distance skips most lines of long records: 87 % of FromDump's
    // cycles on a trace of whole frames were the load of the next record's
    // length).
    let mut pf = (p + PREFETCH_AHEAD) & !63;
    let turns = c.turns;
    while n < max {
        let Some((rec, ts, orig_len, end)) = classic_fast::<BIG>(data, p, c) else {
            break;
        };
        // Two lines a turn. Every record takes the same number of turns,
        // the previous call's average length (a loop the predictor
        // learns); only a run of longer records takes the catch-up loop.
        // A loop up to the target itself mispredicted on the lengths'
        // chance (0.32 a record on a header trace, 1.09 on a whole one,
        // simulated).
        let target = end + PREFETCH_AHEAD;
        // The first turn outside the loop: `0..turns` cost the header
        // trace 7 instructions a record more (callgrind).
        prefetch_pair(data, pf);
        pf += 128;
        for _ in 1..turns {
            prefetch_pair(data, pf);
            pf += 128;
        }
        pf = pf.min((target & !63) + 64);
        while pf + PREFETCH_SLACK < target {
            prefetch_pair(data, pf);
            pf += 128;
        }
        if !f.record(rec, ts, orig_len) {
            break;
        }
        p = end;
        n += 1;
    }
    *pos = p;
    n
}

/// Prefetch the two lines of the file from byte `at` on.
#[inline(always)]
fn prefetch_pair(data: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults, whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let at = data.as_ptr().wrapping_add(at);
        _mm_prefetch::<_MM_HINT_T0>(at as *const i8);
        _mm_prefetch::<_MM_HINT_T0>(at.wrapping_add(64) as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (data, at);
}

/// Everything the fast path of a classic record does not handle: the end of the file,
/// truncation, oversized, empty and oversnap records, caplen > len.
#[cold]
#[inline(never)]
fn classic_slow<'a>(
    data: &'a [u8],
    pos: &mut usize,
    stats: &mut ReadStats,
    c: Classic,
    link_type: LinkType,
) -> Option<Result<Record<'a>, RecordError>> {
    let p = *pos;
    let available = data.len().saturating_sub(p);
    if available == 0 {
        return None;
    }
    let h = match data
        .get(p..p + c.hdr_len)
        .and_then(|s| s.first_chunk::<16>())
    {
        Some(h) => h,
        None => {
            *pos = data.len();
            stats.truncated += 1;
            return Some(Err(RecordError::Truncated {
                offset: p as u64,
                needed: c.hdr_len as u64,
                available: available as u64,
            }));
        }
    };
    let caplen = word(h, 8, c.big_endian);
    let orig_len = word(h, 12, c.big_endian);
    if caplen > MAX_CAPLEN {
        *pos = data.len();
        stats.corrupt += 1;
        return Some(Err(RecordError::CaplenTooLarge {
            offset: p as u64,
            caplen,
        }));
    }
    let needed = c.hdr_len + caplen as usize;
    if needed > available {
        *pos = data.len();
        stats.truncated += 1;
        return Some(Err(RecordError::Truncated {
            offset: p as u64,
            needed: needed as u64,
            available: available as u64,
        }));
    }
    let start = p + c.hdr_len;
    let keep = if caplen > orig_len {
        stats.caplen_over_len += 1;
        orig_len
    } else {
        caplen
    };
    if caplen > c.snap_limit {
        stats.over_snaplen += 1;
    }
    if caplen == 0 {
        stats.empty += 1;
    }
    *pos = p + needed;
    stats.records += 1;
    let sec = word(h, 0, c.big_endian);
    let frac = word(h, 4, c.big_endian);
    Some(Ok(Record {
        ts_ns: sec as u64 * 1_000_000_000 + frac as u64 * c.frac_mul,
        orig_len,
        data: &data[start..start + keep as usize],
        link_type,
    }))
}

fn gunzip(compressed: &[u8], name: &str) -> Result<Vec<u8>, PcapError> {
    let mut out = Vec::new();
    match flate2::read::MultiGzDecoder::new(compressed).read_to_end(&mut out) {
        Ok(_) => Ok(out),
        Err(source) => Err(PcapError::Gzip {
            path: name.to_string(),
            source,
        }),
    }
}

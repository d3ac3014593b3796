//! The trace writer: classic pcap, byte-identical to Click's `ToDump`.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use super::error::PcapError;
use super::link::LinkType;

/// Click `ToDump`'s default SNAPLEN.
pub const DEFAULT_SNAPLEN: u32 = 2000;

/// The writer hands the file whole chunks of this size, each at an offset
/// that is a multiple of it (until a write fails, or a record too long for
/// the buffer's room, which one within the [`SLACK`] never is, comes): a buffered write of 2 MiB at a 2 MiB boundary is cached
/// as one 2 MiB folio by a filesystem with large folios (ext4 since Linux
/// 6.16, XFS), which a reader that maps the file (`FromDump`) can then map
/// with one page-table entry instead of 512. Written in 256 KiB pieces, the
/// 0.93 GB trace of `bench/flowmon.sh` cached as small folios: populating its
/// mapping took 35-63 ms and unmapping it 26-32 ms, against 0.7 and 5.5 ms
/// (session 27).
const CHUNK: usize = 2 << 20;

/// Room behind a chunk, so that a record of up to this size less its 16-byte
/// header always fits behind a chunk not yet full and can be buffered whole.
const SLACK: usize = 64 << 10;

/// Writes a classic pcap file (version 2.4, host byte order) as Click's `ToDump` does.
///
/// Records are assembled in a fixed buffer of a [`CHUNK`] and some [`SLACK`] (its
/// own, not a `BufWriter`), written out a whole 2 MiB chunk at a time:
/// the 16-byte record header is built in two 64-bit registers and stored once, and packet
/// data of up to 64 bytes is moved in 16-byte pieces instead of a `memcpy` call. With a
/// `BufWriter` the header went through a stack array whose four 32-bit stores were
/// reloaded as one 128-bit word, a store-forwarding stall that was two thirds of the
/// writer's cycles. A failed write keeps the unwritten bytes buffered: the record
/// that filled the chunk stays buffered, and the next record that needs the chunk
/// written first fails (as `flush` does) until a write succeeds.
pub struct PcapWriter {
    out: Box<dyn Write + Send>,
    /// The buffer; `buf[..used]` waits to be written.
    buf: Box<[u8]>,
    used: usize,
    /// Bytes kept per record; `u32::MAX` for "no limit".
    snaplen: u32,
    nanosecond: bool,
    count: u64,
    name: String,
}

impl std::fmt::Debug for PcapWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PcapWriter")
            .field("name", &self.name)
            .field("snaplen", &self.snaplen)
            .field("nanosecond", &self.nanosecond)
            .field("count", &self.count)
            .finish()
    }
}

impl PcapWriter {
    /// Creates (truncates) `path`, `-` meaning standard output, and writes the file
    /// header. `snaplen` 0 means no limit and is stored as `0xffffffff`, as `ToDump` does;
    /// `nanosecond` selects the `a1b23c4d` magic and nanosecond record timestamps.
    pub fn create(
        path: impl AsRef<Path>,
        link_type: LinkType,
        snaplen: u32,
        nanosecond: bool,
    ) -> Result<Self, PcapError> {
        let path = path.as_ref();
        let (name, out): (String, Box<dyn Write + Send>) = if path == Path::new("-") {
            ("<stdout>".to_string(), Box::new(io::stdout()))
        } else {
            let name = path.display().to_string();
            match File::create(path) {
                Ok(f) => (name, Box::new(f)),
                Err(source) => return Err(PcapError::Io { path: name, source }),
            }
        };
        Ok(Self::with_name(name, out, link_type, snaplen, nanosecond))
    }

    /// Like [`PcapWriter::create`], writing to any byte sink.
    pub fn new(
        out: impl Write + Send + 'static,
        link_type: LinkType,
        snaplen: u32,
        nanosecond: bool,
    ) -> io::Result<Self> {
        let out = Box::new(out);
        Ok(Self::with_name(
            "<writer>".into(),
            out,
            link_type,
            snaplen,
            nanosecond,
        ))
    }

    /// The writer with the file header in its buffer (written out with the first records).
    fn with_name(
        name: String,
        out: Box<dyn Write + Send>,
        link_type: LinkType,
        snaplen: u32,
        nanosecond: bool,
    ) -> Self {
        let mut w = PcapWriter {
            out,
            buf: vec![0; CHUNK + SLACK].into_boxed_slice(),
            used: 0,
            snaplen: if snaplen == 0 { u32::MAX } else { snaplen },
            nanosecond,
            count: 0,
            name,
        };
        w.write_file_header(link_type);
        w
    }

    fn write_file_header(&mut self, link_type: LinkType) {
        let magic: u32 = if self.nanosecond {
            0xa1b2_3c4d
        } else {
            0xa1b2_c3d4
        };
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&magic.to_ne_bytes());
        h[4..6].copy_from_slice(&2u16.to_ne_bytes());
        h[6..8].copy_from_slice(&4u16.to_ne_bytes());
        // thiszone (8..12) and sigfigs (12..16) stay 0.
        h[16..20].copy_from_slice(&self.snaplen.to_ne_bytes());
        h[20..24].copy_from_slice(&link_type.0.to_ne_bytes());
        self.buf[..24].copy_from_slice(&h);
        self.used = 24;
    }

    /// Appends records from `recs` (each as for [`PcapWriter::write`]) to the
    /// buffer while they fit in its current chunk, and stops at the first that
    /// does not, which is taken from `recs` but not written (pass it and the rest to
    /// [`PcapWriter::write`]). Returns how many were written and the sum of
    /// their data lengths before the snaplen cut. The loop never flushes, so
    /// it keeps the buffer's position and settings in locals (the
    /// per-record `write` reloaded them after each record's stores).
    #[inline]
    pub fn write_buffered<'a>(
        &mut self,
        recs: impl Iterator<Item = (u64, u32, &'a [u8])>,
    ) -> (usize, u64) {
        let snaplen = self.snaplen as usize;
        let nanosecond = self.nanosecond;
        let buf = &mut self.buf[..CHUNK];
        let mut used = self.used;
        let (mut n, mut bytes) = (0usize, 0u64);
        for (ts_ns, orig_len, data) in recs {
            let caplen = data.len().min(snaplen);
            let Some(rec) = buf.get_mut(used..used + 16 + caplen) else {
                break;
            };
            let h = record_header(ts_ns, orig_len, data.len(), caplen, nanosecond);
            put_record(rec, &h, &data[..caplen]);
            used += 16 + caplen;
            n += 1;
            bytes += data.len() as u64;
        }
        self.used = used;
        self.count += n as u64;
        (n, bytes)
    }

    /// Writes one record: timestamp `ts_ns` (nanoseconds since the epoch; cut to
    /// microseconds in a microsecond file, seconds stored modulo 2^32), original length
    /// `orig_len` (raised to `data.len()` if smaller, so caplen never exceeds it), and
    /// `data` cut to the snaplen.
    #[inline]
    pub fn write(&mut self, ts_ns: u64, orig_len: u32, data: &[u8]) -> io::Result<()> {
        let caplen = data.len().min(self.snaplen as usize);
        let header = record_header(ts_ns, orig_len, data.len(), caplen, self.nanosecond);
        let data = &data[..caplen];
        let at = self.used;
        if at + 16 + caplen > CHUNK {
            return self.write_slow(header, data);
        }
        put_record(&mut self.buf[at..at + 16 + caplen], &header, data);
        self.used = at + 16 + caplen;
        self.count += 1;
        Ok(())
    }

    /// [`PcapWriter::write`] when the record does not fit in the current chunk:
    /// writes out a chunk still waiting from a failed write (the record is not
    /// added if that fails again), buffers the record in the chunk's slack and
    /// writes the full chunk. A record too long for the room the buffer has
    /// behind the bytes it holds is written directly, after them.
    #[cold]
    #[inline(never)]
    fn write_slow(&mut self, header: [[u8; 8]; 2], data: &[u8]) -> io::Result<()> {
        self.flush_chunks()?;
        let (at, n) = (self.used, 16 + data.len());
        if at + n <= self.buf.len() {
            put_record(&mut self.buf[at..at + n], &header, data);
            self.used = at + n;
            self.count += 1;
            // The record is buffered whatever happens to the chunk: if this
            // write fails, the bytes stay and the next record or `flush`
            // that needs them out reports it.
            let _ = self.flush_chunks();
            return Ok(());
        }
        self.flush_buf()?;
        self.out.write_all(&header[0])?;
        self.out.write_all(&header[1])?;
        self.out.write_all(data)?;
        self.count += 1;
        Ok(())
    }

    /// Writes out every whole chunk buffered.
    fn flush_chunks(&mut self) -> io::Result<()> {
        while self.used >= CHUNK {
            self.write_out(CHUNK)?;
        }
        Ok(())
    }

    /// Writes the buffered bytes out. On an error the bytes not yet written stay
    /// buffered (at the front) for the next attempt.
    fn flush_buf(&mut self) -> io::Result<()> {
        self.write_out(self.used)
    }

    /// Writes the first `len` buffered bytes out and moves the rest to the
    /// front. On an error the bytes not yet written stay buffered, in order.
    fn write_out(&mut self, len: usize) -> io::Result<()> {
        let mut done = 0;
        let mut result = Ok(());
        while done < len {
            match self.out.write(&self.buf[done..len]) {
                Ok(0) => {
                    result = Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "failed to write the buffered data",
                    ));
                    break;
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.buf.copy_within(done..self.used, 0);
        self.used -= done;
        result
    }

    /// Flushes the buffer to the file. Dropping the writer flushes too, but silently
    /// ignores errors: call this to see them.
    pub fn flush(&mut self) -> io::Result<()> {
        self.flush_buf()?;
        self.out.flush()
    }

    /// Records written so far (Click's `count` handler).
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The snaplen written in the header (`0xffffffff` for "no limit").
    pub fn snaplen(&self) -> u32 {
        self.snaplen
    }

    /// The file name (`<stdout>` for `-`).
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for PcapWriter {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// A record's 16-byte header (see [`PcapWriter::write`]).
#[inline(always)]
fn record_header(
    ts_ns: u64,
    orig_len: u32,
    data_len: usize,
    caplen: usize,
    nanosecond: bool,
) -> [[u8; 8]; 2] {
    let sec = (ts_ns / 1_000_000_000) as u32;
    let sub_ns = (ts_ns % 1_000_000_000) as u32;
    let frac = if nanosecond { sub_ns } else { sub_ns / 1000 };
    let len = orig_len.max(u32::try_from(data_len).unwrap_or(u32::MAX));
    // caplen <= snaplen <= u32::MAX.
    [pair(sec, frac), pair(caplen as u32, len)]
}

/// Stores a record (`header`, then `data`) into `rec`, 16 bytes longer
/// than `data`: the header as two 8-byte stores (one 16-byte store of a
/// header built on the stack stalled on store forwarding).
#[inline(always)]
fn put_record(rec: &mut [u8], header: &[[u8; 8]; 2], data: &[u8]) {
    rec[..8].copy_from_slice(&header[0]);
    rec[8..16].copy_from_slice(&header[1]);
    copy_short(&mut rec[16..], data);
}

/// The bytes of `a` then those of `b`, each in host order, as one word.
#[inline(always)]
fn pair(a: u32, b: u32) -> [u8; 8] {
    if cfg!(target_endian = "little") {
        (u64::from(a) | u64::from(b) << 32).to_le_bytes()
    } else {
        (u64::from(a) << 32 | u64::from(b)).to_be_bytes()
    }
}

/// `dst.copy_from_slice(src)`, with lengths of 16 to 64 bytes (minimum-size frames and
/// most IP headers captured with their first bytes) moved as two or four overlapping
/// 16-byte pieces rather than through a `memcpy` call.
#[inline(always)]
fn copy_short(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    let dst = &mut dst[..n];
    let mut piece = |at: usize| dst[at..at + 16].copy_from_slice(&src[at..at + 16]);
    if (32..=64).contains(&n) {
        piece(0);
        piece(16);
        piece(n - 32);
        piece(n - 16);
    } else if (16..32).contains(&n) {
        piece(0);
        piece(n - 16);
    } else {
        dst.copy_from_slice(src);
    }
}

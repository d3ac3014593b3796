//! The trace writer: classic pcap, byte-identical to Click's `ToDump`.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use super::error::PcapError;
use super::link::LinkType;

/// Click `ToDump`'s default SNAPLEN.
pub const DEFAULT_SNAPLEN: u32 = 2000;

const BUFFER_SIZE: usize = 256 * 1024;

/// Writes a classic pcap file (version 2.4, host byte order) as Click's `ToDump` does.
pub struct PcapWriter {
    out: BufWriter<Box<dyn Write + Send>>,
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
        let mut w = Self::with_name(name, out, snaplen, nanosecond);
        match w.write_file_header(link_type) {
            Ok(()) => Ok(w),
            Err(source) => Err(PcapError::Io {
                path: w.name,
                source,
            }),
        }
    }

    /// Like [`PcapWriter::create`], writing to any byte sink.
    pub fn new(
        out: impl Write + Send + 'static,
        link_type: LinkType,
        snaplen: u32,
        nanosecond: bool,
    ) -> io::Result<Self> {
        let mut w = Self::with_name("<writer>".to_string(), Box::new(out), snaplen, nanosecond);
        w.write_file_header(link_type)?;
        Ok(w)
    }

    fn with_name(name: String, out: Box<dyn Write + Send>, snaplen: u32, nanosecond: bool) -> Self {
        PcapWriter {
            out: BufWriter::with_capacity(BUFFER_SIZE, out),
            snaplen: if snaplen == 0 { u32::MAX } else { snaplen },
            nanosecond,
            count: 0,
            name,
        }
    }

    fn write_file_header(&mut self, link_type: LinkType) -> io::Result<()> {
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
        self.out.write_all(&h)
    }

    /// Writes one record: timestamp `ts_ns` (nanoseconds since the epoch; cut to
    /// microseconds in a microsecond file, seconds stored modulo 2^32), original length
    /// `orig_len` (raised to `data.len()` if smaller, so caplen never exceeds it), and
    /// `data` cut to the snaplen.
    #[inline]
    pub fn write(&mut self, ts_ns: u64, orig_len: u32, data: &[u8]) -> io::Result<()> {
        let caplen = data.len().min(self.snaplen as usize);
        let sec = (ts_ns / 1_000_000_000) as u32;
        let sub_ns = (ts_ns % 1_000_000_000) as u32;
        let frac = if self.nanosecond {
            sub_ns
        } else {
            sub_ns / 1000
        };
        let len = orig_len.max(u32::try_from(data.len()).unwrap_or(u32::MAX));
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&sec.to_ne_bytes());
        h[4..8].copy_from_slice(&frac.to_ne_bytes());
        // caplen <= snaplen <= u32::MAX.
        h[8..12].copy_from_slice(&(caplen as u32).to_ne_bytes());
        h[12..16].copy_from_slice(&len.to_ne_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(&data[..caplen])?;
        self.count += 1;
        Ok(())
    }

    /// Flushes the buffer to the file. Dropping the writer flushes too, but silently
    /// ignores errors: call this to see them.
    pub fn flush(&mut self) -> io::Result<()> {
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

//! Writes packets to a pcap file.
//!
//! # Synopsis
//! `ToDump(FILENAME [, KEYWORDS])`
//!
//! # Ports
//! One input, agnostic; zero or one output. With an output, packets pass
//! through after being written. With a pull input and no output, ToDump has
//! a task that pulls packets.
//!
//! # Arguments
//! - `FILENAME` (string): the file to write; `-` means standard output.
//! - `SNAPLEN` (integer, default 2000): bytes of each packet written.
//! - `ENCAP` (word, default `ETHER`): link type: `ETHER`, `IP`, `LINUX_SLL`,
//!   `LINUX_SLL2`, or a number.
//! - `USE_ENCAP_FROM` (element names): take the link type from the `encap`
//!   handler of these elements (e.g. a FromDump) when the router starts.
//! - `EXTRA_LENGTH` (boolean, default true): add the `EXTRA_LENGTH`
//!   annotation to each record's original length.
//! - `NANO` (boolean, default false): nanosecond timestamps.
//! - `UNBUFFERED` (boolean, default false): flush after every batch.
//! - `BURST` (integer, default 64): packets pulled per task run.
//!
//! # Handlers
//! - `count` (read): packets written.
//! - `filename` (read).
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> Strip(14) -> CheckIPHeader -> Unstrip(14) -> ToDump(out.pcap);
//! ```
//!
//! # Implementation
//! Records go to `linerate_io`'s `PcapWriter`, which assembles them in its
//! own buffer and writes the file in whole 2 MiB chunks at 2 MiB offsets
//! (256 KiB pieces before session 27): a filesystem with large folios (ext4
//! since Linux 6.16, XFS) caches each such write as one 2 MiB folio, which
//! `FromDump` maps with one page-table entry instead of 512. Replaying the
//! 2 M-packet header trace that `ToDump` had just written (`FromDump ->
//! Discard`, ext4): 32.7 -> 21.9 ms; writing it: 111.3 -> 101.5 ms on ext4,
//! 151.1 -> 146.8 ms into `/dev/shm`. The file
//! header and records are byte-identical to Click's ToDump (pcap 2.4,
//! thiszone 0, sigfigs 0). The record header is built in two 64-bit words
//! and data of up to 64 bytes is moved in 16-byte pieces (with a
//! `BufWriter`, the header's four 4-byte stores were reloaded as one
//! 16-byte word, a store-forwarding stall); the counters are kept in locals
//! for the batch. On the 2M trace into `/dev/shm` that took the pipeline
//! `... -> DecIPTTL -> SetIPChecksum -> Unstrip(14) -> ToDump` from 140 to
//! 125 user cycles a packet. A batch's records are appended by one
//! `PcapWriter::write_buffered` loop up to the first that does not fit,
//! which keeps the writer's position in a register (session 9: 2.5
//! instructions a packet fewer; making that loop free of `memcpy` calls by
//! leaving records outside 16-64 bytes to `write` cost 5 more, dropped). The kernel's side is larger and not ours to
//! shrink: about 112 cycles a packet to allocate and fill tmpfs pages, plus
//! about 40 to truncate the previous run's file when it is opened (buffer
//! sizes of 64 KiB to 4 MiB, `fallocate` ahead and a shared mapping of the
//! file were measured: none is cheaper, the mapping is twice as costly).
//! Write errors are reported once and counted; a failed write keeps the
//! unwritten bytes buffered for the next attempt; the file is flushed when
//! the run ends, including after Ctrl-C.

use linerate_io::pcap::{LinkType, PcapWriter};
use linerate_runtime::anno::offsets;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, IoCounts};
use std::any::Any;

/// The `ToDump` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "ToDump",
    port_count: "1/0-1",
    processing: "a/a",
    doc: element_doc!("userlevel/todump"),
    make,
};

struct ToDump {
    filename: String,
    writer: Option<PcapWriter>,
    snaplen: u32,
    link: LinkType,
    extra_length: bool,
    nano: bool,
    unbuffered: bool,
    burst: usize,
    pull_task: bool,
    count: u64,
    bytes: u64,
    errors: u64,
}

/// Parse an `ENCAP` value.
fn parse_encap(s: &str) -> Option<LinkType> {
    Some(match s {
        "ETHER" | "ETHERNET" => LinkType::ETHERNET,
        "IP" => LinkType::RAW_DLT12,
        "LINUX_SLL" | "SLL" => LinkType::LINUX_SLL,
        "LINUX_SLL2" => LinkType::LINUX_SLL2,
        n => LinkType(n.parse().ok()?),
    })
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let filename: Option<String> = a.read_mp("FILENAME");
    let snaplen: u32 = a.read_or("SNAPLEN", 2000);
    let encap: Option<linerate_args::Word> = a.read_p("ENCAP");
    let extra_length = a.read_or("EXTRA_LENGTH", true);
    let nano = a.read_or("NANO", false);
    let unbuffered = a.read_or("UNBUFFERED", false);
    let burst = a.read_or("BURST", ctx.default_burst).max(1);
    let use_from: Vec<linerate_args::Raw> = a.read_all("USE_ENCAP_FROM");
    a.complete().map_err(|e| e.0)?;
    if !use_from.is_empty() {
        return Err(vec![
            "USE_ENCAP_FROM is not supported yet; give ENCAP explicitly".into(),
        ]);
    }
    let link = match encap {
        None => LinkType::ETHERNET,
        Some(w) => parse_encap(&w.0)
            .ok_or_else(|| vec![format!("ENCAP: unknown encapsulation '{}'", w.0)])?,
    };
    Ok(Box::new(ToDump {
        filename: filename.unwrap_or_default(),
        writer: None,
        snaplen,
        link,
        extra_length,
        nano,
        unbuffered,
        burst,
        pull_task: !ctx.input_is_push(0) && ctx.noutputs() == 0,
        count: 0,
        bytes: 0,
        errors: 0,
    }))
}

const HANDLERS: &[HandlerSpec] = &[HandlerSpec::counter("count"), HandlerSpec::read("filename")];

impl ToDump {
    fn write(&mut self, b: &Batch) {
        let Some(w) = self.writer.as_mut() else {
            return;
        };
        let extra_length = self.extra_length;
        let orig = |p: &linerate_runtime::Packet| {
            let extra = if extra_length {
                p.anno().u32(offsets::EXTRA_LENGTH)
            } else {
                0
            };
            (p.len() as u32).saturating_add(extra)
        };
        // While the records fit in the buffer, a loop that never flushes;
        // from the first that does not, one write each (flushes, errors).
        let (done, mut bytes) =
            w.write_buffered(b.iter().map(|p| (p.timestamp_ns(), orig(p), p.data())));
        let mut count = done as u64;
        for p in b.iter().skip(done) {
            match w.write(p.timestamp_ns(), orig(p), p.data()) {
                Ok(()) => {
                    count += 1;
                    bytes += p.len() as u64;
                }
                Err(e) => {
                    if self.errors == 0 {
                        eprintln!("{}: {e}", self.filename);
                    }
                    self.errors += 1;
                }
            }
        }
        self.count += count;
        self.bytes += bytes;
        if self.unbuffered {
            let _ = w.flush();
        }
    }
}

impl Element for ToDump {
    fn initialize(&mut self, _ctx: &mut linerate_runtime::InitCtx<'_>) -> Result<(), String> {
        let w = PcapWriter::create(&self.filename, self.link, self.snaplen, self.nano)
            .map_err(|e| e.to_string())?;
        self.writer = Some(w);
        Ok(())
    }

    fn action(&mut self, batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        self.write(&batch);
        batch
    }

    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        self.write(&batch);
        if ctx.noutputs() > 0 {
            ctx.push(0, batch);
        }
    }

    fn is_task(&self) -> bool {
        self.pull_task
    }

    fn run_task(&mut self, ctx: &mut Ctx<'_>) -> bool {
        match ctx.pull(0, self.burst) {
            Some(b) => {
                self.write(&b);
                true
            }
            None => false,
        }
    }

    fn cleanup(&mut self) {
        if let Some(w) = self.writer.as_mut() {
            if let Err(e) = w.flush() {
                eprintln!("{}: {e}", self.filename);
            }
        }
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "count" => self.count.to_string(),
            "filename" => self.filename.clone(),
            _ => return None,
        })
    }

    fn io_counts(&self) -> Option<IoCounts> {
        Some(IoCounts {
            source: false,
            packets: self.count,
            bytes: self.bytes,
        })
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![("write error", self.errors)]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

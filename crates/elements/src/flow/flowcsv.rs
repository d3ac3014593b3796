//! Writes flow records to a CSV file, one record per line.
//!
//! # Synopsis
//! `FlowCSV(FILENAME [, KEYWORDS])`
//!
//! # Ports
//! One push input: flow records (`FlowRecord` packets from
//! `FlowAggregator`). Zero or one push output: the records, unchanged,
//! for another exporter. Packets that are not flow records are counted
//! (`bad`) and dropped.
//!
//! # Arguments
//! - `FILENAME` (string): the file to write (truncated); `-` is standard
//!   output.
//! - `HEADER` (boolean, default true): write the header line first.
//!
//! Columns, in order (the header line names them):
//!
//! | column | meaning |
//! | --- | --- |
//! | `version` | IP version, 4 or 6 |
//! | `src`, `dst` | addresses (dotted IPv4, or IPv6 text) |
//! | `sport`, `dport` | ports; ICMP: `sport` the echo identifier, `dport` type × 256 + code |
//! | `proto` | transport protocol number |
//! | `vlan` | VLAN id (0 if untagged or not in the key) |
//! | `biflow` | 1 for an RFC 5103 biflow record |
//! | `end_reason` | IPFIX flowEndReason: 1 idle, 2 active, 3 end of flow, 4 forced end, 5 lack of resources |
//! | `packets`, `bytes` | forward packets and IP bytes |
//! | `first`, `last` | forward first/last packet time, UNIX seconds with 6 decimals (µs) |
//! | `duration` | record duration over both directions, seconds (µs) |
//! | `min_iat`, `max_iat` | forward smallest/largest gap between packets, seconds (µs) |
//! | `min_len`, `max_len`, `first_len`, `second_len` | forward IP lengths |
//! | `tcp_flags` | OR of the forward TCP flags |
//! | `tos` | forward ToS / traffic class of the first packet |
//! | `min_ttl`, `max_ttl` | forward TTL / hop limit range |
//! | `rev_packets` … `rev_max_ttl` | the same 14 features (all but `duration`) for the reverse direction (0 for one-way records) |
//!
//! # Handlers
//! - `count` (read): records written.
//! - `bad` (read): input packets that were not flow records.
//!
//! # Example
//! ```click
//! FromDump(trace.pcap, STOP true) -> CheckIPHeader(14) -> MicroflowTable
//!   -> FlowAggregator(BIFLOW true) -> FlowCSV(flows.csv);
//! ```
//!
//! # Implementation
//! Records are formatted straight into a buffered writer (no allocation per
//! record); the file is flushed at cleanup. There is no separate reference
//! implementation: the element is formatting only (`IMPL` is accepted for
//! uniformity and both values behave the same).
//!
//! Not in Click.

use super::record::{pass_on, Direction, FlowRecord};
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, InitCtx};
use std::any::Any;
use std::fmt;
use std::io::Write;

/// The `FlowCSV` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "FlowCSV",
    port_count: "1/0-1",
    processing: "h/h",
    doc: element_doc!("flow/flowcsv"),
    make,
};

/// A record's address as text: dotted IPv4 for version 4.
pub(crate) struct Addr<'a>(pub &'a [u8; 16], pub u8);

impl fmt::Display for Addr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.1 == 4 {
            let a = &self.0[12..16];
            write!(f, "{}.{}.{}.{}", a[0], a[1], a[2], a[3])
        } else {
            std::net::Ipv6Addr::from(*self.0).fmt(f)
        }
    }
}

/// Nanoseconds as seconds with six decimals (microsecond precision,
/// truncated).
pub(crate) struct Secs(pub u64);

impl fmt::Display for Secs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{:06}",
            self.0 / 1_000_000_000,
            self.0 % 1_000_000_000 / 1000
        )
    }
}

/// The writer of an exporter's file: a file or standard output.
pub(crate) type Out = std::io::BufWriter<Box<dyn Write + Send>>;

/// Open `name` (`-`: standard output) for writing.
pub(crate) fn open(name: &str) -> Result<Out, String> {
    let w: Box<dyn Write + Send> = if name == "-" {
        Box::new(std::io::stdout())
    } else {
        Box::new(std::fs::File::create(name).map_err(|e| format!("{name}: {e}"))?)
    };
    Ok(std::io::BufWriter::with_capacity(1 << 16, w))
}

/// What FlowCSV and FlowJSON share: the output file, one line per record
/// packet, the `count`/`bad` counters and the first write error.
pub(crate) struct RecordFile {
    class: &'static str,
    filename: String,
    out: Option<Out>,
    count: u64,
    bad: u64,
    error: Option<String>,
}

/// The handlers of FlowCSV and FlowJSON.
pub(crate) const RECORD_FILE_HANDLERS: &[HandlerSpec] =
    &[HandlerSpec::counter("count"), HandlerSpec::counter("bad")];

impl RecordFile {
    /// A file not opened yet (see [`open`](Self::open)).
    pub(crate) fn new(class: &'static str, filename: String) -> RecordFile {
        RecordFile {
            class,
            filename,
            out: None,
            count: 0,
            bad: 0,
            error: None,
        }
    }

    /// Open the file; `header` is written first when given.
    pub(crate) fn open(&mut self, header: Option<&str>) -> Result<(), String> {
        let mut w = open(&self.filename)?;
        if let Some(h) = header {
            writeln!(w, "{h}").map_err(|e| format!("{}: {e}", self.filename))?;
        }
        self.out = Some(w);
        Ok(())
    }

    /// Write each flow record of `batch` with `line`; count the others.
    pub(crate) fn write_batch(
        &mut self,
        batch: &Batch,
        line: impl Fn(&mut Out, &FlowRecord) -> std::io::Result<()>,
    ) -> u64 {
        let mut copy = None;
        let mut bad = 0;
        for p in batch.iter() {
            match FlowRecord::at(p.data(), &mut copy) {
                Some(r) => {
                    self.count += 1;
                    if let Some(w) = self.out.as_mut() {
                        if let Err(e) = line(w, r) {
                            self.error.get_or_insert(e.to_string());
                        }
                    }
                }
                None => bad += 1,
            }
        }
        self.bad += bad;
        bad
    }

    /// Flush and report errors (the element's `cleanup`).
    pub(crate) fn finish(&mut self) {
        if let Some(mut w) = self.out.take() {
            if let Err(e) = w.flush() {
                eprintln!("{}: {}: {e}", self.class, self.filename);
            }
        }
        if let Some(e) = &self.error {
            eprintln!("{}: {}: {e}", self.class, self.filename);
        }
    }

    /// The `count` and `bad` handlers.
    pub(crate) fn read(&self, name: &str) -> Option<String> {
        match name {
            "count" => Some(self.count.to_string()),
            "bad" => Some(self.bad.to_string()),
            _ => None,
        }
    }

    /// Packets that were not flow records, for the summary.
    pub(crate) fn drops(&self) -> Vec<(&'static str, u64)> {
        if self.bad == 0 {
            Vec::new()
        } else {
            vec![("not a flow record", self.bad)]
        }
    }
}

const DIR_COLUMNS: [&str; 14] = [
    "packets",
    "bytes",
    "first",
    "last",
    "min_iat",
    "max_iat",
    "min_len",
    "max_len",
    "first_len",
    "second_len",
    "tcp_flags",
    "tos",
    "min_ttl",
    "max_ttl",
];

fn write_dir(w: &mut Out, d: &Direction) -> std::io::Result<()> {
    write!(
        w,
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
        d.packets,
        d.bytes,
        Secs(d.first_ns),
        Secs(d.last_ns),
        Secs(d.min_iat_ns),
        Secs(d.max_iat_ns),
        d.min_len,
        d.max_len,
        d.first_len,
        d.second_len,
        d.tcp_flags,
        d.tos,
        d.min_ttl,
        d.max_ttl
    )
}

fn write_record(w: &mut Out, r: &FlowRecord) -> std::io::Result<()> {
    let k = &r.key;
    write!(
        w,
        "{},{},{},{},{},{},{},{},{},",
        k.version,
        Addr(&k.src, k.version),
        Addr(&k.dst, k.version),
        k.sport,
        k.dport,
        k.proto,
        r.vlan,
        r.biflow,
        r.end_reason
    )?;
    let d = &r.fwd;
    write!(
        w,
        "{},{},{},{},{},",
        d.packets,
        d.bytes,
        Secs(d.first_ns),
        Secs(d.last_ns),
        Secs(r.duration_ns())
    )?;
    write!(
        w,
        "{},{},{},{},{},{},{},{},{},{},",
        Secs(d.min_iat_ns),
        Secs(d.max_iat_ns),
        d.min_len,
        d.max_len,
        d.first_len,
        d.second_len,
        d.tcp_flags,
        d.tos,
        d.min_ttl,
        d.max_ttl
    )?;
    write_dir(w, &r.rev)?;
    writeln!(w)
}

fn header() -> String {
    let mut h = String::from("version,src,dst,sport,dport,proto,vlan,biflow,end_reason,");
    h.push_str("packets,bytes,first,last,duration,min_iat,max_iat,min_len,max_len,");
    h.push_str("first_len,second_len,tcp_flags,tos,min_ttl,max_ttl");
    for c in DIR_COLUMNS {
        h.push_str(",rev_");
        h.push_str(c);
    }
    h
}

struct FlowCsv {
    file: RecordFile,
    header: bool,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    use linerate_args::{Args, Word};
    let mut a = Args::new(&ctx.args);
    let filename: Option<String> = a.read_mp("FILENAME");
    let header = a.read_or("HEADER", true);
    let imp = a.read_or("IMPL", Word("fast".into())).0;
    a.complete().map_err(|e| e.0)?;
    if imp != "fast" && imp != "reference" {
        return Err(vec!["IMPL must be 'fast' or 'reference'".into()]);
    }
    Ok(Box::new(FlowCsv {
        file: RecordFile::new("FlowCSV", filename.unwrap_or_default()),
        header,
    }))
}

impl Element for FlowCsv {
    fn initialize(&mut self, _ctx: &mut InitCtx<'_>) -> Result<(), String> {
        let h = header();
        self.file.open(self.header.then_some(h.as_str()))
    }

    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        let rejected = self.file.write_batch(&batch, write_record);
        pass_on(batch, rejected, ctx);
    }

    fn cleanup(&mut self) {
        self.file.finish();
    }

    fn handlers(&self) -> &[HandlerSpec] {
        RECORD_FILE_HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        self.file.read(name)
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        self.file.drops()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(
            Secs(1_353_690_000_123_456_789).to_string(),
            "1353690000.123456"
        );
        assert_eq!(Secs(5_000).to_string(), "0.000005");
        let a = linerate_runtime::flow::map_v4([10, 0, 0, 1]);
        assert_eq!(Addr(&a, 4).to_string(), "10.0.0.1");
        assert_eq!(Addr(&a, 6).to_string(), "::ffff:10.0.0.1");
        assert_eq!(header().split(',').count(), 9 + 15 + 14);
    }
}

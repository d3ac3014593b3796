//! Writes flow records as JSON, one object per line (JSON Lines).
//!
//! # Synopsis
//! `FlowJSON(FILENAME [, KEYWORDS])`
//!
//! # Ports
//! One push input: flow records (`FlowRecord` packets from
//! `FlowAggregator`). Zero or one push output: the records, unchanged.
//! Packets that are not flow records are counted (`bad`) and dropped.
//!
//! # Arguments
//! - `FILENAME` (string): the file to write (truncated); `-` is standard
//!   output.
//!
//! Each line is an object with the keys `version`, `src`, `dst`, `sport`,
//! `dport`, `proto`, `vlan`, `biflow` (boolean), `end_reason` (IPFIX
//! flowEndReason code), `duration` (seconds, 6 decimals), and `fwd`: an
//! object with `packets`, `bytes`, `first`, `last` (UNIX seconds with 6
//! decimals, microsecond precision), `min_iat`, `max_iat` (seconds),
//! `min_len`, `max_len`, `first_len`, `second_len`, `tcp_flags`, `tos`,
//! `min_ttl`, `max_ttl`. Biflow records also have `rev`, the same object for
//! the reverse direction. Ports and ICMP fields as in `FlowCSV`.
//!
//! # Handlers
//! - `count` (read): records written.
//! - `bad` (read): input packets that were not flow records.
//!
//! # Example
//! ```click
//! FromDump(trace.pcap, STOP true) -> CheckIPHeader(14) -> MicroflowTable
//!   -> FlowAggregator -> FlowJSON(flows.jsonl);
//! ```
//!
//! # Implementation
//! Formatted straight into a buffered writer, no allocation per record;
//! flushed at cleanup. Formatting only: `IMPL` is accepted for uniformity
//! and both values behave the same.
//!
//! Not in Click.

use super::flowcsv::{Addr, Out, RecordFile, Secs, RECORD_FILE_HANDLERS};
use super::record::{pass_on, Direction, FlowRecord};
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, InitCtx};
use std::any::Any;
use std::io::Write;

/// The `FlowJSON` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "FlowJSON",
    port_count: "1/0-1",
    processing: "h/h",
    doc: element_doc!("flow/flowjson"),
    make,
};

fn write_dir(w: &mut Out, d: &Direction) -> std::io::Result<()> {
    write!(
        w,
        "{{\"packets\":{},\"bytes\":{},\"first\":{},\"last\":{},\"min_iat\":{},\"max_iat\":{},\
         \"min_len\":{},\"max_len\":{},\"first_len\":{},\"second_len\":{},\"tcp_flags\":{},\
         \"tos\":{},\"min_ttl\":{},\"max_ttl\":{}}}",
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
        "{{\"version\":{},\"src\":\"{}\",\"dst\":\"{}\",\"sport\":{},\"dport\":{},\"proto\":{},\
         \"vlan\":{},\"biflow\":{},\"end_reason\":{},\"duration\":{},\"fwd\":",
        k.version,
        Addr(&k.src, k.version),
        Addr(&k.dst, k.version),
        k.sport,
        k.dport,
        k.proto,
        r.vlan,
        r.biflow != 0,
        r.end_reason,
        Secs(r.duration_ns())
    )?;
    write_dir(w, &r.fwd)?;
    if r.biflow != 0 {
        write!(w, ",\"rev\":")?;
        write_dir(w, &r.rev)?;
    }
    writeln!(w, "}}")
}

struct FlowJson {
    file: RecordFile,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    use linerate_args::{Args, Word};
    let mut a = Args::new(&ctx.args);
    let filename: Option<String> = a.read_mp("FILENAME");
    let imp = a.read_or("IMPL", Word("fast".into())).0;
    a.complete().map_err(|e| e.0)?;
    if imp != "fast" && imp != "reference" {
        return Err(vec!["IMPL must be 'fast' or 'reference'".into()]);
    }
    Ok(Box::new(FlowJson {
        file: RecordFile::new("FlowJSON", filename.unwrap_or_default()),
    }))
}

impl Element for FlowJson {
    fn initialize(&mut self, _ctx: &mut InitCtx<'_>) -> Result<(), String> {
        self.file.open(None)
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

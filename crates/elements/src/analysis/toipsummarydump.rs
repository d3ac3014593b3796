//! Writes a one-line (or one-record) summary of each packet to a file, in
//! Click's IP summary dump format.
//!
//! # Synopsis
//! `ToIPSummaryDump(FILENAME [, KEYWORDS])`
//!
//! # Ports
//! One input, agnostic (a pull input is drained by a task); an optional push
//! output 0 that receives every packet after it is summarized.
//!
//! # Arguments
//! - `FILENAME` (string): output file; `-` is standard output.
//! - `FIELDS` (alias `CONTENTS`, deprecated `DATA`; space-separated field
//!   names, default `timestamp ip_src`, Click's default): what each line
//!   holds. Supported: `timestamp`, `ntimestamp`, `ts_sec`, `ts_usec`,
//!   `ts_usec1`, `first_timestamp`, `count`, `link`, `paint`, `direction`,
//!   `aggregate`, `wire_len`, `ip_src`, `ip_dst`, `ip_tos`, `ip_dscp`,
//!   `ip_ecn`, `ip_ttl`, `ip_frag`, `ip_fragoff`, `ip_id`, `ip_sum`,
//!   `ip_proto`, `ip_hl`, `ip_len`, `ip_capture_len`, `sport`, `dport`,
//!   `tcp_seq`, `tcp_ack`, `tcp_flags`, `tcp_window`, `tcp_urp`, `udp_len`,
//!   `icmp_type`, `icmp_code`, `payload_len`, and Click's synonyms (`src`,
//!   `len`, `proto`, `ip_p`, `tcp seq` with a space, ...). Not supported:
//!   `ip_opt`, `tcp_opt`, `tcp_ntopt`, `tcp_sack`, `payload`, `payload_md5`,
//!   `payload_md5_hex`, the named ICMP fields, `eth_src`, `eth_dst`.
//! - `HEADER` (boolean, default true): write the `!` header lines.
//! - `VERBOSE` (boolean, default false): add `!host` and `!runtime` lines.
//! - `BANNER` (string): add a `!creator "BANNER"` line.
//! - `MULTIPACKET` (boolean, default false): write `1 + EXTRA_PACKETS` lines
//!   for packets whose extra-packets annotation is set (not when `count` is
//!   a field), spreading length and timestamps as Click does.
//! - `BAD_PACKETS` (boolean, default false): write a `!bad MESSAGE` line
//!   before each packet with a bad IP, TCP or UDP header.
//! - `CAREFUL_TRUNC` (boolean, default true): report `!bad truncated IP
//!   missing N` for packets shorter than their IP length (with BAD_PACKETS).
//! - `EXTRA_LENGTH` (boolean, default true): use the extra-length
//!   annotation in `ip_len` and `payload_len`.
//! - `BINARY` (boolean, default false): write Click's binary records after a
//!   `!binary` line.
//!
//! # Handlers
//! - `flush` (write): flush buffered output to the file.
//! - `count` (read): packets summarized.
//!
//! # Example
//! ```click
//! FromDump(trace.pcap, STOP true, FORCE_IP true)
//!     -> ToIPSummaryDump(-, FIELDS timestamp ip_src sport ip_dst dport ip_proto);
//! ```
//!
//! # Implementation
//! Text and binary records are formatted into one reused buffer (no
//! allocation per packet) and written through a buffered file. Timestamps are
//! written at microsecond precision, as a default Click build does. Unlike
//! Click, `ts_usec1` is written as the intended number (Click swaps its two
//! 32-bit halves in text); its binary form matches Click's bytes. `!runtime`
//! shows the time in UTC.

use super::ipsumdump::{self, Annos, Field, WriteOptions};
use linerate_runtime::anno::offsets;
use linerate_runtime::{
    Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, InitCtx, Packet,
};
use std::any::Any;
use std::io::Write;

/// The `ToIPSummaryDump` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "ToIPSummaryDump",
    port_count: "1/0-1",
    processing: "a/h",
    doc: element_doc!("analysis/toipsummarydump"),
    make,
};

struct ToIPSummaryDump {
    filename: String,
    out: Option<Box<dyn Write + Send>>,
    fields: Vec<Field>,
    opts: WriteOptions,
    header: bool,
    verbose: bool,
    banner: Option<String>,
    multipacket: bool,
    pull: bool,
    has_output: bool,
    buf: Vec<u8>,
    count: u64,
    error: Option<String>,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let filename: Option<String> = a.read_mp("FILENAME");
    let mut fields_s = "timestamp ip_src".to_string();
    for kw in ["FIELDS", "CONTENTS", "DATA"] {
        if let Some(s) = a.read::<linerate_args::Raw>(kw) {
            fields_s = s.0;
        }
    }
    let verbose = a.read_or("VERBOSE", false);
    let header = a.read_or("HEADER", true);
    let banner: Option<String> = a.read("BANNER");
    let multipacket = a.read_or("MULTIPACKET", false);
    let bad_packets = a.read_or("BAD_PACKETS", false);
    let careful_trunc = a.read_or("CAREFUL_TRUNC", true);
    let extra_length = a.read_or("EXTRA_LENGTH", true);
    let binary = a.read_or("BINARY", false);
    a.complete().map_err(|e| e.0)?;
    let fields = ipsumdump::parse_fields(&fields_s)?;
    if fields.is_empty() {
        return Err(vec!["no contents specified".into()]);
    }
    let multipacket = multipacket && !fields.contains(&Field::Count);
    Ok(Box::new(ToIPSummaryDump {
        filename: filename.unwrap_or_default(),
        out: None,
        fields,
        opts: WriteOptions {
            binary,
            careful_trunc,
            extra_length,
            bad_packets,
        },
        header,
        verbose,
        banner,
        multipacket,
        pull: !ctx.input_is_push(0),
        has_output: ctx.noutputs() > 0,
        buf: Vec::with_capacity(1 << 16),
        count: 0,
        error: None,
    }))
}

/// Click's `cp_quote` for a banner: double quotes, backslash escapes.
fn quote(s: &str) -> String {
    let mut q = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\t' => q.push_str("\\t"),
            '\r' => q.push_str("\\r"),
            c if (c as u32) < 32 || c as u32 == 127 => q.push_str(&format!("\\{:03o}", c as u32)),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// UTC rendering in ctime's layout (`Tue Jul 24 17:53:30 2001`).
fn ctime_utc(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs / 86400;
    let rem = secs % 86400;
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        DAYS[(days % 7) as usize],
        MONTHS[(m - 1) as usize],
        d,
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        y
    )
}

impl ToIPSummaryDump {
    fn header_text(&self) -> String {
        let mut s = format!(
            "!IPSummaryDump {}.{}\n",
            ipsumdump::MAJOR_VERSION,
            ipsumdump::MINOR_VERSION
        );
        if let Some(b) = &self.banner {
            s.push_str(&format!("!creator {}\n", quote(b)));
        }
        if self.verbose {
            if let Ok(h) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
                s.push_str(&format!("!host {}\n", h.trim()));
            }
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            let mut ts = Vec::new();
            ipsumdump::push_timestamp(&mut ts, now.as_nanos() as u64);
            s.push_str(&format!(
                "!runtime {} ({})\n",
                String::from_utf8_lossy(&ts),
                ctime_utc(now.as_secs())
            ));
        }
        s.push_str("!data ");
        for (i, f) in self.fields.iter().enumerate() {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(if *f == Field::NTimestamp && !self.opts.binary {
                "timestamp"
            } else {
                f.name()
            });
        }
        s.push('\n');
        if self.opts.binary {
            s.push_str("!binary\n");
        }
        s
    }

    fn write_one(&mut self, p: &Packet, a: &Annos) {
        let start = self.buf.len();
        let bad = ipsumdump::summarize(&self.fields, p, a, &self.opts, &mut self.buf);
        if let Some(line) = bad {
            // The !bad line precedes the packet's record; in binary it is a
            // metadata record (high bit set in its length word, which holds
            // the text length without the word itself, exactly as Click
            // writes it).
            let mut pre = Vec::with_capacity(4 + line.len());
            if self.opts.binary {
                pre.extend_from_slice(&(line.len() as u32 | 0x8000_0000).to_be_bytes());
            }
            pre.extend_from_slice(line.as_bytes());
            self.buf.splice(start..start, pre);
        }
        self.count += 1;
    }

    fn write_packet(&mut self, p: &Packet) {
        let a = Annos::of(p);
        if self.multipacket && a.extra_packets > 0 {
            let count = 1 + a.extra_packets as u64;
            let len = p.len() as u64;
            let mut total = len
                + if self.opts.extra_length {
                    a.extra_length as u64
                } else {
                    0
                };
            total = total.max(count * len);
            let end = a.ts_ns;
            let first = p.anno().u64(offsets::FIRST_TIMESTAMP);
            let (mut ts, delta) = if first != 0 {
                (first, end.saturating_sub(first) / (count - 1))
            } else {
                (end, 0)
            };
            for i in (1..=count).rev() {
                let l = total / i;
                total -= l;
                let aa = Annos {
                    ts_ns: ts,
                    extra_length: (l - len) as u32,
                    extra_packets: 0,
                };
                self.write_one(p, &aa);
                ts = if i == 2 { end } else { ts + delta };
            }
        } else {
            self.write_one(p, &a);
        }
    }

    fn flush_buf(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        if let Some(out) = self.out.as_mut() {
            if let Err(e) = out.write_all(&self.buf) {
                if self.error.is_none() {
                    eprintln!("{}: {}", self.filename, e);
                    self.error = Some(e.to_string());
                }
            }
        }
        self.buf.clear();
    }

    fn handle(&mut self, batch: &Batch) {
        for p in batch.iter() {
            self.write_packet(p);
        }
        if self.buf.len() >= 1 << 15 {
            self.flush_buf();
        }
    }
}

impl Element for ToIPSummaryDump {
    fn initialize(&mut self, _ctx: &mut InitCtx<'_>) -> Result<(), String> {
        let out: Box<dyn Write + Send> = if self.filename == "-" {
            Box::new(std::io::stdout())
        } else {
            Box::new(
                std::fs::File::create(&self.filename)
                    .map_err(|e| format!("{}: {}", self.filename, e))?,
            )
        };
        self.out = Some(out);
        if self.header {
            let h = self.header_text();
            self.buf.extend_from_slice(h.as_bytes());
            self.flush_buf();
        }
        Ok(())
    }

    fn is_task(&self) -> bool {
        self.pull
    }

    fn run_task(&mut self, ctx: &mut Ctx<'_>) -> bool {
        match ctx.pull(0, linerate_runtime::DEFAULT_BURST) {
            Some(b) => {
                self.handle(&b);
                if self.has_output {
                    ctx.push(0, b);
                }
                true
            }
            None => false,
        }
    }

    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        self.handle(&batch);
        if self.has_output {
            ctx.push(0, batch);
        }
    }

    fn handlers(&self) -> &[HandlerSpec] {
        const H: &[HandlerSpec] = &[HandlerSpec::write("flush"), HandlerSpec::counter("count")];
        H
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        (name == "count").then(|| self.count.to_string())
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Option<Result<(), String>> {
        if name != "flush" {
            return None;
        }
        self.flush_buf();
        if let Some(o) = self.out.as_mut() {
            let _ = o.flush();
        }
        Some(Ok(()))
    }

    fn cleanup(&mut self) {
        self.flush_buf();
        if let Some(o) = self.out.as_mut() {
            let _ = o.flush();
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

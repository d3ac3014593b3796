//! Prints packet contents to standard error, one line per packet.
//!
//! # Synopsis
//! `Print([LABEL, MAXLENGTH, KEYWORDS])`
//!
//! # Ports
//! One input, one output; agnostic.
//!
//! # Arguments
//! - `LABEL` (string, default empty): text printed first, followed by `: `.
//! - `MAXLENGTH` (integer, default 24): at most this many content bytes are
//!   printed; negative prints the whole packet. `LENGTH`, `NBYTES` and
//!   `BYTES` are accepted as (deprecated) synonyms.
//! - `CONTENTS` (word, default `HEX`): `NONE`, `HEX` (groups of four bytes
//!   in hex separated by spaces) or `ASCII` (groups of eight characters,
//!   non-printable bytes as `.`); a boolean is also accepted (false: `NONE`,
//!   true: `HEX`).
//! - `TIMESTAMP` (boolean, default false): print the packet's timestamp
//!   (`SEC.USEC`).
//! - `PRINTANNO` (boolean, default false): print the 48 user annotation bytes
//!   in hex.
//! - `HEADROOM` (boolean, default false): print `(hHEADROOM tTAILROOM)`.
//! - `ACTIVE` (boolean, default true): print nothing while false.
//! - `CPU` (boolean): accepted for compatibility (Click prints the CPU only in
//!   the kernel module); prints the thread index in parentheses.
//!
//! The line is Click's: `LABEL: TIMESTAMP: LEN (hH tT) | ANNO | CONTENTS`,
//! where LEN is printed with `%4d` and each part is present only when
//! selected (the `: ` separators appear only after a label or timestamp).
//! For example `Print(x)` on a 5-byte packet prints `x:    5 | 01020304 05`.
//!
//! # Handlers
//! - `active` (read/write): the `ACTIVE` setting.
//!
//! # Example
//! ```click
//! InfiniteSource(DATA "hello", LIMIT 1, STOP true) -> Print(ok, CONTENTS ASCII) -> Discard;
//! // prints "ok:    5 |  hello"
//! ```
//!
//! # Implementation
//! Under the `click` driver sources send one packet per task run, so the
//! lines of several Prints in a chain interleave exactly as in Click; with
//! `linerate run` (batches of 64) each Print prints a whole batch in turn.
//! Lines for a whole batch are formatted into one reused buffer and written
//! to standard error with one system call per batch; nothing is allocated
//! per packet.

use linerate_runtime::anno::USER_ANNO_SIZE;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use std::any::Any;
use std::fmt::Write as _;
use std::io::Write as _;

/// The `Print` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "Print",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("standard/print"),
    make,
};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Contents {
    None,
    Hex,
    Ascii,
}

struct Print {
    label: String,
    maxlength: i64,
    contents: Contents,
    timestamp: bool,
    print_anno: bool,
    headroom: bool,
    cpu: bool,
    active: bool,
    buf: String,
}

fn parse_contents(s: &str) -> Result<Contents, String> {
    if let Ok(b) = <bool as linerate_args::ArgValue>::parse_arg(s) {
        return Ok(if b { Contents::Hex } else { Contents::None });
    }
    match s.to_ascii_uppercase().as_str() {
        "NONE" => Ok(Contents::None),
        "HEX" => Ok(Contents::Hex),
        "ASCII" => Ok(Contents::Ascii),
        _ => Err(format!(
            "bad contents value '{s}'; should be 'NONE', 'HEX', or 'ASCII'"
        )),
    }
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let label: String = a.read_p("LABEL").unwrap_or_default();
    let mut maxlength: i64 = a.read_p("MAXLENGTH").unwrap_or(24);
    for kw in ["LENGTH", "NBYTES", "BYTES"] {
        if let Some(v) = a.read::<i64>(kw) {
            maxlength = v;
        }
    }
    let contents: Option<linerate_args::Word> = a.read("CONTENTS");
    let timestamp = a.read_or("TIMESTAMP", false);
    let print_anno = a.read_or("PRINTANNO", false);
    let active = a.read_or("ACTIVE", true);
    let headroom = a.read_or("HEADROOM", false);
    let cpu = a.read_or("CPU", false);
    a.complete().map_err(|e| e.0)?;
    let contents = match contents {
        Some(w) => parse_contents(&w.0).map_err(|e| vec![e])?,
        None => Contents::Hex,
    };
    Ok(Box::new(Print {
        label,
        maxlength,
        contents,
        timestamp,
        print_anno,
        headroom,
        cpu,
        active,
        buf: String::with_capacity(256),
    }))
}

/// Append Click's `Timestamp` text (`SEC.USEC`) for `ns` nanoseconds.
pub(crate) fn push_timestamp(out: &mut String, ns: u64) {
    let _ = write!(
        out,
        "{}.{:06}",
        ns / 1_000_000_000,
        (ns % 1_000_000_000) / 1000
    );
}

const HEX: &[u8; 16] = b"0123456789abcdef";

impl Print {
    fn format(&self, out: &mut String, p: &Packet, thread: usize) {
        let mut sep = "";
        if !self.label.is_empty() {
            out.push_str(&self.label);
            sep = ": ";
        }
        if self.cpu {
            let _ = write!(out, "({thread})");
            sep = ": ";
        }
        if self.timestamp {
            out.push_str(sep);
            push_timestamp(out, p.timestamp_ns());
            sep = ": ";
        }
        let _ = write!(out, "{sep}{:4}", p.len());
        if self.headroom {
            let _ = write!(out, " (h{} t{})", p.headroom(), p.tailroom());
        }
        if self.print_anno {
            out.push_str(" | ");
            let a = p.anno();
            for i in 0..USER_ANNO_SIZE {
                let b = a.u8(i);
                out.push(HEX[(b >> 4) as usize] as char);
                out.push(HEX[(b & 15) as usize] as char);
            }
        }
        let data = p.data();
        let n = match self.contents {
            Contents::None => 0,
            _ if self.maxlength < 0 => data.len(),
            _ => data.len().min(self.maxlength as usize),
        };
        if n > 0 {
            out.push_str(" | ");
            match self.contents {
                Contents::Hex => {
                    for (i, &b) in data[..n].iter().enumerate() {
                        if i > 0 && i % 4 == 0 {
                            out.push(' ');
                        }
                        out.push(HEX[(b >> 4) as usize] as char);
                        out.push(HEX[(b & 15) as usize] as char);
                    }
                }
                Contents::Ascii => {
                    for (i, &b) in data[..n].iter().enumerate() {
                        if i % 8 == 0 {
                            out.push(' ');
                        }
                        out.push(if (32..=126).contains(&b) {
                            b as char
                        } else {
                            '.'
                        });
                    }
                }
                Contents::None => {}
            }
        }
        out.push('\n');
    }
}

const HANDLERS: &[HandlerSpec] = &[HandlerSpec::read_write("active")];

impl Element for Print {
    fn action(&mut self, batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        if !self.active || batch.is_empty() {
            return batch;
        }
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        let thread = ctx.thread();
        for p in batch.iter() {
            self.format(&mut buf, p, thread);
        }
        let _ = std::io::stderr().lock().write_all(buf.as_bytes());
        self.buf = buf;
        batch
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        match name {
            "active" => Some(self.active.to_string()),
            _ => None,
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        match name {
            "active" => Some(crate::parse_value::<bool>(value).map(|v| self.active = v)),
            _ => None,
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

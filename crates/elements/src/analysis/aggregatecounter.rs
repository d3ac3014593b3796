//! Counts packets or bytes per aggregate annotation value.
//!
//! # Synopsis
//! `AggregateCounter([KEYWORDS])`
//!
//! # Ports
//! One or two inputs, one or two outputs; agnostic. Input 1 is always
//! frozen. With two outputs (push), counted packets leave on output 0 and
//! the others on output 1.
//!
//! # Arguments
//! - `BYTES` (boolean, default false): count bytes, not packets.
//! - `IP_BYTES` (boolean, default false): leave out link-header bytes.
//! - `MULTIPACKET` (boolean, default true): count `1 + EXTRA_PACKETS`
//!   packets per packet.
//! - `EXTRA_LENGTH` (boolean, default true): add EXTRA_LENGTH to byte counts.
//! - `AGGREGATE_STOP`, `AGGREGATE_FREEZE` (unsigned): stop the driver, or
//!   freeze, once N distinct aggregates have been seen.
//! - `AGGREGATE_CALL` (`N HANDLER [VALUE]`): call a write handler once N
//!   distinct aggregates have been seen.
//! - `COUNT_STOP`, `COUNT_FREEZE` (unsigned), `COUNT_CALL`
//!   (`N HANDLER [VALUE]`): the same once the total count reaches N.
//! - `BANNER` (string): written after the first line of output files.
//!
//! # Handlers
//! - `write_text_file` (alias `write_ascii_file`), `write_file` (packed
//!   little-endian binary), `write_ip_file` (write): dump the counts to the
//!   named file (`-` is standard output) in Click's formats.
//! - `count` (read): the total count; `nagg` (read): aggregates seen.
//! - `freeze`, `active` (read/write); `stop` (write); `clear` (write);
//!   `banner` (read/write); `reaggregate_counts`, `counts_pdf` (write).
//!
//! # Example
//! ```click
//! FromDump(trace.pcap, STOP true, FORCE_IP true)
//!     -> AggregateIPFlows -> ac :: AggregateCounter -> Discard;
//! DriverManager(wait, write ac.write_text_file -);
//! ```
//!
//! # Implementation
//! A hash map from aggregate to count (Click uses a binary trie); files are
//! written in increasing aggregate order, which is the order Click's trie
//! walk produces. Counts are 32-bit and wrap as in Click. `write_pdf_file`
//! and writing `aggregate_call`/`count_call` are not supported.

use linerate_runtime::anno::offsets;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use std::any::Any;
use std::collections::HashMap;
use std::io::Write;

/// The `AggregateCounter` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "AggregateCounter",
    port_count: "1-2/1-2",
    processing: "a/a",
    doc: element_doc!("analysis/aggregatecounter"),
    make,
};

enum Action {
    Freeze,
    Stop,
    Call(String, Option<String>),
}

struct AggregateCounter {
    counts: HashMap<u32, u32>,
    nnz: u32,
    count: u64,
    bytes: bool,
    ip_bytes: bool,
    multipacket: bool,
    extra_length: bool,
    frozen: bool,
    active: bool,
    banner: String,
    call_nnz: Option<(u32, Action)>,
    call_count: Option<(u64, Action)>,
    stop_requested: bool,
    two_outputs: bool,
}

fn parse_call(s: &str) -> Option<(u64, Action)> {
    let mut w = s.trim().splitn(2, char::is_whitespace);
    let n: u64 = w.next()?.parse().ok()?;
    let rest = w.next()?.trim();
    let mut hw = rest.splitn(2, char::is_whitespace);
    let h = hw.next()?.to_string();
    let v = hw.next().map(|x| x.trim().to_string());
    Some((n, Action::Call(h, v)))
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let bytes = a.read_or("BYTES", false);
    let ip_bytes = a.read_or("IP_BYTES", false);
    let multipacket = a.read_or("MULTIPACKET", true);
    let extra_length = a.read_or("EXTRA_LENGTH", true);
    let agg_freeze: Option<u32> = a.read("AGGREGATE_FREEZE");
    let count_freeze: Option<u64> = a.read("COUNT_FREEZE");
    let agg_stop: Option<u32> = a.read("AGGREGATE_STOP");
    let count_stop: Option<u64> = a.read("COUNT_STOP");
    let agg_call: Option<linerate_args::Raw> = a.read("AGGREGATE_CALL");
    let count_call: Option<linerate_args::Raw> = a.read("COUNT_CALL");
    let banner: String = a.read_or("BANNER", String::new());
    a.complete().map_err(|e| e.0)?;
    let n = |x: bool| x as usize;
    if n(agg_freeze.is_some()) + n(agg_stop.is_some()) + n(agg_call.is_some()) > 1 {
        return Err(vec![
            "'AGGREGATE_FREEZE', 'AGGREGATE_STOP', and 'AGGREGATE_CALL' are mutually exclusive"
                .into(),
        ]);
    }
    if n(count_freeze.is_some()) + n(count_stop.is_some()) + n(count_call.is_some()) > 1 {
        return Err(vec![
            "'COUNT_FREEZE', 'COUNT_STOP', and 'COUNT_CALL' are mutually exclusive".into(),
        ]);
    }
    let call_nnz = if let Some(x) = agg_freeze {
        Some((x, Action::Freeze))
    } else if let Some(x) = agg_stop {
        Some((x, Action::Stop))
    } else if let Some(c) = agg_call {
        let (n, act) = parse_call(&c.0).ok_or_else(|| {
            vec!["AGGREGATE_CALL first word should be unsigned (number of aggregates)".to_string()]
        })?;
        Some((n as u32, act))
    } else {
        None
    };
    let call_count =
        if let Some(x) = count_freeze {
            Some((x, Action::Freeze))
        } else if let Some(x) = count_stop {
            Some((x, Action::Stop))
        } else if let Some(c) = count_call {
            Some(parse_call(&c.0).ok_or_else(|| {
                vec!["COUNT_CALL first word should be unsigned (count)".to_string()]
            })?)
        } else {
            None
        };
    Ok(Box::new(AggregateCounter {
        counts: HashMap::new(),
        nnz: 0,
        count: 0,
        bytes,
        ip_bytes,
        multipacket,
        extra_length,
        frozen: false,
        active: true,
        banner,
        call_nnz,
        call_count,
        stop_requested: false,
        two_outputs: ctx.noutputs() > 1,
    }))
}

impl AggregateCounter {
    fn run_action(&mut self, act: Action, ctx: &mut Ctx<'_>) {
        match act {
            Action::Freeze => self.frozen = true,
            Action::Stop => {
                self.active = false;
                ctx.stop_router();
            }
            Action::Call(h, v) => {
                if let Err(e) = ctx.call_handler(&h, Some(v.as_deref().unwrap_or(""))) {
                    eprintln!("{}: {}", ctx.name(), e);
                }
            }
        }
    }

    /// Click's `update`: true if the packet was counted.
    fn update(&mut self, p: &Packet, frozen: bool, ctx: &mut Ctx<'_>) -> bool {
        if !self.active {
            return false;
        }
        let agg = p.anno().u32(offsets::AGGREGATE);
        let amount: u32 = if !self.bytes {
            1 + if self.multipacket {
                p.anno().u32(offsets::EXTRA_PACKETS)
            } else {
                0
            }
        } else {
            let mut a = p.len() as u32
                + if self.extra_length {
                    p.anno().u32(offsets::EXTRA_LENGTH)
                } else {
                    0
                };
            if self.ip_bytes {
                if let Some(o) = p.network_header_offset() {
                    a = a.wrapping_sub(o as u32);
                }
            }
            a
        };
        let existing = self.counts.get(&agg).copied();
        if frozen && existing.unwrap_or(0) == 0 {
            return false;
        }
        if amount != 0 && existing.unwrap_or(0) == 0 {
            if let Some((n, _)) = &self.call_nnz {
                if self.nnz >= *n {
                    let (_, act) = self.call_nnz.take().expect("present");
                    self.run_action(act, ctx);
                    let f = frozen || self.frozen;
                    return self.update(p, f, ctx);
                }
            }
            self.nnz += 1;
        }
        let c = self.counts.entry(agg).or_insert(0);
        *c = c.wrapping_add(amount);
        self.count += amount as u64;
        if let Some((n, _)) = &self.call_count {
            if self.count >= *n {
                let (_, act) = self.call_count.take().expect("present");
                self.run_action(act, ctx);
            }
        }
        true
    }

    fn write_file(&self, fname: &str, format: u8) -> Result<(), String> {
        let mut v: Vec<(u32, u32)> = self
            .counts
            .iter()
            .filter(|(_, c)| **c > 0)
            .map(|(a, c)| (*a, *c))
            .collect();
        v.sort_unstable();
        let mut s: Vec<u8> = Vec::new();
        s.extend_from_slice(b"!IPAggregate 1.0\n");
        s.extend_from_slice(self.banner.as_bytes());
        if !self.banner.is_empty() && !self.banner.ends_with('\n') {
            s.push(b'\n');
        }
        s.extend_from_slice(format!("!num_nonzero {}\n", self.nnz).as_bytes());
        match format {
            1 => {
                s.extend_from_slice(b"!packed_le\n");
                for (a, c) in &v {
                    s.extend_from_slice(&a.to_le_bytes());
                    s.extend_from_slice(&c.to_le_bytes());
                }
            }
            2 => {
                s.extend_from_slice(b"!ip\n");
                for (a, c) in &v {
                    let b = a.to_be_bytes();
                    s.extend_from_slice(
                        format!("{}.{}.{}.{} {c}\n", b[0], b[1], b[2], b[3]).as_bytes(),
                    );
                }
            }
            _ => {
                for (a, c) in &v {
                    s.extend_from_slice(format!("{a} {c}\n").as_bytes());
                }
            }
        }
        let r = if fname == "-" {
            let mut o = std::io::stdout().lock();
            o.write_all(&s).and_then(|_| o.flush())
        } else {
            std::fs::write(fname, &s)
        };
        r.map_err(|e| format!("{fname}: {e}"))
    }

    fn reaggregate(&mut self) {
        let old = std::mem::take(&mut self.counts);
        self.nnz = 0;
        self.count = 0;
        for (_, c) in old {
            let e = self.counts.entry(c).or_insert(0);
            if *e == 0 {
                self.nnz += 1;
            }
            *e += 1;
            self.count += 1;
        }
    }
}

impl Element for AggregateCounter {
    fn calls_handlers(&self) -> bool {
        matches!(self.call_nnz, Some((_, Action::Call(..))))
            || matches!(self.call_count, Some((_, Action::Call(..))))
    }

    fn push(&mut self, port: usize, mut batch: Batch, ctx: &mut Ctx<'_>) {
        if std::mem::take(&mut self.stop_requested) {
            ctx.stop_router();
        }
        let frozen_port = port == 1;
        if self.two_outputs {
            let uncounted = batch.split_off_if(|p| {
                let f = self.frozen || frozen_port;
                !self.update(p, f, ctx)
            });
            ctx.push(0, batch);
            ctx.push(1, uncounted);
        } else {
            for p in batch.iter() {
                let f = self.frozen || frozen_port;
                self.update(p, f, ctx);
            }
            ctx.push(0, batch);
        }
    }

    fn action(&mut self, batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        if std::mem::take(&mut self.stop_requested) {
            ctx.stop_router();
        }
        for p in batch.iter() {
            let f = self.frozen;
            self.update(p, f, ctx);
        }
        batch
    }

    fn handlers(&self) -> &[HandlerSpec] {
        const H: &[HandlerSpec] = &[
            HandlerSpec::write("write_text_file"),
            HandlerSpec::write("write_ascii_file"),
            HandlerSpec::write("write_file"),
            HandlerSpec::write("write_ip_file"),
            HandlerSpec::read_write("freeze"),
            HandlerSpec::read_write("active"),
            HandlerSpec::write("stop"),
            HandlerSpec::write("reaggregate_counts"),
            HandlerSpec::write("counts_pdf"),
            HandlerSpec::read_write("banner"),
            HandlerSpec::write("clear"),
            HandlerSpec::read("aggregate_call"),
            HandlerSpec::read("count_call"),
            HandlerSpec::counter("count"),
            HandlerSpec::gauge("nagg"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        let call = |c: &Option<(u64, &Action)>| match c {
            Some((n, Action::Call(h, v))) => match v {
                Some(v) => format!("{n} {h} {v}"),
                None => format!("{n} {h}"),
            },
            _ => String::new(),
        };
        Some(match name {
            "count" => self.count.to_string(),
            "nagg" => self.nnz.to_string(),
            "freeze" => self.frozen.to_string(),
            "active" => self.active.to_string(),
            "banner" => self.banner.clone(),
            "aggregate_call" => call(&self.call_nnz.as_ref().map(|(n, a)| (*n as u64, a))),
            "count_call" => call(&self.call_count.as_ref().map(|(n, a)| (*n, a))),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        let fname = || {
            let f = value.trim();
            if f.is_empty() {
                Err("argument should be filename".to_string())
            } else {
                Ok(f.to_string())
            }
        };
        Some(match name {
            "write_text_file" | "write_ascii_file" => fname().and_then(|f| self.write_file(&f, 0)),
            "write_file" => fname().and_then(|f| self.write_file(&f, 1)),
            "write_ip_file" => fname().and_then(|f| self.write_file(&f, 2)),
            "freeze" => crate::parse_value::<bool>(value).map(|v| self.frozen = v),
            "active" => crate::parse_value::<bool>(value).map(|v| self.active = v),
            "stop" => {
                self.active = false;
                self.stop_requested = true;
                Ok(())
            }
            "reaggregate_counts" | "counts_pdf" => {
                self.reaggregate();
                Ok(())
            }
            "banner" => {
                self.banner = if value == "\n" {
                    String::new()
                } else if !value.is_empty() && !value.ends_with('\n') {
                    format!("{value}\n")
                } else {
                    value.to_string()
                };
                Ok(())
            }
            "clear" => {
                self.counts.clear();
                self.nnz = 0;
                self.count = 0;
                Ok(())
            }
            _ => return None,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

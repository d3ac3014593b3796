//! Counts packets and bytes passing through, and measures their rate.
//!
//! # Synopsis
//! `Counter([KEYWORDS])`
//!
//! # Ports
//! One input, one output; agnostic.
//!
//! # Arguments
//! - `COUNT_CALL` (`N HANDLER [VALUE]`): when the packet count reaches N,
//!   call the write handler HANDLER (`element.handler`, or a global handler
//!   such as `stop`) with VALUE (default empty). Called once until reset.
//! - `BYTE_COUNT_CALL` (`N HANDLER [VALUE]`): likewise when the byte count
//!   reaches or exceeds N.
//!
//! # Handlers
//! - `count` (read): packets counted.
//! - `byte_count` (read): bytes counted.
//! - `rate` (read): recent arrival rate in packets per second, Click's
//!   exponentially weighted moving average (alpha 1/16 per 1 ms epoch,
//!   10 bits of fraction), printed as Click prints it (`cp_unparse_real2`).
//! - `byte_rate` (read), `bit_rate` (read): the same for bytes and bits.
//! - `reset`, `reset_counts` (write): set the counts and rates to zero and
//!   re-arm the calls.
//! - `count_call`, `byte_count_call` (read/write): the call arguments;
//!   writing re-arms the call, and `N` alone keeps the handler and value.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> c :: Counter(COUNT_CALL 1000 stop) -> Discard;
//! ```
//!
//! # Implementation
//! One pass over the batch summing lengths; the batch is forwarded whole.
//! The rates are updated once per batch (all its packets arrive in the same
//! epoch). A call fires when the batch that reaches N passes, before any of
//! that batch is processed downstream (Click fires it on the Nth packet). On
//! simulated time, the rate handlers age the average only up to the last
//! packet seen (handlers have no clock there).

use super::common::unparse_real2;
use linerate_runtime::{
    time::system_now_ns, Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, InitCtx,
};
use std::any::Any;

/// The `Counter` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "Counter",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("standard/counter"),
    make,
};

const SCALE: u32 = 10;
const STABILITY: u32 = 4;
const EPOCH_NS: u64 = 1_000_000; // CLICK_HZ = 1000
const EPOCH_HZ: u64 = 1000;

/// Click's `RateEWMAX<RateEWMAXParameters<4, 10, uint64_t, int64_t>>`.
#[derive(Clone, Copy, Default)]
struct RateEwma {
    epoch: u64,
    current: u64,
    avg: u64,
}

fn ewma_step(avg: u64, x: u64) -> u64 {
    let xs = (x << SCALE) + (1 << (STABILITY - 1));
    let d = (xs as i64).wrapping_sub(avg as i64) >> STABILITY;
    (avg as i64).wrapping_add(d) as u64
}

impl RateEwma {
    /// The average as it is at epoch `now` (Click's `update_time`).
    fn aged(mut self, now: u64) -> RateEwma {
        if now != self.epoch {
            self.avg = ewma_step(self.avg, self.current);
            if now > self.epoch + 1 {
                let n = now - self.epoch - 1;
                if n >= 100 {
                    self.avg = 0;
                } else {
                    for _ in 0..n {
                        self.avg = ewma_step(self.avg, 0);
                    }
                }
            }
            self.current = 0;
            self.epoch = now;
        }
        self
    }

    fn update(&mut self, now: u64, delta: u64) {
        *self = self.aged(now);
        self.current += delta;
    }

    fn scaled_rate(&self) -> u64 {
        self.avg.wrapping_mul(EPOCH_HZ)
    }
}

#[derive(Clone, Default)]
struct Call {
    n: u64,
    handler: String,
    value: String,
}

impl Call {
    fn parse(text: &str) -> Result<Option<Call>, String> {
        let text = linerate_args::unquote_str(text.trim()).unwrap_or_else(|_| text.to_string());
        let mut it = text.split_whitespace();
        let Some(n) = it.next() else {
            return Ok(None);
        };
        let n: u64 = n
            .parse()
            .map_err(|_| "syntax error, expected 'N HANDLER [VALUE]'".to_string())?;
        let handler = it
            .next()
            .ok_or_else(|| "syntax error, expected 'N HANDLER [VALUE]'".to_string())?
            .to_string();
        let value = it.collect::<Vec<_>>().join(" ");
        Ok(Some(Call { n, handler, value }))
    }

    /// A new call written to a handler: `N` alone keeps the handler.
    fn rewrite(old: &Option<Call>, text: &str) -> Result<Option<Call>, String> {
        let t = text.trim();
        if let (Ok(n), Some(o)) = (t.parse::<u64>(), old) {
            return Ok(Some(Call { n, ..o.clone() }));
        }
        Call::parse(t)
    }

    fn unparse(c: &Option<Call>) -> String {
        match c {
            None => String::new(),
            Some(c) if c.value.is_empty() => format!("{} {}", c.n, c.handler),
            Some(c) => format!("{} {} {}", c.n, c.handler, c.value),
        }
    }
}

struct Counter {
    count: u64,
    bytes: u64,
    rate: RateEwma,
    byte_rate: RateEwma,
    count_call: Option<Call>,
    byte_call: Option<Call>,
    count_fired: bool,
    byte_fired: bool,
    simtime: bool,
    last_ns: u64,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let cc: Option<linerate_args::Raw> = a.read("COUNT_CALL");
    let bc: Option<linerate_args::Raw> = a.read("BYTE_COUNT_CALL");
    let mut errs = Vec::new();
    let mut parse = |kw: &str, r: Option<linerate_args::Raw>| match r {
        None => None,
        Some(r) => Call::parse(&r.0).unwrap_or_else(|e| {
            errs.push(format!("{kw}: {e}"));
            None
        }),
    };
    let count_call = parse("COUNT_CALL", cc);
    let byte_call = parse("BYTE_COUNT_CALL", bc);
    if let Err(e) = a.complete() {
        errs.extend(e.0);
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    Ok(Box::new(Counter {
        count: 0,
        bytes: 0,
        rate: RateEwma::default(),
        byte_rate: RateEwma::default(),
        count_call,
        byte_call,
        count_fired: false,
        byte_fired: false,
        simtime: false,
        last_ns: 0,
    }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::counter("count"),
    HandlerSpec::counter("byte_count"),
    HandlerSpec::gauge("rate"),
    HandlerSpec::gauge("bit_rate"),
    HandlerSpec::gauge("byte_rate"),
    HandlerSpec::write("reset"),
    HandlerSpec::write("reset_counts"),
    HandlerSpec::read_write("count_call"),
    HandlerSpec::read_write("byte_count_call"),
];

impl Counter {
    fn now_epoch(&self) -> u64 {
        let t = if self.simtime || self.last_ns == 0 {
            self.last_ns
        } else {
            system_now_ns().max(self.last_ns)
        };
        t / EPOCH_NS
    }

    fn reset(&mut self) {
        self.count = 0;
        self.bytes = 0;
        let e = self.now_epoch();
        self.rate = RateEwma {
            epoch: e,
            ..Default::default()
        };
        self.byte_rate = self.rate;
        self.count_fired = false;
        self.byte_fired = false;
    }

    #[cold]
    fn fire(ctx: &mut Ctx<'_>, c: &Call) {
        // Click ignores the call's result.
        let _ = ctx.call_handler(&c.handler, Some(&c.value));
    }
}

impl Element for Counter {
    fn calls_handlers(&self) -> bool {
        self.count_call.is_some() || self.byte_call.is_some()
    }

    fn initialize(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), String> {
        self.simtime = ctx.simtime();
        Ok(())
    }

    #[inline]
    fn action(&mut self, batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        let n = batch.len() as u64;
        let bytes = batch.iter().map(|p| p.len() as u64).sum::<u64>();
        let before = self.count;
        self.count += n;
        self.bytes += bytes;
        let now = ctx.recent_ns();
        self.last_ns = now;
        let e = now / EPOCH_NS;
        self.rate.update(e, n);
        self.byte_rate.update(e, bytes);
        if let Some(c) = &self.count_call {
            if !self.count_fired && before < c.n && self.count >= c.n {
                self.count_fired = true;
                Self::fire(ctx, c);
            }
        }
        if let Some(c) = &self.byte_call {
            if !self.byte_fired && self.bytes >= c.n {
                self.byte_fired = true;
                Self::fire(ctx, c);
            }
        }
        batch
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        let e = self.now_epoch();
        Some(match name {
            "count" => self.count.to_string(),
            "byte_count" => self.bytes.to_string(),
            "rate" => unparse_real2(self.rate.aged(e).scaled_rate(), SCALE),
            "byte_rate" => unparse_real2(self.byte_rate.aged(e).scaled_rate(), SCALE),
            "bit_rate" => unparse_real2(self.byte_rate.aged(e).scaled_rate(), SCALE - 3),
            "count_call" => Call::unparse(&self.count_call),
            "byte_count_call" => Call::unparse(&self.byte_call),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "reset" | "reset_counts" => {
                self.reset();
                Ok(())
            }
            "count_call" => Call::rewrite(&self.count_call, value).map(|c| {
                self.count_call = c;
                self.count_fired = false;
            }),
            "byte_count_call" => Call::rewrite(&self.byte_call, value).map(|c| {
                self.byte_call = c;
                self.byte_fired = false;
            }),
            _ => return None,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

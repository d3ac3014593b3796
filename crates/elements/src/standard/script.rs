//! Scripts a router configuration: sets variables, calls handlers, waits,
//! and stops the driver (Click's scripting language).
//!
//! # Synopsis
//! `Script([TYPE TYPE,] INSTRUCTIONS...)`
//!
//! # Ports
//! None, except for `TYPE PACKET` scripts: any number of inputs and outputs
//! (output 0 agnostic, others push).
//!
//! # Arguments
//! - `TYPE` (keyword, default `ACTIVE`): `ACTIVE` runs when the router
//!   starts; `PASSIVE` runs when its `run` handler is called; `PACKET` (or
//!   `PUSH`) runs for every packet, with `$input` the input port, and sends
//!   the packet to the port the script returns (`end`: port 0, `exit`:
//!   drop); `DRIVER` manages driver stop events (see DriverManager).
//!   `SIGNAL` and `PROXY` are not supported.
//! - Every other argument is an instruction:
//!   `set VAR TEXT`, `setq`, `init VAR TEXT`, `initq`, `export VAR TEXT`,
//!   `exportq` (also a read handler VAR); `print [>FILE | >>FILE] TEXT|HANDLER`,
//!   `printq`, `printn`, `printnq` (to standard output); `save TEXT [FILE]`,
//!   `append TEXT [FILE]`; `read HANDLER [ARGS]`, `readq` (prints
//!   `elem.handler:` and the value on standard error); `write HANDLER
//!   [ARGS]`, `writeq` (status in `$?`); `pause [N]` (alias `wait_step`,
//!   `wait_stop`); `wait TIME` (alias `wait_time`, `wait_for`); `label L`;
//!   `goto L [COND]` (L may be `begin`, `loop`, `end`, `exit`, `stop`,
//!   `error`); `loop`; `return [VALUE]`, `returnq`; `end`; `exit`; `stop`;
//!   `error [MSG]`, `errorq`.
//!
//! Text undergoes Click's substitutions: `$VAR`, `${VAR}`, `$args`, `$1`..,
//! `$#`, `$?`, `$$`, `$0`, `$write`, and `$(HANDLER [ARGS])`, the value of a
//! read handler (`elem.handler`, or one of this script's own handlers
//! without an element name). A goto that runs 1000 times without blocking
//! disables the script ("too many jumps, giving up").
//!
//! # Handlers
//! - `step` (write): step past `N` blocking instructions (default 1).
//! - `goto` (write): jump to a label.
//! - `run` (read with parameters, write): run the script from the start with
//!   `$args` set; returns the `return` value.
//! - `add`, `sub`, `mul`, `div`, `idiv`, `mod`, `rem`, `neg`, `abs`, `min`,
//!   `max`, `eq`, `ne`, `lt`, `gt`, `le`, `ge`, `not`, `and`, `or`, `nand`,
//!   `nor`, `if`, `in`, `first`, `length`, `unquote`, `sprintf`, `random`
//!   (read with parameters), `now` (read): Click's expression helpers.
//! - `VAR` (read) for each `export`ed variable.
//!
//! # Example
//! ```click
//! Script(set x 0, label top, print $x, set x $(add $x 1), goto top $(lt $x 5), stop);
//! ```
//!
//! # Implementation
//! Instructions are parsed once at configuration; a script runs as a timer
//! and a light task (which also delivers deferred work), and calls other
//! elements' handlers with `Ctx::call_handler` (same-thread elements; the
//! global `stop`). When a script runs from one of its own handlers (`step`,
//! `goto`, `run` written by another element or the control socket), it has
//! no data-plane context: it runs until an instruction needs another
//! element's handler, a timer or a stop, and continues from there in its next
//! task round (microseconds later). A passive `run` read that needs other
//! elements' handlers fails with an error instead. Errors are printed as
//! Click prints them (`While executing 's :: Script':` and the message).

use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec};
use std::any::Any;
use std::cell::RefCell;
use std::io::Write as _;

/// The `Script` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "Script",
    port_count: "-/-",
    processing: "a/ah",
    doc: element_doc!("standard/script"),
    make,
};

const MAX_JUMPS: u32 = 1000;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Active,
    Passive,
    Packet,
    Driver,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Target {
    Pos(usize),
    Exit,
    End,
    Stop,
    Error,
}

#[derive(Clone, Debug)]
enum Insn {
    Initial {
        pending: bool,
    },
    WaitStep {
        n: u32,
        done: u32,
    },
    WaitTime(String),
    Print {
        q: bool,
        newline: bool,
        text: String,
    },
    Save {
        append: bool,
        text: String,
    },
    Read {
        q: bool,
        text: String,
    },
    Write {
        q: bool,
        text: String,
    },
    Set {
        q: bool,
        var: usize,
        text: String,
    },
    Init {
        q: bool,
        var: usize,
        text: String,
    },
    Return {
        q: bool,
        var: usize,
        text: String,
    },
    Label(String),
    Goto {
        target: Target,
        cond: String,
    },
    Exit,
    End,
    Stop,
    Error {
        q: bool,
        msg: String,
    },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum StepType {
    Normal,
    Router,
    Timer,
    Jump,
}

/// A script stopped because it needs the data plane (deferred).
struct Suspend;

/// What a running script can do outside itself.
trait Env {
    /// Call another element's handler (or the global `stop`).
    fn call(&mut self, name: &str, value: Option<&str>) -> Result<Result<String, String>, Suspend>;
    /// Click's `please_stop_driver`.
    fn please_stop(&mut self) -> Result<(), Suspend>;
    /// Stop the driver now (driver scripts).
    fn hard_stop(&mut self) -> Result<(), Suspend>;
    fn schedule_after(&mut self, ns: u64) -> Result<(), Suspend>;
    fn unschedule(&mut self) -> Result<(), Suspend>;
    fn now_ns(&self) -> u64;
}

struct CtxEnv<'a, 'b>(&'a mut Ctx<'b>);

impl Env for CtxEnv<'_, '_> {
    fn call(&mut self, name: &str, value: Option<&str>) -> Result<Result<String, String>, Suspend> {
        Ok(self.0.call_handler(name, value))
    }
    fn please_stop(&mut self) -> Result<(), Suspend> {
        self.0.stop_router();
        Ok(())
    }
    fn hard_stop(&mut self) -> Result<(), Suspend> {
        self.0.stop_driver();
        Ok(())
    }
    fn schedule_after(&mut self, ns: u64) -> Result<(), Suspend> {
        self.0.schedule_after(ns);
        Ok(())
    }
    fn unschedule(&mut self) -> Result<(), Suspend> {
        self.0.unschedule();
        Ok(())
    }
    fn now_ns(&self) -> u64 {
        self.0.now_ns()
    }
}

/// The environment of a script run from a handler: no data plane.
struct NoCtxEnv;

impl Env for NoCtxEnv {
    fn call(&mut self, _: &str, _: Option<&str>) -> Result<Result<String, String>, Suspend> {
        Err(Suspend)
    }
    fn please_stop(&mut self) -> Result<(), Suspend> {
        Err(Suspend)
    }
    fn hard_stop(&mut self) -> Result<(), Suspend> {
        Err(Suspend)
    }
    fn schedule_after(&mut self, _: u64) -> Result<(), Suspend> {
        Err(Suspend)
    }
    fn unschedule(&mut self) -> Result<(), Suspend> {
        Err(Suspend)
    }
    fn now_ns(&self) -> u64 {
        linerate_runtime::router::now_ns()
    }
}

struct Engine {
    name: String,
    class: &'static str,
    kind: Kind,
    insns: Vec<Insn>,
    vars: Vec<(String, String)>,
    exports: Vec<usize>,
    pos: usize,
    step_count: i64,
    write_status: i32,
    run_args: String,
    run_handler: String,
    run_write: bool,
    jumps: u32,
    /// Steps requested through `step` while the script runs.
    extra_steps: i64,
    running: bool,
    /// Work left for the next task round (a run from a handler suspended).
    resume: bool,
    initialized: bool,
    started: bool,
    stops_seen: usize,
    /// The last instruction executed ended the script this way.
    last: Option<Target>,
}

/// Split off the first space-separated word (Click's `cp_shift_spacevec`):
/// quoted pieces stay together, quotes are kept.
fn shift_word(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && !b[i].is_ascii_whitespace() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'\'' => {
                i += 1;
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
                i += 1;
            }
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    let i = i.min(b.len());
    (&s[..i], s[i..].trim_start())
}

fn words(s: &str) -> Vec<&str> {
    let mut v = Vec::new();
    let mut rest = s;
    loop {
        let (w, r) = shift_word(rest);
        if w.is_empty() {
            return v;
        }
        v.push(w);
        rest = r;
    }
}

/// Remove one layer of quoting (Click's `cp_unquote`); on a quoting error
/// the text is returned unchanged.
fn unquote(s: &str) -> String {
    match linerate_args::unquote(s) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(_) => s.trim().to_string(),
    }
}

fn parse_bool(s: &str) -> Option<bool> {
    <bool as linerate_args::ArgValue>::parse_arg(s.trim()).ok()
}

/// Click's `IntArg` (decimal, `0x` hex, leading `0` octal, optional sign).
fn parse_int(s: &str) -> Option<i64> {
    let s = s.trim();
    let (neg, t) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if t.is_empty() || t.starts_with(['+', '-']) {
        return None;
    }
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()?
    } else if t.len() > 1 && t.starts_with('0') {
        i64::from_str_radix(&t[1..], 8).ok()?
    } else {
        t.parse::<i64>().ok()?
    };
    Some(if neg { -v } else { v })
}

fn parse_f64(s: &str) -> Option<f64> {
    let s = s.trim();
    if s.is_empty() || s.contains(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E') {
        return None;
    }
    s.parse::<f64>().ok()
}

/// Click's `String(double)`: `%.12g`-like.
fn fmt_f64(x: f64) -> String {
    if x.is_finite() && x == x.trunc() && x.abs() < 1e15 {
        return format!("{}", x as i64);
    }
    let s = format!("{:.12e}", x);
    let v: f64 = s.parse().unwrap_or(x);
    let mut t = format!("{v}");
    if t.len() > 20 {
        t = format!("{v:e}");
    }
    t
}

fn unparse_bool(b: bool) -> String {
    if b { "true" } else { "false" }.to_string()
}

const OWN_HANDLERS: &[&str] = &[
    "step", "goto", "run", "add", "sub", "mul", "div", "idiv", "mod", "rem", "neg", "abs", "min",
    "max", "eq", "ne", "lt", "gt", "le", "ge", "not", "and", "or", "nand", "nor", "if", "in",
    "first", "length", "unquote", "sprintf", "random", "now",
];

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::write("step"),
    HandlerSpec::write("goto"),
    HandlerSpec::read_write("run"),
    HandlerSpec::read("add"),
    HandlerSpec::read("sub"),
    HandlerSpec::read("mul"),
    HandlerSpec::read("div"),
    HandlerSpec::read("idiv"),
    HandlerSpec::read("mod"),
    HandlerSpec::read("rem"),
    HandlerSpec::read("neg"),
    HandlerSpec::read("abs"),
    HandlerSpec::read("min"),
    HandlerSpec::read("max"),
    HandlerSpec::read("eq"),
    HandlerSpec::read("ne"),
    HandlerSpec::read("lt"),
    HandlerSpec::read("gt"),
    HandlerSpec::read("le"),
    HandlerSpec::read("ge"),
    HandlerSpec::read("not"),
    HandlerSpec::read("and"),
    HandlerSpec::read("or"),
    HandlerSpec::read("nand"),
    HandlerSpec::read("nor"),
    HandlerSpec::read("if"),
    HandlerSpec::read("in"),
    HandlerSpec::read("first"),
    HandlerSpec::read("length"),
    HandlerSpec::read("unquote"),
    HandlerSpec::read("sprintf"),
    HandlerSpec::read("random"),
    HandlerSpec::read("now"),
];

fn arith(op: &str, args: &str, now_ns: u64) -> Result<String, String> {
    let ws = words(args);
    match op {
        "first" => Ok(ws.first().map(|s| s.to_string()).unwrap_or_default()),
        "add" | "sub" | "mul" | "div" | "idiv" | "min" | "max" => {
            let ints: Option<Vec<i64>> = ws.iter().map(|w| parse_int(w)).collect();
            if let (Some(v), false) = (&ints, op == "div" || op == "idiv") {
                let mut acc: Option<i64> = None;
                for &x in v {
                    acc = Some(match (acc, op) {
                        (None, _) => x,
                        (Some(a), "add") => a.wrapping_add(x),
                        (Some(a), "sub") => a.wrapping_sub(x),
                        (Some(a), "mul") => a.wrapping_mul(x),
                        (Some(a), "min") => a.min(x),
                        (Some(a), _) => a.max(x),
                    });
                }
                return Ok(acc.unwrap_or(0).to_string());
            }
            let fl: Option<Vec<f64>> = ws.iter().map(|w| parse_f64(w)).collect();
            let fl = fl.ok_or("expected list of numbers")?;
            let mut acc: Option<f64> = None;
            for &x in &fl {
                acc = Some(match (acc, op) {
                    (None, _) => x,
                    (Some(a), "add") => a + x,
                    (Some(a), "sub") => a - x,
                    (Some(a), "mul") => a * x,
                    (Some(a), "min") => a.min(x),
                    (Some(a), "max") => a.max(x),
                    (Some(a), _) => a / x,
                });
            }
            let default = if op == "add" || op == "sub" { 0.0 } else { 1.0 };
            let r = acc.unwrap_or(default);
            if op == "idiv" {
                Ok((r as i64).to_string())
            } else {
                Ok(fmt_f64(r))
            }
        }
        "mod" | "rem" => {
            if ws.len() != 2 {
                return Err("expected two numbers".into());
            }
            match (parse_int(ws[0]), parse_int(ws[1])) {
                (Some(_), Some(0)) => Err("division by zero".into()),
                (Some(a), Some(b)) => Ok(a.wrapping_rem(b).to_string()),
                _ if op == "rem" => match (parse_f64(ws[0]), parse_f64(ws[1])) {
                    (Some(a), Some(b)) => Ok(fmt_f64(a % b)),
                    _ => Err("expected two numbers".into()),
                },
                _ => Err("expected two numbers".into()),
            }
        }
        "neg" | "abs" => {
            let a = args.trim();
            if let Some(x) = parse_int(a) {
                return Ok(if op == "neg" || x < 0 { -x } else { x }.to_string());
            }
            let x = parse_f64(a).ok_or("expected one number")?;
            Ok(fmt_f64(if op == "neg" { -x } else { x.abs() }))
        }
        "eq" | "ne" | "lt" | "gt" | "le" | "ge" => {
            if ws.len() != 2 {
                return Err("expected two numbers".into());
            }
            let ord = match (parse_int(ws[0]), parse_int(ws[1])) {
                (Some(a), Some(b)) => a.cmp(&b),
                _ => match (parse_f64(ws[0]), parse_f64(ws[1])) {
                    (Some(a), Some(b)) => a.partial_cmp(&b).unwrap_or(std::cmp::Ordering::Equal),
                    _ => unquote(ws[0]).as_bytes().cmp(unquote(ws[1]).as_bytes()),
                },
            };
            use std::cmp::Ordering::*;
            let r = match op {
                "eq" => ord == Equal,
                "ne" => ord != Equal,
                "lt" => ord == Less,
                "gt" => ord == Greater,
                "le" => ord != Greater,
                _ => ord != Less,
            };
            Ok(unparse_bool(r))
        }
        "not" => parse_bool(args)
            .map(|b| unparse_bool(!b))
            .ok_or_else(|| "syntax error".into()),
        "and" | "or" | "nand" | "nor" => {
            let conj = op == "and" || op == "nand";
            let mut v = conj;
            for w in &ws {
                let b = parse_bool(w).ok_or("syntax error")?;
                v = if conj { v && b } else { v || b };
                if v != conj {
                    break;
                }
            }
            Ok(unparse_bool(if op.starts_with('n') { !v } else { v }))
        }
        "if" => {
            let c = ws
                .first()
                .and_then(|w| parse_bool(w))
                .ok_or("syntax error")?;
            let pick = if c { ws.get(1) } else { ws.get(2) };
            Ok(pick.map(|s| s.to_string()).unwrap_or_default())
        }
        "in" => {
            let Some(first) = ws.first() else {
                return Ok(unparse_bool(false));
            };
            let w = unquote(first);
            Ok(unparse_bool(ws[1..].iter().any(|x| unquote(x) == w)))
        }
        "length" => Ok(args.len().to_string()),
        "unquote" => Ok(unquote(args)),
        "now" => {
            let mut s = String::new();
            super::print::push_timestamp(&mut s, now_ns);
            Ok(s)
        }
        "random" => {
            let r = random_u32(now_ns);
            match ws.len() {
                0 => Ok((r & 0x7fff_ffff).to_string()),
                1 => {
                    let n = parse_int(ws[0]).filter(|&n| n > 0).ok_or("bad N")?;
                    Ok((r as i64 % n).to_string())
                }
                _ => {
                    let a = parse_int(ws[0]).ok_or("bad N")?;
                    let b = parse_int(ws[1]).filter(|&b| b >= a).ok_or("bad N")?;
                    Ok((a + (r as i64 % (b - a + 1))).to_string())
                }
            }
        }
        "sprintf" => sprintf(&ws),
        _ => Err(format!("no handler '{op}'")),
    }
}

fn random_u32(seed: u64) -> u32 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static STATE: AtomicU64 = AtomicU64::new(0);
    let mut x = STATE.load(Ordering::Relaxed) ^ seed ^ 0x9e37_79b9_7f4a_7c15;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    STATE.store(x, Ordering::Relaxed);
    (x >> 16) as u32
}

/// Click's `sprintf` handler: `%[flags][width][.prec][hlq](d|i|u|x|X|o|s|%)`.
fn sprintf(ws: &[&str]) -> Result<String, String> {
    let fmt = unquote(ws.first().ok_or("syntax error")?);
    let mut args = ws[1..].iter();
    let mut out = String::new();
    let b = fmt.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            let start = i;
            while i < b.len() && b[i] != b'%' {
                i += 1;
            }
            out.push_str(&fmt[start..i]);
            continue;
        }
        i += 1;
        let (mut zero, mut left, mut plus, mut space, mut alt) =
            (false, false, false, false, false);
        while i < b.len() && b"0#- +".contains(&b[i]) {
            match b[i] {
                b'0' => zero = true,
                b'-' => left = true,
                b'+' => plus = true,
                b' ' => space = true,
                _ => alt = true,
            }
            i += 1;
        }
        let mut width = 0usize;
        if i < b.len() && b[i] == b'*' {
            width = args
                .next()
                .and_then(|w| parse_int(w))
                .ok_or("syntax error")?
                .max(0) as usize;
            i += 1;
        }
        while i < b.len() && b[i].is_ascii_digit() {
            width = width * 10 + (b[i] - b'0') as usize;
            i += 1;
        }
        let mut prec: Option<usize> = None;
        if i < b.len() && b[i] == b'.' {
            i += 1;
            let mut p = 0;
            while i < b.len() && b[i].is_ascii_digit() {
                p = p * 10 + (b[i] - b'0') as usize;
                i += 1;
            }
            prec = Some(p);
        }
        while i < b.len() && b"hlLq".contains(&b[i]) {
            i += 1;
        }
        let conv = *b.get(i).ok_or("syntax error")?;
        i += 1;
        let (sign, body) = match conv {
            b'%' => {
                out.push('%');
                continue;
            }
            b'd' | b'i' => {
                let v = args
                    .next()
                    .and_then(|w| parse_int(w))
                    .ok_or("syntax error")?;
                let s = if v < 0 {
                    "-"
                } else if plus {
                    "+"
                } else if space {
                    " "
                } else {
                    ""
                };
                (s, v.unsigned_abs().to_string())
            }
            b'u' | b'x' | b'X' | b'o' => {
                let v = args
                    .next()
                    .and_then(|w| parse_int(w))
                    .ok_or("syntax error")? as u64;
                let s = match conv {
                    b'u' => v.to_string(),
                    b'x' => format!("{v:x}"),
                    b'X' => format!("{v:X}"),
                    _ => format!("{v:o}"),
                };
                let pre = match (alt, conv) {
                    (true, b'x') if v != 0 => "0x",
                    (true, b'X') if v != 0 => "0X",
                    (true, b'o') => "0",
                    _ => "",
                };
                (pre, s)
            }
            b's' => {
                let mut s = unquote(args.next().ok_or("syntax error")?);
                if let Some(p) = prec {
                    s = s.chars().take(p).collect();
                }
                let pad = width.saturating_sub(s.chars().count());
                if left {
                    out.push_str(&s);
                    out.extend(std::iter::repeat_n(' ', pad));
                } else {
                    out.extend(std::iter::repeat_n(' ', pad));
                    out.push_str(&s);
                }
                continue;
            }
            _ => return Err("syntax error".into()),
        };
        let mut body = body;
        if let Some(p) = prec {
            if body.len() < p {
                body = "0".repeat(p - body.len()) + &body;
            }
        }
        let len = sign.len() + body.len();
        let pad = width.saturating_sub(len);
        if left {
            out.push_str(sign);
            out.push_str(&body);
            out.extend(std::iter::repeat_n(' ', pad));
        } else if zero && prec.is_none() {
            out.push_str(sign);
            out.extend(std::iter::repeat_n('0', pad));
            out.push_str(&body);
        } else {
            out.extend(std::iter::repeat_n(' ', pad));
            out.push_str(sign);
            out.push_str(&body);
        }
    }
    if args.next().is_some() {
        return Err("syntax error".into());
    }
    Ok(out)
}

impl Engine {
    fn var_index(&mut self, name: &str) -> usize {
        if let Some(i) = self.vars.iter().position(|(n, _)| n == name) {
            return i;
        }
        self.vars.push((name.to_string(), String::new()));
        self.vars.len() - 1
    }

    fn report(&self, msg: &str) {
        eprintln!(
            "While executing '{} :: {}':\n  {}",
            self.name, self.class, msg
        );
    }

    /// Look up a variable for `$name`.
    fn lookup(&self, v: &str) -> Option<String> {
        if let Some((_, x)) = self.vars.iter().find(|(n, _)| n == v) {
            return Some(x.clone());
        }
        match v {
            "?" => Some(self.write_status.to_string()),
            "args" => Some(self.run_args.clone()),
            "$" => Some(std::process::id().to_string()),
            "0" => Some(self.run_handler.clone()),
            "#" => Some(words(&self.run_args).len().to_string()),
            "write" => Some(unparse_bool(self.run_write)),
            _ => {
                let n: usize = v.parse().ok().filter(|&n| n > 0)?;
                Some(
                    words(&self.run_args)
                        .get(n - 1)
                        .map(|s| s.to_string())
                        .unwrap_or_default(),
                )
            }
        }
    }

    /// Click's `cp_expand`: substitute variables and `$(handler)` calls.
    fn expand(&mut self, s: &str, env: &mut dyn Env) -> Result<String, Suspend> {
        self.expand_q(s, env, false)
    }

    /// [`expand`](Self::expand); with `quote`, substituted text is quoted so
    /// that a later unquote gives it back exactly (spaces, control bytes).
    fn expand_q(&mut self, s: &str, env: &mut dyn Env, quote: bool) -> Result<String, Suspend> {
        let b = s.as_bytes();
        let mut out = String::with_capacity(s.len());
        let mut i = 0;
        let mut in_dq = false;
        while i < b.len() {
            let c = b[i];
            match c {
                b'\'' if !in_dq => {
                    let end = b[i + 1..]
                        .iter()
                        .position(|&x| x == b'\'')
                        .map(|p| i + 2 + p)
                        .unwrap_or(b.len());
                    out.push_str(&s[i..end]);
                    i = end;
                }
                b'"' => {
                    in_dq = !in_dq;
                    out.push('"');
                    i += 1;
                }
                b'\\' if i + 1 < b.len() => {
                    let n = s[i + 1..].chars().next().map(|c| c.len_utf8()).unwrap_or(1);
                    out.push_str(&s[i..i + 1 + n]);
                    i += 1 + n;
                }
                b'$' if i + 1 < b.len() => {
                    let (text, end) = self.expand_dollar(s, i, env)?;
                    if quote {
                        if !in_dq {
                            out.push('"');
                        }
                        for ch in text.chars() {
                            if ch == '"' || ch == '\\' {
                                out.push('\\');
                            }
                            out.push(ch);
                        }
                        if !in_dq {
                            out.push('"');
                        }
                    } else {
                        out.push_str(&text);
                    }
                    i = end;
                }
                _ => {
                    let n = s[i..].chars().next().map(|c| c.len_utf8()).unwrap_or(1);
                    out.push_str(&s[i..i + n]);
                    i += n;
                }
            }
        }
        Ok(out)
    }

    /// Expand the `$...` at `i`; returns the text and the index after it.
    fn expand_dollar(
        &mut self,
        s: &str,
        i: usize,
        env: &mut dyn Env,
    ) -> Result<(String, usize), Suspend> {
        let b = s.as_bytes();
        match b[i + 1] {
            b'(' => {
                let mut depth = 0;
                let mut j = i + 1;
                while j < b.len() {
                    match b[j] {
                        b'(' => depth += 1,
                        b')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        b'\\' => j += 1,
                        _ => {}
                    }
                    j += 1;
                }
                if j >= b.len() {
                    return Ok((s[i..].to_string(), b.len()));
                }
                let inner = self.expand(&s[i + 2..j], env)?;
                let (target, args) = shift_word(inner.trim());
                match self.call_read(target, args, env)? {
                    Ok(v) => Ok((v, j + 1)),
                    Err(e) => {
                        self.report(&e);
                        Ok((s[i..=j].to_string(), j + 1))
                    }
                }
            }
            b'{' => match s[i + 2..].find('}') {
                Some(p) => {
                    let name = &s[i + 2..i + 2 + p];
                    let v = self
                        .lookup(name)
                        .unwrap_or_else(|| s[i..i + 3 + p].to_string());
                    Ok((v, i + 3 + p))
                }
                None => Ok((s[i..].to_string(), b.len())),
            },
            c if c == b'?' || c == b'#' || c == b'$' || c.is_ascii_digit() => {
                let v = self
                    .lookup(&s[i + 1..i + 2])
                    .unwrap_or_else(|| s[i..i + 2].to_string());
                Ok((v, i + 2))
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let mut j = i + 1;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                    j += 1;
                }
                let v = self
                    .lookup(&s[i + 1..j])
                    .unwrap_or_else(|| s[i..j].to_string());
                Ok((v, j))
            }
            _ => Ok(("$".to_string(), i + 1)),
        }
    }

    /// Resolve `elem.handler` or an own handler name: `Some(handler)` if it
    /// is this script's own.
    fn own<'a>(&self, target: &'a str) -> Option<&'a str> {
        match target.rsplit_once('.') {
            Some((el, h)) if el == self.name => Some(h),
            Some(_) => None,
            None => Some(target),
        }
    }

    /// Read a handler with optional parameters: `HANDLER [ARGS]`.
    fn call_read(
        &mut self,
        target: &str,
        args: &str,
        env: &mut dyn Env,
    ) -> Result<Result<String, String>, Suspend> {
        if let Some(h) = self.own(target) {
            return Ok(self.own_read(h, args, env));
        }
        let r = if args.is_empty() {
            env.call(target, None)?
        } else {
            env.call(&format!("{target} {args}"), None)?
        };
        Ok(r.map(|mut v| {
            if v.ends_with('\n') {
                v.pop();
            }
            v
        }))
    }

    fn own_read(&mut self, h: &str, args: &str, env: &mut dyn Env) -> Result<String, String> {
        if let Some(&i) = self.exports.iter().find(|&&i| self.vars[i].0 == h) {
            return Ok(self.vars[i].1.clone());
        }
        match h {
            "step" | "goto" => Err(format!("handler '{}.{h}' is not readable", self.name)),
            "run" => Err(format!("'{}.run': a script cannot run itself", self.name)),
            _ if OWN_HANDLERS.contains(&h) => arith(h, args, env.now_ns()),
            _ => Err(format!("no handler '{}.{h}'", self.name)),
        }
    }

    fn call_write(
        &mut self,
        call: &str,
        q: bool,
        env: &mut dyn Env,
    ) -> Result<Result<(), String>, Suspend> {
        let (target, args) = shift_word(call);
        let value = if q { unquote(args) } else { args.to_string() };
        if let Some(h) = self.own(target) {
            return Ok(match h {
                "step" => {
                    let n = if value.trim().is_empty() {
                        1
                    } else {
                        parse_int(&value).unwrap_or(1)
                    };
                    self.extra_steps += n;
                    Ok(())
                }
                "stop" => {
                    env.please_stop()?;
                    Ok(())
                }
                _ => Err(format!("no write handler '{}.{h}'", self.name)),
            });
        }
        Ok(env.call(target, Some(&value))?.map(|_| ()))
    }

    fn find_label(&self, l: &str) -> Option<Target> {
        if let Some(p) = self
            .insns
            .iter()
            .position(|x| matches!(x, Insn::Label(n) if n == l))
        {
            return Some(Target::Pos(p));
        }
        match l {
            "exit" => Some(Target::Exit),
            "end" => Some(Target::End),
            "stop" => Some(Target::Stop),
            "error" => Some(Target::Error),
            "begin" | "loop" => Some(Target::Pos(0)),
            _ => None,
        }
    }

    /// Execute: Click's `Script::step`.
    fn step(&mut self, nsteps: i64, st: StepType, env: &mut dyn Env) {
        let mut nsteps = nsteps + self.step_count;
        self.running = true;
        self.last = None;
        while nsteps - self.step_count >= 0 && self.pos < self.insns.len() && self.jumps < MAX_JUMPS
        {
            let ipos = self.pos;
            self.pos += 1;
            match self.exec(ipos, &mut nsteps, st, env) {
                Ok(true) => {}
                Ok(false) => break,
                Err(Suspend) => {
                    self.pos = ipos;
                    self.resume = true;
                    break;
                }
            }
            nsteps += std::mem::take(&mut self.extra_steps);
            if self.pos != ipos + 1 {
                self.jumps += 1;
            }
        }
        if self.jumps >= MAX_JUMPS {
            eprintln!("{} :: {}: too many jumps, giving up", self.name, self.class);
            self.pos = self.insns.len();
            let _ = env.unschedule();
        }
        self.running = false;
    }

    /// Run one instruction; false stops the step loop.
    fn exec(
        &mut self,
        ipos: usize,
        nsteps: &mut i64,
        st: StepType,
        env: &mut dyn Env,
    ) -> Result<bool, Suspend> {
        let insn = self.insns[ipos].clone();
        match insn {
            Insn::Stop => {
                if self.kind == Kind::Driver {
                    env.hard_stop()?;
                } else if st != StepType::Router {
                    env.please_stop()?;
                }
                self.step_count += 1;
                self.pos -= 1;
                self.last = Some(Target::Stop);
                self.jumps = 0;
                return Ok(false);
            }
            Insn::WaitStep { n, mut done } => {
                while self.step_count < *nsteps && done < n {
                    done += 1;
                    self.step_count += 1;
                }
                self.insns[ipos] = Insn::WaitStep { n, done };
                if self.step_count == *nsteps && done < n {
                    self.pos -= 1;
                    self.jumps = 0;
                    return Ok(false);
                }
            }
            Insn::WaitTime(t) => {
                if self.step_count == *nsteps {
                    let e = self.expand(&t, env)?;
                    match linerate_args::ArgValue::parse_arg(e.trim()) {
                        Ok(linerate_args::Seconds { nanos }) => {
                            env.schedule_after(nanos)?;
                            self.pos -= 1;
                        }
                        Err(_) => self.report("syntax error at 'wait'"),
                    }
                    self.jumps = 0;
                    return Ok(false);
                }
                env.unschedule()?;
                self.step_count += 1;
            }
            Insn::Initial { pending } => {
                if pending {
                    self.step_count += 1;
                    self.insns[ipos] = Insn::Initial { pending: false };
                }
            }
            Insn::Print { q, newline, text } => self.print(&text, q, newline, env)?,
            Insn::Save { append, text } => {
                let (word, file) = shift_word(&text);
                let file = if file.is_empty() { "-" } else { file };
                let t = format!("{}{} {}", if append { ">>" } else { ">" }, file, word);
                self.print(&t, false, true, env)?;
            }
            Insn::Read { q, text } => {
                let call = self.expand(&text, env)?;
                let (target, args) = shift_word(&call);
                let args = if q { unquote(args) } else { args.to_string() };
                match self.call_read(target, &args, env)? {
                    Ok(v) => {
                        let shown = match self.own(target) {
                            Some(h) => format!("{}.{h}", self.name),
                            None => target.to_string(),
                        };
                        eprintln!("{shown}:\n{v}");
                    }
                    Err(e) => self.report(&format!("While calling '{call}':\n  {e}")),
                }
            }
            Insn::Write { q, text } => {
                let call = self.expand(&text, env)?;
                self.write_status = match self.call_write(&call, q, env)? {
                    Ok(()) => 0,
                    Err(e) => {
                        self.report(&format!("While calling '{call}':\n  {e}"));
                        -22
                    }
                };
            }
            Insn::Set { q, var, text } | Insn::Return { q, var, text } => {
                let mut v = self.expand(&text, env)?;
                if q {
                    v = unquote(&v);
                }
                self.vars[var].1 = v;
                if matches!(self.insns[ipos], Insn::Return { .. }) && self.pos == ipos + 1 {
                    self.pos -= 1;
                    self.last = Some(Target::End);
                    self.jumps = 0;
                    return Ok(false);
                }
            }
            Insn::Init { .. } | Insn::Label(_) => {}
            Insn::Goto { target, cond } => {
                let c = self.expand(&cond, env)?;
                let go = if c.trim().is_empty() {
                    true
                } else {
                    match parse_bool(&c) {
                        Some(b) => b,
                        None => {
                            self.report(&format!("bad condition '{}'", c.trim()));
                            false
                        }
                    }
                };
                if go {
                    match target {
                        Target::Pos(p) => {
                            for i in p..ipos {
                                if let Insn::WaitStep { done, .. } = &mut self.insns[i] {
                                    *done = 0;
                                }
                            }
                            self.pos = p;
                        }
                        Target::Stop => {
                            return self.exec_end(ipos, Insn::Stop, nsteps, st, env);
                        }
                        Target::Exit => return self.exec_end(ipos, Insn::Exit, nsteps, st, env),
                        Target::End => return self.exec_end(ipos, Insn::End, nsteps, st, env),
                        Target::Error => {
                            let e = Insn::Error {
                                q: false,
                                msg: String::new(),
                            };
                            return self.exec_end(ipos, e, nsteps, st, env);
                        }
                    }
                }
            }
            Insn::Error { q, msg } => {
                let mut m = self.expand(&msg, env)?;
                if q {
                    m = unquote(&m);
                }
                if !m.trim().is_empty() {
                    self.report(m.trim());
                }
                self.pos -= 1;
                self.last = Some(Target::Error);
                self.jumps = 0;
                return Ok(false);
            }
            Insn::Exit | Insn::End => {
                self.pos -= 1;
                self.last = Some(if matches!(insn, Insn::Exit) {
                    Target::Exit
                } else {
                    Target::End
                });
                self.jumps = 0;
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// A `goto` to `exit`/`end`/`stop`/`error`: behave like that instruction.
    fn exec_end(
        &mut self,
        ipos: usize,
        insn: Insn,
        nsteps: &mut i64,
        st: StepType,
        env: &mut dyn Env,
    ) -> Result<bool, Suspend> {
        let saved = std::mem::replace(&mut self.insns[ipos], insn);
        let r = self.exec(ipos, nsteps, st, env);
        self.insns[ipos] = saved;
        r
    }

    fn print(
        &mut self,
        text: &str,
        q: bool,
        newline: bool,
        env: &mut dyn Env,
    ) -> Result<(), Suspend> {
        let mut text = text.trim_start();
        let mut file: Option<(String, bool)> = None;
        if let Some(rest) = text.strip_prefix('>') {
            let (append, rest) = match rest.strip_prefix('>') {
                Some(r) => (true, r),
                None => (false, rest),
            };
            let (f, r) = shift_word(rest);
            if !f.is_empty() && f != "-" {
                file = Some((unquote(f), append));
            }
            text = r;
        }
        let is_handler = text
            .as_bytes()
            .first()
            .is_some_and(|&c| c.is_ascii_alphabetic() || c == b'@' || c == b'_');
        let mut result = if is_handler {
            let call = self.expand(text, env)?;
            let (t, a) = shift_word(&call);
            let a = if q { unquote(a) } else { a.to_string() };
            match self.call_read(t, &a, env)? {
                Ok(v) => v,
                Err(e) => {
                    self.report(&format!("While calling '{call}':\n  {e}"));
                    return Ok(());
                }
            }
        } else {
            unquote(&self.expand_q(text, env, true)?)
        };
        if newline && !result.ends_with('\n') {
            result.push('\n');
        }
        match file {
            None => {
                let mut o = std::io::stdout().lock();
                let _ = o.write_all(result.as_bytes());
                let _ = o.flush();
            }
            Some((f, append)) => {
                let r = std::fs::OpenOptions::new()
                    .create(true)
                    .write(true)
                    .append(append)
                    .truncate(!append)
                    .open(&f)
                    .and_then(|mut h| h.write_all(result.as_bytes()));
                if let Err(e) = r {
                    self.report(&format!("{f}: {e}"));
                }
            }
        }
        Ok(())
    }

    /// Evaluate `init`/`export` instructions once (Click's initialize).
    fn initialize(&mut self, env: &mut dyn Env) -> Result<(), Suspend> {
        if self.initialized {
            return Ok(());
        }
        for i in 0..self.insns.len() {
            if let Insn::Init { q, var, text } = self.insns[i].clone() {
                let mut v = self.expand(&text, env)?;
                if q {
                    v = unquote(&v);
                }
                self.vars[var].1 = v;
            }
        }
        self.initialized = true;
        Ok(())
    }

    /// Run from the start (passive `run`, packet scripts): returns the
    /// `return` value (`None` after `exit` or `error`).
    fn run_from_start(&mut self, env: &mut dyn Env) -> Option<String> {
        if self.initialize(env).is_err() {
            return None;
        }
        self.pos = 0;
        self.jumps = 0;
        self.step(0, StepType::Jump, env);
        self.jumps = 0;
        match self.last {
            Some(Target::Exit) | Some(Target::Error) => None,
            _ => {
                let ret = matches!(self.insns.get(self.pos), Some(Insn::Return { .. }));
                if ret {
                    let i = self.vars.iter().position(|(n, _)| n == "_");
                    Some(i.map(|i| self.vars[i].1.clone()).unwrap_or_default())
                } else if self.kind == Kind::Packet {
                    Some("0".to_string())
                } else {
                    Some(String::new())
                }
            }
        }
    }
}

/// The Script element.
pub(crate) struct Script {
    eng: RefCell<Engine>,
    push: bool,
}

/// Parse a Script configuration with default type `default`.
pub(crate) fn make_script(
    ctx: &ConfigureCtx<'_>,
    class: &'static str,
    default: Kind,
) -> Result<Box<dyn Element>, Vec<String>> {
    let mut errs = Vec::new();
    let mut kind = default;
    let mut eng = Engine {
        name: ctx.name.to_string(),
        class,
        kind,
        insns: Vec::new(),
        vars: Vec::new(),
        exports: Vec::new(),
        pos: 0,
        step_count: 0,
        write_status: 0,
        run_args: String::new(),
        run_handler: String::new(),
        run_write: false,
        jumps: 0,
        extra_steps: 0,
        running: false,
        resume: false,
        initialized: false,
        started: false,
        stops_seen: 0,
        last: None,
    };
    let mut gotos: Vec<(usize, String)> = Vec::new();
    let add = |eng: &mut Engine, i: Insn| {
        if eng.insns.is_empty() && !matches!(i, Insn::WaitStep { .. } | Insn::WaitTime(_)) {
            eng.insns.push(Insn::Initial { pending: false });
        }
        eng.insns.push(i);
    };
    for arg in &ctx.args {
        let (name, rest) = shift_word(arg);
        let rest = rest.to_string();
        if name.is_empty() {
            continue;
        }
        if name == "TYPE" {
            match rest.trim() {
                "ACTIVE" => kind = Kind::Active,
                "PASSIVE" => kind = Kind::Passive,
                "PACKET" | "PUSH" => kind = Kind::Packet,
                "DRIVER" => kind = Kind::Driver,
                t if t.starts_with("SIGNAL") || t == "PROXY" => {
                    errs.push(format!("TYPE {t} is not supported"))
                }
                _ => errs.push("bad TYPE".to_string()),
            }
            continue;
        }
        let syntax = |errs: &mut Vec<String>| errs.push(format!("syntax error at '{name}'"));
        match name {
            "wait" | "pause" | "wait_step" | "wait_stop" if rest.is_empty() => {
                add(&mut eng, Insn::WaitStep { n: 1, done: 0 })
            }
            "pause" | "wait_step" | "wait_stop" => match parse_int(&rest) {
                Some(n) if n >= 0 => add(
                    &mut eng,
                    Insn::WaitStep {
                        n: n as u32,
                        done: 0,
                    },
                ),
                _ => syntax(&mut errs),
            },
            "wait" | "wait_time" | "wait_for" => add(&mut eng, Insn::WaitTime(rest)),
            "print" | "printq" | "printn" | "printnq" => add(
                &mut eng,
                Insn::Print {
                    q: name.ends_with('q'),
                    newline: !name.starts_with("printn"),
                    text: rest,
                },
            ),
            "save" | "append" => add(
                &mut eng,
                Insn::Save {
                    append: name == "append",
                    text: rest,
                },
            ),
            "read" | "readq" => add(
                &mut eng,
                Insn::Read {
                    q: name == "readq",
                    text: rest,
                },
            ),
            "write" | "writeq" => add(
                &mut eng,
                Insn::Write {
                    q: name == "writeq",
                    text: rest,
                },
            ),
            "set" | "setq" | "init" | "initq" | "export" | "exportq" | "return" | "returnq" => {
                let is_ret = name.starts_with("return");
                let (var, text) = if is_ret {
                    ("_", rest.as_str())
                } else {
                    shift_word(&rest)
                };
                if var.is_empty() || (name.starts_with("set") && text.is_empty()) {
                    syntax(&mut errs);
                    continue;
                }
                let q = name.ends_with('q');
                let vi = eng.var_index(var);
                let text = text.to_string();
                let i = if is_ret {
                    Insn::Return { q, var: vi, text }
                } else if name.starts_with("set") {
                    Insn::Set { q, var: vi, text }
                } else {
                    if name.starts_with("export") && !eng.exports.contains(&vi) {
                        eng.exports.push(vi);
                    }
                    Insn::Init { q, var: vi, text }
                };
                add(&mut eng, i);
            }
            "label" => {
                let (w, r) = shift_word(&rest);
                if w.is_empty() || !r.is_empty() {
                    syntax(&mut errs);
                } else {
                    add(&mut eng, Insn::Label(w.to_string()));
                }
            }
            "goto" => {
                let (w, cond) = shift_word(&rest);
                if w.is_empty() {
                    syntax(&mut errs);
                    continue;
                }
                gotos.push((eng.insns.len().max(1), w.to_string()));
                add(
                    &mut eng,
                    Insn::Goto {
                        target: Target::Pos(0),
                        cond: cond.to_string(),
                    },
                );
            }
            "loop" | "end" | "exit" | "stop" if !rest.is_empty() => syntax(&mut errs),
            "loop" => add(
                &mut eng,
                Insn::Goto {
                    target: Target::Pos(0),
                    cond: String::new(),
                },
            ),
            "end" => add(&mut eng, Insn::End),
            "exit" => add(&mut eng, Insn::Exit),
            "stop" => add(&mut eng, Insn::Stop),
            "error" | "errorq" => add(
                &mut eng,
                Insn::Error {
                    q: name == "errorq",
                    msg: rest,
                },
            ),
            _ => syntax(&mut errs),
        }
    }
    // Resolve gotos (the index may have shifted by the Initial instruction).
    for (_, label) in &gotos {
        if eng.find_label(label).is_none() {
            errs.push(format!("no such label '{label}'"));
        }
    }
    let resolved: Vec<(usize, Target)> = eng
        .insns
        .iter()
        .enumerate()
        .filter(|(_, x)| matches!(x, Insn::Goto { .. }))
        .zip(gotos.iter())
        .filter_map(|((i, _), (_, l))| eng.find_label(l).map(|t| (i, t)))
        .collect();
    for (i, t) in resolved {
        if let Insn::Goto { target, .. } = &mut eng.insns[i] {
            *target = t;
        }
    }
    if kind == Kind::Packet && ctx.ninputs() == 0 {
        errs.push("PACKET script must have inputs".into());
    } else if kind != Kind::Packet && (ctx.ninputs() > 0 || ctx.noutputs() > 0) {
        errs.push("ports allowed only on PACKET scripts".into());
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    if eng.insns.is_empty() && kind == Kind::Driver {
        eng.insns.push(Insn::WaitStep { n: 1, done: 0 });
    }
    eng.insns.push(if kind == Kind::Driver {
        Insn::Stop
    } else {
        Insn::End
    });
    eng.kind = kind;
    Ok(Box::new(Script {
        eng: RefCell::new(eng),
        push: ctx.input_is_push(0),
    }))
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    make_script(ctx, "Script", Kind::Active)
}

impl Script {
    /// Run the script on one packet; returns the output port (`None`: drop).
    fn packet_port(&mut self, port: usize, ctx: &mut Ctx<'_>) -> Option<usize> {
        let eng = self.eng.get_mut();
        let vi = eng.var_index("input");
        eng.vars[vi].1 = port.to_string();
        let out = eng.run_from_start(&mut CtxEnv(ctx))?;
        parse_int(&out).and_then(|p| usize::try_from(p).ok())
    }

    /// Apply Click's handler-driven step (`step`, `goto`, `run` writes).
    fn handler_step(&mut self, what: &str, value: &str) -> Result<(), String> {
        let eng = self.eng.get_mut();
        eng.run_handler = what.to_string();
        eng.run_args = String::new();
        eng.run_write = true;
        if eng.running {
            if what == "step" {
                eng.extra_steps += parse_int(value).unwrap_or(1);
            }
            return Ok(());
        }
        let mut env = NoCtxEnv;
        let _ = eng.initialize(&mut env);
        eng.jumps = 0;
        match what {
            "goto" => {
                let l = value.trim();
                let Some(Target::Pos(p)) = eng.find_label(l) else {
                    return Err("jump to nonexistent label".into());
                };
                for i in p..eng.insns.len() {
                    if let Insn::WaitStep { done, .. } = &mut eng.insns[i] {
                        *done = 0;
                    }
                }
                eng.pos = p;
                eng.step(0, StepType::Jump, &mut env);
            }
            "run" => {
                eng.run_args = value.to_string();
                eng.pos = 0;
                eng.step(0, StepType::Jump, &mut env);
            }
            _ => {
                let v = value.trim();
                let (n, st) = if v == "router" {
                    (1, StepType::Router)
                } else if v.is_empty() {
                    (1, StepType::Normal)
                } else {
                    (
                        parse_int(v).ok_or_else(|| "syntax error".to_string())?,
                        StepType::Normal,
                    )
                };
                eng.step(n, st, &mut env);
            }
        }
        Ok(())
    }
}

impl Element for Script {
    fn calls_handlers(&self) -> bool {
        true
    }

    fn push(&mut self, port: usize, mut batch: Batch, ctx: &mut Ctx<'_>) {
        let mut cur = Batch::new();
        let mut cur_port = 0usize;
        for p in batch.drain() {
            let Some(out) = self.packet_port(port, ctx) else {
                continue;
            };
            if out != cur_port && !cur.is_empty() {
                ctx.push(cur_port, std::mem::take(&mut cur));
            }
            cur_port = out;
            cur.push(p);
        }
        ctx.push(cur_port, cur);
    }

    fn pull(&mut self, _port: usize, max: usize, ctx: &mut Ctx<'_>) -> Option<Batch> {
        let mut b = ctx.pull(0, max)?;
        let mut keep = Batch::new();
        for p in b.drain() {
            match self.packet_port(0, ctx) {
                Some(0) => keep.push(p),
                Some(o) => ctx.push(o, Batch::single(p)),
                None => {}
            }
        }
        let _ = self.push;
        (!keep.is_empty()).then_some(keep)
    }

    fn is_task(&self) -> bool {
        // Active and driver scripts start from their task (and deliver
        // deferred work there); passive and packet scripts run only when
        // called, so they stay off the scheduler and out of thread placement.
        matches!(self.eng.borrow().kind, Kind::Active | Kind::Driver)
    }

    fn run_task(&mut self, ctx: &mut Ctx<'_>) -> bool {
        let eng = self.eng.get_mut();
        if !eng.started {
            eng.started = true;
            let mut env = CtxEnv(ctx);
            let _ = eng.initialize(&mut env);
            match (eng.kind, eng.insns.first()) {
                (Kind::Active | Kind::Driver, Some(Insn::WaitTime(t))) => {
                    let t = t.clone();
                    match eng.expand(&t, &mut env).ok().and_then(|e| {
                        <linerate_args::Seconds as linerate_args::ArgValue>::parse_arg(e.trim())
                            .ok()
                    }) {
                        Some(s) => env.0.schedule_after(s.nanos),
                        None => eng.report("syntax error at 'wait'"),
                    }
                }
                (Kind::Active, Some(Insn::Initial { .. })) => {
                    eng.insns[0] = Insn::Initial { pending: true };
                    eng.step(1, StepType::Timer, &mut env);
                }
                (Kind::Driver, Some(Insn::Initial { .. })) => {
                    eng.insns[0] = Insn::Initial { pending: true };
                    eng.step(1, StepType::Router, &mut env);
                }
                _ => {}
            }
            return true;
        }
        let mut work = false;
        if eng.resume {
            eng.resume = false;
            eng.jumps = 0;
            eng.step(0, StepType::Jump, &mut CtxEnv(ctx));
            work = true;
        }
        if eng.kind == Kind::Driver {
            let total = ctx.stop_requests();
            while eng.stops_seen < total {
                eng.stops_seen += 1;
                eng.jumps = 0;
                eng.step(1, StepType::Router, &mut CtxEnv(ctx));
                work = true;
            }
        }
        work
    }

    fn run_timer(&mut self, ctx: &mut Ctx<'_>) {
        let eng = self.eng.get_mut();
        eng.jumps = 0;
        eng.step(1, StepType::Timer, &mut CtxEnv(ctx));
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        let (h, args) = shift_word(name);
        let Ok(mut eng) = self.eng.try_borrow_mut() else {
            return None;
        };
        if h == "run" {
            eng.run_handler = "run".into();
            eng.run_args = args.to_string();
            eng.run_write = false;
            let r = eng.run_from_start(&mut NoCtxEnv);
            if eng.resume {
                eng.resume = false;
                eng.pos = eng.insns.len() - 1;
                eng.report(
                    "'run' called from a handler needs other elements' handlers; not supported",
                );
            }
            return r;
        }
        let is_export = eng.exports.iter().any(|&i| eng.vars[i].0 == h);
        if !is_export && (!OWN_HANDLERS.contains(&h) || h == "step" || h == "goto") {
            return None;
        }
        eng.own_read(h, args, &mut NoCtxEnv).ok()
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        match name {
            "step" | "goto" | "run" => Some(self.handler_step(name, value)),
            _ => None,
        }
    }

    fn manages_driver_stop(&self) -> bool {
        self.eng.borrow().kind == Kind::Driver
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

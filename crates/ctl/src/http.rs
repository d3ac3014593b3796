//! HTTP access to handlers (JSON) and Prometheus metrics.
//!
//! Routes:
//! - `GET /handlers`: every element with its handlers, and the global ones.
//! - `GET /handlers/ELEMENT/HANDLER`, `GET /read/ELEMENT.HANDLER`: a value,
//!   as `{"handler": "c.count", "value": "1000\n"}` (the value exactly as the
//!   handler gives it, trailing newline included); `/handlers/HANDLER` and
//!   `/read/HANDLER` read a global handler.
//! - `POST` or `PUT` to `/handlers/ELEMENT/HANDLER` or
//!   `/write/ELEMENT.HANDLER`: write the request body to the handler.
//! - `GET /metrics`: counters and gauges in Prometheus' text format.
//!
//! Path segments are percent-decoded. Errors are JSON objects
//! `{"error": "...", "code": N}` with the Click reply code: 404 for an unknown
//! element or handler, 405 for a read of a write-only handler (or the
//! reverse) and for unsupported methods, 400 for a value a handler refused,
//! 413 for a body over 1 MiB, 500 when a read handler fails.

use crate::control::{
    Control, Failure, Globals, CS_HANDLER_ERROR, CS_NO_SUCH_ELEMENT, CS_NO_SUCH_HANDLER,
    CS_PERMISSION,
};
use linerate_runtime::element::hflags;
use linerate_runtime::{HandlerSpec, RouterHandle};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{self, Read};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::thread::JoinHandle;
use tiny_http::{Header, Method, Request, Response, Server};

/// Largest request body accepted.
const MAX_BODY: usize = 1024 * 1024;
/// Threads answering requests.
const WORKERS: usize = 2;

/// A running HTTP server; dropping it stops the server and waits for its
/// threads.
pub struct HttpGuard {
    server: Arc<Server>,
    workers: Vec<JoinHandle<()>>,
    addr: SocketAddr,
}

impl HttpGuard {
    /// The address the server listens on (the real port when 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for HttpGuard {
    fn drop(&mut self) {
        // Each unblock ends one worker's wait.
        for _ in &self.workers {
            self.server.unblock();
        }
        for t in self.workers.drain(..) {
            let _ = t.join();
        }
    }
}

/// Serve handlers over HTTP on `addr` (callers normally pass a loopback
/// address; port 0 picks a free port, see [`HttpGuard::local_addr`]).
pub fn serve_http(addr: SocketAddr, h: RouterHandle, g: Arc<Globals>) -> io::Result<HttpGuard> {
    let listener = TcpListener::bind(addr)?;
    let addr = listener.local_addr()?;
    let server = Arc::new(Server::from_listener(listener, None).map_err(io::Error::other)?);
    let ctl = Arc::new(Control::new(h, g));
    let mut workers = Vec::with_capacity(WORKERS);
    for _ in 0..WORKERS {
        let (srv, ctl) = (server.clone(), ctl.clone());
        let t = std::thread::Builder::new()
            .name("ctl-http".into())
            .spawn(move || {
                // `recv` fails once the guard unblocks this worker.
                while let Ok(req) = srv.recv() {
                    respond(&ctl, req);
                }
            });
        match t {
            Ok(t) => workers.push(t),
            Err(e) => {
                // Dropping the partial guard stops the workers already started.
                drop(HttpGuard {
                    server,
                    workers,
                    addr,
                });
                return Err(e);
            }
        }
    }
    Ok(HttpGuard {
        server,
        workers,
        addr,
    })
}

/// A response: status, content type and body.
struct Answer {
    status: u16,
    json: bool,
    body: String,
}

impl Answer {
    fn json(status: u16, v: Value) -> Answer {
        Answer {
            status,
            json: true,
            body: format!("{v}\n"),
        }
    }

    fn error(status: u16, code: u16, message: &str) -> Answer {
        Answer::json(status, json!({ "error": message, "code": code }))
    }

    fn failure(f: &Failure, writing: bool) -> Answer {
        let status = match f.code {
            CS_NO_SUCH_ELEMENT | CS_NO_SUCH_HANDLER => 404,
            CS_PERMISSION => 405,
            CS_HANDLER_ERROR if !writing => 500,
            _ => 400,
        };
        Answer::error(status, f.code, &f.one_line())
    }
}

fn respond(ctl: &Control, mut req: Request) {
    let method = req.method().clone();
    let url = req.url().to_string();
    let mut body = Vec::new();
    let too_big = match req
        .as_reader()
        .take(MAX_BODY as u64 + 1)
        .read_to_end(&mut body)
    {
        Ok(n) => n > MAX_BODY,
        Err(_) => {
            let _ = req.respond(Response::empty(400));
            return;
        }
    };
    let a = if too_big {
        Answer::error(413, 0, "request body over 1 MiB")
    } else {
        route(ctl, &method, &url, &body)
    };
    let ctype = if a.json {
        "application/json"
    } else {
        "text/plain; version=0.0.4; charset=utf-8"
    };
    let mut resp = Response::from_string(a.body).with_status_code(a.status);
    if let Ok(h) = Header::from_bytes("Content-Type", ctype) {
        resp = resp.with_header(h);
    }
    // The client may have gone; nothing to do then.
    let _ = req.respond(resp);
}

fn route(ctl: &Control, method: &Method, url: &str, body: &[u8]) -> Answer {
    let path = url.split(['?', '#']).next().unwrap_or("");
    let Some(path) = percent_decode(path) else {
        return Answer::error(400, 0, "bad percent-encoding in path");
    };
    let reading = matches!(method, Method::Get | Method::Head);
    let writing = matches!(method, Method::Post | Method::Put);
    // The handler a path names, if it names one, and whether it may be
    // written.
    let (name, writable_route) = if path == "/handlers" || path == "/handlers/" {
        if !reading {
            return method_not_allowed();
        }
        return Answer::json(200, handler_list(ctl));
    } else if path == "/metrics" {
        if !reading {
            return method_not_allowed();
        }
        return Answer {
            status: 200,
            json: false,
            body: metrics(ctl),
        };
    } else if let Some(rest) = path.strip_prefix("/handlers/") {
        let name = match rest.rsplit_once('/') {
            Some((e, h)) => format!("{e}.{h}"),
            None => rest.to_string(),
        };
        (name, true)
    } else if let Some(rest) = path.strip_prefix("/read/") {
        (rest.to_string(), false)
    } else if let Some(rest) = path.strip_prefix("/write/") {
        if !writing {
            return method_not_allowed();
        }
        (rest.to_string(), true)
    } else {
        return Answer::error(
            404,
            0,
            &format!("no route '{path}'; try /handlers or /metrics"),
        );
    };
    if name.is_empty() || name.ends_with('.') {
        return Answer::error(404, CS_NO_SUCH_HANDLER, "no handler named in the path");
    }
    if reading {
        return match ctl.read(&name, "") {
            Ok(v) => Answer::json(200, json!({ "handler": name, "value": v })),
            Err(f) => Answer::failure(&f, false),
        };
    }
    if writing && writable_route {
        let Ok(value) = std::str::from_utf8(body) else {
            return Answer::error(400, 0, "body is not UTF-8");
        };
        return match ctl.write(&name, value) {
            Ok(_) => Answer::json(200, json!({ "handler": name, "ok": true })),
            Err(f) => Answer::failure(&f, true),
        };
    }
    method_not_allowed()
}

fn method_not_allowed() -> Answer {
    Answer::error(405, 0, "method not allowed here")
}

/// Decode `%XX` escapes; `None` for a bad escape or non-UTF-8 result.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            if !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
                return None;
            }
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn spec_json(s: &HandlerSpec) -> Value {
    let kind = if s.flags & hflags::COUNTER != 0 {
        Value::from("counter")
    } else if s.flags & hflags::GAUGE != 0 {
        Value::from("gauge")
    } else {
        Value::Null
    };
    json!({
        "name": s.name,
        "read": s.flags & hflags::READ != 0,
        "write": s.flags & hflags::WRITE != 0,
        "metric": kind,
    })
}

fn handler_list(ctl: &Control) -> Value {
    let elements: Vec<Value> = ctl
        .handle()
        .elements()
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let hs: Vec<Value> = ctl.handlers_of(i).iter().map(spec_json).collect();
            json!({ "name": e.name, "class": e.class, "config": e.config, "handlers": hs })
        })
        .collect();
    let global: Vec<Value> = ctl.global_handlers().iter().map(spec_json).collect();
    json!({ "elements": elements, "global": global })
}

/// A handler value as a Prometheus sample value, if it is a number.
fn sample_value(s: &str) -> Option<String> {
    let t = s.trim();
    if let Ok(i) = t.parse::<i128>() {
        return Some(i.to_string());
    }
    // Rust also accepts "inf", "infinity" and "nan" in any case.
    let f: f64 = t.parse().ok()?;
    Some(if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        f.to_string()
    })
}

/// A metric name part: characters other than `[A-Za-z0-9_]` become `_`.
fn metric_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A label value with `\`, `"` and newline escaped.
fn label_value(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '"' => o.push_str("\\\""),
            '\n' => o.push_str("\\n"),
            c => o.push(c),
        }
    }
    o
}

/// One metric family: kind, handler name and its samples.
struct Family {
    counter: bool,
    handler: String,
    samples: Vec<String>,
}

/// Every COUNTER handler as `linerate_<handler>_total` and every GAUGE handler
/// as `linerate_<handler>`, labelled with element name and class; values that
/// are not numbers are left out, and so is a handler whose metric name is
/// already taken by a family of the other kind.
fn metrics(ctl: &Control) -> String {
    let mut fams: BTreeMap<String, Family> = BTreeMap::new();
    for (i, e) in ctl.handle().elements().iter().enumerate() {
        for s in ctl.handlers_of(i).iter() {
            let counter = s.flags & hflags::COUNTER != 0;
            if s.flags & hflags::READ == 0 || !(counter || s.flags & hflags::GAUGE != 0) {
                continue;
            }
            let base = format!("linerate_{}", metric_part(s.name));
            let name = if counter && !base.ends_with("_total") {
                format!("{base}_total")
            } else {
                base
            };
            let fam = fams.entry(name.clone()).or_insert_with(|| Family {
                counter,
                handler: s.name.to_string(),
                samples: Vec::new(),
            });
            if fam.counter != counter {
                continue;
            }
            let Ok(v) = ctl.handle().call_elem(i, s.name, None) else {
                continue;
            };
            let Some(v) = sample_value(&v) else { continue };
            fam.samples.push(format!(
                "{name}{{element=\"{}\",class=\"{}\"}} {v}\n",
                label_value(&e.name),
                label_value(&e.class)
            ));
        }
    }
    let mut out = String::new();
    for (name, f) in fams {
        if f.samples.is_empty() {
            continue;
        }
        let kind = if f.counter { "counter" } else { "gauge" };
        // Handler names are identifiers; escape anyway, as HELP requires.
        let help = f.handler.replace('\\', "\\\\").replace('\n', "\\n");
        out.push_str(&format!(
            "# HELP {name} Value of the '{help}' {kind} handler of linerate elements.\n"
        ));
        out.push_str(&format!("# TYPE {name} {kind}\n"));
        for s in f.samples {
            out.push_str(&s);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_values() {
        assert_eq!(sample_value(" 1000\n").as_deref(), Some("1000"));
        assert_eq!(sample_value("-3").as_deref(), Some("-3"));
        assert_eq!(sample_value("0.25").as_deref(), Some("0.25"));
        assert_eq!(sample_value("inf").as_deref(), Some("+Inf"));
        assert_eq!(sample_value("-inf").as_deref(), Some("-Inf"));
        assert_eq!(sample_value("NaN").as_deref(), Some("NaN"));
        assert_eq!(
            sample_value("340282366920938463463374607431768211455").as_deref(),
            Some("340282366920938500000000000000000000000")
        );
        assert_eq!(sample_value("true"), None);
        assert_eq!(sample_value("10 packets"), None);
        assert_eq!(sample_value(""), None);
    }

    #[test]
    fn names_and_labels_are_escaped() {
        assert_eq!(metric_part("byte-count.x"), "byte_count_x");
        assert_eq!(label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(
            percent_decode("/handlers/a%2Fb/count").as_deref(),
            Some("/handlers/a/b/count")
        );
        assert_eq!(percent_decode("%41%42c").as_deref(), Some("ABc"));
        assert_eq!(percent_decode("%4"), None);
        assert_eq!(percent_decode("%zz"), None);
        assert_eq!(percent_decode("%ff"), None);
    }
}

//! The HTTP server: JSON handler access and Prometheus metrics from a real
//! running router.

mod common;

use common::{Running, SMALL};
use linerate_ctl::serve_http;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

const T: Duration = Duration::from_secs(10);

/// Status, headers (lower-cased names) and body of one response.
struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Resp {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("bad JSON {:?}: {e}", self.body))
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`).
fn request(addr: SocketAddr, method: &str, path: &str, body: &str) -> Resp {
    let mut s = TcpStream::connect_timeout(&addr, T).expect("connect");
    s.set_read_timeout(Some(T)).expect("timeout");
    s.set_write_timeout(Some(T)).expect("timeout");
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).expect("send");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("response");
    let text = String::from_utf8(raw).expect("UTF-8 response");
    let (head, body) = text.split_once("\r\n\r\n").expect("header end");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().expect("status line");
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status code");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Resp {
        status,
        headers,
        body: body.to_string(),
    }
}

fn get(addr: SocketAddr, path: &str) -> Resp {
    request(addr, "GET", path, "")
}

#[test]
fn json_handler_access() {
    // Servers start before the run, as `linerate` starts them.
    let r = Running::build(SMALL);
    let guard = serve_http(
        "127.0.0.1:0".parse().expect("addr"),
        r.handle.clone(),
        r.globals(),
    )
    .expect("serve");
    let r = r.go();
    r.wait_for("c.count", "1000");
    let addr = guard.local_addr();
    assert!(addr.ip().is_loopback() && addr.port() != 0);

    let list = get(addr, "/handlers");
    assert_eq!(list.status, 200);
    assert_eq!(list.header("content-type"), Some("application/json"));
    let v = list.json();
    let els = v["elements"].as_array().expect("elements array");
    assert_eq!(els.len(), 3);
    assert_eq!(els[1]["name"], "c");
    assert_eq!(els[1]["class"], "Counter");
    let hs = els[1]["handlers"].as_array().expect("handlers");
    let count = hs
        .iter()
        .find(|h| h["name"] == "count")
        .expect("count handler");
    assert_eq!(count["read"], true);
    assert_eq!(count["write"], false);
    assert_eq!(count["metric"], "counter");
    let reset = hs
        .iter()
        .find(|h| h["name"] == "reset")
        .expect("reset handler");
    assert_eq!(
        (reset["read"].as_bool(), reset["write"].as_bool()),
        (Some(false), Some(true))
    );
    assert!(hs
        .iter()
        .any(|h| h["name"] == "class" && h["metric"].is_null()));
    assert!(v["global"]
        .as_array()
        .expect("global")
        .iter()
        .any(|h| h["name"] == "stop" && h["write"] == true));

    let one = get(addr, "/handlers/c/count");
    assert_eq!(one.status, 200);
    assert_eq!(
        one.json(),
        serde_json::json!({"handler": "c.count", "value": "1000\n"})
    );
    assert_eq!(get(addr, "/read/c.count").json()["value"], "1000\n");
    assert_eq!(get(addr, "/read/2.class").json()["value"], "Counter\n");
    assert_eq!(
        get(addr, "/handlers/version").json()["value"],
        "0.1.0-test\n"
    );
    assert_eq!(
        get(addr, "/read/list").json()["value"]
            .as_str()
            .map(|s| s.starts_with("3\n")),
        Some(true)
    );

    let w = request(addr, "POST", "/handlers/c/reset", "");
    assert_eq!(w.status, 200, "{}", w.body);
    assert_eq!(w.json()["ok"], true);
    assert_eq!(get(addr, "/read/c.count").json()["value"], "0\n");
    assert_eq!(request(addr, "PUT", "/write/src.burst", "7").status, 200);
    assert_eq!(get(addr, "/handlers/src/burst").json()["value"], "7\n");

    let e = get(addr, "/handlers/nope/count");
    assert_eq!(e.status, 404);
    assert_eq!(e.json()["code"], 510);
    assert_eq!(e.json()["error"], "No element named 'nope'");
    let e = get(addr, "/read/c.nope");
    assert_eq!((e.status, e.json()["code"].as_u64()), (404, Some(511)));
    let e = get(addr, "/read/c.reset");
    assert_eq!((e.status, e.json()["code"].as_u64()), (405, Some(530)));
    let e = request(addr, "POST", "/handlers/c/count", "1");
    assert_eq!((e.status, e.json()["code"].as_u64()), (405, Some(530)));
    let e = request(addr, "POST", "/write/src.limit", "abc");
    assert_eq!((e.status, e.json()["code"].as_u64()), (400, Some(520)));
    assert!(e.json()["error"]
        .as_str()
        .is_some_and(|m| m.starts_with("Write handler 'src.limit' error: ")));
    assert_eq!(request(addr, "DELETE", "/handlers/c/count", "").status, 405);
    assert_eq!(request(addr, "POST", "/read/c.reset", "").status, 405);
    assert_eq!(request(addr, "POST", "/metrics", "").status, 405);
    let e = get(addr, "/nothing/here");
    assert_eq!(e.status, 404);
    assert!(e.json()["error"].is_string());
    assert_eq!(get(addr, "/read/c%2").status, 400);
    assert_eq!(get(addr, "/handlers/c/").status, 404);
    let big = "x".repeat(1024 * 1024 + 1);
    assert_eq!(request(addr, "POST", "/write/src.burst", &big).status, 413);

    // Writing the global `stop` handler stops the router.
    assert_eq!(request(addr, "POST", "/handlers/stop", "").status, 200);
    assert!(common::wait_until(T, || !r.handle.running()));

    // tiny_http closes its listening socket from its own accept thread, a
    // moment after the server is dropped.
    drop(guard);
    assert!(
        common::wait_until(T, || TcpStream::connect_timeout(
            &addr,
            Duration::from_millis(200)
        )
        .is_err()),
        "listener closed after drop"
    );
}

/// Parsed sample: metric name, labels, value.
fn parse_sample(line: &str) -> (String, Vec<(String, String)>, f64) {
    let (name, rest) = line.split_once('{').expect("labels");
    let (labels, value) = rest.rsplit_once("} ").expect("value");
    let labels = labels
        .split(',')
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("label=value");
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .expect("quoted label value");
            (k.to_string(), v.to_string())
        })
        .collect();
    (
        name.to_string(),
        labels,
        value.parse().expect("numeric value"),
    )
}

#[test]
fn prometheus_metrics() {
    let r = Running::build(
        "src :: InfiniteSource(LIMIT 1000) -> c :: Counter -> q :: Queue(2000) \
         -> u :: Unqueue(ACTIVE false) -> Discard;",
    );
    let guard = serve_http(
        "127.0.0.1:0".parse().expect("addr"),
        r.handle.clone(),
        r.globals(),
    )
    .expect("serve");
    let r = r.go();
    r.wait_for("c.count", "1000");
    r.wait_for("q.length", "1000");
    let m = get(guard.local_addr(), "/metrics");
    assert_eq!(m.status, 200);
    assert_eq!(
        m.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );

    // Structure: every family is HELP, TYPE, then its samples, contiguous.
    let mut families: Vec<(String, String)> = Vec::new();
    let mut samples = Vec::new();
    let mut current: Option<(String, String)> = None;
    let mut pending_help: Option<String> = None;
    for line in m.body.lines() {
        if let Some(h) = line.strip_prefix("# HELP ") {
            let name = h.split(' ').next().expect("help name").to_string();
            assert!(
                !families.iter().any(|(n, _)| *n == name),
                "family {name} appears twice"
            );
            pending_help = Some(name);
        } else if let Some(t) = line.strip_prefix("# TYPE ") {
            let (name, kind) = t.split_once(' ').expect("type line");
            assert_eq!(
                pending_help.take().as_deref(),
                Some(name),
                "TYPE follows HELP"
            );
            assert!(kind == "counter" || kind == "gauge");
            families.push((name.to_string(), kind.to_string()));
            current = Some((name.to_string(), kind.to_string()));
        } else {
            let (name, labels, value) = parse_sample(line);
            let (fam, kind) = current.clone().expect("sample after TYPE");
            assert_eq!(name, fam, "sample in its family");
            assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
            samples.push((name, labels, value, kind));
        }
    }
    let find = |name: &str, elem: &str| {
        samples
            .iter()
            .find(|(n, l, _, _)| n == name && l.iter().any(|(k, v)| k == "element" && v == elem))
            .map(|(_, l, v, k)| (l.clone(), *v, k.clone()))
    };
    let (labels, v, kind) = find("linerate_count_total", "c").expect("c.count sample");
    assert_eq!(
        labels,
        [
            ("element".to_string(), "c".to_string()),
            ("class".to_string(), "Counter".to_string())
        ]
    );
    assert_eq!((v, kind.as_str()), (1000.0, "counter"));
    assert_eq!(
        find("linerate_count_total", "src").map(|s| s.1),
        Some(1000.0)
    );
    assert_eq!(find("linerate_count_total", "u").map(|s| s.1), Some(0.0));
    assert_eq!(
        find("linerate_byte_count_total", "c").map(|s| s.1),
        Some(69_000.0)
    );
    let (_, len, kind) = find("linerate_length", "q").expect("queue length gauge");
    assert_eq!((len, kind.as_str()), (1000.0, "gauge"));
    assert_eq!(
        find("linerate_highwater_length", "q").map(|s| s.1),
        Some(1000.0)
    );
    assert_eq!(
        find("linerate_drops_total", "q").map(|s| (s.1, s.2)),
        Some((0.0, "counter".to_string()))
    );
    // Non-metric handlers (capacity, active, class) are not exported.
    assert!(samples
        .iter()
        .all(|(n, _, _, _)| n != "linerate_capacity" && n != "linerate_active"));
    assert!(m.body.contains("# TYPE linerate_count_total counter\n"));
    assert!(m.body.contains("# TYPE linerate_length gauge\n"));
}

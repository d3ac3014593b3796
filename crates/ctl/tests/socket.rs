//! The Click ControlSocket protocol over a Unix-domain socket and TCP,
//! against a real running router.

mod common;

use common::{Running, TempDir, SMALL};
use linerate_ctl::{client_call, serve_tcp, serve_unix, Client, CtlError};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::Duration;

const T: Duration = Duration::from_secs(10);

/// A raw protocol connection for transcript checks.
struct Raw {
    r: BufReader<Box<dyn Read>>,
    w: Box<dyn Write>,
}

impl Raw {
    fn unix(path: &std::path::Path) -> Raw {
        let s = UnixStream::connect(path).expect("connect");
        s.set_read_timeout(Some(T)).expect("timeout");
        s.set_write_timeout(Some(T)).expect("timeout");
        let w = s.try_clone().expect("clone");
        Raw {
            r: BufReader::new(Box::new(s)),
            w: Box::new(w),
        }
    }

    fn tcp(addr: std::net::SocketAddr) -> Raw {
        let s = TcpStream::connect_timeout(&addr, T).expect("connect");
        s.set_read_timeout(Some(T)).expect("timeout");
        s.set_write_timeout(Some(T)).expect("timeout");
        let w = s.try_clone().expect("clone");
        Raw {
            r: BufReader::new(Box::new(s)),
            w: Box::new(w),
        }
    }

    fn send(&mut self, s: &str) {
        self.w.write_all(s.as_bytes()).expect("send");
        self.w.flush().expect("flush");
    }

    /// The next bytes must be exactly `want`.
    fn expect(&mut self, want: &str) {
        let mut got = vec![0u8; want.len()];
        self.r
            .read_exact(&mut got)
            .unwrap_or_else(|e| panic!("reading {want:?}: {e}"));
        assert_eq!(String::from_utf8_lossy(&got), want);
    }

    /// Reply lines up to and including the last one (`CODE text`).
    fn reply(&mut self) -> Vec<String> {
        let mut v = Vec::new();
        loop {
            let mut l = String::new();
            self.r.read_line(&mut l).expect("reply line");
            assert!(l.ends_with("\r\n"), "line {l:?} ends in CRLF");
            let l = l.trim_end_matches("\r\n").to_string();
            let last = l.as_bytes().get(3) == Some(&b' ');
            v.push(l);
            if last {
                return v;
            }
        }
    }

    /// The connection is closed by the server.
    fn expect_eof(&mut self) {
        let mut rest = Vec::new();
        self.r.read_to_end(&mut rest).expect("read to EOF");
        assert!(
            rest.is_empty(),
            "unexpected bytes {:?}",
            String::from_utf8_lossy(&rest)
        );
    }
}

#[test]
fn unix_socket_transcript() {
    let r = Running::start(SMALL);
    r.wait_for("c.count", "1000");
    let dir = TempDir::new();
    let path = dir.join("ctl.sock");
    let guard = serve_unix(&path, r.handle.clone(), r.globals()).expect("serve");
    assert_eq!(guard.path(), Some(path.as_path()));
    assert_eq!(guard.endpoint(), path.display().to_string());
    let mut c = Raw::unix(&path);
    c.expect("Click::ControlSocket/1.3\r\n");

    c.send("READ c.count\r\n");
    c.expect("200 Read handler 'c.count' OK\r\nDATA 5\r\n1000\n");
    // Lower case, LF only, element by number (from 1), extra spaces.
    c.send("  read   2.count \n");
    c.expect("200 Read handler '2.count' OK\r\nDATA 5\r\n1000\n");
    // Bare CR ends a line too; blank lines are ignored.
    c.send("\r\nGET src.count\r");
    c.expect("200 Read handler 'src.count' OK\r\nDATA 5\r\n1000\n");
    c.send("READ c.class\r\n");
    c.expect("200 Read handler 'c.class' OK\r\nDATA 8\r\nCounter\n");

    c.send("READ nope.count\r\n");
    c.expect("510 No element named 'nope'\r\n");
    c.send("READ 9.count\r\n");
    c.expect("510 No element named '9'\r\n");
    c.send("READ c.nope\r\n");
    c.expect("511 No handler named 'c.nope'\r\n");
    c.send("READ nosuchglobal\r\n");
    c.expect("511 No handler named 'nosuchglobal'\r\n");
    c.send("READ c.reset\r\n");
    c.expect("530 Handler 'c.reset' write-only\r\n");
    c.send("WRITE c.count 5\r\n");
    c.expect("530 Handler 'c.count' read-only\r\n");
    c.send("READ\r\n");
    c.expect("500 Wrong number of arguments\r\n");
    c.send("FROB c.count\r\n");
    c.expect("501 Command 'FROB' unimplemented\r\n");

    c.send("CHECKREAD c.count\r\nCHECKWRITE c.reset\r\n");
    c.expect("200 Read handler 'c.count' OK\r\n200 Write handler 'c.reset' OK\r\n");
    c.send("CHECKWRITE c.count\r\n");
    c.expect("511 Handler 'c.count' not writable\r\n");
    c.send("CHECKREAD c.reset\r\n");
    c.expect("511 Handler 'c.reset' not readable\r\n");
    c.send("CHECKREAD x.y\r\n");
    c.expect("510 No element named 'x'\r\n");
    c.send("CHECKREAD c.count extra\r\n");
    c.expect("500 Wrong number of arguments\r\n");

    // LLRPC data is consumed, then refused.
    c.send("LLRPC c#1234 2\r\nxxREAD c.count\r\n");
    c.expect("501 Cannot call LLRPC 'c#1234' remotely\r\n");
    c.expect("200 Read handler 'c.count' OK\r\nDATA 5\r\n1000\n");
    c.send("LLRPC c#1 x\r\n");
    c.expect("500 Syntax error in 'llrpc'\r\n");

    // Handler errors: multi-line 520 replies.
    c.send("WRITE src.limit abc\r\n");
    let rep = c.reply();
    assert!(rep.len() >= 2, "{rep:?}");
    assert_eq!(rep[0], "520-Write handler 'src.limit' error:");
    assert!(rep[1..].iter().all(|l| l.starts_with("520")), "{rep:?}");
    c.send("READ c.count now\r\n");
    assert_eq!(
        c.reply(),
        [
            "520-Read handler 'c.count' error:",
            "520 read handler does not take parameters"
        ]
    );

    // Writes: WRITEDATA with an empty body, WRITE, then the effect.
    c.send("WRITEDATA c.reset 0\r\n");
    c.expect("200 Write handler 'c.reset' OK\r\n");
    c.send("READ c.count\r\n");
    c.expect("200 Read handler 'c.count' OK\r\nDATA 2\r\n0\n");
    c.send("WRITEDATA src.burst 3\r\n16\nREAD src.burst\r\n");
    c.expect(
        "200 Write handler 'src.burst' OK\r\n200 Read handler 'src.burst' OK\r\nDATA 3\r\n16\n",
    );
    c.send("SET src.burst 8\r\nREADDATA src.burst 0\r\n");
    c.expect(
        "200 Write handler 'src.burst' OK\r\n200 Read handler 'src.burst' OK\r\nDATA 2\r\n8\n",
    );
    c.send("WRITEUNTIL src.burst EOF\r\n4\r\nEOF  \r\n");
    c.expect("200 Write handler 'src.burst' OK\r\n");
    c.send("READUNTIL src.burst\r\n\r\n");
    c.expect("200 Read handler 'src.burst' OK\r\nDATA 2\r\n4\n");
    c.send("WRITEDATA c.reset -1\r\n");
    c.expect("500 Syntax error in 'WRITEDATA'\r\n");

    // Global handlers.
    let names: Vec<String> = r.handle.elements().iter().map(|e| e.name.clone()).collect();
    let list = format!("3\n{}\n", names.join("\n"));
    c.send("READ list\r\n");
    c.expect(&format!(
        "200 Read handler 'list' OK\r\nDATA {}\r\n{list}",
        list.len()
    ));
    c.send("READ .version\r\n");
    c.expect("200 Read handler '.version' OK\r\nDATA 11\r\n0.1.0-test\n");
    c.send("READ 0.classes\r\n");
    c.expect("200 Read handler '0.classes' OK\r\nDATA 16\r\nCounter\nDiscard\n");
    c.send("READ config\r\n");
    c.expect("200 Read handler 'config' OK\r\nDATA 14\r\n// the config\n");
    let flat = if r.flat.ends_with('\n') {
        r.flat.clone()
    } else {
        format!("{}\n", r.flat)
    };
    c.send("READ flatconfig\r\n");
    c.expect(&format!(
        "200 Read handler 'flatconfig' OK\r\nDATA {}\r\n{flat}",
        flat.len()
    ));
    c.send("CHECKWRITE stop\r\nCHECKREAD stop\r\n");
    c.expect("200 Write handler 'stop' OK\r\n511 Handler 'stop' not readable\r\n");

    c.send("HELP\r\n");
    let help = c.reply();
    assert!(
        help.len() > 5 && help[0] == "200-Commands supported:",
        "{help:?}"
    );
    assert!(
        help.last().is_some_and(|l| l.starts_with("200 QUIT")),
        "{help:?}"
    );

    c.send("QUIT\r\n");
    c.expect("200 Goodbye!\r\n");
    c.expect_eof();
    drop(guard);
    assert!(!path.exists(), "socket file removed on drop");
}

#[test]
fn short_data_and_overlong_lines_close_the_connection() {
    let r = Running::start(SMALL);
    let dir = TempDir::new();
    let path = dir.join("ctl.sock");
    let _guard = serve_unix(&path, r.handle.clone(), r.globals()).expect("serve");

    let mut c = Raw::unix(&path);
    c.expect("Click::ControlSocket/1.3\r\n");
    c.send("WRITEDATA c.reset 99999999999\r\n");
    c.expect("521 Data too large for handler 'c.reset'\r\n");
    c.expect_eof();

    let s = UnixStream::connect(&path).expect("connect");
    s.set_read_timeout(Some(T)).expect("timeout");
    let mut w = s.try_clone().expect("clone");
    let mut c = Raw {
        r: BufReader::new(Box::new(s)),
        w: Box::new(w.try_clone().expect("clone")),
    };
    c.expect("Click::ControlSocket/1.3\r\n");
    c.send("WRITEDATA c.reset 10\r\nabc");
    w.shutdown(std::net::Shutdown::Write).expect("half close");
    c.expect("500 Not enough data\r\n");
    c.expect_eof();
    let _ = w.flush();

    let mut c = Raw::unix(&path);
    c.expect("Click::ControlSocket/1.3\r\n");
    c.send(&"x".repeat(70_000));
    c.expect("500 Command line too long\r\n");
    c.expect_eof();
}

#[test]
fn socket_file_conflicts_and_guard_drop() {
    let r = Running::start(SMALL);
    let dir = TempDir::new();

    // A regular file is never replaced.
    let file = dir.join("plain");
    std::fs::write(&file, b"keep").expect("write");
    let e = serve_unix(&file, r.handle.clone(), r.globals())
        .err()
        .expect("refused");
    assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
    assert_eq!(std::fs::read(&file).expect("still there"), b"keep");

    // A live server's socket is not stolen.
    let path = dir.join("ctl.sock");
    let guard = serve_unix(&path, r.handle.clone(), r.globals()).expect("serve");
    let e = serve_unix(&path, r.handle.clone(), r.globals())
        .err()
        .expect("refused");
    assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse);

    // Dropping the guard closes open connections and removes the file.
    let mut c = Raw::unix(&path);
    c.expect("Click::ControlSocket/1.3\r\n");
    drop(guard);
    c.expect_eof();
    assert!(!path.exists());

    // A stale socket file (nobody listens) is replaced.
    drop(std::os::unix::net::UnixListener::bind(&path).expect("bind"));
    assert!(path.exists());
    let _guard = serve_unix(&path, r.handle.clone(), r.globals()).expect("stale socket replaced");
    assert_eq!(
        client_call(&path.display().to_string(), "c.class", None).expect("read"),
        "Counter\n"
    );
}

#[test]
fn tcp_server_and_client() {
    let r = Running::start(SMALL);
    r.wait_for("c.count", "1000");
    let guard = serve_tcp(
        "127.0.0.1:0".parse().expect("addr"),
        r.handle.clone(),
        r.globals(),
    )
    .expect("serve");
    let addr = guard.local_addr().expect("tcp address");
    assert!(addr.ip().is_loopback() && addr.port() != 0);
    assert_eq!(guard.endpoint(), addr.to_string());

    let mut c = Raw::tcp(addr);
    c.expect("Click::ControlSocket/1.3\r\n");
    c.send("READ c.count\r\n");
    c.expect("200 Read handler 'c.count' OK\r\nDATA 5\r\n1000\n");
    c.send("QUIT\r\n");
    c.expect("200 Goodbye!\r\n");
    c.expect_eof();

    let ep = addr.to_string();
    assert_eq!(client_call(&ep, "c.count", None).expect("read"), "1000\n");
    // A bare port means 127.0.0.1:PORT, as with `click -p`.
    assert_eq!(
        client_call(&addr.port().to_string(), "src.count", None).expect("read"),
        "1000\n"
    );
    assert_eq!(client_call(&ep, "c.reset", Some("")).expect("write"), "");
    assert_eq!(client_call(&ep, "c.count", None).expect("read"), "0\n");
    // Values with spaces and newlines travel intact (WRITEDATA).
    assert_eq!(
        client_call(&ep, "src.burst", Some(" 5\n")).expect("write"),
        ""
    );
    assert_eq!(client_call(&ep, "src.burst", None).expect("read"), "5\n");

    match client_call(&ep, "x.count", None) {
        Err(CtlError::Server { code: 510, message }) => assert_eq!(message, "No element named 'x'"),
        other => panic!("expected 510, got {other:?}"),
    }
    match client_call(&ep, "c.count", Some("1")) {
        Err(CtlError::Server { code: 530, .. }) => {}
        other => panic!("expected 530, got {other:?}"),
    }
    match client_call(&ep, "src.limit", Some("abc")) {
        Err(CtlError::Server { code: 520, message }) => assert!(
            message.starts_with("Write handler 'src.limit' error:"),
            "{message}"
        ),
        other => panic!("expected 520, got {other:?}"),
    }

    let mut cl = Client::connect(&ep, T).expect("connect");
    assert_eq!(cl.version(), "1.3");
    cl.check_read("c.count").expect("readable");
    cl.check_write("c.reset").expect("writable");
    assert!(matches!(
        cl.check_write("c.count"),
        Err(CtlError::Server { code: 511, .. })
    ));
    let rep = cl.command("FROB", b"").expect("reply");
    assert_eq!(rep.code, 501);
    assert_eq!(cl.read("c.class").expect("read"), "Counter\n");
    cl.quit().expect("quit");

    drop(guard);
    assert!(
        client_call(&ep, "c.count", None).is_err(),
        "server gone after drop"
    );
}

#[test]
fn client_rejects_non_protocol_peers() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    let t = std::thread::spawn(move || {
        let (mut s, _) = l.accept().expect("accept");
        s.write_all(b"SSH-2.0-nope\r\n").expect("write");
    });
    match client_call(&addr.to_string(), "c.count", None) {
        Err(CtlError::Protocol(m)) => assert!(m.contains("greeting"), "{m}"),
        other => panic!("expected a protocol error, got {other:?}"),
    }
    t.join().expect("peer thread");
    let dir = TempDir::new();
    assert!(matches!(
        client_call(
            &dir.join("none.sock").display().to_string(),
            "c.count",
            None
        ),
        Err(CtlError::Io(_))
    ));
}

#[test]
fn handlers_while_running_and_stop() {
    let r = Running::start("src :: InfiniteSource(LIMIT 1000000000) -> c :: Counter -> Discard;");
    let dir = TempDir::new();
    let path = dir.join("ctl.sock");
    let _guard = serve_unix(&path, r.handle.clone(), r.globals()).expect("serve");
    let ep = path.display().to_string();
    let count = |c: &mut Client| {
        c.read("c.count")
            .expect("read")
            .trim()
            .parse::<u64>()
            .expect("number")
    };
    let mut cl = Client::connect(&ep, T).expect("connect");
    let a = count(&mut cl);
    assert!(
        common::wait_until(T, || count(&mut cl) > a),
        "count grows while running"
    );
    cl.check_read("c.byte_count")
        .expect("class handlers known while running");
    cl.write("stop", "").expect("stop");
    assert!(
        common::wait_until(T, || !r.handle.running()),
        "router stopped"
    );
    // Handlers still answer after the run.
    let b = count(&mut cl);
    assert!(b > a);
    assert_eq!(count(&mut cl), b, "count frozen after stop");
}

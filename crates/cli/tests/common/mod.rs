//! Shared helpers for the CLI integration tests: running the real
//! `linerate` binary (also under the name `click`) with a time limit,
//! temporary directories, free ports, control-socket and HTTP clients, and
//! a small pcap reader to check files the binary writes.
//!
//! Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The real trace (62,781 packets).
pub const TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/traces/pathspider-real-lan2012.pcap"
);
/// Packets in [`TRACE`].
pub const TRACE_PACKETS: u64 = 62_781;
/// Upper bound for a command that is expected to finish by itself.
pub const LIMIT: Duration = Duration::from_secs(30);

/// The binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_linerate")
}

/// `linerate ARGS`.
pub fn linerate(args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.args(args);
    c
}

/// A directory removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    /// A fresh, empty directory whose name contains `tag`.
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("linerate-cli-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }

    /// A path inside the directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Write `text` to `name` in the directory; returns the path.
    pub fn write(&self, name: &str, text: impl AsRef<[u8]>) -> PathBuf {
        let p = self.join(name);
        std::fs::write(&p, text).expect("write temp file");
        p
    }

    /// A symlink named `click` to the binary, in this directory.
    pub fn click(&self) -> Command {
        let link = self.join("click");
        if !link.exists() {
            std::os::unix::fs::symlink(bin(), &link).expect("symlink click");
        }
        Command::new(link)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a finished command did.
#[derive(Debug)]
pub struct Out {
    /// Exit code (`None` if killed by a signal).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Out {
    /// Panics, showing stderr, unless the exit code is `code`; also checks
    /// that nothing panicked.
    pub fn expect_code(&self, code: i32) -> &Out {
        self.no_panic();
        assert_eq!(
            self.code,
            Some(code),
            "exit status; stdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }

    /// Panics if the binary panicked.
    pub fn no_panic(&self) -> &Out {
        assert!(
            !self.stderr.contains("panicked"),
            "the binary panicked:\n{}",
            self.stderr
        );
        assert_ne!(self.code, Some(101), "exit status 101 (a panic)");
        self
    }
}

/// A running child process, killed when dropped, with its output
/// collected in the background so pipes never fill.
pub struct Running {
    child: Child,
    out: Option<JoinHandle<Vec<u8>>>,
    err: Option<JoinHandle<Vec<u8>>>,
}

fn drain(r: Option<impl Read + Send + 'static>) -> Option<JoinHandle<Vec<u8>>> {
    r.map(|mut r| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    })
}

impl Running {
    /// Start `cmd` with `stdin` as its standard input (empty if `None`).
    pub fn start(cmd: &mut Command, stdin: Option<&[u8]>) -> Running {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        let mut child = cmd.spawn().expect("spawn linerate");
        if let (Some(data), Some(mut w)) = (stdin, child.stdin.take()) {
            let data = data.to_vec();
            std::thread::spawn(move || {
                let _ = w.write_all(&data);
            });
        }
        let out = drain(child.stdout.take());
        let err = drain(child.stderr.take());
        Running { child, out, err }
    }

    /// The child's process id.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Send signal `sig` to the child.
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on the pid of a child we own and have not reaped.
        let r = unsafe { libc::kill(self.pid(), sig) };
        assert_eq!(r, 0, "kill({}, {sig})", self.pid());
    }

    /// True while the child has not exited.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Wait up to `limit` for the child to exit; kills it and panics if it
    /// does not.
    pub fn finish(mut self, limit: Duration) -> Out {
        let deadline = Instant::now() + limit;
        let status: ExitStatus = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break s,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    let err = self.err.take().and_then(|h| h.join().ok());
                    panic!(
                        "linerate did not finish within {limit:?}; stderr:\n{}",
                        String::from_utf8_lossy(&err.unwrap_or_default())
                    );
                }
            }
        };
        let text = |h: Option<JoinHandle<Vec<u8>>>| {
            String::from_utf8_lossy(&h.and_then(|h| h.join().ok()).unwrap_or_default()).into_owned()
        };
        Out {
            code: status.code(),
            stdout: text(self.out.take()),
            stderr: text(self.err.take()),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Run `cmd` to completion (at most [`LIMIT`]) with empty standard input.
pub fn run(cmd: &mut Command) -> Out {
    Running::start(cmd, None).finish(LIMIT)
}

/// Run `cmd` to completion (at most [`LIMIT`]) reading `stdin`.
pub fn run_stdin(cmd: &mut Command, stdin: &str) -> Out {
    Running::start(cmd, Some(stdin.as_bytes())).finish(LIMIT)
}

/// A TCP port of 127.0.0.1 that was free a moment ago.
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    l.local_addr().expect("local addr").port()
}

/// Poll `f` every 20 ms until it returns `Some`, for at most `limit`.
pub fn poll<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `linerate ctl TARGET read HANDLER`.
pub fn ctl_read(target: &str, handler: &str) -> Out {
    run(&mut linerate(&["ctl", target, "read", handler]))
}

/// `linerate ctl TARGET write HANDLER [VALUE]`.
pub fn ctl_write(target: &str, handler: &str, value: Option<&str>) -> Out {
    let mut c = linerate(&["ctl", target, "write", handler]);
    c.args(value);
    run(&mut c)
}

/// Read a numeric handler through the control socket; `None` on any failure
/// (e.g. the server is not up yet).
pub fn ctl_number(target: &str, handler: &str) -> Option<u64> {
    let o = ctl_read(target, handler);
    if o.code != Some(0) {
        return None;
    }
    o.stdout.trim().parse().ok()
}

/// Wait until the control server at `target` answers `handler` with a
/// number at least `min`; returns that number. Panics after 20 s.
pub fn wait_for_count(child: &mut Running, target: &str, handler: &str, min: u64) -> u64 {
    poll(Duration::from_secs(20), || {
        assert!(child.alive(), "linerate exited early");
        ctl_number(target, handler).filter(|&n| n >= min)
    })
    .unwrap_or_else(|| panic!("{handler} on {target} never reached {min}"))
}

/// A minimal HTTP/1.0 GET; returns (status code, body).
pub fn http_get(port: u16, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        s,
        "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Ok((code, body.to_string()))
}

/// One pcap record header: (seconds, sub-second, captured, original length).
pub type Record = (u32, u32, u32, u32);

/// Parse a classic pcap file completely; an error if the header is bad or
/// the last record is cut short.
pub fn pcap_records(path: &Path) -> Result<Vec<Record>, String> {
    let d = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if d.len() < 24 {
        return Err(format!("{} bytes: no file header", d.len()));
    }
    let magic = [d[0], d[1], d[2], d[3]];
    let le = match magic {
        [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1] => true,
        [0xa1, 0xb2, 0xc3, 0xd4] | [0xa1, 0xb2, 0x3c, 0x4d] => false,
        m => return Err(format!("bad magic {m:02x?}")),
    };
    let word = |o: usize| {
        let b = [d[o], d[o + 1], d[o + 2], d[o + 3]];
        if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    };
    let mut recs = Vec::new();
    let mut o = 24;
    while o < d.len() {
        if d.len() - o < 16 {
            return Err(format!("record header cut at byte {o}"));
        }
        let r = (word(o), word(o + 4), word(o + 8), word(o + 12));
        let end = o + 16 + r.2 as usize;
        if end > d.len() {
            return Err(format!("record data cut at byte {o}"));
        }
        recs.push(r);
        o = end;
    }
    Ok(recs)
}

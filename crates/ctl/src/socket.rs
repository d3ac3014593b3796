//! Click's `ControlSocket` protocol server on a Unix-domain socket or a TCP
//! port.
//!
//! The server greets with `Click::ControlSocket/1.3`, then reads commands, one
//! per line (lines end with CR, LF or CRLF), and answers each with reply
//! lines `CODE text` (`CODE-text` for all but the last line of a multi-line
//! reply), ending in CRLF. Successful reads follow with `DATA n`, CRLF and
//! `n` bytes.

use crate::control::{
    Access, Control, Failure, Globals, CS_DATA_TOO_BIG, CS_OK, CS_SYNTAX, CS_UNIMPLEMENTED,
};
use linerate_runtime::RouterHandle;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The protocol version announced in the greeting.
pub const PROTOCOL_VERSION: &str = "1.3";

/// Longest command line accepted; a longer one closes the connection.
const MAX_LINE: usize = 64 * 1024;
/// Most data bytes a `*DATA`/`*UNTIL` command may carry.
const MAX_DATA: usize = 16 * 1024 * 1024;
/// A client that does not take its replies for this long is dropped.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// A connected stream of either kind.
pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    pub(crate) fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
        })
    }

    pub(crate) fn shutdown(&self) {
        // Already-closed streams report errors; there is nothing to do then.
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
        };
    }

    pub(crate) fn set_timeouts(
        &self,
        read: Option<Duration>,
        write: Option<Duration>,
    ) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => {
                s.set_read_timeout(read)?;
                s.set_write_timeout(write)
            }
            Stream::Unix(s) => {
                s.set_read_timeout(read)?;
                s.set_write_timeout(write)
            }
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
        }
    }
}

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

impl Listener {
    fn accept(&self) -> io::Result<Stream> {
        match self {
            Listener::Tcp(l) => {
                let (s, _) = l.accept()?;
                // Replies are small and latency matters more than packing.
                s.set_nodelay(true)?;
                Ok(Stream::Tcp(s))
            }
            Listener::Unix(l) => Ok(Stream::Unix(l.accept()?.0)),
        }
    }
}

/// Open connections: a clone of each stream (to shut it down) and its thread.
type Conns = Arc<Mutex<Vec<(Stream, JoinHandle<()>)>>>;

/// A running control socket server. Dropping it stops accepting, closes every
/// open connection, waits for their threads, and removes the socket file of a
/// Unix-domain server.
pub struct ServerGuard {
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
    conns: Conns,
    path: Option<PathBuf>,
    addr: Option<SocketAddr>,
}

impl ServerGuard {
    /// The TCP address the server listens on (with the real port when port 0
    /// was asked for); `None` for a Unix-domain server.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// The socket file of a Unix-domain server.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Where a client connects, in the form [`crate::Target::parse`] and
    /// [`crate::client_call`] accept: the socket path or `IP:PORT`.
    pub fn endpoint(&self) -> String {
        match (&self.path, self.addr) {
            (Some(p), _) => p.display().to_string(),
            (None, Some(a)) => a.to_string(),
            (None, None) => String::new(),
        }
    }

    /// Wake the accept thread by connecting to ourselves; true if that worked.
    fn wake(&self) -> bool {
        let t = Duration::from_secs(1);
        match (&self.path, self.addr) {
            (Some(p), _) => UnixStream::connect(p).is_ok(),
            (None, Some(a)) => TcpStream::connect_timeout(&a, t).is_ok(),
            (None, None) => false,
        }
    }
}

impl Drop for ServerGuard {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let woke = self.wake();
        if let Some(t) = self.accept.take() {
            // A thread that could not be woken stays blocked in accept();
            // joining it would hang, so it is left to end with the process.
            if woke {
                let _ = t.join();
            }
        }
        let conns = std::mem::take(&mut *self.conns.lock().unwrap_or_else(|e| e.into_inner()));
        for (s, _) in &conns {
            s.shutdown();
        }
        for (_, t) in conns {
            let _ = t.join();
        }
        if let Some(p) = &self.path {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Serve the control protocol on a Unix-domain socket at `path`.
///
/// A stale socket file left by a dead server is replaced; a live one (a
/// server answers on it) is an `AddrInUse` error, and any other existing file
/// an `AlreadyExists` error.
pub fn serve_unix(path: &Path, h: RouterHandle, g: Arc<Globals>) -> io::Result<ServerGuard> {
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists and is not a socket", path.display()),
            ));
        }
        if UnixStream::connect(path).is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!("a server already listens on {}", path.display()),
            ));
        }
        std::fs::remove_file(path)?;
    }
    let l = UnixListener::bind(path)?;
    start(Listener::Unix(l), Some(path.to_path_buf()), None, h, g)
}

/// Serve the control protocol on TCP address `addr` (Click's `click -p`;
/// callers normally pass a loopback address). Port 0 picks a free port, which
/// [`ServerGuard::local_addr`] reports.
pub fn serve_tcp(addr: SocketAddr, h: RouterHandle, g: Arc<Globals>) -> io::Result<ServerGuard> {
    let l = TcpListener::bind(addr)?;
    let local = l.local_addr()?;
    start(Listener::Tcp(l), None, Some(local), h, g)
}

fn start(
    listener: Listener,
    path: Option<PathBuf>,
    addr: Option<SocketAddr>,
    h: RouterHandle,
    g: Arc<Globals>,
) -> io::Result<ServerGuard> {
    let stop = Arc::new(AtomicBool::new(false));
    let conns: Conns = Arc::new(Mutex::new(Vec::new()));
    let ctl = Arc::new(Control::new(h, g));
    let (stop2, conns2) = (stop.clone(), conns.clone());
    let accept = std::thread::Builder::new()
        .name("ctl-accept".into())
        .spawn(move || accept_loop(listener, ctl, stop2, conns2))?;
    Ok(ServerGuard {
        stop,
        accept: Some(accept),
        conns,
        path,
        addr,
    })
}

fn accept_loop(listener: Listener, ctl: Arc<Control>, stop: Arc<AtomicBool>, conns: Conns) {
    loop {
        let accepted = listener.accept();
        if stop.load(Ordering::Acquire) {
            return;
        }
        let stream = match accepted {
            Ok(s) => s,
            Err(e)
                if e.kind() == io::ErrorKind::Interrupted
                    || e.kind() == io::ErrorKind::ConnectionAborted =>
            {
                continue;
            }
            Err(_) => {
                // Out of descriptors or similar: back off instead of spinning.
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        let Ok(clone) = stream.try_clone() else {
            continue;
        };
        let ctl = ctl.clone();
        let spawned = std::thread::Builder::new()
            .name("ctl-conn".into())
            .spawn(move || {
                // An I/O error just ends the connection.
                let _ = serve_stream(stream, &ctl);
            });
        let Ok(t) = spawned else { continue };
        let mut list = conns.lock().unwrap_or_else(|e| e.into_inner());
        list.retain(|(_, t)| !t.is_finished());
        list.push((clone, t));
    }
}

fn serve_stream(stream: Stream, ctl: &Control) -> io::Result<()> {
    stream.set_timeouts(None, Some(WRITE_TIMEOUT))?;
    let writer = stream.try_clone()?;
    // The accept thread keeps a clone to shut down on drop, so closing takes
    // an explicit shutdown.
    let closer = stream.try_clone()?;
    let r = session(BufReader::new(stream), BufWriter::new(writer), ctl);
    closer.shutdown();
    r
}

/// A command line, or why there is none.
enum Line {
    Text(Vec<u8>),
    TooLong,
    Eof,
}

/// Reads CR-, LF- or CRLF-terminated lines; a CR at the end of one read and
/// an LF at the start of the next are one line end.
struct LineReader<R> {
    r: R,
    after_cr: bool,
}

impl<R: BufRead> LineReader<R> {
    /// Drop the LF of a CRLF whose CR ended the previous line.
    fn skip_lf(&mut self) -> io::Result<()> {
        if self.after_cr {
            self.after_cr = false;
            if self.r.fill_buf()?.first() == Some(&b'\n') {
                self.r.consume(1);
            }
        }
        Ok(())
    }

    fn line(&mut self) -> io::Result<Line> {
        let mut acc = Vec::new();
        loop {
            if self.after_cr {
                self.skip_lf()?;
            }
            let buf = self.r.fill_buf()?;
            if buf.is_empty() {
                // A last line without terminator still counts, as in Click.
                return Ok(if acc.is_empty() {
                    Line::Eof
                } else {
                    Line::Text(acc)
                });
            }
            match buf.iter().position(|&b| b == b'\r' || b == b'\n') {
                Some(i) => {
                    acc.extend_from_slice(&buf[..i]);
                    self.after_cr = buf[i] == b'\r';
                    self.r.consume(i + 1);
                    return Ok(if acc.len() > MAX_LINE {
                        Line::TooLong
                    } else {
                        Line::Text(acc)
                    });
                }
                None => {
                    let n = buf.len();
                    acc.extend_from_slice(buf);
                    self.r.consume(n);
                    if acc.len() > MAX_LINE {
                        return Ok(Line::TooLong);
                    }
                }
            }
        }
    }

    /// Exactly `n` bytes, or `None` if the stream ends first.
    fn data(&mut self, n: usize) -> io::Result<Option<Vec<u8>>> {
        if n == 0 {
            return Ok(Some(Vec::new()));
        }
        self.skip_lf()?;
        let mut v = Vec::with_capacity(n.min(64 * 1024));
        (&mut self.r).take(n as u64).read_to_end(&mut v)?;
        Ok((v.len() == n).then_some(v))
    }

    /// The lines before the first whose trailing-space-trimmed text equals
    /// `until` (also trimmed), each followed by LF; `None` at end of stream.
    fn until(&mut self, until: &[u8]) -> io::Result<Result<Vec<u8>, u16>> {
        let until = trim_end(until);
        let mut data = Vec::new();
        loop {
            match self.line()? {
                Line::Eof => return Ok(Err(CS_SYNTAX)),
                Line::TooLong => return Ok(Err(CS_DATA_TOO_BIG)),
                Line::Text(l) => {
                    if trim_end(&l) == until {
                        return Ok(Ok(data));
                    }
                    data.extend_from_slice(&l);
                    data.push(b'\n');
                    if data.len() > MAX_DATA {
                        return Ok(Err(CS_DATA_TOO_BIG));
                    }
                }
            }
        }
    }
}

fn trim_end(s: &[u8]) -> &[u8] {
    let n = s
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    &s[..n]
}

/// Reply writer: Click's message lines.
struct Out<W: Write> {
    w: W,
}

impl<W: Write> Out<W> {
    /// One reply line; `more` for a continuation (`CODE-text`).
    fn line(&mut self, code: u16, text: &str, more: bool) -> io::Result<()> {
        write!(
            self.w,
            "{code}{}{}\r\n",
            if more { '-' } else { ' ' },
            printable(text)
        )
    }

    fn ok(&mut self, text: &str) -> io::Result<()> {
        self.line(CS_OK, text, false)
    }

    /// A failure: summary (with `:` when details follow) and detail lines.
    fn fail(&mut self, f: &Failure) -> io::Result<()> {
        if f.details.is_empty() {
            return self.line(f.code, &f.message, false);
        }
        self.line(f.code, &format!("{}:", f.message), true)?;
        let n = f.details.len();
        for (i, d) in f.details.iter().enumerate() {
            self.line(f.code, d, i + 1 < n)?;
        }
        Ok(())
    }

    fn data(&mut self, data: &[u8]) -> io::Result<()> {
        write!(self.w, "DATA {}\r\n", data.len())?;
        self.w.write_all(data)
    }
}

/// Control characters shown as `^X`, as Click's `String::printable` does, so
/// a message can never break the line structure.
fn printable(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\x7f' => o.push_str("^?"),
            c if (c as u32) < 32 => {
                o.push('^');
                o.push(char::from(c as u8 + 64));
            }
            c => o.push(c),
        }
    }
    o
}

/// Words of a command line with their byte ranges.
fn words(line: &[u8]) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    let mut i = 0;
    while i < line.len() {
        while i < line.len() && line[i].is_ascii_whitespace() {
            i += 1;
        }
        let start = i;
        while i < line.len() && !line[i].is_ascii_whitespace() {
            i += 1;
        }
        if start < i {
            v.push((start, i));
        }
    }
    v
}

/// Whether the session goes on after a command.
enum Next {
    Continue,
    Close,
}

/// Serve one connection: greeting, then commands until QUIT or end of stream.
pub(crate) fn session<R: BufRead, W: Write>(r: R, w: W, ctl: &Control) -> io::Result<()> {
    let mut input = LineReader { r, after_cr: false };
    let mut out = Out { w };
    write!(out.w, "Click::ControlSocket/{PROTOCOL_VERSION}\r\n")?;
    out.w.flush()?;
    loop {
        let next = match input.line()? {
            Line::Eof => return Ok(()),
            Line::TooLong => {
                out.line(CS_SYNTAX, "Command line too long", false)?;
                Next::Close
            }
            Line::Text(l) => command(&l, &mut input, &mut out, ctl)?,
        };
        out.w.flush()?;
        if let Next::Close = next {
            return Ok(());
        }
    }
}

/// Parse the length word of a `*DATA` command.
fn data_len(word: &[u8]) -> Option<usize> {
    let s = std::str::from_utf8(word).ok()?;
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn command<R: BufRead, W: Write>(
    line: &[u8],
    input: &mut LineReader<R>,
    out: &mut Out<W>,
    ctl: &Control,
) -> io::Result<Next> {
    let ws = words(line);
    let Some(&(c0, c1)) = ws.first() else {
        return Ok(Next::Continue);
    };
    let cmd = String::from_utf8_lossy(&line[c0..c1]).to_ascii_uppercase();
    let word =
        |i: usize| -> String { String::from_utf8_lossy(&line[ws[i].0..ws[i].1]).into_owned() };
    // Text from the third word to the end of the last one.
    let rest = || -> Vec<u8> {
        match (ws.get(2), ws.last()) {
            (Some(&(s, _)), Some(&(_, e))) => line[s..e].to_vec(),
            _ => Vec::new(),
        }
    };
    let read_or_write = |out: &mut Out<W>, read: bool, h: &str, data: &[u8]| -> io::Result<()> {
        let value = String::from_utf8_lossy(data);
        if read {
            match ctl.read(h, &value) {
                Ok(v) => {
                    out.ok(&format!("Read handler '{h}' OK"))?;
                    out.data(v.as_bytes())
                }
                Err(f) => out.fail(&f),
            }
        } else {
            match ctl.write(h, &value) {
                Ok(m) => out.ok(&m),
                Err(f) => out.fail(&f),
            }
        }
    };
    match cmd.as_str() {
        "READ" | "GET" | "WRITE" | "SET" => {
            if ws.len() < 2 {
                out.line(CS_SYNTAX, "Wrong number of arguments", false)?;
            } else {
                read_or_write(
                    out,
                    cmd.starts_with('R') || cmd.starts_with('G'),
                    &word(1),
                    &rest(),
                )?;
            }
        }
        "READDATA" | "WRITEDATA" | "SETDATA" => {
            if ws.len() != 3 {
                out.line(CS_SYNTAX, "Wrong number of arguments", false)?;
                return Ok(Next::Continue);
            }
            let Some(n) = data_len(&rest()) else {
                out.line(CS_SYNTAX, &format!("Syntax error in '{cmd}'"), false)?;
                return Ok(Next::Continue);
            };
            if n > MAX_DATA {
                // The data cannot be skipped safely; the connection ends.
                out.line(
                    CS_DATA_TOO_BIG,
                    &format!("Data too large for handler '{}'", word(1)),
                    false,
                )?;
                return Ok(Next::Close);
            }
            match input.data(n)? {
                Some(d) => read_or_write(out, cmd.starts_with('R'), &word(1), &d)?,
                None => {
                    out.line(CS_SYNTAX, "Not enough data", false)?;
                    return Ok(Next::Close);
                }
            }
        }
        "READUNTIL" | "WRITEUNTIL" => {
            if ws.len() < 2 {
                out.line(CS_SYNTAX, "Wrong number of arguments", false)?;
                return Ok(Next::Continue);
            }
            match input.until(&rest())? {
                Ok(d) => read_or_write(out, cmd.starts_with('R'), &word(1), &d)?,
                Err(code) => {
                    let msg = if code == CS_SYNTAX {
                        "Connection closed"
                    } else {
                        "Data too large"
                    };
                    out.line(code, msg, false)?;
                    return Ok(Next::Close);
                }
            }
        }
        "CHECKREAD" | "CHECKWRITE" => {
            if ws.len() != 2 {
                out.line(CS_SYNTAX, "Wrong number of arguments", false)?;
            } else {
                let access = if cmd == "CHECKREAD" {
                    Access::Read
                } else {
                    Access::Write
                };
                match ctl.check(&word(1), access) {
                    Ok(m) => out.ok(&m)?,
                    Err(f) => out.fail(&f)?,
                }
            }
        }
        "LLRPC" => {
            if ws.len() != 2 && ws.len() != 3 {
                out.line(CS_SYNTAX, "Wrong number of arguments", false)?;
                return Ok(Next::Continue);
            }
            let n = if ws.len() == 3 {
                match data_len(&rest()) {
                    Some(n) => n,
                    None => {
                        out.line(CS_SYNTAX, "Syntax error in 'llrpc'", false)?;
                        return Ok(Next::Continue);
                    }
                }
            } else {
                0
            };
            if n > MAX_DATA {
                out.line(CS_DATA_TOO_BIG, "Data too large for LLRPC", false)?;
                return Ok(Next::Close);
            }
            // Consume the announced bytes so the next command parses.
            if input.data(n)?.is_none() {
                out.line(CS_SYNTAX, "Not enough data", false)?;
                return Ok(Next::Close);
            }
            let name = word(1);
            let elem = name.split('#').next().unwrap_or("");
            match ctl.resolve(&format!("{elem}.name")) {
                Ok(_) => out.line(
                    CS_UNIMPLEMENTED,
                    &format!("Cannot call LLRPC '{name}' remotely"),
                    false,
                )?,
                Err(f) => out.fail(&f)?,
            }
        }
        "QUIT" | "CLOSE" => {
            if ws.len() != 1 {
                out.line(CS_SYNTAX, "Bad command syntax", false)?;
            }
            out.ok("Goodbye!")?;
            return Ok(Next::Close);
        }
        "HELP" => {
            const HELP: &[&str] = &[
                "Commands supported:",
                "READ handler [arg...]   call read handler, return DATA",
                "READDATA handler len    call read handler with len data bytes, return DATA",
                "READUNTIL handler term  call read handler with the lines before term, return DATA",
                "WRITE handler [arg...]  call write handler",
                "WRITEDATA handler len   call write handler with len data bytes",
                "WRITEUNTIL handler term call write handler with the lines before term",
                "CHECKREAD handler       check whether a read handler exists",
                "CHECKWRITE handler      check whether a write handler exists",
                "LLRPC elt#number [len]  not supported by linerate",
                "QUIT                    close the connection",
            ];
            for (i, l) in HELP.iter().enumerate() {
                out.line(CS_OK, l, i + 1 < HELP.len())?;
            }
        }
        _ => out.line(
            CS_UNIMPLEMENTED,
            &format!("Command '{cmd}' unimplemented"),
            false,
        )?,
    }
    Ok(Next::Continue)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8]) -> Vec<String> {
        let mut r = LineReader {
            r: BufReader::with_capacity(3, input),
            after_cr: false,
        };
        let mut v = Vec::new();
        loop {
            match r.line().expect("in-memory read") {
                Line::Text(t) => v.push(String::from_utf8(t).expect("utf8")),
                Line::TooLong => v.push("<too long>".into()),
                Line::Eof => return v,
            }
        }
    }

    #[test]
    fn line_endings_cr_lf_crlf_split_across_reads() {
        assert_eq!(
            lines(b"a\rbb\ncc\r\nd\r\n\r\ne"),
            ["a", "bb", "cc", "d", "", "e"]
        );
    }

    #[test]
    fn overlong_line_is_reported() {
        let mut big = vec![b'x'; MAX_LINE + 10];
        big.extend_from_slice(b"\nok\n");
        assert_eq!(lines(&big)[0], "<too long>");
        let mut fits = vec![b'y'; MAX_LINE];
        fits.push(b'\n');
        assert_eq!(lines(&fits)[0].len(), MAX_LINE);
    }

    #[test]
    fn data_after_crlf_skips_the_lf() {
        let input: &[u8] = b"WRITEDATA x 3\r\nabcREST\n";
        let mut r = LineReader {
            r: BufReader::with_capacity(14, input),
            after_cr: false,
        };
        assert!(matches!(r.line().expect("read"), Line::Text(t) if t == b"WRITEDATA x 3"));
        assert_eq!(r.data(3).expect("read"), Some(b"abc".to_vec()));
        assert_eq!(r.data(10).expect("read"), None);
    }

    #[test]
    fn until_collects_lines_before_the_terminator() {
        let input: &[u8] = b"one\r\ntwo  \nEND  \r\nnext\n";
        let mut r = LineReader {
            r: BufReader::new(input),
            after_cr: false,
        };
        assert_eq!(
            r.until(b"END ").expect("read"),
            Ok(b"one\ntwo  \n".to_vec())
        );
        assert!(matches!(r.line().expect("read"), Line::Text(t) if t == b"next"));
        let mut r = LineReader {
            r: BufReader::new(&b"a\nb\n"[..]),
            after_cr: false,
        };
        assert_eq!(r.until(b"").expect("read"), Err(CS_SYNTAX));
    }

    #[test]
    fn words_and_printable() {
        assert_eq!(
            words(b"  READ \t c.count  x y "),
            [(2, 6), (9, 16), (18, 19), (20, 21)]
        );
        assert_eq!(printable("a\nb\x7f\x01"), "a^Jb^?^A");
        assert_eq!(data_len(b"12"), Some(12));
        assert_eq!(data_len(b"-1"), None);
        assert_eq!(data_len(b"+1"), None);
        assert_eq!(data_len(b"99999999999999999999999"), None);
    }
}

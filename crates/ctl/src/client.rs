//! A client for Click's `ControlSocket` protocol (`linerate ctl`).

use crate::socket::Stream;
use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

/// Timeout for connecting and for each read or write of [`client_call`].
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest reply line accepted.
const MAX_LINE: usize = 64 * 1024;
/// Largest `DATA` block accepted.
const MAX_DATA: usize = 256 * 1024 * 1024;

/// Why a control call failed.
#[derive(Debug)]
pub enum CtlError {
    /// Connecting, reading or writing failed (timeouts included).
    Io(io::Error),
    /// The peer does not speak the protocol (bad greeting or reply).
    Protocol(String),
    /// The server answered with an error code (5xx) and message.
    Server {
        /// Click reply code, e.g. 510 for "no such element".
        code: u16,
        /// The reply text, lines joined with newlines.
        message: String,
    },
}

impl fmt::Display for CtlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CtlError::Io(e) => write!(f, "control connection: {e}"),
            CtlError::Protocol(m) => write!(f, "control protocol: {m}"),
            CtlError::Server { code, message } => write!(f, "{message} ({code})"),
        }
    }
}

impl std::error::Error for CtlError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CtlError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for CtlError {
    fn from(e: io::Error) -> Self {
        CtlError::Io(e)
    }
}

/// Where a control server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A Unix-domain socket file.
    Unix(PathBuf),
    /// A TCP address.
    Tcp(SocketAddr),
}

impl Target {
    /// Parse a server location: `IP:PORT` or `[IPv6]:PORT`; a bare port
    /// number (Click's `click -p PORT`), meaning `127.0.0.1:PORT`;
    /// `tcp:HOST:PORT` (the host is resolved); `unix:PATH`; anything else is
    /// the path of a Unix-domain socket.
    pub fn parse(s: &str) -> Result<Target, CtlError> {
        if let Some(p) = s.strip_prefix("unix:") {
            return Ok(Target::Unix(PathBuf::from(p)));
        }
        if let Some(hp) = s.strip_prefix("tcp:") {
            let mut addrs = hp
                .to_socket_addrs()
                .map_err(|e| CtlError::Protocol(format!("bad address '{hp}': {e}")))?;
            return addrs
                .next()
                .map(Target::Tcp)
                .ok_or_else(|| CtlError::Protocol(format!("'{hp}' has no address")));
        }
        if let Ok(a) = s.parse::<SocketAddr>() {
            return Ok(Target::Tcp(a));
        }
        if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            let port: u16 = s
                .parse()
                .map_err(|_| CtlError::Protocol(format!("bad port '{s}'")))?;
            return Ok(Target::Tcp(SocketAddr::from(([127, 0, 0, 1], port))));
        }
        if s.is_empty() {
            return Err(CtlError::Protocol("empty control socket address".into()));
        }
        Ok(Target::Unix(PathBuf::from(s)))
    }
}

/// One reply: its final code and every message line's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// Code of the last reply line.
    pub code: u16,
    /// Text of each reply line, without code and separator.
    pub lines: Vec<String>,
}

impl Reply {
    fn into_error(self) -> CtlError {
        CtlError::Server {
            code: self.code,
            message: self.lines.join("\n"),
        }
    }
}

/// A connection to a control socket server.
pub struct Client {
    r: BufReader<Stream>,
    w: Stream,
    /// Protocol version from the greeting, e.g. `1.3`.
    version: String,
}

impl Client {
    /// Connect to `target` (see [`Target::parse`]) and read the greeting;
    /// `timeout` bounds the connect and every later read and write.
    pub fn connect(target: &str, timeout: Duration) -> Result<Client, CtlError> {
        let stream = match Target::parse(target)? {
            Target::Tcp(a) => {
                let s = TcpStream::connect_timeout(&a, timeout)?;
                s.set_nodelay(true)?;
                Stream::Tcp(s)
            }
            Target::Unix(p) => Stream::Unix(UnixStream::connect(p)?),
        };
        stream.set_timeouts(Some(timeout), Some(timeout))?;
        let w = stream.try_clone()?;
        let mut c = Client {
            r: BufReader::new(stream),
            w,
            version: String::new(),
        };
        let greeting = c.line()?;
        match greeting.strip_prefix("Click::ControlSocket/") {
            Some(v) if !v.is_empty() => c.version = v.to_string(),
            _ => {
                return Err(CtlError::Protocol(format!(
                    "unexpected greeting '{greeting}'"
                )))
            }
        }
        Ok(c)
    }

    /// The protocol version the server announced.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// One CRLF- or LF-terminated line, without its terminator.
    fn line(&mut self) -> Result<String, CtlError> {
        let mut v = Vec::new();
        (&mut self.r)
            .take(MAX_LINE as u64 + 2)
            .read_until(b'\n', &mut v)?;
        if v.last() != Some(&b'\n') {
            return Err(CtlError::Protocol(if v.is_empty() {
                "connection closed".into()
            } else {
                "reply line too long or unterminated".into()
            }));
        }
        v.pop();
        if v.last() == Some(&b'\r') {
            v.pop();
        }
        String::from_utf8(v).map_err(|_| CtlError::Protocol("reply is not UTF-8".into()))
    }

    /// Send `command` (one line, without terminator) followed by `data`, and
    /// read the reply lines. The code may be an error code.
    pub fn command(&mut self, command: &str, data: &[u8]) -> Result<Reply, CtlError> {
        if command.contains(['\r', '\n']) {
            return Err(CtlError::Protocol("command contains a line break".into()));
        }
        let mut buf = Vec::with_capacity(command.len() + 2 + data.len());
        buf.extend_from_slice(command.as_bytes());
        buf.extend_from_slice(b"\r\n");
        buf.extend_from_slice(data);
        self.w.write_all(&buf)?;
        self.w.flush()?;
        self.reply()
    }

    /// Read one (possibly multi-line) reply.
    fn reply(&mut self) -> Result<Reply, CtlError> {
        let mut lines = Vec::new();
        loop {
            let l = self.line()?;
            let b = l.as_bytes();
            let code = match (b.get(..3), b.get(3)) {
                (Some(d), sep)
                    if d.iter().all(u8::is_ascii_digit)
                        && matches!(sep, None | Some(b' ' | b'-')) =>
                {
                    l[..3]
                        .parse::<u16>()
                        .map_err(|_| CtlError::Protocol(format!("bad reply '{l}'")))?
                }
                _ => return Err(CtlError::Protocol(format!("bad reply line '{l}'"))),
            };
            let more = b.get(3) == Some(&b'-');
            lines.push(l.get(4..).unwrap_or("").to_string());
            if !more {
                return Ok(Reply { code, lines });
            }
        }
    }

    /// The `DATA n` block after a successful read.
    fn data(&mut self) -> Result<Vec<u8>, CtlError> {
        let l = self.line()?;
        let n: usize = l
            .strip_prefix("DATA ")
            .and_then(|n| n.trim().parse().ok())
            .ok_or_else(|| CtlError::Protocol(format!("expected 'DATA n', got '{l}'")))?;
        if n > MAX_DATA {
            return Err(CtlError::Protocol(format!(
                "DATA block of {n} bytes is too large"
            )));
        }
        let mut v = Vec::with_capacity(n.min(1 << 20));
        (&mut self.r).take(n as u64).read_to_end(&mut v)?;
        if v.len() != n {
            return Err(CtlError::Protocol(
                "connection closed inside a DATA block".into(),
            ));
        }
        Ok(v)
    }

    /// Read handler `handler` (`elem.h` or a global name).
    pub fn read(&mut self, handler: &str) -> Result<String, CtlError> {
        check_name(handler)?;
        let r = self.command(&format!("READ {handler}"), b"")?;
        if r.code / 100 != 2 {
            return Err(r.into_error());
        }
        let d = self.data()?;
        Ok(String::from_utf8_lossy(&d).into_owned())
    }

    /// Write `value` to handler `handler`; sent with `WRITEDATA`, so any bytes
    /// (spaces and newlines included) arrive unchanged.
    pub fn write(&mut self, handler: &str, value: &str) -> Result<(), CtlError> {
        check_name(handler)?;
        let r = self.command(
            &format!("WRITEDATA {handler} {}", value.len()),
            value.as_bytes(),
        )?;
        if r.code / 100 != 2 {
            return Err(r.into_error());
        }
        Ok(())
    }

    /// Whether `handler` exists and is readable (`CHECKREAD`).
    pub fn check_read(&mut self, handler: &str) -> Result<(), CtlError> {
        self.check("CHECKREAD", handler)
    }

    /// Whether `handler` exists and is writable (`CHECKWRITE`).
    pub fn check_write(&mut self, handler: &str) -> Result<(), CtlError> {
        self.check("CHECKWRITE", handler)
    }

    fn check(&mut self, cmd: &str, handler: &str) -> Result<(), CtlError> {
        check_name(handler)?;
        let r = self.command(&format!("{cmd} {handler}"), b"")?;
        if r.code / 100 != 2 {
            return Err(r.into_error());
        }
        Ok(())
    }

    /// Say goodbye (`QUIT`) and close the connection.
    pub fn quit(mut self) -> Result<(), CtlError> {
        let r = self.command("QUIT", b"")?;
        if r.code / 100 != 2 {
            return Err(r.into_error());
        }
        Ok(())
    }
}

/// Handler names are single words.
fn check_name(handler: &str) -> Result<(), CtlError> {
    if handler.is_empty() || handler.chars().any(char::is_whitespace) {
        return Err(CtlError::Protocol(format!("bad handler name '{handler}'")));
    }
    Ok(())
}

/// Connect to `path_or_addr` (see [`Target::parse`]), read (`value == None`)
/// or write a handler, and quit. A read returns the handler's value, a write
/// an empty string. Every step times out after 10 seconds.
pub fn client_call(
    path_or_addr: &str,
    handler: &str,
    value: Option<&str>,
) -> Result<String, CtlError> {
    let mut c = Client::connect(path_or_addr, DEFAULT_TIMEOUT)?;
    let out = match value {
        None => c.read(handler)?,
        Some(v) => {
            c.write(handler, v)?;
            String::new()
        }
    };
    // The answer is in; a failed goodbye does not change it.
    let _ = c.quit();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        assert_eq!(
            Target::parse("127.0.0.1:7777").ok(),
            Some(Target::Tcp("127.0.0.1:7777".parse().expect("addr")))
        );
        assert_eq!(
            Target::parse("[::1]:80").ok(),
            Some(Target::Tcp("[::1]:80".parse().expect("addr")))
        );
        assert_eq!(
            Target::parse("7777").ok(),
            Some(Target::Tcp("127.0.0.1:7777".parse().expect("addr")))
        );
        assert_eq!(
            Target::parse("/tmp/click.sock").ok(),
            Some(Target::Unix("/tmp/click.sock".into()))
        );
        assert_eq!(
            Target::parse("unix:12").ok(),
            Some(Target::Unix("12".into()))
        );
        assert_eq!(
            Target::parse("sock").ok(),
            Some(Target::Unix("sock".into()))
        );
        assert!(Target::parse("99999").is_err());
        assert!(Target::parse("").is_err());
    }

    #[test]
    fn bad_handler_names_are_refused_before_sending() {
        assert!(check_name("c.count").is_ok());
        assert!(check_name("c.count extra").is_err());
        assert!(check_name("").is_err());
    }
}

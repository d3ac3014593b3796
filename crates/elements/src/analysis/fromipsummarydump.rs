//! Reads packet descriptions from an IP summary dump (text or binary, as
//! written by ToIPSummaryDump) and emits IP packets carrying them.
//!
//! # Synopsis
//! `FromIPSummaryDump(FILENAME [, KEYWORDS])`
//!
//! # Ports
//! No inputs; one agnostic output (a task pushes when it is push; pulls are
//! answered otherwise).
//!
//! # Arguments
//! - `FILENAME` (string): the dump; `-` reads standard input.
//! - `STOP` (boolean, default false): stop the driver at the end of the dump.
//! - `ACTIVE` (boolean, default true): whether packets are emitted.
//! - `ZERO` (boolean, default true): accepted; data not set by the dump is
//!   always zero here.
//! - `CHECKSUM` (boolean, default false): extend packets to their IP length
//!   with zero bytes and set valid IP, TCP, UDP and ICMP checksums.
//!   Otherwise packets hold only their headers and the rest is in the
//!   EXTRA_LENGTH annotation.
//! - `PROTO` (byte, default 6): IP protocol when the dump gives none.
//! - `MULTIPACKET` (boolean, default false): emit `count` packets per line,
//!   spreading length and timestamps as Click does.
//! - `SAMPLE` (real in [0,1], default 1): emit each packet with this
//!   probability (28-bit fixed point, as Click).
//! - `FIELDS` / `CONTENTS` / `DEFAULT_FIELDS` / `DEFAULT_CONTENTS` (string):
//!   fields to assume before any `!data` line.
//! - `FLOWID` / `DEFAULT_FLOWID` (string, `SRC SPORT DST DPORT [PROTO]`):
//!   addresses and ports for packets whose line gives none.
//! - `ALLOW_NONEXISTENT` (boolean, default false): a missing file is empty.
//! - `TIMING` (boolean, default false): accepted; not supported (packets are
//!   emitted as fast as possible).
//!
//! The dump's `!IPSummaryDump`, `!data`/`!contents`, `!proto`, `!flowid` and
//! `!binary` lines are understood; fields are those listed for
//! ToIPSummaryDump (version 1.0 fragment offsets in 8-byte units too).
//!
//! # Handlers
//! - `active` (read/write), `sampling_prob` (read), `encap` (read: `IP`),
//!   `stop` (write: deactivate and stop the driver), `count` (read: packets
//!   emitted).
//!
//! # Example
//! ```click
//! FromIPSummaryDump(dump.txt, STOP true, CHECKSUM true)
//!     -> ToDump(out.pcap, ENCAP IP);
//! ```
//!
//! # Implementation
//! The dump is read into memory when the router starts; each line becomes a
//! packet built in place (IP header, transport header, optional zero
//! payload), with the network and transport header annotations, the
//! destination-address annotation, timestamp, paint, aggregate,
//! extra-packets and extra-length annotations set. Differences from Click:
//! no gzip/bzip2 input, no `payload`/option fields, and a `payload_len`
//! together with `ip_len` does not grow the headers to absorb the difference.

use super::ipsumdump::{space_words, Field};
use linerate_runtime::anno::offsets;
use linerate_runtime::{
    Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, InitCtx, Packet, DEFAULT_BURST,
};
use std::any::Any;

/// The `FromIPSummaryDump` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "FromIPSummaryDump",
    port_count: "0/1",
    processing: "a/a",
    doc: element_doc!("analysis/fromipsummarydump"),
    make,
};

const SAMPLING_SHIFT: u32 = 28;
const NFIELDS: usize = Field::PayloadLen as usize + 1;

#[derive(Clone, Copy, Default)]
struct FlowId {
    src: u32,
    sport: u16,
    dst: u32,
    dport: u16,
}

struct FromIPSummaryDump {
    filename: String,
    data: Vec<u8>,
    pos: usize,
    lineno: u64,
    fields: Vec<Field>,
    default_proto: u8,
    flowid: Option<FlowId>,
    binary: bool,
    minor: u32,
    stop: bool,
    active: bool,
    checksum: bool,
    multipacket: bool,
    allow_nonexistent: bool,
    sampling: u32,
    rng: u64,
    push: bool,
    done: bool,
    stop_requested: bool,
    complained: bool,
    pending: Vec<Packet>,
    count: u64,
}

fn parse_flowid(s: &str) -> Option<(FlowId, Option<u8>)> {
    let w = space_words(s);
    if w.len() < 4 {
        return None;
    }
    let addr = |x: &str| -> Option<u32> {
        if x == "-" {
            Some(0)
        } else {
            x.parse::<std::net::Ipv4Addr>().ok().map(u32::from)
        }
    };
    let port = |x: &str| -> Option<u16> {
        if x == "-" {
            Some(0)
        } else {
            x.parse().ok()
        }
    };
    let f = FlowId {
        src: addr(w[0])?,
        sport: port(w[1])?,
        dst: addr(w[2])?,
        dport: port(w[3])?,
    };
    let proto = match w.get(4) {
        Some(p) => Some(parse_proto(p)?),
        None => None,
    };
    Some((f, proto))
}

fn parse_proto(s: &str) -> Option<u8> {
    match s {
        "T" | "tcp" => Some(6),
        "U" | "udp" => Some(17),
        "I" | "icmp" => Some(1),
        _ => parse_int(s).and_then(|v| u8::try_from(v).ok()),
    }
}

fn parse_int(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

/// `SEC[.FRAC]` in nanoseconds.
fn parse_time(s: &str) -> Option<u64> {
    let (sec, frac) = s.split_once('.').unwrap_or((s, ""));
    if sec.is_empty() && frac.is_empty() {
        return None;
    }
    let sec: u64 = if sec.is_empty() { 0 } else { sec.parse().ok()? };
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut ns = 0u64;
    for (i, b) in frac.bytes().take(9).enumerate() {
        ns += (b - b'0') as u64 * 10u64.pow(8 - i as u32);
    }
    Some(sec * 1_000_000_000 + ns)
}

const IP_MF: u64 = 0x2000;
const IP_DF: u64 = 0x4000;

/// Parse one text field into its numeric value.
fn parse_text(f: Field, s: &str, minor: u32) -> Option<u64> {
    use Field::*;
    match f {
        Timestamp | NTimestamp | FirstTimestamp => parse_time(s),
        IpSrc | IpDst => s
            .parse::<std::net::Ipv4Addr>()
            .ok()
            .map(|a| u32::from(a) as u64),
        IpFrag | IpFragoff => {
            match s {
                "." => return Some(0),
                "!" => return Some(IP_DF),
                "F" => return Some(IP_MF),
                "f" => return Some(100),
                _ => {}
            }
            let digits = s.bytes().take_while(|b| b.is_ascii_digit()).count();
            if digits == 0 {
                return None;
            }
            let mut v: u64 = s[..digits].parse().ok()?;
            if minor > 0 {
                v >>= 3;
            }
            for c in s[digits..].bytes() {
                match c {
                    b'!' => v |= IP_DF,
                    b'+' => v |= IP_MF,
                    _ => return None,
                }
            }
            Some(v)
        }
        IpProto => match s {
            "T" => Some(6),
            "U" => Some(17),
            "I" => Some(1),
            _ => parse_int(s).filter(|v| *v < 256),
        },
        IpEcn => match s {
            "0" | "1" | "2" | "3" => s.parse().ok(),
            "no" | "-" => Some(0),
            "ect1" | "ECT(1)" => Some(1),
            "ect2" | "ECT(0)" => Some(2),
            "ce" | "CE" => Some(3),
            _ => None,
        },
        Link | Paint | Direction => match s {
            ">" => Some(0),
            "<" => Some(1),
            _ => parse_int(s),
        },
        TcpFlags => {
            if let Some(v) = parse_int(s) {
                return (v < 512).then_some(v);
            }
            if s == "." {
                return Some(0);
            }
            let mut v = 0u64;
            for c in s.bytes() {
                v |= match c {
                    b'F' => 0x01,
                    b'S' => 0x02,
                    b'R' => 0x04,
                    b'P' => 0x08,
                    b'A' => 0x10,
                    b'U' => 0x20,
                    b'E' | b'X' => 0x40,
                    b'C' | b'W' | b'Y' => 0x80,
                    b'N' => 0x100,
                    _ => return None,
                };
            }
            Some(v)
        }
        _ => {
            let v = parse_int(s)?;
            let max = match f.binary_size() {
                1 => 0xff,
                2 => 0xffff,
                4 => 0xffff_ffff,
                _ => u64::MAX,
            };
            (v <= max).then_some(v)
        }
    }
}

/// Parse one binary field; returns the value and the bytes used.
fn parse_binary(f: Field, b: &[u8]) -> Option<u64> {
    use Field::*;
    let be = |n: usize| -> Option<u64> {
        let s = b.get(..n)?;
        Some(s.iter().fold(0u64, |a, x| (a << 8) | *x as u64))
    };
    match f {
        Timestamp | FirstTimestamp => {
            let sec = be(4)?;
            let usec = be(8)? & 0xffff_ffff;
            Some(sec * 1_000_000_000 + usec * 1000)
        }
        NTimestamp => {
            let v = be(8)?;
            Some((v & 0xffff_ffff) * 1_000_000_000 + (v >> 32))
        }
        TsUsec1 => {
            let v = be(8)?;
            Some(((v & 0xffff_ffff) << 32) | (v >> 32))
        }
        _ => be(f.binary_size()),
    }
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let filename: Option<String> = a.read_p("FILENAME");
    let stop = a.read_or("STOP", false);
    let active = a.read_or("ACTIVE", true);
    let _zero: bool = a.read_or("ZERO", true);
    let _timing: bool = a.read_or("TIMING", false);
    let checksum = a.read_or("CHECKSUM", false);
    let sample: f64 = a.read_or("SAMPLE", 1.0);
    let proto: u8 = a.read_or("PROTO", 6u8);
    let multipacket = a.read_or("MULTIPACKET", false);
    let mut contents = String::new();
    for kw in ["DEFAULT_CONTENTS", "DEFAULT_FIELDS", "CONTENTS", "FIELDS"] {
        if let Some(s) = a.read::<linerate_args::Raw>(kw) {
            contents = s.0;
        }
    }
    let mut flowid_s = String::new();
    for kw in ["DEFAULT_FLOWID", "FLOWID"] {
        if let Some(s) = a.read::<linerate_args::Raw>(kw) {
            flowid_s = s.0;
        }
    }
    let allow_nonexistent = a.read_or("ALLOW_NONEXISTENT", false);
    a.complete().map_err(|e| e.0)?;
    let Some(filename) = filename else {
        return Err(vec!["FILENAME: required argument missing".into()]);
    };
    if !(0.0..=1.0).contains(&sample) {
        return Err(vec!["SAMPLE must be between 0 and 1".into()]);
    }
    let mut e = FromIPSummaryDump {
        filename,
        data: Vec::new(),
        pos: 0,
        lineno: 0,
        fields: Vec::new(),
        default_proto: proto,
        flowid: None,
        binary: false,
        minor: super::ipsumdump::MINOR_VERSION,
        stop,
        active,
        checksum,
        multipacket,
        allow_nonexistent,
        sampling: (sample * (1u64 << SAMPLING_SHIFT) as f64).round() as u32,
        rng: 0x2545_f491_4f6c_dd1d,
        push: ctx.output_is_push(0),
        done: false,
        stop_requested: false,
        complained: false,
        pending: Vec::new(),
        count: 0,
    };
    if !contents.is_empty() {
        e.bang_data(&contents);
    }
    if !flowid_s.is_empty() {
        match parse_flowid(&flowid_s) {
            Some((f, p)) => {
                e.flowid = Some(f);
                if let Some(p) = p {
                    e.default_proto = p;
                }
            }
            None => return Err(vec!["bad FLOWID specification".into()]),
        }
    }
    Ok(Box::new(e))
}

fn cksum(data: &[u8], init: u32) -> u16 {
    let mut s = init;
    let mut ch = data.chunks_exact(2);
    for c in &mut ch {
        s += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [b] = ch.remainder() {
        s += (*b as u32) << 8;
    }
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

impl FromIPSummaryDump {
    fn warn(&self, msg: &str) {
        eprintln!("{}:{}: {}", self.filename, self.lineno, msg);
    }

    fn bang_data(&mut self, line: &str) {
        self.fields.clear();
        for (i, w) in space_words(line).into_iter().enumerate() {
            let w: String = w.chars().filter(|c| *c != '"').collect();
            if i == 0 && (w == "!data" || w == "!contents") {
                continue;
            }
            match Field::find(&w) {
                Some(Field::IpCaptureLen) => {
                    self.warn(&format!("content type '{w}' ignored on input"));
                    self.fields.push(Field::IpCaptureLen);
                }
                Some(f) => self.fields.push(f),
                None => {
                    self.warn(&format!("unknown content type '{w}'"));
                    self.fields.push(Field::IpCaptureLen);
                }
            }
        }
    }

    /// The next line (text) or record (binary): `(bytes, is_packet)`.
    fn next_chunk(&mut self) -> Option<(usize, usize, bool)> {
        if self.pos >= self.data.len() {
            return None;
        }
        self.lineno += 1;
        if self.binary {
            let d = &self.data[self.pos..];
            if d.len() < 4 {
                self.pos = self.data.len();
                return None;
            }
            let n = (u32::from_be_bytes([d[0], d[1], d[2], d[3]]) & 0x7fff_ffff) as usize;
            let textual = d[0] & 0x80 != 0;
            if n < 4 {
                self.warn("binary record too short");
                self.pos = self.data.len();
                return None;
            }
            let start = self.pos + 4;
            let end = (self.pos + n).min(self.data.len());
            self.pos += n;
            Some((start, end, !textual))
        } else {
            let d = &self.data[self.pos..];
            let n = d
                .iter()
                .position(|c| *c == b'\n')
                .map(|i| i + 1)
                .unwrap_or(d.len());
            let start = self.pos;
            self.pos += n;
            let mut end = start + n;
            while end > start && matches!(self.data[end - 1], b'\n' | b'\r') {
                end -= 1;
            }
            Some((start, end, false))
        }
    }

    fn bang_line(&mut self, line: &str) {
        let word = line.split_ascii_whitespace().next().unwrap_or("");
        let rest = line[word.len()..].trim();
        match word {
            "!data" | "!contents" => self.bang_data(line),
            "!proto" => match parse_proto(rest) {
                Some(p) => self.default_proto = p,
                None => self.warn("bad protocol in !proto"),
            },
            "!flowid" => match parse_flowid(rest) {
                Some((f, p)) => {
                    self.flowid = Some(f);
                    if let Some(p) = p {
                        self.default_proto = p;
                    }
                }
                None => {
                    self.warn("bad !flowid specification");
                    self.flowid = None;
                }
            },
            "!binary" => {
                self.binary = true;
                self.lineno = 0;
            }
            "!IPSummaryDump" => {
                if let Some((maj, min)) = rest.split_once('.') {
                    if let (Ok(maj), Ok(min)) = (maj.parse::<u32>(), min.trim().parse::<u32>()) {
                        if maj != super::ipsumdump::MAJOR_VERSION
                            || min > super::ipsumdump::MINOR_VERSION
                        {
                            self.warn(&format!("unexpected IPSummaryDump version {maj}.{min}"));
                        } else {
                            self.minor = min;
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// Read the next packet from the dump, or `None` at its end.
    fn read_packet(&mut self) -> Option<Packet> {
        loop {
            let (s, e, is_bin_packet) = self.next_chunk()?;
            if is_bin_packet {
                let mut vals = [None; NFIELDS];
                let mut off = s;
                let mut n = 0;
                for f in self.fields.clone() {
                    let sz = f.binary_size();
                    if off + sz > e {
                        break;
                    }
                    if f != Field::IpCaptureLen {
                        vals[f as usize] = parse_binary(f, &self.data[off..e]);
                        n += 1;
                    }
                    off += sz;
                }
                if n == 0 {
                    self.parse_error();
                    continue;
                }
                return Some(self.build(&vals));
            }
            let line = String::from_utf8_lossy(&self.data[s..e]).into_owned();
            let t = line.trim_start();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            if t.starts_with('!') {
                self.bang_line(t);
                continue;
            }
            let mut vals = [None; NFIELDS];
            let mut n = 0;
            let words = space_words(&line);
            for (f, w) in self.fields.iter().zip(words.iter()) {
                if *w == "-" || *f == Field::IpCaptureLen {
                    continue;
                }
                if let Some(v) = parse_text(*f, w, self.minor) {
                    vals[*f as usize] = Some(v);
                    n += 1;
                }
            }
            if n == 0 {
                self.parse_error();
                continue;
            }
            return Some(self.build(&vals));
        }
    }

    fn parse_error(&mut self) {
        if !self.complained {
            self.complained = true;
            if self.fields.is_empty() {
                self.warn("no '!data' provided");
            } else {
                self.warn("packet parse error");
            }
        }
    }

    /// Synthesize the packet a record describes.
    fn build(&self, v: &[Option<u64>; NFIELDS]) -> Packet {
        use Field::*;
        let g = |f: Field| v[f as usize];
        let proto = g(IpProto).map(|x| x as u8).unwrap_or(self.default_proto);
        let hl = g(IpHl)
            .map(|x| ((x as usize + 3) & !3).clamp(20, 60))
            .unwrap_or(20);
        let frag = g(IpFragoff).or(g(IpFrag)).unwrap_or(0) as u16;
        let firstfrag = frag & 0x1fff == 0;
        let mut tlen = if firstfrag {
            match proto {
                6 => 20,
                17 | 136 => 8,
                33 => 12,
                1 => 8,
                _ => 0,
            }
        } else {
            0
        };
        // Lengths: wire_len, then ip_len, then payload_len (Click's order).
        let mut want_len: usize = g(WireLen).unwrap_or(0) as usize;
        let ip_len_given = g(IpLen).is_some();
        if let Some(l) = g(IpLen) {
            want_len = l as usize;
        }
        if let Some(pl) = g(PayloadLen) {
            if !ip_len_given && want_len == 0 {
                let poff = hl
                    + if firstfrag {
                        match proto {
                            6 => 20,
                            17 | 136 => 8,
                            _ => 0,
                        }
                    } else {
                        0
                    };
                want_len = poff + pl as usize;
            }
        }
        if want_len > 0 && tlen > 0 && want_len < hl + tlen {
            tlen = want_len.saturating_sub(hl);
        }
        let hdr_len = hl + tlen;
        let mut ip_len = want_len;
        if ip_len > 0xffff {
            ip_len = 0xffff;
        } else if ip_len == 0 {
            ip_len = hdr_len;
        }
        let total = if self.checksum {
            ip_len.max(hdr_len)
        } else {
            hdr_len
        };
        let mut p = Packet::new(total);
        let fl = self.flowid.unwrap_or_default();
        let src = g(IpSrc).map(|x| x as u32).unwrap_or(fl.src);
        let dst = g(IpDst).map(|x| x as u32).unwrap_or(fl.dst);
        {
            let d = p.data_mut();
            d[0] = 0x40 | (hl / 4) as u8;
            let mut tos = g(IpTos).unwrap_or(0) as u8;
            if let Some(x) = g(IpDscp) {
                tos = (tos & 3) | ((x as u8) << 2);
            }
            if let Some(x) = g(IpEcn) {
                tos = (tos & 0xfc) | (x as u8 & 3);
            }
            d[1] = tos;
            d[2..4].copy_from_slice(&(ip_len as u16).to_be_bytes());
            d[4..6].copy_from_slice(&(g(IpId).unwrap_or(0) as u16).to_be_bytes());
            d[6..8].copy_from_slice(&frag.to_be_bytes());
            d[8] = g(IpTtl).map(|x| x as u8).unwrap_or(100);
            d[9] = proto;
            d[10..12].copy_from_slice(&(g(IpSum).unwrap_or(0) as u16).to_be_bytes());
            d[12..16].copy_from_slice(&src.to_be_bytes());
            d[16..20].copy_from_slice(&dst.to_be_bytes());
            let t = &mut d[hl..hdr_len];
            let ports = matches!(proto, 6 | 17 | 33 | 136);
            if ports && t.len() >= 4 {
                let sp = g(Sport).map(|x| x as u16).unwrap_or(fl.sport);
                let dp = g(Dport).map(|x| x as u16).unwrap_or(fl.dport);
                t[0..2].copy_from_slice(&sp.to_be_bytes());
                t[2..4].copy_from_slice(&dp.to_be_bytes());
            }
            if proto == 6 && t.len() >= 13 {
                t[12] = 5 << 4;
                let put32 = |t: &mut [u8], o: usize, x: Option<u64>| {
                    if let Some(x) = x {
                        t[o..o + 4].copy_from_slice(&(x as u32).to_be_bytes());
                    }
                };
                put32(t, 4, g(TcpSeq));
                put32(t, 8, g(TcpAck));
                if let Some(f) = g(TcpFlags) {
                    if t.len() >= 14 {
                        t[13] = f as u8;
                        t[12] = (t[12] & 0xfe) | ((f >> 8) as u8 & 1);
                    }
                }
                if t.len() >= 16 {
                    t[14..16].copy_from_slice(&(g(TcpWindow).unwrap_or(0) as u16).to_be_bytes());
                }
                if t.len() >= 20 {
                    t[18..20].copy_from_slice(&(g(TcpUrp).unwrap_or(0) as u16).to_be_bytes());
                }
            }
            if proto == 17 && firstfrag && t.len() >= 6 {
                let ul = g(UdpLen).unwrap_or((ip_len - hl.min(ip_len)) as u64) as u16;
                t[4..6].copy_from_slice(&ul.to_be_bytes());
            }
            if proto == 1 && t.len() >= 2 {
                t[0] = g(IcmpType).unwrap_or(0) as u8;
                t[1] = g(IcmpCode).unwrap_or(0) as u8;
            }
            if self.checksum {
                d[10..12].copy_from_slice(&[0, 0]);
                let c = cksum(&d[..hl], 0);
                d[10..12].copy_from_slice(&c.to_be_bytes());
                let tl = d.len() - hl;
                if firstfrag && matches!(proto, 6 | 17) && tl >= if proto == 6 { 18 } else { 8 } {
                    let co = if proto == 6 { 16 } else { 6 };
                    d[hl + co..hl + co + 2].copy_from_slice(&[0, 0]);
                    let pseudo = (src >> 16)
                        + (src & 0xffff)
                        + (dst >> 16)
                        + (dst & 0xffff)
                        + proto as u32
                        + tl as u32;
                    let mut c = cksum(&d[hl..], pseudo);
                    if proto == 17 && c == 0 {
                        c = 0xffff;
                    }
                    d[hl + co..hl + co + 2].copy_from_slice(&c.to_be_bytes());
                } else if firstfrag && proto == 1 && tl >= 4 {
                    d[hl + 2..hl + 4].copy_from_slice(&[0, 0]);
                    let c = cksum(&d[hl..], 0);
                    d[hl + 2..hl + 4].copy_from_slice(&c.to_be_bytes());
                }
            }
        }
        p.set_network_header(0);
        p.set_transport_header(hl as isize);
        let len = p.len();
        let a = p.anno_mut();
        let mut ts: u64 = 0;
        for f in &self.fields {
            let Some(x) = g(*f) else { continue };
            match f {
                Timestamp | NTimestamp => ts = x,
                TsUsec1 => ts = x * 1000,
                TsSec => ts = x * 1_000_000_000 + ts % 1_000_000_000,
                TsUsec => ts = ts - ts % 1_000_000_000 + x * 1000,
                _ => {}
            }
        }
        a.timestamp_ns = ts;
        if let Some(x) = g(FirstTimestamp) {
            a.set_u64(offsets::FIRST_TIMESTAMP, x);
        }
        if let Some(x) = g(Count) {
            a.set_u32(offsets::EXTRA_PACKETS, (x as u32).saturating_sub(1));
        }
        if let Some(x) = g(Link).or(g(Paint)).or(g(Direction)) {
            a.set_paint(x as u8);
        }
        if let Some(x) = g(Aggregate) {
            a.set_u32(offsets::AGGREGATE, x as u32);
        }
        a.set_dst_ip(std::net::Ipv4Addr::from(dst));
        let want = if ip_len_given || want_len > 0 {
            want_len
        } else {
            0
        };
        if want > len {
            a.set_u32(offsets::EXTRA_LENGTH, (want - len) as u32);
        }
        p
    }

    /// Click's MULTIPACKET: split a packet with extra packets into copies.
    fn split(&mut self, p: Packet) {
        let ep = p.anno().u32(offsets::EXTRA_PACKETS);
        let count = 1 + ep as u64;
        let len = p.len() as u64;
        let mut extra = p.anno().u32(offsets::EXTRA_LENGTH) as u64;
        let mut mlen = (len + extra) / count;
        if mlen < len {
            mlen = len;
            extra = mlen * (count - 1);
        }
        let end = p.timestamp_ns();
        let first = p.anno().u64(offsets::FIRST_TIMESTAMP);
        let (mut ts, delta) = if first != 0 {
            (first, end.saturating_sub(first) / (count - 1))
        } else {
            (end, 0)
        };
        // `rem` is the byte total still to hand out (Click's work packet's
        // length plus extra length); every packet but the last takes mlen.
        let mut rem = len + extra;
        for i in 0..count {
            let mut q = p.clone();
            let last = i == count - 1;
            let this_extra = if last { rem - len } else { mlen - len };
            rem -= mlen.min(rem);
            let total = (len + this_extra).min(0xffff) as u16;
            {
                let d = q.data_mut();
                if d.len() >= 20 && u16::from_be_bytes([d[2], d[3]]) != total {
                    d[2..4].copy_from_slice(&total.to_be_bytes());
                    let hl = ((d[0] & 15) as usize) * 4;
                    if d[9] == 17 && d.len() >= hl + 6 {
                        d[hl + 4..hl + 6]
                            .copy_from_slice(&total.wrapping_sub(hl as u16).to_be_bytes());
                    }
                }
            }
            let a = q.anno_mut();
            a.set_u32(offsets::EXTRA_PACKETS, 0);
            a.set_u32(offsets::EXTRA_LENGTH, this_extra as u32);
            a.timestamp_ns = if last { end } else { ts };
            ts += delta;
            self.pending.push(q);
        }
    }

    fn sampled(&mut self) -> bool {
        if self.sampling >= 1 << SAMPLING_SHIFT {
            return true;
        }
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        ((self.rng >> 32) as u32 & ((1 << SAMPLING_SHIFT) - 1)) < self.sampling
    }

    fn fill(&mut self, max: usize, ctx: &mut Ctx<'_>) -> Option<Batch> {
        if std::mem::take(&mut self.stop_requested) {
            ctx.stop_router();
        }
        if !self.active || self.done {
            return None;
        }
        let mut out = Batch::new();
        while out.len() < max {
            if self.pending.is_empty() {
                let Some(p) = self.read_packet() else {
                    self.done = true;
                    if self.stop {
                        ctx.stop_router();
                    }
                    break;
                };
                if self.multipacket && p.anno().u32(offsets::EXTRA_PACKETS) > 0 {
                    self.split(p);
                    self.pending.reverse();
                } else {
                    self.pending.push(p);
                }
            }
            while out.len() < max {
                let Some(p) = self.pending.pop() else { break };
                if self.sampled() {
                    out.push(p);
                }
            }
        }
        self.count += out.len() as u64;
        (!out.is_empty()).then_some(out)
    }
}

impl Element for FromIPSummaryDump {
    fn initialize(&mut self, _ctx: &mut InitCtx<'_>) -> Result<(), String> {
        let r = if self.filename == "-" {
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut v).map(|_| v)
        } else {
            std::fs::read(&self.filename)
        };
        match r {
            Ok(d) => self.data = d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && self.allow_nonexistent => {}
            Err(e) => return Err(format!("{}: {}", self.filename, e)),
        }
        let first = self.data.split(|c| *c == b'\n').next().unwrap_or(&[]);
        let first = String::from_utf8_lossy(first);
        if !self.data.is_empty()
            && self.fields.is_empty()
            && ![
                "!IPSummaryDump",
                "!creator",
                "!data",
                "!contents",
                "!proto",
                "!flowid",
            ]
            .iter()
            .any(|w| first.starts_with(w))
        {
            eprintln!(
                "{}:1: warning: missing banner line; is this an IP summary dump?",
                self.filename
            );
        }
        Ok(())
    }

    fn is_task(&self) -> bool {
        self.push
    }

    fn run_task(&mut self, ctx: &mut Ctx<'_>) -> bool {
        match self.fill(DEFAULT_BURST, ctx) {
            Some(b) => {
                ctx.push(0, b);
                true
            }
            None => false,
        }
    }

    fn pull(&mut self, _port: usize, max: usize, ctx: &mut Ctx<'_>) -> Option<Batch> {
        self.fill(max, ctx)
    }

    fn handlers(&self) -> &[HandlerSpec] {
        const H: &[HandlerSpec] = &[
            HandlerSpec::read_write("active"),
            HandlerSpec::read("sampling_prob"),
            HandlerSpec::read("encap"),
            HandlerSpec::write("stop"),
            HandlerSpec::counter("count"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "active" => self.active.to_string(),
            "sampling_prob" => {
                let v = self.sampling as f64 / (1u64 << SAMPLING_SHIFT) as f64;
                format!("{v}")
            }
            "encap" => "IP".into(),
            "count" => self.count.to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "active" => crate::parse_value::<bool>(value).map(|v| self.active = v),
            "stop" => {
                self.active = false;
                self.stop_requested = true;
                Ok(())
            }
            _ => return None,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_times_and_frags() {
        assert_eq!(parse_time("1.5"), Some(1_500_000_000));
        assert_eq!(parse_time("7"), Some(7_000_000_000));
        assert_eq!(parse_text(Field::IpFragoff, "8+", 3), Some(1 | IP_MF));
        assert_eq!(parse_text(Field::IpFragoff, "0!", 3), Some(IP_DF));
        assert_eq!(parse_text(Field::TcpFlags, "SA", 3), Some(0x12));
        assert_eq!(parse_text(Field::IpProto, "U", 3), Some(17));
        assert_eq!(parse_text(Field::IpTtl, "300", 3), None);
    }
}

//! Prints one line per IP packet in Click's IPPrint format (a
//! tcpdump-like summary).
//!
//! # Synopsis
//! `IPPrint([LABEL, KEYWORDS])`
//!
//! # Ports
//! One agnostic input, one agnostic output; packets pass unchanged.
//!
//! # Arguments
//! - `LABEL` (string, default empty): printed first, followed by `: `.
//! - `CONTENTS` (`false`/`NONE`, `true`/`HEX`, or `ASCII`; default false):
//!   also print the packet data from its first byte, in hex (groups of 4
//!   bytes, 24 per line) or ASCII (groups of 8, 48 per line; unprintable
//!   bytes as `.`), on lines indented by two spaces.
//! - `PAYLOAD` (`false`, `true`/`HEX`, or `ASCII`; default false): like
//!   `CONTENTS` but print the transport payload (after the TCP or UDP
//!   header). At most one of `CONTENTS` and `PAYLOAD` may be given.
//! - `MAXLENGTH` (integer, default 1500): at most this many bytes of data
//!   are printed; negative means all (`NBYTES` is a deprecated synonym).
//! - `TIMESTAMP` (boolean, default true): print the timestamp annotation
//!   (`SEC.USEC: `).
//! - `ID`, `TTL`, `TOS`, `LENGTH` (booleans, default false): print the IP
//!   ID (`id N `), TTL, TOS and total length before the addresses.
//! - `AGGREGATE` (boolean, default false): print the `AGGREGATE`
//!   annotation (`#N`).
//! - `PAINT` (boolean, default false): print the `PAINT` annotation (`paint
//!   N`, or `#AGG.N` together with `AGGREGATE`).
//! - `SWAP` (boolean, default true): print ICMP echo identifiers and
//!   sequence numbers in network byte order (false: as Click on a
//!   little-endian host reads them without swapping).
//! - `ACTIVE` (boolean, default true): print nothing when false.
//! - `OUTFILE` (filename): print to this file instead of standard error.
//! - `CHANNEL` (word): accepted for compatibility; output goes to standard
//!   error.
//!
//! Packets without a network header annotation are not printed. Lines have
//! Click's exact format, for example
//! `tcp: 1353690000.010320: 10.0.0.1.1234 > 10.0.0.2.80: S 5:6(1,40,40) win 8192`
//! (TCP flags `S`, `F`, `R`, `P` or `.`; `seq:end(seqlen,packet length,IP
//! length)`, ` ack N` when ACK is set), `udp LEN` for UDP, `icmp echo (ID,
//! SEQ)`, `icmp echo-reply`, `icmp DST unreachable CODE ...` and Click's
//! ICMP type and code names, `ip-proto-N` for other protocols, ` (frag
//! ID:LEN@OFFSET+)` for fragments and `truncated-tcp`/`-udp`/`-icmp`/`-ip`
//! for short packets.
//!
//! # Handlers
//! - `active` (read/write).
//!
//! # Example
//! ```click
//! FromDump(trace.pcap, STOP true) -> CheckIPHeader(14)
//!     -> IPPrint(in, TTL true) -> Discard;
//! ```
//!
//! # Implementation
//! Each line is formatted into a buffer owned by the element and written
//! with one call; nothing is allocated per packet once the buffer has
//! grown. Printing is inherently slow; use it for debugging and tests.

use super::util::{be16, be32, nh_offset, th_offset, IP_MF, IP_OFFMASK};
use linerate_runtime::anno::offsets;
use linerate_runtime::{
    Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, InitCtx, Packet,
};
use std::any::Any;
use std::fmt::Write as _;
use std::io::Write as _;
use std::net::Ipv4Addr;

/// The `IPPrint` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "IPPrint",
    port_count: "1/1",
    processing: "a/a",
    doc: element_doc!("ip/ipprint"),
    make,
};

struct IPPrint {
    label: String,
    bytes: i64,
    contents: u8,
    payload: bool,
    swap: bool,
    active: bool,
    id: bool,
    timestamp: bool,
    paint: bool,
    tos: bool,
    ttl: bool,
    length: bool,
    aggregate: bool,
    outfilename: Option<String>,
    outfile: Option<std::io::BufWriter<std::fs::File>>,
    buf: String,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    use linerate_args::{Args, Word};
    let mut a = Args::new(&ctx.args);
    let label: String = a.read_p_or("LABEL", String::new());
    let contents: Word = a.read_or("CONTENTS", Word("no".into()));
    let payload: Word = a.read_or("PAYLOAD", Word("no".into()));
    let mut bytes: i64 = a.read_or("MAXLENGTH", 1500i64);
    if let Some(b) = a.read::<i64>("NBYTES") {
        bytes = b;
    }
    let id = a.read_or("ID", false);
    let timestamp = a.read_or("TIMESTAMP", true);
    let paint = a.read_or("PAINT", false);
    let tos = a.read_or("TOS", false);
    let ttl = a.read_or("TTL", false);
    let swap = a.read_or("SWAP", true);
    let length = a.read_or("LENGTH", false);
    let aggregate = a.read_or("AGGREGATE", false);
    let active = a.read_or("ACTIVE", true);
    let outfilename: Option<String> = a.read("OUTFILE");
    let _channel: Option<Word> = a.read("CHANNEL");
    a.complete().map_err(|e| e.0)?;

    let mut contents_v = match <bool as linerate_args::ArgValue>::parse_arg(&contents.0) {
        Ok(b) => u8::from(b),
        Err(_) => match contents.0.to_ascii_uppercase().as_str() {
            "NONE" => 0,
            "HEX" => 1,
            "ASCII" => 2,
            c => {
                return Err(vec![format!(
                    "bad contents value '{c}'; should be 'NONE', 'HEX', or 'ASCII'"
                )])
            }
        },
    };
    let payload_v = match payload.0.to_ascii_uppercase().as_str() {
        "NO" | "FALSE" => 0,
        "YES" | "TRUE" | "HEX" => 1,
        "ASCII" => 2,
        c => {
            return Err(vec![format!(
                "bad payload value '{c}'; should be 'false', 'hex', or 'ascii'"
            )])
        }
    };
    let mut payload = false;
    if payload_v > 0 && contents_v > 0 {
        return Err(vec![
            "specify at most one of PAYLOAD and CONTENTS".to_string()
        ]);
    } else if payload_v > 0 {
        contents_v = payload_v;
        payload = true;
    }
    Ok(Box::new(IPPrint {
        label,
        bytes,
        contents: contents_v,
        payload,
        swap,
        active,
        id,
        timestamp,
        paint,
        tos,
        ttl,
        length,
        aggregate,
        outfilename,
        outfile: None,
        buf: String::with_capacity(256),
    }))
}

/// Click's `IPNameInfo` protocol names.
fn proto_name(p: u8) -> Option<&'static str> {
    Some(match p {
        1 => "icmp",
        2 => "igmp",
        4 => "ipip",
        6 => "tcp",
        17 => "udp",
        33 => "dccp",
        47 => "gre",
        132 => "sctp",
        _ => return None,
    })
}

/// Click's `IPNameInfo` ICMP type names.
pub(crate) fn icmp_type_name(t: u8) -> Option<&'static str> {
    Some(match t {
        0 => "echo-reply",
        3 => "unreachable",
        4 => "sourcequench",
        5 => "redirect",
        8 => "echo",
        9 => "routeradvert",
        10 => "routersolicit",
        11 => "timeexceeded",
        12 => "parameterproblem",
        13 => "timestamp",
        14 => "timestamp-reply",
        15 => "inforeq",
        16 => "inforeq-reply",
        17 => "maskreq",
        18 => "maskreq-reply",
        _ => return None,
    })
}

/// Click's `IPNameInfo` ICMP code names, per type.
pub(crate) fn icmp_code_name(t: u8, c: u8) -> Option<&'static str> {
    const UNREACH: [&str; 16] = [
        "net",
        "host",
        "protocol",
        "port",
        "needfrag",
        "srcroutefail",
        "netunknown",
        "hostunknown",
        "isolated",
        "netprohibited",
        "hostprohibited",
        "tosnet",
        "toshost",
        "filterprohibited",
        "hostprecedence",
        "precedencecutoff",
    ];
    const REDIRECT: [&str; 4] = ["net", "host", "tosnet", "toshost"];
    const TIMXCEED: [&str; 2] = ["transit", "reassembly"];
    const PARAMPROB: [&str; 3] = ["erroratptr", "missingopt", "length"];
    let table: &[&str] = match t {
        3 => &UNREACH,
        5 => &REDIRECT,
        11 => &TIMXCEED,
        12 => &PARAMPROB,
        _ => return None,
    };
    table.get(usize::from(c)).copied()
}

fn addr(b: &[u8], at: usize) -> Ipv4Addr {
    Ipv4Addr::new(b[at], b[at + 1], b[at + 2], b[at + 3])
}

impl IPPrint {
    /// Formats the line for `p` into `self.buf`; false if nothing is printed.
    fn format(&mut self, p: &Packet) -> bool {
        let Some(nh_signed) = p.network_header_offset() else {
            return false;
        };
        let s = &mut self.buf;
        s.clear();
        if !self.label.is_empty() {
            s.push_str(&self.label);
            s.push_str(": ");
        }
        if self.timestamp {
            super::util::push_timestamp(s, p.timestamp_ns());
            s.push_str(": ");
        }
        if self.aggregate {
            let _ = write!(s, "#{}", p.anno().u32(offsets::AGGREGATE));
        }
        if self.paint {
            s.push_str(if self.aggregate { "." } else { "paint " });
            let _ = write!(s, "{}", p.anno().paint());
        }
        if self.aggregate || self.paint {
            s.push_str(": ");
        }
        let len = p.len() as i64;
        let network_length = len - nh_signed as i64;
        let nh = match nh_offset(p) {
            Some(nh) if network_length >= 20 => nh,
            _ => {
                s.push_str("truncated-ip");
                return true;
            }
        };
        let d = p.data();
        let ip = &d[nh..];
        let ip_len = i64::from(be16(ip, 2));
        let hl = i64::from(ip[0] & 15) << 2;
        let payload_len = ip_len - hl;
        let th = th_offset(p, nh);
        let transport_length = (len - th as i64).min(payload_len);
        let proto = ip[9];
        let off = be16(ip, 6);
        let first_frag = off & IP_OFFMASK == 0;
        let src = addr(ip, 12);
        let dst = addr(ip, 16);

        if self.id {
            let _ = write!(s, "id {} ", be16(ip, 4));
        }
        if self.ttl {
            let _ = write!(s, "ttl {} ", ip[8]);
        }
        if self.tos {
            let _ = write!(s, "tos {} ", ip[1]);
        }
        if self.length {
            let _ = write!(s, "length {ip_len} ");
        }

        match proto {
            6 => {
                if transport_length < 4 || !first_frag {
                    let what = if first_frag {
                        ": truncated-tcp"
                    } else {
                        ": tcp"
                    };
                    let _ = write!(s, "{src} > {dst}{what}");
                } else {
                    let t = &d[th..];
                    let _ = write!(s, "{src}.{} > {dst}.{}: ", be16(t, 0), be16(t, 2));
                    if transport_length < 14 {
                        s.push_str("truncated-tcp");
                    } else {
                        let flags = t[13];
                        let mut seqlen = (ip_len - hl - (i64::from(t[12] >> 4) << 2)) as i32;
                        if flags & 0x02 != 0 {
                            s.push('S');
                            seqlen = seqlen.wrapping_add(1);
                        }
                        if flags & 0x01 != 0 {
                            s.push('F');
                            seqlen = seqlen.wrapping_add(1);
                        }
                        if flags & 0x04 != 0 {
                            s.push('R');
                        }
                        if flags & 0x08 != 0 {
                            s.push('P');
                        }
                        if flags & 0x0f == 0 {
                            s.push('.');
                        }
                        let seq = be32(t, 4);
                        let _ = write!(
                            s,
                            " {seq}:{}({seqlen},{len},{ip_len})",
                            seq.wrapping_add(seqlen as u32)
                        );
                        if flags & 0x10 != 0 {
                            let _ = write!(s, " ack {}", be32(t, 8));
                        }
                        if transport_length < 16 {
                            s.push_str("truncated-tcp");
                        } else {
                            let _ = write!(s, " win {}", be16(t, 14));
                        }
                    }
                }
            }
            17 => {
                if transport_length < 4 || !first_frag {
                    let what = if first_frag {
                        ": truncated-udp"
                    } else {
                        ": udp"
                    };
                    let _ = write!(s, "{src} > {dst}{what}");
                } else {
                    let t = &d[th..];
                    let _ = write!(s, "{src}.{} > {dst}.{}: ", be16(t, 0), be16(t, 2));
                    if transport_length < 8 {
                        s.push_str("truncated-udp");
                    } else {
                        let _ = write!(s, "udp {}", be16(t, 4));
                    }
                }
            }
            1 => {
                let _ = write!(s, "{src} > {dst}: ");
                if !first_frag {
                    s.push_str("icmp");
                } else if transport_length < 2 {
                    s.push_str("truncated-icmp");
                } else {
                    icmp_line(s, &d[th..], transport_length, self.swap);
                }
            }
            _ => {
                let _ = write!(s, "{src} > {dst}: ip-proto-{proto}");
            }
        }

        if off & (IP_MF | IP_OFFMASK) != 0 {
            let _ = write!(
                s,
                " (frag {}:{}@{}{})",
                be16(ip, 4),
                payload_len,
                u32::from(off & IP_OFFMASK) << 3,
                if off & IP_MF != 0 { "+" } else { "" }
            );
        }

        if self.contents > 0 {
            let start = if self.payload {
                if first_frag && proto == 6 {
                    d.get(th + 12)
                        .map_or(d.len(), |b| th + (usize::from(b >> 4) << 2))
                } else if first_frag && proto == 17 {
                    th + 8
                } else {
                    th
                }
            } else {
                0
            };
            let avail = d.len().saturating_sub(start);
            let n = if avail == 0 {
                0
            } else if self.bytes < 0 || (avail as i64) < self.bytes {
                avail
            } else {
                self.bytes as usize
            };
            let data = &d[start.min(d.len())..][..n];
            if self.contents == 1 {
                for (i, b) in data.iter().enumerate() {
                    if i % 24 == 0 {
                        s.push_str("\n  ");
                    } else if i % 4 == 0 {
                        s.push(' ');
                    }
                    let _ = write!(s, "{b:02x}");
                }
            } else {
                for (i, &b) in data.iter().enumerate() {
                    if i % 48 == 0 {
                        s.push_str("\n  ");
                    } else if i % 8 == 0 {
                        s.push(' ');
                    }
                    s.push(if (32..=126).contains(&b) {
                        b as char
                    } else {
                        '.'
                    });
                }
            }
        }
        true
    }
}

/// The ICMP part of a line (after `SRC > DST: `); `t` starts at the ICMP
/// header and holds at least `tl` >= 2 bytes.
fn icmp_line(s: &mut String, t: &[u8], tl: i64, swap: bool) {
    let (ty, code) = (t[0], t.get(1).copied().unwrap_or(0));
    match ty {
        0 | 8 => {
            s.push_str(if ty == 0 {
                "icmp echo-reply "
            } else {
                "icmp echo "
            });
            if tl < 8 {
                s.push_str("truncated-icmp");
            } else {
                let sw = |x: u16| if swap { x } else { x.swap_bytes() };
                let _ = write!(s, "({}, {})", sw(be16(t, 4)), sw(be16(t, 6)));
            }
        }
        3 => {
            let code_s: std::borrow::Cow<'static, str> = match icmp_code_name(3, code) {
                Some(c) => c.into(),
                None => format!("code {code}").into(),
            };
            let eiph_len = tl - 8;
            if eiph_len < 20 {
                let _ = write!(s, "icmp unreachable {code_s} truncated-icmp");
                return;
            }
            let e = &t[8..];
            let ehl = i64::from(e[0] & 15) << 2;
            let eudph_len = eiph_len - ehl;
            let _ = write!(s, "icmp {} unreachable {code_s}", addr(e, 16));
            match code {
                2 => match proto_name(e[9]) {
                    Some(n) => {
                        let _ = write!(s, " {n}");
                    }
                    None => {
                        let _ = write!(s, " {}", e[9]);
                    }
                },
                3 => {
                    match proto_name(e[9]) {
                        Some(n) => {
                            let _ = write!(s, " {n}");
                        }
                        None => {
                            let _ = write!(s, " protocol {}", e[9]);
                        }
                    }
                    if eudph_len < 4 {
                        s.push_str("truncated-icmp");
                    } else {
                        let _ = write!(s, "/{}", be16(e, ehl as usize + 2));
                    }
                }
                4 => {
                    let mtu = be16(t, 6);
                    if mtu != 0 {
                        let _ = write!(s, " (mtu {mtu})");
                    }
                }
                _ => {}
            }
        }
        _ => {
            s.push_str("icmp ");
            match icmp_type_name(ty) {
                Some(n) => s.push_str(n),
                None => {
                    let _ = write!(s, "type {ty}");
                }
            }
            match icmp_code_name(ty, code) {
                Some(n) => {
                    let _ = write!(s, " {n}");
                }
                None if code != 0 => {
                    let _ = write!(s, " code {code}");
                }
                None => {}
            }
        }
    }
}

const HANDLERS: &[HandlerSpec] = &[HandlerSpec::read_write("active")];

impl Element for IPPrint {
    fn initialize(&mut self, _ctx: &mut InitCtx<'_>) -> Result<(), String> {
        if let Some(f) = &self.outfilename {
            let file = std::fs::File::create(f).map_err(|e| format!("{f}: {e}"))?;
            self.outfile = Some(std::io::BufWriter::new(file));
        }
        Ok(())
    }

    fn action(&mut self, batch: Batch, _ctx: &mut Ctx<'_>) -> Batch {
        if !self.active {
            return batch;
        }
        for p in batch.iter() {
            if self.format(p) {
                self.buf.push('\n');
                match &mut self.outfile {
                    Some(f) => {
                        let _ = f.write_all(self.buf.as_bytes());
                    }
                    None => {
                        let _ = std::io::stderr().lock().write_all(self.buf.as_bytes());
                    }
                }
            }
        }
        if let Some(f) = &mut self.outfile {
            let _ = f.flush();
        }
        batch
    }

    fn cleanup(&mut self) {
        if let Some(f) = &mut self.outfile {
            let _ = f.flush();
        }
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        (name == "active").then(|| self.active.to_string())
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        (name == "active").then(|| crate::parse_value::<bool>(value).map(|v| self.active = v))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

//! The IP summary dump format shared by ToIPSummaryDump and
//! FromIPSummaryDump: field names, their text and binary representations,
//! and the summary of one packet (Click's `ipsumdumpinfo`).
//!
//! Supported fields: `timestamp` (`utimestamp`, `ts`), `ntimestamp`,
//! `ts_sec`, `ts_usec`, `ts_usec1`, `first_timestamp`, `count`, `link`,
//! `paint`, `direction`, `aggregate`, `wire_len`, `ip_src`, `ip_dst`,
//! `ip_tos`, `ip_dscp`, `ip_ecn`, `ip_ttl`, `ip_frag`, `ip_fragoff`, `ip_id`,
//! `ip_sum`, `ip_proto`, `ip_hl`, `ip_len`, `ip_capture_len`, `sport`,
//! `dport`, `tcp_seq`, `tcp_ack`, `tcp_flags`, `tcp_window`, `tcp_urp`,
//! `udp_len`, `icmp_type`, `icmp_code`, `payload_len`, with Click's synonyms
//! (`src`, `len`, `proto`, `ip_p`, `tcp_seqno`, `tcp_win`, ...), spaces for
//! underscores, and a bare word `X` meaning `ip_X`.
//! Not supported: `ip_opt`, `tcp_opt`, `tcp_ntopt`, `tcp_sack`, `payload`,
//! `payload_md5`, `payload_md5_hex`, `icmp_*_name`, `icmp_flowid`,
//! `icmp_seq`, `icmp_nextmtu`, `eth_src`, `eth_dst`.

use linerate_runtime::anno::offsets;
use linerate_runtime::Packet;

/// Click's `IPSummaryDump` format version written in the banner.
pub const MAJOR_VERSION: u32 = 1;
/// Minor version (1.3).
pub const MINOR_VERSION: u32 = 3;

/// One summary field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Timestamp,
    NTimestamp,
    TsSec,
    TsUsec,
    TsUsec1,
    FirstTimestamp,
    Count,
    Link,
    Paint,
    Direction,
    Aggregate,
    WireLen,
    IpSrc,
    IpDst,
    IpTos,
    IpDscp,
    IpEcn,
    IpTtl,
    IpFrag,
    IpFragoff,
    IpId,
    IpSum,
    IpProto,
    IpHl,
    IpLen,
    IpCaptureLen,
    Sport,
    Dport,
    TcpSeq,
    TcpAck,
    TcpFlags,
    TcpWindow,
    TcpUrp,
    UdpLen,
    IcmpType,
    IcmpCode,
    PayloadLen,
}

/// Canonical names, in Click's spelling.
const NAMES: &[(&str, Field)] = &[
    ("timestamp", Field::Timestamp),
    ("ntimestamp", Field::NTimestamp),
    ("ts_sec", Field::TsSec),
    ("ts_usec", Field::TsUsec),
    ("ts_usec1", Field::TsUsec1),
    ("first_timestamp", Field::FirstTimestamp),
    ("count", Field::Count),
    ("link", Field::Link),
    ("paint", Field::Paint),
    ("direction", Field::Direction),
    ("aggregate", Field::Aggregate),
    ("wire_len", Field::WireLen),
    ("ip_src", Field::IpSrc),
    ("ip_dst", Field::IpDst),
    ("ip_tos", Field::IpTos),
    ("ip_dscp", Field::IpDscp),
    ("ip_ecn", Field::IpEcn),
    ("ip_ttl", Field::IpTtl),
    ("ip_frag", Field::IpFrag),
    ("ip_fragoff", Field::IpFragoff),
    ("ip_id", Field::IpId),
    ("ip_sum", Field::IpSum),
    ("ip_proto", Field::IpProto),
    ("ip_hl", Field::IpHl),
    ("ip_len", Field::IpLen),
    ("ip_capture_len", Field::IpCaptureLen),
    ("sport", Field::Sport),
    ("dport", Field::Dport),
    ("tcp_seq", Field::TcpSeq),
    ("tcp_ack", Field::TcpAck),
    ("tcp_flags", Field::TcpFlags),
    ("tcp_window", Field::TcpWindow),
    ("tcp_urp", Field::TcpUrp),
    ("udp_len", Field::UdpLen),
    ("icmp_type", Field::IcmpType),
    ("icmp_code", Field::IcmpCode),
    ("payload_len", Field::PayloadLen),
];

const SYNONYMS: &[(&str, &str)] = &[
    ("utimestamp", "timestamp"),
    ("ts", "timestamp"),
    ("sec", "ts_sec"),
    ("usec", "ts_usec"),
    ("usec1", "ts_usec1"),
    ("first_utimestamp", "first_timestamp"),
    ("first_ts", "first_timestamp"),
    ("pkt_count", "count"),
    ("packet_count", "count"),
    ("agg", "aggregate"),
    ("wire_length", "wire_len"),
    ("length", "ip_len"),
    ("ip_p", "ip_proto"),
    ("tcp_seqno", "tcp_seq"),
    ("tcp_ackno", "tcp_ack"),
    ("tcp_win", "tcp_window"),
    ("payload_length", "payload_len"),
];

impl Field {
    /// Look a field up by name as Click does: synonyms, then names, then
    /// the first space turned into an underscore, then `X` as `ip_X`.
    pub fn find(name: &str) -> Option<Field> {
        if let Some((_, s)) = SYNONYMS.iter().find(|(n, _)| *n == name) {
            return Field::find(s);
        }
        if let Some((_, f)) = NAMES.iter().find(|(n, _)| *n == name) {
            return Some(*f);
        }
        if let Some(i) = name.find(' ') {
            return Field::find(&format!("{}_{}", &name[..i], &name[i + 1..]));
        }
        if !name.contains('_') {
            return Field::find(&format!("ip_{name}"));
        }
        None
    }

    /// The canonical name (what the `!data` line shows).
    pub fn name(self) -> &'static str {
        NAMES
            .iter()
            .find(|(_, f)| *f == self)
            .map(|(n, _)| *n)
            .unwrap_or("none")
    }

    /// Size in the binary format.
    pub fn binary_size(self) -> usize {
        use Field::*;
        match self {
            Timestamp | NTimestamp | TsUsec1 | FirstTimestamp => 8,
            TsSec | TsUsec | Count | Aggregate | WireLen | IpSrc | IpDst | IpLen | IpCaptureLen
            | TcpSeq | TcpAck | UdpLen | PayloadLen => 4,
            IpFragoff | IpId | IpSum | Sport | Dport | TcpWindow | TcpUrp => 2,
            Link | Paint | Direction | IpTos | IpDscp | IpEcn | IpTtl | IpFrag | IpProto | IpHl
            | TcpFlags | IcmpType | IcmpCode => 1,
        }
    }
}

/// Parse a space-separated field list (Click's `cp_spacevec` + unquote).
pub fn parse_fields(s: &str) -> Result<Vec<Field>, Vec<String>> {
    let mut out = Vec::new();
    let mut errs = Vec::new();
    for w in space_words(s) {
        let w = unquote(w);
        match Field::find(&w) {
            Some(f) => out.push(f),
            None => errs.push(format!("unknown content type '{w}'")),
        }
    }
    if errs.is_empty() {
        Ok(out)
    } else {
        Err(errs)
    }
}

/// Split on whitespace, keeping double-quoted words together.
pub fn space_words(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let mut v = Vec::new();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        let start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() {
            if b[i] == b'"' {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            i += 1;
        }
        v.push(&s[start..i.min(b.len())]);
    }
    v
}

fn unquote(w: &str) -> String {
    w.chars().filter(|c| *c != '"').collect()
}

/// Click's `Timestamp` text form at microsecond precision: `SEC.USEC`.
pub fn push_timestamp(out: &mut Vec<u8>, ns: u64) {
    use std::io::Write;
    let _ = write!(
        out,
        "{}.{:06}",
        ns / 1_000_000_000,
        (ns % 1_000_000_000) / 1000
    );
}

const IP_MF: u16 = 0x2000;
const IP_DF: u16 = 0x4000;
const IP_OFFMASK: u16 = 0x1fff;

#[inline]
fn be16(d: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([d[o], d[o + 1]])
}
#[inline]
fn be32(d: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([d[o], d[o + 1], d[o + 2], d[o + 3]])
}

/// Options of a summary writer.
#[derive(Clone, Copy, Debug)]
pub struct WriteOptions {
    pub binary: bool,
    pub careful_trunc: bool,
    pub extra_length: bool,
    pub bad_packets: bool,
}

/// Annotation values used for one summary line (MULTIPACKET rewrites them).
#[derive(Clone, Copy, Debug)]
pub struct Annos {
    pub ts_ns: u64,
    pub extra_length: u32,
    pub extra_packets: u32,
}

impl Annos {
    pub fn of(p: &Packet) -> Annos {
        Annos {
            ts_ns: p.timestamp_ns(),
            extra_length: p.anno().u32(offsets::EXTRA_LENGTH),
            extra_packets: p.anno().u32(offsets::EXTRA_PACKETS),
        }
    }
}

/// What Click's `ip_prepare` learns about a packet.
struct Desc<'a> {
    data: &'a [u8],
    /// Offset of the IP header in `data`, if usable.
    ip: Option<usize>,
    /// Offset of the transport header.
    th: usize,
    tcp: bool,
    udp: bool,
    icmp: bool,
    tailpad: usize,
    extra: u32,
    bad: Option<String>,
}

impl Desc<'_> {
    fn len(&self) -> usize {
        self.data.len() - self.tailpad
    }
    fn net_len(&self) -> usize {
        self.ip
            .map(|o| self.data.len().saturating_sub(o))
            .unwrap_or(0)
            .saturating_sub(self.tailpad)
    }
    fn trans_len(&self) -> usize {
        self.data
            .len()
            .saturating_sub(self.th)
            .saturating_sub(self.tailpad)
    }
    fn iph(&self) -> &[u8] {
        &self.data[self.ip.unwrap_or(0)..]
    }
    fn hl(&self) -> usize {
        self.ip
            .map(|_| ((self.iph()[0] & 15) as usize) * 4)
            .unwrap_or(0)
    }
    fn firstfrag(&self) -> bool {
        self.ip.is_some() && self.net_len() >= 8 && be16(self.iph(), 6) & IP_OFFMASK == 0
    }
    fn proto(&self) -> Option<u8> {
        (self.ip.is_some() && self.net_len() > 9).then(|| self.iph()[9])
    }
    fn note_bad(&mut self, s: String, on: bool) {
        if on && self.bad.is_none() {
            self.bad = Some(s);
        }
    }

    /// Click's `hard_field_missing` for a transport field of `proto`
    /// (`None`: TCP or UDP) needing `l` bytes.
    fn missing_transport(&mut self, proto: Option<u8>, name: &str, l: usize, on: bool) {
        if !on || self.bad.is_some() {
            return;
        }
        if self.ip.is_none() {
            self.bad = Some("!bad no IP header\n".into());
            return;
        }
        if let Some(p) = self.proto() {
            let wrong = match proto {
                Some(x) => p != x,
                None => p != 6 && p != 17,
            };
            if wrong {
                return;
            }
        }
        let msg = if !self.firstfrag() {
            format!("!bad fragmented {name} header\n")
        } else if self.trans_len() + self.extra as usize >= l {
            format!("!bad truncated {name} header capture\n")
        } else {
            format!("!bad truncated {name} header\n")
        };
        self.bad = Some(msg);
    }
}

fn prepare<'a>(p: &'a Packet, a: &Annos, o: &WriteOptions) -> Desc<'a> {
    let data = p.data();
    let mut d = Desc {
        data,
        ip: None,
        th: data.len(),
        tcp: false,
        udp: false,
        icmp: false,
        tailpad: 0,
        extra: a.extra_length,
        bad: None,
    };
    let bad_on = o.bad_packets;
    let nh = p
        .network_header_offset()
        .and_then(|o| usize::try_from(o).ok())
        .filter(|o| *o <= data.len());
    if let Some(nh) = nh {
        let ip = &data[nh..];
        if ip.len() < 4 {
            d.note_bad("!bad truncated IP header\n".into(), bad_on);
        } else if ip[0] >> 4 != 4 {
            d.note_bad(format!("!bad IP version {}\n", ip[0] >> 4), bad_on);
        } else if ip[0] & 15 < 5 {
            d.note_bad(format!("!bad IP header length {}\n", ip[0] & 15), bad_on);
        } else if (be16(ip, 2) as usize) < ((ip[0] & 15) as usize) * 4 {
            d.note_bad(format!("!bad IP length {}\n", be16(ip, 2)), bad_on);
        } else {
            d.ip = Some(nh);
            let ip_len = be16(ip, 2) as usize;
            if ip.len() > ip_len {
                d.extra += (ip.len() - ip_len) as u32;
                d.tailpad = ip.len() - ip_len;
            } else if o.careful_trunc && ip.len() + (d.extra as usize) < ip_len {
                let missing = ip_len - ip.len() - d.extra as usize;
                d.note_bad(format!("!bad truncated IP missing {missing}\n"), bad_on);
            }
        }
    }
    if let Some(nh) = d.ip {
        let hl = d.hl();
        d.th = p
            .transport_header_offset()
            .and_then(|o| usize::try_from(o).ok())
            .unwrap_or(nh + hl)
            .min(data.len());
        // Headers too short to hold the protocol read as protocol 0.
        let proto = d.proto().unwrap_or(0);
        let nl = d.net_len();
        let ff = d.firstfrag();
        d.tcp = nl > hl && proto == 6 && ff;
        if d.tcp && d.trans_len() > 12 && (data[d.th + 12] >> 4) < 5 {
            let off = data[d.th + 12] >> 4;
            d.note_bad(format!("!bad TCP header length {off}\n"), bad_on);
            d.tcp = false;
        }
        d.udp = nl.saturating_sub(d.tailpad) > hl && proto == 17 && ff;
        d.icmp = nl > hl && proto == 1 && ff;
        if d.extra > 0 {
            let full = nl as u32 + d.extra;
            d.extra = if be16(data, nh + 2) != 0xFFFF || full <= 0xFFFF {
                0
            } else {
                full - 0xFFFF
            };
        }
    }
    d
}

/// A value extracted for one field.
enum V {
    Missing,
    N(u32),
    N64(u64),
    Ts(u64),
    Addr([u8; 4]),
    Char(u8),
}

fn extract(f: Field, p: &Packet, a: &Annos, d: &mut Desc<'_>, o: &WriteOptions) -> V {
    use Field::*;
    let bad_on = o.bad_packets;
    let nl = d.net_len();
    let ip_check = |d: &mut Desc<'_>, l: usize| -> bool {
        if d.ip.is_none() || nl < l {
            if bad_on && d.bad.is_none() {
                d.bad = Some(if d.ip.is_none() {
                    "!bad no IP header\n".into()
                } else {
                    "!bad truncated IP header capture\n".into()
                });
            }
            false
        } else {
            true
        }
    };
    match f {
        Timestamp | NTimestamp => V::Ts(a.ts_ns),
        TsSec => V::N((a.ts_ns / 1_000_000_000) as u32),
        TsUsec => V::N(((a.ts_ns % 1_000_000_000) / 1000) as u32),
        TsUsec1 => V::N64(a.ts_ns / 1000),
        FirstTimestamp => V::Ts(p.anno().u64(offsets::FIRST_TIMESTAMP)),
        Count => V::N(1 + a.extra_packets),
        Link | Paint | Direction => V::N(p.anno().paint() as u32),
        Aggregate => V::N(p.anno().u32(offsets::AGGREGATE)),
        WireLen => V::N(p.len() as u32),
        IpSrc | IpDst => {
            let l = if f == IpSrc { 16 } else { 20 };
            if !ip_check(d, l) {
                return V::Missing;
            }
            let o = if f == IpSrc { 12 } else { 16 };
            let ip = d.iph();
            V::Addr([ip[o], ip[o + 1], ip[o + 2], ip[o + 3]])
        }
        IpTos | IpDscp | IpEcn => {
            if !ip_check(d, 2) {
                return V::Missing;
            }
            let t = d.iph()[1];
            V::N(match f {
                IpTos => t as u32,
                IpDscp => (t >> 2) as u32,
                _ => (t & 3) as u32,
            })
        }
        IpTtl => {
            if !ip_check(d, 9) {
                return V::Missing;
            }
            V::N(d.iph()[8] as u32)
        }
        IpFrag => {
            if !ip_check(d, 8) {
                return V::Missing;
            }
            let off = be16(d.iph(), 6);
            V::Char(if off & (IP_OFFMASK | IP_MF) != 0 {
                if off & IP_OFFMASK == 0 {
                    b'F'
                } else {
                    b'f'
                }
            } else if off & IP_DF != 0 {
                b'!'
            } else {
                b'.'
            })
        }
        IpFragoff => {
            if !ip_check(d, 8) {
                return V::Missing;
            }
            V::N(be16(d.iph(), 6) as u32)
        }
        IpId => {
            if !ip_check(d, 6) {
                return V::Missing;
            }
            V::N(be16(d.iph(), 4) as u32)
        }
        IpSum => {
            if !ip_check(d, 12) {
                return V::Missing;
            }
            V::N(be16(d.iph(), 10) as u32)
        }
        IpProto => {
            if !ip_check(d, 10) {
                return V::Missing;
            }
            V::N(d.iph()[9] as u32)
        }
        IpHl => {
            if !ip_check(d, 1) {
                return V::Missing;
            }
            V::N(d.hl() as u32)
        }
        IpLen => {
            let mut v = if d.ip.is_some() {
                be16(d.iph(), 2) as u32
            } else {
                d.len() as u32
            };
            if o.extra_length {
                v = v.wrapping_add(d.extra);
            }
            V::N(v)
        }
        IpCaptureLen => {
            let allow = if d.ip.is_some() { nl } else { d.len() } as u32;
            let len = if d.ip.is_some() {
                be16(d.iph(), 2) as u32
            } else {
                allow
            };
            V::N(len.min(allow))
        }
        Sport | Dport => {
            let need = if f == Dport { 4 } else { 2 };
            let ok = d.ip.is_some()
                && nl > d.hl()
                && d.firstfrag()
                && matches!(d.iph()[9], 6 | 17 | 33 | 136)
                && d.trans_len() >= need;
            if !ok {
                d.missing_transport(None, "TCP/UDP", need, bad_on);
                return V::Missing;
            }
            V::N(be16(d.data, d.th + need - 2) as u32)
        }
        TcpSeq | TcpAck | TcpFlags | TcpWindow | TcpUrp => {
            let need = match f {
                TcpSeq => 8,
                TcpAck => 12,
                TcpFlags => 14,
                TcpWindow => 16,
                _ => 20,
            };
            if !d.tcp || d.trans_len() < need {
                d.missing_transport(Some(6), "TCP", need, bad_on);
                return V::Missing;
            }
            let t = &d.data[d.th..];
            V::N(match f {
                TcpSeq => be32(t, 4),
                TcpAck => be32(t, 8),
                TcpFlags => t[13] as u32 | (((t[12] & 1) as u32) << 8),
                TcpWindow => be16(t, 14) as u32,
                _ => be16(t, 18) as u32,
            })
        }
        UdpLen => {
            if !d.udp || d.trans_len() < 6 {
                d.missing_transport(Some(17), "UDP", 6, bad_on);
                return V::Missing;
            }
            V::N(be16(d.data, d.th + 4) as u32)
        }
        IcmpType | IcmpCode => {
            let need = if f == IcmpType { 1 } else { 2 };
            if !d.icmp || d.trans_len() < need {
                d.missing_transport(Some(1), "ICMP", need, bad_on);
                return V::Missing;
            }
            V::N(d.data[d.th + need - 1] as u32)
        }
        PayloadLen => {
            let mut len: u32;
            if let Some(nh) = d.ip {
                len = be16(d.iph(), 2) as u32;
                let mut off = d.th;
                if d.firstfrag() {
                    match d.iph()[9] {
                        6 => {
                            let tl = d.trans_len().saturating_sub(d.tailpad);
                            let thl = if tl >= 13 {
                                ((d.data[d.th + 12] >> 4) as usize) * 4
                            } else {
                                0
                            };
                            off += if thl >= 20 { thl } else { 20 };
                        }
                        17 | 136 => off += 8,
                        _ => {}
                    }
                }
                len = len.wrapping_sub((off - nh) as u32);
                if o.extra_length {
                    len = len.wrapping_add(d.extra);
                }
            } else {
                len = (d.len() as u32).wrapping_add(d.extra);
            }
            V::N(len)
        }
    }
}

fn push_num(out: &mut Vec<u8>, v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut v = v;
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

fn push_addr(out: &mut Vec<u8>, a: [u8; 4]) {
    for (i, b) in a.iter().enumerate() {
        if i > 0 {
            out.push(b'.');
        }
        push_num(out, *b as u64);
    }
}

const TCP_FLAG_CHARS: &[u8; 9] = b"FSRPAUECN";

fn out_text(f: Field, v: &V, out: &mut Vec<u8>) {
    use Field::*;
    match (f, v) {
        (_, V::Missing) => out.push(b'-'),
        (_, V::Ts(ns)) => push_timestamp(out, *ns),
        (_, V::Addr(a)) => push_addr(out, *a),
        (_, V::Char(c)) => out.push(*c),
        (_, V::N64(n)) => push_num(out, *n),
        (Direction, V::N(0)) => out.push(b'>'),
        (Direction, V::N(1)) => out.push(b'<'),
        (IpFragoff, V::N(n)) => {
            let n = *n as u16;
            push_num(out, ((n & IP_OFFMASK) as u64) << 3);
            if n & IP_MF != 0 {
                out.push(b'+');
            }
            if n & IP_DF != 0 {
                out.push(b'!');
            }
        }
        (IpProto, V::N(n)) => match n {
            6 => out.push(b'T'),
            17 => out.push(b'U'),
            1 => out.push(b'I'),
            _ => push_num(out, *n as u64),
        },
        (IpEcn, V::N(n)) => out.extend_from_slice(match n {
            0 => b"no".as_slice(),
            1 => b"ect1",
            2 => b"ect2",
            _ => b"ce",
        }),
        (TcpFlags, V::N(n)) => {
            if *n == 0x18 {
                out.extend_from_slice(b"PA");
            } else if *n == 0x10 {
                out.push(b'A');
            } else if *n == 0 {
                out.push(b'.');
            } else {
                for (i, c) in TCP_FLAG_CHARS.iter().enumerate() {
                    if n & (1 << i) != 0 {
                        out.push(*c);
                    }
                }
            }
        }
        (_, V::N(n)) => push_num(out, *n as u64),
    }
}

fn out_binary(f: Field, v: &V, out: &mut Vec<u8>) {
    use Field::*;
    match (f, v) {
        (Timestamp | FirstTimestamp, V::Ts(ns)) => {
            out.extend_from_slice(&((ns / 1_000_000_000) as u32).to_be_bytes());
            out.extend_from_slice(&(((ns % 1_000_000_000) / 1000) as u32).to_be_bytes());
        }
        // Click's generic 8-byte writer stores the second word first.
        (NTimestamp, V::Ts(ns)) => {
            out.extend_from_slice(&((ns % 1_000_000_000) as u32).to_be_bytes());
            out.extend_from_slice(&((ns / 1_000_000_000) as u32).to_be_bytes());
        }
        (_, V::N64(n)) => {
            out.extend_from_slice(&(*n as u32).to_be_bytes());
            out.extend_from_slice(&((*n >> 32) as u32).to_be_bytes());
        }
        (_, V::Addr(a)) => out.extend_from_slice(a),
        (_, V::Char(c)) => out.push(*c),
        (_, V::N(n)) => match f.binary_size() {
            1 => out.push(*n as u8),
            2 => out.extend_from_slice(&(*n as u16).to_be_bytes()),
            _ => out.extend_from_slice(&n.to_be_bytes()),
        },
        (_, _) => out.extend(std::iter::repeat_n(0, f.binary_size())),
    }
}

/// Append the summary of `p` (one text line, or one binary record) to
/// `out`; return the `!bad` line, if BAD_PACKETS found one.
pub fn summarize(
    fields: &[Field],
    p: &Packet,
    a: &Annos,
    o: &WriteOptions,
    out: &mut Vec<u8>,
) -> Option<String> {
    let mut d = prepare(p, a, o);
    let start = out.len();
    if o.binary {
        out.extend_from_slice(&[0; 4]);
    }
    for (i, f) in fields.iter().enumerate() {
        let v = extract(*f, p, a, &mut d, o);
        if o.binary {
            out_binary(*f, &v, out);
        } else {
            if i > 0 {
                out.push(b' ');
            }
            out_text(*f, &v, out);
        }
    }
    if o.binary {
        let n = (out.len() - start) as u32;
        out[start..start + 4].copy_from_slice(&n.to_be_bytes());
    } else {
        out.push(b'\n');
    }
    d.bad
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_like_click() {
        assert_eq!(Field::find("src"), Some(Field::IpSrc));
        assert_eq!(Field::find("ip src"), Some(Field::IpSrc));
        assert_eq!(Field::find("tcp seq"), Some(Field::TcpSeq));
        assert_eq!(Field::find("len"), Some(Field::IpLen));
        assert_eq!(Field::find("ts"), Some(Field::Timestamp));
        assert_eq!(Field::find("paint"), Some(Field::Paint));
        assert_eq!(Field::find("bogus_field"), None);
        assert_eq!(Field::IpSrc.name(), "ip_src");
    }

    #[test]
    fn words_keep_quotes() {
        assert_eq!(space_words(" a \"b c\"  d"), vec!["a", "\"b c\"", "d"]);
    }
}

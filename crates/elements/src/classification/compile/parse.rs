//! Parser for Click's IPClassifier/IPFilter pattern language (tcpdump-like),
//! producing an [`Expr`]. Grammar, qualifier inheritance (`src port 80 or
//! 81`), name tables and error messages follow Click's `IPFilter`.
//!
//! ```text
//! expr   ::= orexpr | orexpr ? expr : expr
//! orexpr ::= term { (or | ||) term }
//! term   ::= factor { [and | &&] factor }        juxtaposition means and
//! factor ::= (not | !) factor | true | false | ( expr )
//!          | quals [ '[' POS[:LEN] ']' ] [& MASK] [relop] data
//! ```

use super::expr::{Atom, Base, Dim, Expr};

/// A parse error: character position (0-based) in the pattern, message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// Byte position of the offending word in the pattern text.
    pub pos: usize,
    /// Click-style message.
    pub msg: String,
}

const UNKNOWN: i32 = -1000;
const TCP_OR_UDP: i32 = 0x101;
const TRANSP: i32 = 0x102;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FieldSpec {
    proto: i32,
    bitoff: u32,
    nbits: u32,
}

const F_IPLEN: FieldSpec = FieldSpec {
    proto: UNKNOWN,
    bitoff: 16,
    nbits: 16,
};
const F_ID: FieldSpec = FieldSpec {
    proto: UNKNOWN,
    bitoff: 32,
    nbits: 16,
};
const F_VERS: FieldSpec = FieldSpec {
    proto: UNKNOWN,
    bitoff: 0,
    nbits: 4,
};
const F_HL: FieldSpec = FieldSpec {
    proto: UNKNOWN,
    bitoff: 4,
    nbits: 4,
};
const F_TOS: FieldSpec = FieldSpec {
    proto: UNKNOWN,
    bitoff: 8,
    nbits: 8,
};
const F_DSCP: FieldSpec = FieldSpec {
    proto: UNKNOWN,
    bitoff: 8,
    nbits: 6,
};
const F_TTL: FieldSpec = FieldSpec {
    proto: UNKNOWN,
    bitoff: 64,
    nbits: 8,
};
const F_TCPWIN: FieldSpec = FieldSpec {
    proto: 6,
    bitoff: 112,
    nbits: 16,
};
const F_ICMPTYPE: FieldSpec = FieldSpec {
    proto: 1,
    bitoff: 0,
    nbits: 8,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    None,
    Host,
    Net,
    Proto,
    Frag,
    Unfrag,
    Port,
    TcpOpt,
    Ect,
    Ce,
    Field(FieldSpec),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Data {
    None,
    Int,
    Host,
    Net,
    Proto,
    Port,
    TcpOpt,
    Field(FieldSpec),
    Ether,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sd {
    None,
    Src,
    Dst,
    And,
    Or,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Gt,
    Lt,
}

#[derive(Debug, Clone, Copy)]
struct Prim {
    ty: Ty,
    data: Data,
    sd: Sd,
    proto: i32,
    op: Op,
    neg: bool,
    u: u32,
    mask: u32,
    ether: bool,
    mac: [u8; 6],
}

impl Prim {
    fn new() -> Prim {
        Prim {
            ty: Ty::None,
            data: Data::None,
            sd: Sd::None,
            proto: UNKNOWN,
            op: Op::Eq,
            neg: false,
            u: 0,
            mask: 0,
            ether: false,
            mac: [0; 6],
        }
    }
}

fn type_word(w: &str) -> Option<Option<Ty>> {
    // Some(None): a syntax word handled by the qualifier loop.
    Some(Some(match w {
        "ce" => Ty::Ce,
        "dscp" => Ty::Field(F_DSCP),
        "ect" => Ty::Ect,
        "frag" => Ty::Frag,
        "hl" => Ty::Field(F_HL),
        "host" => Ty::Host,
        "id" => Ty::Field(F_ID),
        "len" => Ty::Field(F_IPLEN),
        "net" => Ty::Net,
        "opt" => Ty::TcpOpt,
        "port" => Ty::Port,
        "proto" => Ty::Proto,
        "tos" => Ty::Field(F_TOS),
        "ttl" => Ty::Field(F_TTL),
        "type" => Ty::Field(F_ICMPTYPE),
        "unfrag" => Ty::Unfrag,
        "vers" => Ty::Field(F_VERS),
        "win" => Ty::Field(F_TCPWIN),
        "dest" | "dst" | "ip" | "not" | "src" => return Some(None),
        _ => return None,
    }))
}

fn proto_name(w: &str) -> Option<i32> {
    Some(match w {
        "icmp" => 1,
        "igmp" => 2,
        "ipip" => 4,
        "tcp" => 6,
        "udp" => 17,
        "transp" => TRANSP,
        _ => return None,
    })
}

fn port_name(w: &str) -> Option<u32> {
    Some(match w {
        "echo" => 7,
        "discard" => 9,
        "daytime" => 13,
        "chargen" => 19,
        "ftp-data" => 20,
        "ftp" => 21,
        "ssh" => 22,
        "telnet" => 23,
        "smtp" => 25,
        "domain" | "dns" => 53,
        "bootps" => 67,
        "bootpc" => 68,
        "tftp" => 69,
        "finger" => 79,
        "www" | "http" => 80,
        "pop3" => 110,
        "sunrpc" => 111,
        "auth" => 113,
        "nntp" => 119,
        "ntp" => 123,
        "netbios-ns" => 137,
        "netbios-dgm" => 138,
        "netbios-ssn" => 139,
        "snmp" => 161,
        "snmp-trap" => 162,
        "irc" => 194,
        "imap3" => 220,
        "https" => 443,
        "rip" | "route" => 520,
        "imaps" => 993,
        "pop3s" => 995,
        _ => return None,
    })
}

fn tcpopt_name(w: &str) -> Option<u32> {
    Some(match w {
        "fin" => 1,
        "syn" => 2,
        "rst" => 4,
        "psh" => 8,
        "ack" => 16,
        "urg" => 32,
        _ => return None,
    })
}

fn icmp_name(w: &str) -> Option<u32> {
    Some(match w {
        "echo-reply" => 0,
        "unreachable" => 3,
        "sourcequench" => 4,
        "redirect" => 5,
        "echo" => 8,
        "routeradvert" => 9,
        "routersolicit" => 10,
        "timeexceeded" => 11,
        "parameterproblem" => 12,
        "timestamp" => 13,
        "timestamp-reply" => 14,
        "inforeq" => 15,
        "inforeq-reply" => 16,
        "maskreq" => 17,
        "maskreq-reply" => 18,
        _ => return None,
    })
}

enum Look {
    NotFound,
    Syntax,
    Type(Ty),
    Data(Data, u32),
}

fn ty_name(t: Ty) -> &'static str {
    match t {
        Ty::None => "",
        Ty::Host => "ip host",
        Ty::Net => "ip net",
        Ty::Proto => "proto",
        Ty::Frag => "ip frag",
        Ty::Unfrag => "ip unfrag",
        Ty::Port => "port",
        Ty::TcpOpt => "tcp opt",
        Ty::Ect => "ip ect",
        Ty::Ce => "ip ce",
        Ty::Field(f) => match f {
            F_IPLEN => "ip len",
            F_ID => "ip id",
            F_VERS => "ip vers",
            F_HL => "ip hl",
            F_TOS => "ip tos",
            F_DSCP => "ip dscp",
            F_TTL => "ip ttl",
            F_TCPWIN => "tcp win",
            F_ICMPTYPE => "icmp type",
            _ => "ip[...]",
        },
    }
}

fn proto_word(p: i32) -> String {
    match p {
        UNKNOWN => String::new(),
        1 => "icmp".into(),
        2 => "igmp".into(),
        4 => "ipip".into(),
        6 => "tcp".into(),
        17 => "udp".into(),
        TCP_OR_UDP => "tcpudp".into(),
        TRANSP => "transp".into(),
        n => format!("ip proto {n}"),
    }
}

fn unparse_word(t: Ty, proto: i32, word: &str) -> String {
    let parts: Vec<String> = [ty_name(t).to_string(), proto_word(proto), word.to_string()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect();
    parts.join(" ")
}

/// Look `word` up as a type, protocol, port, TCP option or ICMP type name,
/// given the primitive's type and protocol so far (Click's `lookup`).
fn lookup(word: &str, ty: Ty, proto: i32) -> Result<Look, String> {
    if ty == Ty::None {
        match type_word(word) {
            Some(Some(t)) => return Ok(Look::Type(t)),
            Some(None) => return Ok(Look::Syntax),
            None => {}
        }
    }
    let got = [
        proto_name(word).map(|v| v as u32),
        port_name(word),
        tcpopt_name(word),
        icmp_name(word),
    ];
    if got.iter().all(Option::is_none) {
        return Ok(Look::NotFound);
    }
    let tgot = [
        got[0].is_some() && matches!(ty, Ty::None | Ty::Proto),
        got[1].is_some()
            && matches!(ty, Ty::None | Ty::Port)
            && matches!(proto, UNKNOWN | 6 | 17 | TCP_OR_UDP),
        got[2].is_some()
            && matches!(ty, Ty::None | Ty::TcpOpt)
            && matches!(proto, UNKNOWN | 6 | TCP_OR_UDP),
        got[3].is_some()
            && matches!(ty, Ty::None | Ty::Field(F_ICMPTYPE))
            && matches!(proto, UNKNOWN | 1),
    ];
    let kinds = [
        (Data::Proto, Ty::Proto),
        (Data::Port, Ty::Port),
        (Data::TcpOpt, Ty::TcpOpt),
        (Data::Field(F_ICMPTYPE), Ty::Field(F_ICMPTYPE)),
    ];
    let n = tgot.iter().filter(|&&b| b).count();
    if n == 1 {
        let i = tgot.iter().position(|&b| b).unwrap_or(0);
        return Ok(Look::Data(kinds[i].0, got[i].unwrap_or(0)));
    }
    let tries: Vec<String> = (0..4)
        .filter(|&i| got[i].is_some())
        .map(|i| format!("'{}'", unparse_word(kinds[i].1, UNKNOWN, word)))
        .collect();
    Err(format!(
        "'{}' is {}; try {}",
        unparse_word(ty, proto, word),
        if n > 1 { "ambiguous" } else { "meaningless" },
        tries.join(", ")
    ))
}

/// Click's `cp_integer` with base 0: decimal, `0x` hex, leading-`0` octal.
pub(crate) fn parse_int(s: &str) -> Option<u32> {
    let (digits, radix) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (h, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u32::from_str_radix(digits, radix).ok()
}

fn parse_ip(s: &str) -> Option<u32> {
    let mut v = 0u32;
    let mut n = 0;
    for part in s.split('.') {
        if part.is_empty() || part.len() > 3 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let b: u32 = part.parse().ok()?;
        if b > 255 {
            return None;
        }
        v = (v << 8) | b;
        n += 1;
    }
    (n == 4).then_some(v)
}

fn parse_prefix(s: &str) -> Option<(u32, u32)> {
    let (a, m) = s.split_once('/')?;
    let addr = parse_ip(a)?;
    let mask = if let Some(m) = parse_ip(m) {
        m
    } else {
        if m.is_empty() || m.len() > 2 || !m.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let len: u32 = m.parse().ok()?;
        if len > 32 {
            return None;
        }
        if len == 0 {
            0
        } else {
            u32::MAX << (32 - len)
        }
    };
    Some((addr, mask))
}

fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let parts: Vec<&str> = s.split([':', '-']).collect();
    if parts.len() != 6 {
        return None;
    }
    for (o, p) in out.iter_mut().zip(parts) {
        if p.is_empty() || p.len() > 2 {
            return None;
        }
        *o = u8::from_str_radix(p, 16).ok()?;
    }
    Some(out)
}

/// Split a pattern into words as Click does, remembering where each starts.
fn words(text: &str) -> Vec<(usize, &str)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let c = b[i];
        let two = i + 1 < b.len()
            && match c {
                b'&' | b'|' => b[i + 1] == c,
                b'<' | b'>' | b'!' | b'=' => b[i + 1] == b'=',
                _ => false,
            };
        let len = if two {
            2
        } else if b"&|<>!=()[],;?".contains(&c) {
            1
        } else {
            let mut j = i;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b"-./@_:".contains(&b[j])) {
                j += 1;
            }
            // A byte outside the word set (possibly part of a UTF-8
            // character) forms a word of its own.
            if j == i {
                j = i + 1;
                while j < b.len() && !text.is_char_boundary(j) {
                    j += 1;
                }
            }
            j - i
        };
        out.push((i, &text[i..i + len]));
        i += len;
    }
    out
}

struct Parser<'a> {
    w: Vec<(usize, &'a str)>,
    end: usize,
    prev: Prim,
}

type PResult<T> = Result<T, ParseError>;

impl<'a> Parser<'a> {
    fn word(&self, i: usize) -> &'a str {
        self.w.get(i).map(|x| x.1).unwrap_or("")
    }

    fn err<T>(&self, i: usize, msg: impl Into<String>) -> PResult<T> {
        Err(ParseError {
            pos: self.w.get(i).map(|x| x.0).unwrap_or(self.end),
            msg: msg.into(),
        })
    }

    fn expr(&mut self, pos: usize) -> PResult<(Expr, usize)> {
        let (c, pos) = self.orexpr(pos)?;
        if self.word(pos) != "?" {
            return Ok((c, pos));
        }
        let (a, p2) = self.expr(pos + 1)?;
        if p2 == pos + 1 || self.word(p2) != ":" {
            return self.err(p2, "':' missing in ternary expression");
        }
        let (b, p3) = self.expr(p2 + 1)?;
        Ok((Expr::Cond(Box::new(c), Box::new(a), Box::new(b)), p3))
    }

    fn orexpr(&mut self, mut pos: usize) -> PResult<(Expr, usize)> {
        let mut v = Vec::new();
        loop {
            let (t, p) = self.term(pos)?;
            v.push(t);
            pos = p;
            if matches!(self.word(pos), "or" | "||") {
                pos += 1;
            } else {
                break;
            }
        }
        Ok((
            if v.len() == 1 {
                v.remove(0)
            } else {
                Expr::Or(v)
            },
            pos,
        ))
    }

    fn term(&mut self, mut pos: usize) -> PResult<(Expr, usize)> {
        let mut v = Vec::new();
        let mut blank_ok = false;
        loop {
            let (f, next) = self.factor(pos, false)?;
            let Some(f) = f else { break };
            v.push(f);
            blank_ok = true;
            pos = next;
            if matches!(self.word(pos), "and" | "&&") {
                blank_ok = false;
                pos += 1;
            }
        }
        if !blank_ok {
            return self.err(pos, "missing term");
        }
        Ok((
            if v.len() == 1 {
                v.remove(0)
            } else {
                Expr::And(v)
            },
            pos,
        ))
    }

    fn brackets(&self, prim: &mut Prim, pos: usize) -> PResult<usize> {
        let mut p = pos + 1;
        let mut comb = String::new();
        while p < self.w.len() && self.word(p) != "]" {
            comb.push_str(self.word(p));
            p += 1;
        }
        if p >= self.w.len() {
            return self.err(pos, "missing ']'");
        }
        p += 1;
        let parsed = if let Some((a, b)) = comb.split_once(':') {
            parse_int(a).zip(parse_int(b))
        } else if let Some((a, b)) = comb.split_once(',') {
            parse_int(a)
                .zip(parse_int(b))
                .map(|(a, b)| (a, b.wrapping_sub(a).wrapping_add(1)))
        } else {
            parse_int(&comb).map(|a| (a, 1))
        };
        let Some((fpos, len)) = parsed else {
            return self.err(
                pos,
                "syntax error after '[', expected '[POS]' or '[POS:LEN]'",
            );
        };
        if !(1..=4).contains(&len) {
            return self.err(
                pos,
                "LEN in '[POS:LEN]' out of range, should be between 1 and 4",
            );
        }
        if fpos > 0xFFFF || (fpos & !3) != ((fpos + len - 1) & !3) {
            return self.err(
                pos,
                format!("field [{fpos}:{len}] does not fit in a single word"),
            );
        }
        if prim.ty != Ty::None {
            return self.err(pos, "type specified twice");
        }
        prim.ty = Ty::Field(FieldSpec {
            proto: prim.proto,
            bitoff: fpos * 8,
            nbits: len * 8,
        });
        Ok(p)
    }

    /// Returns `None` (and `pos`) when no factor starts at `pos`.
    fn factor(&mut self, pos: usize, negated: bool) -> PResult<(Option<Expr>, usize)> {
        let wd = self.word(pos);
        if pos >= self.w.len() || matches!(wd, ")" | "||" | "or" | "?" | ":") {
            return Ok((None, pos));
        }
        let konst = |b: bool| if b { Expr::True } else { Expr::False };
        match wd {
            "true" => return Ok((Some(konst(!negated)), pos + 1)),
            "false" => return Ok((Some(konst(negated)), pos + 1)),
            "not" | "!" => {
                let (f, next) = self.factor(pos + 1, !negated)?;
                return match f {
                    Some(f) => Ok((Some(f), next)),
                    None => self.err(pos + 1, format!("missing factor after '{wd}'")),
                };
            }
            "(" => {
                if matches!(self.word(pos + 1), ")" | "") {
                    return self.err(pos + 1, "missing expression after '('");
                }
                let (e, next) = self.expr(pos + 1)?;
                if self.word(next) != ")" || next >= self.w.len() {
                    return self.err(next, "missing ')'");
                }
                return Ok((Some(if negated { e.negate() } else { e }), next + 1));
            }
            _ => {}
        }
        self.primitive(pos, negated)
    }

    fn primitive(&mut self, first: usize, mut negated: bool) -> PResult<(Option<Expr>, usize)> {
        let mut prim = Prim::new();
        let mut pos = first;
        while pos < self.w.len() {
            let wd = self.word(pos);
            let look = lookup(wd, Ty::None, UNKNOWN).unwrap_or(Look::NotFound);
            match look {
                Look::Type(t) => {
                    if prim.ty != Ty::None {
                        return self.err(pos, "type specified twice");
                    }
                    prim.ty = t;
                    if let Ty::Field(f) = t {
                        if f.proto != UNKNOWN {
                            self.set_proto(&mut prim, f.proto, pos)?;
                        }
                    }
                }
                Look::Data(Data::Proto, v) => self.set_proto(&mut prim, v as i32, pos)?,
                Look::Data(..) => break,
                Look::Syntax | Look::NotFound => match wd {
                    "src" => {
                        let w2 = self.word(pos + 2);
                        let sd = if w2 == "dst" || w2 == "dest" {
                            match self.word(pos + 1) {
                                "and" | "&&" => {
                                    pos += 2;
                                    Sd::And
                                }
                                "or" | "||" => {
                                    pos += 2;
                                    Sd::Or
                                }
                                _ => Sd::Src,
                            }
                        } else {
                            Sd::Src
                        };
                        self.set_sd(&mut prim, sd, pos)?;
                    }
                    "dst" | "dest" => self.set_sd(&mut prim, Sd::Dst, pos)?,
                    "ip" => {}
                    "ether" => prim.ether = true,
                    "not" | "!" => negated = !negated,
                    _ => break,
                },
            }
            pos += 1;
        }
        if pos != first {
            self.prev = Prim::new();
        }
        let wd_at = |p: &Self, i: usize| if i + 1 >= p.w.len() { "" } else { p.word(i) };
        let mut wd = wd_at(self, pos);
        if wd == "[" && pos > first && prim.ty == Ty::None {
            pos = self.brackets(&mut prim, pos)?;
            wd = wd_at(self, pos);
        }
        let mut provided_mask = 0u32;
        if wd == "&" && pos + 1 < self.w.len() {
            if let Some(m) = parse_int(self.word(pos + 1)) {
                if m == 0 {
                    return self.err(pos + 1, "bitmask of 0 ignored");
                }
                provided_mask = m;
                pos += 2;
                wd = wd_at(self, pos);
            }
        }
        pos += 1;
        match wd {
            "=" | "==" => {}
            "!=" => prim.neg = true,
            ">" => prim.op = Op::Gt,
            "<" => prim.op = Op::Lt,
            ">=" => {
                prim.op = Op::Lt;
                prim.neg = true;
            }
            "<=" => {
                prim.op = Op::Gt;
                prim.neg = true;
            }
            _ => pos -= 1,
        }
        if pos < self.w.len() {
            let dw = self.word(pos);
            let dpos = pos;
            pos += 1;
            match lookup(dw, prim.ty, prim.proto) {
                Err(e) => return self.err(dpos, e),
                Ok(Look::Data(d, v)) => {
                    prim.data = d;
                    prim.u = v;
                }
                Ok(_) => {
                    if let Some(v) = parse_int(dw) {
                        prim.data = Data::Int;
                        prim.u = v;
                    } else if let Some(a) = prim.ether.then(|| parse_mac(dw)).flatten() {
                        prim.data = Data::Ether;
                        prim.mac = a;
                    } else if let Some(a) = parse_ip(dw) {
                        prim.u = a;
                        if self.word(pos) == "mask" && pos + 1 < self.w.len() {
                            match parse_ip(self.word(pos + 1)) {
                                Some(m) => {
                                    prim.mask = m;
                                    prim.data = Data::Net;
                                    pos += 2;
                                }
                                None => prim.data = Data::Host,
                            }
                        } else {
                            prim.data = Data::Host;
                        }
                    } else if let Some((a, m)) = parse_prefix(dw) {
                        prim.u = a;
                        prim.mask = m;
                        prim.data = Data::Net;
                    } else {
                        if prim.op != Op::Eq || prim.neg {
                            return self.err(dpos, format!("dangling operator near '{dw}'"));
                        }
                        pos -= 1;
                    }
                }
            }
        }
        if pos == first {
            return self.err(pos, format!("empty term near '{}'", self.word(pos)));
        }
        let e = self.check(&mut prim, provided_mask, first)?;
        self.prev = prim;
        Ok((Some(if negated { e.negate() } else { e }), pos))
    }

    fn set_proto(&self, prim: &mut Prim, p: i32, pos: usize) -> PResult<()> {
        if prim.proto != UNKNOWN && prim.proto != p {
            return self.err(pos, "transport protocol specified twice");
        }
        prim.proto = p;
        Ok(())
    }

    fn set_sd(&self, prim: &mut Prim, sd: Sd, pos: usize) -> PResult<()> {
        if prim.sd != Sd::None {
            return self.err(pos, "'src' or 'dst' specified twice");
        }
        prim.sd = sd;
        Ok(())
    }

    /// Click's `set_mask`: validates the value against the field width.
    fn set_mask(&self, p: &mut Prim, full: u32, provided: u32, at: usize) -> PResult<()> {
        let this = if provided != 0 { provided } else { full };
        if this & full != this {
            return self.err(
                at,
                format!("mask 0x{provided:X} out of range (0-0x{full:X})"),
            );
        }
        if p.op != Op::Eq {
            let always =
                (p.op == Op::Lt && (p.u == 0 || p.u > this)) || (p.op == Op::Gt && p.u >= this);
            if always {
                let will_be = if p.op == Op::Lt && p.u > this {
                    !p.neg
                } else {
                    p.neg
                };
                p.u = 0;
                p.mask = 0;
                p.neg = !will_be;
                p.op = Op::Eq;
            } else {
                p.mask = this;
            }
            return Ok(());
        }
        if p.u > full {
            return self.err(at, format!("value {} out of range (0-{full})", p.u));
        }
        p.mask = this;
        Ok(())
    }

    /// Click's `Primitive::check` followed by `add_exprs`.
    fn check(&self, p: &mut Prim, provided: u32, at: usize) -> PResult<Expr> {
        let prev = self.prev;
        let old_sd = p.sd;
        if p.ty == Ty::None {
            let mut data = p.data;
            loop {
                match data {
                    Data::Host | Data::Net | Data::TcpOpt | Data::Ether => {
                        p.ty = match data {
                            Data::Net => Ty::Net,
                            Data::TcpOpt => Ty::TcpOpt,
                            _ => Ty::Host,
                        };
                        if p.sd == Sd::None {
                            p.sd = prev.sd;
                        }
                    }
                    Data::Proto => p.ty = Ty::Proto,
                    Data::Port => {
                        p.ty = Ty::Port;
                        if p.sd == Sd::None {
                            p.sd = prev.sd;
                        }
                        if p.proto == UNKNOWN {
                            p.proto = prev.proto;
                        }
                    }
                    Data::Int => {
                        data = match prev.ty {
                            Ty::Field(f) => Data::Field(f),
                            Ty::Proto => Data::Proto,
                            Ty::Port => Data::Port,
                            _ => return self.err(at, "specify header field or 'port'"),
                        };
                        if p.ether {
                            return self.err(at, "specify header field or 'port'");
                        }
                        continue;
                    }
                    Data::None => {
                        if p.proto != UNKNOWN {
                            p.ty = Ty::Proto;
                        } else {
                            return self.err(at, "partial directive");
                        }
                    }
                    Data::Field(f) => {
                        p.ty = Ty::Field(f);
                        if f.proto != UNKNOWN && p.proto == UNKNOWN {
                            p.proto = f.proto;
                        }
                    }
                }
                break;
            }
            if p.data == Data::Int && data != Data::Int {
                p.data = data;
            }
        }
        let mut proto_cmp = None;
        match p.ty {
            Ty::Host if p.ether => {
                if p.data != Data::Ether {
                    return self.err(at, "Ethernet address missing in 'ether host' directive");
                }
                if p.op != Op::Eq {
                    return self.err(at, "can't use relational operators with 'ether host'");
                }
            }
            Ty::Host => {
                if p.data != Data::Host {
                    return self.err(at, "IP address missing in 'host' directive");
                }
                if p.op != Op::Eq {
                    return self.err(at, "can't use relational operators with 'host'");
                }
                p.mask = if provided != 0 { provided } else { u32::MAX };
            }
            Ty::Net => {
                if p.data != Data::Net {
                    return self.err(at, "IP prefix missing in 'net' directive");
                }
                if p.op != Op::Eq {
                    return self.err(at, "can't use relational operators with 'net'");
                }
                p.ty = Ty::Host;
                if provided != 0 {
                    p.mask = provided;
                }
            }
            Ty::Proto => {
                if matches!(p.data, Data::Int | Data::Proto) {
                    if p.proto != UNKNOWN && p.proto != p.u as i32 {
                        return self.err(at, "transport protocol specified twice");
                    }
                    p.data = Data::None;
                } else {
                    p.u = p.proto as u32;
                }
                let u = p.u as i32;
                p.proto = UNKNOWN;
                if p.data != Data::None || u == UNKNOWN {
                    return self.err(at, "IP protocol missing in 'proto' directive");
                }
                if u >= 256 {
                    if p.op != Op::Eq || provided != 0 {
                        return self.err(
                            at,
                            format!(
                                "can't use relational operators or masks with '{}'",
                                proto_word(u)
                            ),
                        );
                    }
                    p.mask = 0xFF;
                } else {
                    self.set_mask(p, 0xFF, provided, at)?;
                    proto_cmp = Some(self.compare(p, Base::Ip, 8, 16, Some(Dim::Proto)));
                }
                if p.op == Op::Eq && p.mask == 0xFF && !p.neg {
                    p.proto = u;
                    if u < 256 {
                        proto_cmp = None;
                    }
                }
            }
            Ty::Port => {
                if p.data == Data::Int {
                    p.data = Data::Port;
                }
                if p.data != Data::Port {
                    return self.err(at, "port number missing in 'port' directive");
                }
                if p.proto == UNKNOWN {
                    p.proto = TCP_OR_UDP;
                } else if !matches!(p.proto, 6 | 17 | TCP_OR_UDP) {
                    return self.err(at, format!("bad protocol {} for 'port' directive", p.proto));
                }
                self.set_mask(p, 0xFFFF, provided, at)?;
            }
            Ty::TcpOpt => {
                if p.data == Data::Int {
                    p.data = Data::TcpOpt;
                }
                if p.data != Data::TcpOpt {
                    return self.err(at, "TCP options missing in 'tcp opt' directive");
                }
                if p.proto == UNKNOWN {
                    p.proto = 6;
                } else if p.proto != 6 {
                    return self.err(
                        at,
                        format!("bad protocol {} for 'tcp opt' directive", p.proto),
                    );
                }
                if p.op != Op::Eq || p.neg || provided != 0 {
                    return self.err(at, "can't use relational operators or masks with 'tcp opt'");
                }
                if p.u > 255 {
                    return self.err(at, format!("value {} out of range", p.u));
                }
                p.mask = p.u;
            }
            Ty::Ect => {
                if !matches!(p.data, Data::None | Data::Int) {
                    return self.err(at, "weird data given to 'ip ect' directive");
                }
                if p.data == Data::None {
                    p.u = 0;
                    p.neg = true;
                }
                self.set_mask(p, 3, provided, at)?;
                p.ty = Ty::Field(F_TOS);
            }
            Ty::Ce => {
                if p.data != Data::None {
                    return self.err(at, "'ip ce' directive takes no data");
                }
                p.mask = 3;
                p.u = 3;
                p.ty = Ty::Field(F_TOS);
            }
            Ty::Frag | Ty::Unfrag => {
                if p.data != Data::None {
                    return self.err(at, format!("'{}' directive takes no data", ty_name(p.ty)));
                }
                if p.ty == Ty::Unfrag {
                    p.neg = true;
                    p.ty = Ty::Frag;
                }
            }
            Ty::Field(f) => {
                if p.data != Data::Int && p.data != Data::Field(f) {
                    return self.err(
                        at,
                        format!("value missing in '{}' directive", ty_name(p.ty)),
                    );
                }
                let full = if f.nbits == 32 {
                    u32::MAX
                } else {
                    (1u32 << f.nbits) - 1
                };
                self.set_mask(p, full, provided, at)?;
            }
            Ty::None => return self.err(at, "partial directive"),
        }
        if matches!(p.ty, Ty::Host | Ty::Port) {
            if p.sd == Sd::None {
                p.sd = Sd::Or;
            }
        } else if old_sd != Sd::None {
            // Click warns that 'src' or 'dst' is meaningless here.
        }
        Ok(self.build(p, proto_cmp))
    }

    /// A comparison of a field against the primitive's value and operator;
    /// negated with `!=`, `<=`, `>=`. Uses a tree dimension when the mask
    /// covers the whole field.
    fn compare(&self, p: &Prim, base: Base, off: u16, shift: u8, dim: Option<Dim>) -> Expr {
        let (lo, hi) = match p.op {
            Op::Eq => (p.u & p.mask, p.u & p.mask),
            Op::Gt => (p.u.saturating_add(1), p.mask),
            Op::Lt => (0, p.u.saturating_sub(1)),
        };
        let full = match (dim, shift) {
            (Some(Dim::Proto), _) => 0xFF,
            (Some(Dim::Src | Dim::Dst), _) => u32::MAX,
            (Some(_), _) => 0xFFFF,
            (None, _) => 0,
        };
        let a = match dim {
            Some(dim) if p.mask == full => Atom::Range { dim, lo, hi },
            _ => Atom::Field {
                base,
                off,
                shift,
                mask: p.mask,
                lo,
                hi,
            },
        };
        let e = if p.mask == 0 && p.op == Op::Eq {
            // Click's "relation is always true/false": a test of no bits.
            Expr::True
        } else {
            Expr::Atom(a)
        };
        if p.neg {
            e.negate()
        } else {
            e
        }
    }

    fn build(&self, p: &Prim, proto_cmp: Option<Expr>) -> Expr {
        let mut parts = Vec::new();
        let transp_field = matches!(p.ty, Ty::Field(f) if f.proto != UNKNOWN);
        if matches!(p.ty, Ty::Port | Ty::TcpOpt) || transp_field {
            parts.push(Expr::Atom(Atom::Field {
                base: Base::Ip,
                off: 4,
                shift: 0,
                mask: 0x1FFF,
                lo: 0,
                hi: 0,
            }));
        }
        match p.proto {
            UNKNOWN | TRANSP => {}
            TCP_OR_UDP => parts.push(Expr::Or(vec![
                Expr::Atom(Atom::Range {
                    dim: Dim::Proto,
                    lo: 6,
                    hi: 6,
                }),
                Expr::Atom(Atom::Range {
                    dim: Dim::Proto,
                    lo: 17,
                    hi: 17,
                }),
            ])),
            n if (0..256).contains(&n) => parts.push(Expr::Atom(Atom::Range {
                dim: Dim::Proto,
                lo: n as u32,
                hi: n as u32,
            })),
            _ => {}
        }
        let sds = |sd: Sd| -> (bool, bool, bool) {
            // (test src, test dst, combine with or)
            match sd {
                Sd::Src => (true, false, false),
                Sd::Dst => (false, true, false),
                Sd::And => (true, true, false),
                Sd::Or | Sd::None => (true, true, true),
            }
        };
        let combine = |v: Vec<Expr>, or: bool, neg: bool| -> Expr {
            let e = if v.len() == 1 {
                v.into_iter().next().unwrap_or(Expr::True)
            } else if or {
                Expr::Or(v)
            } else {
                Expr::And(v)
            };
            if neg {
                e.negate()
            } else {
                e
            }
        };
        match p.ty {
            Ty::Host if p.ether => {
                let (s, d, or) = sds(p.sd);
                let mut v = Vec::new();
                if s {
                    v.push(Expr::Atom(Atom::Ether {
                        src: true,
                        addr: p.mac,
                    }));
                }
                if d {
                    v.push(Expr::Atom(Atom::Ether {
                        src: false,
                        addr: p.mac,
                    }));
                }
                parts.push(combine(v, or, p.neg));
            }
            Ty::Host => {
                let (s, d, or) = sds(p.sd);
                let prefix = p.mask.leading_ones() + p.mask.trailing_zeros() == 32;
                let one = |dim: Dim, off: u16| {
                    let v = p.u & p.mask;
                    Expr::Atom(if prefix {
                        Atom::Range {
                            dim,
                            lo: v,
                            hi: v | !p.mask,
                        }
                    } else {
                        Atom::Field {
                            base: Base::Ip,
                            off,
                            shift: 0,
                            mask: p.mask,
                            lo: v,
                            hi: v,
                        }
                    })
                };
                let mut v = Vec::new();
                if s {
                    v.push(one(Dim::Src, 12));
                }
                if d {
                    v.push(one(Dim::Dst, 16));
                }
                parts.push(combine(v, or, p.neg));
            }
            Ty::Proto => {
                if let Some(c) = proto_cmp {
                    parts.push(c);
                }
            }
            Ty::Frag => {
                let t = Expr::Atom(Atom::Field {
                    base: Base::Ip,
                    off: 4,
                    shift: 0,
                    mask: 0x3FFF,
                    lo: 0,
                    hi: 0,
                });
                parts.push(if p.neg { t } else { t.negate() });
            }
            Ty::Port => {
                let (s, d, or) = sds(p.sd);
                let q = Prim { neg: false, ..*p };
                let mut v = Vec::new();
                if s {
                    v.push(self.compare(&q, Base::Transp, 0, 16, Some(Dim::Sport)));
                }
                if d {
                    v.push(self.compare(&q, Base::Transp, 0, 0, Some(Dim::Dport)));
                }
                parts.push(combine(v, or, p.neg));
            }
            Ty::TcpOpt => parts.push(Expr::Atom(Atom::Field {
                base: Base::Transp,
                off: 12,
                shift: 16,
                mask: p.mask,
                lo: p.u,
                hi: p.u,
            })),
            Ty::Field(f) => {
                let base = if f.proto != UNKNOWN {
                    Base::Transp
                } else {
                    Base::Ip
                };
                let word_off = ((f.bitoff >> 3) & !3) as u16;
                let bit = f.bitoff & 31;
                let shift = (32 - (bit + f.nbits)) as u8;
                parts.push(self.compare(p, base, word_off, shift, None));
            }
            _ => {}
        }
        match parts.len() {
            0 => Expr::True,
            1 => parts.pop().unwrap_or(Expr::True),
            _ => Expr::And(parts),
        }
    }
}

/// Parse one IPClassifier pattern (without IPFilter's action word).
/// `-`, `any` and `all` alone match everything.
pub fn parse_pattern(text: &str) -> Result<Expr, ParseError> {
    let w = words(text);
    if w.is_empty() {
        return Err(ParseError {
            pos: 0,
            msg: "empty pattern".into(),
        });
    }
    if w.len() == 1 && matches!(w[0].1, "-" | "any" | "all") {
        return Ok(Expr::True);
    }
    let mut p = Parser {
        w,
        end: text.len(),
        prev: Prim::new(),
    };
    let (e, pos) = p.expr(0)?;
    if pos < p.w.len() {
        return p.err(
            pos,
            format!("garbage after expression at '{}'", p.word(pos)),
        );
    }
    Ok(e)
}

/// Split an IPFilter rule into its action word and the byte offset of the
/// pattern that follows it.
pub fn split_action(text: &str) -> Option<(&str, usize)> {
    let w = words(text);
    let (pos, first) = *w.first()?;
    let rest = pos + first.len();
    Some((first, rest))
}

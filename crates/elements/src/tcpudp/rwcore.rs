//! The mapping machinery shared by IPRewriter, TCPRewriter, UDPRewriter and
//! IPAddrRewriter (Click's `IPRewriterBase`, `IPRewriterFlow`,
//! `IPRewriterPattern`): input specifications, patterns, the flow table,
//! packet rewriting with incremental checksums, timeouts and handlers.
//!
//! The flow table is one open-addressing hash table (linear probing,
//! backward-shift deletion, no tombstones) holding both directions of
//! every flow: a slot stores `flow * 2 + direction` and its hash, and the
//! flows live in a slab vector with a free list. Nothing is allocated per
//! packet; a new flow reuses a freed slab entry, and the vectors only grow
//! when the number of flows exceeds every earlier count.

use linerate_runtime::{Batch, Ctx, Element, HandlerSpec, InitCtx, Packet};
use linerate_wire::checksum::{update_u16, update_u32};
use linerate_wire::ipv4::Packet as Ipv4Packet;
use std::any::Any;
use std::net::Ipv4Addr;

const NS: u64 = 1_000_000_000;
const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;
const PROTO_DCCP: u8 = 33;

/// Which Click rewriter an element is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// IPRewriter: TCP and UDP, separate tables (keys include the protocol).
    Ip,
    /// TCPRewriter: TCP only.
    Tcp,
    /// UDPRewriter: TCP, UDP and DCCP, all treated as UDP flows.
    Udp,
    /// IPAddrRewriter: source addresses only, any protocol.
    Addr,
}

/// A flow identifier: Click's `IPFlowID`, host byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct FlowId {
    pub saddr: u32,
    pub daddr: u32,
    pub sport: u16,
    pub dport: u16,
}

impl FlowId {
    fn reverse(self) -> FlowId {
        FlowId {
            saddr: self.daddr,
            daddr: self.saddr,
            sport: self.dport,
            dport: self.sport,
        }
    }

    /// Click's unparse: `(SA, SP, DA, DP)`.
    fn unparse(&self) -> String {
        format!(
            "({}, {}, {}, {})",
            Ipv4Addr::from(self.saddr),
            self.sport,
            Ipv4Addr::from(self.daddr),
            self.dport
        )
    }
}

/// Flow timeouts in nanoseconds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    /// TCP without data in both directions (TCP_NODATA_TIMEOUT).
    pub tcp_nodata: u64,
    /// TCP with data both ways (TCP_TIMEOUT).
    pub tcp_data: u64,
    /// TCP closed by FIN both ways or RST (TCP_DONE_TIMEOUT).
    pub tcp_done: u64,
    /// TCP_GUARANTEE.
    pub tcp_guarantee: u64,
    /// UDP (and IPAddrRewriter) flows (UDP_TIMEOUT / TIMEOUT).
    pub udp: u64,
    /// UDP streaming flows (UDP_STREAMING_TIMEOUT).
    pub udp_streaming: u64,
    /// UDP_GUARANTEE / GUARANTEE.
    pub udp_guarantee: u64,
}

/// Click's defaults (seconds): TCP 300 nodata, 86400 data, 240 done,
/// 5 guarantee; UDP 300, guarantee 5.
pub(crate) const DEFAULT_TIMEOUTS: Timeouts = Timeouts {
    tcp_nodata: 300 * NS,
    tcp_data: 86400 * NS,
    tcp_done: 240 * NS,
    tcp_guarantee: 5 * NS,
    udp: 300 * NS,
    udp_streaming: 300 * NS,
    udp_guarantee: 5 * NS,
};

// TCP state bits (Click's TCPFlow).
const S_FORWARD_DONE: u8 = 1;
const S_BOTH_DONE: u8 = 3;
const S_FORWARD_DATA: u8 = 4;
const S_BOTH_DATA: u8 = 12;

/// One flow: both directions of a mapping.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Flow {
    /// Entry keys: `[0]` the original flow, `[1]` the reverse of the
    /// rewritten flow (what replies look like).
    ids: [FlowId; 2],
    /// Protocol part of the key (0 when the element ignores it).
    key_proto: u8,
    /// TCP-style state tracking and timeouts (else UDP-style).
    tcp: bool,
    /// Output for each direction.
    outputs: [u16; 2],
    /// The input whose specification created the flow.
    input: u16,
    /// Click's `_tflags`: TCP done/data bits, or the UDP packet counter.
    state: u8,
    /// REPLY_ANNO value for reply packets.
    reply_anno: u8,
    /// Time of the last packet.
    last_ns: u64,
    /// Packet sequence number of the last packet: orders flows touched at
    /// the same time (least recently used first).
    touch: u64,
    live: bool,
}

impl Flow {
    fn guarantee(&self, t: &Timeouts) -> u64 {
        if self.tcp {
            t.tcp_guarantee
        } else {
            t.udp_guarantee
        }
    }

    fn timeout(&self, t: &Timeouts) -> u64 {
        if self.tcp {
            if self.state & S_BOTH_DONE == S_BOTH_DONE {
                t.tcp_done
            } else if self.state & S_BOTH_DATA == S_BOTH_DATA {
                t.tcp_data
            } else {
                t.tcp_nodata
            }
        } else if self.state > 6 {
            t.udp_streaming
        } else {
            t.udp
        }
    }

    /// Whether the flow is still within its guarantee at `now`.
    fn guaranteed(&self, t: &Timeouts, now: u64) -> bool {
        let g = self.guarantee(t);
        g != 0 && now < self.last_ns.saturating_add(g)
    }

    /// When the flow times out (ignoring any guarantee).
    fn expiry(&self, t: &Timeouts) -> u64 {
        self.last_ns.saturating_add(self.timeout(t))
    }

    /// Click's displayed expiry: the guarantee while it lasts, then the
    /// timeout.
    fn shown_expiry(&self, t: &Timeouts, now: u64) -> u64 {
        if self.guaranteed(t, now) {
            self.last_ns + self.guarantee(t)
        } else {
            self.expiry(t)
        }
    }
}

/// The flow table: a slab of flows and one hash table over both
/// directions' keys.
#[derive(Debug, Default)]
pub(crate) struct FlowTable {
    flows: Vec<Flow>,
    free: Vec<u32>,
    live: usize,
    /// `entry + 1` (`entry = flow * 2 + direction`), 0 for empty.
    slots: Vec<u32>,
    hashes: Vec<u32>,
}

#[inline]
fn hash_key(id: &FlowId, proto: u8) -> u32 {
    let a = (u64::from(id.saddr) << 32) | u64::from(id.daddr);
    let b = (u64::from(id.sport) << 24) | (u64::from(id.dport) << 8) | u64::from(proto);
    let mut h = a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    h ^= h >> 29;
    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    (h ^ (h >> 32)) as u32
}

impl FlowTable {
    fn with_capacity(n: usize) -> Self {
        let size = (n * 4).next_power_of_two().max(64);
        FlowTable {
            flows: Vec::with_capacity(n),
            free: Vec::new(),
            live: 0,
            slots: vec![0; size],
            hashes: vec![0; size],
        }
    }

    /// Number of live flows.
    pub fn len(&self) -> usize {
        self.live
    }

    /// The live flows in slab order, with their indices.
    fn iter(&self) -> impl Iterator<Item = (u32, &Flow)> {
        self.flows
            .iter()
            .enumerate()
            .filter(|(_, f)| f.live)
            .map(|(i, f)| (i as u32, f))
    }

    /// The entry (`flow * 2 + direction`) with key `(id, proto)`.
    #[inline]
    fn find(&self, id: &FlowId, proto: u8) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let h = hash_key(id, proto);
        let mut i = h as usize & mask;
        loop {
            let s = self.slots[i];
            if s == 0 {
                return None;
            }
            if self.hashes[i] == h {
                let e = s - 1;
                let f = &self.flows[(e >> 1) as usize];
                if f.key_proto == proto && f.ids[(e & 1) as usize] == *id {
                    return Some(e);
                }
            }
            i = (i + 1) & mask;
        }
    }

    fn insert_entry(&mut self, e: u32) {
        let f = &self.flows[(e >> 1) as usize];
        let h = hash_key(&f.ids[(e & 1) as usize], f.key_proto);
        let mask = self.slots.len() - 1;
        let mut i = h as usize & mask;
        while self.slots[i] != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = e + 1;
        self.hashes[i] = h;
    }

    fn remove_entry(&mut self, e: u32) {
        let mask = self.slots.len() - 1;
        let f = &self.flows[(e >> 1) as usize];
        let h = hash_key(&f.ids[(e & 1) as usize], f.key_proto);
        let mut i = h as usize & mask;
        loop {
            match self.slots[i] {
                0 => return,
                s if s == e + 1 => break,
                _ => i = (i + 1) & mask,
            }
        }
        // Backward-shift deletion.
        loop {
            self.slots[i] = 0;
            let mut j = i;
            loop {
                j = (j + 1) & mask;
                if self.slots[j] == 0 {
                    return;
                }
                let home = self.hashes[j] as usize & mask;
                let movable = if j > i {
                    home <= i || home > j
                } else {
                    home <= i && home > j
                };
                if movable {
                    self.slots[i] = self.slots[j];
                    self.hashes[i] = self.hashes[j];
                    i = j;
                    break;
                }
            }
        }
    }

    fn grow_if_needed(&mut self) {
        // Keep the load (two entries per flow) at most one half.
        if (self.live + 1) * 4 <= self.slots.len() {
            return;
        }
        let size = self.slots.len() * 2;
        self.slots = vec![0; size];
        self.hashes = vec![0; size];
        let live: Vec<u32> = self.iter().map(|(i, _)| i).collect();
        for i in live {
            self.insert_entry(i * 2);
            self.insert_entry(i * 2 + 1);
        }
    }

    /// Add `flow`, whose keys must not be in the table. Returns the flow
    /// index.
    fn add(&mut self, flow: Flow) -> u32 {
        self.grow_if_needed();
        let idx = match self.free.pop() {
            Some(i) => {
                self.flows[i as usize] = flow;
                i
            }
            None => {
                self.flows.push(flow);
                self.flows.len() as u32 - 1
            }
        };
        self.flows[idx as usize].live = true;
        self.live += 1;
        self.insert_entry(idx * 2);
        self.insert_entry(idx * 2 + 1);
        idx
    }

    /// Remove flow `idx` (both directions).
    fn destroy(&mut self, idx: u32) {
        if !self.flows[idx as usize].live {
            return;
        }
        self.remove_entry(idx * 2);
        self.remove_entry(idx * 2 + 1);
        self.flows[idx as usize].live = false;
        self.free.push(idx);
        self.live -= 1;
    }
}

/// A rewriting pattern: Click's `SADDR SPORT DADDR DPORT`.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    saddr: u32,
    sport: u16,
    daddr: u32,
    dport: u16,
    variation_top: u32,
    is_napt: bool,
    sequential: bool,
    same_first: bool,
    next_variation: u32,
}

/// Strip a trailing `#` (sequential) or `?` (random, source not
/// preferred) from a variation.
fn variation_suffix<'a>(s: &'a str, sequential: &mut bool, same_first: &mut bool) -> &'a str {
    if let Some(r) = s.strip_suffix('#') {
        *sequential = true;
        *same_first = false;
        r
    } else if let Some(r) = s.strip_suffix('?') {
        *same_first = false;
        r
    } else {
        s
    }
}

fn parse_addr(s: &str) -> Option<u32> {
    <Ipv4Addr as linerate_args::ArgValue>::parse_arg(s)
        .ok()
        .map(u32::from)
}

fn parse_int(s: &str) -> Option<i64> {
    <i64 as linerate_args::ArgValue>::parse_arg(s).ok()
}

impl Pattern {
    /// Click's `IPRewriterPattern::parse` on 2 to 4 words.
    fn parse(words: &[&str]) -> Result<Pattern, String> {
        if words.len() == 1 {
            return Err(format!("no such pattern '{}'", words[0]));
        }
        if words.len() < 2 || words.len() > 4 {
            return Err("syntax error".into());
        }
        let mut p = Pattern {
            saddr: 0,
            sport: 0,
            daddr: 0,
            dport: 0,
            variation_top: 0,
            is_napt: words.len() >= 3,
            sequential: false,
            same_first: true,
            next_variation: 0,
        };
        // Source address: `-`, an address, `A-B` or a prefix.
        let w = words[0];
        if w != "-" {
            if let Some(a) = parse_addr(w) {
                p.saddr = a;
            } else {
                let (mut seq, mut same) = (false, true);
                let body = variation_suffix(w, &mut seq, &mut same);
                let (a, var) = if let Some((lo, hi)) = body.split_once('-') {
                    match (parse_addr(lo), parse_addr(hi)) {
                        (Some(lo), Some(hi)) if hi >= lo => (lo, hi - lo),
                        _ => return Err("bad source address".into()),
                    }
                } else {
                    let pre: linerate_args::Ipv4Prefix =
                        linerate_args::ArgValue::parse_arg(body)
                            .map_err(|_| "bad source address".to_string())?;
                    let mask = super::super::iproute::routetable::prefix_mask(pre.len);
                    let addr = u32::from(pre.addr);
                    if addr == 0 || mask == 0 {
                        return Err("bad source address".into());
                    }
                    match pre.len {
                        32 => (addr, 0),
                        31 => (addr & mask, 1),
                        _ => ((addr & mask) | 1, !mask - 2),
                    }
                };
                p.saddr = a;
                if !p.is_napt {
                    p.variation_top = var;
                    p.sequential = seq;
                    p.same_first = same;
                }
            }
        }
        let mut i = 0;
        if words.len() >= 3 {
            let si = if words.len() == 3 { 2 } else { 1 };
            let w = words[si];
            if w != "-" {
                let (mut seq, mut same) = (false, true);
                match parse_int(w) {
                    Some(n) if (1..65536).contains(&n) => p.sport = n as u16,
                    _ => {
                        let body = variation_suffix(w, &mut seq, &mut same);
                        let (lo, hi) = body.split_once('-').unwrap_or((body, ""));
                        match (parse_int(lo), parse_int(hi)) {
                            (Some(lo), Some(hi)) if lo >= 0 && hi >= lo && hi < 65536 => {
                                p.sport = lo as u16;
                                p.variation_top = (hi - lo) as u32;
                                p.sequential = seq;
                                p.same_first = same;
                            }
                            _ => return Err("bad source port".into()),
                        }
                    }
                }
            }
            i = if words.len() == 3 { 0 } else { 1 };
        }
        i += 1;
        let w = words[i];
        if w != "-" {
            p.daddr = parse_addr(w).ok_or("bad destination address")?;
        }
        if words.len() == 4 {
            let w = words[3];
            if w != "-" {
                match parse_int(w) {
                    Some(n) if (1..65536).contains(&n) => p.dport = n as u16,
                    _ => return Err("bad destination port".into()),
                }
            }
        }
        Ok(p)
    }

    /// Click's pattern unparse (the `patterns` handler).
    fn unparse(&self) -> String {
        let mut s = if !self.is_napt && self.variation_top != 0 {
            format!(
                "{}-{}",
                Ipv4Addr::from(self.saddr),
                Ipv4Addr::from(self.saddr.wrapping_add(self.variation_top))
            )
        } else if self.saddr != 0 {
            Ipv4Addr::from(self.saddr).to_string()
        } else {
            "-".to_string()
        };
        if self.is_napt {
            if self.sport == 0 {
                s.push_str(" -");
            } else if self.variation_top != 0 {
                s.push_str(&format!(
                    " {}-{}",
                    self.sport,
                    u32::from(self.sport) + self.variation_top
                ));
            } else {
                s.push_str(&format!(" {}", self.sport));
            }
        }
        if self.daddr != 0 {
            s.push_str(&format!(" {}", Ipv4Addr::from(self.daddr)));
        } else {
            s.push_str(" -");
        }
        if self.is_napt {
            if self.dport == 0 {
                s.push_str(" -");
            } else {
                s.push_str(&format!(" {}", self.dport));
            }
        }
        s
    }

    /// Click's `rewrite_flowid`: the rewritten flow, choosing a free port
    /// (or address) from the variation range, or `None` if none is free.
    fn rewrite(
        &mut self,
        id: &FlowId,
        proto: u8,
        table: &FlowTable,
        rng: &mut u64,
    ) -> Option<FlowId> {
        let mut rw = *id;
        if self.saddr != 0 {
            rw.saddr = self.saddr;
        }
        if self.sport != 0 {
            rw.sport = self.sport;
        }
        if self.daddr != 0 {
            rw.daddr = self.daddr;
        }
        if self.dport != 0 {
            rw.dport = self.dport;
        }
        if self.variation_top == 0 {
            return Some(rw);
        }
        let top = self.variation_top;
        let base = if self.is_napt {
            u32::from(self.sport)
        } else {
            self.saddr
        };
        let mut lookup = rw.reverse();
        let set = |lookup: &mut FlowId, val: u32| {
            if self.is_napt {
                lookup.dport = base.wrapping_add(val) as u16;
            } else {
                lookup.daddr = base.wrapping_add(val);
            }
        };
        let mut found = None;
        if self.same_first && self.is_napt {
            let val = u32::from(id.sport).wrapping_sub(base);
            if val <= top {
                set(&mut lookup, val);
                if table.find(&lookup, proto).is_none() {
                    found = Some(val);
                }
            }
        }
        if found.is_none() {
            let mut val = if self.sequential {
                if self.next_variation > top {
                    0
                } else {
                    self.next_variation
                }
            } else {
                *rng ^= *rng << 13;
                *rng ^= *rng >> 7;
                *rng ^= *rng << 17;
                (*rng % (u64::from(top) + 1)) as u32
            };
            for _ in 0..=u64::from(top) {
                set(&mut lookup, val);
                if table.find(&lookup, proto).is_none() {
                    found = Some(val);
                    break;
                }
                val = if val == top { 0 } else { val + 1 };
            }
        }
        let val = found?;
        if self.is_napt {
            rw.sport = lookup.dport;
        } else {
            rw.saddr = lookup.daddr;
        }
        self.next_variation = val.wrapping_add(1);
        Some(rw)
    }
}

/// What an input does with packets of unknown flows.
#[derive(Debug, Clone)]
pub(crate) enum InputSpec {
    Drop,
    Pass(usize),
    Keep(usize, usize),
    Pattern(Box<Pattern>, usize, usize),
}

/// Click's `parse_input_spec`.
pub(crate) fn parse_input_spec(
    s: &str,
    input: usize,
    noutputs: usize,
) -> Result<InputSpec, String> {
    let pre = |m: &str| format!("input spec {input}: {m}");
    let mut words: Vec<&str> = s.split_ascii_whitespace().collect();
    if words.is_empty() {
        return Err(pre("empty argument"));
    }
    let word = words.remove(0);
    let port = |w: &str| parse_int(w).filter(|&n| (0..=i64::from(i32::MAX)).contains(&n));
    let ports = |ws: &[&str]| -> Result<(usize, usize), String> {
        let f = ws
            .first()
            .filter(|_| ws.len() == 2)
            .and_then(|w| port(w))
            .ok_or_else(|| pre("bad forward port"))?;
        let r = port(ws[1]).ok_or_else(|| pre("bad reply port"))?;
        if f as usize >= noutputs || r as usize >= noutputs {
            return Err(pre("output port out of range"));
        }
        Ok((f as usize, r as usize))
    };
    match word {
        "pass" | "passthrough" | "nochange" => {
            let out = match words.as_slice() {
                [] => 0,
                [w] => {
                    parse_int(w).ok_or_else(|| pre("syntax error, expected 'nochange [OUTPUT]'"))?
                }
                _ => return Err(pre("syntax error, expected 'nochange [OUTPUT]'")),
            };
            if out < 0 || out as usize >= noutputs {
                return Err(pre("output port out of range"));
            }
            Ok(InputSpec::Pass(out as usize))
        }
        "keep" => {
            let (f, r) = ports(&words)?;
            Ok(InputSpec::Keep(f, r))
        }
        "drop" | "discard" => {
            if words.is_empty() {
                Ok(InputSpec::Drop)
            } else {
                Err(pre(&format!("syntax error, expected '{word}'")))
            }
        }
        "pattern" | "xpattern" => {
            if words.len() <= 2 {
                return Err(pre("syntax error"));
            }
            let (pw, port_words) = words.split_at(words.len() - 2);
            let p = Pattern::parse(pw).map_err(|e| pre(&e))?;
            let (f, r) = ports(port_words)?;
            Ok(InputSpec::Pattern(Box::new(p), f, r))
        }
        _ => Err(pre("unknown specification")),
    }
}

/// Per-input counters (Click's `IPRewriterInput::count`, `failures`).
#[derive(Debug, Clone, Copy, Default)]
struct InputCounts {
    count: u64,
    failures: u64,
}

/// Everything a rewriter element is configured with.
pub(crate) struct Config {
    pub kind: Kind,
    pub specs: Vec<InputSpec>,
    pub timeouts: Timeouts,
    pub reap_ns: u64,
    pub capacity: u32,
    pub dst_anno: bool,
    pub reply_anno: Option<usize>,
    pub noutputs: usize,
}

/// A rewriter element (any of the four kinds).
pub(crate) struct Rewriter {
    cfg: Config,
    table: FlowTable,
    counts: Vec<InputCounts>,
    rng: u64,
    outs: Vec<Batch>,
    handlers: Vec<HandlerSpec>,
    armed: bool,
    simtime: bool,
    last_now: u64,
    lookup_result: String,
    touches: u64,
    drop_spec: u64,
    drop_unhandled: u64,
    drop_failures: u64,
}

const PATTERN_HANDLERS: [&str; 16] = [
    "pattern0",
    "pattern1",
    "pattern2",
    "pattern3",
    "pattern4",
    "pattern5",
    "pattern6",
    "pattern7",
    "pattern8",
    "pattern9",
    "pattern10",
    "pattern11",
    "pattern12",
    "pattern13",
    "pattern14",
    "pattern15",
];

const COMMON_HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::counter("nmappings"),
    HandlerSpec::counter("mapping_failures"),
    HandlerSpec::read("patterns"),
    HandlerSpec::gauge("size"),
    HandlerSpec::read_write("capacity"),
    HandlerSpec::write("clear"),
];

impl Rewriter {
    pub(crate) fn new(cfg: Config, name: &str) -> Rewriter {
        let mut handlers: Vec<HandlerSpec> = match cfg.kind {
            Kind::Ip => vec![
                HandlerSpec::read("tcp_table"),
                HandlerSpec::read("udp_table"),
                HandlerSpec::read("tcp_mappings"),
                HandlerSpec::read("udp_mappings"),
                HandlerSpec::read_write("tcp_lookup"),
            ],
            Kind::Tcp => vec![
                HandlerSpec::read("table"),
                HandlerSpec::read("mappings"),
                HandlerSpec::read_write("lookup"),
            ],
            Kind::Udp | Kind::Addr => {
                vec![HandlerSpec::read("table"), HandlerSpec::read("mappings")]
            }
        };
        handlers.extend_from_slice(COMMON_HANDLERS);
        for name in PATTERN_HANDLERS.iter().take(cfg.specs.len()) {
            handlers.push(HandlerSpec::read_write(name));
        }
        // A fixed seed per element name: runs are reproducible.
        let rng = name.bytes().fold(0x2545_F491_4F6C_DD1Du64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3)
        }) | 1;
        let initial = (cfg.capacity as usize).min(1024);
        Rewriter {
            counts: vec![InputCounts::default(); cfg.specs.len()],
            outs: (0..cfg.noutputs).map(|_| Batch::new()).collect(),
            table: FlowTable::with_capacity(initial),
            cfg,
            rng,
            handlers,
            armed: false,
            simtime: false,
            last_now: 0,
            lookup_result: String::new(),
            touches: 0,
            drop_spec: 0,
            drop_unhandled: 0,
            drop_failures: 0,
        }
    }

    fn now(&self) -> u64 {
        if self.simtime {
            self.last_now
        } else {
            linerate_runtime::time::system_now_ns()
        }
    }

    /// Remove timed-out flows, then flows beyond the capacity (best effort
    /// first, earliest expiry first).
    fn reap(&mut self, now: u64, clear_all: bool) {
        let t = self.cfg.timeouts;
        let mut dead = Vec::new();
        for (i, f) in self.table.iter() {
            if clear_all || (!f.guaranteed(&t, now) && f.expiry(&t) <= now) {
                dead.push(i);
            }
        }
        for i in dead {
            self.destroy(i);
        }
        while self.table.len() > self.cfg.capacity as usize {
            let victim = self
                .table
                .iter()
                .min_by_key(|(_, f)| (f.guaranteed(&t, now), f.shown_expiry(&t, now), f.touch))
                .map(|(i, _)| i);
            match victim {
                Some(i) => self.destroy(i),
                None => break,
            }
        }
    }

    fn destroy(&mut self, idx: u32) {
        let input = self.table.flows[idx as usize].input as usize;
        if let Some(c) = self.counts.get_mut(input) {
            c.count = c.count.saturating_sub(1);
        }
        self.table.destroy(idx);
    }

    /// Make room for a new flow when the table is full: evict the
    /// best-effort flow that expires first, unless the new flow (`new_exp`,
    /// `None` if guaranteed) would expire before it (a tie goes to the new
    /// flow). False if no room.
    fn make_room(&mut self, now: u64, new_exp: Option<u64>) -> bool {
        if self.table.len() < self.cfg.capacity as usize {
            return true;
        }
        let t = self.cfg.timeouts;
        let victim = self
            .table
            .iter()
            .filter(|(_, f)| !f.guaranteed(&t, now))
            .min_by_key(|(_, f)| (f.expiry(&t), f.touch))
            .map(|(i, f)| (i, f.expiry(&t)));
        match victim {
            Some((i, exp)) if new_exp.is_none_or(|n| n >= exp) => {
                self.destroy(i);
                true
            }
            _ => false,
        }
    }

    /// Handle one packet arriving on `port`; the output it goes to, or
    /// `None` if it is dropped.
    fn process(&mut self, port: usize, p: &mut Packet, now: u64) -> Option<usize> {
        let kind = self.cfg.kind;
        let pass = match self.cfg.specs.get(port) {
            Some(InputSpec::Pass(o)) => Some(*o),
            _ => None,
        };
        // The IP header: at the network header annotation, or at the start
        // of the data when it is unset.
        let nh = p
            .network_header_offset()
            .and_then(|o| usize::try_from(o).ok())
            .unwrap_or(0);
        let data = p.data();
        let ip = data
            .get(nh..)
            .and_then(|b| Ipv4Packet::new_checked(b).ok())
            .filter(|ip| ip.version() == 4);
        let Some(ip) = ip else {
            if pass.is_none() {
                self.drop_unhandled += 1;
            }
            return pass;
        };
        let ipb = &data[nh..];
        let hl = ip.header_len();
        let proto = ip.protocol().0;
        let first_frag = ip.frag_offset() == 0;
        let tl = ipb.len() - hl;
        let th = nh + hl;
        let (saddr, daddr) = (u32::from(ip.src_addr()), u32::from(ip.dst_addr()));
        let total_len = usize::from(ip.total_len());

        let (key, key_proto, rev_key) = if kind == Kind::Addr {
            (
                FlowId {
                    saddr,
                    ..FlowId::default()
                },
                0,
                Some(FlowId {
                    daddr,
                    ..FlowId::default()
                }),
            )
        } else {
            let ok_proto = match kind {
                Kind::Tcp => proto == PROTO_TCP,
                Kind::Udp => matches!(proto, PROTO_TCP | PROTO_UDP | PROTO_DCCP),
                _ => matches!(proto, PROTO_TCP | PROTO_UDP),
            };
            if !ok_proto || !first_frag || tl < 8 {
                if pass.is_none() {
                    self.drop_unhandled += 1;
                }
                return pass;
            }
            let t = &data[th..];
            let id = FlowId {
                saddr,
                daddr,
                sport: u16::from_be_bytes([t[0], t[1]]),
                dport: u16::from_be_bytes([t[2], t[3]]),
            };
            (id, if kind == Kind::Ip { proto } else { 0 }, None)
        };

        let mut entry = self.table.find(&key, key_proto);
        if entry.is_none() {
            if let Some(rk) = rev_key {
                entry = self.table.find(&rk, key_proto);
            }
        }
        let entry = match entry {
            Some(e) => e,
            None => {
                let tcp = match kind {
                    Kind::Tcp => true,
                    Kind::Ip => proto == PROTO_TCP,
                    _ => false,
                };
                let (rewritten, f, r) = match self.cfg.specs.get_mut(port) {
                    Some(InputSpec::Pass(o)) => return Some(*o),
                    Some(InputSpec::Keep(f, r)) => (Some(key), *f, *r),
                    Some(InputSpec::Pattern(pat, f, r)) => (
                        pat.rewrite(&key, key_proto, &self.table, &mut self.rng),
                        *f,
                        *r,
                    ),
                    Some(InputSpec::Drop) | None => {
                        self.drop_spec += 1;
                        return None;
                    }
                };
                let Some(rewritten) = rewritten else {
                    self.counts[port].failures += 1;
                    self.drop_failures += 1;
                    return None;
                };
                if kind == Kind::Addr
                    && (rewritten.sport != 0 || rewritten.dport != 0 || rewritten.daddr != 0)
                {
                    self.drop_failures += 1;
                    return None;
                }
                let flow = Flow {
                    ids: [key, rewritten.reverse()],
                    key_proto,
                    tcp,
                    outputs: [f as u16, r as u16],
                    input: port as u16,
                    state: 0,
                    reply_anno: self.cfg.reply_anno.map_or(0, |o| p.anno().u8(o)),
                    last_ns: now,
                    touch: 0,
                    live: true,
                };
                let g = flow.guarantee(&self.cfg.timeouts);
                let new_exp = (g == 0).then(|| flow.expiry(&self.cfg.timeouts));
                if !self.make_room(now, new_exp) {
                    self.counts[port].failures += 1;
                    self.drop_failures += 1;
                    return None;
                }
                // A flow already owning the reply key loses it (as in Click).
                if let Some(e) = self.table.find(&flow.ids[1], key_proto) {
                    self.destroy(e >> 1);
                }
                self.counts[port].count += 1;
                self.table.add(flow) * 2
            }
        };

        let idx = (entry >> 1) as usize;
        let dir = (entry & 1) as usize;
        let flow = self.table.flows[idx];
        let rev = flow.ids[1 - dir];
        let (new_src, new_dst, new_sport, new_dport) = if kind == Kind::Addr {
            if dir == 0 {
                (rev.daddr, daddr, 0, 0)
            } else {
                (saddr, rev.saddr, 0, 0)
            }
        } else {
            (rev.daddr, rev.saddr, rev.dport, rev.sport)
        };

        // Rewrite the packet.
        let cfg_dst_anno = self.cfg.dst_anno && (kind != Kind::Addr || dir == 1);
        let reply_anno = self.cfg.reply_anno.filter(|_| dir == 1);
        {
            let d = p.data_mut();
            let mut ipm = Ipv4Packet::new_unchecked(&mut d[nh..]);
            let mut c = ipm.checksum();
            c = update_u32(c, saddr, new_src);
            c = update_u32(c, daddr, new_dst);
            ipm.set_src_addr(Ipv4Addr::from(new_src));
            ipm.set_dst_addr(Ipv4Addr::from(new_dst));
            ipm.set_checksum(c);
        }
        if cfg_dst_anno {
            p.anno_mut().set_dst_ip(Ipv4Addr::from(new_dst));
        }
        if let Some(o) = reply_anno {
            p.anno_mut().set_u8(o, flow.reply_anno);
        }
        let mut state = flow.state;
        let l4 = matches!(proto, PROTO_TCP | PROTO_UDP | PROTO_DCCP);
        if first_frag && l4 && tl >= 8 {
            let d = p.data_mut();
            let t = &mut d[th..];
            let (old_sport, old_dport) = (
                u16::from_be_bytes([t[0], t[1]]),
                u16::from_be_bytes([t[2], t[3]]),
            );
            if kind != Kind::Addr {
                t[0..2].copy_from_slice(&new_sport.to_be_bytes());
                t[2..4].copy_from_slice(&new_dport.to_be_bytes());
            }
            let (sp, dp) = if kind == Kind::Addr {
                (old_sport, old_dport)
            } else {
                (new_sport, new_dport)
            };
            let fix = |sum: u16| {
                let mut c = update_u32(sum, saddr, new_src);
                c = update_u32(c, daddr, new_dst);
                c = update_u16(c, old_sport, sp);
                update_u16(c, old_dport, dp)
            };
            if proto == PROTO_TCP && tl >= 18 {
                let c = fix(u16::from_be_bytes([t[16], t[17]]));
                t[16..18].copy_from_slice(&c.to_be_bytes());
            } else if proto == PROTO_UDP && tl >= 8 {
                let old = u16::from_be_bytes([t[6], t[7]]);
                if old != 0 {
                    let c = match fix(old) {
                        0 => 0xFFFF,
                        c => c,
                    };
                    t[6..8].copy_from_slice(&c.to_be_bytes());
                }
            }
            // Connection state (Click's TCPFlow / UDPFlow apply).
            if flow.tcp && proto == PROTO_TCP && tl >= 14 && kind != Kind::Addr {
                let flags = t[13];
                let off = usize::from(t[12] >> 4) * 4;
                let have_payload = hl + off < total_len;
                let done = S_FORWARD_DONE << dir;
                if flags & 0x04 != 0 {
                    state |= S_BOTH_DONE;
                } else if flags & 0x01 != 0 {
                    state |= done;
                } else if flags & 0x02 != 0 || have_payload {
                    state &= !done;
                }
                if have_payload {
                    state |= S_FORWARD_DATA << dir;
                }
            }
        }
        if !flow.tcp && kind != Kind::Addr {
            if dir == 1 {
                state |= 1;
            }
            if state < 6 {
                state += 2;
            }
        }
        let f = &mut self.table.flows[idx];
        f.state = state;
        f.last_ns = now;
        self.touches += 1;
        f.touch = self.touches;
        Some(usize::from(f.outputs[dir]))
    }

    /// The mapping table text: each live flow's forward then reply entry,
    /// `(SA, SP, DA, DP) => (SA', SP', DA', DP') [*F R] iN expT`.
    /// `which`: `Some(true)` TCP flows only, `Some(false)` the others.
    fn dump(&self, which: Option<bool>) -> String {
        let now = self.now();
        let t = &self.cfg.timeouts;
        let mut s = String::new();
        for (_, f) in self.table.iter() {
            if which.is_some_and(|tcp| tcp != (f.key_proto == PROTO_TCP)) {
                continue;
            }
            let exp = (f.shown_expiry(t, now) as i128 + i128::from(NS / 2) - now as i128)
                / i128::from(NS);
            for dir in 0..2 {
                let (from, to) = if self.cfg.kind == Kind::Addr {
                    if dir == 0 {
                        (
                            Ipv4Addr::from(f.ids[0].saddr).to_string(),
                            Ipv4Addr::from(f.ids[1].daddr).to_string(),
                        )
                    } else {
                        (
                            Ipv4Addr::from(f.ids[1].daddr).to_string(),
                            Ipv4Addr::from(f.ids[0].saddr).to_string(),
                        )
                    }
                } else {
                    (f.ids[dir].unparse(), f.ids[1 - dir].reverse().unparse())
                };
                let (a, b) = if dir == 0 { ("*", "") } else { ("", "*") };
                s.push_str(&format!(
                    "{from} => {to} [{a}{} {b}{}] i{} exp{exp}\n",
                    f.outputs[0], f.outputs[1], f.input
                ));
            }
        }
        s
    }

    fn spec_text(&self, i: usize) -> String {
        let mut s = match &self.cfg.specs[i] {
            InputSpec::Drop => "<drop>".to_string(),
            InputSpec::Pass(_) => "<nochange>".to_string(),
            InputSpec::Keep(..) => "<keep>".to_string(),
            InputSpec::Pattern(p, ..) => p.unparse(),
        };
        if self.counts[i].count != 0 {
            s.push_str(&format!(" [{}]", self.counts[i].count));
        }
        s.push('\n');
        s
    }

    /// Click's `lookup`: the rewritten flow for `SADDR SPORT DADDR DPORT`,
    /// or nothing.
    fn lookup(&self, text: &str) -> Result<String, String> {
        let w: Vec<&str> = text.split_ascii_whitespace().collect();
        let addr = |s: &str| parse_addr(s).ok_or_else(|| format!("expected IP address, not '{s}'"));
        let port = |s: &str| {
            parse_int(s)
                .filter(|n| (0..65536).contains(n))
                .map(|n| n as u16)
                .ok_or_else(|| format!("expected port number, not '{s}'"))
        };
        if w.len() != 4 {
            return Err("expected 'SADDR SPORT DADDR DPORT'".into());
        }
        let id = FlowId {
            saddr: addr(w[0])?,
            sport: port(w[1])?,
            daddr: addr(w[2])?,
            dport: port(w[3])?,
        };
        let proto = if self.cfg.kind == Kind::Ip {
            PROTO_TCP
        } else {
            0
        };
        Ok(match self.table.find(&id, proto) {
            Some(e) => {
                let f = &self.table.flows[(e >> 1) as usize];
                let r = f.ids[1 - (e & 1) as usize].reverse();
                format!(
                    "{} {} {} {}",
                    Ipv4Addr::from(r.saddr),
                    r.sport,
                    Ipv4Addr::from(r.daddr),
                    r.dport
                )
            }
            None => String::new(),
        })
    }
}

impl Element for Rewriter {
    fn initialize(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), String> {
        self.simtime = ctx.simtime();
        Ok(())
    }

    fn push(&mut self, port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        let now = ctx.recent_ns();
        self.last_now = now;
        if !self.armed && self.cfg.reap_ns != 0 {
            self.armed = true;
            ctx.schedule_after(self.cfg.reap_ns);
        }
        for mut p in batch {
            if let Some(o) = self.process(port, &mut p, now) {
                if let Some(b) = self.outs.get_mut(o) {
                    b.push(p);
                }
            }
        }
        for (i, b) in self.outs.iter_mut().enumerate() {
            if !b.is_empty() {
                ctx.push(i, std::mem::take(b));
            }
        }
    }

    fn run_timer(&mut self, ctx: &mut Ctx<'_>) {
        let now = ctx.now_ns();
        self.last_now = now;
        self.reap(now, false);
        if self.cfg.reap_ns != 0 {
            ctx.schedule_after(self.cfg.reap_ns);
        }
    }

    fn handlers(&self) -> &[HandlerSpec] {
        &self.handlers
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "table" | "mappings" if self.cfg.kind != Kind::Ip => self.dump(None),
            "tcp_table" | "tcp_mappings" if self.cfg.kind == Kind::Ip => self.dump(Some(true)),
            "udp_table" | "udp_mappings" if self.cfg.kind == Kind::Ip => self.dump(Some(false)),
            "lookup" if self.cfg.kind == Kind::Tcp => self.lookup_result.clone(),
            "tcp_lookup" if self.cfg.kind == Kind::Ip => self.lookup_result.clone(),
            "nmappings" => self.counts.iter().map(|c| c.count).sum::<u64>().to_string(),
            "mapping_failures" => self
                .counts
                .iter()
                .map(|c| c.failures)
                .sum::<u64>()
                .to_string(),
            "patterns" => (0..self.cfg.specs.len())
                .map(|i| self.spec_text(i))
                .collect(),
            "size" => self.table.len().to_string(),
            "capacity" => self.cfg.capacity.to_string(),
            _ => {
                let i = PATTERN_HANDLERS.iter().position(|h| *h == name)?;
                if i >= self.cfg.specs.len() {
                    return None;
                }
                self.spec_text(i)
            }
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        let now = self.now();
        Some(match name {
            "capacity" => crate::parse_value::<u32>(value).map(|c| {
                self.cfg.capacity = c.min(i32::MAX as u32);
                self.reap(now, false);
            }),
            "clear" => {
                self.reap(now, true);
                Ok(())
            }
            "lookup" if self.cfg.kind == Kind::Tcp => {
                self.lookup(value).map(|s| self.lookup_result = s)
            }
            "tcp_lookup" if self.cfg.kind == Kind::Ip => {
                self.lookup(value).map(|s| self.lookup_result = s)
            }
            _ => {
                let i = PATTERN_HANDLERS.iter().position(|h| *h == name)?;
                if i >= self.cfg.specs.len() {
                    return None;
                }
                match parse_input_spec(value, i, self.cfg.noutputs) {
                    Ok(spec) => {
                        let owned: Vec<u32> = self
                            .table
                            .iter()
                            .filter(|(_, f)| usize::from(f.input) == i)
                            .map(|(j, _)| j)
                            .collect();
                        for j in owned {
                            self.destroy(j);
                        }
                        self.cfg.specs[i] = spec;
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
        })
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("dropped by input spec", self.drop_spec),
            ("not rewritable", self.drop_unhandled),
            ("mapping failures", self.drop_failures),
        ]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Read the keywords every rewriter shares (Click's `IPRewriterBase`):
/// `CAPACITY`/`MAPPING_CAPACITY`, `REAP_INTERVAL` (and the older
/// `REAP_TIME`, `REAP_TCP`, `REAP_TCP_DONE`, `REAP_UDP`: the shortest
/// wins), then the input specifications, one per input.
pub(crate) fn read_base(
    a: &mut linerate_args::Args,
    ninputs: usize,
    noutputs: usize,
) -> (u32, u64, Vec<InputSpec>) {
    let cap1: Option<u32> = a.read("CAPACITY");
    let cap2: Option<u32> = a.read("MAPPING_CAPACITY");
    let capacity = cap2
        .or(cap1)
        .unwrap_or(i32::MAX as u32)
        .min(i32::MAX as u32);
    let mut reap = 15 * 60 * NS;
    let mut explicit: Option<u64> = None;
    for kw in [
        "REAP_INTERVAL",
        "REAP_TIME",
        "REAP_TCP",
        "REAP_TCP_DONE",
        "REAP_UDP",
    ] {
        if let Some(s) = a.read::<linerate_args::Seconds>(kw) {
            explicit = Some(explicit.map_or(s.nanos, |e| e.min(s.nanos)));
        }
    }
    if let Some(e) = explicit {
        reap = e;
    }
    let rest = a.read_rest();
    if rest.len() != ninputs {
        a.error(format!("need {ninputs} arguments, one per input port"));
    }
    let mut specs = Vec::new();
    for (i, s) in rest.iter().enumerate() {
        match parse_input_spec(s, i, noutputs) {
            Ok(sp) => specs.push(sp),
            Err(e) => a.error(e),
        }
    }
    (capacity, reap, specs)
}

/// Read time keyword `kw` into `target` (nanoseconds) if present.
pub(crate) fn read_secs(a: &mut linerate_args::Args, kw: &str, target: &mut u64) {
    if let Some(s) = a.read::<linerate_args::Seconds>(kw) {
        *target = s.nanos;
    }
}

/// Build the element once every keyword has been read.
pub(crate) fn finish(
    ctx: &linerate_runtime::ConfigureCtx<'_>,
    mut a: linerate_args::Args,
    kind: Kind,
    timeouts: Timeouts,
    dst_anno: bool,
    reply_anno: Option<usize>,
) -> Result<Box<dyn Element>, Vec<String>> {
    let (capacity, reap_ns, specs) = read_base(&mut a, ctx.ninputs(), ctx.noutputs());
    a.complete().map_err(|e| e.0)?;
    let cfg = Config {
        kind,
        specs,
        timeouts,
        reap_ns,
        capacity,
        dst_anno,
        reply_anno,
        noutputs: ctx.noutputs(),
    };
    Ok(Box::new(Rewriter::new(cfg, ctx.name)))
}

/// Read `REPLY_ANNO` (a one-byte annotation name or offset).
pub(crate) fn read_reply_anno(a: &mut linerate_args::Args) -> Option<usize> {
    let w: linerate_args::Word = a.read("REPLY_ANNO")?;
    match linerate_runtime::anno::anno_by_name(&w.0) {
        Some(info) if info.size == 1 => Some(info.offset),
        _ => {
            a.error("REPLY_ANNO: expected one-byte annotation");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_parse_and_unparse_like_click() {
        for (text, want) in [
            ("1.0.0.1 1024-65535# - -", "1.0.0.1 1024-65535 - -"),
            ("- - 2.0.0.2 80", "- - 2.0.0.2 80"),
            ("1.0.0.1 20 - -", "1.0.0.1 20 - -"),
            ("10.0.0.1-10.0.0.9 -", "10.0.0.1-10.0.0.9 -"),
            ("10.0.0.0/24 -", "10.0.0.1-10.0.0.254 -"),
        ] {
            let w: Vec<&str> = text.split(' ').collect();
            assert_eq!(Pattern::parse(&w).unwrap().unparse(), want, "{text}");
        }
        for (text, err) in [
            ("x - - -", "bad source address"),
            ("- 0 - -", "bad source port"),
            ("- 5-2 - -", "bad source port"),
            ("- - x -", "bad destination address"),
            ("- - - 70000", "bad destination port"),
            ("a b c d e", "syntax error"),
        ] {
            let w: Vec<&str> = text.split(' ').collect();
            assert_eq!(Pattern::parse(&w).unwrap_err(), err, "{text}");
        }
    }

    #[test]
    fn input_specs() {
        assert!(matches!(
            parse_input_spec("drop", 0, 1),
            Ok(InputSpec::Drop)
        ));
        assert!(matches!(
            parse_input_spec("discard", 0, 1),
            Ok(InputSpec::Drop)
        ));
        assert!(matches!(
            parse_input_spec("pass 1", 0, 2),
            Ok(InputSpec::Pass(1))
        ));
        assert!(matches!(
            parse_input_spec("nochange", 0, 1),
            Ok(InputSpec::Pass(0))
        ));
        assert!(matches!(
            parse_input_spec("keep 0 1", 0, 2),
            Ok(InputSpec::Keep(0, 1))
        ));
        assert_eq!(
            parse_input_spec("keep 0 2", 1, 2).unwrap_err(),
            "input spec 1: output port out of range"
        );
        assert_eq!(
            parse_input_spec("frob", 0, 2).unwrap_err(),
            "input spec 0: unknown specification"
        );
        assert_eq!(
            parse_input_spec("pattern NAT 0 1", 0, 2).unwrap_err(),
            "input spec 0: no such pattern 'NAT'"
        );
        assert!(matches!(
            parse_input_spec("pattern 1.0.0.1 1024-65535 - - 0 1", 0, 2),
            Ok(InputSpec::Pattern(..))
        ));
    }

    #[test]
    fn flow_table_insert_find_remove() {
        let mut t = FlowTable::with_capacity(4);
        let mut ids = Vec::new();
        for i in 0..500u32 {
            let a = FlowId {
                saddr: i,
                daddr: 7,
                sport: i as u16,
                dport: 80,
            };
            let b = FlowId {
                saddr: 7,
                daddr: 1000 + i,
                sport: 80,
                dport: 2000,
            };
            let idx = t.add(Flow {
                ids: [a, b],
                live: true,
                ..Flow::default()
            });
            ids.push((idx, a, b));
        }
        assert_eq!(t.len(), 500);
        for &(idx, a, b) in &ids {
            assert_eq!(t.find(&a, 0), Some(idx * 2));
            assert_eq!(t.find(&b, 0), Some(idx * 2 + 1));
        }
        for &(idx, _, _) in ids.iter().step_by(2) {
            t.destroy(idx);
        }
        assert_eq!(t.len(), 250);
        for (k, &(idx, a, b)) in ids.iter().enumerate() {
            let want = (k % 2 == 1).then_some(idx * 2);
            assert_eq!(t.find(&a, 0), want);
            assert_eq!(t.find(&b, 0), want.map(|e| e + 1));
        }
    }
}

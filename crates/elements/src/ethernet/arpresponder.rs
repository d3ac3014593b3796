//! Answers ARP queries for configured IP prefixes.
//!
//! # Synopsis
//! `ARPResponder(IP/MASK [IP/MASK...] ETH, IP2/MASK2 ETH2, ...)`
//!
//! # Ports
//! One input; one or two outputs, agnostic (output 1 push). Input packets
//! are Ethernet frames. An ARP request (Ethernet/IPv4) for an address in one
//! of the configured prefixes is answered with an ARP reply on output 0; every
//! other packet (not ARP, not a request, too short, or no matching prefix)
//! goes to output 1 if it exists and is dropped otherwise.
//!
//! # Arguments
//! Each argument is a space-separated list of IP addresses or prefixes
//! (`18.26.4.24`, `18.26.7.0/24`, `18.26.7.0/255.255.255.0`) and exactly one
//! Ethernet address, which answers for all of them. When prefixes overlap,
//! the most specific wins; a prefix given twice keeps its last address.
//!
//! # Handlers
//! - `table` (read): one line per entry, `NETWORK/LEN ETH`, most specific
//!   prefixes first, e.g. `18.26.4.24/32 00-00-C0-AE-67-EF`.
//! - `add` (write): add entries, in argument syntax (`IP/MASK ETH`).
//! - `remove` (write): remove the entry for a prefix (`IP/MASK`).
//!
//! # Example
//! ```click
//! c :: Classifier(12/0806 20/0001, -);
//! ar :: ARPResponder(18.26.4.24 18.26.7.0/24 00:00:C0:AE:67:EF);
//! FromDevice(eth0) -> c; c[0] -> ar -> ToDevice(eth0); c[1] -> Discard;
//! ```
//!
//! # Implementation
//! The reply is written over the request's own buffer (trimmed to the
//! 42-byte reply), so answering allocates nothing; the reply keeps the
//! request's timestamp and starts with cleared annotations, like Click's
//! freshly made reply. A table lookup scans the entries in order, most
//! specific first (the tables are small). Click's `lookup` read handler with
//! a parameter is not provided (handlers take no parameters here).

use linerate_args::{ArgValue, EtherAddr, Ipv4Prefix};
use linerate_runtime::anno::Anno;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use std::any::Any;

/// The `ARPResponder` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "ARPResponder",
    port_count: "1/1-2",
    processing: "a/ah",
    doc: element_doc!("ethernet/arpresponder"),
    make,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    /// Network address (host bits cleared), host order.
    net: u32,
    mask: u32,
    len: u8,
    eth: [u8; 6],
}

impl Entry {
    fn contains(&self, other: &Entry) -> bool {
        other.len >= self.len && other.net & self.mask == self.net
    }
}

struct ARPResponder {
    /// Every entry comes before the entries that contain it.
    table: Vec<Entry>,
    to_out1: bool,
    unanswered: u64,
}

/// Parse one argument, `IP/MASK [IP/MASK...] ETH`, into entries.
fn parse_entries(arg: &str) -> Result<Vec<Entry>, String> {
    let mut v = Vec::new();
    let mut eth: Option<EtherAddr> = None;
    for w in arg.split_ascii_whitespace() {
        if let Ok(p) = Ipv4Prefix::parse_arg(w) {
            let mask = u32::from(p.mask());
            v.push(Entry {
                net: u32::from(p.addr) & mask,
                mask,
                len: p.len,
                eth: [0; 6],
            });
        } else if let Ok(e) = EtherAddr::parse_arg(w) {
            if eth.is_some() {
                return Err("more than one ETH".to_string());
            }
            eth = Some(e);
        } else {
            return Err("expected IP/MASK ETH".to_string());
        }
    }
    if v.is_empty() {
        return Err("missing IP/MASK".to_string());
    }
    let Some(eth) = eth else {
        return Err("missing ETH".to_string());
    };
    for e in &mut v {
        e.eth = eth.0;
    }
    Ok(v)
}

/// Add `e` to `table`, keeping every entry before its containers. Returns
/// false if it replaced an entry for the same prefix.
fn insert(table: &mut Vec<Entry>, e: Entry) -> bool {
    if let Some(x) = table.iter_mut().find(|x| x.net == e.net && x.len == e.len) {
        x.eth = e.eth;
        return false;
    }
    let pos = table
        .iter()
        .position(|x| x.contains(&e))
        .unwrap_or(table.len());
    table.insert(pos, e);
    true
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut table = Vec::new();
    let mut errs = Vec::new();
    for (i, arg) in ctx.args.iter().enumerate() {
        match parse_entries(arg) {
            Ok(v) => {
                for e in v {
                    insert(&mut table, e);
                }
            }
            Err(e) => errs.push(format!("argument {i}: {e}")),
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    Ok(Box::new(ARPResponder {
        table,
        to_out1: ctx.noutputs() > 1,
        unanswered: 0,
    }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::read("table"),
    HandlerSpec::write("add"),
    HandlerSpec::write("remove"),
];

impl ARPResponder {
    fn lookup(&self, ip: u32) -> Option<[u8; 6]> {
        self.table
            .iter()
            .find(|e| ip & e.mask == e.net)
            .map(|e| e.eth)
    }

    /// Turn an ARP request into the reply, in place; false if `p` is not an
    /// Ethernet/IPv4 ARP request for one of our addresses.
    fn answer(&self, p: &mut Packet) -> bool {
        let d = p.data();
        if d.len() < 42
            || d[12..14] != [0x08, 0x06]
            || d[14..16] != [0x00, 0x01]
            || d[16..18] != [0x08, 0x00]
            || d[20..22] != [0x00, 0x01]
        {
            return false;
        }
        let tpa = u32::from_be_bytes([d[38], d[39], d[40], d[41]]);
        let Some(eth) = self.lookup(tpa) else {
            return false;
        };
        let mut sha = [0u8; 6];
        sha.copy_from_slice(&d[22..28]);
        let mut spa = [0u8; 4];
        spa.copy_from_slice(&d[28..32]);
        let extra = d.len() - 42;
        p.take(extra);
        let ts = p.timestamp_ns();
        *p.anno_mut() = Anno::EMPTY;
        p.set_timestamp_ns(ts);
        let d = p.data_mut();
        d[..6].copy_from_slice(&sha);
        d[6..12].copy_from_slice(&eth);
        // Ethernet type, hardware type and protocol type stay as checked.
        d[18] = 6;
        d[19] = 4;
        d[20..22].copy_from_slice(&[0x00, 0x02]);
        d[22..28].copy_from_slice(&eth);
        d[28..32].copy_from_slice(&tpa.to_be_bytes());
        d[32..38].copy_from_slice(&sha);
        d[38..42].copy_from_slice(&spa);
        true
    }
}

impl Element for ARPResponder {
    fn action(&mut self, mut batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        let rest = batch.split_off_if(|p| !self.answer(p));
        if !rest.is_empty() {
            if self.to_out1 {
                ctx.push(1, rest);
            } else {
                self.unanswered += rest.len() as u64;
            }
        }
        batch
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        match name {
            "table" => {
                let mut s = String::new();
                for e in &self.table {
                    s.push_str(&format!(
                        "{}/{} {}\n",
                        std::net::Ipv4Addr::from(e.net),
                        e.len,
                        EtherAddr(e.eth)
                    ));
                }
                Some(s)
            }
            _ => None,
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "add" => parse_entries(value).map(|v| {
                for e in v {
                    insert(&mut self.table, e);
                }
            }),
            "remove" => match Ipv4Prefix::parse_arg(value.trim()) {
                Ok(p) => {
                    let mask = u32::from(p.mask());
                    let net = u32::from(p.addr) & mask;
                    match self
                        .table
                        .iter()
                        .position(|e| e.net == net && e.len == p.len)
                    {
                        Some(i) => {
                            self.table.remove(i);
                            Ok(())
                        }
                        None => Err(format!(
                            "{}/{} not found",
                            std::net::Ipv4Addr::from(net),
                            p.len
                        )),
                    }
                }
                Err(_) => Err("expected IP/MASK".to_string()),
            },
            _ => return None,
        })
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![("not answered", self.unanswered)]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

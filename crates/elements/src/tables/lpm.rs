//! IPv4 and IPv6 longest-prefix match: DIR-24-8 for IPv4, a compressed
//! multibit trie for IPv6, batched lookups with prefetching.
//!
//! # Synopsis
//! `LPM([ROUTE1, ROUTE2, ..., KEYWORDS])`
//!
//! # Ports
//! One push input; one or more push outputs (as many as the routes use,
//! and `BAD_OUTPUT` if given).
//!
//! # Arguments
//! - Routes, in Click's routing-table syntax (as `RadixIPLookup`):
//!   `ADDR/MASK [GATEWAY] OUTPUT`, the gateway optional (or `-`). IPv4
//!   prefixes may be written as for RadixIPLookup (`18.26.4/24`,
//!   `18.26.4.0/255.255.255.0`, a bare address for `/32`); IPv6 as
//!   `2001:db8::/32 [fe80::1] 1`. A later route for the same prefix is
//!   ignored, as in Click.
//! - `FILE` (filename): more routes, one `prefix [gateway] output` a line;
//!   blank lines and lines starting with `#` or `//` are skipped.
//! - `HEADER` (boolean, default false): take the destination address from
//!   the IP header at the network header annotation (IPv4 or IPv6 by its
//!   version field) instead of the `DST_IP` annotation, which holds only
//!   IPv4 addresses.
//! - `OFFSET` (integer): with `HEADER`, where the IP header starts in the
//!   data of packets whose network header annotation is unset (for traffic
//!   straight from a source). Without it such packets are bad.
//! - `IMPL` (`fast` or `reference`, default `fast`): `reference` uses a
//!   binary trie (one address bit per level) for both families, with the
//!   same results.
//! - `BAD_OUTPUT` (integer): the output on which bad packets (see below)
//!   leave, annotations unchanged, instead of being dropped; they are
//!   still counted in `bad`. It must be one of the element's outputs.
//!
//! Each packet's destination is looked up with longest-prefix match. If
//! the route has a gateway, the destination annotation (`DST_IP`, or
//! `DST_IP6` for IPv6) is set to it; with `HEADER` and no gateway it is set
//! to the header's destination address. The packet leaves on the route's
//! output. Packets without a route are dropped and counted (`no_route`);
//! with `HEADER`, packets whose IP header is missing, truncated (under 20
//! bytes for IPv4, 40 for IPv6), of another version, or IPv4 with a header
//! length field (IHL) under five words are counted (`bad`) and dropped, or leave on
//! `BAD_OUTPUT` if it is given. Nothing is reported on
//! standard error. Click's closest elements are `RadixIPLookup` (IPv4) and
//! `LookupIP6Route` (IPv6); LPM handles both in one table.
//!
//! # Handlers
//! - `table` (read): the routes, IPv4 then IPv6, each in prefix order, one
//!   a line, `ADDR/LEN GW OUT` separated by tabs (`-` for no gateway; Click
//!   lists routes in insertion order).
//! - `lookup` (read/write): write an address (IPv4 or IPv6), then read `OUT`
//!   or `OUT GW` (`-1` if no route), as RadixIPLookup's `lookup`.
//! - `add` (write): add a route; fails with `conflict with existing route
//!   '...'` if the prefix has one.
//! - `set` (write): add or replace a route.
//! - `remove` (write): remove the route for `ADDR/MASK [GW OUT]`.
//! - `count` (read): routes in the table; `count4`, `count6` per family.
//! - `lookups` (read): packets looked up; `no_route` (read): packets
//!   without a route; `bad` (read): packets without a readable destination.
//!
//! # Example
//! ```click
//! rt :: LPM(10.0.0.0/8 0, 10.1.0.0/16 10.1.0.1 1, 2001:db8::/32 1,
//!           FILE routes.txt, HEADER true);
//! rt[0] -> Discard; rt[1] -> Discard;
//! ```
//!
//! # Implementation
//! IPv4 uses DIR-24-8: a 2^24-entry table (64 MiB) indexed by the top 24
//! address bits holds a next-hop id, or the index of a 256-entry group
//! for the last byte (prefixes longer than 24 bits). A lookup is one memory
//! access, two for the long prefixes. IPv6 uses a 65,536-entry direct first
//! level and then poptrie-style nodes of 6 bits (a child bitmap and a
//! run-length leaf bitmap, found by population count), so 200,000 prefixes
//! take megabytes rather than the gigabytes of expanded stride tables.
//! Nodes are path-compressed: a node first skips up to 32 bits that every
//! route below it shares (a key and a mask in the node; an address that
//! differs there takes the leaf the node inherited), so a lone route's
//! chain of one-child nodes is a single node. All subtries share one node array and one leaf array (poptrie's
//! layout): a rebuilt subtrie is written over its old place when it fits,
//! else appended, and the arrays are compacted when half of them is dead.
//! Nodes are 32 bytes, aligned, so that none straddles two cache lines.
//!
//! Lookups are batched, 64 packets at a time with the group's state in
//! arrays on the stack (struct of arrays), in two passes that call
//! nothing (session 9's lesson: one out-of-line call in a per-packet loop,
//! even an error path, costs register spills on every packet; each group
//! is also a function of its own, so that its loops keep their state in
//! registers). The first pass reads each packet's IPv4 destination and
//! prefetches its first-level entry, listing the packets that are not
//! IPv4; the second resolves every destination (the first level is a
//! fixed-size array indexed by 24 bits: no bounds test) and maps the next
//! hop through a flat array (id to port and IPv4 gateway) to the packet's
//! output, and writes the annotation unconditionally: the gateway, else
//! the destination (which, with `DST_IP` as the source, is the value it
//! had; a packet without a route is dropped, so its annotation does not
//! matter). The listed packets (IPv6, bad) follow in a pass of their own,
//! which puts back on each bad packet the `DST_IP` annotation the first
//! pass read (the second wrote over it), so that on `BAD_OUTPUT` it leaves
//! as it came; a group with no IPv4 packet skips the second pass.
//! Session 10
//! (`perf stat`, the bench's frames, 1,024 destinations): the element from
//! 115 to 88 instructions a packet for IPv4 (the single pass reading
//! destinations into a family array, a separate lookup call, and a third
//! pass mapping next hops with a range-checked lookup of 32-byte next-hop
//! records took 33 more), 463 to 398 for IPv6. The `IMPL reference` path
//! is a plain loop, a packet at a time, over the reference tries, so the
//! differential tests check the staging as well as the tables.
//! The split over the outputs is `Batch::split_into`: packets counted per
//! output first, then each written to its output's next place (the whole
//! batch goes out unsplit when every packet takes one output; dropped
//! packets go to a batch of their own, released together, whose length
//! less the bad packets is the `no_route` count). About 32 instructions a
//! packet go to the split and the three more output batches downstream
//! (measured by pushing the whole batch to one output instead).
//! (Prefetching each entry inside the extraction loop and resolving it in
//! a third pass was measured in session 4 as no faster with 65,536
//! destinations and about 10 % slower with 1,024; in session 10 the
//! prefetch sits in the extraction pass and the resolution in the next,
//! two passes instead of three.)
//! The IPv6 walk is level-synchronous (every packet advances one node per
//! round, the next node prefetched) so that the cache misses of different
//! packets overlap; the walking packets are kept packed (index, node,
//! address bits not yet used, left-aligned), and a packet that reaches a
//! leaf leaves the walk, its leaf read at the end. A level's bitmap is
//! shifted left so that the slot's bit becomes the sign bit and POPCNT
//! counts the bits up to it (no mask, no bit test); prefetches take
//! wrapping pointers and array reads `get`, so no panic path is left in
//! the loop. Entries hold interned next-hop ids (port and gateway, a small
//! table that stays in L1); prefix lengths needed only for updates live in
//! separate arrays.
//!
//! The big arrays (the IPv4 first level, the IPv6 nodes and leaves) are
//! backed by 2 MiB pages where the kernel allows: `MADV_HUGEPAGE` when the
//! first level is allocated and, once a configuration of 65,536 routes or
//! more of a family is loaded, `MADV_COLLAPSE` (Linux 6.1 and later) on
//! the arrays. A random lookup then costs a cache miss but no TLB miss and
//! page walk, which under virtualisation is itself several misses.
//! Updates go to an ordered routing table first; IPv4 updates then rewrite
//! only the entries the prefix covers, IPv6 updates rebuild the subtrie of
//! one first-level slot. Handlers run between batches, so routes change
//! while traffic flows. Nothing is allocated per packet (scratch arrays are
//! reused batch to batch).
//!
//! ClickNP's optimisations: struct of arrays for a group's state: 64
//! packets' destinations, outputs and the list of non-IPv4 packets in
//! arrays on the stack, and next hops interned as small ids (port and
//! gateway in a flat array; prefix lengths, needed only by updates, in
//! arrays of their own). SIMD is not used: a lookup is one indexed load
//! (two for a long IPv4 prefix) or a walk of dependent node reads with
//! POPCNT, and there is nothing to compare in parallel; the time goes to
//! memory. The lookups prefetch in batches: the extraction pass prefetches
//! every IPv4 packet's first-level entry and the next pass resolves them,
//! and the IPv6 walk advances all packets one level a round, prefetching
//! each packet's next node. No slow path: every lookup completes in the
//! batch (the tables have no misses to defer); route updates are handler
//! calls between batches that rewrite the entries a prefix covers (IPv4) or
//! rebuild one first-level slot's subtrie (IPv6).
//!
//! Performance against the issue's goals (150 Mpps IPv4 with 1M prefixes,
//! 30 Mpps IPv6 with 200K; `linerate bench elements LPM`, a two-vCPU AMD
//! EPYC Zen 4 guest, see docs/performance.md): IPv6 is met, 32-36 Mpps
//! with 65,536 destinations and about 50 Mpps with 1,024; IPv4 is met
//! with 1,024 destinations (142-158 Mpps, at the goal) and not with
//! 65,536 (69.5-91.8 Mpps). Why, from the profiles: with 65,536 random
//! destinations every IPv4 lookup misses beyond the L2 in the 64 MiB
//! first level, and the time sits on the prefetches themselves, which
//! stall once the core's outstanding misses are used up (the lookup is
//! bound by memory-level parallelism; 2 MiB pages took about a quarter
//! off this row by removing the TLB misses); on top of that the element
//! runs about 90 instructions a packet (the two passes about 47, the
//! split and the extra output batches about 32, the rest per batch), all
//! that bounds the cache-resident row. Session 12 measured two changes to IPv4 and kept neither
//! (docs/performance.md): reading the first level through run-length
//! compressed nodes (64 entries of a /18 in a 32- or 64-byte node found
//! by population count, 8 or 16 MiB instead of 64) was slower on both
//! rows (1,024 destinations 6.4-6.6 to 7.3-8.3 ns, 20 more instructions
//! a packet; 65,536 destinations 12-14 to 18-25 ns), and prefetching the
//! second-level entries of long prefixes in a third pass (2.1 % of the
//! bench's destinations) gained nothing measurable for 3.5-3.7 more
//! instructions. The IPv6 walk, with path compression, is the first-level
//! entry, 2.3 nodes on average for the bench's 200,000 routes (5.1
//! without it: a /48 took 6 nodes) and, unless the last node holds it
//! (a node without children whose slots all hold one leaf keeps it), the
//! leaf; the level-synchronous walk overlaps them across packets but each
//! round still waits on the slowest. Session 11 (valgrind, the bench's
//! frames, 65,536 destinations): the element from 396 to 297
//! instructions a packet, of
//! which the walk is about 33 a node (packed state read and written back,
//! the skip test, the shifts of the 128-bit address); the rest is reading
//! the destinations, the next hops and annotations (about 95) and the
//! split (about 30). Output batches per port and the framework's
//! per-batch work are part of every row.

use super::lpmtable::{
    mask6, BinTrie, Dir248, Fib4, Fib6, NextHop, NextHops, Poptrie6, Rib, RibEntry,
};
use crate::iproute::routetable::{parse_route, IpRoute};
use linerate_runtime::anno::{offsets, NO_HEADER};
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use std::any::Any;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The `LPM` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "LPM",
    port_count: "1/-",
    processing: "h/h",
    doc: element_doc!("tables/lpm"),
    make,
};

/// One route of either family: `addr/len` (host bits cleared) to `port`
/// via `gw` (0 for none; IPv4 in the low 32 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// IPv6 (else IPv4).
    pub v6: bool,
    /// Network address bits.
    pub addr: u128,
    /// Prefix length.
    pub len: u8,
    /// Gateway bits, 0 for none.
    pub gw: u128,
    /// Output port; -1 in a remove request means "any".
    pub port: i32,
}

impl Route {
    /// Parse `ADDR/MASK [GATEWAY] OUTPUT` (IPv4 with Click's
    /// `cp_ip_route`, or IPv6); with `remove` the output may be left out.
    pub fn parse(s: &str, remove: bool) -> Option<Route> {
        if let Some(r) = parse_route(s, remove) {
            return Some(Route {
                v6: false,
                addr: u128::from(u32::from(r.addr)),
                len: r.prefix_len,
                gw: u128::from(u32::from(r.gw)),
                port: r.port,
            });
        }
        let mut words = s.split_ascii_whitespace();
        let p: linerate_args::Ipv6Prefix =
            linerate_args::ArgValue::parse_arg(words.next()?).ok()?;
        let mut gw = 0u128;
        let mut word = words.next();
        if let Some(w) = word {
            if w == "-" {
                word = words.next();
            } else if let Ok(a) = w.parse::<Ipv6Addr>() {
                gw = u128::from(a);
                word = words.next();
            }
        }
        let port = match word {
            Some(w) => <i32 as linerate_args::ArgValue>::parse_arg(w).ok()?,
            None if remove => -1,
            None => return None,
        };
        if words.next().is_some() {
            return None;
        }
        Some(Route {
            v6: true,
            addr: u128::from(p.addr) & mask6(p.len),
            len: p.len,
            gw,
            port,
        })
    }

    /// Click's unparse: `ADDR/LEN GW PORT`, with `tabs` as the `table`
    /// handler prints it.
    pub fn unparse(&self, tabs: bool) -> String {
        if !self.v6 {
            return IpRoute::new(
                Ipv4Addr::from(self.addr as u32),
                self.len,
                Ipv4Addr::from(self.gw as u32),
                self.port,
            )
            .unparse(tabs);
        }
        let sep = if tabs { '\t' } else { ' ' };
        let gw = if self.gw == 0 {
            "-".to_string()
        } else {
            Ipv6Addr::from(self.gw).to_string()
        };
        format!(
            "{}/{}{sep}{gw}{sep}{}",
            Ipv6Addr::from(self.addr),
            self.len,
            self.port
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Command {
    Add,
    Set,
    Remove,
}

/// Packets looked up together (a source's batch is 64): their
/// destinations and next hops are arrays on the stack.
const GROUP: usize = 64;

/// Routes of one family from the configuration above which the table is
/// large and mostly written, worth folding into 2 MiB pages.
const SETTLE_ROUTES: usize = 1 << 16;

/// The LPM element: both routing tables and the push path.
pub struct Lpm {
    rib4: Rib<u32>,
    rib6: Rib<u128>,
    hops: NextHops,
    /// For IPv4 next-hop id `k`: its output port (low 32 bits) and gateway
    /// (high 32 bits, 0 for none); id 0 (no route) is the dropped
    /// packets' port.
    fwd4: Vec<u64>,
    fib4: Box<dyn Fib4>,
    fib6: Box<dyn Fib6>,
    noutputs: usize,
    /// The output of bad packets: `BAD_OUTPUT`, else `noutputs` (dropped).
    bad_out: u32,
    header: bool,
    offset: Option<usize>,
    lookups: u64,
    no_route: u64,
    bad: u64,
    lookup_result: String,
    /// Output port of each packet of the current batch (the number of
    /// outputs for a packet that is dropped: no route, bad header).
    out: Vec<u32>,
    /// A batch for each output, and one for the dropped packets.
    outs: Vec<Batch>,
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::read("table"),
    HandlerSpec::read_write("lookup"),
    HandlerSpec::write("add"),
    HandlerSpec::write("set"),
    HandlerSpec::write("remove"),
    HandlerSpec::gauge("count"),
    HandlerSpec::gauge("count4"),
    HandlerSpec::gauge("count6"),
    HandlerSpec::counter("lookups"),
    HandlerSpec::counter("no_route"),
    HandlerSpec::counter("bad"),
];

impl Lpm {
    /// An empty table with `noutputs` outputs; `reference` selects the
    /// binary tries.
    pub fn new(noutputs: usize, reference: bool) -> Lpm {
        let (fib4, fib6): (Box<dyn Fib4>, Box<dyn Fib6>) = if reference {
            (Box::new(BinTrie::new(32)), Box::new(BinTrie::new(128)))
        } else {
            (Box::new(Dir248::new()), Box::new(Poptrie6::new()))
        };
        Lpm {
            rib4: Rib::new(),
            rib6: Rib::new(),
            hops: NextHops::default(),
            fwd4: vec![noutputs as u64],
            fib4,
            fib6,
            noutputs,
            bad_out: noutputs as u32,
            header: false,
            offset: None,
            lookups: 0,
            no_route: 0,
            bad: 0,
            lookup_result: String::new(),
            out: Vec::new(),
            // One batch an output, and one for the dropped packets.
            outs: (0..=noutputs).map(|_| Batch::new()).collect(),
        }
    }

    fn existing(&self, r: &Route) -> Option<Route> {
        let e = if r.v6 {
            self.rib6.get(&(r.addr, r.len))
        } else {
            self.rib4.get(&(r.addr as u32, r.len))
        }?;
        Some(Route {
            gw: e.gw,
            port: e.port as i32,
            ..*r
        })
    }

    /// Add `r` (port already checked). With `set`, replace a route for the
    /// same prefix and return it; otherwise fail with the existing route.
    pub fn add(&mut self, r: Route, set: bool) -> Result<Option<Route>, Route> {
        let old = self.existing(&r);
        if let (Some(o), false) = (old, set) {
            return Err(o);
        }
        let nh = self.hops.acquire(NextHop {
            gw: r.gw,
            port: r.port as u32,
        });
        if !r.v6 {
            let k = nh as usize;
            if self.fwd4.len() <= k {
                self.fwd4.resize(k + 1, 0);
            }
            self.fwd4[k] = u64::from(r.port as u32) | u64::from(r.gw as u32) << 32;
        }
        let e = RibEntry {
            gw: r.gw,
            port: r.port as u32,
            nh,
        };
        let prev = if r.v6 {
            let p = self.rib6.insert((r.addr, r.len), e);
            self.fib6.update(&self.rib6, r.addr, r.len);
            p
        } else {
            let p = self.rib4.insert((r.addr as u32, r.len), e);
            self.fib4.update(&self.rib4, r.addr as u32, r.len);
            p
        };
        if let Some(p) = prev {
            self.hops.release(p.nh);
        }
        Ok(old)
    }

    /// Remove the route `r` matches (same prefix, and same gateway and
    /// port unless `r.port` is negative); return it.
    pub fn remove(&mut self, r: &Route) -> Option<Route> {
        let old = self.existing(r)?;
        if r.port >= 0 && (r.gw != old.gw || r.port != old.port) {
            return None;
        }
        let e = if r.v6 {
            let e = self.rib6.remove(&(r.addr, r.len));
            self.fib6.update(&self.rib6, r.addr, r.len);
            e
        } else {
            let e = self.rib4.remove(&(r.addr as u32, r.len));
            self.fib4.update(&self.rib4, r.addr as u32, r.len);
            e
        };
        if let Some(e) = e {
            self.hops.release(e.nh);
        }
        Some(old)
    }

    /// Longest-prefix match for one address (the control path).
    pub fn lookup(&self, a: IpAddr) -> Option<NextHop> {
        let mut out = [0u32];
        match a {
            IpAddr::V4(a) => self.fib4.lookup(&[u32::from(a)], &mut out),
            IpAddr::V6(a) => self.fib6.lookup(&[u128::from(a)], &mut out),
        }
        (out[0] != 0).then(|| self.hops.get(out[0]))
    }

    /// Every route, IPv4 then IPv6, in prefix order.
    pub fn routes(&self) -> Vec<Route> {
        let r4 = self.rib4.iter().map(|(k, e)| Route {
            v6: false,
            addr: u128::from(k.0),
            len: k.1,
            gw: e.gw,
            port: e.port as i32,
        });
        let r6 = self.rib6.iter().map(|(k, e)| Route {
            v6: true,
            addr: k.0,
            len: k.1,
            gw: e.gw,
            port: e.port as i32,
        });
        r4.chain(r6).collect()
    }

    /// The `lookup` handler's text for `a`.
    pub fn lookup_text(&self, a: IpAddr) -> String {
        match self.lookup(a) {
            None => "-1".to_string(),
            Some(h) if h.gw == 0 => h.port.to_string(),
            Some(h) => match a {
                IpAddr::V4(_) => format!("{} {}", h.port, Ipv4Addr::from(h.gw as u32)),
                IpAddr::V6(_) => format!("{} {}", h.port, Ipv6Addr::from(h.gw)),
            },
        }
    }

    fn parse_checked(&self, text: &str, remove: bool) -> Option<Route> {
        let min = if remove { -1 } else { 0 };
        Route::parse(text, remove).filter(|r| r.port >= min && r.port < self.noutputs as i32)
    }

    /// Load routes (configuration arguments, then the file's lines); a
    /// later duplicate prefix is ignored.
    fn configure(&mut self, routes: &[String], file: Option<&str>) -> Result<(), Vec<String>> {
        let mut errors = Vec::new();
        for (i, a) in routes.iter().enumerate() {
            match self.parse_checked(a, false) {
                Some(r) => {
                    let _ = self.add(r, false);
                }
                None => errors.push(format!(
                    "argument {} should be 'ADDR/MASK [GATEWAY] OUTPUT'",
                    i + 1
                )),
            }
        }
        if let Some(f) = file {
            match std::fs::read_to_string(f) {
                Err(e) => errors.push(format!("FILE {f}: {e}")),
                Ok(text) => {
                    for (i, line) in text.lines().enumerate() {
                        let l = line.trim();
                        if l.is_empty() || l.starts_with('#') || l.starts_with("//") {
                            continue;
                        }
                        match self.parse_checked(l, false) {
                            Some(r) => {
                                let _ = self.add(r, false);
                            }
                            None if errors.len() < 10 => errors.push(format!(
                                "{f}:{}: expected 'ADDR/MASK [GATEWAY] OUTPUT'",
                                i + 1
                            )),
                            None => {}
                        }
                    }
                }
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    fn command(&mut self, cmd: Command, text: &str) -> Result<(), String> {
        let text = text.split("//").next().unwrap_or("").trim();
        let Some(r) = self.parse_checked(text, cmd == Command::Remove) else {
            return Err(if cmd == Command::Remove {
                "expected 'ADDR/MASK [GATEWAY OUTPUT]'".to_string()
            } else {
                "expected 'ADDR/MASK [GATEWAY] OUTPUT'".to_string()
            });
        };
        match cmd {
            Command::Add | Command::Set => self
                .add(r, cmd == Command::Set)
                .map(|_| ())
                .map_err(|e| format!("conflict with existing route '{}'", e.unparse(false))),
            Command::Remove => match self.remove(&r) {
                Some(_) => Ok(()),
                None => Err(format!("route '{}' not found", r.unparse(false))),
            },
        }
    }
}

/// A packet's destination address.
enum Dest {
    V4(u32),
    V6(u128),
    Bad,
}

/// Where the IP header of `p` starts: its network header, else `offset`.
#[inline(always)]
fn ip_header(p: &Packet, offset: Option<usize>) -> Option<&[u8]> {
    let off = match p.network_header_offset() {
        Some(o) => usize::try_from(o).ok()?,
        None => offset?,
    };
    p.data().get(off..)
}

/// The destination of `p`'s IPv4 header, if it has one (`HEADER`), as
/// [`destination`] reads it, with `def` the offset for packets without a
/// network header (`usize::MAX` for none). A network header in front of
/// the data gives a huge offset, as does `def`, and fails the range test.
#[inline(always)]
fn dst4(p: &Packet, def: usize) -> Option<u32> {
    let nh = p.anno().network_header;
    let off = if nh != NO_HEADER {
        usize::from(nh).wrapping_sub(p.headroom())
    } else {
        def
    };
    let ip = p.data().get(off..off.wrapping_add(20))?;
    // Version 4 and a header length (IHL) of at least five words: the
    // first byte 0x45 to 0x4f, one compare.
    (ip[0].wrapping_sub(0x45) < 11).then(|| u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]))
}

/// The destination of `p`'s IPv6 header, if it has one (`HEADER`).
#[inline(always)]
fn dst6(p: &Packet, offset: Option<usize>) -> Option<u128> {
    let ip = ip_header(p, offset)?.get(..40)?;
    let b: [u8; 16] = ip[24..40].try_into().ok()?;
    (ip[0] >> 4 == 6).then(|| u128::from_be_bytes(b))
}

/// The destination of `p`: the `DST_IP` annotation, or with `header` the
/// IP header's (at the network header, else at `offset`).
fn destination(header: bool, offset: Option<usize>, p: &Packet) -> Dest {
    if !header {
        return Dest::V4(u32::from(p.anno().dst_ip()));
    }
    let Some(ip) = ip_header(p, offset) else {
        return Dest::Bad;
    };
    match ip.first().map(|b| b >> 4) {
        Some(4) if ip.len() >= 20 && ip[0] & 15 >= 5 => {
            Dest::V4(u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]))
        }
        Some(6) if ip.len() >= 40 => {
            let mut b = [0u8; 16];
            b.copy_from_slice(&ip[24..40]);
            Dest::V6(u128::from_be_bytes(b))
        }
        _ => Dest::Bad,
    }
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let file: Option<String> = a.read("FILE");
    let header = a.read_or("HEADER", false);
    let offset: Option<usize> = a.read("OFFSET");
    let imp: String = a.read_or("IMPL", "fast".to_string());
    let bad_output: Option<usize> = a.read("BAD_OUTPUT");
    let routes = a.read_rest();
    let reference = match imp.to_ascii_lowercase().as_str() {
        "fast" => false,
        "reference" => true,
        _ => {
            a.error("IMPL: expected 'fast' or 'reference'");
            false
        }
    };
    if let Some(b) = bad_output.filter(|&b| b >= ctx.noutputs()) {
        a.error(format!(
            "BAD_OUTPUT: output {b} out of range (the element has {} outputs)",
            ctx.noutputs()
        ));
    }
    a.complete().map_err(|e| e.0)?;
    let mut e = Lpm::new(ctx.noutputs(), reference);
    if let Some(b) = bad_output {
        e.bad_out = b as u32;
    }
    e.header = header;
    e.offset = offset;
    e.configure(&routes, file.as_deref())?;
    if e.rib4.len() >= SETTLE_ROUTES {
        e.fib4.settle();
    }
    if e.rib6.len() >= SETTLE_ROUTES {
        e.fib6.settle();
    }
    Ok(Box::new(e))
}

impl Lpm {
    /// The fast path, with the DIR-24-8 table `t4`: the output of each
    /// packet of `batch` into `out` (which holds the drop port), and its
    /// annotation; returns the number of bad packets. In groups of 64: one
    /// pass reads the IPv4 destinations and prefetches their first-level
    /// entries, listing the other packets; a second pass, which calls
    /// nothing, resolves the IPv4 ones; the listed packets (IPv6, bad)
    /// follow.
    fn route_fast(&self, t4: &Dir248, batch: &mut [Packet], out: &mut [u32]) -> u64 {
        let def = self.offset.unwrap_or(usize::MAX);
        batch
            .chunks_mut(GROUP)
            .zip(out.chunks_mut(GROUP))
            .map(|(group, out)| self.group4(t4, def, group, out))
            .sum()
    }

    /// [`Lpm::route_fast`] for one group (a function of its own, so that
    /// its loops keep their state in registers).
    #[inline(never)]
    fn group4(&self, t4: &Dir248, def: usize, group: &mut [Packet], out: &mut [u32]) -> u64 {
        let mut a4 = [0u32; GROUP];
        let mut rest = [0u8; GROUP];
        let mut nr = 0;
        if self.header {
            // Packets that are not IPv4 look up their `DST_IP` annotation
            // here, kept in `a4` so that `route_rest` can put it back on
            // the bad ones, and get their output and annotation from
            // `route_rest`.
            for ((i, p), a4) in group.iter().enumerate().zip(&mut a4) {
                match dst4(p, def) {
                    Some(a) => {
                        t4.prefetch(a);
                        *a4 = a;
                    }
                    None => {
                        *a4 = u32::from(p.anno().dst_ip());
                        rest[nr % GROUP] = i as u8;
                        nr += 1;
                    }
                }
            }
        } else {
            for (p, a4) in group.iter().zip(&mut a4) {
                let a = u32::from(p.anno().dst_ip());
                t4.prefetch(a);
                *a4 = a;
            }
        }
        // The annotation is the gateway, else the destination (with
        // `DST_IP` as the source, that is the value it had); a packet
        // without a route is dropped, so its annotation does not matter.
        let drop_fwd = self.noutputs as u64;
        if nr == group.len() {
            return self.route_rest(group, out, &rest[..nr], &a4);
        }
        for ((p, o), &a) in group.iter_mut().zip(out.iter_mut()).zip(&a4) {
            let f = self.fwd4.get(t4.get(a) as usize).copied();
            let f = f.unwrap_or(drop_fwd);
            let gw = (f >> 32) as u32;
            let v = if gw != 0 { gw } else { a };
            p.anno_mut().set_dst_ip(Ipv4Addr::from(v));
            *o = f as u32;
        }
        if nr == 0 {
            return 0;
        }
        self.route_rest(group, out, &rest[..nr], &a4)
    }

    /// The packets `rest` of `group` that had no IPv4 header: IPv6 ones
    /// through the IPv6 table (a batched walk), the others bad (counted in
    /// the result; to `BAD_OUTPUT`, else dropped), their `DST_IP`
    /// annotation put back from `a4` (as `group4` found it).
    #[inline(never)]
    fn route_rest(
        &self,
        group: &mut [Packet],
        out: &mut [u32],
        rest: &[u8],
        a4: &[u32; GROUP],
    ) -> u64 {
        let drop_out = self.noutputs as u32;
        let mut a6 = [0u128; GROUP];
        let mut i6 = [0u8; GROUP];
        let (mut n6, mut bad) = (0, 0);
        // Reads by `get` and indices modulo the arrays' length: no panic
        // path in the loops (none is out of range).
        for &i in rest {
            let k = usize::from(i);
            let (Some(p), Some(o)) = (group.get_mut(k), out.get_mut(k)) else {
                continue;
            };
            match dst6(p, self.offset) {
                Some(a) => {
                    a6[n6 % GROUP] = a;
                    i6[n6 % GROUP] = i;
                    n6 += 1;
                }
                None => {
                    *o = self.bad_out;
                    let orig = a4.get(k).copied().unwrap_or(0);
                    p.anno_mut().set_dst_ip(Ipv4Addr::from(orig));
                    bad += 1;
                }
            }
        }
        if n6 > 0 {
            let mut r6 = [0u32; GROUP];
            let n6 = n6.min(GROUP);
            self.fib6.lookup(&a6[..n6], &mut r6[..n6]);
            for ((&i, &id), &a) in i6.iter().zip(&r6).zip(&a6).take(n6) {
                let k = usize::from(i);
                let (Some(p), Some(o)) = (group.get_mut(k), out.get_mut(k)) else {
                    continue;
                };
                let Some(h) = self.hops.find(id) else {
                    *o = drop_out;
                    continue;
                };
                *o = h.port;
                let a = if h.gw != 0 { h.gw } else { a };
                p.anno_mut().user[offsets::DST_IP..offsets::DST_IP + 16]
                    .copy_from_slice(&a.to_be_bytes());
            }
        }
        bad
    }

    /// The reference path (`IMPL reference`): a packet at a time, each
    /// destination read, looked up and annotated as the element's
    /// description says; same results as [`Lpm::route_fast`].
    fn route_reference(&self, batch: &mut [Packet], out: &mut [u32]) -> u64 {
        let mut bad = 0;
        for (p, o) in batch.iter_mut().zip(out.iter_mut()) {
            let a = match destination(self.header, self.offset, p) {
                Dest::V4(a) => IpAddr::V4(Ipv4Addr::from(a)),
                Dest::V6(a) => IpAddr::V6(Ipv6Addr::from(a)),
                Dest::Bad => {
                    *o = self.bad_out;
                    bad += 1;
                    continue;
                }
            };
            let Some(h) = self.lookup(a) else {
                continue;
            };
            *o = h.port;
            if h.gw != 0 || self.header {
                let u = &mut p.anno_mut().user;
                match a {
                    IpAddr::V4(a) => {
                        let g = Ipv4Addr::from(h.gw as u32);
                        u[..4].copy_from_slice(&if h.gw != 0 { g } else { a }.octets());
                    }
                    IpAddr::V6(a) => {
                        let g = Ipv6Addr::from(h.gw);
                        u[..16].copy_from_slice(&if h.gw != 0 { g } else { a }.octets());
                    }
                }
            }
        }
        bad
    }
}

impl Element for Lpm {
    fn push(&mut self, _port: usize, mut batch: Batch, ctx: &mut Ctx<'_>) {
        let n = batch.len();
        self.lookups += n as u64;
        // Dropped packets go to the batch after the outputs'.
        let drop_out = self.noutputs as u32;
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        out.resize(n, drop_out);
        let bad = match self.fib4.dir248() {
            Some(t4) => self.route_fast(t4, batch.as_mut_slice(), &mut out),
            None => self.route_reference(batch.as_mut_slice(), &mut out),
        };
        self.bad += bad;
        self.out = out;
        // The split: the whole batch when every packet takes one output,
        // else `Batch::split_into` (counted first) onto the outputs'
        // batches and the dropped ones', which is released at once (the
        // dropped packets that were not bad had no route; with
        // `BAD_OUTPUT` the bad ones left on that output instead).
        let first = self.out.first().copied().unwrap_or(drop_out);
        if first != drop_out && self.out.iter().all(|&o| o == first) {
            ctx.push(first as usize, batch);
            return;
        }
        batch.split_into(&self.out, &mut self.outs);
        let dropped = std::mem::take(&mut self.outs[self.noutputs]);
        let bad_dropped = if self.bad_out == drop_out { bad } else { 0 };
        self.no_route += dropped.len() as u64 - bad_dropped;
        drop(dropped);
        for (i, b) in self.outs[..self.noutputs].iter_mut().enumerate() {
            if !b.is_empty() {
                ctx.push(i, std::mem::take(b));
            }
        }
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "table" => self.routes().iter().fold(String::new(), |mut s, r| {
                s.push_str(&r.unparse(true));
                s.push('\n');
                s
            }),
            "lookup" => self.lookup_result.clone(),
            "count" => (self.rib4.len() + self.rib6.len()).to_string(),
            "count4" => self.rib4.len().to_string(),
            "count6" => self.rib6.len().to_string(),
            "lookups" => self.lookups.to_string(),
            "no_route" => self.no_route.to_string(),
            "bad" => self.bad.to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "add" => self.command(Command::Add, value),
            "set" => self.command(Command::Set, value),
            "remove" => self.command(Command::Remove, value),
            "lookup" => {
                let v = value.split("//").next().unwrap_or("").trim();
                match v.parse::<IpAddr>() {
                    Ok(a) => {
                        self.lookup_result = self.lookup_text(a);
                        Ok(())
                    }
                    Err(_) => Err(format!("expected IP address, not '{value}'")),
                }
            }
            _ => return None,
        })
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        // With `BAD_OUTPUT` the bad packets leave on it: not drops.
        let bad = if self.bad_out as usize == self.noutputs {
            self.bad
        } else {
            0
        };
        vec![("no route", self.no_route), ("bad header", bad)]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_families() {
        let r = Route::parse("10.0.0.0/8 10.0.0.1 2", false).unwrap();
        assert_eq!(
            (r.v6, r.addr, r.len, r.gw, r.port),
            (false, 0x0a00_0000, 8, 0x0a00_0001, 2)
        );
        let r = Route::parse("2001:db8::1/32 - 1", false).unwrap();
        assert!(r.v6);
        assert_eq!(
            r.addr,
            u128::from("2001:db8::".parse::<Ipv6Addr>().unwrap())
        );
        assert_eq!(r.unparse(false), "2001:db8::/32 - 1");
        let r = Route::parse("::/0 fe80::1 0", false).unwrap();
        assert_eq!(r.unparse(true), "::/0\tfe80::1\t0");
        assert_eq!(Route::parse("2001:db8::/32", true).unwrap().port, -1);
        assert_eq!(Route::parse("2001:db8::/129 1", false), None);
        assert_eq!(super::super::lpmtable::mask4(8), 0xff00_0000);
    }
}

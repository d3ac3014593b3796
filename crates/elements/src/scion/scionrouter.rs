//! A SCION border router's data plane (scionproto v0.15.1 compatible) on
//! Ethernet/IP/UDP underlay frames: parsing, hop-field validation (expiry,
//! AES-CMAC), interface checks, SegID chaining and path advancement
//! (crossovers, peering), one-hop paths, local delivery, SCMP errors and
//! the underlay rewrite.
//!
//! The fused form of the step elements (`SCIONConfig`, `SCIONParse`,
//! `SCIONCheckHop`, `SCIONVerifyHop`, `SCIONRoute`, `SCIONCheckEgress`,
//! `SCIONAdvancePath`, `SCIONEgress`, `SCIONDeliver`, `SCIONOneHop`,
//! `SCIONSCMPError`): the same router, the same step functions, in one
//! element (`nfs/scion-br-fused.click`; `nfs/scion-br.click` is the step
//! form). Same outputs, bytes and handlers.
//!
//! # Synopsis
//! `SCIONRouter(CONFIG [, KEYWORDS])`
//!
//! # Ports
//! One agnostic input of Ethernet frames as captured on the router's links
//! (IPv4 or IPv6, UDP). Push output 0: every frame the router sends
//! (forwarded packets, local deliveries, SCMP replies), with the underlay
//! addresses of the link or host it goes to. Optional push output 1: the
//! slow path (router alerts, BFD, EPIC-HP), frames untouched. Optional push
//! output 2: silently dropped frames (dropped when not connected).
//!
//! # Arguments
//! - `CONFIG` (string, mandatory): the reference router's configuration
//!   folder with `topology.json` and `keys/master0.key`.
//! - `ID` (string, default: the first border router in name order): this
//!   router's name in `topology.json`'s `border_routers`. Interfaces of the
//!   other routers are sibling links reached through their internal
//!   address.
//! - `NOW` (timestamp or `system`, default `system`): fixes the
//!   data-plane clock (Unix seconds) for replaying captures.
//! - `IMPL` (`fast` or `reference`, default `fast`): `reference` runs the
//!   packets one at a time and computes each MAC with the textbook RFC 4493
//!   CMAC (subkeys derived per call).
//!
//! The ingress link of a frame is found from its underlay addresses: our
//! interface whose `underlay.local` is the destination and
//! `underlay.remote` the source, else the internal address (hosts and
//! sibling routers); anything else is dropped (`unknown_link`). Processing
//! follows §9.3 of `specs/scion-dataplane.md` step by step; see
//! `docs/scion.md` for the choices where the reference code and its
//! documentation disagree. Sent frames carry zero Ethernet addresses, an
//! IPv4 header (TTL 64, DF) or IPv6 header (hop limit 64) of the
//! destination's family, and the link's or internal address's UDP port.
//!
//! # Handlers
//! - `now` (read/write): the data-plane clock in Unix seconds; writing a
//!   timestamp fixes it, writing `system` returns to the system clock.
//! - `drops_underlay`, `drops_unknown_link`, `drops_malformed`,
//!   `drops_invalid_path`, `drops_path_type`, `drops_transit_source`,
//!   `drops_no_scmp`, `drops_one_hop`, `drops_undeliverable` (counters):
//!   silent drops by reason.
//! - `scmp_19`, `scmp_33`, `scmp_34`, `scmp_48` ... `scmp_53` (counters):
//!   ParameterProblem replies by code; `scmp_unreachable`:
//!   DestinationUnreachable replies.
//! - `slow_path` (counter): frames sent to output 1.
//! - `ifN_in_packets`, `ifN_in_bytes`, `ifN_out_packets`, `ifN_out_bytes`
//!   (counters) for every interface id N of the AS (siblings' interfaces
//!   count what this router hands to them), and `internal_in_packets` ...
//!   `internal_out_bytes` for the internal link. Bytes are SCION bytes
//!   (UDP payload).
//! - `interfaces` (read): one line per interface: `IFID TYPE NEIGHBOUR
//!   LOCAL REMOTE [sibling]`.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true)
//!     -> br :: SCIONRouter(CONFIG topo, NOW 1700000000)
//!     -> ToDump(out.pcap);
//! br[1] -> ToDump(slow.pcap);
//! ```
//!
//! # Implementation
//! Two pipelines share the batch. The **fast path** (`fastpath.rs`) takes
//! the common case of a border router: a standard-path frame on one of our
//! IPv4 links (no IP options, UDP checksum set) that transits (one
//! hop-field MAC) or crosses over (two) to an interface reached over IPv4.
//! It runs in chunks of 64 frames and three passes: pass 1 reads each
//! frame once, at fixed offsets, as little-endian words compared with
//! tables kept in the same form (link key = the 12 address and port bytes;
//! interface ids and ISD-AS pre-swapped; per link, the interfaces a frame
//! may leave through as a bitmask: link-type pair rule and IPv4 in one
//! test). What follows from a frame's shape alone (underlay fixed fields
//! and link, SCION next header, header length, path and address types,
//! and all that PathMeta decides: where the current info and hop fields
//! lie, crossover, the new PathMeta) is derived once and kept for the
//! frames after it whose masked shape bytes and PathMeta are the same
//! (eight shapes, direct-mapped, the last one tried first); per frame only
//! lengths, ISD-ASes, info and hop fields are checked. It writes a 40-byte
//! record per frame (expected MACs, new
//! SegIDs and PathMeta, both new checksums, egress) into a fixed array; the
//! MAC input block is built from the info and hop words with the CMAC
//! subkey K1 already XORed in. Pass 2 encrypts all blocks of the chunk in
//! one call (VAES, 16 blocks per pass: one hop MAC is a single AES block,
//! a few ns). Pass 3 compares the MACs and, when they match, writes the
//! 2-byte SegID and 4-byte PathMeta fields and a 42-byte per-interface
//! underlay template with the lengths and checksums from pass 1 (UDP
//! checksum updated incrementally, RFC 1624; IPv4 header sum precomputed
//! per interface), then counts. When every frame of the batch is sent, the
//! input batch itself goes out on output 0. No `Vec` grows per packet, no
//! `SocketAddr` or endpoint is built, nothing is parsed twice.
//!
//! Anything else (IPv6 underlay, the internal network, extension headers,
//! peering, alerts, expiry, local delivery, one-hop paths, every error)
//! takes the **general pipeline** of `core.rs` in the same batch: stage 1
//! reads the frame in place, calling the step functions the step elements
//! call (`path_hop`, `check_hop`, `hop_mac`, `route`, `check_egress`,
//! `advance`) one after the other, and records the MAC input blocks and
//! 16-bit writes its verdict needs (its blocks join the chunk's AES call);
//! stage 2
//! compares MACs in constant time, applies the writes and rebuilds the
//! underlay, or builds the SCMP reply in a fresh buffer (quote of at most
//! 1232 bytes). A fast-path frame whose MAC does not match is still
//! unchanged and is handed to the general pipeline, which answers it. Both
//! give the same bytes, verdicts and counters (differential tests against
//! `IMPL reference`, which runs the general pipeline one frame at a time
//! with the textbook CMAC). Slow-path frames are never written. Click has
//! no SCION elements.
//!
//! Measured (docs/performance.md): the fast path cut the instructions per
//! packet from about 1500 to 566 (transit) and 1850 to 658 (crossover);
//! keeping frame shapes (session 5) cut them to 422 and 499 (about 100
//! and 115 cycles; 31-32 and 25-28 Mpps): pass 1 is now about 280
//! instructions on a kept shape, pass 3 (rewrite) about 130, AES 15-20.
//! Alternating shapes (transit and crossover frames in turn) cost 489.
//! Pass 1 reads the fixed headers from a 114-byte prefix (the shortest
//! frame on the route), so only the info and hop fields are read at
//! checked offsets. The step form of the same router costs about 2,740
//! instructions per transit packet and 3,590 per crossover
//! (docs/performance.md, session 5): each step re-reads the header view
//! and its annotations, records its verdict there and pushes its own
//! batch, and none of them has the fast path. That is why this fused
//! element stays.

use super::core::{Dataplane, Verdict, DROP_NAMES, SCMP_CODES};
use super::fastpath::FastPath;
use super::mac::cmac_reference;
use super::topology::{LinkType, Topology};
use linerate_args::Timestamp;
use linerate_runtime::time::system_now_ns;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use std::any::Any;
use std::path::Path;

/// The `SCIONRouter` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "SCIONRouter",
    port_count: "1/1-3",
    processing: "a/h",
    doc: element_doc!("scion/scionrouter"),
    make,
};

const IF_HANDLERS: [&str; 4] = ["in_packets", "in_bytes", "out_packets", "out_bytes"];

pub(crate) struct SCIONRouter {
    dp: Dataplane,
    fixed_now: bool,
    reference: bool,
    handlers: &'static [HandlerSpec],
    fast: FastPath,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    use linerate_args::Args;
    let mut a = Args::new(&ctx.args);
    let (topo, now) = read_config(&mut a)?;
    let imp: String = a.read_or("IMPL", "fast".to_string());
    a.complete().map_err(|e| e.0)?;
    let reference = match imp.as_str() {
        "fast" => false,
        "reference" => true,
        _ => return Err(vec!["IMPL: expected fast or reference".into()]),
    };
    SCIONRouter::new(&topo, now, reference)
        .map(|e| Box::new(e) as Box<dyn Element>)
        .map_err(|e| vec![e])
}

/// Reads `CONFIG`, `ID` and `NOW` (shared with `SCIONConfig`): the topology
/// and the fixed clock, if any.
pub(super) fn read_config(
    a: &mut linerate_args::Args,
) -> Result<(Topology, Option<u64>), Vec<String>> {
    let config: Option<String> = a.read_mp("CONFIG");
    let id: Option<String> = a.read::<String>("ID").filter(|s| !s.is_empty());
    let now: String = a.read_or("NOW", "system".to_string());
    let now = match now.trim() {
        "system" => None,
        t => Some(
            crate::parse_value::<Timestamp>(t)
                .map_err(|e| vec![format!("NOW: {e}")])?
                .nanos,
        ),
    };
    let dir = config.ok_or_else(|| vec!["CONFIG: missing".to_string()])?;
    let topo = Topology::load(Path::new(&dir), id.as_deref()).map_err(|e| vec![e])?;
    Ok((topo, now))
}

/// The handler list of a router's data plane (`SCIONRouter`, `SCIONConfig`).
pub(super) fn handler_specs(dp: &Dataplane) -> &'static [HandlerSpec] {
    let mut h = vec![
        HandlerSpec::read_write("now"),
        HandlerSpec::read("interfaces"),
    ];
    for n in DROP_NAMES {
        h.push(HandlerSpec::counter(leak(format!("drops_{n}"))));
    }
    for c in SCMP_CODES {
        h.push(HandlerSpec::counter(leak(format!("scmp_{c}"))));
    }
    h.push(HandlerSpec::counter("scmp_unreachable"));
    h.push(HandlerSpec::counter("slow_path"));
    let names: Vec<String> = dp
        .ifaces
        .iter()
        .map(|f| format!("if{}", f.ifid))
        .chain(std::iter::once("internal".to_string()))
        .collect();
    for n in &names {
        for s in IF_HANDLERS {
            h.push(HandlerSpec::counter(leak(format!("{n}_{s}"))));
        }
    }
    // Handler names depend on the topology; the list lives as long as the
    // process (one per configured router).
    Box::leak(h.into_boxed_slice())
}

impl SCIONRouter {
    pub(crate) fn new(
        topo: &Topology,
        now: Option<u64>,
        reference: bool,
    ) -> Result<SCIONRouter, String> {
        let dp = Dataplane::new(topo, now.unwrap_or_else(system_now_ns))?;
        Ok(SCIONRouter {
            fast: FastPath::new(&dp),
            handlers: handler_specs(&dp),
            dp,
            fixed_now: now.is_some(),
            reference,
        })
    }

    fn process(&mut self, batch: Batch) -> [Batch; 3] {
        if !self.reference {
            return self.fast.process(&mut self.dp, batch);
        }
        let mut outs = [Batch::new(), Batch::new(), Batch::new()];
        for mut p in batch {
            let plan = self.dp.stage1(p.data());
            let mut macs = [[0u8; 16]; 2];
            let n = usize::from(plan.nmacs);
            for (m, b) in macs.iter_mut().zip(&plan.blocks).take(n) {
                *m = cmac_reference(self.dp.key(), b);
            }
            let (v, r) = self
                .dp
                .finish(&mut p, &plan, &macs[..usize::from(plan.nmacs)]);
            route(p, &mut outs, v, r);
        }
        outs
    }
}

/// Sends the verdict of one finished packet to its output batch.
#[inline]
fn route(p: Packet, outs: &mut [Batch; 3], v: Verdict, reply: Option<Packet>) {
    match v {
        Verdict::Forward(_) | Verdict::Deliver(_) => outs[0].push(p),
        Verdict::Scmp(..) => {
            if let Some(r) = reply {
                outs[0].push(r);
            }
        }
        Verdict::Slow => outs[1].push(p),
        Verdict::Drop(_) => outs[2].push(p),
    }
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn link_name(t: LinkType) -> &'static str {
    match t {
        LinkType::Core => "core",
        LinkType::Parent => "parent",
        LinkType::Child => "child",
        LinkType::Peer => "peer",
    }
}

impl Element for SCIONRouter {
    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        if !self.fixed_now {
            self.dp.now_ns = system_now_ns();
        }
        let [o0, o1, o2] = self.process(batch);
        if !o0.is_empty() {
            ctx.push(0, o0);
        }
        if !o1.is_empty() && ctx.noutputs() > 1 {
            ctx.push(1, o1);
        }
        if !o2.is_empty() && ctx.noutputs() > 2 {
            ctx.push(2, o2);
        }
    }

    fn action(&mut self, batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        if !self.fixed_now {
            self.dp.now_ns = system_now_ns();
        }
        let [o0, o1, o2] = self.process(batch);
        if !o1.is_empty() && ctx.noutputs() > 1 {
            ctx.push(1, o1);
        }
        if !o2.is_empty() && ctx.noutputs() > 2 {
            ctx.push(2, o2);
        }
        o0
    }

    fn handlers(&self) -> &[HandlerSpec] {
        self.handlers
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        read_handler(&self.dp, name)
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        write_handler(&mut self.dp, &mut self.fixed_now, name, value)
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        drops(&self.dp)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Reads a data-plane handler (`SCIONRouter`, `SCIONConfig`).
pub(super) fn read_handler(dp: &Dataplane, name: &str) -> Option<String> {
    let s = &dp.stats;
    if name == "now" {
        let n = dp.now_ns;
        return Some(format!("{}.{:09}", n / 1_000_000_000, n % 1_000_000_000));
    }
    if name == "interfaces" {
        let mut out = String::new();
        for f in &dp.ifaces {
            out.push_str(&format!(
                "{} {} {} {} {}{}\n",
                f.ifid,
                link_name(f.link_to),
                f.neighbor,
                super::core::ep_socket(&f.local),
                super::core::ep_socket(&f.remote),
                if f.ours { "" } else { " sibling" }
            ));
        }
        return Some(out.trim_end().to_string());
    }
    if name == "slow_path" {
        return Some(s.slow.to_string());
    }
    if name == "scmp_unreachable" {
        return Some(s.scmp[9].to_string());
    }
    if let Some(r) = name.strip_prefix("drops_") {
        let i = DROP_NAMES.iter().position(|n| *n == r)?;
        return Some(s.drops[i].to_string());
    }
    if let Some(c) = name.strip_prefix("scmp_") {
        let c: u8 = c.parse().ok()?;
        let i = SCMP_CODES.iter().position(|x| *x == c)?;
        return Some(s.scmp[i].to_string());
    }
    let (ifname, what) = IF_HANDLERS
        .iter()
        .find_map(|w| Some((name.strip_suffix(w)?.strip_suffix('_')?, *w)))?;
    let idx = if ifname == "internal" {
        dp.ifaces.len()
    } else {
        let id: u16 = ifname.strip_prefix("if")?.parse().ok()?;
        dp.ifaces.iter().position(|f| f.ifid == id)?
    };
    let c = s.ifs[idx];
    Some(
        match what {
            "in_packets" => c.in_pkts,
            "in_bytes" => c.in_bytes,
            "out_packets" => c.out_pkts,
            _ => c.out_bytes,
        }
        .to_string(),
    )
}

/// Writes the `now` handler: a timestamp fixes the clock, `system` frees it.
pub(super) fn write_handler(
    dp: &mut Dataplane,
    fixed_now: &mut bool,
    name: &str,
    value: &str,
) -> Option<Result<(), String>> {
    if name != "now" {
        return None;
    }
    let v = value.trim();
    if v == "system" {
        *fixed_now = false;
        dp.now_ns = system_now_ns();
        return Some(Ok(()));
    }
    Some(crate::parse_value::<Timestamp>(v).map(|t| {
        *fixed_now = true;
        dp.now_ns = t.nanos;
    }))
}

/// The drop counters for the run summary.
pub(super) fn drops(dp: &Dataplane) -> Vec<(&'static str, u64)> {
    DROP_NAMES
        .iter()
        .zip(dp.stats.drops.iter())
        .filter(|(_, n)| **n > 0)
        .map(|(r, n)| (*r, *n))
        .collect()
}

//! Filters IP packets by contents with tcpdump-like rules.
//!
//! # Synopsis
//! `IPFilter(ACTION_1 PATTERN_1, ..., ACTION_N PATTERN_N)`
//!
//! # Ports
//! One push input; any number of push outputs.
//!
//! # Arguments
//! Each argument is an ACTION followed by a PATTERN. ACTION is `allow`
//! (output 0), `deny` or `drop` (drop the packet), or an output number.
//! PATTERN uses IPClassifier's language: `[src|dst|src or dst|src and dst]
//! host ADDR`, `net PREFIX` (or `ADDR mask MASK`), `[tcp|udp] port PORT`
//! with `==`, `!=`, `<`, `>`, `<=`, `>=` and `& MASK`, `ip proto PROTO`
//! (names `icmp igmp ipip tcp udp` or numbers), `tcp opt FLAG`
//! (`syn fin ack rst psh urg`), `ip vers`, `ip hl`, `ip id`, `ip len`,
//! `ip tos`, `ip dscp`, `ip ect`, `ip ce`, `ip ttl`, `ip frag`,
//! `ip unfrag`, `tcp win`, `icmp type TYPE` (names or numbers),
//! `ip[POS:LEN]`, `transp[POS:LEN]`, `tcp[POS:LEN]` byte tests,
//! `[src|dst] ether host ETH`, combined with `and`/`&&` (or juxtaposition),
//! `or`/`||`, `not`/`!`, `COND ? A : B` and parentheses; `true`, `false`;
//! a pattern of `-`, `any` or `all` matches everything. Qualifiers carry
//! over (`src port 80 or 81`). Port, ICMP type, TCP option and transport
//! byte tests only match first fragments. Packets are tested against the
//! rules in order; the first matching rule decides; packets matching no
//! rule are dropped. A malformed rule is rejected with its number (from 0)
//! and the character position of the error.
//!
//! # Handlers
//! - `program` (read): the compiled classifier: its size and shape, then
//!   one line per rule.
//! - `config` (read/write): the rules; writing new rules replaces the
//!   classifier at once, between two batches, without stopping traffic
//!   (and empties the decision cache). Invalid rules are rejected and the
//!   old ones stay.
//! - `cache_size` (read/write): entries in the decision cache (default
//!   32768; rounded up to a power of two, at least 4; 0 turns
//!   the cache off). Writing empties the cache and its counters. linerate
//!   only.
//! - `cache_hits`, `cache_misses` (read): packets whose decision came from
//!   the cache, and packets that missed it and walked the tree (packets
//!   too short for the tree's key are neither; both stay 0 while the cache
//!   is off). linerate only.
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> Strip(14) -> MarkIPHeader
//!   -> IPFilter(allow src net 10.0.0.0/8 && dst tcp port 80 or 443,
//!               1 icmp type echo,
//!               deny all)
//!   -> Discard;
//! ```
//!
//! # Implementation
//! The rules are compiled into a HyperSplit-style decision tree over
//! source, destination, protocol and ports (see `docs/classifier.md`):
//! lookup cost grows with the tree depth, not with the number of rules, and
//! 8,000 rules compile in milliseconds. In front of the tree sits an
//! exact-match decision cache (as Open vSwitch's exact-match cache) keyed
//! by the packet's addresses, protocol and ports: decisions the tree made
//! without evaluating a residual test are a function of that key, so they
//! are remembered (32,768 entries in 4-way sets, 512 KiB) and later packets
//! of the same flow skip the tree. Its benefit depends on the traffic's
//! flow locality; see `docs/performance.md` for figures with and without
//! it. Tests the tree cannot split on (TOS,
//! TTL, flags, byte tests) are evaluated only in the leaves. Decisions for a
//! whole batch are made first (a rule's output read from a table), then the
//! batch is forwarded whole when every packet goes the same way; with one
//! output, the kept packets are moved to the front by one swap each and
//! the dropped ones released together (measured on the issue 3 pipeline
//! with 1,000 rules: 368 to 335 instructions a packet for the pipeline,
//! with the cache's cheaper key packing and compare; see
//! `docs/performance.md`, session 8). `program` prints linerate's tree summary, not
//! Click's instruction listing. `ether host` reads the 14 bytes right before
//! the network header inside the packet data (there is no MAC header
//! annotation), so it does not match after `Strip(14)`.

use super::compile::{compile_ip_rules, DecisionCache, IpRules, PacketView};
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use std::any::Any;

/// The `IPFilter` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "IPFilter",
    port_count: "1/-",
    processing: "h/h",
    doc: element_doc!("classification/ipfilter"),
    make,
};

/// IPFilter and IPClassifier share this element; `filter` tells the rule
/// syntax apart.
pub(crate) struct IpClassify {
    rules: IpRules,
    cache: DecisionCache,
    filter: bool,
    noutputs: usize,
    /// Each rule's decision: its output, or `noutputs` for drop.
    dest: Vec<u16>,
    decisions: Vec<u16>,
    outs: Vec<Batch>,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    IpClassify::make(ctx, true)
}

/// The packet's network header and the Ethernet header before it.
#[inline]
pub(crate) fn view(p: &Packet) -> PacketView<'_> {
    // `Packet::network_header`, with a header before the data start (a
    // negative offset) turned into an offset past the end, so that one
    // range check covers both.
    let d = p.data();
    let ip = match p.network_header_offset() {
        Some(o) => d.get(o as usize..).unwrap_or(&[]),
        None => &[],
    };
    let ether = match p.network_header_offset() {
        Some(o) if o >= 14 => p.data().get(o as usize - 14..o as usize),
        _ => None,
    };
    PacketView { ip, ether }
}

/// Each rule's decision as `push` uses it: its output, or `noutputs` for
/// drop.
fn dest(rules: &IpRules, noutputs: usize) -> Vec<u16> {
    rules
        .outputs
        .iter()
        .map(|o| o.unwrap_or(noutputs) as u16)
        .collect()
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::read("program"),
    HandlerSpec::read_write("config"),
    HandlerSpec::read_write("cache_size"),
    HandlerSpec::read("cache_hits"),
    HandlerSpec::read("cache_misses"),
];

impl IpClassify {
    pub(crate) fn make(
        ctx: &ConfigureCtx<'_>,
        filter: bool,
    ) -> Result<Box<dyn Element>, Vec<String>> {
        let n = ctx.noutputs();
        if !filter && ctx.args.len() != n {
            return Err(vec![format!("need {} arguments, one per output port", n)]);
        }
        let rules = compile_ip_rules(&ctx.args, n, filter)?;
        Ok(Box::new(IpClassify {
            dest: dest(&rules, n),
            rules,
            cache: DecisionCache::new(DecisionCache::DEFAULT_ENTRIES),
            filter,
            noutputs: n,
            decisions: Vec::with_capacity(linerate_runtime::MAX_BATCH),
            outs: (0..=n).map(|_| Batch::new()).collect(),
        }))
    }
}

impl Element for IpClassify {
    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        // Decisions are output numbers, with dropped packets going to one
        // more batch (`outs[noutputs]`), so the split below moves every
        // packet the same way, without a branch on its fate.
        let d = &mut self.decisions;
        d.clear();
        let dest = &self.dest;
        let drop = self.noutputs as u16;
        self.rules.classifier.lookup_cached(
            batch.as_slice(),
            view,
            |r| r.map_or(drop, |r| dest[r]),
            d,
            &mut self.cache,
        );
        let first = d.first().copied().unwrap_or(drop);
        if d.iter().all(|&x| x == first) {
            if first != drop {
                ctx.push(first.into(), batch);
            }
            return;
        }
        if self.noutputs == 1 {
            // Output 0 or drop: the kept packets are moved to the front in
            // order by one swap each (no branch on a packet's fate), the
            // dropped ones cut off the end and released together.
            let mut batch = batch;
            let v = batch.vec_mut();
            let mut k = 0;
            for (i, &o) in d.iter().enumerate().take(v.len()) {
                v.swap(k, i);
                k += usize::from(o == 0);
            }
            let mut dropped = std::mem::take(&mut self.outs[1]);
            dropped.vec_mut().extend(v.drain(k..));
            std::mem::drop(dropped);
            ctx.push(0, batch);
            return;
        }
        for (p, &o) in batch.into_iter().zip(d.iter()) {
            self.outs[usize::from(o)].push(p);
        }
        // Released together (one pool access, not one per packet).
        self.outs[self.noutputs] = Batch::new();
        for o in 0..self.noutputs {
            if !self.outs[o].is_empty() {
                let b = std::mem::take(&mut self.outs[o]);
                ctx.push(o, b);
            }
        }
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        match name {
            "program" => {
                let s = self.rules.classifier.stats();
                let mut out = format!(
                    "{} rules, {} boxes ({} rules kept whole), {} tree nodes, {} leaf entries, depth {}",
                    s.rules, s.boxes, s.opaque, s.nodes, s.leaf_entries, s.depth
                );
                for (i, (t, o)) in self.rules.text.iter().zip(&self.rules.outputs).enumerate() {
                    let dest = o.map_or("drop".to_string(), |o| format!("output {o}"));
                    out.push_str(&format!("\n{i}: {} -> {dest}", t.trim()));
                }
                Some(out)
            }
            "cache_size" => Some(self.cache.entries().to_string()),
            "cache_hits" => Some(self.cache.hits.to_string()),
            "cache_misses" => Some(self.cache.misses.to_string()),
            "config" => Some(
                self.rules
                    .text
                    .iter()
                    .map(|t| t.trim())
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            _ => None,
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        if name == "cache_size" {
            return Some(match value.trim().parse::<usize>() {
                Ok(n) if n <= 1 << 26 => {
                    self.cache = DecisionCache::new(n);
                    Ok(())
                }
                _ => Err("cache_size: expected an entry count from 0 to 67108864".into()),
            });
        }
        if name != "config" {
            return None;
        }
        let args = linerate_args::split_args(value);
        if !self.filter && args.len() != self.noutputs {
            return Some(Err(format!(
                "need {} arguments, one per output port",
                self.noutputs
            )));
        }
        Some(match compile_ip_rules(&args, self.noutputs, self.filter) {
            Ok(r) => {
                self.dest = dest(&r, self.noutputs);
                self.rules = r;
                self.cache.clear();
                Ok(())
            }
            Err(e) => Err(e.join("\n")),
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

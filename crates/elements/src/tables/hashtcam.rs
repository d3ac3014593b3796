//! Ternary (wildcard) matching of 5-tuples with priorities, as a few hash
//! tables over distinct masks (tuple space search).
//!
//! # Synopsis
//! `HashTCAM([RULE1, RULE2, ..., KEYWORDS])`
//!
//! # Ports
//! One push input; one or more push outputs (as many as the rules use,
//! and `BAD_OUTPUT` if given).
//!
//! # Arguments
//! - Rules: `PRIORITY OUTPUT [FIELD VALUE]...`. Fields left out match
//!   anything. `src` and `dst` take an address prefix (`10.0.0.0/8`,
//!   `2001:db8::/32`, a bare address for a host, `any`); IPv4 prefixes match
//!   only IPv4 packets and IPv6 prefixes only IPv6 packets. `sport` and
//!   `dport` take `N`, `VALUE/MASK` (`0x50/0xfff0`) or a range `LO-HI`
//!   (expanded into value/mask pairs); `proto` takes `N` or `VALUE/MASK`.
//!   `PRIORITY` is an integer from 0 to 2^31 - 1; the matching rule with
//!   the highest priority wins, and among equal priorities the rule
//!   inserted first.
//! - `FILE` (filename): more rules, one a line; blank lines and lines
//!   starting with `#` or `//` are skipped.
//! - `OFFSET` (integer): where the IP header starts in the data of packets
//!   whose network header annotation is unset; the element then sets the
//!   network and transport header annotations there (as `MarkIPHeader`),
//!   IPv4 or IPv6 by the version field, and reads the 5-tuple; a packet
//!   shorter than the fixed header (20 bytes for IPv4, 40 for IPv6), of
//!   another version, or IPv4 with a header
//!   length field (IHL) under five words is bad. Without `OFFSET`, packets
//!   whose network header annotation is unset are bad.
//! - `CACHE` (integer, default 16384): lines of the exact-match decision
//!   cache in front of the tables (rounded up to a power of two; 64 bytes
//!   each, so 1 MiB by default); 0 turns it off. It never changes a result
//!   (see Implementation); how much it helps depends on the traffic.
//! - `IMPL` (`fast` or `reference`, default `fast`): `reference` scans every
//!   rule in order (ranges checked as ranges), with the same results, and
//!   has no cache.
//! - `BAD_OUTPUT` (integer): the output on which bad packets (see below)
//!   leave instead of being dropped; they are still counted in `bad`. It
//!   must be one of the element's outputs.
//!
//! The 5-tuple is read with the flow-key contract (`FlowKey::from_packet`:
//! network and transport header annotations, `L4_PROTO`); ports are 0
//! where there is no transport header. A packet leaves on the output of
//! its best matching rule; packets matching no rule are dropped and counted
//! (`misses`), packets without a readable IP header are counted (`bad`)
//! and dropped, or leave on `BAD_OUTPUT` if it is given. Click has no such element (its `IPClassifier` compiles
//! a decision tree and cannot change rules at run time).
//!
//! # Handlers
//! - `insert` (write): add a rule (same syntax); fails if an identical rule
//!   (fields, priority and output) exists.
//! - `delete` (write): remove the rule written identically.
//! - `rules` (read): the rules in insertion order, one a line, normalised.
//! - `count` (read): rules; `masks` (read): distinct masks (hash tables).
//! - `lookups`, `misses`, `bad` (read): packets looked up, unmatched, bad.
//! - `cache_hits` (read): lookups the cache answered; `cache_hit_rate`
//!   (read): the same in per cent of the lookups made through the cache
//!   (packets with a key while the cache is on).
//!
//! # Example
//! ```click
//! acl :: HashTCAM(100 0 dst 10.0.0.0/8 dport 80 proto 6,
//!                 50 1 src 192.168.0.0/16, 10 2 dport 1024-65535);
//! acl[0] -> Discard; acl[1] -> Discard; acl[2] -> Discard;
//! ```
//!
//! # Implementation
//! Each rule expands into value/mask entries (one unless a port range
//! needs several); entries with the same mask share an open-addressing
//! hash table (linear probing; 64-byte slots holding the masked key, the
//! best rank and the output, and apart from them an array of 32-bit hash
//! tags, so that a probe that misses, the common case, reads only the
//! small tag array, and a hit reads one slot line; the eight tags from
//! the home slot on are compared with the key's tag and with 0 at once,
//! SSE2, so that a miss costs no branch on the tags). The tables are kept
//! sorted by the highest rule priority they hold (tuple space search with
//! priority pruning, as Open vSwitch's classifier): a chunk of up to 64
//! keys is looked up table by table; for every key that could still
//! improve (its best match so far is below the table's priority bound),
//! the masked key is hashed and its tags prefetched, then all are probed;
//! the scan ends when no key can improve. Where the CPU has AVX-512 (F,
//! BW, VL; detected at run time) the search runs a version compiled for
//! it, in which the list of keys still searched is built by compressing
//! eight key indices a compare and the eight tags are compared into mask
//! registers (session 12: 4-6 % off the uncached rows; probing eight
//! keys at once with gathered tags was slower, see `docs/performance.md`).
//! Keys are five 64-bit words read
//! straight from the packet (`key_words`, the words of
//! `FlowKey::from_packet`'s key) into arrays on the stack; where the
//! element sets the header annotations itself (`OFFSET`, a whole IPv4
//! header), the words are read from the header bytes it has just checked
//! instead of through the annotations again. The hash is the CRC-32C of
//! the words (SSE4.2; a multilinear hash elsewhere).
//!
//! In front of the tables sits an exact-match decision cache (as Open
//! vSwitch's EMC; `CACHE` lines): its key is the packet's key masked by
//! the union of all masks, the only bits any lookup reads, so two packets
//! with the same cache key always get the same answer, and it caches
//! misses (no rule) too. 8-way buckets: a 32-byte array of hash tags per
//! bucket, apart from the 64-byte lines (key, generation, output); a
//! chunk's keys are masked and hashed and their tags prefetched, then the
//! eight tags compared at once (SSE2: two compares, `packs`, `movemask`)
//! and the line of the matching way prefetched, then compared. Every
//! insert and delete bumps a generation number, and a line of an older
//! generation never answers, so the cache never changes a result (the
//! differential tests look up between inserts and deletes through caches
//! of 0, 1, 8 and 64 lines). Keys that miss are searched together in the
//! tables and cached (a free way, else one in rotation), unless the cache
//! thrashes: when most fills of a window of 1,024 replaced a line still
//! valid, more distinct keys recur than the cache holds, and only one miss
//! in 16 is cached until a window says otherwise (Open vSwitch's EMC
//! caches one miss in 100 always): 65,536 flows round-robin through the
//! default cache hit 5.9 % of the time with every miss cached, 25.8 %
//! so, 133 -> 106 ns a packet (session 10). Inserts and
//! deletes touch one table per entry (no rebuild) and run between
//! batches, so rules change while traffic flows. Packets go to their output's batch and drops (no rule,
//! no key) to one more batch, released together, so the split has no
//! branch on a packet's fate; up to 8 such batches `Batch::split_into` counts each
//! output's packets first, reserves their room and writes every packet to
//! its output's next place (no capacity check or length update a packet).
//! The key loop prefetches the data of the packet four ahead, and writes
//! the two header annotations after checking that both fit instead of
//! reading one back. Nothing is allocated per packet.
//!
//! ClickNP's optimisations: struct of arrays: each mask table's 32-bit tags
//! apart from its 64-byte slots, the cache's tag arrays apart from its
//! lines, and a chunk's keys, hashes and ranks in arrays. SIMD for the tag
//! compares: a table's eight tags from the home slot and a cache bucket's
//! eight tags at once with SSE2, and where the CPU has AVX-512 a search
//! compiled for it (mask-register compares, the live key list built by
//! compress); the hash is CRC-32C (SSE4.2). Each stage prefetches ahead of
//! the next: the cache buckets' tags, then the matching line; for each
//! table, the tags of every key still searched before any is probed; the
//! packet data four packets ahead. No separate slow path: the exact-match
//! cache is the fast path and the tuple-space search of its misses,
//! gathered per chunk, runs in the same batch on the same core; rule
//! updates are handler calls between batches that touch one table an entry.
//!
//! Measured (`linerate bench elements HashTCAM`, a two-vCPU AMD EPYC Zen 4
//! guest, docs/performance.md), 8,000 rules over 16 masks: with 4,096 flows
//! that recur (99.8 % cache hits over 2M packets) 15.6-15.9 ns a packet,
//! 63-64 Mpps, so the issue's 40 Mpps is met where flows recur. It is not
//! met without them: with `CACHE 0` the same traffic costs about 70 ns
//! (14.2 Mpps), and 65,536 flows through the default cache (25.8 % hits,
//! the thrash guard above) about 91 ns (11 Mpps). Why, from the profiles: a
//! packet searches 9.5 of the 16 tables on average (the benchmark's
//! priority bands overlap, so pruning stops late, and the 10 % that match
//! no rule search all 16), and the 25 ns a packet the goal allows is under
//! 2.5 ns a probe, each probe a hash, a tag line read and a compare (about
//! 1,100 instructions a packet uncached, against about 230 cached). Inserts
//! (the benchmark's 8,000 rules one by one, thread CPU time): mean 1.2-1.6
//! us, p99 3.9-5.9 us (goal 10 us), max 34-137 us over four runs. The
//! slowest regular ones double a mask table (256 entries rehashed into
//! 1,024 slots: 5.5-7.2 us with the memory warm). The new arrays' pages are
//! first touched by the inserts before (a page of slots an insert once the
//! table is a quarter full), not by the insert that doubles it: in a fresh
//! process 17 first-touch faults made that insert about 45 us, and inserts
//! over 10 us fell from 41-46 to 23-25 of 8,000 (p99.9 36.7 to 12.4 us);
//! the max left is the guest's own noise (an insert of no fault taking
//! 40-120 us: the vCPU descheduled). The max was 0.7-1.2 ms while the rule
//! index was a `HashMap`: the insert that
//! doubled it rehashed every rule (0.4-1.6 ms at 3,584 and 7,168 rules);
//! the index and each table's owner lists (whose doublings took 20-50 us)
//! are B-trees now, no insert rehashes them. History, in short: session 8
//! read IPv4 keys from the header and compared tags with SSE2, session 9
//! added the counted split and the data prefetch (cached row 312 to 232
//! instructions a packet), session 10 made the tag loop and the list of
//! keys still searched branch-free (uncached row 14.7 to 2.4 branch misses
//! a packet, 646 to 370 cycles), session 12 the AVX-512 version.

use super::cuckoocore::flow_key;
use crate::hint::prefetch;
use linerate_runtime::anno::{offsets, NO_HEADER};
use linerate_runtime::flow::{
    ipv4_address_words, key_tail, key_words, ports, FlowKey, KeyRules, KeyWords,
};
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use std::any::Any;
use std::collections::BTreeMap;
use std::net::Ipv6Addr;

/// The `HashTCAM` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "HashTCAM",
    port_count: "1/-",
    processing: "h/h",
    doc: element_doc!("tables/hashtcam"),
    make,
};

/// A port field: value/mask or an inclusive range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PortSpec {
    /// `port & mask == value`.
    Mask(u16, u16),
    /// `lo <= port <= hi`.
    Range(u16, u16),
}

impl PortSpec {
    fn matches(&self, p: u16) -> bool {
        match *self {
            PortSpec::Mask(v, m) => p & m == v,
            PortSpec::Range(lo, hi) => (lo..=hi).contains(&p),
        }
    }

    /// Value/mask pairs covering the spec.
    fn expand(&self) -> Vec<(u16, u16)> {
        match *self {
            PortSpec::Mask(v, m) => vec![(v, m)],
            PortSpec::Range(lo, hi) => {
                let mut v = Vec::new();
                let (mut lo, hi) = (u32::from(lo), u32::from(hi));
                while lo <= hi {
                    // The largest aligned block starting at lo within hi.
                    let mut size = if lo == 0 {
                        1 << 16
                    } else {
                        1u32 << lo.trailing_zeros()
                    };
                    while lo + size - 1 > hi {
                        size >>= 1;
                    }
                    v.push((lo as u16, !(size - 1) as u16));
                    lo += size;
                }
                v
            }
        }
    }

    fn unparse(&self) -> String {
        match *self {
            PortSpec::Mask(v, 0xffff) => v.to_string(),
            PortSpec::Mask(v, m) => format!("{v:#x}/{m:#x}"),
            PortSpec::Range(lo, hi) => format!("{lo}-{hi}"),
        }
    }
}

/// An address field: IPv4-mapped or IPv6 value and mask over 128 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AddrSpec {
    /// Address bits (IPv4 as `::ffff:a.b.c.d`), host bits cleared.
    pub value: u128,
    /// Prefix length over the 128 bits (96 + IPv4 length for IPv4).
    pub len: u8,
}

impl AddrSpec {
    fn mask(&self) -> u128 {
        u128::MAX
            .checked_shl(128 - u32::from(self.len))
            .unwrap_or(0)
    }

    fn parse(s: &str) -> Option<AddrSpec> {
        if s == "any" {
            return Some(AddrSpec { value: 0, len: 0 });
        }
        if let Ok(p) = <linerate_args::Ipv4Prefix as linerate_args::ArgValue>::parse_arg(s) {
            let v = (0xffffu128 << 32) | u128::from(u32::from(p.addr));
            let a = AddrSpec {
                value: v,
                len: 96 + p.len,
            };
            return Some(AddrSpec {
                value: v & a.mask(),
                ..a
            });
        }
        let p = <linerate_args::Ipv6Prefix as linerate_args::ArgValue>::parse_arg(s).ok()?;
        let a = AddrSpec {
            value: u128::from(p.addr),
            len: p.len,
        };
        Some(AddrSpec {
            value: a.value & a.mask(),
            ..a
        })
    }

    fn unparse(&self) -> String {
        let a = Ipv6Addr::from(self.value);
        match a.to_ipv4_mapped() {
            Some(v4) if self.len >= 96 => format!("{v4}/{}", self.len - 96),
            _ => format!("{a}/{}", self.len),
        }
    }
}

/// One rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rule {
    /// Priority (higher wins).
    pub prio: u32,
    /// Output port.
    pub port: u32,
    /// Source prefix.
    pub src: AddrSpec,
    /// Destination prefix.
    pub dst: AddrSpec,
    /// Source port.
    pub sport: PortSpec,
    /// Destination port.
    pub dport: PortSpec,
    /// Protocol value and mask.
    pub proto: (u8, u8),
}

const ANY_PORT: PortSpec = PortSpec::Mask(0, 0);
const ANY_ADDR: AddrSpec = AddrSpec { value: 0, len: 0 };

fn parse_num<T: TryFrom<u64>>(s: &str) -> Option<T> {
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok()?,
        None => s.parse().ok()?,
    };
    T::try_from(v).ok()
}

fn parse_port(s: &str) -> Option<PortSpec> {
    if let Some((lo, hi)) = s.split_once('-') {
        let (lo, hi) = (parse_num(lo)?, parse_num(hi)?);
        return (lo <= hi).then_some(PortSpec::Range(lo, hi));
    }
    if let Some((v, m)) = s.split_once('/') {
        let (v, m): (u16, u16) = (parse_num(v)?, parse_num(m)?);
        return Some(PortSpec::Mask(v & m, m));
    }
    Some(PortSpec::Mask(parse_num(s)?, 0xffff))
}

impl Rule {
    /// Parse `PRIORITY OUTPUT [FIELD VALUE]...`.
    pub fn parse(s: &str) -> Result<Rule, String> {
        let mut w = s.split_ascii_whitespace();
        let prio = w
            .next()
            .and_then(parse_num::<u32>)
            .filter(|&p| p < 1 << 31)
            .ok_or("expected 'PRIORITY OUTPUT [FIELD VALUE]...'")?;
        let port = w
            .next()
            .and_then(parse_num::<u32>)
            .ok_or("expected 'PRIORITY OUTPUT [FIELD VALUE]...'")?;
        let mut r = Rule {
            prio,
            port,
            src: ANY_ADDR,
            dst: ANY_ADDR,
            sport: ANY_PORT,
            dport: ANY_PORT,
            proto: (0, 0),
        };
        while let Some(f) = w.next() {
            let v = w.next().ok_or_else(|| format!("missing value for '{f}'"))?;
            let bad = || format!("bad {f} '{v}'");
            match f {
                "src" => r.src = AddrSpec::parse(v).ok_or_else(bad)?,
                "dst" => r.dst = AddrSpec::parse(v).ok_or_else(bad)?,
                "sport" => r.sport = parse_port(v).ok_or_else(bad)?,
                "dport" => r.dport = parse_port(v).ok_or_else(bad)?,
                "proto" => {
                    r.proto = match v.split_once('/') {
                        Some((a, m)) => {
                            let (a, m): (u8, u8) =
                                (parse_num(a).ok_or_else(bad)?, parse_num(m).ok_or_else(bad)?);
                            (a & m, m)
                        }
                        None => (parse_num(v).ok_or_else(bad)?, 0xff),
                    }
                }
                _ => return Err(format!("unknown field '{f}'")),
            }
        }
        Ok(r)
    }

    /// The normalised text of the rule.
    pub fn unparse(&self) -> String {
        let mut s = format!("{} {}", self.prio, self.port);
        if self.src.len > 0 {
            s.push_str(&format!(" src {}", self.src.unparse()));
        }
        if self.dst.len > 0 {
            s.push_str(&format!(" dst {}", self.dst.unparse()));
        }
        if self.sport != ANY_PORT {
            s.push_str(&format!(" sport {}", self.sport.unparse()));
        }
        if self.dport != ANY_PORT {
            s.push_str(&format!(" dport {}", self.dport.unparse()));
        }
        match self.proto {
            (_, 0) => {}
            (p, 0xff) => s.push_str(&format!(" proto {p}")),
            (p, m) => s.push_str(&format!(" proto {p}/{m}")),
        }
        s
    }

    /// Whether `k` matches (the reference semantics).
    pub fn matches(&self, k: &Key) -> bool {
        let (src, dst) = (u128::from_be_bytes(k.src), u128::from_be_bytes(k.dst));
        src & self.src.mask() == self.src.value
            && dst & self.dst.mask() == self.dst.value
            && self.sport.matches(k.sport)
            && self.dport.matches(k.dport)
            && k.proto & self.proto.1 == self.proto.0
    }

    /// The value/mask entries of the rule, as packed key words.
    fn entries(&self) -> Vec<(Words, Words)> {
        let mut v = Vec::new();
        for (sv, sm) in self.sport.expand() {
            for (dv, dm) in self.dport.expand() {
                let val = Key {
                    src: self.src.value.to_be_bytes(),
                    dst: self.dst.value.to_be_bytes(),
                    sport: sv,
                    dport: dv,
                    proto: self.proto.0,
                    version: 0,
                };
                let mask = Key {
                    src: self.src.mask().to_be_bytes(),
                    dst: self.dst.mask().to_be_bytes(),
                    sport: sm,
                    dport: dm,
                    proto: self.proto.1,
                    version: 0,
                };
                v.push((flow_key(&val), flow_key(&mask)));
            }
        }
        v
    }
}

/// The 5-tuple key.
pub type Key = FlowKey;

/// A key as five words in [`key_words`]'s layout (source and destination
/// address bytes, then ports, protocol and version), so that the fast path
/// reads packets straight into it. Masks never cover the version bits.
type Words = KeyWords;

#[inline(always)]
fn masked(k: &Words, m: &Words) -> Words {
    [
        k[0] & m[0],
        k[1] & m[1],
        k[2] & m[2],
        k[3] & m[3],
        k[4] & m[4],
    ]
}

/// `a == b`, branch-free (the derived comparison of arrays calls
/// `memcmp`).
#[inline(always)]
fn eq(a: &Words, b: &Words) -> bool {
    ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3]) | (a[4] ^ b[4])) == 0
}

/// The hash of a key: the low bits index a table, the high 32 bits are
/// the tag. With SSE4.2, the CRC-32C of the words in both halves (five
/// instructions); otherwise CuckooHash's multilinear hash.
#[cfg(all(target_arch = "x86_64", target_feature = "sse4.2"))]
#[inline(always)]
fn hash(k: &Words) -> u64 {
    use std::arch::x86_64::_mm_crc32_u64;
    let mut c = 0;
    for &w in k {
        // SAFETY: the instruction exists: SSE4.2 is enabled for the whole
        // build (the `cfg` of this function).
        c = unsafe { _mm_crc32_u64(c, w) };
    }
    c | c << 32
}

/// See above (without SSE4.2): CuckooHash's multilinear hash of the same
/// five words.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse4.2")))]
#[inline(always)]
fn hash(k: &Words) -> u64 {
    super::cuckoocore::hash(k)
}

/// A hash-table slot: one cache line. `rank` 0 means empty.
#[repr(C, align(64))]
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    key: Words,
    rank: u64,
    port: u32,
}

/// The entries of one mask: an open-addressing table (linear probing,
/// backward-shift deletion) holding, per masked key, the best entry; all
/// entries of a key (several rules may share one) in `owners`.
#[derive(Debug, Clone)]
struct MaskTable {
    mask: Words,
    /// The highest rank in the table: the search's bound.
    bound: u64,
    /// Per slot, 32 bits of the key's hash (never 0), 0 for empty: a
    /// probe reads this small array (16 tags a cache line) and touches a
    /// slot only when its tag matches.
    tags: Vec<u32>,
    slots: Vec<Slot>,
    len: usize,
    /// Ordered, not hashed: a `HashMap` here rehashed all its keys when it
    /// doubled, 20-50 us for one insert in a table of 500 entries.
    owners: BTreeMap<Words, Vec<(u64, u32)>>,
    /// The arrays of the next size, written a little at a time by the
    /// inserts after the table is a quarter full (see [`MaskTable::prepare`]).
    next_tags: Vec<u32>,
    next_slots: Vec<Slot>,
}

/// Slots of the next arrays each insert writes once the table is a quarter
/// full: a 4 KiB page of slots, and their tags. Between a quarter and half
/// full a table of `n` slots takes `n / 4` inserts, and the next arrays
/// hold `2n` slots, `n / 32` pages: a page every 8 inserts would do.
const PREPARE: usize = 4096 / std::mem::size_of::<Slot>();

#[inline(always)]
fn tag(h: u64) -> u32 {
    (h >> 32) as u32 | 1
}

/// The lanes of `g` equal to `t`, as bits (lane `k` is bit `k`). With
/// SSE2 (part of every x86-64 target) four lanes a compare, the eight
/// results narrowed to one sign bit each (`packs`, `movemask`); LLVM
/// compiled the portable loop to a mix of vector and scalar compares
/// (about 30 instructions against 9).
#[inline(always)]
fn lanes_equal(g: &[u32; 8], t: u32) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86_64 baseline; the two unaligned
        // loads read the halves of the 32 bytes `g` borrows.
        unsafe {
            let v = _mm_set1_epi32(t as i32);
            let p = g.as_ptr() as *const __m128i;
            let lo = _mm_cmpeq_epi32(_mm_loadu_si128(p), v);
            let hi = _mm_cmpeq_epi32(_mm_loadu_si128(p.add(1)), v);
            let w16 = _mm_packs_epi32(lo, hi);
            _mm_movemask_epi8(_mm_packs_epi16(w16, _mm_setzero_si128())) as u32
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        g.iter()
            .enumerate()
            .fold(0u32, |m, (k, &x)| m | u32::from(x == t) << k)
    }
}

/// The lanes of `g` equal to `t` and those equal to 0, as bits: one
/// compare each into a mask register (AVX-512 VL), where SSE2 takes four
/// instructions.
///
/// # Safety
/// The CPU must have AVX-512 F and VL.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl")]
#[inline]
unsafe fn lanes_equal_avx512(g: &[u32; 8], t: u32) -> (u32, u32) {
    use std::arch::x86_64::*;
    // SAFETY: the load reads the 32 bytes `g` borrows.
    let v = unsafe { _mm256_loadu_si256(g.as_ptr() as *const __m256i) };
    (
        u32::from(_mm256_cmpeq_epi32_mask(v, _mm256_set1_epi32(t as i32))),
        u32::from(_mm256_testn_epi32_mask(v, v)),
    )
}

/// The live list of a table with bound `bound`: the indices of `ranks`
/// below it, written to `live` (as long as `ranks` at least) by
/// compressing eight index lanes a compare; their number.
///
/// # Safety
/// The CPU must have AVX-512 F, BW and VL.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn live_avx512(ranks: &[u64], bound: u64, live: &mut [u8]) -> usize {
    use std::arch::x86_64::*;
    let n = ranks.len();
    assert!(live.len() >= n && n <= 256);
    let b = _mm512_set1_epi64(bound as i64);
    let mut idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    let eight = _mm256_set1_epi32(8);
    let mut nl = 0;
    for base in (0..n).step_by(8) {
        let valid = (0xffu32 >> (8 - (n - base).min(8))) as __mmask8;
        // SAFETY: the lanes read lie in `ranks` (`valid`); the bytes
        // written, one per live lane, lie in `live` (`nl` plus the live
        // lanes so far never passes `n`).
        unsafe {
            let r = _mm512_maskz_loadu_epi64(valid, ranks.as_ptr().add(base) as *const i64);
            let k = _mm512_mask_cmplt_epu64_mask(valid, r, b);
            let c = _mm256_cvtepi32_epi8(_mm256_maskz_compress_epi32(k, idx));
            _mm_mask_storeu_epi8(
                live.as_mut_ptr().add(nl) as *mut i8,
                (1u16 << k.count_ones()) - 1,
                c,
            );
            nl += k.count_ones() as usize;
        }
        idx = _mm256_add_epi32(idx, eight);
    }
    nl
}

impl MaskTable {
    fn new(mask: Words) -> MaskTable {
        MaskTable {
            mask,
            bound: 0,
            tags: vec![0; 16],
            slots: vec![Slot::default(); 16],
            len: 0,
            owners: BTreeMap::new(),
            next_tags: Vec::new(),
            next_slots: Vec::new(),
        }
    }

    /// Write the next [`PREPARE`] slots (and tags) of the arrays the table
    /// will grow into, once it is a quarter full: their pages are faulted
    /// in over many inserts instead of all in the one that grows the table
    /// (17 first-touch faults, about 45 us in a guest, for a table growing
    /// from 512 to 1,024 slots; the rehash itself takes 5-7 us).
    fn prepare(&mut self) {
        let n = 2 * self.tags.len();
        if self.len * 4 <= self.tags.len() || self.next_slots.len() == n {
            return;
        }
        if self.next_slots.capacity() < n {
            self.next_slots.reserve_exact(n);
            self.next_tags.reserve_exact(n);
        }
        let k = PREPARE.min(n - self.next_slots.len());
        self.next_slots
            .extend(std::iter::repeat_n(Slot::default(), k));
        self.next_tags.extend(std::iter::repeat_n(0, k));
    }

    /// The slot holding `key` (hash `h`). The eight tags from the key's
    /// home slot on are compared at once with the key's tag and with 0
    /// (empty), into bit masks: a miss (the usual case: most tables hold
    /// no entry for a key) with an empty slot among the eight costs no
    /// branch on the tags. The tag-by-tag loop, whose exit depends on
    /// every tag, mispredicted about 15 times a packet on the benchmark's
    /// uncached row. Groups of eight occupied slots, and home slots among
    /// the last seven, take that loop.
    /// `key` is unmasked: it is masked only where a tag matches (most
    /// probes find none).
    #[inline(always)]
    fn find(&self, key: &Words, h: u64) -> Option<&Slot> {
        self.find_with::<false>(key, h)
    }

    /// [`find`](Self::find); `V4`: inlined into the AVX-512 search, the
    /// tags compared into mask registers.
    #[inline(always)]
    fn find_with<const V4: bool>(&self, key: &Words, h: u64) -> Option<&Slot> {
        let m = self.tags.len() - 1;
        let t = tag(h);
        let i = h as usize & m;
        if let Some(g) = self.tags[i..].first_chunk::<8>() {
            // A key is in at most one slot: an equal key anywhere in the
            // group is the answer, even past an empty slot.
            let (mut c, empty) = if V4 {
                // SAFETY: `V4` only in `search_avx512`.
                unsafe { lanes_equal_avx512(g, t) }
            } else {
                (lanes_equal(g, t), lanes_equal(g, 0))
            };
            while c != 0 {
                let s = &self.slots[i + c.trailing_zeros() as usize];
                if eq(&s.key, &masked(key, &self.mask)) {
                    return Some(s);
                }
                c &= c - 1;
            }
            if empty != 0 {
                return None;
            }
        }
        self.find_scan(&masked(key, &self.mask), t, i)
    }

    /// [`find`](Self::find) tag by tag from slot `i`.
    #[cold]
    #[inline(never)]
    fn find_scan(&self, key: &Words, t: u32, mut i: usize) -> Option<&Slot> {
        let m = self.tags.len() - 1;
        loop {
            let g = self.tags[i];
            if g == 0 {
                return None;
            }
            if g == t && eq(&self.slots[i].key, key) {
                return Some(&self.slots[i]);
            }
            i = (i + 1) & m;
        }
    }

    fn set(&mut self, key: Words, best: Option<(u64, u32)>) {
        let m = self.tags.len() - 1;
        let h = hash(&key);
        let mut i = h as usize & m;
        while self.tags[i] != 0 && self.slots[i].key != key {
            i = (i + 1) & m;
        }
        match best {
            Some((rank, port)) => {
                if self.tags[i] == 0 {
                    self.len += 1;
                }
                self.tags[i] = tag(h);
                self.slots[i] = Slot { key, rank, port };
                if self.len * 2 > self.tags.len() {
                    self.grow();
                }
            }
            None if self.tags[i] != 0 => {
                // Backward-shift deletion.
                self.len -= 1;
                let mut hole = i;
                let mut j = i;
                loop {
                    j = (j + 1) & m;
                    if self.tags[j] == 0 {
                        break;
                    }
                    let home = hash(&self.slots[j].key) as usize & m;
                    // Move j into the hole unless its home lies in (hole, j].
                    if (j.wrapping_sub(home) & m) >= (j.wrapping_sub(hole) & m) {
                        self.slots[hole] = self.slots[j];
                        self.tags[hole] = self.tags[j];
                        hole = j;
                    }
                }
                self.slots[hole] = Slot::default();
                self.tags[hole] = 0;
            }
            None => {}
        }
    }

    fn grow(&mut self) {
        let n = self.tags.len() * 2;
        // The arrays [`prepare`](Self::prepare) wrote, completed if the
        // table filled faster than they (deletions never shrink it).
        let mut slots = std::mem::take(&mut self.next_slots);
        let mut tags = std::mem::take(&mut self.next_tags);
        slots.resize(n, Slot::default());
        tags.resize(n, 0);
        let old = std::mem::replace(&mut self.slots, slots);
        let old_tags = std::mem::replace(&mut self.tags, tags);
        let m = n - 1;
        for (s, g) in old.into_iter().zip(old_tags) {
            if g == 0 {
                continue;
            }
            let mut i = hash(&s.key) as usize & m;
            while self.tags[i] != 0 {
                i = (i + 1) & m;
            }
            self.slots[i] = s;
            self.tags[i] = g;
        }
    }

    fn insert(&mut self, key: Words, rank: u64, port: u32) {
        let list = self.owners.entry(key).or_default();
        list.push((rank, port));
        let best = list.iter().copied().max_by_key(|e| e.0);
        self.set(key, best);
        self.bound = self.bound.max(rank);
        self.prepare();
    }

    fn remove(&mut self, key: Words, rank: u64) {
        let Some(list) = self.owners.get_mut(&key) else {
            return;
        };
        list.retain(|e| e.0 != rank);
        let best = list.iter().copied().max_by_key(|e| e.0);
        if list.is_empty() {
            self.owners.remove(&key);
        }
        self.set(key, best);
        if rank == self.bound {
            self.bound = self
                .slots
                .iter()
                .zip(&self.tags)
                .filter(|x| *x.1 != 0)
                .map(|x| x.0.rank)
                .max()
                .unwrap_or(0);
        }
    }
}

/// The rule set and its tuple-space tables.
#[derive(Debug, Clone, Default)]
pub struct Tcam {
    /// Rules by insertion sequence number.
    rules: BTreeMap<u32, Rule>,
    /// Sequence number of each rule. Ordered, not hashed, so that no insert
    /// pays for rehashing every rule: a `HashMap` took 0.4-1.6 ms for the
    /// insert that doubled it from 3,584 or 7,168 rules (hashing each
    /// 80-byte rule again and faulting in the new array); a B-tree insert
    /// splits at most one node a level.
    index: BTreeMap<Rule, u32>,
    seq: u32,
    reference: bool,
    tables: Vec<MaskTable>,
    /// The union (bitwise or) of the tables' masks: the bits a lookup
    /// reads, so the cache's key.
    union: Words,
    /// Bumped by every insert and delete: cache lines of an older
    /// generation are stale.
    gen: u64,
    cache: Emc,
    /// The table search runs its AVX-512 version (F, BW, VL: detected at
    /// construction; the unit tests turn it off to test the other).
    avx512: bool,
}

/// No rule matches.
const NO_MATCH: u32 = u32::MAX;

/// Outputs stop below this (`insert` refuses larger ones).
const BAD: u32 = u32::MAX - 1;

/// Ways of a cache bucket.
const WAYS: usize = 8;

/// A cache line: the key masked by the union of the masks, the rule set's
/// generation it was looked up in, and the output (`NO_MATCH` for none).
#[repr(C, align(64))]
#[derive(Debug, Clone, Copy, Default)]
struct CacheLine {
    key: Words,
    gen: u64,
    port: u32,
}

/// The hash tags of a bucket's ways (0: empty), in one aligned 32 bytes.
#[repr(C, align(32))]
#[derive(Debug, Clone, Copy, Default)]
struct Tags([u32; WAYS]);

/// The exact-match decision cache in front of the tables: 4-way buckets,
/// a 16-byte array of hash tags per bucket and the lines apart.
#[derive(Debug, Clone, Default)]
struct Emc {
    tags: Vec<Tags>,
    lines: Vec<CacheLine>,
    victim: usize,
    lookups: u64,
    hits: u64,
    /// Fills in the current window, and how many replaced a line still
    /// valid in its generation.
    fills: u32,
    evictions: u32,
    /// Most fills of the last window evicted a valid line: more distinct
    /// keys recur than the cache holds, so only one miss in [`THRASH_ADMIT`]
    /// is cached (Open vSwitch's EMC inserts one in 100 always).
    thrashing: bool,
    misses: u32,
}

/// Fills a thrashing decision is taken over.
const THRASH_WINDOW: u32 = 1024;

/// One miss in this many is cached while the cache thrashes.
const THRASH_ADMIT: u32 = 16;

impl Emc {
    /// A cache of at least `entries` lines (0: none).
    fn new(entries: usize) -> Emc {
        if entries == 0 {
            return Emc::default();
        }
        let buckets = entries.div_ceil(WAYS).next_power_of_two();
        Emc {
            tags: vec![Tags::default(); buckets],
            lines: vec![CacheLine::default(); buckets * WAYS],
            ..Emc::default()
        }
    }

    #[inline(always)]
    fn bucket(&self, h: u64) -> usize {
        h as usize & (self.tags.len() - 1)
    }

    /// The ways of `h`'s bucket whose tag matches `h`'s, as bits.
    #[inline(always)]
    fn ways(&self, h: u64) -> u32 {
        lanes_equal(&self.tags[self.bucket(h)].0, tag(h))
    }

    /// The first line of `ways` in `h`'s bucket, to prefetch.
    #[inline(always)]
    fn first_line(&self, h: u64, ways: u32) -> &CacheLine {
        &self.lines[self.bucket(h) * WAYS + (ways.trailing_zeros() as usize & (WAYS - 1))]
    }

    /// The cached output of `key` (hash `h`, matching ways `m`) in
    /// generation `gen`.
    #[inline(always)]
    fn get(&self, key: &Words, h: u64, mut m: u32, gen: u64) -> Option<u32> {
        let b = self.bucket(h);
        while m != 0 {
            let l = &self.lines[b * WAYS + m.trailing_zeros() as usize];
            if l.gen == gen && eq(&l.key, key) {
                return Some(l.port);
            }
            m &= m - 1;
        }
        None
    }

    /// Cache `port` for `key`: in a way with the key's tag (the key's own
    /// line, stale, or another key's with the same tag), else a free one,
    /// else the next victim in rotation (reading no line: stale lines of
    /// other keys are replaced in rotation like valid ones).
    /// Cache the answer for a key that missed, unless the cache thrashes
    /// and this miss is not the one in [`THRASH_ADMIT`] it admits. With
    /// every miss cached, keys that recur less often than a bucket's ways
    /// are replaced evict each other before they recur (65,536 flows
    /// round-robin through 16,384 lines: 6 % hits); a few cached keys then
    /// stay long enough to hit. Results never depend on it.
    fn put(&mut self, key: Words, h: u64, gen: u64, port: u32) {
        self.misses = self.misses.wrapping_add(1);
        if self.thrashing && !self.misses.is_multiple_of(THRASH_ADMIT) {
            return;
        }
        let b = self.bucket(h);
        let t = tag(h);
        let tags = &self.tags[b].0;
        let w = (0..WAYS)
            .find(|&w| tags[w] == t)
            .or_else(|| (0..WAYS).find(|&w| tags[w] == 0))
            .unwrap_or_else(|| {
                self.victim = (self.victim + 1) % WAYS;
                self.victim
            });
        let (was, old) = (self.tags[b].0[w], &self.lines[b * WAYS + w]);
        self.evictions += u32::from(was != 0 && was != t && old.gen == gen);
        self.fills += 1;
        if self.fills == THRASH_WINDOW {
            self.thrashing = self.evictions * 2 > self.fills;
            (self.fills, self.evictions) = (0, 0);
        }
        self.tags[b].0[w] = t;
        self.lines[b * WAYS + w] = CacheLine { key, gen, port };
    }
}

/// Whether the CPU has the AVX-512 subsets of the table search's AVX-512
/// version.
fn avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Keys classified together (arrays on the stack).
const CHUNK: usize = 64;

/// Scratch arrays of the table search, kept between batches.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    hashes: Vec<u64>,
    ranks: Vec<u64>,
    live: Vec<u8>,
}

/// A rule's rank: priority first, then earlier insertion. Never 0.
fn rank(r: &Rule, seq: u32) -> u64 {
    (u64::from(r.prio) + 1) << 32 | u64::from(u32::MAX - seq)
}

impl Tcam {
    /// An empty rule set; `reference` scans rules linearly.
    pub fn new(reference: bool) -> Tcam {
        Tcam::with_cache(reference, 0)
    }

    /// An empty rule set with an exact-match cache of at least `entries`
    /// lines in front of the tables (0: none; the reference has none).
    pub fn with_cache(reference: bool, entries: usize) -> Tcam {
        Tcam {
            reference,
            gen: 1,
            cache: Emc::new(if reference { 0 } else { entries }),
            avx512: avx512(),
            ..Tcam::default()
        }
    }

    /// Cache lines (0: no cache).
    pub fn cache_entries(&self) -> usize {
        self.cache.lines.len()
    }

    /// Lookups the cache answered, and lookups made through it.
    pub fn cache_stats(&self) -> (u64, u64) {
        (self.cache.hits, self.cache.lookups)
    }

    /// Rules in insertion order.
    pub fn rules(&self) -> impl Iterator<Item = &Rule> {
        self.rules.values()
    }

    /// Number of rules.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Distinct masks (hash tables; 0 for the reference).
    pub fn masks(&self) -> usize {
        self.tables.len()
    }

    /// Add `r`; fails if an identical rule exists.
    pub fn insert(&mut self, r: Rule) -> Result<(), String> {
        if self.index.contains_key(&r) {
            return Err(format!("rule '{}' exists", r.unparse()));
        }
        if r.port >= BAD {
            return Err(format!("output {} out of range", r.port));
        }
        let seq = self.seq;
        self.seq += 1;
        self.rules.insert(seq, r);
        self.index.insert(r, seq);
        if !self.reference {
            let rk = rank(&r, seq);
            for (val, mask) in r.entries() {
                let t = match self.tables.iter().position(|t| t.mask == mask) {
                    Some(t) => t,
                    None => {
                        self.tables.push(MaskTable::new(mask));
                        self.tables.len() - 1
                    }
                };
                self.tables[t].insert(val, rk, r.port);
            }
            self.changed();
        }
        Ok(())
    }

    /// Remove the rule equal to `r`.
    pub fn delete(&mut self, r: &Rule) -> Result<(), String> {
        let Some(seq) = self.index.remove(r) else {
            return Err(format!("rule '{}' not found", r.unparse()));
        };
        self.rules.remove(&seq);
        if !self.reference {
            let rk = rank(r, seq);
            for (val, mask) in r.entries() {
                if let Some(t) = self.tables.iter_mut().find(|t| t.mask == mask) {
                    t.remove(val, rk);
                }
            }
            self.tables.retain(|t| t.len > 0);
            self.changed();
        }
        Ok(())
    }

    /// After an insert or delete: tables in search order, the union of
    /// the masks, and a new generation (every cache line goes stale).
    fn changed(&mut self) {
        self.tables.sort_by_key(|t| std::cmp::Reverse(t.bound));
        self.union = self.tables.iter().fold([0; 5], |u, t| {
            [
                u[0] | t.mask[0],
                u[1] | t.mask[1],
                u[2] | t.mask[2],
                u[3] | t.mask[3],
                u[4] | t.mask[4],
            ]
        });
        self.gen += 1;
    }

    /// The output of the best rule matching `k` (one key, control path;
    /// through the cache when there is one).
    pub fn lookup(&mut self, k: &Key) -> Option<u32> {
        self.lookup_many(std::slice::from_ref(k))[0]
    }

    /// The outputs of the best rules matching `keys`, looked up together
    /// as the element looks up a batch (control path: allocates).
    pub fn lookup_many(&mut self, keys: &[Key]) -> Vec<Option<u32>> {
        if self.reference {
            return keys
                .iter()
                .map(|k| self.lookup_reference(k).map(|r| r.0.port))
                .collect();
        }
        let mut s = Scratch::default();
        let mut w: Vec<Words> = keys.iter().map(flow_key).collect();
        let mut out = vec![0u32; keys.len()];
        for (k, o) in w.chunks_mut(CHUNK).zip(out.chunks_mut(CHUNK)) {
            self.classify(k, &mut s, o);
        }
        out.into_iter()
            .map(|o| (o != NO_MATCH).then_some(o))
            .collect()
    }

    /// The output of the best rule matching each of up to `CHUNK` keys
    /// (`NO_MATCH`: none): from the cache where it holds the key in this
    /// generation, else by searching the tables (and then cached). The keys
    /// are masked in place by the union of the masks, which changes no
    /// lookup (every mask lies inside it).
    fn classify(&mut self, keys: &mut [Words], s: &mut Scratch, out: &mut [u32]) {
        debug_assert!(keys.len() <= CHUNK && out.len() == keys.len());
        let u = self.union;
        if self.cache.lines.is_empty() {
            for k in keys.iter_mut() {
                *k = masked(k, &u);
            }
            self.search(keys, s, out);
            return;
        }
        let gen = self.gen;
        // Mask and hash every key and prefetch its bucket's tags; then, the
        // tags in cache, prefetch the line a hit will read; then compare.
        let mut hs = [0u64; CHUNK];
        for (h, k) in hs.iter_mut().zip(keys.iter_mut()) {
            *k = masked(k, &u);
            *h = hash(k);
            prefetch(&self.cache.tags[self.cache.bucket(*h)]);
        }
        let hs = &hs[..keys.len()];
        let mut ways = [0u32; CHUNK];
        for (w, &h) in ways.iter_mut().zip(hs) {
            *w = self.cache.ways(h);
            if *w != 0 {
                prefetch(self.cache.first_line(h, *w));
            }
        }
        let mut midx = [0u8; CHUNK];
        let mut nm = 0;
        for (i, k) in keys.iter().enumerate() {
            match self.cache.get(k, hs[i], ways[i], gen) {
                Some(p) => out[i] = p,
                None => {
                    midx[nm] = i as u8;
                    nm += 1;
                }
            }
        }
        self.cache.lookups += keys.len() as u64;
        self.cache.hits += (keys.len() - nm) as u64;
        if nm > 0 {
            // Gathered here, so that chunks without a miss clear no array.
            let mut miss = [[0u64; 5]; CHUNK];
            for (m, &i) in miss.iter_mut().zip(&midx[..nm]) {
                *m = keys[usize::from(i)];
            }
            let mut mout = [0u32; CHUNK];
            self.search(&miss[..nm], s, &mut mout[..nm]);
            for (&i, &p) in midx[..nm].iter().zip(&mout[..nm]) {
                let i = usize::from(i);
                out[i] = p;
                self.cache.put(keys[i], hs[i], gen, p);
            }
        }
    }

    /// `lookup_batch` over any number of keys, 256 at a time.
    fn search(&self, keys: &[Words], s: &mut Scratch, out: &mut [u32]) {
        #[cfg(target_arch = "x86_64")]
        if self.avx512 {
            // SAFETY: `avx512` is set only where the CPU has the features.
            return unsafe { self.search_avx512(keys, s, out) };
        }
        self.search_with::<false>(keys, s, out);
    }

    /// [`search`](Self::search) compiled for AVX-512.
    ///
    /// # Safety
    /// The CPU must have AVX-512 F, BW and VL.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,bmi1,bmi2,lzcnt,popcnt")]
    unsafe fn search_avx512(&self, keys: &[Words], s: &mut Scratch, out: &mut [u32]) {
        self.search_with::<true>(keys, s, out);
    }

    /// [`search`](Self::search); `V4`: inlined into its AVX-512 version.
    #[inline(always)]
    fn search_with<const V4: bool>(&self, keys: &[Words], s: &mut Scratch, out: &mut [u32]) {
        let n = keys.len();
        s.hashes.resize(n, 0);
        s.ranks.resize(n, 0);
        s.live.resize(256, 0);
        for c in (0..n).step_by(256) {
            let e = (c + 256).min(n);
            self.lookup_batch::<V4>(
                &keys[c..e],
                &mut s.hashes[c..e],
                &mut s.ranks[c..e],
                &mut out[c..e],
                &mut s.live,
            );
        }
        for (o, &r) in out.iter_mut().zip(&s.ranks[..n]) {
            if r == 0 {
                *o = NO_MATCH;
            }
        }
    }

    /// The best rule matching `k` and its rank, by scanning every rule.
    fn lookup_reference(&self, k: &Key) -> Option<(&Rule, u64)> {
        self.rules
            .iter()
            .filter(|(_, r)| r.matches(k))
            .map(|(&s, r)| (r, rank(r, s)))
            .max_by_key(|x| x.1)
    }

    /// Tuple space search over a batch of packed keys: `ranks[i]` is the
    /// best rank (0: no match) and `out[i]` its output. `hashes` and `live`
    /// are scratch arrays of the same length. `V4`: inlined into the
    /// AVX-512 search.
    #[inline(always)]
    fn lookup_batch<const V4: bool>(
        &self,
        keys: &[Words],
        hashes: &mut [u64],
        ranks: &mut [u64],
        out: &mut [u32],
        live: &mut [u8],
    ) {
        ranks.fill(0);
        for t in &self.tables {
            // Packets that can still improve on their best.
            // Written unconditionally, counted if live: no branch on the
            // rank (`nl` never passes `i`, and `live` is as long as the
            // longest `ranks`, 256).
            let nl = if V4 {
                // SAFETY: `V4` only in `search_avx512`.
                unsafe { live_avx512(ranks, t.bound, live) }
            } else {
                let mut nl = 0;
                for (i, &r) in ranks.iter().enumerate() {
                    live[nl] = i as u8;
                    nl += usize::from(r < t.bound);
                }
                nl
            };
            if nl == 0 {
                break;
            }
            let m = t.tags.len() - 1;
            for &i in &live[..nl] {
                let i = usize::from(i);
                let h = hash(&masked(&keys[i], &t.mask));
                hashes[i] = h;
                prefetch(&t.tags[h as usize & m]);
            }
            for &i in &live[..nl] {
                let i = usize::from(i);
                let s = if V4 {
                    t.find_with::<true>(&keys[i], hashes[i])
                } else {
                    t.find(&keys[i], hashes[i])
                };
                if let Some(s) = s {
                    if s.rank > ranks[i] {
                        ranks[i] = s.rank;
                        out[i] = s.port;
                    }
                }
            }
        }
    }
}

/// Cache lines unless `CACHE` says otherwise.
pub const DEFAULT_CACHE: usize = 16384;

/// The HashTCAM element.
pub struct HashTcam {
    tcam: Tcam,
    noutputs: usize,
    /// The output of bad packets: `BAD_OUTPUT`, else `noutputs` (dropped).
    bad_out: u32,
    offset: Option<usize>,
    lookups: u64,
    misses: u64,
    bad: u64,
    flow: Vec<Key>,
    /// Per packet of a batch: the output, or `noutputs` to drop it.
    out: Vec<u32>,
    scratch: Scratch,
    outs: Vec<Batch>,
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::write("insert"),
    HandlerSpec::write("delete"),
    HandlerSpec::read("rules"),
    HandlerSpec::gauge("count"),
    HandlerSpec::gauge("masks"),
    HandlerSpec::counter("lookups"),
    HandlerSpec::counter("misses"),
    HandlerSpec::counter("bad"),
    HandlerSpec::counter("cache_hits"),
    HandlerSpec::read("cache_hit_rate"),
];

impl HashTcam {
    fn parse_checked(&self, s: &str) -> Result<Rule, String> {
        let r = Rule::parse(s.split("//").next().unwrap_or("").trim())?;
        if r.port as usize >= self.noutputs {
            return Err(format!("output {} out of range", r.port));
        }
        Ok(r)
    }

    /// Set the header annotations of `p` from `OFFSET` when they are
    /// unset; false if `p` then has no IP header to key.
    #[inline]
    fn mark(&self, p: &mut Packet) -> bool {
        if p.network_header_offset().is_some() {
            return true;
        }
        let Some(off) = self.offset else {
            return false;
        };
        let Some(d) = p.data().get(off..) else {
            return false;
        };
        let hl = match d.first().map(|b| b >> 4) {
            // An IPv4 header length (IHL) under five words is malformed.
            Some(4) if d[0] & 15 >= 5 => usize::from(d[0] & 15) * 4,
            Some(6) => 40,
            _ => return false,
        };
        let whole = hl >= 20 && d.len() >= hl;
        p.set_network_header(off as isize);
        if whole {
            p.set_transport_header((off + hl) as isize);
        }
        true
    }

    /// `p`'s key words: those of `key_words` with `KeyRules::FLOW_KEY`,
    /// after `mark`. Where `mark` would set the annotations of a whole
    /// IPv4 header itself (the common case with `OFFSET`), the words are
    /// read from the bytes just checked, as `key_words` reads them, instead
    /// of decoding the annotations just set again (about 20 instructions
    /// a packet fewer).
    #[inline(always)]
    fn key(&self, p: &mut Packet) -> Option<Words> {
        if let (None, Some(off)) = (p.network_header_offset(), self.offset) {
            if let Some((w, hl)) = p.data().get(off..).and_then(|d| ipv4_words(d, p)) {
                // The annotations count from the buffer head; where both
                // fit below `NO_HEADER` they are written here as
                // `set_network_header` and `set_transport_header` would
                // write them (checked before, not read back after: that
                // was a store-forwarded load a packet). Otherwise `mark`
                // sets what fits and `key_words` reads the annotations.
                let nh = p.headroom() + off;
                if nh + hl < usize::from(NO_HEADER) {
                    let a = p.anno_mut();
                    a.network_header = nh as u16;
                    a.transport_header = (nh + hl) as u16;
                    return Some(w);
                }
            }
        }
        if !self.mark(p) {
            return None;
        }
        key_words(p, KeyRules::FLOW_KEY).map(|r| r.words)
    }
}

/// The key words of the IPv4 packet `d` (from its IP header on) whose
/// header is whole (IHL at least 5 words, all in `d`), and the header's
/// length; `None` for anything else. The words are `key_words`'s for such
/// a packet with its network and transport header annotations at `d` and
/// past the header: the `L4_PROTO` annotation of `p` where set, else the
/// header's protocol; ports as `FlowKey` keeps them (ICMP's where its
/// header has 8 bytes, else the first two 16-bit words of a transport
/// header of at least 4 bytes, else 0).
#[inline(always)]
fn ipv4_words(d: &[u8], p: &Packet) -> Option<(Words, usize)> {
    let h: &[u8; 20] = d.get(..20)?.try_into().ok()?;
    let hl = usize::from(h[0] & 15) * 4;
    if h[0] >> 4 != 4 || hl < 20 || d.len() < hl {
        return None;
    }
    let proto = match p.anno().u8(offsets::L4_PROTO) {
        0 => h[9],
        a => a,
    };
    let mut w = ipv4_address_words(h);
    w[4] |= key_tail(ports(&d[hl..], proto), proto, 0);
    Some((w, hl))
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let offset: Option<usize> = a.read("OFFSET");
    let file: Option<String> = a.read("FILE");
    let imp: String = a.read_or("IMPL", "fast".to_string());
    let cache: usize = a.read_or("CACHE", DEFAULT_CACHE);
    let bad_output: Option<usize> = a.read("BAD_OUTPUT");
    let rules = a.read_rest();
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
    let mut e = HashTcam {
        tcam: Tcam::with_cache(reference, cache),
        noutputs: ctx.noutputs(),
        bad_out: bad_output.unwrap_or(ctx.noutputs()) as u32,
        offset,
        lookups: 0,
        misses: 0,
        bad: 0,
        flow: Vec::new(),
        out: Vec::new(),
        scratch: Scratch::default(),
        outs: (0..=ctx.noutputs()).map(|_| Batch::new()).collect(),
    };
    let mut errors = Vec::new();
    for (i, r) in rules.iter().enumerate() {
        match e.parse_checked(r).and_then(|r| e.tcam.insert(r)) {
            Ok(()) => {}
            Err(m) => errors.push(format!("rule {}: {m}", i + 1)),
        }
    }
    if let Some(f) = file {
        match std::fs::read_to_string(&f) {
            Err(err) => errors.push(format!("FILE {f}: {err}")),
            Ok(text) => {
                for (i, line) in text.lines().enumerate() {
                    let l = line.trim();
                    if l.is_empty() || l.starts_with('#') || l.starts_with("//") {
                        continue;
                    }
                    if let Err(m) = e.parse_checked(l).and_then(|r| e.tcam.insert(r)) {
                        if errors.len() < 10 {
                            errors.push(format!("{f}:{}: {m}", i + 1));
                        }
                    }
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(Box::new(e))
    } else {
        Err(errors)
    }
}

impl Element for HashTcam {
    fn push(&mut self, _port: usize, mut batch: Batch, ctx: &mut Ctx<'_>) {
        // Per packet its output, or `noutputs` for a drop (no rule, no
        // key): `outs[noutputs]` collects the drops, so the split below
        // moves every packet the same way, and they are released together.
        // Every packet starts on the bad packets' output (`BAD_OUTPUT`, else
        // the drop), which every keyed packet's lookup overwrites.
        let drop = self.noutputs as u32;
        let (mut bad, mut misses) = (0, 0);
        self.lookups += batch.len() as u64;
        self.out.clear();
        self.out.resize(batch.len(), self.bad_out);
        if self.tcam.reference {
            self.flow.clear();
            let mut pos = Vec::new();
            for (i, p) in batch.iter_mut().enumerate() {
                if let Some(k) = self.mark(p).then(|| FlowKey::from_packet(p)).flatten() {
                    self.flow.push(k);
                    pos.push(i);
                }
            }
            bad += batch.len() - pos.len();
            for (k, i) in self.flow.iter().zip(pos) {
                match self.tcam.lookup_reference(k) {
                    Some(r) => self.out[i] = r.0.port,
                    None => {
                        self.out[i] = drop;
                        misses += 1;
                    }
                }
            }
        } else {
            // Chunks of keys read straight from the packets (the same words
            // as `FlowKey::from_packet`'s), in arrays on the stack.
            for (c, chunk) in batch.as_mut_slice().chunks_mut(CHUNK).enumerate() {
                let mut keys = [[0u64; 5]; CHUNK];
                let mut pos = [0u8; CHUNK];
                let mut n = 0;
                for i in 0..chunk.len() {
                    if let Some(q) = chunk.get(i + 4) {
                        prefetch(q.data().as_ptr());
                    }
                    if let Some(w) = self.key(&mut chunk[i]) {
                        keys[n] = w;
                        pos[n] = i as u8;
                        n += 1;
                    }
                }
                bad += chunk.len() - n;
                let out = &mut self.out[c * CHUNK..][..chunk.len()];
                if n == chunk.len() {
                    // Every packet keyed (the common case): classified in
                    // place, nothing to scatter.
                    self.tcam.classify(&mut keys[..n], &mut self.scratch, out);
                    for o in out.iter_mut() {
                        misses += usize::from(*o == NO_MATCH);
                        *o = (*o).min(drop);
                    }
                    continue;
                }
                let mut o = [0u32; CHUNK];
                self.tcam
                    .classify(&mut keys[..n], &mut self.scratch, &mut o[..n]);
                for (&i, &o) in pos[..n].iter().zip(&o[..n]) {
                    misses += usize::from(o == NO_MATCH);
                    out[usize::from(i)] = o.min(drop);
                }
            }
        }
        batch.split_into(&self.out, &mut self.outs);
        self.bad += bad as u64;
        self.misses += misses as u64;
        // The drops released together (one pool access, not one a packet).
        self.outs[self.noutputs] = Batch::new();
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
            "rules" => self.tcam.rules().fold(String::new(), |mut s, r| {
                s.push_str(&r.unparse());
                s.push('\n');
                s
            }),
            "count" => self.tcam.len().to_string(),
            "masks" => self.tcam.masks().to_string(),
            "lookups" => self.lookups.to_string(),
            "misses" => self.misses.to_string(),
            "bad" => self.bad.to_string(),
            "cache_hits" => self.tcam.cache_stats().0.to_string(),
            "cache_hit_rate" => match self.tcam.cache_stats() {
                (_, 0) => "0.0".to_string(),
                (h, n) => format!("{:.1}", h as f64 * 100.0 / n as f64),
            },
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "insert" => self.parse_checked(value).and_then(|r| self.tcam.insert(r)),
            "delete" => self.parse_checked(value).and_then(|r| self.tcam.delete(&r)),
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
        vec![("no match", self.misses), ("bad header", bad)]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// A mask table's lookups equal a map's through growth and deletions,
    /// at the load where runs of eight and more occupied slots (the tag
    /// loop), keys away from their home slot and runs wrapping past the
    /// end are all common.
    #[test]
    fn mask_table_finds_what_a_map_holds() {
        let mut t = MaskTable::new([u64::MAX; 5]);
        let mut map = HashMap::new();
        let key = |i: u64| [i.wrapping_mul(0x9e37_79b9_7f4a_7c15), i, 0, 0, 4 << 40];
        let mut x = 1u64;
        for round in 0..6u64 {
            for _ in 0..1500 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let i = x >> 52;
                if x & 3 == 0 {
                    if let Some(&(rank, _)) = map.get(&i) {
                        t.remove(key(i), rank);
                        map.remove(&i);
                    }
                } else if let std::collections::hash_map::Entry::Vacant(e) = map.entry(i) {
                    let rank = 1 + round * 10_000 + (x >> 40 & 0xfff);
                    t.insert(key(i), rank, i as u32);
                    e.insert((rank, i as u32));
                }
            }
            assert!(
                occupied_runs(&t, 8) > 0,
                "no run of eight occupied slots to test"
            );
            for i in 0..4096u64 {
                let k = key(i);
                let found = t.find(&k, hash(&k)).map(|s| (s.rank, s.port));
                assert_eq!(found, map.get(&i).copied(), "key {i}, round {round}");
            }
        }
    }

    /// Runs of at least `len` occupied slots in `t`'s tags (wrapping
    /// around the end).
    fn occupied_runs(t: &MaskTable, len: usize) -> usize {
        let (mut runs, mut run, n) = (0, 0, t.tags.len());
        for j in 0..2 * n {
            run = if t.tags[j % n] != 0 { run + 1 } else { 0 };
            runs += usize::from(run == len);
        }
        runs
    }

    /// The AVX-512 probe (where the CPU has it) finds what the portable one
    /// finds, at the load where runs of eight and more occupied slots occur
    /// (no empty slot among the eight tags compared at once).
    #[test]
    fn avx512_probe_finds_what_the_portable_one_finds() {
        if !avx512() {
            return;
        }
        let mut t = MaskTable::new([u64::MAX; 5]);
        let key = |i: u64| [i.wrapping_mul(0x9e37_79b9_7f4a_7c15), i, 0, 0, 4 << 40];
        for i in 0..3000u64 {
            t.insert(key(i * 7 % 4096), 1 + i, i as u32);
        }
        assert!(
            occupied_runs(&t, 9) > 0,
            "no run of nine occupied slots to test"
        );
        for i in 0..8192u64 {
            let k = key(i);
            let h = hash(&k);
            let slot = |s: Option<&Slot>| s.map(|s| (s.rank, s.port));
            assert_eq!(
                slot(t.find_with::<true>(&k, h)),
                slot(t.find(&k, h)),
                "key {i}"
            );
        }
    }

    /// The AVX-512 search (where the CPU has it) and the portable one give
    /// the reference's answers, over rules of many masks (port ranges,
    /// IPv6), keys that mostly match, and chunks whose last group of eight
    /// is partial.
    #[test]
    fn both_searches_agree_with_the_reference() {
        let mut x = 7u64;
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 33
        };
        let (mut fast, mut reference) = (Tcam::new(false), Tcam::new(true));
        let mut tuples = Vec::new();
        for i in 0..600u64 {
            let (s, d) = (next() as u32, next() as u32);
            let (sl, dl) = (next() % 5 * 8, next() % 5 * 8);
            let (sp, dp, pr) = (
                next() as u16,
                next() as u16 % 1024,
                6 + next() as u8 % 2 * 11,
            );
            let mut r = format!("{} {}", next() % 1000, i % 4);
            if sl > 0 {
                r += &format!(" src {}/{sl}", std::net::Ipv4Addr::from(s));
            }
            if dl > 0 {
                r += &format!(" dst {}/{dl}", std::net::Ipv4Addr::from(d));
            }
            match next() % 4 {
                0 => r += &format!(" sport {sp}"),
                1 => r += &format!(" dport {}-{}", dp, dp + 40),
                _ => {}
            }
            r += &format!(" proto {pr}");
            if next() % 3 > 0 {
                r += &format!(" dport {dp}");
            }
            if i % 50 == 0 {
                r = format!("{} {} src 2001:db8::/{}", next() % 1000, i % 4, 32 + i / 50);
            }
            let r = Rule::parse(&r).unwrap();
            if fast.insert(r).is_ok() {
                reference.insert(r).unwrap();
            }
            tuples.push((s, d, sp, dp + (next() % 41) as u16, pr));
        }
        let keys: Vec<Key> = (0..1001)
            .map(|i| {
                let (s, d, sp, dp, pr) = tuples[(next() % 600) as usize];
                let (m, n) = (next() as u32, next() as u32);
                let v4 = |a: u32| linerate_runtime::flow::map_v4(a.to_be_bytes());
                let mut k = FlowKey {
                    src: v4(s ^ (m & 0xff)),
                    dst: v4(d ^ (n & 0xff)),
                    sport: sp,
                    dport: dp,
                    proto: if i % 7 == 0 { 1 } else { pr },
                    version: 4,
                };
                if i % 10 == 0 {
                    k.src = (0x2001_0db8u128 << 96 | u128::from(m)).to_be_bytes();
                    k.version = 6;
                }
                k
            })
            .collect();
        let want = reference.lookup_many(&keys);
        assert!(want.iter().filter(|o| o.is_some()).count() > 500);
        assert!(want.iter().any(|o| o.is_none()));
        let simd = fast.avx512;
        assert_eq!(fast.lookup_many(&keys), want, "AVX-512 search: {simd}");
        fast.avx512 = false;
        assert_eq!(fast.lookup_many(&keys), want, "portable search");
    }

    proptest! {
        /// The words read straight from a whole IPv4 header are those of
        /// `key_words` after `mark` (any IHL, short transport headers,
        /// ICMP, the `L4_PROTO` annotation), and only whole headers are
        /// read that way.
        #[test]
        fn ipv4_words_are_key_words(
            ihl in 0u8..16,
            body in prop::collection::vec(any::<u8>(), 0..90),
            proto in prop_oneof![Just(1u8), Just(6), Just(58), any::<u8>()],
            anno in prop_oneof![Just(0u8), Just(1), Just(58), any::<u8>()],
            l4 in prop_oneof![Just(0u8), Just(8), Just(128), Just(129), any::<u8>()],
        ) {
            let hl = usize::from(ihl) * 4;
            let mut d = vec![0x40 | ihl];
            d.extend(body);
            if d.len() > 9 {
                d[9] = proto;
            }
            if hl >= 20 && d.len() > hl {
                d[hl] = l4;
            }
            let mut p = Packet::from_slice(&d);
            p.anno_mut().set_u8(offsets::L4_PROTO, anno);
            let fast = ipv4_words(p.data(), &p);
            let whole = hl >= 20 && d.len() >= hl;
            p.set_network_header(0);
            if whole {
                p.set_transport_header(hl as isize);
            }
            let slow = key_words(&p, KeyRules::FLOW_KEY).map(|r| r.words);
            prop_assert_eq!(fast.is_some(), whole);
            if let Some((w, h)) = fast {
                prop_assert_eq!(h, hl);
                prop_assert_eq!(Some(w), slow);
            }
        }
    }
}

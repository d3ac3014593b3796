//! The microflow fast path (TurboFlow): a flat table of per-flow summaries of
//! packet bursts, evicted as microflow records.
//!
//! # Synopsis
//! `MicroflowTable([KEYWORDS])`
//!
//! # Ports
//! One push input. Output 0 (push): microflow records and watermark
//! records (see below), up to 16 a packet: the packet's data is one or
//! more [`Microflow`]s in their in-memory layout, back to back, in the
//! order they were emitted; its timestamp is its last record's last
//! packet. Output 1 (push, optional):
//! packets that carry no flow key (no network header annotation, a
//! non-first fragment, a transport header missing or too short for the
//! key); without it they are dropped and counted. Keyed packets are
//! consumed: the table meters them.
//!
//! # Arguments
//! - `TABLE` (bytes, default `1MB`): table memory; `K`, `KB`, `KiB`, `M`,
//!   `MB`, `MiB` suffixes are powers of 1024. A slot takes
//!   [`SLOT_BYTES`] bytes (108: tag, key with VLAN, a 64-byte counter
//!   block), so 1MB is 9,709 slots.
//! - `SLOTS` (integer): the number of slots instead of `TABLE`.
//! - `WAYS` (1 or 2, default 1): direct-mapped, or 2-way buckets whose
//!   victim on a miss is the empty way, else the least recently used one.
//! - `IDLE` (seconds, default 0 = off): a microflow idle longer than this
//!   is evicted (reason idle timeout) when its slot is next touched or swept.
//! - `ACTIVE` (seconds, default 0 = off): a microflow older than this is
//!   evicted likewise (reason active timeout).
//! - `TCPEND` (boolean, default true): evict a TCP microflow on a packet with
//!   FIN or RST, and the other direction's microflow with it, before it
//!   (reason end of flow), so that a biflow record is complete when the
//!   aggregator ends it.
//! - `PARSE` (boolean, default false): input packets are Ethernet frames
//!   that the table parses itself, as `L4Parser` would, instead of reading
//!   the annotations a parser upstream left: `FromDump -> MicroflowTable(PARSE
//!   true)` meters and ignores the same packets as `FromDump -> p ::
//!   L4Parser -> mt :: MicroflowTable; p[1] -> mt`, without the parser's
//!   own pass, and without timeouts emits the same records (with them, the
//!   parser's second output reaches the table as batches of their own, and
//!   each batch sweeps). A frame that does not parse keeps the annotations
//!   it came with (a raw-IP file's network header, which `FromDump` sets).
//! - `IMPL` (`fast` or `reference`, default `fast`): the implementation.
//!
//! Time is packet time (each packet's timestamp annotation): a file's
//! trace time, or a live source's arrival time. A collision evicts the
//! resident microflow with reason lack of resources. Timeouts are checked
//! when a packet reaches its slot and by a sweep of 64 slots per batch;
//! live (the first packet's time within 60 s of the system clock), a timer
//! also sweeps 1/16 of the table every 100 ms with the system clock as
//! time, so that microflows leave when traffic stops. A file is swept per
//! batch only: a replay's records do not depend on how fast it runs.
//!
//! Watermarks: the aggregator must not time a flow out while a microflow
//! of it is still here. At the end of each sweep rotation (every slot
//! visited once) the table sends a watermark record (`dir.packets` 0,
//! `dir.first_ns` the watermark W): no microflow still held started before
//! W (W is the smallest first-packet time of the microflows the rotation
//! left in place and of those started during it). One is sent with the
//! first batch (W 0: watermarks follow) and one when the table is flushed.
//! Watermark records also carry the ignored count (`ignored`). Feed each
//! `FlowAggregator` from one `MicroflowTable`.
//!
//! The flow key is [`FlowKey::from_packet`] (annotations a parser such as
//! `L4Parser`, `CheckIPHeader` or `MarkIPHeader` left) plus the VLAN id of
//! the `VLAN_TCI` annotation. ICMP and ICMPv6 are keyed by (source,
//! destination, type, code, echo identifier). Byte counts are IP lengths
//! (IPv4 total length, IPv6 40 + payload length).
//!
//! # Handlers
//! - `packets` (read): packets metered.
//! - `ignored` (read): packets without a flow key (ignoredPacketTotalCount).
//! - `microflows` (read): microflow records emitted.
//! - `collisions`, `idle_evictions`, `active_evictions`, `end_evictions`,
//!   `flushed` (read): records emitted by reason.
//! - `occupied` (read): slots in use; `slots` (read): table slots.
//! - `packets_per_microflow` (read): packets / microflows, two decimals.
//! - `flush` (write): evict every microflow (reason forced end) at the next
//!   packet batch or timer tick (100 ms).
//!
//! # Example
//! ```click
//! FromDump(trace.pcap, STOP true) -> p :: L4Parser
//!   -> mt :: MicroflowTable(TABLE 1MB, WAYS 2) -> FlowAggregator -> FlowCSV(flows.csv);
//! p[1] -> mt;  // unparsable packets are counted as ignored
//! ```
//!
//! With Click's IPv4-only parser:
//! ```click
//! FromDump(trace.pcap, STOP true) -> CheckIPHeader(14) -> MicroflowTable -> FlowAggregator -> Discard;
//! ```
//!
//! With `PARSE`:
//! ```click
//! FromDump(trace.pcap, STOP true) -> MicroflowTable(PARSE true) -> FlowAggregator -> Discard;
//! ```
//!
//! # Implementation
//! Three arrays (struct of arrays by access pattern): 32-bit tags (hash
//! bits, 0 = empty), keys (five 64-bit words, 40 bytes) and 64-byte
//! aligned counter blocks (a [`Direction`]); a hit touches one tag, one key
//! and one counter line, a sweep reads only tags and counters. A full
//! per-field split was not used: it would touch one cache line per field
//! per packet. Each batch is processed in two passes: the first reads every
//! packet's key straight from its headers as the five words of the slot's
//! key layout (IPv4 addresses are mapped with two shifts; no `FlowKey` is
//! built or copied), hashes the words and writes key, bucket, tag and
//! features into a reused per-batch job array (by index, so its length
//! stays in a register; the batch clock is raised here too; in a batch of
//! more than 128 packets it fetches each packet's annotations and IP
//! header 8 packets ahead, `hint::prefetch_ahead`); the second
//! prefetches the target slot's three lines 8 packets ahead and updates in
//! order, comparing keys word by word without branches (xor/or of five
//! words). The first pass reads the common packet (IPv4, not a later
//! fragment, not ICMP, a transport header of at least 14 bytes; then the
//! same for IPv6, whose transport header the parser found) inline, one
//! bounds check per header, and stores its job from registers (IPv6 inline
//! too: 11 instructions a packet fewer on the internet-like trace, whose
//! packets are 15 % IPv6, and its one-core flowmon run 1-3 % faster,
//! session 31); every other
//! packet goes through the shared `flow::key_words` reader out of line
//! (one reader for both, whose merged result went through the stack, cost
//! 43 instructions a packet more, session 9). The second pass is also
//! monomorphised on whether timeouts are set: without them (the default)
//! a packet's microflow can only have expired at packet time `u64::MAX`
//! (an active timeout of `u64::MAX`), so that is all the hit path tests
//! (-12 instructions a packet). Prefetching the whole batch in the first pass (before session 6)
//! asked for about 220 lines at once, far more than the L1's outstanding
//! misses, and stalled on the prefetches; 8 ahead measured best (4 the
//! same, 16 and 64 slower). Both passes are
//! monomorphised on `WAYS`, and the second sees the three arrays as slices
//! of one length with each bucket index clamped to the last bucket (a
//! no-op), so that its slot accesses carry no bounds checks (safe code). The hash is the reference's `hash_key` computed
//! on the words, so slot placement, evictions and records are the same.
//! `FlowKey` and `SlotKey` values are built only for records.
//!
//! `PARSE`: the first pass runs `linerate_wire::l4::parse_common_cut_then`
//! (L4Parser's common pass, which takes the frames a capture cut too) on
//! each frame and reads the key and features in the closure it calls for
//! the frame's shape, at that shape's constant offsets; the parser's flow
//! hash, unused there, is not computed. The frames it does not take
//! (ICMP, IPv4 options, two tags, extension headers, later fragments,
//! protocols without ports, errors) are parsed in full out of line,
//! annotated as L4Parser annotates them, and read by the general reader.
//! On `nfs/flowmon.click` and the internet trace cut to 96 bytes this
//! executes 11.8 % fewer instructions than `L4Parser -> MicroflowTable`
//! (1,543.5 -> 1,361.4 M for 2 M packets, callgrind): the parser's pass,
//! its annotation stores, its hash and the table's reads of the
//! annotations go (session 35). L4Parser's
//! flow-hash annotation is not used: other parsers (`CheckIPHeader`,
//! `MarkIPHeader`) do not set it and an upstream `FromDump` in replicated
//! mode sets a symmetric one, which would put both directions of a flow in
//! one direct-mapped slot; the word hash costs two multiplications. The update itself is branch-light: the
//! minimum/maximum, flag and first/second-size updates are selects; the
//! only branches are hit/miss and the (rare) evictions. The bucket index is
//! `(hash * buckets) >> 32` (any table size, no division). The sweep
//! (above) walks runs of slots up to the end of the table (tags, counters
//! and keys zipped) and reads only tags and, for held slots, the counter
//! line; it runs without timeouts too, for the watermark, and then only
//! takes the smallest first-packet time of the held slots (no expiry
//! test, no key read: 247.9 -> 241.2 instructions a packet on hits,
//! session 10). The FIN/RST eviction of the
//! other direction costs a second hash and probe on those packets only.
//! Ignored packets are counted in-band: each microflow or watermark record
//! carries the ignored count since the previous record (`ignored`), so a
//! downstream aggregator on another thread sees the total. At the end of the run
//! (`Element::flush`) every microflow is emitted, 256 per call. No
//! allocation per packet: records are written 16 to a pool packet, the
//! next appended to the last packet of the batch while it has room
//! (`Packet::try_put_mut`). One record a packet cost a packet's allocation,
//! metadata, batch slot and release a record; 16 a packet, `MemoryReplay(LENGTH
//! 60, PACKETS 65536, COPY true) -> MarkIPHeader(14) -> MicroflowTable(TABLE
//! 1MB) -> Discard` (every packet evicts) took 949 instead of 992 ms for 30
//! M packets, and flowmon on the inet trace 376 instead of 384 ms
//! (session 21, alternated). Writing the records to one 2 KB buffer that
//! stays in the L1 took 633 ms: the rest of an eviction's cost is the
//! record's two lines of stores to memory outside the L1, and the source's
//! frames they push out of it.
//!
//! Session 6 (`perf stat -e instructions:u`, `MemoryReplay(PACKETS 1024)
//! -> MarkIPHeader(14) -> MicroflowTable(TABLE 1MB) -> Discard` minus the
//! graph without the table): 324 -> 301 instructions and 98 -> 77 cycles
//! a packet on hits (2-way 318 -> 295 and 96 -> 74; 64k flows, every packet
//! evicting, 436 -> 405 and 154 -> 124); `linerate bench elements`, hits
//! with MarkIPHeader, 33-34 -> 26 ns. The rest is the first pass (about
//! 160: the generic key reader, the hash and the job store), the update
//! (about 100) and the sweep and records. Tried and dropped: testing eight
//! tags at once to skip empty slots in the sweep (+2 on hits: a 1k-flow
//! table is too dense for it) and inlining the record emission (-17 when
//! every packet evicts, but +6 on hits). Also dropped (session 6,
//! feat/mflow2): one 128-byte slot (counters, then tag and key on the
//! adjacent line; two lines a hit instead of three to four) measured hits
//! -3 instructions and no faster (1k flows sit in L2; the hit row is bound
//! by instructions, about 4 a cycle), 2-way +3 and 2.5 % slower, every
//! packet evicting -18 and 2 % faster, for 18.5 % more memory a slot; and
//! records built from the slot's key words where they lie (the `SlotKey`
//! the caller builds is read back across its narrow stores, a
//! store-forwarding stall in `emit`): evicting -4.5 % cycles, but hits +3
//! instructions and +2 cycles.
//!
//! Session 9 (same measure): 302.5 -> 247.9 instructions and 80 -> 69
//! cycles a packet on hits (2-way 298.8 -> 247.7, every packet evicting
//! 406.5 -> 349.2 and 134 -> 111); `linerate bench elements`, hits with
//! MarkIPHeader, 27.4-29.7 -> 23.5-24.1 ns (42 Mpps). Dropped: a
//! branch-free sweep (every slot's counters tested: hits +13 instructions
//! and +13 % cycles), one combined timeout test on hits (-3 instructions,
//! 2-way +2), the sweep over one index instead of three zipped slices (the
//! same code).
//!
//! Session 17 (an Intel Xeon of the Emerald Rapids generation, no counters;
//! `perf record -e cpu-clock` of 64k flows, every packet evicting): 64 % of
//! the record emission's samples were on one store, the record's key bytes
//! loaded across the narrow stores of the `SlotKey` just built (a
//! store-forwarding stall). The fast table now writes each record from the
//! slot's key words straight into the packet (`Packet::filled`, eight
//! bytes at a time). `linerate bench elements`, five alternated sittings
//! on a noisy host: every packet evicting, best 31.5 -> 28.8 ns and median
//! of the medians 38.5 -> 33.2 ns; hits unchanged (best 19.7 both).
//!
//! `IMPL reference` keeps one `Option<Slot>` per slot, parses and updates
//! one packet at a time with plain `if`s; outputs, handler values and
//! record order are identical.
//!
//! Not in Click (TurboFlow, Open-NFP 2017; Sonchack et al.).

use super::record::{end_reason, Direction};
use crate::hint::{prefetch, prefetch_ahead, PREFETCH_BATCH};
use crate::parse::l4parser;
use linerate_runtime::anno::offsets;
use linerate_runtime::anno::NO_HEADER;
use linerate_runtime::flow::{ipv4_address_words, key_words, FlowKey, KeyRead, KeyRules};
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use linerate_wire::l4::{self, NO_TRANSPORT};
use std::any::Any;

/// The `MicroflowTable` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "MicroflowTable",
    port_count: "1/1-2",
    processing: "h/h",
    doc: element_doc!("flow/microflowtable"),
    make,
};

/// Bytes of table memory per slot: tag (4), key with VLAN (40), counters (64).
pub const SLOT_BYTES: usize = 4 + 40 + 64;

/// Slots swept for timeouts per batch.
const SWEEP: usize = 64;

/// Packets between a slot's prefetch and its update.
const DIST: usize = 8;

/// Records emitted per `flush` call at the end of a run.
const FLUSH_CHUNK: usize = 256;

/// Timer period for the `flush` handler and the timeout sweep.
const TICK_NS: u64 = 100_000_000;

/// Packet times within this of the system clock are arrival times (live).
const LIVE_NS: u64 = 60_000_000_000;

/// One microflow: the summary of a flow's packets while it held a slot.
/// `MicroflowTable` emits each as a packet whose data is this struct in its
/// in-memory layout (`#[repr(C)]`, host byte order, no implicit padding);
/// `FlowAggregator` reads it back with [`Microflow::from_bytes`].
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Microflow {
    /// [`Microflow::MAGIC`].
    pub magic: u32,
    /// VLAN id (the `VLAN_TCI` annotation's low 12 bits; 0 untagged).
    pub vlan: u16,
    /// Why it left the table ([`end_reason`]: collision = lack of
    /// resources, idle/active timeout, end of flow (FIN/RST), forced end).
    pub reason: u8,
    /// Padding (zero).
    pub _pad0: u8,
    /// The 5-tuple.
    pub key: FlowKey,
    /// Padding (zero).
    pub _pad: [u8; 2],
    /// Counters and features of the microflow's packets.
    pub dir: Direction,
    /// Packets the table ignored (no key) since its previous record. A
    /// record with `dir.packets == 0` only carries this count.
    pub ignored: u64,
}

// SAFETY: repr(C), integers and byte arrays only (see `as_bytes`).
unsafe impl super::record::PacketRecord for Microflow {
    fn has_magic(&self) -> bool {
        self.magic == Self::MAGIC
    }
}

impl Microflow {
    /// Marks packet data as a microflow record.
    pub const MAGIC: u32 = 0x4d46_4c57;
    /// Size of a record in bytes.
    pub const SIZE: usize = std::mem::size_of::<Microflow>();

    /// A record with every field zero except the magic.
    pub fn new() -> Microflow {
        Microflow {
            magic: Self::MAGIC,
            ..Microflow::default()
        }
    }

    /// The record's bytes (to become a packet's data).
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: repr(C) with explicit padding fields only (FlowKey is
        // 38 bytes of integers, Direction 64), so every byte is initialized.
        unsafe { std::slice::from_raw_parts(self as *const Self as *const u8, Self::SIZE) }
    }

    /// Read a record from packet data; `None` if the length or magic is wrong.
    pub fn from_bytes(b: &[u8]) -> Option<Microflow> {
        super::record::record_from(b)
    }

    /// The record as a packet (timestamp: the last packet's).
    pub fn to_packet(&self) -> Packet {
        let mut p = Packet::from_slice(self.as_bytes());
        p.set_timestamp_ns(self.dir.last_ns);
        p
    }
}

/// The per-packet features a microflow summarises.
#[derive(Clone, Copy, Default)]
pub(crate) struct Feat {
    pub ts: u64,
    pub len: u16,
    pub tos: u8,
    pub ttl: u8,
    pub flags: u8,
}

/// What the table needs of one packet.
#[derive(Clone, Copy, Default)]
pub(crate) struct Pkt {
    pub key: FlowKey,
    pub vlan: u16,
    pub f: Feat,
}

/// Read the flow key and per-packet features; `None` for packets the table
/// ignores (no key, non-first fragment, transport header missing or too
/// short for the key).
#[inline(always)]
pub(crate) fn parse(p: &Packet) -> Option<Pkt> {
    let key = FlowKey::from_packet(p)?;
    let ip = p.network_header()?;
    let (len, tos, ttl) = if key.version == 4 {
        if u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff != 0 {
            return None; // non-first fragment
        }
        (u16::from_be_bytes([ip[2], ip[3]]), ip[1], ip[8])
    } else {
        let plen = u16::from_be_bytes([ip[4], ip[5]]);
        (plen.saturating_add(40), (ip[0] << 4) | (ip[1] >> 4), ip[7])
    };
    let l4 = p.transport_header().unwrap_or(&[]);
    let need = match key.proto {
        6 | 17 | 132 | 136 => 4,
        1 | 58 => 8,
        _ => 0,
    };
    if l4.len() < need {
        return None;
    }
    let flags = if key.proto == 6 && l4.len() >= 14 {
        l4[13]
    } else {
        0
    };
    Some(Pkt {
        key,
        vlan: p.anno().u16(offsets::VLAN_TCI) & 0x0fff,
        f: Feat {
            ts: p.timestamp_ns(),
            len,
            tos,
            ttl,
            flags,
        },
    })
}

/// A slot key as five 64-bit words: the in-memory layout of [`SlotKey`]
/// (the [`FlowKey`] fields in order, then the VLAN id), little-endian.
type Words = [u64; 5];

/// [`parse`] for the fast path: the key straight from the headers as
/// [`Words`] by `linerate_runtime::flow::key_words` (shared with
/// `CuckooHash` and `FlowCache`; no [`FlowKey`] built or copied) with the
/// VLAN id, no key for non-first IPv4 fragments or for ports the transport
/// header is too short for; then the features. `None` for exactly the
/// packets `parse` rejects.
#[inline(always)]
fn parse_words(p: &Packet) -> Option<(Words, Feat)> {
    const RULES: KeyRules = KeyRules {
        vlan: true,
        skip_later_fragments: true,
        need_ports: true,
    };
    let KeyRead {
        words,
        ip_len: len,
        tos,
        ttl,
        l4,
    } = key_words(p, RULES)?;
    let flags = if (words[4] >> 32) as u8 == 6 && l4.len() >= 14 {
        l4[13]
    } else {
        0
    };
    let f = Feat {
        ts: p.timestamp_ns(),
        len,
        tos,
        ttl,
        flags,
    };
    Some((words, f))
}

/// [`parse_words`] for the common case, inlined: an IPv4 packet, not a
/// later fragment, neither ICMP nor ICMPv6, whose transport header holds at
/// least 14 bytes (the TCP flags' byte), read with one bounds check per
/// header. `None` for every other packet, which [`Job::other`] reads with
/// `parse_words`; where this gives `Some`, so does `parse_words`, with the
/// same value.
#[inline(always)]
fn read_v4(p: &Packet) -> Option<(Words, Feat)> {
    let h = transport_key::<20, 9>(p)?;
    let ip = h.ip;
    if ip[0] >> 4 != 4 || u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff != 0 {
        return None;
    }
    Some(v4_words(ip, h.tail, h.ts, h.flags))
}

/// [`read_v4`]'s counterpart for IPv6: a packet whose parser found its
/// transport header (so not a later fragment), neither ICMP nor ICMPv6,
/// with at least 14 bytes of it, read with one bounds check per header;
/// the address words are the address bytes as they lie. `None` for every
/// other packet, which [`Job::other`] reads; where this gives `Some`, so
/// does `parse_words`, with the same value. (15 % of the internet-like
/// trace's packets are IPv6: out of line they cost 152 instructions each.)
#[inline(always)]
fn read_v6(p: &Packet) -> Option<(Words, Feat)> {
    let h = transport_key::<40, 6>(p)?;
    let ip = h.ip;
    if ip[0] >> 4 != 6 {
        return None;
    }
    Some(v6_words(ip, h.tail, h.ts, h.flags))
}

/// The key words and features of a packet with IPv4 header `ip`, whose
/// key's last word but the version is `tail` ([`tail_and_flags`]).
#[inline(always)]
fn v4_words(ip: &[u8; 20], tail: u64, ts: u64, flags: u8) -> (Words, Feat) {
    let mut w = ipv4_address_words(ip);
    w[4] |= tail;
    let f = Feat {
        ts,
        len: u16::from_be_bytes([ip[2], ip[3]]),
        tos: ip[1],
        ttl: ip[8],
        flags,
    };
    (w, f)
}

/// [`v4_words`] for IPv6 header `ip`: the address words are the address
/// bytes as they lie.
#[inline(always)]
fn v6_words(ip: &[u8; 40], tail: u64, ts: u64, flags: u8) -> (Words, Feat) {
    let word = |o: usize| u64::from_le_bytes(*ip[o..].first_chunk::<8>().unwrap_or(&[0; 8]));
    let w = [word(8), word(16), word(24), word(32), 6 << 40 | tail];
    let f = Feat {
        ts,
        len: u16::from_be_bytes([ip[4], ip[5]]).saturating_add(40),
        tos: (ip[0] << 4) | (ip[1] >> 4),
        ttl: ip[7],
        flags,
    };
    (w, f)
}

/// The key's last word but the version (`flow::key_tail`'s layout, written
/// out: ports, protocol, VLAN id) and the TCP flags (0 for other
/// protocols) of a transport header's first 14 bytes.
#[inline(always)]
fn tail_and_flags(l4: &[u8; 14], proto: u8, vlan_tci: u16) -> (u64, u8) {
    let ports = u64::from(u16::from_be_bytes([l4[0], l4[1]]))
        | u64::from(u16::from_be_bytes([l4[2], l4[3]])) << 16;
    let tail = ports | u64::from(proto) << 32 | u64::from(vlan_tci & 0x0fff) << 48;
    // A mask, not a test: TCP or UDP is chance, and as a branch it was
    // mispredicted 0.14 times a packet (session 33).
    (tail, l4[13] & 0u8.wrapping_sub(u8::from(proto == 6)))
}

/// `PARSE` mode's reader of an Ethernet frame (no parser ran upstream):
/// the frame shapes `l4::parse_common_cut_then` takes (at most one tag,
/// IPv4 with a 20-byte header or IPv6 without extension headers, a
/// transport header with ports) with at least 14 bytes of transport header
/// captured, read at the shape's constant offsets. `None` for every other
/// frame, which [`Job::other_frame`] parses in full; where this gives
/// `Some`, `L4Parser` then [`parse_words`] give the same value.
#[inline(always)]
fn read_frame(p: &Packet) -> Option<(Words, Feat)> {
    let d = p.data();
    // L4Parser's common pass takes frames whose header offsets fit their
    // annotations; the others go through `annotate`, as there.
    if p.headroom() + d.len() >= usize::from(NO_HEADER) {
        return None;
    }
    let ts = p.timestamp_ns();
    l4::parse_common_cut_then(
        d,
        l4parser::extra_length(p),
        #[inline(always)]
        |r| {
            if r.transport == NO_TRANSPORT {
                return None;
            }
            let l4 = d.get(usize::from(r.transport)..)?.first_chunk::<14>()?;
            let (tail, flags) = tail_and_flags(l4, r.proto, r.vlan_tci);
            let ip = d.get(usize::from(r.network)..)?;
            if r.version == 4 {
                Some(v4_words(ip.first_chunk()?, tail, ts, flags))
            } else {
                Some(v6_words(ip.first_chunk()?, tail, ts, flags))
            }
        },
    )
    .flatten()
}

/// What [`read_v4`] and [`read_v6`] read alike.
struct TransportKey<'a, const N: usize> {
    /// The packet's timestamp.
    ts: u64,
    /// The network header's first `N` bytes.
    ip: &'a [u8; N],
    /// The key's last word less the version: ports, protocol and VLAN id.
    tail: u64,
    /// TCP flags (0 for other protocols).
    flags: u8,
}

/// The network header's first `N` bytes and the transport header's first
/// 14 of a packet whose parser set both (one bounds check each), with the
/// protocol (the `L4_PROTO` annotation, else byte `PROTO` of the IP
/// header) and the key's last word but the version. `None` for ICMP and
/// ICMPv6, whose ports are read differently. The word is
/// `flow::key_tail`'s layout, written out: calling it here cost 2
/// instructions a packet (session 9; the proptest below checks the words
/// against `parse_words`).
#[inline(always)]
fn transport_key<const N: usize, const PROTO: usize>(p: &Packet) -> Option<TransportKey<'_, N>> {
    let a = p.anno();
    let (nh, th) = (a.network_header, a.transport_header);
    if nh == NO_HEADER || th == NO_HEADER {
        return None;
    }
    let d = p.data();
    let hr = p.headroom();
    // Offsets before the data wrap to values past its end: no slice.
    let ip = d
        .get((nh as usize).wrapping_sub(hr)..)?
        .first_chunk::<N>()?;
    let l4 = d
        .get((th as usize).wrapping_sub(hr)..)?
        .first_chunk::<14>()?;
    let proto = match a.u8(offsets::L4_PROTO) {
        0 => ip[PROTO],
        x => x,
    };
    if matches!(proto, 1 | 58) {
        return None;
    }
    let (tail, flags) = tail_and_flags(l4, proto, a.u16(offsets::VLAN_TCI));
    Some(TransportKey {
        ts: a.timestamp_ns,
        ip,
        tail,
        flags,
    })
}

/// [`hash_key`] of a key in [`Words`] form (the same value).
#[inline(always)]
fn hash_words(w: &Words) -> u64 {
    let a = w[1] ^ w[0].rotate_left(23);
    let b = w[3] ^ w[2].rotate_left(41);
    fold(
        fold(a ^ 0x243f_6a88_85a3_08d3, b ^ 0x1319_8a2e_0370_7344),
        w[4] ^ 0xa409_3822_299f_31d0,
    )
}

/// The other direction's key (addresses and ports swapped).
#[inline]
fn reversed(w: &Words) -> Words {
    let ports = (w[4] & 0xffff) << 16 | (w[4] >> 16) & 0xffff;
    [w[2], w[3], w[0], w[1], (w[4] & !0xffff_ffff) | ports]
}

/// Whether two keys in [`Words`] form are equal (branch-free).
#[inline(always)]
fn same(a: &Words, b: &Words) -> bool {
    ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3]) | (a[4] ^ b[4])) == 0
}

/// The microflow of one packet.
#[inline]
pub(crate) fn start(k: &Feat) -> Direction {
    Direction {
        packets: 1,
        bytes: k.len as u64,
        first_ns: k.ts,
        last_ns: k.ts,
        min_iat_ns: 0,
        max_iat_ns: 0,
        min_len: k.len,
        max_len: k.len,
        first_len: k.len,
        second_len: 0,
        tcp_flags: k.flags,
        tos: k.tos,
        min_ttl: k.ttl,
        max_ttl: k.ttl,
        _pad: [0; 4],
    }
}

/// Add a packet to a microflow (branch-light: selects only).
#[inline(always)]
fn update(d: &mut Direction, k: &Feat) {
    let gap = k.ts.saturating_sub(d.last_ns);
    let one = d.packets == 1;
    d.min_iat_ns = if one { gap } else { d.min_iat_ns.min(gap) };
    d.max_iat_ns = d.max_iat_ns.max(gap);
    d.second_len = if one { k.len } else { d.second_len };
    d.packets += 1;
    d.bytes += k.len as u64;
    d.last_ns = d.last_ns.max(k.ts);
    d.min_len = d.min_len.min(k.len);
    d.max_len = d.max_len.max(k.len);
    d.tcp_flags |= k.flags;
    d.min_ttl = d.min_ttl.min(k.ttl);
    d.max_ttl = d.max_ttl.max(k.ttl);
}

/// The straightforward update (`IMPL reference`).
fn update_ref(d: &mut Direction, k: &Feat) {
    let gap = k.ts.saturating_sub(d.last_ns);
    if d.packets == 1 {
        d.min_iat_ns = gap;
        d.second_len = k.len;
    } else if gap < d.min_iat_ns {
        d.min_iat_ns = gap;
    }
    if gap > d.max_iat_ns {
        d.max_iat_ns = gap;
    }
    d.packets += 1;
    d.bytes += k.len as u64;
    if k.ts > d.last_ns {
        d.last_ns = k.ts;
    }
    if k.len < d.min_len {
        d.min_len = k.len;
    }
    if k.len > d.max_len {
        d.max_len = k.len;
    }
    d.tcp_flags |= k.flags;
    if k.ttl < d.min_ttl {
        d.min_ttl = k.ttl;
    }
    if k.ttl > d.max_ttl {
        d.max_ttl = k.ttl;
    }
}

#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let m = (a as u128).wrapping_mul(b as u128);
    (m as u64) ^ ((m >> 64) as u64)
}

/// A 64-bit hash of a key and VLAN.
#[inline]
pub(crate) fn hash_key(k: &FlowKey, vlan: u16) -> u64 {
    let w = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
    let a = w(&k.src[8..16]) ^ w(&k.src[0..8]).rotate_left(23);
    let b = w(&k.dst[8..16]) ^ w(&k.dst[0..8]).rotate_left(41);
    let c = k.sport as u64
        | (k.dport as u64) << 16
        | (k.proto as u64) << 32
        | (k.version as u64) << 40
        | (vlan as u64) << 48;
    fold(
        fold(a ^ 0x243f_6a88_85a3_08d3, b ^ 0x1319_8a2e_0370_7344),
        c ^ 0xa409_3822_299f_31d0,
    )
}

/// The key of a slot.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct SlotKey {
    key: FlowKey,
    vlan: u16,
}

/// A counter block on its own cache line.
#[repr(C, align(64))]
#[derive(Clone, Copy, Default)]
struct Cell(Direction);

/// Timeouts and eviction rules.
#[derive(Clone, Copy)]
struct Rules {
    idle: u64,
    active: u64,
    tcpend: bool,
}

impl Rules {
    /// Whether an idle or active timeout is set (`u64::MAX` is none).
    #[inline]
    fn timed(&self) -> bool {
        self.idle != u64::MAX || self.active != u64::MAX
    }

    /// The timeout reason if `d` has expired at `now`.
    #[inline]
    fn expired(&self, d: &Direction, now: u64) -> Option<u8> {
        if now.saturating_sub(d.last_ns) > self.idle {
            Some(end_reason::IDLE_TIMEOUT)
        } else if now.saturating_sub(d.first_ns) >= self.active {
            Some(end_reason::ACTIVE_TIMEOUT)
        } else {
            None
        }
    }
}

/// Counters shared by both implementations.
#[derive(Clone, Copy, Default)]
struct Stats {
    packets: u64,
    ignored: u64,
    /// Ignored packets not yet reported in a record.
    ignored_pending: u64,
    microflows: u64,
    by_reason: [u64; 6],
    now: u64,
}

/// The watermark: how far (in packet time) the microflows sent so far are
/// complete. One sweep rotation visits every slot once; a microflow held at
/// the end of a rotation was either seen by the sweep (`kept`) or started
/// during the rotation (`new`), so no held microflow starts before
/// `min(kept, new)`.
#[derive(Clone, Copy)]
struct Watermark {
    /// Smallest first-packet time of the microflows the sweep left in place
    /// in this rotation.
    kept: u64,
    /// Smallest first-packet time of the microflows started in this rotation.
    new: u64,
    /// The last watermark sent (`None` before the first mark).
    sent: Option<u64>,
}

/// The fast implementation's table.
struct Fast {
    tags: Vec<u32>,
    keys: Vec<Words>,
    cells: Vec<Cell>,
    /// The batch's keyed packets between the two passes (reused; as long
    /// as the largest batch so far, filled by index so that the length
    /// stays in a register).
    jobs: Vec<Job>,
}

/// A keyed packet between the two passes of a batch.
#[derive(Clone, Copy, Default)]
struct Job {
    w: Words,
    /// The bucket's first slot.
    b: u32,
    tag: u32,
    f: Feat,
}

impl Job {
    /// The job of a key and its features: hashed and placed.
    #[inline(always)]
    fn new<const WAYS: usize>(w: Words, f: Feat, nbuckets: usize) -> Job {
        let h = hash_words(&w);
        Job {
            w,
            b: bucket(h, nbuckets, WAYS) as u32,
            tag: tag_of(h),
            f,
        }
    }

    /// The job of a packet neither [`read_v4`] nor [`read_v6`] reads (ICMP,
    /// ICMPv6, fewer than 14 bytes of transport header, none), out of line.
    #[cold]
    #[inline(never)]
    fn other<const WAYS: usize>(p: &Packet, nbuckets: usize) -> Option<Job> {
        let (w, f) = parse_words(p)?;
        Some(Job::new::<WAYS>(w, f, nbuckets))
    }
}

impl Job {
    /// `PARSE` mode's job of a frame [`read_frame`] does not read: parsed
    /// in full as `L4Parser` parses it (annotations written; a frame it
    /// cannot parse keeps its own), then read as [`Job::other`] reads a
    /// parsed packet. Out of line.
    #[cold]
    #[inline(never)]
    fn other_frame<const WAYS: usize>(p: &mut Packet, nbuckets: usize) -> Option<Job> {
        let parsed = match l4parser::extra_length(p) {
            0 => l4::parse_general(p.data()),
            cut => l4::parse_cut(p.data(), cut),
        };
        if let Ok(r) = parsed {
            l4parser::annotate(p, &r);
        }
        Job::other::<WAYS>(p, nbuckets)
    }
}

impl Fast {
    /// Pass 1: read each packet's key and features, hash and place the key;
    /// returns the number of keyed packets (`jobs[..n]`) and raises `now`
    /// to the latest packet time.
    #[inline(always)]
    fn gather<const WAYS: usize, const PARSE: bool>(
        &mut self,
        batch: &mut Batch,
        nbuckets: usize,
        now: &mut u64,
    ) -> usize {
        if self.jobs.len() < batch.len() {
            self.jobs.resize(batch.len(), Job::default());
        }
        let mut n = 0;
        let pkts = batch.as_mut_slice();
        let far = pkts.len() > PREFETCH_BATCH;
        for i in 0..pkts.len() {
            prefetch_ahead(pkts, i, far);
            if PARSE {
                let p = &mut pkts[i];
                if let Some((w, f)) = read_frame(p) {
                    *now = (*now).max(f.ts);
                    self.jobs[n] = Job::new::<WAYS>(w, f, nbuckets);
                    n += 1;
                } else if let Some(j) = Job::other_frame::<WAYS>(p, nbuckets) {
                    *now = (*now).max(j.f.ts);
                    self.jobs[n] = j;
                    n += 1;
                }
                continue;
            }
            let p = &pkts[i];
            // Separate stores, so that the common case's key and features
            // stay in registers (a merged `Option` of both readers went
            // through the stack; `read_v4(p).or_else(|| read_v6(p))` into
            // one store: 7 instructions a packet more on IPv4 hits,
            // session 31).
            if let Some((w, f)) = read_v4(p) {
                *now = (*now).max(f.ts);
                self.jobs[n] = Job::new::<WAYS>(w, f, nbuckets);
                n += 1;
            } else if let Some((w, f)) = read_v6(p) {
                *now = (*now).max(f.ts);
                self.jobs[n] = Job::new::<WAYS>(w, f, nbuckets);
                n += 1;
            } else if let Some(j) = Job::other::<WAYS>(p, nbuckets) {
                *now = (*now).max(j.f.ts);
                self.jobs[n] = j;
                n += 1;
            }
        }
        n
    }

    /// Pass 2: meter the `n` gathered packets in order, prefetching the
    /// bucket's tag, key and counter lines [`DIST`] packets ahead.
    #[inline(always)]
    fn update_all<const WAYS: usize, const TIMED: bool>(
        &mut self,
        n: usize,
        nbuckets: usize,
        rules: Rules,
        stats: &mut Stats,
        new: &mut u64,
        out: &mut Batch,
    ) {
        let jobs = std::mem::take(&mut self.jobs);
        // Three slices of one length and bucket indices clamped to the last
        // bucket (a no-op: `bucket` stays below it), so that the compiler
        // drops the bounds checks of the slot accesses.
        let len = self.tags.len();
        assert!(len >= WAYS);
        let last = len - WAYS;
        let s = Slots {
            tags: &mut self.tags[..],
            keys: &mut self.keys[..len],
            cells: &mut self.cells[..len],
        };
        let ahead = |s: &Slots<'_>, j: Option<&Job>| {
            if let Some(j) = j {
                let b = j.b as usize;
                prefetch(s.tags.as_ptr().wrapping_add(b));
                prefetch(s.keys.as_ptr().wrapping_add(b));
                prefetch(s.cells.as_ptr().wrapping_add(b));
            }
        };
        for j in &jobs[..n.min(DIST)] {
            ahead(&s, Some(j));
        }
        for (x, j) in jobs[..n].iter().enumerate() {
            ahead(&s, jobs[..n].get(x + DIST));
            let (w, k) = (&j.w, &j.f);
            let (i, hit) = s.slot::<WAYS>((j.b as usize).min(last), j.tag, w);
            if hit {
                let d = &mut s.cells[i].0;
                // Without timeouts (`TIMED` false: both `u64::MAX`) only
                // a packet at time `u64::MAX` can find its microflow
                // expired (active: `now - first >= u64::MAX`).
                let expired = if TIMED || k.ts == u64::MAX {
                    rules.expired(d, k.ts)
                } else {
                    None
                };
                match expired {
                    Some(r) => {
                        let old = std::mem::replace(d, start(k));
                        emit_words(stats, out, w, &old, r);
                        *new = (*new).min(k.ts);
                    }
                    None => update(d, k),
                }
            } else {
                if s.tags[i] != 0 {
                    let ok = &s.keys[i];
                    emit_words(stats, out, ok, &s.cells[i].0, end_reason::LACK_OF_RESOURCES);
                }
                s.tags[i] = j.tag;
                s.keys[i] = *w;
                s.cells[i].0 = start(k);
                *new = (*new).min(k.ts);
            }
            if rules.tcpend && k.flags & 0x05 != 0 && (w[4] >> 32) as u8 == 6 {
                // The other direction's microflow goes first, so that a
                // biflow's record is complete when it ends.
                let rw = reversed(w);
                let rh = hash_words(&rw);
                let rb = bucket(rh, nbuckets, WAYS).min(last);
                if let (ri, true) = s.slot::<WAYS>(rb, tag_of(rh), &rw) {
                    if ri != i {
                        emit_words(stats, out, &rw, &s.cells[ri].0, end_reason::END_OF_FLOW);
                        s.tags[ri] = 0;
                    }
                }
                emit_words(stats, out, w, &s.cells[i].0, end_reason::END_OF_FLOW);
                s.tags[i] = 0;
            }
        }
        self.jobs = jobs;
    }
}

/// The fast table's arrays, each as long as the table.
struct Slots<'a> {
    tags: &'a mut [u32],
    keys: &'a mut [Words],
    cells: &'a mut [Cell],
}

impl Slots<'_> {
    /// Pick the slot for `k` in the bucket from slot `b` on: (slot, hit).
    #[inline(always)]
    fn slot<const WAYS: usize>(&self, b: usize, tag: u32, k: &Words) -> (usize, bool) {
        if WAYS == 1 {
            return (b, self.tags[b] == tag && same(&self.keys[b], k));
        }
        for w in 0..2 {
            if self.tags[b + w] == tag && same(&self.keys[b + w], k) {
                return (b + w, true);
            }
        }
        let v = if self.tags[b] != 0
            && (self.tags[b + 1] == 0 || self.cells[b + 1].0.last_ns < self.cells[b].0.last_ns)
        {
            b + 1
        } else {
            b
        };
        (v, false)
    }
}

/// The reference implementation's table.
struct Reference {
    slots: Vec<Option<(SlotKey, Direction)>>,
}

enum Table {
    Fast(Fast),
    Reference(Reference),
}

struct MicroflowTable {
    table: Table,
    nslots: usize,
    ways: usize,
    rules: Rules,
    stats: Stats,
    hand: usize,
    mark: Watermark,
    /// Packet time is arrival time (decided at the first packet): the timer
    /// then advances the table's clock with the system clock.
    live: Option<bool>,
    flush_requested: bool,
    flush_pos: usize,
    timer_armed: bool,
    out1: bool,
    /// `PARSE`: input packets are Ethernet frames the table parses itself.
    parse: bool,
}

fn parse_bytes(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let n: usize = n.parse().map_err(|_| format!("TABLE: bad size '{s}'"))?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("TABLE: bad size unit in '{s}'")),
    };
    Ok(n.saturating_mul(mult))
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    use linerate_args::{Args, Seconds, Word};
    let mut a = Args::new(&ctx.args);
    let table: Option<String> = a.read("TABLE");
    let slots: Option<usize> = a.read("SLOTS");
    let ways: usize = a.read_or("WAYS", 1usize);
    let idle: Seconds = a.read_or("IDLE", Seconds::default());
    let active: Seconds = a.read_or("ACTIVE", Seconds::default());
    let tcpend = a.read_or("TCPEND", true);
    let parse = a.read_or("PARSE", false);
    let imp = a.read_or("IMPL", Word("fast".into())).0;
    a.complete().map_err(|e| e.0)?;
    let mut errs = Vec::new();
    let nslots = match (slots, table) {
        (Some(_), Some(_)) => {
            errs.push("TABLE and SLOTS are mutually exclusive".to_string());
            0
        }
        (Some(n), None) => n,
        (None, t) => match parse_bytes(t.as_deref().unwrap_or("1MB")) {
            Ok(b) => b / SLOT_BYTES,
            Err(e) => {
                errs.push(e);
                0
            }
        },
    };
    if !(1..=2).contains(&ways) {
        errs.push("WAYS must be 1 or 2".into());
    }
    let nslots = nslots - nslots % ways.max(1);
    if errs.is_empty() && !(ways..=1 << 31).contains(&nslots) {
        errs.push(format!("table too small or too large ({nslots} slots)"));
    }
    let table = match imp.as_str() {
        "fast" => Table::Fast(Fast {
            tags: vec![0; nslots],
            keys: vec![[0; 5]; nslots],
            cells: vec![Cell::default(); nslots],
            jobs: vec![Job::default(); linerate_runtime::MAX_BATCH],
        }),
        "reference" => Table::Reference(Reference {
            slots: vec![None; nslots],
        }),
        _ => {
            errs.push("IMPL must be 'fast' or 'reference'".into());
            return Err(errs);
        }
    };
    if !errs.is_empty() {
        return Err(errs);
    }
    let off = |s: Seconds| if s.nanos == 0 { u64::MAX } else { s.nanos };
    Ok(Box::new(MicroflowTable {
        table,
        nslots,
        ways,
        rules: Rules {
            idle: off(idle),
            active: off(active),
            tcpend,
        },
        stats: Stats::default(),
        hand: 0,
        mark: Watermark {
            kept: u64::MAX,
            new: u64::MAX,
            sent: None,
        },
        live: None,
        flush_requested: false,
        flush_pos: 0,
        timer_armed: false,
        out1: ctx.noutputs() > 1,
        parse,
    }))
}

/// Send a microflow record (and the ignored count since the previous record).
fn emit(stats: &mut Stats, out: &mut Batch, key: SlotKey, d: &Direction, reason: u8) {
    let m = Microflow {
        vlan: key.vlan,
        reason,
        key: key.key,
        dir: *d,
        ignored: std::mem::take(&mut stats.ignored_pending),
        ..Microflow::new()
    };
    stats.microflows += 1;
    stats.by_reason[reason as usize] += 1;
    append_record(out, m.dir.last_ns, |b| b.copy_from_slice(m.as_bytes()));
}

/// Records a packet of microflow records holds: 16 of 120 bytes, 1,920
/// bytes, within a pool buffer's data room.
pub const RECORDS_PER_PACKET: usize = 16;

/// Append a record to `out` (whose packets are all record packets this
/// table made): `fill` writes all its bytes, in the last packet if that
/// has room for one more, else in a new packet. The packet's timestamp
/// becomes `ts` (its last record's). One packet for 16 records instead
/// of one each: a packet's allocation, metadata and release cost more than
/// the record's 120 bytes (session 21).
#[inline(always)]
fn append_record(out: &mut Batch, ts: u64, fill: impl FnOnce(&mut [u8; Microflow::SIZE])) {
    if let Some(p) = out.as_mut_slice().last_mut() {
        if p.len() < RECORDS_PER_PACKET * Microflow::SIZE {
            if let Some(b) = p.try_put_mut(Microflow::SIZE) {
                if let Some(b) = b.first_chunk_mut() {
                    fill(b);
                }
                p.set_timestamp_ns(ts);
                return;
            }
        }
    }
    let mut p = Packet::filled(Microflow::SIZE, |b| {
        if let Some(b) = b.first_chunk_mut() {
            fill(b);
        }
    });
    p.set_timestamp_ns(ts);
    out.push(p);
}

/// [`emit`] for the fast table: the record written straight into the
/// packet from the slot's key words and counters, eight bytes at a time
/// (a `SlotKey` and a `Microflow` built first were read back across their
/// narrow stores: a store-forwarding stall that took 64 % of `emit`'s
/// samples when every packet evicts).
fn emit_words(stats: &mut Stats, out: &mut Batch, w: &Words, d: &Direction, reason: u8) {
    let ignored = std::mem::take(&mut stats.ignored_pending);
    stats.microflows += 1;
    stats.by_reason[reason as usize] += 1;
    append_record(out, d.last_ns, |b| {
        // On a little-endian host (the runtime requires one) the header
        // (magic, VLAN id, reason, padding) is one word, the address words
        // hold the address bytes in order, and the fields after them (ports,
        // protocol, version, padding) are `w[4]`'s low six bytes.
        const _: () = assert!(cfg!(target_endian = "little"));
        let head = u64::from(Microflow::MAGIC) | (w[4] >> 48) << 32 | u64::from(reason) << 48;
        b[..8].copy_from_slice(&head.to_le_bytes());
        for (i, x) in w[..4].iter().enumerate() {
            b[8 + 8 * i..16 + 8 * i].copy_from_slice(&x.to_le_bytes());
        }
        b[40..48].copy_from_slice(&(w[4] & 0xffff_ffff_ffff).to_le_bytes());
        // SAFETY: bytes 48..112 of the record are its `dir` (the layout
        // test checks the offset); `Direction` is plain integers.
        unsafe { std::ptr::write_unaligned(b[48..112].as_mut_ptr() as *mut Direction, *d) };
        b[112..].copy_from_slice(&ignored.to_ne_bytes());
    });
}

/// Index of a hash's bucket's first slot (`nbuckets` = slots / ways).
#[inline(always)]
fn bucket(h: u64, nbuckets: usize, ways: usize) -> usize {
    (((h as u32) as u64 * nbuckets as u64) >> 32) as usize * ways
}

#[inline(always)]
fn tag_of(h: u64) -> u32 {
    ((h >> 32) as u32) | 1
}

impl MicroflowTable {
    fn emit(&mut self, out: &mut Batch, key: SlotKey, d: &Direction, reason: u8) {
        emit(&mut self.stats, out, key, d, reason);
    }

    /// Send a watermark record (`dir.packets` 0, `dir.first_ns` = `w`): every
    /// microflow whose first packet is before `w` has been sent. It also
    /// carries the ignored count since the previous record.
    fn send_mark(&mut self, out: &mut Batch, w: u64) {
        let mut m = Microflow {
            ignored: std::mem::take(&mut self.stats.ignored_pending),
            ..Microflow::new()
        };
        m.dir.first_ns = w;
        self.mark.sent = Some(w);
        append_record(out, m.dir.last_ns, |b| b.copy_from_slice(m.as_bytes()));
    }

    fn ref_slot(r: &Reference, b: usize, ways: usize, sk: &SlotKey) -> (usize, bool) {
        for w in 0..ways {
            if let Some((k, _)) = &r.slots[b + w] {
                if k == sk {
                    return (b + w, true);
                }
            }
        }
        if ways == 1 {
            return (b, false);
        }
        match (&r.slots[b], &r.slots[b + 1]) {
            (None, _) => (b, false),
            (_, None) => (b + 1, false),
            (Some((_, d0)), Some((_, d1))) => {
                if d1.last_ns < d0.last_ns {
                    (b + 1, false)
                } else {
                    (b, false)
                }
            }
        }
    }

    fn process(&mut self, mut batch: Batch, out: &mut Batch, nokey: &mut Batch) {
        let (ways, rules) = (self.ways, self.rules);
        let nbuckets = self.nslots / ways;
        let mut table = std::mem::replace(
            &mut self.table,
            Table::Reference(Reference { slots: vec![] }),
        );
        match &mut table {
            Table::Fast(f) => {
                let mut now = self.stats.now;
                let keyed = match (ways, self.parse) {
                    (1, false) => f.gather::<1, false>(&mut batch, nbuckets, &mut now),
                    (1, true) => f.gather::<1, true>(&mut batch, nbuckets, &mut now),
                    (_, false) => f.gather::<2, false>(&mut batch, nbuckets, &mut now),
                    (_, true) => f.gather::<2, true>(&mut batch, nbuckets, &mut now),
                };
                self.stats.now = now;
                self.sort_ignored(batch, keyed as u64, nokey);
                let (stats, new) = (&mut self.stats, &mut self.mark.new);
                let timed = rules.timed();
                match (ways, timed) {
                    (1, false) => f.update_all::<1, false>(keyed, nbuckets, rules, stats, new, out),
                    (1, true) => f.update_all::<1, true>(keyed, nbuckets, rules, stats, new, out),
                    (_, false) => f.update_all::<2, false>(keyed, nbuckets, rules, stats, new, out),
                    (_, true) => f.update_all::<2, true>(keyed, nbuckets, rules, stats, new, out),
                }
            }
            Table::Reference(r) => {
                let mut keyed = 0u64;
                let mut parsed = Vec::new();
                for p in batch.iter_mut() {
                    if self.parse {
                        // L4Parser's `IMPL reference` parser.
                        let cut = l4parser::extra_length(p);
                        let _ = l4parser::annotate_slow_cut(p, cut);
                    }
                    if let Some(k) = parse(p) {
                        parsed.push(k);
                        keyed += 1;
                    }
                }
                self.sort_ignored(batch, keyed, nokey);
                for k in parsed {
                    if k.f.ts > self.stats.now {
                        self.stats.now = k.f.ts;
                    }
                    let sk = SlotKey {
                        key: k.key,
                        vlan: k.vlan,
                    };
                    let h = hash_key(&k.key, k.vlan);
                    let (i, hit) = Self::ref_slot(r, bucket(h, nbuckets, ways), ways, &sk);
                    let started = match r.slots[i].take() {
                        Some((ok, mut d)) if hit => match rules.expired(&d, k.f.ts) {
                            Some(reason) => {
                                self.emit(out, ok, &d, reason);
                                r.slots[i] = Some((sk, start(&k.f)));
                                true
                            }
                            None => {
                                update_ref(&mut d, &k.f);
                                r.slots[i] = Some((ok, d));
                                false
                            }
                        },
                        Some((ok, d)) => {
                            self.emit(out, ok, &d, end_reason::LACK_OF_RESOURCES);
                            r.slots[i] = Some((sk, start(&k.f)));
                            true
                        }
                        None => {
                            r.slots[i] = Some((sk, start(&k.f)));
                            true
                        }
                    };
                    if started {
                        self.mark.new = self.mark.new.min(k.f.ts);
                    }
                    if rules.tcpend && k.key.proto == 6 && k.f.flags & 0x05 != 0 {
                        let rk = SlotKey {
                            key: k.key.reversed(),
                            vlan: k.vlan,
                        };
                        let rh = hash_key(&rk.key, rk.vlan);
                        if let (ri, true) = Self::ref_slot(r, bucket(rh, nbuckets, ways), ways, &rk)
                        {
                            if ri != i {
                                if let Some((ok, d)) = r.slots[ri].take() {
                                    self.emit(out, ok, &d, end_reason::END_OF_FLOW);
                                }
                            }
                        }
                        if let Some((ok, d)) = r.slots[i].take() {
                            self.emit(out, ok, &d, end_reason::END_OF_FLOW);
                        }
                    }
                }
            }
        }
        self.table = table;
    }

    /// Count the batch's ignored packets (those `parse` rejects) and move
    /// them to `nokey`; keyed packets are dropped (metered).
    fn sort_ignored(&mut self, mut batch: Batch, keyed: u64, nokey: &mut Batch) {
        let ignored = batch.len() as u64 - keyed;
        self.stats.packets += keyed;
        self.stats.ignored += ignored;
        self.stats.ignored_pending += ignored;
        if ignored > 0 && self.out1 {
            // In `PARSE` mode the frames `read_frame` read carry no
            // annotations; the others were annotated where they parse.
            let fused = self.parse;
            nokey.append(
                batch.split_off_if(|p| parse(p).is_none() && !(fused && read_frame(p).is_some())),
            );
        }
    }

    /// Evict timed-out microflows among the next `n` slots; at the end of
    /// each rotation, send the watermark.
    fn sweep(&mut self, n: usize, out: &mut Batch) {
        let mut left = n.min(self.nslots);
        while left > 0 {
            let lo = self.hand;
            let hi = (lo + left).min(self.nslots);
            left -= hi - lo;
            let kept = self.sweep_run(lo, hi, out);
            self.mark.kept = self.mark.kept.min(kept);
            if hi < self.nslots {
                self.hand = hi;
                continue;
            }
            self.hand = 0;
            let w = self.mark.kept.min(self.mark.new).min(self.stats.now);
            if self.mark.sent.is_none_or(|s| w > s) {
                self.send_mark(out, w);
            }
            self.mark.kept = u64::MAX;
            self.mark.new = u64::MAX;
        }
    }

    /// Sweep slots `lo..hi`: evict the expired microflows and return the
    /// smallest first-packet time of those left in place (`u64::MAX` if none).
    fn sweep_run(&mut self, lo: usize, hi: usize, out: &mut Batch) -> u64 {
        let (rules, now) = (self.rules, self.stats.now);
        let stats = &mut self.stats;
        let mut kept = u64::MAX;
        match &mut self.table {
            // Without timeouts nothing expires before packet time
            // `u64::MAX` (see `update_all`): the sweep only finds the
            // smallest first-packet time, reading no key.
            Table::Fast(f) if !rules.timed() && now != u64::MAX => {
                for (tag, cell) in f.tags[lo..hi].iter().zip(&f.cells[lo..hi]) {
                    if *tag != 0 {
                        kept = kept.min(cell.0.first_ns);
                    }
                }
            }
            Table::Fast(f) => {
                let slots = f.tags[lo..hi]
                    .iter_mut()
                    .zip(&f.cells[lo..hi])
                    .zip(&f.keys[lo..hi]);
                // An empty slot's cell is tested too (what it holds is
                // stale, and masked): whether a slot is taken is chance,
                // and a test of it first mispredicted; expiry is rare.
                for ((tag, cell), key) in slots {
                    let taken = *tag != 0;
                    match rules.expired(&cell.0, now) {
                        Some(r) if taken => {
                            *tag = 0;
                            emit_words(stats, out, key, &cell.0, r);
                        }
                        _ => {
                            let first =
                                std::hint::select_unpredictable(taken, cell.0.first_ns, u64::MAX);
                            kept = kept.min(first);
                        }
                    }
                }
            }
            Table::Reference(t) => {
                for slot in &mut t.slots[lo..hi] {
                    if let Some((k, d)) = *slot {
                        match rules.expired(&d, now) {
                            Some(r) => {
                                *slot = None;
                                emit(stats, out, k, &d, r);
                            }
                            None => kept = kept.min(d.first_ns),
                        }
                    }
                }
            }
        }
        kept
    }

    /// Evict up to `max` microflows from `flush_pos` on (forced end); true
    /// when the table is empty.
    fn flush_some(&mut self, max: usize, out: &mut Batch) -> bool {
        let mut n = 0;
        while self.flush_pos < self.nslots && n < max {
            let i = self.flush_pos;
            self.flush_pos += 1;
            let (stats, r) = (&mut self.stats, end_reason::FORCED_END);
            match &mut self.table {
                Table::Fast(f) if f.tags[i] != 0 => {
                    f.tags[i] = 0;
                    emit_words(stats, out, &f.keys[i], &f.cells[i].0, r);
                    n += 1;
                }
                Table::Fast(_) => {}
                Table::Reference(t) => {
                    if let Some((k, d)) = t.slots[i].take() {
                        emit(stats, out, k, &d, r);
                        n += 1;
                    }
                }
            }
        }
        if self.flush_pos < self.nslots {
            return false;
        }
        // Every microflow has been sent: the rotation so far saw none that
        // is still held.
        self.mark.kept = u64::MAX;
        self.mark.new = u64::MAX;
        let w = self.stats.now.max(self.mark.sent.unwrap_or(0));
        self.send_mark(out, w);
        self.flush_pos = 0;
        true
    }

    fn occupied(&self) -> usize {
        match &self.table {
            Table::Fast(f) => f.tags.iter().filter(|&&t| t != 0).count(),
            Table::Reference(r) => r.slots.iter().filter(|s| s.is_some()).count(),
        }
    }
}

impl Element for MicroflowTable {
    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        let mut out = Batch::new();
        let mut nokey = Batch::new();
        if self.mark.sent.is_none() {
            // Tells the aggregator that watermarks follow.
            self.send_mark(&mut out, 0);
        }
        if self.live.is_none() {
            if let Some(p) = batch.iter().next() {
                self.live = Some(ctx.now_ns().abs_diff(p.timestamp_ns()) < LIVE_NS);
            }
        }
        self.process(batch, &mut out, &mut nokey);
        self.sweep(SWEEP, &mut out);
        if self.flush_requested && self.flush_some(usize::MAX, &mut out) {
            self.flush_requested = false;
        }
        if !self.timer_armed {
            self.timer_armed = true;
            ctx.schedule_after(TICK_NS);
        }
        ctx.push(0, out);
        ctx.push(1, nokey);
    }

    fn run_timer(&mut self, ctx: &mut Ctx<'_>) {
        let mut out = Batch::new();
        // A file's microflows are swept per batch only, so that a replay's
        // records do not depend on its speed; live, time goes on without
        // packets.
        if self.live == Some(true) {
            self.stats.now = self.stats.now.max(ctx.now_ns());
            self.sweep(self.nslots / 16 + 1, &mut out);
        }
        if self.flush_requested && self.flush_some(usize::MAX, &mut out) {
            self.flush_requested = false;
        }
        ctx.push(0, out);
        ctx.schedule_after(TICK_NS);
    }

    fn flush(&mut self, ctx: &mut Ctx<'_>) -> bool {
        let mut out = Batch::new();
        let done = self.flush_some(FLUSH_CHUNK, &mut out);
        ctx.push(0, out);
        !done
    }

    fn handlers(&self) -> &[HandlerSpec] {
        const H: &[HandlerSpec] = &[
            HandlerSpec::counter("packets"),
            HandlerSpec::counter("ignored"),
            HandlerSpec::counter("microflows"),
            HandlerSpec::counter("collisions"),
            HandlerSpec::counter("idle_evictions"),
            HandlerSpec::counter("active_evictions"),
            HandlerSpec::counter("end_evictions"),
            HandlerSpec::counter("flushed"),
            HandlerSpec::gauge("occupied"),
            HandlerSpec::read("slots"),
            HandlerSpec::read("packets_per_microflow"),
            HandlerSpec::write("flush"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        let s = &self.stats;
        Some(match name {
            "packets" => s.packets.to_string(),
            "ignored" => s.ignored.to_string(),
            "microflows" => s.microflows.to_string(),
            "collisions" => s.by_reason[end_reason::LACK_OF_RESOURCES as usize].to_string(),
            "idle_evictions" => s.by_reason[end_reason::IDLE_TIMEOUT as usize].to_string(),
            "active_evictions" => s.by_reason[end_reason::ACTIVE_TIMEOUT as usize].to_string(),
            "end_evictions" => s.by_reason[end_reason::END_OF_FLOW as usize].to_string(),
            "flushed" => s.by_reason[end_reason::FORCED_END as usize].to_string(),
            "occupied" => self.occupied().to_string(),
            "slots" => self.nslots.to_string(),
            "packets_per_microflow" => {
                format!("{:.2}", s.packets as f64 / s.microflows.max(1) as f64)
            }
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Option<Result<(), String>> {
        match name {
            "flush" => {
                self.flush_requested = true;
                Some(Ok(()))
            }
            _ => None,
        }
    }

    fn summary_counts(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("packets", self.stats.packets),
            ("microflows", self.stats.microflows),
        ]
    }

    drops_or_output_1!(
        self,
        self.out1,
        linerate_runtime::element::named_counts(&["ignored (no flow key)"], &[self.stats.ignored])
    );

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The [`SlotKey`] of a key in [`Words`] form.
    fn unwords(w: &Words) -> SlotKey {
        let bytes = |a: u64, b: u64| {
            let mut x = [0u8; 16];
            x[..8].copy_from_slice(&a.to_le_bytes());
            x[8..].copy_from_slice(&b.to_le_bytes());
            x
        };
        SlotKey {
            key: FlowKey {
                src: bytes(w[0], w[1]),
                dst: bytes(w[2], w[3]),
                sport: w[4] as u16,
                dport: (w[4] >> 16) as u16,
                proto: (w[4] >> 32) as u8,
                version: (w[4] >> 40) as u8,
            },
            vlan: (w[4] >> 48) as u16,
        }
    }

    /// The [`Words`] form of a slot key (inverse of [`unwords`]).
    fn words(k: &SlotKey) -> Words {
        let w = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap());
        [
            w(&k.key.src[..8]),
            w(&k.key.src[8..]),
            w(&k.key.dst[..8]),
            w(&k.key.dst[8..]),
            k.key.sport as u64
                | (k.key.dport as u64) << 16
                | (k.key.proto as u64) << 32
                | (k.key.version as u64) << 40
                | (k.vlan as u64) << 48,
        ]
    }

    proptest! {
        /// The fast path's parser agrees with `parse` (the reference's) on
        /// arbitrary bytes and header annotations: same packets rejected,
        /// same key, hash and features.
        #[test]
        fn parse_words_equals_parse(
            mut data in proptest::collection::vec(any::<u8>(), 0..120),
            version in prop_oneof![Just(4u8), Just(6u8), any::<u8>()],
            nh in proptest::option::of(0usize..24),
            th in proptest::option::of(0usize..120),
            proto in prop_oneof![Just(0u8), Just(1u8), Just(6u8), Just(17u8), Just(58u8), Just(132u8), Just(136u8), any::<u8>()],
            frag in any::<bool>(),
            vlan in any::<u16>(),
            ts in any::<u64>(),
        ) {
            if let Some(o) = nh.filter(|&o| o < data.len()) {
                data[o] = (version << 4) | (data[o] & 15);
                if !frag && o + 8 <= data.len() {
                    data[o + 6] &= 0xe0;
                    data[o + 7] = 0;
                }
            }
            let mut p = Packet::from_slice(&data);
            if let Some(o) = nh {
                p.set_network_header(o as isize);
            }
            if let Some(o) = th {
                p.set_transport_header(o as isize);
            }
            p.set_timestamp_ns(ts);
            p.anno_mut().set_u8(offsets::L4_PROTO, proto);
            p.anno_mut().set_u16(offsets::VLAN_TCI, vlan);
            let general = parse_words(&p).map(|(w, f)| (w, (f.ts, f.len, f.tos, f.ttl, f.flags)));
            if let Some((w, f)) = read_v4(&p) {
                prop_assert_eq!(Some((w, (f.ts, f.len, f.tos, f.ttl, f.flags))), general);
            }
            if let Some((w, f)) = read_v6(&p) {
                prop_assert_eq!(Some((w, (f.ts, f.len, f.tos, f.ttl, f.flags))), general);
            }
            match (parse(&p), parse_words(&p)) {
                (None, None) => {}
                (Some(k), Some((w, f))) => {
                    let sk = SlotKey { key: k.key, vlan: k.vlan };
                    prop_assert_eq!(words(&sk), w);
                    prop_assert!(unwords(&w) == sk);
                    prop_assert_eq!(hash_words(&w), hash_key(&k.key, k.vlan));
                    prop_assert_eq!(
                        (f.ts, f.len, f.tos, f.ttl, f.flags),
                        (k.f.ts, k.f.len, k.f.tos, k.f.ttl, k.f.flags)
                    );
                }
                (a, b) => prop_assert!(false, "parse {:?} vs parse_words {:?}", a.is_some(), b.is_some()),
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]
        /// `PARSE` mode's inline reader agrees with `L4Parser` followed by
        /// the annotation reader on Ethernet frames of every shape: tags,
        /// IPv4 and IPv6 with right and wrong versions, header and IP
        /// lengths, fragments, protocols with and without ports, frames a
        /// capture cut (`EXTRA_LENGTH`), truncated anywhere. Where it reads
        /// a frame, the key and features are the same; where it declines,
        /// `Job::other_frame` parses the frame as `L4Parser` does.
        #[test]
        fn read_frame_equals_l4parser_then_parse_words(
            tags in prop_oneof![3 => Just(0usize), 2 => Just(1), 1 => Just(2)],
            ad in any::<bool>(),
            et in prop_oneof![3 => Just(0x0800u16), 3 => Just(0x86dd), 1 => any::<u16>()],
            first in prop_oneof![4 => Just(None), 1 => Just(Some(0x46u8)), 1 => any::<u8>().prop_map(Some)],
            proto in prop_oneof![
                3 => Just(6u8), 3 => Just(17), 1 => Just(132), 1 => Just(1), 1 => Just(58),
                1 => Just(0), 1 => Just(44), 1 => Just(47), 1 => any::<u8>()
            ],
            frag in prop_oneof![3 => Just(false), 1 => Just(true)],
            lenmode in prop_oneof![3 => Just(0u8), 2 => Just(1), 1 => Just(2)],
            len in any::<u16>(),
            body in prop_oneof![
                4 => proptest::collection::vec(any::<u8>(), 40..100),
                1 => proptest::collection::vec(any::<u8>(), 0..40)
            ],
            keep in prop_oneof![3 => Just(usize::MAX), 1 => 0usize..200],
            cut in prop_oneof![2 => Just(0usize), 1 => 1usize..100],
            tci in any::<u16>(),
            ts in any::<u64>(),
        ) {
            let mut f = vec![0x02u8; 12];
            for _ in 0..tags {
                f.extend_from_slice(&(if ad { 0x88a8u16 } else { 0x8100 }).to_be_bytes());
                f.extend_from_slice(&tci.to_be_bytes());
            }
            f.extend_from_slice(&et.to_be_bytes());
            let n = f.len();
            f.extend_from_slice(&body);
            if f.len() > n {
                f[n] = first.unwrap_or(if et == 0x86dd { 0x60 } else { 0x45 });
            }
            let ip = f.len() - n;
            // The IP length: what the frame holds, that plus what the
            // capture cut, or anything.
            let want = match lenmode {
                0 => ip,
                1 => ip + cut,
                _ => usize::from(len),
            };
            if et == 0x0800 && ip >= 20 {
                f[n + 2..n + 4].copy_from_slice(&(want as u16).to_be_bytes());
                f[n + 9] = proto;
                if !frag {
                    f[n + 6] &= 0xe0;
                    f[n + 7] = 0;
                }
            } else if et == 0x86dd && ip >= 40 {
                f[n + 4..n + 6].copy_from_slice(&(want.wrapping_sub(40) as u16).to_be_bytes());
                f[n + 6] = proto;
            }
            f.truncate(keep);
            let mut p = Packet::from_slice(&f);
            p.set_timestamp_ns(ts);
            p.anno_mut().set_u32(offsets::EXTRA_LENGTH, cut as u32);
            let mut q = p.clone();
            let parsed = match cut {
                0 => l4::parse(q.data()),
                c => l4::parse_cut(q.data(), c),
            };
            if let Ok(r) = parsed {
                l4parser::annotate(&mut q, &r);
            }
            let general = parse_words(&q).map(|(w, f)| (w, (f.ts, f.len, f.tos, f.ttl, f.flags)));
            if let Some((w, f)) = read_frame(&p) {
                prop_assert_eq!(Some((w, (f.ts, f.len, f.tos, f.ttl, f.flags))), general);
            }
            let job = Job::other_frame::<1>(&mut p, 64).map(|j| (j.w, (j.f.ts, j.f.len, j.f.tos, j.f.ttl, j.f.flags)));
            prop_assert_eq!(job, general);
        }
    }

    proptest! {
        /// The fast table's records, written from key words, are the
        /// reference's byte for byte (and carry the same timestamp).
        #[test]
        fn emit_words_equals_emit(
            w in proptest::array::uniform5(any::<u64>()),
            c in proptest::array::uniform8(any::<u64>()),
            reason in 0u8..6,
            ignored in any::<u64>(),
        ) {
            let d = Direction {
                packets: c[0],
                bytes: c[1],
                first_ns: c[2],
                last_ns: c[3],
                min_iat_ns: c[4],
                max_iat_ns: c[5],
                min_len: c[6] as u16,
                max_len: (c[6] >> 16) as u16,
                first_len: (c[6] >> 32) as u16,
                second_len: (c[6] >> 48) as u16,
                tcp_flags: c[7] as u8,
                tos: (c[7] >> 8) as u8,
                min_ttl: (c[7] >> 16) as u8,
                max_ttl: (c[7] >> 24) as u8,
                _pad: [0; 4],
            };
            let mut got = Batch::new();
            let mut want = Batch::new();
            let mut stats = [Stats { ignored_pending: ignored, ..Stats::default() }; 2];
            emit_words(&mut stats[0], &mut got, &w, &d, reason);
            emit(&mut stats[1], &mut want, unwords(&w), &d, reason);
            let (g, e) = (&got.iter().next().unwrap(), &want.iter().next().unwrap());
            prop_assert_eq!(g.data(), e.data());
            prop_assert_eq!(g.timestamp_ns(), e.timestamp_ns());
            prop_assert_eq!(stats[0].microflows, 1);
            prop_assert_eq!(stats[0].by_reason, stats[1].by_reason);
            prop_assert_eq!(stats[0].ignored_pending, 0);
        }
    }

    /// Records go 16 to a packet, in order, each packet stamped with its
    /// last record's time, the same from either emitter.
    #[test]
    fn records_are_packed_sixteen_to_a_packet() {
        let (mut got, mut want) = (Batch::new(), Batch::new());
        let mut stats = [Stats::default(), Stats::default()];
        for i in 0..(2 * RECORDS_PER_PACKET + 3) as u64 {
            let w = [i, 2 * i, 3 * i, 4 * i, 0x0004_0006_0050_1000 | i << 48];
            let d = Direction {
                packets: i + 1,
                last_ns: 1000 + i,
                ..Direction::default()
            };
            emit_words(&mut stats[0], &mut got, &w, &d, 2);
            emit(&mut stats[1], &mut want, unwords(&w), &d, 2);
        }
        let lens: Vec<usize> = got.iter().map(|p| p.len() / Microflow::SIZE).collect();
        assert_eq!(lens, [16, 16, 3]);
        let stamps: Vec<u64> = got.iter().map(|p| p.timestamp_ns()).collect();
        assert_eq!(stamps, [1015, 1031, 1034]);
        for (g, e) in got.iter().zip(want.iter()) {
            assert_eq!(g.data(), e.data());
            assert_eq!(g.timestamp_ns(), e.timestamp_ns());
        }
        assert_eq!(want.len(), 3);
        let records: Vec<u64> = got
            .iter()
            .flat_map(|p| {
                p.data()
                    .chunks_exact(Microflow::SIZE)
                    .map(|b| Microflow::from_bytes(b).unwrap().dir.packets)
            })
            .collect();
        assert_eq!(records, (1..=35).collect::<Vec<u64>>());
    }

    #[test]
    fn layout_and_round_trip() {
        assert_eq!(Microflow::SIZE, 120);
        assert_eq!(std::mem::offset_of!(Microflow, dir), 48);
        let mut m = Microflow::new();
        m.dir.packets = 3;
        m.ignored = 2;
        let b = m.as_bytes().to_vec();
        assert_eq!(Microflow::from_bytes(&b), Some(m));
        assert_eq!(Microflow::from_bytes(&b[1..]), None);
        assert_eq!(parse_bytes("1MB"), Ok(1 << 20));
        assert_eq!(parse_bytes("256 KiB"), Ok(256 << 10));
        assert!(parse_bytes("1XB").is_err());
    }
}

//! Receive-side scaling: spreads packets over its outputs by the Toeplitz
//! hash of their 5-tuple, as a NIC does, and sets the flow hash annotation.
//!
//! # Synopsis
//! `RSS([KEYWORDS])`
//!
//! # Ports
//! One push input; one or more push outputs.
//!
//! # Arguments
//! - `KEY` (hex string, default Microsoft's 40-byte default key
//!   `6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa`):
//!   the Toeplitz key, at least 40 bytes (80 hex digits, `:` separators
//!   allowed); bytes beyond the 40th are not used, since the longest hash
//!   input is 36 bytes. A NIC's key (`ethtool -x`) gives the NIC's hash.
//! - `RETA` (space-separated output numbers): the indirection table; a
//!   power-of-two number of entries, at most 65536. Default: 128 entries
//!   round robin over the outputs (`0 1 ... n-1 0 1 ...`).
//! - `IMPL` (`fast` or `reference`, default `fast`): the implementation;
//!   both give identical hashes and outputs (see Implementation).
//!
//! The hash input is Microsoft's RSS input: source address, destination
//! address, then for TCP and UDP source and destination port, all in
//! network byte order (12 bytes for IPv4, 36 for IPv6). Other protocols and
//! IPv4 fragments (first ones included) hash the two addresses only, as
//! NICs do. A packet goes to output `RETA[hash mod entries]` (the hash's
//! low bits, as on a NIC) and its flow hash annotation is set to the
//! Toeplitz hash.
//!
//! Headers: if the packet's network header annotation is set (after
//! `L4Parser`, `CheckIPHeader` or `MarkIPHeader`), RSS uses the flow-key
//! contract (the network and transport header annotations and `L4_PROTO`,
//! so IPv6 extension headers are skipped); otherwise it parses the packet
//! as an Ethernet frame with up to two VLAN tags (802.1Q or 802.1ad), an
//! IPv4 header whose length field is valid and fully present, or an IPv6
//! header whose next header is TCP or UDP for the ports (other next
//! headers hash the addresses). A packet that has no such IP header (ARP,
//! a truncated or malformed header) gets hash 0 and so goes to `RETA[0]`'s
//! output, as on a NIC; it is counted in `unhashed` and its annotation is
//! left alone. Nothing is dropped.
//!
//! To spread work over threads, connect each output to a `Queue` drained by
//! an `Unqueue` placed on its own thread (`StaticThreadSched`), and run
//! with `--threads N`; packets cross threads through the router's
//! lock-free rings, each flow to one thread:
//!
//! ```click
//! FromDump(in.pcap, STOP true) -> rss :: RSS;
//! rss[0] -> Queue -> u0 :: Unqueue -> Counter -> Discard;
//! rss[1] -> Queue -> u1 :: Unqueue -> Counter -> Discard;
//! StaticThreadSched(u0 0, u1 1);
//! ```
//!
//! Click's closest element is `HashSwitch(OFFSET, LENGTH)`: it adds up the
//! `LENGTH` bytes at `OFFSET` of the packet data and sends the packet to
//! the sum modulo the number of outputs (with 2, 4 or 8 outputs, the sum's
//! high bits folded into the low ones first); a packet too short for the
//! range goes to output 0. That hashes one byte range at a fixed
//! offset, so it cannot take ports whose offset depends on the IP header
//! length or a VLAN tag; a byte sum is the same for any order of the bytes,
//! so swapped or permuted addresses collide; and it sets no annotation. RSS
//! instead computes the hash a NIC computes, the Toeplitz hash of the
//! 5-tuple with a NIC's key (Microsoft's by default), and maps it through
//! an indirection table as the NIC does, so software can reproduce or
//! continue the NIC's spreading of flows, and `RETA` can be rewritten at
//! run time to move load. Click's `RoundRobinSwitch` and `StrideSwitch`
//! (outputs in turn, or by stride-scheduling tickets) ignore flows
//! altogether, so a flow's packets spread over all outputs; RSS keeps each
//! flow on one output. All three are in this library too, as Click has
//! them.
//!
//! # Handlers
//! - `key` (read): the key in hex.
//! - `reta` (read/write): the indirection table; a write replaces it
//!   (every entry must name an output, a power-of-two count).
//! - `count` (read): packets hashed.
//! - `unhashed` (read): packets without a hashable IP header (hash 0).
//!
//! # Example
//! ```click
//! FromDump(in.pcap, STOP true) -> rss :: RSS(RETA 0 1 1 1);
//! rss[0] -> Discard; rss[1] -> Discard;
//! ```
//!
//! # Implementation
//! The fast implementation precomputes, for every input byte position (36)
//! and byte value (256), the 32-bit XOR of the key windows that byte's set
//! bits select (36 KiB; the 12 positions of IPv4 use 12 KiB), so a hash is
//! one table load and XOR per input byte instead of one 32-bit key window
//! per input bit; the lookups are unrolled per field (8 or 32 address
//! bytes, 4 port bytes) and read the header bytes in place. The
//! batch is then classified into per-output batches in one pass, keeping
//! order, and forwarded whole when every packet goes to one output.
//! Nothing is allocated per packet. The hash passes the Microsoft RSS
//! verification suite (IPv4 and IPv6, with and without ports).
//!
//! `IMPL reference` reads the headers through the `linerate_wire` views and
//! the flow-key contract (`FlowKey::from_packet`) and computes the
//! bit-serial Toeplitz hash, one key window per input bit.
//!
//! ClickNP's optimisations: struct of arrays — used for the decisions: each
//! packet's output number goes to the demultiplexer's reused array first,
//! and the packets are moved to their per-output batches in a second pass
//! (or the batch forwarded whole when they all agree); the Toeplitz tables
//! are one 256-entry row per input byte position, so each lookup's row is a
//! constant. SIMD — not used: the hash is one table lookup and XOR per
//! input byte (12 or 36, unrolled per field), loads at data-dependent
//! addresses with no equal-width arithmetic to vectorise. prefetch — not
//! used: the 12 KiB of rows the IPv4 hash uses stay in cache under steady
//! traffic, and each lookup's address depends only on a header byte already
//! loaded, so there is no pointer chase to hide. slow path — none that
//! blocks: a packet with headers annotated takes the annotation path, any
//! other a short inline parse (up to two VLAN tags) in the same loop; a
//! packet with no hashable IP header gets hash 0 and `RETA[0]` without
//! leaving it.

use super::{read_impl, Impl};
use crate::standard::Demux;
use linerate_runtime::anno::offsets;
use linerate_runtime::flow::FlowKey;
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, Packet};
use linerate_wire::ethernet::EtherType;
use std::any::Any;

/// The `RSS` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "RSS",
    port_count: "1/1-",
    processing: "h/h",
    doc: element_doc!("sched/rss"),
    make,
};

/// Microsoft's default RSS key (the "RSS verification suite" key).
pub const MS_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];

/// Longest hash input: IPv6 addresses and ports.
pub const MAX_INPUT: usize = 36;

/// Bit `i` of `key`, most significant bit of byte 0 first; 0 past the end.
fn key_bit(key: &[u8], i: usize) -> u32 {
    key.get(i / 8)
        .map_or(0, |b| ((b >> (7 - i % 8)) & 1) as u32)
}

/// The bit-serial Toeplitz hash (Microsoft's definition): for every set bit
/// `i` of `input`, XOR in the 32 key bits starting at bit `i`.
pub fn toeplitz_reference(key: &[u8], input: &[u8]) -> u32 {
    let mut h = 0u32;
    for i in 0..input.len() * 8 {
        if (input[i / 8] >> (7 - i % 8)) & 1 == 1 {
            let mut w = 0u32;
            for j in 0..32 {
                w = w << 1 | key_bit(key, i + j);
            }
            h ^= w;
        }
    }
    h
}

/// The table-driven Toeplitz hash: one lookup per input byte.
pub struct Toeplitz {
    t: Box<[[u32; 256]; MAX_INPUT]>,
}

impl Toeplitz {
    /// Precompute the tables of `key` (missing key bits count as 0).
    pub fn new(key: &[u8]) -> Toeplitz {
        let mut t = Box::new([[0u32; 256]; MAX_INPUT]);
        for (pos, row) in t.iter_mut().enumerate() {
            // The key window of each of the byte's 8 bits, MSB first.
            let mut win = [0u32; 8];
            for (j, w) in win.iter_mut().enumerate() {
                for b in 0..32 {
                    *w = *w << 1 | key_bit(key, pos * 8 + j + b);
                }
            }
            for (v, e) in row.iter_mut().enumerate() {
                *e = (0..8)
                    .filter(|j| (v >> (7 - j)) & 1 == 1)
                    .fold(0, |h, j| h ^ win[j]);
            }
        }
        Toeplitz { t }
    }

    /// The contribution of `b` at input position `POS` (unrolled).
    #[inline(always)]
    fn part<const POS: usize, const N: usize>(&self, b: &[u8; N]) -> u32 {
        let mut h = 0;
        for (i, &x) in b.iter().enumerate() {
            h ^= self.t[POS + i][x as usize];
        }
        h
    }

    /// The hash of `input` (at most [`MAX_INPUT`] bytes; more are ignored).
    #[inline]
    pub fn hash(&self, input: &[u8]) -> u32 {
        input
            .iter()
            .zip(self.t.iter())
            .fold(0, |h, (&b, row)| h ^ row[b as usize])
    }
}

/// True for the protocols whose ports are hashed.
#[inline]
fn hashes_ports(proto: u8) -> bool {
    proto == 6 || proto == 17
}

/// The addresses' part of the hash: IPv4 (`ip` at least 20 bytes) or
/// IPv6 (at least 40).
#[inline(always)]
fn addrs_v4(t: &Toeplitz, ip: &[u8]) -> u32 {
    let a: &[u8; 8] = ip[12..20].try_into().unwrap_or(&[0; 8]);
    t.part::<0, 8>(a)
}

#[inline(always)]
fn addrs_v6(t: &Toeplitz, ip: &[u8]) -> u32 {
    let a: &[u8; 32] = ip[8..40].try_into().unwrap_or(&[0; 32]);
    t.part::<0, 32>(a)
}

#[inline(always)]
fn ports<const POS: usize>(t: &Toeplitz, l4: &[u8]) -> u32 {
    let p: &[u8; 4] = l4[..4].try_into().unwrap_or(&[0; 4]);
    t.part::<POS, 4>(p)
}

/// The Toeplitz hash of `p`'s RSS input (see [`input_reference`]), `None`
/// if it has no hashable IP header: fixed-offset reads straight into the
/// unrolled table lookups.
#[inline]
pub fn hash_fast(t: &Toeplitz, p: &Packet) -> Option<u32> {
    if let Some(ip) = p.network_header() {
        let proto_anno = p.anno().u8(offsets::L4_PROTO);
        let l4 = p.transport_header().filter(|t| t.len() >= 4);
        return match ip.first().map(|b| b >> 4) {
            Some(4) if ip.len() >= 20 => {
                let proto = if proto_anno != 0 { proto_anno } else { ip[9] };
                let frag = (ip[6] & 0x3f) | ip[7] != 0;
                let h = addrs_v4(t, ip);
                Some(match l4 {
                    Some(l) if hashes_ports(proto) && !frag => h ^ ports::<8>(t, l),
                    _ => h,
                })
            }
            Some(6) if ip.len() >= 40 => {
                let proto = if proto_anno != 0 { proto_anno } else { ip[6] };
                let h = addrs_v6(t, ip);
                Some(match l4 {
                    Some(l) if hashes_ports(proto) => h ^ ports::<32>(t, l),
                    _ => h,
                })
            }
            _ => None,
        };
    }
    let d = p.data();
    if d.len() < 14 {
        return None;
    }
    let mut et = u16::from_be_bytes([d[12], d[13]]);
    let mut off = 14;
    for _ in 0..2 {
        if et != 0x8100 && et != 0x88a8 {
            break;
        }
        let t = d.get(off + 2..off + 4)?;
        et = u16::from_be_bytes([t[0], t[1]]);
        off += 4;
    }
    let ip = &d[off..];
    match et {
        0x0800 if ip.len() >= 20 && ip[0] >> 4 == 4 => {
            let hl = (ip[0] & 15) as usize * 4;
            if hl < 20 || ip.len() < hl {
                return None;
            }
            let frag = (ip[6] & 0x3f) | ip[7] != 0;
            let h = addrs_v4(t, ip);
            Some(match ip.get(hl..hl + 4) {
                Some(l) if hashes_ports(ip[9]) && !frag => h ^ ports::<8>(t, l),
                _ => h,
            })
        }
        0x86dd if ip.len() >= 40 && ip[0] >> 4 == 6 => {
            let h = addrs_v6(t, ip);
            Some(match ip.get(40..44) {
                Some(l) if hashes_ports(ip[6]) => h ^ ports::<32>(t, l),
                _ => h,
            })
        }
        _ => None,
    }
}

/// A hash input being built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Input {
    buf: [u8; MAX_INPUT],
    len: usize,
}

impl Default for Input {
    fn default() -> Input {
        Input {
            buf: [0; MAX_INPUT],
            len: 0,
        }
    }
}

impl Input {
    fn put(&mut self, b: &[u8]) {
        self.buf[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }

    /// The input bytes (empty: no hashable IP header).
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// The RSS input of `p`, read through the flow-key contract or the
/// `linerate_wire` header views (the reference for [`hash_fast`]).
pub fn input_reference(p: &Packet) -> Input {
    use linerate_wire::{ethernet, ipv4, ipv6, vlan};
    let mut v = Input::default();
    if p.network_header().is_some() {
        let Some(k) = FlowKey::from_packet(p) else {
            return v;
        };
        let ip = p.network_header().unwrap_or_default();
        let frag = k.version == 4 && ipv4::Packet::new_unchecked(ip).is_fragment();
        let addrs = if k.version == 4 { 12..16 } else { 0..16 };
        v.put(&k.src[addrs.clone()]);
        v.put(&k.dst[addrs]);
        let has_ports = p.transport_header().is_some_and(|t| t.len() >= 4);
        if has_ports && hashes_ports(k.proto) && !frag {
            v.put(&k.sport.to_be_bytes());
            v.put(&k.dport.to_be_bytes());
        }
        return v;
    }
    let Ok(eth) = ethernet::Packet::new_checked(p.data()) else {
        return v;
    };
    let mut et = eth.ethertype();
    let mut payload = eth.payload();
    for _ in 0..2 {
        if !et.is_vlan_tag() {
            break;
        }
        let Ok(tag) = vlan::Packet::new_checked(payload) else {
            return v;
        };
        et = tag.ethertype();
        payload = tag.payload();
    }
    if et == EtherType::IPV4 {
        let ip = ipv4::Packet::new_unchecked(payload);
        if ip.check_header_len().is_err() || ip.version() != 4 {
            return v;
        }
        v.put(&ip.src_addr().octets());
        v.put(&ip.dst_addr().octets());
        let l4 = &payload[ip.header_len()..];
        if hashes_ports(ip.protocol().0) && !ip.is_fragment() && l4.len() >= 4 {
            v.put(&l4[..4]);
        }
    } else if et == EtherType::IPV6 {
        let ip = ipv6::Packet::new_unchecked(payload);
        if ip.check_header_len().is_err() || ip.version() != 6 {
            return v;
        }
        v.put(&ip.src_addr().octets());
        v.put(&ip.dst_addr().octets());
        let l4 = &payload[40..];
        if hashes_ports(ip.next_header().0) && l4.len() >= 4 {
            v.put(&l4[..4]);
        }
    }
    v
}

enum Hasher {
    Fast(Toeplitz),
    Reference,
}

struct Rss {
    key: Vec<u8>,
    hasher: Hasher,
    reta: Vec<u32>,
    mask: u32,
    noutputs: usize,
    demux: Demux,
    count: u64,
    unhashed: u64,
}

fn parse_key(s: &str) -> Result<Vec<u8>, String> {
    let hex: String = s.chars().filter(|&c| c != ':').collect();
    if !hex.len().is_multiple_of(2) || !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
        return Err("KEY: expected hex digits".into());
    }
    let key: Vec<u8> = (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap_or(0))
        .collect();
    if key.len() < 40 {
        return Err(format!("KEY: need at least 40 bytes, got {}", key.len()));
    }
    Ok(key)
}

fn parse_reta(s: &str, noutputs: usize) -> Result<Vec<u32>, String> {
    let reta = s
        .split_whitespace()
        .map(|w| match w.parse::<u32>() {
            Ok(o) if (o as usize) < noutputs => Ok(o),
            _ => Err(format!(
                "RETA: '{w}' is not an output (0 to {})",
                noutputs - 1
            )),
        })
        .collect::<Result<Vec<u32>, String>>()?;
    if reta.is_empty() || !reta.len().is_power_of_two() || reta.len() > 65536 {
        return Err(format!(
            "RETA: need a power-of-two number of entries up to 65536, got {}",
            reta.len()
        ));
    }
    Ok(reta)
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let key: Option<String> = a.read("KEY");
    let reta: Option<linerate_args::Raw> = a.read("RETA");
    let imp = read_impl(&mut a);
    a.complete().map_err(|e| e.0)?;
    let noutputs = ctx.noutputs().max(1);
    let key = match key {
        Some(k) => parse_key(&k).map_err(|e| vec![e])?,
        None => MS_KEY.to_vec(),
    };
    let reta = match reta {
        Some(r) => parse_reta(&r.0, noutputs).map_err(|e| vec![e])?,
        None => (0..128).map(|i| (i % noutputs) as u32).collect(),
    };
    let hasher = match imp {
        Impl::Fast => Hasher::Fast(Toeplitz::new(&key)),
        Impl::Reference => Hasher::Reference,
    };
    Ok(Box::new(Rss {
        key,
        hasher,
        mask: reta.len() as u32 - 1,
        reta,
        noutputs,
        demux: Demux::new(noutputs),
        count: 0,
        unhashed: 0,
    }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::read("key"),
    HandlerSpec::read_write("reta"),
    HandlerSpec::counter("count"),
    HandlerSpec::counter("unhashed"),
];

impl Element for Rss {
    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        self.count += batch.len() as u64;
        let (reta, mask) = (&self.reta, self.mask);
        let mut unhashed = 0u64;
        match &self.hasher {
            Hasher::Fast(t) => {
                self.demux.run(batch, ctx, |p| match hash_fast(t, p) {
                    Some(h) => {
                        p.anno_mut().flow_hash = h;
                        reta[(h & mask) as usize]
                    }
                    None => {
                        unhashed += 1;
                        reta[0]
                    }
                });
            }
            Hasher::Reference => {
                let key = &self.key;
                self.demux.run(batch, ctx, |p| {
                    let input = input_reference(p);
                    if input.bytes().is_empty() {
                        unhashed += 1;
                        return reta[0];
                    }
                    let h = toeplitz_reference(key, input.bytes());
                    p.anno_mut().flow_hash = h;
                    reta[h as usize % reta.len()]
                });
            }
        }
        self.unhashed += unhashed;
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "key" => self.key.iter().map(|b| format!("{b:02x}")).collect(),
            "reta" => self
                .reta
                .iter()
                .map(|o| o.to_string())
                .collect::<Vec<_>>()
                .join(" "),
            "count" => self.count.to_string(),
            "unhashed" => self.unhashed.to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        (name == "reta").then(|| {
            let reta = parse_reta(value, self.noutputs)?;
            self.mask = reta.len() as u32 - 1;
            self.reta = reta;
            Ok(())
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

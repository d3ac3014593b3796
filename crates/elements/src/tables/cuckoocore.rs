//! The exact-match machinery shared by `CuckooHash` and `FlowCache`: table
//! keys taken from packets ([`KeySpec`]), the key hash, a bucketized cuckoo
//! hash table with batched lookups ([`Cuckoo`]) and the flow-id allocator
//! ([`IdAlloc`]).

use super::huge::{Huge, Zeroed};
use crate::hint::{prefetch, prefetch_l2};
use linerate_runtime::anno::{anno_by_name, AnnoInfo};
use linerate_runtime::flow::{key_words, map_v4, FlowKey, KeyRules};
use linerate_runtime::Packet;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::IpAddr;

/// Largest key in bytes (a [`FlowKey`] takes 38).
pub(crate) const MAX_KEY: usize = 40;

/// A table key: up to [`MAX_KEY`] bytes, zero-padded, as five words.
pub(crate) type Key = [u64; 5];

/// Pack key bytes (at most [`MAX_KEY`]) into a [`Key`].
#[inline(always)]
fn pack(b: &[u8; MAX_KEY]) -> Key {
    let mut k = [0u64; 5];
    for (i, w) in k.iter_mut().enumerate() {
        let mut x = [0u8; 8];
        x.copy_from_slice(&b[i * 8..i * 8 + 8]);
        *w = u64::from_le_bytes(x);
    }
    k
}

/// Key equality without a call to `memcmp`.
#[inline(always)]
pub(crate) fn key_eq(a: &Key, b: &Key) -> bool {
    ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3]) | (a[4] ^ b[4])) == 0
}

/// The key of a 5-tuple: the addresses' bytes, then ports, protocol and
/// version in the last word.
#[inline(always)]
pub(crate) fn flow_key(f: &FlowKey) -> Key {
    let w = |a: &[u8; 16], i: usize| {
        let mut x = [0u8; 8];
        x.copy_from_slice(&a[i..i + 8]);
        u64::from_le_bytes(x)
    };
    [
        w(&f.src, 0),
        w(&f.src, 8),
        w(&f.dst, 0),
        w(&f.dst, 8),
        u64::from(f.sport)
            | u64::from(f.dport) << 16
            | u64::from(f.proto) << 32
            | u64::from(f.version) << 40,
    ]
}

/// `flow_key(&FlowKey::from_packet(p)?)` without the 38-byte `FlowKey`
/// in between: the 5-tuple read straight into key words by
/// [`key_words`] (shared with `MicroflowTable`), with `FlowKey`'s rules.
#[inline(always)]
pub(crate) fn packet_flow_key(p: &Packet) -> Option<Key> {
    key_words(p, KeyRules::FLOW_KEY).map(|r| r.words)
}

/// The 64-bit hash of a key: a multilinear sum over the five words (the
/// multiplications are independent, so several keys hash in parallel in
/// the pipeline) finished by MurmurHash3's 64-bit mixer.
#[inline(always)]
pub(crate) fn hash(k: &Key) -> u64 {
    const M: [u64; 5] = [
        0x9e37_79b9_7f4a_7c15,
        0xc2b2_ae3d_27d4_eb4f,
        0x1656_67b1_9e37_79f9,
        0x27d4_eb2f_1656_67c5,
        0xff51_afd7_ed55_8ccd,
    ];
    let mut h = 0x5851_f42d_4c95_7f2d_u64;
    for i in 0..5 {
        h = h.wrapping_add(k[i].wrapping_mul(M[i]));
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// `x * n / 2^32`: maps a 32-bit hash onto `0..n` without a division.
#[inline(always)]
pub(crate) fn reduce(x: u32, n: u32) -> u32 {
    ((u64::from(x) * u64::from(n)) >> 32) as u32
}

/// Where a table's key comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeySpec {
    /// The 5-tuple ([`FlowKey::from_packet`]).
    Flow,
    /// The source address (IPv4 as IPv4-mapped IPv6).
    Src,
    /// The destination address (IPv4 as IPv4-mapped IPv6).
    Dst,
    /// `len` packet bytes from `off`.
    Bytes { off: usize, len: usize },
    /// An annotation's bytes.
    Anno(AnnoInfo),
}

fn parse_hex(s: &str, len: usize) -> Result<[u8; MAX_KEY], String> {
    let b = s.as_bytes();
    if b.len() != 2 * len || !b.iter().all(u8::is_ascii_hexdigit) {
        return Err(format!("expected {len} bytes in hex, got '{s}'"));
    }
    let mut out = [0u8; MAX_KEY];
    for (i, o) in out.iter_mut().take(len).enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|e| e.to_string())?;
    }
    Ok(out)
}

fn parse_addr(s: &str) -> Result<([u8; 16], u8), String> {
    match s.parse::<IpAddr>() {
        Ok(IpAddr::V4(a)) => Ok((map_v4(a.octets()), 4)),
        Ok(IpAddr::V6(a)) => Ok((a.octets(), 6)),
        Err(_) => Err(format!("expected IP address, got '{s}'")),
    }
}

fn parse_proto(s: &str) -> Result<u8, String> {
    match s {
        "tcp" | "TCP" => Ok(6),
        "udp" | "UDP" => Ok(17),
        "icmp" | "ICMP" => Ok(1),
        "icmp6" | "ICMP6" => Ok(58),
        "sctp" | "SCTP" => Ok(132),
        _ => s
            .parse()
            .map_err(|_| format!("expected protocol number or name, got '{s}'")),
    }
}

/// Parse a 5-tuple written `SADDR SPORT DADDR DPORT PROTO`.
pub(crate) fn parse_flow(words: &[&str]) -> Result<FlowKey, String> {
    let [sa, sp, da, dp, pr] = words else {
        return Err("expected 'SADDR SPORT DADDR DPORT PROTO'".into());
    };
    let (src, v1) = parse_addr(sa)?;
    let (dst, v2) = parse_addr(da)?;
    if v1 != v2 {
        return Err("both addresses must be IPv4 or both IPv6".into());
    }
    let port = |s: &str| {
        s.parse::<u16>()
            .map_err(|_| format!("expected port number, got '{s}'"))
    };
    Ok(FlowKey {
        src,
        dst,
        sport: port(sp)?,
        dport: port(dp)?,
        proto: parse_proto(pr)?,
        version: v1,
    })
}

impl KeySpec {
    /// Parse the `KEY` argument: `FLOW`, `SRC`, `DST`, `OFFSET O LEN N` or
    /// `ANNO NAME`.
    pub(crate) fn parse(s: &str) -> Result<KeySpec, String> {
        let w: Vec<&str> = s.split_ascii_whitespace().collect();
        let num = |x: &str| {
            x.parse::<usize>()
                .map_err(|_| format!("KEY: expected unsigned integer, got '{x}'"))
        };
        match w.as_slice() {
            ["FLOW"] => Ok(KeySpec::Flow),
            ["SRC"] => Ok(KeySpec::Src),
            ["DST"] => Ok(KeySpec::Dst),
            ["OFFSET", o, "LEN", n] => {
                let (off, len) = (num(o)?, num(n)?);
                if !(1..=MAX_KEY).contains(&len) {
                    return Err(format!("KEY: LEN must be 1 to {MAX_KEY}"));
                }
                Ok(KeySpec::Bytes { off, len })
            }
            ["ANNO", name] => anno_by_name(name)
                .map(KeySpec::Anno)
                .ok_or_else(|| format!("KEY: unknown annotation '{name}'")),
            _ => Err(format!(
                "KEY: expected FLOW, SRC, DST, 'OFFSET O LEN N' or 'ANNO NAME', got '{s}'"
            )),
        }
    }

    /// The most bytes a key holds.
    pub(crate) fn len(&self) -> usize {
        match *self {
            KeySpec::Flow => 38,
            KeySpec::Src | KeySpec::Dst => 16,
            KeySpec::Bytes { len, .. } | KeySpec::Anno(AnnoInfo { size: len, .. }) => len,
        }
    }

    /// The key of packet `p`; `None` if `p` has none (no network header,
    /// too short).
    #[inline(always)]
    pub(crate) fn extract(&self, p: &Packet) -> Option<Key> {
        let mut b = [0u8; MAX_KEY];
        match *self {
            KeySpec::Flow => return FlowKey::from_packet(p).map(|f| flow_key(&f)),
            KeySpec::Src | KeySpec::Dst => {
                let ip = p.network_header()?;
                let dst = *self == KeySpec::Dst;
                match ip.first()? >> 4 {
                    4 if ip.len() >= 20 => {
                        let o = if dst { 16 } else { 12 };
                        b[..16].copy_from_slice(&map_v4(ip[o..o + 4].try_into().ok()?));
                    }
                    6 if ip.len() >= 40 => {
                        let o = if dst { 24 } else { 8 };
                        b[..16].copy_from_slice(&ip[o..o + 16]);
                    }
                    _ => return None,
                }
            }
            KeySpec::Bytes { off, len } => {
                b[..len].copy_from_slice(p.data().get(off..off.checked_add(len)?)?);
            }
            KeySpec::Anno(a) => b[..a.size].copy_from_slice(&p.anno().user[a.offset..][..a.size]),
        }
        Some(pack(&b))
    }

    /// An `OFFSET off LEN len` key of `W` words (`W = len.div_ceil(8)`)
    /// read as whole little-endian words, the last one and'ed with `last`
    /// (the mask of its `len - 8 * (W - 1)` key bytes): the same key as
    /// [`extract`](Self::extract). `None` where the packet does not hold
    /// `8 * W` bytes from `off` (`extract` then decides, as it copes with a
    /// last word that runs past the packet's end). Generic over `W` so that
    /// the hash and the table's key compare see the other words as zero;
    /// it calls nothing, so a loop around it keeps its values in registers.
    #[inline(always)]
    pub(crate) fn read_words<const W: usize>(p: &Packet, off: usize, last: u64) -> Option<Key> {
        let d = p.data();
        let end = off.checked_add(8 * W)?;
        if end > d.len() {
            return None;
        }
        let w = &d[off..end];
        let mut k = [0u64; 5];
        for i in 0..W {
            let mut y = [0u8; 8];
            y.copy_from_slice(&w[8 * i..8 * i + 8]);
            k[i] = u64::from_le_bytes(y);
        }
        k[W - 1] &= last;
        Some(k)
    }

    /// The mask of the last word of an `OFFSET`/`LEN` key of `len` bytes
    /// (1 to [`MAX_KEY`]), for [`read_words`](Self::read_words).
    pub(crate) fn last_word_mask(len: usize) -> u64 {
        u64::MAX >> (64 - 8 * (len - 8 * (len.div_ceil(8) - 1)))
    }

    /// Parse the text form of a key (handlers and table files): a 5-tuple
    /// `SADDR SPORT DADDR DPORT PROTO` for `FLOW`, an address for `SRC` and
    /// `DST`, hexadecimal bytes otherwise.
    pub(crate) fn parse_key(&self, s: &str) -> Result<Key, String> {
        let w: Vec<&str> = s.split_ascii_whitespace().collect();
        match *self {
            KeySpec::Flow => parse_flow(&w).map(|f| flow_key(&f)),
            KeySpec::Src | KeySpec::Dst => match w.as_slice() {
                [a] => {
                    let mut b = [0u8; MAX_KEY];
                    b[..16].copy_from_slice(&parse_addr(a)?.0);
                    Ok(pack(&b))
                }
                _ => Err(format!("expected IP address, got '{s}'")),
            },
            KeySpec::Bytes { len, .. } | KeySpec::Anno(AnnoInfo { size: len, .. }) => {
                match w.as_slice() {
                    [h] => parse_hex(h, len).map(|b| pack(&b)),
                    _ => Err(format!("expected {len} bytes in hex, got '{s}'")),
                }
            }
        }
    }
}

/// Tables of up to this many keys are sized half full (see [`Cuckoo::new`]).
const SMALL: usize = 1024;
/// Largest number of buckets a displacement search visits.
const BFS_MAX: usize = 512;
/// Fewest buckets a table has (an [`Inline`] layout needs two empty-slot
/// markers whose buckets do not meet, see [`Inline::new`]).
const MIN_BUCKETS: usize = 4;

/// Where a key may live: its two buckets and its tag.
#[derive(Clone, Copy, Default)]
pub(crate) struct Loc {
    b1: u32,
    b2: u32,
    tag: u16,
}

/// The candidate buckets (of `nbuckets`) and the tag of a key of hash `h`.
#[inline(always)]
fn loc(h: u64, nbuckets: u32) -> Loc {
    // The buckets depend mostly on bits 16-31 and 48-63; the tag takes the
    // top of a remix of all bits, so keys sharing a bucket do not share
    // tags.
    let t = (h.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 48) as u16;
    Loc {
        b1: reduce(h as u32, nbuckets),
        b2: reduce((h >> 32) as u32, nbuckets),
        tag: t | u16::from(t == 0),
    }
}

/// How a [`Cuckoo`] table keeps its buckets' keys and values. Slots are
/// numbered bucket by bucket, `SLOTS` a bucket.
pub(crate) trait Layout: Sized {
    /// Slots per bucket.
    const SLOTS: usize;
    /// A layout of `nbuckets` empty buckets.
    fn new(nbuckets: u32) -> Self;
    /// Whether `k` can be stored.
    fn fits(k: &Key) -> bool;
    /// The slot holding `k`, which lives at `l`.
    fn find(&self, k: &Key, l: Loc) -> Option<usize>;
    /// An empty slot of bucket `b`.
    fn empty_in(&self, b: u32) -> Option<usize>;
    /// Whether slot `s` holds a key.
    fn occupied(&self, s: usize) -> bool;
    /// The key in slot `s` (occupied).
    fn key(&self, s: usize) -> Key;
    /// The value in slot `s` (occupied).
    fn value(&self, s: usize) -> u32;
    /// Put `k` (tag `tag`) and `v` in slot `s`.
    fn put(&mut self, s: usize, k: &Key, tag: u16, v: u32);
    /// Empty slot `s`.
    fn clear(&mut self, s: usize);
    /// Prefetch what a lookup at `l` reads first.
    fn prefetch(&self, l: Loc);
    /// The rest of a batched lookup, see [`Cuckoo::resolve`].
    fn resolve(&self, keys: &[Key], locs: &[Loc], valid: u64, out: &mut [u32]) -> u64;
}

/// Slots per [`Tagged`] bucket.
const TAGGED_SLOTS: usize = 8;

/// One bucket's tags, 16 bytes: four buckets share a cache line.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Tags([u16; TAGGED_SLOTS]);

// SAFETY: an array of integers (all zero: an empty bucket).
unsafe impl Zeroed for Tags {}

/// A key and its value: one cache line.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Entry {
    key: Key,
    value: u32,
}

// SAFETY: integers and an array of them (and padding).
unsafe impl Zeroed for Entry {}

/// Any key up to [`MAX_KEY`] bytes: buckets of eight slots whose 16-bit
/// tags (hash bits, 0 = empty) lie in their own array (struct of arrays),
/// the keys and values in another, a cache line a slot. A lookup compares
/// a bucket's eight tags at once and reads the key and value of a
/// matching slot only.
pub(crate) struct Tagged {
    tags: Huge<Tags>,
    entries: Huge<Entry>,
}

/// Bit `i` set where `t[i] == tag`: one 16-byte compare, a pack to bytes
/// and a mask extraction (the loop the compiler made of eight compares
/// took 20 instructions a bucket).
#[inline(always)]
fn match_mask(t: &Tags, tag: u16) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86_64 baseline; `Tags` is 16 bytes,
        // 16-byte aligned (`repr(align(16))`).
        unsafe {
            let eq = _mm_cmpeq_epi16(
                _mm_load_si128(t.0.as_ptr() as *const __m128i),
                _mm_set1_epi16(tag as i16),
            );
            _mm_movemask_epi8(_mm_packs_epi16(eq, _mm_setzero_si128())) as u32
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut m = 0u32;
        for i in 0..TAGGED_SLOTS {
            m |= u32::from(t.0[i] == tag) << i;
        }
        m
    }
}

impl Layout for Tagged {
    const SLOTS: usize = TAGGED_SLOTS;

    fn new(nbuckets: u32) -> Tagged {
        Tagged {
            tags: Huge::new(nbuckets as usize),
            entries: Huge::new(nbuckets as usize * Self::SLOTS),
        }
    }

    fn fits(_: &Key) -> bool {
        true
    }

    #[inline(always)]
    fn find(&self, k: &Key, l: Loc) -> Option<usize> {
        for b in [l.b1, l.b2] {
            let mut m = match_mask(&self.tags[b as usize], l.tag);
            while m != 0 {
                let s = b as usize * Self::SLOTS + m.trailing_zeros() as usize;
                if key_eq(&self.entries[s].key, k) {
                    return Some(s);
                }
                m &= m - 1;
            }
        }
        None
    }

    fn empty_in(&self, b: u32) -> Option<usize> {
        let m = match_mask(&self.tags[b as usize], 0);
        (m != 0).then(|| b as usize * Self::SLOTS + m.trailing_zeros() as usize)
    }

    fn occupied(&self, s: usize) -> bool {
        self.tags[s / Self::SLOTS].0[s % Self::SLOTS] != 0
    }

    fn key(&self, s: usize) -> Key {
        self.entries[s].key
    }

    fn value(&self, s: usize) -> u32 {
        self.entries[s].value
    }

    fn put(&mut self, s: usize, k: &Key, tag: u16, v: u32) {
        self.tags[s / Self::SLOTS].0[s % Self::SLOTS] = tag;
        self.entries[s] = Entry { key: *k, value: v };
    }

    fn clear(&mut self, s: usize) {
        self.tags[s / Self::SLOTS].0[s % Self::SLOTS] = 0;
    }

    #[inline(always)]
    fn prefetch(&self, l: Loc) {
        // A prefetch never faults: no bounds test (both are in bounds).
        prefetch(self.tags.as_ptr().wrapping_add(l.b1 as usize));
        prefetch(self.tags.as_ptr().wrapping_add(l.b2 as usize));
    }

    /// Compare every key's tags and prefetch its matching slot, then
    /// compare keys.
    #[inline(always)]
    fn resolve(&self, keys: &[Key], locs: &[Loc], valid: u64, out: &mut [u32]) -> u64 {
        const N: usize = 64;
        let n = keys.len().min(locs.len()).min(out.len()).min(N);
        let mut cand = [0u32; N];
        let mut has = 0u64;
        if n == 0 {
            return 0;
        }
        let mut v = valid & (u64::MAX >> (64 - n));
        while v != 0 {
            let i = v.trailing_zeros() as usize;
            v &= v - 1;
            let l = locs[i];
            let m1 = match_mask(&self.tags[l.b1 as usize], l.tag);
            let m2 = match_mask(&self.tags[l.b2 as usize], l.tag);
            let s = if m1 != 0 {
                l.b1 as usize * Self::SLOTS + m1.trailing_zeros() as usize
            } else if m2 != 0 {
                l.b2 as usize * Self::SLOTS + m2.trailing_zeros() as usize
            } else {
                continue;
            };
            prefetch(self.entries.as_ptr().wrapping_add(s));
            cand[i] = s as u32;
            has |= 1 << i;
        }
        let (mut found, mut collided) = (0u64, 0u64);
        while has != 0 {
            let i = has.trailing_zeros() as usize;
            has &= has - 1;
            let e = &self.entries[cand[i] as usize];
            if key_eq(&e.key, &keys[i]) {
                out[i] = e.value;
                found |= 1 << i;
            } else {
                collided |= 1 << i;
            }
        }
        // Tag collisions (about one key in 4,000 with 8-slot buckets): both
        // buckets searched in full, after the loop, which then calls
        // nothing and keeps its values in registers.
        while collided != 0 {
            let i = collided.trailing_zeros() as usize;
            collided &= collided - 1;
            if let Some(s) = self.find(&keys[i], locs[i]) {
                out[i] = self.entries[s].value;
                found |= 1 << i;
            }
        }
        found
    }
}

/// Slots per [`Inline`] bucket.
const INLINE_SLOTS: usize = 4;

/// Largest key an [`Inline`] layout holds, in bytes.
pub(crate) const INLINE_KEY: usize = 12;

/// An [`Inline`] bucket: four slots of four 32-bit words, the key's 12
/// bytes (little-endian words of [`Key`]) then the value. One cache line.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u32; 4 * INLINE_SLOTS]);

// SAFETY: an array of integers.
unsafe impl Zeroed for Line {}

/// Keys of at most [`INLINE_KEY`] bytes, inside their buckets: a bucket is
/// one cache line of four slots of key and value, no tags. A lookup reads
/// its first bucket's line, prefetched as soon as the key is hashed, and
/// compares its four keys at once; only a key not there reads its second
/// bucket's line. That is 1.19 random lines a hit on average instead of
/// [`Tagged`]'s two tag lines and then a dependent entry line, in a
/// quarter of the memory (1M keys: 18.8 MB against 75 MB of entries and
/// 2.35 MB of tags).
///
/// An empty slot holds its bucket's *marker*, a key that can never be
/// looked up in that bucket: `markers[0]` everywhere but in the buckets
/// `markers[0]` may live in, which hold `markers[1]`, a key whose buckets
/// are both elsewhere. A key equal to a marker is stored like any other.
pub(crate) struct Inline {
    lines: Huge<Line>,
    markers: [Key; 2],
    /// `markers[0]`'s buckets: they hold `markers[1]` when empty.
    marked: [u32; 2],
}

impl Inline {
    /// The marker of an empty slot of bucket `b`.
    #[inline(always)]
    fn marker(&self, b: usize) -> &Key {
        &self.markers[usize::from(b as u32 == self.marked[0] || b as u32 == self.marked[1])]
    }

    /// The markers of a layout of `nbuckets` buckets (at least
    /// [`MIN_BUCKETS`]).
    pub(crate) fn markers(nbuckets: u32) -> [Key; 2] {
        let key = |x: u64| [x, 0, 0, 0, 0];
        let first = key(0);
        let l = loc(hash(&first), nbuckets);
        let second = (1..u64::from(u32::MAX))
            .map(key)
            .find(|k| {
                let m = loc(hash(k), nbuckets);
                ![l.b1, l.b2].contains(&m.b1) && ![l.b1, l.b2].contains(&m.b2)
            })
            .expect("four or more buckets leave a key whose buckets avoid two");
        [first, second]
    }
}

/// Bit `4j` set where slot `j` of `line` holds `k` (a key's 12 bytes as
/// a word pair, see [`Line`]).
#[inline(always)]
fn line_hits(line: &Line, k0: u64, k1: u64) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86_64 baseline; `Line` is 64 bytes,
        // 64-byte aligned (`repr(align(64))`).
        unsafe {
            let want = _mm_set_epi64x(k1 as i64, k0 as i64);
            let p = line.0.as_ptr() as *const __m128i;
            let eq = |j: usize| _mm_cmpeq_epi32(_mm_load_si128(p.add(j)), want);
            // Each slot's four 32-bit compares packed to four bits.
            let m = _mm_movemask_epi8(_mm_packs_epi16(
                _mm_packs_epi32(eq(0), eq(1)),
                _mm_packs_epi32(eq(2), eq(3)),
            )) as u32;
            m & m >> 1 & m >> 2 & 0x1111
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut m = 0u32;
        for j in 0..INLINE_SLOTS {
            let w = &line.0[4 * j..];
            let hit = w[0] == k0 as u32 && w[1] == (k0 >> 32) as u32 && w[2] == k1 as u32;
            m |= u32::from(hit) << (4 * j);
        }
        m
    }
}

impl Layout for Inline {
    const SLOTS: usize = INLINE_SLOTS;

    fn new(nbuckets: u32) -> Inline {
        let markers = Inline::markers(nbuckets);
        let l = loc(hash(&markers[0]), nbuckets);
        let mut s = Inline {
            lines: Huge::new(nbuckets as usize),
            markers,
            marked: [l.b1, l.b2],
        };
        for slot in 0..nbuckets as usize * Self::SLOTS {
            s.clear(slot);
        }
        s
    }

    fn fits(k: &Key) -> bool {
        (k[1] >> 32 | k[2] | k[3] | k[4]) == 0
    }

    #[inline(always)]
    fn find(&self, k: &Key, l: Loc) -> Option<usize> {
        if !Self::fits(k) {
            return None;
        }
        let m = line_hits(&self.lines[l.b1 as usize], k[0], k[1])
            | line_hits(&self.lines[l.b2 as usize], k[0], k[1]) << 16;
        let j = m.trailing_zeros() as usize / 4;
        (m != 0).then(|| [l.b1, l.b2][j / 4] as usize * Self::SLOTS + j % 4)
    }

    fn empty_in(&self, b: u32) -> Option<usize> {
        let k = self.marker(b as usize);
        let m = line_hits(&self.lines[b as usize], k[0], k[1]);
        (m != 0).then(|| b as usize * Self::SLOTS + m.trailing_zeros() as usize / 4)
    }

    fn occupied(&self, s: usize) -> bool {
        self.key(s) != *self.marker(s / Self::SLOTS)
    }

    fn key(&self, s: usize) -> Key {
        let w = &self.lines[s / Self::SLOTS].0[4 * (s % Self::SLOTS)..];
        [
            u64::from(w[0]) | u64::from(w[1]) << 32,
            u64::from(w[2]),
            0,
            0,
            0,
        ]
    }

    fn value(&self, s: usize) -> u32 {
        self.lines[s / Self::SLOTS].0[4 * (s % Self::SLOTS) + 3]
    }

    fn put(&mut self, s: usize, k: &Key, _: u16, v: u32) {
        debug_assert!(Self::fits(k));
        let w = &mut self.lines[s / Self::SLOTS].0[4 * (s % Self::SLOTS)..][..4];
        w.copy_from_slice(&[k[0] as u32, (k[0] >> 32) as u32, k[1] as u32, v]);
    }

    fn clear(&mut self, s: usize) {
        let k = *self.marker(s / Self::SLOTS);
        self.put(s, &k, 0, 0);
    }

    /// The first bucket's line only: most keys live there (81 % of a
    /// million keys at 85 % load; inserts fill the first bucket first).
    #[inline(always)]
    fn prefetch(&self, l: Loc) {
        // A prefetch never faults: no bounds test (it is in bounds).
        prefetch_l2(self.lines.as_ptr().wrapping_add(l.b1 as usize));
    }

    /// Compare every key with the four slots of its first bucket,
    /// prefetching the second bucket of the keys not there; then compare
    /// those with their second bucket. A hit reads 1.19 lines on average
    /// instead of 2, a miss 2. (Keys from [`KeySpec`]s of at most
    /// [`INLINE_KEY`] bytes fit by construction; [`Cuckoo::get_batch`]
    /// asks the same of its callers.)
    #[inline(always)]
    fn resolve(&self, keys: &[Key], locs: &[Loc], valid: u64, out: &mut [u32]) -> u64 {
        let n = keys.len().min(locs.len()).min(out.len()).min(64);
        if n == 0 {
            return 0;
        }
        let (mut found, mut second) = (0u64, 0u64);
        let mut v = valid & (u64::MAX >> (64 - n));
        while v != 0 {
            let i = v.trailing_zeros() as usize;
            v &= v - 1;
            let (b, k) = (locs[i].b1 as usize, &keys[i]);
            debug_assert!(Self::fits(k));
            let m = line_hits(&self.lines[b], k[0], k[1]);
            if m != 0 {
                out[i] = self.lines[b].0[m.trailing_zeros() as usize + 3];
                found |= 1 << i;
            } else {
                prefetch(self.lines.as_ptr().wrapping_add(locs[i].b2 as usize));
                second |= 1 << i;
            }
        }
        while second != 0 {
            let i = second.trailing_zeros() as usize;
            second &= second - 1;
            let (b, k) = (locs[i].b2 as usize, &keys[i]);
            let m = line_hits(&self.lines[b], k[0], k[1]);
            if m != 0 {
                out[i] = self.lines[b].0[m.trailing_zeros() as usize + 3];
                found |= 1 << i;
            }
        }
        found
    }
}

/// A bucketized cuckoo hash table from [`Key`] to `u32`, its buckets kept
/// by a [`Layout`]: [`Tagged`] for any key, [`Inline`] for keys of at most
/// [`INLINE_KEY`] bytes.
///
/// Every key has two candidate buckets, chosen by the two halves of its
/// hash. Inserting into two full buckets moves keys to their other bucket
/// along the shortest path a breadth-first search finds (at most
/// [`BFS_MAX`] buckets visited, then the insert fails).
pub(crate) struct Cuckoo<S: Layout = Tagged> {
    slots: S,
    nbuckets: u32,
    len: usize,
    capacity: usize,
}

impl<S: Layout> Cuckoo<S> {
    /// A table for at least `capacity` keys; buckets are added so that it
    /// is at most 85 % full, or half full for up to [`SMALL`] keys: with a
    /// handful of buckets a few keys whose two buckets coincide fill them
    /// before 85 % (a 21-key table of 3 buckets refused a key before it
    /// held 21).
    pub(crate) fn new(capacity: usize) -> Cuckoo<S> {
        let load = if capacity <= SMALL { 50 } else { 85 };
        let nb = (capacity * 100 / load).div_ceil(S::SLOTS).max(MIN_BUCKETS);
        let nb = nb.min(u32::MAX as usize / S::SLOTS) as u32;
        Cuckoo {
            slots: S::new(nb),
            nbuckets: nb,
            len: 0,
            capacity,
        }
    }

    /// Keys held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The most keys it accepts.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    #[inline(always)]
    fn loc(&self, h: u64) -> Loc {
        loc(h, self.nbuckets)
    }

    /// The value of `k`.
    pub(crate) fn get(&self, k: &Key) -> Option<u32> {
        self.slots
            .find(k, self.loc(hash(k)))
            .map(|s| self.slots.value(s))
    }

    /// Stage 1 of a batched lookup: where `k` may live, with what the
    /// lookup reads first prefetched. Callers locate each key as soon as
    /// they have extracted it, so the misses overlap the extraction of the
    /// keys after it.
    #[inline(always)]
    pub(crate) fn locate(&self, k: &Key) -> Loc {
        let l = self.loc(hash(k));
        self.slots.prefetch(l);
        l
    }

    /// The rest of the lookup for up to 64 located keys (`keys[i]` at
    /// `locs[i]`, bit `i` of `valid` set for the keys that exist). The
    /// value of key `i` goes to `out[i]`; returns the mask of keys found.
    #[inline(always)]
    pub(crate) fn resolve(&self, keys: &[Key], locs: &[Loc], valid: u64, out: &mut [u32]) -> u64 {
        self.slots.resolve(keys, locs, valid, out)
    }

    /// Look up `keys[i]` (`None`: no key) into `out[i]`, for up to `N`
    /// keys (at most 64): [`locate`](Self::locate) every key, then
    /// [`resolve`](Self::resolve) them, so that the memory accesses of the
    /// whole group overlap (as DPDK's `rte_hash_lookup_bulk`). The group's
    /// arrays are `N` long: callers with small groups (`FlowCache`'s slow
    /// path) do not zero 3.5 KiB of stack per call. Keys the layout cannot
    /// hold are not found.
    #[inline]
    pub(crate) fn get_batch<const N: usize>(&self, keys: &[Option<Key>], out: &mut [Option<u32>]) {
        debug_assert!(N <= 64 && keys.len() <= N && out.len() >= keys.len());
        let mut ks = [[0u64; 5]; N];
        let mut locs = [Loc::default(); N];
        let mut valid = 0u64;
        for (i, k) in keys.iter().enumerate().take(N) {
            if let Some(k) = k.filter(S::fits) {
                ks[i] = k;
                locs[i] = self.locate(&k);
                valid |= 1 << i;
            }
        }
        let n = keys.len().min(N);
        let mut vals = [0u32; N];
        let found = self.resolve(&ks[..n], &locs[..n], valid, &mut vals[..n]);
        for (i, o) in out.iter_mut().enumerate().take(n) {
            *o = (found >> i & 1 != 0).then_some(vals[i]);
        }
    }

    /// Remove `k`; its value if it was there.
    pub(crate) fn remove(&mut self, k: &Key) -> Option<u32> {
        let s = self.slots.find(k, self.loc(hash(k)))?;
        let v = self.slots.value(s);
        self.slots.clear(s);
        self.len -= 1;
        Some(v)
    }

    /// Insert or replace `k`. `Err` when the table holds `capacity` keys,
    /// no displacement path frees a slot, or the layout cannot hold `k`.
    pub(crate) fn insert(&mut self, k: Key, v: u32) -> Result<Option<u32>, &'static str> {
        if !S::fits(&k) {
            return Err("key too long for this table");
        }
        let l = self.loc(hash(&k));
        if let Some(s) = self.slots.find(&k, l) {
            let old = self.slots.value(s);
            self.slots.put(s, &k, l.tag, v);
            return Ok(Some(old));
        }
        if self.len >= self.capacity {
            return Err("table full");
        }
        let s = self.free_slot(l.b1, l.b2).ok_or("table full")?;
        self.slots.put(s, &k, l.tag, v);
        self.len += 1;
        Ok(None)
    }

    /// An empty slot in `b1` or `b2`, moving keys to their other buckets
    /// along a breadth-first path if both are full.
    fn free_slot(&mut self, b1: u32, b2: u32) -> Option<usize> {
        let st = &mut self.slots;
        if let Some(s) = st.empty_in(b1).or_else(|| st.empty_in(b2)) {
            return Some(s);
        }
        // Nodes: (bucket, parent node, slot of the parent's bucket whose
        // key moves into this bucket).
        let mut nodes: Vec<(u32, u32, u8)> = vec![(b1, u32::MAX, 0), (b2, u32::MAX, 0)];
        let mut head = 0;
        while head < nodes.len() && nodes.len() < BFS_MAX {
            let (b, _, _) = nodes[head];
            for i in 0..S::SLOTS {
                let l = loc(hash(&st.key(b as usize * S::SLOTS + i)), self.nbuckets);
                let alt = if l.b1 == b { l.b2 } else { l.b1 };
                nodes.push((alt, head as u32, i as u8));
                if let Some(mut free) = st.empty_in(alt) {
                    // Move keys back along the path, from the free end.
                    // Each move takes a key to its other bucket, so the
                    // table stays valid even if a path that visits a slot
                    // twice has to stop half-way.
                    let mut n = nodes.len() - 1;
                    while nodes[n].1 != u32::MAX {
                        let (b, parent, slot) = nodes[n];
                        let from = nodes[parent as usize].0 as usize * S::SLOTS + slot as usize;
                        let k = st.key(from);
                        let l = loc(hash(&k), self.nbuckets);
                        if !st.occupied(from) || (l.b1 != b && l.b2 != b) {
                            return None;
                        }
                        st.put(free, &k, l.tag, st.value(from));
                        st.clear(from);
                        free = from;
                        n = parent as usize;
                    }
                    return Some(free);
                }
            }
            head += 1;
        }
        None
    }

    /// Keep only the entries for which `f(key, value)` is true.
    pub(crate) fn retain(&mut self, mut f: impl FnMut(&Key, u32) -> bool) {
        for s in 0..self.nbuckets as usize * S::SLOTS {
            if self.slots.occupied(s) && !f(&self.slots.key(s), self.slots.value(s)) {
                self.slots.clear(s);
                self.len -= 1;
            }
        }
    }
}

/// Flow ids: the smallest free id first, so that any implementation that
/// frees the same ids hands out the same ones.
#[derive(Default)]
pub(crate) struct IdAlloc {
    free: BinaryHeap<Reverse<u32>>,
    next: u32,
}

impl IdAlloc {
    /// A fresh id.
    pub(crate) fn alloc(&mut self) -> u32 {
        match self.free.pop() {
            Some(Reverse(id)) => id,
            None => {
                self.next += 1;
                self.next - 1
            }
        }
    }

    /// Give `id` back.
    pub(crate) fn free(&mut self, id: u32) {
        self.free.push(Reverse(id));
    }

    /// One more than the largest id handed out.
    pub(crate) fn span(&self) -> usize {
        self.next as usize
    }
}

/// Read a table file.
pub(crate) fn read_table(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))
}

/// The lines of a table file worth parsing, numbered from 1.
pub(crate) fn table_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_runtime::anno::offsets;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn key(x: u64) -> Key {
        [x, x >> 7, 0, 0, 0]
    }

    fn fills_to_capacity<S: Layout>() {
        let mut t = Cuckoo::<S>::new(10_000);
        for i in 0..10_000u64 {
            assert_eq!(t.insert(key(i * 7919), i as u32), Ok(None), "key {i}");
        }
        assert_eq!(t.insert(key(1 << 30), 1), Err("table full"));
        assert_eq!(t.len(), 10_000);
        for i in 0..10_000u64 {
            assert_eq!(t.get(&key(i * 7919)), Some(i as u32));
        }
        let keys: Vec<Option<Key>> = (0..64u64).map(|i| Some(key(i * 7919))).collect();
        let mut out = [None; 64];
        t.get_batch::<64>(&keys, &mut out);
        assert!(out.iter().enumerate().all(|(i, v)| *v == Some(i as u32)));
    }

    #[test]
    fn tagged_fills_to_capacity() {
        fills_to_capacity::<Tagged>();
    }

    #[test]
    fn inline_fills_to_capacity() {
        fills_to_capacity::<Inline>();
    }

    /// The markers of empty slots are never found, in any bucket, and are
    /// stored and found like other keys; a key too long for the inline
    /// layout is refused, and never found.
    #[test]
    fn inline_markers_are_ordinary_keys() {
        for cap in [1, 3, 30, 2000] {
            let mut t = Cuckoo::<Inline>::new(cap);
            let m = Inline::markers(t.nbuckets);
            let mut batch = [None; 2];
            t.get_batch::<2>(&[Some(m[0]), Some(m[1])], &mut batch);
            assert_eq!((t.get(&m[0]), t.get(&m[1]), batch), (None, None, [None; 2]));
            assert_eq!(t.insert(m[1], 7), Ok(None), "capacity {cap}");
            assert_eq!((t.get(&m[0]), t.get(&m[1])), (None, Some(7)));
            if cap > 1 {
                assert_eq!(t.insert(m[0], 8), Ok(None));
                t.get_batch::<2>(&[Some(m[0]), Some(m[1])], &mut batch);
                assert_eq!(batch, [Some(8), Some(7)]);
                assert_eq!(t.remove(&m[0]), Some(8));
            }
            assert_eq!(t.remove(&m[1]), Some(7));
            assert_eq!((t.get(&m[0]), t.get(&m[1]), t.len()), (None, None, 0));
            let long = [1, 1 << 32, 0, 0, 0];
            assert_eq!(t.insert(long, 1), Err("key too long for this table"));
            let short = [1, 0, 0, 0, 0];
            assert_eq!(t.insert(short, 2), Ok(None));
            t.get_batch::<2>(&[Some(long), Some(short)], &mut batch);
            assert_eq!((t.get(&long), batch), (None, [None, Some(2)]));
        }
    }

    #[test]
    fn ids_smallest_first() {
        let mut a = IdAlloc::default();
        assert_eq!((a.alloc(), a.alloc(), a.alloc()), (0, 1, 2));
        a.free(2);
        a.free(0);
        assert_eq!((a.alloc(), a.alloc(), a.alloc()), (0, 2, 3));
        assert_eq!(a.span(), 4);
    }

    #[test]
    fn key_text_forms() {
        let f = KeySpec::Flow
            .parse_key("10.0.0.1 1024 10.0.0.2 80 tcp")
            .unwrap();
        let k = FlowKey {
            src: map_v4([10, 0, 0, 1]),
            dst: map_v4([10, 0, 0, 2]),
            sport: 1024,
            dport: 80,
            proto: 6,
            version: 4,
        };
        assert_eq!(f, flow_key(&k));
        assert!(KeySpec::Flow.parse_key("10.0.0.1 1 ::1 2 6").is_err());
        let b = KeySpec::parse("OFFSET 2 LEN 3").unwrap();
        assert!(b.parse_key("0a0b").is_err());
        assert_eq!(b.parse_key("0a0b0c").unwrap()[0], 0x0c0b0a);
        assert!(KeySpec::parse("OFFSET 0 LEN 41").is_err());
        assert!(KeySpec::parse("ANNO NOPE").is_err());
    }

    #[test]
    fn byte_keys_long_and_short_packets() {
        let data: Vec<u8> = (1..=100).collect();
        for (off, len) in [
            (3, 13),
            (0, 40),
            (50, 8),
            (60, 40),
            (90, 10),
            (95, 6),
            (26, 12),
            (0, 1),
            (99, 1),
            (88, 12),
            (61, 39),
            (100, 1),
        ] {
            let spec = KeySpec::Bytes { off, len };
            let p = Packet::from_slice(&data);
            let hex: String = data.get(off..off + len).map_or(String::new(), |b| {
                b.iter().map(|x| format!("{x:02x}")).collect()
            });
            let want = (off + len <= data.len()).then(|| spec.parse_key(&hex).unwrap());
            assert_eq!(spec.extract(&p), want, "OFFSET {off} LEN {len}");
            let last = KeySpec::last_word_mask(len);
            let fast = match len.div_ceil(8) {
                1 => KeySpec::read_words::<1>(&p, off, last),
                2 => KeySpec::read_words::<2>(&p, off, last),
                3 => KeySpec::read_words::<3>(&p, off, last),
                4 => KeySpec::read_words::<4>(&p, off, last),
                _ => KeySpec::read_words::<5>(&p, off, last),
            };
            // `None`: the element asks `extract`.
            assert_eq!(
                fast.or_else(|| spec.extract(&p)),
                want,
                "OFFSET {off} LEN {len}"
            );
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u64, u32),
        Remove(u64),
        Get(u64),
        Batch(Vec<u64>),
    }

    fn op(space: u64) -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0..space, any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
            2 => (0..space).prop_map(Op::Remove),
            1 => (0..space).prop_map(Op::Get),
            1 => proptest::collection::vec(0..space, 0..64).prop_map(Op::Batch),
        ]
    }

    proptest! {
        /// The fast path's 5-tuple key is the reference's, for IPv4, IPv6
        /// and garbage headers, any protocol (ICMP echo included), short
        /// transport headers and a protocol annotation or none.
        #[test]
        fn packet_flow_key_as_reference(
            mut data in proptest::collection::vec(any::<u8>(), 0..80),
            version in prop_oneof![Just(4u8), Just(6u8), any::<u8>()],
            proto in prop_oneof![Just(1u8), Just(6u8), Just(17u8), Just(58u8), any::<u8>()],
            anno in prop_oneof![Just(0u8), any::<u8>()],
            net in proptest::option::of(0usize..20),
            l4 in proptest::option::of(0usize..80),
        ) {
            if let Some(b) = data.get_mut(net.unwrap_or(0)) {
                *b = version << 4 | (*b & 15);
            }
            for o in [9, 6] {
                if let Some(b) = data.get_mut(net.unwrap_or(0) + o) {
                    *b = proto;
                }
            }
            let mut p = Packet::from_slice(&data);
            if let Some(n) = net {
                p.set_network_header(n as isize);
            }
            if let Some(t) = l4 {
                p.set_transport_header(t as isize);
            }
            p.anno_mut().set_u8(offsets::L4_PROTO, anno);
            let want = FlowKey::from_packet(&p).map(|f| flow_key(&f));
            prop_assert_eq!(packet_flow_key(&p), want);
        }

        /// The cuckoo table answers as a `HashMap` with the same capacity,
        /// with either layout.
        #[test]
        fn same_as_hashmap(
            cap in 1usize..300,
            ops in proptest::collection::vec(op(400), 1..600),
            inline in any::<bool>(),
        ) {
            if inline {
                same_as_hashmap_with(Cuckoo::<Inline>::new(cap), cap, ops)?;
            } else {
                same_as_hashmap_with(Cuckoo::<Tagged>::new(cap), cap, ops)?;
            }
        }
    }

    fn same_as_hashmap_with<S: Layout>(
        mut t: Cuckoo<S>,
        cap: usize,
        ops: Vec<Op>,
    ) -> Result<(), TestCaseError> {
        let mut r: HashMap<Key, u32> = HashMap::new();
        for o in ops {
            match o {
                Op::Insert(k, v) => {
                    let k = key(k);
                    let want = if r.contains_key(&k) || r.len() < cap {
                        Ok(r.insert(k, v))
                    } else {
                        Err("table full")
                    };
                    prop_assert_eq!(t.insert(k, v), want);
                }
                Op::Remove(k) => prop_assert_eq!(t.remove(&key(k)), r.remove(&key(k))),
                Op::Get(k) => prop_assert_eq!(t.get(&key(k)), r.get(&key(k)).copied()),
                Op::Batch(ks) => {
                    let keys: Vec<Option<Key>> =
                        ks.iter().map(|&k| (k % 5 != 0).then(|| key(k))).collect();
                    let mut out = vec![None; keys.len()];
                    t.get_batch::<64>(&keys, &mut out);
                    for (k, v) in keys.iter().zip(out) {
                        prop_assert_eq!(v, k.and_then(|k| r.get(&k).copied()));
                    }
                }
            }
            prop_assert_eq!(t.len(), r.len());
        }
        Ok(())
    }
}

//! An exact-match decision cache in front of the decision tree, in the
//! manner of Open vSwitch's exact-match cache: the tree key of a packet
//! (source, destination, protocol, source port, destination port; see
//! [`PacketView::key`](super::PacketView::key)) maps to the rule the tree
//! found for it.
//!
//! Exactness: a decision is cached only when the tree made it from the key
//! alone, that is, when no residual test (TTL, TOS, flags, byte tests, ...)
//! was evaluated on the way; such decisions are a function of the key, so
//! every later packet with the same key gets the same answer from the tree.
//! Packets without a key (short, truncated) never use the cache. The cache
//! belongs to one compiled rule set and is cleared whenever the rules are
//! replaced.
//!
//! Layout: sets of four entries, one cache line per set. An entry is two
//! words: `src << 32 | dst`, and `VALID | code << 42 | proto << 34 |
//! sport << 17 | dport` with `code` the rule index plus one (0: no rule
//! matched); a set holds its four first words, then its four second words,
//! so two ways are compared with one 16-byte compare per word. A miss
//! fills an empty way, else the way named by two bits of the hash.

use super::expr::{PacketView, NDIMS, NO_PORT};

const WAYS: usize = 4;
const VALID: u64 = 1 << 63;
/// Bits of the second word that hold the key (protocol and ports) and the
/// valid flag.
const KEY_BITS: u64 = VALID | ((1 << 42) - 1);
const CODE_SHIFT: u32 = 42;
/// Largest rule code that fits between the key bits and the valid flag.
const CODE_MAX: u64 = (1 << 21) - 1;

#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Set {
    /// The first word of each way.
    w0: [u64; WAYS],
    /// The second word of each way.
    w1: [u64; WAYS],
}

const EMPTY: Set = Set {
    w0: [0; WAYS],
    w1: [0; WAYS],
};

/// The packed key of a tree key and its set-selecting hash.
#[derive(Clone, Copy, Debug, Default)]
pub struct Probe {
    w0: u64,
    w1: u64,
    hash: u64,
}

impl Probe {
    /// Pack `k` (ports at most 65536, protocol at most 255).
    #[inline(always)]
    pub fn new(k: &[u32; NDIMS]) -> Probe {
        let w0 = u64::from(k[0]) << 32 | u64::from(k[1]);
        let w1 = VALID | u64::from(k[2]) << 34 | u64::from(k[3]) << 17 | u64::from(k[4]);
        Probe::pack(w0, w1)
    }

    #[inline(always)]
    fn pack(w0: u64, w1: u64) -> Probe {
        let hash = (w0 ^ w1.rotate_left(29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Probe { w0, w1, hash }
    }

    /// The probe of `v`'s tree key (`Probe::new(&v.key()?)`). A header of
    /// 20 bytes with the transport word behind it (nearly every packet) is
    /// packed straight from its bytes: one length check, the addresses as
    /// one 64-bit load, the ports as one 32-bit load (`NO_PORT` for later
    /// fragments by a conditional move); other packets go through
    /// [`PacketView::key`].
    #[inline(always)]
    pub fn of(v: &PacketView<'_>) -> Option<Probe> {
        if let Some(h) = v.ip.first_chunk::<24>() {
            if h[0] & 0x0F == 5 {
                let w0 =
                    u64::from_be_bytes([h[12], h[13], h[14], h[15], h[16], h[17], h[18], h[19]]);
                let ports = u64::from(u32::from_be_bytes([h[20], h[21], h[22], h[23]]));
                let later_frag = u16::from_be_bytes([h[6], h[7]]) & 0x1FFF != 0;
                const NONE: u64 = (NO_PORT as u64) << 17 | NO_PORT as u64;
                let ports = if later_frag {
                    NONE
                } else {
                    (ports & 0xFFFF_0000) << 1 | (ports & 0xFFFF)
                };
                return Some(Probe::pack(w0, VALID | u64::from(h[9]) << 34 | ports));
            }
        }
        v.key().map(|k| Probe::new(&k))
    }

    /// The tree key packed in this probe (the inverse of [`new`](Self::new)).
    #[inline(always)]
    pub fn key(&self) -> [u32; NDIMS] {
        const PORT: u64 = (1 << 17) - 1;
        [
            (self.w0 >> 32) as u32,
            self.w0 as u32,
            (self.w1 >> 34 & 0xFF) as u32,
            (self.w1 >> 17 & PORT) as u32,
            (self.w1 & PORT) as u32,
        ]
    }
}

/// The cache. `sets == 0` disables it.
#[derive(Clone)]
pub struct DecisionCache {
    sets: Vec<Set>,
    shift: u32,
    /// Lookups answered by the cache.
    pub hits: u64,
    /// Lookups that went to the tree.
    pub misses: u64,
    /// Rule numbers of a batch while the cache is off (reused, so that
    /// path allocates nothing per batch either).
    pub(super) scratch: Vec<Option<usize>>,
}

impl std::fmt::Debug for DecisionCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecisionCache")
            .field("entries", &self.entries())
            .field("hits", &self.hits)
            .field("misses", &self.misses)
            .finish()
    }
}

impl DecisionCache {
    /// Default capacity in entries: 32,768 (512 KiB, within this machine's
    /// 1 MiB L2 cache; with 4-way sets, 10,000 flows in 16,384 entries
    /// overflowed one set in ten and missed on 7 % of packets, in 32,768
    /// entries on 0.8 %).
    pub const DEFAULT_ENTRIES: usize = 32768;

    /// A cache of `entries` entries (rounded up to a power of two, at least
    /// 4; 0 disables it).
    pub fn new(entries: usize) -> DecisionCache {
        let sets = if entries == 0 {
            0
        } else {
            entries.div_ceil(WAYS).next_power_of_two()
        };
        DecisionCache {
            sets: vec![EMPTY; sets],
            shift: 64 - sets.max(1).trailing_zeros(),
            hits: 0,
            misses: 0,
            scratch: Vec::new(),
        }
    }

    /// Capacity in entries.
    pub fn entries(&self) -> usize {
        self.sets.len() * WAYS
    }

    /// Whether the cache is in use for a rule set of `rules` rules.
    #[inline]
    pub fn usable(&self, rules: usize) -> bool {
        !self.sets.is_empty() && (rules as u64) < CODE_MAX
    }

    /// Forget every decision (the rules changed).
    pub fn clear(&mut self) {
        self.sets.fill(EMPTY);
    }

    #[inline(always)]
    fn set_of(&self, p: &Probe) -> usize {
        // `shift` is 64 - log2(sets); with one set the shift of 64 would
        // overflow, so shift by 63 and mask.
        ((p.hash >> self.shift.min(63)) as usize) & (self.sets.len() - 1)
    }

    /// Start loading `p`'s set.
    #[inline(always)]
    pub fn prefetch(&self, p: &Probe) {
        crate::hint::prefetch(&self.sets[self.set_of(p)]);
    }

    /// The cached decision for `p`: `Some(None)` for "no rule matches",
    /// `None` when not cached.
    #[inline(always)]
    pub fn get(&self, p: &Probe) -> Option<Option<usize>> {
        let s = &self.sets[self.set_of(p)];
        // All four ways compared without a branch each (which way holds a
        // key is unpredictable: branching per way mispredicted about one
        // lookup in two).
        let hit = Self::ways_matching(s, p);
        if hit == 0 {
            return None;
        }
        let code = s.w1[hit.trailing_zeros() as usize] >> CODE_SHIFT & CODE_MAX;
        Some(code.checked_sub(1).map(|r| r as usize))
    }

    /// Bit `w` set if way `w` of `s` holds `p`'s key. With SSE4.1 (part of
    /// the x86-64-v2 baseline this workspace builds for) two ways at a time:
    /// their first words compared in one 16-byte compare, their masked
    /// second words in another, and the four ways' results narrowed into
    /// one sign bit each (`packs`, `movemask`).
    #[inline(always)]
    fn ways_matching(s: &Set, p: &Probe) -> u32 {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse4.1"))]
        {
            use std::arch::x86_64::*;
            // SAFETY: SSE4.1 is enabled at compile time (cfg above); the
            // loads read the 16-byte aligned halves of the set's two
            // 32-byte word arrays (the set is 64-byte aligned).
            unsafe {
                let k0 = _mm_set1_epi64x(p.w0 as i64);
                let k1 = _mm_set1_epi64x(p.w1 as i64);
                let mask = _mm_set1_epi64x(KEY_BITS as i64);
                let w0 = s.w0.as_ptr() as *const __m128i;
                let w1 = s.w1.as_ptr() as *const __m128i;
                let pair = |i: usize| {
                    let e0 = _mm_cmpeq_epi64(_mm_load_si128(w0.add(i)), k0);
                    let e1 = _mm_and_si128(_mm_load_si128(w1.add(i)), mask);
                    _mm_and_si128(e0, _mm_cmpeq_epi64(e1, k1))
                };
                // Each way's all-ones or zero 64 bits become 32 bits (two
                // saturated 16-bit halves), whose sign `movemask` collects.
                let both = _mm_packs_epi32(pair(0), pair(1));
                _mm_movemask_ps(_mm_castsi128_ps(both)) as u32
            }
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse4.1")))]
        {
            let mut hit = 0u32;
            for w in 0..WAYS {
                hit |= u32::from((s.w0[w] == p.w0) & (s.w1[w] & KEY_BITS == p.w1)) << w;
            }
            hit
        }
    }

    /// Remember `rule` as the decision for `p` (callers check
    /// [`usable`](Self::usable) first, so the code fits).
    #[inline]
    pub fn put(&mut self, p: &Probe, rule: Option<usize>) {
        let code = rule.map_or(0, |r| r as u64 + 1);
        debug_assert!(code <= CODE_MAX);
        let i = self.set_of(p);
        let s = &mut self.sets[i];
        // The key's own way if present (two misses on one key in a batch),
        // else an empty way, else one picked by the hash.
        let own = Self::ways_matching(s, p);
        let way = if own != 0 {
            own.trailing_zeros() as usize
        } else {
            s.w1.iter()
                .position(|e| e & VALID == 0)
                .unwrap_or((p.hash & (WAYS as u64 - 1)) as usize)
        };
        s.w0[way] = p.w0;
        s.w1[way] = p.w1 | code << CODE_SHIFT;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_decisions_by_exact_key() {
        let mut c = DecisionCache::new(64);
        let k1 = [0x0A00_0001, 0xC0A8_0001, 6, 1234, 80];
        let k2 = [0x0A00_0001, 0xC0A8_0001, 6, 1234, 81];
        let k3 = [0, 0, 0, 0, 0];
        let (p1, p2, p3) = (Probe::new(&k1), Probe::new(&k2), Probe::new(&k3));
        assert_eq!(c.get(&p1), None);
        c.put(&p1, Some(7));
        c.put(&p3, None);
        assert_eq!(c.get(&p1), Some(Some(7)));
        assert_eq!(c.get(&p2), None);
        assert_eq!(c.get(&p3), Some(None));
        c.clear();
        assert_eq!((c.get(&p1), c.get(&p3)), (None, None));
    }

    #[test]
    fn extreme_keys_and_codes_round_trip() {
        let mut c = DecisionCache::new(4);
        let k = [u32::MAX, u32::MAX, 255, 65536, 65536];
        let p = Probe::new(&k);
        c.put(&p, Some(CODE_MAX as usize - 1));
        assert_eq!(c.get(&p), Some(Some(CODE_MAX as usize - 1)));
        assert!(c.usable(1000) && !c.usable(CODE_MAX as usize));
        assert!(!DecisionCache::new(0).usable(1));
    }

    #[test]
    fn a_packets_probe_is_the_probe_of_its_key() {
        // 20-byte headers (first and later fragments), options, short
        // packets and truncated transport headers.
        let mut x: u32 = 0x9E37_79B9;
        for round in 0..20_000 {
            let mut b = [0u8; 32];
            for v in b.iter_mut() {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                *v = x as u8;
            }
            if round % 2 == 0 {
                b[0] = 0x45;
            }
            if round % 3 == 0 {
                b[6] &= 0xE0;
                b[7] = 0;
            }
            let len = [32, 24, 23, 20, 19, 28][round % 6];
            let v = PacketView::ip(&b[..len]);
            let (p, k) = (Probe::of(&v), v.key());
            assert_eq!(p.is_some(), k.is_some(), "{b:?} {len}");
            if let (Some(p), Some(k)) = (p, k) {
                let q = Probe::new(&k);
                assert_eq!((p.w0, p.w1, p.hash), (q.w0, q.w1, q.hash), "{b:?} {len}");
            }
        }
    }

    #[test]
    fn a_probe_gives_back_its_key() {
        for k in [
            [0x0A00_0001, 0xC0A8_0001, 6, 1234, 80],
            [u32::MAX, u32::MAX, 255, 65536, 65536],
            [0, 0, 0, 0, 0],
        ] {
            assert_eq!(Probe::new(&k).key(), k);
        }
    }

    #[test]
    fn a_full_set_evicts_one_way() {
        // One set of four ways: five keys, the fifth evicts one.
        let mut c = DecisionCache::new(4);
        let ps: Vec<Probe> = (0..5).map(|i| Probe::new(&[i, 0, 17, 1, 2])).collect();
        for (i, p) in ps.iter().enumerate() {
            c.put(p, Some(i));
        }
        let held: Vec<bool> = ps.iter().map(|p| c.get(p).is_some()).collect();
        assert_eq!(held.iter().filter(|&&h| h).count(), 4);
        assert!(held[4]);
        // Putting a held key again does not take a second way.
        c.put(&ps[4], Some(4));
        assert_eq!(ps.iter().filter(|p| c.get(p).is_some()).count(), 4);
        for (i, p) in ps.iter().enumerate() {
            if let Some(d) = c.get(p) {
                assert_eq!(d, Some(i));
            }
        }
    }
}

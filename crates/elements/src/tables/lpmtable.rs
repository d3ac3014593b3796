//! Longest-prefix-match tables behind the `LPM` element (no element lives
//! here): the routing information base (an ordered map of prefixes),
//! interned next hops, DIR-24-8 for IPv4, a compressed multibit trie
//! (poptrie-style, stride 6, 16-bit direct first level, path-compressed
//! nodes) for IPv6, and a
//! one-bit-per-level binary trie used as the reference implementation.
//!
//! Every forwarding table ([`Fib4`], [`Fib6`]) is derived from the RIB:
//! after the RIB changes for one prefix, `update` brings the table in line
//! with it. Lookups are batched and return next-hop ids (0: no route).

use super::huge::huge_pages;
use crate::hint::prefetch;
use std::collections::{BTreeMap, HashMap};

/// A route's next hop: output port and gateway (0 for none; an IPv4
/// gateway sits in the low 32 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NextHop {
    /// Gateway address bits, 0 for none.
    pub gw: u128,
    /// Output port.
    pub port: u32,
}

/// Interned next hops with reference counts: id `k` (from 1) is
/// `hops[k - 1]`; id 0 means "no route".
#[derive(Debug, Default, Clone)]
pub struct NextHops {
    hops: Vec<NextHop>,
    refs: Vec<u32>,
    ids: HashMap<NextHop, u32>,
    free: Vec<u32>,
}

impl NextHops {
    /// The id of `h`, taking a reference.
    pub fn acquire(&mut self, h: NextHop) -> u32 {
        if let Some(&id) = self.ids.get(&h) {
            self.refs[id as usize - 1] += 1;
            return id;
        }
        let id = match self.free.pop() {
            Some(id) => {
                self.hops[id as usize - 1] = h;
                self.refs[id as usize - 1] = 1;
                id
            }
            None => {
                self.hops.push(h);
                self.refs.push(1);
                self.hops.len() as u32
            }
        };
        self.ids.insert(h, id);
        id
    }

    /// Drop a reference to `id`.
    pub fn release(&mut self, id: u32) {
        let k = id as usize - 1;
        self.refs[k] -= 1;
        if self.refs[k] == 0 {
            self.ids.remove(&self.hops[k]);
            self.free.push(id);
        }
    }

    /// The next hop with id `id` (not 0).
    #[inline]
    pub fn get(&self, id: u32) -> NextHop {
        self.hops[id as usize - 1]
    }

    /// The next hop with id `id`, `None` for 0 (no route); no panic path,
    /// for the per-packet loops.
    #[inline]
    pub fn find(&self, id: u32) -> Option<NextHop> {
        self.hops.get((id as usize).wrapping_sub(1)).copied()
    }
}

/// One route in the RIB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RibEntry {
    /// Gateway bits (0 for none).
    pub gw: u128,
    /// Output port.
    pub port: u32,
    /// Interned next-hop id.
    pub nh: u32,
}

/// Routes by `(network address, prefix length)`, host bits cleared.
pub type Rib<K> = BTreeMap<(K, u8), RibEntry>;

/// The netmask of an IPv4 prefix length.
#[inline]
pub fn mask4(len: u8) -> u32 {
    u32::MAX
        .checked_shl(32 - u32::from(len.min(32)))
        .unwrap_or(0)
}

/// The netmask of an IPv6 prefix length.
#[inline]
pub fn mask6(len: u8) -> u128 {
    u128::MAX
        .checked_shl(128 - u32::from(len.min(128)))
        .unwrap_or(0)
}

/// The longest route in `rib` strictly shorter than `len` that covers
/// `addr`: `(next hop, length)`, or `(0, 0)`.
fn covering4(rib: &Rib<u32>, addr: u32, len: u8) -> (u32, u8) {
    (0..len)
        .rev()
        .find_map(|l| rib.get(&(addr & mask4(l), l)).map(|e| (e.nh, l)))
        .unwrap_or((0, 0))
}

fn covering6(rib: &Rib<u128>, addr: u128, len: u8) -> (u32, u8) {
    (0..len)
        .rev()
        .find_map(|l| rib.get(&(addr & mask6(l), l)).map(|e| (e.nh, l)))
        .unwrap_or((0, 0))
}

/// An IPv4 forwarding table.
pub trait Fib4: Send + 'static {
    /// The RIB entry for `addr/len` was added, replaced or removed.
    fn update(&mut self, rib: &Rib<u32>, addr: u32, len: u8);
    /// Next-hop ids for `addrs` into `out` (same length; 0: no route).
    fn lookup(&self, addrs: &[u32], out: &mut [u32]);
    /// A large route set was loaded: fold the table's memory into 2 MiB
    /// pages (random lookups then miss in the cache but not also in the
    /// TLB).
    fn settle(&self) {}
    /// The table as DIR-24-8, whose lookups the element inlines into its
    /// per-packet loop (the reference trie answers `None`).
    fn dir248(&self) -> Option<&Dir248> {
        None
    }
}

/// An IPv6 forwarding table.
pub trait Fib6: Send + 'static {
    /// The RIB entry for `addr/len` was added, replaced or removed.
    fn update(&mut self, rib: &Rib<u128>, addr: u128, len: u8);
    /// Next-hop ids for `addrs` into `out` (same length; 0: no route).
    fn lookup(&self, addrs: &[u128], out: &mut [u32]);
    /// As [`Fib4::settle`].
    fn settle(&self) {}
}

// ---------------------------------------------------------------------
// IPv4: DIR-24-8.

/// Entry flag: the low bits index a 256-entry `tbl8` group.
const EXT: u32 = 1 << 31;
const TBL24: usize = 1 << 24;

/// DIR-24-8 (Gupta, Lin, McKeown): a 2^24-entry table indexed by the top
/// 24 address bits holds the next-hop id, or (flag [`EXT`]) a group of 256
/// entries for the last byte. The lookup arrays hold only next-hop ids;
/// the prefix length of each entry, needed for updates only, lives in
/// separate arrays (struct of arrays) so lookups touch 4 bytes an entry.
pub struct Dir248 {
    tbl24: Box<[u32; TBL24]>,
    depth24: Box<[u8]>,
    tbl8: Vec<u32>,
    depth8: Vec<u8>,
    free8: Vec<u32>,
}

impl Default for Dir248 {
    fn default() -> Self {
        Self::new()
    }
}

impl Dir248 {
    /// An empty table (64 MiB of zeroed pages, touched on demand, on
    /// 2 MiB pages where the kernel allows).
    pub fn new() -> Self {
        let tbl24: Box<[u32; TBL24]> = vec![0u32; TBL24]
            .into_boxed_slice()
            .try_into()
            .expect("length is TBL24");
        huge_pages(&tbl24[..], false);
        Dir248 {
            tbl24,
            depth24: vec![0u8; TBL24].into_boxed_slice(),
            tbl8: Vec::new(),
            depth8: Vec::new(),
            free8: Vec::new(),
        }
    }

    /// Start loading the first-level entry of `a`.
    #[inline(always)]
    pub fn prefetch(&self, a: u32) {
        prefetch(&self.tbl24[(a >> 8) as usize]);
    }

    /// The next-hop id of `a` (0: no route). The first level is a
    /// fixed-size array indexed by 24 bits (no bounds test); a group index
    /// is always in range (`apply` makes the group before it stores the
    /// index), and the `unwrap_or` only keeps a panic call, and the
    /// register spills it costs, out of the callers' loops.
    #[inline(always)]
    pub fn get(&self, a: u32) -> u32 {
        let e = self.tbl24[(a >> 8) as usize];
        if e & EXT == 0 {
            e
        } else {
            let j = (((e & !EXT) as usize) << 8) | (a & 0xff) as usize;
            self.tbl8.get(j).copied().unwrap_or(0)
        }
    }

    /// tbl8 groups in use.
    pub fn groups(&self) -> usize {
        self.tbl8.len() / 256 - self.free8.len()
    }

    /// Set `(nh, d)` in every entry covered by `addr/len` whose current
    /// prefix length satisfies `pred`; `create` makes a tbl8 group for a
    /// prefix longer than 24 bits where there is none.
    fn apply(
        &mut self,
        addr: u32,
        len: u8,
        pred: impl Fn(u8) -> bool,
        nh: u32,
        d: u8,
        create: bool,
    ) {
        if len <= 24 {
            let first = (addr >> 8) as usize;
            for s in first..first + (1usize << (24 - len)) {
                let e = self.tbl24[s];
                if e & EXT != 0 {
                    let g = ((e & !EXT) as usize) << 8;
                    for j in g..g + 256 {
                        if pred(self.depth8[j]) {
                            self.tbl8[j] = nh;
                            self.depth8[j] = d;
                        }
                    }
                } else if pred(self.depth24[s]) {
                    self.tbl24[s] = nh;
                    self.depth24[s] = d;
                }
            }
            return;
        }
        let s = (addr >> 8) as usize;
        let mut e = self.tbl24[s];
        if e & EXT == 0 {
            if !create {
                return;
            }
            let g = match self.free8.pop() {
                Some(g) => g,
                None => {
                    self.tbl8.resize(self.tbl8.len() + 256, 0);
                    self.depth8.resize(self.depth8.len() + 256, 0);
                    (self.tbl8.len() / 256 - 1) as u32
                }
            };
            let b = (g as usize) << 8;
            self.tbl8[b..b + 256].fill(e);
            self.depth8[b..b + 256].fill(self.depth24[s]);
            e = EXT | g;
            self.tbl24[s] = e;
        }
        let g = ((e & !EXT) as usize) << 8;
        let first = g + (addr & 0xff) as usize;
        for j in first..first + (1usize << (32 - len)) {
            if pred(self.depth8[j]) {
                self.tbl8[j] = nh;
                self.depth8[j] = d;
            }
        }
    }

    /// Fold the group under tbl24 slot `s` back into the slot when no
    /// prefix longer than 24 bits is left in it.
    fn collapse(&mut self, s: usize) {
        let e = self.tbl24[s];
        if e & EXT == 0 {
            return;
        }
        let g = (e & !EXT) as usize;
        let b = g << 8;
        if self.depth8[b..b + 256].iter().all(|&d| d <= 24) {
            self.tbl24[s] = self.tbl8[b];
            self.depth24[s] = self.depth8[b];
            self.free8.push(g as u32);
        }
    }
}

impl Fib4 for Dir248 {
    fn update(&mut self, rib: &Rib<u32>, addr: u32, len: u8) {
        if let Some(e) = rib.get(&(addr, len)) {
            self.apply(addr, len, |d| d <= len, e.nh, len, true);
        } else {
            let (nh, d) = covering4(rib, addr, len);
            self.apply(addr, len, |x| x == len, nh, d, false);
            if len > 24 {
                self.collapse((addr >> 8) as usize);
            }
        }
    }

    #[inline]
    fn lookup(&self, addrs: &[u32], out: &mut [u32]) {
        for &a in addrs {
            self.prefetch(a);
        }
        for (&a, o) in addrs.iter().zip(out.iter_mut()) {
            *o = self.get(a);
        }
    }

    fn settle(&self) {
        huge_pages(&self.tbl24[..], true);
        huge_pages(&self.tbl8, true);
    }

    fn dir248(&self) -> Option<&Dir248> {
        Some(self)
    }
}

// ---------------------------------------------------------------------
// IPv6: compressed multibit trie.

/// Bits per node below the first level.
const STRIDE: u32 = 6;
/// Most address bits a node skips before its `STRIDE` bits (the width of
/// its `key`).
const MAX_SKIP: u32 = 32;
/// Slots of the direct first level (the top 16 bits).
const TOP: usize = 1 << 16;

/// One trie node: first up to [`MAX_SKIP`] address bits that every route
/// below it shares (path compression: `mask` has as many top bits set,
/// `key` holds those bits), then `STRIDE` bits: 64 slots, each either a
/// child (bit set in `vector`) or a leaf. Children are stored back to back
/// from `base1`; leaves are run-length compressed: `leafvec` marks the
/// slots where a new run starts, runs stored back to back from `base0`.
/// The child or leaf of slot `s` is found by counting set bits up to `s`
/// (Asai and Ohara's poptrie). An address whose skipped bits differ from
/// `key` matches no route below the node: its answer is the leaf the node
/// inherited, stored just before its runs (at `base0 - 1`; only nodes that
/// skip have it). A node without children keeps its first run's leaf in
/// `base1`, so that where that is its only run (a lone route's node), the
/// walk ends without reading the leaf array. Aligned to 32 bytes so that
/// no node straddles two cache lines (one prefetch brings the whole node).
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(32))]
struct Node {
    vector: u64,
    leafvec: u64,
    base0: u32,
    base1: u32,
    key: u32,
    mask: u32,
}

/// One 16-bit first-level slot: its leaf and where its subtrie lies in
/// the shared node and leaf arrays.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// Next hop of the longest prefix of length <= 16 covering the slot.
    leaf: u32,
    /// Index of the subtrie's root in `Poptrie6::nodes`; the subtrie's
    /// nodes and leaves are `nnodes` and `nleaves` long from `node0` and
    /// `leaf0`. No nodes: `leaf` answers.
    node0: u32,
    nnodes: u32,
    leaf0: u32,
    nleaves: u32,
    /// Length of the prefix `leaf` comes from (control path only).
    depth: u8,
}

/// A subtrie while it is built: indices relative to its own arrays.
#[derive(Default)]
struct Sub {
    nodes: Vec<Node>,
    leaves: Vec<u32>,
}

/// The `STRIDE` bits of `a` starting at bit `base` (from the top); bits
/// past the end read as 0.
#[inline(always)]
fn chunk(a: u128, base: u32) -> usize {
    ((a << base) >> (128 - STRIDE)) as usize
}

/// IPv6 longest-prefix match: a 65,536-entry first level (top 16 bits),
/// then poptrie nodes of 6 bits each, each first skipping the bits all
/// routes below it share (so a single route's chain of one-child nodes is
/// one node; with the bench's 200,000 routes a lookup walks 2.3 nodes
/// instead of 5.1). A route change rebuilds the subtrie
/// of its first-level slot from the RIB (prefixes of 16 bits or less only
/// change the first-level leaves, and the subtries they cover). All
/// subtries share one node array and one leaf array (as in poptrie), so
/// that the whole trie can sit on 2 MiB pages: a rebuilt subtrie is
/// written over its old place when it fits and appended otherwise, and
/// the arrays are compacted when more than half of them is left over.
/// Nodes hold absolute indices into the arrays.
pub struct Poptrie6 {
    top: Vec<Slot>,
    /// What lookups read of each slot (struct of arrays, 512 KiB): its
    /// leaf, and its root's index plus one (0: no subtrie).
    first: Vec<[u32; 2]>,
    nodes: Vec<Node>,
    leaves: Vec<u32>,
    /// Entries of `nodes` and `leaves` no subtrie uses.
    dead_nodes: usize,
    dead_leaves: usize,
}

impl Default for Poptrie6 {
    fn default() -> Self {
        Self::new()
    }
}

type Route6 = (u128, u8, u32);

impl Poptrie6 {
    /// An empty table.
    pub fn new() -> Self {
        Poptrie6 {
            top: vec![Slot::default(); TOP],
            first: vec![[0; 2]; TOP],
            nodes: Vec::new(),
            leaves: Vec::new(),
            dead_nodes: 0,
            dead_leaves: 0,
        }
    }

    /// Trie nodes in use (over all subtries).
    pub fn nodes(&self) -> usize {
        self.nodes.len() - self.dead_nodes
    }

    /// Copy slot `s`'s lookup fields to `first`.
    fn sync(&mut self, s: usize) {
        let t = &self.top[s];
        self.first[s] = [t.leaf, if t.nnodes != 0 { t.node0 + 1 } else { 0 }];
    }

    fn rebuild(&mut self, rib: &Rib<u128>, s: usize) {
        let lo = (s as u128) << 112;
        let hi = lo | !mask6(16);
        let routes: Vec<Route6> = rib
            .range((lo, 17)..=(hi, 128))
            .filter(|(k, _)| k.1 > 16)
            .map(|(k, e)| (k.0, k.1, e.nh))
            .collect();
        let mut sub = Sub::default();
        if !routes.is_empty() {
            sub.nodes.push(Node::default());
            Self::build(&mut sub, 0, 16, &routes, self.top[s].leaf);
        }
        self.place(s, sub);
    }

    /// Store the subtrie `sub` of slot `s`: over the old one where it
    /// fits, else at the end; relocate its indices; compact the arrays
    /// when more than half is dead.
    fn place(&mut self, s: usize, mut sub: Sub) {
        let old = self.top[s];
        let (nn, nl) = (sub.nodes.len(), sub.leaves.len());
        let node0 = slot_for(self.nodes.len(), old.node0, old.nnodes, nn);
        let leaf0 = slot_for(self.leaves.len(), old.leaf0, old.nleaves, nl);
        for n in &mut sub.nodes {
            n.base0 += leaf0 as u32;
            if n.vector != 0 {
                n.base1 += node0 as u32;
            }
        }
        put(
            &mut self.nodes,
            &mut self.dead_nodes,
            node0,
            old.nnodes,
            &sub.nodes,
        );
        put(
            &mut self.leaves,
            &mut self.dead_leaves,
            leaf0,
            old.nleaves,
            &sub.leaves,
        );
        let t = &mut self.top[s];
        t.node0 = node0 as u32;
        t.nnodes = nn as u32;
        t.leaf0 = leaf0 as u32;
        t.nleaves = nl as u32;
        self.sync(s);
        if 2 * self.dead_nodes > self.nodes.len() || 2 * self.dead_leaves > self.leaves.len() {
            self.compact();
        }
    }

    /// Move every subtrie to the front of fresh arrays, in slot order.
    fn compact(&mut self) {
        let mut nodes = Vec::with_capacity(self.nodes.len() - self.dead_nodes);
        let mut leaves = Vec::with_capacity(self.leaves.len() - self.dead_leaves);
        for (t, f) in self.top.iter_mut().zip(self.first.iter_mut()) {
            let (n0, l0) = (nodes.len() as u32, leaves.len() as u32);
            let old = &self.nodes[t.node0 as usize..][..t.nnodes as usize];
            nodes.extend(old.iter().map(|n| Node {
                base0: n.base0 - t.leaf0 + l0,
                base1: if n.vector != 0 {
                    n.base1 - t.node0 + n0
                } else {
                    n.base1
                },
                ..*n
            }));
            leaves.extend_from_slice(&self.leaves[t.leaf0 as usize..][..t.nleaves as usize]);
            t.node0 = n0;
            t.leaf0 = l0;
            f[1] = if t.nnodes != 0 { n0 + 1 } else { 0 };
        }
        self.nodes = nodes;
        self.leaves = leaves;
        self.dead_nodes = 0;
        self.dead_leaves = 0;
    }

    /// Fill node `idx` starting at bit `base` from `routes` (sorted, not
    /// empty, all longer than `base`, all inside the node's range), with
    /// `default` the next hop inherited from shorter prefixes. The node
    /// skips the bits all routes share while no route is shorter than
    /// them (at most [`MAX_SKIP`], and short of bit 128; a route that ends
    /// there fills the node's 64 slots), then covers `STRIDE` bits.
    fn build(slot: &mut Sub, idx: usize, base: u32, routes: &[Route6], default: u32) {
        let skip = routes.iter().fold(MAX_SKIP, |k, r| {
            let common = ((r.0 ^ routes[0].0) << base).leading_zeros();
            k.min(common).min(u32::from(r.1).min(127) - base)
        });
        let mask = !(u32::MAX.checked_shr(skip).unwrap_or(0));
        let key = ((routes[0].0 << base) >> 96) as u32 & mask;
        if skip > 0 {
            slot.leaves.push(default);
        }
        let base = base + skip;
        let end = base + STRIDE;
        let mut leaf = [default; 64];
        let mut short: Vec<Route6> = routes
            .iter()
            .filter(|r| u32::from(r.1) <= end)
            .copied()
            .collect();
        short.sort_by_key(|r| r.1);
        for &(a, l, nh) in &short {
            let span = 1usize << (end - u32::from(l));
            let first = chunk(a, base) & !(span - 1);
            leaf[first..first + span].fill(nh);
        }
        // Groups of longer routes, one per child slot (contiguous: sorted).
        let mut groups: Vec<(usize, usize, usize)> = Vec::new();
        for (i, r) in routes.iter().enumerate() {
            if u32::from(r.1) <= end {
                continue;
            }
            let c = chunk(r.0, base);
            match groups.last_mut() {
                Some(g) if g.0 == c => g.2 = i + 1,
                _ => groups.push((c, i, i + 1)),
            }
        }
        let mut node = Node {
            base0: slot.leaves.len() as u32,
            base1: slot.nodes.len() as u32,
            key,
            mask,
            ..Node::default()
        };
        for (s, &v) in leaf.iter().enumerate() {
            if s == 0 || v != leaf[s - 1] {
                node.leafvec |= 1 << s;
                slot.leaves.push(v);
            }
        }
        for g in &groups {
            node.vector |= 1 << g.0;
        }
        if groups.is_empty() {
            node.base1 = leaf[0];
        }
        slot.nodes[idx] = node;
        let base1 = slot.nodes.len();
        slot.nodes.resize(base1 + groups.len(), Node::default());
        for (j, &(c, from, to)) in groups.iter().enumerate() {
            // Members of a group are not all longer than `end` (short ones
            // in between were skipped); pass only the longer ones.
            let sub: Vec<Route6> = routes[from..to]
                .iter()
                .filter(|r| u32::from(r.1) > end)
                .copied()
                .collect();
            Self::build(slot, base1 + j, end, &sub, leaf[c]);
        }
    }
}

impl Fib6 for Poptrie6 {
    fn update(&mut self, rib: &Rib<u128>, addr: u128, len: u8) {
        if len > 16 {
            self.rebuild(rib, (addr >> 112) as usize);
            return;
        }
        let (nh, d, pred): (u32, u8, fn(u8, u8) -> bool) = match rib.get(&(addr, len)) {
            Some(e) => (e.nh, len, |x, l| x <= l),
            None => {
                let (nh, d) = covering6(rib, addr, len);
                (nh, d, |x, l| x == l)
            }
        };
        let first = (addr >> 112) as usize;
        for s in first..first + (1usize << (16 - len)) {
            if pred(self.top[s].depth, len) {
                self.top[s].leaf = nh;
                self.top[s].depth = d;
                self.sync(s);
                if self.top[s].nnodes != 0 {
                    self.rebuild(rib, s);
                }
            }
        }
    }

    fn lookup(&self, addrs: &[u128], out: &mut [u32]) {
        for (a, o) in addrs.chunks(CHUNK6).zip(out.chunks_mut(CHUNK6)) {
            self.lookup_chunk(a, o);
        }
    }

    fn settle(&self) {
        huge_pages(&self.nodes, true);
        huge_pages(&self.leaves, true);
    }
}

/// Addresses [`Poptrie6::lookup_chunk`] walks together.
const CHUNK6: usize = 64;

impl Poptrie6 {
    /// Level-synchronous walk: every packet of the chunk advances one
    /// node per round (its skipped bits compared with the node's key, a
    /// mismatch ending the walk on the inherited leaf), and the next
    /// round's node (or the leaf) is
    /// prefetched, so the memory latency of one packet's walk overlaps the
    /// others'. The packets still walking are kept packed (their index,
    /// node and the address bits not yet used, left-aligned, so that a
    /// level's 6 bits are the top ones); a packet that reaches a leaf
    /// leaves the walk with the leaf's index in its `out`, and all leaves
    /// are read at the end. Indices out of range (which a consistent trie
    /// never holds) answer "no route": no bounds test calls a panic path.
    #[inline]
    fn lookup_chunk(&self, addrs: &[u128], out: &mut [u32]) {
        // Indices into these arrays are taken modulo their length (no
        // bounds test: none of them exceeds the chunk's length anyway).
        let mut res = [0u32; CHUNK6];
        let mut ai = [0u8; CHUNK6];
        let mut an = [0u32; CHUNK6];
        let mut ar = [0u128; CHUNK6];
        let mut done = [0u8; CHUNK6];
        let first = &self.first[..TOP];
        for &a in addrs {
            prefetch(&first[(a >> 112) as usize]);
        }
        let nodes = self.nodes.as_ptr();
        let leaves = self.leaves.as_ptr();
        let mut na = 0;
        for (i, (&a, o)) in addrs.iter().zip(&mut res).enumerate() {
            let [leaf, root] = first[(a >> 112) as usize];
            *o = leaf;
            if root != 0 {
                prefetch(nodes.wrapping_add(root as usize - 1));
                ai[na % CHUNK6] = i as u8;
                an[na % CHUNK6] = root - 1;
                ar[na % CHUNK6] = a << 16;
                na += 1;
            }
        }
        let mut nd = 0;
        while na > 0 {
            let mut k = 0;
            for j in 0..na.min(CHUNK6) {
                let (i, r) = (usize::from(ai[j]), ar[j]);
                let Some(n) = self.nodes.get(an[j] as usize) else {
                    res[i % CHUNK6] = 0;
                    continue;
                };
                // The skipped bits are the top ones of `r`, then the
                // level's 6 bits `c`; shifting a bitmap left by `63 - c`
                // keeps its bits up to `c`, the top one being bit `c`'s.
                let miss = ((r >> 96) as u32 ^ n.key) & n.mask != 0;
                let r = r << n.mask.count_ones();
                let s = (!(r >> 64) as u64) >> 58;
                let v = n.vector << s;
                if (v as i64) < 0 && !miss {
                    let ni = n.base1.wrapping_add(v.count_ones()).wrapping_sub(1);
                    prefetch(nodes.wrapping_add(ni as usize));
                    ai[k % CHUNK6] = i as u8;
                    an[k % CHUNK6] = ni;
                    ar[k % CHUNK6] = r << STRIDE;
                    k += 1;
                } else if n.vector == 0 && n.leafvec == 1 && !miss {
                    // A node without children whose slots all hold one
                    // leaf holds it itself: no leaf to read.
                    res[i % CHUNK6] = n.base1;
                } else {
                    // A miss in the skipped bits takes the inherited leaf,
                    // stored just before the node's runs.
                    let l = if miss {
                        0
                    } else {
                        (n.leafvec << s).count_ones()
                    };
                    let li = n.base0.wrapping_add(l).wrapping_sub(1);
                    prefetch(leaves.wrapping_add(li as usize));
                    res[i % CHUNK6] = li;
                    done[nd % CHUNK6] = i as u8;
                    nd += 1;
                }
            }
            na = k;
        }
        for &i in &done[..nd.min(CHUNK6)] {
            let o = &mut res[usize::from(i) % CHUNK6];
            *o = self.leaves.get(*o as usize).copied().unwrap_or(0);
        }
        for (o, &r) in out.iter_mut().zip(&res) {
            *o = r;
        }
    }
}

// ---------------------------------------------------------------------
// Reference: a binary trie.

/// The reference implementation: a binary trie, one address bit per
/// level, walked bit by bit remembering the last next hop seen. Used for
/// both families (`width` 32 or 128; addresses left-aligned in a `u128`).
pub struct BinTrie {
    width: u8,
    child: Vec<[u32; 2]>,
    nh: Vec<u32>,
}

impl BinTrie {
    /// An empty trie over `width`-bit addresses.
    pub fn new(width: u8) -> Self {
        BinTrie {
            width,
            child: vec![[0, 0]],
            nh: vec![0],
        }
    }

    fn set(&mut self, addr: u128, len: u8, nh: u32) {
        let mut n = 0usize;
        for i in 0..u32::from(len) {
            let b = (addr >> (127 - i) & 1) as usize;
            if self.child[n][b] == 0 {
                self.child.push([0, 0]);
                self.nh.push(0);
                self.child[n][b] = (self.child.len() - 1) as u32;
            }
            n = self.child[n][b] as usize;
        }
        self.nh[n] = nh;
    }

    fn get(&self, addr: u128) -> u32 {
        let mut n = 0usize;
        let mut best = self.nh[0];
        for i in 0..u32::from(self.width) {
            let b = (addr >> (127 - i) & 1) as usize;
            n = self.child[n][b] as usize;
            if n == 0 {
                break;
            }
            if self.nh[n] != 0 {
                best = self.nh[n];
            }
        }
        best
    }
}

impl Fib4 for BinTrie {
    fn update(&mut self, rib: &Rib<u32>, addr: u32, len: u8) {
        let nh = rib.get(&(addr, len)).map_or(0, |e| e.nh);
        self.set(u128::from(addr) << 96, len, nh);
    }

    fn lookup(&self, addrs: &[u32], out: &mut [u32]) {
        for (&a, o) in addrs.iter().zip(out.iter_mut()) {
            *o = self.get(u128::from(a) << 96);
        }
    }
}

impl Fib6 for BinTrie {
    fn update(&mut self, rib: &Rib<u128>, addr: u128, len: u8) {
        let nh = rib.get(&(addr, len)).map_or(0, |e| e.nh);
        self.set(addr, len, nh);
    }

    fn lookup(&self, addrs: &[u128], out: &mut [u32]) {
        for (&a, o) in addrs.iter().zip(out.iter_mut()) {
            *o = self.get(a);
        }
    }
}

/// Where a run of `new_len` entries replacing the run of `old_n` at `old0`
/// goes in an array of `len`: over the old run where it fits, else at the end.
fn slot_for(len: usize, old0: u32, old_n: u32, new_len: usize) -> usize {
    if new_len <= old_n as usize {
        old0 as usize
    } else {
        len
    }
}

/// Store `new` at `at` (from [`slot_for`]) in `arena`, replacing a run of
/// `old_n` entries, and count the entries that became dead in `dead`.
fn put<T: Copy>(arena: &mut Vec<T>, dead: &mut usize, at: usize, old_n: u32, new: &[T]) {
    if at == arena.len() {
        arena.extend_from_slice(new);
        *dead += old_n as usize;
    } else {
        arena[at..at + new.len()].copy_from_slice(new);
        *dead += old_n as usize - new.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Many routes in a few first-level slots, added and removed in a
    /// mixed order: the shared-array trie (subtries rewritten in place,
    /// appended, compacted) answers as the binary trie throughout.
    #[test]
    fn poptrie_arena_matches_binary_trie() {
        let mut x = 0x1234_5678_9abc_def0_u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut rib: Rib<u128> = Rib::new();
        let (mut fast, mut slow) = (Poptrie6::new(), BinTrie::new(128));
        let mut added = Vec::new();
        for step in 0..600u32 {
            let remove = step % 3 == 2 && !added.is_empty();
            let (addr, len) = if remove {
                added.swap_remove(next() as usize % added.len())
            } else {
                let slot = 0x2001_0000_u128 + u128::from(next() % 4);
                let len = 8 + (next() % 57) as u8;
                let a = (slot << 96 | u128::from(next()) << 32) & mask6(len);
                added.push((a, len));
                (a, len)
            };
            if remove {
                rib.remove(&(addr, len));
            } else {
                rib.insert(
                    (addr, len),
                    RibEntry {
                        gw: 0,
                        port: 0,
                        nh: step + 1,
                    },
                );
            }
            Fib6::update(&mut fast, &rib, addr, len);
            Fib6::update(&mut slow, &rib, addr, len);
            if step % 100 == 99 {
                let probes: Vec<u128> = (0..300)
                    .map(|i| {
                        let (a, l) = added[i % added.len()];
                        a | u128::from(next()) & !mask6(l)
                    })
                    .collect();
                let (mut f, mut s) = (vec![0; 300], vec![0; 300]);
                fast.lookup(&probes, &mut f);
                Fib6::lookup(&slow, &probes, &mut s);
                assert_eq!(f, s, "after step {step}");
            }
        }
        assert!(fast.nodes() > 0 && fast.nodes() <= fast.nodes.len());
        assert!(2 * fast.dead_nodes <= fast.nodes.len());
    }

    /// Path compression: routes that split a long skipped path at
    /// various bits (inside a node's skipped bits, at its 6-bit chunk, past
    /// [`MAX_SKIP`]) are added and removed one by one; after each change,
    /// addresses that differ from each route in one bit (so in every
    /// skipped bit, and in the chunks) and hosts inside each route answer
    /// as the binary trie, with covering routes of /8 and /16 so that a
    /// miss in the skipped bits has a leaf to inherit.
    #[test]
    fn poptrie_skips_match_binary_trie() {
        let a0: u128 = 0x2001_0db8_1234_5678_9abc_def0_1357_9bdf;
        let mut routes = vec![
            (a0 & mask6(8), 8),
            (a0 & mask6(16), 16),
            (a0 & mask6(100), 100),
        ];
        // Split the /100 at bit `p` with a route of length `l`.
        for (p, l) in [
            (17, 64),
            (30, 31),
            (47, 48),
            (48, 56),
            (53, 60),
            (66, 128),
            (90, 99),
        ] {
            routes.push(((a0 ^ 1 << (127 - p)) & mask6(l), l));
        }
        routes.push((a0 & mask6(40), 40));
        let mut rib: Rib<u128> = Rib::new();
        let (mut fast, mut slow) = (Poptrie6::new(), BinTrie::new(128));
        let check = |fast: &Poptrie6, slow: &BinTrie, what: &str| {
            let mut probes = Vec::new();
            for &(a, l) in &routes {
                probes.extend((0..128).map(|p| a ^ 1 << p));
                probes.push(a | !mask6(l) & 0x5555_5555_5555_5555_5555_5555_5555_5555);
            }
            let (mut f, mut s) = (vec![0; probes.len()], vec![0; probes.len()]);
            fast.lookup(&probes, &mut f);
            Fib6::lookup(slow, &probes, &mut s);
            assert_eq!(f, s, "{what}");
        };
        for (k, &(a, l)) in routes.iter().enumerate() {
            let e = RibEntry {
                gw: 0,
                port: 0,
                nh: k as u32 + 1,
            };
            rib.insert((a, l), e);
            Fib6::update(&mut fast, &rib, a, l);
            Fib6::update(&mut slow, &rib, a, l);
            check(&fast, &slow, &format!("after adding route {k}"));
        }
        for k in [2, 5, 0, 9, 3, 7, 1, 4, 6, 8, 10] {
            let (a, l) = routes[k];
            rib.remove(&(a, l));
            Fib6::update(&mut fast, &rib, a, l);
            Fib6::update(&mut slow, &rib, a, l);
            check(&fast, &slow, &format!("after removing route {k}"));
        }
    }
}

//! The compiled classifier: rules turned into boxes over five dimensions
//! (source, destination, protocol, source port, destination port) and a
//! HyperSplit-style decision tree over those boxes.
//!
//! Each rule's expression is put into disjunctive normal form. Tests on the
//! five dimensions (and their negations) become intervals; everything else
//! (TOS, TTL, TCP flags, `ip[..]` bytes, non-prefix masks...) stays as a
//! residual conjunction evaluated only when the box matches. A rule whose
//! normal form would exceed [`MAX_TERMS`] boxes is kept whole: one box
//! covering everything, with the rule's expression as residual. The result
//! is exact: the first rule with a matching box (and residual) is the first
//! rule whose expression holds, which is Click's first-match semantics.

use super::cache::{DecisionCache, Probe};
use super::expr::{Atom, Base, Dim, Expr, PacketView, DIM_MAX, NDIMS, NO_PORT};

/// Most boxes one rule may expand into before it is kept whole.
pub const MAX_TERMS: usize = 64;
/// Leaves hold at most this many boxes unless no split separates them.
const BINTH: usize = 8;
/// Splits that leave one side as large as the node (they still shorten the
/// other side's leaves) are allowed while the tree has fewer nodes than
/// this many per box.
const NODES_PER_BOX: usize = 16;
/// ... and only in nodes of at most this many boxes (bounds the build time
/// when many boxes overlap everywhere).
const RELAX_MAX: usize = 512;
/// Nodes with at most this many boxes drop shadowed boxes.
const SHADOW_MAX: usize = 64;
/// Weight of a box copied to both sides against the larger side.
/// Split cost: `SIDE_WEIGHT` per box on the larger side plus one per box
/// copied to both sides.
const SIDE_WEIGHT: usize = 4;
/// Deepest node.
const MAX_DEPTH: usize = 40;
/// No residual.
const NONE: u32 = u32::MAX;
/// Packets whose tree walks `lookup_batch` and `lookup_cached` run in
/// lock step.
const GROUP: usize = 16;

type Ranges = Vec<(u32, u32)>;

#[derive(Clone)]
struct Conj {
    dims: [Ranges; NDIMS],
    resid: Vec<Expr>,
}

fn full() -> [Ranges; NDIMS] {
    std::array::from_fn(|d| vec![(0, DIM_MAX[d])])
}

fn intersect(a: &Ranges, b: &Ranges) -> Ranges {
    let mut out = Vec::new();
    for &(alo, ahi) in a {
        for &(blo, bhi) in b {
            let lo = alo.max(blo);
            let hi = ahi.min(bhi);
            if lo <= hi {
                out.push((lo, hi));
            }
        }
    }
    out.sort_unstable();
    out
}

fn complement(r: &Ranges, max: u32) -> Ranges {
    let mut out = Vec::new();
    let mut next: u64 = 0;
    for &(lo, hi) in r {
        if u64::from(lo) > next {
            out.push((next as u32, lo - 1));
        }
        next = u64::from(hi) + 1;
    }
    if next <= u64::from(max) {
        out.push((next as u32, max));
    }
    out
}

impl Conj {
    fn all() -> Conj {
        Conj {
            dims: full(),
            resid: Vec::new(),
        }
    }

    fn and(&self, o: &Conj) -> Option<Conj> {
        let mut dims = full();
        for (d, slot) in dims.iter_mut().enumerate() {
            *slot = intersect(&self.dims[d], &o.dims[d]);
            if slot.is_empty() {
                return None;
            }
        }
        let mut resid = self.resid.clone();
        resid.extend(o.resid.iter().cloned());
        Some(Conj { dims, resid })
    }
}

/// Disjunctive normal form of `e` (negated if `neg`), or `None` if it has
/// more than [`MAX_TERMS`] terms.
fn dnf(e: &Expr, neg: bool) -> Option<Vec<Conj>> {
    Some(match e {
        Expr::True | Expr::False => {
            if matches!(e, Expr::True) != neg {
                vec![Conj::all()]
            } else {
                vec![]
            }
        }
        Expr::Atom(Atom::Range { dim, lo, hi }) => {
            let d = *dim as usize;
            let r = vec![(*lo, (*hi).min(DIM_MAX[d]))];
            let mut c = Conj::all();
            c.dims[d] = if neg { complement(&r, DIM_MAX[d]) } else { r };
            if c.dims[d].is_empty() {
                vec![]
            } else {
                vec![c]
            }
        }
        // "First fragment": under the tree's precondition (see
        // `PacketView::key`), exactly "source port dimension is a port".
        Expr::Atom(Atom::Field {
            base: Base::Ip,
            off: 4,
            shift: 0,
            mask: 0x1FFF,
            lo: 0,
            hi: 0,
        }) => {
            let r = vec![(0, NO_PORT - 1)];
            let mut c = Conj::all();
            c.dims[Dim::Sport as usize] = if neg { complement(&r, NO_PORT) } else { r };
            vec![c]
        }
        Expr::Atom(a) => {
            let mut c = Conj::all();
            let e = Expr::Atom(a.clone());
            c.resid.push(if neg { e.negate() } else { e });
            vec![c]
        }
        Expr::Not(e) => dnf(e, !neg)?,
        Expr::And(v) | Expr::Or(v) => {
            let conj = matches!(e, Expr::And(_)) != neg;
            if conj {
                let mut acc = vec![Conj::all()];
                for x in v {
                    let t = dnf(x, neg)?;
                    let mut next = Vec::new();
                    for a in &acc {
                        for b in &t {
                            if let Some(c) = a.and(b) {
                                next.push(c);
                            }
                        }
                        if next.len() > MAX_TERMS {
                            return None;
                        }
                    }
                    acc = next;
                }
                acc
            } else {
                let mut acc = Vec::new();
                for x in v {
                    acc.extend(dnf(x, neg)?);
                    if acc.len() > MAX_TERMS {
                        return None;
                    }
                }
                acc
            }
        }
        Expr::Cond(c, a, b) => {
            let alt = Expr::Or(vec![
                Expr::And(vec![(**c).clone(), (**a).clone()]),
                Expr::And(vec![Expr::Not(c.clone()), (**b).clone()]),
            ]);
            dnf(&alt, neg)?
        }
    })
}

#[derive(Clone, Copy, Debug)]
struct Item {
    lo: [u32; NDIMS],
    hi: [u32; NDIMS],
    rule: u32,
    resid: u32,
}

impl Item {
    #[inline]
    fn contains(&self, k: &[u32; NDIMS]) -> bool {
        // Non-short-circuit: ten compares and no unpredictable branches.
        let mut ok = true;
        for ((lo, hi), x) in self.lo.iter().zip(&self.hi).zip(k) {
            ok &= (lo <= x) & (x <= hi);
        }
        ok
    }
}

#[derive(Clone, Copy, Debug)]
struct Node {
    /// Dimension split on (0 in leaves).
    dim: u16,
    /// 1 in leaves.
    leaf: u16,
    /// Keys `>= thresh` go to `child[1]`, others to `child[0]`. A leaf has
    /// threshold 0 and itself as both children, so walking on from a leaf
    /// stays there (lock-step batch walks need no per-packet branch).
    thresh: u32,
    child: [u32; 2],
}

/// Statistics of a compiled classifier.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Rules.
    pub rules: usize,
    /// Boxes after normal-form expansion.
    pub boxes: usize,
    /// Rules kept whole (too many terms).
    pub opaque: usize,
    /// Tree nodes (internal and leaves).
    pub nodes: usize,
    /// Boxes stored in leaves (with replication).
    pub leaf_entries: usize,
    /// Longest root-to-leaf path.
    pub depth: usize,
    /// Longest leaf.
    pub max_leaf: usize,
}

/// A compiled rule set: `lookup` returns the first matching rule.
#[derive(Debug, Clone)]
pub struct Classifier {
    rules: Vec<Expr>,
    resid: Vec<Expr>,
    /// The binary tree, two levels per node.
    quads: Vec<Quad>,
    /// For each quad, its range of `items` (leaves only).
    ranges: Vec<[u32; 2]>,
    items: Vec<Item>,
    stats: Stats,
}

/// Two levels of the binary tree in one 32-byte node: `b0 = key[d0] >=
/// t0`, then `b1 = key[d1[b0]] >= t1[b0]`, next is `child[2 * b0 + b1]`.
/// A binary leaf at the second level has threshold 0 (so `b1` is 1) and is
/// both children; a leaf quad has itself as every child, so walking on
/// from a leaf stays there.
#[derive(Clone, Copy, Debug)]
struct Quad {
    t0: u32,
    t1: [u32; 2],
    child: [u32; 4],
    d0: u8,
    d1: [u8; 2],
    leaf: u8,
}

/// Turn binary node `n` (and its children) into quads; returns its index.
fn quads(
    nodes: &[Node],
    ranges: &[[u32; 2]],
    n: usize,
    out: &mut Vec<Quad>,
    qr: &mut Vec<[u32; 2]>,
) -> u32 {
    let me = out.len() as u32;
    out.push(Quad {
        t0: 0,
        t1: [0, 0],
        child: [me; 4],
        d0: 0,
        d1: [0, 0],
        leaf: 1,
    });
    qr.push(ranges[n]);
    let nd = nodes[n];
    if nd.leaf != 0 {
        return me;
    }
    let mut q = Quad {
        t0: nd.thresh,
        t1: [0, 0],
        child: [0; 4],
        d0: nd.dim as u8,
        d1: [0, 0],
        leaf: 0,
    };
    for s in 0..2 {
        let c = nd.child[s] as usize;
        let cn = nodes[c];
        if cn.leaf != 0 {
            let l = quads(nodes, ranges, c, out, qr);
            q.child[2 * s] = l;
            q.child[2 * s + 1] = l;
        } else {
            q.d1[s] = cn.dim as u8;
            q.t1[s] = cn.thresh;
            q.child[2 * s] = quads(nodes, ranges, cn.child[0] as usize, out, qr);
            q.child[2 * s + 1] = quads(nodes, ranges, cn.child[1] as usize, out, qr);
        }
    }
    out[me as usize] = q;
    me
}

impl Quad {
    #[inline(always)]
    fn step(&self, k: &[u32; NDIMS]) -> u32 {
        let b0 = usize::from(k[usize::from(self.d0)] >= self.t0);
        let b1 = usize::from(k[usize::from(self.d1[b0])] >= self.t1[b0]);
        self.child[2 * b0 + b1]
    }
}

struct Builder {
    nodes: Vec<Node>,
    ranges: Vec<[u32; 2]>,
    items: Vec<Item>,
    depth: usize,
    scratch: (Vec<u32>, Vec<u32>),
    node_budget: usize,
}

impl Builder {
    fn build(
        &mut self,
        mut set: Vec<Item>,
        lo: [u32; NDIMS],
        hi: [u32; NDIMS],
        depth: usize,
    ) -> u32 {
        self.depth = self.depth.max(depth);
        // Clip every box to the node region: containment tests below and
        // leaf scans then only compare what still matters.
        for it in &mut set {
            for d in 0..NDIMS {
                it.lo[d] = it.lo[d].max(lo[d]);
                it.hi[d] = it.hi[d].min(hi[d]);
            }
        }
        // First match: nothing after an unconditional box covering the region.
        if let Some(i) = set.iter().position(|it| {
            it.resid == NONE && (0..NDIMS).all(|d| it.lo[d] == lo[d] && hi[d] == it.hi[d])
        }) {
            set.truncate(i + 1);
        }
        // Small sets: drop boxes shadowed (inside the node region) by an
        // earlier unconditional box; they can never be the first match here.
        if set.len() <= SHADOW_MAX {
            let mut keep: Vec<Item> = Vec::with_capacity(set.len());
            for it in &set {
                let shadowed = keep.iter().any(|k| {
                    k.resid == NONE
                        && (0..NDIMS).all(|d| k.lo[d] <= it.lo[d] && it.hi[d] <= k.hi[d])
                });
                if !shadowed {
                    keep.push(*it);
                }
            }
            set = keep;
        }
        let me = self.nodes.len() as u32;
        self.nodes.push(Node {
            dim: 0,
            leaf: 1,
            thresh: 0,
            child: [me, me],
        });
        self.ranges.push([0, 0]);
        let split = if set.len() > BINTH && depth < MAX_DEPTH {
            best_split(
                &set,
                &lo,
                &hi,
                &mut self.scratch,
                self.nodes.len() < self.node_budget && set.len() <= RELAX_MAX,
            )
        } else {
            None
        };
        match split {
            None => {
                let start = self.items.len() as u32;
                self.items.extend_from_slice(&set);
                self.ranges[me as usize] = [start, self.items.len() as u32];
            }
            Some((d, p)) => {
                let left: Vec<Item> = set.iter().filter(|it| it.lo[d] < p).copied().collect();
                let right: Vec<Item> = set.iter().filter(|it| it.hi[d] >= p).copied().collect();
                drop(set);
                let mut lhi = hi;
                lhi[d] = p - 1;
                let mut rlo = lo;
                rlo[d] = p;
                let a = self.build(left, lo, lhi, depth + 1);
                let b = self.build(right, rlo, hi, depth + 1);
                self.nodes[me as usize] = Node {
                    dim: d as u16,
                    leaf: 0,
                    thresh: p,
                    child: [a, b],
                };
            }
        }
        me
    }
}

/// The dimension and point with the least cost: the larger side (weighted
/// by [`SIDE_WEIGHT`]) plus the boxes copied to both sides. Every end point
/// is a candidate, scanned in one merged pass over the sorted starts and
/// ends. `None` if no point makes both sides smaller, unless `relax` (then
/// any split that shortens one side will do). Boxes are already clipped to
/// the node region.
fn best_split(
    set: &[Item],
    lo: &[u32; NDIMS],
    hi: &[u32; NDIMS],
    scratch: &mut (Vec<u32>, Vec<u32>),
    relax: bool,
) -> Option<(usize, u32)> {
    let n = set.len();
    let mut best: Option<(usize, usize, usize, u32)> = None; // (cost, max, dim, point)
    let (los, his) = scratch;
    for d in 0..NDIMS {
        if lo[d] == hi[d] {
            continue;
        }
        los.clear();
        his.clear();
        los.extend(set.iter().map(|it| it.lo[d]));
        his.extend(set.iter().map(|it| it.hi[d]));
        los.sort_unstable();
        his.sort_unstable();
        // Candidates p: a start above lo[d], or an end + 1 at most hi[d].
        // l(p) = starts < p, r(p) = n - ends < p.
        let (mut i, mut j) = (0usize, 0usize);
        let mut last = lo[d];
        loop {
            let cs = los[i..].iter().find(|&&x| x > last).copied();
            let ce = his.get(j).filter(|&&x| x < hi[d]).map(|&x| x + 1);
            let p = match (cs, ce) {
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) => a,
                (None, Some(b)) => b,
                (None, None) => break,
            };
            last = p;
            while i < n && los[i] < p {
                i += 1;
            }
            while j < n && his[j] < p {
                j += 1;
            }
            let (l, r) = (i, n - j);
            let m = l.max(r);
            let cost = SIDE_WEIGHT * m + (l + r - n);
            if best.is_none_or(|b| (cost, m) < (b.0, b.1)) {
                best = Some((cost, m, d, p));
            }
        }
    }
    let (_, m, d, p) = best?;
    if m >= n && !relax {
        return None;
    }
    Some((d, p))
}

impl Classifier {
    /// Compile `rules` (first match wins).
    pub fn new(rules: Vec<Expr>) -> Classifier {
        let mut resid = Vec::new();
        let mut items = Vec::new();
        let mut stats = Stats {
            rules: rules.len(),
            ..Stats::default()
        };
        for (ri, e) in rules.iter().enumerate() {
            let conjs = dnf(e, false);
            let boxes = conjs.as_ref().map_or(0, |cs| {
                cs.iter()
                    .map(|c| c.dims.iter().map(Vec::len).product::<usize>())
                    .sum()
            });
            match conjs {
                Some(cs) if boxes <= MAX_TERMS => {
                    for c in cs {
                        let r = match c.resid.len() {
                            0 => NONE,
                            1 => {
                                resid.push(c.resid[0].clone());
                                (resid.len() - 1) as u32
                            }
                            _ => {
                                resid.push(Expr::And(c.resid.clone()));
                                (resid.len() - 1) as u32
                            }
                        };
                        expand(
                            &c.dims,
                            0,
                            &mut [0; NDIMS],
                            &mut [0; NDIMS],
                            &mut |lo, hi| {
                                items.push(Item {
                                    lo,
                                    hi,
                                    rule: ri as u32,
                                    resid: r,
                                })
                            },
                        );
                    }
                }
                _ => {
                    stats.opaque += 1;
                    resid.push(e.clone());
                    items.push(Item {
                        lo: [0; NDIMS],
                        hi: DIM_MAX,
                        rule: ri as u32,
                        resid: (resid.len() - 1) as u32,
                    });
                }
            }
        }
        stats.boxes = items.len();
        let mut b = Builder {
            nodes: Vec::new(),
            ranges: Vec::new(),
            items: Vec::new(),
            depth: 0,
            scratch: (Vec::new(), Vec::new()),
            node_budget: NODES_PER_BOX * items.len() + 1024,
        };
        b.build(items, [0; NDIMS], DIM_MAX, 0);
        stats.nodes = b.nodes.len();
        let (mut qs, mut qr) = (Vec::new(), Vec::new());
        quads(&b.nodes, &b.ranges, 0, &mut qs, &mut qr);
        stats.leaf_entries = b.items.len();
        stats.depth = b.depth;
        stats.max_leaf = b
            .ranges
            .iter()
            .map(|r| (r[1] - r[0]) as usize)
            .max()
            .unwrap_or(0);
        Classifier {
            rules,
            resid,
            quads: qs,
            ranges: qr,
            items: b.items,
            stats,
        }
    }

    /// The rules, in order.
    pub fn rules(&self) -> &[Expr] {
        &self.rules
    }

    /// Size and shape.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The first rule matching `p`.
    #[inline]
    pub fn lookup(&self, p: &PacketView<'_>) -> Option<usize> {
        match p.key() {
            Some(k) => self.lookup_key(&k, p),
            None => super::expr::linear_match(&self.rules, p),
        }
    }

    /// The first matching rule of each packet of `views`, appended to
    /// `out` in order. Keys are extracted for a group of packets at once
    /// and the group walks the tree in lock step, without a branch per
    /// packet and level, so the memory accesses of different packets
    /// overlap.
    pub fn lookup_batch<'a>(
        &self,
        views: impl IntoIterator<Item = PacketView<'a>>,
        out: &mut Vec<Option<usize>>,
    ) {
        let mut it = views.into_iter();
        let mut group = [PacketView::ip(&[]); GROUP];
        loop {
            let mut n = 0;
            while n < GROUP {
                match it.next() {
                    Some(v) => {
                        group[n] = v;
                        n += 1;
                    }
                    None => break,
                }
            }
            if n == 0 {
                return;
            }
            let chunk = &group[..n];
            let mut keys = [[0u32; NDIMS]; GROUP];
            let mut node = [0u32; GROUP];
            let mut ok = [false; GROUP];
            for (i, v) in chunk.iter().enumerate() {
                if let Some(k) = v.key() {
                    keys[i] = k;
                    ok[i] = true;
                }
            }
            self.walk(&keys[..n], &mut node[..n]);
            for i in 0..n {
                let p = &chunk[i];
                out.push(if ok[i] {
                    let [a, b] = self.ranges[node[i] as usize];
                    self.scan(a as usize, b as usize, &keys[i], p).0
                } else {
                    super::expr::linear_match(&self.rules, p)
                });
            }
        }
    }

    /// The first matching rule of each of `items` (seen through `view`),
    /// mapped through `decide` and appended to `out` in order, with the decisions the tree makes from
    /// the key alone remembered in `cache` (which must belong to this rule
    /// set: clear it when the rules change): a packet whose key is cached
    /// skips the tree. For each group of packets the keys are packed and
    /// their cache sets prefetched first, then probed; the misses walk the
    /// tree in lock step as in [`lookup_batch`](Self::lookup_batch).
    pub fn lookup_cached<T, D: Copy + Default>(
        &self,
        items: &[T],
        view: impl for<'a> Fn(&'a T) -> PacketView<'a>,
        decide: impl Fn(Option<usize>) -> D,
        out: &mut Vec<D>,
        cache: &mut DecisionCache,
    ) {
        if !cache.usable(self.rules.len()) {
            // Turned off (or too many rules for its entries): the tree alone.
            let mut tmp = std::mem::take(&mut cache.scratch);
            tmp.clear();
            self.lookup_batch(items.iter().map(&view), &mut tmp);
            out.extend(tmp.iter().map(|&r| decide(r)));
            cache.scratch = tmp;
            return;
        }
        for chunk in items.chunks(GROUP) {
            let n = chunk.len();
            let mut probes = [Probe::default(); GROUP];
            let mut keyed = 0u32;
            for (i, t) in chunk.iter().enumerate() {
                if let Some(p) = Probe::of(&view(t)) {
                    probes[i] = p;
                    cache.prefetch(&probes[i]);
                    keyed |= 1 << i;
                }
            }
            let mut res = [D::default(); GROUP];
            let mut miss = [0u8; GROUP];
            let mut m = 0;
            for i in 0..n {
                if keyed >> i & 1 == 0 {
                    res[i] = decide(super::expr::linear_match(&self.rules, &view(&chunk[i])));
                    continue;
                }
                match cache.get(&probes[i]) {
                    Some(d) => res[i] = decide(d),
                    None => {
                        miss[m] = i as u8;
                        m += 1;
                    }
                }
            }
            cache.hits += u64::from(keyed.count_ones()) - m as u64;
            cache.misses += m as u64;
            if m > 0 {
                let mut keys = [[0u32; NDIMS]; GROUP];
                for j in 0..m {
                    keys[j] = probes[usize::from(miss[j])].key();
                }
                let mut node = [0u32; GROUP];
                self.walk(&keys[..m], &mut node[..m]);
                for j in 0..m {
                    let i = usize::from(miss[j]);
                    let [a, b] = self.ranges[node[j] as usize];
                    let (r, pure) = self.scan(a as usize, b as usize, &keys[j], &view(&chunk[i]));
                    res[i] = decide(r);
                    if pure {
                        cache.put(&probes[i], r);
                    }
                }
            }
            out.extend_from_slice(&res[..n]);
        }
    }

    /// Walk `keys` down the tree in lock step, from the nodes in `node`
    /// (the root: 0) to their leaves, without a branch per packet and
    /// level, so that the node loads of different packets overlap.
    #[inline(always)]
    fn walk(&self, keys: &[[u32; NDIMS]], node: &mut [u32]) {
        loop {
            let mut all_leaves = 1u8;
            for (n, k) in node.iter_mut().zip(keys) {
                let q = &self.quads[*n as usize];
                all_leaves &= q.leaf;
                *n = q.step(k);
            }
            if all_leaves == 1 {
                break;
            }
        }
    }

    /// The first rule of leaf items `a..b` matching key `k` (and `p`, for
    /// residuals), and whether that answer came from the key alone (no
    /// residual was evaluated), which makes it cacheable.
    #[inline]
    fn scan(
        &self,
        a: usize,
        b: usize,
        k: &[u32; NDIMS],
        p: &PacketView<'_>,
    ) -> (Option<usize>, bool) {
        // Containment of up to 32 boxes as a bit mask without branches,
        // then the first box (whose residual holds) in rule order.
        let mut pure = true;
        for group in self.items[a..b].chunks(32) {
            let mut mask = 0u32;
            for (i, it) in group.iter().enumerate() {
                mask |= u32::from(it.contains(k)) << i;
            }
            while mask != 0 {
                let it = &group[mask.trailing_zeros() as usize];
                if it.resid == NONE {
                    return (Some(it.rule as usize), pure);
                }
                pure = false;
                if p.eval(&self.resid[it.resid as usize]) {
                    return (Some(it.rule as usize), false);
                }
                mask &= mask - 1;
            }
        }
        (None, pure)
    }

    #[inline]
    fn lookup_key(&self, k: &[u32; NDIMS], p: &PacketView<'_>) -> Option<usize> {
        let mut n = 0usize;
        loop {
            let q = &self.quads[n];
            if q.leaf != 0 {
                let [a, b] = self.ranges[n];
                return self.scan(a as usize, b as usize, k, p).0;
            }
            n = q.step(k) as usize;
        }
    }
}

fn expand(
    dims: &[Ranges; NDIMS],
    d: usize,
    lo: &mut [u32; NDIMS],
    hi: &mut [u32; NDIMS],
    f: &mut impl FnMut([u32; NDIMS], [u32; NDIMS]),
) {
    if d == NDIMS {
        f(*lo, *hi);
        return;
    }
    for &(l, h) in &dims[d] {
        lo[d] = l;
        hi[d] = h;
        expand(dims, d + 1, lo, hi, f);
    }
}

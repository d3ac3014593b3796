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

use super::expr::{Atom, Base, Dim, Expr, PacketView, DIM_MAX, NDIMS, NO_PORT};

/// Most boxes one rule may expand into before it is kept whole.
pub const MAX_TERMS: usize = 64;
/// Leaves hold at most this many boxes unless no split separates them.
const BINTH: usize = 8;
/// No residual.
const NONE: u32 = u32::MAX;

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
        (0..NDIMS).all(|d| self.lo[d] <= k[d] && k[d] <= self.hi[d])
    }
}

#[derive(Clone, Copy, Debug)]
struct Node {
    /// Dimension, or `LEAF`.
    dim: u32,
    /// Keys `>= thresh` go to `b`, others to `a`.
    thresh: u32,
    a: u32,
    b: u32,
}

const LEAF: u32 = u32::MAX;

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
}

/// A compiled rule set: `lookup` returns the first matching rule.
#[derive(Debug, Clone)]
pub struct Classifier {
    rules: Vec<Expr>,
    resid: Vec<Expr>,
    nodes: Vec<Node>,
    items: Vec<Item>,
    stats: Stats,
}

struct Builder {
    nodes: Vec<Node>,
    items: Vec<Item>,
    depth: usize,
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
        // First match: nothing after an unconditional box covering the region.
        if let Some(i) = set.iter().position(|it| {
            it.resid == NONE && (0..NDIMS).all(|d| it.lo[d] <= lo[d] && hi[d] <= it.hi[d])
        }) {
            set.truncate(i + 1);
        }
        let me = self.nodes.len() as u32;
        self.nodes.push(Node {
            dim: LEAF,
            thresh: 0,
            a: 0,
            b: 0,
        });
        let split = if set.len() > BINTH && depth < 64 {
            best_split(&set, &lo, &hi)
        } else {
            None
        };
        match split {
            None => {
                let start = self.items.len() as u32;
                self.items.extend(set.iter().map(|it| {
                    let mut it = *it;
                    for d in 0..NDIMS {
                        it.lo[d] = it.lo[d].max(lo[d]);
                        it.hi[d] = it.hi[d].min(hi[d]);
                    }
                    it
                }));
                self.nodes[me as usize] = Node {
                    dim: LEAF,
                    thresh: 0,
                    a: start,
                    b: self.items.len() as u32,
                };
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
                    dim: d as u32,
                    thresh: p,
                    a,
                    b,
                };
            }
        }
        me
    }
}

/// The dimension and point minimising the larger side; `None` if no point
/// separates anything.
fn best_split(set: &[Item], lo: &[u32; NDIMS], hi: &[u32; NDIMS]) -> Option<(usize, u32)> {
    let n = set.len();
    let mut best: Option<(usize, usize, usize, u32)> = None; // (max, sum, dim, point)
    let mut los = Vec::with_capacity(n);
    let mut his = Vec::with_capacity(n);
    for d in 0..NDIMS {
        if lo[d] == hi[d] {
            continue;
        }
        los.clear();
        his.clear();
        for it in set {
            los.push(it.lo[d].max(lo[d]));
            his.push(it.hi[d].min(hi[d]));
        }
        los.sort_unstable();
        his.sort_unstable();
        // Candidate points: starts above lo, ends+1 at most hi.
        let mut cands: Vec<u32> = los.iter().copied().filter(|&x| x > lo[d]).collect();
        cands.extend(his.iter().filter(|&&x| x < hi[d]).map(|&x| x + 1));
        if cands.is_empty() {
            continue;
        }
        cands.sort_unstable();
        cands.dedup();
        // Sample at most 64 candidates around the balance point.
        let step = (cands.len() / 64).max(1);
        for &p in cands.iter().step_by(step) {
            let l = los.partition_point(|&x| x < p);
            let r = n - his.partition_point(|&x| x < p);
            let m = l.max(r);
            let key = (m, l + r, d, p);
            if best.is_none_or(|b| (key.0, key.1) < (b.0, b.1)) {
                best = Some(key);
            }
        }
    }
    let (m, _, d, p) = best?;
    // Stop when no split makes both sides smaller.
    if m >= n {
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
            items: Vec::new(),
            depth: 0,
        };
        b.build(items, [0; NDIMS], DIM_MAX, 0);
        stats.nodes = b.nodes.len();
        stats.leaf_entries = b.items.len();
        stats.depth = b.depth;
        Classifier {
            rules,
            resid,
            nodes: b.nodes,
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

    #[inline]
    fn lookup_key(&self, k: &[u32; NDIMS], p: &PacketView<'_>) -> Option<usize> {
        let mut n = 0usize;
        loop {
            // SAFETY-free indexing: node indices are produced by the builder.
            let node = self.nodes[n];
            if node.dim == LEAF {
                for it in &self.items[node.a as usize..node.b as usize] {
                    if it.contains(k)
                        && (it.resid == NONE || p.eval(&self.resid[it.resid as usize]))
                    {
                        return Some(it.rule as usize);
                    }
                }
                return None;
            }
            n = if k[node.dim as usize] >= node.thresh {
                node.b
            } else {
                node.a
            } as usize;
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

//! IP routing table: longest-prefix match in a multibit trie.
//!
//! # Synopsis
//! `RadixIPLookup(ADDR1/MASK1 [GW1] OUT1, ADDR2/MASK2 [GW2] OUT2, ...)`
//!
//! # Ports
//! One push input; one or more push outputs (as many as the routes use).
//!
//! # Arguments
//! Each argument is a route: a destination prefix (`18.26.4.0/24`,
//! `18.26.4/24`, `18.26.4.0/255.255.255.0`, or a bare address meaning
//! `/32`), an optional gateway address (or `-`), and an output port. A
//! later route for the same prefix is ignored, as in Click.
//!
//! Each packet's destination address annotation (`DST_IP`) is looked up
//! with longest-prefix match; if the route has a gateway, the annotation is
//! set to it, and the packet leaves on the route's output. Packets without
//! a route are dropped (the first five are reported on standard error:
//! `RadixIPLookup: no route for ADDR`).
//!
//! # Handlers
//! - `table` (read): the routes, one a line, `ADDR/LEN GW OUT` separated by
//!   tabs as Click prints them (`-` for no gateway).
//! - `lookup` (read/write): Click's `lookup ADDR` read handler takes a
//!   parameter, which linerate's read handlers cannot: write an address,
//!   then read `OUT` or `OUT GW` (`-1` if no route).
//! - `add` (write): add a route `ADDR/MASK [GW] OUT`; fails with `conflict
//!   with existing route '...'` if the prefix has one.
//! - `set` (write): add or replace a route.
//! - `remove` (write): remove the route for `ADDR/MASK [GW OUT]`.
//! - `ctrl` (write): lines of `add ...`, `set ...`, `remove ...`, applied
//!   atomically (an error rolls back every line).
//!
//! # Example
//! ```click
//! rt :: RadixIPLookup(10.0.0.0/8 0, 10.1.0.0/16 10.1.0.1 1, 0/0 192.168.1.1 2);
//! rt[0] -> Discard; rt[1] -> Discard; rt[2] -> Discard;
//! ```
//!
//! # Implementation
//! A three-level multibit trie with strides 16, 8 and 8 (Click uses one
//! 256-way level and then 16-way levels, up to 7): a lookup reads at most
//! three slots, remembering the last route key seen, plus the default route.
//! Prefixes are expanded into the slots of the level where they end; each
//! slot stores the key and length of the longest prefix covering it, so
//! adding or removing a route touches only the slots of its own range
//! (a removal refills them from the next shorter prefix ending at the same
//! level, found in an exact-prefix hash map). The levels are flat arrays
//! (struct of arrays: keys, lengths, children); nothing is allocated per
//! packet. Routes live in a slot vector with a LIFO free list, so `table`
//! lists them in Click's order. Consecutive packets to the same address
//! reuse the previous result.

use super::routetable::{prefix_mask, IpRoute, RouteTable, RouteTableElement};
use linerate_runtime::{ConfigureCtx, Element, ElementClass};
use std::collections::HashMap;
use std::net::Ipv4Addr;

/// The `RadixIPLookup` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "RadixIPLookup",
    port_count: "1/-",
    processing: "h/h",
    doc: element_doc!("iproute/radixiplookup"),
    make,
};

/// One trie level: `n` slots per node, nodes stored back to back.
#[derive(Debug, Clone, Default)]
struct Level {
    /// Route key (slot index + 1) of the longest prefix covering the slot
    /// among those ending at this level; 0 for none.
    key: Vec<u32>,
    /// Prefix length of that route (0 for none).
    len: Vec<u8>,
    /// Child node index + 1 in the next level; 0 for none.
    child: Vec<u32>,
}

impl Level {
    fn add_node(&mut self, n: usize) -> u32 {
        let idx = self.key.len() / n;
        self.key.resize(self.key.len() + n, 0);
        self.len.resize(self.len.len() + n, 0);
        self.child.resize(self.child.len() + n, 0);
        idx as u32 + 1
    }
}

/// A longest-prefix-match table: a 16-8-8 multibit trie over route slots.
#[derive(Debug, Clone)]
pub struct RadixTable {
    routes: Vec<Option<IpRoute>>,
    free: Vec<u32>,
    exact: HashMap<(u32, u8), u32>,
    default_key: u32,
    levels: [Level; 3],
}

/// Bits resolved before each level, and the slots per node.
const BASE: [u8; 3] = [0, 16, 24];
const SLOTS: [usize; 3] = [1 << 16, 256, 256];

impl Default for RadixTable {
    fn default() -> Self {
        Self::new()
    }
}

impl RadixTable {
    /// An empty table.
    pub fn new() -> Self {
        let mut levels: [Level; 3] = Default::default();
        levels[0].add_node(SLOTS[0]);
        RadixTable {
            routes: Vec::new(),
            free: Vec::new(),
            exact: HashMap::new(),
            default_key: 0,
            levels,
        }
    }

    /// The level where a prefix of length `len` (1..=32) ends.
    fn level_of(len: u8) -> usize {
        match len {
            0..=16 => 0,
            17..=24 => 1,
            _ => 2,
        }
    }

    /// The node holding `addr` at `level`, creating nodes on the way if
    /// `create`. Returns the index of the node's first slot.
    fn node(&mut self, addr: u32, level: usize, create: bool) -> Option<usize> {
        let mut node = 0usize;
        for l in 0..level {
            let slot = node * SLOTS[l] + Self::index(addr, l);
            let mut c = self.levels[l].child[slot];
            if c == 0 {
                if !create {
                    return None;
                }
                c = self.levels[l + 1].add_node(SLOTS[l + 1]);
                self.levels[l].child[slot] = c;
            }
            node = c as usize - 1;
        }
        Some(node * SLOTS[level])
    }

    #[inline]
    fn index(addr: u32, level: usize) -> usize {
        match level {
            0 => (addr >> 16) as usize,
            1 => ((addr >> 8) & 0xff) as usize,
            _ => (addr & 0xff) as usize,
        }
    }

    /// The slot range (within the node) covered by prefix `addr/len`.
    fn range(addr: u32, len: u8, level: usize) -> (usize, usize) {
        let bits = match level {
            0 => 16,
            _ => 8,
        };
        let span = 1usize << (usize::from(BASE[level]) + bits - usize::from(len));
        let first = Self::index(addr, level) & !(span - 1);
        (first, span)
    }

    /// Store `key` for prefix `addr/len` in every slot it covers where no
    /// longer prefix is stored.
    fn install(&mut self, addr: u32, len: u8, key: u32) {
        let level = Self::level_of(len);
        let Some(base) = self.node(addr, level, true) else {
            return;
        };
        let (first, span) = Self::range(addr, len, level);
        let lv = &mut self.levels[level];
        for s in base + first..base + first + span {
            if lv.len[s] <= len {
                lv.key[s] = key;
                lv.len[s] = len;
            }
        }
    }

    /// Remove prefix `addr/len` from the trie (it is already out of
    /// `exact`): its slots fall back to the next shorter prefix ending at
    /// the same level.
    fn uninstall(&mut self, addr: u32, len: u8) {
        let level = Self::level_of(len);
        let Some(base) = self.node(addr, level, false) else {
            return;
        };
        let (first, span) = Self::range(addr, len, level);
        let node_addr = addr & prefix_mask(BASE[level]);
        let shift = match level {
            0 => 16,
            1 => 8,
            _ => 0,
        };
        for i in first..first + span {
            let s = base + i;
            if self.levels[level].len[s] != len {
                continue;
            }
            let slot_addr = node_addr | ((i as u32) << shift);
            let mut fill = (0, 0);
            for l in (BASE[level] + 1..len).rev() {
                if let Some(&k) = self.exact.get(&(slot_addr & prefix_mask(l), l)) {
                    fill = (k, l);
                    break;
                }
            }
            self.levels[level].key[s] = fill.0;
            self.levels[level].len[s] = fill.1;
        }
    }

    /// The key of the longest prefix matching `addr`, 0 for none.
    #[inline]
    fn lookup_key(&self, addr: u32) -> u32 {
        let mut cur = self.default_key;
        let l0 = &self.levels[0];
        let s0 = (addr >> 16) as usize;
        if l0.key[s0] != 0 {
            cur = l0.key[s0];
        }
        let c1 = l0.child[s0];
        if c1 == 0 {
            return cur;
        }
        let l1 = &self.levels[1];
        let s1 = (c1 as usize - 1) * 256 + ((addr >> 8) & 0xff) as usize;
        if l1.key[s1] != 0 {
            cur = l1.key[s1];
        }
        let c2 = l1.child[s1];
        if c2 == 0 {
            return cur;
        }
        let l2 = &self.levels[2];
        let s2 = (c2 as usize - 1) * 256 + (addr & 0xff) as usize;
        if l2.key[s2] != 0 {
            cur = l2.key[s2];
        }
        cur
    }

    fn exact_key(&self, r: &IpRoute) -> u32 {
        if r.prefix_len == 0 {
            self.default_key
        } else {
            self.exact
                .get(&(u32::from(r.addr), r.prefix_len))
                .copied()
                .unwrap_or(0)
        }
    }

    fn set_key(&mut self, r: &IpRoute, key: u32) {
        let addr = u32::from(r.addr);
        if r.prefix_len == 0 {
            self.default_key = key;
        } else if key == 0 {
            self.exact.remove(&(addr, r.prefix_len));
            self.uninstall(addr, r.prefix_len);
        } else {
            self.exact.insert((addr, r.prefix_len), key);
            self.install(addr, r.prefix_len, key);
        }
    }

    fn free_slot(&mut self, key: u32) {
        self.routes[key as usize - 1] = None;
        self.free.push(key - 1);
    }
}

impl RouteTable for RadixTable {
    fn add_route(&mut self, r: IpRoute, set: bool) -> Result<Option<IpRoute>, IpRoute> {
        let old_key = self.exact_key(&r);
        let old = (old_key != 0)
            .then(|| self.routes[old_key as usize - 1])
            .flatten();
        if let (Some(o), false) = (old, set) {
            return Err(o);
        }
        let slot = match self.free.pop() {
            Some(s) => {
                self.routes[s as usize] = Some(r);
                s
            }
            None => {
                self.routes.push(Some(r));
                self.routes.len() as u32 - 1
            }
        };
        self.set_key(&r, slot + 1);
        if old_key != 0 {
            self.free_slot(old_key);
        }
        Ok(old)
    }

    fn remove_route(&mut self, r: &IpRoute) -> Option<IpRoute> {
        let key = self.exact_key(r);
        let old = (key != 0)
            .then(|| self.routes[key as usize - 1])
            .flatten()?;
        if !r.matches(&old) {
            return None;
        }
        self.set_key(r, 0);
        self.free_slot(key);
        Some(old)
    }

    #[inline]
    fn lookup_route(&self, a: Ipv4Addr) -> Option<IpRoute> {
        let k = self.lookup_key(u32::from(a));
        if k == 0 {
            None
        } else {
            self.routes[k as usize - 1]
        }
    }

    fn routes(&self) -> Vec<IpRoute> {
        self.routes.iter().flatten().copied().collect()
    }
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut e = RouteTableElement::new(RadixTable::new(), "RadixIPLookup", ctx.noutputs());
    e.configure(&ctx.args)?;
    Ok(Box::new(e))
}

//! Simple IP routing table: longest-prefix match by linear search.
//!
//! # Synopsis
//! `LinearIPLookup(ADDR1/MASK1 [GW1] OUT1, ADDR2/MASK2 [GW2] OUT2, ...)`
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
//! `LinearIPLookup: no route for ADDR`).
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
//! rt :: LinearIPLookup(18.26.4.24/32 0,
//!                      18.26.4.255/32 0,
//!                      18.26.4.0/32 0,
//!                      18.26.4/24 1,
//!                      0/0 18.26.4.1 1);
//! rt[0] -> Discard; rt[1] -> Discard;
//! ```
//!
//! # Implementation
//! The table is a vector of route slots in Click's order (freed slots are
//! reused first, so `table` prints what Click prints); a lookup scans it
//! once for the longest matching prefix. Consecutive packets to the same
//! address reuse the previous result. For anything but small tables use
//! RadixIPLookup. The route syntax and handlers live in
//! `iproute::routetable`, shared with RadixIPLookup.

use super::routetable::{IpRoute, RouteTable, RouteTableElement};
use linerate_runtime::{ConfigureCtx, Element, ElementClass};
use std::net::Ipv4Addr;

/// The `LinearIPLookup` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "LinearIPLookup",
    port_count: "1/-",
    processing: "h/h",
    doc: element_doc!("iproute/lineariplookup"),
    make,
};

/// A routing table searched linearly, with Click's slot order.
#[derive(Debug, Default, Clone)]
pub struct LinearTable {
    slots: Vec<Option<IpRoute>>,
}

impl LinearTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    fn is_zero_route(r: &IpRoute) -> bool {
        // Click's "zero route" (0.0.0.0/32) is re-added after a removal
        // before it, which moves it to the freed slot.
        r.addr == Ipv4Addr::UNSPECIFIED && r.prefix_len == 32
    }
}

impl RouteTable for LinearTable {
    fn add_route(&mut self, r: IpRoute, set: bool) -> Result<Option<IpRoute>, IpRoute> {
        let mut free = None;
        for (i, s) in self.slots.iter_mut().enumerate() {
            match s {
                None => {
                    free.get_or_insert(i);
                }
                Some(e) if e.same_prefix(&r) => {
                    let old = *e;
                    if !set {
                        return Err(old);
                    }
                    e.gw = r.gw;
                    e.port = r.port;
                    return Ok(Some(old));
                }
                Some(_) => {}
            }
        }
        match free {
            Some(i) => self.slots[i] = Some(r),
            None => self.slots.push(Some(r)),
        }
        Ok(None)
    }

    fn remove_route(&mut self, r: &IpRoute) -> Option<IpRoute> {
        let i = self
            .slots
            .iter()
            .position(|s| s.as_ref().is_some_and(|e| r.matches(e)))?;
        let old = self.slots[i].take();
        let zero = self
            .slots
            .iter()
            .position(|s| s.as_ref().is_some_and(Self::is_zero_route));
        if let Some(z) = zero.filter(|&z| z > i) {
            self.slots[i] = self.slots[z].take();
        }
        old
    }

    fn lookup_route(&self, a: Ipv4Addr) -> Option<IpRoute> {
        let mut best: Option<&IpRoute> = None;
        for r in self.slots.iter().flatten() {
            if r.contains(a) && best.is_none_or(|b| r.prefix_len > b.prefix_len) {
                best = Some(r);
            }
        }
        best.copied()
    }

    fn routes(&self) -> Vec<IpRoute> {
        self.slots.iter().flatten().copied().collect()
    }
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut e = RouteTableElement::new(LinearTable::new(), "LinearIPLookup", ctx.noutputs());
    e.configure(&ctx.args)?;
    Ok(Box::new(e))
}

//! Click's IPv4 routing-table interface (`IPRouteTable`): the route syntax
//! `ADDR/MASK [GATEWAY] OUTPUT`, the `table`, `lookup`, `add`, `set`,
//! `remove` and `ctrl` handlers with Click's formats and messages, and the
//! push path (look up `DST_IP`, store the gateway there, emit on the
//! route's output).
//!
//! A routing-table element implements [`RouteTable`] (add, remove, look
//! up, dump) and wraps it in [`RouteTableElement`], which provides
//! everything else. LinearIPLookup and RadixIPLookup use it; so can any
//! later longest-prefix-match element.
//!
//! Public API: [`IpRoute`] (one route; `Display` is Click's unparse),
//! [`parse_route`] (Click's `cp_ip_route`), [`RouteTable`],
//! [`RouteTableElement`] (`new`, `configure`, `command`, `ctrl`, `table`).

use linerate_runtime::{Batch, Ctx, Element, HandlerSpec};
use std::any::Any;
use std::fmt;
use std::net::Ipv4Addr;

/// One route: packets to `addr/prefix_len` go to output `port`, with the
/// destination annotation set to `gw` unless it is `0.0.0.0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpRoute {
    /// Network address, host bits cleared.
    pub addr: Ipv4Addr,
    /// Prefix length, 0 to 32.
    pub prefix_len: u8,
    /// Gateway; `0.0.0.0` means none.
    pub gw: Ipv4Addr,
    /// Output port; -1 in a remove request means "any".
    pub port: i32,
}

/// The netmask of a prefix length, as a host-order word.
#[inline]
pub fn prefix_mask(len: u8) -> u32 {
    u32::MAX
        .checked_shl(32 - u32::from(len.min(32)))
        .unwrap_or(0)
}

impl IpRoute {
    /// A route for `addr/prefix_len` (host bits are cleared).
    pub fn new(addr: Ipv4Addr, prefix_len: u8, gw: Ipv4Addr, port: i32) -> IpRoute {
        let prefix_len = prefix_len.min(32);
        IpRoute {
            addr: Ipv4Addr::from(u32::from(addr) & prefix_mask(prefix_len)),
            prefix_len,
            gw,
            port,
        }
    }

    /// The netmask as a host-order word.
    #[inline]
    pub fn mask(&self) -> u32 {
        prefix_mask(self.prefix_len)
    }

    /// Whether `a` lies in this route's prefix.
    #[inline]
    pub fn contains(&self, a: Ipv4Addr) -> bool {
        u32::from(a) & self.mask() == u32::from(self.addr)
    }

    /// Same prefix as `other`.
    #[inline]
    pub fn same_prefix(&self, other: &IpRoute) -> bool {
        self.addr == other.addr && self.prefix_len == other.prefix_len
    }

    /// Click's `IPRoute::match`: `self` is a removal request matching
    /// `other` (same prefix, and same gateway and port unless the request's
    /// port is negative).
    pub fn matches(&self, other: &IpRoute) -> bool {
        self.same_prefix(other)
            && (self.port < 0 || (self.gw == other.gw && self.port == other.port))
    }

    /// Click's unparse: `ADDR/LEN GW PORT` separated by spaces, or with
    /// `tabs` by tabs padded to columns as Click's `table` handler does
    /// (`-` for no gateway).
    pub fn unparse(&self, tabs: bool) -> String {
        let sep = if tabs { '\t' } else { ' ' };
        let mut s = format!("{}/{}{sep}", self.addr, self.prefix_len);
        if tabs && s.len() < 17 {
            s.push('\t');
        }
        let l = s.len();
        if self.gw != Ipv4Addr::UNSPECIFIED {
            s.push_str(&format!("{}{sep}", self.gw));
        } else {
            s.push('-');
            s.push(sep);
        }
        if tabs && s.len() < l + 9 {
            s.push('\t');
        }
        s.push_str(&self.port.to_string());
        s
    }
}

impl fmt::Display for IpRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.unparse(false))
    }
}

/// Click's `cp_ip_route`: `ADDR/MASK [GATEWAY] OUTPUT` (`-` for no
/// gateway). With `remove`, the output may be left out (port -1). The
/// prefix may be a bare address (`/32`), a short address (`18.26.4/24`) or
/// use a contiguous netmask (`1.0.0.0/255.0.0.0`).
pub fn parse_route(s: &str, remove: bool) -> Option<IpRoute> {
    let mut words = s.split_ascii_whitespace();
    let prefix: linerate_args::Ipv4Prefix =
        linerate_args::ArgValue::parse_arg(words.next()?).ok()?;
    let mut gw = Ipv4Addr::UNSPECIFIED;
    let mut word = words.next();
    if let Some(w) = word {
        if w == "-" {
            word = words.next();
        } else if let Ok(a) = <Ipv4Addr as linerate_args::ArgValue>::parse_arg(w) {
            gw = a;
            word = words.next();
        }
    }
    let port = match word {
        Some(w) => <i32 as linerate_args::ArgValue>::parse_arg(w).ok()?,
        None if remove => -1,
        None => return None,
    };
    if words.next().is_some() {
        return None;
    }
    Some(IpRoute::new(prefix.addr, prefix.len, gw, port))
}

/// A routing table: the four operations of Click's `IPRouteTable`.
pub trait RouteTable: Send + 'static {
    /// Add `r`. If a route for the same prefix exists: with `set`, replace
    /// it and return it as `Ok(Some(old))`; otherwise leave the table alone
    /// and return `Err(existing)`.
    fn add_route(&mut self, r: IpRoute, set: bool) -> Result<Option<IpRoute>, IpRoute>;
    /// Remove the route that `r` [matches](IpRoute::matches); return it,
    /// or `None` if there is none.
    fn remove_route(&mut self, r: &IpRoute) -> Option<IpRoute>;
    /// Longest-prefix match: the route for `a`, if any.
    fn lookup_route(&self, a: Ipv4Addr) -> Option<IpRoute>;
    /// Every route in the table's own order.
    fn routes(&self) -> Vec<IpRoute>;
}

/// Which write command a handler runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Command {
    Add,
    Set,
    Remove,
}

/// A routing-table element: Click's `IPRouteTable` push path and handlers
/// around a [`RouteTable`].
pub struct RouteTableElement<T: RouteTable> {
    table: T,
    class: &'static str,
    noutputs: usize,
    no_route: u64,
    lookup_result: String,
    cache: Option<(Ipv4Addr, Option<IpRoute>)>,
    outs: Vec<Batch>,
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::read("table"),
    HandlerSpec::read_write("lookup"),
    HandlerSpec::write("add"),
    HandlerSpec::write("set"),
    HandlerSpec::write("remove"),
    HandlerSpec::write("ctrl"),
];

impl<T: RouteTable> RouteTableElement<T> {
    /// Wrap `table`; `class` names the element in "no route" messages.
    pub fn new(table: T, class: &'static str, noutputs: usize) -> Self {
        RouteTableElement {
            table,
            class,
            noutputs,
            no_route: 0,
            lookup_result: String::new(),
            cache: None,
            outs: (0..noutputs).map(|_| Batch::new()).collect(),
        }
    }

    /// Click's `IPRouteTable::configure`: every argument is a route whose
    /// output exists; a later duplicate prefix is ignored.
    pub fn configure(&mut self, args: &[String]) -> Result<(), Vec<String>> {
        let mut errors = Vec::new();
        for (i, a) in args.iter().enumerate() {
            match parse_route(a, false) {
                Some(r) if r.port >= 0 && (r.port as usize) < self.noutputs => {
                    let _ = self.table.add_route(r, false);
                }
                _ => errors.push(format!(
                    "argument {} should be 'ADDR/MASK [GATEWAY] OUTPUT'",
                    i + 1
                )),
            }
        }
        self.cache = None;
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// The routing table.
    pub fn table(&self) -> &T {
        &self.table
    }

    /// Click's `table` handler text: one tab-separated route a line.
    pub fn dump(&self) -> String {
        let mut s = String::new();
        for r in self.table.routes() {
            s.push_str(&r.unparse(true));
            s.push('\n');
        }
        s
    }

    /// Click's `lookup` handler text for `a`: `PORT` or `PORT GATEWAY`,
    /// `-1` without a route.
    pub fn lookup_text(&self, a: Ipv4Addr) -> String {
        match self.table.lookup_route(a) {
            Some(r) if r.gw != Ipv4Addr::UNSPECIFIED => format!("{} {}", r.port, r.gw),
            Some(r) => r.port.to_string(),
            None => "-1".to_string(),
        }
    }

    /// Run one `add`/`set`/`remove` command; on success return the undo
    /// record (the command that reverts it).
    fn run(&mut self, cmd: Command, text: &str) -> Result<(Command, IpRoute), String> {
        self.cache = None;
        let min_port = if cmd == Command::Remove { -1 } else { 0 };
        let route = match parse_route(text, cmd == Command::Remove) {
            Some(r) if r.port >= min_port && r.port < self.noutputs as i32 => r,
            _ => {
                return Err(if cmd == Command::Remove {
                    "expected 'ADDR/MASK [GATEWAY OUTPUT]'".to_string()
                } else {
                    "expected 'ADDR/MASK [GATEWAY] OUTPUT'".to_string()
                })
            }
        };
        match cmd {
            Command::Add | Command::Set => match self.table.add_route(route, cmd == Command::Set) {
                Ok(Some(old)) => Ok((Command::Set, old)),
                Ok(None) => Ok((Command::Remove, route)),
                Err(existing) => Err(format!(
                    "conflict with existing route '{}'",
                    existing.unparse(false)
                )),
            },
            Command::Remove => match self.table.remove_route(&route) {
                Some(old) => Ok((Command::Add, old)),
                None => Err(format!("route '{}' not found", route.unparse(false))),
            },
        }
    }

    fn undo(&mut self, (cmd, r): (Command, IpRoute)) {
        let _ = match cmd {
            Command::Add => self.table.add_route(r, false).map(|_| ()),
            Command::Set => self.table.add_route(r, true).map(|_| ()),
            Command::Remove => {
                self.table.remove_route(&r);
                Ok(())
            }
        };
    }

    /// Click's `ctrl` handler: `add`, `set` and `remove` commands, one a
    /// line, applied atomically (everything is rolled back on an error).
    pub fn ctrl(&mut self, text: &str) -> Result<(), String> {
        let mut done = Vec::new();
        for line in text.lines() {
            let line = line.split("//").next().unwrap_or("").trim();
            let (word, rest) = line
                .split_once(|c: char| c.is_ascii_whitespace())
                .unwrap_or((line, ""));
            let cmd = match word {
                "" => continue,
                "add" => Command::Add,
                "set" => Command::Set,
                "remove" => Command::Remove,
                w => {
                    self.rollback(done);
                    return Err(format!("bad command '{w}'"));
                }
            };
            match self.run(cmd, rest) {
                Ok(u) => done.push(u),
                Err(e) => {
                    self.rollback(done);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    fn rollback(&mut self, done: Vec<(Command, IpRoute)>) {
        for u in done.into_iter().rev() {
            self.undo(u);
        }
        self.cache = None;
    }

    #[inline]
    fn lookup_cached(&mut self, a: Ipv4Addr) -> Option<IpRoute> {
        if let Some((ca, r)) = self.cache {
            if ca == a {
                return r;
            }
        }
        let r = self.table.lookup_route(a);
        self.cache = Some((a, r));
        r
    }
}

impl<T: RouteTable> Element for RouteTableElement<T> {
    fn push(&mut self, _port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        for mut p in batch {
            let a = p.anno().dst_ip();
            match self.lookup_cached(a) {
                Some(r) if (r.port as usize) < self.outs.len() => {
                    if r.gw != Ipv4Addr::UNSPECIFIED {
                        p.anno_mut().set_dst_ip(r.gw);
                    }
                    self.outs[r.port as usize].push(p);
                }
                _ => {
                    self.no_route += 1;
                    if self.no_route <= 5 {
                        eprintln!("{}: no route for {a}", self.class);
                    }
                }
            }
        }
        for (i, b) in self.outs.iter_mut().enumerate() {
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
            "table" => self.dump(),
            "lookup" => self.lookup_result.clone(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        Some(match name {
            "add" => self.run(Command::Add, value).map(|_| ()),
            "set" => self.run(Command::Set, value).map(|_| ()),
            "remove" => self.run(Command::Remove, value).map(|_| ()),
            "ctrl" => self.ctrl(value),
            "lookup" => {
                let v = value.split("//").next().unwrap_or("").trim();
                match <Ipv4Addr as linerate_args::ArgValue>::parse_arg(v) {
                    Ok(a) => {
                        self.lookup_result = self.lookup_text(a);
                        Ok(())
                    }
                    Err(_) => Err(format!("expected IP address, not '{value}'")),
                }
            }
            _ => return None,
        })
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![("no route", self.no_route)]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }

    #[test]
    fn parses_click_route_forms() {
        let r = parse_route("18.26.4.24/24 18.26.4.1 2", false).unwrap();
        assert_eq!(r, IpRoute::new(a("18.26.4.0"), 24, a("18.26.4.1"), 2));
        let r = parse_route("18.26.4/24 - 1", false).unwrap();
        assert_eq!(
            (r.addr, r.prefix_len, r.gw, r.port),
            (a("18.26.4.0"), 24, a("0.0.0.0"), 1)
        );
        let r = parse_route("0/0 3", false).unwrap();
        assert_eq!((r.prefix_len, r.port), (0, 3));
        let r = parse_route("1.2.3.4 0", false).unwrap();
        assert_eq!(r.prefix_len, 32);
        let r = parse_route("10.0.0.0/255.0.0.0 0", false).unwrap();
        assert_eq!(r.prefix_len, 8);
        assert_eq!(parse_route("10.0.0.0/8", true).unwrap().port, -1);
        assert_eq!(
            parse_route("10.0.0.0/8 1.1.1.1", true).unwrap().gw,
            a("1.1.1.1")
        );
        for bad in [
            "",
            "10.0.0.0/8",
            "10.0.0.0/8 x",
            "10.0.0.0/8 1 2",
            "bad 1",
            "1.2.3.4/33 1",
        ] {
            assert_eq!(parse_route(bad, false), None, "{bad}");
        }
    }

    #[test]
    fn unparses_like_click() {
        let r = IpRoute::new(a("18.26.4.0"), 24, a("0.0.0.0"), 1);
        assert_eq!(r.unparse(false), "18.26.4.0/24 - 1");
        assert_eq!(r.unparse(true), "18.26.4.0/24\t\t-\t\t1");
        let r = IpRoute::new(a("0.0.0.0"), 0, a("18.26.4.1"), 1);
        assert_eq!(r.unparse(true), "0.0.0.0/0\t\t18.26.4.1\t1");
        let r = IpRoute::new(a("192.168.100.100"), 32, a("0.0.0.0"), 0);
        assert_eq!(r.unparse(true), "192.168.100.100/32\t-\t\t0");
    }
}

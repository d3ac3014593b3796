//! A SCION border router's links as UDP sockets, like the reference
//! router: one socket per interface of this router and one on its internal
//! address, read and written in batches (`recvmmsg`/`sendmmsg`).
//!
//! # Synopsis
//! `SCIONLinks(CONFIG [, KEYWORDS])`
//!
//! # Ports
//! Push output 0: every datagram received on a socket, as an underlay frame
//! (Ethernet/IPv4-or-IPv6/UDP) whose source is the sender's address and
//! whose destination is the socket's local address, so that `SCIONRouter`
//! finds its ingress link. Push input 0: frames to send (`SCIONRouter`'s
//! output): the UDP payload of each frame goes out of the socket whose
//! local address is the frame's underlay source, to the frame's underlay
//! destination. Frames that are no IPv4/IPv6 UDP, or whose source is no
//! socket of ours, are dropped and counted (`tx_unroutable`).
//!
//! # Arguments
//! - `CONFIG` (string, mandatory): the reference router's configuration
//!   folder (`topology.json`, `keys/master0.key`), as for `SCIONRouter`.
//! - `ID` (string, default: the first border router in name order): this
//!   router's name in `topology.json`'s `border_routers`.
//! - `BURST` (integer, default the router's burst, at most 256): datagrams
//!   received per task run, over all sockets.
//! - `WAIT` (boolean, default true): after 32 task runs that found
//!   nothing, each run blocks in `poll(2)` on the sockets for at most 1 ms
//!   (and reports that as work, so the scheduler adds no sleep of its
//!   own): an idle router uses no CPU and wakes as soon as a datagram
//!   arrives, before the socket's receive buffer overflows. Other tasks on
//!   the same thread then run at least once a millisecond. With `WAIT
//!   false` the scheduler's idle policy applies (spin, yield, then sleeps
//!   of up to 1 ms that arrivals do not interrupt).
//! - `COALESCE` (microseconds, default 0: off): interrupt moderation, like
//!   a NIC's `rx-usecs`. After a task run that received fewer than a
//!   quarter of `BURST` datagrams, the next run first sleeps this long so
//!   that datagrams gather in the sockets' receive buffers and the next
//!   `recvmmsg`/`sendmmsg` calls move many at once. A loaded router keeps
//!   receiving full batches and never sleeps; a lightly loaded one spends
//!   far less CPU per packet, at the price of up to COALESCE (plus the
//!   kernel's timer slack, 50 us by default) of added latency. Other
//!   tasks on the same thread wait as well. Sockets' receive buffers must
//!   hold what arrives meanwhile.
//! - `GSO` (boolean, default true): send runs of datagrams to the same
//!   destination with equal lengths as one UDP GSO message
//!   (`UDP_SEGMENT`); the datagrams on the wire are unchanged. A run the
//!   kernel refuses is sent again datagram by datagram.
//!
//! Sockets are bound to each own interface's `underlay.local`, and
//! connected to its `underlay.remote` as the reference router does (only
//! the neighbour's datagrams are received; sending to it needs no route
//! lookup), and to the router's `internal_addr` (unconnected: hosts and
//! sibling routers), when the router is initialised (an error stops it). Datagrams longer than a pool buffer (2048 bytes) are cut by
//! the kernel; they are counted (`rx_truncated`) and dropped.
//!
//! # Handlers
//! - `NAME_rx_packets`, `NAME_rx_bytes`, `NAME_tx_packets`, `NAME_tx_bytes`,
//!   `NAME_tx_errors` (counters) for every socket, NAME being `ifN` for
//!   interface id N or `internal`; bytes are UDP payload (SCION) bytes.
//!   `tx_errors` counts datagrams the kernel refused (full send buffer,
//!   unreachable destination).
//! - `rx_truncated`, `rx_errors`, `tx_unroutable` (counters).
//! - `links` (read): one line per socket: `NAME LOCAL-ADDRESS`.
//!
//! # Example
//! ```click
//! links :: SCIONLinks(CONFIG topo)
//!     -> br :: SCIONRouter(CONFIG topo)
//!     -> links;
//! br[1] -> Discard;
//! ```
//!
//! # Implementation
//! Each task run first asks `poll(2)`, without waiting, which sockets
//! hold datagrams and reads only those: one system call instead of an
//! empty `recvmmsg` on every other socket (with a generator-limited load
//! on loopback, 1.28 system calls per forwarded packet before, most of
//! them empty reads).
//! The batched socket core is `linerate_io::udp`: message headers, I/O
//! vectors and address buffers are allocated once per element, and the
//! kernel reads and writes the packets' pool buffers in place. Received
//! packets are pool buffers allocated ahead (unused ones are kept for the
//! next run); the 42- or 62-byte Ethernet/IP/UDP header is written into
//! their headroom, so nothing is copied or allocated per packet. The
//! synthesized IPv4 header has a valid checksum; the UDP checksum field is
//! the placeholder `0xffff` (the kernel has checked the datagram, and the
//! router only adjusts the field incrementally). Sending groups a batch by
//! socket and hands each group to one `sendmmsg` call, pointing at the
//! payload inside each frame; with `GSO`, consecutive datagrams of a group
//! to the same destination and of equal length share one message with a
//! `UDP_SEGMENT` control message (up to 64 datagrams and 65,000 bytes), so
//! the kernel's IP output path (route, headers, device, loopback receive)
//! runs once per run of datagrams. On loopback the kernel's socket work is
//! over 90% of the live router's CPU time (`perf`), which is what GSO and
//! connected sockets cut. There is no `IMPL reference`: the element
//! only moves bytes between sockets and buffers. Click has no SCION
//! elements; the closest Click elements are `Socket` and `FromDevice`.

use super::core::{self, Ep};
use super::topology::Topology;
use linerate_io::udp::{readable, Mmsg, RecvMeta, UdpPort};
use linerate_runtime::packet::DATA_ROOM;
use linerate_runtime::{
    Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, InitCtx, IoCounts, Packet,
    MAX_BATCH,
};
use std::any::Any;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;
use std::time::Duration;

/// The `SCIONLinks` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "SCIONLinks",
    port_count: "1/1",
    processing: "h/h",
    doc: element_doc!("scion/scionlinks"),
    make,
};

const LINK_HANDLERS: [&str; 5] = [
    "rx_packets",
    "rx_bytes",
    "tx_packets",
    "tx_bytes",
    "tx_errors",
];
const ETH_LEN: usize = 14;
/// Empty task runs before `WAIT` blocks in poll(2): fewer than the
/// scheduler's 64 spinning rounds, so it never yields the core (which, on a
/// busy core, can hand it to another process for milliseconds).
const IDLE_RUNS: u32 = 32;

#[derive(Default, Clone, Copy)]
struct LinkStats {
    rx_packets: u64,
    rx_bytes: u64,
    tx_packets: u64,
    tx_bytes: u64,
    tx_errors: u64,
}

struct Link {
    name: String,
    addr: SocketAddr,
    /// The neighbour's address (`underlay.remote`) for an interface.
    remote: Option<SocketAddr>,
    port: Option<UdpPort>,
    stats: LinkStats,
}

/// One frame of an input batch to send: its socket, payload and destination.
#[derive(Clone, Copy)]
struct Tx {
    link: u16,
    pkt: u32,
    off: u16,
    len: u16,
    /// `None`: the link's connected neighbour.
    to: Option<SocketAddr>,
}

struct SCIONLinks {
    links: Vec<Link>,
    fds: Vec<RawFd>,
    burst: usize,
    wait: bool,
    gso: bool,
    coalesce: Duration,
    /// The last run received fewer than a quarter of `burst` datagrams.
    short: bool,
    idle: u32,
    next: usize,
    mm: Mmsg,
    rx: Vec<Packet>,
    meta: Vec<RecvMeta>,
    tx: Vec<Tx>,
    sel: Vec<Tx>,
    rx_truncated: u64,
    rx_errors: u64,
    tx_unroutable: u64,
    handlers: &'static [HandlerSpec],
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    use linerate_args::Args;
    let mut a = Args::new(&ctx.args);
    let config: Option<String> = a.read_mp("CONFIG");
    let id: Option<String> = a.read::<String>("ID").filter(|s| !s.is_empty());
    let burst: usize = a.read_or("BURST", ctx.default_burst);
    let wait: bool = a.read_or("WAIT", true);
    let gso: bool = a.read_or("GSO", true);
    let coalesce = Duration::from_micros(a.read_or("COALESCE", 0));
    a.complete().map_err(|e| e.0)?;
    let dir = config.ok_or_else(|| vec!["CONFIG: missing".to_string()])?;
    let topo = Topology::load(Path::new(&dir), id.as_deref()).map_err(|e| vec![e])?;
    let burst = burst.clamp(1, MAX_BATCH);
    let mut links: Vec<Link> = topo
        .interfaces
        .iter()
        .filter(|i| i.sibling.is_none())
        .map(|i| Link {
            name: format!("if{}", i.ifid),
            addr: i.local,
            remote: Some(i.remote),
            port: None,
            stats: LinkStats::default(),
        })
        .collect();
    links.push(Link {
        name: "internal".into(),
        addr: topo.internal,
        remote: None,
        port: None,
        stats: LinkStats::default(),
    });
    if let Some(w) = links
        .iter()
        .enumerate()
        .find(|(i, l)| links[..*i].iter().any(|m| m.addr == l.addr))
    {
        return Err(vec![format!(
            "CONFIG: {} shares its address {} with another link",
            w.1.name, w.1.addr
        )]);
    }
    let mut h = vec![
        HandlerSpec::counter("rx_truncated"),
        HandlerSpec::counter("rx_errors"),
        HandlerSpec::counter("tx_unroutable"),
        HandlerSpec::read("links"),
    ];
    for l in &links {
        for s in LINK_HANDLERS {
            h.push(HandlerSpec::counter(Box::leak(
                format!("{}_{s}", l.name).into_boxed_str(),
            )));
        }
    }
    Ok(Box::new(SCIONLinks {
        links,
        fds: Vec::new(),
        burst,
        wait,
        gso,
        coalesce,
        short: false,
        idle: 0,
        next: 0,
        mm: Mmsg::new(MAX_BATCH),
        rx: Vec::with_capacity(MAX_BATCH),
        meta: vec![RecvMeta::default(); MAX_BATCH],
        tx: Vec::with_capacity(MAX_BATCH),
        sel: Vec::with_capacity(MAX_BATCH),
        rx_truncated: 0,
        rx_errors: 0,
        tx_unroutable: 0,
        // Handler names depend on the topology; the list lives as long as
        // the process (one per configured element).
        handlers: Box::leak(h.into_boxed_slice()),
    }))
}

/// Writes the Ethernet/IP/UDP header of a datagram of `len` payload bytes
/// from `src` to `dst` into `h` (42 bytes for IPv4, 62 for IPv6): the
/// router's own underlay writer, with a placeholder UDP checksum (`0xffff`;
/// the datagram's checksum was checked by the kernel).
fn write_underlay(h: &mut [u8], src: SocketAddr, dst: SocketAddr, len: usize) {
    core::write_underlay(h, &Ep::from(src), &Ep::from(dst), len, Some(0xffff));
}

/// Parses an Ethernet/IP/UDP frame: (source, destination, payload offset,
/// payload length).
fn parse_underlay(f: &[u8]) -> Option<(SocketAddr, SocketAddr, usize, usize)> {
    let be = |o: usize| Some(u16::from_be_bytes([*f.get(o)?, *f.get(o + 1)?]));
    let (src, dst, u, end) = match be(12)? {
        0x0800 => {
            let ip = f.get(ETH_LEN..ETH_LEN + 20)?;
            let hl = usize::from(ip[0] & 0xf) * 4;
            let tl = usize::from(be(ETH_LEN + 2)?);
            if ip[0] >> 4 != 4 || ip[9] != 17 || hl < 20 || tl < hl + 8 {
                return None;
            }
            let a = |o: usize| IpAddr::V4(Ipv4Addr::new(ip[o], ip[o + 1], ip[o + 2], ip[o + 3]));
            (a(12), a(16), ETH_LEN + hl, ETH_LEN + tl)
        }
        0x86dd => {
            let ip = f.get(ETH_LEN..ETH_LEN + 40)?;
            if ip[0] >> 4 != 6 || ip[6] != 17 {
                return None;
            }
            let a = |o: usize| {
                let mut b = [0u8; 16];
                b.copy_from_slice(&ip[o..o + 16]);
                IpAddr::V6(Ipv6Addr::from(b))
            };
            let pl = usize::from(be(ETH_LEN + 4)?);
            (a(8), a(24), ETH_LEN + 40, ETH_LEN + 40 + pl)
        }
        _ => return None,
    };
    let ulen = usize::from(be(u + 4)?);
    if end > f.len() || ulen < 8 || u + ulen > end {
        return None;
    }
    Some((
        SocketAddr::new(src, be(u)?),
        SocketAddr::new(dst, be(u + 2)?),
        u + 8,
        ulen - 8,
    ))
}

impl SCIONLinks {
    /// Receives up to `burst` datagrams over all sockets, starting with the
    /// one after the last served, as one batch of underlay frames.
    fn receive(&mut self, now: u64, mask: u64) -> Batch {
        let mut out = Batch::new();
        let n = self.links.len();
        for k in 0..n {
            let want = self.burst - out.len();
            if want == 0 {
                break;
            }
            let li = (self.next + k) % n;
            if mask & 1 << li == 0 {
                continue;
            }
            let Some(port) = self.links[li].port.as_ref() else {
                continue;
            };
            while self.rx.len() < want {
                self.rx.push(Packet::new(DATA_ROOM));
            }
            let got = match self.mm.recv(
                port,
                &mut self.rx[..want],
                |p| p.data_mut(),
                &mut self.meta[..want],
            ) {
                Ok(g) => g,
                Err(_) => {
                    self.rx_errors += 1;
                    continue;
                }
            };
            let local = port.local_addr();
            let st = &mut self.links[li].stats;
            for (mut p, m) in self.rx.drain(..got).zip(&self.meta[..got]) {
                let Some(peer) = m.peer.filter(|_| !m.truncated) else {
                    self.rx_truncated += u64::from(m.truncated);
                    self.rx_errors += u64::from(!m.truncated);
                    continue;
                };
                st.rx_packets += 1;
                st.rx_bytes += m.len as u64;
                p.take(DATA_ROOM - m.len);
                let hl = if local.is_ipv4() && peer.is_ipv4() {
                    ETH_LEN + 28
                } else {
                    ETH_LEN + 48
                };
                p.push(hl);
                write_underlay(p.data_mut(), peer, local, m.len);
                p.set_timestamp_ns(now);
                p.set_network_header(ETH_LEN as isize);
                p.set_transport_header((hl - 8) as isize);
                out.push(p);
            }
        }
        self.next = (self.next + 1) % n.max(1);
        out
    }

    /// Sends a batch of frames, one `sendmmsg` per socket.
    fn send(&mut self, batch: &Batch) {
        self.tx.clear();
        for (i, p) in batch.iter().enumerate() {
            let route = parse_underlay(p.data()).and_then(|(src, dst, off, len)| {
                let li = self.links.iter().position(|l| l.addr == src)?;
                Some(Tx {
                    link: li as u16,
                    pkt: i as u32,
                    off: off as u16,
                    len: len as u16,
                    to: (self.links[li].remote != Some(dst)).then_some(dst),
                })
            });
            match route {
                Some(t) => self.tx.push(t),
                None => self.tx_unroutable += 1,
            }
        }
        let pkts = batch.as_slice();
        for (li, l) in self.links.iter_mut().enumerate() {
            self.sel.clear();
            self.sel
                .extend(self.tx.iter().filter(|t| usize::from(t.link) == li));
            let Some(port) = l.port.as_ref() else {
                continue;
            };
            if self.sel.is_empty() {
                continue;
            }
            let payload = |t: &Tx| {
                let d = pkts[t.pkt as usize].data();
                let o = usize::from(t.off);
                (&d[o..o + usize::from(t.len)], t.to)
            };
            let st = if self.gso {
                self.mm.send_gso(port, &self.sel, payload)
            } else {
                self.mm.send(port, &self.sel, payload)
            };
            l.stats.tx_packets += st.sent as u64;
            l.stats.tx_bytes += st.bytes as u64;
            l.stats.tx_errors += st.errors as u64;
        }
    }
}

impl Element for SCIONLinks {
    fn initialize(&mut self, _ctx: &mut InitCtx<'_>) -> Result<(), String> {
        for l in &mut self.links {
            let err = |e: std::io::Error| format!("{} {}: {e}", l.name, l.addr);
            let mut p = UdpPort::bind(l.addr).map_err(err)?;
            if let Some(r) = l.remote {
                p.connect(r).map_err(err)?;
            }
            self.fds.push(p.as_raw_fd());
            l.port = Some(p);
        }
        Ok(())
    }

    fn is_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, ctx: &mut Ctx<'_>) -> bool {
        // Interrupt moderation: after a short batch, let datagrams gather
        // for COALESCE microseconds before the next run's system calls.
        let mut waited = self.short && !self.coalesce.is_zero();
        if waited {
            std::thread::sleep(self.coalesce);
        }
        let mut mask = readable(&self.fds, 0);
        if mask == 0 {
            self.short = false;
            if !self.wait {
                return false;
            }
            self.idle = self.idle.saturating_add(1);
            if self.idle < IDLE_RUNS {
                return false;
            }
            mask = readable(&self.fds, 1);
            if mask == 0 {
                // The wait was this run's work: the scheduler must not add
                // a sleep that no arriving datagram can cut short.
                return true;
            }
            waited = true;
        }
        self.idle = 0;
        let now = if waited {
            ctx.now_ns()
        } else {
            ctx.recent_ns()
        };
        let b = self.receive(now, mask);
        self.short = b.len() < self.burst.div_ceil(4);
        if !b.is_empty() {
            ctx.push(0, b);
        }
        true
    }

    fn push(&mut self, _port: usize, batch: Batch, _ctx: &mut Ctx<'_>) {
        self.send(&batch);
    }

    fn handlers(&self) -> &[HandlerSpec] {
        self.handlers
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        match name {
            "rx_truncated" => return Some(self.rx_truncated.to_string()),
            "rx_errors" => return Some(self.rx_errors.to_string()),
            "tx_unroutable" => return Some(self.tx_unroutable.to_string()),
            "links" => {
                let v: Vec<String> = self
                    .links
                    .iter()
                    .map(|l| {
                        let a = l.port.as_ref().map_or(l.addr, |p| p.local_addr());
                        format!("{} {a}", l.name)
                    })
                    .collect();
                return Some(v.join("\n"));
            }
            _ => {}
        }
        let (link, what) = LINK_HANDLERS
            .iter()
            .find_map(|w| Some((name.strip_suffix(w)?.strip_suffix('_')?, *w)))?;
        let s = self.links.iter().find(|l| l.name == link)?.stats;
        Some(
            match what {
                "rx_packets" => s.rx_packets,
                "rx_bytes" => s.rx_bytes,
                "tx_packets" => s.tx_packets,
                "tx_bytes" => s.tx_bytes,
                _ => s.tx_errors,
            }
            .to_string(),
        )
    }

    fn io_counts(&self) -> Option<IoCounts> {
        Some(IoCounts {
            source: true,
            packets: self.links.iter().map(|l| l.stats.rx_packets).sum(),
            bytes: self.links.iter().map(|l| l.stats.rx_bytes).sum(),
        })
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        let tx_errors: u64 = self.links.iter().map(|l| l.stats.tx_errors).sum();
        [
            ("rx_truncated", self.rx_truncated),
            ("rx_errors", self.rx_errors),
            ("tx_unroutable", self.tx_unroutable),
            ("tx_errors", tx_errors),
        ]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect()
    }

    fn cleanup(&mut self) {
        self.fds.clear();
        for l in &mut self.links {
            l.port = None;
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn underlay_round_trip() {
        for (s, d) in [
            ("127.0.0.2:40000", "127.0.0.1:50001"),
            ("[::1]:7", "[2001:db8::1]:50003"),
        ] {
            let (s, d): (SocketAddr, SocketAddr) = (s.parse().unwrap(), d.parse().unwrap());
            let hl = if s.is_ipv4() { 42 } else { 62 };
            let mut f = vec![0u8; hl + 5];
            write_underlay(&mut f, s, d, 5);
            assert_eq!(parse_underlay(&f), Some((s, d, hl, 5)));
            for cut in 0..f.len() {
                assert_eq!(parse_underlay(&f[..cut]), None);
            }
        }
        let mut f = vec![0u8; 47];
        write_underlay(
            &mut f,
            "10.0.0.1:1".parse().unwrap(),
            "10.0.0.2:2".parse().unwrap(),
            5,
        );
        // A valid IPv4 header checksum: the one's-complement sum is 0xffff.
        let sum: u32 = f[14..34]
            .chunks_exact(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        assert_eq!((sum & 0xffff) + (sum >> 16), 0xffff);
        f[12] = 0x12;
        assert_eq!(parse_underlay(&f), None);
    }
}

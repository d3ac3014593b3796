//! Encapsulates IP packets in Ethernet headers found via ARP.
//!
//! # Synopsis
//! `ARPQuerier(IP, ETH [, KEYWORDS])`
//!
//! # Ports
//! Two push inputs; one or two push outputs. Input 0 takes IP packets with
//! their destination IP annotation set; input 1 takes ARP replies
//! (Ethernet frames). Output 0 emits the IP packets in Ethernet headers;
//! ARP queries go to output 1 if it exists, otherwise to output 0.
//!
//! A packet whose next hop (`DST_IP` annotation) has a known Ethernet
//! address is sent at once. Otherwise it is queued on that next hop's ARP
//! entry and a broadcast ARP query is sent (at most 10 a second per
//! address; after 10 unanswered queries, one every 2 seconds). When a reply
//! arrives on input 1 the mapping is recorded and the queued packets are sent
//! in arrival order. Packets for 0.0.0.0 are dropped; packets for
//! 255.255.255.255 or the `BROADCAST` address go to FF-FF-FF-FF-FF-FF;
//! multicast packets go to 01-00-5E plus the address's low 23 bits. Known
//! entries older than `POLL_TIMEOUT` are refreshed with a unicast query
//! while traffic uses them.
//!
//! # Arguments
//! - `IP` (IP address or prefix): this host's address; a prefix
//!   (`18.26.4.24/24`) also gives the broadcast address.
//! - `ETH` (Ethernet address): this host's Ethernet address.
//! - `CAPACITY` (unsigned, default 2048): most packets queued in all; 0 means
//!   no limit. When exceeded, the oldest entries' packets are dropped until
//!   `CAPACITY - CAPACITY / CAPACITY_SLIM_FACTOR` remain.
//! - `ENTRY_CAPACITY` (unsigned, default 0 = no limit): most ARP entries.
//! - `ENTRY_PACKET_CAPACITY` (unsigned, default 0 = no limit): most packets
//!   queued for one entry; more are dropped.
//! - `CAPACITY_SLIM_FACTOR` (unsigned, default 2, not 0).
//! - `TIMEOUT` (time, default 5 minutes): entry lifetime; 0 means forever.
//! - `POLL_TIMEOUT` (time, default 1 minute): age after which a used entry
//!   is refreshed; 0 means never.
//! - `BROADCAST` (IP address): the local broadcast address; default from the
//!   `IP` prefix, or 255.255.255.255.
//! - `BROADCAST_POLL` (boolean, default false): send refresh queries to the
//!   broadcast address rather than to the known Ethernet address.
//!
//! # Handlers
//! - `table` (read): one line per entry, oldest first:
//!   `IP OK ETH AGE`, e.g. `10.0.0.2 1 00-00-00-00-00-02 0.250000`.
//! - `stats` (read): `N packets killed` and `N ARP queries sent` lines.
//! - `queries`, `responses`, `drops` (read): counters. `drops` counts
//!   packets ARPQuerier killed itself (0.0.0.0 destinations, no address).
//! - `count` (read): ARP entries; `length` (read): packets queued.
//! - `ipaddr` (read/write), `broadcast` (read/write): addresses.
//! - `insert` (write): `IP ETH` adds or updates an entry.
//! - `delete` (write): `IP` marks an entry unknown.
//! - `clear` (write): drops every entry and queued packet, zeroes counters.
//!
//! # Example
//! ```click
//! c :: Classifier(12/0806 20/0002, 12/0800, -);
//! a :: ARPQuerier(18.26.4.24, 00:00:C0:AE:67:EF);
//! FromDevice(eth0) -> c;
//! c[0] -> [1]a; c[1] -> Strip(14) -> CheckIPHeader -> GetIPAddress(16) -> a;
//! c[2] -> Discard; a -> ToDevice(eth0);
//! ```
//!
//! # Implementation
//! Entries live in a hash map keyed by address, with an age list (oldest
//! first) for expiry and capacity trimming, as in Click's ARPTable. The
//! Ethernet header is pushed into the packet's headroom; queries are built
//! in pool packets. Timers use the router clock (`schedule_at`), so they run
//! on simulated time: one timer expires old entries (every `TIMEOUT` plus
//! one second) and re-sends queries for next hops that still have queued
//! packets. Click sends queries only when packets arrive; linerate also
//! retries from the timer at the same rate limits, so a lone packet is not
//! stuck behind a lost query. Like Click, `insert` does not release packets
//! already queued for the address (a reply on input 1 does). Queries copy
//! the timestamp and `VLAN_TCI` annotations of the packet that caused them.
//! `TABLE` (a shared ARPTable element) and the one-argument `NAME` form are
//! not supported.

use linerate_args::{EtherAddr, Ipv4Prefix, Seconds};
use linerate_runtime::anno::offsets;
use linerate_runtime::{
    Batch, ConfigureCtx, Ctx, Element, ElementClass, HandlerSpec, InitCtx, Packet,
};
use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::net::Ipv4Addr;

/// The `ARPQuerier` element class.
pub const CLASS: ElementClass = ElementClass {
    name: "ARPQuerier",
    port_count: "2/1-2",
    processing: "h/h",
    doc: element_doc!("ethernet/arpquerier"),
    make,
};

const SEC: i64 = 1_000_000_000;
const BCAST_ETH: [u8; 6] = [0xff; 6];

struct Entry {
    eth: [u8; 6],
    known: bool,
    polls: u8,
    live_at: i64,
    polled_at: i64,
    queue: VecDeque<Packet>,
}

impl Entry {
    fn new(now: i64) -> Entry {
        Entry {
            eth: BCAST_ETH,
            known: false,
            polls: 0,
            live_at: now,
            polled_at: now - SEC,
            queue: VecDeque::new(),
        }
    }
    fn expired(&self, now: i64, timeout: i64) -> bool {
        timeout != 0 && self.live_at + timeout < now
    }
    fn is_known(&self, now: i64, timeout: i64) -> bool {
        self.known && !self.expired(now, timeout)
    }
    fn poll_interval(&self) -> i64 {
        if self.polls >= 10 {
            2 * SEC
        } else {
            SEC / 10
        }
    }
    fn allow_poll(&self, now: i64) -> bool {
        now >= self.polled_at + self.poll_interval()
    }
    fn mark_poll(&mut self, now: i64) {
        self.polled_at = now;
        self.polls = self.polls.saturating_add(1);
    }
}

struct ARPQuerier {
    decl: String,
    my_ip: u32,
    my_en: [u8; 6],
    bcast: u32,
    poll_timeout: i64,
    broadcast_poll: bool,
    nout: usize,
    // The table.
    table: HashMap<u32, Entry>,
    /// Addresses from oldest to newest entry.
    age: VecDeque<u32>,
    packet_count: usize,
    capacity: usize,
    entry_capacity: usize,
    entry_packet_capacity: usize,
    slim_factor: usize,
    timeout: i64,
    table_drops: u64,
    // Statistics.
    queries: u64,
    responses: u64,
    drops: u64,
    zero_warned: bool,
    // Time.
    simtime: bool,
    last_now: i64,
    expire_at: i64,
    timer_at: i64,
}

fn make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    let mut a = linerate_args::Args::new(&ctx.args);
    let ip: Option<Ipv4Prefix> = a.read_mp("IP");
    let eth: Option<EtherAddr> = a.read_mp("ETH");
    let capacity: u32 = a.read_or("CAPACITY", 2048);
    let entry_capacity: u32 = a.read_or("ENTRY_CAPACITY", 0);
    let entry_packet_capacity: u32 = a.read_or("ENTRY_PACKET_CAPACITY", 0);
    let slim_factor: u32 = a.read_or("CAPACITY_SLIM_FACTOR", 2);
    let timeout: Option<Seconds> = a.read("TIMEOUT");
    let poll_timeout: Option<Seconds> = a.read("POLL_TIMEOUT");
    let bcast: Option<Ipv4Addr> = a.read("BROADCAST");
    let broadcast_poll = a.read_or("BROADCAST_POLL", false);
    let table: Option<String> = a.read("TABLE");
    if table.is_some() {
        a.error("TABLE is not supported");
    }
    if slim_factor == 0 {
        a.error("CAPACITY_SLIM_FACTOR cannot be zero");
    }
    a.complete().map_err(|e| e.0)?;
    let ip = ip.unwrap_or(Ipv4Prefix {
        addr: Ipv4Addr::UNSPECIFIED,
        len: 32,
    });
    let my_ip = u32::from(ip.addr);
    let bcast = match bcast {
        Some(b) => u32::from(b),
        None => {
            let b = my_ip | !u32::from(ip.mask());
            if b == my_ip {
                u32::MAX
            } else {
                b
            }
        }
    };
    let ns = |s: Option<Seconds>, d: i64| s.map_or(d, |s| s.nanos.min(i64::MAX as u64 / 4) as i64);
    Ok(Box::new(ARPQuerier {
        decl: format!("{} :: ARPQuerier", ctx.name),
        my_ip,
        my_en: eth.unwrap_or_default().0,
        bcast,
        poll_timeout: ns(poll_timeout, 60 * SEC),
        broadcast_poll,
        nout: ctx.noutputs(),
        table: HashMap::new(),
        age: VecDeque::new(),
        packet_count: 0,
        capacity: capacity as usize,
        entry_capacity: entry_capacity as usize,
        entry_packet_capacity: entry_packet_capacity as usize,
        slim_factor: slim_factor.max(1) as usize,
        timeout: ns(timeout, 300 * SEC),
        table_drops: 0,
        queries: 0,
        responses: 0,
        drops: 0,
        zero_warned: false,
        simtime: false,
        last_now: 0,
        expire_at: 0,
        timer_at: 0,
    }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::read("table"),
    HandlerSpec::read("stats"),
    HandlerSpec::counter("queries"),
    HandlerSpec::counter("responses"),
    HandlerSpec::counter("drops"),
    HandlerSpec::gauge("count"),
    HandlerSpec::gauge("length"),
    HandlerSpec::read_write("ipaddr"),
    HandlerSpec::read_write("broadcast"),
    HandlerSpec::write("insert"),
    HandlerSpec::write("delete"),
    HandlerSpec::write("clear"),
];

/// Where a packet went after `append_query`.
enum Queued {
    /// Stored; send a query if true.
    Stored(bool),
    /// Dropped (entry's packet capacity reached).
    Dropped,
}

impl ARPQuerier {
    /// The clock for handlers, which run without a context.
    fn handler_now(&self) -> i64 {
        if self.simtime {
            return self.last_now;
        }
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(self.last_now, |d| d.as_nanos() as i64)
    }

    fn drop_entry_packets(&mut self, ip: u32) {
        if let Some(e) = self.table.get_mut(&ip) {
            let n = e.queue.len();
            e.queue.clear();
            self.packet_count -= n;
            self.table_drops += n as u64;
        }
    }

    /// Click's `ARPTable::slim`: delete expired entries (and, with
    /// `extra` entries about to be added, entries over `ENTRY_CAPACITY`) from
    /// the old end, then drop queued packets, oldest entries first, until
    /// the packet count is back under capacity.
    fn slim(&mut self, now: i64, extra: usize) {
        while let Some(&ip) = self.age.front() {
            let e = &self.table[&ip];
            let over = self.entry_capacity != 0 && self.table.len() + extra > self.entry_capacity;
            if !(e.expired(now, self.timeout) || over) {
                break;
            }
            self.drop_entry_packets(ip);
            self.table.remove(&ip);
            self.age.pop_front();
        }
        if self.capacity != 0 && self.packet_count > self.capacity {
            let slim_to = (self.capacity - self.capacity / self.slim_factor).max(1);
            for &ip in &self.age {
                if self.packet_count <= slim_to {
                    break;
                }
                let Some(e) = self.table.get_mut(&ip) else {
                    continue;
                };
                while self.packet_count > slim_to && e.queue.pop_front().is_some() {
                    self.packet_count -= 1;
                    self.table_drops += 1;
                }
            }
        }
    }

    /// Find or create the entry for `ip`.
    fn ensure(&mut self, ip: u32, now: i64) {
        if !self.table.contains_key(&ip) {
            if self.entry_capacity != 0 && self.table.len() + 1 > self.entry_capacity {
                self.slim(now, 1);
            }
            self.table.insert(ip, Entry::new(now));
            self.age.push_back(ip);
        }
    }

    fn move_to_back(&mut self, ip: u32) {
        if self.age.back() != Some(&ip) {
            if let Some(i) = self.age.iter().position(|&x| x == ip) {
                self.age.remove(i);
            }
            self.age.push_back(ip);
        }
    }

    /// Record `ip` at `eth`; returns the packets queued for it.
    fn insert(&mut self, ip: u32, eth: [u8; 6], now: i64) -> VecDeque<Packet> {
        self.ensure(ip, now);
        self.move_to_back(ip);
        let e = self.table.get_mut(&ip).expect("ensured");
        e.eth = eth;
        e.known = eth != BCAST_ETH;
        e.live_at = now;
        e.polls = 0;
        e.polled_at = now - SEC;
        let q = std::mem::take(&mut e.queue);
        self.packet_count -= q.len();
        q
    }

    /// Queue `p` on the (unknown) entry for `ip`.
    fn append_query(&mut self, ip: u32, p: Packet, now: i64) -> Queued {
        self.ensure(ip, now);
        if self.timeout != 0 {
            // Keep an entry that still has traffic just short of expiring.
            let min_live = now - self.timeout;
            let e = self.table.get_mut(&ip).expect("ensured");
            if e.live_at < min_live {
                e.live_at = min_live;
                let i = self.age.iter().position(|&x| x == ip).unwrap_or(0);
                let mut j = i + 1;
                while j < self.age.len() && self.table[&self.age[j]].live_at < min_live {
                    j += 1;
                }
                if j != i + 1 {
                    self.age.remove(i);
                    self.age.insert(j - 1, ip);
                }
            }
        }
        let epc = self.entry_packet_capacity;
        if epc != 0 && self.table[&ip].queue.len() >= epc {
            self.table_drops += 1;
            return Queued::Dropped;
        }
        self.packet_count += 1;
        if self.capacity != 0 && self.packet_count > self.capacity {
            self.slim(now, 0);
        }
        let e = self.table.get_mut(&ip).expect("not slimmed");
        e.queue.push_back(p);
        if e.allow_poll(now) {
            e.mark_poll(now);
            Queued::Stored(true)
        } else {
            Queued::Stored(false)
        }
    }

    /// Build an ARP query for `ip`, sent to `dst`.
    fn query(&mut self, ip: u32, dst: [u8; 6], ts: u64, vlan: u16) -> Packet {
        let mut q = Packet::new(42);
        q.set_timestamp_ns(ts);
        q.anno_mut().set_u16(offsets::VLAN_TCI, vlan);
        let d = q.data_mut();
        d[..6].copy_from_slice(&dst);
        d[6..12].copy_from_slice(&self.my_en);
        d[12..14].copy_from_slice(&[0x08, 0x06]);
        d[14..22].copy_from_slice(&[0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x01]);
        d[22..28].copy_from_slice(&self.my_en);
        d[28..32].copy_from_slice(&self.my_ip.to_be_bytes());
        // Target hardware address stays zero.
        d[38..42].copy_from_slice(&ip.to_be_bytes());
        self.queries += 1;
        q
    }

    /// Click's `handle_ip`: `response` is true for packets released by a
    /// reply, which already carry their Ethernet header.
    fn handle_ip(
        &mut self,
        mut p: Packet,
        response: bool,
        now: i64,
        out: &mut Batch,
        qs: &mut Batch,
    ) {
        if self.my_ip == 0 {
            self.drops += 1;
            return;
        }
        if !response {
            p.push(14);
            p.data_mut()[12..14].copy_from_slice(&[0x08, 0x00]);
        }
        let dst = u32::from(p.anno().dst_ip());
        let known = self.table.get_mut(&dst).and_then(|e| {
            if !e.is_known(now, self.timeout) {
                return None;
            }
            let poll =
                self.poll_timeout != 0 && now >= e.live_at + self.poll_timeout && e.allow_poll(now);
            if poll {
                e.mark_poll(now);
            }
            Some((e.eth, poll))
        });
        let dst_eth = if let Some((eth, poll)) = known {
            if poll {
                let to = if self.broadcast_poll { BCAST_ETH } else { eth };
                let q = self.query(dst, to, p.timestamp_ns(), p.anno().u16(offsets::VLAN_TCI));
                let sink = if self.nout > 1 { &mut *qs } else { &mut *out };
                sink.push(q);
            }
            eth
        } else if dst == u32::MAX || dst == self.bcast {
            BCAST_ETH
        } else if dst >> 28 == 0xE {
            let b = dst.to_be_bytes();
            [0x01, 0x00, 0x5E, b[1] & 0x7F, b[2], b[3]]
        } else if dst == 0 {
            if !self.zero_warned {
                eprintln!(
                    "{}: would query for 0.0.0.0; missing dest IP addr annotation?",
                    self.decl
                );
                self.zero_warned = true;
            }
            self.drops += 1;
            return;
        } else {
            let (ts, vlan) = (p.timestamp_ns(), p.anno().u16(offsets::VLAN_TCI));
            if let Queued::Stored(true) = self.append_query(dst, p, now) {
                let q = self.query(dst, BCAST_ETH, ts, vlan);
                let sink = if self.nout > 1 { &mut *qs } else { &mut *out };
                sink.push(q);
            }
            return;
        };
        let d = p.data_mut();
        d[..6].copy_from_slice(&dst_eth);
        d[6..12].copy_from_slice(&self.my_en);
        out.push(p);
    }

    /// Click's `handle_response`.
    fn handle_response(&mut self, p: &Packet, now: i64, out: &mut Batch, qs: &mut Batch) {
        let d = p.data();
        if d.len() < 42 {
            return;
        }
        self.responses += 1;
        if d[12..14] != [0x08, 0x06]
            || d[14..16] != [0x00, 0x01]
            || d[16..18] != [0x08, 0x00]
            || d[20..22] != [0x00, 0x02]
            || d[22] & 1 != 0
        {
            return;
        }
        let mut sha = [0u8; 6];
        sha.copy_from_slice(&d[22..28]);
        let spa = u32::from_be_bytes([d[28], d[29], d[30], d[31]]);
        let queued = self.insert(spa, sha, now);
        for q in queued {
            self.handle_ip(q, true, now, out, qs);
        }
    }

    /// Make sure the timer fires by `t`.
    fn arm(&mut self, ctx: &mut Ctx<'_>, t: i64) {
        if self.timer_at == 0 || t < self.timer_at {
            self.timer_at = t.max(1);
            ctx.schedule_at(self.timer_at as u64);
        }
    }

    fn next_retry(&self, now: i64) -> Option<i64> {
        self.table
            .values()
            .filter(|e| !e.queue.is_empty() && !e.is_known(now, self.timeout))
            .map(|e| e.polled_at + e.poll_interval())
            .min()
    }

    fn emit(&self, ctx: &mut Ctx<'_>, out: Batch, qs: Batch) {
        ctx.push(0, out);
        ctx.push(self.nout.saturating_sub(1), qs);
    }

    fn clear(&mut self) {
        self.table_drops += self.packet_count as u64;
        self.table.clear();
        self.age.clear();
        self.packet_count = 0;
    }
}

fn parse_ip(s: &str) -> Result<u32, String> {
    crate::parse_value::<Ipv4Addr>(s).map(u32::from)
}

impl Element for ARPQuerier {
    fn initialize(&mut self, ctx: &mut InitCtx<'_>) -> Result<(), String> {
        self.simtime = ctx.simtime();
        Ok(())
    }

    fn push(&mut self, port: usize, batch: Batch, ctx: &mut Ctx<'_>) {
        let now = ctx.now_ns() as i64;
        self.last_now = now;
        let mut out = Batch::new();
        let mut qs = Batch::new();
        if port == 0 {
            for p in batch {
                self.handle_ip(p, false, now, &mut out, &mut qs);
            }
        } else {
            for p in batch.iter() {
                self.handle_response(p, now, &mut out, &mut qs);
            }
        }
        self.emit(ctx, out, qs);
        if self.timeout != 0 && self.expire_at == 0 {
            self.expire_at = now + self.timeout;
            self.arm(ctx, self.expire_at);
        }
        if let Some(t) = self.next_retry(now) {
            self.arm(ctx, t);
        }
    }

    fn run_timer(&mut self, ctx: &mut Ctx<'_>) {
        let now = ctx.now_ns() as i64;
        self.last_now = now;
        self.timer_at = 0;
        if self.timeout != 0 && now >= self.expire_at {
            self.slim(now, 0);
            self.expire_at = now + self.timeout + SEC;
        }
        // Re-send queries for next hops that still hold packets.
        let mut qs = Batch::new();
        let ips: Vec<u32> = self.age.iter().copied().collect();
        for ip in ips {
            let Some(e) = self.table.get_mut(&ip) else {
                continue;
            };
            if e.queue.is_empty() || e.is_known(now, self.timeout) || !e.allow_poll(now) {
                continue;
            }
            e.mark_poll(now);
            let (ts, vlan) = e.queue.front().map_or((0, 0), |p| {
                (p.timestamp_ns(), p.anno().u16(offsets::VLAN_TCI))
            });
            let q = self.query(ip, BCAST_ETH, ts, vlan);
            qs.push(q);
        }
        ctx.push(self.nout.saturating_sub(1), qs);
        if self.timeout != 0 && !self.table.is_empty() {
            self.arm(ctx, self.expire_at);
        } else {
            self.expire_at = 0;
        }
        if let Some(t) = self.next_retry(now) {
            self.arm(ctx, t);
        }
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        Some(match name {
            "table" => {
                let now = self.handler_now();
                let mut s = String::new();
                for ip in &self.age {
                    let e = &self.table[ip];
                    let ms = (now - e.live_at).max(0) / 1_000_000;
                    s.push_str(&format!(
                        "{} {} {} {}.{:06}\n",
                        Ipv4Addr::from(*ip),
                        u8::from(e.is_known(now, self.timeout)),
                        EtherAddr(e.eth),
                        ms / 1000,
                        (ms % 1000) * 1000
                    ));
                }
                s
            }
            "stats" => format!(
                "{} packets killed\n{} ARP queries sent\n",
                self.drops + self.table_drops,
                self.queries
            ),
            "queries" => self.queries.to_string(),
            "responses" => self.responses.to_string(),
            "drops" => self.drops.to_string(),
            "count" => self.table.len().to_string(),
            "length" => self.packet_count.to_string(),
            "ipaddr" => Ipv4Addr::from(self.my_ip).to_string(),
            "broadcast" => Ipv4Addr::from(self.bcast).to_string(),
            _ => return None,
        })
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        let now = self.handler_now();
        Some(match name {
            "ipaddr" => parse_ip(value).map(|ip| self.my_ip = ip),
            "broadcast" => parse_ip(value).map(|ip| self.bcast = ip),
            "insert" => {
                let w: Vec<&str> = value.split_ascii_whitespace().collect();
                match w.as_slice() {
                    [ip, eth] => parse_ip(ip).and_then(|ip| {
                        let eth = crate::parse_value::<EtherAddr>(eth)?;
                        // Queued packets stay queued, as in Click.
                        let q = self.insert(ip, eth.0, now);
                        self.packet_count += q.len();
                        if let Some(e) = self.table.get_mut(&ip) {
                            e.queue = q;
                        }
                        Ok(())
                    }),
                    _ => Err("expected 'IP ETH'".to_string()),
                }
            }
            "delete" => parse_ip(value).map(|ip| {
                let q = self.insert(ip, BCAST_ETH, now);
                self.packet_count += q.len();
                if let Some(e) = self.table.get_mut(&ip) {
                    e.queue = q;
                }
            }),
            "clear" => {
                self.clear();
                self.queries = 0;
                self.drops = 0;
                self.responses = 0;
                Ok(())
            }
            _ => return None,
        })
    }

    fn drops(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("no destination", self.drops),
            ("ARP table full or expired", self.table_drops),
        ]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

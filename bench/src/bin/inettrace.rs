//! Writes a synthetic trace of internet-like traffic for the flow-record
//! benchmark (`bench/flowmon.sh`), deterministically (fixed seed), as a
//! classic pcap of whole frames (about 460 bytes on average: 0.93 GB for
//! the default 2 M packets), or with SNAPLEN each frame cut to its first
//! SNAPLEN bytes and its original length kept, as the header traces that
//! CAIDA (64 bytes) and MAWI (96) publish are (the same packets: 0.21 GB
//! at 96). `L4Parser` parses a cut frame as it was on the wire.
//!
//! ```text
//! inettrace OUT.pcap [PACKETS [SNAPLEN]]      default 2,000,000 packets, whole frames
//! ```
//!
//! Connections arrive as old ones end, 8,000 at a time, interleaved in
//! trains of 1 to 6 packets (as bursts arrive on a real link), 1 µs apart. Sizes are heavy-tailed (Pareto, shape
//! 1.2, capped at 20,000 packets), about 12 packets per one-way flow. 80 %
//! TCP (handshake, data one way and ACKs the other, FIN both ways; 40 % of
//! data packets are full 1,500-byte segments), 17 % UDP (both directions,
//! 60-1,300 bytes), 3 % ICMP echo; 15 % of connections over IPv6.

use linerate_bench::rng::Rng;
use linerate_io::pcap::{LinkType, PcapWriter};
use std::process::ExitCode;

const BASE_NS: u64 = 1_700_000_000 * 1_000_000_000;
const CONCURRENT: usize = 8_000;

#[derive(Clone, Copy)]
enum Kind {
    Tcp,
    Udp,
    Icmp,
}

/// One connection: endpoints, kind, and how many packets are left.
struct Conn {
    kind: Kind,
    v6: bool,
    client: [u8; 16],
    server: [u8; 16],
    cport: u16,
    sport: u16,
    sent: u32,
    total: u32,
}

fn new_conn(rng: &mut Rng) -> Conn {
    let r = rng.below(100);
    let kind = match r {
        0..=79 => Kind::Tcp,
        80..=96 => Kind::Udp,
        _ => Kind::Icmp,
    };
    let v6 = rng.below(100) < 15;
    let mut client = [0u8; 16];
    let mut server = [0u8; 16];
    let (c, s) = (rng.next_u64().to_be_bytes(), rng.next_u64().to_be_bytes());
    if v6 {
        client[0] = 0x20;
        client[1] = 0x01;
        client[8..].copy_from_slice(&c);
        server[0] = 0x2a;
        server[1] = 0x00;
        server[8..].copy_from_slice(&s);
    } else {
        client[..4].copy_from_slice(&[10, c[0], c[1], c[2]]);
        server[..4].copy_from_slice(&[s[0] | 1, s[1], s[2], s[3]]);
    }
    // Pareto(xm = 2, shape 1.2) one-way packets, both directions together.
    let one_way = (2.0 / (1.0 - rng.unit()).powf(1.0 / 1.2)).min(20_000.0) as u32;
    let total = match kind {
        Kind::Tcp => (2 * one_way).max(6),
        Kind::Udp | Kind::Icmp => (2 * one_way).max(2),
    };
    Conn {
        kind,
        v6,
        client,
        server,
        cport: 1024 + rng.below(60_000) as u16,
        sport: [443, 80, 53, 8080, 993, 22][rng.below(6) as usize],
        sent: 0,
        total,
    }
}

fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut s: u32 = h
        .chunks_exact(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// The next packet of `c` into `f`; returns the frame's full length.
fn packet(c: &mut Conn, rng: &mut Rng, f: &mut Vec<u8>) -> usize {
    let i = c.sent;
    c.sent += 1;
    let last2 = i + 2 >= c.total;
    // Direction and L4 header, payload size.
    let (to_server, proto, l4): (bool, u8, Vec<u8>) = match c.kind {
        Kind::Tcp => {
            let (dir, flags, size) = match i {
                0 => (true, 0x02, 0),
                1 => (false, 0x12, 0),
                2 => (true, 0x10, 0),
                _ if last2 => (i + 2 == c.total, 0x11, 0),
                _ if !i.is_multiple_of(2) => {
                    let size = if rng.below(10) < 4 {
                        1460
                    } else {
                        rng.below(1300) as usize + 40
                    };
                    (false, 0x18, size)
                }
                _ => (true, 0x10, 0),
            };
            let (s, d) = if dir {
                (c.cport, c.sport)
            } else {
                (c.sport, c.cport)
            };
            let mut h = vec![0u8; 20 + size];
            h[0..2].copy_from_slice(&s.to_be_bytes());
            h[2..4].copy_from_slice(&d.to_be_bytes());
            h[4..8].copy_from_slice(&(i * 1000).to_be_bytes());
            h[12] = 5 << 4;
            h[13] = flags;
            h[14..16].copy_from_slice(&65535u16.to_be_bytes());
            (dir, 6, h)
        }
        Kind::Udp => {
            let dir = i.is_multiple_of(2);
            let size = rng.below(1240) as usize + 32;
            let (s, d) = if dir {
                (c.cport, c.sport)
            } else {
                (c.sport, c.cport)
            };
            let mut h = vec![0u8; 8 + size];
            h[0..2].copy_from_slice(&s.to_be_bytes());
            h[2..4].copy_from_slice(&d.to_be_bytes());
            h[4..6].copy_from_slice(&((8 + size) as u16).to_be_bytes());
            (dir, 17, h)
        }
        Kind::Icmp => {
            let dir = i.is_multiple_of(2);
            let mut h = vec![0u8; 64];
            h[0] = match (c.v6, dir) {
                (false, true) => 8,
                (false, false) => 0,
                (true, true) => 128,
                (true, false) => 129,
            };
            h[4..6].copy_from_slice(&c.cport.to_be_bytes());
            h[6..8].copy_from_slice(&((i / 2) as u16).to_be_bytes());
            (dir, if c.v6 { 58 } else { 1 }, h)
        }
    };
    let (src, dst) = if to_server {
        (c.client, c.server)
    } else {
        (c.server, c.client)
    };
    f.clear();
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1]);
    if c.v6 {
        f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0]);
        f.extend_from_slice(&(l4.len() as u16).to_be_bytes());
        f.push(proto);
        f.push(64);
        f.extend_from_slice(&src);
        f.extend_from_slice(&dst);
    } else {
        f.extend_from_slice(&[0x08, 0x00]);
        let mut h = [0u8; 20];
        h[0] = 0x45;
        h[2..4].copy_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
        h[4..6].copy_from_slice(&(i as u16).to_be_bytes());
        h[6] = 0x40;
        h[8] = if to_server { 64 } else { 52 };
        h[9] = proto;
        h[12..16].copy_from_slice(&src[..4]);
        h[16..20].copy_from_slice(&dst[..4]);
        let ck = ipv4_checksum(&h);
        h[10..12].copy_from_slice(&ck.to_be_bytes());
        f.extend_from_slice(&h);
    }
    f.extend_from_slice(&l4);
    f.len()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let Some(out) = args.get(1) else {
        eprintln!("usage: inettrace OUT.pcap [PACKETS [SNAPLEN]]");
        return ExitCode::from(2);
    };
    let n: u64 = match args.get(2).map(|s| s.parse()) {
        None => 2_000_000,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("PACKETS: {e}");
            return ExitCode::from(2);
        }
    };
    let snap: usize = match args.get(3).map(|s| s.parse()) {
        None => 65535,
        Some(Ok(n)) if n >= 14 => n,
        _ => {
            eprintln!("SNAPLEN: a number of bytes, at least 14");
            return ExitCode::from(2);
        }
    };
    let mut w = match PcapWriter::create(out, LinkType::ETHERNET, snap as u32, false) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let mut rng = Rng(0x1f10_3a7e);
    let mut conns: Vec<Conn> = (0..CONCURRENT).map(|_| new_conn(&mut rng)).collect();
    let mut f = Vec::with_capacity(1600);
    let mut k = 0;
    while k < n {
        let j = rng.below(CONCURRENT as u64) as usize;
        for _ in 0..=rng.below(6) {
            let len = packet(&mut conns[j], &mut rng, &mut f);
            if let Err(e) = w.write(BASE_NS + k * 1000, len as u32, &f[..len.min(snap)]) {
                eprintln!("{out}: {e}");
                return ExitCode::FAILURE;
            }
            k += 1;
            if conns[j].sent >= conns[j].total {
                conns[j] = new_conn(&mut rng);
                break;
            }
            if k == n {
                break;
            }
        }
    }
    if let Err(e) = w.flush() {
        eprintln!("{out}: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

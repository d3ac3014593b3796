//! Writes the benchmark traces, deterministically (fixed seeds), as classic pcap with
//! microsecond timestamps (what Click's `ToDump` writes), through
//! `linerate_io::pcap::PcapWriter`.
//!
//! ```text
//! gentrace small    OUT.pcap   2,000,000 64-byte Ethernet/IPv4/UDP frames, 10,000 flows
//! gentrace small20m OUT.pcap   the same 2M frames 10 times over: 20,000,000 frames (1.6 GB)
//! gentrace large    OUT.pcap   500,000 1500-byte Ethernet/IPv4/UDP frames, 10,000 flows
//! gentrace example  OUT.pcap   1,000 mixed packets: TCP/UDP/ICMP over IPv4 and IPv6
//! ```
//!
//! Frame sizes are captured bytes (no FCS). Every IPv4 header checksum and every UDP, TCP
//! and ICMP checksum is valid. Timestamps start at 2023-11-14 22:13:20 UTC and increase:
//! by 1 µs per frame in the benchmark traces (also across the repetitions of `small20m`),
//! by random gaps in `example`.

use std::process::ExitCode;

use linerate_bench::classrules::{flows, FLOWS, SEED};
use linerate_bench::rng::Rng;
use linerate_io::pcap::{LinkType, PcapWriter};

const BASE_NS: u64 = 1_700_000_000 * 1_000_000_000;
const SRC_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const DST_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];

/// Internet checksum (RFC 1071) of `data`, starting from the partial sum `sum`.
fn checksum(data: &[u8], mut sum: u32) -> u16 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
        // Fold early so the sum never overflows, whatever the length.
        sum = (sum & 0xffff) + (sum >> 16);
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Partial sum of bytes taken as 16-bit big-endian words (even length).
fn sum_words(data: &[u8]) -> u32 {
    data.chunks_exact(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum()
}

#[derive(Clone, Copy)]
enum Addr {
    V4([u8; 4], [u8; 4]),
    V6([u8; 16], [u8; 16]),
}

/// Transport payload builders. Each writes a full Ethernet frame into `out`.
#[derive(Clone, Copy)]
enum L4 {
    Udp {
        sport: u16,
        dport: u16,
    },
    Tcp {
        sport: u16,
        dport: u16,
        seq: u32,
        ack: u32,
        flags: u8,
    },
    /// ICMP or ICMPv6 echo request.
    Echo {
        id: u16,
        seq: u16,
    },
}

const PROTO_ICMP: u8 = 1;
const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;
const PROTO_ICMPV6: u8 = 58;

/// Builds an Ethernet frame with an IP header (`ip_id` for IPv4) and the given transport
/// header and payload, all checksums filled in.
fn build_frame(out: &mut Vec<u8>, addr: Addr, l4: L4, ip_id: u16, payload: &[u8]) {
    out.clear();
    out.extend_from_slice(&DST_MAC);
    out.extend_from_slice(&SRC_MAC);
    let (proto, l4_hdr_len) = match (l4, addr) {
        (L4::Udp { .. }, _) => (PROTO_UDP, 8),
        (L4::Tcp { .. }, _) => (PROTO_TCP, 20),
        (L4::Echo { .. }, Addr::V4(..)) => (PROTO_ICMP, 8),
        (L4::Echo { .. }, Addr::V6(..)) => (PROTO_ICMPV6, 8),
    };
    let l4_len = l4_hdr_len + payload.len();
    // Pseudo-header sum for UDP/TCP/ICMPv6.
    let pseudo = match addr {
        Addr::V4(src, dst) => {
            out.extend_from_slice(&0x0800u16.to_be_bytes());
            let ip_start = out.len();
            out.push(0x45);
            out.push(0);
            out.extend_from_slice(&((20 + l4_len) as u16).to_be_bytes());
            out.extend_from_slice(&ip_id.to_be_bytes());
            out.extend_from_slice(&0x4000u16.to_be_bytes()); // DF
            out.push(64);
            out.push(proto);
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(&src);
            out.extend_from_slice(&dst);
            let c = checksum(&out[ip_start..], 0);
            out[ip_start + 10..ip_start + 12].copy_from_slice(&c.to_be_bytes());
            sum_words(&src) + sum_words(&dst) + u32::from(proto) + l4_len as u32
        }
        Addr::V6(src, dst) => {
            out.extend_from_slice(&0x86ddu16.to_be_bytes());
            out.extend_from_slice(&[0x60, 0, 0, 0]);
            out.extend_from_slice(&(l4_len as u16).to_be_bytes());
            out.push(proto);
            out.push(64);
            out.extend_from_slice(&src);
            out.extend_from_slice(&dst);
            sum_words(&src) + sum_words(&dst) + u32::from(proto) + l4_len as u32
        }
    };
    let l4_start = out.len();
    let csum_at = match l4 {
        L4::Udp { sport, dport } => {
            out.extend_from_slice(&sport.to_be_bytes());
            out.extend_from_slice(&dport.to_be_bytes());
            out.extend_from_slice(&(l4_len as u16).to_be_bytes());
            out.extend_from_slice(&[0, 0]);
            6
        }
        L4::Tcp {
            sport,
            dport,
            seq,
            ack,
            flags,
        } => {
            out.extend_from_slice(&sport.to_be_bytes());
            out.extend_from_slice(&dport.to_be_bytes());
            out.extend_from_slice(&seq.to_be_bytes());
            out.extend_from_slice(&ack.to_be_bytes());
            out.push(5 << 4);
            out.push(flags);
            out.extend_from_slice(&65535u16.to_be_bytes());
            out.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
            16
        }
        L4::Echo { id, seq } => {
            out.push(if proto == PROTO_ICMP { 8 } else { 128 });
            out.push(0);
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&seq.to_be_bytes());
            2
        }
    };
    out.extend_from_slice(payload);
    // ICMPv4 has no pseudo-header.
    let initial = if proto == PROTO_ICMP { 0 } else { pseudo };
    let mut c = checksum(&out[l4_start..], initial);
    if proto == PROTO_UDP && c == 0 {
        c = 0xffff; // 0 means "no checksum" in UDP
    }
    out[l4_start + csum_at..l4_start + csum_at + 2].copy_from_slice(&c.to_be_bytes());
}

/// Writes `packets` UDP frames of `frame_len` bytes over the 10,000 flows, `repeat` times
/// (identical frames each time, timestamps going on).
fn write_bench(
    w: &mut PcapWriter,
    packets: u64,
    frame_len: usize,
    repeat: u64,
) -> std::io::Result<()> {
    let payload_len = frame_len - 14 - 20 - 8;
    let mut payload = vec![0u8; payload_len];
    for (i, b) in payload.iter_mut().enumerate().skip(8) {
        *b = i as u8;
    }
    let mut frame = Vec::with_capacity(frame_len);
    let mut ts = BASE_NS;
    for _ in 0..repeat {
        let mut rng = Rng(SEED);
        let flows = flows(&mut rng);
        for i in 0..packets {
            let f = &flows[rng.below(FLOWS as u64) as usize];
            payload[..8].copy_from_slice(&i.to_be_bytes());
            let l4 = L4::Udp {
                sport: f.sport,
                dport: f.dport,
            };
            build_frame(&mut frame, Addr::V4(f.src, f.dst), l4, i as u16, &payload);
            w.write(ts, frame.len() as u32, &frame)?;
            ts += 1000;
        }
    }
    Ok(())
}

/// 1,000 packets over 40 flows of random kinds (TCP/UDP/ICMP, IPv4/IPv6).
fn write_example(w: &mut PcapWriter) -> std::io::Result<()> {
    struct ExFlow {
        addr: Addr,
        kind: u8, // 0 TCP, 1 UDP, 2 echo
        sport: u16,
        dport: u16,
        seq: u32,
        sent: u16,
    }
    let mut rng = Rng(0x6578_616d_706c_6531); // "example1"
    let mut flows: Vec<ExFlow> = (0..40u16)
        .map(|i| {
            let v6 = rng.below(4) == 0;
            let addr = if v6 {
                let mut src = [0u8; 16];
                let mut dst = [0u8; 16];
                src[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
                dst[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
                src[15] = (i + 1) as u8;
                dst[14] = 0x10;
                dst[15] = rng.below(200) as u8 + 1;
                Addr::V6(src, dst)
            } else {
                Addr::V4(
                    [10, 0, 0, (i + 1) as u8],
                    [192, 0, 2, rng.below(200) as u8 + 1],
                )
            };
            let kind = match rng.below(10) {
                0..=4 => 0,
                5..=8 => 1,
                _ => 2,
            };
            let dport = [80, 443, 8080, 9000, 5201][rng.below(5) as usize];
            ExFlow {
                addr,
                kind,
                sport: 32768 + rng.below(28_000) as u16,
                dport,
                seq: rng.next_u64() as u32,
                sent: 0,
            }
        })
        .collect();
    let mut frame = Vec::new();
    let mut payload = Vec::new();
    let mut ts = BASE_NS;
    for n in 0..1000u16 {
        let f = &mut flows[rng.below(40) as usize];
        let len = match f.kind {
            0 if f.sent == 0 => 0,
            0 => [0, 0, 40, 200, 512][rng.below(5) as usize],
            1 => 20 + rng.below(200) as usize,
            _ => 56,
        };
        payload.clear();
        payload.extend((0..len).map(|_| rng.next_u64() as u8));
        let l4 = match f.kind {
            0 => L4::Tcp {
                sport: f.sport,
                dport: f.dport,
                seq: f.seq,
                ack: if f.sent == 0 { 0 } else { 1 },
                flags: if f.sent == 0 {
                    0x02 // SYN
                } else if len > 0 {
                    0x18 // PSH|ACK
                } else {
                    0x10 // ACK
                },
            },
            1 => L4::Udp {
                sport: f.sport,
                dport: f.dport,
            },
            _ => L4::Echo {
                id: f.sport,
                seq: f.sent,
            },
        };
        f.seq = f.seq.wrapping_add(len as u32 + u32::from(f.sent == 0));
        f.sent += 1;
        build_frame(&mut frame, f.addr, l4, n, &payload);
        w.write(ts, frame.len() as u32, &frame)?;
        ts += 1000 * (1 + rng.below(2000));
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, mode, out] = args.as_slice() else {
        eprintln!("usage: gentrace small|small20m|large|example OUT.pcap");
        return ExitCode::from(2);
    };
    let mut w = match PcapWriter::create(out, LinkType::ETHERNET, 2000, false) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("gentrace: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match mode.as_str() {
        "small" => write_bench(&mut w, 2_000_000, 64, 1),
        "small20m" => write_bench(&mut w, 2_000_000, 64, 10),
        "large" => write_bench(&mut w, 500_000, 1500, 1),
        "example" => write_example(&mut w),
        _ => {
            eprintln!("gentrace: unknown trace '{mode}' (small, small20m, large, example)");
            return ExitCode::from(2);
        }
    };
    match result.and_then(|()| w.flush()) {
        Ok(()) => {
            println!("{out}: {} packets", w.count());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gentrace: {out}: {e}");
            ExitCode::FAILURE
        }
    }
}

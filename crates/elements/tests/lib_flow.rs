//! Flow meter tests: MicroflowTable, FlowAggregator, FlowCSV and FlowJSON
//! on literal packets, on a synthetic trace with per-flow ground truth (the
//! aggregator's records, and the one-way records read back from an IPFIX
//! file), on the real LAN trace, and fast against reference
//! implementations.

mod common;

use common::{decode_ipfix, field, field_bytes, ipfix_file_messages};

use linerate_elements::flow::microflowtable::Microflow;
use linerate_elements::flow::record::{end_reason, Direction, FlowRecord};
use linerate_io::pcap::{LinkType, PcapWriter};
use linerate_runtime::anno::offsets;
use linerate_runtime::flow::{map_v4, FlowKey};
use linerate_runtime::{
    Batch, ConfigureCtx, Ctx, Element, ElementClass, Packet, Registry, Router, RouterOptions,
};
use std::any::Any;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

// ---------------------------------------------------------------- test elements

/// Records captured by `Grab(NAME)`, by name.
static GRABBED: Mutex<Vec<(String, FlowRecord)>> = Mutex::new(Vec::new());

struct Grab(String);

impl Element for Grab {
    fn push(&mut self, _port: usize, batch: Batch, _ctx: &mut Ctx<'_>) {
        let mut g = GRABBED.lock().unwrap();
        for p in batch.iter() {
            let r = FlowRecord::from_bytes(p.data()).expect("a flow record");
            g.push((self.0.clone(), r));
        }
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn grab_make(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    Ok(Box::new(Grab(ctx.args[0].clone())))
}

fn grabbed(name: &str) -> Vec<FlowRecord> {
    GRABBED
        .lock()
        .unwrap()
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, r)| *r)
        .collect()
}

/// A minimal Ethernet/802.1Q/IPv4/IPv6 parser leaving the flow-key
/// annotations (`linerate_runtime::flow`), standing in for L4Parser.
struct TestL4;

fn be16(d: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([d[i], d[i + 1]])
}

impl Element for TestL4 {
    fn push(&mut self, _port: usize, mut batch: Batch, ctx: &mut Ctx<'_>) {
        for p in batch.iter_mut() {
            let d = p.data().to_vec();
            if d.len() < 14 {
                continue;
            }
            let (mut et, mut nh, mut tci) = (be16(&d, 12), 14, 0);
            if et == 0x8100 && d.len() >= 18 {
                tci = be16(&d, 14);
                et = be16(&d, 16);
                nh = 18;
            }
            p.anno_mut().set_u16(offsets::VLAN_TCI, tci);
            match et {
                0x0800 if d.len() >= nh + 20 => {
                    p.set_network_header(nh as isize);
                    p.anno_mut().set_u8(offsets::L4_PROTO, d[nh + 9]);
                    if be16(&d, nh + 6) & 0x1fff == 0 {
                        p.set_transport_header((nh + (d[nh] as usize & 15) * 4) as isize);
                    }
                }
                0x86dd if d.len() >= nh + 40 => {
                    p.set_network_header(nh as isize);
                    let (mut next, mut th) = (d[nh + 6], nh + 40);
                    let mut first = true;
                    if next == 44 && d.len() >= th + 8 {
                        first = be16(&d, th + 2) >> 3 == 0;
                        next = d[th];
                        th += 8;
                    }
                    p.anno_mut().set_u8(offsets::L4_PROTO, next);
                    if first {
                        p.set_transport_header(th as isize);
                    }
                }
                _ => {}
            }
        }
        ctx.push(0, batch);
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn testl4_make(_ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    Ok(Box::new(TestL4))
}

fn registry() -> Registry {
    let mut reg = linerate_elements::registry();
    reg.add(ElementClass {
        name: "Grab",
        port_count: "1/0",
        processing: "h/h",
        doc: "",
        make: grab_make,
    });
    reg.add(ElementClass {
        name: "TestL4",
        port_count: "1/1",
        processing: "h/h",
        doc: "",
        make: testl4_make,
    });
    reg
}

fn run(text: &str) -> Router {
    run_with(text, RouterOptions::default())
}

/// [`run`] with router options `opts`.
fn run_with(text: &str, opts: RouterOptions) -> Router {
    let reg = registry();
    let c = common::config(&reg, text);
    let mut r = Router::build(&c, &reg, opts).unwrap_or_else(|e| panic!("{e}"));
    r.run();
    r
}

fn read(r: &Router, h: &str) -> String {
    let v = r
        .handle()
        .call(h, None)
        .unwrap_or_else(|e| panic!("{h}: {e}"));
    v.trim_end().to_string()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("linerate-lib-flow-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

// ---------------------------------------------------------------- frames

/// A frame and its timestamp (ns).
type Frame = (u64, Vec<u8>);

fn write_pcap(path: &Path, frames: &[Frame]) {
    let mut w = PcapWriter::create(path, LinkType::ETHERNET, 65535, true).unwrap();
    for (t, f) in frames {
        w.write(*t, f.len() as u32, f).unwrap();
    }
    w.flush().unwrap();
}

fn tcp(sport: u16, dport: u16, flags: u8, payload: usize) -> Vec<u8> {
    let mut h = vec![0u8; 20 + payload];
    h[0..2].copy_from_slice(&sport.to_be_bytes());
    h[2..4].copy_from_slice(&dport.to_be_bytes());
    h[12] = 0x50;
    h[13] = flags;
    h
}

fn udp(sport: u16, dport: u16, payload: usize) -> Vec<u8> {
    let mut h = vec![0u8; 8 + payload];
    h[0..2].copy_from_slice(&sport.to_be_bytes());
    h[2..4].copy_from_slice(&dport.to_be_bytes());
    h[4..6].copy_from_slice(&((8 + payload) as u16).to_be_bytes());
    h
}

fn icmp_echo(ty: u8, id: u16, payload: usize) -> Vec<u8> {
    let mut h = vec![0u8; 8 + payload];
    h[0] = ty;
    h[4..6].copy_from_slice(&id.to_be_bytes());
    h
}

fn ip_checksum(h: &[u8]) -> u16 {
    let mut s: u32 = 0;
    for c in h.chunks(2) {
        s += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32;
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

struct Ip {
    v6: bool,
    src: [u8; 16],
    dst: [u8; 16],
    proto: u8,
    ttl: u8,
    tos: u8,
    vlan: u16,
    /// IPv4 fragment offset field (units of 8 bytes) and MF bit, or an IPv6
    /// fragment header when `Some`.
    frag: Option<(u16, bool)>,
}

fn frame(ip: &Ip, l4: &[u8]) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1];
    if ip.vlan != 0 {
        f.extend_from_slice(&[0x81, 0x00]);
        f.extend_from_slice(&ip.vlan.to_be_bytes());
    }
    if !ip.v6 {
        f.extend_from_slice(&[0x08, 0x00]);
        let mut h = [0u8; 20];
        h[0] = 0x45;
        h[1] = ip.tos;
        h[2..4].copy_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
        if let Some((off, mf)) = ip.frag {
            h[6..8].copy_from_slice(&(off | if mf { 0x2000 } else { 0 }).to_be_bytes());
        }
        h[8] = ip.ttl;
        h[9] = ip.proto;
        h[12..16].copy_from_slice(&ip.src[12..]);
        h[16..20].copy_from_slice(&ip.dst[12..]);
        let c = ip_checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&h);
    } else {
        f.extend_from_slice(&[0x86, 0xdd]);
        let fh = if ip.frag.is_some() { 8 } else { 0 };
        let mut h = [0u8; 40];
        h[0] = 0x60 | (ip.tos >> 4);
        h[1] = ip.tos << 4;
        h[4..6].copy_from_slice(&((fh + l4.len()) as u16).to_be_bytes());
        h[6] = if fh > 0 { 44 } else { ip.proto };
        h[7] = ip.ttl;
        h[8..24].copy_from_slice(&ip.src);
        h[24..40].copy_from_slice(&ip.dst);
        f.extend_from_slice(&h);
        if let Some((off, mf)) = ip.frag {
            let mut x = [0u8; 8];
            x[0] = ip.proto;
            x[2..4].copy_from_slice(&((off << 3) | mf as u16).to_be_bytes());
            f.extend_from_slice(&x);
        }
    }
    f.extend_from_slice(l4);
    f
}

fn v4(a: [u8; 4]) -> [u8; 16] {
    map_v4(a)
}

fn ip4(src: [u8; 4], dst: [u8; 4], proto: u8) -> Ip {
    Ip {
        v6: false,
        src: v4(src),
        dst: v4(dst),
        proto,
        ttl: 64,
        tos: 0,
        vlan: 0,
        frag: None,
    }
}

const S: u64 = 1_000_000_000;
const T0: u64 = 1_700_000_000 * S;

// ---------------------------------------------------------------- literal packets

fn literal_frames() -> Vec<Frame> {
    let a = [10, 0, 0, 1];
    let b = [10, 0, 0, 2];
    let t = |us: u64| T0 + us * 1000;
    let fwd = ip4(a, b, 6);
    let rev = ip4(b, a, 6);
    let mut udp_ip = ip4(a, b, 17);
    udp_ip.tos = 0x10;
    udp_ip.ttl = 7;
    vec![
        (t(0), frame(&fwd, &tcp(1000, 80, 0x02, 0))), // SYN, 40 bytes
        (t(100), frame(&rev, &tcp(80, 1000, 0x12, 0))), // SYN-ACK
        (t(250), frame(&fwd, &tcp(1000, 80, 0x10, 100))), // ACK + 100 B: 140
        (t(300), frame(&udp_ip, &udp(53, 53, 22))),   // UDP: 50 bytes
        (t(1250), frame(&fwd, &tcp(1000, 80, 0x11, 0))), // FIN-ACK
        (t(2000), vec![0xff; 60]),                    // not IP: ignored
    ]
}

#[test]
fn literal_packets_give_exact_csv_records() {
    let pcap = tmp("literal.pcap");
    write_pcap(&pcap, &literal_frames());
    for imp in ["fast", "reference"] {
        let csv = tmp(&format!("literal-{imp}.csv"));
        let r = run(&format!(
            "FromDump({}, STOP true) -> CheckIPHeader(14) -> mt :: MicroflowTable(SLOTS 64, TCPEND false, IMPL {imp})
             -> fa :: FlowAggregator(ACTIVE 0, IDLE 0, TCPEND false, IMPL {imp}) -> c :: FlowCSV({});",
            pcap.display(),
            csv.display()
        ));
        let text = std::fs::read_to_string(&csv).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines[1..].sort();
        assert_eq!(
            lines[0],
            "version,src,dst,sport,dport,proto,vlan,biflow,end_reason,packets,bytes,first,last,duration,\
             min_iat,max_iat,min_len,max_len,first_len,second_len,tcp_flags,tos,min_ttl,max_ttl,\
             rev_packets,rev_bytes,rev_first,rev_last,rev_min_iat,rev_max_iat,rev_min_len,rev_max_len,\
             rev_first_len,rev_second_len,rev_tcp_flags,rev_tos,rev_min_ttl,rev_max_ttl"
        );
        let zeros = ",0,0,0.000000,0.000000,0.000000,0.000000,0,0,0,0,0,0,0,0";
        assert_eq!(
            &lines[1..],
            [
                format!("4,10.0.0.1,10.0.0.2,1000,80,6,0,0,4,3,220,1700000000.000000,1700000000.001250,0.001250,0.000250,0.001000,40,140,40,140,19,0,64,64{zeros}"),
                format!("4,10.0.0.1,10.0.0.2,53,53,17,0,0,4,1,50,1700000000.000300,1700000000.000300,0.000000,0.000000,0.000000,50,50,50,0,0,16,7,7{zeros}"),
                format!("4,10.0.0.2,10.0.0.1,80,1000,6,0,0,4,1,40,1700000000.000100,1700000000.000100,0.000000,0.000000,0.000000,40,40,40,0,18,0,64,64{zeros}"),
            ],
            "{imp}"
        );
        assert_eq!(read(&r, "mt.packets"), "5");
        assert_eq!(read(&r, "mt.microflows"), "3");
        assert_eq!(read(&r, "mt.flushed"), "3");
        assert_eq!(read(&r, "fa.microflows"), "3");
        assert_eq!(read(&r, "fa.flows"), "3");
        assert_eq!(read(&r, "fa.records"), "3");
        assert_eq!(read(&r, "fa.forced_end"), "3");
        assert_eq!(read(&r, "c.count"), "3");
        assert_eq!(
            read(&r, "mt.ignored"),
            "0",
            "CheckIPHeader dropped the non-IP frame"
        );
    }
}

#[test]
fn biflow_json_end_of_flow_and_ignored_counts() {
    let pcap = tmp("literal-bi.pcap");
    write_pcap(&pcap, &literal_frames());
    let json = tmp("literal.jsonl");
    let r = run(&format!(
        "FromDump({}, STOP true) -> TestL4 -> mt :: MicroflowTable(SLOTS 64)
         -> fa :: FlowAggregator(ACTIVE 0, IDLE 0, BIFLOW true) -> FlowJSON({});",
        pcap.display(),
        json.display()
    ));
    let text = std::fs::read_to_string(&json).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    let zero = "{\"packets\":0,\"bytes\":0,\"first\":0.000000,\"last\":0.000000,\"min_iat\":0.000000,\"max_iat\":0.000000,\"min_len\":0,\"max_len\":0,\"first_len\":0,\"second_len\":0,\"tcp_flags\":0,\"tos\":0,\"min_ttl\":0,\"max_ttl\":0}";
    // The FIN evicted the TCP microflows (both directions) first, so the TCP flow was
    // created first; a FIN from one side only does not end a biflow.
    assert_eq!(
        lines[0],
        "{\"version\":4,\"src\":\"10.0.0.1\",\"dst\":\"10.0.0.2\",\"sport\":1000,\"dport\":80,\"proto\":6,\"vlan\":0,\"biflow\":true,\"end_reason\":4,\"duration\":0.001250,\
         \"fwd\":{\"packets\":3,\"bytes\":220,\"first\":1700000000.000000,\"last\":1700000000.001250,\"min_iat\":0.000250,\"max_iat\":0.001000,\"min_len\":40,\"max_len\":140,\"first_len\":40,\"second_len\":140,\"tcp_flags\":19,\"tos\":0,\"min_ttl\":64,\"max_ttl\":64},\
         \"rev\":{\"packets\":1,\"bytes\":40,\"first\":1700000000.000100,\"last\":1700000000.000100,\"min_iat\":0.000000,\"max_iat\":0.000000,\"min_len\":40,\"max_len\":40,\"first_len\":40,\"second_len\":0,\"tcp_flags\":18,\"tos\":0,\"min_ttl\":64,\"max_ttl\":64}}"
    );
    assert_eq!(
        lines[1],
        format!("{{\"version\":4,\"src\":\"10.0.0.1\",\"dst\":\"10.0.0.2\",\"sport\":53,\"dport\":53,\"proto\":17,\"vlan\":0,\"biflow\":true,\"end_reason\":4,\"duration\":0.000000,\
         \"fwd\":{{\"packets\":1,\"bytes\":50,\"first\":1700000000.000300,\"last\":1700000000.000300,\"min_iat\":0.000000,\"max_iat\":0.000000,\"min_len\":50,\"max_len\":50,\"first_len\":50,\"second_len\":0,\"tcp_flags\":0,\"tos\":16,\"min_ttl\":7,\"max_ttl\":7}},\
         \"rev\":{zero}}}")
    );
    assert_eq!(
        read(&r, "mt.end_evictions"),
        "2",
        "the FIN evicts its microflow and the other direction's"
    );
    assert_eq!(read(&r, "mt.ignored"), "1", "the non-IP frame");
    assert_eq!(
        read(&r, "fa.ignored"),
        "1",
        "carried in-band to the aggregator"
    );
    assert_eq!(read(&r, "fa.flows"), "2");
    assert_eq!(
        read(&r, "fa.microflows"),
        "3",
        "the ignored count rode on a flushed microflow: no count-only record"
    );
}

#[test]
fn timeouts_and_tcp_end_in_packet_time() {
    let a = [10, 0, 0, 1];
    let b = [10, 0, 0, 2];
    let u = ip4(a, b, 17);
    let t = ip4(a, b, 6);
    let frames = vec![
        (T0, frame(&u, &udp(1, 2, 0))),
        (T0 + 5 * S, frame(&u, &udp(1, 2, 0))),
        (T0 + 30 * S, frame(&u, &udp(1, 2, 0))), // idle > 10 s: new flow
        (T0 + 31 * S, frame(&t, &tcp(5, 6, 0x02, 0))),
        (T0 + 32 * S, frame(&t, &tcp(5, 6, 0x04, 0))), // RST: end of flow
        (T0 + 33 * S, frame(&t, &tcp(5, 6, 0x10, 0))), // a new flow
        (T0 + 34 * S, frame(&u, &udp(1, 2, 0))),
        (T0 + 44 * S, frame(&u, &udp(1, 2, 0))),
        (T0 + 54 * S, frame(&u, &udp(1, 2, 0))), // active 20 s from 30 s
    ];
    let pcap = tmp("timeouts.pcap");
    write_pcap(&pcap, &frames);
    for imp in ["fast", "reference"] {
        let name = format!("timeouts-{imp}");
        let r = run(&format!(
            "FromDump({}, STOP true) -> CheckIPHeader(14) -> MicroflowTable(SLOTS 16, IDLE 2, IMPL {imp})
             -> fa :: FlowAggregator(ACTIVE 20, IDLE 10, TIME packet, IMPL {imp}) -> Grab({name});",
            pcap.display()
        ));
        // In order of their first packets (the order of export depends on
        // when the fast path's watermark passes each deadline).
        let mut recs: Vec<(u64, u16, u64, u8)> = grabbed(&name)
            .iter()
            .map(|r| {
                (
                    (r.fwd.first_ns - T0) / S,
                    r.key.sport,
                    r.fwd.packets,
                    r.end_reason,
                )
            })
            .collect();
        recs.sort();
        let recs: Vec<(u16, u64, u64, u8)> =
            recs.into_iter().map(|(t, p, n, e)| (p, n, t, e)).collect();
        assert_eq!(
            recs,
            [
                (1, 2, 0, end_reason::IDLE_TIMEOUT),
                // Active from 30 s (deadline 50 s): the 54 s packet is a
                // new record.
                (1, 3, 30, end_reason::ACTIVE_TIMEOUT),
                (5, 2, 31, end_reason::END_OF_FLOW),
                // Idle from 33 s (deadline 43 s).
                (5, 1, 33, end_reason::IDLE_TIMEOUT),
                (1, 1, 54, end_reason::FORCED_END),
            ],
            "{imp}"
        );
        assert_eq!(read(&r, "fa.idle_timeouts"), "2");
        assert_eq!(read(&r, "fa.active_timeouts"), "1");
        assert_eq!(read(&r, "fa.end_of_flow"), "1");
    }
}

/// A biflow ends when each side has sent a FIN (one FIN does not end it),
/// and a packet after that starts a new flow: in both implementations.
#[test]
fn biflow_ends_on_a_fin_from_each_side() {
    let (a, b) = ([10, 0, 0, 1], [10, 0, 0, 2]);
    let (ab, ba) = (ip4(a, b, 6), ip4(b, a, 6));
    let ms = S / 1000;
    let frames = vec![
        (T0, frame(&ab, &tcp(5, 6, 0x02, 0))),
        (T0 + ms, frame(&ba, &tcp(6, 5, 0x12, 0))),
        (T0 + 2 * ms, frame(&ab, &tcp(5, 6, 0x11, 0))), // one FIN
        (T0 + 3 * ms, frame(&ba, &tcp(6, 5, 0x11, 0))), // the other side's
        (T0 + 4 * ms, frame(&ab, &tcp(5, 6, 0x10, 0))), // a new flow
    ];
    let pcap = tmp("biflow-fins.pcap");
    write_pcap(&pcap, &frames);
    for imp in ["fast", "reference"] {
        let name = format!("biflow-fins-{imp}");
        let r = run(&format!(
            "FromDump({}, STOP true) -> CheckIPHeader(14) -> MicroflowTable(SLOTS 16, IMPL {imp})
             -> fa :: FlowAggregator(ACTIVE 0, IDLE 0, BIFLOW true, IMPL {imp}) -> Grab({name});",
            pcap.display()
        ));
        let mut recs: Vec<(u64, u64, u64, u8)> = grabbed(&name)
            .iter()
            .map(|r| {
                (
                    (r.fwd.first_ns - T0) / ms,
                    r.fwd.packets,
                    r.rev.packets,
                    r.end_reason,
                )
            })
            .collect();
        recs.sort();
        assert_eq!(
            recs,
            [
                (0, 2, 2, end_reason::END_OF_FLOW),
                (4, 1, 0, end_reason::FORCED_END),
            ],
            "{imp}"
        );
        assert_eq!(read(&r, "fa.end_of_flow"), "1", "{imp}");
    }
}

// ---------------------------------------------------------------- synthetic trace

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One generated packet: time, frame, and its flow key (None: ignored).
struct GenPkt {
    t: u64,
    frame: Vec<u8>,
    key: Option<(FlowKey, u16)>,
    len: u16,
    ttl: u8,
    tos: u8,
    flags: u8,
}

fn synthetic(seed: u64, nflows: usize) -> Vec<GenPkt> {
    synthetic_with(seed, nflows, false)
}

/// [`synthetic`]; with `after_fin`, half the TCP connections go on after
/// their FIN: the side that sent it sends 1-3 more packets (ACKs, the
/// last of them a retransmitted FIN one time in two), as a FIN answered
/// late or lost does.
fn synthetic_with(seed: u64, nflows: usize, after_fin: bool) -> Vec<GenPkt> {
    let mut rng = Rng((seed ^ 0x9e37_79b9_7f4a_7c15).wrapping_mul(0xbf58_476d_1ce4_e5b9) | 1);
    let mut pkts = Vec::new();
    for f in 0..nflows {
        let kind = rng.below(6);
        let v6 = kind % 2 == 1;
        let addr = |h: u8, i: usize| -> [u8; 16] {
            if v6 {
                let mut a = [0u8; 16];
                a[0] = 0x20;
                a[1] = 0x01;
                a[13] = h;
                a[14..].copy_from_slice(&(i as u16).to_be_bytes());
                a
            } else {
                v4([10, h, (i >> 8) as u8, i as u8])
            }
        };
        let (ca, sa) = (addr(1, f), addr(2, f % 7));
        // Heavy-tailed flow sizes: Pareto, shape 1, capped.
        let n = ((1.0 / rng.unit().max(1e-9)) as u64).clamp(1, 3000);
        let vlan = if rng.below(8) == 0 { 100 } else { 0 };
        let tos = (rng.below(4) * 8) as u8;
        let mut t = T0 + rng.below(20 * S);
        let port = 1024 + f as u16;
        let proto = match kind / 2 {
            0 => 6,
            1 => 17,
            _ => {
                if v6 {
                    58
                } else {
                    1
                }
            }
        };
        let conn = n + if proto == 6 { 3 } else { 0 };
        let extra = if after_fin && proto == 6 && rng.below(2) == 0 {
            1 + rng.below(3)
        } else {
            0
        };
        let mut fin_to_server = true;
        for i in 0..conn + extra {
            let span = if rng.below(10) == 0 {
                2 * S
            } else {
                20_000_000
            };
            t += 1 + rng.below(span);
            let to_server = if i < conn {
                proto != 6 || i % 2 == 0 || i == 2
            } else {
                fin_to_server
            };
            let (src, dst) = if to_server { (ca, sa) } else { (sa, ca) };
            let ip = Ip {
                v6,
                src,
                dst,
                proto,
                ttl: 60 + rng.below(5) as u8,
                tos,
                vlan,
                frag: None,
            };
            let pay = if rng.below(3) == 0 {
                rng.below(1400) as usize
            } else {
                rng.below(100) as usize
            };
            let last = i + 1 == conn;
            if last {
                fin_to_server = to_server;
            }
            let (l4, flags, sport, dport) = match proto {
                6 => {
                    let flags = match i {
                        0 => 0x02,
                        1 => 0x12,
                        _ if last => 0x11,
                        _ if i + 1 == conn + extra && extra % 2 == 0 => 0x11,
                        _ if i >= conn => 0x10,
                        _ => 0x18,
                    };
                    let (sp, dp) = if to_server { (port, 443) } else { (443, port) };
                    (tcp(sp, dp, flags, pay), flags, sp, dp)
                }
                17 => (udp(port, 53, pay), 0, port, 53),
                _ => {
                    let req = i % 2 == 0;
                    let ty = match (v6, req) {
                        (false, true) => 8,
                        (false, false) => 0,
                        (true, true) => 128,
                        (true, false) => 129,
                    };
                    (icmp_echo(ty, port, pay), 0, port, (ty as u16) << 8)
                }
            };
            let (src, dst) = if proto == 1 || proto == 58 {
                if i % 2 == 0 {
                    (ca, sa)
                } else {
                    (sa, ca)
                }
            } else {
                (src, dst)
            };
            let ip = Ip { src, dst, ..ip };
            let fr = frame(&ip, &l4);
            let len = (fr.len() - 14 - if vlan != 0 { 4 } else { 0 }) as u16;
            pkts.push(GenPkt {
                t,
                frame: fr,
                key: Some((
                    FlowKey {
                        src,
                        dst,
                        sport,
                        dport,
                        proto,
                        version: if v6 { 6 } else { 4 },
                    },
                    vlan,
                )),
                len,
                ttl: ip.ttl,
                tos,
                flags,
            });
        }
    }
    // Non-first fragments (IPv4 and IPv6), first fragments, and non-IP.
    for i in 0..40u16 {
        let v6 = i % 2 == 1;
        let mut ip = ip4([10, 9, 9, 9], [10, 8, 8, 8], 17);
        if v6 {
            ip.v6 = true;
            ip.src = [0x20, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 9];
            ip.dst = [0x20, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 8];
        }
        let first = i % 4 < 2;
        ip.frag = Some((if first { 0 } else { 185 }, first));
        let l4 = udp(7000 + i, 7, 1000);
        let fr = frame(&ip, &l4);
        let len = (fr.len() - 14) as u16;
        pkts.push(GenPkt {
            t: T0 + rng.below(20 * S),
            frame: fr,
            key: first.then_some((
                FlowKey {
                    src: ip.src,
                    dst: ip.dst,
                    sport: 7000 + i,
                    dport: 7,
                    proto: 17,
                    version: if v6 { 6 } else { 4 },
                },
                0,
            )),
            len,
            ttl: 64,
            tos: 0,
            flags: 0,
        });
    }
    for _ in 0..10 {
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&[0x08, 0x06]);
        pkts.push(GenPkt {
            t: T0 + rng.below(20 * S),
            frame: f,
            key: None,
            len: 0,
            ttl: 0,
            tos: 0,
            flags: 0,
        });
    }
    pkts.sort_by_key(|p| p.t);
    // Strictly increasing times, so "first" and the direction order are unambiguous.
    for i in 1..pkts.len() {
        if pkts[i].t <= pkts[i - 1].t {
            pkts[i].t = pkts[i - 1].t + 1000;
        }
    }
    pkts
}

/// Per-direction ground truth, computed packet by packet.
/// A direction's key: 5-tuple and VLAN.
type Key = (FlowKey, u16);

fn truth<'a>(pkts: impl IntoIterator<Item = &'a GenPkt>) -> (Vec<Key>, HashMap<Key, Direction>) {
    let mut order = Vec::new();
    let mut m: HashMap<Key, Direction> = HashMap::new();
    for p in pkts {
        let Some(k) = p.key else { continue };
        let d = m.entry(k).or_insert_with(|| {
            order.push(k);
            Direction::default()
        });
        if d.packets == 0 {
            *d = Direction {
                packets: 1,
                bytes: p.len as u64,
                first_ns: p.t,
                last_ns: p.t,
                min_len: p.len,
                max_len: p.len,
                first_len: p.len,
                tcp_flags: p.flags,
                tos: p.tos,
                min_ttl: p.ttl,
                max_ttl: p.ttl,
                ..Direction::default()
            };
            continue;
        }
        let gap = p.t - d.last_ns;
        d.min_iat_ns = if d.packets == 1 {
            gap
        } else {
            d.min_iat_ns.min(gap)
        };
        d.max_iat_ns = d.max_iat_ns.max(gap);
        if d.packets == 1 {
            d.second_len = p.len;
        }
        d.packets += 1;
        d.bytes += p.len as u64;
        d.last_ns = p.t;
        d.min_len = d.min_len.min(p.len);
        d.max_len = d.max_len.max(p.len);
        d.tcp_flags |= p.flags;
        d.min_ttl = d.min_ttl.min(p.ttl);
        d.max_ttl = d.max_ttl.max(p.ttl);
    }
    (order, m)
}

/// The one-way records of `pkts` when TCP end of flow is on: a
/// direction's record ends with its FIN or RST packet, and its next packet
/// starts another.
fn truth_split(pkts: &[GenPkt]) -> Vec<(Key, Direction)> {
    let mut done = Vec::new();
    let mut open: HashMap<Key, Vec<&GenPkt>> = HashMap::new();
    for p in pkts {
        let Some(k) = p.key else { continue };
        let run = open.entry(k).or_default();
        run.push(p);
        if p.flags & 0x05 != 0 {
            let run = std::mem::take(run);
            done.push((k, one_record(&run)));
        }
    }
    for (k, run) in open {
        if !run.is_empty() {
            done.push((k, one_record(&run)));
        }
    }
    done
}

/// The features of packets `run` of one direction, as one record.
fn one_record(run: &[&GenPkt]) -> Direction {
    let (_, m) = truth(run.iter().copied());
    assert_eq!(m.len(), 1);
    m.into_values().next().unwrap()
}

/// A one-way record as a collector sees it: the key the IPFIX templates
/// carry (IP version, addresses, ports, protocol, ICMP type and code, ICMP
/// echo identifier, VLAN id), and the features and end reason.
type Seen = (
    (u8, [u8; 16], [u8; 16], u16, u16, u8, u16, u16, u16),
    [u64; 15],
);

/// The end reason of a one-way record with features `d`: end of flow for
/// TCP with FIN or RST when `tcpend` (a ground-truth record with one ends
/// with it: the synthetic trace's FIN is its connection's last packet, and
/// `truth_split` cuts after each), else forced at the end of the run.
fn reason_of(d: &Direction, tcpend: bool) -> u8 {
    if tcpend && d.tcp_flags & 0x05 != 0 {
        end_reason::END_OF_FLOW
    } else {
        end_reason::FORCED_END
    }
}

/// The ground truth `want` as a collector should see it, sorted.
fn expected<'a>(
    want: impl IntoIterator<Item = (&'a Key, &'a Direction)>,
    tcpend: bool,
) -> Vec<Seen> {
    let mut v: Vec<Seen> = want
        .into_iter()
        .map(|((k, vlan), d)| {
            let icmp = matches!(k.proto, 1 | 58);
            let (sp, dp, tc, id) = if icmp {
                (0, 0, k.dport, k.sport)
            } else {
                (k.sport, k.dport, 0, 0)
            };
            let key = (k.version, k.src, k.dst, sp, dp, k.proto, tc, id, *vlan);
            let f = [
                d.packets,
                d.bytes,
                d.first_ns / 1000,
                d.last_ns / 1000,
                d.min_len.into(),
                d.max_len.into(),
                d.tcp_flags.into(),
                d.tos.into(),
                d.min_ttl.into(),
                d.max_ttl.into(),
                d.min_iat_ns,
                d.max_iat_ns,
                d.first_len.into(),
                d.second_len.into(),
                reason_of(d, tcpend).into(),
            ];
            (key, f)
        })
        .collect();
    v.sort();
    v
}

/// The one-way flow records of IPFIX file `path`, sorted.
fn exported(path: &Path) -> Vec<Seen> {
    let ix = decode_ipfix(&ipfix_file_messages(&std::fs::read(path).unwrap()));
    let us = |ntp: u64| {
        let frac = ((ntp & 0xffff_ffff) * 1_000_000 + (1 << 31)) >> 32;
        ((ntp >> 32) - 2_208_988_800) * 1_000_000 + frac
    };
    let mut v: Vec<Seen> = ix
        .data
        .iter()
        .filter(|d| d.0 == 256 || d.0 == 257)
        .map(|d| {
            let f = |id| field(&ix, d, 0, id);
            let own = |id| field(&ix, d, 32473, id);
            let (src, dst, tc) = if d.0 == 256 {
                let a = |id| map_v4(field_bytes(&ix, d, 0, id).try_into().unwrap());
                (a(8), a(12), f(32))
            } else {
                let a = |id| -> [u8; 16] { field_bytes(&ix, d, 0, id).try_into().unwrap() };
                (a(27), a(28), f(139))
            };
            let key = (
                f(60) as u8,
                src,
                dst,
                f(7) as u16,
                f(11) as u16,
                f(4) as u8,
                tc as u16,
                own(5) as u16,
                f(58) as u16,
            );
            let feats = [
                f(2),
                f(1),
                us(f(154)),
                us(f(155)),
                f(25),
                f(26),
                f(6),
                f(5),
                f(52),
                f(53),
                own(1),
                own(2),
                own(3),
                own(4),
                f(136),
            ];
            (key, feats)
        })
        .collect();
    v.sort();
    v
}

#[test]
fn synthetic_trace_matches_ground_truth() {
    let pkts = synthetic(0x5eed, 400);
    let frames: Vec<Frame> = pkts.iter().map(|p| (p.t, p.frame.clone())).collect();
    let pcap = tmp("synthetic.pcap");
    write_pcap(&pcap, &frames);
    let (order, want) = truth(&pkts);
    let ignored = pkts.iter().filter(|p| p.key.is_none()).count();
    let total: u64 = want.values().map(|d| d.packets).sum();
    let mut sizes: Vec<u64> = want.values().map(|d| d.packets).collect();
    sizes.sort();
    eprintln!(
        "flow sizes: median {}, max {}",
        sizes[sizes.len() / 2],
        sizes[sizes.len() - 1]
    );
    assert!(
        sizes[sizes.len() / 2] <= 3 && sizes[sizes.len() - 1] > 100,
        "heavy tail"
    );
    for (i, (parser, table, bi, tcpend)) in [
        ("TestL4", "SLOTS 64, WAYS 1", false, false),
        ("TestL4", "SLOTS 64, WAYS 2", true, false),
        ("L4Parser", "TABLE 1MB, WAYS 2", false, false),
        ("L4Parser", "SLOTS 1000, WAYS 1", true, false),
        (
            "L4Parser(IMPL reference)",
            "SLOTS 100, WAYS 2",
            false,
            false,
        ),
        ("L4Parser", "SLOTS 64, WAYS 1", false, true),
        ("", "PARSE true, TABLE 1MB, WAYS 2", false, false),
        ("", "PARSE true, SLOTS 64, WAYS 1", false, true),
        (
            "",
            "PARSE true, SLOTS 100, WAYS 2, IMPL reference",
            true,
            false,
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let name = format!("synthetic{i}");
        // One-way records are also exported to an IPFIX file and read back.
        let ipfix = tmp(&format!("{name}.ipfix"));
        // L4Parser's unparsable packets (here ARP) join the table's input so
        // that they are counted as ignored.
        // Without a parser, the table parses the frames itself (`PARSE`).
        let r = run(&format!(
            "FromDump({}, STOP true) -> {} mt :: MicroflowTable({table})
             -> fa :: FlowAggregator(ACTIVE 0, IDLE 0, TCPEND {tcpend}, VLAN true, BIFLOW {bi})
             -> t :: Tee -> Grab({name});
             t[1] -> IPFIXExport(FILENAME {});
             {}",
            pcap.display(),
            if parser.is_empty() {
                String::new()
            } else {
                format!("p :: {parser} ->")
            },
            ipfix.display(),
            if matches!(parser, "TestL4" | "") {
                ""
            } else {
                "p[1] -> mt;"
            }
        ));
        let recs = grabbed(&name);
        assert_eq!(read(&r, "mt.ignored"), ignored.to_string());
        assert_eq!(read(&r, "fa.ignored"), ignored.to_string());
        assert_eq!(read(&r, "mt.packets"), total.to_string());
        assert_eq!(read(&r, "fa.packets"), total.to_string());
        if !bi {
            assert_eq!(recs.len(), want.len(), "{table}");
            for rec in &recs {
                let w = want
                    .get(&(rec.key, rec.vlan))
                    .unwrap_or_else(|| panic!("unexpected flow {:?}", rec.key));
                assert_eq!(rec.fwd, *w, "{table}: {:?}", rec.key);
                assert_eq!(rec.rev, Direction::default());
                assert_eq!(
                    rec.end_reason,
                    reason_of(w, tcpend),
                    "{table}: {:?}",
                    rec.key
                );
            }
            if tcpend {
                let ended = recs
                    .iter()
                    .filter(|r| r.end_reason == end_reason::END_OF_FLOW);
                assert!(ended.count() > 50, "{table}: TCP flows ended by FIN");
            }
            assert_eq!(
                exported(&ipfix),
                expected(&want, tcpend),
                "{table}: the IPFIX file"
            );
        } else {
            // Biflows: the direction seen first is forward.
            let mut expect = 0;
            for k in &order {
                let rk = (k.0.reversed(), k.1);
                let first = want[k].first_ns;
                let later_rev = want.get(&rk).is_some_and(|d| d.first_ns < first);
                if later_rev && rk != *k {
                    continue; // the reverse key owns this biflow
                }
                expect += 1;
                let rec = recs
                    .iter()
                    .find(|r| r.key == k.0 && r.vlan == k.1)
                    .unwrap_or_else(|| panic!("missing biflow {k:?}"));
                assert_eq!(rec.fwd, want[k]);
                let rev = if rk != *k {
                    want.get(&rk).copied().unwrap_or_default()
                } else {
                    Direction::default()
                };
                assert_eq!(rec.rev, rev, "{k:?}");
                assert_eq!(rec.biflow, 1);
            }
            assert_eq!(recs.len(), expect);
        }
    }
}

/// TCP end of flow on a trace whose connections go on after their FIN:
/// each direction's record ends with its FIN, the packets after it make
/// another record (ended by a retransmitted FIN, or forced at the end),
/// field for field as the ground truth has them, in the records and in the
/// IPFIX file; whatever the table (one slot in 64 for many flows, 1 MB
/// two-way, the reference implementation).
#[test]
fn packets_after_a_fin_start_a_new_record() {
    let pkts = synthetic_with(0xf1f1, 400, true);
    let frames: Vec<Frame> = pkts.iter().map(|p| (p.t, p.frame.clone())).collect();
    let pcap = tmp("after-fin.pcap");
    write_pcap(&pcap, &frames);
    let mut want = truth_split(&pkts);
    let (_, whole) = truth(&pkts);
    let split = want.len() - whole.len();
    assert!(split > 50, "{split} directions go on after their FIN");
    want.sort_by_key(|(k, d)| (format!("{k:?}"), d.first_ns));
    for (i, table) in [
        "SLOTS 64, WAYS 1",
        "TABLE 1MB, WAYS 2",
        "SLOTS 100, WAYS 2, IMPL reference",
    ]
    .into_iter()
    .enumerate()
    {
        let name = format!("afterfin{i}");
        let ipfix = tmp(&format!("{name}.ipfix"));
        let r = run(&format!(
            "FromDump({}, STOP true) -> p :: L4Parser -> mt :: MicroflowTable({table})
             -> fa :: FlowAggregator(ACTIVE 0, IDLE 0, TCPEND true, VLAN true)
             -> t :: Tee -> Grab({name});
             t[1] -> IPFIXExport(FILENAME {});
             p[1] -> mt;",
            pcap.display(),
            ipfix.display(),
        ));
        assert_eq!(read(&r, "fa.records"), want.len().to_string(), "{table}");
        let mut recs: Vec<(Key, Direction, u8)> = grabbed(&name)
            .into_iter()
            .map(|r| {
                assert_eq!(r.rev, Direction::default());
                ((r.key, r.vlan), r.fwd, r.end_reason)
            })
            .collect();
        recs.sort_by_key(|(k, d, _)| (format!("{k:?}"), d.first_ns));
        assert_eq!(recs.len(), want.len(), "{table}");
        for ((k, d, reason), (wk, wd)) in recs.iter().zip(&want) {
            assert_eq!((k, d), (wk, wd), "{table}");
            assert_eq!(*reason, reason_of(wd, true), "{table}: {k:?}");
        }
        assert_eq!(
            exported(&ipfix),
            expected(want.iter().map(|(k, d)| (k, d)), true),
            "{table}: the IPFIX file"
        );
    }
}

#[test]
fn records_do_not_depend_on_the_fast_path() {
    // The fast path's idle timeout (0.5 s) is below the aggregator's (1 s),
    // so no microflow spans a gap that ends a flow: whatever the table size
    // and associativity (from one slot, a microflow per packet run, to no
    // collisions at all), the watermark and the deferral of microflows
    // whose flow may be bridged by the other direction must give the same
    // biflow records.
    let pkts = synthetic(0x1d1e, 200);
    let frames: Vec<Frame> = pkts.iter().map(|p| (p.t, p.frame.clone())).collect();
    let pcap = tmp("fastpath-independent.pcap");
    write_pcap(&pcap, &frames);
    let mut runs = Vec::new();
    for (i, table) in [
        "SLOTS 1",
        "SLOTS 7",
        "SLOTS 64, WAYS 2",
        "TABLE 1MB, WAYS 2",
        "SLOTS 64, WAYS 2, IMPL reference",
    ]
    .into_iter()
    .enumerate()
    {
        let name = format!("independent{i}");
        run(&format!(
            "FromDump({}, STOP true) -> TestL4 -> MicroflowTable({table}, IDLE 0.5, TCPEND false)
             -> FlowAggregator(IDLE 1, ACTIVE 0, TCPEND false, VLAN true, BIFLOW true, TIME packet) -> Grab({name});",
            pcap.display()
        ));
        let mut recs = grabbed(&name);
        recs.sort_by_key(|r| (format!("{:?}", r.key), r.vlan, r.fwd.first_ns));
        runs.push((table, recs));
    }
    let (t0, want) = &runs[0];
    let splits = want
        .iter()
        .filter(|r| r.end_reason == end_reason::IDLE_TIMEOUT)
        .count();
    assert!(
        splits > 20,
        "the trace has idle gaps ({splits} idle records)"
    );
    for (table, recs) in &runs[1..] {
        assert_eq!(recs.len(), want.len(), "{table} vs {t0}");
        if let Some(i) = (0..recs.len()).find(|&i| recs[i] != want[i]) {
            panic!("{table} vs {t0}: record {i}\n{:?}\n{:?}", recs[i], want[i]);
        }
    }
}

#[test]
fn live_flows_time_out_while_traffic_has_stopped() {
    // Arrival-time stamps: the fast path's timer sweeps with the system
    // clock, its watermark advances without packets, and the aggregator
    // (wall time) ends the idle flow before the run does.
    let r = run(
        "RatedSource(LENGTH 60, RATE 1000, LIMIT 300, STOP false)
           -> UDPIPEncap(10.0.0.1, 1234, 10.0.0.2, 80) -> EtherEncap(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2)
           -> SetTimestamp -> L4Parser -> mt :: MicroflowTable(IDLE 0.1, ACTIVE 0.1)
           -> fa :: FlowAggregator(IDLE 0.5, ACTIVE 0) -> Grab(live);
         DriverManager(wait 3s, stop);",
    );
    let recs = grabbed("live");
    assert_eq!(recs.len(), 1, "{recs:?}");
    assert_eq!(recs[0].fwd.packets, 300);
    assert_eq!(recs[0].end_reason, end_reason::IDLE_TIMEOUT);
    let microflows: u64 = read(&r, "mt.microflows").parse().unwrap();
    assert!(microflows >= 2, "active-timeout microflows: {microflows}");
}

// ---------------------------------------------------------------- real trace

fn lan_trace() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/traces/pathspider-real-lan2012.pcap");
    if p.exists() {
        Some(p)
    } else {
        eprintln!("skipped: {} not found", p.display());
        None
    }
}

/// `pcap` as a capture with snap length 64 would have kept it (each
/// record's original length kept), written to the temporary file `name`.
fn cut_to_64(pcap: &Path, name: &str) -> PathBuf {
    let cut = tmp(name);
    let mut rd = linerate_io::pcap::PcapReader::open(pcap).unwrap();
    let mut w = PcapWriter::create(&cut, rd.link_type(), 64, false).unwrap();
    while let Some(rec) = rd.next_record() {
        let rec = rec.unwrap();
        let k = rec.data.len().min(64);
        w.write(rec.ts_ns, rec.orig_len, &rec.data[..k]).unwrap();
    }
    cut
}

/// The LAN trace as a capture with snap length 64 keeps it (the records'
/// original lengths kept): records equal the whole trace's, field for field.
#[test]
fn a_trace_cut_to_its_headers_gives_the_same_records() {
    let Some(pcap) = lan_trace() else { return };
    let cut = cut_to_64(&pcap, "lan-snap64.pcap");
    let mut got = Vec::new();
    for (name, file) in [("whole", &pcap), ("snap64", &cut)] {
        let r = run(&format!(
            "FromDump({}, STOP true) -> p :: L4Parser -> MicroflowTable(TABLE 1MB)
             -> FlowAggregator(ACTIVE 300, IDLE 60, BIFLOW true) -> Grab({name});",
            file.display()
        ));
        let mut recs = grabbed(name);
        recs.sort_by_key(|r| {
            (
                r.fwd.first_ns,
                r.key.src,
                r.key.dst,
                r.key.sport,
                r.key.dport,
            )
        });
        got.push(recs);
        let cut_packets = if name == "whole" { "0" } else { "59063" };
        assert_eq!(read(&r, "p.cut"), cut_packets);
        assert_eq!(read(&r, "p.drops"), "743"); // ARP
    }
    assert!(got[0].len() > 6_000);
    assert!(got[0] == got[1], "the cut trace's records differ");
}

/// `MicroflowTable(PARSE true)` on Ethernet frames equals `L4Parser ->
/// MicroflowTable` with the parser's second output joined to the table:
/// the same records, counters and ignored packets (sent to the table's
/// second output), on the LAN trace, the same cut to 64-byte headers, and
/// the nDPI trace's malformed frames; fast and reference implementations.
#[test]
fn the_table_parses_frames_as_l4parser_does() {
    let Some(pcap) = lan_trace() else { return };
    let cut = cut_to_64(&pcap, "lan-snap64-parse.pcap");
    let ndpi = pcap.with_file_name("ndpi-tests-mix.pcap");
    for (trace, file) in [("lan", &pcap), ("snap64", &cut), ("ndpi", &ndpi)] {
        // No table timeouts: L4Parser's second output reaches the table as
        // a batch of its own, and each batch sweeps 64 slots, so with
        // timeouts a microflow could leave by idle timeout in one run and
        // by collision in the other.
        for table in [
            "TABLE 256KB, WAYS 2",
            "SLOTS 64",
            "SLOTS 64, IMPL reference",
        ] {
            let mut got = Vec::new();
            for (i, (head, join)) in [("p :: L4Parser ->", "p[1] -> mt;"), ("", "")]
                .into_iter()
                .enumerate()
            {
                let parse = if i == 1 { "PARSE true, " } else { "" };
                let name = format!("parse-{trace}-{i}");
                GRABBED.lock().unwrap().retain(|(n, _)| *n != name);
                let r = run(&format!(
                    "FromDump({}, STOP true) -> {head} mt :: MicroflowTable({parse}{table})
                     -> fa :: FlowAggregator(ACTIVE 60, IDLE 15, BIFLOW true) -> Grab({name});
                     mt[1] -> none :: Counter -> Discard; {join}",
                    file.display()
                ));
                let counts: Vec<String> = [
                    "mt.packets",
                    "mt.ignored",
                    "mt.microflows",
                    "mt.collisions",
                    "mt.end_evictions",
                    "fa.flows",
                    "fa.ignored",
                    "none.count",
                ]
                .iter()
                .map(|h| read(&r, h))
                .collect();
                assert_eq!(counts[1], counts[7], "{trace} {table}: ignored packets out");
                got.push((grabbed(&name), counts));
            }
            assert!(got[0].0.len() > 100, "{trace}: {} records", got[0].0.len());
            assert_eq!(got[0].1, got[1].1, "{trace} {table}: counters");
            assert!(got[0].0 == got[1].0, "{trace} {table}: records differ");
        }
    }
}

/// flowmon's two-thread variant: the fast path on one thread, a Queue, the
/// aggregator on the other. The Unqueue empties the Queue when the run
/// ends, so every record arrives (it lost a fifth of them before).
#[test]
fn fast_path_and_aggregator_on_two_threads_lose_nothing() {
    let Some(pcap) = lan_trace() else { return };
    let r = run_with(
        &format!(
            "src :: FromDump({}, STOP true) -> p :: L4Parser -> mt :: MicroflowTable(TABLE 1MB)
             -> Queue(65536) -> uq :: Unqueue(BURST 256)
             -> fa :: FlowAggregator(ACTIVE 0, IDLE 0, TCPEND false) -> Grab(two-threads);
             p[1] -> mt;
             StaticThreadSched(src 0, uq 1);",
            pcap.display()
        ),
        RouterOptions {
            threads: 2,
            ..RouterOptions::default()
        },
    );
    let recs = grabbed("two-threads");
    let pk: u64 = recs.iter().map(|r| r.fwd.packets).sum();
    let by: u64 = recs.iter().map(|r| r.fwd.bytes).sum();
    assert_eq!((recs.len(), pk, by), (11_978, 62_038, 3_718_480));
    assert_eq!(read(&r, "fa.microflows"), read(&r, "mt.microflows"));
}

#[test]
fn real_lan_trace_reference_counts() {
    let Some(pcap) = lan_trace() else { return };
    for (bi, flows) in [(false, 11_978), (true, 6_024)] {
        let name = format!("lan-{bi}");
        let r = run(&format!(
            "FromDump({}, STOP true) -> CheckIPHeader(14) -> mt :: MicroflowTable(TABLE 1MB, WAYS 2)
             -> fa :: FlowAggregator(ACTIVE 0, IDLE 0, TCPEND false, BIFLOW {bi}) -> Grab({name});",
            pcap.display()
        ));
        let recs = grabbed(&name);
        let pk: u64 = recs.iter().map(|r| r.fwd.packets + r.rev.packets).sum();
        let by: u64 = recs.iter().map(|r| r.fwd.bytes + r.rev.bytes).sum();
        assert_eq!(
            (recs.len(), pk, by),
            (flows, 62_038, 3_718_480),
            "biflow {bi}"
        );
        assert_eq!(read(&r, "fa.records"), flows.to_string());
        assert_eq!(read(&r, "mt.packets"), "62038");
    }
}

#[test]
fn ndpi_trace_every_packet_accounted_for() {
    let Some(lan) = lan_trace() else { return };
    let pcap = lan.with_file_name("ndpi-tests-mix.pcap");
    let r = run(&format!(
        "FromDump({}, STOP true) -> p :: L4Parser -> mt :: MicroflowTable(TABLE 256KB, WAYS 2, IDLE 5, ACTIVE 30)
         -> fa :: FlowAggregator(ACTIVE 60, IDLE 15, BIFLOW true) -> Grab(ndpi); p[1] -> mt;",
        pcap.display()
    ));
    let recs = grabbed("ndpi");
    let metered: u64 = read(&r, "mt.packets").parse().unwrap();
    let ignored: u64 = read(&r, "mt.ignored").parse().unwrap();
    assert_eq!(metered + ignored, 102_031, "every frame metered or ignored");
    assert_eq!(read(&r, "fa.ignored"), ignored.to_string());
    let pk: u64 = recs.iter().map(|r| r.fwd.packets + r.rev.packets).sum();
    assert_eq!(pk, metered, "every metered packet is in a record");
    assert_eq!(read(&r, "fa.records"), recs.len().to_string());
    assert_eq!(read(&r, "fa.active"), "0");
    eprintln!(
        "ndpi: {metered} packets in {} records, {ignored} ignored",
        recs.len()
    );
}

// ---------------------------------------------------------------- fast = reference

mod differential {
    use super::*;
    use proptest::prelude::*;

    fn pipeline(pcap: &Path, cfg_t: &str, cfg_a: &str, imp: &str, name: &str) -> Router {
        GRABBED.lock().unwrap().retain(|(n, _)| n != name);
        run(&format!(
            "FromDump({}, STOP true) -> TestL4 -> mt :: MicroflowTable({cfg_t}, IMPL {imp})
             -> fa :: FlowAggregator({cfg_a}, TIME packet, IMPL {imp}) -> Grab({name});",
            pcap.display()
        ))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]
        #[test]
        fn fast_equals_reference(
            seed in 1u64..u64::MAX,
            nflows in 1usize..60,
            slots in 2usize..40,
            ways in 1usize..3,
            idle in 0u64..4,
            active in 0u64..6,
            aidle in 0u64..8,
            aactive in 0u64..12,
            tcpend in any::<bool>(),
            atcpend in any::<bool>(),
            bi in any::<bool>(),
            vlan in any::<bool>(),
            small in any::<bool>(),
            untimed in any::<bool>(),
        ) {
            let pkts = synthetic(seed, nflows);
            let frames: Vec<Frame> = pkts.iter().map(|p| (p.t, p.frame.clone())).collect();
            let pcap = tmp(&format!("diff-{seed}.pcap"));
            write_pcap(&pcap, &frames);
            // Half the cases without table timeouts (the fast path's sweep
            // then only computes the watermark, which the aggregator's
            // packet-time timeouts follow).
            let (idle, active) = if untimed { (0, 0) } else { (idle, active) };
            let ct = format!("SLOTS {slots}, WAYS {ways}, IDLE {idle}, ACTIVE {active}, TCPEND {tcpend}");
            // CAPACITY 16 makes the flow table grow (beyond 8 flows) during the run.
            let cap = if small { 16 } else { 65536 };
            let ca = format!("IDLE {aidle}, ACTIVE {aactive}, TCPEND {atcpend}, BIFLOW {bi}, VLAN {vlan}, CAPACITY {cap}");
            let rf = pipeline(&pcap, &ct, &ca, "fast", &format!("diff-{seed}-fast"));
            let rr = pipeline(&pcap, &ct, &ca, "reference", &format!("diff-{seed}-ref"));
            let (f, r) = (grabbed(&format!("diff-{seed}-fast")), grabbed(&format!("diff-{seed}-ref")));
            prop_assert_eq!(f.len(), r.len(), "record counts");
            if let Some(i) = (0..f.len()).find(|&i| f[i] != r[i]) {
                prop_assert!(false, "record {} differs:\nfast {:?}\nref  {:?}", i, f[i], r[i]);
            }
            for h in ["mt.packets", "mt.ignored", "mt.microflows", "mt.collisions", "mt.idle_evictions",
                      "mt.active_evictions", "mt.end_evictions", "mt.flushed", "mt.occupied",
                      "fa.microflows", "fa.flows", "fa.records", "fa.idle_timeouts", "fa.active_timeouts",
                      "fa.end_of_flow", "fa.forced_end", "fa.ignored", "fa.active", "fa.packets"] {
                prop_assert_eq!(read(&rf, h), read(&rr, h), "{}", h);
            }
            let _ = std::fs::remove_file(&pcap);
        }
    }
}

/// A microflow record of UDP flow `f` (10.0.0.f:1000+f to 10.0.0.100:53)
/// with `packets` packets of `len` bytes, 10 ns long, at 1.7e18 + f ns.
fn udp_microflow(f: u8, packets: u64, len: u64) -> Microflow {
    let mut m = Microflow::new();
    m.key.src = map_v4([10, 0, 0, f]);
    m.key.dst = map_v4([10, 0, 0, 100]);
    m.key.sport = 1000 + f as u16;
    m.key.dport = 53;
    m.key.proto = 17;
    m.key.version = 4;
    m.dir.packets = packets;
    m.dir.bytes = packets.saturating_mul(len);
    m.dir.first_ns = 1_700_000_000_000_000_000 + f as u64;
    m.dir.last_ns = m.dir.first_ns + 10;
    m
}

/// `FromDump(pcap) -> FlowAggregator(ACTIVE 0, IDLE 0, TIME packet, IMPL
/// imp)`: the router (the aggregator is `fa`) and the records it sent.
fn aggregate_file(pcap: &Path, imp: &str, name: &str) -> (Router, Vec<FlowRecord>) {
    GRABBED.lock().unwrap().retain(|(n, _)| n != name);
    let r = run(&format!(
        "FromDump({}, STOP true) -> fa :: FlowAggregator(ACTIVE 0, IDLE 0, TIME packet, IMPL {imp}) -> Grab({name});",
        pcap.display()
    ));
    let recs = grabbed(name);
    (r, recs)
}

/// The aggregator reads every record of a packet of several, and counts a
/// packet of another length, or a record without the magic, as bad.
#[test]
fn aggregator_reads_packets_of_several_records() {
    let rec = |f: u8, packets: u64| udp_microflow(f, packets, 100).as_bytes().to_vec();
    let t = 1_700_000_000_000_000_000;
    let mut bad_magic = rec(9, 1);
    bad_magic[0] ^= 0xff;
    let frames: Vec<Frame> = vec![
        // Three records, two of one flow.
        (t, [rec(1, 2), rec(2, 3), rec(1, 4)].concat()),
        // A record and 7 bytes more: the whole packet is bad.
        (t, [rec(3, 1), vec![0; 7]].concat()),
        // A bad record between two good ones.
        (t, [rec(4, 1), bad_magic, rec(5, 6)].concat()),
        (t, rec(2, 1)),
    ];
    let pcap = tmp("several.pcap");
    write_pcap(&pcap, &frames);
    for imp in ["fast", "reference"] {
        let (r, recs) = aggregate_file(&pcap, imp, &format!("several-{imp}"));
        assert_eq!(read(&r, "fa.microflows"), "6", "{imp}");
        assert_eq!(read(&r, "fa.bad"), "2", "{imp}");
        let mut got: Vec<(u8, u64)> = recs
            .iter()
            .map(|f| (f.key.src[15], f.fwd.packets))
            .collect();
        got.sort();
        assert_eq!(got, [(1, 6), (2, 4), (4, 1), (5, 6)], "{imp}");
    }
}

#[test]
fn microflow_records_round_trip() {
    let mut m = Microflow::new();
    m.dir.packets = 2;
    assert_eq!(Microflow::from_bytes(m.as_bytes()), Some(m));
    assert_eq!(m.to_packet().len(), Microflow::SIZE);
    let _ = Packet::from_slice(&[0u8; 4]);
}

/// Counters of records that did not come from a MicroflowTable (here
/// `FromDump -> FlowAggregator` on a crafted file) saturate instead of
/// overflowing (found by the `flow_pipeline` fuzz target).
#[test]
fn aggregator_counters_saturate_on_crafted_records() {
    let rec = |packets: u64, ignored: u64| {
        let mut m = udp_microflow(1, packets, 1);
        m.ignored = ignored;
        m.as_bytes().to_vec()
    };
    let t = 1_700_000_000_000_000_000;
    let frames: Vec<Frame> = vec![(t, [rec(u64::MAX, u64::MAX), rec(1, 1)].concat())];
    let pcap = tmp("saturate.pcap");
    write_pcap(&pcap, &frames);
    for imp in ["fast", "reference"] {
        let (r, recs) = aggregate_file(&pcap, imp, &format!("saturate-{imp}"));
        let max = u64::MAX.to_string();
        assert_eq!(read(&r, "fa.packets"), max, "{imp}");
        assert_eq!(read(&r, "fa.ignored"), max, "{imp}");
        let got: Vec<(u64, u64)> = recs.iter().map(|f| (f.fwd.packets, f.fwd.bytes)).collect();
        assert_eq!(got, [(u64::MAX, u64::MAX)], "{imp}");
    }
}

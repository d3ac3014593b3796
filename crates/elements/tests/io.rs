//! FromDump and ToDump on the shared real trace and on damaged files.

mod common;

use common::run;
use linerate_io::pcap::PcapReader;
use linerate_lang::{parse_str, ParseOptions};
use linerate_runtime::{Router, RouterOptions};
use std::path::{Path, PathBuf};

const LAN: &str = "../../../shared/traces/pathspider-real-lan2012.pcap";

fn lan() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(LAN)
}

fn build(text: &str, opts: RouterOptions) -> Result<Router, String> {
    let reg = linerate_elements::registry();
    let o = ParseOptions {
        vars: vec![],
        catalog: &reg,
        clickpath: vec![],
    };
    let c = parse_str(text, "io.click", &o).map_err(|d| d.to_string())?;
    Router::build(&c, &reg, opts).map_err(|d| d.to_string())
}

fn read(r: &Router, h: &str) -> u64 {
    let v = r
        .handle()
        .call(h, None)
        .unwrap_or_else(|e| panic!("{h}: {e}"));
    v.trim().parse().unwrap_or_else(|_| panic!("{h}: {v:?}"))
}

fn records(p: &Path) -> Vec<(u64, u32, Vec<u8>)> {
    let mut r = PcapReader::open(p).unwrap();
    let mut v = Vec::new();
    while let Some(x) = r.next_record() {
        let x = x.unwrap();
        v.push((x.ts_ns, x.orig_len, x.data.to_vec()));
    }
    v
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("linerate-io-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

#[test]
fn round_trip_keeps_every_record() {
    let out = tmp("copy.pcap");
    let r = run(
        &format!(
            "FromDump({}, STOP true) -> c :: Counter -> t :: ToDump({}, SNAPLEN 65535)",
            lan().display(),
            out.display()
        ),
        RouterOptions::default(),
    );
    drop(r);
    assert_eq!(records(&lan()), records(&out));
    assert_eq!(records(&out).len(), 62_781);
}

#[test]
fn force_ip_splits_ip_from_arp() {
    let r = run(
        &format!("f :: FromDump({}, STOP true, FORCE_IP true); f -> ip :: Counter -> Discard; f[1] -> other :: Counter -> Discard;", lan().display()),
        RouterOptions::default(),
    );
    assert_eq!(read(&r, "ip.count"), 62_038);
    assert_eq!(read(&r, "other.count"), 743);
    assert_eq!(read(&r, "f.count"), 62_038);
    assert_eq!(r.handle().call("f.encap", None).unwrap(), "ETHER\n");
}

/// The same split with two replicas sharing the reader: IP packets get
/// their network header (an IP filter downstream reads it), the rest go
/// to the second output.
#[test]
fn force_ip_splits_ip_from_arp_in_replicas() {
    let r = run(
        &format!(
            "f :: FromDump({}, STOP true, FORCE_IP true);
             f -> IPFilter(allow tcp, deny all) -> tcp :: Counter -> Discard;
             f[1] -> other :: Counter -> Discard;",
            lan().display()
        ),
        RouterOptions::default(),
    );
    let tcp = read(&r, "tcp.count");
    assert!(tcp > 10_000, "{tcp} TCP packets");
    let r = run(
        &format!(
            "f :: FromDump({}, STOP true, FORCE_IP true);
             f -> ip :: Counter -> IPFilter(allow tcp, deny all) -> tcp :: Counter -> Discard;
             f[1] -> other :: Counter -> Discard;",
            lan().display()
        ),
        RouterOptions {
            threads: 2,
            replicate: true,
            ..Default::default()
        },
    );
    assert_eq!(per_replica(&r, "f", "count").len(), 2);
    assert_eq!(read(&r, "ip.count"), 62_038);
    assert_eq!(read(&r, "tcp.count"), tcp);
    assert_eq!(read(&r, "other.count"), 743);
}

#[test]
fn truncated_file_delivers_what_precedes_the_cut() {
    let bytes = std::fs::read(lan()).unwrap();
    let cut = tmp("cut.pcap");
    std::fs::write(&cut, &bytes[..10_000]).unwrap();
    let complete = {
        let mut n = 0;
        let mut r = PcapReader::open(&cut).unwrap();
        while let Some(Ok(_)) = r.next_record() {
            n += 1;
        }
        n
    };
    assert!(complete > 10);
    // One thread, and two replicas sharing the reader (its walk meets the
    // cut through the general path).
    for threads in [1, 2] {
        let r = run(
            &format!(
                "FromDump({}, STOP true) -> c :: Counter -> Discard",
                cut.display()
            ),
            RouterOptions {
                threads,
                replicate: threads > 1,
                ..Default::default()
            },
        );
        assert_eq!(read(&r, "c.count"), complete, "{threads} threads");
    }
}

#[test]
fn wrong_magic_is_a_clear_error() {
    let bad = tmp("bad.pcap");
    std::fs::write(&bad, b"this is not a pcap file at all, sorry").unwrap();
    let e = build(
        &format!("FromDump({}, STOP true) -> Discard", bad.display()),
        RouterOptions::default(),
    )
    .err()
    .unwrap();
    assert!(e.contains("io.click:1:1") && e.contains("bad.pcap"), "{e}");
    let e = build(
        "FromDump(/nonexistent/x.pcap) -> Discard",
        RouterOptions::default(),
    )
    .err()
    .unwrap();
    assert!(e.contains("/nonexistent/x.pcap"), "{e}");
}

#[test]
fn zero_length_and_oversized_records_are_handled() {
    let mut f = Vec::new();
    for w in [0xa1b2c3d4u32, 0x0004_0002, 0, 0, 64, 1] {
        f.extend_from_slice(&if w == 0x0004_0002 {
            [2, 0, 4, 0]
        } else {
            w.to_le_bytes()
        });
    }
    // A zero-length record, then a 100-byte record over the 64-byte snaplen.
    for (len, fill) in [(0u32, 0u8), (100, 7)] {
        f.extend_from_slice(&1u32.to_le_bytes());
        f.extend_from_slice(&0u32.to_le_bytes());
        f.extend_from_slice(&len.to_le_bytes());
        f.extend_from_slice(&len.to_le_bytes());
        f.extend(std::iter::repeat_n(fill, len as usize));
    }
    let p = tmp("odd.pcap");
    std::fs::write(&p, &f).unwrap();
    let r = run(
        &format!(
            "FromDump({}, STOP true) -> c :: Counter -> Discard",
            p.display()
        ),
        RouterOptions::default(),
    );
    assert_eq!(read(&r, "c.count"), 2);
    assert_eq!(read(&r, "c.byte_count"), 100);
}

#[test]
fn timing_replay_on_simulated_time() {
    // The trace spans an hour; on simulated time the replay takes no real time.
    let t = std::time::Instant::now();
    let r = run(
        &format!(
            "FromDump({}, STOP true, TIMING true) -> c :: Counter -> Discard",
            lan().display()
        ),
        RouterOptions {
            simtime: Some(0),
            ..Default::default()
        },
    );
    assert_eq!(read(&r, "c.count"), 62_781);
    assert!(t.elapsed().as_secs() < 20);
}

#[test]
fn time_windows() {
    let all = records(&lan());
    let t0 = all[0].0;
    let expect = all
        .iter()
        .filter(|x| x.0 >= t0 + 60_000_000_000 && x.0 < t0 + 120_000_000_000)
        .count() as u64;
    let r = run(
        &format!(
            "FromDump({}, STOP true, START_AFTER 1min, END_AFTER 2min) -> c :: Counter -> Discard",
            lan().display()
        ),
        RouterOptions::default(),
    );
    assert_eq!(read(&r, "c.count"), expect);
    let e = build(
        &format!(
            "FromDump({}, START 1, START_AFTER 2) -> Discard",
            lan().display()
        ),
        RouterOptions::default(),
    )
    .err()
    .unwrap();
    assert!(e.contains("at most one of START and START_AFTER"), "{e}");
}

#[test]
fn replicas_split_the_trace_by_flow() {
    let r = run(
        &format!(
            "FromDump({}, STOP true) -> c :: Counter -> Discard",
            lan().display()
        ),
        RouterOptions {
            threads: 2,
            replicate: true,
            ..Default::default()
        },
    );
    assert_eq!(read(&r, "c.count"), 62_781);
}

/// Each replica's `count` (the router's read sums them).
fn per_replica(r: &Router, element: &str, handler: &str) -> Vec<u64> {
    let mut v = Vec::new();
    r.for_each_element(|_, info, e| {
        if info.name == element {
            v.push(e.read_handler(handler).unwrap().trim().parse().unwrap());
        }
    });
    v
}

#[test]
fn replicas_share_one_reader_and_both_get_work() {
    // Shared reader (plain options) and per-replica readers (END_AFTER)
    // split the trace the same way, every record once, both replicas busy.
    let mut shares = Vec::new();
    for extra in ["", ", END_AFTER 2h"] {
        let r = run(
            &format!(
                "src :: FromDump({}, STOP true{extra}) -> c :: Counter -> Discard",
                lan().display()
            ),
            RouterOptions {
                threads: 2,
                replicate: true,
                ..Default::default()
            },
        );
        let counts = per_replica(&r, "src", "count");
        assert_eq!(counts.iter().sum::<u64>(), 62_781, "{extra}: {counts:?}");
        assert!(counts.iter().all(|&c| c > 10_000), "{extra}: {counts:?}");
        assert_eq!(read(&r, "c.count"), 62_781);
        if extra.is_empty() {
            assert_eq!(read(&r, "src.filepos"), 5_631_368);
        }
        shares.push(counts);
    }
    assert_eq!(shares[0], shares[1]);
}

/// The shared walk reads Ethernet files through its one-test path and
/// every other link type through the general one: a raw-IP file (the LAN
/// trace's IP packets without their Ethernet headers) splits between the
/// replicas as per-replica readers split it, every record once.
#[test]
fn replicas_share_a_raw_ip_file_as_they_would_read_it_alone() {
    let raw = tmp("raw-ip.pcap");
    let mut w =
        linerate_io::pcap::PcapWriter::create(&raw, linerate_io::pcap::LinkType::RAW, 65535, false)
            .unwrap();
    let mut n = 0u64;
    for (ts, orig_len, d) in records(&lan()) {
        if d.len() > 14 && matches!(d[12..14], [0x08, 0x00] | [0x86, 0xdd]) {
            w.write(ts, orig_len - 14, &d[14..]).unwrap();
            n += 1;
        }
    }
    drop(w);
    assert!(n > 50_000, "{n} IP packets");
    let mut shares = Vec::new();
    for extra in ["", ", END_AFTER 2h"] {
        let r = run(
            &format!(
                "src :: FromDump({}, STOP true{extra}) -> c :: Counter -> Discard",
                raw.display()
            ),
            RouterOptions {
                threads: 2,
                replicate: true,
                ..Default::default()
            },
        );
        let counts = per_replica(&r, "src", "count");
        assert_eq!(counts.iter().sum::<u64>(), n, "{extra}: {counts:?}");
        assert!(counts.iter().all(|&c| c > 10_000), "{extra}: {counts:?}");
        shares.push(counts);
    }
    assert_eq!(shares[0], shares[1]);
}

#[test]
fn pull_mode_todump_drains_a_queue() {
    let out = tmp("pulled.pcap");
    let r = run(
        &format!(
            "FromDump({}, STOP true, END_AFTER 30s) -> q :: Queue(100000); q -> t :: ToDump({})",
            lan().display(),
            out.display()
        ),
        RouterOptions::default(),
    );
    let written = read(&r, "t.count");
    let queued = read(&r, "q.length");
    drop(r);
    assert_eq!(records(&out).len() as u64, written);
    let all = records(&lan());
    let expect = all
        .iter()
        .filter(|x| x.0 < all[0].0 + 30_000_000_000)
        .count() as u64;
    assert_eq!(written + queued, expect);
}

/// Click's IP router chain on a real trace: `Strip(14)`, a write to the IP
/// header (a copy of the zero-copy packet), `Unstrip(14)`. The Ethernet header
/// the copy had to carry along comes back byte for byte; only TTL and checksum
/// change.
#[test]
fn unstrip_after_copy_on_write_restores_the_stripped_header() {
    let out = tmp("decttl.pcap");
    let r = run(
        &format!(
            "c :: Classifier(12/0800, -); FromDump({}, STOP true) -> c; c[1] -> Discard;
             c[0] -> Strip(14) -> CheckIPHeader -> DecIPTTL -> Unstrip(14) -> ToDump({})",
            lan().display(),
            out.display()
        ),
        RouterOptions::default(),
    );
    drop(r);
    let inp: Vec<_> = records(&lan())
        .into_iter()
        .filter(|(_, _, d)| d.len() >= 34 && d[12..14] == [8, 0] && d[22] > 1)
        .collect();
    let outp = records(&out);
    assert!(outp.len() > 1000, "{} IPv4 packets", outp.len());
    assert_eq!(outp.len(), inp.len());
    for ((_, _, a), (_, _, b)) in inp.iter().zip(&outp) {
        assert_eq!(a[..14], b[..14], "Ethernet header");
        assert_eq!(b[22], a[22] - 1, "TTL");
        assert_eq!(a[34..], b[34..]);
    }
}

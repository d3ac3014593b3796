//! ParseSteps and MemoryReplay: exact frames, deterministic results, and a
//! cost that grows with the number of steps.

use linerate_elements::model::memoryreplay::build_frame;
use linerate_elements::model::parsesteps::packet_state;
use linerate_io::pcap::PcapReader;
use linerate_lang::{parse_str, ParseOptions};
use linerate_runtime::{Router, RouterOptions};
use std::time::Instant;

fn build(text: &str) -> Result<Router, String> {
    let reg = linerate_elements::registry();
    let o = ParseOptions {
        vars: vec![],
        catalog: &reg,
        clickpath: vec![],
    };
    let c = parse_str(text, "model.click", &o).map_err(|d| d.to_string())?;
    Router::build(&c, &reg, RouterOptions::default()).map_err(|d| d.to_string())
}

fn run(text: &str) -> Router {
    let mut r = build(text).unwrap_or_else(|e| panic!("{e}"));
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

/// Write `frames` to an Ethernet pcap file, frame `k` stamped `k + 1` ns.
fn write_frames(path: &std::path::Path, frames: &[&[u8]]) {
    let mut w = linerate_io::pcap::PcapWriter::create(
        path,
        linerate_io::pcap::LinkType::ETHERNET,
        65535,
        true,
    )
    .unwrap();
    for (k, f) in frames.iter().enumerate() {
        w.write(k as u64 + 1, f.len() as u32, f).unwrap();
    }
    w.flush().unwrap();
}

/// Every frame of a pcap file.
fn read_frames(path: &std::path::Path) -> Vec<Vec<u8>> {
    let mut rd = PcapReader::open(path).unwrap();
    let mut v = Vec::new();
    while let Some(x) = rd.next_record() {
        v.push(x.unwrap().data.to_vec());
    }
    v
}

#[test]
fn memoryreplay_replays_a_file_round_robin() {
    let dir = std::env::temp_dir();
    let input = dir.join(format!("linerate-replay-in-{}.pcap", std::process::id()));
    let out = dir.join(format!("linerate-replay-out-{}.pcap", std::process::id()));
    write_frames(&input, &[&[1u8; 60], &[2u8; 100]]);
    // COPY true hands out packets in their own buffers; either way a writer
    // (EtherRewrite) changes the packet, never the replayed frame.
    for copy in [false, true] {
        let r = run(&format!(
            "s :: MemoryReplay(FILE {}, COPY {copy}, LIMIT 5, STOP true) \
             -> EtherRewrite(0:0:0:0:0:1, ff:ff:ff:ff:ff:ff) -> ToDump({});",
            input.display(),
            out.display()
        ));
        assert_eq!(read(&r, "s.count"), "5");
        drop(r);
        let v = read_frames(&out);
        let lens: Vec<usize> = v.iter().map(Vec::len).collect();
        assert_eq!(lens, [60, 100, 60, 100, 60], "COPY {copy}");
        assert_eq!(v[2][0], 0xff, "COPY {copy}");
        assert_eq!(&v[1][..6], &[0xff; 6], "COPY {copy}");
        assert!(v[3][12..].iter().all(|&b| b == 2), "COPY {copy}");
    }
    std::fs::remove_file(&out).unwrap();
    std::fs::remove_file(&input).unwrap();
}

#[test]
fn memoryreplay_copies_frames_larger_than_a_pool_buffer() {
    // A 2,000-byte frame does not fit a pool buffer after its headroom: with
    // COPY true the replay then copies each frame into a heap buffer, and
    // the frames that do fit still come out exact.
    let dir = std::env::temp_dir();
    let input = dir.join(format!("linerate-replay-big-{}.pcap", std::process::id()));
    let out = dir.join(format!(
        "linerate-replay-big-out-{}.pcap",
        std::process::id()
    ));
    let big: Vec<u8> = (0..2000u32).map(|i| (i % 253) as u8).collect();
    write_frames(&input, &[&[1u8; 60], &big]);
    let r = run(&format!(
        "s :: MemoryReplay(FILE {}, COPY true, LIMIT 4, STOP true) -> VLANEncap(VLAN_ID 7) -> ToDump({}, SNAPLEN 4096);",
        input.display(),
        out.display()
    ));
    assert_eq!(read(&r, "s.count"), "4");
    drop(r);
    let v = read_frames(&out);
    std::fs::remove_file(&out).unwrap();
    std::fs::remove_file(&input).unwrap();
    let lens: Vec<usize> = v.iter().map(Vec::len).collect();
    assert_eq!(lens, [64, 2004, 64, 2004]);
    for f in [&v[1], &v[3]] {
        assert_eq!(&f[..12], &big[..12]);
        assert_eq!(&f[12..16], &[0x81, 0x00, 0x00, 0x07]);
        assert_eq!(&f[16..], &big[12..]);
    }
    assert!(v[2][16..].iter().all(|&b| b == 1));
}

#[test]
fn memoryreplay_frames_are_exact() {
    let out =
        std::env::temp_dir().join(format!("linerate-model-replay-{}.pcap", std::process::id()));
    let r = run(&format!(
        "s :: MemoryReplay(60, PACKETS 3, LIMIT 5, STOP true) -> ToDump({});",
        out.display()
    ));
    assert_eq!(read(&r, "s.count"), "5");
    drop(r);
    let v = read_frames(&out);
    std::fs::remove_file(&out).unwrap();
    #[rustfmt::skip]
    let frame0: Vec<u8> = vec![
        2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00,
        // IPv4: length 46, id 0, ttl 64, UDP, checksum 0x6640, 10.0.0.0 > 10.128.0.0
        0x45, 0x00, 0x00, 0x2e, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, 0x66, 0x40,
        10, 0, 0, 0, 10, 0x80, 0, 0,
        // UDP 1024 > 5000, length 26, checksum 0
        0x04, 0x00, 0x13, 0x88, 0x00, 0x1a, 0x00, 0x00,
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
    ];
    assert_eq!(v.len(), 5);
    assert_eq!(v[0], frame0);
    // Round robin over 3 distinct frames, each with its own 5-tuple.
    assert_eq!(v[3], v[0]);
    assert_eq!(v[4], v[1]);
    assert_ne!(v[1], v[0]);
    assert_eq!(v[1][29], 1, "source address 10.0.0.1");
    assert_eq!(&v[1][34..36], &[0x04, 0x01], "source port 1025");
    let mut f = vec![0u8; 60];
    build_frame(2, &mut f);
    assert_eq!(v[2], f);
}

#[test]
fn memoryreplay_argument_errors() {
    for (conf, msg) in [
        ("MemoryReplay(LENGTH 41)", "LENGTH must be between 42"),
        ("MemoryReplay(PACKETS 0)", "PACKETS must be between"),
        ("MemoryReplay(BURST 0)", "BURST must be at least 1"),
    ] {
        let e = build(&format!("{conf} -> Discard;")).err().unwrap();
        assert!(e.contains(msg), "{conf}: {e}");
    }
}

#[test]
fn parsesteps_result_is_deterministic_and_exact() {
    let conf = |steps: u32, lanes: u32| {
        format!(
            "MemoryReplay(LENGTH 100, PACKETS 16, LIMIT 1000, STOP true, BURST 37) \
             -> p :: ParseSteps({steps}, LANES {lanes}) -> Discard;"
        )
    };
    // The expected sum: 1000 packets cycle through 16 frames.
    let expect = |steps: u32| {
        let mut sum = 0u64;
        for k in 0..1000u32 {
            let mut f = vec![0u8; 100];
            build_frame(k % 16, &mut f);
            sum = sum.wrapping_add(u64::from(packet_state(&f, steps)));
        }
        sum.to_string()
    };
    let a = run(&conf(20, 8));
    assert_eq!(read(&a, "p.count"), "1000");
    assert_eq!(read(&a, "p.result"), expect(20));
    // The same on a second run and with any number of lanes (batches of 37
    // leave remainders).
    for lanes in [1, 2, 4, 8, 16] {
        assert_eq!(
            read(&run(&conf(20, lanes)), "p.result"),
            expect(20),
            "LANES {lanes}"
        );
    }
    assert_ne!(read(&run(&conf(21, 8)), "p.result"), expect(20));
    assert_eq!(read(&a, "p.steps"), "20");
    a.handle().call("p.reset", Some("")).unwrap();
    assert_eq!(read(&a, "p.result"), "0");
    let e = build("Idle -> ParseSteps(1, LANES 3) -> Discard;")
        .err()
        .unwrap();
    assert!(e.contains("LANES must be 1, 2, 4, 8 or 16"), "{e}");
}

#[test]
fn parsesteps_cost_grows_with_steps() {
    let time = |steps: u32| {
        let mut r = build(&format!(
            "MemoryReplay(LENGTH 64, LIMIT 4000, STOP true) -> ParseSteps({steps}) -> Discard;"
        ))
        .unwrap();
        let t = Instant::now();
        r.run();
        t.elapsed().as_secs_f64()
    };
    // Best of five against scheduling noise; 400 steps cost about 8 times
    // 50, asserted with a wide margin for a loaded machine.
    let best = |steps| (0..5).map(|_| time(steps)).fold(f64::INFINITY, f64::min);
    let (t0, t50, t400) = (best(0), best(50), best(400));
    assert!(
        t50 > t0 && t400 > 2.0 * t50,
        "0: {t0} s, 50: {t50} s, 400: {t400} s"
    );
}

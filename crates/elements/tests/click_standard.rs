//! Click's standard elements in Click's test style: a configuration, literal
//! input packets, and the exact expected output (handler values, packets
//! written by ToDump and read back).

mod common;

use common::{build, run};
use linerate_io::pcap::PcapReader;
use linerate_runtime::{Router, RouterOptions};
use std::path::{Path, PathBuf};

fn sim() -> RouterOptions {
    RouterOptions {
        simtime: Some(1_000_000_000),
        ..Default::default()
    }
}

fn read(r: &Router, h: &str) -> String {
    let v = r
        .handle()
        .call(h, None)
        .unwrap_or_else(|e| panic!("{h}: {e}"));
    assert!(v.ends_with('\n'), "{h}: {v:?}");
    v.trim_end().to_string()
}

fn num(r: &Router, h: &str) -> u64 {
    read(r, h).parse().unwrap_or_else(|_| panic!("{h}"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("linerate-std-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// A little-endian microsecond Ethernet pcap of `frames` (timestamp in µs).
fn write_pcap(name: &str, frames: &[(u64, Vec<u8>)]) -> PathBuf {
    let mut f = Vec::new();
    for w in [0xa1b2c3d4u32, 0x0004_0002, 0, 0, 65535, 1] {
        if w == 0x0004_0002 {
            f.extend_from_slice(&[2, 0, 4, 0]);
        } else {
            f.extend_from_slice(&w.to_le_bytes());
        }
    }
    for (us, d) in frames {
        f.extend_from_slice(&((us / 1_000_000) as u32).to_le_bytes());
        f.extend_from_slice(&((us % 1_000_000) as u32).to_le_bytes());
        f.extend_from_slice(&(d.len() as u32).to_le_bytes());
        f.extend_from_slice(&(d.len() as u32).to_le_bytes());
        f.extend_from_slice(d);
    }
    let p = tmp(name);
    std::fs::write(&p, &f).unwrap();
    p
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

/// An Ethernet + IPv4/UDP frame whose last payload byte is `tag`.
fn frame(tag: u8, payload: usize) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 20 + 8 + payload];
    f[12] = 0x08;
    let ip_len = (20 + 8 + payload) as u16;
    f[14] = 0x45;
    f[16..18].copy_from_slice(&ip_len.to_be_bytes());
    f[22] = 64;
    f[23] = 17;
    f[26..30].copy_from_slice(&[10, 0, 0, 1]);
    f[30..34].copy_from_slice(&[10, 0, 0, tag]);
    let n = f.len();
    f[n - 1] = tag;
    f
}

fn tags(p: &Path) -> Vec<u8> {
    records(p)
        .iter()
        .map(|(_, _, d)| *d.last().unwrap())
        .collect()
}

#[test]
fn switch_sends_everything_to_one_output_and_count_call_moves_it() {
    // The Counter switches the Switch when its count reaches 3: packet 3
    // already takes the new output, as in Click.
    let r = run(
        "InfiniteSource(LIMIT 10, BURST 1, STOP true) -> c :: Counter(COUNT_CALL 3 s.switch 1) -> s :: Switch(0);
         s[0] -> a :: Counter -> Discard; s[1] -> b :: Counter -> Discard;",
        RouterOptions::default(),
    );
    assert_eq!(num(&r, "a.count"), 2);
    assert_eq!(num(&r, "b.count"), 8);
    assert_eq!(read(&r, "s.switch"), "1");
    assert_eq!(read(&r, "c.count_call"), "3 s.switch 1");
}

#[test]
fn switch_minus_one_drops_and_out_of_range_means_minus_one() {
    let r = run(
        "InfiniteSource(LIMIT 5, STOP true) -> s :: Switch(-1); s[0] -> a :: Counter -> Discard;
         InfiniteSource(LIMIT 5, STOP true) -> t :: StaticSwitch(1); t[0] -> b :: Counter -> Discard;",
        RouterOptions::default(),
    );
    assert_eq!(num(&r, "a.count"), 0);
    assert_eq!(read(&r, "s.switch"), "-1");
    assert_eq!(num(&r, "b.count"), 0);
    assert!(build(
        "Idle -> s :: Switch(-2) -> Discard",
        RouterOptions::default()
    )
    .is_err());
    let r = build(
        "Idle -> s :: Switch -> Discard; s[1] -> Discard",
        RouterOptions::default(),
    )
    .unwrap();
    r.handle().call("s.switch", Some("1")).unwrap();
    assert_eq!(read(&r, "s.switch"), "1");
    r.handle().call("s.switch", Some("7")).unwrap();
    assert_eq!(read(&r, "s.switch"), "-1");
}

#[test]
fn count_call_stop_stops_the_router_at_the_count() {
    let r = run(
        "InfiniteSource(BURST 1) -> c :: Counter(COUNT_CALL 5 stop) -> Discard;",
        RouterOptions::default(),
    );
    assert_eq!(num(&r, "c.count"), 5);
}

#[test]
fn byte_count_call_fires_once_when_reached() {
    let r = run(
        "InfiniteSource(LENGTH 100, LIMIT 10, BURST 1, STOP true)
           -> c :: Counter(BYTE_COUNT_CALL 250 s.switch 1) -> s :: Switch(0);
         s[0] -> a :: Counter -> Discard; s[1] -> b :: Counter -> Discard;",
        RouterOptions::default(),
    );
    // 250 bytes are reached with the third packet.
    assert_eq!(num(&r, "a.count"), 2);
    assert_eq!(num(&r, "b.count"), 8);
}

#[test]
fn counter_rates_follow_clicks_ewma() {
    // One packet per 1 ms epoch for 2 s of simulated time: the EWMA (alpha
    // 1/16, 10 fraction bits, compensation 8) settles at 1031/1024 packets
    // per epoch.
    let r = run(
        "RatedSource(LENGTH 100, RATE 1000, LIMIT 2000, STOP true) -> c :: Counter -> Discard;",
        sim(),
    );
    assert_eq!(num(&r, "c.count"), 2000);
    let rate: f64 = read(&r, "c.rate").parse().unwrap();
    assert!((990.0..1010.0).contains(&rate), "rate {rate}");
    let byte_rate: f64 = read(&r, "c.byte_rate").parse().unwrap();
    assert!((99_000.0..101_000.0).contains(&byte_rate), "{byte_rate}");
    let bit_rate: f64 = read(&r, "c.bit_rate").parse().unwrap();
    assert!((bit_rate - 8.0 * byte_rate).abs() < 1.0, "{bit_rate}");
    r.handle().call("c.reset", Some("")).unwrap();
    assert_eq!(read(&r, "c.rate"), "0");
    assert_eq!(read(&r, "c.count"), "0");
}

#[test]
fn paint_paintswitch_checkpaint_painttee() {
    let r = run(
        "InfiniteSource(LIMIT 6, STOP true) -> rr :: RoundRobinSwitch;
         rr[0] -> Paint(0) -> j :: Null; rr[1] -> Paint(1) -> j; rr[2] -> Paint(2) -> j;
         j -> pt :: PaintTee(2) -> cp :: CheckPaint(1) -> ps :: PaintSwitch;
         pt[1] -> copies :: Counter -> Discard;
         cp[1] -> notone :: Counter -> Discard;
         ps[0] -> p0 :: Counter -> Discard; ps[1] -> p1 :: Counter -> Discard;",
        RouterOptions::default(),
    );
    assert_eq!(num(&r, "copies.count"), 2);
    assert_eq!(num(&r, "notone.count"), 4);
    assert_eq!(num(&r, "p0.count"), 0);
    assert_eq!(num(&r, "p1.count"), 2);
}

#[test]
fn paint_anno_and_paintswitch_drops_unknown_colours() {
    let r = run(
        "InfiniteSource(LIMIT 4, STOP true) -> Paint(5, ANNO 20) -> Paint(1) -> ps :: PaintSwitch(20);
         ps[0] -> a :: Counter -> Discard; ps[1] -> b :: Counter -> Discard;
         InfiniteSource(LIMIT 3, STOP true) -> Paint(1, 20) -> qs :: PaintSwitch(ANNO 20);
         qs[0] -> c :: Counter -> Discard; qs[1] -> d :: Counter -> Discard;",
        RouterOptions::default(),
    );
    assert_eq!(num(&r, "a.count") + num(&r, "b.count"), 0);
    assert_eq!(num(&r, "d.count"), 3);
    assert!(build("Idle -> Paint(256) -> Discard", RouterOptions::default()).is_err());
    let err = build("Idle -> Paint -> Discard", RouterOptions::default()).err();
    assert!(err.unwrap().contains("COLOR"));
}

#[test]
fn hashswitch_uses_clicks_byte_sum() {
    // Byte sums 0x01+0x02 = 3 -> (3 ^ 0) & 1 = 1; 0x10 + 0 = 16 -> (16 ^ 1) & 1 = 1;
    // 0x02 + 0x02 = 4 -> 0; a packet too short goes to output 0.
    let r = run(
        r#"InfiniteSource(DATA \<0102>, LIMIT 1, STOP true) -> h :: HashSwitch(0, 2);
           InfiniteSource(DATA \<1000>, LIMIT 1, STOP true) -> h;
           InfiniteSource(DATA \<0202>, LIMIT 1, STOP true) -> h;
           InfiniteSource(DATA \<02>, LIMIT 1, STOP true) -> h;
           h[0] -> a :: Counter -> Discard; h[1] -> b :: Counter -> Discard;
           InfiniteSource(DATA \<0a0b>, LIMIT 1, STOP true) -> g :: HashSwitch(1, 1);
           g[0] -> Discard; g[1] -> Discard; g[2] -> c2 :: Counter -> Discard;"#,
        RouterOptions::default(),
    );
    assert_eq!(num(&r, "a.count"), 2);
    assert_eq!(num(&r, "b.count"), 2);
    // 0x0b = 11 % 3 = 2.
    assert_eq!(num(&r, "c2.count"), 1);
    assert!(build(
        "Idle -> HashSwitch(0, 0) -> Discard",
        RouterOptions::default()
    )
    .is_err());
}

#[test]
fn roundrobin_and_stride_share_packets() {
    let r = run(
        "InfiniteSource(LIMIT 10, BURST 3, STOP true) -> rr :: RoundRobinSwitch;
         rr[0] -> a :: Counter -> Discard; rr[1] -> b :: Counter -> Discard; rr[2] -> c :: Counter -> Discard;
         InfiniteSource(LIMIT 9, BURST 4, STOP true) -> ss :: StrideSwitch(2, 1);
         ss[0] -> x :: Counter -> Discard; ss[1] -> y :: Counter -> Discard;",
        RouterOptions::default(),
    );
    assert_eq!(
        (num(&r, "a.count"), num(&r, "b.count"), num(&r, "c.count")),
        (4, 3, 3)
    );
    assert_eq!((num(&r, "x.count"), num(&r, "y.count")), (6, 3));
    assert!(build(
        "Idle -> s :: StrideSwitch(1) -> Discard; s[1] -> Discard",
        RouterOptions::default()
    )
    .is_err());
}

#[test]
fn roundrobin_keeps_order_within_outputs() {
    let frames: Vec<_> = (1..=6).map(|i| (i as u64, frame(i, 10))).collect();
    let inp = write_pcap("rr-in.pcap", &frames);
    let (o0, o1) = (tmp("rr-0.pcap"), tmp("rr-1.pcap"));
    run(
        &format!(
            "FromDump({}, STOP true) -> rr :: RoundRobinSwitch;
             rr[0] -> ToDump({}); rr[1] -> ToDump({});",
            inp.display(),
            o0.display(),
            o1.display()
        ),
        RouterOptions::default(),
    );
    assert_eq!(tags(&o0), vec![1, 3, 5]);
    assert_eq!(tags(&o1), vec![2, 4, 6]);
}

#[test]
fn hub_skips_the_arrival_port() {
    let r = run(
        "h :: Hub; InfiniteSource(LIMIT 5, STOP true) -> [1]h; Idle -> [0]h; Idle -> [2]h;
         h[0] -> a :: Counter -> Discard; h[1] -> b :: Counter -> Discard; h[2] -> c :: Counter -> Discard;",
        RouterOptions::default(),
    );
    assert_eq!(
        (num(&r, "a.count"), num(&r, "b.count"), num(&r, "c.count")),
        (5, 0, 5)
    );
}

#[test]
fn pulltee_copies_pulled_packets() {
    let r = run(
        "InfiniteSource(LIMIT 20, STOP true) -> q :: Queue -> pt :: PullTee -> Unqueue -> a :: Counter -> Discard;
         pt[1] -> b :: Counter -> Discard;",
        RouterOptions::default(),
    );
    let a = num(&r, "a.count");
    assert_eq!(a, num(&r, "b.count"));
    assert_eq!(a + num(&r, "q.length"), 20);
}

#[test]
fn pullswitch_selects_an_input() {
    let r = run(
        "InfiniteSource(LENGTH 10, LIMIT 5) -> a :: Queue; InfiniteSource(LENGTH 20, LIMIT 5) -> b :: Queue;
         ps :: PullSwitch(1); a -> [0]ps; b -> [1]ps;
         ps -> Unqueue -> c :: Counter(COUNT_CALL 5 stop) -> Discard;",
        RouterOptions::default(),
    );
    assert_eq!(num(&r, "c.byte_count"), 100);
    assert_eq!(num(&r, "a.length"), 5);
    assert_eq!(read(&r, "ps.switch"), "1");
}

#[test]
fn strip_unstrip_truncate_pad_resize_lengths() {
    let r = run(
        "InfiniteSource(LENGTH 100, LIMIT 2, STOP true) -> Strip(14) -> a :: Counter
           -> Unstrip(14) -> b :: Counter -> t :: Truncate(60) -> c :: Counter
           -> Pad -> d :: Counter -> Pad(120) -> e :: Counter
           -> Resize(-20, 4) -> f :: Counter -> Strip(500) -> g :: Counter -> Discard;",
        RouterOptions::default(),
    );
    assert_eq!(num(&r, "a.byte_count"), 2 * 86);
    assert_eq!(num(&r, "b.byte_count"), 2 * 100);
    assert_eq!(num(&r, "c.byte_count"), 2 * 60);
    // Pad restores what Truncate removed (its extra length annotation).
    assert_eq!(num(&r, "d.byte_count"), 2 * 100);
    assert_eq!(num(&r, "e.byte_count"), 2 * 120);
    assert_eq!(num(&r, "f.byte_count"), 2 * 104);
    assert_eq!(num(&r, "g.byte_count"), 0);
    assert_eq!(read(&r, "t.length"), "60");
}

#[test]
fn unstrip_restores_the_original_bytes_and_truncate_sets_extra_length() {
    let inp = write_pcap("un-in.pcap", &[(5, frame(7, 30)), (6, frame(8, 2))]);
    let out = tmp("un-out.pcap");
    run(
        &format!(
            "FromDump({}, STOP true) -> Strip(14) -> Unstrip(14) -> Truncate(50) -> ToDump({});",
            inp.display(),
            out.display()
        ),
        RouterOptions::default(),
    );
    let recs = records(&out);
    assert_eq!(recs.len(), 2);
    // ToDump writes the original length including Truncate's extra length.
    assert_eq!(recs[0].1, 72);
    assert_eq!(recs[0].2, frame(7, 30)[..50].to_vec());
    assert_eq!(recs[1].1, 44);
    assert_eq!(recs[1].2, frame(8, 2));
}

#[test]
fn checklength_splits_long_packets() {
    let r = run(
        "InfiniteSource(LENGTH 60, LIMIT 3, STOP true) -> cl :: CheckLength(64);
         InfiniteSource(LENGTH 65, LIMIT 2, STOP true) -> cl;
         cl[0] -> a :: Counter -> Discard; cl[1] -> b :: Counter -> Discard;
         InfiniteSource(LENGTH 65, LIMIT 2, STOP true) -> dl :: CheckLength(64) -> c :: Counter -> Discard;",
        RouterOptions::default(),
    );
    assert_eq!((num(&r, "a.count"), num(&r, "b.count")), (3, 2));
    assert_eq!(num(&r, "c.count"), 0);
}

#[test]
fn strip_to_network_header_and_align_keep_the_ip_packet() {
    let inp = write_pcap("nh-in.pcap", &[(1, frame(1, 8)), (2, frame(2, 9))]);
    let out = tmp("nh-out.pcap");
    run(
        &format!(
            "FromDump({}, STOP true, FORCE_IP true) -> Align(4, 2) -> StripToNetworkHeader -> Align(8, 0) -> ToDump({}, ENCAP IP);",
            inp.display(),
            out.display()
        ),
        RouterOptions::default(),
    );
    let recs = records(&out);
    assert_eq!(recs[0].2, frame(1, 8)[14..].to_vec());
    assert_eq!(recs[1].2, frame(2, 9)[14..].to_vec());
}

#[test]
fn settimestamp_sets_the_annotation() {
    let out = tmp("ts.pcap");
    run(
        &format!(
            "InfiniteSource(LIMIT 2, STOP true) -> SetTimestamp(1.5) -> ToDump({});",
            out.display()
        ),
        RouterOptions::default(),
    );
    let recs = records(&out);
    assert_eq!(recs.len(), 2);
    assert!(recs.iter().all(|r| r.0 == 1_500_000_000));
}

#[test]
fn simplequeue_tail_drops_and_frontdropqueue_keeps_the_newest() {
    let frames: Vec<_> = (1..=6).map(|i| (i as u64, frame(i, 4))).collect();
    let inp = write_pcap("q-in.pcap", &frames);
    let o1 = tmp("fdq-1.pcap");
    let r = run(
        &format!(
            "FromDump({}, STOP true) -> t :: Tee;
             t[0] -> q :: FrontDropQueue(4); q[1] -> ToDump({}); q -> Idle;
             t[1] -> s :: SimpleQueue(4) -> Idle; s[1] -> sd :: Counter -> Discard;",
            inp.display(),
            o1.display()
        ),
        RouterOptions::default(),
    );
    assert_eq!(read(&r, "q.length"), "4");
    assert_eq!(read(&r, "q.drops"), "2");
    assert_eq!(read(&r, "q.highwater_length"), "4");
    assert_eq!(tags(&o1), vec![1, 2]);
    assert_eq!(read(&r, "s.length"), "4");
    assert_eq!(read(&r, "s.drops"), "2");
    assert_eq!(num(&r, "sd.count"), 2);
    r.handle().call("q.reset_counts", Some("")).unwrap();
    assert_eq!(read(&r, "q.drops"), "0");
    r.handle().call("q.reset", Some("")).unwrap();
    assert_eq!(read(&r, "q.length"), "0");
    assert_eq!(read(&r, "q.capacity"), "4");
}

#[test]
fn frontdropqueue_output_order_is_newest_packets() {
    let frames: Vec<_> = (1..=6).map(|i| (i as u64, frame(i, 4))).collect();
    let inp = write_pcap("fq-in.pcap", &frames);
    let out = tmp("fq-out.pcap");
    // Fill the queue first (Unqueue inactive), then drain it by activating
    // Unqueue from a Counter's COUNT_CALL when the last packet arrives.
    run(
        &format!(
            "FromDump({}, STOP false) -> Counter(COUNT_CALL 6 u.active true) -> q :: FrontDropQueue(3)
               -> u :: Unqueue(ACTIVE false) -> c :: Counter(COUNT_CALL 3 stop) -> ToDump({});",
            inp.display(),
            out.display()
        ),
        RouterOptions::default(),
    );
    assert_eq!(tags(&out), vec![4, 5, 6]);
}

#[test]
fn ratedunqueue_on_simulated_time() {
    // Bucket: 20 ms at 10/s rounds to 0, so 1 token, starting full: one
    // packet at once, then one every 100 ms.
    let r = run(
        "InfiniteSource(LIMIT 100) -> q :: Queue -> ru :: RatedUnqueue(10) -> c :: Counter -> Discard;
         TimedSource(1s, LIMIT 2, STOP true) -> Discard;",
        sim(),
    );
    let n = num(&r, "c.count");
    assert!((20..=22).contains(&n), "{n}");
    assert_eq!(read(&r, "ru.rate"), "10");
    r.handle().call("ru.rate", Some("20")).unwrap();
    assert_eq!(read(&r, "ru.rate"), "20");
}

#[test]
fn bandwidthratedunqueue_on_simulated_time() {
    // 10000 B/s with a 200 + 131072 byte bucket, 1000-byte packets: as in
    // Click a packet leaves while the bucket holds the 131072-byte threshold,
    // so one leaves at once, then 10 per second.
    let r = run(
        "InfiniteSource(LENGTH 1000, LIMIT 1000) -> Queue -> bu :: BandwidthRatedUnqueue(80kbps) -> c :: Counter -> Discard;
         TimedSource(1s, LIMIT 2, STOP true) -> Discard;",
        sim(),
    );
    let n = num(&r, "c.count");
    assert!((20..=22).contains(&n), "{n}");
    assert_eq!(read(&r, "bu.rate"), "80kbps");
}

#[test]
fn ratedsplitter_and_shaper_on_simulated_time() {
    let r = run(
        "RatedSource(RATE 100, LIMIT 200, STOP true) -> rs :: RatedSplitter(50);
         rs[0] -> a :: Counter -> Discard; rs[1] -> b :: Counter -> Discard;
         InfiniteSource(LIMIT 100) -> Queue -> sh :: Shaper(10) -> Unqueue -> c :: Counter -> Discard;",
        sim(),
    );
    let (a, b) = (num(&r, "a.count"), num(&r, "b.count"));
    assert_eq!(a + b, 200);
    assert!((98..=102).contains(&a), "{a}");
    // 2 s of simulated time at 10 packets per second.
    let c = num(&r, "c.count");
    assert!((19..=22).contains(&c), "{c}");
    assert_eq!(read(&r, "sh.rate"), "10");
}

#[test]
fn rated_elements_reject_bad_arguments() {
    for conf in [
        "Idle -> Queue -> RatedUnqueue -> Discard",
        "Idle -> Queue -> RatedUnqueue(10, BURST_SIZE 5, BURST_DURATION 1s) -> Discard",
        "Idle -> Queue -> BandwidthRatedUnqueue(fast) -> Discard",
        "Idle -> Queue -> Shaper(x) -> Discard",
    ] {
        assert!(build(conf, RouterOptions::default()).is_err(), "{conf}");
    }
}

#[test]
fn count_call_handler_rearms_with_a_new_count() {
    let r = build(
        "Idle -> c :: Counter(COUNT_CALL 5 s.switch 1) -> s :: Switch -> Discard; s[1] -> Discard",
        RouterOptions::default(),
    )
    .unwrap();
    r.handle().call("c.count_call", Some("9")).unwrap();
    assert_eq!(read(&r, "c.count_call"), "9 s.switch 1");
    r.handle()
        .call("c.byte_count_call", Some("100 s.switch 0"))
        .unwrap();
    assert_eq!(read(&r, "c.byte_count_call"), "100 s.switch 0");
    assert!(r.handle().call("c.count_call", Some("x y")).is_err());
}

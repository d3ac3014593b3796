//! Packet parsers on arbitrary bytes: the L4 parser behind L4Parser and the
//! flow meters (and its headers-only `locate`, which must agree with it),
//! the tunnel headers, SCION (common/address header, paths, SCMP) and the
//! IPFIX / NetFlow v9 decoders; and the flow meters' path on the same
//! bytes: `L4Parser` (fast and reference, the frame cut short by a capture
//! as the first byte says), then the flow key readers (`FlowKey::from_packet`
//! and `key_words`, which must agree). None may panic; what parses must be
//! self-consistent (offsets inside the frame).
#![no_main]

use libfuzzer_sys::fuzz_target;
use linerate_elements::parse::l4parser::L4Parser;
use linerate_runtime::anno::offsets;
use linerate_runtime::flow::{key_words, FlowKey, KeyRules};
use linerate_runtime::{ConfigureCtx, Packet, Processing};

/// An `L4Parser` with `IMPL` `imp` and both outputs.
fn parser(imp: &str) -> L4Parser {
    const PUSH2: [Processing; 2] = [Processing::Push, Processing::Push];
    let ctx = ConfigureCtx {
        name: "p",
        config: "",
        args: vec![format!("IMPL {imp}")],
        inputs: &PUSH2[..1],
        outputs: &PUSH2[..],
        replica: (0, 1),
        default_burst: 64,
    };
    L4Parser::configure(&ctx).expect("L4Parser")
}

/// `frame` as `L4Parser` `imp` leaves it: parsed with its annotations, or
/// `None`. `cut` is its `EXTRA_LENGTH`.
fn l4parsed(imp: &str, frame: &[u8], cut: u32) -> Option<Packet> {
    let one = || {
        let mut p = Packet::from_slice(frame);
        p.anno_mut().set_u32(offsets::EXTRA_LENGTH, cut);
        [p].into_iter().collect()
    };
    // Twice: the fast parser's second batch takes its common pass for cut
    // frames if the first was one.
    let mut e = parser(imp);
    let (first, _) = e.process(one());
    let (second, _) = e.process(one());
    let (a, b) = (first.into_iter().next(), second.into_iter().next());
    assert_eq!(a.as_ref().map(|p| *p.anno()), b.as_ref().map(|p| *p.anno()));
    a
}
use linerate_wire::scion::{header, path, scmp};
use linerate_wire::{gtpu, ip, ipfix, ipv6ext, l4, netflow9, vxlan};

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = l4::parse(data) {
        assert!(usize::from(p.network) <= data.len());
        if p.transport != l4::NO_TRANSPORT {
            assert!(usize::from(p.transport) <= data.len() && p.transport > p.network);
        }
    }
    // `locate` is `parse` without the hash: the same answer and offsets.
    match (l4::locate(data), l4::parse(data)) {
        (Ok(l), Ok(p)) => {
            let t = l.transport.map_or(l4::NO_TRANSPORT, |t| t as u16);
            assert_eq!(
                (l.network as u16, t, l.proto, l.version, l.vlan_tci),
                (p.network, p.transport, p.proto, p.version, p.vlan_tci)
            );
            assert!(l.network < l.end && l.end <= data.len());
            if let Some(t) = l.transport {
                assert!(l.network < t && t < l.end);
                assert!(l.fragment != l4::Fragment::Later);
            }
            // The fragment flag is the one `ipv6ext::walk` reports.
            if l.version == 6 {
                let first = ip::IpProtocol(data[l.network + 6]);
                let walk = ipv6ext::walk(first, &data[l.network + 40..l.end]);
                let seen = walk.map(|c| c.fragment.is_some());
                assert_eq!(seen, Ok(l.fragment != l4::Fragment::Whole));
            }
        }
        (Err(a), Err(b)) => assert_eq!(a, b),
        (l, p) => panic!("locate {l:?}, parse {p:?}"),
    }
    // A frame cut short by a capture: the first byte picks the cut. Every
    // offset lies in the frame; a frame `parse` takes gives the same answer.
    if let Some((&c, frame)) = data.split_first() {
        let cut = usize::from(c) * 8;
        if let Ok(p) = l4::parse_cut(frame, cut) {
            assert!(usize::from(p.network) <= frame.len());
            if p.transport != l4::NO_TRANSPORT {
                assert!(usize::from(p.transport) <= frame.len() && p.transport > p.network);
            }
        }
        if let Ok(p) = l4::parse(frame) {
            assert_eq!(l4::parse_cut(frame, cut), Ok(p));
        }
        // One parse serves a frame that may be cut: `parse_cut` is the
        // general parser's answer unless that refused the IP length, and
        // the common path for cut frames is `parse_cut` where it answers.
        let (g, c) = (l4::parse_general(frame), l4::parse_cut(frame, cut));
        match g {
            Err(l4::Reason::BadLength) => {
                if let Ok(p) = c {
                    assert!(p.ip_end(frame) > frame.len());
                }
            }
            _ => assert_eq!(c, g),
        }
        if let Some(p) = l4::parse_common_cut_then(frame, cut, |p| p) {
            assert_eq!(Ok(p), c);
        }
        // L4Parser's two implementations agree, and the flow key readers
        // agree on what they leave.
        let fast = l4parsed("fast", frame, cut as u32);
        let reference = l4parsed("reference", frame, cut as u32);
        assert_eq!(
            fast.as_ref().map(|p| *p.anno()),
            reference.as_ref().map(|p| *p.anno())
        );
        if let Some(p) = &fast {
            let k = FlowKey::from_packet(p);
            let w = key_words(p, KeyRules::FLOW_KEY);
            assert_eq!(k.is_some(), w.is_some());
            if let (Some(k), Some(w)) = (k, w) {
                // The words are the key's bytes (addresses little-endian).
                let w = w.words;
                let bytes = |a: u64, b: u64| {
                    let mut x = [0u8; 16];
                    x[..8].copy_from_slice(&a.to_le_bytes());
                    x[8..].copy_from_slice(&b.to_le_bytes());
                    x
                };
                assert_eq!((bytes(w[0], w[1]), bytes(w[2], w[3])), (k.src, k.dst));
                let last = (
                    w[4] as u16,
                    (w[4] >> 16) as u16,
                    (w[4] >> 32) as u8,
                    (w[4] >> 40) as u8,
                );
                assert_eq!(last, (k.sport, k.dport, k.proto, k.version));
            }
        }
    }
    if let Ok(p) = gtpu::Packet::new_checked(data) {
        let _ = gtpu::Repr::parse(&p);
    }
    let _ = vxlan::Packet::new_checked(data);
    if let Ok(p) = header::Packet::new_checked(data) {
        if header::Repr::parse(&p).is_ok() {
            let _ =
                path::StandardPath::new_checked(p.path()).map(|s| path::StandardRepr::parse(&s));
            let _ = path::OneHopPath::new_checked(p.path()).map(|s| path::OneHopRepr::parse(&s));
            if let Ok(s) = scmp::Packet::new_checked(p.payload()) {
                let _ = scmp::Repr::parse(&s);
            }
        }
    }
    if let Ok(p) = ipfix::Packet::new_checked(data) {
        let _ = ipfix::Repr::parse(&p);
        for set in p.sets().take(1024) {
            let _ = set;
        }
    }
    if let Ok(p) = netflow9::Packet::new_checked(data) {
        let _ = netflow9::Repr::parse(&p);
    }
});

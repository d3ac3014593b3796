//! Packet parsers on arbitrary bytes: the L4 parser behind L4Parser and the
//! flow meters (and its headers-only `locate`, which must agree with it),
//! the tunnel headers, SCION (common/address header, paths, SCMP) and the
//! IPFIX / NetFlow v9 decoders. None may panic; what parses must be
//! self-consistent (offsets inside the frame).
#![no_main]

use libfuzzer_sys::fuzz_target;
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

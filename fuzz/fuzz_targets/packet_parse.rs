//! Packet parsers on arbitrary bytes: the L4 parser behind L4Parser and the
//! flow meters, the tunnel headers, SCION (common/address header, paths,
//! SCMP) and the IPFIX / NetFlow v9 decoders. None may panic; what parses
//! must be self-consistent (offsets inside the frame).
#![no_main]

use libfuzzer_sys::fuzz_target;
use linerate_wire::scion::{header, path, scmp};
use linerate_wire::{gtpu, ipfix, l4, netflow9, vxlan};

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = l4::parse(data) {
        assert!(usize::from(p.network) <= data.len());
        if p.transport != l4::NO_TRANSPORT {
            assert!(usize::from(p.transport) <= data.len() && p.transport > p.network);
        }
    }
    if let Ok(p) = gtpu::Packet::new_checked(data) {
        let _ = gtpu::Repr::parse(&p);
    }
    let _ = vxlan::Packet::new_checked(data);
    if let Ok(p) = header::Packet::new_checked(data) {
        if header::Repr::parse(&p).is_ok() {
            let _ = path::StandardPath::new_checked(p.path()).map(|s| path::StandardRepr::parse(&s));
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

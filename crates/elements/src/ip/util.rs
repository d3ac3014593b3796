//! Helpers shared by the IP elements (no element lives here).

use linerate_runtime::Packet;
use linerate_wire::checksum;

/// Protocol numbers.
pub(crate) const PROTO_ICMP: u8 = 1;
pub(crate) const PROTO_TCP: u8 = 6;
pub(crate) const PROTO_UDP: u8 = 17;

/// `IP_MF` and `IP_OFFMASK` in host order.
pub(crate) const IP_MF: u16 = 0x2000;
pub(crate) const IP_DF: u16 = 0x4000;
pub(crate) const IP_OFFMASK: u16 = 0x1fff;

#[inline]
pub(crate) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

#[inline]
pub(crate) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Network header offset from the data start, when set and within the data.
#[inline]
pub(crate) fn nh_offset(p: &Packet) -> Option<usize> {
    match p.network_header_offset() {
        Some(o) if o >= 0 && (o as usize) <= p.len() => Some(o as usize),
        _ => None,
    }
}

/// Transport header offset from the data start: the annotation when set
/// and within the data, otherwise the network header plus its IHL.
#[inline]
pub(crate) fn th_offset(p: &Packet, nh: usize) -> usize {
    match p.transport_header_offset() {
        Some(o) if o >= 0 => o as usize,
        _ => {
            let d = p.data();
            nh + d.get(nh).map_or(20, |b| usize::from(b & 15) * 4)
        }
    }
}

/// Sets Click's IP header annotations: network header at `nh`, transport
/// header `hlen` bytes later.
#[inline]
pub(crate) fn set_ip_header(p: &mut Packet, nh: usize, hlen: usize) {
    p.set_network_header(nh as isize);
    p.set_transport_header((nh + hlen) as isize);
}

/// Click's `click_in_cksum_pseudohdr`: the transport checksum of a segment
/// whose own sum is `seg_sum` (not inverted), for the IPv4 header `iph`.
#[inline]
pub(crate) fn transport_checksum(seg_sum: u16, iph: &[u8], proto: u8, len: u16) -> u16 {
    let src = std::net::Ipv4Addr::new(iph[12], iph[13], iph[14], iph[15]);
    let dst = std::net::Ipv4Addr::new(iph[16], iph[17], iph[18], iph[19]);
    let ph = checksum::pseudo_header_v4(src, dst, linerate_wire::IpProtocol(proto), len);
    !checksum::combine(&[seg_sum, ph])
}

/// Appends Click's `Timestamp` text (`SEC.USEC`) for `ns` nanoseconds.
pub(crate) fn push_timestamp(s: &mut String, ns: u64) {
    use std::fmt::Write;
    let _ = write!(s, "{}.{:06}", ns / 1_000_000_000, (ns % 1_000_000_000) / 1000);
}

/// Reports a message on the console (Click's `click_chatter`).
pub(crate) fn chatter(msg: &str) {
    use std::io::Write;
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(msg.as_bytes());
    let _ = e.write_all(b"\n");
}

/// Runs `f` on every packet of `batch` in order, in one pass, and splits
/// off those for which it returns true (order kept in both). Returns
/// `None`, without touching the batch again, when `f` flagged nothing (the
/// common case). Batches of up to 256 packets use a bitmap on the stack.
#[inline]
pub(crate) fn partition(
    batch: &mut linerate_runtime::Batch,
    mut f: impl FnMut(&mut Packet) -> bool,
) -> Option<linerate_runtime::Batch> {
    if batch.len() > 256 {
        let out = batch.split_off_if(f);
        return (!out.is_empty()).then_some(out);
    }
    let mut bits = [0u64; 4];
    let mut any = false;
    for (i, p) in batch.iter_mut().enumerate() {
        if f(p) {
            bits[i >> 6] |= 1 << (i & 63);
            any = true;
        }
    }
    if !any {
        return None;
    }
    let mut i = 0usize;
    Some(batch.split_off_if(|_| {
        let b = (bits[i >> 6] >> (i & 63)) & 1 != 0;
        i += 1;
        b
    }))
}

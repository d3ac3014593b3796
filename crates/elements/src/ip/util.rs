//! Helpers shared by the IP elements (no element lives here).

use linerate_runtime::anno::NO_HEADER;
use linerate_runtime::Packet;
use linerate_wire::checksum;

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
    // The annotations count from the buffer head: one headroom computation
    // for both (the setters would compute it twice).
    let at = p.headroom() + nh;
    let field = |v: usize| {
        if v < usize::from(NO_HEADER) {
            v as u16
        } else {
            NO_HEADER
        }
    };
    let a = p.anno_mut();
    a.network_header = field(at);
    a.transport_header = field(at + hlen);
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
    let _ = write!(
        s,
        "{}.{:06}",
        ns / 1_000_000_000,
        (ns % 1_000_000_000) / 1000
    );
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
/// common case). The flags go to a bitmap on the stack (on the heap, once
/// per batch, for batches of more than 256 packets), so `f` has a single
/// call site and is inlined into the loop.
#[inline(always)]
pub(crate) fn partition(
    batch: &mut linerate_runtime::Batch,
    mut f: impl FnMut(&mut Packet) -> bool,
) -> Option<linerate_runtime::Batch> {
    let mut stack = [0u64; 4];
    let mut heap;
    let bits: &mut [u64] = if batch.len() <= 256 {
        &mut stack
    } else {
        heap = vec![0u64; batch.len().div_ceil(64)];
        &mut heap
    };
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

/// Drop accounting shared by the header checkers: total, per reason,
/// Click's first-failure message and the `drops`/`drop_details` handlers.
pub(crate) struct CheckCounts {
    /// Message prefix, e.g. `c: TCP header check failed: `.
    pub prefix: String,
    pub reasons: &'static [&'static str],
    pub verbose: bool,
    pub details: bool,
    pub has_out1: bool,
    pub drops: u64,
    pub by_reason: [u64; 8],
}

const CHECK_HANDLERS: &[linerate_runtime::HandlerSpec] =
    &[linerate_runtime::HandlerSpec::counter("drops")];
const CHECK_HANDLERS_DETAILS: &[linerate_runtime::HandlerSpec] = &[
    linerate_runtime::HandlerSpec::counter("drops"),
    linerate_runtime::HandlerSpec::read("drop_details"),
];

impl CheckCounts {
    /// Reads `VERBOSE` and `DETAILS` and completes the arguments.
    pub(crate) fn configure(
        ctx: &linerate_runtime::ConfigureCtx<'_>,
        prefix: String,
        reasons: &'static [&'static str],
    ) -> Result<CheckCounts, Vec<String>> {
        let mut a = linerate_args::Args::new(&ctx.args);
        let verbose = a.read_or("VERBOSE", false);
        let details = a.read_or("DETAILS", false);
        a.complete().map_err(|e| e.0)?;
        Ok(CheckCounts {
            prefix,
            reasons,
            verbose,
            details,
            has_out1: ctx.noutputs() > 1,
            drops: 0,
            by_reason: [0; 8],
        })
    }

    #[cold]
    pub(crate) fn note(&mut self, reason: u8) {
        if self.drops == 0 || self.verbose {
            chatter(&format!("{}{}", self.prefix, self.reasons[reason as usize]));
        }
        self.drops += 1;
        self.by_reason[reason as usize] += 1;
    }

    /// Sends bad packets to output 1, or drops them.
    pub(crate) fn emit(
        &self,
        bad: Option<linerate_runtime::Batch>,
        ctx: &mut linerate_runtime::Ctx<'_>,
    ) {
        if let (Some(b), true) = (bad, self.has_out1) {
            ctx.push(1, b);
        }
    }

    pub(crate) fn handlers(&self) -> &'static [linerate_runtime::HandlerSpec] {
        if self.details {
            CHECK_HANDLERS_DETAILS
        } else {
            CHECK_HANDLERS
        }
    }

    pub(crate) fn read(&self, name: &str) -> Option<String> {
        match name {
            "drops" => Some(self.drops.to_string()),
            "drop_details" if self.details => Some(super::checkipheader::details_text(
                &self.by_reason[..self.reasons.len()],
                self.reasons,
            )),
            _ => None,
        }
    }

    pub(crate) fn drop_list(&self) -> Vec<(&'static str, u64)> {
        linerate_runtime::element::named_counts(self.reasons, &self.by_reason)
    }
}

/// Implements the `Element` handler methods of a checker through its
/// `counts: CheckCounts` field.
macro_rules! check_element_common {
    () => {
        fn handlers(&self) -> &[linerate_runtime::HandlerSpec] {
            self.counts.handlers()
        }
        fn read_handler(&self, name: &str) -> Option<String> {
            self.counts.read(name)
        }
        drops_or_output_1!(self, self.counts.has_out1, self.counts.drop_list());
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    };
}
pub(crate) use check_element_common;

/// One's-complement sum of an IPv4 header (`linerate_wire::checksum::sum`
/// semantics), with the common 20-byte header summed inline as five 32-bit
/// words: the generic routine's call and block loop cost more than the
/// work for so short an input (measured: 18% of a CheckIPHeader ->
/// DecIPTTL -> SetIPChecksum pipeline).
#[inline(always)]
pub(crate) fn ip_header_sum(h: &[u8]) -> u16 {
    if h.len() == 20 {
        let w = |i: usize| u64::from(u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]));
        let s = w(0) + w(4) + w(8) + w(12) + w(16);
        let s = (s >> 32) + (s & 0xffff_ffff);
        let s = (s >> 16) + (s & 0xffff);
        let s = (s >> 16) + (s & 0xffff);
        let s = (s >> 16) + (s & 0xffff);
        s as u16
    } else {
        checksum::sum(h)
    }
}

/// The checksum field's two bytes for a 20-byte header, its current
/// checksum field ignored (summed as if zero, without writing it:
/// SetIPChecksum's zeroing stores followed by word loads of the same bytes
/// stalled on store forwarding). The words are summed in the machine's
/// little-endian order and the result stored the same way: a ones'
/// complement sum commutes with swapping the bytes of every word (RFC 1071),
/// so no byte swaps are needed. Summed as two 64-bit words and one 32-bit
/// word with end-around carries, then folded to 32 and 16 bits the same
/// way (a sum modulo 2^64 - 1 folds to one modulo 0xffff; it is zero only
/// for an all-zero header, as the five-word sum it replaced: 6 instructions
/// fewer a packet).
#[inline(always)]
pub(crate) fn ip_header_checksum(h: &[u8; 20]) -> [u8; 2] {
    let a = u64::from_le_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]);
    let b = u64::from_le_bytes([h[8], h[9], h[10], h[11], h[12], h[13], h[14], h[15]]);
    let b = b & !0xffff_0000;
    let c = u64::from(u32::from_le_bytes([h[16], h[17], h[18], h[19]]));
    let (s, c1) = a.overflowing_add(b);
    let (s, c2) = s.overflowing_add(c + u64::from(c1));
    let s = s + u64::from(c2);
    let (t, c3) = (s as u32).overflowing_add((s >> 32) as u32);
    let t = t + u32::from(c3);
    let (u, c4) = (t as u16).overflowing_add((t >> 16) as u16);
    (!(u + u16::from(c4))).to_le_bytes()
}

#[cfg(test)]
mod tests {
    #[test]
    fn ip_header_sum_matches_the_generic_sum() {
        let mut h = [0u8; 20];
        let mut x: u32 = 12345;
        for _ in 0..10_000 {
            for b in h.iter_mut() {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                *b = x as u8;
            }
            if x & 7 == 0 {
                h = [0xff; 20];
            }
            assert_eq!(super::ip_header_sum(&h), linerate_wire::checksum::sum(&h));
            let mut z = h;
            z[10] = 0;
            z[11] = 0;
            assert_eq!(
                super::ip_header_checksum(&h),
                (!linerate_wire::checksum::sum(&z)).to_be_bytes()
            );
        }
    }
}

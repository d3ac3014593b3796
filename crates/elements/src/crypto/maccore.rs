//! The element shared by `HMACSHA1`, `HMACSHA256` and `AESCMAC`: a MAC over
//! a packet region, computed (written in place or appended) or verified.
//! Each class file documents it and supplies a [`MacAlgo`].

use super::primitives::{parse_hex, Cmac128};
use linerate_runtime::{Batch, ConfigureCtx, Ctx, Element, HandlerSpec, Packet};
use std::any::Any;

/// A MAC algorithm: the optimised batch form and the reference form.
pub(crate) trait MacAlgo: Sized + Send + 'static {
    /// Full MAC length in bytes.
    const OUT: usize;
    /// The reference implementation's keyed state.
    type Ref: Send + 'static;
    /// Keys the optimised form.
    fn new(key: &[u8]) -> Result<Self, String>;
    /// Keys the reference form.
    fn new_ref(key: &[u8]) -> Result<Self::Ref, String>;
    /// MACs of `msgs` into `out` (same length), the batch together.
    fn mac_batch(&mut self, msgs: &[&[u8]], out: &mut [[u8; 32]]);
    /// The MAC of one message, straightforwardly.
    fn mac_ref(r: &Self::Ref, msg: &[u8]) -> [u8; 32];
    /// The CMAC whose MAC of a 16-byte message `M` is `AES(M ^ K1)`, one
    /// cipher call without chaining, for the element's one-block path; the
    /// algorithms that are not CMAC have none.
    fn block_mac(&self) -> Option<&Cmac128> {
        None
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Compute,
    Verify,
}

/// Packets MACed together per pass.
const CHUNK: usize = 32;

/// Blocks of the one-block path encrypted per cipher call.
const BLOCKS: usize = 64;

/// The one-block path's fixed layout: a 16-byte region at `offset` and a
/// MAC of at most 16 bytes at `at`, both inside every packet of at least
/// `need` bytes.
#[derive(Clone, Copy)]
struct OneBlock {
    offset: usize,
    at: usize,
    need: usize,
    maclen: usize,
    /// The MAC's first `maclen` bytes of a 16-byte word.
    mask: u128,
}

pub(crate) struct MacElement<A: MacAlgo> {
    fast: A,
    reference: A::Ref,
    use_ref: bool,
    offset: usize,
    length: Option<usize>,
    mode: Mode,
    maclen: usize,
    mac_offset: Option<usize>,
    strip: bool,
    has_out1: bool,
    count: u64,
    failures: u64,
    drops: u64,
    bad: Vec<bool>,
    /// Set when the region is one block and the MAC lies at a fixed offset
    /// (`LENGTH 16`, `MAC_OFFSET`) and the algorithm is CMAC.
    one_block: Option<OneBlock>,
}

/// Where a packet's region and MAC lie: region start, region length, MAC offset.
type Place = (usize, usize, usize);

pub(crate) fn make<A: MacAlgo>(ctx: &ConfigureCtx<'_>) -> Result<Box<dyn Element>, Vec<String>> {
    use linerate_args::{Args, Word};
    let mut a = Args::new(&ctx.args);
    let key: Option<String> = a.read_mp("KEY");
    let offset = a.read_or("OFFSET", 0usize);
    let length: Option<usize> = a.read("LENGTH");
    let mode = a.read_or("MODE", Word("compute".into())).0;
    let maclen = a.read_or("MACLEN", A::OUT);
    let mac_offset: Option<usize> = a.read("MAC_OFFSET");
    let strip = a.read_or("STRIP", false);
    let imp = a.read_or("IMPL", Word("fast".into())).0;
    a.complete().map_err(|e| e.0)?;
    let mut errs = Vec::new();
    let mode = match mode.to_ascii_lowercase().as_str() {
        "compute" => Mode::Compute,
        "verify" => Mode::Verify,
        _ => {
            errs.push("MODE: expected compute or verify".to_string());
            Mode::Compute
        }
    };
    if maclen == 0 || maclen > A::OUT {
        errs.push(format!("MACLEN: expected 1 to {}", A::OUT));
    }
    if strip && (mode != Mode::Verify || mac_offset.is_some()) {
        errs.push("STRIP: only for MODE verify with a trailing MAC".to_string());
    }
    let use_ref = match imp.as_str() {
        "fast" => false,
        "reference" => true,
        _ => {
            errs.push("IMPL: expected fast or reference".to_string());
            false
        }
    };
    let key = match key.map(|k| parse_hex(&k)) {
        Some(Ok(k)) => k,
        Some(Err(e)) => {
            errs.push(format!("KEY: {e}"));
            Vec::new()
        }
        None => Vec::new(),
    };
    let keyed = A::new(&key).and_then(|f| Ok((f, A::new_ref(&key)?)));
    let (fast, reference) = match keyed {
        Ok(k) => k,
        Err(e) => {
            errs.push(format!("KEY: {e}"));
            return Err(errs);
        }
    };
    if !errs.is_empty() {
        return Err(errs);
    }
    let one_block = match (length, mac_offset) {
        (Some(16), Some(at))
            if !use_ref
                && maclen <= 16
                && fast.block_mac().is_some()
                && offset.checked_add(16).is_some()
                && at.checked_add(16).is_some() =>
        {
            let mut m = [0u8; 16];
            m[..maclen].fill(0xff);
            Some(OneBlock {
                offset,
                at,
                need: (offset + 16).max(at + maclen),
                maclen,
                mask: u128::from_ne_bytes(m),
            })
        }
        _ => None,
    };
    Ok(Box::new(MacElement::<A> {
        fast,
        reference,
        use_ref,
        offset,
        length,
        mode,
        maclen,
        mac_offset,
        strip,
        has_out1: ctx.noutputs() > 1,
        count: 0,
        failures: 0,
        drops: 0,
        bad: Vec::new(),
        one_block,
    }))
}

const HANDLERS: &[HandlerSpec] = &[
    HandlerSpec::counter("count"),
    HandlerSpec::counter("failures"),
    HandlerSpec::counter("drops"),
    HandlerSpec::write("key"),
];

impl<A: MacAlgo> MacElement<A> {
    /// Bad packets by reason (dropped, or sent to output 1).
    fn bad_list(&self) -> Vec<(&'static str, u64)> {
        [("short packet", self.drops), ("bad MAC", self.failures)]
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    /// The region and MAC position for a packet of `len` bytes; `None` if
    /// the packet is too short.
    #[inline]
    fn place(&self, len: usize) -> Option<Place> {
        let trailing = self.mode == Mode::Verify && self.mac_offset.is_none();
        let limit = if trailing {
            len.checked_sub(self.maclen)?
        } else {
            len
        };
        let avail = limit.checked_sub(self.offset)?;
        let rlen = match self.length {
            Some(l) if l > avail => return None,
            Some(l) => l,
            None => avail,
        };
        let at = match self.mac_offset {
            Some(m) if m + self.maclen > len => return None,
            Some(m) => m,
            None if trailing => limit,
            None => len,
        };
        Some((self.offset, rlen, at))
    }

    /// Writes or checks packet `i`'s MAC; false if verification failed.
    #[inline]
    fn apply(&mut self, p: &mut linerate_runtime::Packet, at: usize, mac: &[u8; 32]) -> bool {
        let m = &mac[..self.maclen];
        match self.mode {
            Mode::Compute => {
                if at == p.len() {
                    p.put(self.maclen);
                }
                p.data_mut()[at..at + self.maclen].copy_from_slice(m);
                true
            }
            Mode::Verify => {
                let diff = p.data()[at..at + self.maclen]
                    .iter()
                    .zip(m)
                    .fold(0u8, |d, (a, b)| d | (a ^ b));
                if diff == 0 && self.strip {
                    p.take(self.maclen);
                }
                diff == 0
            }
        }
    }

    fn run(&mut self, mut batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        let n = batch.len();
        let mut bad = std::mem::take(&mut self.bad);
        bad.clear();
        bad.resize(n, false);
        let pk = batch.as_mut_slice();
        let any_bad = match (self.one_block, self.fast.block_mac()) {
            (Some(ob), Some(cmac)) => {
                let verify = self.mode == Mode::Verify;
                let (short, failed) = one_block(cmac, ob, verify, pk, &mut bad);
                self.count += (n - short) as u64;
                self.drops += short as u64;
                self.failures += failed as u64;
                short + failed > 0
            }
            _ => self.regions(pk, &mut bad),
        };
        if any_bad {
            let out = batch.split_off_marked(&bad);
            if self.has_out1 {
                ctx.push(1, out);
            }
        }
        self.bad = bad;
        batch
    }

    /// MACs each packet's region in groups of [`CHUNK`] (any layout);
    /// marks short packets and failed verifications in `bad`, true if any.
    fn regions(&mut self, pk: &mut [Packet], bad: &mut [bool]) -> bool {
        let n = pk.len();
        let mut any_bad = false;
        for base in (0..n).step_by(CHUNK) {
            let end = (base + CHUNK).min(n);
            let mut places = [(0usize, 0usize, 0usize); CHUNK];
            let mut idx = [0usize; CHUNK];
            let mut k = 0;
            for i in base..end {
                match self.place(pk[i].len()) {
                    Some(pl) => {
                        places[k] = pl;
                        idx[k] = i;
                        k += 1;
                    }
                    None => {
                        self.drops += 1;
                        bad[i] = true;
                        any_bad = true;
                    }
                }
            }
            let mut macs = [[0u8; 32]; CHUNK];
            if self.use_ref {
                for j in 0..k {
                    let (s, l, _) = places[j];
                    macs[j] = A::mac_ref(&self.reference, &pk[idx[j]].data()[s..s + l]);
                }
            } else {
                let mut msgs: [&[u8]; CHUNK] = [&[]; CHUNK];
                for j in 0..k {
                    let (s, l, _) = places[j];
                    msgs[j] = &pk[idx[j]].data()[s..s + l];
                }
                self.fast.mac_batch(&msgs[..k], &mut macs[..k]);
            }
            for j in 0..k {
                let i = idx[j];
                if !self.apply(&mut pk[i], places[j].2, &macs[j]) {
                    self.failures += 1;
                    bad[i] = true;
                    any_bad = true;
                }
            }
            self.count += k as u64;
        }
        any_bad
    }
}

/// The one-block path (see [`OneBlock`]): each packet's block XOR K1 is
/// gathered and [`BLOCKS`] of them are encrypted in one call (VAES, 16
/// blocks a pass, where the CPU has it); the MAC is then written or
/// compared with one masked 16-byte access where the packet holds 16 bytes
/// from the MAC's offset, byte by byte otherwise. Marks short packets and
/// failed verifications in `bad` and returns how many of each.
fn one_block(
    cmac: &Cmac128,
    ob: OneBlock,
    verify: bool,
    pk: &mut [Packet],
    bad: &mut [bool],
) -> (usize, usize) {
    let k1 = u128::from_ne_bytes(cmac.subkeys().0);
    let word = |w: &[u8]| <[u8; 16]>::try_from(w).map_or(0, u128::from_ne_bytes);
    let (at, maclen, mask) = (ob.at, ob.maclen, ob.mask);
    let (mut short, mut failed) = (0, 0);
    let mut blocks = [[0u8; 16]; BLOCKS];
    for (pk, bad) in pk.chunks_mut(BLOCKS).zip(bad.chunks_mut(BLOCKS)) {
        let blocks = &mut blocks[..pk.len()];
        for (b, p) in blocks.iter_mut().zip(pk.iter()) {
            let m = p.data().get(ob.offset..ob.offset + 16).map_or(0, word);
            *b = (m ^ k1).to_ne_bytes();
        }
        cmac.aes().encrypt_blocks(blocks);
        for ((p, b), m) in pk.iter_mut().zip(bad.iter_mut()).zip(blocks.iter()) {
            if p.len() < ob.need {
                *b = true;
                short += 1;
                continue;
            }
            let mac = u128::from_ne_bytes(*m) & mask;
            if verify {
                let d = p.data();
                let got = match d.get(at..at + 16) {
                    Some(w) => word(w) & mask,
                    None => {
                        let mut w = [0u8; 16];
                        w[..maclen].copy_from_slice(&d[at..at + maclen]);
                        u128::from_ne_bytes(w)
                    }
                };
                if got != mac {
                    *b = true;
                    failed += 1;
                }
            } else {
                let d = p.data_mut();
                match d.get_mut(at..at + 16) {
                    Some(w) => {
                        let v = (word(w) & !mask) | mac;
                        w.copy_from_slice(&v.to_ne_bytes());
                    }
                    None => d[at..at + maclen].copy_from_slice(&m[..maclen]),
                }
            }
        }
    }
    (short, failed)
}

impl<A: MacAlgo> Element for MacElement<A> {
    fn action(&mut self, batch: Batch, ctx: &mut Ctx<'_>) -> Batch {
        self.run(batch, ctx)
    }

    fn handlers(&self) -> &[HandlerSpec] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Option<String> {
        match name {
            "count" => Some(self.count.to_string()),
            "failures" => Some(self.failures.to_string()),
            "drops" => Some(self.drops.to_string()),
            _ => None,
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Option<Result<(), String>> {
        (name == "key").then(|| {
            let k = parse_hex(value.trim())?;
            self.fast = A::new(&k)?;
            self.reference = A::new_ref(&k)?;
            Ok(())
        })
    }

    drops_or_output_1!(self, self.has_out1, self.bad_list());

    fn as_any(&self) -> &dyn Any {
        self
    }
}

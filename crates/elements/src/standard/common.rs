//! Helpers shared by the standard elements: per-output batch
//! classification, Click's token bucket, annotation arguments and Click's
//! number formats.

use linerate_runtime::anno::{anno_by_name, AnnoInfo};
use linerate_runtime::{Batch, Ctx, Packet};

/// Classifies a batch into per-output batches in one pass, keeping order.
///
/// The per-packet decisions go into a reused scratch vector first; when
/// every packet goes to the same output (the common case) the batch is
/// forwarded whole, otherwise it is distributed once. Nothing is allocated
/// per packet: the output batches come from the runtime's recycled vectors.
pub(crate) struct Demux {
    outs: Vec<Batch>,
    dec: Vec<u32>,
}

/// Decision meaning "drop this packet".
pub(crate) const DROP: u32 = u32::MAX;

impl Demux {
    /// A demultiplexer for `n` outputs.
    pub fn new(n: usize) -> Demux {
        Demux {
            outs: (0..n).map(|_| Batch::new()).collect(),
            dec: Vec::with_capacity(linerate_runtime::MAX_BATCH),
        }
    }

    /// Send each packet of `batch` to the output `f` chooses (or drop it
    /// for [`DROP`] or an output out of range). Returns the number dropped.
    #[inline]
    pub fn run(
        &mut self,
        mut batch: Batch,
        ctx: &mut Ctx<'_>,
        mut f: impl FnMut(&mut Packet) -> u32,
    ) -> u64 {
        let n = self.outs.len() as u32;
        self.dec.clear();
        let mut uniform = true;
        let mut first = DROP;
        for (i, p) in batch.iter_mut().enumerate() {
            let mut o = f(p);
            if o >= n {
                o = DROP;
            }
            if i == 0 {
                first = o;
            } else if o != first {
                uniform = false;
            }
            self.dec.push(o);
        }
        if uniform {
            if first == DROP {
                return batch.len() as u64;
            }
            ctx.push(first as usize, batch);
            return 0;
        }
        let mut drops = 0u64;
        for (p, &o) in batch.drain().zip(self.dec.iter()) {
            if o == DROP {
                drops += 1;
                drop(p);
            } else {
                self.outs[o as usize].push(p);
            }
        }
        for (o, b) in self.outs.iter_mut().enumerate() {
            if !b.is_empty() {
                ctx.push(o, std::mem::take(b));
            }
        }
        drops
    }
}

/// Parse an `ANNO` argument (Click's `AnnoArg`): a name such as `PAINT` or
/// a byte offset, of at most `max_size` bytes.
pub(crate) fn parse_anno(text: &str, max_size: usize) -> Result<AnnoInfo, String> {
    let t = text.trim();
    let t = t
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(t);
    match anno_by_name(t) {
        Some(a) if a.size <= max_size => Ok(a),
        Some(_) => Err(format!("annotation {t} too large")),
        None => Err("expected annotation".to_string()),
    }
}

/// Read an annotation of `info.size` bytes (1, 2 or 4; host order).
#[inline]
pub(crate) fn anno_get(p: &Packet, info: AnnoInfo) -> u32 {
    let a = p.anno();
    match info.size {
        1 => a.u8(info.offset) as u32,
        2 => a.u16(info.offset) as u32,
        _ => a.u32(info.offset),
    }
}

/// Write an annotation of `info.size` bytes (1, 2 or 4; host order).
#[inline]
pub(crate) fn anno_set(p: &mut Packet, info: AnnoInfo, v: u32) {
    let a = p.anno_mut();
    match info.size {
        1 => a.set_u8(info.offset, v as u8),
        2 => a.set_u16(info.offset, v as u16),
        _ => a.set_u32(info.offset, v),
    }
}

/// Click's token bucket (`TokenBucket`): fills at `rate` tokens per second
/// up to `capacity` tokens, starting full. Time is kept in nanoseconds, so
/// simulated time works and no rounding to jiffies occurs.
#[derive(Debug, Clone)]
pub(crate) struct TokenBucket {
    rate: u64,
    capacity: u64,
    /// Tokens times 1e9 (token-nanoseconds).
    level: u128,
    last: u64,
}

const NS: u128 = 1_000_000_000;

impl TokenBucket {
    /// A full bucket.
    pub fn new(rate: u64, capacity: u64) -> TokenBucket {
        let capacity = capacity.max(1);
        TokenBucket {
            rate,
            capacity,
            level: capacity as u128 * NS,
            last: 0,
        }
    }

    /// Fill rate in tokens per second.
    pub fn rate(&self) -> u64 {
        self.rate
    }

    /// Change the rate and capacity; the bucket keeps its level (capped).
    pub fn assign(&mut self, rate: u64, capacity: u64) {
        self.rate = rate;
        self.capacity = capacity.max(1);
        self.level = self.level.min(self.capacity as u128 * NS);
    }

    /// Add the tokens earned since the last refill.
    #[inline]
    pub fn refill(&mut self, now: u64) {
        if self.last == 0 {
            self.last = now;
            return;
        }
        if now > self.last {
            let add = (now - self.last) as u128 * self.rate as u128;
            self.level = (self.level + add).min(self.capacity as u128 * NS);
            self.last = now;
        }
    }

    /// Whole tokens in the bucket.
    #[inline]
    pub fn tokens(&self) -> u64 {
        (self.level / NS) as u64
    }

    /// True if the bucket holds at least `n` tokens.
    #[inline]
    pub fn contains(&self, n: u64) -> bool {
        self.level >= n as u128 * NS
    }

    /// Remove `n` tokens (saturating at empty).
    #[inline]
    pub fn remove(&mut self, n: u64) {
        self.level = self.level.saturating_sub(n as u128 * NS);
    }

    /// Remove `n` tokens if there are that many; true if removed.
    #[inline]
    pub fn remove_if(&mut self, n: u64) -> bool {
        let need = n as u128 * NS;
        if self.level >= need {
            self.level -= need;
            true
        } else {
            false
        }
    }

    /// Nanoseconds until the bucket holds `n` tokens (`u64::MAX` at rate 0).
    pub fn time_until_contains(&self, n: u64) -> u64 {
        let need = (n.min(self.capacity) as u128 * NS).saturating_sub(self.level);
        if need == 0 {
            0
        } else if self.rate == 0 {
            u64::MAX
        } else {
            need.div_ceil(self.rate as u128).min(u64::MAX as u128) as u64
        }
    }
}

/// Extra bucket room of Click's bandwidth-rated elements
/// (`tb_bandwidth_thresh`): a bucket always has room for a large packet.
pub(crate) const BANDWIDTH_THRESH: u64 = 131072;

/// The `RATE [, BURST_DURATION | BURST_SIZE]` configuration of Click's
/// rated elements (`RatedUnqueue::configure_helper`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RateConf {
    /// Tokens (packets, or bytes for bandwidth elements) per second.
    pub rate: u64,
    /// Whether tokens are bytes.
    pub bandwidth: bool,
    burst_ms: u64,
    burst_size: Option<u64>,
}

impl RateConf {
    /// Parse the arguments. The default capacity is 20 ms of tokens;
    /// bandwidth buckets get [`BANDWIDTH_THRESH`] more.
    pub fn parse(a: &mut linerate_args::Args, bandwidth: bool) -> Result<RateConf, String> {
        let rate = if bandwidth {
            a.read_mp::<linerate_args::Bandwidth>("RATE")
                .map(bandwidth_tokens)
                .unwrap_or(0)
        } else {
            a.read_mp::<u32>("RATE").unwrap_or(0) as u64
        };
        let dur: Option<linerate_args::Seconds> = a.read("BURST_DURATION");
        let burst_kw = if bandwidth {
            "BURST_BYTES"
        } else {
            "BURST_SIZE"
        };
        let size: Option<u32> = a.read(burst_kw);
        if dur.is_some() && size.is_some() {
            return Err(format!("cannot specify both BURST_DURATION and {burst_kw}"));
        }
        Ok(RateConf {
            rate,
            bandwidth,
            burst_ms: dur.map(|d| d.nanos / 1_000_000).unwrap_or(20),
            burst_size: size.map(|s| s as u64),
        })
    }

    /// Parse a new rate written to a `rate` handler.
    pub fn set_rate(&mut self, value: &str) -> Result<(), String> {
        self.rate = if self.bandwidth {
            bandwidth_tokens(crate::parse_value::<linerate_args::Bandwidth>(value)?)
        } else {
            crate::parse_value::<u32>(value)? as u64
        };
        Ok(())
    }

    /// The rate as Click prints it.
    pub fn unparse_rate(&self) -> String {
        if self.bandwidth {
            unparse_bandwidth(self.rate)
        } else {
            self.rate.to_string()
        }
    }

    /// The bucket capacity in tokens.
    pub fn capacity(&self) -> u64 {
        let mut tokens = match self.burst_size {
            Some(s) => s,
            None => (self.rate as u128 * self.burst_ms as u128 / 1000).min(u32::MAX as u128) as u64,
        };
        if self.bandwidth {
            tokens = (tokens + BANDWIDTH_THRESH).min(u32::MAX as u64);
        }
        tokens.max(1)
    }

    /// A full bucket for this configuration.
    pub fn bucket(&self) -> TokenBucket {
        TokenBucket::new(self.rate, self.capacity())
    }
}

fn bandwidth_tokens(b: linerate_args::Bandwidth) -> u64 {
    b.0.round().clamp(0.0, u32::MAX as f64) as u64
}

/// Click's `cp_unparse_real2`: a fixed-point number with `frac_bits` bits
/// of fraction, printed with the fewest decimal digits that read back to
/// the same value (Knuth's `print_scaled`).
pub(crate) fn unparse_real2(real: u64, frac_bits: u32) -> String {
    let mut s = (real >> frac_bits).to_string();
    let one: u64 = 1 << frac_bits;
    let mut r = real & (one - 1);
    if r == 0 {
        return s;
    }
    s.push('.');
    r = 10 * r + 5;
    let mut allowable: u64 = 10;
    let mut rounder: u64 = 5;
    while rounder < (one >> 1) {
        rounder *= 10;
    }
    loop {
        if allowable > one {
            r = r.wrapping_add(one >> 1).wrapping_sub(rounder);
        }
        s.push((b'0' + (r >> frac_bits) as u8) as char);
        r = 10 * (r & (one - 1));
        allowable = allowable.saturating_mul(10);
        if r <= allowable {
            break;
        }
    }
    s
}

/// Click's `cp_unparse_real10`: `v / 10^frac_digits` with trailing zeros
/// removed.
fn unparse_real10(v: u64, frac_digits: u32) -> String {
    let p = 10u64.pow(frac_digits);
    let (i, f) = (v / p, v % p);
    if f == 0 {
        return i.to_string();
    }
    let fs = format!("{:0width$}", f, width = frac_digits as usize);
    format!("{i}.{}", fs.trim_end_matches('0'))
}

/// Click's `BandwidthArg::unparse` of a rate in bytes per second.
pub(crate) fn unparse_bandwidth(x: u64) -> String {
    if x >= 0x2000_0000 {
        format!("{}MBps", unparse_real10(x, 6))
    } else if x >= 125_000_000 {
        format!("{}Gbps", unparse_real10(x * 8, 9))
    } else if x >= 125_000 {
        format!("{}Mbps", unparse_real10(x * 8, 6))
    } else {
        format!("{}kbps", unparse_real10(x * 8, 3))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real2_matches_click() {
        assert_eq!(unparse_real2(0, 10), "0");
        assert_eq!(unparse_real2(1024, 10), "1");
        assert_eq!(unparse_real2(512, 10), "0.5");
        assert_eq!(unparse_real2(1024 + 256, 10), "1.25");
        assert_eq!(unparse_real2(1, 10), "0.001");
        assert_eq!(unparse_real2(3 * 1024 + 341, 10), "3.333");
    }

    #[test]
    fn bandwidth_format() {
        assert_eq!(unparse_bandwidth(125), "1kbps");
        assert_eq!(unparse_bandwidth(125_000), "1Mbps");
        assert_eq!(unparse_bandwidth(1_250_000), "10Mbps");
        assert_eq!(unparse_bandwidth(1000), "8kbps");
    }

    #[test]
    fn bucket_fills_and_drains() {
        let mut tb = TokenBucket::new(10, 2);
        tb.refill(1_000_000_000);
        assert!(tb.remove_if(2));
        assert!(!tb.remove_if(1));
        assert_eq!(tb.time_until_contains(1), 100_000_000);
        tb.refill(1_100_000_000);
        assert!(tb.remove_if(1));
        tb.refill(5_000_000_000);
        assert_eq!(tb.tokens(), 2);
    }
}

//! Ethernet line-rate arithmetic.
//!
//! Sizes are *frame sizes* as RFC 2544 and traffic generators quote them:
//! destination address to FCS inclusive (64 to 1518 bytes untagged). On the
//! wire each frame also takes 7 bytes of preamble, 1 byte of start-of-frame
//! delimiter and at least 12 bytes of inter-frame gap: 20 bytes more. Frames
//! shorter than 64 bytes are padded to 64. So a frame of `s` bytes occupies
//! `max(s, 64) + 20` bytes of line time, and a line of `R` bit/s carries
//! `R / (8 · (max(s, 64) + 20))` frames per second: 14.88 Mpps for 64-byte
//! frames at 10 Gbit/s, 148.81 Mpps at 100 Gbit/s, 812.74 kpps for 1518-byte
//! frames at 10 Gbit/s.
//!
//! The software sees the frame without its FCS (the NIC checks and strips
//! it; a pcap record holds the same bytes): the model's packet length is
//! `p = s − 4`. A 64-byte frame is a 60-byte packet, a 1518-byte frame a
//! 1514-byte packet. Size 0 means "a zero-byte packet arriving at the
//! minimum-frame rate", the whitepaper's receive-and-send floor (p = 0).

/// Bytes of preamble (7), start-of-frame delimiter (1) and minimum
/// inter-frame gap (12).
pub const WIRE_OVERHEAD: u64 = 20;
/// Frame check sequence.
pub const FCS: u64 = 4;
/// Minimum frame size, FCS included.
pub const MIN_FRAME: u64 = 64;

/// The standard line rates the reports cover, in bit/s.
pub const STANDARD_RATES: [f64; 5] = [10e9, 25e9, 40e9, 100e9, 400e9];

/// Bytes of line time a frame of `size` bytes (FCS included) occupies.
pub fn wire_bytes(size: u64) -> u64 {
    size.max(MIN_FRAME) + WIRE_OVERHEAD
}

/// The packet length the software sees for a frame of `size` bytes.
pub fn packet_len(size: u64) -> u64 {
    size.saturating_sub(FCS)
}

/// Frames per second at line rate `bps` for frames of `size` bytes.
pub fn frames_per_second(bps: f64, size: u64) -> f64 {
    bps / (8.0 * wire_bytes(size) as f64)
}

/// Nanoseconds between frames at line rate (the per-packet budget of one core).
pub fn ns_per_frame(bps: f64, size: u64) -> f64 {
    8.0 * wire_bytes(size) as f64 / bps * 1e9
}

/// Parse a rate such as `100G`, `25g`, `2.5G`, `100Gbps`, `400000M`,
/// `10000000000`: bits per second.
pub fn parse_rate(s: &str) -> Result<f64, String> {
    let t = s.trim().to_ascii_lowercase();
    let t = t
        .strip_suffix("bit/s")
        .or_else(|| t.strip_suffix("bps"))
        .or_else(|| t.strip_suffix("be"))
        .unwrap_or(&t);
    let (num, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1e3),
        Some('m') => (&t[..t.len() - 1], 1e6),
        Some('g') => (&t[..t.len() - 1], 1e9),
        Some('t') => (&t[..t.len() - 1], 1e12),
        _ => (t, 1.0),
    };
    match num.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v * mult),
        _ => Err(format!("bad rate '{s}' (expected e.g. 10G, 100G, 2.5G)")),
    }
}

/// A rate for display: `100G`, `2.5G`, `800M`.
pub fn rate_name(bps: f64) -> String {
    if bps >= 1e9 {
        format!("{}G", trim(bps / 1e9))
    } else {
        format!("{}M", trim(bps / 1e6))
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A traffic mix: frame sizes (FCS included) with relative weights.
#[derive(Debug, Clone, PartialEq)]
pub struct Mix {
    /// Name for reports.
    pub name: String,
    /// (frame size, weight).
    pub parts: Vec<(u64, f64)>,
}

impl Mix {
    /// A single frame size.
    pub fn single(size: u64) -> Mix {
        Mix {
            name: size.to_string(),
            parts: vec![(size, 1.0)],
        }
    }

    /// The classic "simple IMIX": 7 × 64, 4 × 594, 1 × 1518-byte frames
    /// (FCS included; 58.3 % / 33.3 % / 8.3 % of packets, mean frame
    /// 361.83 bytes).
    pub fn imix() -> Mix {
        Mix {
            name: "IMIX".into(),
            parts: vec![(64, 7.0), (594, 4.0), (1518, 1.0)],
        }
    }

    fn total(&self) -> f64 {
        self.parts.iter().map(|p| p.1).sum()
    }

    /// Mean frame size.
    pub fn mean_size(&self) -> f64 {
        self.parts.iter().map(|&(s, w)| s as f64 * w).sum::<f64>() / self.total()
    }

    /// Mean bytes of line time per frame.
    pub fn mean_wire_bytes(&self) -> f64 {
        self.parts
            .iter()
            .map(|&(s, w)| wire_bytes(s) as f64 * w)
            .sum::<f64>()
            / self.total()
    }

    /// Mean packet length seen by the software.
    pub fn mean_packet_len(&self) -> f64 {
        self.parts
            .iter()
            .map(|&(s, w)| packet_len(s) as f64 * w)
            .sum::<f64>()
            / self.total()
    }

    /// Frames per second at line rate.
    pub fn frames_per_second(&self, bps: f64) -> f64 {
        bps / (8.0 * self.mean_wire_bytes())
    }
}

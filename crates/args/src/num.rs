//! Numeric values: integers (Click's `IntArg`), reals (`DoubleArg`), times
//! with units (`SecondsArg`) and bandwidths (`BandwidthArg`).

use std::fmt;
use std::time::Duration;

use crate::unquote::is_space;
use crate::ArgValue;

/// Result of scanning an integer: sign and magnitude (`None` on overflow of
/// 128 bits).
struct IntScan {
    negative: bool,
    magnitude: Option<u128>,
}

/// Scan a whole string as an integer the way Click's `IntArg` does: an
/// optional `+` or `-`, then `0x`/`0X` (hex), `0b`/`0B` (binary), a leading
/// `0` (octal) or decimal digits, with single underscores allowed between
/// digits. `base` forces a base (only decimal is used), disabling prefixes.
fn scan_int(s: &str, base: Option<u32>) -> Option<IntScan> {
    let b = s.as_bytes();
    let n = b.len();
    let mut i = 0;
    let mut negative = false;
    if i < n && (b[i] == b'-' || b[i] == b'+') {
        negative = b[i] == b'-';
        i += 1;
    }
    let radix = match base {
        Some(r) => r,
        None if i + 2 < n && b[i] == b'0' && (b[i + 1] | 0x20) == b'x' => {
            i += 2;
            16
        }
        None if i + 2 < n && b[i] == b'0' && (b[i + 1] | 0x20) == b'b' => {
            i += 2;
            2
        }
        None if i < n && b[i] == b'0' => 8,
        None => 10,
    };
    let mut value: Option<u128> = Some(0);
    let mut last_digit_end: Option<usize> = None;
    while i < n {
        if b[i] == b'_' && last_digit_end == Some(i) {
            i += 1;
            continue;
        }
        let d = char::from(b[i]).to_digit(radix)?;
        value = value
            .and_then(|v| v.checked_mul(u128::from(radix)))
            .and_then(|v| v.checked_add(u128::from(d)));
        i += 1;
        last_digit_end = Some(i);
    }
    if last_digit_end != Some(n) {
        return None;
    }
    Some(IntScan {
        negative,
        magnitude: value,
    })
}

/// Parse an integer of type `T` with Click's syntax; out-of-range values are
/// errors naming the bound, like Click's `out of range, bound 255`.
fn parse_int<T>(s: &str) -> Result<T, String>
where
    T: TryFrom<u128> + TryFrom<i128> + fmt::Display + Bounded,
{
    let scan = scan_int(s, None).ok_or_else(|| "expected integer".to_string())?;
    let value = match (scan.negative, scan.magnitude) {
        (false, Some(m)) => T::try_from(m).ok(),
        (true, Some(m)) if m <= i128::MAX as u128 + 1 => {
            T::try_from(0i128.wrapping_sub_unsigned(m)).ok()
        }
        _ => None,
    };
    value.ok_or_else(|| {
        let bound = if scan.negative { T::MIN } else { T::MAX };
        format!("out of range, bound {bound}")
    })
}

/// Integer types' bounds, for range error messages.
trait Bounded: Sized {
    const MIN: Self;
    const MAX: Self;
}

macro_rules! int_values {
    ($($t:ty),*) => {$(
        impl Bounded for $t {
            const MIN: Self = <$t>::MIN;
            const MAX: Self = <$t>::MAX;
        }
        /// Click's `IntArg`: decimal, `0x` hex, `0b` binary, leading-`0`
        /// octal, `_` between digits; overflow is an error.
        impl ArgValue for $t {
            const TYPE: &'static str = "integer";
            fn parse_arg(s: &str) -> Result<Self, String> {
                parse_int::<$t>(s)
            }
        }
    )*};
}

int_values!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize);

/// Parse a decimal integer (no base prefixes) into `u32`, as Click's
/// `IntArg(10)`; used for prefix lengths.
pub(crate) fn parse_decimal_u32(s: &str) -> Option<u32> {
    let scan = scan_int(s, Some(10))?;
    match (scan.negative, scan.magnitude) {
        (false, Some(m)) => u32::try_from(m).ok(),
        (true, Some(0)) => Some(0),
        _ => None,
    }
}

/// Click's `DoubleArg` (`strtod`): a real number such as `1`, `-2.5`, `.5`,
/// `1e-3`, `inf` or `nan`. No leading space. Overflow and underflow to zero
/// are errors.
impl ArgValue for f64 {
    const TYPE: &'static str = "real";
    fn parse_arg(s: &str) -> Result<Self, String> {
        let v: f64 = s.parse().map_err(|_| "expected real".to_string())?;
        let lower = s.to_ascii_lowercase();
        if v.is_infinite() && !lower.contains("inf") {
            return Err(format!(
                "out of range, bound {}",
                if v > 0.0 { "inf" } else { "-inf" }
            ));
        }
        let mantissa = lower.split('e').next().unwrap_or("");
        if v == 0.0 && mantissa.bytes().any(|c| (b'1'..=b'9').contains(&c)) {
            return Err("underflow, rounded to 0".to_string());
        }
        Ok(v)
    }
}

/// A non-negative decimal number `mantissa * 10^exp10`, scanned with Click's
/// fraction syntax (`preparse_fraction`): optional `+`, digits with at most
/// one `.` and `_` between digits, optional exponent `e[+-]N`.
struct Decimal {
    /// Up to [`Decimal::MAX_DIGITS`] significant digits.
    mantissa: u128,
    exp10: i64,
}

impl Decimal {
    const MAX_DIGITS: u32 = 32;
    const EXP_LIMIT: i64 = 100_000;

    fn scan(s: &str) -> Option<Decimal> {
        let b = s.as_bytes();
        let n = b.len();
        let mut i = 0;
        if i < n && b[i] == b'+' {
            i += 1;
        }
        let first = i;
        let mut last_digit_end: Option<usize> = None;
        let mut point = false;
        let mut mantissa: u128 = 0;
        let mut sig_digits = 0;
        let mut exp10: i64 = 0;
        while i < n {
            let c = b[i];
            if c == b'_' && last_digit_end == Some(i) {
            } else if c == b'.' && !point && (last_digit_end == Some(i) || i == first) {
                point = true;
            } else if c.is_ascii_digit() {
                let d = u128::from(c - b'0');
                if sig_digits < Self::MAX_DIGITS {
                    if mantissa != 0 || d != 0 {
                        sig_digits += 1;
                    }
                    mantissa = mantissa * 10 + d;
                    if point {
                        exp10 -= 1;
                    }
                } else if !point {
                    exp10 += 1;
                }
                last_digit_end = Some(i + 1);
            } else {
                break;
            }
            i += 1;
        }
        last_digit_end?;
        if i + 1 < n && (b[i] | 0x20) == b'e' {
            let mut j = i + 1;
            let negative = b[j] == b'-';
            if b[j] == b'-' || b[j] == b'+' {
                j += 1;
            }
            if j < n && b[j].is_ascii_digit() {
                let mut e: i64 = 0;
                while j < n && b[j].is_ascii_digit() {
                    e = (e * 10 + i64::from(b[j] - b'0')).min(Self::EXP_LIMIT);
                    j += 1;
                }
                exp10 += if negative { -e } else { e };
                i = j;
            }
        }
        (i == n).then_some(Decimal { mantissa, exp10 })
    }

    /// `self * factor * 10^shift`, rounded half up to an integer; `None` if
    /// it does not fit in `u64`.
    fn scaled_u64(&self, factor: u32, shift: i64) -> Option<u64> {
        let n = self.mantissa * u128::from(factor);
        let e = self.exp10 + shift;
        if n == 0 {
            return Some(0);
        }
        let v = if e >= 0 {
            n.checked_mul(10u128.checked_pow(u32::try_from(e).ok()?)?)?
        } else {
            let Some(div) = u32::try_from(-e).ok().and_then(|k| 10u128.checked_pow(k)) else {
                return Some(0);
            };
            let (q, r) = (n / div, n % div);
            q + u128::from(r >= div / 2)
        };
        u64::try_from(v).ok()
    }

    /// `self * factor * 10^shift` as a float.
    fn scaled_f64(&self, factor: u32, shift: i64) -> f64 {
        let n = (self.mantissa * u128::from(factor)) as f64;
        let e = (self.exp10 + shift).clamp(-1000, 1000) as i32;
        if e >= 0 {
            n * 10f64.powi(e)
        } else {
            n / 10f64.powi(-e)
        }
    }
}

/// A unit suffix: `value * factor * 10^power` in base units.
struct Unit {
    name: &'static str,
    power: i64,
    factor: u32,
}

/// Click's `UnitArg::parse`: strip the first unit in `units` that ends `s`,
/// then an optional one-character decimal prefix just before it, then any
/// space. Returns the number text, the power of ten and the factor; with no
/// unit, `(s, 0, 1)`.
fn split_unit<'a>(s: &'a str, units: &[Unit], prefixes: &[(u8, i64)]) -> (&'a str, i64, u32) {
    for u in units {
        if let Some(rest) = s.strip_suffix(u.name) {
            let mut power = u.power;
            let mut rest = rest;
            if let Some(&last) = rest.as_bytes().last() {
                if let Some(&(_, p)) = prefixes.iter().find(|(c, _)| *c == last) {
                    power += p;
                    rest = &rest[..rest.len() - 1];
                }
            }
            let trimmed = rest.trim_end_matches(|c: char| c.is_ascii() && is_space(c as u8));
            return (trimmed, power, u.factor);
        }
    }
    (s, 0, 1)
}

const SECONDS_UNITS: &[Unit] = &[
    Unit {
        name: "s",
        power: 0,
        factor: 1,
    },
    Unit {
        name: "sec",
        power: 0,
        factor: 1,
    },
    Unit {
        name: "m",
        power: 1,
        factor: 6,
    },
    Unit {
        name: "min",
        power: 1,
        factor: 6,
    },
    Unit {
        name: "h",
        power: 2,
        factor: 36,
    },
    Unit {
        name: "hr",
        power: 2,
        factor: 36,
    },
    Unit {
        name: "d",
        power: 2,
        factor: 864,
    },
    Unit {
        name: "day",
        power: 2,
        factor: 864,
    },
];
const SECONDS_PREFIXES: &[(u8, i64)] = &[(b'm', -3), (b'u', -6), (b'n', -9)];

/// Parse a time with Click's `SecondsArg` syntax into nanoseconds: a
/// non-negative decimal with an optional unit `s`/`sec`, `m`/`min`,
/// `h`/`hr`, `d`/`day`, where `s` and `sec` (and the others) take a `m`,
/// `u` or `n` prefix (`ms`, `usec`, `ns`...). A bare number is seconds.
fn parse_nanos(s: &str, what: &str) -> Result<u64, String> {
    let (num, power, factor) = split_unit(s, SECONDS_UNITS, SECONDS_PREFIXES);
    let d = Decimal::scan(num).ok_or_else(|| format!("expected {what}"))?;
    d.scaled_u64(factor, power + 9)
        .ok_or_else(|| "out of range".to_string())
}

/// Format nanoseconds as seconds with the shortest exact decimal fraction.
fn fmt_nanos(nanos: u64, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let (secs, frac) = (nanos / 1_000_000_000, nanos % 1_000_000_000);
    if frac == 0 {
        write!(f, "{secs}s")
    } else {
        let digits = format!("{frac:09}");
        write!(f, "{secs}.{}s", digits.trim_end_matches('0'))
    }
}

/// A time interval (Click's `SecondsArg`), stored in nanoseconds.
///
/// Accepts `1.5`, `2s`, `10sec`, `0.5ms`, `20msec`, `100us`, `5usec`,
/// `7ns`, `3nsec`, `2m`, `2min`, `1h`, `1hr`, `1d`/`1day`, with optional
/// space before the unit and an exponent (`1e-3s`). Displays as seconds
/// (`0.5s`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Seconds {
    /// The interval in nanoseconds.
    pub nanos: u64,
}

impl Seconds {
    /// The interval as a [`Duration`].
    pub fn as_duration(self) -> Duration {
        Duration::from_nanos(self.nanos)
    }
}

impl ArgValue for Seconds {
    const TYPE: &'static str = "time in seconds";
    fn parse_arg(s: &str) -> Result<Self, String> {
        parse_nanos(s, Self::TYPE).map(|nanos| Seconds { nanos })
    }
}

impl fmt::Display for Seconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_nanos(self.nanos, f)
    }
}

/// A point in time or offset (Click's `Timestamp` argument), in nanoseconds,
/// with the same syntax as [`Seconds`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp {
    /// Nanoseconds.
    pub nanos: u64,
}

impl Timestamp {
    /// The value as a [`Duration`] since its origin.
    pub fn as_duration(self) -> Duration {
        Duration::from_nanos(self.nanos)
    }
}

impl ArgValue for Timestamp {
    const TYPE: &'static str = "timestamp";
    fn parse_arg(s: &str) -> Result<Self, String> {
        parse_nanos(s, Self::TYPE).map(|nanos| Timestamp { nanos })
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_nanos(self.nanos, f)
    }
}

/// A time interval with the [`Seconds`] syntax.
impl ArgValue for Duration {
    const TYPE: &'static str = "time in seconds";
    fn parse_arg(s: &str) -> Result<Self, String> {
        parse_nanos(s, Self::TYPE).map(Duration::from_nanos)
    }
}

const BANDWIDTH_UNITS: &[Unit] = &[
    Unit {
        name: "baud",
        power: -3,
        factor: 125,
    },
    Unit {
        name: "bps",
        power: -3,
        factor: 125,
    },
    Unit {
        name: "b/s",
        power: -3,
        factor: 125,
    },
    Unit {
        name: "Bps",
        power: 0,
        factor: 1,
    },
    Unit {
        name: "B/s",
        power: 0,
        factor: 1,
    },
];
const BANDWIDTH_PREFIXES: &[(u8, i64)] = &[(b'k', 3), (b'K', 3), (b'M', 6), (b'G', 9)];

/// A bandwidth in bytes per second (Click's `BandwidthArg`).
///
/// Units: `bps`, `b/s`, `baud` (bits per second) and `Bps`, `B/s` (bytes
/// per second), each with an optional `k`/`K`, `M` or `G` prefix (powers
/// of 1000): `8kbps` = `1KBps` = 1000 bytes/s. A bare number is bytes per
/// second, as in Click.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default)]
pub struct Bandwidth(pub f64);

impl Bandwidth {
    /// The bandwidth in bits per second.
    pub fn bits_per_second(self) -> f64 {
        self.0 * 8.0
    }
}

impl ArgValue for Bandwidth {
    const TYPE: &'static str = "bandwidth";
    fn parse_arg(s: &str) -> Result<Self, String> {
        let (num, power, factor) = split_unit(s, BANDWIDTH_UNITS, BANDWIDTH_PREFIXES);
        let d = Decimal::scan(num).ok_or_else(|| "expected bandwidth".to_string())?;
        let v = d.scaled_f64(factor, power);
        if v.is_finite() {
            Ok(Bandwidth(v))
        } else {
            Err("out of range".to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p<T: ArgValue>(s: &str) -> Result<T, String> {
        T::parse_arg(s)
    }

    #[test]
    fn integers() {
        assert_eq!(p::<u32>("0"), Ok(0));
        assert_eq!(p::<u32>("123"), Ok(123));
        assert_eq!(p::<u32>("+7"), Ok(7));
        assert_eq!(p::<u32>("0x1F"), Ok(31));
        assert_eq!(p::<u32>("0XfF"), Ok(255));
        assert_eq!(p::<u32>("017"), Ok(15));
        assert_eq!(p::<u32>("0b101"), Ok(5));
        assert_eq!(p::<u32>("1_000_000"), Ok(1_000_000));
        assert_eq!(p::<i32>("-42"), Ok(-42));
        assert_eq!(p::<i32>("-0x10"), Ok(-16));
        assert_eq!(p::<i8>("-128"), Ok(-128));
        assert_eq!(p::<u64>("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(p::<i64>("-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(p::<usize>("10"), Ok(10));
        assert_eq!(p::<u16>("65535"), Ok(65535));
        assert_eq!(p::<i16>("-32768"), Ok(-32768));
    }

    #[test]
    fn integer_errors() {
        for bad in [
            "", "1.5", "abc", "1a", " 1", "1 ", "0x", "0x!", "08", "1__0", "_1", "1_", "+", "-",
            "0b2", "1e3", "\"5\"",
        ] {
            assert_eq!(
                p::<u32>(bad),
                Err("expected integer".to_string()),
                "{bad:?}"
            );
        }
        assert_eq!(p::<u8>("256"), Err("out of range, bound 255".to_string()));
        assert_eq!(p::<u8>("-1"), Err("out of range, bound 0".to_string()));
        assert_eq!(p::<i8>("128"), Err("out of range, bound 127".to_string()));
        assert_eq!(p::<i8>("-129"), Err("out of range, bound -128".to_string()));
        assert_eq!(
            p::<u64>("99999999999999999999999999999999999999999999"),
            Err("out of range, bound 18446744073709551615".to_string())
        );
        assert_eq!(
            p::<i64>("-99999999999999999999999999999999999999999999"),
            Err("out of range, bound -9223372036854775808".to_string())
        );
    }

    #[test]
    fn reals() {
        assert_eq!(p::<f64>("1"), Ok(1.0));
        assert_eq!(p::<f64>("-2.5"), Ok(-2.5));
        assert_eq!(p::<f64>(".5"), Ok(0.5));
        assert_eq!(p::<f64>("1e-3"), Ok(0.001));
        assert_eq!(p::<f64>("+3"), Ok(3.0));
        assert_eq!(p::<f64>("inf"), Ok(f64::INFINITY));
        assert!(p::<f64>("nan").unwrap().is_nan());
        for bad in ["", " 1", "1 ", "1.2.3", "x", "1e"] {
            assert_eq!(p::<f64>(bad), Err("expected real".to_string()), "{bad:?}");
        }
        assert_eq!(
            p::<f64>("1e999"),
            Err("out of range, bound inf".to_string())
        );
        assert_eq!(
            p::<f64>("-1e999"),
            Err("out of range, bound -inf".to_string())
        );
        assert_eq!(
            p::<f64>("1e-999"),
            Err("underflow, rounded to 0".to_string())
        );
        assert_eq!(p::<f64>("0e-999"), Ok(0.0));
    }

    #[test]
    fn times() {
        let ns = |s: &str| p::<Seconds>(s).map(|t| t.nanos);
        assert_eq!(ns("1"), Ok(1_000_000_000));
        assert_eq!(ns("1.5"), Ok(1_500_000_000));
        assert_eq!(ns(".25"), Ok(250_000_000));
        assert_eq!(ns("2."), Ok(2_000_000_000));
        assert_eq!(ns("2s"), Ok(2_000_000_000));
        assert_eq!(ns("2sec"), Ok(2_000_000_000));
        assert_eq!(ns("0.5ms"), Ok(500_000));
        assert_eq!(ns("20msec"), Ok(20_000_000));
        assert_eq!(ns("100us"), Ok(100_000));
        assert_eq!(ns("5usec"), Ok(5_000));
        assert_eq!(ns("7ns"), Ok(7));
        assert_eq!(ns("3nsec"), Ok(3));
        assert_eq!(ns("2m"), Ok(120_000_000_000));
        assert_eq!(ns("2min"), Ok(120_000_000_000));
        assert_eq!(ns("1h"), Ok(3_600_000_000_000));
        assert_eq!(ns("1.5hr"), Ok(5_400_000_000_000));
        assert_eq!(ns("1d"), Ok(86_400_000_000_000));
        assert_eq!(ns("1day"), Ok(86_400_000_000_000));
        assert_eq!(ns("10 ms"), Ok(10_000_000));
        assert_eq!(ns("1e-3s"), Ok(1_000_000));
        assert_eq!(ns("1_000ms"), Ok(1_000_000_000));
        assert_eq!(ns("+1s"), Ok(1_000_000_000));
        // Rounded half up to a nanosecond.
        assert_eq!(ns("0.0000000015"), Ok(2));
        assert_eq!(ns("0.0000000014"), Ok(1));
        assert_eq!(ns("0.00000000001m"), Ok(1));
        assert_eq!(ns("1e-99999999999"), Ok(0));
        for bad in [
            "", "s", "ms", "-1s", "1.2.3", "1 2s", "1mbps", "1x", "1 s s", "._5", "1e", "abc",
        ] {
            assert_eq!(
                ns(bad),
                Err("expected time in seconds".to_string()),
                "{bad:?}"
            );
        }
        assert_eq!(ns("1e30"), Err("out of range".to_string()));
        assert_eq!(ns("18446744074s"), Err("out of range".to_string()));
        assert_eq!(p::<Timestamp>("x"), Err("expected timestamp".to_string()));
        assert_eq!(p::<Timestamp>("1.25").map(|t| t.nanos), Ok(1_250_000_000));
        assert_eq!(p::<Duration>("0.5ms"), Ok(Duration::from_micros(500)));
        assert_eq!(
            p::<Seconds>("1.5").unwrap().as_duration(),
            Duration::from_millis(1500)
        );
        assert_eq!(p::<Seconds>("1.5").unwrap().to_string(), "1.5s");
        assert_eq!(p::<Seconds>("3").unwrap().to_string(), "3s");
        assert_eq!(p::<Timestamp>("7ns").unwrap().to_string(), "0.000000007s");
    }

    #[test]
    fn bandwidths() {
        let bw = |s: &str| p::<Bandwidth>(s).map(|b| b.0);
        assert_eq!(bw("1000"), Ok(1000.0));
        assert_eq!(bw("8bps"), Ok(1.0));
        assert_eq!(bw("8kbps"), Ok(1000.0));
        assert_eq!(bw("8Kbps"), Ok(1000.0));
        assert_eq!(bw("1Mbps"), Ok(125_000.0));
        assert_eq!(bw("1.5Mbps"), Ok(187_500.0));
        assert_eq!(bw("1Gbps"), Ok(125_000_000.0));
        assert_eq!(bw("10Gbps"), Ok(1_250_000_000.0));
        assert_eq!(bw("1Bps"), Ok(1.0));
        assert_eq!(bw("1KBps"), Ok(1000.0));
        assert_eq!(bw("2kBps"), Ok(2000.0));
        assert_eq!(bw("1MBps"), Ok(1_000_000.0));
        assert_eq!(bw("1GBps"), Ok(1_000_000_000.0));
        assert_eq!(bw("8 kb/s"), Ok(1000.0));
        assert_eq!(bw("3B/s"), Ok(3.0));
        assert_eq!(bw("9600baud"), Ok(1200.0));
        assert_eq!(bw("1e3Bps"), Ok(1000.0));
        assert_eq!(
            p::<Bandwidth>("1Mbps").unwrap().bits_per_second(),
            1_000_000.0
        );
        for bad in [
            "", "bps", "Mbps", "-1Mbps", "1mbps", "1 M bps", "1Tbps", "x", "1.2.3Bps",
        ] {
            assert_eq!(bw(bad), Err("expected bandwidth".to_string()), "{bad:?}");
        }
        assert_eq!(bw("1e999Bps"), Err("out of range".to_string()));
    }

    #[test]
    fn decimal_prefix_lengths() {
        assert_eq!(parse_decimal_u32("24"), Some(24));
        assert_eq!(parse_decimal_u32("024"), Some(24));
        assert_eq!(parse_decimal_u32("0x10"), None);
        assert_eq!(parse_decimal_u32("-1"), None);
        assert_eq!(parse_decimal_u32(""), None);
    }
}

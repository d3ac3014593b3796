//! Network address values: IPv4 and IPv6 addresses and prefixes (Click's
//! `IPAddressArg`, `IPPrefixArg`, `IP6AddressArg`, `IP6PrefixArg`) and
//! Ethernet addresses (`EtherAddressArg`).

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::num::parse_decimal_u32;
use crate::unquote::is_space;
use crate::ArgValue;

/// Click's `IPAddressArg::basic_parse`: up to four dot-separated decimal
/// bytes at the start of `b`. Returns the bytes (missing ones zero), how many
/// were read and where parsing stopped.
fn basic_ipv4(b: &[u8]) -> ([u8; 4], usize, usize) {
    let mut value = [0u8; 4];
    let mut pos = 0;
    let mut d = 0;
    while d < 4 && pos < b.len() && (d == 0 || b[pos] == b'.') {
        let mut t = pos + usize::from(d != 0);
        if t >= b.len() || !b[t].is_ascii_digit() {
            break;
        }
        let mut part: u32 = 0;
        while t < b.len() && b[t].is_ascii_digit() && part <= 255 {
            part = part * 10 + u32::from(b[t] - b'0');
            t += 1;
        }
        let Ok(byte) = u8::try_from(part) else {
            break;
        };
        value[d] = byte;
        pos = t;
        d += 1;
    }
    (value, d, pos)
}

/// A full dotted-quad address, or `None`.
fn full_ipv4(s: &str) -> Option<Ipv4Addr> {
    let (v, n, end) = basic_ipv4(s.as_bytes());
    (n == 4 && end == s.len()).then_some(Ipv4Addr::from(v))
}

/// Click's `IPAddressArg`: a dotted quad of decimal bytes, `18.26.4.9`.
impl ArgValue for Ipv4Addr {
    const TYPE: &'static str = "IP address";
    fn parse_arg(s: &str) -> Result<Self, String> {
        full_ipv4(s).ok_or_else(|| "expected IP address".to_string())
    }
}

/// An IPv4 address prefix: an address and a prefix length.
///
/// Accepted forms (Click's `IPPrefixArg`, plus the `mask` form of Click's
/// filter language): `18.26.4.9/24` (the address keeps its host bits),
/// `18.26.4/24` (short address; the prefix may not cover missing bytes),
/// `1.2.3.4/255.255.255.0` (the mask must be contiguous), `1.2.3.4 mask
/// 255.255.0.0`, and a bare address `1.2.3.4` meaning `/32`. A bare short
/// address such as `18.26.4` is rejected, as in Click. Displays as
/// `18.26.4.9/24`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ipv4Prefix {
    /// The address as written (host bits are not cleared).
    pub addr: Ipv4Addr,
    /// Prefix length, 0 to 32.
    pub len: u8,
}

impl Ipv4Prefix {
    /// The netmask, e.g. `255.255.255.0` for `/24`.
    pub fn mask(&self) -> Ipv4Addr {
        let bits = u32::MAX.checked_shl(32 - u32::from(self.len)).unwrap_or(0);
        Ipv4Addr::from(bits)
    }

    /// The address with its host bits cleared.
    pub fn network(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.addr) & u32::from(self.mask()))
    }

    /// Whether `a` lies in this prefix.
    pub fn contains(&self, a: Ipv4Addr) -> bool {
        u32::from(a) & u32::from(self.mask()) == u32::from(self.network())
    }
}

/// Prefix length of a contiguous netmask held in the top bits of `mask`, or
/// `None` if the mask is not contiguous.
fn mask_len(mask: u128) -> Option<u8> {
    let ones = mask.leading_ones();
    let expect = u128::MAX.checked_shl(128 - ones).unwrap_or(0);
    (mask == expect).then_some(ones as u8)
}

fn ipv4_with_mask(addr: &str, mask: &str) -> Option<Ipv4Prefix> {
    let (v, nbytes, end) = basic_ipv4(addr.as_bytes());
    if end != addr.len() {
        return None;
    }
    let len = match parse_decimal_u32(mask) {
        Some(l) if l <= 32 => l as u8,
        _ => mask_len(u128::from(u32::from(full_ipv4(mask)?)) << 96)?,
    };
    // A short address may not leave bits of the prefix undefined.
    if nbytes < 4 && usize::from(len) > nbytes * 8 {
        return None;
    }
    Some(Ipv4Prefix {
        addr: Ipv4Addr::from(v),
        len,
    })
}

/// Split `A mask M` into `(A, M)`.
fn split_mask_form(s: &str) -> Option<(&str, &str)> {
    let mut words = s
        .split(|c: char| c.is_ascii() && is_space(c as u8))
        .filter(|w| !w.is_empty());
    match (words.next(), words.next(), words.next(), words.next()) {
        (Some(a), Some("mask"), Some(m), None) => Some((a, m)),
        _ => None,
    }
}

impl ArgValue for Ipv4Prefix {
    const TYPE: &'static str = "IP address prefix";
    fn parse_arg(s: &str) -> Result<Self, String> {
        let parsed = if let Some((a, m)) = split_mask_form(s) {
            ipv4_with_mask(a, m)
        } else if let Some((a, m)) = s.rsplit_once('/').filter(|(_, m)| !m.is_empty()) {
            ipv4_with_mask(a, m)
        } else {
            full_ipv4(s).map(|addr| Ipv4Prefix { addr, len: 32 })
        };
        parsed.ok_or_else(|| "expected IP address prefix".to_string())
    }
}

impl fmt::Display for Ipv4Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

/// Click's `IP6AddressArg`: standard IPv6 text (`fe80::1`, `::ffff:1.2.3.4`).
impl ArgValue for Ipv6Addr {
    const TYPE: &'static str = "IPv6 address";
    fn parse_arg(s: &str) -> Result<Self, String> {
        s.parse().map_err(|_| "expected IPv6 address".to_string())
    }
}

/// An IPv6 address prefix: `addr/len` (0 to 128), `addr/mask` with a
/// contiguous mask, or a bare address meaning `/128` (Click's
/// `IP6PrefixArg`). Displays as `fe80::/64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ipv6Prefix {
    /// The address as written (host bits are not cleared).
    pub addr: Ipv6Addr,
    /// Prefix length, 0 to 128.
    pub len: u8,
}

impl Ipv6Prefix {
    /// The netmask as an address, e.g. `ffff:ffff::` for `/32`.
    pub fn mask(&self) -> Ipv6Addr {
        let bits = u128::MAX
            .checked_shl(128 - u32::from(self.len))
            .unwrap_or(0);
        Ipv6Addr::from(bits)
    }

    /// The address with its host bits cleared.
    pub fn network(&self) -> Ipv6Addr {
        Ipv6Addr::from(u128::from(self.addr) & u128::from(self.mask()))
    }

    /// Whether `a` lies in this prefix.
    pub fn contains(&self, a: Ipv6Addr) -> bool {
        u128::from(a) & u128::from(self.mask()) == u128::from(self.network())
    }
}

impl ArgValue for Ipv6Prefix {
    const TYPE: &'static str = "IPv6 address prefix";
    fn parse_arg(s: &str) -> Result<Self, String> {
        let parsed = match s.rsplit_once('/') {
            Some((a, m)) => a.parse::<Ipv6Addr>().ok().and_then(|addr| {
                let len = match parse_decimal_u32(m) {
                    Some(l) if l <= 128 => l as u8,
                    _ => mask_len(u128::from(m.parse::<Ipv6Addr>().ok()?))?,
                };
                Some(Ipv6Prefix { addr, len })
            }),
            None => s.parse().ok().map(|addr| Ipv6Prefix { addr, len: 128 }),
        };
        parsed.ok_or_else(|| "expected IPv6 address prefix".to_string())
    }
}

impl fmt::Display for Ipv6Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

/// An Ethernet address.
///
/// Parses six groups of one or two hex digits separated consistently by
/// `:` or `-` (`0:1:2:3:4:5`, `00-1b-21-3a-4b-5c`), as Click's
/// `EtherAddressArg`. Displays like Click: `00-1B-21-3A-4B-5C`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct EtherAddr(pub [u8; 6]);

impl ArgValue for EtherAddr {
    const TYPE: &'static str = "Ethernet address";
    fn parse_arg(s: &str) -> Result<Self, String> {
        let mut data = [0u8; 6];
        let (mut d, mut p) = (0usize, 0usize);
        let mut sep: Option<u8> = None;
        for &c in s.as_bytes() {
            let digit = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                b'-' | b':' if sep.unwrap_or(c) == c && (p == 1 || p == 2) && d < 5 => {
                    sep = Some(c);
                    p = 0;
                    d += 1;
                    continue;
                }
                _ => return Err("expected Ethernet address".to_string()),
            };
            if p == 2 {
                return Err("expected Ethernet address".to_string());
            }
            data[d] = (data[d] << 4) | digit;
            p += 1;
        }
        if p != 0 && d == 5 {
            Ok(EtherAddr(data))
        } else {
            Err("expected Ethernet address".to_string())
        }
    }
}

impl fmt::Display for EtherAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = &self.0;
        write!(
            f,
            "{:02X}-{:02X}-{:02X}-{:02X}-{:02X}-{:02X}",
            a[0], a[1], a[2], a[3], a[4], a[5]
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p<T: ArgValue>(s: &str) -> Result<T, String> {
        T::parse_arg(s)
    }

    fn v4(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }

    fn pfx(s: &str) -> Result<(Ipv4Addr, u8), String> {
        p::<Ipv4Prefix>(s).map(|x| (x.addr, x.len))
    }

    #[test]
    fn ipv4_addresses() {
        assert_eq!(p::<Ipv4Addr>("18.26.4.9"), Ok(v4("18.26.4.9")));
        assert_eq!(p::<Ipv4Addr>("0.0.0.0"), Ok(v4("0.0.0.0")));
        assert_eq!(p::<Ipv4Addr>("255.255.255.255"), Ok(v4("255.255.255.255")));
        assert_eq!(p::<Ipv4Addr>("010.1.1.1"), Ok(v4("10.1.1.1")));
        for bad in [
            "",
            "1.2.3",
            "1.2.3.4.5",
            "256.1.1.1",
            "1.2.3.4 ",
            "1..2.3",
            "a.b.c.d",
            "1.2.3.-4",
            "1.2.3.4.",
        ] {
            assert_eq!(
                p::<Ipv4Addr>(bad),
                Err("expected IP address".to_string()),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn ipv4_prefixes() {
        assert_eq!(pfx("18.26.4.0/24"), Ok((v4("18.26.4.0"), 24)));
        assert_eq!(pfx("18.26.4.9/24"), Ok((v4("18.26.4.9"), 24)));
        assert_eq!(pfx("18.26.4/24"), Ok((v4("18.26.4.0"), 24)));
        assert_eq!(pfx("10/8"), Ok((v4("10.0.0.0"), 8)));
        assert_eq!(pfx("1.2.3.4/255.255.255.0"), Ok((v4("1.2.3.4"), 24)));
        assert_eq!(pfx("1.2.3.4/0.0.0.0"), Ok((v4("1.2.3.4"), 0)));
        assert_eq!(pfx("1.2.3.4/255.255.255.255"), Ok((v4("1.2.3.4"), 32)));
        assert_eq!(pfx("1.2.3.4/0"), Ok((v4("1.2.3.4"), 0)));
        assert_eq!(pfx("1.2.3.4"), Ok((v4("1.2.3.4"), 32)));
        assert_eq!(pfx("1.2.0.0 mask 255.255.0.0"), Ok((v4("1.2.0.0"), 16)));
        assert_eq!(pfx("1.2 mask 16"), Ok((v4("1.2.0.0"), 16)));
        for bad in [
            "",
            "18.26.4",
            "18.26/24",
            "1.2.3.4/33",
            "1.2.3.4/",
            "/",
            "1.2.3.4/255.0.255.0",
            "1.2.3.4/x",
            "1.2.3.4/24/8",
            "1.2.3.4 mask",
            "1.2.3.4 mask 255.0.0.0 x",
            "1.2.3.4 MASK 8",
            "300.1.1.1/8",
        ] {
            assert_eq!(
                pfx(bad),
                Err("expected IP address prefix".to_string()),
                "{bad:?}"
            );
        }
        let x = p::<Ipv4Prefix>("18.26.4.9/24").unwrap();
        assert_eq!(x.mask(), v4("255.255.255.0"));
        assert_eq!(x.network(), v4("18.26.4.0"));
        assert!(x.contains(v4("18.26.4.200")));
        assert!(!x.contains(v4("18.26.5.1")));
        assert_eq!(x.to_string(), "18.26.4.9/24");
        assert_eq!(p::<Ipv4Prefix>("0.0.0.0/0").unwrap().mask(), v4("0.0.0.0"));
    }

    #[test]
    fn ipv6() {
        let a: Ipv6Addr = "fe80::1".parse().unwrap();
        assert_eq!(p::<Ipv6Addr>("fe80::1"), Ok(a));
        assert_eq!(
            p::<Ipv6Addr>("::ffff:1.2.3.4"),
            Ok("::ffff:1.2.3.4".parse().unwrap())
        );
        for bad in ["", "fe80:::1", "1.2.3.4", "g::1", "fe80::1/64"] {
            assert_eq!(
                p::<Ipv6Addr>(bad),
                Err("expected IPv6 address".to_string()),
                "{bad:?}"
            );
        }
        let x = p::<Ipv6Prefix>("fe80::1/64").unwrap();
        assert_eq!((x.addr, x.len), (a, 64));
        assert_eq!(x.network(), "fe80::".parse::<Ipv6Addr>().unwrap());
        assert_eq!(
            x.mask(),
            "ffff:ffff:ffff:ffff::".parse::<Ipv6Addr>().unwrap()
        );
        assert!(x.contains("fe80::abcd".parse().unwrap()));
        assert_eq!(x.to_string(), "fe80::1/64");
        assert_eq!(p::<Ipv6Prefix>("fe80::1").map(|x| x.len), Ok(128));
        assert_eq!(p::<Ipv6Prefix>("::/0").map(|x| x.len), Ok(0));
        assert_eq!(
            p::<Ipv6Prefix>("2001:db8::/ffff:ffff::").map(|x| x.len),
            Ok(32)
        );
        for bad in [
            "",
            "fe80::1/129",
            "fe80::1/",
            "fe80::1/ffff:0:ffff::",
            "x/64",
            "1.2.3.4/8",
        ] {
            assert_eq!(
                p::<Ipv6Prefix>(bad),
                Err("expected IPv6 address prefix".to_string()),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn ethernet() {
        assert_eq!(
            p::<EtherAddr>("0:1:2:3:4:5"),
            Ok(EtherAddr([0, 1, 2, 3, 4, 5]))
        );
        assert_eq!(
            p::<EtherAddr>("00-1b-21-3A-4b-5c"),
            Ok(EtherAddr([0, 0x1b, 0x21, 0x3a, 0x4b, 0x5c]))
        );
        assert_eq!(
            p::<EtherAddr>("ff:ff:ff:ff:ff:ff"),
            Ok(EtherAddr([0xff; 6]))
        );
        for bad in [
            "",
            "0:1:2:3:4",
            "0:1:2:3:4:5:6",
            "0:1:2:3:4:",
            "0-1:2:3:4:5",
            "000:1:2:3:4:5",
            "0::2:3:4:5",
            "0:1:2:3:4:g",
            "001b213a4b5c",
            " 0:1:2:3:4:5",
        ] {
            assert_eq!(
                p::<EtherAddr>(bad),
                Err("expected Ethernet address".to_string()),
                "{bad:?}"
            );
        }
        assert_eq!(
            EtherAddr([0, 1, 2, 3, 4, 5]).to_string(),
            "00-01-02-03-04-05"
        );
        assert_eq!(
            EtherAddr([0, 5, 0x4e, 0x50, 0x3c, 0x1a]).to_string(),
            "00-05-4E-50-3C-1A"
        );
    }
}

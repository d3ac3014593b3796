//! Click's `Classifier` patterns: space-separated `OFFSET/VALUE[%MASK]`
//! clauses, all of which must hold. `VALUE` and `MASK` are hexadecimal with
//! an even number of digits; `?` in the value is a wildcard nibble; a clause
//! prefixed with `!` must not hold; `-` alone matches every packet. A clause
//! whose bytes lie beyond the end of the packet does not hold.

/// One clause, pre-split into 8-byte words for the matcher.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Clause {
    offset: usize,
    value: Vec<u8>,
    mask: Vec<u8>,
    negated: bool,
}

impl Clause {
    #[inline]
    fn holds(&self, data: &[u8]) -> bool {
        let ok = match data.get(self.offset..self.offset + self.value.len()) {
            Some(b) => b
                .iter()
                .zip(&self.value)
                .zip(&self.mask)
                .all(|((b, v), m)| b & m == *v),
            None => false,
        };
        ok != self.negated
    }
}

/// A parsed Classifier pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    clauses: Vec<Clause>,
}

impl Pattern {
    /// True if every clause holds on `data`.
    #[inline]
    pub fn matches(&self, data: &[u8]) -> bool {
        self.clauses.iter().all(|c| c.holds(data))
    }
}

fn hex_nibble(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Parse one pattern; errors give a message and the 0-based character
/// position of the bad clause.
pub fn parse(text: &str) -> Result<Pattern, (usize, String)> {
    let t = text.trim();
    if t == "-" {
        return Ok(Pattern {
            clauses: Vec::new(),
        });
    }
    if t.is_empty() {
        return Err((0, "empty pattern".into()));
    }
    let mut clauses = Vec::new();
    let base = text.len() - text.trim_start().len();
    let mut pos = base;
    for word in t.split_ascii_whitespace() {
        let at = pos + text[pos..].find(word).unwrap_or(0);
        pos = at + word.len();
        let (negated, w) = match word.strip_prefix('!') {
            Some(w) => (true, w),
            None => (false, word),
        };
        let Some((off, rest)) = w.split_once('/') else {
            return Err((at, format!("expected OFFSET/VALUE in '{word}'")));
        };
        let Ok(offset) = off.parse::<usize>() else {
            return Err((at, format!("bad OFFSET in '{word}'")));
        };
        let (val, mask) = match rest.split_once('%') {
            Some((v, m)) => (v, Some(m)),
            None => (rest, None),
        };
        if val.is_empty() || val.len() % 2 != 0 {
            return Err((
                at,
                format!("VALUE has an odd number of nibbles in '{word}'"),
            ));
        }
        if let Some(m) = mask {
            if m.len() != val.len() {
                return Err((
                    at,
                    format!("VALUE and MASK have different lengths in '{word}'"),
                ));
            }
        }
        if offset > 0xFFFF {
            return Err((at, format!("OFFSET too large in '{word}'")));
        }
        let vb = val.as_bytes();
        let mb = mask.map(str::as_bytes);
        let mut value = Vec::with_capacity(vb.len() / 2);
        let mut maskv = Vec::with_capacity(vb.len() / 2);
        for i in (0..vb.len()).step_by(2) {
            let mut v = 0u8;
            let mut m = 0u8;
            for j in 0..2 {
                let c = vb[i + j];
                let (nv, nm) = if c == b'?' {
                    (0, 0)
                } else if let Some(n) = hex_nibble(c) {
                    (n, 0xF)
                } else {
                    return Err((at, format!("bad hex digit '{}' in '{word}'", c as char)));
                };
                let um = match mb {
                    Some(mb) => match hex_nibble(mb[i + j]) {
                        Some(n) => n,
                        None => {
                            return Err((
                                at,
                                format!("bad hex digit '{}' in '{word}'", mb[i + j] as char),
                            ))
                        }
                    },
                    None => 0xF,
                };
                v = (v << 4) | (nv & nm & um);
                m = (m << 4) | (nm & um);
            }
            value.push(v);
            maskv.push(m);
        }
        clauses.push(Clause {
            offset,
            value,
            mask: maskv,
            negated,
        });
    }
    Ok(Pattern { clauses })
}

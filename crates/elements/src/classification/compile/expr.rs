//! Rule expressions: the atoms IPClassifier/IPFilter patterns are built from,
//! their exact meaning on a packet, and the reference (linear) matcher.
//!
//! Semantics follow Click's: every atom reads header fields as aligned
//! 32-bit words relative to the IP header (`ip[...]`) or to the transport
//! header found from the IP header length (`transp[...]`); an atom whose word
//! is not inside the packet is false (its negation is then true).

/// A dimension the decision tree splits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dim {
    /// IP source address.
    Src = 0,
    /// IP destination address.
    Dst = 1,
    /// IP protocol.
    Proto = 2,
    /// Transport source port (first fragments only).
    Sport = 3,
    /// Transport destination port (first fragments only).
    Dport = 4,
}

/// Number of tree dimensions.
pub const NDIMS: usize = 5;

/// The value a port dimension takes on a packet that is not a first fragment.
pub const NO_PORT: u32 = 65536;

/// Largest value of each dimension.
pub const DIM_MAX: [u32; NDIMS] = [u32::MAX, u32::MAX, 255, NO_PORT, NO_PORT];

/// The header a field is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// The IP header.
    Ip,
    /// The transport header (after `ip hl * 4` bytes).
    Transp,
}

/// One test on a packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Atom {
    /// The dimension's value lies in `lo..=hi` (ports: and the packet is a
    /// first fragment whose transport word is present).
    Range {
        /// Which dimension.
        dim: Dim,
        /// Lowest value.
        lo: u32,
        /// Highest value.
        hi: u32,
    },
    /// `((word >> shift) & mask)` lies in `lo..=hi`, `word` being the 32-bit
    /// big-endian word at byte `off` of `base`.
    Field {
        /// Header.
        base: Base,
        /// Byte offset of the (aligned) word.
        off: u16,
        /// Right shift applied to the word.
        shift: u8,
        /// Mask applied after the shift.
        mask: u32,
        /// Lowest accepted value.
        lo: u32,
        /// Highest accepted value.
        hi: u32,
    },
    /// An Ethernet address: source (`src` true) or destination, read from the
    /// 14 bytes right before the network header.
    Ether {
        /// Source rather than destination.
        src: bool,
        /// The address.
        addr: [u8; 6],
    },
}

/// A boolean expression over atoms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    /// Always true.
    True,
    /// Always false.
    False,
    /// One test.
    Atom(Atom),
    /// Negation.
    Not(Box<Expr>),
    /// Conjunction.
    And(Vec<Expr>),
    /// Disjunction.
    Or(Vec<Expr>),
    /// `c ? a : b`.
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
}

impl Expr {
    /// `!self`, folding double negations and constants.
    pub fn negate(self) -> Expr {
        match self {
            Expr::True => Expr::False,
            Expr::False => Expr::True,
            Expr::Not(e) => *e,
            e => Expr::Not(Box::new(e)),
        }
    }
}

/// The parts of a packet an expression looks at.
#[derive(Debug, Clone, Copy)]
pub struct PacketView<'a> {
    /// From the network header to the end of the packet (empty if unset).
    pub ip: &'a [u8],
    /// The 14-byte Ethernet header before the network header, if present.
    pub ether: Option<&'a [u8]>,
}

#[inline]
fn word(b: &[u8], off: usize) -> Option<u32> {
    let w = b.get(off..off.checked_add(4)?)?;
    Some(u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
}

impl<'a> PacketView<'a> {
    /// A view of an IP packet with no Ethernet header.
    pub fn ip(ip: &'a [u8]) -> Self {
        PacketView { ip, ether: None }
    }

    /// The 32-bit word at byte `off` of the IP header.
    #[inline]
    pub fn ip_word(&self, off: usize) -> Option<u32> {
        word(self.ip, off)
    }

    /// The 32-bit word at byte `off` of the transport header.
    #[inline]
    pub fn transp_word(&self, off: usize) -> Option<u32> {
        let hl = usize::from(*self.ip.first()? & 0x0F) * 4;
        word(self.ip, hl + off)
    }

    /// True if the packet is a first fragment (fragment offset 0).
    #[inline]
    fn first_frag(&self) -> Option<bool> {
        Some(self.ip_word(4)? & 0x1FFF == 0)
    }

    /// Evaluate one atom.
    pub fn atom(&self, a: &Atom) -> bool {
        match *a {
            Atom::Range { dim, lo, hi } => {
                let v = match dim {
                    Dim::Src => self.ip_word(12),
                    Dim::Dst => self.ip_word(16),
                    Dim::Proto => self.ip_word(8).map(|w| (w >> 16) & 0xFF),
                    Dim::Sport | Dim::Dport => match self.first_frag() {
                        Some(true) => self.transp_word(0).map(|w| {
                            if dim == Dim::Sport {
                                w >> 16
                            } else {
                                w & 0xFFFF
                            }
                        }),
                        _ => None,
                    },
                };
                matches!(v, Some(v) if lo <= v && v <= hi)
            }
            Atom::Field {
                base,
                off,
                shift,
                mask,
                lo,
                hi,
            } => {
                let w = match base {
                    Base::Ip => self.ip_word(off.into()),
                    Base::Transp => self.transp_word(off.into()),
                };
                matches!(w, Some(w) if { let v = (w >> shift) & mask; lo <= v && v <= hi })
            }
            Atom::Ether { src, addr } => match self.ether {
                Some(e) if e.len() >= 14 => {
                    let at = if src { 6 } else { 0 };
                    e[at..at + 6] == addr
                }
                _ => false,
            },
        }
    }

    /// Evaluate an expression.
    pub fn eval(&self, e: &Expr) -> bool {
        match e {
            Expr::True => true,
            Expr::False => false,
            Expr::Atom(a) => self.atom(a),
            Expr::Not(e) => !self.eval(e),
            Expr::And(v) => v.iter().all(|e| self.eval(e)),
            Expr::Or(v) => v.iter().any(|e| self.eval(e)),
            Expr::Cond(c, a, b) => {
                if self.eval(c) {
                    self.eval(a)
                } else {
                    self.eval(b)
                }
            }
        }
    }

    /// The tree key of the packet: its value in each dimension, or `None`
    /// if the packet lacks the fixed IP header or is a first fragment whose
    /// transport word is missing (such packets take the linear path).
    #[inline]
    pub fn key(&self) -> Option<[u32; NDIMS]> {
        let ip = self.ip.get(..20)?;
        let w = |o: usize| u32::from_be_bytes([ip[o], ip[o + 1], ip[o + 2], ip[o + 3]]);
        let (mut sp, mut dp) = (NO_PORT, NO_PORT);
        if w(4) & 0x1FFF == 0 {
            let t = self.transp_word(0)?;
            sp = t >> 16;
            dp = t & 0xFFFF;
        }
        Some([w(12), w(16), (w(8) >> 16) & 0xFF, sp, dp])
    }
}

/// First-match linear matcher: the reference the compiled classifier must
/// agree with. Returns the index of the first rule whose expression holds.
pub fn linear_match(rules: &[Expr], p: &PacketView<'_>) -> Option<usize> {
    rules.iter().position(|e| p.eval(e))
}

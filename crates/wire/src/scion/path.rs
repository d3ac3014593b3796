//! SCION path types (§4, §5, §11): the standard path with its PathMeta,
//! info fields and hop fields, the one-hop path, the empty path and EPIC-HP.
//!
//! [`StandardPath`] views the path bytes of a SCION header (from
//! PathMeta on). `check_len` decodes the segment lengths as the reference
//! library does (a zero SegLen followed by a non-zero one, or more than 64
//! hops, is [`Error::Malformed`]) and requires at least
//! `4 + 8 * NumINF + 12 * NumHops` bytes; surplus bytes are ignored.

use crate::bytes::{read_u16, read_u32, write_u16, write_u32};
use crate::{Error, Result};

/// Length of PathMeta.
pub const META_LEN: usize = 4;
/// Length of an info field.
pub const INFO_LEN: usize = 8;
/// Length of a hop field.
pub const HOP_LEN: usize = 12;
/// Most hop fields of a standard path.
pub const MAX_HOPS: usize = 64;
/// Length of a one-hop path.
pub const ONEHOP_LEN: usize = INFO_LEN + 2 * HOP_LEN;
/// Length of the EPIC-HP fields before the standard path.
pub const EPIC_PREFIX_LEN: usize = 16;

mod field {
    use crate::field::Field;

    pub const INFO_FLAGS: usize = 0;
    pub const INFO_SEG_ID: Field = 2..4;
    pub const INFO_TIMESTAMP: Field = 4..8;
    pub const HOP_FLAGS: usize = 0;
    pub const HOP_EXP: usize = 1;
    pub const HOP_IN: Field = 2..4;
    pub const HOP_EG: Field = 4..6;
    pub const HOP_MAC: Field = 6..12;
    pub const EPIC_PKT_ID: Field = 0..8;
    pub const EPIC_PHVF: Field = 8..12;
    pub const EPIC_LHVF: Field = 12..16;
}

/// Info field flag: construction direction.
pub const INFO_CONS_DIR: u8 = 0x01;
/// Info field flag: peering.
pub const INFO_PEER: u8 = 0x02;
/// Hop field flag: egress router alert (construction direction).
pub const HOP_EGRESS_ALERT: u8 = 0x01;
/// Hop field flag: ingress router alert (construction direction).
pub const HOP_INGRESS_ALERT: u8 = 0x02;

/// PathMeta decoded from its 32-bit word (§5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Meta {
    /// CurrINF.
    pub curr_inf: u8,
    /// CurrHF.
    pub curr_hf: u8,
    /// Seg0Len, Seg1Len, Seg2Len.
    pub seg_len: [u8; 3],
}

impl Meta {
    /// Decodes a PathMeta word (RSV ignored).
    #[inline]
    pub const fn from_word(w: u32) -> Meta {
        Meta {
            curr_inf: (w >> 30) as u8,
            curr_hf: ((w >> 24) & 0x3f) as u8,
            seg_len: [
                ((w >> 12) & 0x3f) as u8,
                ((w >> 6) & 0x3f) as u8,
                (w & 0x3f) as u8,
            ],
        }
    }
    /// Encodes the word (RSV zero).
    #[inline]
    pub const fn to_word(&self) -> u32 {
        (self.curr_inf as u32 & 3) << 30
            | (self.curr_hf as u32 & 0x3f) << 24
            | (self.seg_len[0] as u32 & 0x3f) << 12
            | (self.seg_len[1] as u32 & 0x3f) << 6
            | (self.seg_len[2] as u32 & 0x3f)
    }
    /// NumINF, or [`Error::Malformed`] for a zero SegLen before a non-zero one.
    #[inline]
    pub fn num_inf(&self) -> Result<usize> {
        match self.seg_len {
            [0, 0, 0] => Ok(0),
            [_, 0, 0] => Ok(1),
            [s0, _, 0] if s0 != 0 => Ok(2),
            [s0, s1, _] if s0 != 0 && s1 != 0 => Ok(3),
            _ => Err(Error::Malformed),
        }
    }
    /// NumHops.
    #[inline]
    pub const fn num_hops(&self) -> usize {
        self.seg_len[0] as usize + self.seg_len[1] as usize + self.seg_len[2] as usize
    }
    /// Segment (info field index) of hop `j`.
    #[inline]
    pub const fn segment_of(&self, j: usize) -> usize {
        let s0 = self.seg_len[0] as usize;
        let s1 = self.seg_len[1] as usize;
        if j < s0 {
            0
        } else if j < s0 + s1 {
            1
        } else {
            2
        }
    }
    /// Path length for these segment lengths (`num_inf` must be valid).
    #[inline]
    pub fn path_len(&self) -> Result<usize> {
        Ok(META_LEN + INFO_LEN * self.num_inf()? + HOP_LEN * self.num_hops())
    }
}

/// A read/write view of an info field (8 bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InfoField<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> InfoField<T> {
    /// Wraps a buffer without checking its length.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> InfoField<T> {
        InfoField { buffer }
    }
    /// Wraps a buffer of at least 8 bytes.
    pub fn new_checked(buffer: T) -> Result<InfoField<T>> {
        if buffer.as_ref().len() < INFO_LEN {
            return Err(Error::Truncated);
        }
        Ok(InfoField { buffer })
    }
    /// Flags byte.
    #[inline]
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::INFO_FLAGS]
    }
    /// ConsDir flag.
    #[inline]
    pub fn cons_dir(&self) -> bool {
        self.flags() & INFO_CONS_DIR != 0
    }
    /// Peer flag.
    #[inline]
    pub fn peer(&self) -> bool {
        self.flags() & INFO_PEER != 0
    }
    /// SegID.
    #[inline]
    pub fn seg_id(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::INFO_SEG_ID])
    }
    /// Timestamp (Unix seconds).
    #[inline]
    pub fn timestamp(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::INFO_TIMESTAMP])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> InfoField<T> {
    /// Sets the flags byte (and clears RSV).
    #[inline]
    pub fn set_flags(&mut self, v: u8) {
        self.buffer.as_mut()[field::INFO_FLAGS] = v;
        self.buffer.as_mut()[1] = 0;
    }
    /// Sets SegID.
    #[inline]
    pub fn set_seg_id(&mut self, v: u16) {
        write_u16(&mut self.buffer.as_mut()[field::INFO_SEG_ID], v);
    }
    /// Sets the timestamp.
    #[inline]
    pub fn set_timestamp(&mut self, v: u32) {
        write_u32(&mut self.buffer.as_mut()[field::INFO_TIMESTAMP], v);
    }
}

/// A decoded info field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct InfoRepr {
    /// ConsDir.
    pub cons_dir: bool,
    /// Peer.
    pub peer: bool,
    /// SegID.
    pub seg_id: u16,
    /// Timestamp.
    pub timestamp: u32,
}

impl InfoRepr {
    /// Decodes an info field.
    pub fn parse<T: AsRef<[u8]>>(f: &InfoField<T>) -> InfoRepr {
        InfoRepr {
            cons_dir: f.cons_dir(),
            peer: f.peer(),
            seg_id: f.seg_id(),
            timestamp: f.timestamp(),
        }
    }
    /// Writes the 8 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, f: &mut InfoField<T>) {
        let flags =
            if self.cons_dir { INFO_CONS_DIR } else { 0 } | if self.peer { INFO_PEER } else { 0 };
        f.set_flags(flags);
        f.set_seg_id(self.seg_id);
        f.set_timestamp(self.timestamp);
    }
}

/// A read/write view of a hop field (12 bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HopField<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> HopField<T> {
    /// Wraps a buffer without checking its length.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> HopField<T> {
        HopField { buffer }
    }
    /// Wraps a buffer of at least 12 bytes.
    pub fn new_checked(buffer: T) -> Result<HopField<T>> {
        if buffer.as_ref().len() < HOP_LEN {
            return Err(Error::Truncated);
        }
        Ok(HopField { buffer })
    }
    /// Flags byte.
    #[inline]
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_FLAGS]
    }
    /// ExpTime.
    #[inline]
    pub fn exp_time(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_EXP]
    }
    /// ConsIngress.
    #[inline]
    pub fn cons_ingress(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::HOP_IN])
    }
    /// ConsEgress.
    #[inline]
    pub fn cons_egress(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::HOP_EG])
    }
    /// The 6-byte MAC.
    #[inline]
    pub fn mac(&self) -> [u8; 6] {
        let mut m = [0u8; 6];
        m.copy_from_slice(&self.buffer.as_ref()[field::HOP_MAC]);
        m
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> HopField<T> {
    /// Sets the flags byte.
    #[inline]
    pub fn set_flags(&mut self, v: u8) {
        self.buffer.as_mut()[field::HOP_FLAGS] = v;
    }
    /// Sets ExpTime.
    #[inline]
    pub fn set_exp_time(&mut self, v: u8) {
        self.buffer.as_mut()[field::HOP_EXP] = v;
    }
    /// Sets ConsIngress.
    #[inline]
    pub fn set_cons_ingress(&mut self, v: u16) {
        write_u16(&mut self.buffer.as_mut()[field::HOP_IN], v);
    }
    /// Sets ConsEgress.
    #[inline]
    pub fn set_cons_egress(&mut self, v: u16) {
        write_u16(&mut self.buffer.as_mut()[field::HOP_EG], v);
    }
    /// Sets the MAC.
    #[inline]
    pub fn set_mac(&mut self, m: [u8; 6]) {
        self.buffer.as_mut()[field::HOP_MAC].copy_from_slice(&m);
    }
}

/// A decoded hop field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct HopRepr {
    /// Egress router alert (construction direction).
    pub egress_alert: bool,
    /// Ingress router alert (construction direction).
    pub ingress_alert: bool,
    /// ExpTime.
    pub exp_time: u8,
    /// ConsIngress.
    pub cons_ingress: u16,
    /// ConsEgress.
    pub cons_egress: u16,
    /// MAC.
    pub mac: [u8; 6],
}

impl HopRepr {
    /// Decodes a hop field.
    pub fn parse<T: AsRef<[u8]>>(h: &HopField<T>) -> HopRepr {
        HopRepr {
            egress_alert: h.flags() & HOP_EGRESS_ALERT != 0,
            ingress_alert: h.flags() & HOP_INGRESS_ALERT != 0,
            exp_time: h.exp_time(),
            cons_ingress: h.cons_ingress(),
            cons_egress: h.cons_egress(),
            mac: h.mac(),
        }
    }
    /// Writes the 12 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, h: &mut HopField<T>) {
        let f = if self.egress_alert {
            HOP_EGRESS_ALERT
        } else {
            0
        } | if self.ingress_alert {
            HOP_INGRESS_ALERT
        } else {
            0
        };
        h.set_flags(f);
        h.set_exp_time(self.exp_time);
        h.set_cons_ingress(self.cons_ingress);
        h.set_cons_egress(self.cons_egress);
        h.set_mac(self.mac);
    }
}

/// A read/write view of a standard SCION path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandardPath<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> StandardPath<T> {
    /// Wraps a buffer without checking it.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> StandardPath<T> {
        StandardPath { buffer }
    }
    /// Wraps a buffer after [`check_len`](Self::check_len).
    #[inline]
    pub fn new_checked(buffer: T) -> Result<StandardPath<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }
    /// See the module documentation.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        if b.len() < META_LEN {
            return Err(Error::Truncated);
        }
        let m = self.meta();
        if m.num_hops() > MAX_HOPS {
            return Err(Error::Malformed);
        }
        if b.len() < m.path_len()? {
            return Err(Error::Truncated);
        }
        Ok(())
    }
    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// The PathMeta word.
    #[inline]
    pub fn meta_word(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[..4])
    }
    /// PathMeta.
    #[inline]
    pub fn meta(&self) -> Meta {
        Meta::from_word(self.meta_word())
    }
    /// NumINF (valid after `check_len`).
    #[inline]
    pub fn num_inf(&self) -> usize {
        self.meta().num_inf().unwrap_or(0)
    }
    /// NumHops.
    #[inline]
    pub fn num_hops(&self) -> usize {
        self.meta().num_hops()
    }
    /// Segment of hop `j`.
    #[inline]
    pub fn segment_of(&self, j: usize) -> usize {
        self.meta().segment_of(j)
    }
    /// Byte offset of info field `i` in the path.
    #[inline]
    pub fn info_offset(&self, i: usize) -> usize {
        META_LEN + INFO_LEN * i
    }
    /// Byte offset of hop field `j` in the path.
    #[inline]
    pub fn hop_offset(&self, j: usize) -> usize {
        META_LEN + INFO_LEN * self.num_inf() + HOP_LEN * j
    }
    /// Info field `i` (panics if `i >= num_inf()` on a checked view).
    #[inline]
    pub fn info(&self, i: usize) -> InfoField<&[u8]> {
        let o = self.info_offset(i);
        InfoField::new_unchecked(&self.buffer.as_ref()[o..o + INFO_LEN])
    }
    /// Hop field `j` (panics if `j >= num_hops()` on a checked view).
    #[inline]
    pub fn hop(&self, j: usize) -> HopField<&[u8]> {
        let o = self.hop_offset(j);
        HopField::new_unchecked(&self.buffer.as_ref()[o..o + HOP_LEN])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> StandardPath<T> {
    /// Writes PathMeta.
    #[inline]
    pub fn set_meta(&mut self, m: Meta) {
        write_u32(&mut self.buffer.as_mut()[..4], m.to_word());
    }
    /// Mutable info field `i`.
    #[inline]
    pub fn info_mut(&mut self, i: usize) -> InfoField<&mut [u8]> {
        let o = self.info_offset(i);
        InfoField::new_unchecked(&mut self.buffer.as_mut()[o..o + INFO_LEN])
    }
    /// Mutable hop field `j`.
    #[inline]
    pub fn hop_mut(&mut self, j: usize) -> HopField<&mut [u8]> {
        let o = self.hop_offset(j);
        HopField::new_unchecked(&mut self.buffer.as_mut()[o..o + HOP_LEN])
    }
    /// IncPath (§5.1): `CurrHF += 1`, `CurrINF = segment(CurrHF)`.
    /// [`Error::Malformed`] when already at the last hop.
    pub fn inc_path(&mut self) -> Result<()> {
        let mut m = self.meta();
        if usize::from(m.curr_hf) + 1 >= m.num_hops() {
            return Err(Error::Malformed);
        }
        m.curr_hf += 1;
        m.curr_inf = m.segment_of(usize::from(m.curr_hf)) as u8;
        self.set_meta(m);
        Ok(())
    }
}

/// A decoded standard path (fixed arrays, no allocation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StandardRepr {
    /// PathMeta.
    pub meta: Meta,
    /// Info fields (first `meta.num_inf()` used).
    pub infos: [InfoRepr; 3],
    /// Hop fields (first `meta.num_hops()` used).
    pub hops: [HopRepr; MAX_HOPS],
}

impl StandardRepr {
    /// Decodes a standard path (errors of [`StandardPath::check_len`]).
    pub fn parse<T: AsRef<[u8]>>(p: &StandardPath<T>) -> Result<StandardRepr> {
        p.check_len()?;
        let meta = p.meta();
        let mut r = StandardRepr {
            meta,
            infos: [InfoRepr::default(); 3],
            hops: [HopRepr::default(); MAX_HOPS],
        };
        for i in 0..p.num_inf() {
            r.infos[i] = InfoRepr::parse(&p.info(i));
        }
        for j in 0..p.num_hops() {
            r.hops[j] = HopRepr::parse(&p.hop(j));
        }
        Ok(r)
    }
    /// Bytes [`emit`](Self::emit) writes.
    pub fn buffer_len(&self) -> Result<usize> {
        self.meta.path_len()
    }
    /// Writes the path.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut StandardPath<T>) -> Result<()> {
        let len = self.buffer_len()?;
        if self.meta.num_hops() > MAX_HOPS {
            return Err(Error::Malformed);
        }
        if p.buffer.as_ref().len() < len {
            return Err(Error::Truncated);
        }
        p.set_meta(self.meta);
        for i in 0..self.meta.num_inf()? {
            self.infos[i].emit(&mut p.info_mut(i));
        }
        for j in 0..self.meta.num_hops() {
            self.hops[j].emit(&mut p.hop_mut(j));
        }
        Ok(())
    }
    /// The reversed path as the reference `Reverse` builds it (§10 step 3):
    /// info fields and segment lengths in reverse order with ConsDir
    /// toggled, hops reversed, `CurrINF' = NumINF-1-CurrINF`,
    /// `CurrHF' = NumHops-1-CurrHF`.
    pub fn reversed(&self) -> Result<StandardRepr> {
        let n_inf = self.meta.num_inf()?;
        let n_hops = self.meta.num_hops();
        if n_inf == 0
            || usize::from(self.meta.curr_inf) >= n_inf
            || usize::from(self.meta.curr_hf) >= n_hops
        {
            return Err(Error::Malformed);
        }
        let mut r = *self;
        for i in 0..n_inf {
            r.infos[i] = self.infos[n_inf - 1 - i];
            r.infos[i].cons_dir = !r.infos[i].cons_dir;
            r.meta.seg_len[i] = self.meta.seg_len[n_inf - 1 - i];
        }
        for j in 0..n_hops {
            r.hops[j] = self.hops[n_hops - 1 - j];
        }
        r.meta.curr_inf = (n_inf - 1 - usize::from(self.meta.curr_inf)) as u8;
        r.meta.curr_hf = (n_hops - 1 - usize::from(self.meta.curr_hf)) as u8;
        Ok(r)
    }
}

/// A read/write view of a one-hop path (32 bytes, §11.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OneHopPath<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> OneHopPath<T> {
    /// Wraps a buffer of at least 32 bytes.
    pub fn new_checked(buffer: T) -> Result<OneHopPath<T>> {
        if buffer.as_ref().len() < ONEHOP_LEN {
            return Err(Error::Truncated);
        }
        Ok(OneHopPath { buffer })
    }
    /// The info field.
    pub fn info(&self) -> InfoField<&[u8]> {
        InfoField::new_unchecked(&self.buffer.as_ref()[..INFO_LEN])
    }
    /// The first hop field.
    pub fn first_hop(&self) -> HopField<&[u8]> {
        HopField::new_unchecked(&self.buffer.as_ref()[INFO_LEN..INFO_LEN + HOP_LEN])
    }
    /// The second hop field.
    pub fn second_hop(&self) -> HopField<&[u8]> {
        HopField::new_unchecked(&self.buffer.as_ref()[INFO_LEN + HOP_LEN..ONEHOP_LEN])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> OneHopPath<T> {
    /// Mutable info field.
    pub fn info_mut(&mut self) -> InfoField<&mut [u8]> {
        InfoField::new_unchecked(&mut self.buffer.as_mut()[..INFO_LEN])
    }
    /// Mutable first hop field.
    pub fn first_hop_mut(&mut self) -> HopField<&mut [u8]> {
        HopField::new_unchecked(&mut self.buffer.as_mut()[INFO_LEN..INFO_LEN + HOP_LEN])
    }
    /// Mutable second hop field.
    pub fn second_hop_mut(&mut self) -> HopField<&mut [u8]> {
        HopField::new_unchecked(&mut self.buffer.as_mut()[INFO_LEN + HOP_LEN..ONEHOP_LEN])
    }
}

/// A decoded one-hop path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct OneHopRepr {
    /// Info field.
    pub info: InfoRepr,
    /// First hop.
    pub first: HopRepr,
    /// Second hop.
    pub second: HopRepr,
}

impl OneHopRepr {
    /// Decodes a one-hop path.
    pub fn parse<T: AsRef<[u8]>>(p: &OneHopPath<T>) -> OneHopRepr {
        OneHopRepr {
            info: InfoRepr::parse(&p.info()),
            first: HopRepr::parse(&p.first_hop()),
            second: HopRepr::parse(&p.second_hop()),
        }
    }
    /// Bytes [`emit`](Self::emit) writes.
    pub const fn buffer_len(&self) -> usize {
        ONEHOP_LEN
    }
    /// Writes the 32 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut OneHopPath<T>) {
        self.info.emit(&mut p.info_mut());
        self.first.emit(&mut p.first_hop_mut());
        self.second.emit(&mut p.second_hop_mut());
    }
}

/// A view of an EPIC-HP path (§11.4): PktID, PHVF, LHVF, standard path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpicPath<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EpicPath<T> {
    /// Wraps a buffer whose EPIC fields and standard path are complete.
    pub fn new_checked(buffer: T) -> Result<EpicPath<T>> {
        let b = buffer.as_ref();
        if b.len() < EPIC_PREFIX_LEN {
            return Err(Error::Truncated);
        }
        StandardPath::new_checked(&b[EPIC_PREFIX_LEN..])?;
        Ok(EpicPath { buffer })
    }
    /// PktID (EpicTS ‖ Counter).
    pub fn pkt_id(&self) -> u64 {
        let b = &self.buffer.as_ref()[field::EPIC_PKT_ID];
        u64::from(read_u32(b)) << 32 | u64::from(read_u32(&b[4..]))
    }
    /// Penultimate-hop validation field.
    pub fn phvf(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::EPIC_PHVF])
    }
    /// Last-hop validation field.
    pub fn lhvf(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::EPIC_LHVF])
    }
    /// The embedded standard path.
    pub fn standard(&self) -> StandardPath<&[u8]> {
        StandardPath::new_unchecked(&self.buffer.as_ref()[EPIC_PREFIX_LEN..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scion::tests::{example, hex};

    #[test]
    fn example_path() {
        let v = example();
        let p = StandardPath::new_checked(&v[36..84]).unwrap();
        assert_eq!(
            p.meta(),
            Meta {
                curr_inf: 0,
                curr_hf: 1,
                seg_len: [3, 0, 0]
            }
        );
        assert_eq!((p.num_inf(), p.num_hops()), (1, 3));
        let i = p.info(0);
        assert!(!i.cons_dir() && !i.peer());
        assert_eq!((i.seg_id(), i.timestamp()), (0xe374, 0x6b01f32e));
        let h = p.hop(1);
        assert_eq!(
            (h.flags(), h.exp_time(), h.cons_ingress(), h.cons_egress()),
            (0, 63, 1, 2)
        );
        assert_eq!(h.mac(), [0xf2, 0x65, 0x9a, 0xab, 0x41, 0xda]);
        assert_eq!(p.hop_offset(1), 24);
        let r = StandardRepr::parse(&p).unwrap();
        let mut out = [0u8; 48];
        r.emit(&mut StandardPath::new_unchecked(&mut out[..]))
            .unwrap();
        assert_eq!(&out[..], &v[36..84]);
    }

    #[test]
    fn inc_path_and_bounds() {
        let mut b = hex("01003000 00000000 00000000");
        b.resize(4 + 8 + 36, 0);
        let mut p = StandardPath::new_checked(&mut b[..]).unwrap();
        p.inc_path().unwrap();
        assert_eq!(p.meta_word(), 0x0200_3000);
        assert_eq!(p.inc_path(), Err(Error::Malformed));
        // Two segments: IncPath across the boundary moves CurrINF.
        let mut b = [0u8; 4 + 16 + 36];
        b[..4].copy_from_slice(
            &Meta {
                curr_inf: 0,
                curr_hf: 0,
                seg_len: [1, 2, 0],
            }
            .to_word()
            .to_be_bytes(),
        );
        let mut p = StandardPath::new_checked(&mut b[..]).unwrap();
        p.inc_path().unwrap();
        assert_eq!(
            p.meta(),
            Meta {
                curr_inf: 1,
                curr_hf: 1,
                seg_len: [1, 2, 0]
            }
        );
    }

    #[test]
    fn meta_errors() {
        let gap = Meta {
            curr_inf: 0,
            curr_hf: 0,
            seg_len: [0, 2, 0],
        };
        assert_eq!(gap.num_inf(), Err(Error::Malformed));
        let b = gap.to_word().to_be_bytes();
        assert_eq!(
            StandardPath::new_checked(&b[..]).err(),
            Some(Error::Malformed)
        );
        let big = Meta {
            curr_inf: 0,
            curr_hf: 0,
            seg_len: [63, 2, 0],
        };
        let mut v = vec![0u8; 2000];
        v[..4].copy_from_slice(&big.to_word().to_be_bytes());
        assert_eq!(
            StandardPath::new_checked(&v[..]).err(),
            Some(Error::Malformed)
        );
        let one = Meta {
            curr_inf: 0,
            curr_hf: 0,
            seg_len: [1, 0, 0],
        };
        let mut v = vec![0u8; 23];
        v[..4].copy_from_slice(&one.to_word().to_be_bytes());
        assert_eq!(
            StandardPath::new_checked(&v[..]).err(),
            Some(Error::Truncated)
        );
        v.push(0);
        assert!(StandardPath::new_checked(&v[..]).is_ok());
    }

    #[test]
    fn reverse() {
        let mut r = StandardRepr {
            meta: Meta {
                curr_inf: 1,
                curr_hf: 3,
                seg_len: [2, 3, 0],
            },
            infos: [InfoRepr::default(); 3],
            hops: [HopRepr::default(); MAX_HOPS],
        };
        r.infos[0].seg_id = 1;
        r.infos[1].seg_id = 2;
        r.infos[1].cons_dir = true;
        for j in 0..5 {
            r.hops[j].cons_ingress = j as u16;
        }
        let v = r.reversed().unwrap();
        assert_eq!(
            v.meta,
            Meta {
                curr_inf: 0,
                curr_hf: 1,
                seg_len: [3, 2, 0]
            }
        );
        assert_eq!((v.infos[0].seg_id, v.infos[0].cons_dir), (2, false));
        assert_eq!((v.infos[1].seg_id, v.infos[1].cons_dir), (1, true));
        assert_eq!(v.hops[0].cons_ingress, 4);
        assert_eq!(v.reversed().unwrap(), r.normalised());
    }

    impl StandardRepr {
        fn normalised(mut self) -> Self {
            self.infos[2] = InfoRepr::default();
            self
        }
    }

    #[test]
    fn onehop_round_trip() {
        let bytes =
            hex("01000000 6553f100 00 3f 0000 0005 010203040506 00 00 0000 0000 000000000000");
        let p = OneHopPath::new_checked(&bytes[..]).unwrap();
        let r = OneHopRepr::parse(&p);
        assert!(r.info.cons_dir);
        assert_eq!(r.first.cons_egress, 5);
        let mut out = [0u8; 32];
        r.emit(&mut OneHopPath::new_checked(&mut out[..]).unwrap());
        assert_eq!(&out[..], &bytes[..]);
        assert!(OneHopPath::new_checked(&bytes[..31]).is_err());
    }

    #[test]
    fn epic_fields() {
        let mut b = hex("00000001 00000002 aabbccdd 11223344");
        let mut ex = example();
        b.extend_from_slice(&ex[36..84]);
        let p = EpicPath::new_checked(&b[..]).unwrap();
        assert_eq!(p.pkt_id(), 0x1_0000_0002);
        assert_eq!((p.phvf(), p.lhvf()), (0xaabbccdd, 0x11223344));
        assert_eq!(p.standard().num_hops(), 3);
        ex.truncate(80);
        assert!(EpicPath::new_checked(&b[..60]).is_err());
    }
}

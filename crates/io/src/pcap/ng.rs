//! pcapng block parsing (section headers, interfaces, packet blocks).

use super::error::RecordError;
use super::link::LinkType;
use super::reader::{ReadStats, Record, MAX_CAPLEN};

const BT_SHB: u32 = 0x0a0d_0d0a;
const BT_IDB: u32 = 1;
const BT_PB: u32 = 2;
const BT_SPB: u32 = 3;
const BT_EPB: u32 = 6;
const BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;
const OPT_END: u16 = 0;
const OPT_IF_TSRESOL: u16 = 9;
const OPT_IF_TSOFFSET: u16 = 14;

/// Conversion from an interface's timestamp units to nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TsConv {
    /// 10^-n s with n <= 9: multiply.
    Mul(u64),
    /// 10^-n s with 9 < n <= 38: divide.
    Div(u128),
    /// 2^-n s: multiply by 10^9, shift right by n.
    Shift(u32),
    /// Units so fine that every representable timestamp is below 1 ns.
    Zero,
}

impl TsConv {
    fn from_tsresol(r: u8) -> TsConv {
        if r & 0x80 != 0 {
            let n = u32::from(r & 0x7f);
            // 2^-n with n >= 128 shifts everything out of a u128.
            if n >= 128 {
                TsConv::Zero
            } else {
                TsConv::Shift(n)
            }
        } else if r <= 9 {
            TsConv::Mul(10u64.pow(9 - u32::from(r)))
        } else if r <= 38 {
            TsConv::Div(10u128.pow(u32::from(r) - 9))
        } else {
            TsConv::Zero
        }
    }

    fn to_ns(self, units: u64) -> i128 {
        let u = u128::from(units);
        let ns = match self {
            TsConv::Mul(m) => u * u128::from(m),
            TsConv::Div(d) => u / d,
            TsConv::Shift(n) => (u * 1_000_000_000) >> n,
            TsConv::Zero => 0,
        };
        // At most 2^64 * 10^9 < 2^94: fits an i128.
        ns as i128
    }
}

/// One interface of the current section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Iface {
    pub(super) link_type: LinkType,
    /// 0 means no limit.
    pub(super) snaplen: u32,
    conv: TsConv,
    /// `if_tsoffset` in seconds.
    offset_s: i64,
}

impl Iface {
    /// Whether the timestamp unit is finer than a microsecond.
    pub(super) fn finer_than_microsecond(&self) -> bool {
        match self.conv {
            TsConv::Mul(m) => m < 1000,
            TsConv::Shift(n) => n >= 20,
            TsConv::Div(_) | TsConv::Zero => true,
        }
    }

    fn ts_ns(&self, units: u64) -> u64 {
        let ns = self.conv.to_ns(units) + i128::from(self.offset_s) * 1_000_000_000;
        ns.clamp(0, i128::from(u64::MAX)) as u64
    }
}

/// Reading state: the current section's byte order and interfaces.
#[derive(Debug, Default)]
pub(super) struct NgState {
    big_endian: bool,
    ifaces: Vec<Iface>,
}

impl NgState {
    pub(super) fn new() -> Self {
        NgState::default()
    }
}

/// A block whose framing has been checked.
struct Block<'a> {
    ty: u32,
    /// Between the length word and the trailing length.
    body: &'a [u8],
    total: usize,
}

enum BlockErr {
    Truncated { needed: usize, available: usize },
    Bad(&'static str),
}

fn rd32(b: &[u8], at: usize, big_endian: bool) -> Option<u32> {
    let w = *b.get(at..)?.first_chunk::<4>()?;
    Some(if big_endian {
        u32::from_be_bytes(w)
    } else {
        u32::from_le_bytes(w)
    })
}

fn rd16(b: &[u8], at: usize, big_endian: bool) -> Option<u16> {
    let w = *b.get(at..)?.first_chunk::<2>()?;
    Some(if big_endian {
        u16::from_be_bytes(w)
    } else {
        u16::from_le_bytes(w)
    })
}

/// Reads and checks the framing of the block at `p`. A section header block sets the
/// byte order for itself and what follows. `Ok(None)` at the end of the data.
fn read_block<'a>(
    data: &'a [u8],
    p: usize,
    big_endian: &mut bool,
) -> Result<Option<Block<'a>>, BlockErr> {
    let rest = data.get(p..).unwrap_or(&[]);
    if rest.is_empty() {
        return Ok(None);
    }
    let truncated = |needed: usize| BlockErr::Truncated {
        needed,
        available: rest.len(),
    };
    let ty_bytes = *rest.first_chunk::<4>().ok_or(truncated(12))?;
    // The section header type is a byte palindrome: readable before the byte order is known.
    let ty = u32::from_le_bytes(ty_bytes);
    if ty == BT_SHB {
        let bom = *rest
            .get(8..)
            .and_then(|s| s.first_chunk::<4>())
            .ok_or(truncated(12))?;
        *big_endian = if u32::from_le_bytes(bom) == BYTE_ORDER_MAGIC {
            false
        } else if u32::from_be_bytes(bom) == BYTE_ORDER_MAGIC {
            true
        } else {
            return Err(BlockErr::Bad("bad byte-order magic in section header"));
        };
    } else if rest.len() < 12 {
        return Err(truncated(12));
    }
    let big = *big_endian;
    let ty = rd32(rest, 0, big).ok_or(truncated(12))?;
    let total = rd32(rest, 4, big).ok_or(truncated(12))? as usize;
    if total < 12 || total & 3 != 0 {
        return Err(BlockErr::Bad(
            "block length under 12 or not a multiple of 4",
        ));
    }
    if ty == BT_SHB && total < 28 {
        return Err(BlockErr::Bad("section header block shorter than 28 bytes"));
    }
    if total > rest.len() {
        return Err(truncated(total));
    }
    if rd32(rest, total - 4, big) != Some(total as u32) {
        return Err(BlockErr::Bad("block length differs from its trailing copy"));
    }
    Ok(Some(Block {
        ty,
        body: &rest[8..total - 4],
        total,
    }))
}

/// Parses an interface description block body.
fn parse_idb(body: &[u8], big_endian: bool) -> Result<Iface, &'static str> {
    const SHORT: &str = "interface description block shorter than 16 bytes";
    let link = rd16(body, 0, big_endian).ok_or(SHORT)?;
    let snaplen = rd32(body, 4, big_endian).ok_or(SHORT)?;
    let mut iface = Iface {
        link_type: LinkType(u32::from(link)),
        snaplen,
        conv: TsConv::Mul(1000),
        offset_s: 0,
    };
    let mut at = 8;
    while at < body.len() {
        const OVERRUN: &str = "interface option overruns its block";
        let code = rd16(body, at, big_endian).ok_or(OVERRUN)?;
        let len = usize::from(rd16(body, at + 2, big_endian).ok_or(OVERRUN)?);
        let value = body.get(at + 4..at + 4 + len).ok_or(OVERRUN)?;
        match code {
            OPT_END => break,
            OPT_IF_TSRESOL => {
                if let Some(&r) = value.first() {
                    iface.conv = TsConv::from_tsresol(r);
                }
            }
            OPT_IF_TSOFFSET => {
                if let Some(v) = value.first_chunk::<8>() {
                    iface.offset_s = if big_endian {
                        i64::from_be_bytes(*v)
                    } else {
                        i64::from_le_bytes(*v)
                    };
                }
            }
            _ => {}
        }
        at += 4 + len.div_ceil(4) * 4;
    }
    Ok(iface)
}

/// Walks the blocks from the start until the first interface description; used when
/// opening to learn the file's link type. Errors carry the block offset and reason.
pub(super) fn first_interface(data: &[u8]) -> Result<Iface, (usize, &'static str)> {
    let mut big = false;
    let mut p = 0;
    let mut first = true;
    loop {
        let block = match read_block(data, p, &mut big) {
            Ok(Some(b)) => b,
            Ok(None) => return Err((p, "no interface description block")),
            Err(BlockErr::Truncated { .. }) => return Err((p, "truncated block")),
            Err(BlockErr::Bad(reason)) => return Err((p, reason)),
        };
        if first && block.ty != BT_SHB {
            return Err((p, "file does not start with a section header block"));
        }
        first = false;
        match block.ty {
            BT_IDB => return parse_idb(block.body, big).map_err(|r| (p, r)),
            BT_EPB | BT_SPB | BT_PB => {
                return Err((p, "packet block before any interface description block"))
            }
            _ => p += block.total,
        }
    }
}

/// The next record of a pcapng file; see `PcapReader::next_record`.
pub(super) fn next_record<'a>(
    st: &mut NgState,
    data: &'a [u8],
    pos: &mut usize,
    stats: &mut ReadStats,
) -> Option<Result<Record<'a>, RecordError>> {
    loop {
        let p = *pos;
        let block = match read_block(data, p, &mut st.big_endian) {
            Ok(Some(b)) => b,
            Ok(None) => return None,
            Err(BlockErr::Truncated { needed, available }) => {
                *pos = data.len();
                stats.truncated += 1;
                return Some(Err(RecordError::Truncated {
                    offset: p as u64,
                    needed: needed as u64,
                    available: available as u64,
                }));
            }
            Err(BlockErr::Bad(reason)) => return Some(Err(bad(data, pos, stats, reason))),
        };
        let big = st.big_endian;
        let body = block.body;
        // (interface id, timestamp units or None, captured length, original length, data offset)
        let (iface_id, units, caplen, orig_len, data_at) = match block.ty {
            BT_SHB => {
                if rd16(body, 4, big) != Some(1) {
                    return Some(Err(bad(data, pos, stats, "unsupported section version")));
                }
                st.ifaces.clear();
                *pos = p + block.total;
                continue;
            }
            BT_IDB => {
                match parse_idb(body, big) {
                    Ok(iface) => st.ifaces.push(iface),
                    Err(reason) => return Some(Err(bad(data, pos, stats, reason))),
                }
                *pos = p + block.total;
                continue;
            }
            BT_EPB => match epb_fields(body, big) {
                Some(f) => f,
                None => return Some(Err(bad(data, pos, stats, "packet block too short"))),
            },
            BT_PB => match pb_fields(body, big) {
                Some(f) => f,
                None => return Some(Err(bad(data, pos, stats, "packet block too short"))),
            },
            BT_SPB => {
                let Some(orig_len) = rd32(body, 0, big) else {
                    return Some(Err(bad(data, pos, stats, "packet block too short")));
                };
                let Some(iface) = st.ifaces.first() else {
                    return Some(Err(bad(data, pos, stats, "unknown interface id")));
                };
                let room = body.len() - 4;
                let mut caplen = (orig_len as usize).min(room);
                if iface.snaplen != 0 {
                    caplen = caplen.min(iface.snaplen as usize);
                }
                // `room` is below 2^32 as the block length is a u32.
                (0, None, caplen as u32, orig_len, 4)
            }
            _ => {
                stats.skipped_blocks += 1;
                *pos = p + block.total;
                continue;
            }
        };
        let Some(iface) = st.ifaces.get(iface_id as usize) else {
            return Some(Err(bad(data, pos, stats, "unknown interface id")));
        };
        if caplen > MAX_CAPLEN {
            *pos = data.len();
            stats.corrupt += 1;
            return Some(Err(RecordError::CaplenTooLarge {
                offset: p as u64,
                caplen,
            }));
        }
        let Some(captured) = body.get(data_at..data_at + caplen as usize) else {
            return Some(Err(bad(data, pos, stats, "packet data overruns its block")));
        };
        let keep = if caplen > orig_len {
            stats.caplen_over_len += 1;
            &captured[..orig_len as usize]
        } else {
            captured
        };
        if iface.snaplen != 0 && caplen > iface.snaplen {
            stats.over_snaplen += 1;
        }
        if caplen == 0 {
            stats.empty += 1;
        }
        stats.records += 1;
        *pos = p + block.total;
        return Some(Ok(Record {
            ts_ns: units.map_or(0, |u| iface.ts_ns(u)),
            orig_len,
            data: keep,
            link_type: iface.link_type,
        }));
    }
}

type PacketFields = (u32, Option<u64>, u32, u32, usize);

/// Enhanced packet block: interface, timestamp high/low, caplen, origlen, data at 20.
fn epb_fields(body: &[u8], big: bool) -> Option<PacketFields> {
    let iface = rd32(body, 0, big)?;
    let units = (u64::from(rd32(body, 4, big)?) << 32) | u64::from(rd32(body, 8, big)?);
    Some((
        iface,
        Some(units),
        rd32(body, 12, big)?,
        rd32(body, 16, big)?,
        20,
    ))
}

/// Obsolete packet block: 16-bit interface, 16-bit drop count, then as the EPB.
fn pb_fields(body: &[u8], big: bool) -> Option<PacketFields> {
    let iface = rd16(body, 0, big)?;
    let units = (u64::from(rd32(body, 4, big)?) << 32) | u64::from(rd32(body, 8, big)?);
    Some((
        u32::from(iface),
        Some(units),
        rd32(body, 12, big)?,
        rd32(body, 16, big)?,
        20,
    ))
}

/// Marks the reading as stopped by a corrupt block and builds its error.
fn bad(data: &[u8], pos: &mut usize, stats: &mut ReadStats, reason: &'static str) -> RecordError {
    let offset = *pos as u64;
    *pos = data.len();
    stats.corrupt += 1;
    RecordError::BadBlock { offset, reason }
}

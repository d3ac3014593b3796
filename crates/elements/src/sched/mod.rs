//! Scheduling elements for issue 4's library: a shallow priority queue
//! (pFabric), a per-class token-bucket rate limiter and NIC-compatible
//! receive-side scaling.

pub mod ratelimiter;
pub mod rss;
pub mod srprioqueue;

use linerate_runtime::anno::{anno_by_name, AnnoInfo};
use linerate_runtime::ElementClass;

/// The classes in this category.
pub const CLASSES: &[ElementClass] = &[ratelimiter::CLASS, rss::CLASS, srprioqueue::CLASS];

/// Which implementation an element runs (`IMPL fast` or `IMPL reference`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Impl {
    /// The optimised implementation (the default).
    Fast,
    /// The straightforward reference implementation.
    Reference,
}

/// Read the `IMPL` keyword (`fast`, the default, or `reference`).
fn read_impl(a: &mut linerate_args::Args) -> Impl {
    match a.read::<linerate_args::Word>("IMPL").map(|w| w.0) {
        None => Impl::Fast,
        Some(w) if w == "fast" => Impl::Fast,
        Some(w) if w == "reference" => Impl::Reference,
        Some(w) => {
            a.error(format!("IMPL: expected 'fast' or 'reference', not '{w}'"));
            Impl::Fast
        }
    }
}

/// Parse an annotation name (`PAINT`) or byte offset (`20`) of `size`
/// bytes (1, 2 or 4; `None`: the named annotation's size, capped at 4).
fn parse_anno(name: &str, size: Option<u32>) -> Result<AnnoInfo, String> {
    let mut a = anno_by_name(name).ok_or_else(|| format!("ANNO: unknown annotation '{name}'"))?;
    a.size = match size {
        Some(s @ (1 | 2 | 4)) => s as usize,
        Some(s) => return Err(format!("ANNO size must be 1, 2 or 4, not {s}")),
        None if a.size <= 4 => a.size,
        None => return Err(format!("ANNO: annotation '{name}' is larger than 4 bytes")),
    };
    if a.offset + a.size > linerate_runtime::anno::USER_ANNO_SIZE {
        return Err(format!("ANNO: annotation '{name}' out of range"));
    }
    Ok(a)
}

/// Read an annotation of `info.size` bytes (1, 2 or 4; host order).
#[inline]
fn anno_get(p: &linerate_runtime::Packet, info: AnnoInfo) -> u32 {
    let a = p.anno();
    match info.size {
        1 => a.u8(info.offset) as u32,
        2 => a.u16(info.offset) as u32,
        _ => a.u32(info.offset),
    }
}

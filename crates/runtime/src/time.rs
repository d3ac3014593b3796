//! The data-plane clock: the system clock, or simulated time (`--simtime`)
//! that advances only when the router is idle, straight to the next timer.

use std::cell::Cell;
use std::time::{SystemTime, UNIX_EPOCH};

/// Current system time in nanoseconds since the UNIX epoch.
#[inline]
pub fn system_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// A thread's clock.
#[derive(Debug, Clone, Copy)]
pub enum Clock {
    /// Wall-clock time.
    Real,
    /// Simulated time, in nanoseconds since the epoch.
    Sim(u64),
}

impl Clock {
    /// Now, in nanoseconds since the epoch.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        match self {
            Clock::Real => system_now_ns(),
            Clock::Sim(t) => *t,
        }
    }
}

/// The clock the scheduler reads once a round ([`Clock::Real`]'s recent
/// time): the CPU's time-stamp counter scaled to the system clock, which is
/// read again every millisecond to re-anchor it. On this project's Xeon
/// guest `rdtsc` costs 8.4 ns where `clock_gettime` costs 18.2 ns (the
/// vDSO fences and scales the same counter), once a batch: a quarter of a
/// Click-style run's per-packet time at a burst of 1. Hand-written because
/// the clock is read on the hot path and must be the system clock (packet
/// timestamps are wall time); a library counter gives a monotonic instant
/// of its own. Used only where the counter is invariant and the kernel
/// keeps its own time with it (`clocksource` `tsc`); elsewhere every read
/// is the system clock.
#[derive(Debug)]
pub(crate) struct RecentClock {
    tsc: bool,
    /// The first anchor (counter, ns): the rate is measured from it.
    first: (u64, u64),
    /// The latest anchor.
    anchor: Cell<(u64, u64)>,
    /// Nanoseconds a tick, 32.32 fixed point; 0 until a millisecond has passed.
    mult: Cell<u64>,
    /// Ticks between anchors (a millisecond's worth once `mult` is known).
    span: Cell<u64>,
    /// The last value returned: values never go back by less than a
    /// re-anchoring's worth (a larger step back is the system clock's own).
    last: Cell<u64>,
}

const ANCHOR_NS: u64 = 1_000_000;

impl RecentClock {
    pub(crate) fn new() -> RecentClock {
        let tsc = tsc_usable();
        let first = if tsc {
            (0..8)
                .find_map(|_| anchor_pair())
                .unwrap_or_else(|| (rdtsc(), system_now_ns()))
        } else {
            (0, system_now_ns())
        };
        RecentClock {
            tsc,
            first,
            anchor: Cell::new(first),
            mult: Cell::new(0),
            span: Cell::new(0),
            last: Cell::new(0),
        }
    }

    /// Now, in nanoseconds since the epoch, to within a few microseconds.
    #[inline]
    pub(crate) fn now_ns(&self) -> u64 {
        if !self.tsc {
            return system_now_ns();
        }
        let t = rdtsc();
        let (ta, na) = self.anchor.get();
        let d = t.wrapping_sub(ta);
        if d >= self.span.get() {
            return self.reanchor();
        }
        // d < span: the scaled value is under a millisecond.
        self.monotone(na + ((u128::from(d) * u128::from(self.mult.get())) >> 32) as u64)
    }

    #[cold]
    fn reanchor(&self) -> u64 {
        let Some((t, ns)) = anchor_pair() else {
            // Interrupted between the reads: the pair is no anchor.
            return self.monotone(system_now_ns());
        };
        let (t0, n0) = self.first;
        let (dt, dn) = (t.wrapping_sub(t0), ns.saturating_sub(n0));
        if dn >= ANCHOR_NS && dt > 0 && dt < 1 << 63 {
            let mult = ((u128::from(dn) << 32) / u128::from(dt)) as u64;
            if mult > 0 {
                self.mult.set(mult);
                self.span
                    .set(((u128::from(ANCHOR_NS) << 32) / u128::from(mult)) as u64);
            }
        }
        self.anchor.set((t, ns));
        self.monotone(ns)
    }

    #[inline]
    fn monotone(&self, v: u64) -> u64 {
        let last = self.last.get();
        let v = if v < last && last - v < ANCHOR_NS {
            last
        } else {
            v
        };
        self.last.set(v);
        v
    }

    #[cfg(test)]
    fn scaled(&self) -> bool {
        self.mult.get() != 0
    }
}

/// The counter and the system clock read together: the counter before and
/// after the clock, `None` if more than 20,000 ticks (a few microseconds)
/// passed between them, i.e. the thread was interrupted.
fn anchor_pair() -> Option<(u64, u64)> {
    let t1 = rdtsc();
    let ns = system_now_ns();
    let t2 = rdtsc();
    (t2.wrapping_sub(t1) < 20_000).then(|| (t1 + (t2 - t1) / 2, ns))
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn rdtsc() -> u64 {
    // SAFETY: rdtsc exists on every x86_64 CPU.
    unsafe { std::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
fn rdtsc() -> u64 {
    0
}

/// True if the time-stamp counter runs at a constant rate in every power
/// state (CPUID 8000_0007h, EDX bit 8) and the kernel keeps time with it.
fn tsc_usable() -> bool {
    static USABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *USABLE.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::__cpuid;
            let invariant =
                __cpuid(0x8000_0000).eax >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0;
            invariant
                && std::fs::read_to_string(
                    "/sys/devices/system/clocksource/clocksource0/current_clocksource",
                )
                .is_ok_and(|s| s.trim() == "tsc")
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recent_clock_follows_the_system_clock() {
        let c = RecentClock::new();
        let start = system_now_ns();
        let mut prev = 0;
        let mut reads = 0u32;
        // 20 ms: the rate is measured after 1 ms, then 19 re-anchorings.
        while system_now_ns() - start < 20_000_000 {
            let before = system_now_ns();
            let v = c.now_ns();
            let after = system_now_ns();
            assert!(v >= prev, "went back: {prev} then {v}");
            // Within 20 us of the system clock read around it.
            assert!(
                v + 20_000 >= before && v <= after + 20_000,
                "{v} outside {before}..{after}"
            );
            prev = v;
            reads += 1;
        }
        assert!(reads > 1000);
        assert_eq!(c.scaled(), tsc_usable());
    }
}

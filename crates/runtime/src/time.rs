//! The data-plane clock: the system clock, or simulated time (`--simtime`)
//! that advances only when the router is idle, straight to the next timer.

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

//! `linerate-bench`: the benchmarks behind docs/performance.md.
//!
//! The library half holds the per-element benchmark table that
//! `linerate bench elements` prints ([`elements`]); the `linerate-bench`
//! binary runs the process-level suites of issues 2 and 3.

pub mod classrules;
pub mod elements;
pub mod rng;

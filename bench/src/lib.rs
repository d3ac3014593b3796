//! `linerate-bench`: the benchmarks behind docs/performance.md.
//!
//! The library half holds the per-element benchmark table that
//! `linerate bench elements` prints ([`elements`]); the `linerate-bench`
//! binary runs the process-level suites of issues 2 and 3.

pub mod classrules;
pub mod elements;
pub mod rng;

/// A field of this process's `/proc/self/smaps_rollup` in kB (`AnonHugePages`,
/// `FilePmdMapped`, ...); 0 where the file or the field is missing.
pub fn smaps_rollup_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/smaps_rollup")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

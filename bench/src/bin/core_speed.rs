//! The core now: `core_speed` prints two numbers, the additions a nanosecond of a
//! chain of dependent additions (one a cycle: the clock the core runs at, or less
//! while the thread loses it) and of four independent chains (the additions a
//! cycle this thread's share of the core issues, times the clock: it also falls
//! while another thread runs on the same physical core), as
//! `linerate_model::CoreSpeed` probes them for the reports, in about 15 ms. Pin it
//! (`taskset -c N core_speed`) to probe one CPU; `bench/alternate.py` and
//! `bench/flowmon.sh` probe every CPU around each run and drop or retake the runs
//! taken while either number of a CPU read low. Prints nothing and fails where
//! there is no probe (off x86-64).

use std::process::ExitCode;

fn main() -> ExitCode {
    match linerate_model::CoreSpeed::probe(10_000_000) {
        Some(s) => {
            println!("{:.3} {:.2}", s.ghz, s.adds);
            ExitCode::SUCCESS
        }
        None => ExitCode::FAILURE,
    }
}

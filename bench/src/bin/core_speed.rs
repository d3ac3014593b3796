//! The core's speed now: `core_speed` prints the additions a nanosecond of a chain of
//! dependent additions (one a cycle: the clock the core runs at, or less while the
//! thread loses or shares it), as `linerate_model::core_speed_ghz` measures it for the
//! reports, in about 10 ms. Pin it (`taskset -c N core_speed`) to probe one CPU;
//! `bench/alternate.py` probes every CPU around each run and drops the runs taken
//! while one of them ran slow. Prints nothing and fails where there is no probe
//! (off x86-64).

use std::process::ExitCode;

fn main() -> ExitCode {
    match linerate_model::core_speed_ghz() {
        Some(g) => {
            println!("{g:.3}");
            ExitCode::SUCCESS
        }
        None => ExitCode::FAILURE,
    }
}

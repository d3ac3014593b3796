//! What fresh memory costs this guest: `first_touch [MIB] [RUNS]` maps MIB
//! MiB (default 20, about what flowmon's aggregator maps on the inet
//! trace) of anonymous memory RUNS times (default 5), once advised into
//! 2 MiB pages and once left with 4 KiB pages, writes one byte to every
//! 4 KiB page, and prints the milliseconds each took (the kernel zeroes
//! each page as it maps it), one run a line: `huge-ms small-ms`.
//!
//! A guest whose freed memory goes back to the host (`virtio_balloon`'s
//! free page reporting) pays the host's fault as well on pages it was not
//! using: on the AMD EPYC guest of session 30, 20 MiB in huge pages took
//! 2.0-2.9 ms most times and 24-32 ms other times, runs a second apart.
//! Pin it (`taskset -c N first_touch`) to probe one CPU. Linux only.

#[cfg(target_os = "linux")]
fn touch(bytes: usize, huge: bool) -> Option<f64> {
    const HUGE: usize = 2 << 20;
    let span = bytes + HUGE;
    let p = linerate_runtime::mem::map_anonymous(span)?.as_ptr();
    // SAFETY: a fresh mapping of `span` bytes, written only inside it and
    // unmapped before returning; madvise only changes its page size.
    unsafe {
        let start = (p as usize).next_multiple_of(HUGE) as *mut u8;
        if huge {
            libc::madvise(start as *mut libc::c_void, bytes, libc::MADV_HUGEPAGE);
        }
        let t = std::time::Instant::now();
        for off in (0..bytes).step_by(4096) {
            start.add(off).write_volatile(1);
        }
        let ms = t.elapsed().as_secs_f64() * 1e3;
        libc::munmap(p as *mut libc::c_void, span);
        Some(ms)
    }
}

#[cfg(target_os = "linux")]
fn main() -> std::process::ExitCode {
    let arg = |i: usize, default: usize| {
        std::env::args()
            .nth(i)
            .map_or(Some(default), |a| a.parse().ok())
    };
    let (Some(mib), Some(runs)) = (arg(1, 20), arg(2, 5)) else {
        eprintln!("usage: first_touch [MIB] [RUNS]");
        return std::process::ExitCode::FAILURE;
    };
    for _ in 0..runs {
        match (touch(mib << 20, true), touch(mib << 20, false)) {
            (Some(h), Some(s)) => println!("{h:.2} {s:.2}"),
            _ => {
                eprintln!("first_touch: mmap failed");
                return std::process::ExitCode::FAILURE;
            }
        }
    }
    std::process::ExitCode::SUCCESS
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("first_touch: Linux only");
}

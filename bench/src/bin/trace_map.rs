//! What mapping a trace costs, as `FromDump` maps it: `trace_map FILE [IDLE ...]`.
//!
//! Maps the file read-only at a 2 MiB boundary, asks for 2 MiB pages
//! (`MADV_HUGEPAGE`), populates the mapping (`MADV_POPULATE_READ`), reads one
//! byte of every 4 KiB page, and unmaps it, timing each step; it prints how much
//! of the mapping the kernel mapped with 2 MiB entries (`FilePmdMapped`, from
//! `/proc/self/smaps_rollup`). Linux only.
//!
//! - **Folios.** Since Linux 6.16 ext4 caches a file in folios as large as the
//!   pieces it was written or read in; only a 2 MiB folio can be mapped by one
//!   entry. A trace cached in small folios costs tens of milliseconds more to
//!   populate and unmap (session 27, `docs/performance.md`).
//! - **Idle pages.** With `IDLE` seconds (one or more), it measures once at once
//!   and again after each pause: on the guest of session 28 a trace idle for
//!   60 s took 140-190 ms more to map and read, after 240 s 1.27-1.31 s more (DAMON's
//!   proactive reclaim had paged out its idle pages, which were read back).

use std::process::ExitCode;
use std::time::{Duration, Instant};

#[cfg(target_os = "linux")]
fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: trace_map FILE [IDLE_SECONDS ...]");
        return ExitCode::from(2);
    };
    let mut idle = vec![0.0];
    for a in args {
        match a.parse::<f64>() {
            Ok(s) if s >= 0.0 && s.is_finite() => idle.push(s),
            _ => {
                eprintln!("trace_map: {a}: not a number of seconds");
                return ExitCode::from(2);
            }
        }
    }
    println!("| idle before | mapped by 2 MiB entries | populate | touch | unmap |");
    println!("|---:|---:|---:|---:|---:|");
    for s in idle {
        std::thread::sleep(Duration::from_secs_f64(s));
        match measure(&path) {
            Ok(m) => println!(
                "| {s} s | {} MiB of {} | {:.2} ms | {:.2} ms | {:.2} ms |",
                m.pmd_kb >> 10,
                m.len >> 20,
                m.populate * 1e3,
                m.touch * 1e3,
                m.unmap * 1e3
            ),
            Err(e) => {
                eprintln!("trace_map: {path}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

#[cfg(not(target_os = "linux"))]
fn main() -> ExitCode {
    eprintln!("trace_map: Linux only");
    ExitCode::FAILURE
}

/// One measurement: seconds for each step.
#[cfg(target_os = "linux")]
struct Mapped {
    len: usize,
    pmd_kb: u64,
    populate: f64,
    touch: f64,
    unmap: f64,
}

#[cfg(target_os = "linux")]
fn measure(path: &str) -> std::io::Result<Mapped> {
    use std::os::fd::AsRawFd;
    const HUGE: usize = 2 << 20;
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len() as usize;
    if len == 0 {
        return Err(std::io::Error::other("empty file"));
    }
    let fail = || Err(std::io::Error::last_os_error());
    // SAFETY: a fresh reservation, then the file mapped over its 2 MiB-aligned
    // part (MAP_FIXED inside the reservation replaces nothing else); every
    // access below stays inside the file's `len` bytes, and all is unmapped.
    unsafe {
        let span = len + HUGE;
        let none = libc::mmap(
            std::ptr::null_mut(),
            span,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if none == libc::MAP_FAILED {
            return fail();
        }
        let at = (none as usize).next_multiple_of(HUGE) as *mut libc::c_void;
        let p = libc::mmap(
            at,
            len,
            libc::PROT_READ,
            libc::MAP_SHARED | libc::MAP_FIXED,
            file.as_raw_fd(),
            0,
        );
        if p == libc::MAP_FAILED {
            let e = std::io::Error::last_os_error();
            libc::munmap(none, span);
            return Err(e);
        }
        libc::madvise(p, len, libc::MADV_HUGEPAGE);
        let t0 = Instant::now();
        libc::madvise(p, len, libc::MADV_POPULATE_READ);
        let t1 = Instant::now();
        let mut sum = 0u64;
        for off in (0..len).step_by(4096) {
            sum = sum.wrapping_add(u64::from((p as *const u8).add(off).read_volatile()));
        }
        std::hint::black_box(sum);
        let t2 = Instant::now();
        let pmd_kb = linerate_bench::smaps_rollup_kb("FilePmdMapped");
        libc::munmap(p, len);
        let t3 = Instant::now();
        // The reservation's head and tail around the file's mapping.
        let head = at as usize - none as usize;
        if head > 0 {
            libc::munmap(none, head);
        }
        libc::munmap((at as usize + len) as *mut libc::c_void, span - head - len);
        Ok(Mapped {
            len,
            pmd_kb,
            populate: (t1 - t0).as_secs_f64(),
            touch: (t2 - t1).as_secs_f64(),
            unmap: (t3 - t2).as_secs_f64(),
        })
    }
}

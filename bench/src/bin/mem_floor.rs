//! The floor for table lookups: what one core's random reads of 64-byte lines cost
//! on this machine, by working-set size.
//!
//! `mem_floor [--batch B] [MB ...]` (default sizes 1 2 4 8 16 32 64 128, batch 64)
//! maps an anonymous region of each size on 2 MiB pages where the kernel gives them
//! (`MADV_HUGEPAGE`, then every page written: as the tables' `Huge` arrays), and
//! measures two things, best of three passes each:
//!
//! - **chase**: a dependent walk through every line in a random cyclic order (each
//!   load's address comes from the line before): the latency of one random line.
//! - **batch**: groups of `B` random lines, as the tables' batched lookups read them:
//!   every line of a group prefetched (`prefetcht0`), then every line read and summed.
//!   The ns per line is the throughput the core's outstanding misses allow: a table
//!   whose lookups each read one random line of a region this size cannot be faster
//!   than this, whatever its code.
//!
//! It prints one row per size, with the region's share on 2 MiB pages (from
//! `/proc/self/smaps_rollup`), and the machine. Where the last level cache is shared
//! with other guests, a region well below its nominal size already reads from memory:
//! the chase column shows where. A size may be given in KiB (`512K`).
//!
//! `--beside CPU:SIZE` (Linux) measures every size while a thread pinned to `CPU`
//! reads and writes every line of a region of its own, `SIZE` large, over and over:
//! run pinned to another CPU (`taskset -c 1 mem_floor --beside 0:8 512K`), a chase
//! that fits this core's L1 or L2 slows down only if the two CPUs share that cache
//! (two hyperthreads of one core do). Session 28 found this guest's two vCPUs share
//! neither.

use std::hint::black_box;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use linerate_bench::rng::Rng;

const LINE: usize = 64;

/// An anonymous, private, read-write mapping of `len` bytes, advised onto 2 MiB
/// pages and written once (so every page is present before timing).
struct Region {
    ptr: *mut u8,
    len: usize,
}

impl Region {
    fn new(len: usize) -> Option<Region> {
        let ptr = linerate_runtime::mem::map_anonymous(len)?.as_ptr();
        // SAFETY: the mapping just made; advice only.
        unsafe { libc::madvise(ptr as *mut libc::c_void, len, libc::MADV_HUGEPAGE) };
        // SAFETY: `len` writable bytes at `ptr`.
        unsafe { std::ptr::write_bytes(ptr, 1, len) };
        Some(Region { ptr, len })
    }

    fn lines(&self) -> usize {
        self.len / LINE
    }

    /// The first word of line `i` (`i < lines()`).
    #[inline(always)]
    fn word(&self, i: usize) -> *mut u64 {
        self.ptr.wrapping_add(i * LINE) as *mut u64
    }
}

// SAFETY: a region is used by one thread at a time (`Beside` moves its own to
// the thread it starts).
unsafe impl Send for Region {}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

/// ns per line of a dependent walk of `steps` lines through a random cycle over
/// every line of `r` (Sattolo's algorithm: one cycle, so the walk never settles
/// into a short loop that fits a cache).
fn chase(r: &Region, rng: &mut Rng, steps: usize) -> f64 {
    let n = r.lines();
    let mut next: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        let j = rng.below(i as u64) as usize;
        next.swap(i, j);
    }
    for (i, &j) in next.iter().enumerate() {
        // SAFETY: `i < n`: a word of the region.
        unsafe { r.word(i).write(j as u64) };
    }
    drop(next);
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let mut at = 0usize;
        let t = Instant::now();
        for _ in 0..steps {
            // SAFETY: every stored index is below `n`.
            at = unsafe { r.word(at).read() } as usize;
        }
        best = best.min(t.elapsed().as_secs_f64() * 1e9 / steps as f64);
        black_box(at);
    }
    best
}

/// ns per line of `groups` groups of `batch` random lines, each group prefetched
/// whole and then read. The line numbers come from an xorshift generator inline
/// (three shifts and a multiply a line), not from memory.
fn batched(r: &Region, seed: u64, batch: usize, groups: usize) -> f64 {
    let n = r.lines() as u64;
    let mut idx = vec![0usize; batch];
    let mut best = f64::INFINITY;
    for pass in 0..3u64 {
        let mut x = seed ^ pass.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut sum = 0u64;
        let t = Instant::now();
        for _ in 0..groups {
            for slot in idx.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *slot = ((u128::from(x) * u128::from(n)) >> 64) as usize;
                prefetch(r.word(*slot));
            }
            for &i in &idx {
                // SAFETY: `i < n`: a word of the region.
                sum = sum.wrapping_add(unsafe { r.word(i).read() });
            }
        }
        best = best.min(t.elapsed().as_secs_f64() * 1e9 / (groups * batch) as f64);
        black_box(sum);
    }
    best
}

#[inline(always)]
fn prefetch(p: *const u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint and never faults.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    black_box(p);
}

/// kB of this process's anonymous memory on 2 MiB pages.
fn anon_huge_kb() -> u64 {
    linerate_bench::smaps_rollup_kb("AnonHugePages")
}

/// A size in bytes: `N` MiB, or `NK` KiB.
fn size(a: &str) -> Option<usize> {
    let (n, unit) = match a.strip_suffix(['K', 'k']) {
        Some(k) => (k, 1 << 10),
        None => (a, 1 << 20),
    };
    n.parse::<usize>().ok().filter(|&n| n > 0).map(|n| n * unit)
}

/// `bytes` as the table prints it.
fn label(bytes: usize) -> String {
    if bytes.is_multiple_of(1 << 20) {
        format!("{} MB", bytes >> 20)
    } else {
        format!("{} KB", bytes >> 10)
    }
}

/// A thread pinned to `cpu` that reads and writes every line of its own region of
/// `bytes`, over and over, until dropped.
struct Beside {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Beside {
    #[cfg(target_os = "linux")]
    fn start(cpu: usize, bytes: usize) -> Option<Beside> {
        let r = Region::new(bytes)?;
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, (tx, rx)) = (stop.clone(), std::sync::mpsc::channel());
        let thread = std::thread::spawn(move || {
            // SAFETY: a zeroed cpu_set_t with one CPU set, for this thread.
            let pinned = unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) == 0
            };
            let _ = tx.send(pinned);
            while !flag.load(Ordering::Relaxed) {
                for i in 0..r.lines() {
                    // SAFETY: `i < lines()`: a word of the region.
                    unsafe { r.word(i).write(r.word(i).read().wrapping_add(1)) };
                }
            }
        });
        let b = Beside {
            stop,
            thread: Some(thread),
        };
        rx.recv().ok().filter(|&pinned| pinned).map(|_| b)
    }

    #[cfg(not(target_os = "linux"))]
    fn start(_cpu: usize, _bytes: usize) -> Option<Beside> {
        None
    }
}

impl Drop for Beside {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn main() -> ExitCode {
    const USAGE: &str =
        "usage: mem_floor [--batch B] [--beside CPU:SIZE] [SIZE ...] (SIZE: MB, or KiB as NK)";
    let mut batch = 64usize;
    let mut beside = None;
    let mut sizes = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let parsed = match a.as_str() {
            "--batch" => args.next().and_then(|b| b.parse().ok()).map(|b| batch = b),
            "--beside" => args
                .next()
                .and_then(|b| {
                    let (cpu, sz) = b.split_once(':')?;
                    Some((cpu.parse::<usize>().ok()?, size(sz)?))
                })
                .map(|b| beside = Some(b)),
            _ => size(&a).map(|s| sizes.push(s)),
        };
        if parsed.is_none() || batch == 0 {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    }
    if sizes.is_empty() {
        sizes = [1, 2, 4, 8, 16, 32, 64, 128].map(|mb| mb << 20).to_vec();
    }
    let _other = match beside {
        Some((cpu, bytes)) => match Beside::start(cpu, bytes) {
            Some(b) => {
                println!("beside: CPU {cpu} reading and writing {}\n", label(bytes));
                Some(b)
            }
            None => {
                eprintln!("mem_floor: cannot start the thread beside on CPU {cpu}");
                return ExitCode::FAILURE;
            }
        },
        None => None,
    };
    println!("| working set | on 2 MiB pages | chase: ns a line | batch of {batch}: ns a line |");
    println!("|---:|---:|---:|---:|");
    let mut machine = linerate_model::Machine::current();
    let mut rng = Rng(0x5eed);
    for bytes in sizes {
        // The thread beside's region is this process's too: count only this one's.
        let before = anon_huge_kb();
        let Some(r) = Region::new(bytes) else {
            eprintln!("mem_floor: cannot map {}", label(bytes));
            return ExitCode::FAILURE;
        };
        let huge = (anon_huge_kb().saturating_sub(before) << 10) as f64 / bytes as f64;
        let c = chase(&r, &mut rng, 2_000_000);
        let b = batched(&r, rng.next_u64(), batch, 16_000_000 / batch);
        println!(
            "| {} | {:.0} % | {c:.1} | {b:.2} |",
            label(bytes),
            (huge * 100.0).min(100.0)
        );
    }
    machine.end();
    println!("\nmachine: {}", machine.summary());
    ExitCode::SUCCESS
}

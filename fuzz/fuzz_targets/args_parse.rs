//! Fuzz target: Click argument splitting, unquoting, value types and the
//! `Args` reader.
//!
//! Arbitrary text (UTF-8, lossy) is split with `split_args`; every argument
//! is fed to each value parser and to `unquote`, then an `Args` reader reads
//! a few typed keywords, the rest, and completes. None of it may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linerate_args::{
    split_args, unquote, ArgValue, Args, Bandwidth, EtherAddr, Ipv4Prefix, Ipv6Prefix, Seconds,
    Timestamp,
};

fn parse_all(arg: &str) {
    let _ = std::hint::black_box(u32::parse_arg(arg));
    let _ = std::hint::black_box(i64::parse_arg(arg));
    let _ = std::hint::black_box(f64::parse_arg(arg));
    let _ = std::hint::black_box(bool::parse_arg(arg));
    let _ = std::hint::black_box(Ipv4Prefix::parse_arg(arg));
    let _ = std::hint::black_box(Ipv6Prefix::parse_arg(arg));
    let _ = std::hint::black_box(Seconds::parse_arg(arg));
    let _ = std::hint::black_box(Timestamp::parse_arg(arg));
    let _ = std::hint::black_box(Bandwidth::parse_arg(arg));
    let _ = std::hint::black_box(EtherAddr::parse_arg(arg));
    let _ = std::hint::black_box(Vec::<u8>::parse_arg(arg));
    let _ = std::hint::black_box(String::parse_arg(arg));
    let _ = std::hint::black_box(unquote(arg));
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let parts = split_args(&text);
    for p in &parts {
        parse_all(p);
    }
    let mut args = Args::new(&parts);
    let n: Option<u32> = args.read_mp("N");
    let stop: bool = args.read_or("STOP", false);
    let prefix: Option<Ipv4Prefix> = args.read_p("PREFIX");
    let interval: Option<Seconds> = args.read("INTERVAL");
    let rate: Option<Bandwidth> = args.read("RATE");
    let eth: Option<EtherAddr> = args.read("ETH");
    let data: Option<Vec<u8>> = args.read_p("DATA");
    let all: Vec<u32> = args.read_all("ROUTE");
    std::hint::black_box((n, stop, prefix, interval, rate, eth, data, all));
    let _ = std::hint::black_box(args.complete());
});

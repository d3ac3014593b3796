//! Property tests: no input makes the parsers or the reader panic.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use linerate_args::*;
use proptest::prelude::*;

fn all_types(s: &str) {
    let _ = bool::parse_arg(s);
    let _ = u8::parse_arg(s);
    let _ = i16::parse_arg(s);
    let _ = u32::parse_arg(s);
    let _ = i64::parse_arg(s);
    let _ = u64::parse_arg(s);
    let _ = usize::parse_arg(s);
    let _ = f64::parse_arg(s);
    let _ = String::parse_arg(s);
    let _ = Vec::<u8>::parse_arg(s);
    let _ = Ipv4Addr::parse_arg(s);
    let _ = Ipv6Addr::parse_arg(s);
    let _ = Ipv4Prefix::parse_arg(s);
    let _ = Ipv6Prefix::parse_arg(s);
    let _ = EtherAddr::parse_arg(s);
    let _ = Seconds::parse_arg(s);
    let _ = Timestamp::parse_arg(s);
    let _ = Duration::parse_arg(s);
    let _ = Bandwidth::parse_arg(s);
    let _ = ElementName::parse_arg(s);
    let _ = HandlerName::parse_arg(s);
    let _ = Word::parse_arg(s);
    let _ = unquote(s);
    let _ = unquote_str(s);
}

fn reader(s: &str) {
    let mut a = Args::from_config(s);
    let _: Option<u32> = a.read_mp("LENGTH");
    let _: Option<String> = a.read_p("DATA");
    let _: Vec<Ipv4Prefix> = a.read_all("ROUTE");
    let _: Seconds = a.read_or("INTERVAL", Seconds::default());
    let _: Option<Bandwidth> = a.read_m("RATE");
    let _ = a.read_rest();
    let _ = a.complete().map_err(|e| e.to_string());
}

proptest! {
    #[test]
    fn any_text(s in "\\PC*") {
        all_types(&s);
        reader(&s);
    }

    #[test]
    fn config_like_text(s in "[A-Z0-9a-f:./ ,'\"\\\\<>x*_eE+-]{0,40}") {
        all_types(&s);
        reader(&s);
    }
}

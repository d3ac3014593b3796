//! Behaviour of the `Args` reader on literal configuration strings.

use std::net::Ipv4Addr;

use linerate_args::{Args, Bandwidth, Ipv4Prefix, Raw, Seconds};

fn errors(args: Args) -> Vec<String> {
    match args.complete() {
        Ok(()) => Vec::new(),
        Err(e) => e.0,
    }
}

#[test]
fn positional_then_keywords() {
    let mut a = Args::from_config("60, 1000, STOP true");
    assert_eq!(a.read_mp::<u32>("LENGTH"), Some(60));
    assert_eq!(a.read_p::<u64>("LIMIT"), Some(1000));
    assert_eq!(a.read::<bool>("STOP"), Some(true));
    assert_eq!(errors(a), Vec::<String>::new());
}

#[test]
fn mandatory_positional_given_by_keyword() {
    let mut a = Args::from_config("LIMIT 5, LENGTH 60");
    assert_eq!(a.read_mp::<u32>("LENGTH"), Some(60));
    assert_eq!(a.read_p::<u32>("LIMIT"), Some(5));
    assert!(a.complete().is_ok());
}

#[test]
fn keywords_in_any_order() {
    let mut a = Args::from_config("STOP false, DATA \"a b\", LIMIT 0x10");
    assert_eq!(a.read_p::<String>("DATA"), Some("a b".to_string()));
    assert_eq!(a.read_p::<u32>("LIMIT"), Some(16));
    assert!(!a.read_or("STOP", true));
    assert_eq!(a.read_or("BURST", 32u32), 32);
    assert!(a.complete().is_ok());
}

#[test]
fn missing_mandatory() {
    let mut a = Args::from_config("LIMIT 10");
    assert_eq!(a.read_mp::<u32>("LENGTH"), None);
    assert_eq!(a.read::<u32>("LIMIT"), Some(10));
    assert_eq!(a.read_m::<bool>("STOP"), None);
    assert_eq!(
        errors(a),
        [
            "missing mandatory LENGTH argument",
            "missing mandatory STOP argument"
        ]
    );
    let mut b = Args::from_config("");
    assert_eq!(b.read_mp::<u32>("LENGTH"), None);
    assert_eq!(errors(b), ["missing mandatory LENGTH argument"]);
}

#[test]
fn keyword_form_is_never_positional() {
    let mut a = Args::from_config("HELLO world");
    assert_eq!(a.read_mp::<Raw>("LABEL"), None);
    assert_eq!(
        errors(a),
        [
            "missing mandatory LABEL argument",
            "unknown keyword 'HELLO'"
        ]
    );
    // Quoting makes it positional.
    let mut b = Args::from_config("\"HELLO world\"");
    assert_eq!(
        b.read_mp::<String>("LABEL"),
        Some("HELLO world".to_string())
    );
    assert!(b.complete().is_ok());
    // A raw label may contain spaces.
    let mut c = Args::from_config("hello  world");
    assert_eq!(
        c.read_p::<Raw>("LABEL"),
        Some(Raw("hello  world".to_string()))
    );
    assert!(c.complete().is_ok());
}

#[test]
fn bare_upper_case_word_is_positional() {
    let mut a = Args::from_config("OK");
    assert_eq!(a.read_p::<String>("LABEL"), Some("OK".to_string()));
    assert!(a.complete().is_ok());
    // Read by name, a bare keyword has an empty value.
    let mut b = Args::from_config("STOP");
    assert_eq!(b.read::<bool>("STOP"), None);
    assert_eq!(errors(b), ["STOP: expected bool"]);
}

#[test]
fn parse_errors_name_the_keyword() {
    let mut a = Args::from_config("1.5, LIMIT 300, RATE fast, INTERVAL 2 parsecs");
    assert_eq!(a.read_mp::<u32>("LENGTH"), None);
    assert_eq!(a.read_p::<u8>("LIMIT"), None);
    assert_eq!(a.read_or("RATE", Bandwidth(1.0)), Bandwidth(1.0));
    assert_eq!(a.read::<Seconds>("INTERVAL"), None);
    assert_eq!(
        errors(a),
        [
            "LENGTH: expected integer",
            "LIMIT: out of range, bound 255",
            "RATE: expected bandwidth",
            "INTERVAL: expected time in seconds",
        ]
    );
}

#[test]
fn unknown_keywords_with_suggestions() {
    let mut a = Args::from_config("LIMT 5, BRUST 3, COLOR red");
    assert_eq!(a.read::<u32>("LIMIT"), None);
    assert_eq!(a.read::<u32>("BURST"), None);
    assert_eq!(
        errors(a),
        [
            "unknown keyword 'LIMT' (did you mean 'LIMIT'?)",
            "unknown keyword 'BRUST' (did you mean 'BURST'?)",
            "unknown keyword 'COLOR'",
        ]
    );
}

#[test]
fn too_many_arguments() {
    let mut a = Args::from_config("1, 2, 3");
    assert_eq!(a.read_p::<u32>("A"), Some(1));
    assert_eq!(errors(a), ["too many arguments"]);
    // Keyword-only arguments cannot be given by position.
    let mut b = Args::from_config("1, true");
    assert_eq!(b.read_p::<u32>("A"), Some(1));
    assert_eq!(b.read::<bool>("STOP"), None);
    assert_eq!(errors(b), ["too many arguments"]);
}

#[test]
fn positional_after_keyword_is_not_positional() {
    let mut a = Args::from_config("LIMIT 5, 60");
    assert_eq!(a.read_p::<u32>("LIMIT"), Some(5));
    assert_eq!(a.read_p::<u32>("LENGTH"), None);
    assert_eq!(errors(a), ["too many arguments"]);
}

#[test]
fn repeated_keyword_last_wins() {
    let mut a = Args::from_config("LIMIT 1, LIMIT 2, LIMIT 3");
    assert_eq!(a.read::<u32>("LIMIT"), Some(3));
    assert!(a.complete().is_ok());
    // A keyword also overrides the positional form (Click).
    let mut b = Args::from_config("5, LIMIT 6");
    assert_eq!(b.read_p::<u32>("LIMIT"), Some(6));
    assert!(b.complete().is_ok());
    // The last value is used even if an earlier one was bad.
    let mut c = Args::from_config("LIMIT x, LIMIT 7");
    assert_eq!(c.read::<u32>("LIMIT"), Some(7));
    assert!(c.complete().is_ok());
}

#[test]
fn read_all_collects_in_order() {
    let mut a = Args::from_config("ROUTE 10/8, ROUTE 1.2.3.4, STOP true, ROUTE bad");
    let routes: Vec<Ipv4Prefix> = a.read_all("ROUTE");
    assert_eq!(
        routes,
        [
            Ipv4Prefix {
                addr: Ipv4Addr::new(10, 0, 0, 0),
                len: 8
            },
            Ipv4Prefix {
                addr: Ipv4Addr::new(1, 2, 3, 4),
                len: 32
            },
        ]
    );
    assert_eq!(a.read::<bool>("STOP"), Some(true));
    assert_eq!(errors(a), ["ROUTE: expected IP address prefix"]);
    let mut b = Args::from_config("");
    assert!(b.read_all::<u32>("X").is_empty());
    assert!(b.complete().is_ok());
}

#[test]
fn read_rest_takes_remaining_positionals() {
    let mut a = Args::from_config("12/0800, -, 12/86dd, OK, VERBOSE true");
    assert_eq!(a.read_rest(), ["12/0800", "-", "12/86dd", "OK"]);
    assert_eq!(a.read::<bool>("VERBOSE"), Some(true));
    assert!(a.complete().is_ok());
    let mut b = Args::from_config("8, x y, STRAY 1");
    assert_eq!(b.read_p::<u32>("N"), Some(8));
    assert_eq!(b.read_rest(), ["x y"]);
    assert_eq!(errors(b), ["unknown keyword 'STRAY'"]);
}

#[test]
fn quoting_and_empty_values() {
    let mut a = Args::from_config("DATA \"\", LABEL 'a, b', RAW \"\\<41 42>\"");
    assert_eq!(a.read::<String>("DATA"), Some(String::new()));
    assert_eq!(a.read::<String>("LABEL"), Some("a, b".to_string()));
    assert_eq!(a.read::<Vec<u8>>("RAW"), Some(b"AB".to_vec()));
    assert!(a.complete().is_ok());
    let mut b = Args::from_config("DATA");
    assert_eq!(b.read::<String>("DATA"), None);
    assert_eq!(errors(b), ["DATA: expected string"]);
    // An empty middle argument is a positional argument.
    let mut c = Args::from_config("1,,3");
    assert_eq!(c.read_p::<u32>("A"), Some(1));
    assert_eq!(c.read_p::<u32>("B"), None);
    assert_eq!(c.read_p::<u32>("C"), Some(3));
    assert_eq!(errors(c), ["B: expected integer"]);
}

#[test]
fn element_errors_and_display() {
    let mut a = Args::new(&["  5 ".to_string()]);
    assert_eq!(a.read_p::<u32>("N"), Some(5));
    a.error("N must be even");
    let e = a.complete().unwrap_err();
    assert_eq!(e.0, ["N must be even"]);
    let mut b = Args::from_config("1, 2, LIMT 1");
    assert_eq!(b.read_mp::<u32>("A"), Some(1));
    b.read_m::<u32>("LIMIT");
    assert_eq!(
        b.complete().unwrap_err().to_string(),
        "missing mandatory LIMIT argument\nunknown keyword 'LIMT' (did you mean 'LIMIT'?)\ntoo many arguments"
    );
}

#[test]
fn keyword_syntax() {
    // Lower-case or mixed words are not keywords; `KW:X` style names are.
    let mut a = Args::from_config("Limit 5");
    assert_eq!(a.read::<u32>("LIMIT"), None);
    assert_eq!(errors(a), ["too many arguments"]);
    let mut b = Args::from_config("IP:DST 1.2.3.4, A_1 2");
    assert_eq!(
        b.read::<Ipv4Addr>("IP:DST"),
        Some(Ipv4Addr::new(1, 2, 3, 4))
    );
    assert_eq!(b.read::<u32>("A_1"), Some(2));
    assert!(b.complete().is_ok());
    // Space of any kind separates keyword and value.
    let mut c = Args::new(&["LIMIT\t 7".to_string()]);
    assert_eq!(c.read::<u32>("LIMIT"), Some(7));
    assert!(c.complete().is_ok());
}

//! Robustness: random and mutated inputs never panic, and pathological
//! nesting or sizes end in diagnostics rather than crashes. `parse_str` is
//! the fuzzing entry point.

mod common;
use common::*;
use linerate_lang::{parse_str, ParseOptions};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const CORPUS: &[&str] = &[
    "src :: FromDump(in.pcap, STOP true);\ncl :: Classifier(12/0800, -);\nsrc -> cl;\ncl [0] -> Strip(14) -> CheckIPHeader -> cnt :: Counter -> Discard;\ncl [1] -> Discard;",
    "elementclass Shaped { RATE $r | input -> Queue(200) -> BandwidthRatedUnqueue($r) -> output }\nInfiniteSource(LENGTH 60) -> Shaped(RATE 1Mbps) -> Discard;",
    "define($OUT out.pcap)\nipc :: IPClassifier(tcp, udp, -);\nipc => Paint(1), Paint(2), Paint(3) -> Unstrip(14) -> ToDump($OUT);",
    "x :: Idle; x -> (input -> Counter -> output) -> Discard; t :: Tee; t [0-2] => a, b, c :: Discard;",
    "elementclass F { input -> Counter -> output || $x, KEY $k, __REST__ $r | input -> Print($x $k \"${r-d}\" '$q') -> output || ... }",
    "require(package p, userlevel, library nothing.click); provide(x)\n# 12 \"f.click\"\nIdle -> { [0] -> Queue -> [0] } -> Discard; /* c */ // d",
    "elementclass A B; elementclass Q { input -> Queue -> output }; a, b :: Q; a -> b; Script(set x $(add 1 2), print $x)",
];

const PIECES: &[&str] = &[
    "->",
    "=>",
    "::",
    "||",
    "...",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ";",
    "|",
    "$",
    "$x",
    "${x-1}",
    "${",
    "\"",
    "'",
    "\\<",
    "/*",
    "*/",
    "//",
    "\n#",
    "\n# 3 \"f\"\n",
    "input",
    "output",
    "elementclass",
    "define(",
    "require(",
    "provide(",
    "Queue",
    "Counter",
    "@",
    "/",
    "0",
    "1-",
    "-",
    "\r",
    "\t",
    "é",
    "\u{0}",
    "Idle@1",
    "library",
    "__REST__",
    "KEY $k |",
];

fn check(text: &str) {
    let cat = catalog();
    let mut o = ParseOptions::new(&cat);
    o.vars = vec![("x".into(), "1".into())];
    if let Err(d) = parse_str(text, "fuzz.click", &o) {
        // Rendering must not panic either, and every diagnostic names a place.
        assert!(d.error_count() > 0);
        assert!(!d.to_string().is_empty());
        assert!(d.0.iter().all(|x| x.loc.column >= 1 && x.snippet.is_some()));
    }
}

#[test]
fn mutated_inputs_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..6000 {
        let mut s: Vec<char> = CORPUS[rng.below(CORPUS.len())].chars().collect();
        for _ in 0..1 + rng.below(6) {
            let at = rng.below(s.len() + 1);
            match rng.below(4) {
                0 => {
                    let p = PIECES[rng.below(PIECES.len())];
                    for (k, c) in p.chars().enumerate() {
                        s.insert(at + k, c);
                    }
                }
                1 => {
                    let end = (at + rng.below(12)).min(s.len());
                    s.drain(at..end);
                }
                2 if at < s.len() => s[at] = char::from(rng.below(128) as u8),
                _ => {
                    let end = (at + rng.below(20)).min(s.len());
                    let dup: Vec<char> = s[at..end].to_vec();
                    for (k, c) in dup.into_iter().enumerate() {
                        s.insert(end + k, c);
                    }
                }
            }
        }
        check(&s.iter().collect::<String>());
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng(12345);
    for _ in 0..1500 {
        let len = rng.below(200);
        let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        check(&String::from_utf8_lossy(&bytes));
        let alphabet = b" ()[]{}<>-=>:;,|.$@/\\\"'#\nabcIQ01";
        let ascii: String = (0..len)
            .map(|_| char::from(alphabet[rng.below(alphabet.len())]))
            .collect();
        check(&ascii);
    }
}

#[test]
fn random_token_soup_never_panics() {
    let mut rng = Rng(777);
    for _ in 0..3000 {
        let n = rng.below(40);
        let s: Vec<&str> = (0..n).map(|_| PIECES[rng.below(PIECES.len())]).collect();
        check(&s.join(" "));
    }
}

#[test]
fn pathological_shapes_are_diagnosed() {
    check(&"(".repeat(100_000));
    check(&"{".repeat(100_000));
    check(&"elementclass A { ".repeat(5_000));
    check(&"[".repeat(10_000));
    check(&format!("a :: Print({}", "(".repeat(10_000)));
    let chain = vec!["Counter"; 20_000].join(" -> ");
    let c = parse(&format!("Idle -> {chain} -> Discard;"));
    assert_eq!(c.elements.len(), 20_002);
    assert_eq!(c.connections.len(), 20_001);
    // A long chain of element groups resolves without deep recursion.
    let c = parse(&format!("Idle -> {} Discard;", "(->) -> ".repeat(10_000)));
    assert_eq!(conns(&c), ["Idle@1[0] -> [0]Discard@30002"]);
    // Cycles through compound ports terminate.
    let c = parse("elementclass L { input -> output }\nc :: L; Idle -> c -> c; c -> Discard;");
    assert_eq!(conns(&c), ["Idle@2[0] -> [0]Discard@3"]);
    // Mutually recursive variables are reported, not expanded forever.
    let m = messages("define($a $b$b, $b $a$a) Print($a);");
    assert_eq!(m, ["variable '$a' refers to itself"]);
}

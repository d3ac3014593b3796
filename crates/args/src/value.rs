//! The [`ArgValue`] trait and the boolean and text-like value types.

use std::fmt;

use crate::unquote::{is_single_string, unquote};

/// A type that can be read from one configuration argument.
///
/// `parse_arg` receives the argument text (for keyword arguments, the text
/// after the keyword) and returns either the value or an error message
/// without the keyword prefix, such as `expected integer` or `out of range,
/// bound 255`; [`Args`](crate::Args) prefixes it with the keyword.
pub trait ArgValue: Sized {
    /// A short description of the expected syntax, as in Click's messages:
    /// `integer`, `time in seconds`, `IP address prefix`...
    const TYPE: &'static str;

    /// Parse `s`, the raw (still quoted) argument text.
    fn parse_arg(s: &str) -> Result<Self, String>;
}

/// Click's `BoolArg`: `true`, `yes`, `1`, `t`, `y` or `false`, `no`, `0`, `f`,
/// `n` (lower case only).
impl ArgValue for bool {
    const TYPE: &'static str = "bool";
    fn parse_arg(s: &str) -> Result<Self, String> {
        match s {
            "true" | "yes" | "1" | "t" | "y" => Ok(true),
            "false" | "no" | "0" | "f" | "n" => Ok(false),
            _ => Err("expected bool".to_string()),
        }
    }
}

/// Check Click's `cp_string` shape, then unquote to bytes.
fn string_bytes(s: &str) -> Result<Vec<u8>, String> {
    if !is_single_string(s) {
        return Err("expected string".to_string());
    }
    unquote(s)
}

/// Click's `StringArg` (`cp_string`): one non-empty token without unquoted
/// spaces, unquoted (`"a b"` gives `a b`, `""` gives the empty string).
impl ArgValue for String {
    const TYPE: &'static str = "string";
    fn parse_arg(s: &str) -> Result<Self, String> {
        String::from_utf8(string_bytes(s)?).map_err(|_| "invalid UTF-8 in string".to_string())
    }
}

/// Binary data with the [`String`] syntax: `"\<00 01 ff>"`, `"\x41"`...
impl ArgValue for Vec<u8> {
    const TYPE: &'static str = "string";
    fn parse_arg(s: &str) -> Result<Self, String> {
        string_bytes(s)
    }
}

/// The argument text exactly as written (Click's `AnyArg`), for arguments
/// such as labels that may contain spaces. Nothing is rejected.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Raw(pub String);

impl ArgValue for Raw {
    const TYPE: &'static str = "argument";
    fn parse_arg(s: &str) -> Result<Self, String> {
        Ok(Raw(s.to_string()))
    }
}

/// Click's `cp_is_word`: non-empty, printable ASCII `!`..`~` except `"`,
/// `'`, `\` and `,`.
fn is_word(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|c| (b'!'..=b'~').contains(&c) && !matches!(c, b'"' | b'\'' | b'\\' | b','))
}

/// A single word (Click's `WordArg`): a [`String`] whose unquoted value is
/// non-empty printable ASCII without spaces, quotes, backslashes or commas.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Word(pub String);

impl ArgValue for Word {
    const TYPE: &'static str = "word";
    fn parse_arg(s: &str) -> Result<Self, String> {
        match String::parse_arg(s) {
            Ok(w) if is_word(&w) => Ok(Word(w)),
            _ => Err("expected word".to_string()),
        }
    }
}

/// Click's `cp_is_click_id`: characters `[A-Za-z0-9_@/]`, where `/` is
/// neither first, last, nor doubled.
fn is_click_id(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter().enumerate().all(|(i, &c)| {
            c.is_ascii_alphanumeric()
                || c == b'_'
                || c == b'@'
                || (c == b'/' && i != 0 && i + 1 != b.len() && b[i + 1] != b'/')
        })
}

/// The name of an element (Click's `ElementArg`, without the lookup): a
/// possibly quoted Click identifier such as `c`, `src/q` or `Discard@3`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ElementName(pub String);

impl ArgValue for ElementName {
    const TYPE: &'static str = "element name";
    fn parse_arg(s: &str) -> Result<Self, String> {
        match String::parse_arg(s) {
            Ok(n) if is_click_id(&n) => Ok(ElementName(n)),
            _ => Err("expected element name".to_string()),
        }
    }
}

impl fmt::Display for ElementName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A handler name (Click's `cp_handler_name`, without the lookup):
/// `elem.handler` splits at the first dot; `handler` or `.handler` names a
/// global handler, with `element` empty. Displays as `elem.handler` or
/// `handler`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct HandlerName {
    /// Element name, empty for a global handler.
    pub element: String,
    /// Handler name, never empty.
    pub handler: String,
}

impl ArgValue for HandlerName {
    const TYPE: &'static str = "handler name";
    fn parse_arg(s: &str) -> Result<Self, String> {
        let err = || "expected handler name".to_string();
        let text = String::parse_arg(s).map_err(|_| err())?;
        let (element, handler) = match text.split_once('.') {
            None => ("", text.as_str()),
            Some(("", h)) => ("", h),
            Some((e, h)) if is_click_id(e) => (e, h),
            Some(_) => return Err(err()),
        };
        if handler.is_empty() || handler.chars().any(|c| c.is_whitespace()) {
            return Err(err());
        }
        Ok(HandlerName {
            element: element.to_string(),
            handler: handler.to_string(),
        })
    }
}

impl fmt::Display for HandlerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.element.is_empty() {
            f.write_str(&self.handler)
        } else {
            write!(f, "{}.{}", self.element, self.handler)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p<T: ArgValue>(s: &str) -> Result<T, String> {
        T::parse_arg(s)
    }

    #[test]
    fn booleans() {
        for t in ["true", "yes", "1", "t", "y"] {
            assert_eq!(p::<bool>(t), Ok(true), "{t}");
        }
        for f in ["false", "no", "0", "f", "n"] {
            assert_eq!(p::<bool>(f), Ok(false), "{f}");
        }
        for bad in ["", "TRUE", "True", "on", "2", " true", "yes "] {
            assert_eq!(p::<bool>(bad), Err("expected bool".to_string()), "{bad:?}");
        }
    }

    #[test]
    fn strings() {
        assert_eq!(p::<String>("abc"), Ok("abc".to_string()));
        assert_eq!(p::<String>("\"a b\""), Ok("a b".to_string()));
        assert_eq!(p::<String>("\"\""), Ok(String::new()));
        assert_eq!(p::<String>("'x'\"y\"z"), Ok("xyz".to_string()));
        assert_eq!(p::<String>("\"tab\\there\""), Ok("tab\there".to_string()));
        assert_eq!(p::<String>(""), Err("expected string".to_string()));
        assert_eq!(p::<String>("a b"), Err("expected string".to_string()));
        assert_eq!(
            p::<String>("\"a"),
            Err("unterminated double-quoted string".to_string())
        );
        assert_eq!(
            p::<String>("\"\\xff\""),
            Err("invalid UTF-8 in string".to_string())
        );
        assert_eq!(p::<Vec<u8>>("\"\\xff\""), Ok(vec![0xff]));
        assert_eq!(p::<Vec<u8>>("\\<00 01 Fe>"), Ok(vec![0, 1, 0xfe]));
        assert_eq!(p::<Vec<u8>>("\"\""), Ok(vec![]));
        assert_eq!(p::<Vec<u8>>("a b"), Err("expected string".to_string()));
        assert_eq!(p::<Raw>("a b \"c"), Ok(Raw("a b \"c".to_string())));
        assert_eq!(p::<Raw>(""), Ok(Raw(String::new())));
    }

    #[test]
    fn words() {
        assert_eq!(p::<Word>("abc"), Ok(Word("abc".to_string())));
        assert_eq!(p::<Word>("a-b/c!"), Ok(Word("a-b/c!".to_string())));
        assert_eq!(p::<Word>("\"abc\""), Ok(Word("abc".to_string())));
        for bad in [
            "",
            "a b",
            "\"a b\"",
            "\"\"",
            "'a,b'",
            "\"a\\\\b\"",
            "\"caf\u{e9}\"",
        ] {
            assert_eq!(p::<Word>(bad), Err("expected word".to_string()), "{bad:?}");
        }
    }

    #[test]
    fn element_names() {
        assert_eq!(p::<ElementName>("c"), Ok(ElementName("c".to_string())));
        assert_eq!(
            p::<ElementName>("src/q"),
            Ok(ElementName("src/q".to_string()))
        );
        assert_eq!(
            p::<ElementName>("Discard@3"),
            Ok(ElementName("Discard@3".to_string()))
        );
        assert_eq!(
            p::<ElementName>("\"c_1\""),
            Ok(ElementName("c_1".to_string()))
        );
        assert_eq!(ElementName("x/y".to_string()).to_string(), "x/y");
        for bad in ["", "/a", "a/", "\"a//b\"", "a.b", "a b", "a-b"] {
            assert_eq!(
                p::<ElementName>(bad),
                Err("expected element name".to_string()),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn handler_names() {
        let h = |e: &str, n: &str| HandlerName {
            element: e.to_string(),
            handler: n.to_string(),
        };
        assert_eq!(p::<HandlerName>("c.count"), Ok(h("c", "count")));
        assert_eq!(p::<HandlerName>("a/b.x.y"), Ok(h("a/b", "x.y")));
        assert_eq!(p::<HandlerName>("stop"), Ok(h("", "stop")));
        assert_eq!(p::<HandlerName>(".version"), Ok(h("", "version")));
        assert_eq!(p::<HandlerName>("\"c.count\""), Ok(h("c", "count")));
        assert_eq!(h("c", "count").to_string(), "c.count");
        assert_eq!(h("", "stop").to_string(), "stop");
        for bad in ["", "c.", ".", "a b", "\"c. x\"", "a-b.c", "\"\""] {
            assert_eq!(
                p::<HandlerName>(bad),
                Err("expected handler name".to_string()),
                "{bad:?}"
            );
        }
    }
}

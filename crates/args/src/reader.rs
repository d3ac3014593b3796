//! The [`Args`] reader (Click's `Args` class): matching positional and
//! `KEYWORD value` arguments to the names an element reads.

use std::fmt;

use crate::split::split_args;
use crate::unquote::is_space;
use crate::ArgValue;

/// How an argument has been used so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Use {
    Free,
    Positional,
    Keyword,
}

/// One configuration argument.
#[derive(Debug)]
struct Arg {
    text: String,
    /// Length of the leading keyword, if the argument has keyword form.
    kw_len: Option<usize>,
    /// Start of the value after the keyword and its space.
    value_start: usize,
    used: Use,
}

impl Arg {
    /// Classify `text`: `KEYWORD value` (keyword `[A-Z][A-Z0-9_:]*`, then
    /// space, then the value), a bare keyword-like word `KEYWORD`, or a
    /// plain positional argument.
    fn new(text: &str) -> Arg {
        let text = text.trim_matches(|c: char| c.is_ascii() && is_space(c as u8));
        let b = text.as_bytes();
        let mut len = 0;
        if b.first().is_some_and(u8::is_ascii_uppercase) {
            len = 1 + b[1..]
                .iter()
                .take_while(|&&c| {
                    c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_' || c == b':'
                })
                .count();
        }
        let kw_len = (len > 0 && (len == b.len() || is_space(b[len]))).then_some(len);
        let mut value_start = len;
        while value_start < b.len() && is_space(b[value_start]) {
            value_start += 1;
        }
        Arg {
            text: text.to_string(),
            kw_len,
            value_start,
            used: Use::Free,
        }
    }

    fn keyword(&self) -> Option<&str> {
        self.kw_len.map(|l| &self.text[..l])
    }

    /// A bare keyword-like word (`OK`) with no value: usable as a positional
    /// argument as well as a keyword with an empty value.
    fn is_bare(&self) -> bool {
        self.kw_len == Some(self.text.len())
    }

    /// Usable as a positional argument (not of `KEYWORD value` form).
    fn is_positional(&self) -> bool {
        self.kw_len.is_none() || self.is_bare()
    }

    fn value(&self) -> &str {
        &self.text[self.value_start..]
    }
}

/// Errors collected by [`Args`], one message per entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgErrors(pub Vec<String>);

impl fmt::Display for ArgErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            f.write_str(e)?;
        }
        Ok(())
    }
}

impl std::error::Error for ArgErrors {}

/// Reads an element's configuration arguments, as Click's `Args` class.
///
/// Positional arguments come first, then `KEYWORD value` arguments, where a
/// keyword is an upper-case word `[A-Z][A-Z0-9_:]*` followed by space (a
/// bare upper-case word such as `OK` can also stand as a positional
/// argument, or as a keyword with an empty value). Each `read*` call names a
/// keyword:
///
/// - positional reads (`read_p`, `read_mp`, `read_p_or`) take the next
///   unread argument if it is positional, so positional arguments are
///   assigned in read order until the first argument already read by
///   keyword; an argument of `KEYWORD value` form is never taken by
///   position (as in Click's `cp_va_kparse`: `Foo(LIMIT 10)` reports a
///   missing mandatory `LENGTH`, where Click's newer `Args` would try to
///   parse `LIMIT 10` as the length);
/// - every read also matches `KEYWORD value` arguments anywhere; when a
///   keyword is given several times, or both by position and by keyword,
///   the last one wins and all are consumed (Click's rule);
/// - a missing mandatory argument, a value that does not parse, and at
///   [`complete`](Args::complete) every unread argument, are errors. A read
///   that fails returns `None` (or its default); errors accumulate and are
///   all reported by `complete`.
///
/// ```
/// use linerate_args::Args;
/// let mut args = Args::from_config("60, LIMIT 1000, STOP true");
/// let length: Option<u32> = args.read_mp("LENGTH");
/// let limit: i64 = args.read_p_or("LIMIT", -1);
/// let stop: bool = args.read_or("STOP", false);
/// assert!(args.complete().is_ok());
/// assert_eq!((length, limit, stop), (Some(60), 1000, true));
/// ```
#[derive(Debug)]
pub struct Args {
    args: Vec<Arg>,
    errors: Vec<String>,
    /// Keywords read so far, for "did you mean" suggestions.
    read_keywords: Vec<String>,
}

impl Args {
    /// A reader over already-split arguments (each is trimmed).
    pub fn new(conf: &[String]) -> Self {
        Args {
            args: conf.iter().map(|s| Arg::new(s)).collect(),
            errors: Vec::new(),
            read_keywords: Vec::new(),
        }
    }

    /// A reader over a configuration string, split with [`split_args`].
    pub fn from_config(conf: &str) -> Self {
        Self::new(&split_args(conf))
    }

    fn note_keyword(&mut self, kw: &str) {
        if !self.read_keywords.iter().any(|k| k == kw) {
            self.read_keywords.push(kw.to_string());
        }
    }

    /// Click's `Args::find`: the text for `kw`, consuming what it uses.
    fn find(&mut self, kw: &str, positional: bool, mandatory: bool) -> Option<String> {
        self.note_keyword(kw);
        let mut got: Option<usize> = None;
        let mut position: Option<Option<usize>> = None;
        for (i, a) in self.args.iter_mut().enumerate() {
            if position.is_none() && a.used != Use::Positional {
                position = Some((a.used == Use::Free).then_some(i));
            }
            if a.used == Use::Free && a.keyword() == Some(kw) {
                got = Some(i);
                a.used = Use::Keyword;
            }
        }
        let mut value = got.map(|g| self.args[g].value().to_string());
        if let (true, Some(Some(p))) = (positional, position) {
            let a = &mut self.args[p];
            if a.used == Use::Free && a.is_positional() {
                a.used = Use::Positional;
                if got.is_none() {
                    value = Some(a.text.clone());
                }
            }
        }
        if value.is_none() && mandatory {
            self.errors.push(format!("missing mandatory {kw} argument"));
        }
        value
    }

    fn parse<T: ArgValue>(&mut self, kw: &str, text: &str) -> Option<T> {
        match T::parse_arg(text) {
            Ok(v) => Some(v),
            Err(e) => {
                self.errors.push(format!("{kw}: {e}"));
                None
            }
        }
    }

    fn read_flags<T: ArgValue>(
        &mut self,
        kw: &str,
        positional: bool,
        mandatory: bool,
    ) -> Option<T> {
        let text = self.find(kw, positional, mandatory)?;
        self.parse(kw, &text)
    }

    /// Read a mandatory argument, given by position or as `KW value`.
    pub fn read_mp<T: ArgValue>(&mut self, kw: &str) -> Option<T> {
        self.read_flags(kw, true, true)
    }

    /// Read an optional argument, given by position or as `KW value`.
    pub fn read_p<T: ArgValue>(&mut self, kw: &str) -> Option<T> {
        self.read_flags(kw, true, false)
    }

    /// Read an optional `KW value` argument.
    pub fn read<T: ArgValue>(&mut self, kw: &str) -> Option<T> {
        self.read_flags(kw, false, false)
    }

    /// Read a mandatory `KW value` argument.
    pub fn read_m<T: ArgValue>(&mut self, kw: &str) -> Option<T> {
        self.read_flags(kw, false, true)
    }

    /// Read an optional `KW value` argument, or `default` if it is absent
    /// or does not parse (the parse error is still recorded).
    pub fn read_or<T: ArgValue>(&mut self, kw: &str, default: T) -> T {
        self.read(kw).unwrap_or(default)
    }

    /// Like [`read_p`](Args::read_p), with a default.
    pub fn read_p_or<T: ArgValue>(&mut self, kw: &str, default: T) -> T {
        self.read_p(kw).unwrap_or(default)
    }

    /// Read every `KW value` argument, in order (e.g. repeated `ROUTE`
    /// arguments). Values that do not parse are recorded as errors and
    /// left out.
    pub fn read_all<T: ArgValue>(&mut self, kw: &str) -> Vec<T> {
        self.note_keyword(kw);
        let mut texts = Vec::new();
        for a in &mut self.args {
            if a.used == Use::Free && a.keyword() == Some(kw) {
                a.used = Use::Keyword;
                texts.push(a.value().to_string());
            }
        }
        texts.iter().filter_map(|t| self.parse(kw, t)).collect()
    }

    /// Take every unread argument that is not of `KEYWORD value` form, as
    /// written (e.g. Classifier patterns). `KEYWORD value` arguments are left
    /// for other reads or for [`complete`](Args::complete) to report.
    pub fn read_rest(&mut self) -> Vec<String> {
        let mut rest = Vec::new();
        for a in &mut self.args {
            if a.used == Use::Free && a.is_positional() {
                a.used = Use::Positional;
                rest.push(a.text.clone());
            }
        }
        rest
    }

    /// Record an element-specific error, reported by [`complete`](Args::complete).
    pub fn error(&mut self, msg: impl Into<String>) {
        self.errors.push(msg.into());
    }

    /// The closest keyword read so far to `kw`, if close enough to be a typo.
    fn suggest(&self, kw: &str) -> Option<&str> {
        let limit = (kw.len() / 3).max(1);
        self.read_keywords
            .iter()
            .map(|k| (strsim::damerau_levenshtein(kw, k), k))
            .filter(|&(d, _)| d <= limit)
            .min_by_key(|&(d, _)| d)
            .map(|(_, k)| k.as_str())
    }

    /// Finish: report unread arguments (`unknown keyword 'LIMT' (did you
    /// mean 'LIMIT'?)`, `too many arguments`) and return every error.
    pub fn complete(mut self) -> Result<(), ArgErrors> {
        let mut too_many = false;
        let mut unknown = Vec::new();
        for a in &self.args {
            if a.used != Use::Free {
                continue;
            }
            match a.keyword() {
                Some(kw) => unknown.push(match self.suggest(kw) {
                    Some(s) => format!("unknown keyword '{kw}' (did you mean '{s}'?)"),
                    None => format!("unknown keyword '{kw}'"),
                }),
                None => too_many = true,
            }
        }
        self.errors.extend(unknown);
        if too_many {
            self.errors.push("too many arguments".to_string());
        }
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(ArgErrors(self.errors))
        }
    }
}

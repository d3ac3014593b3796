//! Removing one level of quoting (Click's `cp_uncomment` + `cp_unquote`) and
//! the lexical helpers shared by the string-like value types.

/// Click's `isspace` in the "C" locale: space, `\t`, `\n`, `\v`, `\f`, `\r`.
pub(crate) fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// `b[i..]` starts a comment (`//` or `/*`).
fn at_comment(b: &[u8], i: usize) -> bool {
    b.get(i) == Some(&b'/') && matches!(b.get(i + 1), Some(b'/') | Some(b'*'))
}

/// Index just past the comment starting at `i` (which must satisfy `at_comment`).
/// A `//` comment runs through the end of the line (`\n`, `\r` or `\r\n`); an
/// unterminated `/*` comment runs to the end of the text.
fn skip_comment(b: &[u8], i: usize) -> usize {
    let n = b.len();
    if b[i + 1] == b'/' {
        let mut j = i + 2;
        while j < n && b[j] != b'\n' && b[j] != b'\r' {
            j += 1;
        }
        if j + 1 < n && b[j] == b'\r' && b[j + 1] == b'\n' {
            j += 1;
        }
        (j + 1).min(n)
    } else {
        let mut j = i + 2;
        while j + 1 < n && !(b[j] == b'*' && b[j + 1] == b'/') {
            j += 1;
        }
        (j + 2).min(n)
    }
}

/// Index just past the backslash sequence starting at `i` (`b[i] == b'\\'`),
/// treating `\<...>` as one unit.
fn skip_backslash(b: &[u8], i: usize) -> usize {
    let n = b.len();
    if i + 1 >= n {
        return n;
    }
    if b[i + 1] == b'<' {
        let mut j = i + 2;
        while j < n {
            if b[j] == b'>' {
                return j + 1;
            } else if at_comment(b, j) {
                j = skip_comment(b, j);
            } else {
                j += 1;
            }
        }
        n
    } else if b[i + 1] == b'\r' && b.get(i + 2) == Some(&b'\n') {
        i + 3
    } else {
        i + 2
    }
}

/// Index just past the double-quoted string starting at `i`, or the end of
/// the text when it is unterminated.
fn skip_double_quote(b: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j = skip_backslash(b, j),
            b'"' => return j + 1,
            _ => j += 1,
        }
    }
    b.len()
}

/// Index just past the single-quoted string starting at `i`, or the end of
/// the text when it is unterminated.
fn skip_single_quote(b: &[u8], i: usize) -> usize {
    match b[i + 1..].iter().position(|&c| c == b'\'') {
        Some(p) => i + 1 + p + 1,
        None => b.len(),
    }
}

/// Index just past one quoted or unquoted lexical unit starting at `i`.
fn skip_unit(b: &[u8], i: usize) -> usize {
    match b[i] {
        b'\'' => skip_single_quote(b, i),
        b'"' => skip_double_quote(b, i),
        b'\\' if b.get(i + 1) == Some(&b'<') => skip_backslash(b, i),
        _ => i + 1,
    }
}

/// Click's `cp_uncomment`: drop leading and trailing space, and replace every
/// comment (with the space around it) by one space. Quoted text is kept.
fn uncomment(b: &[u8]) -> Vec<u8> {
    let n = b.len();
    let mut i = 0;
    while i < n && (is_space(b[i]) || at_comment(b, i)) {
        i = if is_space(b[i]) {
            i + 1
        } else {
            skip_comment(b, i)
        };
    }
    let mut out = Vec::with_capacity(n);
    let (mut left, mut right) = (i, i);
    let mut closed = false;
    while i < n {
        if is_space(b[i]) {
            i += 1;
        } else if at_comment(b, i) {
            i = skip_comment(b, i);
            closed = true;
        } else {
            if closed {
                out.extend_from_slice(&b[left..right]);
                out.push(b' ');
                left = i;
                closed = false;
            }
            i = skip_unit(b, i);
            right = i;
        }
    }
    out.extend_from_slice(&b[left..right]);
    out
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Expand the backslash escape at `b[i]` into `out`; return the index after it.
fn process_backslash(b: &[u8], i: usize, out: &mut Vec<u8>) -> Result<usize, String> {
    let n = b.len();
    let Some(&c) = b.get(i + 1) else {
        out.push(b'\\');
        return Ok(n);
    };
    let simple = |byte: u8, out: &mut Vec<u8>| {
        out.push(byte);
        Ok(i + 2)
    };
    match c {
        b'\r' => Ok(if b.get(i + 2) == Some(&b'\n') {
            i + 3
        } else {
            i + 2
        }),
        b'\n' => Ok(i + 2),
        b'a' => simple(0x07, out),
        b'b' => simple(0x08, out),
        b'f' => simple(0x0c, out),
        b'n' => simple(b'\n', out),
        b'r' => simple(b'\r', out),
        b't' => simple(b'\t', out),
        b'v' => simple(0x0b, out),
        b'0'..=b'7' => {
            let mut j = i + 1;
            let mut v: u32 = 0;
            while j < n && j < i + 4 && (b'0'..=b'7').contains(&b[j]) {
                v = v * 8 + u32::from(b[j] - b'0');
                j += 1;
            }
            let byte =
                u8::try_from(v).map_err(|_| format!("octal escape '\\{:o}' out of range", v))?;
            out.push(byte);
            Ok(j)
        }
        b'x' => {
            let mut j = i + 2;
            let mut v: u8 = 0;
            while j < n && j < i + 4 {
                match hex_value(b[j]) {
                    Some(d) => v = v * 16 + d,
                    None => break,
                }
                j += 1;
            }
            if j == i + 2 {
                return Err("'\\x' escape without hex digits".to_string());
            }
            out.push(v);
            Ok(j)
        }
        b'<' => {
            let mut j = i + 2;
            let mut pending: Option<u8> = None;
            while j < n {
                let d = b[j];
                if d == b'>' {
                    if pending.is_some() {
                        return Err("odd number of hex digits in '\\<...>'".to_string());
                    }
                    return Ok(j + 1);
                } else if let Some(h) = hex_value(d) {
                    match pending.take() {
                        Some(hi) => out.push(hi * 16 + h),
                        None => pending = Some(h),
                    }
                    j += 1;
                } else if at_comment(b, j) {
                    j = skip_comment(b, j);
                } else if is_space(d) {
                    j += 1;
                } else {
                    return Err(format!(
                        "invalid character '{}' in '\\<...>'",
                        char::from(d).escape_default()
                    ));
                }
            }
            Err("unterminated '\\<...>'".to_string())
        }
        // `\\`, `\'`, `\"`, `\$`, `\,` and anything else: the character itself.
        _ => simple(c, out),
    }
}

/// Remove one level of quoting from a configuration argument (Click's
/// `cp_unquote`), returning the raw bytes.
///
/// Comments outside quotes are removed and surrounding space is trimmed
/// first. Then `'...'` is replaced by its contents (no escapes), `"..."` by
/// its contents with backslash escapes expanded (`\n`, `\t`, `\r`, `\a`,
/// `\b`, `\f`, `\v`, one to three octal digits, `\xHH`, `\<hex bytes>`,
/// backslash-newline as a line continuation, and `\c` for any other `c`),
/// and `\<48 65 6c>` hex data is expanded even outside quotes. Adjacent
/// pieces are joined: `"a"'b'c` gives `abc`.
///
/// Errors: an unterminated quote or `\<...>`, an odd number of hex digits or
/// a non-hex character in `\<...>`, `\x` without digits, an octal escape above
/// `\377`. (Click silently accepts these; they are always typing mistakes.)
pub fn unquote(s: &str) -> Result<Vec<u8>, String> {
    let b = uncomment(s.as_bytes());
    let n = b.len();
    let mut out = Vec::with_capacity(n);
    let mut i = 0;
    while i < n {
        match b[i] {
            b'"' => {
                i += 1;
                loop {
                    match b.get(i) {
                        None => return Err("unterminated double-quoted string".to_string()),
                        Some(b'"') => {
                            i += 1;
                            break;
                        }
                        Some(b'\\') => i = process_backslash(&b, i, &mut out)?,
                        Some(&c) => {
                            out.push(c);
                            i += 1;
                        }
                    }
                }
            }
            b'\'' => match b[i + 1..].iter().position(|&c| c == b'\'') {
                Some(p) => {
                    out.extend_from_slice(&b[i + 1..i + 1 + p]);
                    i += p + 2;
                }
                None => return Err("unterminated single-quoted string".to_string()),
            },
            b'\\' if b.get(i + 1) == Some(&b'<') => i = process_backslash(&b, i, &mut out)?,
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// Like [`unquote`], but the result must be valid UTF-8.
pub fn unquote_str(s: &str) -> Result<String, String> {
    String::from_utf8(unquote(s)?).map_err(|_| "invalid UTF-8 in string".to_string())
}

/// Click's `cp_string` test: `s` is one non-empty unit with no unquoted
/// space (quoted pieces may contain spaces).
pub(crate) fn is_single_string(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if is_space(b[i]) {
            return false;
        }
        i = skip_unit(b, i);
    }
    !b.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_forms() {
        assert_eq!(unquote_str("abc").unwrap(), "abc");
        assert_eq!(unquote_str("  abc  ").unwrap(), "abc");
        assert_eq!(unquote_str("'a b'").unwrap(), "a b");
        assert_eq!(unquote_str(r#"'a\nb'"#).unwrap(), "a\\nb");
        assert_eq!(unquote_str(r#""a\nb\t\"q\"""#).unwrap(), "a\nb\t\"q\"");
        assert_eq!(unquote_str(r#""a"'b'c"#).unwrap(), "abc");
        assert_eq!(unquote_str(r#"'"'"'""#).unwrap(), "\"'");
        assert_eq!(unquote_str(r#""\$\,\\\'""#).unwrap(), "$,\\'");
        assert_eq!(unquote_str("\"\"").unwrap(), "");
        assert_eq!(unquote_str("").unwrap(), "");
        // Backslashes outside quotes are literal, except `\<`.
        assert_eq!(unquote_str(r"a\nb").unwrap(), "a\\nb");
        // Backslash-newline continues a line.
        assert_eq!(unquote_str("\"a\\\nb\"").unwrap(), "ab");
        assert_eq!(unquote_str("\"a\\\r\nb\"").unwrap(), "ab");
    }

    #[test]
    fn numeric_escapes() {
        assert_eq!(unquote(r#""\x41\x7a\x4""#).unwrap(), b"Az\x04");
        assert_eq!(unquote(r#""\x414""#).unwrap(), b"A4");
        assert_eq!(unquote(r#""\101\0\7""#).unwrap(), b"A\0\x07");
        assert_eq!(unquote(r#""\1011""#).unwrap(), b"A1");
        assert_eq!(unquote(r#""\377""#).unwrap(), vec![0xff]);
        assert_eq!(
            unquote(r#""\<48656c6C 6f 2 /* And finally */ 1>""#).unwrap(),
            b"Hello!"
        );
        assert_eq!(unquote(r"\<00 01>x\<ff>").unwrap(), vec![0, 1, b'x', 0xff]);
        assert_eq!(unquote(r"\<>").unwrap(), Vec::<u8>::new());
        // Inside single quotes, `\<` is literal.
        assert_eq!(unquote(r"'\<00>'").unwrap(), b"\\<00>");
    }

    #[test]
    fn comments_are_removed_outside_quotes() {
        assert_eq!(unquote_str("a /* c */ b").unwrap(), "a b");
        assert_eq!(unquote_str("a   b").unwrap(), "a   b");
        assert_eq!(unquote_str("x // rest").unwrap(), "x");
        assert_eq!(unquote_str("\"/* keep */\"").unwrap(), "/* keep */");
        assert_eq!(unquote_str("'a // b'").unwrap(), "a // b");
        assert_eq!(
            unquote_str("\"\\n\" abc /* 123 */ '/* def */'").unwrap(),
            "\n abc /* def */"
        );
    }

    #[test]
    fn errors() {
        assert_eq!(
            unquote("\"abc").unwrap_err(),
            "unterminated double-quoted string"
        );
        assert_eq!(
            unquote("\"ab\\\"").unwrap_err(),
            "unterminated double-quoted string"
        );
        assert_eq!(
            unquote("'abc").unwrap_err(),
            "unterminated single-quoted string"
        );
        assert_eq!(unquote(r"\<00").unwrap_err(), "unterminated '\\<...>'");
        assert_eq!(
            unquote(r"\<0>").unwrap_err(),
            "odd number of hex digits in '\\<...>'"
        );
        assert_eq!(
            unquote(r"\<0g>").unwrap_err(),
            "invalid character 'g' in '\\<...>'"
        );
        assert_eq!(
            unquote(r#""\xg""#).unwrap_err(),
            "'\\x' escape without hex digits"
        );
        assert_eq!(
            unquote(r#""\477""#).unwrap_err(),
            "octal escape '\\477' out of range"
        );
        assert_eq!(
            unquote_str(r#""\xff""#).unwrap_err(),
            "invalid UTF-8 in string"
        );
    }

    #[test]
    fn single_string_test() {
        assert!(is_single_string("abc"));
        assert!(is_single_string("\"a b\"'c d'"));
        assert!(is_single_string(r"\<00 11>"));
        assert!(!is_single_string("a b"));
        assert!(!is_single_string(""));
        assert!(!is_single_string("\"a\" b"));
    }
}

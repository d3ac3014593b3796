//! Splitting a configuration string into arguments (Click's `cp_argvec`).

/// Split `s` at top-level commas, as Click's `cp_argvec` does.
///
/// Commas inside single or double quotes, parentheses, brackets or braces do
/// not separate arguments. `//` and `/* */` comments outside quotes are
/// removed. Each argument has surrounding whitespace trimmed. An empty final
/// argument is dropped, so `"a, b,"` gives `["a", "b"]` and `""` gives `[]`.
pub fn split_args(s: &str) -> Vec<String> {
    let b = s.as_bytes();
    let mut args = Vec::new();
    let mut cur = String::new();
    let mut depth: u32 = 0;
    let mut i = 0;
    let mut seg_start = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'\'' => {
                i += 1;
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                cur.push_str(&s[seg_start..i]);
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                seg_start = i;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                cur.push_str(&s[seg_start..i]);
                cur.push(' ');
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i = (i + 2).min(b.len());
                seg_start = i;
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                i += 1;
            }
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b',' if depth == 0 => {
                cur.push_str(&s[seg_start..i]);
                args.push(cur.trim().to_string());
                cur.clear();
                i += 1;
                seg_start = i;
            }
            _ => i += 1,
        }
    }
    cur.push_str(&s[seg_start.min(b.len())..]);
    let last = cur.trim();
    if !last.is_empty() {
        args.push(last.to_string());
    }
    args
}

#[cfg(test)]
mod tests {
    use super::split_args;

    #[test]
    fn splits_at_top_level_commas() {
        assert_eq!(split_args("a, b ,c"), vec!["a", "b", "c"]);
        assert_eq!(split_args(""), Vec::<String>::new());
        assert_eq!(split_args("  "), Vec::<String>::new());
        assert_eq!(split_args("a, b,"), vec!["a", "b"]);
        assert_eq!(split_args("a,,b"), vec!["a", "", "b"]);
        assert_eq!(split_args("f(a, b), c"), vec!["f(a, b)", "c"]);
        assert_eq!(split_args("\"x, y\", 'p,q'"), vec!["\"x, y\"", "'p,q'"]);
        assert_eq!(split_args("\"a\\\", b\", c"), vec!["\"a\\\", b\"", "c"]);
        assert_eq!(split_args("a // c, d\n, e"), vec!["a", "e"]);
        assert_eq!(split_args("a /* , */ b, e"), vec!["a   b", "e"]);
    }
}

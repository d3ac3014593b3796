//! Click-style tests: every `tests/click/**/*.testie` file is a script run
//! through the `click` driver (a symlink to `linerate`) with its expected
//! output, in the subset of Click's testie format described in
//! `tests/click/README.md`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Testie {
    path: PathBuf,
    script: String,
    stdin: Option<String>,
    files: Vec<(String, String)>,
    expect_stdout: Option<String>,
    expect_stderr: Option<String>,
}

fn parse(path: &Path) -> Result<Testie, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut t = Testie {
        path: path.into(),
        script: String::new(),
        stdin: None,
        files: vec![],
        expect_stdout: None,
        expect_stderr: None,
    };
    let mut section: Option<(String, Vec<String>)> = None;
    let flush = |sec: Option<(String, Vec<String>)>, t: &mut Testie| -> Result<(), String> {
        let Some((head, lines)) = sec else {
            return Ok(());
        };
        let body = if lines.is_empty() {
            String::new()
        } else {
            lines.join("\n") + "\n"
        };
        let words: Vec<&str> = head.split_whitespace().collect();
        match words.as_slice() {
            ["%info", ..] => {}
            ["%script"] => t.script = body,
            ["%stdin"] => t.stdin = Some(body),
            ["%file", name] => t.files.push((name.to_string(), body)),
            ["%expect", "stdout"] => t.expect_stdout = Some(body),
            ["%expect", "stderr"] => t.expect_stderr = Some(body),
            _ => return Err(format!("unknown section '{head}'")),
        }
        Ok(())
    };
    for line in text.lines() {
        if line.starts_with('%') {
            flush(section.take(), &mut t)?;
            section = Some((line.to_string(), vec![]));
        } else if let Some((_, l)) = section.as_mut() {
            l.push(line.to_string());
        }
    }
    flush(section.take(), &mut t)?;
    if t.script.trim().is_empty() {
        return Err("no %script section".into());
    }
    Ok(t)
}

/// Match `actual` against `expected`, where `{{REGEX}}` in an expected line
/// matches a regular expression and other text matches exactly.
fn matches(expected: &str, actual: &str) -> bool {
    let mut pat = String::from("^");
    let mut rest = expected;
    while let Some(i) = rest.find("{{") {
        pat.push_str(&regex::escape(&rest[..i]));
        let Some(j) = rest[i + 2..].find("}}") else {
            return false;
        };
        pat.push_str(&format!("(?:{})", &rest[i + 2..i + 2 + j]));
        rest = &rest[i + 2 + j + 2..];
    }
    pat.push_str(&regex::escape(rest));
    pat.push('$');
    regex::RegexBuilder::new(&pat)
        .multi_line(false)
        .build()
        .map(|r| r.is_match(actual))
        .unwrap_or(false)
}

fn run(t: &Testie, bin_dir: &Path, root: &Path) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!(
        "linerate-testie-{}-{}",
        std::process::id(),
        t.path.file_stem().unwrap().to_string_lossy()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    for (name, body) in &t.files {
        std::fs::write(dir.join(name), body).map_err(|e| e.to_string())?;
    }
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(&t.script)
        .current_dir(&dir)
        .env("PATH", path)
        .env("TRACES", root.join("../shared/traces"))
        .env("EXAMPLES", root.join("examples"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let input = t.stdin.clone().unwrap_or_default();
    let mut sin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = sin.write_all(input.as_bytes());
    });
    let start = Instant::now();
    let out = loop {
        if child.try_wait().map_err(|e| e.to_string())?.is_some() {
            break child.wait_with_output().map_err(|e| e.to_string())?;
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            return Err("timed out after 30 s".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let _ = writer.join();
    let _ = std::fs::remove_dir_all(&dir);
    let (so, se) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let mut errs = Vec::new();
    if se.contains("panicked") {
        errs.push(format!("panic:\n{se}"));
    }
    if let Some(e) = &t.expect_stdout {
        if !matches(e, &so) {
            errs.push(format!("stdout differs\n--- expected\n{e}--- actual\n{so}"));
        }
    }
    if let Some(e) = &t.expect_stderr {
        if !matches(e, &se) {
            errs.push(format!("stderr differs\n--- expected\n{e}--- actual\n{se}"));
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("\n"))
    }
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|x| x == "testie") {
            out.push(p);
        }
    }
}

#[test]
fn click_style_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let bin_dir = std::env::temp_dir().join(format!("linerate-testie-bin-{}", std::process::id()));
    std::fs::create_dir_all(&bin_dir).unwrap();
    for name in ["click", "linerate"] {
        let _ = std::fs::remove_file(bin_dir.join(name));
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_linerate"), bin_dir.join(name)).unwrap();
    }
    let mut files = Vec::new();
    collect(&root.join("tests/click"), &mut files);
    files.sort();
    assert!(!files.is_empty(), "no .testie files under tests/click");
    let mut failures = Vec::new();
    for f in &files {
        let r = parse(f).and_then(|t| run(&t, &bin_dir, &root));
        if let Err(e) = r {
            failures.push(format!(
                "{}: {e}",
                f.strip_prefix(&root).unwrap_or(f).display()
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&bin_dir);
    println!(
        "{} Click-style tests, {} failed",
        files.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

#[test]
fn expectations_support_regex_holes() {
    assert!(matches("a {{[0-9]+}} b\n", "a 123 b\n"));
    assert!(!matches("a {{[0-9]+}} b\n", "a x b\n"));
    assert!(matches("x.y\n", "x.y\n"));
    assert!(!matches("x.y\n", "xzy\n"));
}

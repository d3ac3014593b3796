//! Extracts each element file's leading `//!` comment (its reference
//! documentation) into `$OUT_DIR/doc/<category>/<file>.md`, so that the
//! element class can embed it with `element_doc!("category/file")`.

use std::fs;
use std::path::Path;

fn walk(dir: &Path, root: &Path, out: &Path) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for ent in rd.flatten() {
        let p = ent.path();
        if p.is_dir() {
            walk(&p, root, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let rel = p.strip_prefix(root).expect("under src");
            let text = fs::read_to_string(&p).expect("readable source");
            let doc: String = text
                .lines()
                .take_while(|l| l.starts_with("//!"))
                .map(|l| {
                    let l = &l[3..];
                    format!("{}\n", l.strip_prefix(' ').unwrap_or(l))
                })
                .collect();
            let dest = out.join(rel.with_extension("md"));
            fs::create_dir_all(dest.parent().expect("parent")).expect("create doc dir");
            fs::write(dest, doc).expect("write doc");
        }
    }
    println!("cargo:rerun-if-changed={}", dir.display());
}

fn main() {
    let root = Path::new("src");
    let out = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("doc");
    walk(root, root, &out);
}

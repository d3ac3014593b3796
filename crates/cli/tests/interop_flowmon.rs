//! nfs/flowmon.click against a real collector: runs
//! `interop/flowmon/check.sh`, which exports IPFIX (one-way and biflow) and
//! NetFlow v9 from the shared traces to nfdump's `nfcapd` on loopback and
//! compares what `nfdump` decodes with flowmon's counts, the traces'
//! reference values and literal flows. Skipped, with a message, only when
//! nfdump is not installed and cannot be installed (exit status 77).

use std::path::Path;
use std::process::Command;

#[test]
fn flowmon_exports_what_nfdump_reads_back() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let traces = root.join("../shared/traces/pathspider-real-lan2012.pcap");
    assert!(
        traces.exists(),
        "the shared traces must be beside the repository: {}",
        traces.display()
    );
    let out = Command::new("bash")
        .arg(root.join("interop/flowmon/check.sh"))
        .arg(env!("CARGO_BIN_EXE_linerate"))
        .output()
        .expect("run interop/flowmon/check.sh");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    match out.status.code() {
        Some(0) => assert!(text.contains("PASS"), "{text}"),
        Some(77) => eprintln!("skipped: {}", text.trim()),
        _ => panic!("interop/flowmon/check.sh failed:\n{text}"),
    }
}

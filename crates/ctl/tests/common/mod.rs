//! Helpers shared by the integration tests: a router running in a thread,
//! unique socket paths, and polling with a deadline.

#![allow(dead_code)] // each test binary uses its own subset

use linerate_ctl::Globals;
use linerate_lang::{parse_str, ParseOptions};
use linerate_runtime::{Router, RouterHandle, RouterOptions};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A router in its own thread; dropping it stops the router.
pub struct Running {
    pub handle: RouterHandle,
    pub flat: String,
    go: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Running {
    /// Build `config` in a thread that waits for [`Running::go`] to run it.
    pub fn build(config: &str) -> Running {
        let (tx, rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let text = config.to_string();
        let thread = std::thread::spawn(move || {
            let registry = linerate_elements::registry();
            let parsed = parse_str(&text, "test.click", &ParseOptions::new(&registry))
                .expect("config parses");
            let mut router =
                Router::build(&parsed, &registry, RouterOptions::default()).expect("router builds");
            tx.send((router.handle(), router.flat_config().to_string()))
                .expect("test waits for the handle");
            if go_rx.recv().is_ok() {
                router.run();
            }
        });
        let (handle, flat) = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("router built");
        Running {
            handle,
            flat,
            go: Some(go_tx),
            thread: Some(thread),
        }
    }

    /// Start the run and wait until it is under way.
    pub fn go(mut self) -> Running {
        if let Some(go) = self.go.take() {
            go.send(()).expect("router thread waits");
        }
        assert!(
            wait_until(Duration::from_secs(10), || self.handle.running()),
            "router runs"
        );
        self
    }

    /// Build `config` and run it.
    pub fn start(config: &str) -> Running {
        Running::build(config).go()
    }

    /// Wait until reading `handler` gives `value` (and a newline).
    pub fn wait_for(&self, handler: &str, value: &str) {
        let ok = wait_until(Duration::from_secs(20), || {
            self.handle.call(handler, None) == Ok(format!("{value}\n"))
        });
        assert!(
            ok,
            "{handler} never became {value}: {:?}",
            self.handle.call(handler, None)
        );
    }

    /// Globals for this router.
    pub fn globals(&self) -> Arc<Globals> {
        Arc::new(Globals {
            version: "0.1.0-test".into(),
            config: "// the config\n".into(),
            flatconfig: self.flat.clone(),
            classes: vec!["Counter".into(), "Discard".into()],
        })
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Dropping `go` releases a router that never ran.
        self.go = None;
        self.handle.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Poll `f` every 5 ms until it holds or `limit` passes.
pub fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    loop {
        if f() {
            return true;
        }
        if Instant::now() > end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A temporary directory, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A fresh directory under the system temporary directory.
    pub fn new() -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "linerate-ctl-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    /// A path inside the directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The three-element test router: a source that stops after 1000 packets.
pub const SMALL: &str = "src :: InfiniteSource(LIMIT 1000) -> c :: Counter -> Discard;";

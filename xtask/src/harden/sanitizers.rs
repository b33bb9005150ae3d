//! tether-core's tests (the C plugin test, tests/c_plugin.rs, among them) under
//! AddressSanitizer (with LeakSanitizer) and ThreadSanitizer: nightly `-Zsanitizer`, the
//! standard library rebuilt with it (`-Zbuild-std`), each in its own target dir (target/asan,
//! target/tsan) so the ordinary builds stay as they are. The test plugins are built plainly and
//! passed in (TETHER_TEST_PLUGIN, TETHER_TEST_PLUGIN_BAD_ABI, TETHER_TEST_PLUGIN_DIR): an
//! uninstrumented library loads into a sanitized process, while one built with the flag would
//! need the runtime's symbols exported. The Python conformance suite runs against an
//! AddressSanitizer build of the extension and the test plugins too ([`python`]).

use std::time::Instant;

use super::{nightly_cargo, run_logged, secs, Figures, SUITE, TARGET};
use crate::util::{step, Result};
use crate::workspace::Ctx;

mod python;

/// `--cfg tether_asan`: the Python frontend keeps its native words plain addresses there (no
/// type index above the address), which LeakSanitizer can follow (crates/python/src/wrapper.rs).
const ASAN_FLAGS: &str = "-Zsanitizer=address --cfg tether_asan";
/// The lines that start an AddressSanitizer or LeakSanitizer report.
const ASAN_REPORTS: &[&str] = &["ERROR: AddressSanitizer", "ERROR: LeakSanitizer"];

/// (name, RUSTFLAGS, lines that start a report). ThreadSanitizer does not model fences, so the
/// core's refcount uses an acquire load there instead (`--cfg tether_tsan`, crates/core/src/object.rs).
const SANITIZERS: [(&str, &str, &[&str]); 2] = [
    ("asan", ASAN_FLAGS, ASAN_REPORTS),
    ("tsan", "-Zsanitizer=thread --cfg tether_tsan", &["WARNING: ThreadSanitizer"]),
];

/// The type registry's by-design leaks (append-only, process-wide) and the C test plugin's.
const LSAN_SUPPRESSIONS: &str = "xtask/src/harden/lsan-suppressions.txt";

/// The quick run's ThreadSanitizer subset: the test binaries whose threads share objects.
const TSAN_QUICK: [&str; 3] = ["concurrency", "thread_spares", "tying"];

pub fn run(ctx: &Ctx, quick: bool) -> Result<(Vec<Figures>, Vec<String>)> {
    // Every test plugin, built plainly: a test that had to build one itself (crates/core/tests/
    // plugins.rs without TETHER_TEST_PLUGIN_DIR) would build it with the sanitizer's RUSTFLAGS,
    // into target/debug, and it would not load (undefined __asan_* symbols).
    let plugins = ctx.test_plugins(SUITE)?;
    let (plugin, bad_abi) = (&plugins.sample, &plugins.bad_abi);
    let mut figures = Vec::new();
    let mut skipped = Vec::new();
    for (name, flag, markers) in SANITIZERS {
        let mut cmd = nightly_cargo()
            .args(["test", "-Zbuild-std", "--target", TARGET, "-p", "tether-core", "--no-fail-fast", "--target-dir"])
            .arg(ctx.target_dir.join(name))
            .env("RUSTFLAGS", flag)
            .env("TETHER_TEST_PLUGIN", plugin)
            .env("TETHER_TEST_PLUGIN_BAD_ABI", bad_abi)
            .env("TETHER_TEST_PLUGIN_DIR", &plugins.dir)
            .env("ASAN_OPTIONS", "detect_leaks=1")
            .env("LSAN_OPTIONS", format!("suppressions={}:print_suppressions=0", ctx.path(LSAN_SUPPRESSIONS).display()))
            .env("TSAN_OPTIONS", "halt_on_error=0")
            // Sanitized frames are several times larger (ASan's redzones): libtest's 2 MiB
            // threads overflowed rendering the deepest descriptor the host takes (4096 nested
            // nodes, tests/signatures.rs), which the plain build renders on that stack.
            .env("RUST_MIN_STACK", (16 << 20).to_string())
            .cwd(&ctx.root);
        let scope = if quick && name == "tsan" {
            for t in TSAN_QUICK {
                cmd = cmd.args(["--test", t]);
            }
            skipped
                .push(format!("tsan: the quick run has only {} (the full run has every test)", TSAN_QUICK.join(", ")));
            TSAN_QUICK.join("+")
        } else {
            cmd = cmd.arg("--tests");
            "every test".to_string()
        };
        step(SUITE, format!("tether-core tests under {flag} ({scope})"));
        let started = Instant::now();
        let (code, log) = run_logged(&cmd, &ctx.target_dir.join("harden").join(format!("{name}.log")))?;
        let elapsed = started.elapsed().as_millis();
        let (passed, failed, binaries) = test_counts(&log);
        let reports = log.lines().filter(|l| markers.iter().any(|m| l.contains(m))).count();
        for l in log.lines().filter(|l| markers.iter().any(|m| l.contains(m)) || l.starts_with("test result: FAILED")) {
            println!("    {l}");
        }
        figures.push(Figures {
            part: format!("{name} tether-core"),
            values: vec![
                ("test binaries".into(), binaries.to_string()),
                ("tests passed".into(), passed.to_string()),
                ("failed".into(), failed.to_string()),
                ("reports".into(), reports.to_string()),
                ("time".into(), secs(elapsed)),
            ],
            failed: code != Some(0) || reports > 0 || failed > 0 || binaries == 0,
        });
    }
    let (python, why) = python::run(ctx, quick)?;
    figures.push(python);
    skipped.extend(why);
    Ok((figures, skipped))
}

/// The number just before `word` in `line` (`12` in "12 passed"), 0 when there is none.
fn number_before(line: &str, word: &str) -> u64 {
    let Some(end) = line.find(word) else { return 0 };
    line[..end].split_whitespace().last().and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// (passed, failed, test binaries) summed over libtest's `test result:` lines.
fn test_counts(log: &str) -> (u64, u64, u64) {
    log.lines()
        .filter(|l| l.starts_with("test result:"))
        .fold((0, 0, 0), |(p, f, b), l| (p + number_before(l, " passed"), f + number_before(l, " failed"), b + 1))
}

#[cfg(test)]
mod tests {
    #[test]
    fn sums_test_results() {
        let log = "test result: ok. 12 passed; 0 failed; 0 ignored\nnoise\ntest result: FAILED. 3 passed; 2 failed; 1 ignored\n";
        assert_eq!(super::test_counts(log), (15, 2, 2));
    }
}

//! The libFuzzer targets of fuzz/: built with nightly and coverage instrumentation (the flags
//! `cargo fuzz build` passes, so cargo-fuzz need not be installed), then each run for a fixed
//! time on its corpus (fuzz/corpus/<target>, kept between runs). A crash, leak, timeout or
//! out-of-memory input is written to fuzz/artifacts/<target>/ and counted as a finding.

use std::path::Path;
use std::time::Instant;

use super::{nightly_cargo, run_logged, secs, Figures, SUITE, TARGET};
use crate::util::{fail, step, Result};
use crate::workspace::Ctx;

/// Every target, with the ASAN_OPTIONS it runs under: the type registry keeps what it is given
/// for the life of the process, so that target's leaks are by design (LeakSanitizer off).
const TARGETS: [(&str, &str); 3] =
    [("any_cells", "detect_leaks=1"), ("type_info", "detect_leaks=0"), ("slot_machine", "detect_leaks=1")];

/// cargo-fuzz's flags for `cargo fuzz build` (sancov with inline 8-bit counters, compare
/// tracing, ASan, debug assertions).
const RUSTFLAGS: &str = "-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
    -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks \
    -Zsanitizer=address -Cforce-frame-pointers";

pub fn run(ctx: &Ctx, quick: bool) -> Result<Vec<Figures>> {
    let fuzz_dir = ctx.root.join("fuzz");
    let target_dir = ctx.target_dir.join("fuzz");
    let started = Instant::now();
    step(SUITE, "cargo +nightly build --release (fuzz/, libFuzzer + ASan)");
    nightly_cargo()
        .args(["build", "--release", "--bins", "--target", TARGET, "--target-dir"])
        .arg(&target_dir)
        .env("RUSTFLAGS", RUSTFLAGS)
        .cwd(&fuzz_dir)
        .hint("the fuzz targets need a nightly toolchain (rustup toolchain install nightly) and a C++ compiler")
        .run()?;
    println!("    fuzz build: {}", secs(started.elapsed().as_millis()));
    let seconds = if quick { 8 } else { 120 };
    let bin_dir = target_dir.join(TARGET).join("release");
    TARGETS.iter().map(|(name, asan)| run_target(ctx, &bin_dir, name, asan, seconds)).collect()
}

fn run_target(ctx: &Ctx, bin_dir: &Path, name: &str, asan: &str, seconds: u32) -> Result<Figures> {
    let corpus = ctx.root.join("fuzz/corpus").join(name);
    let artifacts = ctx.root.join("fuzz/artifacts").join(name);
    for dir in [&corpus, &artifacts] {
        std::fs::create_dir_all(dir).map_err(|e| fail(format!("cannot create {}: {e}", dir.display())))?;
    }
    let before = files(&artifacts);
    step(SUITE, format!("fuzz {name} for {seconds} s"));
    let cmd = crate::util::Cmd::new(bin_dir.join(name))
        .arg(format!("-max_total_time={seconds}"))
        .arg("-print_final_stats=1")
        .arg("-rss_limit_mb=4096")
        .arg("-timeout=20")
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .arg(&corpus)
        .env("ASAN_OPTIONS", asan);
    let started = Instant::now();
    let (code, log) = run_logged(&cmd, &ctx.target_dir.join("harden").join(format!("fuzz-{name}.log")))?;
    let elapsed = started.elapsed().as_millis();
    let new: Vec<String> = files(&artifacts).into_iter().filter(|f| !before.contains(f)).collect();
    let executions = stat(&log, "stat::number_of_executed_units:").unwrap_or(0);
    let findings = new.len() + usize::from(code != Some(0) && new.is_empty());
    for f in &new {
        println!("    finding: fuzz/artifacts/{name}/{f}");
    }
    if findings > 0 {
        let why: Vec<&str> =
            log.lines().filter(|l| l.contains("panicked at") || l.contains("ERROR:")).take(4).collect();
        why.iter().for_each(|l| println!("    {l}"));
    }
    Ok(Figures {
        part: format!("fuzz {name}"),
        values: vec![
            ("executions".into(), executions.to_string()),
            ("per second".into(), (executions as u128 * 1000 / elapsed.max(1)).to_string()),
            ("corpus".into(), format!("{} inputs", files(&corpus).len())),
            ("coverage".into(), format!("{} edges", stat(&log, "cov:").unwrap_or(0))),
            ("findings".into(), findings.to_string()),
            ("time".into(), secs(elapsed)),
        ],
        failed: findings > 0,
    })
}

fn files(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

/// The last number after `key` in libFuzzer's output (`stat::...: N`, or `cov: N` of the
/// last status line).
pub(super) fn stat(log: &str, key: &str) -> Option<u64> {
    log.lines().rev().find_map(|l| {
        let rest = &l[l.find(key)? + key.len()..];
        rest.split_whitespace().next()?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::stat;

    #[test]
    fn reads_libfuzzer_figures() {
        let log =
            "#2\tINITED cov: 10 ft: 11\n#900\tDONE   cov: 96 ft: 300 corp: 9/1b\nstat::number_of_executed_units: 900\n";
        assert_eq!(stat(log, "stat::number_of_executed_units:"), Some(900));
        assert_eq!(stat(log, "cov:"), Some(96));
        assert_eq!(stat(log, "missing:"), None);
    }
}

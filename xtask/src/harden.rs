//! `cargo xtask harden [--quick] [--only PART,...]`: what tether survives, measured. Fuzzing
//! (libFuzzer targets in fuzz/ over the C ABI and the slot state machine), tether-core's tests
//! under AddressSanitizer and ThreadSanitizer and the Python suite against an AddressSanitizer
//! build of the extension, the language-level fuzzers (atheris, fast-check
//! and a seeded generator over each frontend's call arguments), shutdown storms, injected
//! allocation failures, scale (a million objects, 16 threads) and valgrind memcheck over the
//! Python and Node suites, each printing its figures; the full run of every part also writes
//! them into docs/reliability.md between its markers. Every figure comes from this run.
//!
//! `--quick` (a few seconds per fuzz target, the sanitizers on tree already built, 5 runs per
//! storm, one small test file under valgrind) fits in a few minutes on top of built trees; the
//! full run takes minutes per part. `--only` runs some of the parts ([`PARTS`]); such a run
//! writes no figures. The quick storms, faults and scale are also `cargo xtask test`'s
//! `harden` suite ([`quick_suite`]).

mod faults;
mod fuzz;
mod lang;
mod memcheck;
mod report;
mod sanitizers;
mod scale;
mod scripts;
mod storms;

use std::time::Instant;

use crate::util::{fail, step, which, Cmd, Result};
use crate::workspace::Ctx;

pub const SUITE: &str = "harden";

/// One part's figures: a name and `key = value` pairs, as printed and as written to the doc.
pub struct Figures {
    pub part: String,
    pub values: Vec<(String, String)>,
    /// Unexplained findings or reports: the run fails.
    pub failed: bool,
}

impl Figures {
    fn print(&self) {
        let values: Vec<String> = self.values.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let verdict = if self.failed { "FAILED" } else { "ok" };
        println!("    {:<28} {verdict}: {}", self.part, values.join(", "));
    }
}

/// The parts, in the order they run.
pub const PARTS: [&str; 7] = ["fuzz", "sanitizers", "lang", "storms", "faults", "scale", "memcheck"];

/// Runs the parts in `only` (every part when empty).
pub fn run(quick: bool, only: &[&str]) -> Result {
    let ctx = Ctx::load()?;
    let started = Instant::now();
    let selected = |part: &str| only.is_empty() || only.contains(&part);
    // Only the libFuzzer targets and the sanitizers need nightly.
    let nightly = if selected("fuzz") || selected("sanitizers") { nightly()? } else { stable_rustc() };
    let mut all: Vec<Figures> = Vec::new();
    let mut skipped: Vec<String> = Vec::new();

    if selected("fuzz") {
        step(SUITE, format!("fuzzing ({})", if quick { "quick" } else { "full" }));
        all.extend(fuzz::run(&ctx, quick)?);
    }
    if selected("sanitizers") {
        step(SUITE, "sanitizers");
        let (figures, why) = sanitizers::run(&ctx, quick)?;
        all.extend(figures);
        skipped.extend(why);
    }
    if selected("lang") {
        step(SUITE, format!("language-level fuzzers ({})", if quick { "quick" } else { "full" }));
        let (figures, notes) = lang::run(&ctx, quick)?;
        all.extend(figures);
        skipped.extend(notes);
    }
    let form = if quick { "quick" } else { "full" };
    if selected("storms") {
        step(SUITE, format!("shutdown storms ({form})"));
        all.extend(storms::run(&ctx, quick)?);
    }
    if selected("faults") {
        step(SUITE, format!("injected allocation failures ({form})"));
        all.extend(faults::run(&ctx, quick)?);
    }
    if selected("scale") {
        step(SUITE, format!("scale ({form})"));
        all.extend(scale::run(&ctx, quick)?);
    }
    if selected("memcheck") {
        step(SUITE, format!("valgrind memcheck ({form})"));
        all.extend(memcheck::run(&ctx, quick)?);
        if quick {
            skipped.push(format!(
                "memcheck: the quick run checks {} and {} only (the full run: both suites)",
                memcheck::QUICK_PYTHON,
                memcheck::QUICK_NODE
            ));
        }
    }

    let elapsed = started.elapsed().as_secs();
    println!("==> harden figures ({} run, {elapsed} s, {nightly})", if quick { "quick" } else { "full" });
    all.iter().for_each(Figures::print);
    skipped.iter().for_each(|s| println!("    skipped: {s}"));
    if !quick && only.is_empty() {
        report::write(&ctx, &all, &skipped, elapsed, &nightly)?;
    } else if !quick {
        println!("    docs/reliability.md not written: only the full run of every part writes its figures");
    }
    let failed: Vec<&str> = all.iter().filter(|f| f.failed).map(|f| f.part.as_str()).collect();
    let (n_failed, n_passed) = (failed.len(), all.len() - failed.len());
    println!("harden: {n_passed} passed, {n_failed} failed, {} skipped", skipped.len());
    if failed.is_empty() {
        Ok(())
    } else {
        Err(fail(format!("harden: findings or reports in {}", failed.join(", "))))
    }
}

/// `cargo xtask test`'s `harden` suite: the quick storms, faults and scale (about half a
/// minute on top of the built frontends); a finding fails the suite.
pub fn quick_suite(ctx: &Ctx) -> Result<crate::util::Status> {
    let started = Instant::now();
    let mut all = storms::run(ctx, true)?;
    all.extend(faults::run(ctx, true)?);
    all.extend(scale::run(ctx, true)?);
    println!("==> harden quick parts ({} s)", started.elapsed().as_secs());
    all.iter().for_each(Figures::print);
    let failed: Vec<&str> = all.iter().filter(|f| f.failed).map(|f| f.part.as_str()).collect();
    if failed.is_empty() {
        Ok(crate::util::Status::Passed)
    } else {
        Err(fail(format!("harden: findings in {}", failed.join(", ")))
            .hint("rerun one part with: cargo xtask harden --quick --only storms|faults|scale"))
    }
}

/// The nightly toolchain's version line (fuzzing and sanitizers need nightly).
fn nightly() -> Result<String> {
    if which("rustup").is_none() {
        return Err(fail("harden needs rustup with a nightly toolchain").hint("install Rust through rustup"));
    }
    Cmd::new("rustc")
        .args(["+nightly", "--version"])
        .env_remove("RUSTUP_TOOLCHAIN")
        .probe()
        .map(|v| v.trim().to_string())
        .ok_or_else(|| fail("no nightly toolchain").hint("rustup toolchain install nightly --component rust-src"))
}

/// The default toolchain's version line (for a run without the nightly parts).
fn stable_rustc() -> String {
    Cmd::new("rustc").arg("--version").probe().map(|v| v.trim().to_string()).unwrap_or_else(|| "rustc".into())
}

/// `cargo +nightly` through the rustup proxy (not $CARGO, the stable toolchain's binary).
pub fn nightly_cargo() -> Cmd {
    Cmd::new("cargo").arg("+nightly").env_remove("CARGO").env_remove("RUSTUP_TOOLCHAIN")
}

/// The host target triple (sanitizer and fuzz builds name it so build scripts stay plain).
pub const TARGET: &str = "x86_64-unknown-linux-gnu";

/// Runs `cmd` capturing stdout and stderr together into `log`; returns (exit code, text).
pub fn run_logged(cmd: &Cmd, log: &std::path::Path) -> Result<(Option<i32>, String)> {
    let (code, text) = cmd.run_combined()?;
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir).map_err(|e| fail(format!("cannot create {}: {e}", dir.display())))?;
    }
    std::fs::write(log, &text).map_err(|e| fail(format!("cannot write {}: {e}", log.display())))?;
    Ok((code, text))
}

/// `ms` as seconds with one decimal.
pub fn secs(ms: u128) -> String {
    format!("{}.{} s", ms / 1000, (ms % 1000) / 100)
}

//! `cargo xtask bench [--quick]`: tether against its peers (pyo3, nanobind, pybind11, tvm-ffi,
//! napi-rs, raw Node-API, jni 0.22, raw JNI) on the same workloads, in one run.
//!
//! Each language has a harness under benches/<lang> that measures every peer it can load and
//! writes its records to target/bench/<lang>.json; this module builds the peers and tether's
//! frontends, runs the harnesses, then `report` merges the records into target/bench/results.json
//! and (full runs only) docs/benchmarks.md.
//!
//! `--quick` is CI's smoke run: debug builds (reusing what `cargo xtask test` built), tiny
//! iteration counts, and a peer that fails to build or load is reported and skipped.

mod java;
mod node;
mod python;
mod report;

use std::path::PathBuf;

use crate::util::{fail, step, Cmd, Result};
use crate::workspace::Ctx;

/// Cargo packages of the Rust peers (benches/peers/*) start with this; nothing else builds them.
pub const PEER_PACKAGE_PREFIX: &str = "tether-bench-";

const SUITE: &str = "bench";

/// One run's settings, shared by the language steps.
pub struct Bench<'a> {
    pub ctx: &'a Ctx,
    pub quick: bool,
    /// target/bench: venv, built peers, per-language results.
    pub dir: PathBuf,
    /// Problems met on the way (a peer that did not build, a language that could not run).
    pub problems: std::cell::RefCell<Vec<String>>,
}

impl Bench<'_> {
    /// Cargo's profile: release for real numbers, debug for the smoke run (reuses test builds).
    pub fn profile_dir(&self) -> PathBuf {
        self.ctx.target_dir.join(if self.quick { "debug" } else { "release" })
    }

    /// `cargo build [--release] -p <packages>`.
    pub fn cargo_build(&self, packages: &[&str]) -> Result {
        let mut cmd = Cmd::cargo().arg("build").cwd(&self.ctx.root);
        if !self.quick {
            cmd = cmd.arg("--release");
        }
        for p in packages {
            cmd = cmd.args(["-p", p]);
        }
        cmd.hint(format!(
            "reproduce with: cargo build {}-p {}",
            if self.quick { "" } else { "--release " },
            packages.join(" -p ")
        ))
        .run()
    }

    /// The built cdylib of `package` in this run's profile.
    pub fn cdylib(&self, package: &str) -> Result<PathBuf> {
        let debug = self.ctx.cdylib_path(package)?;
        let name = debug.file_name().expect("a cdylib path has a file name");
        Ok(self.profile_dir().join(name))
    }

    /// Runs one optional step: a failure is recorded and reported, and the run goes on.
    pub fn attempt<T>(&self, what: &str, f: impl FnOnce() -> Result<T>) -> Option<T> {
        match f() {
            Ok(v) => Some(v),
            Err(e) => {
                let line = format!("{what}: {}", e.what);
                eprintln!("error: [{SUITE}] {e}");
                println!("skipped: {line}");
                self.problems.borrow_mut().push(line);
                None
            }
        }
    }
}

/// `cargo xtask bench [--quick]`.
pub fn run(quick: bool) -> Result {
    let ctx = Ctx::load()?;
    let bench = Bench { dir: ctx.target_dir.join("bench"), ctx: &ctx, quick, problems: Default::default() };
    std::fs::create_dir_all(&bench.dir).map_err(|e| fail(format!("cannot create {}: {e}", bench.dir.display())))?;
    step(
        SUITE,
        if quick {
            "quick smoke run: debug builds, tiny iteration counts, numbers are not meaningful"
        } else {
            "full run: release builds; this takes several minutes"
        },
    );
    let mut outputs = Vec::new();
    outputs.extend(bench.attempt("python", || python::run(&bench)));
    outputs.extend(bench.attempt("node", || node::run(&bench)));
    outputs.extend(bench.attempt("java", || java::run(&bench)));
    report::write(&bench, &outputs)?;
    let problems = bench.problems.borrow();
    if problems.is_empty() {
        println!("==> bench: done");
        Ok(())
    } else if quick {
        println!("==> bench: done with {} problem(s) (reported above, not fatal with --quick)", problems.len());
        Ok(())
    } else {
        Err(fail(format!("bench finished with {} problem(s): {}", problems.len(), problems.join("; "))))
    }
}

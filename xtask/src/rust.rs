//! The rust suite: `cargo test` of the core and of every workspace package that is not a
//! frontend addon, plus type-checks of tether-python's free-threaded (3.14t) code path and of
//! the fuzz targets.

use crate::util::{fail, report_failure, skipped, step, Cmd, Result, Status};
use crate::workspace::Ctx;

const SUITE: &str = "rust";

/// Frontend addons are cdylibs loaded by an interpreter; their language suites test them.
pub const FRONTENDS: [&str; 3] = ["tether-python", "tether-node", "tether-java"];

pub fn run(ctx: &Ctx) -> Result<Status> {
    if ctx.path("tests/c").is_dir() {
        // The C conformance plugin in tests/c is compiled by a build script (cc crate).
        crate::util::require_tool(SUITE, "gcc")?;
    }

    // Every step runs even when an earlier one failed, so one run shows every problem.
    let mut ran = false;
    let mut failures = Vec::new();
    let mut record = |result: Result| {
        ran = true;
        if let Err(f) = result {
            report_failure(SUITE, &f);
            failures.push(f.what);
        }
    };

    step(SUITE, "cargo fmt --check (rustfmt.toml)");
    record(
        Cmd::cargo()
            .args(["fmt", "--all", "--check"])
            .cwd(&ctx.root)
            .hint("run `cargo fmt --all` and commit the result")
            .run(),
    );

    if ctx.has_package("tether-core") {
        step(SUITE, "cargo test -p tether-core");
        record(Cmd::cargo().args(["test", "-p", "tether-core"]).cwd(&ctx.root).run());
        step(SUITE, "loom model tests of the slot word (--cfg loom, target/loom)");
        record(
            Cmd::cargo()
                .args(["test", "-p", "tether-core", "--test", "loom", "--release"])
                .env("RUSTFLAGS", "--cfg loom")
                .env("CARGO_TARGET_DIR", ctx.target_dir.join("loom"))
                .cwd(&ctx.root)
                .hint("a transition on the slot word races; rerun with LOOM_LOG=trace for the interleaving")
                .run(),
        );
    } else {
        println!("skipped: tether-core tests (crates/core/Cargo.toml not present yet)");
    }

    let others: Vec<&str> = ctx
        .packages
        .iter()
        .map(|p| p.name.as_str())
        .filter(|name| *name != "tether-core" && !FRONTENDS.contains(name))
        // Benchmark peers (benches/peers/*) are built only by `cargo xtask bench`.
        .filter(|name| !name.starts_with(crate::bench::PEER_PACKAGE_PREFIX))
        .collect();
    if !others.is_empty() {
        step(SUITE, format!("cargo test of the other packages: {}", others.join(", ")));
        let mut cmd = Cmd::cargo().arg("test").cwd(&ctx.root);
        for name in &others {
            cmd = cmd.args(["-p", name]);
        }
        record(cmd.run());
    }

    if ctx.path("fuzz/Cargo.toml").is_file() {
        // The fuzz targets build only in `cargo xtask harden`'s full run (nightly, libFuzzer):
        // type-checked here so that a core change that breaks them shows in every test run.
        step(SUITE, "cargo check of the fuzz targets (fuzz/, target/fuzz-check)");
        record(
            Cmd::cargo()
                .args(["check", "--bins", "--manifest-path"])
                .arg(ctx.path("fuzz/Cargo.toml"))
                .arg("--target-dir")
                .arg(ctx.target_dir.join("fuzz-check"))
                .cwd(&ctx.root)
                .hint("a fuzz target no longer compiles against tether-core: fix it in fuzz/fuzz_targets")
                .run(),
        );
    }

    if ctx.path("crates/python").is_dir() {
        if ctx.has_package("tether-python") {
            record(free_threaded_check(ctx));
        } else {
            println!("skipped: free-threaded check (crates/python/Cargo.toml not present yet)");
        }
    }

    match failures.len() {
        0 if ran => Ok(Status::Passed),
        0 => Ok(skipped(SUITE, "no Rust packages to test yet")),
        1 => Err(fail("1 step failed (see the error above)")),
        n => Err(fail(format!("{n} steps failed (see the errors above)"))),
    }
}

/// The PyO3 build configuration of a free-threaded CPython 3.14 (no interpreter needed).
pub const PYO3_FT_CONFIG: &str = "\
implementation=CPython
version=3.14
shared=true
abi3=false
build_flags=Py_GIL_DISABLED
suppress_build_script_link_lines=true
pointer_width=64
";

/// `cargo check -p tether-python` as if for 3.14t, so the `Py_GIL_DISABLED` code keeps compiling
/// on machines that have no free-threaded interpreter.
fn free_threaded_check(ctx: &Ctx) -> Result {
    let cfg = ctx.target_dir.join("pyo3-ft.cfg");
    std::fs::create_dir_all(&ctx.target_dir)
        .and_then(|()| std::fs::write(&cfg, PYO3_FT_CONFIG))
        .map_err(|e| fail(format!("cannot write {}: {e}", cfg.display())))?;
    let cfg = cfg.canonicalize().unwrap_or(cfg);
    step(SUITE, "cargo check -p tether-python for free-threaded CPython 3.14 (PyO3 config file)");
    Cmd::cargo()
        .env("PYO3_CONFIG_FILE", &cfg)
        .env_remove("PYO3_PYTHON")
        .args(["check", "-p", "tether-python", "--target-dir"])
        .arg(ctx.target_dir.join("ft-check"))
        .cwd(&ctx.root)
        .hint(format!(
            "the Py_GIL_DISABLED (free-threaded) code path of tether-python does not compile; \
             reproduce with PYO3_CONFIG_FILE={} cargo check -p tether-python --target-dir target/ft-check",
            cfg.display()
        ))
        .run()
}

/// The c suite: tests/c is compiled and run by cargo tests (rust suite). If a `tests/c/run`
/// script appears, it is run here as well.
pub fn run_c(ctx: &Ctx) -> Result<Status> {
    const C: &str = "c";
    let dir = ctx.path("tests/c");
    if !dir.is_dir() {
        return Ok(skipped(C, "tests/c not present yet"));
    }
    let script = dir.join("run");
    if !script.is_file() {
        return Ok(skipped(C, "tests/c is built and run by the rust suite's cargo tests"));
    }
    crate::util::require_tool(C, "gcc")?;
    step(C, "tests/c/run");
    Cmd::new("bash")
        .arg(&script)
        .cwd(&ctx.root)
        .env("CARGO_TARGET_DIR", &ctx.target_dir)
        .hint("reproduce with: bash tests/c/run")
        .run()?;
    Ok(Status::Passed)
}

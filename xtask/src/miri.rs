//! `cargo xtask miri`: the core's tests under Miri (nightly), to catch undefined behaviour in
//! the object header, allocator and refcount code.

use crate::util::{skipped, step, which, Cmd, Result, Status};
use crate::workspace::Ctx;

const SUITE: &str = "miri";

pub fn run(ctx: &Ctx) -> Result<Status> {
    if !ctx.has_package("tether-core") {
        return Ok(skipped(SUITE, "crates/core/Cargo.toml not present yet"));
    }
    if which("rustup").is_none() {
        return Ok(skipped(SUITE, "rustup not found; Miri needs a nightly toolchain managed by rustup"));
    }
    let toolchains = Cmd::new("rustup").args(["toolchain", "list"]).probe().unwrap_or_default();
    if !toolchains.lines().any(|l| l.starts_with("nightly")) {
        return Ok(skipped(
            SUITE,
            "no nightly toolchain; install one with: rustup toolchain install nightly --component miri rust-src",
        ));
    }

    let installed = Cmd::new("rustup")
        .args(["component", "list", "--toolchain", "nightly", "--installed"])
        .probe()
        .unwrap_or_default();
    // Lines look like `miri-x86_64-unknown-linux-gnu` and `rust-src`.
    let has = |c: &str| installed.lines().map(str::trim).any(|l| l == c || l.starts_with(&format!("{c}-")));
    if !has("miri") || !has("rust-src") {
        step(SUITE, "rustup component add --toolchain nightly miri rust-src");
        Cmd::new("rustup")
            .args(["component", "add", "--toolchain", "nightly", "miri", "rust-src"])
            .hint("this nightly may lack Miri; try: rustup toolchain install nightly --component miri rust-src")
            .run()?;
    }

    step(SUITE, "cargo +nightly miri test -p tether-core");
    miri_test(ctx, &[], None)
        .hint(
            "Miri found undefined behaviour or a failing test; a test that needs the file system, \
             the clock or the environment can be run with MIRIFLAGS=-Zmiri-disable-isolation, \
             and a test Miri cannot run should be marked #[cfg_attr(miri, ignore)]",
        )
        .run()?;

    // Miri runs one interleaving per seed; the concurrency tests' races (a cell's box freed
    // and its address reused between a reader's load and its exchange was found only under
    // seed 2) get a few more.
    for seed in EXTRA_SEEDS {
        step(SUITE, format!("cargo +nightly miri test -p tether-core --test concurrency (seed {seed})"));
        miri_test(ctx, &["--test", "concurrency"], Some(seed))
            .hint(format!(
                "Miri found undefined behaviour in one interleaving of the concurrency tests; \
                 reproduce with: MIRIFLAGS=-Zmiri-seed={seed} cargo +nightly miri test -p tether-core --test concurrency"
            ))
            .run()?;
    }
    Ok(Status::Passed)
}

/// `cargo +nightly miri test -p tether-core` with `args`, under `seed` when given (added to
/// the caller's MIRIFLAGS). The rustup proxy `cargo` (not $CARGO, the stable toolchain's
/// binary) understands `+nightly`.
fn miri_test(ctx: &Ctx, args: &[&str], seed: Option<u32>) -> Cmd {
    let mut cmd = Cmd::new("cargo")
        .args(["+nightly", "miri", "test", "-p", "tether-core"])
        .args(args.iter().copied())
        .env_remove("CARGO")
        .env_remove("RUSTUP_TOOLCHAIN")
        .cwd(&ctx.root);
    if let Some(seed) = seed {
        let flags = std::env::var("MIRIFLAGS").unwrap_or_default();
        cmd = cmd.env("MIRIFLAGS", format!("{flags} -Zmiri-seed={seed}").trim());
    }
    cmd
}

/// Seeds the concurrency tests run under besides Miri's default one.
const EXTRA_SEEDS: [u32; 3] = [1, 2, 3];

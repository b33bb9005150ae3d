//! `cargo xtask bindgen --plugin PATH --out DIR [--lang ..] [--name NAME] [--java-package NAME]`:
//! builds tether-bindgen and runs it (docs/bindings.md). The examples suite and build-all call
//! [`generate`] the same way.

use std::path::{Path, PathBuf};

use crate::util::{fail, step, Cmd, Result};
use crate::workspace::Ctx;

const LABEL: &str = "bindgen";

/// `cargo build -p tether-bindgen` (once per xtask run); returns the binary's path.
pub fn binary(ctx: &Ctx, suite: &str) -> Result<PathBuf> {
    let bin = ctx.target_dir.join("debug").join(format!("tether-bindgen{}", std::env::consts::EXE_SUFFIX));
    if ctx.bindgen_ready.get() {
        return Ok(bin);
    }
    step(suite, "building the bindings generator (cargo build -p tether-bindgen)");
    Cmd::cargo()
        .args(["build", "-q", "-p", "tether-bindgen"])
        .cwd(&ctx.root)
        .hint("tether-bindgen does not build; reproduce with: cargo build -p tether-bindgen")
        .run()?;
    if !bin.is_file() {
        return Err(fail(format!("cargo built tether-bindgen but {} is missing", bin.display())));
    }
    ctx.bindgen_ready.set(true);
    Ok(bin)
}

/// Bindings for `plugin` in `languages` (comma separated) into `out` (emptied first), under
/// the package name `name`.
pub fn generate(ctx: &Ctx, suite: &str, plugin: &Path, out: &Path, languages: &str, name: &str) -> Result {
    let bin = binary(ctx, suite)?;
    crate::dist::reset_dir(out)?;
    step(
        suite,
        format!("tether-bindgen --plugin {} --out {} --lang {languages} --name {name}", ctx.rel(plugin), ctx.rel(out)),
    );
    Cmd::new(&bin)
        .arg("--plugin")
        .arg(plugin)
        .arg("--out")
        .arg(out)
        .args(["--lang", languages, "--name", name])
        .hint(format!(
            "reproduce with: cargo run -p tether-bindgen -- --plugin {} --out {} --lang {languages} --name {name}",
            plugin.display(),
            out.display()
        ))
        .output()?;
    Ok(())
}

/// The command: every argument is passed on to tether-bindgen.
pub fn run(args: &[String]) -> Result {
    let ctx = Ctx::load()?;
    let bin = binary(&ctx, LABEL)?;
    step(LABEL, format!("tether-bindgen {}", args.join(" ")));
    Cmd::new(&bin).args(args).cwd(std::env::current_dir().unwrap_or(ctx.root.clone())).run()
}

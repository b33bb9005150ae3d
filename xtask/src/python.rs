//! The python suite: a venv in target/venv, the extension built in debug mode with
//! `maturin develop`, then pytest over crates/python/tests.

use std::path::{Path, PathBuf};

use crate::util::{fail, require_tool, skipped, step, Cmd, Result, Status};
use crate::workspace::Ctx;

const SUITE: &str = "python";

/// Tools installed into the venv, pinned (bump deliberately).
const PINS: [(&str, &str); 3] = [("maturin", "1.16.0"), ("pytest", "9.2.0"), ("mypy", "2.4.1")];

pub const PYPROJECT: &str = "crates/python/pyproject.toml";
pub const MANIFEST: &str = "crates/python/Cargo.toml";
const TESTS: &str = "crates/python/tests";

pub fn run(ctx: &Ctx) -> Result<Status> {
    if !ctx.path(PYPROJECT).is_file() {
        return Ok(skipped(SUITE, format!("{PYPROJECT} not present yet")));
    }
    let python = prepare(ctx, SUITE)?;
    if !ctx.path(TESTS).is_dir() {
        return Ok(skipped(SUITE, format!("extension built, but {TESTS} not present yet")));
    }
    let plugins = ctx.test_plugins(SUITE)?;
    let (plugin, bad_abi) = (&plugins.sample, &plugins.bad_abi);
    step(SUITE, format!("python -m pytest {TESTS} -q"));
    let code = Cmd::new(&python)
        .args(["-m", "pytest", TESTS, "-q"])
        .env("TETHER_TEST_PLUGIN", plugin)
        .env("TETHER_TEST_PLUGIN_BAD_ABI", bad_abi)
        .env("TETHER_TEST_PLUGIN_DIR", &plugins.dir)
        .cwd(&ctx.root)
        .run_code()?;
    match code {
        Some(0) => Ok(Status::Passed),
        Some(5) => Err(fail(format!("pytest collected no tests in {TESTS}"))
            .hint("add test_*.py files (functions named test_*) to that directory")),
        Some(c) => Err(fail(format!("pytest failed (exit code {c})"))
            .hint(format!("rerun one test with: target/venv/bin/python -m pytest {TESTS} -q -k <name>"))),
        None => Err(fail("pytest was killed by a signal (a crash in the extension?)")
            .hint(format!("rerun under gdb: gdb --args target/venv/bin/python -m pytest {TESTS} -q -x"))),
    }
}

fn venv_dir(ctx: &Ctx) -> PathBuf {
    ctx.target_dir.join("venv")
}

fn venv_bin(ctx: &Ctx) -> PathBuf {
    bin_dir(&venv_dir(ctx))
}

/// Where a venv keeps its executables.
fn bin_dir(venv: &Path) -> PathBuf {
    venv.join(if cfg!(windows) { "Scripts" } else { "bin" })
}

/// Creates an empty venv at `dir` (replacing whatever was there) and returns its python.
pub fn fresh_venv(ctx: &Ctx, suite: &str, dir: &Path) -> Result<PathBuf> {
    require_tool(suite, "python3")?;
    step(suite, format!("creating an empty virtualenv {}", ctx.rel(dir)));
    Cmd::new("python3")
        .args(["-m", "venv", "--clear"])
        .arg(dir)
        .hint("python3 cannot create a venv; install the venv module (Debian/Ubuntu: apt-get install python3-venv)")
        .run()?;
    Ok(bin_dir(dir).join("python"))
}

/// The dev venv (target/venv) with the pinned tools installed: what `maturin` needs to run.
pub struct ToolVenv {
    pub dir: PathBuf,
    pub python: PathBuf,
    pub bin: PathBuf,
}

impl ToolVenv {
    /// `maturin` from the venv, with the venv activated (VIRTUAL_ENV, PATH) and stray PyO3
    /// settings of the caller's environment removed.
    pub fn maturin(&self) -> Result<Cmd> {
        let path = std::env::join_paths(
            std::iter::once(self.bin.clone())
                .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
        )
        .map_err(|e| fail(format!("cannot build PATH: {e}")))?;
        Ok(Cmd::new(self.bin.join("maturin"))
            .env("VIRTUAL_ENV", &self.dir)
            .env("PATH", path)
            .env_remove("CONDA_PREFIX")
            .env_remove("PYO3_CONFIG_FILE")
            .env_remove("PYO3_PYTHON")
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1"))
    }
}

/// Creates the venv if needed and installs the pinned tools (maturin, pytest) that are missing.
/// `suite` labels the progress lines.
pub fn tool_venv(ctx: &Ctx, suite: &str) -> Result<ToolVenv> {
    if !ctx.path(PYPROJECT).is_file() {
        return Err(fail(format!("{PYPROJECT} not present yet, so the Python frontend cannot be built")));
    }
    let venv = venv_dir(ctx);
    let python = venv_with_pins(ctx, suite, &venv, &PINS)?;
    let bin = venv_bin(ctx);
    Ok(ToolVenv { dir: venv, python, bin })
}

/// The tool venv, then the extension built and installed into it (debug, `maturin develop`).
/// Returns the venv's python. Done once per xtask run; `suite` labels the progress lines.
pub fn prepare(ctx: &Ctx, suite: &str) -> Result<PathBuf> {
    if let Some(python) = ctx.python_ready.borrow().clone() {
        return Ok(python);
    }
    let venv = tool_venv(ctx, suite)?;
    step(suite, "building extension (maturin develop, debug)");
    venv.maturin()?
        .args(["develop", "--manifest-path", MANIFEST])
        .cwd(&ctx.root)
        .hint(format!(
            "the Python extension does not build; reproduce with: \
             VIRTUAL_ENV={0} {0}/bin/maturin develop --manifest-path {MANIFEST}",
            venv.dir.display()
        ))
        .run()?;

    *ctx.python_ready.borrow_mut() = Some(venv.python.clone());
    Ok(venv.python)
}

/// The package as the suite's venv has it (crates/python/python/tether_ffi), with `extension`
/// (a build of the extension's cdylib) as its native module, in `site/tether_ffi`: put `site`
/// first on PYTHONPATH to test that build (harden's valgrind and AddressSanitizer runs).
pub fn stage_package(ctx: &Ctx, python: &Path, extension: &Path, site: &Path) -> Result {
    let package = site.join("tether_ffi");
    crate::dist::reset_dir(&package)?;
    let source = ctx.path("crates/python/python/tether_ffi");
    let listing_error = |e: std::io::Error| fail(format!("cannot list {}: {e}", source.display()));
    for entry in std::fs::read_dir(&source).map_err(listing_error)? {
        let path = entry.map_err(listing_error)?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
        if path.is_file() && !name.ends_with(".so") {
            crate::dist::copy_file(&path, &package.join(&name))?;
        }
    }
    let suffix = Cmd::new(python)
        .args(["-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"])
        .output()?
        .trim()
        .to_string();
    crate::dist::copy_file(extension, &package.join(format!("_native{suffix}")))
}

/// [`prepare`], with `extra` pins installed into the same venv too; returns its python.
pub fn prepare_with(ctx: &Ctx, suite: &str, extra: &[(&str, &str)]) -> Result<PathBuf> {
    prepare(ctx, suite)?;
    venv_with_pins(ctx, suite, &venv_dir(ctx), extra)
}

/// A venv at `dir` (made if missing) with every `(name, version)` pin installed; returns its
/// python. Only the pins not installed at exactly that version are passed to pip.
pub fn venv_with_pins(ctx: &Ctx, suite: &str, dir: &Path, pins: &[(&str, &str)]) -> Result<PathBuf> {
    require_tool(suite, "python3")?;
    let python = bin_dir(dir).join("python");
    if !python.exists() {
        step(suite, format!("creating virtualenv {}", ctx.rel(dir)));
        Cmd::new("python3")
            .args(["-m", "venv"])
            .arg(dir)
            .hint("python3 cannot create a venv; install the venv module (Debian/Ubuntu: apt-get install python3-venv)")
            .run()?;
    }
    let missing = missing_pins(&python, pins)?;
    if !missing.is_empty() {
        step(suite, format!("pip install {} (into {})", missing.join(" "), ctx.rel(dir)));
        Cmd::new(&python)
            .args(["-m", "pip", "install", "--disable-pip-version-check", "-q"])
            .args(&missing)
            .hint(format!(
                "pip could not install the pinned packages; check that PyPI is reachable, or delete {} and retry",
                dir.display()
            ))
            .run()?;
    }
    Ok(python)
}

/// `name==version` for every pin that is not installed at exactly that version.
fn missing_pins(python: &Path, pins: &[(&str, &str)]) -> Result<Vec<String>> {
    const SCRIPT: &str = "import sys, importlib.metadata as m\n\
        for n in sys.argv[1:]:\n\
        \x20   try: print(n, m.version(n))\n\
        \x20   except m.PackageNotFoundError: print(n, '-')\n";
    let out = Cmd::new(python)
        .args(["-c", SCRIPT])
        .args(pins.iter().map(|(name, _)| *name))
        .hint(format!("{} does not run; delete its venv and retry", python.display()))
        .output()?;
    Ok(pins
        .iter()
        .filter(|(name, version)| !out.lines().any(|line| line.split_once(' ') == Some((name, version))))
        .map(|(name, version)| format!("{name}=={version}"))
        .collect())
}

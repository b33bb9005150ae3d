//! The node suite: npm dependencies, the addon built with cargo and copied to
//! crates/node/tether.node, the test plugins built, then `node --expose-gc --test` over
//! crates/node/test (with TETHER_TEST_PLUGIN / TETHER_TEST_PLUGIN_BAD_ABI set).

use std::path::{Path, PathBuf};

use crate::util::{fail, replace_file, require_tool, skipped, step, Cmd, Result, Status};
use crate::workspace::Ctx;

const SUITE: &str = "node";

pub const PACKAGE_JSON: &str = "crates/node/package.json";
pub const DIR: &str = "crates/node";
const TEST_DIR: &str = "crates/node/test";
/// Where index.js loads the addon from.
pub const ADDON: &str = "crates/node/tether.node";
/// The addon's file name inside the package.
pub const ADDON_NAME: &str = "tether.node";

pub fn run(ctx: &Ctx) -> Result<Status> {
    if !ctx.path(PACKAGE_JSON).is_file() {
        return Ok(skipped(SUITE, format!("{PACKAGE_JSON} not present yet")));
    }
    prepare(ctx, SUITE)?;
    let plugins = ctx.test_plugins(SUITE)?;
    let (plugin, bad_abi) = (&plugins.sample, &plugins.bad_abi);
    let dir = ctx.path(DIR);
    let tests = test_files(&ctx.path(TEST_DIR), &dir);
    if tests.is_empty() {
        return Ok(skipped(SUITE, format!("addon built, but no {TEST_DIR}/*.test.mjs or *.test.js yet")));
    }
    step(SUITE, format!("node --expose-gc --test ({} files in {TEST_DIR})", tests.len()));
    Cmd::new("node")
        .args(["--expose-gc", "--test"])
        .args(&tests)
        .env("TETHER_TEST_PLUGIN", plugin)
        .env("TETHER_TEST_PLUGIN_BAD_ABI", bad_abi)
        .env("TETHER_TEST_PLUGIN_DIR", &plugins.dir)
        .cwd(&dir)
        .hint(format!("rerun one file with: cd {DIR} && node --expose-gc --test test/<file>"))
        .run()?;
    Ok(Status::Passed)
}

/// Installs npm dependencies, builds tether-node and copies it to crates/node/tether.node.
/// Done once per xtask run; `suite` labels the progress lines.
pub fn prepare(ctx: &Ctx, suite: &str) -> Result {
    if ctx.node_ready.get() {
        return Ok(());
    }
    if !ctx.path(PACKAGE_JSON).is_file() {
        return Err(fail(format!("{PACKAGE_JSON} not present yet, so the Node frontend cannot be built")));
    }
    require_tool(suite, "node")?;
    require_tool(suite, "npm")?;
    let dir = ctx.path(DIR);

    let lock = dir.join("package-lock.json");
    let install = if lock.is_file() { "ci" } else { "install" };
    if install == "ci" && node_modules_current(&dir) {
        step(suite, "npm dependencies up to date (node_modules newer than package-lock.json)");
    } else {
        step(suite, format!("npm {install} (in {DIR})"));
        Cmd::new("npm")
            .args([install, "--no-audit", "--no-fund"])
            .cwd(&dir)
            .hint("npm could not install the dependencies; check that the npm registry is reachable and package.json is valid")
            .run()?;
    }

    step(suite, "building addon (cargo build -p tether-node)");
    Cmd::cargo()
        .args(["build", "-p", "tether-node"])
        .cwd(&ctx.root)
        .hint("the Node addon does not build; reproduce with: cargo build -p tether-node")
        .run()?;
    let built = ctx.cdylib_path("tether-node")?;
    step(suite, format!("copying {} to {ADDON}", ctx.rel(&built)));
    replace_file(&built, &ctx.path(ADDON))?;

    ctx.node_ready.set(true);
    Ok(())
}

/// True when `npm ci` already ran after the last change to package.json / package-lock.json.
fn node_modules_current(dir: &Path) -> bool {
    let modified = |p: PathBuf| p.metadata().and_then(|m| m.modified()).ok();
    let Some(installed) = modified(dir.join("node_modules/.package-lock.json")) else {
        return false;
    };
    [dir.join("package-lock.json"), dir.join("package.json")]
        .into_iter()
        .all(|p| modified(p).is_some_and(|t| t <= installed))
}

/// `*.test.mjs` / `*.test.js` / `*.test.cjs` under `test_dir` (recursively), relative to `base`,
/// sorted.
fn test_files(test_dir: &Path, base: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "node_modules") {
                    walk(&path, out);
                }
            } else if path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| [".test.mjs", ".test.js", ".test.cjs"].iter().any(|ext| n.ends_with(ext)))
            {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(test_dir, &mut out);
    out.sort();
    out.into_iter().map(|p| p.strip_prefix(base).map(Path::to_path_buf).unwrap_or(p)).collect()
}

//! The bindings of the sample plugin (examples suite, part "stale bindings"): generated, checked
//! by `mypy --strict` and run (tests/bindings/check_sample.py: keyword escaping, nullability,
//! a static method), the Node package installed into a folder as a consumer has it, where
//! `tsc --strict` checks tests/bindings/node/check_sample.ts (then compiled and run) and must
//! reject tests/bindings/node/wrong_call.ts; then loaded against the sample plugin built with
//! its `changed` feature (increment_by's default becomes 2), which must fail naming that method
//! in both languages.

use std::path::Path;

use crate::util::{cdylib_file_name, fail, step, Cmd, Result};
use crate::workspace::Ctx;
use crate::{bindgen, dist, examples, python};

const CHECK_PY: &str = "tests/bindings/check_sample.py";
/// What the error must name.
const CHANGED: &str =
    "method sample.Counter.increment_by changed (now method (positional self: sample.Counter, by: int = 2) -> int)";
/// The TypeScript use of the sample's declarations tsc must accept (then compiled and run).
const CHECK_TS: &str = "tests/bindings/node/check_sample.ts";
/// A use tsc must reject, and the line it must name.
const WRONG_TS: (&str, &str) = ("tests/bindings/node/wrong_call.ts", "wrong_call.ts(9,");
/// What a consumer's folder links from examples/node/node_modules (its `npm ci`): the frontend
/// the sample package requires, and the TypeScript that checks it.
const LINKED_MODULES: [&str; 3] = ["tether-ffi", "typescript", "@types"];

pub fn run(ctx: &Ctx, suite: &str) -> Result {
    let plugins = ctx.test_plugins(suite)?;
    let python = python::prepare(ctx, suite)?;
    let out = ctx.target_dir.join("bindings").join("sample");
    bindgen::generate(ctx, suite, &plugins.sample, &out, "python,node", "sample")?;
    let py_path = out.join("python");
    examples::mypy(ctx, suite, &python, &py_path, &ctx.path(CHECK_PY), None)?;
    step(suite, format!("python {CHECK_PY} (the sample bindings, run)"));
    Cmd::new(&python).arg(ctx.path(CHECK_PY)).env("PYTHONPATH", &py_path).cwd(&ctx.root).run()?;
    let node_dir = out.join("node-check");
    node_check_dir(ctx, suite, &out.join("node"), &node_dir, &plugins.sample)?;
    // The same strict options as the wrong call's check, compiled into build/ to run it.
    let mut emit: Vec<&str> = examples::TSC_STRICT.iter().copied().filter(|a| *a != "--noEmit").collect();
    emit.extend(["--outDir", "build", file_name(CHECK_TS)]);
    examples::tsc(ctx, suite, &node_dir, &emit, None)?;
    let mut wrong: Vec<&str> = examples::TSC_STRICT.to_vec();
    wrong.push(file_name(WRONG_TS.0));
    examples::tsc(ctx, suite, &node_dir, &wrong, Some(WRONG_TS.1))?;
    step(suite, format!("node build/check_sample.js (in {}: the sample bindings, run)", ctx.rel(&node_dir)));
    Cmd::new("node").arg("build/check_sample.js").cwd(&node_dir).run()?;

    let changed_target = ctx.target_dir.join("changed-plugin");
    step(
        suite,
        format!("cargo build -p tether-test-plugin --features changed --target-dir {}", ctx.rel(&changed_target)),
    );
    Cmd::cargo()
        .args(["build", "-q", "-p", "tether-test-plugin", "--features", "changed", "--target-dir"])
        .arg(&changed_target)
        .cwd(&ctx.root)
        .hint("the sample plugin does not build with its `changed` feature")
        .run()?;
    let changed = changed_target.join("debug").join(cdylib_file_name("tether_test_plugin"));

    // The old bindings, the new plugin beside them.
    let plugin_name = cdylib_file_name("tether_test_plugin");
    dist::copy_file(&changed, &py_path.join("sample").join(&plugin_name))?;
    step(suite, "python: import sample (old bindings, changed plugin: must fail)");
    let (code, text) =
        Cmd::new(&python).args(["-c", "import sample"]).env("PYTHONPATH", &py_path).cwd(&ctx.root).run_combined()?;
    expect_stale("python", code, &text, "ValueError")?;
    install_node(&out.join("node"), &node_dir.join("node_modules/sample"), &changed)?;
    step(suite, "node: require('sample') (old bindings, changed plugin: must fail)");
    let (code, text) = Cmd::new("node").args(["-e", "require('sample')"]).cwd(&node_dir).run_combined()?;
    expect_stale("node", code, &text, "TetherValueError")
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `dir` as a consumer's folder: the generated package installed in its node_modules with
/// `plugin`, links to examples/node's [`LINKED_MODULES`], and the TypeScript check files.
fn node_check_dir(ctx: &Ctx, suite: &str, generated: &Path, dir: &Path, plugin: &Path) -> Result {
    let example = examples::node_app_modules(ctx, suite)?;
    dist::reset_dir(dir)?;
    let modules = dir.join("node_modules");
    install_node(generated, &modules.join("sample"), plugin)?;
    for name in LINKED_MODULES {
        let target = example.join("node_modules").join(name);
        let target = target.canonicalize().map_err(|e| fail(format!("cannot resolve {}: {e}", target.display())))?;
        link(&target, &modules.join(name))?;
    }
    let manifest = dir.join("package.json");
    std::fs::write(&manifest, "{ \"name\": \"sample-bindings-check\", \"private\": true }\n")
        .map_err(|e| fail(format!("cannot write {}: {e}", manifest.display())))?;
    for file in [CHECK_TS, WRONG_TS.0] {
        dist::copy_file(&ctx.path(file), &dir.join(file_name(file)))?;
    }
    Ok(())
}

#[cfg(unix)]
fn link(target: &Path, link: &Path) -> Result {
    std::os::unix::fs::symlink(target, link)
        .map_err(|e| fail(format!("cannot link {} to {}: {e}", link.display(), target.display())))
}

#[cfg(not(unix))]
fn link(target: &Path, link: &Path) -> Result {
    Err(fail(format!("linking {} to {} needs a Unix system", link.display(), target.display())))
}

/// The generated package copied to `dest` with `plugin` as its plugin.
fn install_node(generated: &Path, dest: &Path, plugin: &Path) -> Result {
    dist::reset_dir(dest)?;
    for entry in std::fs::read_dir(generated).map_err(|e| fail(format!("cannot list {}: {e}", generated.display())))? {
        let entry = entry.map_err(|e| fail(format!("cannot list {}: {e}", generated.display())))?;
        dist::copy_file(&entry.path(), &dest.join(entry.file_name()))?;
    }
    dist::copy_file(plugin, &dest.join(cdylib_file_name("tether_test_plugin")))
}

fn expect_stale(language: &str, code: Option<i32>, text: &str, error: &str) -> Result {
    if code != Some(0) && text.contains(CHANGED) && text.contains(error) {
        return Ok(());
    }
    Err(fail(format!(
        "{language}: loading bindings against a plugin whose increment_by changed should raise {error} naming \
         `{CHANGED}`; exit {code:?}, output:\n{text}"
    )))
}

//! The bindings of the sample plugin (examples suite, part "stale bindings"): generated, checked
//! by `mypy --strict` and run (tests/bindings/check_sample.py: keyword escaping, nullability),
//! loaded from Node; then loaded against the sample plugin built with its `changed` feature
//! (increment_by's default becomes 2), which must fail naming that method in both languages.

use std::path::Path;

use crate::util::{cdylib_file_name, fail, step, Cmd, Result};
use crate::workspace::Ctx;
use crate::{bindgen, dist, examples, python};

const CHECK_PY: &str = "tests/bindings/check_sample.py";
/// What the error must name.
const CHANGED: &str =
    "method sample.Counter.increment_by changed (now method (positional self: sample.Counter, by: int = 2) -> int)";
/// Where tether-ffi resolves from for the generated Node package (examples/node's `npm ci`).
const NODE_MODULES: &str = "examples/node/node_modules";
const NODE_CHECK: &str = "const s = require('sample'); const n = new s.Names('abc'); \
    if (n.import_(2) !== 5 || s.makeCounter(1).incrementBy() !== 2) throw new Error('wrong results'); \
    console.log('sample bindings (node): ok');";

pub fn run(ctx: &Ctx, suite: &str) -> Result {
    let plugins = ctx.test_plugins(suite)?;
    let python = python::prepare(ctx, suite)?;
    let out = ctx.target_dir.join("bindings").join("sample");
    bindgen::generate(ctx, suite, &plugins.sample, &out, "python,node", "sample")?;
    let py_path = out.join("python");
    examples::mypy(ctx, suite, &python, &py_path, &ctx.path(CHECK_PY), None)?;
    step(suite, format!("python {CHECK_PY} (the sample bindings, run)"));
    Cmd::new(&python).arg(ctx.path(CHECK_PY)).env("PYTHONPATH", &py_path).cwd(&ctx.root).run()?;
    let node_root = out.join("node-root");
    install_node(&out.join("node"), &node_root.join("sample"), &plugins.sample)?;
    step(suite, "node: require('sample') (the sample bindings, run)");
    node_eval(ctx, &node_root, NODE_CHECK).run()?;

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
    install_node(&out.join("node"), &node_root.join("sample"), &changed)?;
    step(suite, "node: require('sample') (old bindings, changed plugin: must fail)");
    let (code, text) = node_eval(ctx, &node_root, "require('sample')").run_combined()?;
    expect_stale("node", code, &text, "TetherValueError")
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

/// `node -e script` finding `sample` in `root` and tether-ffi in examples/node/node_modules.
fn node_eval(ctx: &Ctx, root: &Path, script: &str) -> Cmd {
    let path = std::env::join_paths([root.to_path_buf(), ctx.path(NODE_MODULES)]).unwrap_or_default();
    Cmd::new("node").args(["-e", script]).env("NODE_PATH", path).cwd(&ctx.root)
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

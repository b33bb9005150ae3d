//! The examples suite and the demo: the scene plugin (examples/scene) built with cargo, then one
//! app per language that loads it. Every app gets the plugin's absolute path in the environment
//! variable `TETHER_SCENE_PLUGIN`.

use std::path::{Path, PathBuf};

use crate::util::{fail, report_failure, skipped, step, Cmd, Failure, Result, Status};
use crate::workspace::Ctx;
use crate::{java, node, python};

const SUITE: &str = "examples";

pub const SCENE_MANIFEST: &str = "examples/scene/Cargo.toml";
const PYTHON_APP: &str = "examples/python/app.py";
const NODE_APP: &str = "examples/node/app.mjs";
const JAVA_APP: &str = "examples/java/pom.xml";
/// The environment variable through which every app finds the scene plugin.
pub const PLUGIN_ENV: &str = "TETHER_SCENE_PLUGIN";

/// One app (or the Rust demo binary): runs it with the scene plugin, or skips it when missing.
type App = fn(&Ctx, &str, &Path) -> Result<Status>;

/// The language apps, in the order they run.
const APPS: [(&str, App); 3] = [
    ("python app", python_app),
    ("node app", node_app),
    ("java app", java_app),
];

/// `cargo xtask test --only examples`: builds the plugin, runs every app that exists.
pub fn run(ctx: &Ctx) -> Result<Status> {
    if !ctx.path(SCENE_MANIFEST).is_file() {
        return Ok(skipped(SUITE, format!("{SCENE_MANIFEST} not present yet")));
    }
    let plugin = build_scene(ctx, SUITE)?;
    let results: Vec<_> = APPS
        .iter()
        .map(|(name, app)| (*name, run_part(SUITE, name, *app, ctx, &plugin)))
        .collect();
    let failed: Vec<&str> = results
        .iter()
        .filter(|(_, ok)| !ok)
        .map(|(name, _)| *name)
        .collect();
    if !failed.is_empty() {
        return Err(fail(format!("example apps failed: {}", failed.join(", "))));
    }
    Ok(Status::Passed)
}

/// `cargo xtask demo`: the plugin, then the Rust demo binary and each language's app.
/// Prints one line per part; fails if any part failed or if there is nothing to demo.
pub fn demo(ctx: &Ctx) -> Result {
    const DEMO: &str = "demo";
    if !ctx.path(SCENE_MANIFEST).is_file() {
        return Err(fail(format!("nothing to demo yet: {SCENE_MANIFEST} not present"))
            .hint("the demo needs the example plugin in examples/scene; run `cargo xtask test` meanwhile"));
    }
    let plugin = build_scene(ctx, DEMO)?;
    let parts: Vec<(&str, App)> = std::iter::once(("rust demo", rust_demo as App))
        .chain(APPS)
        .collect();
    let mut ok = true;
    let mut summary = Vec::new();
    for (name, part) in parts {
        let line = match part(ctx, DEMO, &plugin) {
            Ok(Status::Passed) => "passed".to_string(),
            Ok(Status::Skipped(why)) => format!("skipped ({why})"),
            Err(f) => {
                report_failure(DEMO, &f);
                ok = false;
                "failed".to_string()
            }
        };
        summary.push(format!("    {name:<12} {line}"));
    }
    println!("==> [demo] summary");
    summary.iter().for_each(|l| println!("{l}"));
    if ok {
        Ok(())
    } else {
        Err(fail("some parts of the demo failed (see the errors above)"))
    }
}

fn run_part(suite: &str, name: &str, app: App, ctx: &Ctx, plugin: &Path) -> bool {
    match app(ctx, suite, plugin) {
        Ok(_) => true,
        Err(f) => {
            report_failure(
                suite,
                &Failure {
                    what: format!("{name}: {}", f.what),
                    hint: f.hint,
                },
            );
            false
        }
    }
}

/// `cargo build -p scene`; returns the plugin's absolute path.
fn build_scene(ctx: &Ctx, suite: &str) -> Result<PathBuf> {
    if !ctx.has_package("scene") {
        return Err(fail(format!("{SCENE_MANIFEST} exists but package `scene` is not a workspace member"))
            .hint("add \"examples/scene\" to [workspace] members in the root Cargo.toml (and name the package `scene`)"));
    }
    step(suite, "building the scene plugin (cargo build -p scene)");
    Cmd::cargo()
        .args(["build", "-p", "scene"])
        .cwd(&ctx.root)
        .hint("the example plugin does not build; reproduce with: cargo build -p scene")
        .run()?;
    let plugin = ctx.cdylib_path("scene")?;
    if !plugin.is_file() {
        return Err(fail(format!(
            "cargo built scene but {} is missing",
            plugin.display()
        )));
    }
    Ok(plugin)
}

/// `cargo run -p tether-demo` (the Rust side of the demo), when that package exists.
fn rust_demo(ctx: &Ctx, suite: &str, plugin: &Path) -> Result<Status> {
    if !ctx.has_package("tether-demo") {
        return Ok(skipped("rust demo", "package tether-demo not present yet"));
    }
    step(suite, "cargo run -p tether-demo");
    Cmd::cargo()
        .args(["run", "-p", "tether-demo"])
        .env(PLUGIN_ENV, plugin)
        .cwd(&ctx.root)
        .hint("reproduce with: cargo build -p scene && TETHER_SCENE_PLUGIN=target/debug/libscene.so cargo run -p tether-demo")
        .run()?;
    Ok(Status::Passed)
}

/// examples/python/app.py with the venv's python (the extension built by the python suite).
fn python_app(ctx: &Ctx, suite: &str, plugin: &Path) -> Result<Status> {
    if !ctx.path(PYTHON_APP).is_file() {
        return Ok(skipped(
            "python app",
            format!("{PYTHON_APP} not present yet"),
        ));
    }
    let python = python::prepare(ctx, suite)?;
    step(suite, format!("python {PYTHON_APP}"));
    Cmd::new(python)
        .arg(PYTHON_APP)
        .env(PLUGIN_ENV, plugin)
        .cwd(&ctx.root)
        .hint(format!(
            "reproduce with: {PLUGIN_ENV}={} target/venv/bin/python {PYTHON_APP}",
            plugin.display()
        ))
        .run()?;
    Ok(Status::Passed)
}

/// examples/node/app.mjs with node (the addon built by the node suite).
fn node_app(ctx: &Ctx, suite: &str, plugin: &Path) -> Result<Status> {
    if !ctx.path(NODE_APP).is_file() {
        return Ok(skipped("node app", format!("{NODE_APP} not present yet")));
    }
    node::prepare(ctx, suite)?;
    step(suite, format!("node {NODE_APP}"));
    Cmd::new("node")
        .arg(NODE_APP)
        .env(PLUGIN_ENV, plugin)
        .cwd(&ctx.root)
        .hint(format!(
            "reproduce with: {PLUGIN_ENV}={} node {NODE_APP}",
            plugin.display()
        ))
        .run()?;
    Ok(Status::Passed)
}

/// examples/java (a Maven project whose pom sets the `exec.mainClass` property), run with
/// `mvn compile exec:java` after dev.tether:tether-ffi is installed into the local repository.
fn java_app(ctx: &Ctx, suite: &str, plugin: &Path) -> Result<Status> {
    if !ctx.path(JAVA_APP).is_file() {
        return Ok(skipped("java app", format!("{JAVA_APP} not present yet")));
    }
    let lib = java::install(ctx, suite)?;
    step(suite, format!("mvn compile exec:java -f {JAVA_APP}"));
    Cmd::new("mvn")
        .args([
            "-B",
            "-q",
            "-Dstyle.color=never",
            "-f",
            JAVA_APP,
            "compile",
            "exec:java",
        ])
        .arg(java::library_property(&lib))
        .arg(format!("-Dtether.scene.plugin={}", plugin.display()))
        .env(PLUGIN_ENV, plugin)
        .cwd(&ctx.root)
        .hint(format!(
            "examples/java/pom.xml must set the `exec.mainClass` property; reproduce with: \
             {PLUGIN_ENV}={} mvn -B -f {JAVA_APP} compile exec:java {}",
            plugin.display(),
            java::library_property(&lib)
        ))
        .run()?;
    Ok(Status::Passed)
}

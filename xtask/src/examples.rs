//! The examples suite and the demo: the scene plugin (examples/scene) built with cargo, then one
//! app per language that loads it (examples/python/app.py, examples/node/app.mjs,
//! examples/java). Every app gets the plugin's absolute path in the environment variable
//! `TETHER_SCENE_PLUGIN`, exits nonzero when an identity fact fails, and prints the scene's tree
//! between `--- tree ---` and `--- end tree ---`; the runs must print the same tree.
//!
//! The suite runs the apps twice: against the workspace builds (the dev venv, crates/node,
//! the frontend installed by `mvn install`), then from the packages (debug builds in
//! target/dist-test) installed like a user would: `pip install` into an empty venv, `npm install`
//! into an empty folder, the jar installed into the local Maven repository.

use std::path::{Path, PathBuf};

use crate::dist::{self, Packages, Profile};
use crate::util::{fail, report_failure, skipped, step, Cmd, Failure, Result, Status};
use crate::workspace::Ctx;
use crate::{bindgen, java, node, python};

const SUITE: &str = "examples";

pub const SCENE_MANIFEST: &str = "examples/scene/Cargo.toml";
const PYTHON_APP: &str = "examples/python/app.py";
/// A call mypy must reject, and the line it must name.
const PYTHON_WRONG_CALL: (&str, &str) = ("examples/python/wrong_call.py", "wrong_call.py:8:");
const NODE_APP_DIR: &str = "examples/node";
/// What `tsc -p examples/node` compiles app.ts into.
const NODE_APP: &str = "build/app.js";
/// A call tsc must reject, and the line it must name.
const NODE_WRONG_CALL: (&str, &str) = ("wrong_call.ts", "wrong_call.ts(7,");
const JAVA_POM: &str = "examples/java/pom.xml";
/// The environment variable through which every app finds the scene plugin.
pub const PLUGIN_ENV: &str = "TETHER_SCENE_PLUGIN";
/// The lines around the tree each app prints.
const TREE_START: &str = "--- tree ---";
const TREE_END: &str = "--- end tree ---";

/// One app run against the workspace builds; returns what it printed.
type App = fn(&Ctx, &str, &Path) -> Result<String>;

/// The language apps, in the order they run.
const APPS: [(&str, App); 3] = [("python app", python_app), ("node app", node_app), ("java app", java_app)];

/// One app run from an installed package; returns what it printed.
type PackageRun = fn(&Ctx, &Packages) -> Result<String>;

const PACKAGE_RUNS: [(&str, PackageRun); 3] =
    [("python package", python_package), ("node package", node_package), ("java package", java_package)];

/// What one part printed, kept to compare the trees.
struct Report {
    name: &'static str,
    stdout: String,
}

/// Collects the outcome of every part: reports of the ones that ran, names of the failed ones.
#[derive(Default)]
struct Outcomes {
    reports: Vec<Report>,
    failed: Vec<&'static str>,
    rows: Vec<String>,
}

impl Outcomes {
    /// A part that prints no tree (a check of the bindings).
    fn record_check(&mut self, label: &str, name: &'static str, result: Result) {
        let line = match result {
            Ok(()) => "passed".to_string(),
            Err(f) => {
                report_failure(label, &Failure { what: format!("{name}: {}", f.what), hint: f.hint });
                self.failed.push(name);
                "failed".to_string()
            }
        };
        self.rows.push(format!("    {name:<15} {line}"));
    }

    fn record(&mut self, label: &str, name: &'static str, result: Result<String>) {
        let line = match result {
            Ok(stdout) => {
                self.reports.push(Report { name, stdout });
                "passed".to_string()
            }
            Err(f) => {
                report_failure(label, &Failure { what: format!("{name}: {}", f.what), hint: f.hint });
                self.failed.push(name);
                "failed".to_string()
            }
        };
        self.rows.push(format!("    {name:<15} {line}"));
    }

    /// Checks that every report printed the same tree; adds a summary row.
    fn compare_trees(&mut self, label: &str) {
        if self.reports.is_empty() {
            return;
        }
        let result = same_tree(&self.reports);
        let line = match &result {
            Ok(lines) => format!("the same {lines}-line tree in all {} runs", self.reports.len()),
            Err(f) => {
                report_failure(label, f);
                self.failed.push("tree dumps");
                "differ (see the error above)".to_string()
            }
        };
        self.rows.push(format!("    {:<15} {line}", "tree dumps"));
    }

    fn finish(self, label: &str) -> Result {
        println!("==> [{label}] summary");
        self.rows.iter().for_each(|r| println!("{r}"));
        if self.failed.is_empty() {
            Ok(())
        } else {
            Err(fail(format!("{label} failed: {}", self.failed.join(", "))))
        }
    }
}

/// `cargo xtask test --only examples`: the plugin, the apps against the workspace builds, then
/// the packages installed into empty environments and the apps run from them.
pub fn run(ctx: &Ctx) -> Result<Status> {
    if !ctx.path(SCENE_MANIFEST).is_file() {
        return Ok(skipped(SUITE, format!("{SCENE_MANIFEST} not present yet")));
    }
    let plugin = build_scene(ctx, SUITE)?;
    let mut outcomes = Outcomes::default();
    outcomes.record(SUITE, "rust demo", rust_demo(ctx, SUITE, &plugin));
    for (name, app) in APPS {
        outcomes.record(SUITE, name, app(ctx, SUITE, &plugin));
    }
    match dist::build(ctx, Profile::Debug, SUITE) {
        Ok(packages) => {
            for (name, run) in PACKAGE_RUNS {
                outcomes.record(SUITE, name, run(ctx, &packages));
            }
        }
        Err(f) => outcomes.record(SUITE, "packages", Err(f)),
    }
    outcomes.record_check(SUITE, "stale bindings", crate::stale::run(ctx, SUITE));
    outcomes.compare_trees(SUITE);
    outcomes.finish(SUITE)?;
    Ok(Status::Passed)
}

/// `cargo xtask demo`: the plugin, then the Rust demo binary and each language's app.
/// Prints one line per part; fails if any part failed or the apps' trees differ.
pub fn demo(ctx: &Ctx) -> Result {
    const DEMO: &str = "demo";
    if !ctx.path(SCENE_MANIFEST).is_file() {
        return Err(fail(format!("nothing to demo yet: {SCENE_MANIFEST} not present"))
            .hint("the demo needs the example plugin in examples/scene; run `cargo xtask test` meanwhile"));
    }
    let plugin = build_scene(ctx, DEMO)?;
    let mut outcomes = Outcomes::default();
    outcomes.record(DEMO, "rust demo", rust_demo(ctx, DEMO, &plugin));
    for (name, app) in APPS {
        outcomes.record(DEMO, name, app(ctx, DEMO, &plugin));
    }
    outcomes.compare_trees(DEMO);
    outcomes.finish(DEMO)
}

/// `cargo build -p scene`; returns the plugin's absolute path.
fn build_scene(ctx: &Ctx, suite: &str) -> Result<PathBuf> {
    if !ctx.has_package("scene") {
        return Err(fail(format!("{SCENE_MANIFEST} exists but package `scene` is not a workspace member")).hint(
            "add \"examples/scene\" to [workspace] members in the root Cargo.toml (and name the package `scene`)",
        ));
    }
    step(suite, "building the scene plugin (cargo build -p scene)");
    Cmd::cargo()
        .args(["build", "-p", "scene"])
        .cwd(&ctx.root)
        .hint("the example plugin does not build; reproduce with: cargo build -p scene")
        .run()?;
    let plugin = ctx.cdylib_path("scene")?;
    if !plugin.is_file() {
        return Err(fail(format!("cargo built scene but {} is missing", plugin.display())));
    }
    Ok(plugin)
}

/// `cargo run -p tether-demo` (the Rust side of the demo), when that package exists.
fn rust_demo(ctx: &Ctx, suite: &str, plugin: &Path) -> Result<String> {
    step(suite, "cargo run -p tether-demo");
    Cmd::cargo()
        .args(["run", "-q", "-p", "tether-demo"])
        .env(PLUGIN_ENV, plugin)
        .cwd(&ctx.root)
        .hint("reproduce with: cargo build -p scene && TETHER_SCENE_PLUGIN=target/debug/libscene.so cargo run -p tether-demo")
        .run_echo()
}

// ---- the apps against the workspace builds ----------------------------------------------------

/// The scene plugin's typed bindings for `language`, generated into target/bindings/scene-<language>.
fn scene_bindings(ctx: &Ctx, suite: &str, plugin: &Path, language: &str) -> Result<PathBuf> {
    let out = ctx.target_dir.join("bindings").join(format!("scene-{language}"));
    bindgen::generate(ctx, suite, plugin, &out, language, "scene")?;
    Ok(out.join(language))
}

/// `mypy --strict` must accept `file` (`None`) or reject it naming `Some(line)`.
pub fn mypy(ctx: &Ctx, suite: &str, python: &Path, path: &Path, file: &Path, rejects: Option<&str>) -> Result {
    step(
        suite,
        format!("mypy --strict {}{}", ctx.rel(file), if rejects.is_some() { " (must be rejected)" } else { "" }),
    );
    let (code, text) = Cmd::new(python)
        .args(["-m", "mypy", "--strict", "--no-color-output", "--cache-dir"])
        .arg(ctx.target_dir.join("mypy-cache"))
        .arg(file)
        .env("MYPYPATH", path)
        .env_remove("PYTHONPATH")
        .cwd(&ctx.root)
        .run_combined()?;
    match rejects {
        None if code == Some(0) => Ok(()),
        None => Err(fail(format!("mypy --strict rejects {}:\n{text}", ctx.rel(file))).hint(format!(
            "reproduce with: MYPYPATH={} {} -m mypy --strict {}",
            path.display(),
            python.display(),
            file.display()
        ))),
        Some(line) if code == Some(1) && text.contains(line) => Ok(()),
        Some(line) => Err(fail(format!(
            "mypy --strict should reject {} at {line} (exit 1), but exited {code:?}:\n{text}",
            ctx.rel(file)
        ))),
    }
}

/// `tsc` in `dir` (TypeScript from that folder's node_modules) with `args`: must pass
/// (`None`) or fail naming `Some(line)`.
pub fn tsc(ctx: &Ctx, suite: &str, dir: &Path, args: &[&str], rejects: Option<&str>) -> Result {
    step(
        suite,
        format!(
            "tsc {} (in {}){}",
            args.join(" "),
            ctx.rel(dir),
            if rejects.is_some() { " (must be rejected)" } else { "" }
        ),
    );
    let (code, text) = Cmd::new("node").arg("node_modules/typescript/bin/tsc").args(args).cwd(dir).run_combined()?;
    match rejects {
        None if code == Some(0) => Ok(()),
        None => Err(fail(format!("tsc {} fails:\n{text}", args.join(" "))).hint(format!(
            "reproduce with: cd {} && npx tsc {}",
            dir.display(),
            args.join(" ")
        ))),
        Some(line) if code != Some(0) && text.contains(line) => Ok(()),
        Some(line) => {
            Err(fail(format!("tsc {} should fail naming {line}, but exited {code:?}:\n{text}", args.join(" "))))
        }
    }
}

/// The tsc options of the strict check of one file (what examples/node/tsconfig.json says).
pub const TSC_STRICT: [&str; 10] = [
    "--strict",
    "--noEmit",
    "--target",
    "es2022",
    "--module",
    "nodenext",
    "--moduleResolution",
    "nodenext",
    "--types",
    "node",
];

/// examples/python/app.py with the dev venv's python (the extension from `maturin develop`) and
/// the scene bindings on PYTHONPATH, after `mypy --strict` accepted it (and rejected
/// wrong_call.py).
fn python_app(ctx: &Ctx, suite: &str, plugin: &Path) -> Result<String> {
    let python = python::prepare(ctx, suite)?;
    let bindings = scene_bindings(ctx, suite, plugin, "python")?;
    mypy(ctx, suite, &python, &bindings, &ctx.path(PYTHON_APP), None)?;
    mypy(ctx, suite, &python, &bindings, &ctx.path(PYTHON_WRONG_CALL.0), Some(PYTHON_WRONG_CALL.1))?;
    run_python(ctx, suite, &python, plugin, Some(&bindings))
}

/// The Node addon built and examples/node's dependencies installed (`npm ci` the first time:
/// tether-ffi linked to crates/node, TypeScript, @types/node); returns examples/node.
pub fn node_app_modules(ctx: &Ctx, suite: &str) -> Result<PathBuf> {
    node::prepare(ctx, suite)?;
    let dir = ctx.path(NODE_APP_DIR);
    if !dir.join("node_modules/tether-ffi/package.json").is_file()
        || !dir.join("node_modules/typescript/package.json").is_file()
    {
        step(suite, format!("npm ci (in {NODE_APP_DIR}: links crates/node as tether-ffi)"));
        Cmd::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .cwd(&dir)
            .hint(format!("npm could not link tether-ffi; check {NODE_APP_DIR}/package.json and package-lock.json"))
            .run()?;
    }
    Ok(dir)
}

/// examples/node/app.mjs, which depends on crates/node through `file:` (a symlink in its
/// node_modules, made by `npm ci` the first time).
fn node_app(ctx: &Ctx, suite: &str, plugin: &Path) -> Result<String> {
    let dir = node_app_modules(ctx, suite)?;
    // A copy, not a link: its `require('tether-ffi')` resolves from examples/node/node_modules.
    let bindings = scene_bindings(ctx, suite, plugin, "node")?;
    let installed = dir.join("node_modules/scene");
    dist::reset_dir(&installed)?;
    for entry in std::fs::read_dir(&bindings).map_err(|e| fail(format!("cannot list {}: {e}", bindings.display())))? {
        let entry = entry.map_err(|e| fail(format!("cannot list {}: {e}", bindings.display())))?;
        dist::copy_file(&entry.path(), &installed.join(entry.file_name()))?;
    }
    tsc(ctx, suite, &dir, &["-p", "."], None)?;
    let mut wrong: Vec<&str> = TSC_STRICT.to_vec();
    wrong.push(NODE_WRONG_CALL.0);
    tsc(ctx, suite, &dir, &wrong, Some(NODE_WRONG_CALL.1))?;
    run_node(ctx, suite, &dir, NODE_APP, plugin)
}

/// examples/java with Maven, after dev.tether:tether-ffi is installed by `mvn install`; the
/// library is the freshly built one (`-Dtether.library.path`).
fn java_app(ctx: &Ctx, suite: &str, plugin: &Path) -> Result<String> {
    let lib = java::install(ctx, suite)?;
    // The scene plugin's typed bindings (dev.tether:scene), generated from this build of it and
    // installed into the local Maven repository, as the app depends on them.
    let project =
        java::bindgen(ctx, suite, plugin, &ctx.target_dir.join("bindgen-examples"), None, java::SCENE_PACKAGE)?;
    step(suite, format!("mvn install (the scene bindings, in {})", ctx.rel(&project)));
    java::mvn(ctx, &project.join("pom.xml").to_string_lossy())?
        .args(["-q", "install"])
        .cwd(&project)
        .hint(format!("reproduce with: mvn -B install -f {}", project.join("pom.xml").display()))
        .run()?;
    let out = run_java(ctx, suite, plugin, Some(&lib))?;
    java_app_on_jdk25(ctx, suite, plugin, &lib, &project, &out)?;
    Ok(out)
}

/// The app compiled by the run before, run again in Temurin 25 (where the machines have it)
/// from the class path with `--enable-native-access=ALL-UNNAMED`.
fn java_app_on_jdk25(ctx: &Ctx, suite: &str, plugin: &Path, lib: &Path, bindings: &Path, first: &str) -> Result {
    let cp = [
        ctx.path("examples/java/target/classes"),
        ctx.path("crates/java/target/classes"),
        bindings.join("target/classes"),
    ]
    .map(|p| p.display().to_string())
    .join(":");
    let args = [java::NATIVE_ACCESS.to_string(), java::library_property(lib), "-cp".into(), cp];
    app_on_jdk25(ctx, suite, "class path", &args, Some(plugin), first)
}

/// App (compiled by the Maven run before) in Temurin 25, where the machines have it, with
/// `args` (the native-access flag and where the frontend and the bindings are): it must print
/// the tree `first` printed and no warning (JEP 472). `plugin`: TETHER_SCENE_PLUGIN, else the
/// bindings' packed plugin.
fn app_on_jdk25(ctx: &Ctx, suite: &str, how: &str, args: &[String], plugin: Option<&Path>, first: &str) -> Result {
    if !Path::new(java::TEMURIN_25).is_file() {
        return Ok(());
    }
    step(suite, format!("{} {} App (the same app on JDK 25, {how})", java::TEMURIN_25, args[0]));
    let mut cmd = Cmd::new(java::TEMURIN_25).args(args).arg("App").cwd(&ctx.root);
    cmd = match plugin {
        Some(p) => cmd.env(PLUGIN_ENV, p),
        None => cmd.env_remove(PLUGIN_ENV),
    };
    let (code, output) = cmd.run_combined()?;
    if code != Some(0) {
        print!("{output}");
        return Err(fail(format!("the Java app fails on Temurin 25 ({how}; output above)")));
    }
    if let Some(w) = output.lines().find(|l| l.starts_with("WARNING")) {
        return Err(fail(format!("the Java app printed a warning on Temurin 25 ({how}): {w}")));
    }
    if tree_of(&output) != tree_of(first) {
        return Err(fail(format!("the Java app printed another tree on Temurin 25 ({how}):\n{output}")));
    }
    println!("  same output on JDK 25 ({how}), no warning");
    Ok(())
}

/// The app with `python`; `path` (the generated bindings) on PYTHONPATH when given, else
/// `scene` is the installed package.
fn run_python(ctx: &Ctx, suite: &str, python: &Path, plugin: &Path, path: Option<&Path>) -> Result<String> {
    step(suite, format!("{} {PYTHON_APP}", ctx.rel(python)));
    let mut cmd = Cmd::new(python).arg(ctx.path(PYTHON_APP)).env(PLUGIN_ENV, plugin);
    cmd = match path {
        Some(p) => cmd.env("PYTHONPATH", p),
        None => cmd.env_remove("PYTHONPATH"),
    };
    cmd.cwd(&ctx.root)
        .hint(format!("reproduce with: {PLUGIN_ENV}={} {} {PYTHON_APP}", plugin.display(), python.display()))
        .run_echo()
}

/// `node <app>` in `dir` (tether-ffi and scene resolve from that folder's node_modules).
fn run_node(ctx: &Ctx, suite: &str, dir: &Path, app: &str, plugin: &Path) -> Result<String> {
    step(suite, format!("node {app} (in {})", ctx.rel(dir)));
    Cmd::new("node")
        .arg(app)
        .env(PLUGIN_ENV, plugin)
        .cwd(dir)
        .hint(format!("reproduce with: cd {} && node {app}", dir.display()))
        .run_echo()
}

/// `mvn compile exec:java` on examples/java; `library` overrides the jar's packed library.
fn run_java(ctx: &Ctx, suite: &str, plugin: &Path, library: Option<&Path>) -> Result<String> {
    exec_java(ctx, suite, Some(plugin), library)
}

/// examples/java with the plugin packed in the scene bindings' jar: TETHER_SCENE_PLUGIN unset,
/// the jar's copy of `plugin` (the packaged build) extracted and loaded.
fn run_java_packed(ctx: &Ctx, plugin: &Path) -> Result<String> {
    step(
        SUITE,
        format!(
            "(the scene jar's packed {}, no {PLUGIN_ENV})",
            plugin.file_name().unwrap_or_default().to_string_lossy()
        ),
    );
    exec_java(ctx, SUITE, None, None)
}

fn exec_java(ctx: &Ctx, suite: &str, plugin: Option<&Path>, library: Option<&Path>) -> Result<String> {
    step(suite, format!("mvn compile exec:java -f {JAVA_POM}"));
    let library_arg = library.map(java::library_property);
    let mut cmd = java::mvn(ctx, JAVA_POM)?.args(["-q", "compile", "exec:java"]).cwd(&ctx.root);
    cmd = match plugin {
        Some(p) => cmd.env(PLUGIN_ENV, p),
        None => cmd.env_remove(PLUGIN_ENV),
    };
    if let Some(arg) = &library_arg {
        cmd = cmd.arg(arg);
    }
    let env = plugin.map(|p| format!("{PLUGIN_ENV}={} ", p.display())).unwrap_or_default();
    cmd.hint(format!(
        "reproduce with: {env}mvn -B -f {JAVA_POM} compile exec:java {}",
        library_arg.as_deref().unwrap_or("")
    ))
    .run_echo()
}

// ---- the apps from the installed packages -----------------------------------------------------

/// An empty venv (target/pkg-venv), `pip install` of the wheel, then the app with that python.
fn python_package(ctx: &Ctx, packages: &Packages) -> Result<String> {
    let venv = ctx.target_dir.join("pkg-venv");
    let python = python::fresh_venv(ctx, SUITE, &venv)?;
    step(SUITE, format!("pip install {} (into {})", ctx.rel(&packages.wheel), ctx.rel(&venv)));
    Cmd::new(&python)
        .args(["-m", "pip", "install", "--no-index", "--disable-pip-version-check", "-q"])
        .arg(&packages.wheel)
        .arg(&packages.scene_wheel)
        .hint("the wheel does not install into an empty venv; see pip's message above")
        .run()?;
    let location = Cmd::new(&python)
        .args(["-c", "import tether_ffi; print(tether_ffi.__file__)"])
        .env_remove("PYTHONPATH")
        .cwd(&venv)
        .hint("the installed wheel does not import")
        .output()?;
    let imported = PathBuf::from(location.trim());
    if !canonical(&imported).starts_with(canonical(&venv)) {
        return Err(fail(format!(
            "the package venv imported tether_ffi from {}, not from the installed wheel",
            imported.display()
        )));
    }
    run_python(ctx, SUITE, &python, &packages.plugin, None)
}

/// An empty folder (target/pkg-node) with a bare package.json, `npm install` of the tarball,
/// then app.mjs copied there and run.
fn node_package(ctx: &Ctx, packages: &Packages) -> Result<String> {
    let dir = ctx.target_dir.join("pkg-node");
    dist::reset_dir(&dir)?;
    let manifest = dir.join("package.json");
    std::fs::write(&manifest, "{ \"name\": \"tether-package-test\", \"version\": \"0.0.0\", \"private\": true }\n")
        .map_err(|e| fail(format!("cannot write {}: {e}", manifest.display())))?;
    // The compiled app (node app ran first), as an ES module.
    dist::copy_file(&ctx.path(NODE_APP_DIR).join(NODE_APP), &dir.join("app.mjs"))?;
    step(SUITE, format!("npm install {} (in {})", ctx.rel(&packages.npm), ctx.rel(&dir)));
    Cmd::new("npm")
        .args(["install", "--no-audit", "--no-fund"])
        .arg(&packages.npm)
        .arg(&packages.scene_npm)
        .cwd(&dir)
        .hint("the tarball does not install into an empty folder; see npm's message above")
        .run()?;
    let addon = dir.join("node_modules/tether-ffi").join(node::ADDON_NAME);
    let installed = addon.symlink_metadata().is_ok_and(|m| m.file_type().is_file());
    if !installed {
        return Err(fail(format!("npm install did not unpack the addon as a file at {}", addon.display())));
    }
    run_node(ctx, SUITE, &dir, "app.mjs", &packages.plugin)
}

/// The jar installed into the local Maven repository (`install:install-file` with the
/// frontend's pom), then examples/java built against it; the library comes out of the jar.
fn java_package(ctx: &Ctx, packages: &Packages) -> Result<String> {
    step(SUITE, format!("mvn install:install-file -Dfile={}", ctx.rel(&packages.jar)));
    let jar_dir = packages.jar.parent().unwrap_or(&ctx.target_dir);
    java::maven(ctx)?
        .args(["-q", "install:install-file"])
        .arg(format!("-Dfile={}", packages.jar.display()))
        .arg(format!("-DpomFile={}", packages.pom.display()))
        .cwd(jar_dir)
        .hint("Maven could not install the jar into the local repository (target/m2)")
        .run()?;
    step(SUITE, format!("mvn install:install-file -Dfile={}", ctx.rel(&packages.scene_jar)));
    java::maven(ctx)?
        .args(["-q", "install:install-file"])
        .arg(format!("-Dfile={}", packages.scene_jar.display()))
        .arg(format!("-DpomFile={}", packages.scene_pom.display()))
        .cwd(jar_dir)
        .hint("Maven could not install the scene bindings' jar into the local repository (target/m2)")
        .run()?;
    // The plugin packed in the scene jar is the one the app loads (no TETHER_SCENE_PLUGIN).
    let out = run_java_packed(ctx, &packages.plugin)?;
    // Both jars as named modules (the library and the plugin come out of them), the app from
    // the class path: native access enabled for the frontend's module by name.
    let module_path = format!("{}:{}", packages.jar.display(), packages.scene_jar.display());
    let args = [
        format!("--enable-native-access={}", java::FFI_MODULE),
        "--module-path".into(),
        module_path,
        "--add-modules".into(),
        java::SCENE_PACKAGE.into(),
        "-cp".into(),
        ctx.path("examples/java/target/classes").display().to_string(),
    ];
    app_on_jdk25(ctx, SUITE, "module path", &args, None, &out)?;
    Ok(out)
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

// ---- comparing the reports --------------------------------------------------------------------

/// The lines between TREE_START and TREE_END.
fn tree_of(stdout: &str) -> Option<Vec<&str>> {
    let mut lines = stdout.lines().skip_while(|l| *l != TREE_START);
    lines.next()?;
    let tree: Vec<&str> = lines.by_ref().take_while(|l| *l != TREE_END).collect();
    // `take_while` consumed the end marker only if it was there.
    stdout.contains(TREE_END).then_some(tree)
}

/// Ok(line count) when every report printed the same non-empty tree.
fn same_tree(reports: &[Report]) -> Result<usize> {
    let mut trees = Vec::new();
    for r in reports {
        let tree = tree_of(&r.stdout)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| fail(format!("{} printed no tree between `{TREE_START}` and `{TREE_END}`", r.name)))?;
        trees.push((r.name, tree));
    }
    let (first_name, first) = &trees[0];
    for (name, tree) in &trees[1..] {
        if tree != first {
            return Err(fail(format!(
                "{name} printed another tree than {first_name}:\n{}\n  vs\n{}",
                tree.join("\n"),
                first.join("\n")
            )));
        }
    }
    Ok(first.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(name: &'static str, stdout: &str) -> Report {
        Report { name, stdout: stdout.to_string() }
    }

    #[test]
    fn tree_is_read_between_the_markers() {
        let out = "x\n--- tree ---\nworld\n  house\n--- end tree ---\ny\n";
        assert_eq!(tree_of(out), Some(vec!["world", "  house"]));
        assert_eq!(tree_of("--- tree ---\nworld\n"), None);
        assert_eq!(tree_of("no tree"), None);
    }

    #[test]
    fn different_trees_are_reported() {
        let one = "--- tree ---\nworld\n--- end tree ---\n";
        let two = "--- tree ---\nworld\n  door\n--- end tree ---\n";
        assert_eq!(same_tree(&[report("a", one), report("c", one)]).ok(), Some(1));
        let err = same_tree(&[report("a", one), report("b", two)]).unwrap_err();
        assert!(err.what.contains("b printed another tree than a"), "{}", err.what);
    }

    #[test]
    fn a_missing_tree_fails() {
        let err = same_tree(&[report("a", "nothing")]).unwrap_err();
        assert!(err.what.contains("a printed no tree"), "{}", err.what);
    }
}

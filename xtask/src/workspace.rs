//! What the workspace looks like right now (from `cargo metadata`), plus per-run state shared
//! between suites (a venv or an addon prepared once is reused by the examples and the demo).

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};

use crate::json::{self, Json};
use crate::util::{fail, Cmd, Result};

pub struct Package {
    pub name: String,
    /// Name and kinds (`lib`, `cdylib`, `bin`, ...) of each target.
    pub targets: Vec<(String, Vec<String>)>,
}

pub struct Ctx {
    /// The workspace root (the directory of the root Cargo.toml).
    pub root: PathBuf,
    /// Cargo's target directory (honours CARGO_TARGET_DIR and build.target-dir; else root/target).
    pub target_dir: PathBuf,
    pub packages: Vec<Package>,
    /// The venv's python, once the Python extension is built and installed into it.
    pub python_ready: RefCell<Option<PathBuf>>,
    /// The Node addon is built and copied to crates/node/tether.node.
    pub node_ready: Cell<bool>,
    /// tether-bindgen was built in this run.
    pub bindgen_ready: Cell<bool>,
    /// libtether_java is built (and, for the examples, the jar is installed in target/m2, the
    /// local Maven repository of xtask's Maven runs).
    pub java_built: Cell<bool>,
    pub java_installed: Cell<bool>,
    /// The Java tests are compiled (`mvn test-compile`), for the harden mains run with `java -cp`.
    pub java_tests_compiled: Cell<bool>,
}

impl Ctx {
    pub fn load() -> Result<Ctx> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("xtask lives one level below the workspace root")
            .to_path_buf();
        let text = Cmd::cargo()
            .args(["metadata", "--no-deps", "--format-version", "1", "--manifest-path"])
            .arg(root.join("Cargo.toml"))
            .hint(
                "the workspace manifest (or one member's Cargo.toml) does not load; fix the error cargo printed above",
            )
            .output()?;
        let meta = json::parse(&text).map_err(|e| fail(format!("cannot read `cargo metadata` output: {e}")))?;
        let target_dir = meta
            .get("target_directory")
            .and_then(Json::as_str)
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("target"));
        let packages = meta
            .get("packages")
            .map(Json::as_array)
            .unwrap_or_default()
            .iter()
            .filter_map(|p| {
                let name = p.get("name")?.as_str()?.to_string();
                let targets = p
                    .get("targets")
                    .map(Json::as_array)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|t| {
                        let name = t.get("name")?.as_str()?.to_string();
                        let kinds = t
                            .get("kind")
                            .map(Json::as_array)
                            .unwrap_or_default()
                            .iter()
                            .filter_map(|k| k.as_str().map(str::to_string))
                            .collect();
                        Some((name, kinds))
                    })
                    .collect();
                Some(Package { name, targets })
            })
            .collect();
        Ok(Ctx {
            root,
            target_dir,
            packages,
            python_ready: RefCell::new(None),
            node_ready: Cell::new(false),
            bindgen_ready: Cell::new(false),
            java_built: Cell::new(false),
            java_installed: Cell::new(false),
            java_tests_compiled: Cell::new(false),
        })
    }

    pub fn has_package(&self, name: &str) -> bool {
        self.packages.iter().any(|p| p.name == name)
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// target/debug/lib<name>.so for the cdylib target of `package`.
    pub fn cdylib_path(&self, package: &str) -> Result<PathBuf> {
        self.cdylib_path_in(package, "debug")
    }

    /// target/<profile_dir>/lib<name>.so for the cdylib target of `package` (`debug`, `release`).
    pub fn cdylib_path_in(&self, package: &str, profile_dir: &str) -> Result<PathBuf> {
        let pkg = self
            .packages
            .iter()
            .find(|p| p.name == package)
            .ok_or_else(|| fail(format!("package `{package}` is not a workspace member")))?;
        let lib = pkg
            .targets
            .iter()
            .find(|(_, kinds)| kinds.iter().any(|k| k == "cdylib"))
            .map(|(name, _)| name.as_str())
            .ok_or_else(|| {
                fail(format!("package `{package}` has no cdylib target"))
                    .hint(format!("set `[lib] crate-type = [\"cdylib\", ...]` in {package}'s Cargo.toml"))
            })?;
        Ok(self.target_dir.join(profile_dir).join(crate::util::cdylib_file_name(lib)))
    }

    /// Path relative to the root for messages, falling back to the absolute path.
    pub fn rel<'a>(&self, path: &'a Path) -> std::borrow::Cow<'a, str> {
        match path.strip_prefix(&self.root) {
            Ok(rel) => rel.to_string_lossy(),
            Err(_) => path.to_string_lossy(),
        }
    }
}

/// The test plugins every frontend suite loads (T36, T50..T56): the sample and bad-ABI ones by
/// their own variables, and all of them (the Rust ones from `tests/plugins/`, the C ones from
/// `tests/c/`) in one directory, `TETHER_TEST_PLUGIN_DIR`.
pub struct TestPlugins {
    pub sample: PathBuf,
    pub bad_abi: PathBuf,
    pub dir: PathBuf,
}

/// The Rust test plugins (workspace members under tests/plugins/).
pub const RUST_TEST_PLUGINS: [&str; 4] = [
    "tether-test-plugin",
    "tether-test-plugin-bad-abi",
    "tether-test-plugin-init-panics",
    "tether-test-plugin-conflict",
];

/// The C test plugins the frontend suites load: tests/c/<name>.c becomes libtether_c_<name>.so
/// next to the Rust ones.
pub const C_TEST_PLUGINS: [&str; 2] = ["init_fails", "hostile"];

/// How the test plugins are built: the cargo command (everything but the packages) and the
/// directory its cdylibs land in, and the flags the C plugins are compiled with.
pub struct PluginBuild {
    pub cargo: Cmd,
    pub lib_dir: PathBuf,
    /// Compile-only flags (`-fsanitize=address`): the link stays plain, so gcc names no runtime
    /// library of its own and the process's (preloaded) one serves the instrumented code.
    pub c_flags: Vec<String>,
}

impl Ctx {
    /// Builds every test plugin plainly (`cargo build`, target/debug); `suite` labels the
    /// progress lines.
    pub fn test_plugins(&self, suite: &str) -> Result<TestPlugins> {
        let lib_dir = self.cdylib_path("tether-test-plugin")?.parent().expect("a file in the target directory").into();
        self.test_plugins_built(suite, PluginBuild { cargo: Cmd::cargo().arg("build"), lib_dir, c_flags: Vec::new() })
    }

    /// Builds every test plugin with `build` (harden's sanitizer runs instrument them).
    pub fn test_plugins_built(&self, suite: &str, build: PluginBuild) -> Result<TestPlugins> {
        let packages: Vec<String> = RUST_TEST_PLUGINS.iter().flat_map(|p| ["-p".to_string(), p.to_string()]).collect();
        let cargo = build.cargo.args(&packages).cwd(&self.root);
        let shown = cargo.display();
        crate::util::step(suite, format!("building the Rust test plugins ({shown})"));
        cargo.hint(format!("reproduce with: {shown}")).run()?;
        let dir = build.lib_dir;
        let cc = std::env::var("CC").unwrap_or_else(|_| "gcc".into());
        crate::util::require_tool(suite, &cc)?;
        for name in C_TEST_PLUGINS {
            let out = dir.join(crate::util::cdylib_file_name(&format!("tether_c_{name}")));
            let object = out.with_extension("o");
            let source = self.path(&format!("tests/c/{name}.c"));
            crate::util::step(suite, format!("compiling {} into {}", self.rel(&source), self.rel(&out)));
            Cmd::new(&cc)
                .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-fPIC", "-O1", "-c"])
                .args(&build.c_flags)
                .arg("-I")
                .arg(self.path("crates/core/include"))
                .arg("-o")
                .arg(&object)
                .arg(&source)
                .hint(format!("the C test plugin {} does not compile with {cc}", self.rel(&source)))
                .run()?;
            Cmd::new(&cc)
                .args(["-shared", "-o"])
                .arg(&out)
                .arg(&object)
                .hint(format!("the C test plugin {} does not link with {cc}", self.rel(&source)))
                .run()?;
        }
        let plugin = |package: &str| -> Result<PathBuf> {
            Ok(dir.join(self.cdylib_path(package)?.file_name().expect("a cdylib file name")))
        };
        Ok(TestPlugins { sample: plugin("tether-test-plugin")?, bad_abi: plugin("tether-test-plugin-bad-abi")?, dir })
    }
}

//! The packages a user installs, built into one folder: the Python wheel (maturin), the npm
//! tarball (`npm pack`, with the addon inside as tether.node), the jar (`mvn package`, with
//! libtether_java inside, and its sources and javadoc jars), the example plugin, the scene
//! example's typed Java bindings as a jar (tether-bindgen's output, the plugin packed inside,
//! with its pom, sources and javadoc jars) and tether.h.
//!
//! `cargo xtask build-all` builds them in release mode into target/dist; the examples suite
//! builds them in debug mode into target/dist-test and installs them into empty environments.
//! The npm and Maven packaging run on copies staged in target/dist-work/<profile>, so they never
//! write into crates/node or crates/java.

use std::path::{Path, PathBuf};

use crate::examples::SCENE_MANIFEST;
use crate::json::{self, Json};
use crate::util::{fail, report_failure, require_tool, step, Cmd, Result};
use crate::workspace::Ctx;
use crate::{java, node, python};

const HEADER: &str = "crates/core/include/tether.h";

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Release,
    Debug,
}

impl Profile {
    /// Cargo's output directory name under the target dir.
    fn dir_name(self) -> &'static str {
        match self {
            Profile::Release => "release",
            Profile::Debug => "debug",
        }
    }

    /// `cargo build` / `maturin build` flags for this profile.
    fn flags(self) -> &'static [&'static str] {
        match self {
            Profile::Release => &["--release"],
            Profile::Debug => &[],
        }
    }

    /// target/dist (release) or target/dist-test (debug, for the package install test).
    pub fn out_dir(self, ctx: &Ctx) -> PathBuf {
        ctx.target_dir.join(match self {
            Profile::Release => "dist",
            Profile::Debug => "dist-test",
        })
    }
}

/// Where each package was written (tether.h is there too, but nothing installs it).
pub struct Packages {
    pub plugin: PathBuf,
    pub wheel: PathBuf,
    pub npm: PathBuf,
    pub jar: PathBuf,
    /// The frontend's pom next to the jar (`<jar stem>.pom`), for `install:install-file`.
    pub pom: PathBuf,
    /// The scene plugin's typed Python package (depends on tether_ffi).
    pub scene_wheel: PathBuf,
    /// The scene plugin's typed npm package (depends on tether-ffi).
    pub scene_npm: PathBuf,
    /// The scene plugin's typed Java bindings (dev.tether:scene) and their pom beside.
    pub scene_jar: PathBuf,
    pub scene_pom: PathBuf,
}

/// What a step needs: the profile, the output folder, a scratch folder, the progress label.
struct Job<'a> {
    ctx: &'a Ctx,
    profile: Profile,
    out: PathBuf,
    work: PathBuf,
    label: &'a str,
}

type Step = fn(&Job) -> Result<PathBuf>;

/// Every package, in build order.
const STEPS: [(&str, Step); 8] = [
    ("tether.h", header),
    ("scene plugin", scene_plugin),
    ("wheel", wheel),
    ("npm tarball", npm_tarball),
    ("jar", jar),
    ("scene wheel", scene_wheel),
    ("scene npm", scene_npm),
    ("scene jar", scene_jar),
];

/// `cargo xtask build-all`: every package in release mode into target/dist. Runs every step
/// even when one fails, then prints where each package is (or that it failed).
pub fn build_all(ctx: &Ctx) -> Result {
    const LABEL: &str = "build-all";
    let job = Job::new(ctx, Profile::Release, LABEL)?;
    let mut rows = Vec::new();
    let mut failed = Vec::new();
    for (i, (name, build)) in STEPS.iter().enumerate() {
        step(LABEL, format!("[{}/{}] {name}", i + 1, STEPS.len()));
        let row = match build(&job) {
            Ok(path) => ctx.rel(&path).into_owned(),
            Err(f) => {
                report_failure(LABEL, &f);
                failed.push(*name);
                "FAILED (see the error above)".to_string()
            }
        };
        rows.push(format!("    {name:<13} {row}"));
    }
    println!("==> [{LABEL}] summary");
    rows.iter().for_each(|r| println!("{r}"));
    if failed.is_empty() {
        println!("==> [{LABEL}] every package is in {}", ctx.rel(&job.out));
        Ok(())
    } else {
        Err(fail(format!("build-all: failed to build {}", failed.join(", "))))
    }
}

/// Every package in `profile` into that profile's output folder; stops at the first failure.
pub fn build(ctx: &Ctx, profile: Profile, label: &str) -> Result<Packages> {
    let job = Job::new(ctx, profile, label)?;
    let mut paths = Vec::new();
    for (name, build) in STEPS {
        step(label, format!("package: {name} (into {})", ctx.rel(&job.out)));
        paths.push(build(&job)?);
    }
    let [_header, plugin, wheel, npm, jar, scene_wheel, scene_npm, scene_jar]: [PathBuf; 8] =
        paths.try_into().expect("one path per step");
    let pom = jar.with_extension("pom");
    let scene_pom = scene_jar.with_extension("pom");
    Ok(Packages { plugin, wheel, npm, jar, pom, scene_wheel, scene_npm, scene_jar, scene_pom })
}

impl<'a> Job<'a> {
    /// Empties the output folder (no stale package of an older version survives).
    fn new(ctx: &'a Ctx, profile: Profile, label: &'a str) -> Result<Job<'a>> {
        let out = profile.out_dir(ctx);
        let work = ctx.target_dir.join("dist-work").join(profile.dir_name());
        reset_dir(&out)?;
        Ok(Job { ctx, profile, out, work, label })
    }

    /// `cargo build [--release] -p <package>`; returns the built cdylib's path.
    fn cargo_cdylib(&self, package: &str, why: &str) -> Result<PathBuf> {
        step(
            self.label,
            format!(
                "cargo build {}-p {package} ({why})",
                self.profile.flags().iter().map(|f| format!("{f} ")).collect::<String>()
            ),
        );
        Cmd::cargo()
            .arg("build")
            .args(self.profile.flags())
            .args(["-p", package])
            .cwd(&self.ctx.root)
            .hint(format!(
                "`{package}` does not build in the {} profile; fix the compile error cargo printed above",
                self.profile.dir_name()
            ))
            .run()?;
        let lib = self.ctx.cdylib_path_in(package, self.profile.dir_name())?;
        if !lib.is_file() {
            return Err(fail(format!("cargo built {package} but {} is missing", lib.display())));
        }
        Ok(lib)
    }

    /// A fresh staging folder for one package.
    fn stage(&self, name: &str) -> Result<PathBuf> {
        let dir = self.work.join(name);
        reset_dir(&dir)?;
        Ok(dir)
    }
}

/// tether.h, the C ABI header, copied as is.
fn header(job: &Job) -> Result<PathBuf> {
    let src = job.ctx.path(HEADER);
    if !src.is_file() {
        return Err(
            fail(format!("{HEADER} is missing")).hint("the C header ships with tether-core in crates/core/include")
        );
    }
    copy_into(&src, &job.out)
}

/// The example plugin (libscene.so).
fn scene_plugin(job: &Job) -> Result<PathBuf> {
    if !job.ctx.has_package("scene") {
        return Err(fail(format!("package `scene` ({SCENE_MANIFEST}) is not a workspace member")));
    }
    let lib = job.cargo_cdylib("scene", "the example plugin")?;
    copy_into(&lib, &job.out)
}

/// The wheel: `maturin build [--release] --out <dist>` with the dev venv's maturin and python.
fn wheel(job: &Job) -> Result<PathBuf> {
    let venv = python::tool_venv(job.ctx, job.label)?;
    let release = job.profile == Profile::Release;
    step(
        job.label,
        format!(
            "maturin build{} --manifest-path {} --out {}",
            if release { " --release" } else { "" },
            python::MANIFEST,
            job.ctx.rel(&job.out)
        ),
    );
    venv.maturin()?
        .args(["build", "--manifest-path", python::MANIFEST])
        .args(job.profile.flags())
        .arg("--out")
        .arg(&job.out)
        .arg("--interpreter")
        .arg(&venv.python)
        .cwd(&job.ctx.root)
        .hint(format!(
            "the wheel does not build; reproduce with: {}/bin/maturin build{} --manifest-path {}",
            venv.dir.display(),
            if release { " --release" } else { "" },
            python::MANIFEST
        ))
        .run()?;
    let wheel = only_file(&job.out, "tether_ffi-", ".whl")?;
    let listing = Cmd::new(&venv.python).args(["-m", "zipfile", "-l"]).arg(&wheel).output()?;
    if !listing.contains("tether_ffi/_native") {
        return Err(fail(format!("{} has no tether_ffi/_native extension inside", wheel.display())));
    }
    Ok(wheel)
}

/// The npm tarball: the files `npm pack` would take from crates/node, with the addon of this
/// profile as tether.node, staged and packed with `npm pack`.
fn npm_tarball(job: &Job) -> Result<PathBuf> {
    if !job.ctx.path(node::PACKAGE_JSON).is_file() {
        return Err(fail(format!("{} is missing", node::PACKAGE_JSON)));
    }
    require_tool(job.label, "node")?;
    require_tool(job.label, "npm")?;
    let addon = job.cargo_cdylib("tether-node", "the Node addon")?;
    let package_dir = job.ctx.path(node::DIR);
    let listing = Cmd::new("npm")
        .args(["pack", "--dry-run", "--json"])
        .cwd(&package_dir)
        .hint(format!("`npm pack` cannot read {}", node::PACKAGE_JSON))
        .output()?;
    let files = packed_files(&listing)?;
    let stage = job.stage("npm")?;
    for file in files.iter().filter(|f| *f != node::ADDON_NAME) {
        let dest = stage.join(file);
        if let Some(parent) = dest.parent() {
            make_dir(parent)?;
        }
        copy_file(&package_dir.join(file), &dest)?;
    }
    copy_file(&addon, &stage.join(node::ADDON_NAME))?;
    step(job.label, format!("npm pack (staged in {})", job.ctx.rel(&stage)));
    Cmd::new("npm")
        .args(["pack", "--pack-destination"])
        .arg(&job.out)
        .cwd(&stage)
        .hint("npm could not pack the staged package; reproduce with the command above")
        .output()?;
    let tarball = only_file(&job.out, "tether-ffi-", ".tgz")?;
    let entries = Cmd::new("tar").arg("tzf").arg(&tarball).output()?;
    if !entries.lines().any(|l| l == format!("package/{}", node::ADDON_NAME)) {
        return Err(fail(format!("{} has no {} inside", tarball.display(), node::ADDON_NAME)));
    }
    Ok(tarball)
}

/// The file paths in `npm pack --dry-run --json` output.
fn packed_files(listing: &str) -> Result<Vec<String>> {
    let parsed = json::parse(listing).map_err(|e| fail(format!("cannot read `npm pack --json`: {e}")))?;
    let files: Vec<String> = parsed
        .as_array()
        .first()
        .and_then(|pack| pack.get("files"))
        .map(Json::as_array)
        .unwrap_or_default()
        .iter()
        .filter_map(|f| Some(f.get("path")?.as_str()?.to_string()))
        .collect();
    if files.is_empty() {
        return Err(fail("`npm pack --dry-run --json` listed no files"));
    }
    Ok(files)
}

/// The jar: crates/java's pom and main sources staged, `mvn install` (package, then into the
/// local Maven repository, where the scene bindings' build finds it) with this profile's
/// libtether_java as the native directory; the pom, sources and javadoc jars are copied next
/// to the jar.
fn jar(job: &Job) -> Result<PathBuf> {
    if !job.ctx.path(java::POM).is_file() {
        return Err(fail(format!("{} is missing", java::POM)));
    }
    for tool in ["java", "javac", "jar", "mvn"] {
        require_tool(job.label, tool)?;
    }
    let lib = job.cargo_cdylib("tether-java", "the JNI library")?;
    let stage = job.stage("java")?;
    let java_dir = job.ctx.path(java::DIR);
    copy_file(&java_dir.join("pom.xml"), &stage.join("pom.xml"))?;
    copy_tree(&java_dir.join("src/main"), &stage.join("src/main"))?;
    let pom = stage.join("pom.xml");
    step(job.label, format!("mvn install -Dmaven.test.skip=true (staged in {})", job.ctx.rel(&stage)));
    java::mvn(job.ctx, &pom.to_string_lossy())?
        .args(["-q", "install", "-Dmaven.test.skip=true"])
        .arg(java::native_dir_property(&lib))
        .cwd(&stage)
        .hint(format!(
            "Maven could not package the jar; reproduce with: mvn -B package -DskipTests -f {} {}",
            java::POM,
            java::native_dir_property(&lib)
        ))
        .run()?;
    let built = only_file(&stage.join("target"), "tether-ffi-", ".jar")?;
    let entries = Cmd::new("jar").arg("tf").arg(&built).output()?;
    let lib_name = lib.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if !entries.lines().any(|e| e.starts_with("native/") && e.ends_with(&lib_name)) {
        return Err(fail(format!("{} has no native/<platform>/{lib_name} inside", built.display()))
            .hint("the pom packs ${tether.native.dir}/libtether_java.so; check that property in crates/java/pom.xml"));
    }
    let jar = copy_into(&built, &job.out)?;
    copy_file(&pom, &jar.with_extension("pom"))?;
    copy_attached(&built, &job.out)?;
    Ok(jar)
}

/// The `-sources.jar` and `-javadoc.jar` Maven built beside `jar`, copied into `out` (Maven
/// Central requires both).
fn copy_attached(jar: &Path, out: &Path) -> Result {
    let stem = jar.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    for kind in ["sources", "javadoc"] {
        let attached = jar.with_file_name(format!("{stem}-{kind}.jar"));
        if !attached.is_file() {
            return Err(fail(format!("Maven wrote no {}", attached.display()))
                .hint("the pom attaches them with maven-source-plugin and maven-javadoc-plugin"));
        }
        copy_into(&attached, out)?;
    }
    Ok(())
}

/// The scene example's typed Java bindings: tether-bindgen over this profile's scene plugin
/// (package dev.tether.examples.scene, the plugin packed inside), `mvn package` of the
/// generated project (it depends on dev.tether:tether-ffi, installed by the jar step); the
/// jar, its pom (`scene-<version>.pom`), sources and javadoc jars into the output folder.
fn scene_jar(job: &Job) -> Result<PathBuf> {
    let plugin = job.cargo_cdylib("scene", "the example plugin, for its bindings")?;
    let stage = job.stage("scene-java")?;
    let project = java::bindgen(job.ctx, job.label, &plugin, &stage, None, java::SCENE_PACKAGE)?;
    let pom = project.join("pom.xml");
    step(job.label, format!("mvn package (the generated bindings, in {})", job.ctx.rel(&project)));
    java::mvn(job.ctx, &pom.to_string_lossy())?
        .args(["-q", "package"])
        .cwd(&project)
        .hint(format!(
            "Maven could not package the generated bindings; reproduce with: mvn -B package -f {}",
            pom.display()
        ))
        .run()?;
    let built = only_file(&project.join("target"), "scene-", ".jar")?;
    let entries = Cmd::new("jar").arg("tf").arg(&built).output()?;
    let plugin_name = plugin.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let packed = format!("{}/{plugin_name}", java::SCENE_PACKAGE.replace('.', "/"));
    if !entries.lines().any(|e| e == packed) {
        return Err(fail(format!("{} has no {packed} inside", built.display()))
            .hint("tether-bindgen copies the plugin into src/main/resources/<package>/"));
    }
    let jar = copy_into(&built, &job.out)?;
    copy_file(&pom, &jar.with_extension("pom"))?;
    copy_attached(&built, &job.out)?;
    Ok(jar)
}

/// The scene plugin of this profile (the scene plugin step's copy) and its bindings for
/// `language`, generated into the staging folder; returns the generated project's folder.
fn scene_bindings(job: &Job, language: &str) -> Result<PathBuf> {
    let plugin = job.out.join(crate::util::cdylib_file_name("scene"));
    if !plugin.is_file() {
        return Err(fail(format!("{} is missing (the scene plugin step failed?)", plugin.display())));
    }
    let dir = job.work.join(format!("scene-{language}"));
    crate::bindgen::generate(job.ctx, job.label, &plugin, &dir, language, "scene")?;
    Ok(dir.join(language))
}

/// The scene wheel: the generated Python project built with `pip wheel` (its pinned setuptools
/// from PyPI, in pip's isolated build environment).
fn scene_wheel(job: &Job) -> Result<PathBuf> {
    let project = scene_bindings(job, "python")?;
    let venv = python::tool_venv(job.ctx, job.label)?;
    step(job.label, format!("pip wheel --no-deps {} (into {})", job.ctx.rel(&project), job.ctx.rel(&job.out)));
    Cmd::new(&venv.python)
        .args(["-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q", "-w"])
        .arg(&job.out)
        .arg(&project)
        .hint("pip could not build the scene wheel; check that PyPI is reachable (its build needs setuptools)")
        .run()?;
    let wheel = only_file(&job.out, "scene-", ".whl")?;
    let listing = Cmd::new(&venv.python).args(["-m", "zipfile", "-l"]).arg(&wheel).output()?;
    for inside in ["scene/__init__.pyi", "scene/py.typed", "scene/libscene"] {
        if !listing.contains(inside) {
            return Err(fail(format!("{} has no {inside}* inside", wheel.display())));
        }
    }
    Ok(wheel)
}

/// The scene npm package: the generated package packed with `npm pack`.
fn scene_npm(job: &Job) -> Result<PathBuf> {
    let package = scene_bindings(job, "node")?;
    step(job.label, format!("npm pack (in {})", job.ctx.rel(&package)));
    Cmd::new("npm")
        .args(["pack", "--pack-destination"])
        .arg(&job.out)
        .cwd(&package)
        .hint("npm could not pack the generated scene package")
        .output()?;
    only_file(&job.out, "scene-", ".tgz")
}

/// The one file in `dir` named `<prefix>*<suffix>`.
fn only_file(dir: &Path, prefix: &str, suffix: &str) -> Result<PathBuf> {
    let found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| fail(format!("cannot list {}: {e}", dir.display())))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with(prefix)
                    && n.ends_with(suffix)
                    && !n.ends_with(&format!("-sources{suffix}"))
                    && !n.ends_with(&format!("-javadoc{suffix}"))
            })
        })
        .collect();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(fail(format!("no {prefix}*{suffix} was written to {}", dir.display()))),
        _ => Err(fail(format!("more than one {prefix}*{suffix} in {}", dir.display()))),
    }
}

/// Removes `dir` with everything in it and creates it empty.
pub fn reset_dir(dir: &Path) -> Result {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| fail(format!("cannot remove {}: {e}", dir.display())))?;
    }
    make_dir(dir)
}

fn make_dir(dir: &Path) -> Result {
    std::fs::create_dir_all(dir).map_err(|e| fail(format!("cannot create {}: {e}", dir.display())))
}

pub fn copy_file(src: &Path, dest: &Path) -> Result {
    std::fs::copy(src, dest)
        .map(drop)
        .map_err(|e| fail(format!("cannot copy {} to {}: {e}", src.display(), dest.display())))
}

/// Copies `src` into the folder `dir` under its own name; returns the copy's path.
fn copy_into(src: &Path, dir: &Path) -> Result<PathBuf> {
    let dest = dir.join(src.file_name().unwrap_or_default());
    copy_file(src, &dest)?;
    Ok(dest)
}

/// Copies the folder `src` to `dest` recursively.
fn copy_tree(src: &Path, dest: &Path) -> Result {
    copy_tree_except(src, dest, None)
}

/// Copies the folder `src` to `dest`, leaving out the folder `skip` (a path inside `src`).
pub fn copy_tree_except(src: &Path, dest: &Path, skip: Option<&Path>) -> Result {
    make_dir(dest)?;
    let entries = std::fs::read_dir(src).map_err(|e| fail(format!("cannot list {}: {e}", src.display())))?;
    for entry in entries.flatten() {
        let path = entry.path();
        let target = dest.join(entry.file_name());
        if Some(path.as_path()) == skip {
            continue;
        } else if path.is_dir() {
            copy_tree_except(&path, &target, skip)?;
        } else {
            copy_file(&path, &target)?;
        }
    }
    Ok(())
}

//! The java suite: libtether_java and the two test plugins built with cargo, then `mvn test` on
//! crates/java/pom.xml with `-Dtether.library.path=<abs path of the built library>`,
//! `-Dtether.native.dir=<its directory>` (packed into the jar as a resource) and the plugins'
//! paths as `-Dtether.test.plugin=...` / `-Dtether.test.pluginBadAbi=...` / `-Dtether.test.pluginDir=...`
//! (also exported as TETHER_TEST_PLUGIN / TETHER_TEST_PLUGIN_BAD_ABI / TETHER_TEST_PLUGIN_DIR).
//!
//! Then the typed bindings (tether-bindgen's Java backend, [`bindings_checks`]): javac over the
//! bindings generated for the scene plugin with examples/java/App.java, javac rejecting
//! examples/java/WrongCall.java at its line, and the sample plugin's bindings run by
//! tests/bindings/java/BindingsCheck.java (typed calls, defaults, nullability, keyword escaping)
//! on JDK 17 and, when installed, Temurin 25 with no JEP 472 warning; then against the sample's
//! `changed` build, where loading must fail naming the changed item (stale bindings).

use std::path::{Path, PathBuf};

use crate::util::{fail, require_tool, skipped, step, Cmd, Result, Status};
use crate::workspace::Ctx;

const SUITE: &str = "java";

pub const POM: &str = "crates/java/pom.xml";
/// The frontend's Maven project folder.
pub const DIR: &str = "crates/java";

/// Maven on `pom` (see [`maven`]).
pub fn mvn(ctx: &Ctx, pom: &str) -> Result<Cmd> {
    Ok(maven(ctx)?.args(["-f", pom]))
}

/// Maven in batch mode without download progress, with this build's own local repository
/// (`-Dmaven.repo.local=<target>/m2`, see [`local_repository`]) unless MAVEN_OPTS or
/// MAVEN_ARGS name one. Not `-q`: Surefire's "Tests run:" lines stay visible, so a run shows
/// how many tests it ran.
pub fn maven(ctx: &Ctx) -> Result<Cmd> {
    let cmd = Cmd::new("mvn").args(["-B", "--no-transfer-progress", "-Dstyle.color=never"]);
    let given =
        ["MAVEN_OPTS", "MAVEN_ARGS"].iter().any(|v| std::env::var(v).is_ok_and(|s| s.contains("maven.repo.local")));
    if given {
        return Ok(cmd);
    }
    Ok(cmd.arg(format!("-Dmaven.repo.local={}", local_repository(ctx)?.display())))
}

/// The local Maven repository of this build, `<target>/m2`: worktrees building at once never
/// share it (in ~/.m2 they raced, each installing its own dev.tether artifacts under the same
/// coordinates). Made once, from a copy of ~/.m2/repository when there is one, without its
/// dev/tether (this build installs its own), so a machine with Maven's plugins downloaded (CI's
/// fresh clone among them) does not download them again; in a folder beside it first, so an
/// interrupted copy is never taken for the repository.
fn local_repository(ctx: &Ctx) -> Result<PathBuf> {
    let repo = ctx.target_dir.join("m2");
    if repo.is_dir() {
        return Ok(repo);
    }
    let partial = ctx.target_dir.join("m2.partial");
    crate::dist::reset_dir(&partial)?;
    let user = std::env::var_os("HOME").map(|home| Path::new(&home).join(".m2").join("repository"));
    match user.filter(|u| u.is_dir()) {
        Some(user) => {
            step("maven", format!("local repository {}: a copy of {} (once)", ctx.rel(&repo), user.display()));
            crate::dist::copy_tree_except(&user, &partial, Some(&user.join("dev").join("tether")))?;
        }
        None => step("maven", format!("local repository {} (empty: Maven downloads what it needs)", ctx.rel(&repo))),
    }
    std::fs::rename(&partial, &repo)
        .map_err(|e| fail(format!("cannot rename {} to {}: {e}", partial.display(), repo.display())))?;
    Ok(repo)
}

pub fn run(ctx: &Ctx) -> Result<Status> {
    if !ctx.path(POM).is_file() {
        return Ok(skipped(SUITE, format!("{POM} not present yet")));
    }
    let lib = build(ctx, SUITE)?;
    let plugins = ctx.test_plugins(SUITE)?;
    let (plugin, bad_abi) = (&plugins.sample, &plugins.bad_abi);
    step(SUITE, format!("mvn test -f {POM}"));
    mvn(ctx, POM)?
        .arg("test")
        .arg(library_property(&lib))
        .arg(native_dir_property(&lib))
        .arg(format!("-Dtether.test.plugin={}", plugin.display()))
        .arg(format!("-Dtether.test.pluginBadAbi={}", bad_abi.display()))
        .arg(format!("-Dtether.test.pluginDir={}", plugins.dir.display()))
        .env("TETHER_TEST_PLUGIN", plugin)
        .env("TETHER_TEST_PLUGIN_BAD_ABI", bad_abi)
        .env("TETHER_TEST_PLUGIN_DIR", &plugins.dir)
        .cwd(&ctx.root)
        .hint(format!("rerun one test class with: mvn -B test -f {POM} {} -Dtest=<Class>", library_property(&lib)))
        .run()?;
    if Path::new(TEMURIN_25).is_file() {
        // The same compiled tests in a Temurin 25 JVM (surefire's `jvm`; no recompile), which
        // must print no JEP 472 warning: the pom passes --enable-native-access=ALL-UNNAMED.
        step(SUITE, format!("mvn surefire:test -Djvm={TEMURIN_25} (the tests on JDK 25)"));
        let (code, output) = mvn(ctx, POM)?
            .arg("surefire:test")
            .arg(format!("-Djvm={TEMURIN_25}"))
            .arg(library_property(&lib))
            .arg(format!("-Dtether.test.plugin={}", plugin.display()))
            .arg(format!("-Dtether.test.pluginBadAbi={}", bad_abi.display()))
            .arg(format!("-Dtether.test.pluginDir={}", plugins.dir.display()))
            .env("TETHER_TEST_PLUGIN", plugin)
            .env("TETHER_TEST_PLUGIN_BAD_ABI", bad_abi)
            .env("TETHER_TEST_PLUGIN_DIR", &plugins.dir)
            .cwd(&ctx.root)
            .run_combined()?;
        let summary: Vec<&str> =
            output.lines().filter(|l| l.contains("Tests run:") && !l.contains(" -- in ")).collect();
        println!("  JDK 25: {}", summary.last().copied().unwrap_or("(no summary)").trim());
        if code != Some(0) {
            print!("{output}");
            return Err(fail("the Maven tests fail on Temurin 25 (output above)"));
        }
        if let Some(w) = output.lines().find(|l| l.contains("restricted method") || l.contains("native access")) {
            return Err(fail(format!("the Maven tests on Temurin 25 printed a JEP 472 warning: {w}")));
        }
    }
    bindings_checks(ctx, &lib, plugin)?;
    crate::two_frontends::run(ctx, SUITE, &lib)?;
    Ok(Status::Passed)
}

/// The Java package of the scene example's bindings.
pub const SCENE_PACKAGE: &str = "dev.tether.examples.scene";
/// The flag that lets the frontend load its library without JEP 472's warning on JDK 24+
/// (the jars are used from the class path; JDK 17 accepts it too).
pub const NATIVE_ACCESS: &str = "--enable-native-access=ALL-UNNAMED";
/// Temurin 25 beside the system JDK 17, where the machines have it.
pub const TEMURIN_25: &str = "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java";
/// The frontend's module name (crates/java's module-info.java): what
/// `--enable-native-access=` names on the module path.
pub const FFI_MODULE: &str = "dev.tether.ffi";
/// The sample bindings' package, and so their module (generated bindings are named after their package).
const SAMPLE_MODULE: &str = "dev.tether.bindings.sample";
const APP: &str = "examples/java/App.java";
const WRONG_CALL: &str = "examples/java/WrongCall.java";
const BINDINGS_CHECK: &str = "tests/bindings/java/BindingsCheck.java";

/// `tether-bindgen --plugin PLUGIN --out OUT --lang java [--name NAME] --java-package PACKAGE`
/// (built once by [`crate::bindgen::binary`]); returns the generated Maven project's folder, OUT/java.
pub fn bindgen(
    ctx: &Ctx,
    suite: &str,
    plugin: &Path,
    out: &Path,
    name: Option<&str>,
    package: &str,
) -> Result<PathBuf> {
    step(suite, format!("tether-bindgen --plugin {} --out {} --lang java", ctx.rel(plugin), ctx.rel(out)));
    let bin = crate::bindgen::binary(ctx, suite)?;
    let mut cmd = Cmd::new(&bin).arg("--plugin").arg(plugin).arg("--out").arg(out).args([
        "--lang",
        "java",
        "--java-package",
        package,
    ]);
    if let Some(name) = name {
        cmd = cmd.args(["--name", name]);
    }
    cmd.cwd(&ctx.root)
        .hint(format!(
            "reproduce with: cargo run -p tether-bindgen -- --plugin {} --out {} --lang java --java-package {package}",
            plugin.display(),
            out.display()
        ))
        .run()?;
    Ok(out.join("java"))
}

/// The generated sources without module-info.java, for a class-path compile (with an app in
/// the unnamed package).
fn class_path_sources(dir: &Path) -> Result<Vec<PathBuf>> {
    Ok(java_sources(dir)?.into_iter().filter(|p| !p.ends_with("module-info.java")).collect())
}

/// Every `.java` file under `dir`, sorted.
fn java_sources(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| fail(format!("cannot list {}: {e}", dir.display())))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(java_sources(&path)?);
        } else if path.extension().is_some_and(|x| x == "java") {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

fn javac(classpath: &str, out: &Path) -> Cmd {
    Cmd::new("javac")
        .args(["--release", "17", "-Xlint:all", "-Werror", "-encoding", "UTF-8", "-cp"])
        .arg(classpath)
        .arg("-d")
        .arg(out)
}

/// The typed-bindings checks of the java suite (see the module doc).
fn bindings_checks(ctx: &Ctx, lib: &Path, sample_plugin: &Path) -> Result {
    let work = ctx.target_dir.join("bindgen-java");
    crate::dist::reset_dir(&work)?;
    let ffi_classes = ctx.path("crates/java/target/classes");

    // The scene plugin's bindings, compiled with the example app.
    step(SUITE, "cargo build -p scene (the example plugin, for its bindings)");
    Cmd::cargo()
        .args(["build", "-q", "-p", "scene"])
        .cwd(&ctx.root)
        .hint("reproduce with: cargo build -p scene")
        .run()?;
    let scene = bindgen(ctx, SUITE, &ctx.cdylib_path("scene")?, &work.join("scene"), None, SCENE_PACKAGE)?;
    let scene_classes = work.join("scene-classes");
    step(SUITE, format!("javac -Xlint:all -Werror: the scene bindings and {APP}"));
    javac(&ffi_classes.to_string_lossy(), &scene_classes)
        .args(class_path_sources(&scene.join("src/main/java"))?)
        .arg(ctx.path(APP))
        .hint("the generated scene bindings or App.java do not compile (javac's errors above)")
        .run()?;

    // A wrong call must not compile, and javac must name its line.
    let wrong = ctx.path(WRONG_CALL);
    let text = std::fs::read_to_string(&wrong).map_err(|e| fail(format!("cannot read {WRONG_CALL}: {e}")))?;
    let line = text
        .lines()
        .position(|l| l.contains("// WRONG"))
        .map(|i| i + 1)
        .ok_or_else(|| fail(format!("{WRONG_CALL} has no line marked // WRONG")))?;
    step(SUITE, format!("javac {WRONG_CALL} must fail at line {line}"));
    let cp = format!("{}:{}", ffi_classes.display(), scene_classes.display());
    let (code, output) = javac(&cp, &work.join("wrong-classes")).arg(&wrong).run_combined()?;
    let expected = format!("WrongCall.java:{line}: error");
    if code == Some(0) || !output.contains(&expected) {
        return Err(fail(format!(
            "javac should reject {WRONG_CALL} with an error at line {line} (`{expected}`); it {}:\n{output}",
            if code == Some(0) { "compiled it" } else { "failed otherwise" }
        )));
    }
    println!("  javac rejects it: {}", output.lines().find(|l| l.contains(&expected)).unwrap_or("").trim());

    // The sample plugin's bindings, exercised by BindingsCheck.
    let sample = bindgen(ctx, SUITE, sample_plugin, &work.join("sample"), Some("sample"), SAMPLE_MODULE)?;
    // The generator is deterministic: the same plugin gives the same bytes.
    let again = bindgen(ctx, SUITE, sample_plugin, &work.join("sample-again"), Some("sample"), SAMPLE_MODULE)?;
    for (a, b) in java_sources(&sample)?
        .iter()
        .zip(java_sources(&again)?.iter())
        .chain([(&sample.join("pom.xml"), &again.join("pom.xml"))])
    {
        let read = |p: &PathBuf| std::fs::read(p).map_err(|e| fail(format!("cannot read {}: {e}", p.display())));
        if a.file_name() != b.file_name() || read(a)? != read(b)? {
            return Err(fail(format!(
                "tether-bindgen wrote {} and {} differently from the same plugin",
                a.display(),
                b.display()
            )));
        }
    }
    let sample_classes = work.join("sample-classes");
    step(SUITE, format!("javac -Xlint:all -Werror: the sample bindings and {BINDINGS_CHECK}"));
    javac(&ffi_classes.to_string_lossy(), &sample_classes)
        .args(class_path_sources(&sample.join("src/main/java"))?)
        .arg(ctx.path(BINDINGS_CHECK))
        .hint("the generated sample bindings or BindingsCheck.java do not compile (javac's errors above)")
        .run()?;
    // The packed plugin comes from the class path (the generated resources folder).
    let cp = format!(
        "{}:{}:{}",
        ffi_classes.display(),
        sample_classes.display(),
        sample.join("src/main/resources").display()
    );
    let mut jvms = vec![PathBuf::from("java")];
    if Path::new(TEMURIN_25).is_file() {
        jvms.push(PathBuf::from(TEMURIN_25));
    }
    // The plugin loaded through Tether.loadModule first (a JVM of its own: nothing loaded yet).
    let plugin_property = [format!("-Dsample.plugin={}", sample_plugin.display())];
    for jvm in &jvms {
        run_check(jvm, &[NATIVE_ACCESS.into(), "-cp".into(), cp.clone()], lib, &[], "ok")?;
        run_check(jvm, &[NATIVE_ACCESS.into(), "-cp".into(), cp.clone()], lib, &plugin_property, "reflective")?;
    }
    if Path::new(TEMURIN_25).is_file() {
        module_path_checks(ctx, &work, &ffi_classes, &sample, lib, &plugin_property)?;
    }

    // Stale bindings: the same bindings against the `changed` build of the sample plugin (in
    // its own target dir, shared with the examples suite's Python/Node stale check).
    let changed_target = ctx.target_dir.join("changed-plugin");
    step(
        SUITE,
        format!("cargo build -p tether-test-plugin --features changed --target-dir {}", ctx.rel(&changed_target)),
    );
    Cmd::cargo()
        .args(["build", "-q", "-p", "tether-test-plugin", "--features", "changed", "--target-dir"])
        .arg(&changed_target)
        .cwd(&ctx.root)
        .hint("reproduce with: cargo build -p tether-test-plugin --features changed --target-dir target/changed-plugin")
        .run()?;
    let changed = changed_target.join("debug").join(sample_plugin.file_name().unwrap_or_default());
    let class_path = [NATIVE_ACCESS.into(), "-cp".into(), cp];
    run_check(&jvms[0], &class_path, lib, &[format!("-Dsample.plugin={}", changed.display())], "stale")
}

/// The sample bindings as a named module (javac over their module-info.java) with tether-ffi's
/// (crates/java/target/classes, compiled by `mvn test`), BindingsCheck from the class path, on
/// Temurin 25: with `--enable-native-access=dev.tether.ffi` no warning is printed (the ok and
/// reflective checks: the registrar found through module-info's `provides`); without it, the
/// JVM's warning names the module, so the frontend did run as a named module.
fn module_path_checks(
    ctx: &Ctx,
    work: &Path,
    ffi_classes: &Path,
    sample: &Path,
    lib: &Path,
    props: &[String],
) -> Result {
    let module_classes = work.join("sample-module");
    step(SUITE, format!("javac --module-path {}: the sample bindings as module {SAMPLE_MODULE}", ctx.rel(ffi_classes)));
    Cmd::new("javac")
        .args(["--release", "17", "-Xlint:all", "-Werror", "-encoding", "UTF-8", "--module-path"])
        .arg(ffi_classes)
        .arg("-d")
        .arg(&module_classes)
        .args(java_sources(&sample.join("src/main/java"))?)
        .hint("the generated module-info.java does not compile on the module path (javac's errors above)")
        .run()?;
    let module_path = format!("{}:{}", ffi_classes.display(), module_classes.display());
    let check_classes = work.join("check-classes");
    step(SUITE, format!("javac {BINDINGS_CHECK} against the modules"));
    Cmd::new("javac")
        .args(["--release", "17", "-Xlint:all", "-Werror", "-encoding", "UTF-8", "--module-path"])
        .arg(&module_path)
        .args(["--add-modules", SAMPLE_MODULE, "-d"])
        .arg(&check_classes)
        .arg(ctx.path(BINDINGS_CHECK))
        .run()?;
    let jvm = Path::new(TEMURIN_25);
    let modules = |access: Option<&str>| {
        let mut args: Vec<String> = access.map(|a| vec![a.to_string()]).unwrap_or_default();
        args.extend(["--module-path".into(), module_path.clone(), "--add-modules".into(), SAMPLE_MODULE.into()]);
        args.extend(["-cp".into(), check_classes.display().to_string()]);
        args
    };
    let access = format!("--enable-native-access={FFI_MODULE}");
    for mode in ["ok", "reflective"] {
        run_check(jvm, &modules(Some(&access)), lib, props, mode)?;
    }
    step(
        SUITE,
        format!(
            "{} (module path, no --enable-native-access) BindingsCheck ok: must warn naming {FFI_MODULE}",
            jvm.display()
        ),
    );
    let (code, output) = Cmd::new(jvm)
        .args(modules(None))
        .arg(library_property(lib))
        .args(props)
        .args(["BindingsCheck", "ok"])
        .run_combined()?;
    if code != Some(0) || !output.contains(&access) {
        return Err(fail(format!(
            "without {access}, the JVM should warn naming the module {FFI_MODULE} (so the frontend runs as a named \
             module) and the check pass; exit {code:?}:\n{output}"
        )));
    }
    println!("  {}", output.lines().find(|l| l.contains(&access)).unwrap_or("").trim());
    Ok(())
}

/// `java <access and path args> BindingsCheck <mode>`: must exit 0 and print no warning (JEP
/// 472's among them).
fn run_check(jvm: &Path, path_args: &[String], lib: &Path, props: &[String], mode: &str) -> Result {
    step(SUITE, format!("{} {} BindingsCheck {mode}", jvm.display(), path_args[0]));
    let (code, output) = Cmd::new(jvm)
        .args(path_args)
        .arg(library_property(lib))
        .args(props)
        .args(["BindingsCheck", mode])
        .run_combined()?;
    print!("{output}");
    if code != Some(0) {
        return Err(fail(format!("BindingsCheck {mode} failed on {}", jvm.display())));
    }
    if let Some(w) = output.lines().find(|l| l.starts_with("WARNING")) {
        return Err(fail(format!("BindingsCheck {mode} on {} printed a warning: {w}", jvm.display())));
    }
    Ok(())
}

/// `-Dtether.library.path=<abs>/target/debug/libtether_java.so`
pub fn library_property(lib: &std::path::Path) -> String {
    format!("-Dtether.library.path={}", lib.display())
}

/// `-Dtether.native.dir=<dir of the built library>`: where the pom picks the library up to pack
/// it into the jar as `/native/linux-x86_64/libtether_java.so`.
pub fn native_dir_property(lib: &std::path::Path) -> String {
    let dir = lib.parent().unwrap_or(std::path::Path::new("."));
    format!("-Dtether.native.dir={}", dir.display())
}

/// Builds libtether_java (once per run) and returns its absolute path.
pub fn build(ctx: &Ctx, suite: &str) -> Result<PathBuf> {
    if !ctx.path(POM).is_file() {
        return Err(fail(format!("{POM} not present yet, so the Java frontend cannot be built")));
    }
    require_tool(suite, "java")?;
    require_tool(suite, "javac")?;
    require_tool(suite, "mvn")?;
    let lib = ctx.cdylib_path("tether-java")?;
    if !ctx.java_built.get() {
        step(suite, "building native library (cargo build -p tether-java)");
        Cmd::cargo()
            .args(["build", "-p", "tether-java"])
            .cwd(&ctx.root)
            .hint("the JNI library does not build; reproduce with: cargo build -p tether-java")
            .run()?;
        ctx.java_built.set(true);
    }
    Ok(lib)
}

/// Builds the native library and installs dev.tether:tether-ffi into the local Maven repository
/// (tests skipped), so examples/java can depend on it. Returns the native library's path.
pub fn install(ctx: &Ctx, suite: &str) -> Result<PathBuf> {
    let lib = build(ctx, suite)?;
    if !ctx.java_installed.get() {
        step(suite, format!("mvn install -DskipTests -f {POM} (for the examples)"));
        mvn(ctx, POM)?
            .args(["-q", "install", "-DskipTests"])
            .arg(library_property(&lib))
            .arg(native_dir_property(&lib))
            .cwd(&ctx.root)
            .hint(format!("reproduce with: mvn -B install -DskipTests -f {POM}"))
            .run()?;
        ctx.java_installed.set(true);
    }
    Ok(lib)
}

//! The java suite: libtether_java and the two test plugins built with cargo, then `mvn test` on
//! crates/java/pom.xml with `-Dtether.library.path=<abs path of the built library>`,
//! `-Dtether.native.dir=<its directory>` (packed into the jar as a resource) and the plugins'
//! paths as `-Dtether.test.plugin=...` / `-Dtether.test.pluginBadAbi=...` / `-Dtether.test.pluginDir=...`
//! (also exported as TETHER_TEST_PLUGIN / TETHER_TEST_PLUGIN_BAD_ABI / TETHER_TEST_PLUGIN_DIR).

use std::path::PathBuf;

use crate::util::{fail, require_tool, skipped, step, Cmd, Result, Status};
use crate::workspace::Ctx;

const SUITE: &str = "java";

pub const POM: &str = "crates/java/pom.xml";
/// The frontend's Maven project folder.
pub const DIR: &str = "crates/java";

/// Maven in batch mode without download progress. Not `-q`: Surefire's "Tests run:" lines
/// stay visible, so a run shows how many tests it ran.
pub fn mvn(pom: &str) -> Cmd {
    Cmd::new("mvn").args(["-B", "--no-transfer-progress", "-Dstyle.color=never", "-f", pom])
}

pub fn run(ctx: &Ctx) -> Result<Status> {
    if !ctx.path(POM).is_file() {
        return Ok(skipped(SUITE, format!("{POM} not present yet")));
    }
    let lib = build(ctx, SUITE)?;
    let plugins = ctx.test_plugins(SUITE)?;
    let (plugin, bad_abi) = (&plugins.sample, &plugins.bad_abi);
    step(SUITE, format!("mvn test -f {POM}"));
    mvn(POM)
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
    Ok(Status::Passed)
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
        mvn(POM)
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

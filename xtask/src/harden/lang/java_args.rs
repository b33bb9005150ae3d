//! A seeded random generator over the Java frontend's call arguments: the main class
//! dev.tether.ffi.ArgumentFuzzMain of the Java tests, compiled by `mvn test-compile` and run
//! with the classes and test classes on the class path and the built libtether_java.

use super::{run_script, Budget};
use crate::harden::{Figures, SUITE};
use crate::java::{build, library_property, mvn, native_dir_property, DIR, POM};
use crate::util::{Cmd, Result};
use crate::workspace::Ctx;

const MAIN: &str = "dev.tether.ffi.ArgumentFuzzMain";

pub fn run(ctx: &Ctx, budget: Budget) -> Result<Figures> {
    let lib = build(ctx, SUITE)?;
    crate::util::step(SUITE, format!("mvn -q test-compile -f {POM}"));
    mvn(ctx, POM)?.args(["-q", "test-compile"]).arg(native_dir_property(&lib)).cwd(&ctx.root).run()?;
    let target = ctx.path(DIR).join("target");
    let class_path = std::env::join_paths([target.join("test-classes"), target.join("classes")])
        .map_err(|e| crate::util::fail(format!("cannot build the class path: {e}")))?;
    let cmd = Cmd::new("java")
        .arg("-cp")
        .arg(class_path)
        .arg(library_property(&lib))
        .args([MAIN, "--seed", "1"])
        .cwd(&ctx.root);
    run_script(ctx, "seeded java arguments", "java_arguments", cmd, budget, |_| Vec::new())
}

//! A seeded random generator over the Java frontend's call arguments: the main class
//! dev.tether.ffi.ArgumentFuzzMain of the Java tests, compiled by `mvn test-compile` and run
//! with the classes and test classes on the class path and the built libtether_java.

use super::{run_script, Budget};
use crate::harden::scripts::java_main;
use crate::harden::Figures;
use crate::util::Result;
use crate::workspace::Ctx;

const MAIN: &str = "dev.tether.ffi.ArgumentFuzzMain";

pub fn run(ctx: &Ctx, budget: Budget) -> Result<Figures> {
    let cmd = java_main(ctx, MAIN)?.args(["--seed", "1"]);
    run_script(ctx, "seeded java arguments", "java_arguments", cmd, budget, |_| Vec::new())
}

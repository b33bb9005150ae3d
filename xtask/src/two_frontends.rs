//! Two frontends in one process (issue 19, item 4): Python starts a JVM through JPype (from
//! PyPI, pinned) whose class path has the Java frontend; tests/two_frontends/jpype_check.py
//! checks that the Java frontend runs as the Python host's guest: one set of native objects,
//! one wrapper per language, no leak. Part of the java suite (it needs the compiled Java
//! classes and libtether_java).

use std::path::Path;

use crate::util::{step, Cmd, Result};
use crate::workspace::Ctx;

/// JPype, pinned (bump deliberately).
const JPYPE: (&str, &str) = ("JPype1", "1.7.1");
const CHECK: &str = "tests/two_frontends/jpype_check.py";

pub fn run(ctx: &Ctx, suite: &str, java_library: &Path) -> Result {
    let python = crate::python::prepare_with(ctx, suite, &[JPYPE])?;
    let classes = ctx.path("crates/java/target/classes");
    let plugin = ctx.cdylib_path("scene")?;
    step(suite, format!("python {CHECK} (Python and the JVM in one process, through JPype)"));
    Cmd::new(&python)
        .arg(ctx.path(CHECK))
        .arg(&classes)
        .arg(java_library)
        .arg(&plugin)
        .cwd(&ctx.root)
        .hint(format!(
            "reproduce with: {} {CHECK} {} {} {}",
            python.display(),
            classes.display(),
            java_library.display(),
            plugin.display()
        ))
        .run()
}

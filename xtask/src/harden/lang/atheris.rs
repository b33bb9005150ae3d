//! atheris (PyPI; a libFuzzer build ships in its wheel) over the Python frontend's argument
//! conversion and pickle reconstruction: crates/python/fuzz/fuzz_arguments.py, in the venv the
//! Python suite uses, with the extension built as that suite builds it. Where atheris does not
//! install, the same script runs on its seeded random generator, and the run says so.

use super::{corpus, run_script, Budget};
use crate::harden::{Figures, SUITE};
use crate::util::{Cmd, Result};
use crate::workspace::Ctx;

/// Pinned like the suite's tools (bump deliberately).
const PIN: (&str, &str) = ("atheris", "3.0.0");
const SCRIPT: &str = "crates/python/fuzz/fuzz_arguments.py";
const NAME: &str = "py_arguments";

pub fn run(ctx: &Ctx, budget: Budget) -> Result<(Figures, Option<String>)> {
    let python = crate::python::prepare(ctx, SUITE)?;
    let venv = crate::python::tool_venv(ctx, SUITE)?;
    let (engine, note) = match crate::python::venv_with_pins(ctx, SUITE, &venv.dir, &[PIN]) {
        Ok(_) => ("atheris", None),
        Err(e) => {
            println!("    atheris did not install ({}); using the seeded random generator", e.what);
            (
                "random",
                Some(format!(
                    "python arguments: atheris did not install ({}), seeded random generator instead",
                    e.what
                )),
            )
        }
    };
    let mut cmd = Cmd::new(&python).arg(ctx.path(SCRIPT)).args(["--engine", engine, "--seed", "1"]).cwd(&ctx.root);
    if engine == "atheris" {
        let artifacts = ctx.root.join("fuzz/artifacts").join(NAME);
        std::fs::create_dir_all(&artifacts)
            .map_err(|e| crate::util::fail(format!("cannot create {}: {e}", artifacts.display())))?;
        cmd = cmd.arg(format!("-artifact_prefix={}/", artifacts.display())).arg(corpus(ctx, NAME)?);
    }
    let figures = run_script(ctx, &format!("{engine} python arguments"), NAME, cmd, budget, |log| {
        if engine != "atheris" {
            return Vec::new();
        }
        let corpus_size = std::fs::read_dir(ctx.root.join("fuzz/corpus").join(NAME)).map_or(0, |d| d.count());
        vec![
            ("corpus".into(), format!("{corpus_size} inputs")),
            ("coverage".into(), format!("{} Python edges", crate::harden::fuzz::stat(log, "cov:").unwrap_or(0))),
        ]
    })?;
    Ok((figures, note))
}

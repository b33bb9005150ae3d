//! The harden scripts of each frontend (`storms`, `faults`, `scale`): one per part and language,
//! crates/python/harden/<name>.py, crates/node/harden/<name>.mjs and the main class
//! dev.tether.ffi.<Name>Main of the Java tests, run with the frontend built as its test suite
//! builds it. A script prints `figure: KEY = VALUE` for each of its figures and `finding: TEXT`
//! for each finding; the part adds what the process itself did (a crash, a hang past its
//! timeout and an unexpected exit code are findings too).

use std::time::Duration;

use super::{secs, Figures, SUITE};
use crate::java::{build, library_property, mvn, native_dir_property, DIR, POM};
use crate::util::{fail, step, Cmd, Result, Timed};
use crate::workspace::Ctx;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Lang {
    Python,
    Node,
    Java,
}

impl Lang {
    pub const ALL: [Lang; 3] = [Lang::Python, Lang::Node, Lang::Java];

    /// How figures name the language's runtime.
    pub fn runtime(self) -> &'static str {
        match self {
            Lang::Python => "python",
            Lang::Node => "node",
            Lang::Java => "jvm",
        }
    }
}

/// The command that runs script `name` of `lang` (arguments to be appended).
pub fn command(ctx: &Ctx, lang: Lang, name: &str) -> Result<Cmd> {
    let cmd = match lang {
        Lang::Python => {
            let python = crate::python::prepare(ctx, SUITE)?;
            Cmd::new(python).arg(ctx.path(&format!("crates/python/harden/{name}.py"))).cwd(&ctx.root)
        }
        Lang::Node => {
            crate::node::prepare(ctx, SUITE)?;
            Cmd::new("node").args(["--expose-gc", &format!("harden/{name}.mjs")]).cwd(ctx.path(crate::node::DIR))
        }
        Lang::Java => java_main(ctx, &format!("dev.tether.ffi.{}Main", capitalized(name)))?,
    };
    // Native errors capture no backtrace: the scripts raise them by the thousand and read none.
    Ok(cmd.env("RUST_LIB_BACKTRACE", "0"))
}

/// `java -cp <test classes>:<classes> -Dtether.library.path=... <main>` over the Java tests,
/// compiled once per run (`mvn test-compile`).
pub fn java_main(ctx: &Ctx, main: &str) -> Result<Cmd> {
    let lib = build(ctx, SUITE)?;
    if !ctx.java_tests_compiled.get() {
        step(SUITE, format!("mvn -q test-compile -f {POM}"));
        mvn(ctx, POM)?.args(["-q", "test-compile"]).arg(native_dir_property(&lib)).cwd(&ctx.root).run()?;
        ctx.java_tests_compiled.set(true);
    }
    let target = ctx.path(DIR).join("target");
    let class_path = std::env::join_paths([target.join("test-classes"), target.join("classes")])
        .map_err(|e| fail(format!("cannot build the class path: {e}")))?;
    Ok(Cmd::new("java").arg("-cp").arg(class_path).arg(library_property(&lib)).arg(main).cwd(&ctx.root))
}

fn capitalized(name: &str) -> String {
    let mut chars = name.chars();
    chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
}

/// What a script reported: its figures in order and its findings.
#[derive(Debug, Default, PartialEq)]
pub struct Report {
    pub figures: Vec<(String, String)>,
    pub findings: Vec<String>,
}

pub fn report(stdout: &str) -> Report {
    let mut out = Report::default();
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("figure: ") {
            if let Some((key, value)) = rest.split_once(" = ") {
                out.figures.push((key.trim().to_string(), value.trim().to_string()));
            }
        } else if let Some(rest) = line.strip_prefix("finding: ") {
            out.findings.push(rest.trim().to_string());
        }
    }
    out
}

/// How one run of a process ended, as a finding (None: exited with `expected`).
pub fn exit_finding(run: &Timed, expected: i32, timeout: Duration) -> Option<String> {
    if run.timed_out {
        Some(format!("hang: still running after {} s (killed)", timeout.as_secs()))
    } else if let Some(signal) = run.signal {
        Some(format!("crash: killed by signal {signal}"))
    } else if run.code != Some(expected) {
        Some(format!("exit code {:?}, expected {expected}", run.code))
    } else {
        None
    }
}

/// Writes a run's output to target/harden/<name>.log (stdout, then stderr).
pub fn write_log(ctx: &Ctx, name: &str, text: &str) -> Result<std::path::PathBuf> {
    let dir = ctx.target_dir.join("harden");
    std::fs::create_dir_all(&dir).map_err(|e| fail(format!("cannot create {}: {e}", dir.display())))?;
    let path = dir.join(format!("{name}.log"));
    std::fs::write(&path, text).map_err(|e| fail(format!("cannot write {}: {e}", path.display())))?;
    Ok(path)
}

/// Runs a script once (faults, scale): its figures, then findings and time; it fails on a
/// finding, a crash, a hang or an exit code other than 0.
pub fn run_once(ctx: &Ctx, part: &str, log: &str, cmd: Cmd, timeout: Duration) -> Result<Figures> {
    step(SUITE, format!("{part}: {}", cmd.display()));
    let run = cmd.run_with_timeout(timeout)?;
    let path = write_log(ctx, log, &format!("{}{}", run.stdout, run.stderr))?;
    let mut reported = report(&run.stdout);
    if let Some(f) = exit_finding(&run, 0, timeout) {
        println!("    {part}: {f}; the last lines of {}:", ctx.rel(&path));
        run.stderr.lines().rev().take(8).collect::<Vec<_>>().iter().rev().for_each(|l| println!("      {l}"));
        reported.findings.push(f);
    }
    reported.findings.iter().take(5).for_each(|f| println!("    finding: {f}"));
    let mut values = reported.figures;
    values.push(("findings".into(), reported.findings.len().to_string()));
    values.push(("time".into(), secs(run.elapsed.as_millis())));
    Ok(Figures { part: part.into(), values, failed: !reported.findings.is_empty() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_figures_and_findings() {
        let out =
            "noise\nfigure: rounds = 300\nfigure: memory errors = 12\nfinding: untyped SystemError: x\nfigure: bad\n";
        let r = report(out);
        assert_eq!(r.figures, vec![("rounds".into(), "300".into()), ("memory errors".into(), "12".into())]);
        assert_eq!(r.findings, vec!["untyped SystemError: x".to_string()]);
    }

    #[test]
    fn a_crash_a_hang_and_a_wrong_code_are_findings() {
        let timed = |code, signal, timed_out| Timed {
            code,
            signal,
            timed_out,
            stdout: String::new(),
            stderr: String::new(),
            elapsed: Duration::ZERO,
        };
        let t = Duration::from_secs(60);
        assert_eq!(exit_finding(&timed(Some(3), None, false), 3, t), None);
        assert_eq!(exit_finding(&timed(None, Some(11), false), 3, t).unwrap(), "crash: killed by signal 11");
        assert!(exit_finding(&timed(None, Some(9), true), 0, t).unwrap().starts_with("hang"));
        assert_eq!(exit_finding(&timed(Some(0), None, false), 3, t).unwrap(), "exit code Some(0), expected 3");
    }

    #[test]
    fn main_classes_are_named_after_the_script() {
        assert_eq!(capitalized("storm"), "Storm");
        assert_eq!(capitalized(""), "");
    }
}

//! The language-level fuzzers: each frontend's own call-argument conversion fed from that
//! language (atheris over Python, fast-check over Node, a seeded generator over Java). Each is a
//! script of the frontend's (crates/python/fuzz, crates/node/fuzz, ArgumentFuzzMain in the Java
//! tests) that takes `--findings FILE` and `--runs N` (the quick run: a fixed count) or
//! `--seconds S` (the full run), prints libFuzzer's `stat::number_of_executed_units:` line, and
//! writes one JSON line per finding (an untyped exception, live objects not back at the
//! baseline). A crash is a finding too (the process's exit code).

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{run_logged, secs, Figures, SUITE};
use crate::util::{fail, step, Cmd, Result};
use crate::workspace::Ctx;

mod atheris;
mod fast_check;
mod java_args;

/// The full run's time per language fuzzer.
const FULL_SECONDS: u32 = 90;

/// How long a part runs: a fixed count of inputs (quick) or a time (full).
#[derive(Clone, Copy)]
pub enum Budget {
    Runs(u32),
    Seconds(u32),
}

impl Budget {
    fn args(self) -> [String; 2] {
        match self {
            Budget::Runs(n) => ["--runs".into(), n.to_string()],
            Budget::Seconds(s) => ["--seconds".into(), s.to_string()],
        }
    }
}

pub fn run(ctx: &Ctx, quick: bool) -> Result<(Vec<Figures>, Vec<String>)> {
    let budget = |runs: u32| if quick { Budget::Runs(runs) } else { Budget::Seconds(FULL_SECONDS) };
    let mut figures = Vec::new();
    let mut notes = Vec::new();
    let (python, note) = atheris::run(ctx, budget(3000))?;
    figures.push(python);
    notes.extend(note);
    figures.push(fast_check::run(ctx, budget(3000))?);
    figures.push(java_args::run(ctx, budget(3000))?);
    Ok((figures, notes))
}

/// One script's run: `cmd` gets the findings file and the budget appended; its output goes to
/// target/harden/<name>.log. `extra` adds figures read from the log (after executions).
pub fn run_script(
    ctx: &Ctx,
    part: &str,
    name: &str,
    cmd: Cmd,
    budget: Budget,
    extra: impl Fn(&str) -> Vec<(String, String)>,
) -> Result<Figures> {
    let dir = ctx.target_dir.join("harden");
    std::fs::create_dir_all(&dir).map_err(|e| fail(format!("cannot create {}: {e}", dir.display())))?;
    let findings_file = dir.join(format!("{name}-findings.jsonl"));
    if findings_file.exists() {
        std::fs::remove_file(&findings_file)
            .map_err(|e| fail(format!("cannot remove {}: {e}", findings_file.display())))?;
    }
    // Native errors capture no backtrace (with RUST_BACKTRACE set, each costs a millisecond and
    // far more under libFuzzer); the fuzzers raise them by the thousand and read none.
    let cmd = cmd.arg("--findings").arg(&findings_file).args(budget.args()).env("RUST_LIB_BACKTRACE", "0");
    step(SUITE, format!("{part}: {}", cmd.display()));
    let started = Instant::now();
    let (code, log) = run_logged(&cmd, &dir.join(format!("{name}.log")))?;
    let elapsed = started.elapsed().as_millis();
    let executions = super::fuzz::stat(&log, "stat::number_of_executed_units:").unwrap_or(0);
    let recorded = finding_lines(&findings_file);
    let crashed = code != Some(0);
    for what in recorded.iter().take(5) {
        println!("    finding: {what}");
    }
    if crashed {
        println!(
            "    finding: {part} exited with {code:?}; the last lines of {}:",
            ctx.rel(&dir.join(format!("{name}.log")))
        );
        log.lines().rev().take(8).collect::<Vec<_>>().iter().rev().for_each(|l| println!("      {l}"));
    }
    let findings = recorded.len() + usize::from(crashed);
    let mut values = vec![
        ("executions".into(), executions.to_string()),
        ("per second".into(), (executions as u128 * 1000 / elapsed.max(1)).to_string()),
    ];
    values.extend(extra(&log));
    values.push(("findings".into(), findings.to_string()));
    values.push(("time".into(), secs(elapsed)));
    Ok(Figures { part: part.into(), values, failed: findings > 0 || executions == 0 })
}

/// The `what` of every finding line (the whole line where it is not the expected JSON).
fn finding_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let what = l.strip_prefix("{\"what\":\"").and_then(|rest| rest.split("\",\"detail\":").next());
            what.unwrap_or(l).to_string()
        })
        .collect()
}

/// fuzz/corpus/<name> (kept between runs, like the cargo-fuzz targets').
pub fn corpus(ctx: &Ctx, name: &str) -> Result<PathBuf> {
    let dir = ctx.root.join("fuzz/corpus").join(name);
    std::fs::create_dir_all(&dir).map_err(|e| fail(format!("cannot create {}: {e}", dir.display())))?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_the_what_of_each_finding() {
        let dir = std::env::temp_dir().join(format!("tether-lang-findings-{}", std::process::id()));
        std::fs::write(&dir, "{\"what\":\"untyped SystemError: x\",\"detail\":\"tb\"}\n\nnot json\n").unwrap();
        assert_eq!(super::finding_lines(&dir), vec!["untyped SystemError: x".to_string(), "not json".to_string()]);
        std::fs::remove_file(&dir).unwrap();
        assert!(super::finding_lines(&dir).is_empty());
    }
}

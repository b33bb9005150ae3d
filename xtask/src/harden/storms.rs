//! Shutdown storms: each language's runtime ends while threads are inside native calls with
//! callbacks in flight, and a native thread keeps calling a stored callback (the `storm`
//! script of each frontend, see `scripts`). Each storm runs its script many times with a fresh
//! seed and a timeout per run: a crash (a signal, an unexpected exit code), a hang (the timeout)
//! or a run that never reached the storm is a finding. The native thread's refusals, printed
//! by `testing.call_in_background` when its call came while the runtime was going away, are
//! counted; each must be a clear error.

use std::time::{Duration, Instant};

use super::scripts::{self, Lang};
use super::{secs, Figures, SUITE};
use crate::util::{step, Result};
use crate::workspace::Ctx;

/// Runs per storm: the full run's (issue 19) and the quick run's.
const FULL_RUNS: u32 = 200;
const QUICK_RUNS: u32 = 5;
/// Longer than any run takes, even on a loaded machine: past it the run hangs.
const TIMEOUT: Duration = Duration::from_secs(60);

struct Storm {
    lang: Lang,
    mode: &'static str,
    /// How the runtime ends, for the figures.
    how: &'static str,
    expected: i32,
}

const STORMS: [Storm; 6] = [
    Storm { lang: Lang::Python, mode: "end", how: "end of script", expected: 0 },
    Storm { lang: Lang::Python, mode: "exit", how: "sys.exit", expected: 3 },
    Storm { lang: Lang::Node, mode: "terminate", how: "worker.terminate()", expected: 0 },
    Storm { lang: Lang::Node, mode: "exit", how: "process.exit()", expected: 7 },
    Storm { lang: Lang::Java, mode: "end", how: "main returns", expected: 0 },
    Storm { lang: Lang::Java, mode: "exit", how: "System.exit", expected: 5 },
];

/// What the storm scripts print once their threads are inside native calls.
const REACHED: &str = "storm: ";
/// The line `testing.call_in_background` prints when a call fails.
const REFUSED: &str = "testing.call_in_background: stopped";
/// Words of the errors a callback into a runtime that is going away fails with.
const CLEAR: [&str; 4] = ["shutting down", "has shut down", "is exiting", "is terminating"];

pub fn run(ctx: &Ctx, quick: bool) -> Result<Vec<Figures>> {
    let runs = if quick { QUICK_RUNS } else { FULL_RUNS };
    STORMS.iter().map(|storm| run_storm(ctx, storm, runs)).collect()
}

fn run_storm(ctx: &Ctx, storm: &Storm, runs: u32) -> Result<Figures> {
    let part = format!("storm {} {}", storm.lang.runtime(), storm.how);
    let base = scripts::command(ctx, storm.lang, "storm")?.args(["--mode", storm.mode]);
    step(SUITE, format!("{part}: {runs} runs, --seed 1 to {runs}, of {}", base.display()));
    let started = Instant::now();
    let (mut crashes, mut hangs, mut refused) = (0, 0, 0);
    let mut findings: Vec<String> = Vec::new();
    for seed in 1..=runs {
        let cmd = scripts::command(ctx, storm.lang, "storm")?.args(["--mode", storm.mode, "--seed", &seed.to_string()]);
        let run = cmd.run_with_timeout(TIMEOUT)?;
        let mut found = Vec::new();
        if let Some(f) = scripts::exit_finding(&run, storm.expected, TIMEOUT) {
            if run.timed_out {
                hangs += 1;
            } else {
                crashes += 1;
            }
            found.push(f);
        } else if !run.stdout.contains(REACHED) {
            found.push("the run ended before its threads were inside native calls".into());
        }
        found.extend(scripts::report(&run.stdout).findings);
        for line in run.stderr.lines().filter(|l| l.contains(REFUSED)) {
            if CLEAR.iter().any(|c| line.contains(c)) {
                refused += 1;
            } else {
                found.push(format!("an unclear refusal: {line}"));
            }
        }
        if let Some(line) = run.stderr.lines().find(|l| l.contains("panicked at")) {
            found.push(format!("a panic: {line}"));
        }
        if !found.is_empty() {
            let log = scripts::write_log(
                ctx,
                &format!("storm-{}-{}-{seed}", storm.lang.runtime(), storm.mode),
                &format!("{}\n--- stdout\n{}--- stderr\n{}", cmd.display(), run.stdout, run.stderr),
            )?;
            for f in &found {
                println!("    finding (seed {seed}, {}): {f}", ctx.rel(&log));
            }
            findings.extend(found);
        }
    }
    let elapsed = started.elapsed().as_millis();
    println!("    {part}: {runs} runs, {} findings, {refused} clear refusals, {}", findings.len(), secs(elapsed));
    Ok(Figures {
        part,
        values: vec![
            ("runs".into(), runs.to_string()),
            ("crashes".into(), crashes.to_string()),
            ("hangs".into(), hangs.to_string()),
            ("callbacks refused with a clear error".into(), refused.to_string()),
            ("findings".into(), findings.len().to_string()),
            ("time".into(), secs(elapsed)),
        ],
        failed: !findings.is_empty(),
    })
}

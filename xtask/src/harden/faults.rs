//! Allocation failures: `testing.fail_allocations(n, after)` makes allocations of the frontend
//! allocator fail part way through operations of every kind, from each language (the `faults`
//! script of each frontend, see `scripts`); each failure must be the language's memory error or
//! the operation's own error, the process must keep working and `live_objects()` must end at its
//! baseline.

use std::time::Duration;

use super::scripts::{self, Lang};
use super::Figures;
use crate::util::Result;
use crate::workspace::Ctx;

/// Rounds (one armed failure and one operation each) per language.
const FULL_ROUNDS: u32 = 100_000;
const QUICK_ROUNDS: u32 = 500;
const TIMEOUT: Duration = Duration::from_secs(600);

pub fn run(ctx: &Ctx, quick: bool) -> Result<Vec<Figures>> {
    let rounds = if quick { QUICK_ROUNDS } else { FULL_ROUNDS }.to_string();
    Lang::ALL
        .iter()
        .map(|&lang| {
            let cmd = scripts::command(ctx, lang, "faults")?.args(["--rounds", &rounds, "--seed", "1"]);
            let part = format!("faults {}", lang.runtime());
            scripts::run_once(ctx, &part, &format!("faults-{}", lang.runtime()), cmd, TIMEOUT)
        })
        .collect()
}

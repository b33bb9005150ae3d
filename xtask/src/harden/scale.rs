//! Scale: a million live objects made and dropped, then 16 threads (Node: worker_threads) making
//! and dropping objects at once, from each language (the `scale` script of each frontend, see
//! `scripts`); `live_objects()` must end at its baseline. The quick run: 10,000 objects and 4
//! threads.

use std::time::Duration;

use super::scripts::{self, Lang};
use super::Figures;
use crate::util::Result;
use crate::workspace::Ctx;

/// (live objects, storm threads, objects each storm thread makes, in pairs).
const FULL: (u32, u32, u32) = (1_000_000, 16, 50_000);
const QUICK: (u32, u32, u32) = (10_000, 4, 2_000);
const TIMEOUT: Duration = Duration::from_secs(900);

pub fn run(ctx: &Ctx, quick: bool) -> Result<Vec<Figures>> {
    let (objects, threads, per_thread) = if quick { QUICK } else { FULL };
    Lang::ALL
        .iter()
        .map(|&lang| {
            let cmd = scripts::command(ctx, lang, "scale")?.args([
                "--objects",
                &objects.to_string(),
                "--threads",
                &threads.to_string(),
                "--per-thread",
                &per_thread.to_string(),
            ]);
            let part = format!("scale {}", lang.runtime());
            scripts::run_once(ctx, &part, &format!("scale-{}", lang.runtime()), cmd, TIMEOUT)
        })
        .collect()
}

//! fast-check (npm, a devDependency of crates/node) arbitraries over the Node frontend's call
//! arguments: crates/node/fuzz/arguments.mjs, with the addon built as the Node suite builds it.

use super::{run_script, Budget};
use crate::harden::{Figures, SUITE};
use crate::util::{Cmd, Result};
use crate::workspace::Ctx;

const SCRIPT: &str = "fuzz/arguments.mjs";

pub fn run(ctx: &Ctx, budget: Budget) -> Result<Figures> {
    crate::node::prepare(ctx, SUITE)?;
    let cmd = Cmd::new("node").args(["--expose-gc", SCRIPT, "--seed", "1"]).cwd(ctx.path(crate::node::DIR));
    run_script(ctx, "fast-check node arguments", "node_arguments", cmd, budget, |_| Vec::new())
}

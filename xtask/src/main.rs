//! `cargo xtask <command>`: the workspace's developer tasks (alias in .cargo/config.toml).

mod bench;
mod bindgen;
mod dist;
mod examples;
mod harden;
mod java;
mod json;
mod machine;
mod miri;
mod node;
mod python;
mod rust;
mod stale;
mod two_frontends;
mod util;
mod workspace;

use std::process::ExitCode;

use util::{fail, report_failure, Failure, Result, Status};
use workspace::Ctx;

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  test [--only SUITE[,SUITE...]]   run every test suite that exists
                                   suites: rust, c, python, node, java, harden, examples
                                   (harden: the quick shutdown storms, allocation faults and scale)
  demo                             build the example plugin and run the demo in every language
  miri                             run tether-core's tests under Miri (nightly)
  bindgen --plugin PATH --out DIR [--lang python,node,java] [--name NAME] [--java-package NAME]
                                   typed bindings for a plugin: a Python package, an npm package,
                                   Java classes (docs/bindings.md)
  build-all                        release-build the wheel, npm tarball, jar, plugin and tether.h into target/dist
  bench [--quick]                  run the benchmarks against the peers (--quick: CI smoke run)
  harden [--quick] [--only PART]   fuzz the C ABI and the slot state machine, run tether-core's tests
                                   under ASan and TSan and the Python suite under ASan (nightly), fuzz
                                   each frontend's arguments (atheris,
                                   fast-check, a seeded Java generator), shutdown storms, injected
                                   allocation failures, scale, valgrind memcheck of the Python and Node
                                   suites; parts: fuzz, sanitizers, lang, storms, faults, scale, memcheck;
                                   the full run of every part writes docs/reliability.md
  help                             show this text";

type Suite = fn(&Ctx) -> Result<Status>;

/// Every suite of `cargo xtask test`, in the order they run.
const SUITES: [(&str, Suite); 7] = [
    ("rust", rust::run),
    ("c", rust::run_c),
    ("python", python::run),
    ("node", node::run),
    ("java", java::run),
    ("harden", harden::quick_suite),
    ("examples", examples::run),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, rest)) = args.split_first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let result = match command.as_str() {
        "test" => parse_only(rest).and_then(|only| test(&only)),
        "demo" => no_args(rest).and_then(|()| Ctx::load()).and_then(|ctx| examples::demo(&ctx)),
        "miri" => no_args(rest).and_then(|()| single("miri", miri::run)),
        "bindgen" => bindgen::run(rest),
        "build-all" => no_args(rest).and_then(|()| Ctx::load()).and_then(|ctx| dist::build_all(&ctx)),
        "bench" => parse_bench(rest).and_then(bench::run),
        "harden" => parse_harden(rest).and_then(|(quick, only)| harden::run(quick, &only)),
        "help" | "-h" | "--help" => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        other => Err(usage_error(format!("unknown command `{other}`"))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) if f.what.starts_with("usage: ") => {
            eprintln!("error: {}\n\n{USAGE}", &f.what["usage: ".len()..]);
            ExitCode::from(2)
        }
        Err(f) => {
            eprintln!("error: {f}");
            ExitCode::FAILURE
        }
    }
}

fn usage_error(msg: String) -> Failure {
    fail(format!("usage: {msg}"))
}

fn no_args(rest: &[String]) -> Result {
    match rest.first() {
        None => Ok(()),
        Some(arg) => Err(usage_error(format!("unexpected argument `{arg}`"))),
    }
}

/// `--only a,b`, `--only=a`, repeatable. Empty = every suite.
fn parse_only(rest: &[String]) -> Result<Vec<&'static str>> {
    let mut only = Vec::new();
    let mut it = rest.iter();
    while let Some(arg) = it.next() {
        let value = if arg == "--only" {
            it.next().ok_or_else(|| usage_error("`--only` needs a suite name".into()))?.as_str()
        } else if let Some(v) = arg.strip_prefix("--only=") {
            v
        } else {
            return Err(usage_error(format!("unexpected argument `{arg}`")));
        };
        for name in value.split(',').filter(|s| !s.is_empty()) {
            let suite = SUITES
                .iter()
                .find(|(n, _)| *n == name)
                .ok_or_else(|| usage_error(format!("unknown suite `{name}`")))?;
            if !only.contains(&suite.0) {
                only.push(suite.0);
            }
        }
    }
    Ok(only)
}

/// `[--quick]` (bench, harden).
fn parse_bench(rest: &[String]) -> Result<bool> {
    match rest {
        [] => Ok(false),
        [q] if q == "--quick" => Ok(true),
        [arg, ..] => Err(usage_error(format!("unexpected argument `{arg}`"))),
    }
}

/// `[--quick] [--only PART[,PART...]]` (harden; parts from `harden::PARTS`).
fn parse_harden(rest: &[String]) -> Result<(bool, Vec<&'static str>)> {
    let mut quick = false;
    let mut only = Vec::new();
    let mut it = rest.iter();
    while let Some(arg) = it.next() {
        let value = if arg == "--quick" {
            quick = true;
            continue;
        } else if arg == "--only" {
            it.next().ok_or_else(|| usage_error("`--only` needs a part name".into()))?.as_str()
        } else if let Some(v) = arg.strip_prefix("--only=") {
            v
        } else {
            return Err(usage_error(format!("unexpected argument `{arg}`")));
        };
        for part in value.split(',').filter(|p| !p.is_empty()) {
            let known = harden::PARTS.iter().find(|p| **p == part).ok_or_else(|| {
                usage_error(format!("unknown harden part `{part}` (parts: {})", harden::PARTS.join(", ")))
            })?;
            if !only.contains(known) {
                only.push(*known);
            }
        }
    }
    Ok((quick, only))
}

/// Runs the selected suites (all when `only` is empty), then prints one line per suite.
fn test(only: &[&str]) -> Result {
    let ctx = Ctx::load()?;
    let mut rows = Vec::new();
    let mut failed = Vec::new();
    let (mut passed, mut skipped) = (0, 0);
    for (name, suite) in SUITES {
        if !only.is_empty() && !only.contains(&name) {
            continue;
        }
        let line = match suite(&ctx) {
            Ok(Status::Passed) => {
                passed += 1;
                "passed".to_string()
            }
            Ok(Status::Skipped(why)) => {
                skipped += 1;
                format!("skipped ({why})")
            }
            Err(f) => {
                report_failure(name, &f);
                failed.push(name);
                "failed".to_string()
            }
        };
        rows.push(format!("    {name:<9} {line}"));
    }
    println!("==> summary");
    rows.iter().for_each(|r| println!("{r}"));
    // The plain closing line CI readers understand, counting suites.
    println!("suites: {passed} passed, {} failed, {skipped} skipped", failed.len());
    if failed.is_empty() {
        println!("==> every suite that exists passed");
        Ok(())
    } else {
        Err(fail(format!("suites failed: {}", failed.join(", "))))
    }
}

/// A command that is one suite: runs it and prints its outcome.
fn single(name: &str, suite: Suite) -> Result {
    let ctx = Ctx::load()?;
    match suite(&ctx)? {
        Status::Passed => println!("==> {name}: passed"),
        Status::Skipped(why) => println!("==> {name}: skipped ({why})"),
    }
    Ok(())
}

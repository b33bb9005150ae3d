//! valgrind memcheck over the Python and Node conformance suites (the full run; the quick run
//! checks one small test file of each). Python runs pytest over crates/python/tests with
//! `PYTHONMALLOC=malloc` against the extension built without mimalloc (feature `mimalloc` off,
//! in target/memcheck: valgrind cannot see into mimalloc's pages), put first on `PYTHONPATH`;
//! Node runs each test file of crates/node/test in its own `node` (a test file run directly runs
//! its tests in that process). Subprocesses the tests start run without valgrind.
//!
//! Reported: invalid reads, writes and frees (any, once suppressions are applied), and definite
//! leaks by who made them: tether's (a tether frame in the allocation stack: findings), the test
//! plugins' own (the C test plugin `hostile.c` allocates names it registers and, when a
//! registration is refused, never frees them), and the runtimes' own (CPython, V8, the C
//! library's dynamic loader: the innermost frame that is not an allocator is theirs and no
//! tether frame is on the stack, or the loader's `dlclose`); the last two are figures only. Uninitialised-value checking is off: the CPython 3.11 of
//! these machines reports uninitialised values inside its own int and eval code even for
//! `python -S -c pass`, and V8 likewise. Suppressions, for CPython and V8 internals only, each
//! with its reason: xtask/src/harden/valgrind.supp.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{secs, Figures, SUITE};
use crate::util::{fail, require_tool, step, Cmd, Result};
use crate::workspace::Ctx;

const SUPPRESSIONS: &str = "xtask/src/harden/valgrind.supp";
/// The small test files of the quick run.
pub const QUICK_PYTHON: &str = "crates/python/tests/test_signatures.py";
pub const QUICK_NODE: &str = "crates/node/test/signatures.test.mjs";

pub fn run(ctx: &Ctx, quick: bool) -> Result<Vec<Figures>> {
    require_tool(SUITE, "valgrind")?;
    let dir = ctx.target_dir.join("harden").join("memcheck");
    crate::dist::reset_dir(&dir)?;
    Ok(vec![python(ctx, quick, &dir)?, node(ctx, quick, &dir)?])
}

fn valgrind(ctx: &Ctx, log: &Path) -> Cmd {
    Cmd::new("valgrind")
        .args([
            "--tool=memcheck",
            "--leak-check=full",
            "--show-leak-kinds=definite",
            "--errors-for-leak-kinds=definite",
            "--undef-value-errors=no",
            "--num-callers=40",
        ])
        .arg(format!("--suppressions={}", ctx.path(SUPPRESSIONS).display()))
        .arg(format!("--log-file={}", log.display()))
        .env("RUST_LIB_BACKTRACE", "0")
}

fn python(ctx: &Ctx, quick: bool, dir: &Path) -> Result<Figures> {
    let python = crate::python::prepare(ctx, SUITE)?;
    let plugins = ctx.test_plugins(SUITE)?;
    let target = ctx.target_dir.join("memcheck");
    step(SUITE, "cargo build -p tether-python --no-default-features (the system allocator, for valgrind)");
    Cmd::cargo()
        .args(["build", "-p", "tether-python", "--no-default-features", "--target-dir"])
        .arg(&target)
        .env("PYO3_PYTHON", &python)
        .cwd(&ctx.root)
        .run()?;
    let site = target.join("site");
    crate::python::stage_package(ctx, &python, &target.join("debug/libtether_ffi_native.so"), &site)?;

    let tests = if quick { QUICK_PYTHON } else { "crates/python/tests" };
    let log = dir.join("python.log");
    let cmd = valgrind(ctx, &log)
        .arg(&python)
        .args(["-m", "pytest", tests, "-q", "-p", "no:cacheprovider"])
        .env("PYTHONPATH", &site)
        .env("PYTHONMALLOC", "malloc")
        .env("TETHER_TEST_PLUGIN", &plugins.sample)
        .env("TETHER_TEST_PLUGIN_BAD_ABI", &plugins.bad_abi)
        .env("TETHER_TEST_PLUGIN_DIR", &plugins.dir)
        .cwd(&ctx.root);
    step(SUITE, format!("memcheck python: {}", cmd.display()));
    let started = Instant::now();
    let (code, output) = cmd.run_combined()?;
    let elapsed = started.elapsed().as_millis();
    let passed = output.lines().rev().find(|l| l.contains(" passed")).map(str::trim).unwrap_or("no summary");
    println!("    pytest under valgrind: {passed}");
    let mut tests_failed = code != Some(0);
    if tests_failed {
        output.lines().rev().take(15).collect::<Vec<_>>().iter().rev().for_each(|l| println!("      {l}"));
    }
    let found = read_logs(&[log])?;
    tests_failed |= found.logs == 0;
    Ok(found.figures("memcheck python suite", passed, tests_failed, elapsed))
}

fn node(ctx: &Ctx, quick: bool, dir: &Path) -> Result<Figures> {
    crate::node::prepare(ctx, SUITE)?;
    let plugins = ctx.test_plugins(SUITE)?;
    let node_dir = ctx.path(crate::node::DIR);
    let files: Vec<String> = if quick {
        vec![QUICK_NODE.trim_start_matches("crates/node/").to_string()]
    } else {
        let mut files: Vec<String> = std::fs::read_dir(node_dir.join("test"))
            .map_err(|e| fail(format!("cannot list crates/node/test: {e}")))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".test.mjs"))
            .map(|n| format!("test/{n}"))
            .collect();
        files.sort();
        files
    };
    let started = Instant::now();
    let (mut logs, mut failed_files) = (Vec::new(), Vec::new());
    let mut tests = 0u64;
    for file in &files {
        let stem = file.trim_start_matches("test/").trim_end_matches(".test.mjs");
        let log = dir.join(format!("node-{stem}.log"));
        let cmd = valgrind(ctx, &log)
            .args(["node", "--expose-gc", file])
            .env("TETHER_TEST_PLUGIN", &plugins.sample)
            .env("TETHER_TEST_PLUGIN_BAD_ABI", &plugins.bad_abi)
            .env("TETHER_TEST_PLUGIN_DIR", &plugins.dir)
            .cwd(&node_dir);
        step(SUITE, format!("memcheck node: {}", cmd.display()));
        let (code, output) = cmd.run_combined()?;
        tests += output
            .lines()
            .filter_map(|l| l.strip_prefix("# pass "))
            .filter_map(|n| n.trim().parse::<u64>().ok())
            .sum::<u64>();
        if code != Some(0) {
            println!("    {file} failed under valgrind (exit code {code:?}):");
            output
                .lines()
                .filter(|l| l.starts_with("not ok") || l.contains("error:"))
                .take(10)
                .for_each(|l| println!("      {l}"));
            failed_files.push(file.clone());
        }
        logs.push(log);
    }
    let elapsed = started.elapsed().as_millis();
    let found = read_logs(&logs)?;
    let summary = format!("{tests} passed in {} files", files.len());
    Ok(found.figures("memcheck node suite", &summary, !failed_files.is_empty() || found.logs == 0, elapsed))
}

/// What valgrind reported over a suite's logs.
#[derive(Debug, Default, PartialEq)]
struct Found {
    logs: usize,
    /// Invalid reads, writes and frees (and the like), each with its first lines.
    invalid: Vec<String>,
    /// Definite leaks with a tether frame: (bytes, blocks, first lines).
    tether_leaks: Vec<(u64, u64, String)>,
    /// Definite leaks of the test plugins' own: (bytes, blocks).
    plugin_leaks: (u64, u64),
    /// Definite leaks of the runtimes' own: (bytes, blocks).
    other_leaks: (u64, u64),
    suppressed: u64,
}

impl Found {
    fn figures(&self, part: &str, tests: &str, tests_failed: bool, elapsed: u128) -> Figures {
        for what in self.invalid.iter().take(5) {
            println!("    finding: {what}");
        }
        for (bytes, blocks, what) in self.tether_leaks.iter().take(5) {
            println!("    finding: {bytes} bytes in {blocks} blocks definitely lost: {what}");
        }
        let (leak_bytes, leak_blocks) =
            self.tether_leaks.iter().fold((0, 0), |(b, n), (bytes, blocks, _)| (b + bytes, n + blocks));
        Figures {
            part: part.into(),
            values: vec![
                ("tests".into(), tests.to_string()),
                ("invalid reads/writes/frees".into(), self.invalid.len().to_string()),
                ("definite leaks from tether".into(), format!("{leak_blocks} blocks ({leak_bytes} bytes)")),
                (
                    "the test plugins' own".into(),
                    format!("{} blocks ({} bytes)", self.plugin_leaks.1, self.plugin_leaks.0),
                ),
                ("the runtime's own".into(), format!("{} blocks ({} bytes)", self.other_leaks.1, self.other_leaks.0)),
                ("suppressed".into(), self.suppressed.to_string()),
                ("time".into(), secs(elapsed)),
            ],
            failed: tests_failed || !self.invalid.is_empty() || !self.tether_leaks.is_empty(),
        }
    }
}

fn read_logs(logs: &[PathBuf]) -> Result<Found> {
    let mut found = Found::default();
    for log in logs {
        let text = std::fs::read_to_string(log).map_err(|e| fail(format!("cannot read {}: {e}", log.display())))?;
        parse(&text, &mut found);
        found.logs += 1;
    }
    Ok(found)
}

/// The first line of an error that is a memory-safety report.
const INVALID: [&str; 6] = [
    "Invalid read",
    "Invalid write",
    "Invalid free",
    "Mismatched free",
    "Source and destination overlap",
    "Jump to the invalid address",
];

/// Reads one valgrind log: its records are runs of `==PID== ` lines between empty ones.
fn parse(text: &str, found: &mut Found) {
    let mut record: Vec<&str> = Vec::new();
    let lines = text.lines().map(|l| match l.strip_prefix("==") {
        Some(rest) => rest.split_once("== ").map(|(_, body)| body).unwrap_or(""),
        None => l,
    });
    for line in lines.chain(std::iter::once("")) {
        if !line.trim().is_empty() {
            record.push(line);
            continue;
        }
        if let Some(first) = record.first() {
            let head = || record.iter().take(6).map(|l| l.trim()).collect::<Vec<_>>().join(" / ");
            if INVALID.iter().any(|k| first.starts_with(k)) {
                found.invalid.push(head());
            } else if first.contains("are definitely lost in loss record") {
                let (bytes, blocks) = leak_size(first);
                let add = |(b, n): &mut (u64, u64)| {
                    *b += bytes;
                    *n += blocks;
                };
                match leak_owner(&record) {
                    Owner::Tether => found.tether_leaks.push((bytes, blocks, head())),
                    Owner::TestPlugin => add(&mut found.plugin_leaks),
                    Owner::Runtime => add(&mut found.other_leaks),
                }
            } else if let Some(rest) = first.strip_prefix("ERROR SUMMARY: ") {
                found.suppressed += rest
                    .split("suppressed: ")
                    .nth(1)
                    .and_then(|s| s.split_whitespace().next())
                    .and_then(|n| n.replace(',', "").parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
        record.clear();
    }
}

/// Who made a leaked block.
#[derive(Debug, PartialEq)]
enum Owner {
    Tether,
    TestPlugin,
    Runtime,
}

/// The innermost frame that is not an allocator decides for test plugins and the dynamic
/// loader; otherwise any tether frame makes the block tether's (tether calling an allocating
/// CPython or Node-API function is tether's leak too).
fn leak_owner(record: &[&str]) -> Owner {
    let frames: Vec<&str> =
        record.iter().map(|l| l.trim_start()).filter(|l| l.starts_with("at 0x") || l.starts_with("by 0x")).collect();
    let innermost = frames.iter().find(|f| !is_allocator_frame(f)).copied().unwrap_or("");
    if ["libtether_c_", "libtether_test_plugin", "/tests/c/", "/tests/plugins/"].iter().any(|m| innermost.contains(m)) {
        Owner::TestPlugin
    } else if ["(dl-", "ld-linux", "_dl_"].iter().any(|m| innermost.contains(m)) {
        Owner::Runtime
    } else if frames.iter().any(|f| is_tether_frame(f)) {
        Owner::Tether
    } else {
        Owner::Runtime
    }
}

/// A frame of an allocator: libc's, `operator new`, Rust's `alloc` crate.
fn is_allocator_frame(frame: &str) -> bool {
    let function = frame.split_once(": ").map_or("", |(_, f)| f);
    [
        "malloc",
        "calloc",
        "realloc",
        "memalign",
        "posix_memalign",
        "aligned_alloc",
        "operator new",
        "__rust_alloc",
        "__rust_realloc",
    ]
    .iter()
    .any(|a| function.starts_with(a))
        || function.contains("library/alloc/src")
        || function.starts_with("alloc::")
        || function.starts_with("<alloc::")
}

/// A stack frame of tether's code: its crates' symbols, or its libraries (not the test plugins).
fn is_tether_frame(frame: &str) -> bool {
    ["tether_core::", "tether_node::", "tether_ffi_native::", "tether.node", "_native.cpython", "libtether_java"]
        .iter()
        .any(|m| frame.contains(m))
}

/// (bytes, blocks) of `N bytes in M blocks are definitely lost ...` (`N (d direct, i indirect)`).
fn leak_size(line: &str) -> (u64, u64) {
    let number = |s: &str| s.replace(',', "").parse::<u64>().unwrap_or(0);
    let bytes = line.split_whitespace().next().map(number).unwrap_or(0);
    let blocks = line.split(" in ").nth(1).and_then(|s| s.split_whitespace().next()).map(number).unwrap_or(0);
    (bytes, blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "==7== Memcheck, a memory error detector
==7== 
==7== Invalid read of size 8
==7==    at 0x1: tether_core::arc::thing (arc.rs:1)
==7==    by 0x2: main (main.c:1)
==7== 
==7== 1,024 bytes in 2 blocks are definitely lost in loss record 5 of 9
==7==    at 0x3: malloc (vg_replace_malloc.c:1)
==7==    by 0x4: tether_ffi_native::classes::make_type (classes.rs:9)
==7== 
==7== 40 bytes in 1 blocks are definitely lost in loss record 6 of 9
==7==    at 0x3: malloc (vg_replace_malloc.c:1)
==7==    by 0x5: PyMem_RawMalloc (obmalloc.c:1)
==7== 
==7== 15 bytes in 1 blocks are definitely lost in loss record 7 of 9
==7==    at 0x3: malloc (vg_replace_malloc.c:1)
==7==    by 0x6: string_arg (in /w/target/debug/libtether_c_hostile.so)
==7==    by 0x7: tether_core::ffi::checked_safe_call (ffi.rs:83)
==7== 
==7== 32 bytes in 1 blocks are definitely lost in loss record 8 of 9
==7==    at 0x3: calloc (vg_replace_malloc.c:1)
==7==    by 0x8: _dl_close_worker (dl-close.c:343)
==7==    by 0x9: tether_core::plugin::load_module (plugin.rs:479)
==7== 
==7== ERROR SUMMARY: 3 errors from 3 contexts (suppressed: 1,200 from 12)
";

    #[test]
    fn reads_invalid_accesses_and_splits_leaks_by_their_frames() {
        let mut found = Found::default();
        parse(LOG, &mut found);
        assert_eq!(found.invalid.len(), 1);
        assert!(found.invalid[0].starts_with("Invalid read of size 8 / at 0x1: tether_core"), "{:?}", found.invalid);
        assert_eq!(found.tether_leaks.len(), 1);
        assert_eq!((found.tether_leaks[0].0, found.tether_leaks[0].1), (1024, 2));
        assert_eq!(found.plugin_leaks, (15, 1));
        assert_eq!(found.other_leaks, (72, 2));
        assert_eq!(found.suppressed, 1200);
    }

    #[test]
    fn a_clean_log_has_nothing_to_report() {
        let mut found = Found::default();
        parse(
            "==9== HEAP SUMMARY:\n==9== \n==9== ERROR SUMMARY: 0 errors from 0 contexts (suppressed: 0 from 0)\n",
            &mut found,
        );
        assert_eq!(found, Found::default());
    }
}

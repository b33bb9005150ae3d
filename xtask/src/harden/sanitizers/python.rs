//! The Python conformance suite (pytest over crates/python/tests; the quick run: one small file)
//! against an AddressSanitizer build of the extension (tether-python without its mimalloc
//! global allocator, so ASan's allocator serves every block) and of every test plugin the suite
//! loads (the Rust ones with `-Zsanitizer=address`, the C ones with gcc's `-fsanitize=address`),
//! in target/asan-python with `-Zbuild-std`, as the core's run.
//!
//! The interpreter is not instrumented, so ASan's runtime must be in the process before any
//! instrumented library: it is preloaded (`LD_PRELOAD`). rustc links its runtime (a static
//! archive in the nightly sysroot) into executables only, so that archive, without its
//! `.preinit_array` member (not allowed in a shared object; the runtime starts on its first
//! intercepted call instead), is linked into a shared object: the runtime of the very LLVM that
//! instrumented the Rust code. gcc's instrumentation of the C plugins speaks the same interface
//! version (`__asan_version_mismatch_check_v8`); a gcc of another version fails at load with
//! an undefined symbol, not silently.
//!
//! `PYTHONMALLOC=malloc`, so CPython's own objects come from ASan's allocator too (pymalloc's
//! arenas would hide overflows between objects). LeakSanitizer checks every process at exit
//! with xtask/src/harden/lsan-suppressions.txt: with the system allocator, CPython 3.11 leaves
//! no unreachable block at a plain exit, so no suppression for CPython is needed; only the C
//! test plugin's by-design leaks are suppressed (and counted). T40's subprocess, which ends with
//! daemon threads inside native calls, turns leak checking off for itself (the test says why).
//! Reports go to one file per process (`log_path`), so those of subprocesses, whose output the
//! tests capture, are counted too.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{number_before, ASAN_FLAGS, ASAN_REPORTS, LSAN_SUPPRESSIONS};
use crate::harden::memcheck::QUICK_PYTHON;
use crate::harden::{nightly_cargo, run_logged, secs, Figures, SUITE, TARGET};
use crate::util::{fail, require_tool, step, Cmd, Result};
use crate::workspace::{Ctx, PluginBuild};

const TESTS: &str = "crates/python/tests";

pub fn run(ctx: &Ctx, quick: bool) -> Result<(Figures, Vec<String>)> {
    let python = crate::python::tool_venv(ctx, SUITE)?.python;
    let target = ctx.target_dir.join("asan-python");
    let lib_dir = target.join(TARGET).join("debug");
    let cargo = || {
        nightly_cargo()
            .args(["build", "-Zbuild-std", "--target", TARGET, "--target-dir"])
            .arg(&target)
            .env("RUSTFLAGS", ASAN_FLAGS)
    };
    step(SUITE, format!("building tether-python with {ASAN_FLAGS} (no mimalloc) into {}", ctx.rel(&target)));
    cargo().args(["-p", "tether-python", "--no-default-features"]).env("PYO3_PYTHON", &python).cwd(&ctx.root).run()?;
    let plugins = ctx.test_plugins_built(
        SUITE,
        PluginBuild {
            cargo: cargo(),
            lib_dir: lib_dir.clone(),
            c_flags: vec!["-fsanitize=address".into(), "-fno-omit-frame-pointer".into()],
        },
    )?;
    let runtime = shared_runtime(ctx, &target)?;
    let site = target.join("site");
    crate::python::stage_package(ctx, &python, &lib_dir.join("libtether_ffi_native.so"), &site)?;

    let reports_dir = ctx.target_dir.join("harden").join("asan-python");
    crate::dist::reset_dir(&reports_dir)?;
    let tests = if quick { QUICK_PYTHON } else { TESTS };
    let cmd = Cmd::new(&python)
        .args(["-m", "pytest", tests, "-q", "-p", "no:cacheprovider"])
        .env("LD_PRELOAD", &runtime)
        .env("PYTHONMALLOC", "malloc")
        .env("PYTHONPATH", &site)
        .env("ASAN_OPTIONS", format!("detect_leaks=1:log_path={}", reports_dir.join("asan").display()))
        .env("LSAN_OPTIONS", format!("suppressions={}:print_suppressions=1", ctx.path(LSAN_SUPPRESSIONS).display()))
        .env("TETHER_TEST_PLUGIN", &plugins.sample)
        .env("TETHER_TEST_PLUGIN_BAD_ABI", &plugins.bad_abi)
        .env("TETHER_TEST_PLUGIN_DIR", &plugins.dir)
        // As under valgrind: a native error's backtrace is slow to capture in this build, and
        // the suite raises errors by the hundred.
        .env("RUST_LIB_BACKTRACE", "0")
        .cwd(&ctx.root);
    step(SUITE, format!("python suite under AddressSanitizer: {}", cmd.display()));
    let started = Instant::now();
    let (code, output) = run_logged(&cmd, &reports_dir.join("pytest.log"))?;
    let elapsed = started.elapsed().as_millis();
    let summary = output.lines().rev().find(|l| l.contains(" passed") || l.contains(" failed")).unwrap_or("");
    let (passed, failed) = pytest_counts(summary);
    println!("    pytest under AddressSanitizer: {}", if summary.is_empty() { "no summary" } else { summary.trim() });
    if code != Some(0) && summary.is_empty() {
        // No summary: pytest itself died (an ASan report ends the process); its last words.
        output.lines().rev().take(10).collect::<Vec<_>>().iter().rev().for_each(|l| println!("      {l}"));
    } else if code != Some(0) {
        output
            .lines()
            .filter(|l| l.starts_with("FAILED") || l.starts_with("ERROR"))
            .for_each(|l| println!("      {l}"));
    }
    let found = read_reports(&reports_dir)?;
    for (file, head) in &found.reports {
        println!("    {file}: {head}");
    }
    let skipped = if quick {
        vec![format!("asan python: the quick run has only {QUICK_PYTHON} (the full run has the whole suite)")]
    } else {
        Vec::new()
    };
    let figures = Figures {
        part: "asan python suite".into(),
        values: vec![
            ("tests passed".into(), passed.to_string()),
            ("failed".into(), failed.to_string()),
            ("reports".into(), found.reports.len().to_string()),
            ("suppressed leaks (the test plugins' own)".into(), format!("{} bytes", found.suppressed_bytes)),
            ("time".into(), secs(elapsed)),
        ],
        failed: code != Some(0) || failed > 0 || passed == 0 || !found.reports.is_empty(),
    };
    Ok((figures, skipped))
}

/// ASan's runtime as a shared object to preload: the nightly sysroot's static archive, without
/// its `.preinit_array` member, linked whole into target/asan-python/librustc_asan.so.
fn shared_runtime(ctx: &Ctx, target: &Path) -> Result<PathBuf> {
    require_tool(SUITE, "ar")?;
    let cc = std::env::var("CC").unwrap_or_else(|_| "gcc".into());
    let libdir = Cmd::new("rustc")
        .args(["+nightly", "--print", "target-libdir", "--target", TARGET])
        .env_remove("RUSTUP_TOOLCHAIN")
        .output()?;
    let libdir = PathBuf::from(libdir.trim());
    let listing_error = |e: std::io::Error| fail(format!("cannot list {}: {e}", libdir.display()));
    let mut archive = None;
    for entry in std::fs::read_dir(&libdir).map_err(listing_error)? {
        let path = entry.map_err(listing_error)?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
        if name.starts_with("librustc-") && name.ends_with("_rt.asan.a") {
            archive = Some(path);
        }
    }
    let archive = archive.ok_or_else(|| {
        fail(format!("no AddressSanitizer runtime (librustc-*_rt.asan.a) in {}", libdir.display()))
            .hint("rustup toolchain install nightly")
    })?;
    let copy = target.join("rustc_asan_runtime.a");
    crate::dist::copy_file(&archive, &copy)?;
    let members = Cmd::new("ar").arg("t").arg(&copy).output()?;
    let preinit: Vec<&str> = members.lines().filter(|m| m.contains("preinit")).collect();
    if !preinit.is_empty() {
        Cmd::new("ar").arg("d").arg(&copy).args(&preinit).run()?;
    }
    let runtime = target.join("librustc_asan.so");
    step(SUITE, format!("linking {} into {}", archive.display(), ctx.rel(&runtime)));
    Cmd::new(&cc)
        .args(["-shared", "-o"])
        .arg(&runtime)
        .arg("-Wl,--whole-archive")
        .arg(&copy)
        .args(["-Wl,--no-whole-archive", "-ldl", "-lpthread", "-lm"])
        .hint(format!("{cc} cannot link the AddressSanitizer runtime into a shared object"))
        .run()?;
    Ok(runtime)
}

/// (passed, failed) of pytest's summary line ("1 failed, 95 passed in 19.37s"; errors count as
/// failures).
fn pytest_counts(summary: &str) -> (u64, u64) {
    let failed = number_before(summary, " failed") + number_before(summary, " error");
    (number_before(summary, " passed"), failed)
}

/// What the processes' report files held.
#[derive(Debug, Default, PartialEq)]
struct Found {
    /// (file, the report's first line and its innermost frame outside [`RUNTIME_FRAMES`]).
    reports: Vec<(String, String)>,
    /// Bytes of the leaks the suppressions matched.
    suppressed_bytes: u64,
}

/// Frames of ASan's runtime and of Rust's standard library (its allocator, mostly), passed over
/// for the frame a report is summed up by.
const RUNTIME_FRAMES: [&str; 2] = ["compiler-rt/", "/rustlib/src/rust/library/"];

fn read_reports(dir: &Path) -> Result<Found> {
    let listing_error = |e: std::io::Error| fail(format!("cannot list {}: {e}", dir.display()));
    let mut found = Found::default();
    for entry in std::fs::read_dir(dir).map_err(listing_error)? {
        let path = entry.map_err(listing_error)?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
        if !name.starts_with("asan.") {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(|e| fail(format!("cannot read {}: {e}", path.display())))?;
        parse(&name, &text, &mut found);
    }
    Ok(found)
}

/// Reads one process's report file: its reports, and the table LeakSanitizer prints of the
/// suppressions it used (`count bytes template` rows).
fn parse(file: &str, text: &str, found: &mut Found) {
    let lines: Vec<&str> = text.lines().collect();
    let mut in_table = false;
    for (i, line) in lines.iter().enumerate() {
        if ASAN_REPORTS.iter().any(|m| line.contains(m)) {
            let first_frame = lines[i + 1..]
                .iter()
                .map(|l| l.trim())
                .find(|l| l.starts_with('#') && !RUNTIME_FRAMES.iter().any(|r| l.contains(r)))
                .unwrap_or("");
            found.reports.push((file.to_string(), format!("{} / {first_frame}", line.trim())));
        } else if line.starts_with("Suppressions used:") {
            in_table = true;
        } else if in_table {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.as_slice() {
                ["count", "bytes", "template"] => {}
                [_, bytes, _] => found.suppressed_bytes += bytes.parse::<u64>().unwrap_or(0),
                _ => in_table = false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pytest_summaries() {
        assert_eq!(pytest_counts("1 failed, 95 passed in 19.37s"), (95, 1));
        assert_eq!(pytest_counts("96 passed in 20.01s"), (96, 0));
        assert_eq!(pytest_counts("90 passed, 2 errors in 3s"), (90, 2));
    }

    #[test]
    fn counts_reports_and_suppressed_leaks() {
        let log = "=================================================================
==13656==ERROR: LeakSanitizer: detected memory leaks

Direct leak of 64 byte(s) in 1 object(s) allocated from:
    #0 0x7fd63ecdb094 in malloc /rustc/llvm/src/llvm-project/compiler-rt/lib/asan/asan_malloc_linux.cpp:67:3
    #1 0x7b69a51f162f in __rustc::__rdl_alloc /root/.rustup/toolchains/nightly/lib/rustlib/src/rust/library/std/src/alloc.rs:455:20
    #2 0x7fd63e8bcc91 in gc_alloc gcmodule.c:2283:17

-----------------------------------------------------
Suppressions used:
  count      bytes template
      3        288 fn_register_type
      2         34 string_arg
-----------------------------------------------------

==13657==ERROR: AddressSanitizer: heap-use-after-free on address 0x6020
    #0 0x1 in tether_core::arc::thing arc.rs:1
    #1 0x2 in tether_ffi_native::call::call call.rs:2
";
        let mut found = Found::default();
        parse("asan.13656", log, &mut found);
        assert_eq!(found.suppressed_bytes, 322);
        assert_eq!(found.reports.len(), 2, "{:?}", found.reports);
        assert_eq!(
            found.reports[0].1,
            "==13656==ERROR: LeakSanitizer: detected memory leaks / #2 0x7fd63e8bcc91 in gc_alloc gcmodule.c:2283:17"
        );
        assert!(
            found.reports[1].1.contains("heap-use-after-free on address 0x6020 / #0 0x1 in tether_core"),
            "{:?}",
            found.reports
        );
    }

    #[test]
    fn a_file_with_only_suppressed_leaks_has_no_report() {
        let mut found = Found::default();
        parse(
            "asan.1",
            "Suppressions used:\n  count      bytes template\n      1         15 string_arg\n---\n",
            &mut found,
        );
        assert_eq!(found, Found { reports: Vec::new(), suppressed_bytes: 15 });
    }
}

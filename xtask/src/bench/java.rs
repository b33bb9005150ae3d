//! Java: the jni 0.22 and raw jni-sys peers built with cargo, tether's Java frontend compiled
//! with Maven, the harness (benches/java) compiled with javac, then one JVM per peer, fork and
//! workload, the peers in turn for each workload of each fork (on the system's JDK, then on
//! Temurin 25 where installed: [`jvms`]), as JMH forks per benchmark: a fork measures one peer
//! only, so every call site in
//! the harness stays monomorphic, and one workload only, so none inherits another's garbage,
//! threads or JIT state (W7 ran 2.7x slower after W4 and W6 in the same JVM).

use std::path::{Path, PathBuf};

use super::report::{self, Record};
use super::Bench;
use crate::json::Json;
use crate::util::{fail, require_tool, step, Cmd, Result};

const LANG: &str = "bench java";

/// JVM forks per peer and workload (the reported value is the median of the forks' medians):
/// JMH's default. With 3, one slow fork of a busy spell on the shared hosts (a W3 fork at
/// 12.5 ns where the others read 7.0) decided a row's median whenever a second one read high.
const FORKS: usize = 5;
/// The harness's workloads (W5 is Python's); a peer that cannot express one reports nothing.
/// One JVM per entry; "W8" measures its four rows (echo and field reads, 2^10 and 2^20 objects).
const WORKLOADS: [&str; 9] = ["W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9"];
/// W5's fork pre-touches a fixed heap, so the process's RSS grows by native memory only.
const W5_HEAP: [&str; 3] = ["-Xms1g", "-Xmx1g", "-XX:+AlwaysPreTouch"];

pub fn run(b: &Bench) -> Result<PathBuf> {
    require_tool(LANG, "java")?;
    require_tool(LANG, "javac")?;
    let dir = b.dir.join("java");
    let classes = dir.join("classes");
    let _ = std::fs::remove_dir_all(&classes);
    step(LANG, "javac benches/java/src");
    Cmd::new("javac")
        .arg("-d")
        .arg(&classes)
        .args(java_files(&b.ctx.path("benches/java/src"))?)
        .cwd(&b.ctx.root)
        .run()?;

    // (peer, extra -D properties, classpath additions)
    let mut peers: Vec<(&str, Vec<String>, Vec<PathBuf>)> = Vec::new();
    if b.attempt("java peers (cargo build)", || {
        step(LANG, "building the jni and jni_raw peers");
        b.cargo_build(&["tether-bench-jni", "tether-bench-jni-raw"])
    })
    .is_some()
    {
        for (peer, package) in [("jni_raw", "tether-bench-jni-raw"), ("jni", "tether-bench-jni")] {
            let lib = b.cdylib(package)?;
            peers.push((peer, vec![format!("-Dbench.peer.lib={}", lib.display())], vec![]));
        }
    }
    if b.ctx.path(crate::java::POM).is_file() {
        if let Some((lib, cp)) = b.attempt("tether java frontend", || tether(b, &classes)) {
            peers.push(("tether", vec![crate::java::library_property(&lib)], cp));
        }
    } else {
        println!("skipped: tether java frontend not built ({} not present yet)", crate::java::POM);
    }

    let forks = if b.quick { 1 } else { FORKS };
    let mut records: Vec<Record> = Vec::new();
    let mut versions = Json::Obj(vec![]);
    for jvm in jvms() {
        // Fork by fork and workload by workload, the peers in turn: a busy spell of the host
        // (minutes, on the shared machines) falls on every peer's fork of a workload alike,
        // where running one peer's forks back to back let it fall on one peer.
        let mut per_fork: Vec<Vec<Vec<Record>>> = vec![Vec::new(); peers.len()];
        let mut failed = vec![false; peers.len()];
        for fork in 0..forks {
            let mut fork_records: Vec<Vec<Record>> = vec![Vec::new(); peers.len()];
            for workload in WORKLOADS {
                for (i, (peer, props, extra_cp)) in peers.iter().enumerate() {
                    if failed[i] {
                        continue;
                    }
                    let out = dir.join(format!("{}{peer}-{fork}-{workload}.json", jvm.file_prefix));
                    step(LANG, format!("{} Bench {peer} {workload} (fork {}/{forks})", jvm.lang, fork + 1));
                    let cp = std::env::join_paths(std::iter::once(classes.clone()).chain(extra_cp.iter().cloned()))
                        .map_err(|e| fail(format!("bad classpath: {e}")))?;
                    let mut cmd = Cmd::new(jvm.java)
                        .args(jvm.args)
                        .args(props)
                        .args(if workload == "W5" { &W5_HEAP[..] } else { &[] })
                        .arg(format!("-Dbench.only={workload}"))
                        .arg("-cp")
                        .arg(cp)
                        .args(["dev.tether.bench.Bench", peer])
                        .arg(&out)
                        .cwd(&b.ctx.root);
                    if b.quick {
                        cmd = cmd.arg("--quick");
                    }
                    if b.attempt(&format!("{} peer {peer}", jvm.lang), || cmd.run()).is_none() {
                        // As before: a peer that fails stops; the forks it completed count.
                        failed[i] = true;
                        continue;
                    }
                    let json = report::read_json(&out)?;
                    if let (Some(Json::Obj(fields)), Json::Obj(all)) = (json.get("versions"), &mut versions) {
                        for (k, v) in fields {
                            let key = format!("{}{k}", jvm.version_prefix);
                            all.retain(|(existing, _)| existing != &key);
                            all.push((key, v.clone()));
                        }
                    }
                    let mut read = report::records(&json)?;
                    for r in &mut read {
                        r.lang = jvm.lang.to_string();
                    }
                    fork_records[i].extend(read);
                }
            }
            for (i, records) in fork_records.into_iter().enumerate() {
                if !failed[i] {
                    per_fork[i].push(records);
                }
            }
        }
        for forks_of_peer in &per_fork {
            records.extend(report::median_of_forks(forks_of_peer));
        }
    }
    let out = dir.join("java.json");
    report::write_language_file(&out, &records, versions)?;
    Ok(out)
}

/// A JVM the harness runs on: the system's (JDK 17 on these machines), and Temurin 25 beside
/// it where installed, where tether's leaf calls take critical foreign downcalls
/// (crates/java/src/critical.rs): the issue of that route asks for both JDKs' figures.
struct Jvm {
    java: &'static str,
    args: &'static [&'static str],
    /// The records' language: the report's section ("java": JVM, "java25": JVM on Temurin 25).
    lang: &'static str,
    file_prefix: &'static str,
    version_prefix: &'static str,
}

fn jvms() -> Vec<Jvm> {
    let mut out = vec![Jvm { java: "java", args: &[], lang: "java", file_prefix: "", version_prefix: "" }];
    if Path::new(crate::java::TEMURIN_25).is_file() {
        out.push(Jvm {
            java: crate::java::TEMURIN_25,
            args: &[crate::java::NATIVE_ACCESS],
            lang: "java25",
            file_prefix: "jdk25-",
            version_prefix: "temurin25 ",
        });
    }
    out
}

/// Builds libtether_java and the dev.tether.ffi classes (Maven), compiles the tether workloads
/// against them; returns the library and the classpath entries to add.
fn tether(b: &Bench, bench_classes: &Path) -> Result<(PathBuf, Vec<PathBuf>)> {
    require_tool(LANG, "mvn")?;
    step(LANG, "building tether-java");
    b.cargo_build(&["tether-java"])?;
    let lib = b.cdylib("tether-java")?;
    step(LANG, format!("mvn compile -f {}", crate::java::POM));
    crate::java::mvn(b.ctx, crate::java::POM)?.args(["-q", "compile"]).cwd(&b.ctx.root).run()?;
    let ffi_classes = b.ctx.path("crates/java/target/classes");
    let out = b.dir.join("java/tether-classes");
    let _ = std::fs::remove_dir_all(&out);
    let cp = std::env::join_paths([bench_classes, &ffi_classes]).map_err(|e| fail(format!("bad classpath: {e}")))?;
    Cmd::new("javac")
        .arg("-d")
        .arg(&out)
        .arg("-cp")
        .arg(cp)
        .args(java_files(&b.ctx.path("benches/java/tether"))?)
        .cwd(&b.ctx.root)
        .hint("benches/java/tether/.../TetherWorkloads.java no longer matches tether's Java API")
        .run()?;
    Ok((lib, vec![out, ffi_classes]))
}

fn java_files(dir: &Path) -> Result<Vec<PathBuf>> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "java") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    if out.is_empty() {
        return Err(fail(format!("no .java files under {}", dir.display())));
    }
    Ok(out)
}

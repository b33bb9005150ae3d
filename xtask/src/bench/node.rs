//! Node: the napi-rs peer built with cargo, the raw Node-API peer compiled with gcc against
//! node's own headers, tether's addon, then benches/node/bench.cjs.

use std::path::{Path, PathBuf};

use super::Bench;
use crate::util::{fail, replace_file, require_tool, step, Cmd, Result};

const LANG: &str = "bench node";

pub fn run(b: &Bench) -> Result<PathBuf> {
    let node = require_tool(LANG, "node")?;
    let dir = b.dir.join("node");
    std::fs::create_dir_all(&dir).map_err(|e| fail(format!("cannot create {}: {e}", dir.display())))?;

    b.attempt("node peer napi", || {
        step(LANG, "building the napi-rs peer");
        b.cargo_build(&["tether-bench-napi"])?;
        replace_file(&b.cdylib("tether-bench-napi")?, &dir.join("peer_napi.node"))
    });
    b.attempt("node peer napi_raw", || {
        require_tool(LANG, "gcc")?;
        // node's headers ship next to its binary: <prefix>/bin/node, <prefix>/include/node.
        let real = std::fs::canonicalize(&node).unwrap_or(node.clone());
        let include = real
            .parent()
            .and_then(|bin| bin.parent())
            .map(|prefix| prefix.join("include/node"))
            .filter(|p| p.join("node_api.h").is_file())
            .ok_or_else(|| {
                fail(format!("node_api.h not found next to {}", real.display())).hint(
                    "install node's headers (they ship with the official Node.js builds and Debian's libnode-dev)",
                )
            })?;
        step(LANG, "gcc -O2 raw Node-API peer");
        Cmd::new("gcc")
            .args(["-O2", "-fPIC", "-shared", "-DNODE_GYP_MODULE_NAME=peer_napi_raw"])
            .arg(format!("-I{}", include.display()))
            .arg("benches/peers/napi_raw/peer_napi_raw.c")
            .arg("-o")
            .arg(dir.join("peer_napi_raw.node"))
            .cwd(&b.ctx.root)
            .run()
    });
    let package = if b.ctx.path(crate::node::PACKAGE_JSON).is_file() {
        b.attempt("tether node frontend", || tether(b, &dir))
    } else {
        println!("skipped: tether node frontend not built ({} not present yet)", crate::node::PACKAGE_JSON);
        None
    };

    let out = dir.join("node.json");
    step(LANG, "node benches/node/bench.cjs");
    let mut cmd = Cmd::new("node")
        .args(["--expose-gc", "benches/node/bench.cjs", "--peers"])
        .arg(&dir)
        .arg("--tether")
        .arg(package.unwrap_or_else(|| b.ctx.path("crates/node")))
        .arg("--out")
        .arg(&out)
        .cwd(&b.ctx.root);
    if b.quick {
        cmd = cmd.arg("--quick");
    }
    cmd.run()?;
    Ok(out)
}

/// npm dependencies + the addon, as the node suite prepares them (debug, in crates/node). A full
/// run then builds the addon in release and lays out a copy of the package with it in
/// target/bench/node/tether-ffi, leaving crates/node as the test suite expects it. Returns the
/// package directory to load.
fn tether(b: &Bench, dir: &Path) -> Result<PathBuf> {
    crate::node::prepare(b.ctx, LANG)?;
    let source = b.ctx.path("crates/node");
    if b.quick {
        return Ok(source);
    }
    step(LANG, "building tether-node (release)");
    b.cargo_build(&["tether-node"])?;
    let package = dir.join("tether-ffi");
    std::fs::create_dir_all(&package).map_err(|e| fail(format!("cannot create {}: {e}", package.display())))?;
    for file in ["package.json", "index.js"] {
        replace_file(&source.join(file), &package.join(file))?;
    }
    replace_file(&b.cdylib("tether-node")?, &package.join("tether.node"))?;
    Ok(package)
}

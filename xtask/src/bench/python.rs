//! Python: a venv in target/bench/venv with the pinned peers from PyPI, the pyo3 peer and
//! tether_ffi built as wheels and installed into it, the C++ peers compiled with g++, then
//! benches/python/bench.py.

use std::path::{Path, PathBuf};

use super::Bench;
use crate::util::{fail, require_tool, step, Cmd, Result};

const LANG: &str = "bench python";

/// What the Python peers come from (pinned; bump deliberately). pytest: tvm_ffi.testing imports it.
const PINS: [(&str, &str); 5] = [
    ("maturin", "1.16.0"),
    ("nanobind", "3.1.0"),
    ("pybind11", "3.1.0"),
    ("apache-tvm-ffi", "0.1.15.post2"),
    ("pytest", "9.2.0"),
];

/// Paths the C++ peers compile against, asked from the venv's interpreter.
struct Toolchain {
    python_include: String,
    ext_suffix: String,
    nanobind: PathBuf,
    pybind11_include: PathBuf,
    tvm_ffi: PathBuf,
}

pub fn run(b: &Bench) -> Result<PathBuf> {
    require_tool(LANG, "python3")?;
    let python = venv(b)?;
    let peers = b.dir.join("python");
    std::fs::create_dir_all(&peers).map_err(|e| fail(format!("cannot create {}: {e}", peers.display())))?;
    let tc = toolchain(&python)?;

    b.attempt("python peer pyo3", || wheel(b, &python, "benches/peers/pyo3/Cargo.toml", "peer_pyo3"));
    if b.attempt("g++", || require_tool(LANG, "g++").map(drop)).is_some() {
        b.attempt("python peer nanobind", || nanobind(b, &tc, &peers));
        b.attempt("python peer pybind11", || pybind11(b, &tc, &peers));
        b.attempt("python peer tvm_ffi", || tvm_ffi(b, &tc, &peers));
    }
    if b.ctx.path(crate::python::PYPROJECT).is_file() {
        b.attempt("tether python frontend", || wheel(b, &python, "crates/python/Cargo.toml", "tether_ffi"));
    } else {
        println!("skipped: tether python frontend not built ({} not present yet)", crate::python::PYPROJECT);
    }

    let out = b.dir.join("python.json");
    step(LANG, "python benches/python/bench.py");
    let mut cmd = Cmd::new(&python)
        .arg(b.ctx.path("benches/python/bench.py"))
        .arg("--peers")
        .arg(&peers)
        .arg("--out")
        .arg(&out)
        .cwd(&b.ctx.root);
    if b.quick {
        cmd = cmd.arg("--quick");
    }
    cmd.hint("rerun it with: target/bench/venv/bin/python benches/python/bench.py --peers target/bench/python --out /tmp/py.json --quick")
        .run()?;
    Ok(out)
}

/// target/bench/venv with the pinned peers; returns its python.
fn venv(b: &Bench) -> Result<PathBuf> {
    crate::python::venv_with_pins(b.ctx, LANG, &b.dir.join("venv"), &PINS)
}

fn toolchain(python: &Path) -> Result<Toolchain> {
    const SCRIPT: &str = "import sysconfig, os, nanobind, pybind11, tvm_ffi\n\
        print(sysconfig.get_paths()['include'])\n\
        print(sysconfig.get_config_var('EXT_SUFFIX'))\n\
        print(os.path.dirname(nanobind.__file__))\n\
        print(pybind11.get_include())\n\
        print(os.path.dirname(tvm_ffi.__file__))\n";
    let out = Cmd::new(python).args(["-c", SCRIPT]).output()?;
    let lines: Vec<&str> = out.lines().collect();
    let [inc, suffix, nb, pb, tvm] = lines[..] else {
        return Err(fail(format!("unexpected answer from the bench venv's python: {out}")));
    };
    Ok(Toolchain {
        python_include: inc.into(),
        ext_suffix: suffix.into(),
        nanobind: nb.into(),
        pybind11_include: pb.into(),
        tvm_ffi: tvm.into(),
    })
}

/// `maturin build` of a pyo3 crate into target/bench/wheels/<name>, then pip install of it.
fn wheel(b: &Bench, python: &Path, manifest: &str, name: &str) -> Result {
    let out = b.dir.join("wheels").join(name);
    let _ = std::fs::remove_dir_all(&out);
    step(LANG, format!("maturin build {}-m {manifest}", if b.quick { "" } else { "--release " }));
    let maturin = python.with_file_name("maturin");
    let mut cmd = Cmd::new(maturin)
        .args(["build", "--manifest-path", manifest, "--interpreter"])
        .arg(python)
        .arg("--out")
        .arg(&out)
        .env_remove("PYO3_CONFIG_FILE")
        .env_remove("PYO3_PYTHON")
        .env_remove("CONDA_PREFIX")
        .cwd(&b.ctx.root);
    if !b.quick {
        cmd = cmd.arg("--release");
    }
    cmd.hint(format!("reproduce with: target/bench/venv/bin/maturin build -m {manifest}")).run()?;
    let wheel = std::fs::read_dir(&out)
        .map_err(|e| fail(format!("cannot read {}: {e}", out.display())))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| fail(format!("maturin wrote no wheel into {}", out.display())))?;
    Cmd::new(python)
        .args(["-m", "pip", "install", "--disable-pip-version-check", "-q", "--force-reinstall", "--no-deps"])
        .arg(&wheel)
        .run()
}

fn gxx(b: &Bench, what: &str, args: Vec<String>) -> Result {
    step(LANG, format!("g++ -O2 {what}"));
    Cmd::new("g++")
        .args(["-O2", "-std=c++17", "-fPIC", "-shared", "-DNDEBUG"])
        .args(&args)
        .cwd(&b.ctx.root)
        .hint(format!("the {what} peer does not compile; the command is above"))
        .run()
}

fn nanobind(b: &Bench, tc: &Toolchain, out: &Path) -> Result {
    let nb = &tc.nanobind;
    gxx(
        b,
        "nanobind peer",
        vec![
            "-fvisibility=hidden".into(),
            format!("-I{}", tc.python_include),
            format!("-I{}", nb.join("include").display()),
            format!("-I{}", nb.join("ext/robin_map/include").display()),
            "benches/peers/nanobind/peer_nanobind.cpp".into(),
            nb.join("src/nb_combined.cpp").display().to_string(),
            "-o".into(),
            out.join(format!("peer_nanobind{}", tc.ext_suffix)).display().to_string(),
        ],
    )
}

fn pybind11(b: &Bench, tc: &Toolchain, out: &Path) -> Result {
    gxx(
        b,
        "pybind11 peer",
        vec![
            "-fvisibility=hidden".into(),
            format!("-I{}", tc.python_include),
            format!("-I{}", tc.pybind11_include.display()),
            "benches/peers/pybind11/peer_pybind11.cpp".into(),
            "-o".into(),
            out.join(format!("peer_pybind11{}", tc.ext_suffix)).display().to_string(),
        ],
    )
}

fn tvm_ffi(b: &Bench, tc: &Toolchain, out: &Path) -> Result {
    let t = &tc.tvm_ffi;
    gxx(
        b,
        "tvm-ffi peer",
        vec![
            format!("-I{}", t.join("include").display()),
            format!("-I{}", t.join("include/dlpack").display()),
            "benches/peers/tvm_ffi/peer_tvm_ffi.cc".into(),
            format!("-L{}", t.join("lib").display()),
            "-ltvm_ffi".into(),
            format!("-Wl,-rpath,{}", t.join("lib").display()),
            "-o".into(),
            out.join("peer_tvm_ffi.so").display().to_string(),
        ],
    )
}

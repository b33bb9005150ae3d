//! Exposes PyO3's interpreter cfgs (`Py_GIL_DISABLED`, `Py_3_12`, ...) to this crate.
fn main() {
    pyo3_build_config::use_pyo3_cfgs();
}

//! The pyo3 peer: what a hand-written pyo3 extension costs for each workload.

use pyo3::prelude::*;

/// Two object-typed fields; `p.first` returns the stored object itself.
#[pyclass(module = "peer_pyo3")]
struct Pair {
    #[pyo3(get, set)]
    first: Py<PyAny>,
    #[pyo3(get, set)]
    second: Py<PyAny>,
}

#[pymethods]
impl Pair {
    #[new]
    fn new(first: Py<PyAny>, second: Py<PyAny>) -> Self {
        Pair { first, second }
    }
}

/// W1: return the argument itself.
#[pyfunction]
fn echo(x: Bound<'_, PyAny>) -> Bound<'_, PyAny> {
    x
}

/// W3: three ints in, one int out.
#[pyfunction]
fn add3(a: i64, b: i64, c: i64) -> i64 {
    a.wrapping_add(b).wrapping_add(c)
}

/// W7: call back into Python with no arguments.
#[pyfunction]
fn call(f: Bound<'_, PyAny>) -> PyResult<Bound<'_, PyAny>> {
    f.call0()
}

#[pymodule]
fn peer_pyo3(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Pair>()?;
    m.add_function(wrap_pyfunction!(echo, m)?)?;
    m.add_function(wrap_pyfunction!(add3, m)?)?;
    m.add_function(wrap_pyfunction!(call, m)?)?;
    Ok(())
}

// The pybind11 peer: C++ functions bound with pybind11, as its docs recommend.
// echo() returns an existing C++ instance with return_value_policy::reference, so pybind11
// finds the instance's live Python wrapper in its registry (identity while the wrapper lives).
#include <cstdint>
#include <pybind11/pybind11.h>

namespace py = pybind11;

struct Pair {
    Pair(py::object a, py::object b) : first(std::move(a)), second(std::move(b)) {}
    py::object first;
    py::object second;
};

PYBIND11_MODULE(peer_pybind11, m) {
    py::class_<Pair>(m, "Pair")
        .def(py::init<py::object, py::object>())
        .def_readwrite("first", &Pair::first)
        .def_readwrite("second", &Pair::second);
    m.def("echo", [](Pair *p) { return p; }, py::return_value_policy::reference);
    m.def("add3", [](int64_t a, int64_t b, int64_t c) { return a + b + c; });
    m.def("call", [](py::function f) { return f(); });
}

// The nanobind peer: C++ functions bound with nanobind, as its docs recommend.
// echo() returns an existing C++ instance with rv_policy::reference, so nanobind finds the
// instance's live Python wrapper in its instance map (identity while the wrapper lives).
#include <cstdint>
#include <nanobind/nanobind.h>

namespace nb = nanobind;

struct Pair {
    nb::object first;
    nb::object second;
};

NB_MODULE(peer_nanobind, m) {
    nb::class_<Pair>(m, "Pair")
        .def(nb::init<nb::object, nb::object>(), nb::arg("first").none(), nb::arg("second").none())
        .def_rw("first", &Pair::first)
        .def_rw("second", &Pair::second);
    m.def("echo", [](Pair *p) { return p; }, nb::rv_policy::reference);
    m.def("add3", [](int64_t a, int64_t b, int64_t c) { return a + b + c; });
    m.def("call", [](nb::callable f) { return f(); });
}

// The apache-tvm-ffi peer's own function: add3 as a typed tvm-ffi function, exported the way
// tvm-ffi documents for a shared library that `tvm_ffi.load_module` opens. (echo, the callback
// and the object types come from tvm-ffi's own `testing` registrations.)
#include <cstdint>
#include <tvm/ffi/function.h>

namespace {
int64_t Add3(int64_t a, int64_t b, int64_t c) { return a + b + c; }
}  // namespace

TVM_FFI_DLL_EXPORT_TYPED_FUNC(add3, Add3);

/* A module whose init registers a global function, then raises an error: loading must report
 * the error, keep the library mapped (the global `init_fails.leftover` is its code and stays
 * callable) and keep the host working. */
#include <string.h>

#include "tether.h"

#define SLICE(lit) ((TetherByteSlice){lit, sizeof(lit) - 1})

__attribute__((visibility("default"))) const uint32_t tether_module_abi = TETHER_MODULE_ABI_WORD;

static int32_t leftover(TetherObjectHeader *self, const TetherAnyView *args, int32_t n, TetherAny *result) {
    (void)self, (void)args, (void)n;
    result->type_index = TETHER_TYPE_INT;
    result->payload.v_int = 7;
    return 0;
}

__attribute__((visibility("default"))) int32_t tether_module_init(const TetherApiTable *api, void *module) {
    (void)module;
    TetherObjectHeader *f = api->make_function(leftover, NULL, NULL, SLICE("init_fails.leftover"), 0);
    if (f) {
        api->register_global(SLICE("init_fails.leftover"), f, 1);
        api->dec_ref(f); /* the registry took its own reference */
    }
    const char *kind = "RuntimeError";
    const char *message = "cplugin init refused to start";
    TetherObjectHeader *err =
        api->make_error((TetherByteSlice){kind, strlen(kind)}, (TetherByteSlice){message, strlen(message)});
    api->set_last_error(err);
    return TETHER_INIT_ERROR;
}

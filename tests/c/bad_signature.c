/* A module whose init declares a malformed signature (an Array node without its item type):
 * set_signature refuses it with a ValueError, the init passes the error on, and loading fails
 * with that message while the host keeps working. */
#include "tether.h"

#define SLICE(lit) ((TetherByteSlice){lit, sizeof(lit) - 1})

__attribute__((visibility("default"))) const uint32_t tether_module_abi = TETHER_MODULE_ABI_WORD;

static int32_t nothing(TetherObjectHeader *self, const TetherAnyView *args, int32_t n, TetherAny *result) {
    (void)self, (void)args, (void)n, (void)result;
    return 0;
}

static const TetherTypeNode truncated[1] = {{TETHER_TYPE_DESC_ARRAY, 1, {"", 0}}};
static const TetherParamInfo params[1] = {{SLICE("xs"), {truncated, 1}, {0}, TETHER_PARAM_KEYWORD, 0}};
static const TetherSignatureInfo signature = {params, 1, {0, 0}, 0, 0};

__attribute__((visibility("default"))) int32_t tether_module_init(const TetherApiTable *api, void *module) {
    TetherObjectHeader *f = api->make_function(nothing, NULL, NULL, SLICE("bad_signature.f"), 1);
    if (!f) {
        return TETHER_INIT_ERROR;
    }
    int32_t rc = api->set_signature(f, &signature);
    if (rc == 0) {
        rc = api->module_add_function(module, SLICE("f"), f);
    }
    api->dec_ref(f);
    return rc == 0 ? TETHER_INIT_OK : TETHER_INIT_ERROR;
}

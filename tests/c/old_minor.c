/* A module built against ABI 1.6, before TetherTypeInfo.flags: its info has bytes where the
 * field now is (padding then; here all ones, as uninitialised padding may be), which the host
 * must read as no flags. */
#include "tether.h"

#define SLICE(lit) ((TetherByteSlice){lit, sizeof(lit) - 1})

__attribute__((visibility("default"))) const uint32_t tether_module_abi = (TETHER_ABI_MAJOR << 16) | 6u;

static int32_t ancestors[1] = {TETHER_TYPE_OBJECT};
static TetherTypeInfo info;

__attribute__((visibility("default"))) int32_t tether_module_init(const TetherApiTable *api, void *module) {
    int32_t index = api->register_type_key(SLICE("oldminor.Thing"), TETHER_TYPE_OBJECT);
    if (index < 0) {
        return TETHER_INIT_ERROR;
    }
    info = (TetherTypeInfo){
        .index = index,
        .depth = 1,
        .parent = TETHER_TYPE_OBJECT,
        .flags = 0xffffffffu,
        .key = SLICE("oldminor.Thing"),
        .doc = SLICE("A type of a module built before flags."),
        .ancestors = ancestors,
    };
    if (api->publish_type_info(&info) < 0 || api->module_add_type(module, index)) {
        return TETHER_INIT_ERROR;
    }
    return TETHER_INIT_OK;
}

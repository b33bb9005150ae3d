/* A module whose init publishes a type's reflection but leaves the type out of its exports (no
 * module_add_type): a mistake in its source, so the load fails naming the type. */
#include "tether.h"

#define SLICE(lit) ((TetherByteSlice){lit, sizeof(lit) - 1})

__attribute__((visibility("default"))) const uint32_t tether_module_abi = TETHER_MODULE_ABI_WORD;

static int32_t zero(TetherObjectHeader *self, const TetherAnyView *args, int32_t n, TetherAny *result) {
    (void)self, (void)args, (void)n;
    result->type_index = TETHER_TYPE_INT;
    result->payload.v_int = 0;
    return 0;
}

static int32_t ancestors[1] = {TETHER_TYPE_OBJECT};
static TetherFieldInfo fields[1];
static TetherTypeInfo info;

__attribute__((visibility("default"))) int32_t tether_module_init(const TetherApiTable *api, void *module) {
    (void)module;
    int32_t index = api->register_type_key(SLICE("unexported.Thing"), TETHER_TYPE_OBJECT);
    TetherObjectHeader *get = api->make_function(zero, NULL, NULL, SLICE("unexported.Thing.size"), 1);
    if (index < 0 || !get) {
        return TETHER_INIT_ERROR;
    }
    fields[0] = (TetherFieldInfo){SLICE("size"), SLICE(""), SLICE(""), get, NULL};
    info = (TetherTypeInfo){
        .index = index,
        .depth = 1,
        .parent = TETHER_TYPE_OBJECT,
        .key = SLICE("unexported.Thing"),
        .ancestors = ancestors,
        .fields = fields,
        .n_fields = 1,
    };
    return api->publish_type_info(&info) < 0 ? TETHER_INIT_ERROR : TETHER_INIT_OK;
}

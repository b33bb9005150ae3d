/* A second C module registering `cplugin.Vec2` (tests/c/plugin.c's type) with the same fields but
 * a `scaled` method without its signature: one key names one API, so the registry refuses it
 * and the load fails naming both modules. */
#include "tether.h"

#define SLICE(lit) ((TetherByteSlice){lit, sizeof(lit) - 1})

__attribute__((visibility("default"))) const uint32_t tether_module_abi = TETHER_MODULE_ABI_WORD;

static int32_t none(TetherObjectHeader *self, const TetherAnyView *args, int32_t n, TetherAny *result) {
    (void)self, (void)args, (void)n, (void)result;
    return 0;
}

static int32_t ancestors[1] = {TETHER_TYPE_OBJECT};
static TetherFieldInfo fields[2];
static TetherMethodInfo methods[1];
static TetherTypeInfo info;

__attribute__((visibility("default"))) int32_t tether_module_init(const TetherApiTable *api, void *module) {
    (void)module;
    int32_t index = api->register_type_key(SLICE("cplugin.Vec2"), TETHER_TYPE_OBJECT);
    TetherObjectHeader *get = api->make_function(none, NULL, NULL, SLICE("api_conflict.get"), 1);
    TetherObjectHeader *scaled = api->make_function(none, NULL, NULL, SLICE("api_conflict.scaled"), 2);
    if (index < 0 || !get || !scaled) {
        return TETHER_INIT_ERROR;
    }
    fields[0] = (TetherFieldInfo){SLICE("x"), SLICE(""), SLICE(""), get, NULL};
    fields[1] = (TetherFieldInfo){SLICE("y"), SLICE(""), SLICE(""), get, NULL};
    methods[0] = (TetherMethodInfo){SLICE("scaled"), SLICE(""), scaled, 0};
    info = (TetherTypeInfo){
        .index = index,
        .depth = 1,
        .parent = TETHER_TYPE_OBJECT,
        .key = SLICE("cplugin.Vec2"),
        .ancestors = ancestors,
        .fields = fields,
        .n_fields = 2,
        .methods = methods,
        .n_methods = 1,
    };
    return api->publish_type_info(&info) < 0 ? TETHER_INIT_ERROR : TETHER_INIT_OK;
}

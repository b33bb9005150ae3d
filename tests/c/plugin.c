/*
 * A tether plugin written in C against include/tether.h only.
 *
 * Exports (module functions):
 *   Vec2(x, y)        constructor of type `cplugin.Vec2` (fields x, y: float; method `scaled`)
 *   dot(a, b)         a.x * b.x + a.y * b.y
 *   fail()            raises ValueError "cplugin.fail: requested failure"
 *   greet(name)       "hello from C, <name>" (a Str made with api->make_str)
 *   pair(a, b)        an Array [a, b] made with api->make_array
 *   apply(f, x)       f(x), calling a host Function through api->call_function
 *   str_len(s)        byte length of a str in any of its three forms (small, view, Str object)
 *   layout()          an Array of sizeof/offsetof numbers, compared with Rust's in the test
 *   vec2_count()      Vec2 objects whose value is alive
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "tether.h"

#define SLICE(lit) ((TetherByteSlice){lit, sizeof(lit) - 1})

static const TetherApiTable *api;
static int32_t vec2_index = -1;
static atomic_long vec2_alive;

typedef struct Vec2Object {
    TetherObjectHeader header;
    double x;
    double y;
} Vec2Object;

/* ---- small helpers ---------------------------------------------------------------------- */

static int32_t raise(TetherByteSlice kind, const char *message) {
    TetherObjectHeader *err = api->make_error(kind, (TetherByteSlice){message, strlen(message)});
    if (err) {
        api->set_last_error(err); /* the slot takes over our reference */
    }
    return -1;
}

static int32_t raise_type(const char *message) { return raise(SLICE("TypeError"), message); }

static int32_t check_arity(const char *name, int32_t n, int32_t expected) {
    if (n == expected) {
        return 0;
    }
    char buf[128];
    snprintf(buf, sizeof buf, "%s() takes %d arguments but %d were given", name, expected, n);
    return raise_type(buf);
}

static int number(const TetherAnyView *v, double *out) {
    if (v->type_index == TETHER_TYPE_FLOAT) {
        *out = v->payload.v_float;
        return 1;
    }
    if (v->type_index == TETHER_TYPE_INT) {
        *out = (double)v->payload.v_int;
        return 1;
    }
    return 0;
}

static Vec2Object *as_vec2(const TetherAnyView *v) {
    return v->type_index == vec2_index ? (Vec2Object *)v->payload.v_obj : NULL;
}

/* A string argument in any form: inline (<= 7 bytes), a borrowed view, or a Str object. */
static int string_arg(const TetherAnyView *v, const char **data, size_t *len) {
    switch (v->type_index) {
    case TETHER_TYPE_SMALL_STR:
        *data = v->payload.v_small;
        *len = v->small_len;
        return 1;
    case TETHER_TYPE_RAW_STR:
        *data = v->payload.v_raw;
        *len = v->small_len;
        return 1;
    case TETHER_TYPE_STR: {
        const TetherStrObject *s = (const TetherStrObject *)v->payload.v_obj;
        *data = s->body.data;
        *len = (size_t)s->body.len;
        return 1;
    }
    default:
        return 0;
    }
}

static void set_float(TetherAny *result, double value) {
    result->type_index = TETHER_TYPE_FLOAT;
    result->small_len = 0;
    result->payload.v_float = value;
}

static void set_int(TetherAny *result, int64_t value) {
    result->type_index = TETHER_TYPE_INT;
    result->small_len = 0;
    result->payload.v_int = value;
}

/* Hand an owned object reference to the result cell. */
static void set_object(TetherAny *result, TetherObjectHeader *obj) {
    result->type_index = obj->type_index;
    result->small_len = 0;
    result->payload.v_obj = obj;
}

/* ---- the Vec2 type ---------------------------------------------------------------------- */

static void vec2_delete(TetherObjectHeader *obj, int32_t flags) {
    if (flags & TETHER_DELETE_VALUE) {
        atomic_fetch_sub(&vec2_alive, 1); /* plain data: nothing else to drop */
    }
    if (flags & TETHER_DELETE_MEMORY) {
        api->free_object(obj, sizeof(Vec2Object), _Alignof(Vec2Object));
    }
}

static TetherObjectHeader *vec2_new(double x, double y) {
    Vec2Object *v = (Vec2Object *)api->alloc_object(sizeof(Vec2Object), _Alignof(Vec2Object));
    /* alloc_tag is already set by the host's allocator: fill in the rest of the header. */
    v->header.combined_ref_count = TETHER_INITIAL_COUNT;
    v->header.type_index = vec2_index;
    v->header.deleter = vec2_delete;
    v->x = x;
    v->y = y;
    atomic_fetch_add(&vec2_alive, 1);
    return &v->header;
}

static int32_t vec2_ctor(TetherObjectHeader *self, const TetherAnyView *args, int32_t n, TetherAny *result) {
    (void)self;
    double x, y;
    if (check_arity("cplugin.Vec2", n, 2)) {
        return -1;
    }
    if (!number(&args[0], &x) || !number(&args[1], &y)) {
        return raise_type("cplugin.Vec2() arguments must be numbers");
    }
    set_object(result, vec2_new(x, y));
    return 0;
}

static int32_t vec2_get_x(TetherObjectHeader *self, const TetherAnyView *args, int32_t n, TetherAny *result) {
    (void)self;
    if (check_arity("cplugin.Vec2.x", n, 1)) {
        return -1;
    }
    Vec2Object *v = as_vec2(&args[0]);
    if (!v) {
        return raise_type("cplugin.Vec2.x() argument 1 (self): expected cplugin.Vec2");
    }
    set_float(result, v->x);
    return 0;
}

static int32_t vec2_get_y(TetherObjectHeader *self, const TetherAnyView *args, int32_t n, TetherAny *result) {
    (void)self;
    if (check_arity("cplugin.Vec2.y", n, 1)) {
        return -1;
    }
    Vec2Object *v = as_vec2(&args[0]);
    if (!v) {
        return raise_type("cplugin.Vec2.y() argument 1 (self): expected cplugin.Vec2");
    }
    set_float(result, v->y);
    return 0;
}

static int32_t vec2_scaled(TetherObjectHeader *self, const TetherAnyView *args, int32_t n, TetherAny *result) {
    (void)self;
    double k;
    if (check_arity("cplugin.Vec2.scaled", n, 2)) {
        return -1;
    }
    Vec2Object *v = as_vec2(&args[0]);
    if (!v || !number(&args[1], &k)) {
        return raise_type("cplugin.Vec2.scaled(self, k): expected a cplugin.Vec2 and a number");
    }
    set_object(result, vec2_new(v->x * k, v->y * k));
    return 0;
}

/* Reflection lives in static storage for the whole process, as the ABI requires. */
static TetherFieldInfo vec2_fields[2];
static TetherMethodInfo vec2_methods[1];
static int32_t vec2_ancestors[1] = {TETHER_TYPE_OBJECT};
static TetherTypeInfo vec2_info;

/* Signatures (ABI 1.4): static tables the host copies. scaled(self, k: float = 2.0) -> Vec2 and
 * dot(a: Vec2, b: Vec2) -> float. */
static const TetherTypeNode vec2_node[1] = {{TETHER_TYPE_DESC_OBJECT, 0, SLICE("cplugin.Vec2")}};
static const TetherTypeNode float_node[1] = {{TETHER_TYPE_DESC_FLOAT, 0, {"", 0}}};
static TetherParamInfo scaled_params[2];
static TetherSignatureInfo scaled_signature;
static TetherParamInfo dot_params[2];
static TetherSignatureInfo dot_signature;

static void declare_signatures(void) {
    const TetherTypeDesc vec2 = {vec2_node, 1}, real = {float_node, 1};
    TetherAny two = {.type_index = TETHER_TYPE_FLOAT};
    two.payload.v_float = 2.0;
    scaled_params[0] = (TetherParamInfo){SLICE("self"), vec2, {0}, 0, 0};
    scaled_params[1] = (TetherParamInfo){SLICE("k"), real, two, TETHER_PARAM_KEYWORD | TETHER_PARAM_HAS_DEFAULT, 0};
    scaled_signature = (TetherSignatureInfo){scaled_params, 2, vec2, TETHER_SIG_RECEIVER, 0};
    dot_params[0] = (TetherParamInfo){SLICE("a"), vec2, {0}, TETHER_PARAM_KEYWORD, 0};
    dot_params[1] = (TetherParamInfo){SLICE("b"), vec2, {0}, TETHER_PARAM_KEYWORD, 0};
    dot_signature = (TetherSignatureInfo){dot_params, 2, real, 0, 0};
}

static int32_t register_vec2(void) {
    vec2_index = api->register_type_key(SLICE("cplugin.Vec2"), TETHER_TYPE_OBJECT);
    if (vec2_index < 0) {
        return -1;
    }
    TetherObjectHeader *get_x = api->make_function(vec2_get_x, NULL, NULL, SLICE("cplugin.Vec2.x"), 1);
    TetherObjectHeader *get_y = api->make_function(vec2_get_y, NULL, NULL, SLICE("cplugin.Vec2.y"), 1);
    TetherObjectHeader *scaled = api->make_function(vec2_scaled, NULL, NULL, SLICE("cplugin.Vec2.scaled"), 2);
    TetherObjectHeader *ctor = api->make_function(vec2_ctor, NULL, NULL, SLICE("cplugin.Vec2"), 2);
    if (!get_x || !get_y || !scaled || !ctor) {
        return -1;
    }
    declare_signatures();
    if (api->set_signature(scaled, &scaled_signature)) {
        return -1;
    }
    /* The registry keeps these references forever (never released). */
    vec2_fields[0] = (TetherFieldInfo){SLICE("x"), SLICE("The x coordinate."), SLICE("float"), get_x, NULL};
    vec2_fields[1] = (TetherFieldInfo){SLICE("y"), SLICE("The y coordinate."), SLICE("float"), get_y, NULL};
    vec2_methods[0] = (TetherMethodInfo){SLICE("scaled"), SLICE("A new Vec2 times k."), scaled, 0};
    vec2_info = (TetherTypeInfo){
        .index = vec2_index,
        .depth = 1,
        .parent = TETHER_TYPE_OBJECT,
        .key = SLICE("cplugin.Vec2"),
        .doc = SLICE("A 2D vector made by a C plugin."),
        .ancestors = vec2_ancestors,
        .fields = vec2_fields,
        .n_fields = 2,
        .methods = vec2_methods,
        .n_methods = 1,
        .constructor = ctor,
    };
    return api->publish_type_info(&vec2_info) < 0 ? -1 : 0;
}

/* ---- module functions ------------------------------------------------------------------- */

static int32_t fn_dot(TetherObjectHeader *self, const TetherAnyView *args, int32_t n, TetherAny *result) {
    (void)self;
    if (check_arity("cplugin.dot", n, 2)) {
        return -1;
    }
    Vec2Object *a = as_vec2(&args[0]);
    Vec2Object *b = as_vec2(&args[1]);
    if (!a || !b) {
        return raise_type("cplugin.dot() arguments must be cplugin.Vec2");
    }
    set_float(result, a->x * b->x + a->y * b->y);
    return 0;
}

static int32_t fn_fail(TetherObjectHeader *self, const TetherAnyView *args, int32_t n, TetherAny *result) {
    (void)self, (void)args, (void)n, (void)result;
    return raise(SLICE("ValueError"), "cplugin.fail: requested failure");
}

static int32_t fn_greet(TetherObjectHeader *self, const TetherAnyView *args, int32_t n, TetherAny *result) {
    (void)self;
    const char *name;
    size_t len;
    if (check_arity("cplugin.greet", n, 1)) {
        return -1;
    }
    if (!string_arg(&args[0], &name, &len)) {
        return raise_type("cplugin.greet() argument 1: expected str");
    }
    char buf[256];
    int written = snprintf(buf, sizeof buf, "hello from C, %.*s", (int)len, name);
    TetherObjectHeader *s = api->make_str((TetherByteSlice){buf, (size_t)written < sizeof buf ? (size_t)written : sizeof buf - 1});
    if (!s) {
        return -1;
    }
    set_object(result, s);
    return 0;
}

static int32_t fn_pair(TetherObjectHeader *self, const TetherAnyView *args, int32_t n, TetherAny *result) {
    (void)self;
    if (check_arity("cplugin.pair", n, 2)) {
        return -1;
    }
    TetherObjectHeader *arr = api->make_array(args, 2); /* the array takes its own references */
    if (!arr) {
        return -1;
    }
    set_object(result, arr);
    return 0;
}

static int32_t fn_apply(TetherObjectHeader *self, const TetherAnyView *args, int32_t n, TetherAny *result) {
    (void)self;
    if (check_arity("cplugin.apply", n, 2)) {
        return -1;
    }
    if (args[0].type_index != TETHER_TYPE_FUNCTION) {
        return raise_type("cplugin.apply() argument 1: expected function");
    }
    /* The callee's error (if any) stays in the raised slot for our caller. */
    return api->call_function(args[0].payload.v_obj, &args[1], 1, result);
}

static int32_t fn_str_len(TetherObjectHeader *self, const TetherAnyView *args, int32_t n, TetherAny *result) {
    (void)self;
    const char *data;
    size_t len;
    if (check_arity("cplugin.str_len", n, 1)) {
        return -1;
    }
    if (!string_arg(&args[0], &data, &len)) {
        return raise_type("cplugin.str_len() argument 1: expected str");
    }
    set_int(result, (int64_t)len);
    return 0;
}

static int32_t fn_vec2_count(TetherObjectHeader *self, const TetherAnyView *args, int32_t n, TetherAny *result) {
    (void)self, (void)args;
    if (check_arity("cplugin.vec2_count", n, 0)) {
        return -1;
    }
    set_int(result, atomic_load(&vec2_alive));
    return 0;
}

/* The C view of the ABI layout, in the order crates/core/tests/c_plugin.rs expects. */
static int32_t fn_layout(TetherObjectHeader *self, const TetherAnyView *args, int32_t n, TetherAny *result) {
    (void)self, (void)args;
    if (check_arity("cplugin.layout", n, 0)) {
        return -1;
    }
    const int64_t numbers[] = {
        sizeof(TetherObjectHeader),
        offsetof(TetherObjectHeader, type_index),
        offsetof(TetherObjectHeader, alloc_tag),
        offsetof(TetherObjectHeader, deleter),
        sizeof(TetherAny),
        offsetof(TetherAny, small_len),
        offsetof(TetherAny, payload),
        sizeof(TetherByteSlice),
        sizeof(TetherSlotPrefix),
        sizeof(TetherCustomAllocator),
        offsetof(TetherCustomAllocator, tag),
        sizeof(TetherFunctionObj),
        offsetof(TetherFunctionObj, arity),
        offsetof(TetherFunctionObj, name),
        offsetof(TetherFunctionObj, data),
        offsetof(TetherFunctionObj, drop_data),
        sizeof(TetherErrorObj),
        offsetof(TetherErrorObj, payload),
        sizeof(TetherStrObject),
        sizeof(TetherArrayObject),
        sizeof(TetherMapObject),
        sizeof(TetherMapItem),
        sizeof(TetherOpaqueObj),
        sizeof(TetherFieldInfo),
        offsetof(TetherFieldInfo, getter),
        sizeof(TetherMethodInfo),
        offsetof(TetherMethodInfo, is_static),
        sizeof(TetherTypeInfo),
        offsetof(TetherTypeInfo, ancestors),
        offsetof(TetherTypeInfo, constructor),
        sizeof(TetherApiTable),
        offsetof(TetherApiTable, call_function),
    };
    enum { COUNT = sizeof numbers / sizeof numbers[0] };
    TetherAnyView cells[COUNT];
    for (int i = 0; i < COUNT; i++) {
        memset(&cells[i], 0, sizeof cells[i]);
        cells[i].type_index = TETHER_TYPE_INT;
        cells[i].payload.v_int = numbers[i];
    }
    TetherObjectHeader *arr = api->make_array(cells, COUNT);
    if (!arr) {
        return -1;
    }
    set_object(result, arr);
    return 0;
}

/* ---- entry points ----------------------------------------------------------------------- */

__attribute__((visibility("default"))) const uint32_t tether_module_abi = TETHER_MODULE_ABI_WORD;

static int32_t export_function(void *module, const char *name, TetherSafeCallFn f, int32_t arity) {
    char qualified[64];
    snprintf(qualified, sizeof qualified, "cplugin.%s", name);
    TetherObjectHeader *func = api->make_function(f, NULL, NULL, (TetherByteSlice){qualified, strlen(qualified)}, arity);
    if (!func) {
        return -1;
    }
    if (f == fn_dot && api->set_signature(func, &dot_signature)) {
        api->dec_ref(func);
        return -1;
    }
    int32_t rc = api->module_add_function(module, (TetherByteSlice){name, strlen(name)}, func);
    api->dec_ref(func); /* the module took its own reference */
    return rc;
}

__attribute__((visibility("default"))) int32_t tether_module_init(const TetherApiTable *host, void *module) {
    if (!host || host->abi_major != TETHER_ABI_MAJOR || host->size < sizeof(TetherApiTable)) {
        return TETHER_INIT_ABI_MISMATCH;
    }
    api = host;
    if (register_vec2() || api->module_add_type(module, vec2_index)) {
        return TETHER_INIT_ERROR;
    }
    if (api->module_add_function(module, SLICE("Vec2"), vec2_info.constructor) ||
        export_function(module, "dot", fn_dot, 2) || export_function(module, "fail", fn_fail, 0) ||
        export_function(module, "greet", fn_greet, 1) || export_function(module, "pair", fn_pair, 2) ||
        export_function(module, "apply", fn_apply, 2) || export_function(module, "str_len", fn_str_len, 1) ||
        export_function(module, "layout", fn_layout, 0) ||
        export_function(module, "vec2_count", fn_vec2_count, 0)) {
        return TETHER_INIT_ERROR;
    }
    return TETHER_INIT_OK;
}

/*
 * A C plugin that hands the host bad input on request (its init itself is fine).
 *
 * Exports (module functions; `kind` is a raw type index, the value's payload is never a real
 * object unless said so):
 *   ok()                              42: the plugin works
 *   bad_result(kind)                  returns a cell of type index `kind` (payload NULL)
 *   bad_header(kind)                  returns a cell of `kind` pointing at a static header that
 *                                     says index 3 (FLOAT): a registered type, a lying header
 *   bad_array(kind)                   api->make_array of one cell of `kind`
 *   bad_call(f, kind)                 api->call_function(f, [one cell of `kind`])
 *   register_type(key, parent, fields) registers `key` under the type named `parent` with the
 *                                     comma-separated field names (each getter returns None);
 *                                     returns the index the registry answered, or its error
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tether.h"

#define SLICE(lit) ((TetherByteSlice){lit, sizeof(lit) - 1})

static const TetherApiTable *api;

/* Never freed, never a real object: its header names another type than a caller claims. */
static TetherObjectHeader lying_header = {TETHER_INITIAL_COUNT, TETHER_TYPE_FLOAT, 0, NULL};

static int32_t raise(const char *kind, const char *message) {
    TetherObjectHeader *err =
        api->make_error((TetherByteSlice){kind, strlen(kind)}, (TetherByteSlice){message, strlen(message)});
    if (err) {
        api->set_last_error(err);
    }
    return -1;
}

static int int_arg(const TetherAnyView *args, int32_t n, int32_t i, int64_t *out) {
    if (i >= n || args[i].type_index != TETHER_TYPE_INT) {
        return 0;
    }
    *out = args[i].payload.v_int;
    return 1;
}

/* A string argument (inline, borrowed view or Str object), copied NUL-terminated. */
static char *string_arg(const TetherAnyView *v) {
    const char *data;
    size_t len;
    switch (v->type_index) {
    case TETHER_TYPE_SMALL_STR:
        data = v->payload.v_small, len = v->small_len;
        break;
    case TETHER_TYPE_RAW_STR:
        data = v->payload.v_raw, len = v->small_len;
        break;
    case TETHER_TYPE_STR: {
        const TetherStrObject *s = (const TetherStrObject *)v->payload.v_obj;
        data = s->body.data, len = (size_t)s->body.len;
        break;
    }
    default:
        return NULL;
    }
    char *out = malloc(len + 1);
    if (out) {
        memcpy(out, data, len);
        out[len] = 0;
    }
    return out;
}

static TetherAny cell_of_kind(int64_t kind, void *payload) {
    TetherAny cell;
    memset(&cell, 0, sizeof cell);
    cell.type_index = (int32_t)kind;
    cell.payload.v_ptr = payload;
    return cell;
}

static int32_t fn_ok(TetherObjectHeader *self, const TetherAnyView *args, int32_t n, TetherAny *result) {
    (void)self, (void)args, (void)n;
    result->type_index = TETHER_TYPE_INT;
    result->payload.v_int = 42;
    return 0;
}

static int32_t fn_bad_result(TetherObjectHeader *self, const TetherAnyView *args, int32_t n, TetherAny *result) {
    (void)self;
    int64_t kind;
    if (!int_arg(args, n, 0, &kind)) {
        return raise("TypeError", "hostile.bad_result(kind): expected an int");
    }
    *result = cell_of_kind(kind, NULL);
    return 0;
}

static int32_t fn_bad_header(TetherObjectHeader *self, const TetherAnyView *args, int32_t n, TetherAny *result) {
    (void)self;
    int64_t kind;
    if (!int_arg(args, n, 0, &kind)) {
        return raise("TypeError", "hostile.bad_header(kind): expected an int");
    }
    *result = cell_of_kind(kind, &lying_header);
    return 0;
}

static int32_t fn_bad_array(TetherObjectHeader *self, const TetherAnyView *args, int32_t n, TetherAny *result) {
    (void)self;
    int64_t kind;
    if (!int_arg(args, n, 0, &kind)) {
        return raise("TypeError", "hostile.bad_array(kind): expected an int");
    }
    TetherAny item = cell_of_kind(kind, (void *)0x40);
    TetherObjectHeader *arr = api->make_array(&item, 1);
    if (!arr) {
        return -1; /* the host's error is raised */
    }
    result->type_index = arr->type_index;
    result->payload.v_obj = arr;
    return 0;
}

static int32_t fn_bad_call(TetherObjectHeader *self, const TetherAnyView *args, int32_t n, TetherAny *result) {
    (void)self;
    int64_t kind;
    if (n != 2 || args[0].type_index != TETHER_TYPE_FUNCTION || !int_arg(args, n, 1, &kind)) {
        return raise("TypeError", "hostile.bad_call(f, kind): expected a function and an int");
    }
    TetherAny arg = cell_of_kind(kind, (void *)0x40);
    return api->call_function(args[0].payload.v_obj, &arg, 1, result);
}

static int32_t field_getter(TetherObjectHeader *self, const TetherAnyView *args, int32_t n, TetherAny *result) {
    (void)self, (void)args, (void)n, (void)result;
    return 0; /* None */
}

static int32_t fn_register_type(TetherObjectHeader *self, const TetherAnyView *args, int32_t n, TetherAny *result) {
    (void)self;
    if (n != 3) {
        return raise("TypeError", "hostile.register_type(key, parent, fields) takes 3 arguments");
    }
    /* Reflection must outlive the process: everything below is allocated and never freed. */
    char *key = string_arg(&args[0]), *parent_key = string_arg(&args[1]), *fields = string_arg(&args[2]);
    if (!key || !parent_key || !fields) {
        return raise("TypeError", "hostile.register_type(key, parent, fields): expected three strings");
    }
    int32_t parent = api->type_index_of((TetherByteSlice){parent_key, strlen(parent_key)});
    const TetherTypeInfo *parent_info = parent < 0 ? NULL : api->type_info(parent);
    free(parent_key);
    if (!parent_info) {
        return raise("KeyError", "hostile.register_type: no such parent type");
    }
    int32_t index = api->register_type_key((TetherByteSlice){key, strlen(key)}, parent);
    if (index < 0) {
        return -1; /* the registry's error is raised */
    }
    size_t count = 0;
    TetherFieldInfo *infos = calloc(strlen(fields) + 1, sizeof *infos);
    int32_t *ancestors = calloc((size_t)parent_info->depth + 1, sizeof *ancestors);
    TetherTypeInfo *info = calloc(1, sizeof *info);
    if (!infos || !ancestors || !info) {
        return raise("RuntimeError", "hostile.register_type: out of memory");
    }
    for (char *name = strtok(fields, ","); name; name = strtok(NULL, ",")) {
        TetherObjectHeader *get = api->make_function(field_getter, NULL, NULL, SLICE("hostile.getter"), 1);
        if (!get) {
            return -1;
        }
        infos[count++] = (TetherFieldInfo){{name, strlen(name)}, SLICE(""), SLICE(""), get, NULL};
    }
    memcpy(ancestors, parent_info->ancestors, (size_t)parent_info->depth * sizeof *ancestors);
    ancestors[parent_info->depth] = parent;
    *info = (TetherTypeInfo){
        .index = index,
        .depth = parent_info->depth + 1,
        .parent = parent,
        .key = {key, strlen(key)},
        .doc = SLICE(""),
        .ancestors = ancestors,
        .fields = infos,
        .n_fields = count,
    };
    int32_t published = api->publish_type_info(info);
    if (published < 0 || api->type_info(index) != info) {
        /* Refused, or an earlier registration won: the registry keeps none of our getters. */
        for (size_t i = 0; i < count; i++) {
            api->dec_ref(infos[i].getter);
        }
    }
    if (published < 0) {
        return -1; /* the registry's error is raised */
    }
    result->type_index = TETHER_TYPE_INT;
    result->payload.v_int = published;
    return 0;
}

__attribute__((visibility("default"))) const uint32_t tether_module_abi = TETHER_MODULE_ABI_WORD;

static int32_t export_function(void *module, const char *name, TetherSafeCallFn f, int32_t arity) {
    char qualified[64];
    snprintf(qualified, sizeof qualified, "hostile.%s", name);
    TetherObjectHeader *func = api->make_function(f, NULL, NULL, (TetherByteSlice){qualified, strlen(qualified)}, arity);
    if (!func) {
        return -1;
    }
    int32_t rc = api->module_add_function(module, (TetherByteSlice){name, strlen(name)}, func);
    api->dec_ref(func);
    return rc;
}

__attribute__((visibility("default"))) int32_t tether_module_init(const TetherApiTable *host, void *module) {
    if (!host || host->abi_major != TETHER_ABI_MAJOR || host->size < sizeof(TetherApiTable)) {
        return TETHER_INIT_ABI_MISMATCH;
    }
    api = host;
    if (export_function(module, "ok", fn_ok, 0) || export_function(module, "bad_result", fn_bad_result, 1) ||
        export_function(module, "bad_header", fn_bad_header, 1) ||
        export_function(module, "bad_array", fn_bad_array, 1) || export_function(module, "bad_call", fn_bad_call, 2) ||
        export_function(module, "register_type", fn_register_type, 3)) {
        return TETHER_INIT_ERROR;
    }
    return TETHER_INIT_OK;
}

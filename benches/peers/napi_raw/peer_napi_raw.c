// The raw Node-API peer: echo, add3 and a callback written in C against node_api.h only,
// with no per-call bookkeeping (the Node floor).
#define NAPI_VERSION 8
#include <node_api.h>
#include <stdint.h>
#include <stdlib.h>

// W1: return the first argument itself.
static napi_value echo(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1] = {0};
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
    return argv[0];
}

// W3: three integers in, one out.
static napi_value add3(napi_env env, napi_callback_info info) {
    size_t argc = 3;
    napi_value argv[3];
    int64_t a, b, c;
    napi_value result;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3) {
        napi_throw_type_error(env, NULL, "add3 needs 3 arguments");
        return NULL;
    }
    if (napi_get_value_int64(env, argv[0], &a) != napi_ok ||
        napi_get_value_int64(env, argv[1], &b) != napi_ok ||
        napi_get_value_int64(env, argv[2], &c) != napi_ok) {
        napi_throw_type_error(env, NULL, "add3 takes numbers");
        return NULL;
    }
    if (napi_create_int64(env, a + b + c, &result) != napi_ok) return NULL;
    return result;
}

// W7: call the first argument with no arguments and return its result.
static napi_value call(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1] = {0};
    napi_value undefined, result = NULL;
    if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
    if (napi_get_undefined(env, &undefined) != napi_ok) return NULL;
    if (napi_call_function(env, undefined, argv[0], 0, NULL, &result) != napi_ok) return NULL;
    return result;
}

// W4: `new Pair(a, b)`, a native struct with two strong references wrapped onto `this` with a
// finalizer (the raw floor of a native object with a JS wrapper; no identity bookkeeping).
typedef struct {
    napi_ref first, second;
} Pair;

static void pair_finalize(napi_env env, void *data, void *hint) {
    (void)hint;
    Pair *p = data;
    napi_delete_reference(env, p->first);
    napi_delete_reference(env, p->second);
    free(p);
}

static napi_value pair_new(napi_env env, napi_callback_info info) {
    size_t argc = 2;
    napi_value argv[2], this;
    if (napi_get_cb_info(env, info, &argc, argv, &this, NULL) != napi_ok || argc < 2) {
        napi_throw_type_error(env, NULL, "Pair needs 2 arguments");
        return NULL;
    }
    Pair *p = malloc(sizeof *p);
    if (p == NULL) {
        napi_throw_range_error(env, NULL, "out of memory");
        return NULL;
    }
    // Node-API 9+ takes references to any value; a null or undefined field holds no reference.
    napi_valuetype t;
    p->first = p->second = NULL;
    if (napi_typeof(env, argv[0], &t) == napi_ok && t == napi_object) napi_create_reference(env, argv[0], 1, &p->first);
    if (napi_typeof(env, argv[1], &t) == napi_ok && t == napi_object) napi_create_reference(env, argv[1], 1, &p->second);
    if (napi_wrap(env, this, p, pair_finalize, NULL, NULL) != napi_ok) {
        pair_finalize(env, p, NULL);
        return NULL;
    }
    return this;
}

static napi_value init(napi_env env, napi_value exports) {
    napi_property_descriptor props[] = {
        {"echo", NULL, echo, NULL, NULL, NULL, napi_default, NULL},
        {"add3", NULL, add3, NULL, NULL, NULL, napi_default, NULL},
        {"call", NULL, call, NULL, NULL, NULL, napi_default, NULL},
    };
    if (napi_define_properties(env, exports, sizeof props / sizeof props[0], props) != napi_ok) return NULL;
    napi_value pair;
    if (napi_define_class(env, "Pair", NAPI_AUTO_LENGTH, pair_new, NULL, 0, NULL, &pair) != napi_ok) return NULL;
    if (napi_set_named_property(env, exports, "Pair", pair) != napi_ok) return NULL;
    return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)

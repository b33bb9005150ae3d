/*
 * tether.h: the C ABI of tether-core (ABI 1.0).
 *
 * Every struct below is declared `#[repr(C)]` in crates/core/src and pinned there by
 * compile-time asserts; the `_Static_assert`s at the end of this file check the same numbers
 * on the C side, and crates/core/tests/c_plugin.rs compares C's offsetof with Rust's
 * offset_of at run time. docs/abi.md explains every field and ownership rule.
 *
 * Platform: 64-bit, little-endian (x86_64, aarch64). C11.
 *
 * A C plugin is a shared library exporting
 *     const uint32_t tether_module_abi = TETHER_MODULE_ABI_WORD;
 *     int32_t tether_module_init(const TetherApiTable *api, void *module);
 * and it allocates, registers and raises only through `api` (never malloc for objects).
 */
#ifndef TETHER_H
#define TETHER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- versioning ------------------------------------------------------------------------ */

#define TETHER_ABI_MAJOR 1u
#define TETHER_ABI_MINOR 8u
/* The value a plugin exports as `tether_module_abi`: major << 16 | minor. */
#define TETHER_MODULE_ABI_WORD ((TETHER_ABI_MAJOR << 16) | TETHER_ABI_MINOR)

/* ---- type indices ---------------------------------------------------------------------- */

/* Static kinds (no object; the value lives in the cell). */
#define TETHER_TYPE_NONE 0
#define TETHER_TYPE_INT 1
#define TETHER_TYPE_BOOL 2
#define TETHER_TYPE_FLOAT 3
#define TETHER_TYPE_OPAQUE_PTR 4
#define TETHER_TYPE_SMALL_STR 5   /* <= 7 bytes inline in the payload, length in small_len */
#define TETHER_TYPE_SMALL_BYTES 6 /* <= 7 bytes inline */
#define TETHER_TYPE_RAW_STR 7     /* borrowed: payload = const char*, small_len = length; views only */
#define TETHER_TYPE_RAW_BYTES 8   /* borrowed bytes; views only */
#define TETHER_TYPE_STATIC_END 64
/* Object kinds: payload is a TetherObjectHeader*. */
#define TETHER_TYPE_OBJECT 64
#define TETHER_TYPE_STR 65
#define TETHER_TYPE_BYTES 66
#define TETHER_TYPE_ERROR 67
#define TETHER_TYPE_FUNCTION 68
#define TETHER_TYPE_ARRAY 69
#define TETHER_TYPE_MAP 70
#define TETHER_TYPE_MODULE 71
#define TETHER_TYPE_OPAQUE 72
#define TETHER_TYPE_HOST_VALUE 73
#define TETHER_TYPE_FIRST_USER 128
/* Most bytes a string or bytes value stores inline. */
#define TETHER_SMALL_MAX 7

/* The deepest nesting of language containers (lists, dicts, arrays, maps) a frontend converts to
 * native Arrays and Maps; deeper or self-containing values are a ValueError before any call. */
#define TETHER_MAX_NESTING_DEPTH 100
/* The most items one such container converts (2^27); a larger one is a ValueError. */
#define TETHER_MAX_CONTAINER_ITEMS 134217728

/* ---- the object header (24 bytes, align 8) ---------------------------------------------- */

/* Deleter flags. */
#define TETHER_DELETE_VALUE 1  /* drop the value (last strong reference went away) */
#define TETHER_DELETE_MEMORY 2 /* free the memory (last reference of any kind went away) */
#define TETHER_DELETE_BOTH 3

/* combined_ref_count: strong count in the low 32 bits, weak count in the high 32. */
#define TETHER_STRONG_ONE ((uint64_t)1)
#define TETHER_WEAK_ONE ((uint64_t)1 << 32)
/* A new object starts at strong 1, weak 1 (all strong refs together hold one weak). */
#define TETHER_INITIAL_COUNT (TETHER_STRONG_ONE | TETHER_WEAK_ONE)

typedef struct TetherObjectHeader TetherObjectHeader;
typedef void (*TetherDeleter)(TetherObjectHeader *obj, int32_t flags);

struct TetherObjectHeader {
    /* Atomic. Use api->inc_ref / api->dec_ref (or __atomic builtins with the same orderings:
     * relaxed increment, release decrement + acquire fence at zero). Never write it after
     * the object is shared, and never store anything over it. */
    uint64_t combined_ref_count;
    int32_t type_index;
    /* Written by the allocator (api->alloc_object); leave it alone. 0 = builtin allocator. */
    uint32_t alloc_tag;
    TetherDeleter deleter;
};

/* ---- values: Any (owned) and AnyView (borrowed), 16 bytes -------------------------------- */

/* Every unused byte is zero, so equal values are bytewise equal. */
typedef struct TetherAny {
    int32_t type_index;
    uint32_t small_len; /* length of SMALL_* and RAW_* kinds, else 0 */
    union {
        int64_t v_int;
        double v_float;
        uint64_t v_bool; /* 0 or 1 */
        void *v_ptr;
        const char *v_raw; /* RAW_STR / RAW_BYTES */
        char v_small[8];   /* SMALL_STR / SMALL_BYTES: small_len bytes, rest zero */
        TetherObjectHeader *v_obj;
        uint64_t v_bits;
    } payload;
} TetherAny;

/* Same layout; the name documents that the cell is borrowed (no reference owned). */
typedef TetherAny TetherAnyView;

/* A borrowed UTF-8 string crossing the ABI. */
typedef struct TetherByteSlice {
    const char *ptr;
    size_t len;
} TetherByteSlice;

/* ---- allocation ------------------------------------------------------------------------ */

typedef uint8_t *(*TetherAllocateFn)(void *ctx, size_t size, size_t align);
typedef void (*TetherFreeFn)(void *ctx, uint8_t *body, size_t size, size_t align);

typedef struct TetherCustomAllocator {
    TetherAllocateFn allocate;
    TetherFreeFn free;
    void *ctx;
    uint32_t tag;
} TetherCustomAllocator;

/* The 16 bytes a frontend allocator places in front of each object it makes
 * (only when header->alloc_tag is that frontend's tag). */
typedef struct TetherSlotPrefix {
    uintptr_t slot; /* atomic: the canonical wrapper word (see docs/abi.md) */
    uint64_t aux;   /* atomic: generation of the wrapper the slot names */
} TetherSlotPrefix;

/* ---- functions ------------------------------------------------------------------------- */

/* safe_call(handle, args, n, result): `handle` is the Function object itself; `args` borrows
 * n cells; `*result` was set to None by the caller and receives an owned value.
 * Returns 0 on success; nonzero = an Error object waits in the thread's raised slot
 * (api->set_last_error). */
typedef int32_t (*TetherSafeCallFn)(TetherObjectHeader *handle, const TetherAnyView *args, int32_t n,
                                    TetherAny *result);
typedef void (*TetherDataDropFn)(void *data);

/* Flag: the function neither blocks nor calls back into a language. */
#define TETHER_FUNC_LEAF 1u
/* Flag (ABI 1.1): the function accepts lent object arguments: an object cell whose small_len
 * is TETHER_LENT_MARK carries one strong reference for the callee, which adopts it when it
 * converts the argument (exactly once) and releases (dec_ref) the lent arguments it does not
 * convert. Frontends lend only to functions with this flag; C functions normally leave it off. */
#define TETHER_FUNC_ADOPTS_LENT 2u
/* Flag (ABI 1.2): set by the core on the getters of reflected fields stored in a cell; their
 * data starts with a pointer-sized mark of the core copy that made them, the rest is private
 * to that copy. Never set it yourself. */
#define TETHER_FUNC_CELL_GETTER 4u
/* Flag (ABI 1.4): `signature` below is there (and holds an interned signature or NULL). Set
 * by the core (api->set_signature); a function object built by hand against an older header
 * is 64 bytes and never has it. */
#define TETHER_FUNC_SIGNED 8u
/* Flag (ABI 1.5): the function does not block (it waits for no other thread: no join, no lock
 * another thread may hold while calling into a language, no blocking I/O) and calls the
 * language callables it calls on the calling thread, before it returns. A frontend may then
 * keep its interpreter lock held across the call (Python keeps the GIL). Unlike a leaf,
 * language code may run during the call. A function that calls a Function it was given is
 * nonblocking only if that Function is. */
#define TETHER_FUNC_NONBLOCKING 16u
/* Flag (ABI 1.6): set by the core on typed closures of at most 4 parameters whose parameters
 * and result are all ints: the function's data starts with a TetherIntEntry, which takes the
 * first `arity` of its four int64 arguments (pass 0 for the rest) and gives its result as an
 * int64, with no cells (the value and error safe_call would give; status 0, or -1 with the
 * error raised). Never set it yourself. */
#define TETHER_FUNC_INT_ENTRY 32u
/* The most arguments a TetherIntEntry takes (its int64 parameters after the handle). */
#define TETHER_INT_ENTRY_ARGS 4
typedef struct TetherIntOutcome {
    int64_t value;
    int64_t status;
} TetherIntOutcome;
typedef TetherIntOutcome (*TetherIntEntry)(TetherObjectHeader *handle, int64_t a0, int64_t a1, int64_t a2,
                                           int64_t a3);
/* Flag (ABI 1.8): set by the core on typed closures of at most 2 parameters: the function's
 * data holds two entry pointers, the TetherIntEntry (NULL unless TETHER_FUNC_INT_ENTRY is set)
 * and a TetherValueEntry, which takes the first `arity` of its two argument cells by value
 * (pass a None cell for the rest; lent ones as for safe_call) and returns the result cell by
 * value, or a cell whose type index is TETHER_VALUE_RAISED with the error raised (the value
 * and error safe_call would give). Never set it yourself. */
#define TETHER_FUNC_VALUE_ENTRY 64u
/* The most arguments a TetherValueEntry takes (its cells after the handle). */
#define TETHER_VALUE_ENTRY_ARGS 2
/* The type index of a TetherValueEntry's result that says "the error is raised". */
#define TETHER_VALUE_RAISED (-2147483648)
typedef TetherAny (*TetherValueEntry)(TetherObjectHeader *handle, TetherAnyView a0, TetherAnyView a1);
#define TETHER_LENT_MARK 1u

/* ---- signatures (ABI 1.4) ----------------------------------------------------------------
 * A type descriptor is a tree in preorder: each node has a kind and a child count (Array and
 * Optional 1, Map 2: key then value, Callable: its parameter types then its result type, or
 * none when unknown; the rest 0) and, for an Object node, the registered type key. Zero nodes
 * mean Any. */
#define TETHER_TYPE_DESC_ANY 0u
#define TETHER_TYPE_DESC_NONE 1u
#define TETHER_TYPE_DESC_BOOL 2u
#define TETHER_TYPE_DESC_INT 3u
#define TETHER_TYPE_DESC_FLOAT 4u
#define TETHER_TYPE_DESC_STR 5u
#define TETHER_TYPE_DESC_BYTES 6u
#define TETHER_TYPE_DESC_OBJECT 7u
#define TETHER_TYPE_DESC_ARRAY 8u
#define TETHER_TYPE_DESC_MAP 9u
#define TETHER_TYPE_DESC_OPTIONAL 10u
#define TETHER_TYPE_DESC_CALLABLE 11u
#define TETHER_TYPE_DESC_HOST 12u

/* Parameter flags: it has a default (`default_value`, a plain value: None, bool, int, float,
 * a small or RAW_STR string, bytes); it may be passed by keyword (it needs a name). */
#define TETHER_PARAM_HAS_DEFAULT 1u
#define TETHER_PARAM_KEYWORD 2u
/* Signature flag: the first parameter is a method's receiver (`self`). */
#define TETHER_SIG_RECEIVER 1u

typedef struct TetherTypeNode {
    uint32_t kind;
    uint32_t n_children;
    TetherByteSlice key; /* Object nodes: the type key ("scene.Node"); else empty */
} TetherTypeNode;

typedef struct TetherTypeDesc {
    const TetherTypeNode *nodes;
    size_t n_nodes;
} TetherTypeDesc;

typedef struct TetherParamInfo {
    TetherByteSlice name; /* empty: positional only */
    TetherTypeDesc type;
    TetherAny default_value;
    uint32_t flags;
    uint32_t reserved;
} TetherParamInfo;

typedef struct TetherSignatureInfo {
    const TetherParamInfo *params;
    size_t n_params;
    TetherTypeDesc result;
    uint32_t flags;
    uint32_t reserved;
} TetherSignatureInfo;

typedef struct TetherFunctionObj {
    TetherSafeCallFn safe_call;
    uint32_t flags;
    int32_t arity; /* -1 = variadic / unknown */
    TetherAny name;
    TetherAny doc;
    void *data;                 /* the creator's payload */
    TetherDataDropFn drop_data; /* may be NULL */
    const TetherSignatureInfo *signature; /* read only when flags has TETHER_FUNC_SIGNED */
} TetherFunctionObj;

typedef struct TetherFunctionObject {
    TetherObjectHeader header;
    TetherFunctionObj body;
} TetherFunctionObject;

/* ---- errors ---------------------------------------------------------------------------- */

/* An error's kind as a code (TetherErrorObj.code, an int): frontends map these, not names. A
 * kind named outside this list keeps its name in `kind` and has TETHER_ERROR_RUNTIME_ERROR. */
#define TETHER_ERROR_TYPE_ERROR 1
#define TETHER_ERROR_VALUE_ERROR 2
#define TETHER_ERROR_INDEX_ERROR 3
#define TETHER_ERROR_KEY_ERROR 4
#define TETHER_ERROR_ATTRIBUTE_ERROR 5
#define TETHER_ERROR_RUNTIME_ERROR 6
#define TETHER_ERROR_RUST_PANIC 7
#define TETHER_ERROR_MEMORY_ERROR 8 /* an object could not be allocated */

typedef struct TetherErrorObj {
    TetherAny kind;      /* a string: "TypeError", "ValueError", ... */
    TetherAny message;   /* a string */
    TetherAny backtrace; /* a string or None */
    TetherAny payload;   /* free for the raising frontend, else None */
    TetherAny code;      /* an int: TETHER_ERROR_* (since ABI 1.3) */
} TetherErrorObj;

typedef struct TetherErrorObject {
    TetherObjectHeader header;
    TetherErrorObj body;
} TetherErrorObject;

/* ---- containers (immutable once built) ------------------------------------------------- */

/* Str: len bytes of UTF-8 and a NUL follow the body; `data` points at them. */
typedef struct TetherStrObj {
    uint64_t len;
    const char *data;
} TetherStrObj;

typedef struct TetherStrObject {
    TetherObjectHeader header;
    TetherStrObj body;
} TetherStrObject;

/* Bytes: len bytes follow the body; `data` points at them. */
typedef struct TetherBytesObj {
    uint64_t len;
    const uint8_t *data;
} TetherBytesObj;

typedef struct TetherBytesObject {
    TetherObjectHeader header;
    TetherBytesObj body;
} TetherBytesObject;

/* Array: len owned cells follow the body; `data` points at them. */
typedef struct TetherArrayObj {
    uint64_t len;
    const TetherAny *data;
} TetherArrayObj;

typedef struct TetherArrayObject {
    TetherObjectHeader header;
    TetherArrayObj body;
} TetherArrayObject;

/* Map: `len` (key, value) pairs in insertion order, then index_cap / 8 rows of u32 index
 * slots (no index when len <= 8). Look keys up with the global `tether.MapGetItem`. */
typedef union TetherMapItem {
    TetherAny pair[2];
    uint32_t slots[8];
} TetherMapItem;

typedef struct TetherMapObj {
    uint64_t len;
    uint64_t index_cap;
    TetherMapItem *data;
} TetherMapObj;

typedef struct TetherMapObject {
    TetherObjectHeader header;
    TetherMapObj body;
} TetherMapObject;

/* Opaque: a foreign handle; finalize(ptr) runs when the object dies (on any thread). */
typedef struct TetherOpaqueObj {
    void *ptr;
    void (*finalize)(void *ptr);
    uint64_t owner;
} TetherOpaqueObj;

/* HostValue: a Python, JS or Java value held by native code (made by frontends only; C code
 * stores, passes and releases it like any object and may read the type name). The value goes
 * back as itself to its own language; language points at the frontend's description. */
typedef struct TetherHostValueObj {
    void *value;
    const void *language;
    const uint8_t *type_name; /* UTF-8, not NUL-terminated */
    uint64_t type_name_len;
} TetherHostValueObj;

/* ---- types and reflection -------------------------------------------------------------- */

/* getter(self) -> value and setter(self, value) -> None are Function objects. */
typedef struct TetherFieldInfo {
    TetherByteSlice name;
    TetherByteSlice doc;
    TetherByteSlice type_hint;
    TetherObjectHeader *getter;
    TetherObjectHeader *setter; /* NULL = read-only */
} TetherFieldInfo;

typedef struct TetherMethodInfo {
    TetherByteSlice name;
    TetherByteSlice doc;
    TetherObjectHeader *func; /* takes self first unless is_static */
    int32_t is_static;
} TetherMethodInfo;

/* TetherTypeInfo.flags: the type's wrappers take weak references in Python (each carries
 * CPython's weak-reference list, so it cannot live in its object's memory). Off by default;
 * Node and the JVM take weak references to every wrapper. */
#define TETHER_TYPE_WEAK_REFERENCEABLE 1u

/* Immutable once published. Everything it points to must live for the whole process
 * (static storage in C), and the Functions it names hold one reference that is never
 * released. */
typedef struct TetherTypeInfo {
    int32_t index;
    int32_t depth;  /* 0 for the root Object; parent's + 1 */
    int32_t parent; /* -1 for the root */
    uint32_t flags; /* TETHER_TYPE_WEAK_REFERENCEABLE; 0 for a key-only entry */
    TetherByteSlice key;
    TetherByteSlice doc;
    const int32_t *ancestors; /* ancestors[d] = index of the ancestor at depth d, d < depth */
    const TetherFieldInfo *fields;
    size_t n_fields;
    const TetherMethodInfo *methods;
    size_t n_methods;
    TetherObjectHeader *constructor; /* a Function, or NULL */
} TetherTypeInfo;

/* ---- the host's API table (entries only ever appended; `size` = bytes the host has) ---- */

typedef struct TetherApiTable {
    uint32_t abi_major;
    uint32_t abi_minor;
    uint64_t size;
    /* allocation: alloc_object returns a body whose alloc_tag is set; the caller fills in
     * combined_ref_count (TETHER_INITIAL_COUNT), type_index and deleter. The deleter frees
     * with free_object and the exact size and align it allocated. align >= 8. NULL when the
     * allocator has no memory (raise a MemoryError: make_error("MemoryError", ...)). */
    TetherObjectHeader *(*alloc_object)(size_t size, size_t align);
    void (*free_object)(TetherObjectHeader *obj, size_t size, size_t align);
    int32_t (*register_allocator)(TetherAllocateFn allocate, TetherFreeFn free, void *ctx, uint32_t *out_tag);
    int32_t (*set_current_allocator)(uint32_t tag);
    uint32_t (*current_allocator_tag)(void);
    int64_t (*live_objects)(void);
    /* errors: set_last_error takes over the reference; take_last_error returns an owned
     * reference or NULL. */
    void (*set_last_error)(TetherObjectHeader *err);
    TetherObjectHeader *(*take_last_error)(void);
    /* types: register_type_key is idempotent by key, returns the index or -1 (error raised).
     * A key names one layout: another parent for a known key, or a publication whose parent
     * chain or field names differ from the registered ones, is -1 with a ValueError naming the
     * key (docs/abi.md section 7). */
    int32_t (*register_type_key)(TetherByteSlice key, int32_t parent);
    int32_t (*type_index_of)(TetherByteSlice key);
    const TetherTypeInfo *(*type_info)(int32_t index);
    int32_t (*publish_type_info)(const TetherTypeInfo *info);
    /* global functions: register_global borrows func (takes its own reference);
     * get_global returns an owned reference or NULL. */
    int32_t (*register_global)(TetherByteSlice name, TetherObjectHeader *func, int32_t allow_override);
    TetherObjectHeader *(*get_global)(TetherByteSlice name);
    /* modules (only during tether_module_init; `module` is the init argument; func borrowed) */
    int32_t (*module_add_function)(void *module, TetherByteSlice name, TetherObjectHeader *func);
    int32_t (*module_add_type)(void *module, int32_t type_index);
    /* conveniences: each returns an owned reference, or NULL with an error raised. A function
     * from make_function has its results checked by the host, and make_array / call_function
     * check their cells: a type index that is neither a value kind nor a registered type is a
     * ValueError, never read as a pointer (docs/abi.md section 8). */
    TetherObjectHeader *(*make_str)(TetherByteSlice s);
    TetherObjectHeader *(*make_error)(TetherByteSlice kind, TetherByteSlice message);
    TetherObjectHeader *(*make_function)(TetherSafeCallFn safe_call, void *data, TetherDataDropFn drop_data,
                                         TetherByteSlice name, int32_t arity);
    TetherObjectHeader *(*make_array)(const TetherAnyView *items, size_t n);
    void (*inc_ref)(TetherObjectHeader *obj);
    void (*dec_ref)(TetherObjectHeader *obj);
    /* call a borrowed Function: same contract as safe_call */
    int32_t (*call_function)(TetherObjectHeader *func, const TetherAnyView *args, int32_t n, TetherAny *result);
    /* ABI 1.4: attach a copy of `signature` to a Function the caller holds the only reference
     * to (right after make_function). A malformed signature (unknown kind, wrong child count,
     * a tree that does not close, non-UTF-8 text, a default that is not a plain value, a
     * required parameter after a defaulted one) is -1 with a ValueError, never a crash. */
    int32_t (*set_signature)(TetherObjectHeader *func, const TetherSignatureInfo *signature);
    /* ABI 1.5: load a plugin file as the host does (once per file; the same module object
     * after): an owned module object, or NULL with the error raised. */
    TetherObjectHeader *(*load_module)(TetherByteSlice path);
    /* ABI 1.5: every registered global function's name, an owned Array of Str. */
    TetherObjectHeader *(*list_globals)(void);
} TetherApiTable;

/* ---- plugin entry points --------------------------------------------------------------- */

typedef int32_t (*TetherModuleInitFn)(const TetherApiTable *api, void *module);
/* tether_module_init returns 0, -1 (error raised through api->set_last_error), or -2 (the
 * host's table is unacceptable: major version or size). */
#define TETHER_INIT_OK 0
#define TETHER_INIT_ERROR (-1)
#define TETHER_INIT_ABI_MISMATCH (-2)

/* ---- layout checks (the same numbers as the Rust compile-time asserts) ----------------- */

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define TETHER_ASSERT_LAYOUT(cond, msg) _Static_assert(cond, msg)
#define TETHER_ALIGNOF(t) _Alignof(t)
#elif defined(__cplusplus) && __cplusplus >= 201103L
#define TETHER_ASSERT_LAYOUT(cond, msg) static_assert(cond, msg)
#define TETHER_ALIGNOF(t) alignof(t)
#else
#define TETHER_ASSERT_LAYOUT(cond, msg)
#define TETHER_ALIGNOF(t) 8
#endif

TETHER_ASSERT_LAYOUT(sizeof(void *) == 8, "tether needs a 64-bit target");
TETHER_ASSERT_LAYOUT(sizeof(TetherObjectHeader) == 24, "ObjectHeader is 24 bytes");
TETHER_ASSERT_LAYOUT(TETHER_ALIGNOF(TetherObjectHeader) == 8, "ObjectHeader is 8-aligned");
TETHER_ASSERT_LAYOUT(offsetof(TetherObjectHeader, combined_ref_count) == 0, "ObjectHeader.combined_ref_count");
TETHER_ASSERT_LAYOUT(offsetof(TetherObjectHeader, type_index) == 8, "ObjectHeader.type_index");
TETHER_ASSERT_LAYOUT(offsetof(TetherObjectHeader, alloc_tag) == 12, "ObjectHeader.alloc_tag");
TETHER_ASSERT_LAYOUT(offsetof(TetherObjectHeader, deleter) == 16, "ObjectHeader.deleter");

TETHER_ASSERT_LAYOUT(sizeof(TetherAny) == 16, "Any is 16 bytes");
TETHER_ASSERT_LAYOUT(TETHER_ALIGNOF(TetherAny) == 8, "Any is 8-aligned");
TETHER_ASSERT_LAYOUT(offsetof(TetherAny, type_index) == 0, "Any.type_index");
TETHER_ASSERT_LAYOUT(offsetof(TetherAny, small_len) == 4, "Any.small_len");
TETHER_ASSERT_LAYOUT(offsetof(TetherAny, payload) == 8, "Any.payload");

TETHER_ASSERT_LAYOUT(sizeof(TetherIntOutcome) == 16, "IntOutcome is two words");
TETHER_ASSERT_LAYOUT(offsetof(TetherIntOutcome, status) == 8, "IntOutcome.status");

TETHER_ASSERT_LAYOUT(sizeof(TetherByteSlice) == 16, "ByteSlice is 16 bytes");
TETHER_ASSERT_LAYOUT(sizeof(TetherSlotPrefix) == 16, "SlotPrefix is 16 bytes");
TETHER_ASSERT_LAYOUT(offsetof(TetherSlotPrefix, aux) == 8, "SlotPrefix.aux");

TETHER_ASSERT_LAYOUT(sizeof(TetherCustomAllocator) == 32, "CustomAllocator is 32 bytes");
TETHER_ASSERT_LAYOUT(offsetof(TetherCustomAllocator, free) == 8, "CustomAllocator.free");
TETHER_ASSERT_LAYOUT(offsetof(TetherCustomAllocator, ctx) == 16, "CustomAllocator.ctx");
TETHER_ASSERT_LAYOUT(offsetof(TetherCustomAllocator, tag) == 24, "CustomAllocator.tag");

TETHER_ASSERT_LAYOUT(sizeof(TetherFunctionObj) == 72, "FunctionObj is 72 bytes");
TETHER_ASSERT_LAYOUT(offsetof(TetherFunctionObj, signature) == 64, "FunctionObj.signature");
TETHER_ASSERT_LAYOUT(sizeof(TetherTypeNode) == 24 && offsetof(TetherTypeNode, key) == 8, "TypeNode");
TETHER_ASSERT_LAYOUT(sizeof(TetherTypeDesc) == 16, "TypeDesc is 16 bytes");
TETHER_ASSERT_LAYOUT(sizeof(TetherParamInfo) == 56, "ParamInfo is 56 bytes");
TETHER_ASSERT_LAYOUT(offsetof(TetherParamInfo, default_value) == 32 && offsetof(TetherParamInfo, flags) == 48, "ParamInfo");
TETHER_ASSERT_LAYOUT(sizeof(TetherSignatureInfo) == 40, "SignatureInfo is 40 bytes");
TETHER_ASSERT_LAYOUT(offsetof(TetherSignatureInfo, result) == 16 && offsetof(TetherSignatureInfo, flags) == 32, "SignatureInfo");
TETHER_ASSERT_LAYOUT(offsetof(TetherFunctionObj, flags) == 8, "FunctionObj.flags");
TETHER_ASSERT_LAYOUT(offsetof(TetherFunctionObj, arity) == 12, "FunctionObj.arity");
TETHER_ASSERT_LAYOUT(offsetof(TetherFunctionObj, name) == 16, "FunctionObj.name");
TETHER_ASSERT_LAYOUT(offsetof(TetherFunctionObj, doc) == 32, "FunctionObj.doc");
TETHER_ASSERT_LAYOUT(offsetof(TetherFunctionObj, data) == 48, "FunctionObj.data");
TETHER_ASSERT_LAYOUT(offsetof(TetherFunctionObj, drop_data) == 56, "FunctionObj.drop_data");
TETHER_ASSERT_LAYOUT(offsetof(TetherFunctionObject, body) == 24, "Function body follows the header");

TETHER_ASSERT_LAYOUT(sizeof(TetherErrorObj) == 80, "ErrorObj is 80 bytes");
TETHER_ASSERT_LAYOUT(offsetof(TetherErrorObj, code) == 64, "ErrorObj.code");
TETHER_ASSERT_LAYOUT(offsetof(TetherErrorObj, message) == 16, "ErrorObj.message");
TETHER_ASSERT_LAYOUT(offsetof(TetherErrorObj, backtrace) == 32, "ErrorObj.backtrace");
TETHER_ASSERT_LAYOUT(offsetof(TetherErrorObj, payload) == 48, "ErrorObj.payload");
TETHER_ASSERT_LAYOUT(offsetof(TetherErrorObject, body) == 24, "Error body follows the header");

TETHER_ASSERT_LAYOUT(sizeof(TetherStrObj) == 16 && offsetof(TetherStrObj, data) == 8, "StrObj");
TETHER_ASSERT_LAYOUT(sizeof(TetherStrObject) == 40, "Str object: items start at 40");
TETHER_ASSERT_LAYOUT(sizeof(TetherBytesObj) == 16 && offsetof(TetherBytesObj, data) == 8, "BytesObj");
TETHER_ASSERT_LAYOUT(sizeof(TetherArrayObj) == 16 && offsetof(TetherArrayObj, data) == 8, "ArrayObj");
TETHER_ASSERT_LAYOUT(sizeof(TetherArrayObject) == 40, "Array object: items start at 40");
TETHER_ASSERT_LAYOUT(sizeof(TetherMapItem) == 32, "MapItem is 32 bytes");
TETHER_ASSERT_LAYOUT(sizeof(TetherMapObj) == 24, "MapObj is 24 bytes");
TETHER_ASSERT_LAYOUT(offsetof(TetherMapObj, index_cap) == 8 && offsetof(TetherMapObj, data) == 16, "MapObj");
TETHER_ASSERT_LAYOUT(sizeof(TetherMapObject) == 48, "Map object: items start at 48");
TETHER_ASSERT_LAYOUT(sizeof(TetherOpaqueObj) == 24, "OpaqueObj is 24 bytes");
TETHER_ASSERT_LAYOUT(offsetof(TetherOpaqueObj, finalize) == 8 && offsetof(TetherOpaqueObj, owner) == 16, "OpaqueObj");
TETHER_ASSERT_LAYOUT(sizeof(TetherHostValueObj) == 32, "HostValueObj is 32 bytes");
TETHER_ASSERT_LAYOUT(offsetof(TetherHostValueObj, type_name) == 16 && offsetof(TetherHostValueObj, type_name_len) == 24, "HostValueObj");

TETHER_ASSERT_LAYOUT(sizeof(TetherFieldInfo) == 64, "FieldInfo is 64 bytes");
TETHER_ASSERT_LAYOUT(offsetof(TetherFieldInfo, doc) == 16, "FieldInfo.doc");
TETHER_ASSERT_LAYOUT(offsetof(TetherFieldInfo, type_hint) == 32, "FieldInfo.type_hint");
TETHER_ASSERT_LAYOUT(offsetof(TetherFieldInfo, getter) == 48, "FieldInfo.getter");
TETHER_ASSERT_LAYOUT(offsetof(TetherFieldInfo, setter) == 56, "FieldInfo.setter");
TETHER_ASSERT_LAYOUT(sizeof(TetherMethodInfo) == 48, "MethodInfo is 48 bytes");
TETHER_ASSERT_LAYOUT(offsetof(TetherMethodInfo, func) == 32, "MethodInfo.func");
TETHER_ASSERT_LAYOUT(offsetof(TetherMethodInfo, is_static) == 40, "MethodInfo.is_static");
TETHER_ASSERT_LAYOUT(sizeof(TetherTypeInfo) == 96, "TypeInfo is 96 bytes");
TETHER_ASSERT_LAYOUT(offsetof(TetherTypeInfo, depth) == 4, "TypeInfo.depth");
TETHER_ASSERT_LAYOUT(offsetof(TetherTypeInfo, parent) == 8, "TypeInfo.parent");
TETHER_ASSERT_LAYOUT(offsetof(TetherTypeInfo, flags) == 12, "TypeInfo.flags");
TETHER_ASSERT_LAYOUT(offsetof(TetherTypeInfo, key) == 16, "TypeInfo.key");
TETHER_ASSERT_LAYOUT(offsetof(TetherTypeInfo, doc) == 32, "TypeInfo.doc");
TETHER_ASSERT_LAYOUT(offsetof(TetherTypeInfo, ancestors) == 48, "TypeInfo.ancestors");
TETHER_ASSERT_LAYOUT(offsetof(TetherTypeInfo, fields) == 56, "TypeInfo.fields");
TETHER_ASSERT_LAYOUT(offsetof(TetherTypeInfo, n_fields) == 64, "TypeInfo.n_fields");
TETHER_ASSERT_LAYOUT(offsetof(TetherTypeInfo, methods) == 72, "TypeInfo.methods");
TETHER_ASSERT_LAYOUT(offsetof(TetherTypeInfo, n_methods) == 80, "TypeInfo.n_methods");
TETHER_ASSERT_LAYOUT(offsetof(TetherTypeInfo, constructor) == 88, "TypeInfo.constructor");

TETHER_ASSERT_LAYOUT(offsetof(TetherApiTable, abi_minor) == 4, "ApiTable.abi_minor");
TETHER_ASSERT_LAYOUT(offsetof(TetherApiTable, size) == 8, "ApiTable.size");
TETHER_ASSERT_LAYOUT(offsetof(TetherApiTable, alloc_object) == 16, "ApiTable.alloc_object");
TETHER_ASSERT_LAYOUT(offsetof(TetherApiTable, set_last_error) == 16 + 6 * 8, "ApiTable.set_last_error");
TETHER_ASSERT_LAYOUT(offsetof(TetherApiTable, register_type_key) == 16 + 8 * 8, "ApiTable.register_type_key");
TETHER_ASSERT_LAYOUT(offsetof(TetherApiTable, register_global) == 16 + 12 * 8, "ApiTable.register_global");
TETHER_ASSERT_LAYOUT(offsetof(TetherApiTable, module_add_function) == 16 + 14 * 8, "ApiTable.module_add_function");
TETHER_ASSERT_LAYOUT(offsetof(TetherApiTable, make_str) == 16 + 16 * 8, "ApiTable.make_str");
TETHER_ASSERT_LAYOUT(offsetof(TetherApiTable, call_function) == 16 + 22 * 8, "ApiTable.call_function");
TETHER_ASSERT_LAYOUT(offsetof(TetherApiTable, set_signature) == 16 + 23 * 8, "ApiTable.set_signature");
TETHER_ASSERT_LAYOUT(offsetof(TetherApiTable, load_module) == 16 + 24 * 8, "ApiTable.load_module");
TETHER_ASSERT_LAYOUT(sizeof(TetherApiTable) == 16 + 26 * 8, "ApiTable has 26 entries in ABI 1.5");

#ifdef __cplusplus
}
#endif

#endif /* TETHER_H */

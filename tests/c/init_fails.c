/* A module whose init raises an error: loading must report it and keep the host working. */
#include <string.h>

#include "tether.h"

__attribute__((visibility("default"))) const uint32_t tether_module_abi = TETHER_MODULE_ABI_WORD;

__attribute__((visibility("default"))) int32_t tether_module_init(const TetherApiTable *api, void *module) {
    (void)module;
    const char *kind = "RuntimeError";
    const char *message = "cplugin init refused to start";
    TetherObjectHeader *err =
        api->make_error((TetherByteSlice){kind, strlen(kind)}, (TetherByteSlice){message, strlen(message)});
    api->set_last_error(err);
    return TETHER_INIT_ERROR;
}

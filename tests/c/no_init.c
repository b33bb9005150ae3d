/* Declares the tether ABI word but no `tether_module_init`: loading must fail cleanly. */
#include "tether.h"

__attribute__((visibility("default"))) const uint32_t tether_module_abi = TETHER_MODULE_ABI_WORD;

/* An ordinary shared library with no tether symbols: loading must fail cleanly. */
__attribute__((visibility("default"))) int not_a_tether_module(void) { return 42; }

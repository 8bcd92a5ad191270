/**
 * @file uct_init.h
 * Start-up of libuct: transport modules (libuct_cuda.so once it exists) are
 * loaded on first use so that a machine without CUDA pays nothing.
 */
#ifndef UCT_INIT_H_
#define UCT_INIT_H_

#include <ucs/type/status.h>

BEGIN_C_DECLS

/**
 * Load every transport module found on the module search path, once.
 * Thread safe.
 *
 * @return the number of transport modules loaded.
 */
unsigned uct_load_modules(void);

END_C_DECLS

#endif

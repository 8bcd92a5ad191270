/**
 * @file ucm_init.h
 * Start-up of libucm: it loads the memory-hook modules (libucm_cuda.so once
 * it exists) so that allocation events flow before the first user call.
 */
#ifndef UCM_INIT_H_
#define UCM_INIT_H_

#include <ucs/type/status.h>

BEGIN_C_DECLS

/** Number of ucm modules loaded at start-up (0 on a machine without CUDA). */
unsigned ucm_loaded_module_count(void);

END_C_DECLS

#endif

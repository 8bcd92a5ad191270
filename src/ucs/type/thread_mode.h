/**
 * @file thread_mode.h
 * How many threads may call into an object at once. Values match upstream
 * UCX (ucp_worker_params_t carries one), so they are ABI.
 */
#ifndef UCS_TYPE_THREAD_MODE_H
#define UCS_TYPE_THREAD_MODE_H

typedef enum {
    UCS_THREAD_MODE_SINGLE,     /**< one thread only, ever */
    UCS_THREAD_MODE_SERIALIZED, /**< many threads, never two at the same time */
    UCS_THREAD_MODE_MULTI,      /**< many threads concurrently */
    UCS_THREAD_MODE_LAST
} ucs_thread_mode_t;

/** Lower-case name of each mode ("single", "serialized", "multi"), indexed
 *  by ucs_thread_mode_t; for logs and reports. */
extern const char *ucs_thread_mode_names[];

#endif

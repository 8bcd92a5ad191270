/**
 * @file ucx_info.h
 * Pieces of the ucx_info tool, one file per kind of report.
 */
#ifndef UCX_INFO_H_
#define UCX_INFO_H_

#include <stdio.h>

/** -v: library version, where it was loaded from, configure arguments. */
void ucx_info_print_version(FILE *stream);

/** -b: compiler, flags and optional features of this build. */
void ucx_info_print_build_config(FILE *stream);

/** -d: components, memory domains, transports and devices. */
void ucx_info_print_devices(FILE *stream);

/** -d, GPU part: devices, memory, NUMA node, direct peers (gpu_info.c). */
void ucx_info_print_gpus(FILE *stream);

/** -e: hook mode, and whether the hooks and the memory-type cache work. */
void ucx_info_print_hooks(FILE *stream);

/**
 * -p: the protocol libucp selects for tag messages from memory @a mem
 * ("send[,recv]" kinds of ucx_perftest) for each of @a sizes ("8,64K",
 * "1K:256M"), on GPUs @a devices ("0" or "0,1"; NULL: 0).
 * @return the exit status: 0, or 1 after printing what went wrong.
 */
int ucx_info_print_protocols(FILE *stream, const char *mem, const char *sizes,
                             const char *devices);

#endif

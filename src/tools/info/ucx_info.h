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

#endif

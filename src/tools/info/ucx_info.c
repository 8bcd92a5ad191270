#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucx_info.h"

#include <ucs/config/parser.h>
#include <ucs/sys/init.h>
#include <uct/uct_init.h>

#include <getopt.h>
#include <stdlib.h>

static void ucx_info_usage(FILE *stream)
{
    fprintf(stream,
            "Usage: ucx_info [options]\n"
            "  -v   print the library version and build configuration summary\n"
            "  -b   print build flags and optional features\n"
            "  -c   print every configuration variable with its current value\n"
            "  -f   with -c: also print each variable's documentation\n"
            "  -a   with -c: also print internal (hidden) variables\n"
            "  -d   print memory domains, transports and devices\n"
            "  -h   print this help\n");
}

int main(int argc, char **argv)
{
    int print_version = 0, print_build = 0, print_config = 0;
    int print_devices = 0;
    int config_flags  = UCS_CONFIG_PRINT_CONFIG | UCS_CONFIG_PRINT_HEADER;
    ucs_status_t status;
    int c;

    while ((c = getopt(argc, argv, "vbcfadh")) != -1) {
        switch (c) {
        case 'v': print_version = 1; break;
        case 'b': print_build   = 1; break;
        case 'c': print_config  = 1; break;
        case 'f': config_flags |= UCS_CONFIG_PRINT_DOC; break;
        case 'a': config_flags |= UCS_CONFIG_PRINT_HIDDEN; break;
        case 'd': print_devices = 1; break;
        case 'h':
            ucx_info_usage(stdout);
            return EXIT_SUCCESS;
        default:
            ucx_info_usage(stderr);
            return EXIT_FAILURE;
        }
    }

    if (optind < argc) {
        fprintf(stderr, "ucx_info: unexpected argument '%s'\n", argv[optind]);
        ucx_info_usage(stderr);
        return EXIT_FAILURE;
    }

    if (!print_version && !print_build && !print_config && !print_devices) {
        ucx_info_usage(stderr);
        return EXIT_FAILURE;
    }

    /* A bad UCX_* value was already reported, naming the variable, when
     * libucs loaded; refuse to print a configuration that is not in effect. */
    status = ucs_init_status();
    if (status != UCS_OK) {
        fprintf(stderr, "ucx_info: invalid configuration: %s\n",
                ucs_status_string(status));
        return EXIT_FAILURE;
    }

    if (print_version) {
        ucx_info_print_version(stdout);
    }
    if (print_build) {
        ucx_info_print_build_config(stdout);
    }
    if (print_config) {
        /* Transport modules register their tables when loaded. */
        uct_load_modules();
        status = ucs_config_parser_print_all_opts(stdout, "UCX", config_flags);
        if (status != UCS_OK) {
            fprintf(stderr, "ucx_info: %s\n", ucs_status_string(status));
            return EXIT_FAILURE;
        }
    }
    if (print_devices) {
        ucx_info_print_devices(stdout);
    }
    return EXIT_SUCCESS;
}

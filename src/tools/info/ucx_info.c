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
            "  -d   print memory domains, transports and devices (GPUs too)\n"
            "  -e   print whether the CUDA memory hooks and the memory-type cache work\n"
            "  -p   print the protocol libucp selects for tag messages, per size:\n"
            "       -m <send>[,<recv>]  memory types (ucx_perftest -h lists them; host)\n"
            "       -s <sizes>          e.g. 8,64K or 1K:256M (8:1M)\n"
            "       -A <gpu>[,<gpu>]    GPU of the sender's and receiver's memory (0)\n"
            "  -h   print this help\n");
}

int main(int argc, char **argv)
{
    int print_version = 0, print_build = 0, print_config = 0;
    int print_devices = 0, print_hooks = 0, print_protocols = 0;
    const char *mem = NULL, *sizes = NULL, *gpus = NULL;
    int config_flags  = UCS_CONFIG_PRINT_CONFIG | UCS_CONFIG_PRINT_HEADER;
    ucs_status_t status;
    int c;

    while ((c = getopt(argc, argv, "vbcfadepm:s:A:h")) != -1) {
        switch (c) {
        case 'v': print_version = 1; break;
        case 'b': print_build   = 1; break;
        case 'c': print_config  = 1; break;
        case 'f': config_flags |= UCS_CONFIG_PRINT_DOC; break;
        case 'a': config_flags |= UCS_CONFIG_PRINT_HIDDEN; break;
        case 'd': print_devices = 1; break;
        case 'e': print_hooks = 1; break;
        case 'p': print_protocols = 1; break;
        case 'm': mem = optarg; break;
        case 's': sizes = optarg; break;
        case 'A': gpus = optarg; break;
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

    if (((mem != NULL) || (sizes != NULL) || (gpus != NULL)) && !print_protocols) {
        fprintf(stderr, "ucx_info: -m, -s and -A go with -p\n");
        ucx_info_usage(stderr);
        return EXIT_FAILURE;
    }
    if (!print_version && !print_build && !print_config && !print_devices &&
        !print_hooks && !print_protocols) {
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
        ucx_info_print_gpus(stdout);
    }
    if (print_hooks) {
        ucx_info_print_hooks(stdout);
    }
    if (print_protocols &&
        (ucx_info_print_protocols(stdout, mem, sizes, gpus) != 0)) {
        return EXIT_FAILURE;
    }
    return EXIT_SUCCESS;
}

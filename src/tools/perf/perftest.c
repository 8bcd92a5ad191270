#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "perftest.h"
#include "perf_cuda.h"
#include "perf_options.h"
#include "perf_session.h"
#include "perf_time.h"

#include <ucs/sys/init.h>

#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>

const char *perf_layout_names[] = {
    [PERF_LAYOUT_AUTO]  = "auto",
    [PERF_LAYOUT_SHORT] = "short",
    [PERF_LAYOUT_BCOPY] = "bcopy",
    [PERF_LAYOUT_ZCOPY] = "zcopy",
    [PERF_LAYOUT_LAST]  = NULL
};

void perf_print_error(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, PERF_PROGRAM_NAME ": ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
}

void perf_run_set_error(perf_run_t *run, const char *fmt, ...)
{
    va_list ap;

    if (run->error[0] != '\0') {
        return; /* the first failure is the cause; later ones are fallout */
    }
    va_start(ap, fmt);
    vsnprintf(run->error, sizeof(run->error), fmt, ap);
    va_end(ap);
}

int main(int argc, char **argv)
{
    perf_options_t opts;
    ucs_status_t status;

    switch (perf_options_parse(argc, argv, &opts)) {
    case PERF_PARSE_EXIT:
        return EXIT_SUCCESS;
    case PERF_PARSE_ERROR:
        return EXIT_FAILURE;
    case PERF_PARSE_RUN:
        break;
    }

    /* A bad UCX_* value was reported, naming the variable, when libucs
     * loaded; measuring with a configuration not in effect would mislead. */
    status = ucs_init_status();
    if (status != UCS_OK) {
        perf_print_error("invalid UCX configuration: %s", ucs_status_string(status));
        return EXIT_FAILURE;
    }

#ifdef PERF_HAVE_CUDA
    perf_cuda_set_api((perf_cuda_api_t)opts.cuda_api);
#endif

    /* A peer that exits mid-run must show up as an error, not kill us. */
    signal(SIGPIPE, SIG_IGN);
    perf_time_init();

    return (perf_session_run(&opts) == 0) ? EXIT_SUCCESS : EXIT_FAILURE;
}

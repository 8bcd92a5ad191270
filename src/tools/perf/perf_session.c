#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "perf_session.h"
#include "perf_cuda.h"
#include "perf_memory.h"
#include "perf_oob.h"
#include "perf_output.h"
#include "perf_stats.h"
#include "perf_tests.h"
#include "perf_wire.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* Bumped whenever a message layout changes: both sides must be this build. */
#define PERF_PROTOCOL_VERSION 2

/* The raw-copy reference: at most this many copies, and at most this many
 * bytes, so that it adds well under a second to a row. */
#define PERF_RAW_MAX_ITERS  10000
#define PERF_RAW_MAX_BYTES  (32ull << 30)
#define PERF_RAW_WINDOW     128 /* stream tests without -W: the UCP send window */

/* Pin this process to @a cpus; a failure is reported and ignored (the run
 * is still valid, only noisier). */
static void perf_session_pin(const int *cpus, unsigned num_cpus, const char *who)
{
    cpu_set_t set;
    unsigned i;

    if (num_cpus == 0) {
        return;
    }
    CPU_ZERO(&set);
    for (i = 0; i < num_cpus; ++i) {
        CPU_SET(cpus[i], &set);
    }
    if (sched_setaffinity(0, sizeof(set), &set) < 0) {
        perf_print_error("%s: cannot set CPU affinity (-c): %s", who, strerror(errno));
    }
}

/* The test case number @a index of the command line. */
static void perf_session_case_params(const perf_options_t *opts, unsigned index,
                                     perf_params_t *params)
{
    *params = opts->params;
    if (opts->num_sizes > 0) {
        params->sg_count = 1;
        params->sg[0]    = opts->sizes[index];
        params->msg_size = opts->sizes[index];
    }
}

/*
 * Whether this process can run @a params at all: the test exists, its API
 * is in this build, and both memory kinds are available. Fills @a run's
 * test and mem[] on success.
 */
static int perf_session_check_local(const perf_params_t *params, perf_run_t *run)
{
    const perf_driver_t *driver;
    const char *why;
    int side;

    run->test = perf_test_find(params->test_name);
    if (run->test == NULL) {
        perf_run_set_error(run, "unknown test '%s'", params->test_name);
        return -1;
    }
    driver = perf_driver_get(run->test->api);
    why    = driver->unavailable();
    if (why != NULL) {
        perf_run_set_error(run, "%s: %s tests: %s", params->test_name, driver->name, why);
        return -1;
    }
    for (side = 0; side < PERF_SIDE_LAST; ++side) {
        run->mem[side] = perf_mem_kind_find(params->mem_kind[side]);
        if (run->mem[side] == NULL) {
            perf_run_set_error(run, "unknown memory type '%s'", params->mem_kind[side]);
            return -1;
        }
        why = perf_mem_kind_unavailable(run->mem[side]);
        if (why == NULL) {
            why = perf_mem_device_unavailable(run->mem[side], params->device[side]);
        }
        if (why != NULL) {
            perf_run_set_error(run, "memory type '%s' is not available: %s",
                               params->mem_kind[side], why);
            return -1;
        }
    }
    return 0;
}

/* A string option the server was given must equal the client's. */
static int perf_session_match(perf_run_t *run, const char *what, const char *server,
                              const char *client)
{
    if (strcmp(server, client) != 0) {
        perf_run_set_error(run, "test mismatch: the server was started with %s %s, "
                           "the client asked for %s", what, server, client);
        return -1;
    }
    return 0;
}

/*
 * The server's check of a client's test case: the client's parameters
 * are authoritative, but whatever the server's own command line fixed
 * (-t, -x, -d, -D, -m, -s, -n) must agree, and the server must be able to
 * run the test here.
 */
static int perf_session_check_server(const perf_options_t *opts,
                                     const perf_params_t *params, perf_run_t *run)
{
    const perf_params_t *mine = &opts->params;
    char buf[2][32];
    int side;

    if (((opts->given & PERF_GIVEN_TEST) &&
         perf_session_match(run, "-t", mine->test_name, params->test_name)) ||
        ((opts->given & PERF_GIVEN_TL) &&
         perf_session_match(run, "-x", mine->tl_name, params->tl_name)) ||
        ((opts->given & PERF_GIVEN_DEV) &&
         perf_session_match(run, "-d", mine->dev_name, params->dev_name)) ||
        ((opts->given & PERF_GIVEN_LAYOUT) &&
         perf_session_match(run, "-D", perf_layout_names[mine->layout],
                            perf_layout_names[params->layout]))) {
        return -1;
    }
    for (side = 0; (opts->given & PERF_GIVEN_MEM) && (side < PERF_SIDE_LAST); ++side) {
        if (perf_session_match(run, "-m", mine->mem_kind[side], params->mem_kind[side])) {
            return -1;
        }
    }
    if ((opts->given & PERF_GIVEN_SIZE) && (opts->num_sizes == 0) &&
        (mine->msg_size != params->msg_size)) {
        snprintf(buf[0], sizeof(buf[0]), "%zu", mine->msg_size);
        snprintf(buf[1], sizeof(buf[1]), "%zu", params->msg_size);
        return perf_session_match(run, "-s (total)", buf[0], buf[1]);
    }
    if ((opts->given & PERF_GIVEN_DEVICE) &&
        ((mine->device[PERF_SIDE_SEND] != params->device[PERF_SIDE_SEND]) ||
         (mine->device[PERF_SIDE_RECV] != params->device[PERF_SIDE_RECV]))) {
        snprintf(buf[0], sizeof(buf[0]), "%u,%u", mine->device[PERF_SIDE_SEND],
                 mine->device[PERF_SIDE_RECV]);
        snprintf(buf[1], sizeof(buf[1]), "%u,%u", params->device[PERF_SIDE_SEND],
                 params->device[PERF_SIDE_RECV]);
        return perf_session_match(run, "-a", buf[0], buf[1]);
    }
    if ((opts->given & PERF_GIVEN_ITERS) && (mine->iters != params->iters)) {
        snprintf(buf[0], sizeof(buf[0]), "%llu", (unsigned long long)mine->iters);
        snprintf(buf[1], sizeof(buf[1]), "%llu", (unsigned long long)params->iters);
        return perf_session_match(run, "-n", buf[0], buf[1]);
    }
    return perf_session_check_local(params, run);
}

/* First message each way: same program, same protocol version. */
static ucs_status_t perf_session_hello(perf_oob_t *oob, char *error, size_t max)
{
    perf_wire_out_t out = {0};
    perf_wire_in_t in;
    char name[PERF_NAME_MAX];
    ucs_status_t status;
    uint32_t version;
    size_t length;
    void *data;

    perf_wire_put_u32(&out, PERF_PROTOCOL_VERSION);
    perf_wire_put_str(&out, PERF_PROGRAM_NAME);
    status = out.failed ? UCS_ERR_NO_MEMORY :
             perf_oob_send(oob, PERF_OOB_HELLO, out.data, out.length);
    perf_wire_free(&out);
    if (status == UCS_OK) {
        status = perf_oob_recv_expect(oob, PERF_OOB_HELLO, &data, &length);
    }
    if (status != UCS_OK) {
        snprintf(error, max, "%s", oob->error);
        return status;
    }

    perf_wire_in_init(&in, data, length);
    version = perf_wire_get_u32(&in);
    perf_wire_get_str(&in, name, sizeof(name));
    free(data);
    if (in.failed || strcmp(name, PERF_PROGRAM_NAME) || (version != PERF_PROTOCOL_VERSION)) {
        snprintf(error, max, "%s runs an incompatible " PERF_PROGRAM_NAME " (protocol "
                 "version %u, this one speaks %u): use the same build on both sides",
                 oob->peer_name, version, PERF_PROTOCOL_VERSION);
        return UCS_ERR_UNSUPPORTED;
    }
    return UCS_OK;
}

static void perf_session_init_progress(const perf_options_t *opts, const perf_run_t *run,
                                       perf_progress_t *progress)
{
    memset(progress, 0, sizeof(*progress));
    progress->is_tty     = isatty(STDERR_FILENO);
    progress->enabled    = (opts->format == PERF_FORMAT_TABLE) && !opts->final_only &&
                           (progress->is_tty || opts->progress);
    /* The table is followed by upstream's rows, which need the intervals
     * (with -f too: its Final numbers' "average" is the last interval). */
    progress->record     = (opts->format == PERF_FORMAT_TABLE);
    progress->total      = run->params->iters;
    progress->msg_size   = run->params->msg_size;
    progress->msgs_per_iter = perf_test_msgs_per_iter(run->test);
    progress->percentile = run->params->percentile;
    snprintf(progress->label, sizeof(progress->label), "%s %zu B", run->test->name,
             run->params->msg_size);
}

/*
 * The GPU of this process's side is current before the driver sets up. A
 * failure is only printed: the driver still runs, so that both sides stay
 * in step, and its allocation on that GPU then fails with the reason.
 */
static void perf_session_select_device(perf_run_t *run, int side)
{
    char error[PERF_ERROR_MAX];

    if (perf_mem_select_device(run->mem[side], run->params->device[side], error,
                               sizeof(error)) != UCS_OK) {
        perf_print_error("%s", error);
    }
}

/*
 * The raw-copy reference of a row whose both buffers are GPU memory: the
 * same size, GPUs and window as the test, in this process, after the test
 * (so that it does not disturb it). A failure leaves the row without a
 * reference and says why on stderr; the measured row itself stands.
 */
static void perf_session_raw_reference(perf_run_t *run)
{
#ifdef PERF_HAVE_CUDA
    const perf_params_t *params = run->params;
    uint64_t iters              = params->iters;
    size_t size                 = (params->msg_size > 0) ? params->msg_size : 1;
    char error[PERF_ERROR_MAX]  = "";
    unsigned window;
    double seconds;

    if ((run->mem[PERF_SIDE_SEND]->mem_type == UCS_MEMORY_TYPE_HOST) ||
        (run->mem[PERF_SIDE_RECV]->mem_type == UCS_MEMORY_TYPE_HOST)) {
        return;
    }
    if (iters > PERF_RAW_MAX_ITERS) {
        iters = PERF_RAW_MAX_ITERS;
    }
    if (iters * size > PERF_RAW_MAX_BYTES) {
        iters = (PERF_RAW_MAX_BYTES / size > 0) ? PERF_RAW_MAX_BYTES / size : 1;
    }
    window = (run->test->pattern == PERF_PATTERN_PINGPONG) ? 1 :
             (params->window > 0) ? params->window : PERF_RAW_WINDOW;
    if ((perf_cuda_raw_copy(params->device[PERF_SIDE_SEND], params->device[PERF_SIDE_RECV],
                            size, iters, window, &seconds, error, sizeof(error)) == UCS_OK) &&
        (seconds > 0.0)) {
        run->result.raw_bandwidth = (double)size * (double)iters / seconds;
    } else {
        perf_print_error("%s %zu B: no raw-copy reference: %s", run->test->name, size,
                         error);
    }
#else
    (void)run;
#endif
}

/*
 * The client: every test case of the command line in turn, against the
 * server behind @a oob, or in this process when @a oob is NULL.
 */
static int perf_session_client(const perf_options_t *opts, perf_oob_t *oob)
{
    unsigned num_cases = (opts->num_sizes > 0) ? opts->num_sizes : 1;
    char error[PERF_ERROR_MAX + 32] = "";
    perf_progress_t progress;
    perf_params_t params;
    perf_output_t out;
    perf_wire_out_t wire;
    ucs_status_t status;
    perf_run_t run;
    unsigned i;
    size_t length;
    void *data;

    perf_output_begin(&out, opts, stdout);
    if ((oob != NULL) && (perf_session_hello(oob, error, sizeof(error)) != UCS_OK)) {
        goto out;
    }

    for (i = 0; i < num_cases; ++i) {
        perf_session_case_params(opts, i, &params);
        memset(&run, 0, sizeof(run));
        run.params = &params;
        run.role   = (oob != NULL) ? PERF_ROLE_INITIATOR : PERF_ROLE_BOTH;
        run.oob    = oob;
        if (perf_session_check_local(&params, &run) < 0) {
            snprintf(error, sizeof(error), "%s", run.error);
            break;
        }

        if (oob != NULL) {
            memset(&wire, 0, sizeof(wire));
            perf_params_pack(&params, &wire);
            status = wire.failed ? UCS_ERR_NO_MEMORY :
                     perf_oob_send(oob, PERF_OOB_PARAMS, wire.data, wire.length);
            perf_wire_free(&wire);
            if (status == UCS_OK) {
                /* recv_expect frees the data itself when it fails. */
                status = perf_oob_recv_expect(oob, PERF_OOB_ACCEPT, &data, &length);
                if (status == UCS_OK) {
                    free(data);
                }
            }
            if (status == UCS_ERR_REJECTED) {
                snprintf(error, sizeof(error), "the server refused the test: %s",
                         oob->error);
                break;
            } else if (status != UCS_OK) {
                snprintf(error, sizeof(error), "%s", oob->error);
                break;
            }
        }

        perf_session_init_progress(opts, &run, &progress);
        run.progress = &progress;
        perf_session_select_device(&run, PERF_SIDE_SEND);
        status = perf_driver_get(run.test->api)->run(&run);
        if (status != UCS_OK) {
            perf_progress_cleanup(&progress);
            snprintf(error, sizeof(error), "%s", run.error);
            break;
        }
        perf_session_raw_reference(&run);
        perf_output_result(&out, &run);
        perf_progress_cleanup(&progress);
    }

    if ((oob != NULL) && (oob->fd >= 0)) {
        /* Best effort: a server that already failed may be gone. */
        (void)perf_oob_send(oob, PERF_OOB_BYE, NULL, 0);
    }

out:
    perf_output_end(&out, (error[0] != '\0') ? error : NULL);
    if (error[0] != '\0') {
        perf_print_error("%s", error);
        return 1;
    }
    return 0;
}

/*
 * The server side of one connection: accept test cases until the client
 * says BYE. A test case that fails is reported to the client (which
 * prints it) and here unless @a quiet (the child of -L, whose errors the
 * client prints already).
 */
static int perf_session_serve(const perf_options_t *opts, perf_oob_t *oob, int quiet)
{
    char error[PERF_ERROR_MAX] = "";
    perf_params_t params;
    perf_oob_msg_t type;
    ucs_status_t status;
    perf_run_t run;
    int failed = 0;
    double timeout;
    size_t length;
    void *data;

    if (perf_session_hello(oob, error, sizeof(error)) != UCS_OK) {
        perf_print_error("%s", error);
        return 1;
    }

    for (;;) {
        /* A client whose run failed sends its next request at once, unless
         * its host or link is gone: then do not wait the whole --timeout. */
        timeout = oob->timeout;
        if (failed && ((timeout <= 0) || (timeout > 2 * PERF_OOB_ERROR_WAIT_S))) {
            oob->timeout = 2 * PERF_OOB_ERROR_WAIT_S;
        }
        status       = perf_oob_recv(oob, &type, &data, &length);
        oob->timeout = timeout;
        if (status != UCS_OK) {
            if (!quiet || (status != UCS_ERR_CONNECTION_RESET)) {
                perf_print_error("%s", oob->error);
            }
            return 1;
        }
        if (type == PERF_OOB_BYE) {
            free(data);
            return failed;
        } else if (type != PERF_OOB_PARAMS) {
            free(data);
            perf_print_error("protocol error: %s sent message type %d", oob->peer_name,
                             (int)type);
            return 1;
        }

        memset(&run, 0, sizeof(run));
        status = perf_params_unpack(data, length, &params, run.error, sizeof(run.error));
        free(data);
        if ((status != UCS_OK) || (perf_session_check_server(opts, &params, &run) < 0)) {
            if (!quiet) {
                perf_print_error("refused a test from %s: %s", oob->peer_name, run.error);
            }
            perf_oob_send_error(oob, run.error);
            failed = 1;
            continue;
        }
        if (perf_oob_send(oob, PERF_OOB_ACCEPT, NULL, 0) != UCS_OK) {
            perf_print_error("%s", oob->error);
            return 1;
        }

        if (!quiet && (opts->format == PERF_FORMAT_TABLE) && !opts->final_only) {
            fprintf(stderr, "Running %s, %zu bytes, %s%s%s, for %s\n", params.test_name,
                    params.msg_size,
                    (run.test->api == PERF_API_UCP) ? "ucp" : params.tl_name,
                    ((run.test->api != PERF_API_UCP) && (params.dev_name[0] != '\0')) ?
                    "/" : "",
                    (run.test->api == PERF_API_UCP) ? "" : params.dev_name,
                    oob->peer_name);
        }
        run.params = &params;
        run.role   = PERF_ROLE_RESPONDER;
        run.oob    = oob;
        perf_session_select_device(&run, PERF_SIDE_RECV);
        status     = perf_driver_get(run.test->api)->run(&run);
        if (status != UCS_OK) {
            if (!quiet) {
                perf_print_error("%s", run.error);
            }
            failed = 1;
        }
    }
}

static int perf_session_server(const perf_options_t *opts)
{
    char error[PERF_ERROR_MAX];
    perf_oob_t oob;
    int listen_fd, rc;

    perf_session_pin(opts->cpus, opts->num_cpus, "server");
    if (perf_oob_listen(opts->port, opts->ipv6, &listen_fd, error, sizeof(error)) !=
        UCS_OK) {
        perf_print_error("%s", error);
        return 1;
    }
    fprintf(stderr, "Waiting for connection on port %u...\n", opts->port);
    if (perf_oob_accept(listen_fd, opts->accept_timeout, opts->params.timeout, &oob) !=
        UCS_OK) {
        perf_print_error("%s", oob.error);
        close(listen_fd);
        return 1;
    }
    close(listen_fd);
    fprintf(stderr, "Accepted connection from %s\n", oob.peer_name);

    rc = perf_session_serve(opts, &oob, 0);
    perf_oob_close(&oob);
    return rc;
}

static int perf_session_connect(const perf_options_t *opts)
{
    perf_oob_t oob;
    int rc;

    perf_session_pin(opts->cpus, opts->num_cpus, "client");
    if (perf_oob_connect(opts->server_host, opts->port, opts->ipv6, opts->connect_retry,
                         opts->params.timeout, &oob) != UCS_OK) {
        perf_print_error("%s", oob.error);
        return 1;
    }
    rc = perf_session_client(opts, &oob);
    perf_oob_close(&oob);
    return rc;
}

/* Whether -L must become -l because the transport cannot cross processes. */
static int perf_session_single_process(const perf_options_t *opts)
{
    const perf_test_desc_t *test = perf_test_find(opts->params.test_name);
    const perf_driver_t *driver;

    if (test == NULL) {
        return 0;
    }
    driver = perf_driver_get(test->api);
    return (driver->unavailable() == NULL) && (driver->single_process != NULL) &&
           driver->single_process(&opts->params);
}

/*
 * -L: a server child on one end of a socketpair, the client here on the
 * other. The socketpair exists before the fork, so there is no port to
 * pick, no race with a listener, and no network traffic at all.
 */
static int perf_session_local(const perf_options_t *opts)
{
    perf_oob_t oob;
    int sv[2], rc, wstatus;
    char name[64];
    pid_t pid;

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        perf_print_error("socketpair() failed: %s", strerror(errno));
        return 1;
    }

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        perf_print_error("fork() failed: %s", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        return 1;
    }

    if (pid == 0) {
        close(sv[0]);
        if (opts->num_cpus > 0) {
            perf_session_pin(&opts->cpus[(opts->num_cpus > 1) ? 1 : 0], 1, "server");
        }
        perf_oob_init_fd(&oob, sv[1], opts->params.timeout, "the client");
        rc = perf_session_serve(opts, &oob, 1);
        perf_oob_close(&oob);
        fflush(stdout);
        fflush(stderr);
        _exit(rc);
    }

    close(sv[1]);
    if (opts->num_cpus > 0) {
        perf_session_pin(&opts->cpus[0], 1, "client");
    }
    snprintf(name, sizeof(name), "the server (child process %d)", (int)pid);
    perf_oob_init_fd(&oob, sv[0], opts->params.timeout, name);
    rc = perf_session_client(opts, &oob);
    perf_oob_close(&oob);

    while (waitpid(pid, &wstatus, 0) < 0) {
        if (errno != EINTR) {
            perf_print_error("waitpid() failed: %s", strerror(errno));
            return 1;
        }
    }
    if (WIFSIGNALED(wstatus)) {
        perf_print_error("the server child was killed by signal %d (%s)",
                         WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)));
        return 1;
    }
    return (rc != 0) ? rc : (WIFEXITED(wstatus) ? (WEXITSTATUS(wstatus) != 0) : 1);
}

int perf_session_run(const perf_options_t *opts)
{
    switch (opts->mode) {
    case PERF_MODE_SERVER:
        return perf_session_server(opts);
    case PERF_MODE_CLIENT:
        return perf_session_connect(opts);
    case PERF_MODE_LOCAL:
        if (perf_session_single_process(opts)) {
            if (!opts->final_only && (opts->format == PERF_FORMAT_TABLE)) {
                fprintf(stderr, "%s works inside one process only: running both sides "
                        "in this process (as -l)\n", opts->params.tl_name);
            }
            perf_session_pin(opts->cpus, opts->num_cpus, PERF_PROGRAM_NAME);
            return perf_session_client(opts, NULL);
        }
        return perf_session_local(opts);
    case PERF_MODE_LOOPBACK:
        perf_session_pin(opts->cpus, opts->num_cpus, PERF_PROGRAM_NAME);
        return perf_session_client(opts, NULL);
    }
    return 1;
}

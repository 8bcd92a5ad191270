#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "perf_options.h"
#include "perf_memory.h"
#include "perf_tests.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define PERF_DEFAULT_ITERS      1000000 /* upstream's defaults */
#define PERF_DEFAULT_WARMUP     10000
#define PERF_DEFAULT_WINDOW     127
#define PERF_DEFAULT_PERCENTILE 50.0
#define PERF_DEFAULT_TIMEOUT    60.0

/* Long-only options. */
enum {
    PERF_OPT_CSV = 256,
    PERF_OPT_JSON,
    PERF_OPT_SIZES,
    PERF_OPT_TIMEOUT,
    PERF_OPT_CONNECT_RETRY,
    PERF_OPT_ACCEPT_TIMEOUT,
    PERF_OPT_PROGRESS,
    PERF_OPT_CUDA_API
};

static const struct option perf_long_options[] = {
    {"local",          no_argument,       NULL, 'L'},
    {"loopback",       no_argument,       NULL, 'l'},
    {"validate",       no_argument,       NULL, 'V'},
    {"help",           no_argument,       NULL, 'h'},
    {"csv",            no_argument,       NULL, PERF_OPT_CSV},
    {"json",           no_argument,       NULL, PERF_OPT_JSON},
    {"sizes",          required_argument, NULL, PERF_OPT_SIZES},
    {"timeout",        required_argument, NULL, PERF_OPT_TIMEOUT},
    {"connect-retry",  required_argument, NULL, PERF_OPT_CONNECT_RETRY},
    {"accept-timeout", required_argument, NULL, PERF_OPT_ACCEPT_TIMEOUT},
    {"progress",       no_argument,       NULL, PERF_OPT_PROGRESS},
    {"cuda-api",       required_argument, NULL, PERF_OPT_CUDA_API},
    {NULL, 0, NULL, 0}
};

/*
 * Letters upstream ucx_perftest has and this one does not implement yet:
 * they are refused by name rather than as unknown, so that a user running
 * an upstream command line learns which part is missing.
 */
static const char perf_upstream_only[] = "iBbNATMCUrEez";

void perf_options_usage(FILE *stream)
{
    fprintf(stream,
"  Usage: " PERF_PROGRAM_NAME " [ server-hostname ] [ options ]\n"
"\n"
"  Without a host name the program is a server: it waits for one client and\n"
"  runs the tests the client asks for. With a host name it is that client.\n"
"  -L runs both in one command (a server child and the client, on this machine).\n"
"\n"
"  Common options:\n"
"     -t <test>      test to run:\n");
    perf_tests_print_list(stream);
    fprintf(stream,
"     -s <size>      list of scatter-gather sizes for single message (8),\n"
"                    e.g. \"-s 16,48,8192\"; suffixes K, M, G are accepted\n"
"     --sizes <list> one test case per size, e.g. \"--sizes 8,1K,64K\" or a\n"
"                    doubling range \"--sizes 8:1M\"\n"
"     -m <send mem type>[,<recv mem type>]\n"
"                    memory type of message for sender and receiver (host):\n");
    perf_mem_print_list(stream);
    fprintf(stream,
"     -a <dev>[,<dev>] GPU of the sender's and the receiver's buffers (0);\n"
"                    e.g. -a 0,1 moves GPU0 -> GPU1\n"
"     --cuda-api <api> how the kinds with a CUDA runtime call allocate:\n"
"                    auto (cudart when it works here, else the driver),\n"
"                    runtime (cudaMalloc, cudaMallocAsync, ...) or driver\n"
"     -n <iters>     number of iterations to run (%d)\n"
"     -w <iters>     number of warm-up iterations (%d; at most a tenth of -n)\n"
"     -c <cpulist>   set affinity to this CPU list (off); with -L the client\n"
"                    takes the first CPU and the server the second\n"
"     -O <count>     maximal number of uncompleted outstanding sends (0: no limit)\n"
"     -l             use loopback connection: the process communicates with\n"
"                    itself, so passing a server hostname is not allowed\n"
"     -L, --local    start a server child on this machine and run the client\n"
"                    against it over a socketpair (the self transport, which\n"
"                    cannot cross processes, runs as -l)\n"
"     -o             do not progress the responder in one-sided tests\n"
"     -V, --validate check the data of every message received\n"
"     -R <rank>      percentile rank of the typical latency (%.1f)\n"
"     -p <port>      TCP port to use for data exchange (%d)\n"
"     -6             use IPv6 for the data exchange\n"
"     --timeout <s>  longest wait for the peer or for one operation (%.0f)\n"
"     --connect-retry <s>  client: retry a refused connection this long (0)\n"
"     --accept-timeout <s> server: give up when no client came (wait forever)\n"
"     -h             show this help message\n"
"\n"
"  Output format:\n"
"     -f             print only final numbers (no header, no progress line;\n"
"                    upstream's rows: only its unlabelled final row)\n"
"     --progress     print the progress line on stderr even when it is no tty\n"
"     -v, --csv      print CSV-formatted output\n"
"     --json         print JSON output\n"
"     -I             print extra information about the transport used\n"
"  After the table come upstream ucx_perftest's rows for the same runs, in\n"
"  its columns and units: a \"[thread 0]\" row per second of a run and a\n"
"  \"Final:\" row (iterations, typical/average/overall latency, average/\n"
"  overall MB/s and msg/s; average = last second, overall = whole run).\n"
"  GPU rows also show the raw-copy reference (cuMemcpyDtoDAsync between\n"
"  the same GPUs, same size and window, measured in the same run) and the\n"
"  bandwidth as a percentage of it; \"protocol\" is what libucp chose.\n"
"\n"
"  UCT only:\n"
"     -d <device>    device to use for testing (first device of the transport)\n"
"     -x <tl>        transport to use for testing (see ucx_info -d)\n"
"     -D <layout>    data layout for sender side (auto: short if it fits, then\n"
"                    bcopy, then zcopy):\n"
"                        short    - short messages (not for get)\n"
"                        bcopy    - copy-out\n"
"                        zcopy    - zero-copy\n"
"     -W <count>     flow control window size, for active messages (%d; 0: off)\n"
"\n"
"  UCP active messages only (ucp_am_lat, ucp_am_bw):\n"
"     -H <size>      user header bytes of every message, besides its size (0);\n"
"                    at most what the worker reports (ucx_info -w)\n"
"\n"
"  Sizes: a message of an active-message test carries an 8-byte header\n"
"  (the sequence number), included in its size, so it must be at least 8.\n"
"  Bandwidth: MB/s = 2^20 bytes per second, GB/s = 2^30, as upstream prints.\n",
            PERF_DEFAULT_ITERS, PERF_DEFAULT_WARMUP, PERF_DEFAULT_PERCENTILE,
            PERF_DEFAULT_PORT, PERF_DEFAULT_TIMEOUT, PERF_DEFAULT_WINDOW);
}

int perf_options_parse_size(const char *str, size_t *size_p)
{
    unsigned long long value;
    char *end;

    if ((*str < '0') || (*str > '9')) {
        return -1;
    }
    errno = 0;
    value = strtoull(str, &end, 10);
    if (errno != 0) {
        return -1;
    }
    switch (*end) {
    case 'k': case 'K': value <<= 10; ++end; break;
    case 'm': case 'M': value <<= 20; ++end; break;
    case 'g': case 'G': value <<= 30; ++end; break;
    default: break;
    }
    if ((*end == 'b') || (*end == 'B')) {
        ++end;
    }
    if (*end != '\0') {
        return -1;
    }
    *size_p = (size_t)value;
    return 0;
}

static int perf_parse_u64(const char *str, uint64_t *value_p)
{
    unsigned long long value;
    char *end;

    if ((*str < '0') || (*str > '9')) {
        return -1;
    }
    errno = 0;
    value = strtoull(str, &end, 10);
    if ((errno != 0) || (*end != '\0')) {
        return -1;
    }
    *value_p = value;
    return 0;
}

static int perf_parse_unsigned(const char *str, unsigned max, unsigned *value_p)
{
    uint64_t value;

    if ((perf_parse_u64(str, &value) < 0) || (value > max)) {
        return -1;
    }
    *value_p = (unsigned)value;
    return 0;
}

static int perf_parse_seconds(const char *str, double *value_p)
{
    char *end;
    double value;

    errno = 0;
    value = strtod(str, &end);
    if ((errno != 0) || (*end != '\0') || (end == str) || !(value >= 0.0)) {
        return -1;
    }
    *value_p = value;
    return 0;
}

/* "16,48,8192": elements of one message. */
static int perf_parse_sg(const char *str, perf_params_t *params)
{
    char buf[512], *tok, *save = NULL;

    snprintf(buf, sizeof(buf), "%s", str);
    params->sg_count = 0;
    params->msg_size = 0;
    for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        if (params->sg_count == PERF_MAX_SG) {
            perf_print_error("-s: at most %d scatter-gather elements", PERF_MAX_SG);
            return -1;
        }
        if (perf_options_parse_size(tok, &params->sg[params->sg_count]) < 0) {
            perf_print_error("-s: '%s' is not a size", tok);
            return -1;
        }
        params->msg_size += params->sg[params->sg_count++];
    }
    if (params->sg_count == 0) {
        perf_print_error("-s: empty size list");
        return -1;
    }
    return 0;
}

/* "8,1K,64K" or "8:1M" (doubling) or a mix: one test case per size. */
static int perf_parse_sizes(const char *str, perf_options_t *opts)
{
    char buf[512], *tok, *save = NULL, *colon;
    size_t lo, hi, size;

    snprintf(buf, sizeof(buf), "%s", str);
    opts->num_sizes = 0;
    for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        colon = strchr(tok, ':');
        if (colon != NULL) {
            *colon = '\0';
            if ((perf_options_parse_size(tok, &lo) < 0) ||
                (perf_options_parse_size(colon + 1, &hi) < 0) || (lo == 0) || (lo > hi)) {
                perf_print_error("--sizes: '%s:%s' is not a range MIN:MAX with "
                                 "0 < MIN <= MAX", tok, colon + 1);
                return -1;
            }
        } else {
            if (perf_options_parse_size(tok, &lo) < 0) {
                perf_print_error("--sizes: '%s' is not a size", tok);
                return -1;
            }
            hi = lo;
        }
        for (size = lo; size <= hi; size = (size == hi) ? hi + 1 :
                                           ((size * 2 > hi) ? hi : size * 2)) {
            if (opts->num_sizes == PERF_MAX_SIZES) {
                perf_print_error("--sizes: at most %d sizes", PERF_MAX_SIZES);
                return -1;
            }
            opts->sizes[opts->num_sizes++] = size;
        }
    }
    if (opts->num_sizes == 0) {
        perf_print_error("--sizes: empty list");
        return -1;
    }
    return 0;
}

/* "0,2" or "0-3": CPUs for -c. */
static int perf_parse_cpus(const char *str, perf_options_t *opts)
{
    char buf[256], *tok, *save = NULL, *dash;
    unsigned lo, hi, cpu;

    snprintf(buf, sizeof(buf), "%s", str);
    opts->num_cpus = 0;
    for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        dash = strchr(tok, '-');
        if (dash != NULL) {
            *dash = '\0';
        }
        if ((perf_parse_unsigned(tok, 4095, &lo) < 0) ||
            ((dash != NULL) && (perf_parse_unsigned(dash + 1, 4095, &hi) < 0))) {
            perf_print_error("-c: '%s' is not a CPU list such as 0,1 or 0-3", str);
            return -1;
        }
        if (dash == NULL) {
            hi = lo;
        }
        for (cpu = lo; cpu <= hi; ++cpu) {
            if (opts->num_cpus == PERF_MAX_CPUS) {
                perf_print_error("-c: at most %d CPUs", PERF_MAX_CPUS);
                return -1;
            }
            opts->cpus[opts->num_cpus++] = (int)cpu;
        }
    }
    if (opts->num_cpus == 0) {
        perf_print_error("-c: empty CPU list");
        return -1;
    }
    return 0;
}

static int perf_parse_name(const char *opt, const char *str, char *dst)
{
    if (strlen(str) >= PERF_NAME_MAX) {
        perf_print_error("%s: '%s' is too long (at most %d characters)", opt, str,
                         PERF_NAME_MAX - 1);
        return -1;
    }
    strcpy(dst, str);
    return 0;
}

static int perf_parse_mem(const char *str, perf_params_t *params)
{
    char buf[2 * PERF_NAME_MAX + 2], *comma;
    const char *names[PERF_SIDE_LAST];
    int side;

    snprintf(buf, sizeof(buf), "%s", str);
    comma                  = strchr(buf, ',');
    names[PERF_SIDE_SEND]  = buf;
    names[PERF_SIDE_RECV]  = buf;
    if (comma != NULL) {
        *comma                = '\0';
        names[PERF_SIDE_RECV] = comma + 1;
    }
    for (side = 0; side < PERF_SIDE_LAST; ++side) {
        if (perf_mem_kind_find(names[side]) == NULL) {
            perf_print_error("-m: unknown memory type '%s' (see -h for the list)",
                             names[side]);
            return -1;
        }
        if (perf_parse_name("-m", names[side], params->mem_kind[side]) < 0) {
            return -1;
        }
    }
    return 0;
}

/* "0" or "0,1": GPU of the sender's and of the receiver's buffers. */
static int perf_parse_devices(const char *str, perf_params_t *params)
{
    char buf[64], *comma;
    unsigned dev[PERF_SIDE_LAST];

    snprintf(buf, sizeof(buf), "%s", str);
    comma = strchr(buf, ',');
    if (comma != NULL) {
        *comma = '\0';
    }
    if ((perf_parse_unsigned(buf, 1023, &dev[PERF_SIDE_SEND]) < 0) ||
        (perf_parse_unsigned((comma != NULL) ? comma + 1 : buf, 1023,
                             &dev[PERF_SIDE_RECV]) < 0)) {
        perf_print_error("-a: '%s' is not a GPU index or a pair such as 0,1", str);
        return -1;
    }
    params->device[PERF_SIDE_SEND] = dev[PERF_SIDE_SEND];
    params->device[PERF_SIDE_RECV] = dev[PERF_SIDE_RECV];
    return 0;
}

static int perf_parse_cuda_api(const char *str, perf_options_t *opts)
{
    static const char *const names[] = {"auto", "runtime", "driver"};
    int i;

    for (i = 0; i < 3; ++i) {
        if (!strcmp(str, names[i])) {
            opts->cuda_api = i;
            return 0;
        }
    }
    perf_print_error("--cuda-api: '%s' is not auto, runtime or driver", str);
    return -1;
}

static int perf_parse_layout(const char *str, perf_params_t *params)
{
    int i;

    for (i = 0; i < PERF_LAYOUT_LAST; ++i) {
        if (!strcmp(str, perf_layout_names[i])) {
            params->layout = (perf_layout_t)i;
            return 0;
        }
    }
    perf_print_error("-D: unknown data layout '%s' (auto, short, bcopy or zcopy)", str);
    return -1;
}

static void perf_options_defaults(perf_options_t *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->params.layout      = PERF_LAYOUT_AUTO;
    opts->params.sg_count    = 1;
    opts->params.sg[0]       = 8;
    opts->params.msg_size    = 8;
    opts->params.iters       = PERF_DEFAULT_ITERS;
    opts->params.warmup      = PERF_DEFAULT_WARMUP;
    opts->params.window      = PERF_DEFAULT_WINDOW;
    opts->params.percentile  = PERF_DEFAULT_PERCENTILE;
    opts->params.timeout     = PERF_DEFAULT_TIMEOUT;
    strcpy(opts->params.mem_kind[PERF_SIDE_SEND], "host");
    strcpy(opts->params.mem_kind[PERF_SIDE_RECV], "host");
    opts->mode               = PERF_MODE_SERVER;
    opts->port               = PERF_DEFAULT_PORT;
    opts->format             = PERF_FORMAT_TABLE;
    opts->accept_timeout     = 0;
}

/* Checks that need the whole command line. */
static int perf_options_check(perf_options_t *opts, int loopback, int local)
{
    const perf_test_desc_t *test;

    if (loopback && local) {
        perf_print_error("-l (one process) and -L (two processes) exclude each other");
        return -1;
    }
    if ((opts->server_host != NULL) && (loopback || local)) {
        perf_print_error("a server hostname cannot be combined with %s",
                         loopback ? "-l" : "-L");
        return -1;
    }
    opts->mode = loopback ? PERF_MODE_LOOPBACK :
                 local ? PERF_MODE_LOCAL :
                 (opts->server_host != NULL) ? PERF_MODE_CLIENT : PERF_MODE_SERVER;

    if ((opts->mode != PERF_MODE_SERVER) && !(opts->given & PERF_GIVEN_TEST)) {
        perf_print_error("missing test name: give one with -t");
        return -1;
    }
    if (opts->given & PERF_GIVEN_TEST) {
        test = perf_test_find(opts->params.test_name);
        if (test == NULL) {
            perf_print_error("unknown test '%s' (-h lists the tests)",
                             opts->params.test_name);
            return -1;
        }
        /* Store the canonical name, so that an alias matches on the server. */
        strcpy(opts->params.test_name, test->name);
    }
    if ((opts->num_sizes > 0) && (opts->params.sg_count > 1)) {
        perf_print_error("--sizes cannot be combined with a scatter-gather list (-s)");
        return -1;
    }
    if ((opts->params.flags & PERF_FLAG_VALIDATE) &&
        (opts->params.flags & PERF_FLAG_NO_RESP_PROGRESS)) {
        perf_print_error("-V cannot be combined with -o: a responder that does not "
                         "progress cannot tell when to check its buffer");
        return -1;
    }
    if (opts->params.iters == 0) {
        perf_print_error("-n: the number of iterations must be at least 1");
        return -1;
    }
    /* Warm-up is at most a tenth of the measured run (rounded up), as in
     * upstream's tool: "-n 20 -s 64M" must not first move 10000 messages. */
    opts->params.warmup = (opts->params.warmup < (opts->params.iters + 9) / 10) ?
                          opts->params.warmup : (opts->params.iters + 9) / 10;
    if (!(opts->params.percentile > 0.0) || (opts->params.percentile > 100.0)) {
        perf_print_error("-R: the percentile rank must be in (0, 100]");
        return -1;
    }
    if (!(opts->params.timeout > 0.0)) {
        perf_print_error("--timeout: must be more than 0 seconds");
        return -1;
    }
    return 0;
}

perf_parse_result_t perf_options_parse(int argc, char **argv, perf_options_t *opts)
{
    int loopback = 0, local = 0, c;
    double value;

    perf_options_defaults(opts);
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":t:s:n:w:m:a:c:O:W:R:p:d:x:D:lLoV6hfvI"
                            "i:Bb:NA:H:T:M:CUr:E:ez", perf_long_options, NULL)) != -1) {
        switch (c) {
        case 't':
            if (perf_parse_name("-t", optarg, opts->params.test_name) < 0) {
                goto err;
            }
            opts->given |= PERF_GIVEN_TEST;
            break;
        case 's':
            if (perf_parse_sg(optarg, &opts->params) < 0) {
                goto err;
            }
            opts->given |= PERF_GIVEN_SIZE;
            break;
        case PERF_OPT_SIZES:
            if (perf_parse_sizes(optarg, opts) < 0) {
                goto err;
            }
            opts->given |= PERF_GIVEN_SIZE;
            break;
        case 'n':
            if (perf_parse_u64(optarg, &opts->params.iters) < 0) {
                perf_print_error("-n: '%s' is not a number of iterations", optarg);
                goto err;
            }
            opts->given |= PERF_GIVEN_ITERS;
            break;
        case 'w':
            if (perf_parse_u64(optarg, &opts->params.warmup) < 0) {
                perf_print_error("-w: '%s' is not a number of iterations", optarg);
                goto err;
            }
            break;
        case 'm':
            if (perf_parse_mem(optarg, &opts->params) < 0) {
                goto err;
            }
            opts->given |= PERF_GIVEN_MEM;
            break;
        case 'a':
            if (perf_parse_devices(optarg, &opts->params) < 0) {
                goto err;
            }
            opts->given |= PERF_GIVEN_DEVICE;
            break;
        case PERF_OPT_CUDA_API:
            if (perf_parse_cuda_api(optarg, opts) < 0) {
                goto err;
            }
            break;
        case PERF_OPT_PROGRESS: opts->progress = 1; break;
        case 'c':
            if (perf_parse_cpus(optarg, opts) < 0) {
                goto err;
            }
            break;
        case 'O':
            if (perf_parse_unsigned(optarg, 1u << 20, &opts->params.outstanding) < 0) {
                perf_print_error("-O: '%s' is not a count", optarg);
                goto err;
            }
            break;
        case 'W':
            if (perf_parse_unsigned(optarg, 1u << 20, &opts->params.window) < 0) {
                perf_print_error("-W: '%s' is not a window size", optarg);
                goto err;
            }
            break;
        case 'H':
            if (perf_parse_unsigned(optarg, 1u << 16, &opts->params.am_header) < 0) {
                perf_print_error("-H: '%s' is not a header size (0..65536 bytes)", optarg);
                goto err;
            }
            break;
        case 'R':
            if (perf_parse_seconds(optarg, &opts->params.percentile) < 0) {
                perf_print_error("-R: '%s' is not a percentile rank", optarg);
                goto err;
            }
            break;
        case 'p': {
            unsigned port;
            if ((perf_parse_unsigned(optarg, 65535, &port) < 0) || (port == 0)) {
                perf_print_error("-p: '%s' is not a TCP port", optarg);
                goto err;
            }
            opts->port = (uint16_t)port;
            break;
        }
        case 'd':
            if (perf_parse_name("-d", optarg, opts->params.dev_name) < 0) {
                goto err;
            }
            opts->given |= PERF_GIVEN_DEV;
            break;
        case 'x':
            if (perf_parse_name("-x", optarg, opts->params.tl_name) < 0) {
                goto err;
            }
            opts->given |= PERF_GIVEN_TL;
            break;
        case 'D':
            if (perf_parse_layout(optarg, &opts->params) < 0) {
                goto err;
            }
            opts->given |= PERF_GIVEN_LAYOUT;
            break;
        case 'l': loopback = 1; break;
        case 'L': local = 1; break;
        case 'o': opts->params.flags |= PERF_FLAG_NO_RESP_PROGRESS; break;
        case 'V': opts->params.flags |= PERF_FLAG_VALIDATE; break;
        case '6': opts->ipv6 = 1; break;
        case 'f': opts->final_only = 1; break;
        case 'v':
        case PERF_OPT_CSV: opts->format = PERF_FORMAT_CSV; break;
        case PERF_OPT_JSON: opts->format = PERF_FORMAT_JSON; break;
        case 'I': opts->extra_info = 1; break;
        case PERF_OPT_TIMEOUT:
            if ((perf_parse_seconds(optarg, &opts->params.timeout) < 0) ||
                (opts->params.timeout <= 0)) {
                perf_print_error("--timeout: '%s' is not a number of seconds", optarg);
                goto err;
            }
            break;
        case PERF_OPT_CONNECT_RETRY:
            if (perf_parse_seconds(optarg, &opts->connect_retry) < 0) {
                perf_print_error("--connect-retry: '%s' is not a number of seconds",
                                 optarg);
                goto err;
            }
            break;
        case PERF_OPT_ACCEPT_TIMEOUT:
            if (perf_parse_seconds(optarg, &value) < 0) {
                perf_print_error("--accept-timeout: '%s' is not a number of seconds",
                                 optarg);
                goto err;
            }
            opts->accept_timeout = value;
            break;
        case 'h':
            perf_options_usage(stdout);
            return PERF_PARSE_EXIT;
        case ':':
            perf_print_error("option %s needs an argument",
                             (optopt != 0) ? (char[]){'-', (char)optopt, '\0'} :
                                             argv[optind - 1]);
            goto err;
        default:
            if ((c != '?') && (strchr(perf_upstream_only, c) != NULL)) {
                perf_print_error("option -%c of upstream ucx_perftest is not "
                                 "implemented in this one", c);
            } else if ((optopt != 0) && (optopt < 256)) {
                perf_print_error("unknown option -%c", optopt);
            } else {
                perf_print_error("unknown option %s", argv[optind - 1]);
            }
            goto err;
        }
    }

    if (optind < argc) {
        opts->server_host = argv[optind++];
    }
    if (optind < argc) {
        perf_print_error("unexpected argument '%s' (only one server hostname)",
                         argv[optind]);
        goto err;
    }
    if (perf_options_check(opts, loopback, local) < 0) {
        goto err;
    }
    return PERF_PARSE_RUN;

err:
    /* The short form, so that the message above stays on screen. */
    fprintf(stderr, "  Usage: " PERF_PROGRAM_NAME " [ server-hostname ] [ options ]\n"
                    "  Run '" PERF_PROGRAM_NAME " -h' for the list of options.\n");
    return PERF_PARSE_ERROR;
}

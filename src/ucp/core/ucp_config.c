#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucp/core/ucp_config.h>
#include <ucp/api/ucp.h>
#include <ucs/debug/log.h>
#include <uct/uct_init.h>

#include <stddef.h>
#include <stdlib.h>

const char *ucp_rndv_scheme_names[] = {
    [UCP_RNDV_SCHEME_AUTO]      = "auto",
    [UCP_RNDV_SCHEME_GET_ZCOPY] = "get_zcopy",
    [UCP_RNDV_SCHEME_PUT_ZCOPY] = "put_zcopy",
    [UCP_RNDV_SCHEME_PIPELINE]  = "pipeline",
    [UCP_RNDV_SCHEME_LAST]      = NULL
};

static const char *ucp_rndv_frag_type_names[] = {
    [UCP_RNDV_FRAG_TYPE_AUTO] = "auto",
    [UCP_RNDV_FRAG_TYPE_HOST] = "host",
    [UCP_RNDV_FRAG_TYPE_CUDA] = "cuda",
    [UCP_RNDV_FRAG_TYPE_LAST] = NULL
};

static const ucs_config_field_t ucp_config_fields[] = {
    {"TLS", "all",
     "Transports a context may use: 'all', a comma-separated list of\n"
     "transport names, or '^' and the transports to exclude.",
     offsetof(ucp_config_t, tls), UCS_CONFIG_TYPE_ALLOW_LIST},

    {"NET_DEVICES", "all",
     "Network devices a context may use ('all', names such as eth0,lo, or '^'\n"
     "and the names to exclude); the names are those ucx_info -d prints.",
     offsetof(ucp_config_t, devices[UCT_DEVICE_TYPE_NET]), UCS_CONFIG_TYPE_ALLOW_LIST},

    {"SHM_DEVICES", "all", "Shared-memory devices a context may use, as UCX_NET_DEVICES.",
     offsetof(ucp_config_t, devices[UCT_DEVICE_TYPE_SHM]), UCS_CONFIG_TYPE_ALLOW_LIST},

    {"ACC_DEVICES", "all",
     "Accelerator (GPU) devices a context may use, as UCX_NET_DEVICES.",
     offsetof(ucp_config_t, devices[UCT_DEVICE_TYPE_ACC]), UCS_CONFIG_TYPE_ALLOW_LIST},

    {"SELF_DEVICES", "all", "Loopback devices a context may use, as UCX_NET_DEVICES.",
     offsetof(ucp_config_t, devices[UCT_DEVICE_TYPE_SELF]), UCS_CONFIG_TYPE_ALLOW_LIST},

    {"PROTO_INFO", "n",
     "Print, for every new endpoint configuration, which protocol serves\n"
     "which message size and memory type.",
     offsetof(ucp_config_t, proto_info), UCS_CONFIG_TYPE_BOOL},

    {"RNDV_THRESH", "auto",
     "Messages of this size and larger use the rendezvous protocol. 'auto'\n"
     "picks per buffer: device memory the peer can read through cuda_ipc at\n"
     "any size, other device memory from 4K, host memory from 256K when the\n"
     "peer has a cuda_ipc lane (else host messages stay eager).",
     offsetof(ucp_config_t, rndv_thresh),
     UCS_CONFIG_TYPE_SIZE_EX(UCS_CONFIG_PARSE_AUTO | UCS_CONFIG_PARSE_INF)},

    {"RNDV_SCHEME", "auto",
     "Rendezvous protocol: auto (zero-copy get when the sender's buffer is\n"
     "exportable, else put when the receiver's is, else pipeline), get_zcopy,\n"
     "put_zcopy or pipeline. A forced scheme that cannot serve a pair of\n"
     "buffers falls back to the next one (logged at debug level).",
     offsetof(ucp_config_t, rndv_scheme), UCS_CONFIG_TYPE_ENUM(ucp_rndv_scheme_names)},

    {"RNDV_SAME_GPU_ONE_COPIER", "y",
     "When both buffers of a rendezvous are exportable and on the same GPU,\n"
     "let only the process with the lower worker uuid issue the copy (the\n"
     "receiver with the higher uuid asks for a put instead of getting). Two\n"
     "processes issuing copies in turn on one GPU make it switch contexts\n"
     "every turn (~140 us each on an H200). Applies to UCX_RNDV_SCHEME=auto.",
     offsetof(ucp_config_t, rndv_one_copier), UCS_CONFIG_TYPE_BOOL},

    {"RNDV_SAME_GPU_WHOLE_PIECES", "y",
     "When neither buffer of a rendezvous can be exported and both are on the\n"
     "same GPU, the device-fragment pipeline stages a message in pieces as\n"
     "large as a fragment (n: cut messages smaller than the pipeline depth\n"
     "of fragments into depth pieces, as across GPUs). On one GPU the two\n"
     "processes' copies cannot overlap, and every switch between them costs\n"
     "~140 us on an H200: whole pieces let more messages share the fragment\n"
     "pool with fewer switches each. The receiver's setting decides (it tells\n"
     "the sender in its reply).",
     offsetof(ucp_config_t, rndv_whole_pieces), UCS_CONFIG_TYPE_BOOL},

    {"RNDV_SPLIT_ONLY_ALONE", "y",
     "Cut a message smaller than the pipeline depth of fragments into depth\n"
     "pieces only while no other message holds fragments of its GPU or waits\n"
     "for a fragment. A lone message overlaps the sender's copy of one piece\n"
     "with the receiver's read of the previous; with several messages in\n"
     "flight they overlap each other, and every extra piece costs both\n"
     "processes a copy to issue (~5 us each) and a fragment. n: always cut.",
     offsetof(ucp_config_t, rndv_split_alone), UCS_CONFIG_TYPE_BOOL},

    {"RNDV_AM_STAGE_OVERLAP", "y",
     "Device data sent as active messages (over tcp, or to a peer without\n"
     "device fragments) is staged through host fragments: with y a message\n"
     "takes two of them, so that the copy between GPU and host of one piece\n"
     "runs while the previous piece is on the network, on both sides. n: one\n"
     "fragment, copy and send in turn.",
     offsetof(ucp_config_t, rndv_stage_overlap), UCS_CONFIG_TYPE_BOOL},

    {"RNDV_PIPELINE_HOST_GET", "y",
     "Device data towards a peer reached over a host lane only (tcp between\n"
     "hosts): the sender copies it into host fragments and the receiver reads\n"
     "them as it reads host buffers (zero-copy on both sides, split over the\n"
     "rails), into its buffer or into host fragments of its own that it\n"
     "copies to its device. Host data into a device buffer is read the same\n"
     "way. n: data messages through host fragments (UCX_RNDV_AM_STAGE_OVERLAP),\n"
     "one more copy by the CPU on each side. Both sides must allow it.",
     offsetof(ucp_config_t, rndv_staged_get), UCS_CONFIG_TYPE_BOOL},

    {"RNDV_PIPELINE_HOST_GET_RAMP", "0",
     "Pieces at the ends of a pipeline read through host fragments\n"
     "(UCX_RNDV_PIPELINE_HOST_GET): the first piece has this size, each next\n"
     "one doubles up to a fragment, and towards the end they halve back to\n"
     "it. The copy out of the sender's GPU before the first read and the copy\n"
     "into the receiver's after the last overlap nothing; small end pieces\n"
     "keep them short, while the middle keeps whole fragments (e.g. 64K).\n"
     "0: every piece a whole fragment. The side that cuts the pieces decides\n"
     "(the sender for device data, the receiver when it reads a host buffer).\n"
     "Off by default: on an H100 host 64K and 128K lost at 1 MiB for every\n"
     "allocator kind (docs/performance.md).",
     offsetof(ucp_config_t, rndv_host_get_ramp), UCS_CONFIG_TYPE_SIZE},

    {"RNDV_SAME_GPU_HOST_MAX", "512K",
     "When neither buffer of a rendezvous can be exported and both are on the\n"
     "same GPU, messages from 32K up to this size (at most the host fragment\n"
     "size) are staged through host memory, which the GPU's copy engines move\n"
     "without a context switch, instead of device fragments, which both\n"
     "processes copy on the compute engine (~140 us per switch on an H200).\n"
     "0 disables. Applies when UCX_RNDV_FRAG_MEM_TYPE(S) are auto.",
     offsetof(ucp_config_t, rndv_same_gpu_host_max), UCS_CONFIG_TYPE_SIZE},

    {"RNDV_HOST_GET_MAX", "auto",
     "Largest host -> host rendezvous message the receiver reads over a\n"
     "transport that reads the peer's host memory (cma on one host, tcp\n"
     "between hosts); larger ones go as the model chooses without reading\n"
     "(eager over tcp) or as the pipeline of data messages. auto: 4M over one\n"
     "lane, no bound for an ep that reads over two or more rails\n"
     "(UCX_MAX_RNDV_RAILS). A cma read runs on the receiver's core alone, while\n"
     "data messages copy on both processes' cores: past the caches the two\n"
     "cores win (64 MiB, H200 host: 3.5-4.4 GB/s read against 5.2-6.6 GB/s as\n"
     "messages; 16 MiB, 2-core VM: 6.5-6.8 against 8.5-9.5). Over tcp between\n"
     "two emulated hosts (2-core VM), Sendrecv of 16 MiB kept 0.90x upstream's\n"
     "bandwidth with the bound and 0.75x without; over two rails, reads of\n"
     "16 MiB ran at 2x eager's bandwidth on links of 2 Gbit/s and 1.1x on\n"
     "unshaped ones. 0: never read.",
     offsetof(ucp_config_t, rndv_host_get_max),
     UCS_CONFIG_TYPE_SIZE_EX(UCS_CONFIG_PARSE_INF | UCS_CONFIG_PARSE_AUTO)},

    {"RNDV_FRAG_MEM_TYPE", "auto",
     "Memory of the pipeline's staging fragments: cuda (device memory\n"
     "exported by cuda_ipc) or host (data as active messages). auto: the\n"
     "value of UCX_RNDV_FRAG_MEM_TYPES, else cuda.",
     offsetof(ucp_config_t, rndv_frag_type),
     UCS_CONFIG_TYPE_ENUM(ucp_rndv_frag_type_names)},

    {"RNDV_FRAG_MEM_TYPES", "auto",
     "Alias of UCX_RNDV_FRAG_MEM_TYPE (upstream's plural spelling); used when\n"
     "UCX_RNDV_FRAG_MEM_TYPE is auto.",
     offsetof(ucp_config_t, rndv_frag_types),
     UCS_CONFIG_TYPE_ENUM(ucp_rndv_frag_type_names)},

    {"RNDV_FRAG_SIZE", "host:512K,cuda:64M",
     "Size of a pipeline fragment per memory type, e.g. host:512K,cuda:64M.\n"
     "A message smaller than depth fragments, alone in the pool and between\n"
     "two GPUs, is cut into pieces of len/UCX_RNDV_PIPELINE_DEPTH (at least\n"
     "1M of device memory); otherwise a piece fills a fragment. Large\n"
     "device fragments amortize the ~3-6 us to issue a copy and, on one GPU\n"
     "shared by two processes, its context switch (docs/rendezvous.md).",
     offsetof(ucp_config_t, rndv_frag_size), UCS_CONFIG_TYPE_MEMTYPE_SIZE_MAP},

    {"RNDV_FRAG_POOL_SIZE", "16",
     "Most fragments of each memory type a worker allocates per GPU they\n"
     "stage for, 4 at a time as messages need them (at most 16 x 64M = 1G of\n"
     "device memory per GPU by default; device fragments live on that GPU,\n"
     "host fragments on its NUMA node); requests wait for a free fragment\n"
     "when all are in use. More fragments let more messages overlap: on\n"
     "2x H200, 4 MiB messages between two GPUs reach the raw copy with 16\n"
     "(63 % with 4), and one GPU shared by both processes gains up to 32.",
     offsetof(ucp_config_t, rndv_frag_pool), UCS_CONFIG_TYPE_UINT},

    {"RNDV_PIPELINE_DEPTH", "4",
     "Fragments one message keeps in flight, so that the copy into the next\n"
     "one overlaps the transfer of the previous.",
     offsetof(ucp_config_t, rndv_depth), UCS_CONFIG_TYPE_UINT},

    {"TAG_EAGER_MAX_SIZE", "256M",
     "Largest tag message the eager protocols send or accept; larger ones\n"
     "take rendezvous whatever UCX_RNDV_THRESH says. A receiver drops, with\n"
     "an error, an eager message announcing more, so that one corrupt or\n"
     "hostile header cannot make it reserve more than this for a message that\n"
     "arrives before its receive. Set the same value in every process of a\n"
     "job: a peer with a larger one may send eagerly what we drop. 'inf' lifts\n"
     "the limit (any announced length is reserved).",
     offsetof(ucp_config_t, tag_eager_max),
     UCS_CONFIG_TYPE_SIZE_EX(UCS_CONFIG_PARSE_INF)},

    {"KEEPALIVE_INTERVAL", "10s",
     "How often an endpoint created with UCP_ERR_HANDLING_MODE_PEER checks\n"
     "that its peer is alive while nothing else would tell (no traffic, or\n"
     "only receives waiting): a probe goes out at most this long after the\n"
     "last, from the worker's progress, and a dead peer fails the endpoint\n"
     "(its error callback runs). ucp_worker_wait() wakes up at this period\n"
     "while such endpoints exist. 'inf' turns the idle probes off; waits for\n"
     "acknowledgements and RMA answers are still probed.",
     offsetof(ucp_config_t, keepalive_interval),
     UCS_CONFIG_TYPE_TIME_EX(UCS_CONFIG_PARSE_INF)},

    {"KEEPALIVE_NUM_EPS", "128",
     "Most endpoints one round of idle probes checks; the others are\n"
     "checked in the next rounds (a round every quarter interval).",
     offsetof(ucp_config_t, keepalive_num_eps), UCS_CONFIG_TYPE_UINT},

    {"KEEPALIVE_TIMEOUT", "20s",
     "How long a peer process on this host may stay stopped (SIGSTOP,\n"
     "SIGTSTP: state T in /proc) before its PEER-mode endpoints fail with\n"
     "UCS_ERR_ENDPOINT_TIMEOUT. The idle probes look at the process, so it is\n"
     "found within this time plus about 1.25 UCX_KEEPALIVE_INTERVAL. Time is\n"
     "counted only while this process looks: a job suspended and resumed as\n"
     "a whole is not failed. A process stopped by a debugger does not count.\n"
     "A peer on another host that is stopped looks busy and is not found.\n"
     "'inf' turns this off.",
     offsetof(ucp_config_t, keepalive_timeout),
     UCS_CONFIG_TYPE_TIME_EX(UCS_CONFIG_PARSE_INF)},

    {"MAX_RNDV_RAILS", "2",
     "Most lanes one host -> host rendezvous read is split across, 1 to "
     UCS_PP_QUOTE(UCP_MAX_RAILS) ".\n"
     "An ep that reads over its messaging connection (tcp) also reads over\n"
     "the other network devices that reach the peer and read its memory with\n"
     "the same keys (tcp over a second interface), each share in\n"
     "proportion to the device's bandwidth and at least\n"
     "UCX_MIN_RNDV_CHUNK_SIZE. Device memory and shared-memory lanes use one\n"
     "lane. UCXX sets 1 at import.",
     offsetof(ucp_config_t, max_rndv_rails), UCS_CONFIG_TYPE_UINT},

    {"MIN_RNDV_CHUNK_SIZE", "64k",
     "Smallest share of a rendezvous read that goes over one rail of\n"
     "UCX_MAX_RNDV_RAILS: a message below twice this size uses one lane.",
     offsetof(ucp_config_t, min_rndv_chunk_size), UCS_CONFIG_TYPE_SIZE},

    {"MAX_EAGER_RAILS", "1",
     "Most lanes the fragments of one eager message are spread over, 1 to " UCS_PP_QUOTE(
         UCP_MAX_RAILS) ".\n"
                        "Eager fragments go over the messaging lane: every valid value\n"
                        "behaves as 1.",
     offsetof(ucp_config_t, max_eager_rails), UCS_CONFIG_TYPE_UINT},

    {NULL}};

ucs_status_t ucp_config_rndv_resolve(const ucp_config_t *config,
                                     ucp_rndv_config_t *rndv)
{
    unsigned i;

    rndv->thresh    = config->rndv_thresh;
    rndv->scheme    = (ucp_rndv_scheme_t)config->rndv_scheme;
    rndv->one_copier = config->rndv_one_copier;
    rndv->whole_pieces = config->rndv_whole_pieces;
    rndv->split_alone  = config->rndv_split_alone;
    rndv->stage_overlap = config->rndv_stage_overlap;
    rndv->staged_get    = config->rndv_staged_get;
    rndv->host_get_ramp = config->rndv_host_get_ramp;
    rndv->frag_type = (ucp_rndv_frag_type_t)config->rndv_frag_type;
    if (rndv->frag_type == UCP_RNDV_FRAG_TYPE_AUTO) {
        rndv->frag_type = (ucp_rndv_frag_type_t)config->rndv_frag_types;
    }
    rndv->frag_type_auto = (rndv->frag_type == UCP_RNDV_FRAG_TYPE_AUTO);
    if (rndv->frag_type == UCP_RNDV_FRAG_TYPE_AUTO) {
        rndv->frag_type = UCP_RNDV_FRAG_TYPE_CUDA;
    }
    for (i = 0; i < UCS_MEMORY_TYPE_LAST; ++i) {
        rndv->frag_size[i] = config->rndv_frag_size[i];
        if ((rndv->frag_size[i] == 0) && (i != UCS_MEMORY_TYPE_HOST) &&
            (i != UCS_MEMORY_TYPE_CUDA)) {
            /* Types the default does not name share the nearest one's. */
            rndv->frag_size[i] = config->rndv_frag_size[
                    (i == UCS_MEMORY_TYPE_CUDA_MANAGED) ? UCS_MEMORY_TYPE_CUDA :
                                                          UCS_MEMORY_TYPE_HOST];
        }
        if ((rndv->frag_size[i] < 64) || (rndv->frag_size[i] > (1ul << 30))) {
            ucs_error("UCX_RNDV_FRAG_SIZE: %zu bytes for %s memory is out of "
                      "range (64 .. 1G)", rndv->frag_size[i],
                      ucs_memory_type_names[i]);
            return UCS_ERR_INVALID_PARAM;
        }
    }
    if ((config->rndv_frag_pool == 0) || (config->rndv_depth == 0)) {
        ucs_error("UCX_RNDV_FRAG_POOL_SIZE and UCX_RNDV_PIPELINE_DEPTH must be "
                  "at least 1 (got %u and %u)", config->rndv_frag_pool,
                  config->rndv_depth);
        return UCS_ERR_INVALID_PARAM;
    }
    /* One host fragment carries the whole message: a tail below 32K would
     * be a small host-to-device copy, which pays the switch again. */
    rndv->same_gpu_host_max = config->rndv_same_gpu_host_max;
    rndv->host_get_max      = config->rndv_host_get_max;
    rndv->max_rails         = config->max_rndv_rails;
    rndv->min_chunk         = ucs_max(config->min_rndv_chunk_size, (size_t)1);
    if (rndv->same_gpu_host_max > rndv->frag_size[UCS_MEMORY_TYPE_HOST]) {
        rndv->same_gpu_host_max = rndv->frag_size[UCS_MEMORY_TYPE_HOST];
    }
    rndv->frag_pool_max = config->rndv_frag_pool;
    rndv->depth         = config->rndv_depth;
    rndv->eager_max     = config->tag_eager_max;
    return UCS_OK;
}

ucs_config_table_entry_t ucp_config_table_entry = {
    .name   = "UCP context",
    .prefix = "",
    .fields = ucp_config_fields,
    .size   = sizeof(ucp_config_t)
};

UCS_CONFIG_REGISTER_TABLE(ucp_config_table_entry)

ucs_status_t ucp_config_read(const char *env_prefix, const char *filename,
                             ucp_config_t **config_p)
{
    ucp_config_t *config;
    ucs_status_t status;

    if (config_p == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }

    config = malloc(sizeof(*config));
    if (config == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = ucs_config_parser_fill_opts(config, &ucp_config_table_entry,
                                         env_prefix, filename);
    if (status != UCS_OK) {
        free(config);
        return status;
    }

    /* Only after a successful read: a file that failed to parse has been
     * reported already, and the check would report it again. */
    /* Transport modules register their tables when loaded: load them first,
     * or their variables (UCX_CUDA_IPC_*) would be called unknown. */
    (void)uct_load_modules();
    ucs_config_parser_warn_unknown_vars_once(env_prefix);
    if (filename != NULL) {
        ucs_config_parser_warn_unknown_file_keys(filename, env_prefix);
    }

    *config_p = config;
    return UCS_OK;
}

void ucp_config_release(ucp_config_t *config)
{
    if (config == NULL) {
        return;
    }
    ucs_config_parser_release_opts(config, &ucp_config_table_entry);
    free(config);
}

ucs_status_t ucp_config_modify(ucp_config_t *config, const char *name,
                               const char *value)
{
    if ((config == NULL) || (name == NULL) || (value == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }
    return ucs_config_parser_set_value(config, &ucp_config_table_entry, name,
                                       value);
}

void ucp_config_print(const ucp_config_t *config, FILE *stream,
                      const char *title, ucs_config_print_flags_t print_flags)
{
    ucs_config_parser_print_opts(stream, title, config,
                                 &ucp_config_table_entry, print_flags);
}

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

/*
 * The rendezvous performance model (ucp_rndv_model.h). Every time here is
 * the time until the data sits in the receiver's buffer: that is what a
 * ping-pong measures and what a receiver waiting in MPI_Recv sees.
 */

#include <ucp/rndv/ucp_rndv_model.h>

#include <ucs/debug/log.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

static double ucp_rndv_cost(ucp_rndv_cost_t f, size_t size)
{
    return ucs_linear_func_apply(f, (double)size);
}

static int ucp_rndv_kind_is_device(ucp_rndv_kind_t kind)
{
    return kind != UCP_RNDV_KIND_HOST;
}

/* One operation's estimate as a cost: CPU time to issue, latency, the
 * receiver's CPU time, the bandwidth, and -- with @a waited -- the CPU time
 * to see it complete (staging copies are waited for before the data moves
 * on). @a attr gets the transport's answer. */
static ucs_status_t ucp_rndv_model_op(uct_iface_h iface, uct_ep_operation_t op,
                                      ucs_memory_type_t local, ucs_memory_type_t remote,
                                      int same_device, int waited, ucp_rndv_cost_t *cost,
                                      uct_perf_attr_t *attr)
{
    ucs_status_t status;
    double bw;

    attr->field_mask =
        UCT_PERF_ATTR_FIELD_OPERATION | UCT_PERF_ATTR_FIELD_LOCAL_MEMORY_TYPE |
        UCT_PERF_ATTR_FIELD_REMOTE_MEMORY_TYPE | UCT_PERF_ATTR_FIELD_LOCAL_SYS_DEVICE |
        UCT_PERF_ATTR_FIELD_REMOTE_SYS_DEVICE | UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD |
        UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD | UCT_PERF_ATTR_FIELD_RECV_OVERHEAD |
        UCT_PERF_ATTR_FIELD_BANDWIDTH | UCT_PERF_ATTR_FIELD_LATENCY;
    attr->operation          = op;
    attr->local_memory_type  = local;
    attr->remote_memory_type = remote;
    /* Same device: a fragment lives on the GPU of the buffer it stages. */
    attr->local_sys_device  = same_device ? 0 : UCS_SYS_DEVICE_ID_UNKNOWN;
    attr->remote_sys_device = same_device ? 0 : UCS_SYS_DEVICE_ID_UNKNOWN;
    status                  = uct_iface_estimate_perf(iface, attr);
    if (status != UCS_OK) {
        ucs_error("ucp: rendezvous model: estimate of operation %d (%s -> %s) "
                  "failed: %s",
                  (int)op, ucs_memory_type_names[local], ucs_memory_type_names[remote],
                  ucs_status_string(status));
        return status;
    }
    bw      = attr->bandwidth.dedicated + attr->bandwidth.shared;
    cost->c = attr->send_pre_overhead + attr->latency.c + attr->recv_overhead +
              (waited ? attr->send_post_overhead : 0);
    cost->m = (bw > 0) ? 1.0 / bw : INFINITY;
    return UCS_OK;
}

ucs_status_t ucp_rndv_model_build(ucp_rndv_model_t *model, uct_iface_h am_iface,
                                  size_t am_seg, uct_iface_h copy_iface,
                                  uct_iface_h ipc_iface, uct_iface_h host_iface,
                                  size_t frag_host, size_t frag_cuda, int frag_cuda_on,
                                  int staged_get)
{
    const ucs_memory_type_t H = UCS_MEMORY_TYPE_HOST, D = UCS_MEMORY_TYPE_CUDA;
    uct_perf_attr_t attr;
    ucs_status_t status;

    memset(model, 0, sizeof(*model));
    model->am_seg       = (am_seg > 0) ? am_seg : 1;
    model->frag_host    = (frag_host > 0) ? frag_host : 1;
    model->frag_cuda    = (frag_cuda > 0) ? frag_cuda : 1;
    model->frag_cuda_on = frag_cuda_on;
    model->staged_get   = staged_get;

    /* Control messages and data go as bcopy active messages; a segment
     * after the first pays the two CPUs' overheads, not the latency. */
    status =
        ucp_rndv_model_op(am_iface, UCT_EP_OP_AM_BCOPY, H, H, 0, 0, &model->am, &attr);
    if (status != UCS_OK) {
        return status;
    }
    model->ctrl     = ucs_linear_func_make(model->am.c + UCP_RNDV_MODEL_CTRL_COST, 0);
    model->am_seg_c = attr.send_pre_overhead + attr.recv_overhead;

    /* cuda_copy's put copies the local buffer to the remote address, both
     * in this process; a device fragment lives on the GPU of the buffer it
     * stages. cuda_ipc reads (get) or writes (put) the peer's device
     * memory. */
    const struct {
        uct_iface_h        iface;
        uct_ep_operation_t op;
        ucs_memory_type_t  local, remote;
        int                same_device;
        ucp_rndv_cost_t    *cost;
    } copies[] = {
        {copy_iface, UCT_EP_OP_PUT_ZCOPY, D, H, 0, &model->d2h},
        {copy_iface, UCT_EP_OP_PUT_ZCOPY, H, D, 0, &model->h2d},
        {copy_iface, UCT_EP_OP_PUT_ZCOPY, D, D, 1, &model->d2d},
        {ipc_iface, UCT_EP_OP_GET_ZCOPY, D, D, 0, &model->ipc_d2d},
        {ipc_iface, UCT_EP_OP_GET_ZCOPY, H, D, 0, &model->ipc_d2h},
        {ipc_iface, UCT_EP_OP_PUT_ZCOPY, H, D, 0, &model->ipc_h2d},
        {host_iface, UCT_EP_OP_GET_ZCOPY, H, H, 0, &model->host_get}};
    unsigned i;

    for (i = 0; i < sizeof(copies) / sizeof(copies[0]); ++i) {
        if (copies[i].iface == NULL) {
            continue;
        }
        /* staging copies are waited for before the data moves on */
        status = ucp_rndv_model_op(copies[i].iface, copies[i].op, copies[i].local,
                                   copies[i].remote, copies[i].same_device, 1,
                                   copies[i].cost, &attr);
        if (status != UCS_OK) {
            return status;
        }
    }
    model->cuda       = (copy_iface != NULL);
    model->ipc        = (ipc_iface != NULL);
    model->host_rma   = (host_iface != NULL);
    model->recv_stage = model->cuda ? UCP_RNDV_MODEL_RECV_STAGE_COST : 0;
    return UCS_OK;
}

/* Active-message data of @a size bytes in @a msgs messages: each message
 * pays the latency once, each further segment the two CPUs' overheads. */
static double ucp_rndv_model_am(const ucp_rndv_model_t *m, size_t msgs, size_t size)
{
    size_t segs = (size + m->am_seg - 1) / m->am_seg;

    return (double)msgs * m->am.c + (double)size * m->am.m +
           ((segs > msgs) ? (double)(segs - msgs) * m->am_seg_c : 0);
}

/* One pipeline stage handling @a size bytes in @a nfrag fragments. */
static double ucp_rndv_model_stage(const ucp_rndv_model_t *m,
                                   const ucp_rndv_cost_t *stage, size_t nfrag,
                                   size_t size)
{
    return (stage == NULL) ? ucp_rndv_model_am(m, nfrag, size)
                           : (double)nfrag * stage->c + (double)size * stage->m;
}

/*
 * A pipeline of stages over fragments of @a frag bytes: the first fragment
 * passes every stage, the rest flow at the pace of the slowest stage. A
 * NULL stage is active-message data; @a num stages.
 */
static double ucp_rndv_model_pipe(const ucp_rndv_model_t *m, size_t size, size_t frag,
                                  const ucp_rndv_cost_t *const *stages, unsigned num)
{
    size_t first   = (size < frag) ? size : frag;
    size_t nfrag   = (size + frag - 1) / frag;
    double t_first = 0, t_rest = 0, t;
    unsigned i;

    for (i = 0; i < num; ++i) {
        t_first += ucp_rndv_model_stage(m, stages[i], 1, first);
        if (nfrag > 1) {
            t      = ucp_rndv_model_stage(m, stages[i], nfrag - 1, size - first);
            t_rest = (t > t_rest) ? t : t_rest;
        }
    }
    return t_first + t_rest;
}

double ucp_rndv_model_time(const ucp_rndv_model_t *m, ucp_rndv_model_proto_t proto,
                           ucp_rndv_kind_t s, ucp_rndv_kind_t r, size_t size)
{
    int s_dev = ucp_rndv_kind_is_device(s), r_dev = ucp_rndv_kind_is_device(r);
    double ctrl = ucp_rndv_cost(m->ctrl, 0);
    const ucp_rndv_cost_t *stages[4];
    unsigned num = 0;
    /* Staging device data through host memory (eager, both pipelines)
     * needs cuda_copy; a get or put needs only cuda_ipc. */
    int staged_ok = m->cuda || (!s_dev && !r_dev);
    /* Host to host as messages: the copy out of the transport's buffer. */
    double second_copy = (!s_dev && !r_dev) ?
                         UCP_RNDV_MODEL_SECOND_COPY * (double)size * m->am.m : 0;

    switch (proto) {
    case UCP_RNDV_MODEL_EAGER:
        if (!staged_ok) {
            return INFINITY;
        }
        return ucp_rndv_model_am(m, 1, size) + second_copy +
               (s_dev ? ucp_rndv_cost(m->d2h, size) : 0) +
               (r_dev ? ucp_rndv_cost(m->h2d, size) + m->recv_stage : 0);
    case UCP_RNDV_MODEL_GET:
        /* RTS, then the receiver reads */
        if ((s == UCP_RNDV_KIND_HOST) && (r == UCP_RNDV_KIND_HOST)) {
            return m->host_rma ? ctrl + ucp_rndv_cost(m->host_get, size) : INFINITY;
        }
        if (!m->ipc || (s != UCP_RNDV_KIND_DEVICE_EXPORT)) {
            return INFINITY;
        }
        return ctrl + ucp_rndv_cost(r_dev ? m->ipc_d2d : m->ipc_d2h, size);
    case UCP_RNDV_MODEL_PUT:
        /* RTS, RTR, the sender writes, ATP */
        if (!m->ipc || (r != UCP_RNDV_KIND_DEVICE_EXPORT)) {
            return INFINITY;
        }
        return 3 * ctrl + ucp_rndv_cost(s_dev ? m->ipc_d2d : m->ipc_h2d, size);
    case UCP_RNDV_MODEL_PIPE_CUDA:
        /* RTS, RTR; per fragment the sender's copy in, FRAG, the receiver's
         * read out */
        if (!m->ipc || !m->cuda || !m->frag_cuda_on || (!s_dev && !r_dev)) {
            return INFINITY;
        }
        stages[0] = s_dev ? &m->d2d : &m->h2d;
        stages[1] = &m->ctrl;
        stages[2] = r_dev ? &m->ipc_d2d : &m->ipc_d2h;
        return 2 * ctrl + ucp_rndv_model_pipe(m, size, m->frag_cuda, stages, 3);
    case UCP_RNDV_MODEL_PIPE_AM:
        /* RTS, RTR; per fragment the sender's copy out of the device, data
         * messages, the receiver's copy in, which stages like eager's */
        if (!staged_ok) {
            return INFINITY;
        }
        if (s_dev) {
            stages[num++] = &m->d2h;
        }
        stages[num++] = NULL;
        if (r_dev) {
            stages[num++] = &m->h2d;
        }
        return 2 * ctrl + ucp_rndv_model_pipe(m, size, m->frag_host, stages, num) +
               second_copy + (r_dev ? m->recv_stage : 0);
    case UCP_RNDV_MODEL_PIPE_HOST_GET:
        /* Device sender: RTS, RTR; per fragment its copy out, FRAG, our
         * read (and copy in). Host sender: RTS, then our reads into our
         * fragments and their copies in. */
        if (!m->host_rma || !m->cuda || !m->staged_get || (!s_dev && !r_dev)) {
            return INFINITY;
        }
        if (s_dev) {
            stages[num++] = &m->d2h;
            stages[num++] = &m->ctrl;
        }
        stages[num++] = &m->host_get;
        if (r_dev) {
            stages[num++] = &m->h2d;
        }
        return (s_dev ? 2 : 1) * ctrl +
               ucp_rndv_model_pipe(m, size, m->frag_host, stages, num);
    default:
        return INFINITY;
    }
}

double ucp_rndv_model_rndv_time(const ucp_rndv_model_t *m, ucp_rndv_kind_t s,
                                ucp_rndv_kind_t r, size_t size,
                                ucp_rndv_model_proto_t *proto_p)
{
    ucp_rndv_model_proto_t proto;

    /* The receiver's rules (ucp_rndv_recv.c): read the sender's buffer when
     * it exports, else offer ours for a put, else a pipeline; host data to
     * host memory never goes through the GPU. */
    if (m->host_rma && (s == UCP_RNDV_KIND_HOST) && (r == UCP_RNDV_KIND_HOST)) {
        proto = UCP_RNDV_MODEL_GET;
    } else if (m->ipc && (s == UCP_RNDV_KIND_DEVICE_EXPORT)) {
        proto = UCP_RNDV_MODEL_GET;
    } else if (m->ipc && (r == UCP_RNDV_KIND_DEVICE_EXPORT)) {
        proto = UCP_RNDV_MODEL_PUT;
    } else if (m->ipc && m->cuda && m->frag_cuda_on &&
               (ucp_rndv_kind_is_device(s) || ucp_rndv_kind_is_device(r))) {
        proto = UCP_RNDV_MODEL_PIPE_CUDA;
    } else if (!m->ipc && m->host_rma && m->cuda && m->staged_get &&
               (ucp_rndv_kind_is_device(s) || ucp_rndv_kind_is_device(r))) {
        proto = UCP_RNDV_MODEL_PIPE_HOST_GET;
    } else {
        proto = UCP_RNDV_MODEL_PIPE_AM;
    }
    if (proto_p != NULL) {
        *proto_p = proto;
    }
    return ucp_rndv_model_time(m, proto, s, r, size);
}

/* Whether a sender of kind @a s prefers rendezvous for @a size bytes. */
static int ucp_rndv_model_prefers_rndv(const ucp_rndv_model_t *m, ucp_rndv_kind_t s,
                                       size_t size)
{
    int own = 0, own_faster = 1, all_close = 1, some_faster = 0;
    double t_eager, t_rndv;
    unsigned r;

    for (r = 0; r < UCP_RNDV_KIND_LAST; ++r) {
        t_eager = ucp_rndv_model_time(m, UCP_RNDV_MODEL_EAGER, s, r, size);
        t_rndv  = ucp_rndv_model_rndv_time(m, s, r, size, NULL);
        if (isinf(t_eager) && isinf(t_rndv)) {
            continue; /* no device memory without cuda_copy */
        }
        if (ucp_rndv_kind_is_device(s) == ucp_rndv_kind_is_device(r)) {
            ++own;
            own_faster &= (t_rndv < t_eager);
        }
        all_close &= (t_rndv <= (1 + UCP_RNDV_MODEL_SLACK) * t_eager);
        some_faster |= (t_rndv < t_eager);
    }
    return (own && own_faster) || (all_close && some_faster);
}

/* Sizes tried: 1 B, then 1.5x steps to 4 GiB; the threshold is then refined
 * between the last size that keeps eager and the first that does not. */
#define UCP_RNDV_MODEL_MAX_SIZE (4ul << 30)

size_t ucp_rndv_model_thresh(const ucp_rndv_model_t *m, ucp_rndv_kind_t s)
{
    size_t size, prev = 0, lo, hi, mid;

    /* The first crossover decides (ucp_rndv_model.h says why). */
    for (size = 1; size <= UCP_RNDV_MODEL_MAX_SIZE; prev = size, size += (size + 1) / 2) {
        if (ucp_rndv_model_prefers_rndv(m, s, size)) {
            break;
        }
    }
    if (size > UCP_RNDV_MODEL_MAX_SIZE) {
        return SIZE_MAX;
    }
    if (prev == 0) {
        return 1;
    }
    lo = prev; /* eager */
    hi = size; /* rendezvous */
    while (hi - lo > 1) {
        mid = lo + (hi - lo) / 2;
        if (ucp_rndv_model_prefers_rndv(m, s, mid)) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    return hi;
}

const char *ucp_rndv_model_proto_name(ucp_rndv_model_proto_t proto)
{
    static const char *names[UCP_RNDV_MODEL_LAST] = {
        [UCP_RNDV_MODEL_EAGER]         = "eager",
        [UCP_RNDV_MODEL_GET]           = "get_zcopy",
        [UCP_RNDV_MODEL_PUT]           = "put_zcopy",
        [UCP_RNDV_MODEL_PIPE_CUDA]     = "pipeline (device fragments)",
        [UCP_RNDV_MODEL_PIPE_AM]       = "pipeline (active messages)",
        [UCP_RNDV_MODEL_PIPE_HOST_GET] = "pipeline (host fragments read)"};

    return ((unsigned)proto < UCP_RNDV_MODEL_LAST) ? names[proto] : "?";
}

const char *ucp_rndv_model_kind_name(ucp_rndv_kind_t kind)
{
    static const char *names[UCP_RNDV_KIND_LAST] = {
        [UCP_RNDV_KIND_HOST]          = "host",
        [UCP_RNDV_KIND_DEVICE_EXPORT] = "cuda, exports",
        [UCP_RNDV_KIND_DEVICE]        = "cuda, no export"};

    return ((unsigned)kind < UCP_RNDV_KIND_LAST) ? names[kind] : "?";
}

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/*
 * Keepalive: how an endpoint learns that its peer is gone while nothing it
 * sends would tell. Transport probes (a keepalive AM sent with
 * UCT_SEND_FLAG_PEER_CHECK, which checks the peer's process, FIFO or
 * socket) for peers we wait for, and idle rounds for PEER-mode endpoints;
 * for a peer on this host the rounds also read its /proc entry, which is
 * the one way to tell a stopped process (SIGSTOP) from a busy one.
 */

#include <ucp/core/ucp_int.h>
#include <ucs/sys/sys.h>

#include <limits.h>
#include <unistd.h>

#define UCP_KEEPALIVE_INTERVAL_NS 100000000ull
/* Housekeeping rounds (ucp_worker_progress(): one call in
 * UCP_WORKER_HOUSEKEEPING_PERIOD while nothing happens) between two looks
 * at the clock for the idle probes: a busy loop makes millions of calls a
 * second, an idle one few. */
#define UCP_KEEPALIVE_IDLE_CALLS  64

void ucp_ep_peer_watch_init(ucp_ep_h ep, const ucp_unpacked_address_t *addr,
                            int same_host)
{
    ucs_sys_proc_stat_t st;

    ep->peer.pid = 0;
    if (!same_host || (addr->pid_ns == 0) || (addr->pid_ns != ucs_sys_get_pid_ns()) ||
        (addr->pid == 0) || (addr->pid > INT_MAX) ||
        ((pid_t)addr->pid == getpid())) {
        return; /* its pid names nothing we can look at, or ourselves */
    }
    if (ucs_sys_proc_stat((int)addr->pid, &st) != UCS_OK) {
        ucs_debug("ucp: ep %s: no /proc entry of peer process %u to watch",
                  ep->name, addr->pid);
        return;
    }
    ep->peer.pid        = (int)addr->pid;
    ep->peer.start_time = st.start_time;
    ep->peer.stopped_ns = 0;
    ep->peer.checked_ns = 0;
    ucs_debug("ucp: ep %s: watching peer process %d", ep->name, ep->peer.pid);
}

/*
 * A peer process stopped by a signal (state 'T') answers nothing yet is
 * alive to every transport. It fails the endpoint once it has been seen
 * stopped for UCX_KEEPALIVE_TIMEOUT. The time counts only while we look:
 * when our own looks are further apart than the timeout (this process was
 * stopped too, as a suspended job is, or did not progress), the count
 * starts again, so a job suspended and resumed as a whole survives. A
 * process stopped by its debugger ('t') is not counted.
 */
int ucp_ep_peer_watch(ucp_ep_h ep, uint64_t now)
{
    uint64_t timeout = ep->worker->context->keepalive_timeout_ns;
    uint64_t gap_max = timeout + ep->worker->context->keepalive_ns;
    ucs_sys_proc_stat_t st;
    ucs_status_t status;

    if ((ep->peer.pid == 0) || (timeout == 0)) {
        return 0;
    }
    status = ucs_sys_proc_stat(ep->peer.pid, &st);
    if ((status == UCS_ERR_NO_ELEM) ||
        ((status == UCS_OK) &&
         ((st.start_time != ep->peer.start_time) || ucs_sys_proc_stat_exited(&st)))) {
        ucs_diag("ucp: ep %s: peer process %d has exited", ep->name, ep->peer.pid);
        ucp_ep_set_failed(ep, UCS_ERR_ENDPOINT_TIMEOUT, 1);
        return 1;
    }
    if ((status != UCS_OK) || (st.state != 'T')) {
        ep->peer.stopped_ns = 0;
    } else if ((ep->peer.stopped_ns == 0) || (now - ep->peer.checked_ns > gap_max)) {
        ucs_debug("ucp: ep %s: peer process %d is stopped", ep->name, ep->peer.pid);
        ep->peer.stopped_ns = now;
    } else if (now - ep->peer.stopped_ns >= timeout) {
        ucs_diag("ucp: ep %s: peer process %d has been stopped for %.1f s "
                 "(UCX_KEEPALIVE_TIMEOUT): it counts as unresponsive",
                 ep->name, ep->peer.pid, (now - ep->peer.stopped_ns) / 1e9);
        ucp_ep_set_failed(ep, UCS_ERR_ENDPOINT_TIMEOUT, 1);
        return 1;
    }
    ep->peer.checked_ns = now;
    if ((ep->peer.stopped_ns != 0) &&
        (ep->peer.stopped_ns + timeout < ep->next_idle_keepalive_ns)) {
        /* look again when the timeout ends, not an interval later */
        ep->next_idle_keepalive_ns = ep->peer.stopped_ns + timeout;
    }
    return 0;
}

static size_t ucp_ep_pack_nothing(void *dest, void *arg)
{
    (void)dest;
    (void)arg;
    return 0;
}

int ucp_ep_keepalive(ucp_ep_h ep)
{
    ssize_t ret;

    if (ep->uct_ep == NULL) {
        return 0; /* still connecting: the handshake's socket watches it */
    }
    ret = uct_ep_am_bcopy(ep->uct_ep, UCP_AM_ID_KEEPALIVE, ucp_ep_pack_nothing,
                          NULL, UCT_SEND_FLAG_PEER_CHECK);
    if ((ret < 0) && (ret != UCS_ERR_NO_RESOURCE)) {
        ucp_ep_set_failed(ep, (ucs_status_t)ret, 1);
        return 1;
    }
    return 0;
}

/* Probe, once per interval, the peers this worker waits for without a
 * request of its own in flight to them: targets of RMA operations still
 * waiting for their answers, and the senders of bytes a stream receive
 * waits for. A flush parked on RMA answers is probed in every error mode,
 * so that even without error handling a dead target cannot hold a flush
 * or close forever. */
static unsigned ucp_worker_keepalive_waiting(ucp_worker_h worker, uint64_t now)
{
    ucp_ep_h ep;

    if (now < worker->rma_keepalive_ns) {
        return 0;
    }
    worker->rma_keepalive_ns = now + UCP_KEEPALIVE_INTERVAL_NS;
    ucs_list_for_each(ep, &worker->eps, link) {
        if (!(ep->flags & UCP_EP_FLAG_FAILED) &&
            (((ep->err_mode == UCP_ERR_HANDLING_MODE_PEER) &&
              ((ep->rma.replied != ep->rma.issued) ||
               !ucs_list_is_empty(&ep->stream.reqs))) ||
             !ucs_list_is_empty(&ep->rma.flushes)) &&
            ucp_ep_keepalive(ep)) {
            return 1; /* the list changed under us */
        }
    }
    return 0;
}

/* Idle probes (UCX_KEEPALIVE_INTERVAL): a round every quarter interval
 * probes the PEER-mode endpoints whose last probe is an interval old, at
 * most UCX_KEEPALIVE_NUM_EPS of them, so each is probed about once per
 * interval and a dead peer is found within about 1.25 intervals. The same
 * round looks at the processes of peers on this host. */
static unsigned ucp_worker_keepalive_idle(ucp_worker_h worker, uint64_t now)
{
    ucp_context_h context = worker->context;
    unsigned probed       = 0;
    ucp_ep_h ep;

    if (now < worker->idle_keepalive_ns) {
        return 0;
    }
    worker->idle_keepalive_ns = now + context->keepalive_ns / 4;
    ucs_list_for_each(ep, &worker->eps, link) {
        if ((ep->err_mode != UCP_ERR_HANDLING_MODE_PEER) ||
            (ep->flags & UCP_EP_FLAG_FAILED) || (now < ep->next_idle_keepalive_ns)) {
            continue;
        }
        if (probed++ >= context->keepalive_num_eps) {
            break;
        }
        ep->next_idle_keepalive_ns = now + context->keepalive_ns;
        ucs_trace("ucp: ep %s: keepalive probe", ep->name);
        if (ucp_ep_keepalive(ep) || ucp_ep_peer_watch(ep, now)) {
            return 1; /* the list changed under us */
        }
    }
    return 0;
}

int ucp_worker_keepalive_wait_ms(ucp_worker_h worker)
{
    ucp_ep_h ep;

    if (worker->context->keepalive_ns == 0) {
        return -1;
    }
    ucs_list_for_each(ep, &worker->eps, link) {
        if ((ep->err_mode == UCP_ERR_HANDLING_MODE_PEER) &&
            !(ep->flags & UCP_EP_FLAG_FAILED)) {
            /* the next progress call looks at the clock */
            worker->keepalive_calls  = UCP_KEEPALIVE_IDLE_CALLS - 1;
            worker->housekeeping_due = 1;
            return (int)ucs_max(worker->context->keepalive_ns / 4000000ull, 1ull);
        }
    }
    return -1;
}

/* A peer that died while we wait for it (a sync send's acknowledgement, an
 * RMA answer, stream bytes) sends nothing that would tell us: probe it now and then. */
unsigned ucp_worker_keepalive(ucp_worker_h worker)
{
    uint64_t now = 0;
    ucp_request_t *req;

    if (!ucs_list_is_empty(&worker->rma_reqs) || (worker->stream_waiting > 0)) {
        now = ucs_get_time_ns();
        if (ucp_worker_keepalive_waiting(worker, now)) {
            return 1;
        }
    }

    ucs_list_for_each(req, &worker->sync_reqs, list) {
        ucp_ep_h ep = req->ep;
        if ((ep->err_mode != UCP_ERR_HANDLING_MODE_PEER) ||
            (ep->flags & UCP_EP_FLAG_FAILED)) {
            continue;
        }
        if (now == 0) {
            now = ucs_get_time_ns();
        }
        if (now < ep->next_keepalive_ns) {
            continue;
        }
        ep->next_keepalive_ns = now + UCP_KEEPALIVE_INTERVAL_NS;
        if (ucp_ep_keepalive(ep)) {
            return 1; /* the list changed under us */
        }
    }

    /* The clock is read once per UCP_KEEPALIVE_IDLE_CALLS progress calls. */
    if (ucs_unlikely((++worker->keepalive_calls % UCP_KEEPALIVE_IDLE_CALLS) == 0) &&
        (worker->context->keepalive_ns != 0)) {
        return ucp_worker_keepalive_idle(worker, (now != 0) ? now : ucs_get_time_ns());
    }
    return 0;
}

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucp/core/ucp_int.h>
#include <ucp/rndv/ucp_rndv.h>
#include <ucs/datastruct/hmap.h>
#include <ucs/sys/sys.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

static uint64_t ucp_worker_make_uuid(const void *worker)
{
    uint64_t seed = ucs_get_time_ns() ^ ((uint64_t)getpid() << 32);
    uint64_t uuid;
    FILE *f;

    f = fopen("/dev/urandom", "r");
    if ((f == NULL) || (fread(&uuid, sizeof(uuid), 1, f) != 1)) {
        uuid = 0;
    }
    if (f != NULL) {
        fclose(f);
    }
    uuid ^= ucs_hash_u64(seed ^ (uintptr_t)worker);
    return (uuid == 0) ? 1 : uuid;
}

static void ucp_worker_close_ifaces(ucp_worker_h worker)
{
    unsigned i;

    for (i = 0; i < worker->num_ifaces; ++i) {
        uct_iface_close(worker->ifaces[i].iface);
    }
    free(worker->ifaces);
    worker->ifaces     = NULL;
    worker->num_ifaces = 0;
}

ucs_status_t ucp_worker_iface_open(ucp_worker_h worker, unsigned rsc_index,
                                   uct_iface_params_t *params,
                                   ucp_worker_iface_t *wiface)
{
    ucp_context_h context   = worker->context;
    const ucp_tl_rsc_t *rsc = &context->rscs[rsc_index];
    uct_iface_config_t *config;
    ucs_status_t status;

    params->field_mask     |= UCT_IFACE_PARAM_FIELD_DEVICE;
    params->device.tl_name  = rsc->desc.tl_name;
    params->device.dev_name = rsc->desc.dev_name;
    status = uct_md_iface_config_read(context->mds[rsc->md_index].md,
                                      rsc->desc.tl_name, NULL, NULL, &config);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_iface_open(context->mds[rsc->md_index].md, worker->uct_worker,
                            params, config, &wiface->iface);
    uct_config_release(config);
    if (status == UCS_OK) {
        status = uct_iface_query(wiface->iface, &wiface->attr);
        if (status != UCS_OK) {
            uct_iface_close(wiface->iface);
        }
    }
    if (status != UCS_OK) {
        ucs_debug("ucp: %s/%s not opened: %s", rsc->desc.tl_name,
                  rsc->desc.dev_name, ucs_status_string(status));
        wiface->iface = NULL;
        return status;
    }
    wiface->worker    = worker;
    wiface->rsc_index = rsc_index;
    return UCS_OK;
}

int ucp_worker_iface_reaches(const ucp_worker_iface_t *wiface,
                             const ucp_address_entry_t *e)
{
    const char *tl_name = wiface->worker->context->rscs[wiface->rsc_index].desc.tl_name;

    /* The entry of the same transport: its address format is ours. */
    return !strcmp(e->tl_name, tl_name) &&
           (e->dev_addr_len == wiface->attr.device_addr_len) &&
           (e->iface_addr_len == wiface->attr.iface_addr_len) &&
           uct_iface_is_reachable(wiface->iface, e->dev_addr, e->iface_addr);
}

const ucp_address_entry_t *
ucp_worker_iface_reachable_entry(const ucp_worker_iface_t *wiface,
                                 const ucp_unpacked_address_t *addr)
{
    unsigned i;

    for (i = 0; i < addr->num_entries; ++i) {
        if (ucp_worker_iface_reaches(wiface, &addr->entries[i])) {
            return &addr->entries[i];
        }
    }
    return NULL;
}

ucs_status_t ucp_worker_iface_ep_create(const ucp_worker_iface_t *wiface,
                                        const ucp_address_entry_t *entry, uct_ep_h *ep_p)
{
    uct_ep_params_t params;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = wiface->iface;
    params.dev_addr   = entry->dev_addr;
    params.iface_addr = entry->iface_addr;
    return uct_ep_create(&params, ep_p);
}

uct_ep_h ucp_worker_iface_connect(const ucp_worker_iface_t *wiface,
                                  const ucp_unpacked_address_t *addr)
{
    const ucp_address_entry_t *e = ucp_worker_iface_reachable_entry(wiface, addr);
    uct_ep_h ep;

    return ((e != NULL) && (ucp_worker_iface_ep_create(wiface, e, &ep) == UCS_OK)) ? ep
                                                                                   : NULL;
}

static ucs_status_t ucp_worker_open_iface(ucp_worker_h worker, unsigned rsc_index)
{
    ucp_worker_iface_t *wiface = &worker->ifaces[worker->num_ifaces];
    uct_iface_params_t params;
    ucs_status_t status;

    memset(&params, 0, sizeof(params));
    params.field_mask      = UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                             UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG;
    params.err_handler     = ucp_worker_iface_error;
    params.err_handler_arg = wiface;
    status = ucp_worker_iface_open(worker, rsc_index, &params, wiface);
    if (status != UCS_OK) {
        return status;
    }
    if (!(wiface->attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE) ||
        !(wiface->attr.cap.flags & UCT_IFACE_FLAG_AM_BCOPY) ||
        (wiface->attr.cap.am.max_bcopy <= UCP_EAGER_FIRST_HDR)) {
        /* Not usable for messaging (yet): connect-to-ep wire-up and
         * memory-type-only transports come with later issues. */
        uct_iface_close(wiface->iface);
        return UCS_ERR_UNSUPPORTED;
    }
    ucp_tag_set_am_handlers(wiface);
    ucp_rma_set_am_handlers(wiface);
    ucp_am_set_am_handlers(wiface);
    ++worker->num_ifaces;
    return UCS_OK;
}

static ucs_status_t ucp_worker_wakeup_init(ucp_worker_h worker)
{
    struct epoll_event ev;
    unsigned i;
    int fd;

    worker->epfd = (worker->user_event_fd >= 0) ? worker->user_event_fd :
                   epoll_create1(EPOLL_CLOEXEC);
    if (worker->epfd < 0) {
        ucs_error("ucp: epoll_create1 failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    worker->signal_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (worker->signal_fd < 0) {
        ucs_error("ucp: eventfd failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    if (epoll_ctl(worker->epfd, EPOLL_CTL_ADD, worker->signal_fd, &ev) < 0) {
        return UCS_ERR_IO_ERROR;
    }
    for (i = 0; i < worker->num_ifaces; ++i) {
        if (!(worker->ifaces[i].attr.cap.event_flags & UCT_IFACE_FLAG_EVENT_FD) ||
            (uct_iface_event_fd_get(worker->ifaces[i].iface, &fd) != UCS_OK)) {
            continue;
        }
        if (epoll_ctl(worker->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
            ucs_error("ucp: epoll_ctl(%d) failed: %m", fd);
            return UCS_ERR_IO_ERROR;
        }
    }
    return UCS_OK;
}

ucs_status_t ucp_worker_create(ucp_context_h context,
                               const ucp_worker_params_t *params,
                               ucp_worker_h *worker_p)
{
    pthread_mutexattr_t mattr;
    ucp_worker_h worker;
    ucs_status_t status;
    unsigned i;

    worker = calloc(1, sizeof(*worker));
    if (worker == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    worker->context       = context;
    worker->thread_mode   = UCS_THREAD_MODE_SINGLE;
    worker->epfd          = -1;
    worker->signal_fd     = -1;
    worker->user_event_fd = -1;
    worker->uuid          = ucp_worker_make_uuid(worker);
    worker->next_msg_id   = 1;
    worker->next_sync_id  = 1;
    ucs_list_head_init(&worker->eps);
    ucs_list_head_init(&worker->zombies);
    ucs_list_head_init(&worker->ready);
    ucs_list_head_init(&worker->notify);
    ucs_list_head_init(&worker->expected);
    ucs_list_head_init(&worker->unexpected);
    ucs_list_head_init(&worker->rx_inflight);
    ucs_list_head_init(&worker->sync_reqs);
    ucs_list_head_init(&worker->free_reqs);
    ucs_list_head_init(&worker->rma_reqs);
    worker->rma_next_id   = 1;

    if (params != NULL) {
        if (params->field_mask & UCP_WORKER_PARAM_FIELD_THREAD_MODE) {
            if (params->thread_mode >= UCS_THREAD_MODE_LAST) {
                free(worker);
                return UCS_ERR_UNSUPPORTED;
            }
            worker->thread_mode = params->thread_mode;
        }
        if (params->field_mask & UCP_WORKER_PARAM_FIELD_USER_DATA) {
            worker->user_data = params->user_data;
        }
        if (params->field_mask & UCP_WORKER_PARAM_FIELD_FLAGS) {
            worker->flags = params->flags;
        }
        if (params->field_mask & UCP_WORKER_PARAM_FIELD_EVENT_FD) {
            worker->user_event_fd = params->event_fd;
        }
        if (params->field_mask & UCP_WORKER_PARAM_FIELD_CLIENT_ID) {
            worker->client_id = params->client_id;
        }
        if ((params->field_mask & UCP_WORKER_PARAM_FIELD_NAME) &&
            (params->name != NULL)) {
            snprintf(worker->name, sizeof(worker->name), "%s", params->name);
        }
    }
    if (worker->name[0] == '\0') {
        snprintf(worker->name, sizeof(worker->name), "%s:%d",
                 ucs_sys_get_host_name(), (int)getpid());
    }
    worker->mt = (worker->thread_mode == UCS_THREAD_MODE_MULTI);
    pthread_mutexattr_init(&mattr);
    pthread_mutexattr_settype(&mattr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&worker->lock, &mattr);
    pthread_mutexattr_destroy(&mattr);

    status = uct_worker_create(NULL, UCS_THREAD_MODE_SINGLE, &worker->uct_worker);
    if (status != UCS_OK) {
        goto err_free;
    }
    worker->ifaces = calloc(context->num_rscs + 1, sizeof(*worker->ifaces));
    if (worker->ifaces == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err_uct_worker;
    }
    for (i = 0; i < context->num_rscs; ++i) {
        (void)ucp_worker_open_iface(worker, i);
    }
    if (worker->num_ifaces == 0) {
        ucs_error("ucp_worker_create: no transport interface could be opened");
        status = UCS_ERR_NO_DEVICE;
        goto err_ifaces;
    }
    (void)ucp_memtype_worker_init(worker);
    ucp_am_worker_init(worker);
    status = ucp_rndv_worker_init(worker);
    if (status != UCS_OK) {
        goto err_ifaces;
    }
    status = ucp_address_pack(worker, 0, &worker->address, &worker->address_len);
    if (status != UCS_OK) {
        goto err_ifaces;
    }
    if (context->features & UCP_FEATURE_WAKEUP) {
        worker->wakeup = 1;
        status = ucp_worker_wakeup_init(worker);
        if (status != UCS_OK) {
            goto err_wakeup;
        }
    }
    ucs_debug("ucp: worker %s created, uuid 0x%llx, %u interfaces, thread mode "
              "%s",
              worker->name, (unsigned long long)worker->uuid, worker->num_ifaces,
              ucs_thread_mode_names[worker->thread_mode]);
    *worker_p = worker;
    return UCS_OK;

err_wakeup:
    if (worker->signal_fd >= 0) {
        close(worker->signal_fd);
    }
    if ((worker->epfd >= 0) && (worker->user_event_fd < 0)) {
        close(worker->epfd);
    }
    free(worker->address);
err_ifaces:
    ucp_rndv_worker_cleanup(worker);
    ucp_rndv_worker_close_iface(worker);
    ucp_memtype_worker_cleanup(worker);
    ucp_worker_close_ifaces(worker);
err_uct_worker:
    uct_worker_destroy(worker->uct_worker);
err_free:
    pthread_mutex_destroy(&worker->lock);
    free(worker);
    return status;
}

void ucp_worker_destroy(ucp_worker_h worker)
{
    ucp_ep_h ep;

    if (worker == NULL) {
        return;
    }
    ucp_worker_lock(worker);
    worker->destroying = 1;
    while (!ucs_list_is_empty(&worker->eps)) {
        ep = ucs_list_head_elem(&worker->eps, struct ucp_ep, link);
        ucp_ep_set_failed(ep, UCS_ERR_CANCELED, 0);
        ucp_ep_destroy_internal(ep);
    }
    ucp_worker_destroy_zombies(worker);
    ucp_sa_worker_cleanup(worker);
    ucp_tag_worker_cleanup(worker);
    ucp_rndv_worker_cleanup(worker);
    if ((worker->live_reqs > 0) &&
        !(worker->flags & UCP_WORKER_FLAG_IGNORE_REQUEST_LEAK)) {
        ucs_warn("ucp: worker %s destroyed with %u request(s) not freed",
                 worker->name, worker->live_reqs);
    }
    ucp_rndv_worker_close_iface(worker);
    ucp_worker_release_requests(worker);
    ucp_memtype_worker_cleanup(worker);
    ucp_worker_close_ifaces(worker);
    uct_worker_destroy(worker->uct_worker);
    worker->armed = 0; /* nobody sleeps on a worker being destroyed */
    if (worker->signal_fd >= 0) {
        close(worker->signal_fd);
    }
    if ((worker->epfd >= 0) && (worker->user_event_fd < 0)) {
        close(worker->epfd);
    }
    free(worker->address);
    ucp_am_worker_cleanup(worker);
    ucp_worker_unlock(worker);
    pthread_mutex_destroy(&worker->lock);
    free(worker);
}

ucs_status_t ucp_worker_query(ucp_worker_h worker, ucp_worker_attr_t *attr)
{
    uint32_t flags = 0;
    ucs_status_t status = UCS_OK;

    if (attr->field_mask & UCP_WORKER_ATTR_FIELD_THREAD_MODE) {
        attr->thread_mode = worker->thread_mode;
    }
    if (attr->field_mask & UCP_WORKER_ATTR_FIELD_ADDRESS) {
        if (attr->field_mask & UCP_WORKER_ATTR_FIELD_ADDRESS_FLAGS) {
            flags = attr->address_flags;
        }
        ucp_worker_lock(worker);
        status = ucp_address_pack(worker, flags, (void**)&attr->address,
                                  &attr->address_length);
        ucp_worker_unlock(worker);
    }
    if (attr->field_mask & UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER) {
        attr->max_am_header = worker->max_am_header;
    }
    if (attr->field_mask & UCP_WORKER_ATTR_FIELD_NAME) {
        snprintf(attr->name, sizeof(attr->name), "%s", worker->name);
    }
    if (attr->field_mask & UCP_WORKER_ATTR_FIELD_MAX_INFO_STRING) {
        attr->max_debug_string = 0;
    }
    return status;
}

static unsigned ucp_worker_notify_failures(ucp_worker_h worker)
{
    unsigned count = 0;
    ucp_ep_h ep;

    while (!ucs_list_is_empty(&worker->notify)) {
        ep = ucs_list_extract_head_elem(&worker->notify, struct ucp_ep, notify_link);
        ep->flags &= ~UCP_EP_FLAG_NOTIFY;
        ucs_debug("ucp: ep %s failed: %s, calling the error handler", ep->name,
                  ucs_status_string(ep->status));
        if (ep->err_cb != NULL) {
            ep->err_cb(ep->err_arg, ep, ep->status);
        }
        ++count;
    }
    return count;
}

/* What the worker does besides its transports: queued sends, rendezvous
 * completions and fragment waiters, probes, connections, error handlers,
 * endpoints to destroy. */
static unsigned ucp_worker_housekeeping(ucp_worker_h worker)
{
    unsigned count;

    count  = ucp_worker_progress_ready(worker);
    count += ucp_rndv_progress(worker);
    count += ucp_worker_keepalive(worker);
    if (ucs_unlikely(worker->sa != NULL)) {
        count += ucp_sa_progress(worker);
    }
    count += ucp_worker_notify_failures(worker);
    ucp_worker_destroy_zombies(worker);
    return count;
}

/* Whether the housekeeping must run although the transports found nothing
 * in this call: one of the worker's own queues holds something, work was
 * queued outside progress (a rendezvous completed inside a user's call, an
 * armed worker that slept), or every UCP_WORKER_HOUSEKEEPING_PERIOD
 * calls for the timers and the sockaddr sockets (which gate their own
 * system calls). A polling loop that waits for a message thus costs one
 * transport round per call, also on a worker with a listener. */
/* Work the next progress call must do whatever the transports report. */
static inline int ucp_worker_has_queued_work(ucp_worker_h worker)
{
    return worker->housekeeping_due || !ucs_list_is_empty(&worker->ready) ||
           !ucs_list_is_empty(&worker->notify);
}

static inline int ucp_worker_housekeeping_due(ucp_worker_h worker)
{
    return ucp_worker_has_queued_work(worker) || worker->armed ||
           !ucs_list_is_empty(&worker->zombies) ||
           ((++worker->rounds & (UCP_WORKER_HOUSEKEEPING_PERIOD - 1)) == 0);
}

void ucp_worker_wake_armed(ucp_worker_h worker)
{
    if (ucp_worker_has_queued_work(worker)) {
        ucs_trace("ucp: worker %s: work queued after arming, waking the "
                  "sleeper",
                  worker->name);
        worker->armed = 0; /* one wake-up per arm */
        (void)ucp_worker_signal(worker);
    }
}

unsigned ucp_worker_progress(ucp_worker_h worker)
{
    unsigned count;

    ucp_worker_lock(worker);
    count = uct_worker_progress(worker->uct_worker);
    /* After transport events at once: their callbacks may have queued
     * sends or completions that must not wait for another call. */
    if ((count != 0) || ucs_unlikely(ucp_worker_housekeeping_due(worker))) {
        worker->housekeeping_due = 0;
        worker->armed            = 0;
        count                   += ucp_worker_housekeeping(worker);
    }
    ucp_worker_unlock(worker);
    return count;
}

ucs_status_t ucp_worker_get_address(ucp_worker_h worker, ucp_address_t **address_p,
                                    size_t *address_length_p)
{
    ucs_status_t status;

    ucp_worker_lock(worker);
    status = ucp_address_pack(worker, 0, (void**)address_p, address_length_p);
    ucp_worker_unlock(worker);
    return status;
}

void ucp_worker_release_address(ucp_worker_h worker, ucp_address_t *address)
{
    (void)worker;
    free(address);
}

ucs_status_t ucp_worker_get_efd(ucp_worker_h worker, int *fd)
{
    if (!worker->wakeup || (worker->user_event_fd >= 0)) {
        return UCS_ERR_UNSUPPORTED;
    }
    *fd = worker->epfd;
    return UCS_OK;
}

/*
 * Arm one iface by what it reports: one with an event fd wakes the worker's
 * epoll set; one that has only UCT_IFACE_FLAG_EVENT_SEND_COMP (a copy
 * engine) can only answer BUSY while its operations run, so that the caller
 * keeps progressing instead of sleeping past their end; one with neither
 * (self) delivers inside the sender's call and progress.
 */
static ucs_status_t ucp_worker_iface_arm(uct_iface_h iface, uint64_t event_flags)
{
    ucs_status_t status;

    if (event_flags & UCT_IFACE_FLAG_EVENT_FD) {
        status = uct_iface_event_arm(iface, UCT_EVENT_RECV | UCT_EVENT_SEND_COMP);
        return (status == UCS_ERR_UNSUPPORTED)
                   ? uct_iface_event_arm(iface, UCT_EVENT_RECV)
                   : status;
    } else if (event_flags & UCT_IFACE_FLAG_EVENT_SEND_COMP) {
        return uct_iface_event_arm(iface, UCT_EVENT_SEND_COMP);
    }
    return UCS_OK;
}

/* The ifaces that carry no active messages: rendezvous reads and writes,
 * staging copies. Their operations in flight keep the worker busy. */
static ucs_status_t ucp_worker_arm_data_ifaces(ucp_worker_h worker)
{
    const ucp_worker_iface_t *data[] = {&worker->rma_iface, &worker->host_rma_iface};
    ucs_status_t status;
    unsigned i;

    for (i = 0; i < ucs_static_array_size(data); ++i) {
        if (data[i]->iface == NULL) {
            continue;
        }
        status = ucp_worker_iface_arm(data[i]->iface, data[i]->attr.cap.event_flags);
        if (status != UCS_OK) {
            return status;
        }
    }
    if (worker->mt_iface == NULL) {
        return UCS_OK;
    }
    status = uct_iface_event_arm(worker->mt_iface, UCT_EVENT_SEND_COMP);
    return (status == UCS_ERR_UNSUPPORTED) ? UCS_OK : status;
}

ucs_status_t ucp_worker_arm(ucp_worker_h worker)
{
    ucs_status_t status = UCS_OK;
    uint64_t value;
    unsigned i;

    if (!worker->wakeup) {
        return UCS_ERR_UNSUPPORTED;
    }
    ucp_worker_lock(worker);
    /* A signal that arrived before arming counts as an event. */
    if (read(worker->signal_fd, &value, sizeof(value)) == sizeof(value)) {
        status = UCS_ERR_BUSY;
    }
    for (i = 0; (i < worker->num_ifaces) && (status == UCS_OK); ++i) {
        status = ucp_worker_iface_arm(worker->ifaces[i].iface,
                                      worker->ifaces[i].attr.cap.event_flags);
    }
    if (status == UCS_OK) {
        status = ucp_worker_arm_data_ifaces(worker);
    }
    if ((status == UCS_OK) && ucp_worker_has_queued_work(worker)) {
        status = UCS_ERR_BUSY; /* work left for the next progress call */
    }
    if ((status == UCS_OK) && (worker->sa != NULL)) {
        ucp_sa_arm(worker);
    }
    if (status == UCS_OK) {
        /* the caller sleeps next: whatever wakes it (a connection, a
         * probe's time) needs the housekeeping of the next call, and work
         * that another thread queues meanwhile must wake it */
        worker->armed = 1;
    }
    ucp_worker_unlock(worker);
    return status;
}

ucs_status_t ucp_worker_wait(ucp_worker_h worker)
{
    struct epoll_event ev;
    ucs_status_t status;
    int ret;

    if (!worker->wakeup) {
        return UCS_ERR_UNSUPPORTED;
    }
    status = ucp_worker_arm(worker);
    if (status == UCS_ERR_BUSY) {
        return UCS_OK;
    } else if (status != UCS_OK) {
        return status;
    }
    do {
        /* A wake-up now and then lets progress probe idle peers. */
        ret = epoll_wait(worker->epfd, &ev, 1, ucp_worker_keepalive_wait_ms(worker));
    } while ((ret < 0) && (errno == EINTR));
    return (ret < 0) ? UCS_ERR_IO_ERROR : UCS_OK;
}

ucs_status_t ucp_worker_signal(ucp_worker_h worker)
{
    uint64_t one = 1;

    if (worker->signal_fd < 0) {
        return UCS_OK; /* nobody can be waiting without WAKEUP */
    }
    return (write(worker->signal_fd, &one, sizeof(one)) == sizeof(one)) ?
           UCS_OK : UCS_ERR_IO_ERROR;
}

ucs_status_t ucp_worker_fence(ucp_worker_h worker)
{
    /* Every operation on an endpoint goes through its ordered send queue, so
     * later operations never overtake earlier ones. */
    (void)worker;
    return UCS_OK;
}

static void ucp_worker_flush_child_done(ucp_request_t *parent)
{
    if (--parent->u.ctrl.pending == 0) {
        ucp_request_complete(parent, parent->status == UCS_INPROGRESS ?
                                     UCS_OK : parent->status);
    }
}

ucs_status_ptr_t ucp_worker_flush_nbx(ucp_worker_h worker,
                                      const ucp_request_param_t *param)
{
    ucs_status_ptr_t ret, child;
    ucp_request_t *req;
    ucp_ep_h ep;

    ucp_worker_lock(worker);
    req = ucp_request_get(worker, param);
    if (req == NULL) {
        ucp_worker_unlock(worker);
        return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    }
    req->flags |= UCP_REQ_FLAG_IN_CALL;
    ucp_request_set_callback(req, param, 0);
    req->u.ctrl.pending = 1;
    ucs_list_for_each(ep, &worker->eps, link) {
        if (ep->flags & (UCP_EP_FLAG_FAILED | UCP_EP_FLAG_CLOSING)) {
            continue;
        }
        ++req->u.ctrl.pending;
        child = ucp_ep_flush_internal(ep, NULL, req, 0);
        if (UCS_PTR_IS_ERR(child)) {
            --req->u.ctrl.pending;
        }
    }
    ucp_worker_flush_child_done(req);
    ret = ucp_request_finish_call(req, param);
    ucp_worker_unlock(worker);
    return ret;
}

/* Called by an ep flush that a worker flush is waiting for. */
void ucp_worker_flush_child_complete(ucp_request_t *parent);
void ucp_worker_flush_child_complete(ucp_request_t *parent)
{
    ucp_worker_flush_child_done(parent);
}

ucs_status_ptr_t ucp_worker_flush_nb(ucp_worker_h worker, unsigned flags,
                                     ucp_send_callback_t cb)
{
    ucp_request_param_t param;
    ucs_status_ptr_t ret;

    (void)flags;
    memset(&param, 0, sizeof(param));
    ret = ucp_worker_flush_nbx(worker, &param);
    return ucp_request_set_nb_callback(worker, ret, cb);
}

static ucs_status_t ucp_request_wait(ucp_worker_h worker, ucs_status_ptr_t ret)
{
    ucs_status_t status;

    if (ret == NULL) {
        return UCS_OK;
    } else if (UCS_PTR_IS_ERR(ret)) {
        return UCS_PTR_STATUS(ret);
    }
    while ((status = ucp_request_check_status(ret)) == UCS_INPROGRESS) {
        ucp_worker_progress(worker);
    }
    ucp_request_free(ret);
    return status;
}

ucs_status_t ucp_worker_flush(ucp_worker_h worker)
{
    return ucp_request_wait(worker, ucp_worker_flush_nbx(worker, NULL));
}

ucs_status_t ucp_ep_flush(ucp_ep_h ep)
{
    return ucp_request_wait(ep->worker, ucp_ep_flush_nbx(ep, NULL));
}

void ucp_ep_destroy(ucp_ep_h ep)
{
    ucp_worker_h worker = ep->worker;

    (void)ucp_request_wait(worker, ucp_ep_close_nb(ep, UCP_EP_CLOSE_MODE_FLUSH));
}

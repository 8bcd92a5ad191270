#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_iface.h"

/*
 * The pending queue keeps its link inside the request's priv area, so a
 * queued request costs the transport no allocation.
 */

_Static_assert(sizeof(((uct_pending_req_t*)NULL)->priv) >= sizeof(ucs_queue_elem_t),
               "uct_pending_req_t::priv must hold a queue link");

static inline ucs_queue_elem_t *uct_pending_req_elem(uct_pending_req_t *req)
{
    return (ucs_queue_elem_t*)req->priv;
}

static inline uct_pending_req_t *uct_pending_elem_req(ucs_queue_elem_t *elem)
{
    return ucs_container_of((char*)elem, uct_pending_req_t, priv);
}

void uct_pending_queue_init(uct_pending_queue_t *pq)
{
    ucs_queue_head_init(&pq->queue);
}

void uct_pending_queue_push(uct_pending_queue_t *pq, uct_pending_req_t *req)
{
    ucs_queue_push(&pq->queue, uct_pending_req_elem(req));
}

unsigned uct_pending_queue_dispatch(uct_pending_queue_t *pq)
{
    unsigned count = 0;
    uct_pending_req_t *req;
    ucs_status_t status;

    while (!ucs_queue_is_empty(&pq->queue)) {
        req    = uct_pending_elem_req(pq->queue.first);
        status = req->func(req);
        if (status == UCS_OK) {
            /* Normally still the head (pushes go to the tail); search only
             * if the callback rearranged the queue itself. */
            if (pq->queue.first == uct_pending_req_elem(req)) {
                ucs_queue_pull_non_empty(&pq->queue);
            } else {
                ucs_queue_remove(&pq->queue, uct_pending_req_elem(req));
            }
            ++count;
        } else if (status != UCS_INPROGRESS) {
            /* Out of resources again (or failed): keep it first in line. */
            break;
        }
        /* UCS_INPROGRESS: it moved forward and wants to be called again. */
    }
    return count;
}

void uct_pending_queue_purge(uct_pending_queue_t *pq, uct_pending_purge_callback_t cb,
                             void *arg)
{
    ucs_queue_elem_t *elem;

    while (!ucs_queue_is_empty(&pq->queue)) {
        elem = ucs_queue_pull(&pq->queue);
        if (cb != NULL) {
            cb(uct_pending_elem_req(elem), arg);
        }
    }
}

/*
 * The base iface shared by every transport, checked with a minimal fake
 * transport registered only for these tests: it implements nothing but
 * close, query, progress and ep create/destroy, so every other operation
 * must come back as UCS_ERR_UNSUPPORTED from the base's stand-ins.
 */
#include "uct_test.h"

#include <uct/base/uct_iface.h>
#include <uct/base/uct_worker.h>

#include <cstdlib>
#include <cstring>
#include <vector>

using namespace ucx_test;

namespace {

/* ---- the fake transport ------------------------------------------------- */

struct fake_iface {
    uct_base_iface_t super;
    unsigned         progress_calls;
};

struct fake_ep {
    uct_base_ep_t super;
};

static uct_component_t fake_component;

void fake_md_close(uct_md_h md)
{
    delete md;
}

ucs_status_t fake_md_query(uct_md_h md, uct_md_attr_t *attr)
{
    return UCS_OK; /* no capabilities at all */
}

const uct_md_ops_t fake_md_ops = {
    fake_md_close, fake_md_query, NULL, NULL, NULL, NULL, NULL, NULL, NULL
};

ucs_status_t fake_md_open(uct_component_t *component, const char *md_name,
                          const uct_md_config_t *config, uct_md_h *md_p)
{
    uct_md_t *md  = new uct_md_t;
    md->ops       = &fake_md_ops;
    md->component = component;
    *md_p         = md;
    return UCS_OK;
}

void fake_iface_close(uct_iface_h tl_iface)
{
    fake_iface *iface = ucs_container_of(tl_iface, fake_iface, super.super);
    uct_base_iface_cleanup(&iface->super);
    delete iface;
}

ucs_status_t fake_iface_query(uct_iface_h tl_iface, uct_iface_attr_t *attr)
{
    fake_iface *iface = ucs_container_of(tl_iface, fake_iface, super.super);
    uct_base_iface_query(&iface->super, attr);
    return UCS_OK;
}

unsigned fake_iface_progress(uct_iface_h tl_iface)
{
    fake_iface *iface = ucs_container_of(tl_iface, fake_iface, super.super);
    ++iface->progress_calls;
    return 1;
}

ucs_status_t fake_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p)
{
    fake_ep *ep = new fake_ep;
    uct_base_ep_init(&ep->super, ucs_container_of(params->iface, uct_base_iface_t,
                                                  super));
    *ep_p = &ep->super.super;
    return UCS_OK;
}

void fake_ep_destroy(uct_ep_h ep)
{
    delete ucs_container_of(ep, fake_ep, super.super);
}

uct_iface_ops_t fake_iface_ops()
{
    uct_iface_ops_t ops;
    memset(&ops, 0, sizeof(ops));
    ops.iface_close    = fake_iface_close;
    ops.iface_query    = fake_iface_query;
    ops.iface_progress = fake_iface_progress;
    ops.ep_create      = fake_ep_create;
    ops.ep_destroy     = fake_ep_destroy;
    return ops;
}

ucs_status_t fake_iface_open(uct_md_h md, uct_worker_h worker,
                             const uct_iface_params_t *params,
                             const uct_iface_config_t *config, uct_iface_h *iface_p)
{
    fake_iface *iface = new fake_iface();
    uct_iface_ops_t ops = fake_iface_ops();

    ucs_status_t status = uct_base_iface_init(&iface->super, &ops, md, worker,
                                              params, config);
    if (status != UCS_OK) {
        delete iface;
        return status;
    }
    *iface_p = &iface->super.super;
    return UCS_OK;
}

ucs_status_t fake_query_devices(uct_md_h md, uct_tl_device_resource_t **devices_p,
                                unsigned *num_devices_p)
{
    uct_tl_device_resource_t *dev =
            (uct_tl_device_resource_t*)calloc(1, sizeof(*dev));
    snprintf(dev->name, sizeof(dev->name), "fake0");
    dev->type      = UCT_DEVICE_TYPE_NET;
    *devices_p     = dev;
    *num_devices_p = 1;
    return UCS_OK;
}

static uct_tl_t fake_tl;

/* Registers the fake transport for one test; unregisters it afterwards so
 * that no other suite ever sees it. */
class test_uct_iface : public uct_test_base {
protected:
    void SetUp() override
    {
        memset(&fake_component, 0, sizeof(fake_component));
        snprintf(fake_component.name, sizeof(fake_component.name), "gtest_fake");
        fake_component.query_md_resources = uct_component_query_single_md;
        fake_component.md_open            = fake_md_open;

        memset(&fake_tl, 0, sizeof(fake_tl));
        snprintf(fake_tl.name, sizeof(fake_tl.name), "gtest_tl");
        fake_tl.query_devices = fake_query_devices;
        fake_tl.iface_open    = fake_iface_open;

        uct_component_register(&fake_component);
        uct_tl_register(&fake_component, &fake_tl);

        std::vector<uct_resource> res = uct_enum_resources("gtest_tl");
        ASSERT_EQ(1u, res.size());
        m_entity = create_entity(res[0]);
    }

    void TearDown() override
    {
        uct_test_base::TearDown();
        uct_tl_unregister(&fake_component, &fake_tl);
        uct_component_unregister(&fake_component);
    }

    uct_iface_h iface() { return m_entity->iface(); }
    fake_iface *fake() { return ucs_container_of(iface(), fake_iface, super.super); }

    uct_test_entity *m_entity = NULL;
};

size_t pack_nothing(void *dest, void *arg)
{
    return 0;
}

void unpack_nothing(void *arg, const void *data, size_t length)
{
}

ucs_status_t noop_am(void *arg, void *data, size_t length, unsigned flags)
{
    return UCS_OK;
}

struct handler_log {
    std::vector<std::pair<void*, ucs_status_t>> calls;

    static ucs_status_t err_cb(void *arg, uct_ep_h ep, ucs_status_t status)
    {
        static_cast<handler_log*>(arg)->calls.push_back(std::make_pair((void*)ep,
                                                                       status));
        return UCS_OK;
    }
};

} // namespace

TEST_F(test_uct_iface, operations_a_transport_leaves_out_are_unsupported)
{
    uct_ep_h ep = m_entity->create_ep();
    char buf[64] = {0};
    uct_iov_t iov = {buf, sizeof(buf), NULL, 0, 1};
    uct_pending_req_t req;
    int fd;

    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_ep_am_short(ep, 0, 0, buf, 8));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_ep_am_bcopy(ep, 0, pack_nothing, NULL, 0));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_ep_am_zcopy(ep, 0, buf, 8, &iov, 1, 0, NULL));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_ep_put_short(ep, buf, 8, (uintptr_t)buf, 0));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_ep_put_bcopy(ep, pack_nothing, NULL,
                                                    (uintptr_t)buf, 0));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_ep_put_zcopy(ep, &iov, 1, (uintptr_t)buf, 0,
                                                    NULL));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_ep_get_bcopy(ep, unpack_nothing, NULL, 8,
                                                    (uintptr_t)buf, 0, NULL));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_ep_get_zcopy(ep, &iov, 1, (uintptr_t)buf, 0,
                                                    NULL));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_ep_pending_add(ep, &req, 0));
    uct_ep_pending_purge(ep, NULL, NULL); /* a no-op, not a crash */
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_ep_flush(ep, 0, NULL));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_ep_fence(ep, 0));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_ep_get_address(ep, (uct_ep_addr_t*)buf));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_ep_connect_to_ep(ep, (uct_device_addr_t*)buf, (uct_ep_addr_t*)buf));

    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_iface_flush(iface(), 0, NULL));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_iface_fence(iface(), 0));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_iface_event_fd_get(iface(), &fd));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_iface_event_arm(iface(), UCT_EVENT_RECV));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_iface_get_device_address(iface(), (uct_device_addr_t*)buf));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_iface_get_address(iface(), (uct_iface_addr_t*)buf));
    EXPECT_EQ(0, uct_iface_is_reachable(iface(), (uct_device_addr_t*)buf,
                                        (uct_iface_addr_t*)buf));
}

TEST_F(test_uct_iface, iface_query_gives_zeroed_attributes_with_defaults)
{
    const uct_iface_attr_t &attr = m_entity->iface_attr();
    EXPECT_EQ(0u, attr.cap.flags);
    EXPECT_EQ(SIZE_MAX, attr.max_num_eps);
}

TEST_F(test_uct_iface, worker_progress_visits_every_iface)
{
    uct_test_entity *second = create_entity(m_entity->resource());
    fake_iface *f2 = ucs_container_of(second->iface(), fake_iface, super.super);

    EXPECT_EQ(1u, m_entity->progress()); /* one event from the one iface */
    EXPECT_EQ(1u, fake()->progress_calls);
    EXPECT_EQ(1u, uct_iface_progress(iface()));
    EXPECT_EQ(2u, fake()->progress_calls);
    EXPECT_EQ(0u, f2->progress_calls);
}

TEST_F(test_uct_iface, am_handler_id_out_of_range_is_invalid_param)
{
    uct_log_capture log(UCS_LOG_LEVEL_ERROR);

    EXPECT_UCS_OK(uct_iface_set_am_handler(iface(), 0, noop_am, NULL, 0));
    EXPECT_UCS_OK(uct_iface_set_am_handler(iface(), UCT_AM_ID_MAX - 1, noop_am, NULL, 0));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_iface_set_am_handler(iface(), UCT_AM_ID_MAX, noop_am, NULL, 0));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_iface_set_am_handler(iface(), 255, noop_am, NULL, 0));
    EXPECT_TRUE(log.contains("out of range")) << log.text();
}

TEST_F(test_uct_iface, message_without_handler_is_dropped_with_warning_naming_id)
{
    uct_log_capture log(UCS_LOG_LEVEL_WARN);
    char data[16] = {0};

    EXPECT_UCS_OK(uct_iface_invoke_am(&fake()->super, 13, data, sizeof(data), 0));
    EXPECT_TRUE(log.contains("id 13")) << log.text();
}

TEST_F(test_uct_iface, null_handler_restores_the_dropping_default)
{
    int calls = 0;
    char data[8] = {0};
    uct_am_callback_t cb = [](void *arg, void*, size_t, unsigned) {
        ++*(int*)arg;
        return UCS_OK;
    };

    ASSERT_UCS_OK(uct_iface_set_am_handler(iface(), 3, cb, &calls, 0));
    uct_iface_invoke_am(&fake()->super, 3, data, sizeof(data), 0);
    EXPECT_EQ(1, calls);

    ASSERT_UCS_OK(uct_iface_set_am_handler(iface(), 3, NULL, NULL, 0));
    uct_log_capture log(UCS_LOG_LEVEL_WARN);
    uct_iface_invoke_am(&fake()->super, 3, data, sizeof(data), 0);
    EXPECT_EQ(1, calls);
    EXPECT_TRUE(log.contains("id 3")) << log.text();
}

TEST_F(test_uct_iface, ep_failure_goes_to_the_installed_error_handler)
{
    handler_log hl;
    uct_entity_params params;

    params.err_handler     = handler_log::err_cb;
    params.err_handler_arg = &hl;
    uct_test_entity *e = create_entity(m_entity->resource(), params);
    uct_ep_h ep = e->create_ep();

    EXPECT_UCS_OK(uct_iface_handle_ep_err(e->iface(), ep, UCS_ERR_CONNECTION_RESET));
    ASSERT_EQ(1u, hl.calls.size());
    EXPECT_EQ((void*)ep, hl.calls[0].first);
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, hl.calls[0].second);
}

TEST_F(test_uct_iface, ep_failure_without_handler_is_logged_and_returned)
{
    uct_ep_h ep = m_entity->create_ep();
    uct_log_capture log(UCS_LOG_LEVEL_ERROR);

    EXPECT_EQ(UCS_ERR_CONNECTION_RESET,
              uct_iface_handle_ep_err(iface(), ep, UCS_ERR_CONNECTION_RESET));
    EXPECT_TRUE(log.contains("gtest_tl")) << log.text();
}

TEST_F(test_uct_iface, open_needs_a_known_transport_and_a_device)
{
    uct_iface_config_t *config;
    uct_iface_params_t params;
    uct_iface_h iface;
    uct_log_capture log(UCS_LOG_LEVEL_ERROR);

    ASSERT_UCS_OK(uct_md_iface_config_read(m_entity->md(), "gtest_tl", NULL, NULL,
                                           &config));
    memset(&params, 0, sizeof(params));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_iface_open(m_entity->md(), m_entity->worker(), &params, config,
                             &iface));

    params.field_mask      = UCT_IFACE_PARAM_FIELD_DEVICE;
    params.device.tl_name  = "no_such_tl";
    params.device.dev_name = "fake0";
    EXPECT_EQ(UCS_ERR_NO_DEVICE,
              uct_iface_open(m_entity->md(), m_entity->worker(), &params, config,
                             &iface));

    params.device.tl_name = "gtest_tl";
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_iface_open(m_entity->md(), m_entity->worker(), &params, NULL,
                             &iface));
    uct_config_release(config);
}

TEST_F(test_uct_iface, base_init_requires_close_and_query)
{
    uct_iface_ops_t ops;
    uct_iface_params_t params;
    uct_base_iface_t base;
    uct_log_capture log(UCS_LOG_LEVEL_ERROR);

    memset(&ops, 0, sizeof(ops));
    memset(&params, 0, sizeof(params));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_base_iface_init(&base, &ops, m_entity->md(), m_entity->worker(),
                                  &params, NULL));
}

/* ---- descriptors, pending queue, iov: helpers the transports share ------ */

namespace {

struct test_releaser {
    uct_recv_desc_t     rdesc;
    std::vector<void*> released;

    static void release(uct_recv_desc_t *self, void *desc)
    {
        test_releaser *r = ucs_container_of(self, test_releaser, rdesc);
        r->released.push_back(desc);
    }
};

struct test_pending {
    uct_pending_req_t        req;
    std::vector<ucs_status_t> script; /* statuses to return, in order */
    std::vector<int>         *order;
    int                      tag;
    size_t                   calls = 0;

    static ucs_status_t cb(uct_pending_req_t *self)
    {
        test_pending *p = ucs_container_of(self, test_pending, req);
        p->order->push_back(p->tag);
        ucs_status_t st = p->script.at(std::min(p->calls, p->script.size() - 1));
        ++p->calls;
        return st;
    }
};

} // namespace

TEST(test_uct_base, release_desc_calls_the_release_stored_before_the_descriptor)
{
    test_releaser r;
    r.rdesc.release = test_releaser::release;

    /* [release pointer][desc ...]: deliberately unaligned. */
    std::vector<char> buffer(3 + UCT_RECV_DESC_HDR_SIZE + 32);
    void *desc = &buffer[3 + UCT_RECV_DESC_HDR_SIZE];
    uct_recv_desc_set(desc, &r.rdesc);
    EXPECT_EQ(&r.rdesc, uct_recv_desc_get(desc));

    uct_iface_release_desc(desc);
    ASSERT_EQ(1u, r.released.size());
    EXPECT_EQ(desc, r.released[0]);
}

TEST(test_uct_base, pending_queue_dispatches_in_order_until_out_of_resources)
{
    uct_pending_queue_t pq;
    std::vector<int> order;
    test_pending a, b, c;

    uct_pending_queue_init(&pq);
    EXPECT_TRUE(uct_pending_queue_is_empty(&pq));

    a.tag = 1; a.order = &order; a.req.func = test_pending::cb;
    b.tag = 2; b.order = &order; b.req.func = test_pending::cb;
    c.tag = 3; c.order = &order; c.req.func = test_pending::cb;
    a.script = {UCS_INPROGRESS, UCS_OK};      /* partial progress, then done */
    b.script = {UCS_ERR_NO_RESOURCE, UCS_OK}; /* stalls once */
    c.script = {UCS_OK};

    uct_pending_queue_push(&pq, &a.req);
    uct_pending_queue_push(&pq, &b.req);
    uct_pending_queue_push(&pq, &c.req);

    EXPECT_EQ(1u, uct_pending_queue_dispatch(&pq)); /* a done, b stalls */
    EXPECT_EQ((std::vector<int>{1, 1, 2}), order);
    EXPECT_FALSE(uct_pending_queue_is_empty(&pq));

    EXPECT_EQ(2u, uct_pending_queue_dispatch(&pq)); /* b first again, then c */
    EXPECT_EQ((std::vector<int>{1, 1, 2, 2, 3}), order);
    EXPECT_TRUE(uct_pending_queue_is_empty(&pq));
}

TEST(test_uct_base, pending_purge_hands_every_request_back)
{
    uct_pending_queue_t pq;
    test_pending a, b;
    std::vector<uct_pending_req_t*> purged;

    uct_pending_queue_init(&pq);
    uct_pending_queue_push(&pq, &a.req);
    uct_pending_queue_push(&pq, &b.req);
    uct_pending_queue_purge(&pq, [](uct_pending_req_t *req, void *arg) {
        static_cast<std::vector<uct_pending_req_t*>*>(arg)->push_back(req);
    }, &purged);

    EXPECT_EQ((std::vector<uct_pending_req_t*>{&a.req, &b.req}), purged);
    EXPECT_TRUE(uct_pending_queue_is_empty(&pq));

    uct_pending_queue_push(&pq, &a.req);
    uct_pending_queue_purge(&pq, NULL, NULL); /* no callback: just emptied */
    EXPECT_TRUE(uct_pending_queue_is_empty(&pq));
}

TEST(test_uct_base, iov_helpers_gather_and_scatter_strided_elements)
{
    char src[32], gathered[32], scattered[32];
    for (int i = 0; i < 32; ++i) {
        src[i] = (char)i;
    }

    /* Bytes 0-1, 4-5, 8-9 (3 strided blocks), then 20-23, then nothing. */
    uct_iov_t iov[3] = {
        {src, 2, NULL, 4, 3},
        {src + 20, 4, NULL, 0, 1},
        {NULL, 0, NULL, 0, 0}
    };
    EXPECT_EQ(10u, uct_iov_total_length(iov, 3));
    EXPECT_EQ(10u, uct_iov_to_buffer(iov, 3, gathered));
    const char expected[] = {0, 1, 4, 5, 8, 9, 20, 21, 22, 23};
    EXPECT_EQ(0, memcmp(expected, gathered, sizeof(expected)));

    memset(scattered, -1, sizeof(scattered));
    uct_iov_t out[2] = {{scattered, 2, NULL, 4, 3}, {scattered + 20, 4, NULL, 0, 0}};
    EXPECT_EQ(10u, uct_iov_from_buffer(out, 2, gathered));
    for (int i = 0; i < 32; ++i) {
        bool written = ((i < 10) && (i % 4 < 2)) || ((i >= 20) && (i < 24));
        EXPECT_EQ(written ? (char)i : (char)-1, scattered[i]) << "byte " << i;
    }
}

/*
 * UCP chooses an endpoint's messaging lane from what the transports report,
 * not from their names. A test-only transport, "fake", registered here and
 * nowhere else, moves data with the posix transport's code but reports the
 * costs and reachability each test sets: the lane follows those figures.
 */
#include "ucp_test.h"

#include <uct/base/uct_component.h>
#include <uct/base/uct_md.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>

using namespace ucx_test;

namespace
{

/* What the fake transport reports; each test sets it before ucp_init. */
struct fake_figures {
    double overhead;
    double latency;
    bool reachable;
};

fake_figures fake_now;
uct_component_t *posix_component; /* the code the fake delegates to */
uct_tl_t *posix_tl;
ucs_status_t (*posix_iface_query)(uct_iface_h, uct_iface_attr_t *);
int (*posix_iface_is_reachable)(const uct_iface_h, const uct_device_addr_t *,
                                const uct_iface_addr_t *);

ucs_status_t fake_iface_query(uct_iface_h iface, uct_iface_attr_t *attr)
{
    ucs_status_t status = posix_iface_query(iface, attr);
    attr->overhead      = fake_now.overhead;
    attr->latency       = ucs_linear_func_make(fake_now.latency, 0);
    return status;
}

int fake_iface_is_reachable(const uct_iface_h iface, const uct_device_addr_t *dev,
                            const uct_iface_addr_t *addr)
{
    return fake_now.reachable && posix_iface_is_reachable(iface, dev, addr);
}

extern uct_component_t fake_component;

ucs_status_t fake_query_md_resources(uct_component_t *, uct_md_resource_desc_t **res_p,
                                     unsigned *num_p)
{
    *res_p = (uct_md_resource_desc_t *)calloc(1, sizeof(**res_p));
    if (*res_p == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    strcpy((*res_p)->md_name, "fake");
    *num_p = 1;
    return UCS_OK;
}

ucs_status_t fake_md_open(uct_component_t *, const char *, const uct_md_config_t *config,
                          uct_md_h *md_p)
{
    ucs_status_t status =
        posix_component->md_open(posix_component, "posix", config, md_p);
    if (status == UCS_OK) {
        (*md_p)->component = &fake_component; /* its transports are ours */
    }
    return status;
}

ucs_status_t fake_rkey_unpack(uct_component_t *, const void *buf, uct_rkey_t *rkey,
                              void **handle)
{
    return posix_component->rkey_unpack(posix_component, buf, rkey, handle);
}

ucs_status_t fake_rkey_release(uct_component_t *, uct_rkey_t rkey, void *handle)
{
    return posix_component->rkey_release(posix_component, rkey, handle);
}

ucs_status_t fake_query_devices(uct_md_h md, uct_tl_device_resource_t **devices_p,
                                unsigned *num_p)
{
    return posix_tl->query_devices(md, devices_p, num_p);
}

ucs_status_t fake_iface_open(uct_md_h md, uct_worker_h worker,
                             const uct_iface_params_t *params,
                             const uct_iface_config_t *config, uct_iface_h *iface_p)
{
    ucs_status_t status = posix_tl->iface_open(md, worker, params, config, iface_p);
    if (status != UCS_OK) {
        return status;
    }
    posix_iface_query                  = (*iface_p)->ops.iface_query;
    posix_iface_is_reachable           = (*iface_p)->ops.iface_is_reachable;
    (*iface_p)->ops.iface_query        = fake_iface_query;
    (*iface_p)->ops.iface_is_reachable = fake_iface_is_reachable;
    return UCS_OK;
}

uct_component_t fake_component;
uct_tl_t fake_tl;

class test_ucp_lanes : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        uct_component_h *components;
        unsigned num;
        ASSERT_EQ(UCS_OK, uct_query_components(&components, &num));
        for (unsigned i = 0; i < num; ++i) {
            if (!strcmp(components[i]->name, "posix")) {
                posix_component = components[i];
            }
        }
        uct_release_component_list(components);
        if (posix_component == NULL) {
            GTEST_SKIP() << "no posix transport to delegate to";
        }
        posix_tl = uct_component_find_tl(posix_component, "posix");
        ASSERT_TRUE(posix_tl != NULL);

        memset(&fake_component, 0, sizeof(fake_component));
        strcpy(fake_component.name, "fake");
        fake_component.query_md_resources = fake_query_md_resources;
        fake_component.md_open            = fake_md_open;
        fake_component.rkey_unpack        = fake_rkey_unpack;
        fake_component.rkey_release       = fake_rkey_release;
        fake_component.md_config          = posix_component->md_config;
        memset(&fake_tl, 0, sizeof(fake_tl));
        strcpy(fake_tl.name, "fake");
        fake_tl.query_devices = fake_query_devices;
        fake_tl.iface_open    = fake_iface_open;
        fake_tl.config        = posix_tl->config;
        uct_component_register(&fake_component);
        uct_tl_register(&fake_component, &fake_tl);
    }

    void TearDown() override
    {
        if (posix_component != NULL) {
            uct_tl_unregister(&fake_component, &fake_tl);
            uct_component_unregister(&fake_component);
        }
    }

    /* The messaging transport of an ep between two workers of this process
     * over posix and fake, after a message went through it. */
    std::string messaging_lane(const fake_figures &figures)
    {
        fake_now = figures;
        ucp_entity a("posix,fake"), b("posix,fake");
        ucp_ep_h ep = a.connect(b.address());
        ucp_transport_entry_t entries[3];
        ucp_ep_attr_t attr;
        memset(&attr, 0, sizeof(attr));
        attr.field_mask             = UCP_EP_ATTR_FIELD_TRANSPORTS;
        attr.transports.entries     = entries;
        attr.transports.num_entries = 3;
        attr.transports.entry_size  = sizeof(entries[0]);
        EXPECT_EQ(UCS_OK, ucp_ep_query(ep, &attr));
        std::string lane =
            (attr.transports.num_entries > 0) ? entries[0].transport_name : "";

        uint64_t v = 1234, got = 0;
        ucp_request_param_t param;
        memset(&param, 0, sizeof(param));
        ucs_status_ptr_t sreq = ucp_tag_send_nbx(ep, &v, sizeof(v), 5, &param);
        EXPECT_EQ(UCS_OK, b.wait(ucp_tag_recv_nbx(b.worker(), &got, sizeof(got), 5, ~0ull,
                                                  &param)));
        EXPECT_EQ(UCS_OK, a.wait(sreq));
        EXPECT_EQ(v, got) << "over " << lane;
        a.close(ep);
        return lane;
    }
};

} // namespace

TEST_F(test_ucp_lanes, cheaper_transport_of_any_name_carries_the_messages)
{
    EXPECT_EQ("fake", messaging_lane({1e-9, 0, true}));
}

TEST_F(test_ucp_lanes, dearer_transport_loses_to_posix)
{
    EXPECT_EQ("posix", messaging_lane({1e-3, 1e-3, true}));
}

TEST_F(test_ucp_lanes, cheaper_transport_that_cannot_reach_the_peer_is_not_chosen)
{
    EXPECT_EQ("posix", messaging_lane({1e-9, 0, false}));
}

/*
 * Components, memory domains, transport resources and remote keys, through
 * the public API (the self component is always built in).
 */
#include "uct_test.h"

#include <uct/base/uct_md.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

using namespace ucx_test;

namespace {

class test_uct_component : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_component = uct_find_component("self");
        ASSERT_NE(nullptr, m_component) << "the self component must be built in";

        uct_md_config_t *config;
        ASSERT_UCS_OK(uct_md_config_read(m_component, NULL, NULL, &config));
        ucs_status_t status = uct_md_open(m_component, "self", config, &m_md);
        uct_config_release(config);
        ASSERT_UCS_OK(status);
    }

    void TearDown() override
    {
        if (m_md != NULL) {
            uct_md_close(m_md);
        }
    }

    uct_component_h m_component = NULL;
    uct_md_h        m_md        = NULL;
};

std::vector<std::string> component_names()
{
    std::vector<std::string> names;
    uct_component_h *components;
    unsigned count;

    EXPECT_UCS_OK(uct_query_components(&components, &count));
    for (unsigned i = 0; i < count; ++i) {
        uct_component_attr_t attr;
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        EXPECT_UCS_OK(uct_component_query(components[i], &attr));
        names.push_back(attr.name);
    }
    uct_release_component_list(components);
    return names;
}

} // namespace

TEST_F(test_uct_component, component_list_contains_self_once)
{
    std::vector<std::string> names = component_names();
    EXPECT_EQ(1, std::count(names.begin(), names.end(), "self"));

    /* Names are unique: a component registers once even if asked twice. */
    std::set<std::string> unique(names.begin(), names.end());
    EXPECT_EQ(unique.size(), names.size());
}

TEST_F(test_uct_component, component_list_is_stable_across_queries)
{
    EXPECT_EQ(component_names(), component_names());
}

TEST_F(test_uct_component, self_component_offers_one_md_named_self)
{
    uct_component_attr_t attr;

    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                      UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT |
                      UCT_COMPONENT_ATTR_FIELD_FLAGS;
    ASSERT_UCS_OK(uct_component_query(m_component, &attr));
    EXPECT_STREQ("self", attr.name);
    ASSERT_EQ(1u, attr.md_resource_count);

    std::vector<uct_md_resource_desc_t> mds(attr.md_resource_count);
    attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = mds.data();
    ASSERT_UCS_OK(uct_component_query(m_component, &attr));
    EXPECT_STREQ("self", mds[0].md_name);
}

TEST_F(test_uct_component, opening_an_unknown_md_fails)
{
    uct_md_config_t *config;
    uct_md_h md;

    ASSERT_UCS_OK(uct_md_config_read(m_component, NULL, NULL, &config));
    EXPECT_NE(UCS_OK, uct_md_open(m_component, "no_such_md", config, &md));
    uct_config_release(config);
}

TEST_F(test_uct_component, self_md_registers_host_memory_without_rkey)
{
    uct_md_attr_t attr;

    ASSERT_UCS_OK(uct_md_query(m_md, &attr));
    EXPECT_STREQ("self", attr.component_name);
    EXPECT_TRUE(attr.cap.flags & UCT_MD_FLAG_REG);
    EXPECT_TRUE(attr.cap.flags & UCT_MD_FLAG_RKEY_PTR);
    EXPECT_FALSE(attr.cap.flags & UCT_MD_FLAG_NEED_RKEY);
    EXPECT_FALSE(attr.cap.flags & UCT_MD_FLAG_ALLOC);
    EXPECT_EQ(UCS_BIT(UCS_MEMORY_TYPE_HOST), attr.cap.reg_mem_types);
    EXPECT_EQ(UCS_BIT(UCS_MEMORY_TYPE_HOST), attr.cap.access_mem_types);
    EXPECT_EQ(0u, attr.cap.detect_mem_types);
    EXPECT_GT(attr.rkey_packed_size, 0u);
}

TEST_F(test_uct_component, self_md_lists_self_transport_on_memory_device)
{
    uct_tl_resource_desc_t *resources;
    unsigned count;

    ASSERT_UCS_OK(uct_md_query_tl_resources(m_md, &resources, &count));
    ASSERT_EQ(1u, count);
    EXPECT_STREQ("self", resources[0].tl_name);
    EXPECT_STREQ("memory", resources[0].dev_name);
    EXPECT_EQ(UCT_DEVICE_TYPE_SELF, resources[0].dev_type);
    uct_release_tl_resource_list(resources);
}

TEST_F(test_uct_component, resource_enumeration_finds_self_by_transport_name)
{
    std::vector<uct_resource> all  = uct_enum_resources();
    std::vector<uct_resource> self = uct_enum_resources("self");

    ASSERT_EQ(1u, self.size());
    EXPECT_EQ("self", self[0].component);
    EXPECT_EQ("self", self[0].md_name);
    EXPECT_EQ("memory", self[0].dev_name);
    EXPECT_GE(all.size(), self.size());
    EXPECT_TRUE(uct_enum_resources("no_such_tl").empty());
    EXPECT_TRUE(uct_enum_resources("self", "no_such_dev").empty());
}

TEST_F(test_uct_component, mem_reg_rejects_empty_or_null_ranges)
{
    char buf[64];
    uct_mem_h memh;

    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_md_mem_reg(m_md, buf, 0, 0, &memh));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_md_mem_reg(m_md, NULL, sizeof(buf), 0, &memh));

    ASSERT_UCS_OK(uct_md_mem_reg(m_md, buf, sizeof(buf), UCT_MD_MEM_ACCESS_ALL, &memh));
    EXPECT_NE(nullptr, memh);
    EXPECT_UCS_OK(uct_md_mem_dereg(m_md, memh));
}

TEST_F(test_uct_component, missing_optional_md_ops_give_documented_errors)
{
    char buf[64];
    void *address;
    size_t length = 4096;
    uct_mem_h memh;
    ucs_memory_type_t mem_type;
    uct_md_mem_attr_t mem_attr;

    /* The self md leaves alloc, detect and mem_query unimplemented. */
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_md_mem_alloc(m_md, &length, &address, UCS_MEMORY_TYPE_HOST, 0,
                               "test", &memh));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_md_mem_free(m_md, (uct_mem_h)buf));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              uct_md_detect_memory_type(m_md, buf, sizeof(buf), &mem_type));
    mem_attr.field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE;
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_md_mem_query(m_md, buf, sizeof(buf), &mem_attr));

    /* Bad arguments are refused before the md is asked. */
    length = 0;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_md_mem_alloc(m_md, &length, &address, UCS_MEMORY_TYPE_HOST, 0,
                               "test", &memh));
}

TEST_F(test_uct_component, packed_rkey_unpacks_in_the_same_process)
{
    uint64_t value = 0x1122334455667788ull;
    uct_md_attr_t attr;
    uct_mem_h memh;

    ASSERT_UCS_OK(uct_md_query(m_md, &attr));
    ASSERT_UCS_OK(uct_md_mem_reg(m_md, &value, sizeof(value), UCT_MD_MEM_ACCESS_ALL,
                                 &memh));
    std::string blob(attr.rkey_packed_size, '\0');
    ASSERT_UCS_OK(uct_md_mkey_pack(m_md, memh, &blob[0]));

    uct_rkey_bundle_t bundle;
    ASSERT_UCS_OK(uct_rkey_unpack(m_component, blob.data(), &bundle));
    EXPECT_NE(UCT_INVALID_RKEY, bundle.rkey);

    void *ptr = NULL;
    ASSERT_UCS_OK(uct_rkey_ptr(m_component, &bundle, (uintptr_t)&value, &ptr));
    EXPECT_EQ((void*)&value, ptr);
    EXPECT_EQ(value, *(uint64_t*)ptr);

    EXPECT_UCS_OK(uct_rkey_release(m_component, &bundle));
    EXPECT_UCS_OK(uct_md_mem_dereg(m_md, memh));
}

TEST_F(test_uct_component, garbage_rkey_is_rejected_without_crashing)
{
    uct_md_attr_t attr;
    uct_rkey_bundle_t bundle;

    ASSERT_UCS_OK(uct_md_query(m_md, &attr));

    std::string zeros(attr.rkey_packed_size, '\0');
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_rkey_unpack(m_component, zeros.data(), &bundle));
    EXPECT_EQ(UCT_INVALID_RKEY, bundle.rkey);

    std::string noise(attr.rkey_packed_size, '\0');
    for (size_t i = 0; i < noise.size(); ++i) {
        noise[i] = (char)(i * 37 + 11);
    }
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_rkey_unpack(m_component, noise.data(), &bundle));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_rkey_unpack(m_component, NULL, &bundle));
}

TEST_F(test_uct_component, transports_are_found_by_name)
{
    EXPECT_NE(nullptr, uct_component_find_tl(m_component, "self"));
    EXPECT_EQ(nullptr, uct_component_find_tl(m_component, "tcp_or_whatever"));
    EXPECT_EQ(nullptr, uct_component_find_tl(m_component, NULL));
}

TEST(test_uct_component_registry, registration_is_idempotent_and_reversible)
{
    static uct_component_t fake; /* zeroed: lists are initialised on register */
    static uct_tl_t fake_tl;

    memset(&fake, 0, sizeof(fake));
    memset(&fake_tl, 0, sizeof(fake_tl));
    snprintf(fake.name, sizeof(fake.name), "gtest_fake");
    fake.query_md_resources = uct_component_query_single_md;
    snprintf(fake_tl.name, sizeof(fake_tl.name), "gtest_tl");

    /* A transport may register before its component (constructor order). */
    uct_tl_register(&fake, &fake_tl);
    uct_component_register(&fake);
    uct_component_register(&fake);
    uct_tl_register(&fake, &fake_tl);

    std::vector<std::string> names = component_names();
    EXPECT_EQ(1, std::count(names.begin(), names.end(), "gtest_fake"));
    EXPECT_EQ(&fake_tl, uct_component_find_tl(&fake, "gtest_tl"));
    EXPECT_EQ(1u, ucs_list_length(&fake.tl_list));

    uct_tl_unregister(&fake, &fake_tl);
    uct_component_unregister(&fake);
    uct_component_unregister(&fake);

    names = component_names();
    EXPECT_EQ(0, std::count(names.begin(), names.end(), "gtest_fake"));
    EXPECT_EQ(nullptr, uct_component_find_tl(&fake, "gtest_tl"));
}

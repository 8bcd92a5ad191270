/*
 * md and iface configuration: read from defaults and environment, modify,
 * release -- through the self transport, whose one option is
 * UCX_SELF_SEG_SIZE (default 8k).
 */
#include "uct_test.h"
#include "common/test_helpers.h"

#include <uct/base/uct_md.h>

using namespace ucx_test;

namespace {

class test_uct_config : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_component = uct_find_component("self");
        ASSERT_NE(nullptr, m_component);

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

    /* UCX_SELF_SEG_SIZE as read into the common part of the iface config. */
    static size_t seg_size(const uct_iface_config_t *config)
    {
        return config->max_bcopy;
    }

    uct_component_h m_component = NULL;
    uct_md_h        m_md        = NULL;
};

} // namespace

TEST_F(test_uct_config, md_config_reads_and_releases)
{
    uct_md_config_t *config = NULL;

    ASSERT_UCS_OK(uct_md_config_read(m_component, NULL, NULL, &config));
    ASSERT_NE(nullptr, config);
    uct_config_release(config);
    uct_config_release(NULL); /* harmless */
}

TEST_F(test_uct_config, iface_config_starts_from_table_defaults)
{
    scoped_setenv unset("UCX_SELF_SEG_SIZE", NULL);
    uct_iface_config_t *config;

    ASSERT_UCS_OK(uct_md_iface_config_read(m_md, "self", NULL, NULL, &config));
    EXPECT_EQ(8192u, seg_size(config));
    uct_config_release(config);
}

TEST_F(test_uct_config, environment_overrides_default)
{
    scoped_setenv env("UCX_SELF_SEG_SIZE", "4k");
    uct_iface_config_t *config;

    ASSERT_UCS_OK(uct_md_iface_config_read(m_md, "self", NULL, NULL, &config));
    EXPECT_EQ(4096u, seg_size(config));
    uct_config_release(config);
}

TEST_F(test_uct_config, environment_prefix_wins_over_plain_variable)
{
    scoped_setenv plain("UCX_SELF_SEG_SIZE", "4k");
    scoped_setenv prefixed("UCX_GTESTAPP_SELF_SEG_SIZE", "2k");
    uct_iface_config_t *config;

    ASSERT_UCS_OK(uct_md_iface_config_read(m_md, "self", "GTESTAPP", NULL, &config));
    EXPECT_EQ(2048u, seg_size(config));
    uct_config_release(config);
}

TEST_F(test_uct_config, bad_environment_value_fails_the_read_naming_it)
{
    scoped_setenv env("UCX_SELF_SEG_SIZE", "banana");
    uct_iface_config_t *config = NULL;
    uct_log_capture log(UCS_LOG_LEVEL_ERROR);

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_md_iface_config_read(m_md, "self", NULL, NULL, &config));
    EXPECT_TRUE(log.contains("SELF_SEG_SIZE")) << log.text();
}

TEST_F(test_uct_config, unknown_transport_has_no_config)
{
    uct_iface_config_t *config = NULL;
    uct_log_capture log(UCS_LOG_LEVEL_ERROR);

    EXPECT_EQ(UCS_ERR_NO_ELEM,
              uct_md_iface_config_read(m_md, "no_such_tl", NULL, NULL, &config));
}

TEST_F(test_uct_config, modify_accepts_names_with_and_without_table_prefix)
{
    scoped_setenv unset("UCX_SELF_SEG_SIZE", NULL);
    uct_iface_config_t *config;

    ASSERT_UCS_OK(uct_md_iface_config_read(m_md, "self", NULL, NULL, &config));
    ASSERT_UCS_OK(uct_config_modify(config, "SELF_SEG_SIZE", "1k"));
    EXPECT_EQ(1024u, seg_size(config));
    ASSERT_UCS_OK(uct_config_modify(config, "SEG_SIZE", "16k"));
    EXPECT_EQ(16384u, seg_size(config));
    uct_config_release(config);
}

TEST_F(test_uct_config, modify_with_bad_value_fails_and_keeps_old_value)
{
    scoped_setenv unset("UCX_SELF_SEG_SIZE", NULL);
    uct_iface_config_t *config;
    uct_log_capture log(UCS_LOG_LEVEL_ERROR);

    ASSERT_UCS_OK(uct_md_iface_config_read(m_md, "self", NULL, NULL, &config));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_config_modify(config, "SEG_SIZE", "lots"));
    EXPECT_EQ(8192u, seg_size(config));
    uct_config_release(config);
}

TEST_F(test_uct_config, modify_of_unknown_field_is_no_elem)
{
    uct_iface_config_t *config;
    uct_md_config_t *md_config;

    ASSERT_UCS_OK(uct_md_iface_config_read(m_md, "self", NULL, NULL, &config));
    EXPECT_EQ(UCS_ERR_NO_ELEM, uct_config_modify(config, "NO_SUCH_FIELD", "1"));
    uct_config_release(config);

    /* md configs work from the same void* entry points. */
    ASSERT_UCS_OK(uct_md_config_read(m_component, NULL, NULL, &md_config));
    EXPECT_EQ(UCS_ERR_NO_ELEM, uct_config_modify(md_config, "NO_SUCH_FIELD", "1"));
    uct_config_release(md_config);
}

TEST_F(test_uct_config, modified_seg_size_shows_in_iface_limits)
{
    uct_resource res = uct_enum_resources("self").at(0);
    uct_entity_params params;

    params.iface_config["SEG_SIZE"] = "1k";
    uct_test_entity e(res, params);
    EXPECT_EQ(1024u, e.iface_attr().cap.am.max_short);
    EXPECT_EQ(1024u, e.iface_attr().cap.am.max_bcopy);
    EXPECT_EQ(1024u, e.iface_attr().cap.am.max_zcopy);
}

TEST_F(test_uct_config, seg_size_below_header_size_is_refused_at_open)
{
    uct_resource res = uct_enum_resources("self").at(0);
    uct_entity_params params;
    uct_log_capture log(UCS_LOG_LEVEL_ERROR);

    params.iface_config["SEG_SIZE"] = "4";
    EXPECT_THROW(uct_test_entity e(res, params), uct_test_error);
    EXPECT_TRUE(log.contains("SEG_SIZE")) << log.text();
}

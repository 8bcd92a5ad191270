#include <ucs/type/status.h>

#include <gtest/gtest.h>

#include <set>
#include <string>

/* Values are ABI: programs built against upstream compare with literals
 * compiled into them. */
TEST(ucs_status, numeric_values_match_upstream_abi)
{
    EXPECT_EQ(0, UCS_OK);
    EXPECT_EQ(1, UCS_INPROGRESS);
    EXPECT_EQ(-1, UCS_ERR_NO_MESSAGE);
    EXPECT_EQ(-2, UCS_ERR_NO_RESOURCE);
    EXPECT_EQ(-4, UCS_ERR_NO_MEMORY);
    EXPECT_EQ(-5, UCS_ERR_INVALID_PARAM);
    EXPECT_EQ(-6, UCS_ERR_UNREACHABLE);
    EXPECT_EQ(-9, UCS_ERR_MESSAGE_TRUNCATED);
    EXPECT_EQ(-12, UCS_ERR_NO_ELEM);
    EXPECT_EQ(-16, UCS_ERR_CANCELED);
    EXPECT_EQ(-20, UCS_ERR_TIMED_OUT);
    EXPECT_EQ(-22, UCS_ERR_UNSUPPORTED);
    EXPECT_EQ(-25, UCS_ERR_CONNECTION_RESET);
    EXPECT_EQ(-40, UCS_ERR_FIRST_LINK_FAILURE);
    EXPECT_EQ(-60, UCS_ERR_FIRST_ENDPOINT_FAILURE);
    EXPECT_EQ(-80, UCS_ERR_ENDPOINT_TIMEOUT);
    EXPECT_EQ(-100, UCS_ERR_LAST);
    EXPECT_EQ(1u, sizeof(ucs_status_t));
}

TEST(ucs_status, every_code_has_a_distinct_description)
{
    std::set<std::string> seen;
    for (int s = UCS_INPROGRESS; s >= UCS_ERR_CONNECTION_RESET; --s) {
        const char *text = ucs_status_string((ucs_status_t)s);
        ASSERT_NE(nullptr, text);
        EXPECT_EQ(std::string::npos, std::string(text).find("Unknown")) << s;
        EXPECT_TRUE(seen.insert(text).second) << "duplicate text for " << s;
    }
}

TEST(ucs_status, unknown_and_ranged_codes_are_described)
{
    EXPECT_STREQ("Link failure", ucs_status_string((ucs_status_t)-45));
    EXPECT_STREQ("Endpoint failure", ucs_status_string((ucs_status_t)-70));
    EXPECT_STREQ("Endpoint timeout", ucs_status_string(UCS_ERR_ENDPOINT_TIMEOUT));
    EXPECT_STREQ("Unknown error -33", ucs_status_string((ucs_status_t)-33));
    EXPECT_STREQ("Unknown error 77", ucs_status_string((ucs_status_t)77));
}

TEST(ucs_status, pointer_encoding)
{
    int object;
    void *ok_ptr  = NULL;
    void *err_ptr = UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);

    EXPECT_FALSE(UCS_PTR_IS_ERR(ok_ptr));
    EXPECT_FALSE(UCS_PTR_IS_PTR(ok_ptr));
    EXPECT_EQ(UCS_OK, UCS_PTR_STATUS(ok_ptr));

    EXPECT_TRUE(UCS_PTR_IS_ERR(err_ptr));
    EXPECT_FALSE(UCS_PTR_IS_PTR(err_ptr));
    EXPECT_EQ(UCS_ERR_NO_MEMORY, UCS_PTR_STATUS(err_ptr));

    EXPECT_FALSE(UCS_PTR_IS_ERR(&object));
    EXPECT_TRUE(UCS_PTR_IS_PTR(&object));
    EXPECT_EQ(UCS_INPROGRESS, UCS_PTR_STATUS(&object));
}

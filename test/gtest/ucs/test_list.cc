#include <ucs/datastruct/list.h>

#include <gtest/gtest.h>

#include <vector>

namespace {

/* The link is deliberately not the first member, so that every
 * ucs_container_of() conversion is exercised with a non-zero offset. */
struct item {
    int             value;
    ucs_list_link_t link;
    double          padding;
};

std::vector<int> forward_values(ucs_list_link_t *head)
{
    std::vector<int> values;
    item *it;

    ucs_list_for_each(it, head, link) {
        values.push_back(it->value);
    }
    return values;
}

std::vector<int> backward_values(ucs_list_link_t *head)
{
    std::vector<int> values;
    item *it;

    ucs_list_for_each_reverse(it, head, link) {
        values.push_back(it->value);
    }
    return values;
}

class ucs_list : public ::testing::Test {
protected:
    void SetUp() override
    {
        ucs_list_head_init(&m_head);
        for (int i = 0; i < 8; ++i) {
            m_items[i].value = i;
        }
    }

    /* Both directions must agree: catches a broken prev or next pointer. */
    void expect_contents(ucs_list_link_t *head, const std::vector<int> &expected)
    {
        EXPECT_EQ(expected, forward_values(head));
        std::vector<int> reversed(expected.rbegin(), expected.rend());
        EXPECT_EQ(reversed, backward_values(head));
        EXPECT_EQ(expected.size(), ucs_list_length(head));
        EXPECT_EQ(expected.empty(), !!ucs_list_is_empty(head));
    }

    ucs_list_link_t m_head;
    item            m_items[8];
};

} // namespace

TEST_F(ucs_list, new_list_is_empty)
{
    item *it;
    int visited = 0;

    EXPECT_TRUE(ucs_list_is_empty(&m_head));
    EXPECT_EQ(0u, ucs_list_length(&m_head));
    ucs_list_for_each(it, &m_head, link) {
        ++visited;
    }
    EXPECT_EQ(0, visited);
}

TEST_F(ucs_list, static_initializer_makes_empty_list)
{
    static UCS_LIST_HEAD(static_head);
    EXPECT_TRUE(ucs_list_is_empty(&static_head));
    ucs_list_add_tail(&static_head, &m_items[0].link);
    expect_contents(&static_head, {0});
    ucs_list_del(&m_items[0].link);
    EXPECT_TRUE(ucs_list_is_empty(&static_head));
}

TEST_F(ucs_list, add_tail_keeps_insertion_order)
{
    for (int i = 0; i < 4; ++i) {
        ucs_list_add_tail(&m_head, &m_items[i].link);
    }
    expect_contents(&m_head, {0, 1, 2, 3});
}

TEST_F(ucs_list, add_head_reverses_insertion_order)
{
    for (int i = 0; i < 4; ++i) {
        ucs_list_add_head(&m_head, &m_items[i].link);
    }
    expect_contents(&m_head, {3, 2, 1, 0});
}

TEST_F(ucs_list, single_element_is_head_tail_and_only)
{
    ucs_list_add_tail(&m_head, &m_items[5].link);
    EXPECT_FALSE(ucs_list_is_empty(&m_head));
    EXPECT_TRUE(ucs_list_is_only(&m_head, &m_items[5].link));
    EXPECT_EQ(&m_items[5], ucs_list_head_elem(&m_head, item, link));
    EXPECT_EQ(&m_items[5], ucs_list_tail_elem(&m_head, item, link));

    ucs_list_add_tail(&m_head, &m_items[6].link);
    EXPECT_FALSE(ucs_list_is_only(&m_head, &m_items[5].link));
}

TEST_F(ucs_list, insert_before_and_after_element)
{
    ucs_list_add_tail(&m_head, &m_items[0].link);
    ucs_list_add_tail(&m_head, &m_items[3].link);
    ucs_list_insert_after(&m_items[0].link, &m_items[1].link);
    ucs_list_insert_before(&m_items[3].link, &m_items[2].link);
    ucs_list_insert_after(&m_items[3].link, &m_items[4].link);
    expect_contents(&m_head, {0, 1, 2, 3, 4});
}

TEST_F(ucs_list, next_and_prev_elements_follow_order)
{
    for (int i = 0; i < 3; ++i) {
        ucs_list_add_tail(&m_head, &m_items[i].link);
    }
    EXPECT_EQ(&m_items[1], ucs_list_next_elem(&m_items[0], link));
    EXPECT_EQ(&m_items[2], ucs_list_next_elem(&m_items[1], link));
    EXPECT_EQ(&m_items[0], ucs_list_prev_elem(&m_items[1], link));
}

TEST_F(ucs_list, del_unlinks_head_middle_and_tail)
{
    for (int i = 0; i < 5; ++i) {
        ucs_list_add_tail(&m_head, &m_items[i].link);
    }
    ucs_list_del(&m_items[2].link);
    expect_contents(&m_head, {0, 1, 3, 4});
    ucs_list_del(&m_items[0].link);
    expect_contents(&m_head, {1, 3, 4});
    ucs_list_del(&m_items[4].link);
    expect_contents(&m_head, {1, 3});
    ucs_list_del(&m_items[1].link);
    ucs_list_del(&m_items[3].link);
    expect_contents(&m_head, {});
}

TEST_F(ucs_list, deleted_element_can_be_added_again)
{
    ucs_list_add_tail(&m_head, &m_items[0].link);
    ucs_list_add_tail(&m_head, &m_items[1].link);
    ucs_list_del(&m_items[0].link);
    ucs_list_add_tail(&m_head, &m_items[0].link);
    expect_contents(&m_head, {1, 0});
}

TEST_F(ucs_list, extract_head_returns_elements_in_order)
{
    for (int i = 0; i < 3; ++i) {
        ucs_list_add_tail(&m_head, &m_items[i].link);
    }
    for (int i = 0; i < 3; ++i) {
        item *it = ucs_list_extract_head_elem(&m_head, item, link);
        EXPECT_EQ(i, it->value);
    }
    EXPECT_TRUE(ucs_list_is_empty(&m_head));
}

TEST_F(ucs_list, for_each_safe_allows_removing_every_element)
{
    item *it, *tmp;
    int visited = 0;

    for (int i = 0; i < 6; ++i) {
        ucs_list_add_tail(&m_head, &m_items[i].link);
    }
    ucs_list_for_each_safe(it, tmp, &m_head, link) {
        EXPECT_EQ(visited, it->value);
        ucs_list_del(&it->link);
        /* Poison the removed links: the loop must not read them again. */
        it->link.next = NULL;
        it->link.prev = NULL;
        ++visited;
    }
    EXPECT_EQ(6, visited);
    expect_contents(&m_head, {});
}

TEST_F(ucs_list, for_each_safe_allows_removing_some_elements)
{
    item *it, *tmp;

    for (int i = 0; i < 8; ++i) {
        ucs_list_add_tail(&m_head, &m_items[i].link);
    }
    ucs_list_for_each_safe(it, tmp, &m_head, link) {
        if (it->value % 2) {
            ucs_list_del(&it->link);
        }
    }
    expect_contents(&m_head, {0, 2, 4, 6});
}

TEST_F(ucs_list, for_each_safe_on_empty_list_visits_nothing)
{
    item *it, *tmp;
    int visited = 0;

    ucs_list_for_each_safe(it, tmp, &m_head, link) {
        ++visited;
    }
    EXPECT_EQ(0, visited);
}

TEST_F(ucs_list, splice_tail_concatenates_and_empties_source)
{
    ucs_list_link_t other;

    ucs_list_head_init(&other);
    for (int i = 0; i < 3; ++i) {
        ucs_list_add_tail(&m_head, &m_items[i].link);
    }
    for (int i = 3; i < 6; ++i) {
        ucs_list_add_tail(&other, &m_items[i].link);
    }
    ucs_list_splice_tail(&m_head, &other);
    expect_contents(&m_head, {0, 1, 2, 3, 4, 5});
    expect_contents(&other, {});
}

TEST_F(ucs_list, splice_head_prepends_in_order)
{
    ucs_list_link_t other;

    ucs_list_head_init(&other);
    ucs_list_add_tail(&m_head, &m_items[2].link);
    ucs_list_add_tail(&other, &m_items[0].link);
    ucs_list_add_tail(&other, &m_items[1].link);
    ucs_list_splice_head(&m_head, &other);
    expect_contents(&m_head, {0, 1, 2});
    expect_contents(&other, {});
}

TEST_F(ucs_list, splice_with_empty_lists_changes_nothing)
{
    ucs_list_link_t other;

    ucs_list_head_init(&other);
    ucs_list_splice_tail(&m_head, &other);
    expect_contents(&m_head, {});
    expect_contents(&other, {});

    ucs_list_add_tail(&m_head, &m_items[0].link);
    ucs_list_splice_tail(&m_head, &other);
    expect_contents(&m_head, {0});

    /* Splicing a non-empty list into an empty one moves everything. */
    ucs_list_splice_tail(&other, &m_head);
    expect_contents(&other, {0});
    expect_contents(&m_head, {});
}

TEST_F(ucs_list, splice_after_element_inserts_in_the_middle)
{
    ucs_list_link_t other;

    ucs_list_head_init(&other);
    ucs_list_add_tail(&m_head, &m_items[0].link);
    ucs_list_add_tail(&m_head, &m_items[3].link);
    ucs_list_add_tail(&other, &m_items[1].link);
    ucs_list_add_tail(&other, &m_items[2].link);
    ucs_list_splice_after(&m_items[0].link, &other);
    expect_contents(&m_head, {0, 1, 2, 3});
}

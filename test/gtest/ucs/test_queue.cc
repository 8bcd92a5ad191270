#include <ucs/datastruct/queue.h>

#include <gtest/gtest.h>

#include <vector>

namespace {

/* The link is not the first member, so conversions use a non-zero offset. */
struct item {
    int              value;
    ucs_queue_elem_t qelem;
};

class ucs_queue : public ::testing::Test {
protected:
    void SetUp() override
    {
        ucs_queue_head_init(&m_queue);
        for (int i = 0; i < 8; ++i) {
            m_items[i].value = i;
        }
    }

    void push_range(ucs_queue_head_t *queue, int first, int last)
    {
        for (int i = first; i <= last; ++i) {
            ucs_queue_push(queue, &m_items[i].qelem);
        }
    }

    static std::vector<int> values(ucs_queue_head_t *queue)
    {
        std::vector<int> result;
        item *it;

        ucs_queue_for_each(it, queue, qelem) {
            result.push_back(it->value);
        }
        return result;
    }

    /* Checks the contents and that the tail pointer is right, by pushing a
     * sentinel and pulling it back off the tail. */
    void expect_contents(ucs_queue_head_t *queue,
                         const std::vector<int> &expected)
    {
        item sentinel;

        EXPECT_EQ(expected, values(queue));
        EXPECT_EQ(expected.size(), ucs_queue_length(queue));
        EXPECT_EQ(expected.empty(), !!ucs_queue_is_empty(queue));

        sentinel.value = -1;
        ucs_queue_push(queue, &sentinel.qelem);
        EXPECT_EQ(&sentinel, ucs_queue_tail_elem_non_empty(queue, item, qelem));
        std::vector<int> with_sentinel = expected;
        with_sentinel.push_back(-1);
        EXPECT_EQ(with_sentinel, values(queue));
        EXPECT_TRUE(ucs_queue_remove(queue, &sentinel.qelem));
    }

    ucs_queue_head_t m_queue;
    item             m_items[8];
};

} // namespace

TEST_F(ucs_queue, new_queue_is_empty_and_pull_returns_null)
{
    EXPECT_TRUE(ucs_queue_is_empty(&m_queue));
    EXPECT_EQ(0u, ucs_queue_length(&m_queue));
    EXPECT_EQ(nullptr, ucs_queue_pull(&m_queue));
    expect_contents(&m_queue, {});
}

TEST_F(ucs_queue, pull_returns_elements_in_push_order)
{
    push_range(&m_queue, 0, 4);
    expect_contents(&m_queue, {0, 1, 2, 3, 4});
    for (int i = 0; i < 5; ++i) {
        ucs_queue_elem_t *elem = ucs_queue_pull(&m_queue);
        ASSERT_NE((void*)NULL, elem);
        EXPECT_EQ(i, ucs_queue_elem(elem, item, qelem)->value);
    }
    EXPECT_EQ(nullptr, ucs_queue_pull(&m_queue));
    expect_contents(&m_queue, {});
}

TEST_F(ucs_queue, queue_is_reusable_after_draining)
{
    push_range(&m_queue, 0, 1);
    ucs_queue_pull(&m_queue);
    ucs_queue_pull(&m_queue);
    /* The tail must have been reset when the last element left. */
    push_range(&m_queue, 2, 3);
    expect_contents(&m_queue, {2, 3});
}

TEST_F(ucs_queue, single_element_is_head_and_tail)
{
    ucs_queue_push(&m_queue, &m_items[3].qelem);
    EXPECT_EQ(&m_items[3], ucs_queue_head_elem_non_empty(&m_queue, item, qelem));
    EXPECT_EQ(&m_items[3], ucs_queue_tail_elem_non_empty(&m_queue, item, qelem));
    EXPECT_EQ(&m_items[3], ucs_queue_pull_elem_non_empty(&m_queue, item, qelem));
    EXPECT_TRUE(ucs_queue_is_empty(&m_queue));
}

TEST_F(ucs_queue, push_head_is_pulled_first)
{
    push_range(&m_queue, 1, 2);
    ucs_queue_push_head(&m_queue, &m_items[0].qelem);
    expect_contents(&m_queue, {0, 1, 2});
}

TEST_F(ucs_queue, push_head_on_empty_queue_sets_tail)
{
    ucs_queue_push_head(&m_queue, &m_items[0].qelem);
    ucs_queue_push(&m_queue, &m_items[1].qelem);
    expect_contents(&m_queue, {0, 1});
}

TEST_F(ucs_queue, for_each_safe_removes_selected_elements)
{
    ucs_queue_iter_t iter;
    item *it;
    std::vector<int> visited;

    push_range(&m_queue, 0, 7);
    ucs_queue_for_each_safe(it, iter, &m_queue, qelem) {
        visited.push_back(it->value);
        if (it->value % 3 == 0) {
            EXPECT_EQ(&it->qelem, ucs_queue_del_iter(&m_queue, iter));
        }
    }
    EXPECT_EQ(std::vector<int>({0, 1, 2, 3, 4, 5, 6, 7}), visited);
    expect_contents(&m_queue, {1, 2, 4, 5, 7});
}

TEST_F(ucs_queue, for_each_safe_removing_last_element_fixes_tail)
{
    ucs_queue_iter_t iter;
    item *it;

    push_range(&m_queue, 0, 3);
    ucs_queue_for_each_safe(it, iter, &m_queue, qelem) {
        if (it->value == 3) {
            ucs_queue_del_iter(&m_queue, iter);
        }
    }
    expect_contents(&m_queue, {0, 1, 2});
}

TEST_F(ucs_queue, for_each_safe_removing_everything_leaves_empty_queue)
{
    ucs_queue_iter_t iter;
    item *it;
    int visited = 0;

    push_range(&m_queue, 0, 4);
    ucs_queue_for_each_safe(it, iter, &m_queue, qelem) {
        ucs_queue_del_iter(&m_queue, iter);
        it->qelem.next = NULL; /* a removed element is not read again */
        ++visited;
    }
    EXPECT_EQ(5, visited);
    expect_contents(&m_queue, {});
}

TEST_F(ucs_queue, for_each_safe_on_empty_queue_visits_nothing)
{
    ucs_queue_iter_t iter;
    item *it;
    int visited = 0;

    ucs_queue_for_each_safe(it, iter, &m_queue, qelem) {
        ++visited;
    }
    EXPECT_EQ(0, visited);
}

TEST_F(ucs_queue, requeue_during_iteration_visits_element_again_at_tail)
{
    ucs_queue_iter_t iter;
    item *it;
    std::vector<int> visited;

    push_range(&m_queue, 0, 2);
    ucs_queue_for_each_safe(it, iter, &m_queue, qelem) {
        visited.push_back(it->value);
        if ((it->value == 0) && (visited.size() == 1)) {
            ucs_queue_del_iter(&m_queue, iter);
            ucs_queue_push(&m_queue, &it->qelem);
        }
    }
    EXPECT_EQ(std::vector<int>({0, 1, 2, 0}), visited);
    expect_contents(&m_queue, {1, 2, 0});
}

TEST_F(ucs_queue, remove_finds_element_anywhere)
{
    item outsider;

    push_range(&m_queue, 0, 3);
    EXPECT_TRUE(ucs_queue_remove(&m_queue, &m_items[1].qelem));
    EXPECT_TRUE(ucs_queue_remove(&m_queue, &m_items[3].qelem));
    EXPECT_FALSE(ucs_queue_remove(&m_queue, &outsider.qelem));
    expect_contents(&m_queue, {0, 2});
    EXPECT_TRUE(ucs_queue_remove(&m_queue, &m_items[0].qelem));
    EXPECT_TRUE(ucs_queue_remove(&m_queue, &m_items[2].qelem));
    expect_contents(&m_queue, {});
}

TEST_F(ucs_queue, splice_appends_source_and_empties_it)
{
    ucs_queue_head_t other;

    ucs_queue_head_init(&other);
    push_range(&m_queue, 0, 2);
    push_range(&other, 3, 5);
    ucs_queue_splice(&m_queue, &other);
    expect_contents(&m_queue, {0, 1, 2, 3, 4, 5});
    expect_contents(&other, {});
}

TEST_F(ucs_queue, splice_into_empty_queue_and_from_empty_queue)
{
    ucs_queue_head_t other;

    ucs_queue_head_init(&other);
    ucs_queue_splice(&m_queue, &other);
    expect_contents(&m_queue, {});

    push_range(&other, 0, 1);
    ucs_queue_splice(&m_queue, &other);
    expect_contents(&m_queue, {0, 1});
    expect_contents(&other, {});

    ucs_queue_splice(&m_queue, &other);
    expect_contents(&m_queue, {0, 1});
}

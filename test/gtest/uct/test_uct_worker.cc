/*
 * Worker progress: registered callbacks run every round, report their
 * events, and may be added or removed from inside a callback.
 */
#include "uct_test.h"

#include <uct/base/uct_worker.h>

#include <thread>
#include <vector>

using namespace ucx_test;

namespace {

class test_uct_worker : public ::testing::Test {
protected:
    void SetUp() override
    {
        ASSERT_UCS_OK(uct_worker_create(NULL, UCS_THREAD_MODE_SINGLE, &m_worker));
    }

    void TearDown() override
    {
        uct_worker_destroy(m_worker);
    }

    uct_worker_h m_worker = NULL;
};

/* A callback that counts its calls and reports @a events each time. */
struct counter {
    unsigned calls  = 0;
    unsigned events = 1;

    static unsigned cb(void *arg)
    {
        counter *self = static_cast<counter*>(arg);
        ++self->calls;
        return self->events;
    }
};

/* A callback that runs an arbitrary action (registering, unregistering). */
struct action {
    std::function<void()> fn;
    unsigned              calls = 0;

    static unsigned cb(void *arg)
    {
        action *self = static_cast<action*>(arg);
        ++self->calls;
        self->fn();
        return 0;
    }
};

} // namespace

TEST_F(test_uct_worker, idle_worker_reports_no_events)
{
    EXPECT_EQ(0u, uct_worker_progress(m_worker));
}

TEST_F(test_uct_worker, registered_callback_runs_every_round_and_reports_events)
{
    counter c;
    int id = -1;

    c.events = 3;
    uct_worker_progress_register_safe(m_worker, counter::cb, &c, 0, &id);
    EXPECT_GE(id, 0);

    EXPECT_EQ(3u, uct_worker_progress(m_worker));
    EXPECT_EQ(3u, uct_worker_progress(m_worker));
    EXPECT_EQ(2u, c.calls);

    uct_worker_progress_unregister_safe(m_worker, &id);
}

TEST_F(test_uct_worker, event_counts_of_all_callbacks_add_up)
{
    counter a, b;
    int id_a, id_b;

    a.events = 2;
    b.events = 5;
    uct_worker_progress_register_safe(m_worker, counter::cb, &a, 0, &id_a);
    uct_worker_progress_register_safe(m_worker, counter::cb, &b, 0, &id_b);
    EXPECT_NE(id_a, id_b);
    EXPECT_EQ(7u, uct_worker_progress(m_worker));

    uct_worker_progress_unregister_safe(m_worker, &id_a);
    uct_worker_progress_unregister_safe(m_worker, &id_b);
}

TEST_F(test_uct_worker, unregistered_callback_stops_and_id_is_reset)
{
    counter c;
    int id;

    uct_worker_progress_register_safe(m_worker, counter::cb, &c, 0, &id);
    uct_worker_progress(m_worker);
    uct_worker_progress_unregister_safe(m_worker, &id);
    EXPECT_EQ(-1, id);

    EXPECT_EQ(0u, uct_worker_progress(m_worker));
    EXPECT_EQ(1u, c.calls);

    /* A second unregister of the same (reset) id is harmless. */
    uct_worker_progress_unregister_safe(m_worker, &id);
    EXPECT_EQ(-1, id);
}

TEST_F(test_uct_worker, callback_may_unregister_itself)
{
    action self_remove;
    int id;

    self_remove.fn = [&] { uct_worker_progress_unregister_safe(m_worker, &id); };
    uct_worker_progress_register_safe(m_worker, action::cb, &self_remove, 0, &id);

    uct_worker_progress(m_worker);
    uct_worker_progress(m_worker);
    EXPECT_EQ(1u, self_remove.calls);
    EXPECT_EQ(-1, id);
}

TEST_F(test_uct_worker, callback_registered_from_a_callback_runs_from_next_round)
{
    counter added;
    action adder;
    int adder_id, added_id = -1;

    adder.fn = [&] {
        if (added_id < 0) {
            uct_worker_progress_register_safe(m_worker, counter::cb, &added, 0,
                                              &added_id);
        }
    };
    uct_worker_progress_register_safe(m_worker, action::cb, &adder, 0, &adder_id);

    uct_worker_progress(m_worker);
    EXPECT_GE(added_id, 0);
    EXPECT_EQ(0u, added.calls) << "must not run in the round that added it";

    uct_worker_progress(m_worker);
    EXPECT_EQ(1u, added.calls);

    uct_worker_progress_unregister_safe(m_worker, &adder_id);
    uct_worker_progress_unregister_safe(m_worker, &added_id);
}

TEST_F(test_uct_worker, callback_removed_by_an_earlier_one_does_not_run_that_round)
{
    action remover;
    counter victim;
    int remover_id, victim_id;

    /* Slots are used lowest first, so the remover runs before the victim. */
    uct_worker_progress_register_safe(m_worker, action::cb, &remover, 0, &remover_id);
    uct_worker_progress_register_safe(m_worker, counter::cb, &victim, 0, &victim_id);
    ASSERT_LT(remover_id, victim_id);
    remover.fn = [&] { uct_worker_progress_unregister_safe(m_worker, &victim_id); };

    uct_worker_progress(m_worker);
    EXPECT_EQ(0u, victim.calls);
    EXPECT_EQ(-1, victim_id);

    uct_worker_progress_unregister_safe(m_worker, &remover_id);
}

TEST_F(test_uct_worker, slot_freed_and_reused_in_one_round_waits_for_next_round)
{
    counter old_cb, new_cb;
    action swapper;
    int swapper_id, old_id, new_id = -1;

    uct_worker_progress_register_safe(m_worker, action::cb, &swapper, 0, &swapper_id);
    uct_worker_progress_register_safe(m_worker, counter::cb, &old_cb, 0, &old_id);
    swapper.fn = [&] {
        if (new_id < 0) {
            int freed = old_id;
            uct_worker_progress_unregister_safe(m_worker, &old_id);
            uct_worker_progress_register_safe(m_worker, counter::cb, &new_cb, 0,
                                              &new_id);
            EXPECT_EQ(freed, new_id); /* lowest free slot */
        }
    };

    uct_worker_progress(m_worker);
    EXPECT_EQ(0u, old_cb.calls);
    EXPECT_EQ(0u, new_cb.calls);
    uct_worker_progress(m_worker);
    EXPECT_EQ(1u, new_cb.calls);

    uct_worker_progress_unregister_safe(m_worker, &swapper_id);
    uct_worker_progress_unregister_safe(m_worker, &new_id);
}

TEST_F(test_uct_worker, oneshot_callback_runs_once)
{
    counter c;
    int id;

    uct_worker_progress_register_safe(m_worker, counter::cb, &c, UCT_WORKER_CB_FLAG_ONESHOT,
                                      &id);
    EXPECT_EQ(1u, uct_worker_progress(m_worker));
    EXPECT_EQ(0u, uct_worker_progress(m_worker));
    EXPECT_EQ(1u, c.calls);
}

TEST_F(test_uct_worker, running_out_of_slots_gives_an_invalid_id)
{
    std::vector<int> ids(UCT_WORKER_MAX_CALLBACKS);
    counter c;
    int extra;
    uct_log_capture log(UCS_LOG_LEVEL_ERROR);

    for (int &id : ids) {
        uct_worker_progress_register_safe(m_worker, counter::cb, &c, 0, &id);
        EXPECT_GE(id, 0);
    }
    uct_worker_progress_register_safe(m_worker, counter::cb, &c, 0, &extra);
    EXPECT_EQ(-1, extra);
    EXPECT_TRUE(log.contains("callback")) << log.text();

    EXPECT_EQ((unsigned)UCT_WORKER_MAX_CALLBACKS, uct_worker_progress(m_worker));
    for (int &id : ids) {
        uct_worker_progress_unregister_safe(m_worker, &id);
    }
    EXPECT_EQ(0u, uct_worker_progress(m_worker));
}

TEST(test_uct_worker_mt, multi_thread_worker_accepts_callbacks_from_other_threads)
{
    uct_worker_h worker;
    counter c;
    int id = -1;

    ASSERT_UCS_OK(uct_worker_create(NULL, UCS_THREAD_MODE_MULTI, &worker));
    std::thread t([&] {
        uct_worker_progress_register_safe(worker, counter::cb, &c, 0, &id);
    });
    t.join();

    EXPECT_EQ(1u, uct_worker_progress(worker));
    std::thread u([&] { uct_worker_progress_unregister_safe(worker, &id); });
    u.join();
    EXPECT_EQ(0u, uct_worker_progress(worker));
    uct_worker_destroy(worker);
}

TEST(test_uct_worker_args, bad_thread_mode_is_refused)
{
    uct_worker_h worker;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_worker_create(NULL, UCS_THREAD_MODE_LAST, &worker));
}

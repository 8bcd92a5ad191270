/*
 * The event bus: handler order, removal, external events, producers.
 * No CUDA: events are reported with ucm_event_dispatch() or
 * ucm_vm_munmap(), and a fake producer stands for the CUDA module.
 */
#include <ucm/api/ucm.h>
#include <ucm/event/event.h>
#include <ucm/ucm_init.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace {

struct call_record {
    int              id;
    ucm_event_type_t type;
    void             *address;
    size_t           size;
};

std::mutex               g_calls_lock;
std::vector<call_record> g_calls;

void record(int id, ucm_event_type_t type, ucm_event_t *event)
{
    std::lock_guard<std::mutex> guard(g_calls_lock);
    if (type & (UCM_EVENT_MEM_TYPE_ALLOC | UCM_EVENT_MEM_TYPE_FREE)) {
        g_calls.push_back({id, type, event->mem_type.address,
                           event->mem_type.size});
    } else {
        g_calls.push_back({id, type, event->vm_unmapped.address,
                           event->vm_unmapped.size});
    }
}

void recording_cb(ucm_event_type_t type, ucm_event_t *event, void *arg)
{
    record((int)(intptr_t)arg, type, event);
}

void dispatch_mem_type(ucm_event_type_t type, void *address, size_t size)
{
    ucm_event_t event = {};

    event.mem_type.address  = address;
    event.mem_type.size     = size;
    event.mem_type.mem_type = UCS_MEMORY_TYPE_CUDA;
    ucm_event_dispatch(type, &event);
}

/* A producer of MEM_TYPE events standing for the CUDA module. */
struct fake_producer {
    static int          installs;
    static int          uninstalls;
    static int          tests;
    static ucs_status_t install_status;

    static ucs_status_t install(int events)
    {
        ++installs;
        return install_status;
    }

    static void uninstall()
    {
        ++uninstalls;
    }

    static ucs_status_t test(int events)
    {
        ++tests;
        return (installs > uninstalls) ? UCS_OK : UCS_ERR_UNSUPPORTED;
    }

    static void report_existing(ucm_event_callback_t cb, void *arg)
    {
        ucm_event_t event = {};

        event.mem_type.address  = (void*)0x1000;
        event.mem_type.size     = 0x100;
        event.mem_type.mem_type = UCS_MEMORY_TYPE_CUDA;
        cb(UCM_EVENT_MEM_TYPE_ALLOC, &event, arg);
    }
};

int          fake_producer::installs       = 0;
int          fake_producer::uninstalls     = 0;
int          fake_producer::tests          = 0;
ucs_status_t fake_producer::install_status = UCS_OK;

} // namespace

class ucm_events : public ::testing::Test {
protected:
    void SetUp() override
    {
        std::lock_guard<std::mutex> guard(g_calls_lock);
        g_calls.clear();
    }

    void TearDown() override
    {
        for (intptr_t id = 0; id < 8; ++id) {
            ucm_unset_event_handler(~0, recording_cb, (void*)id);
        }
        ucm_unset_external_event(UCM_EVENT_VM_MAPPED | UCM_EVENT_VM_UNMAPPED);
    }

    std::vector<int> call_ids()
    {
        std::lock_guard<std::mutex> guard(g_calls_lock);
        std::vector<int> ids;
        for (const call_record &call : g_calls) {
            ids.push_back(call.id);
        }
        return ids;
    }

};

/* The CUDA module would be a second producer of MEM_TYPE events (on a
 * machine with a CUDA driver); the fake producer must be the only one. */
#define SKIP_IF_UCM_MODULE_LOADED() \
    if (ucm_loaded_module_count() > 0) { \
        GTEST_SKIP() << "a ucm module (the CUDA hooks) is loaded; this test " \
                        "needs its fake producer to be the only one"; \
    }

TEST_F(ucm_events, handlers_run_in_ascending_priority)
{
    const int events = UCM_EVENT_MEM_TYPE_ALLOC | UCM_EVENT_FLAG_NO_INSTALL;

    ASSERT_EQ(UCS_OK, ucm_set_event_handler(events, 10, recording_cb,
                                            (void*)1));
    ASSERT_EQ(UCS_OK, ucm_set_event_handler(events, -5, recording_cb,
                                            (void*)2));
    ASSERT_EQ(UCS_OK, ucm_set_event_handler(events, 0, recording_cb,
                                            (void*)3));

    dispatch_mem_type(UCM_EVENT_MEM_TYPE_ALLOC, (void*)0x1000, 64);
    EXPECT_EQ((std::vector<int>{2, 3, 1}), call_ids());
}

TEST_F(ucm_events, equal_priority_keeps_registration_order)
{
    const int events = UCM_EVENT_MEM_TYPE_FREE | UCM_EVENT_FLAG_NO_INSTALL;

    for (intptr_t id = 1; id <= 4; ++id) {
        ASSERT_EQ(UCS_OK, ucm_set_event_handler(events, 7, recording_cb,
                                                (void*)id));
    }

    dispatch_mem_type(UCM_EVENT_MEM_TYPE_FREE, (void*)0x2000, 64);
    EXPECT_EQ((std::vector<int>{1, 2, 3, 4}), call_ids());
}

TEST_F(ucm_events, handler_sees_only_its_events_with_their_data)
{
    ASSERT_EQ(UCS_OK,
              ucm_set_event_handler(UCM_EVENT_MEM_TYPE_FREE |
                                    UCM_EVENT_FLAG_NO_INSTALL, 0,
                                    recording_cb, (void*)1));

    dispatch_mem_type(UCM_EVENT_MEM_TYPE_ALLOC, (void*)0x3000, 16);
    dispatch_mem_type(UCM_EVENT_MEM_TYPE_FREE, (void*)0x4000, 32);

    std::lock_guard<std::mutex> guard(g_calls_lock);
    ASSERT_EQ(1u, g_calls.size());
    EXPECT_EQ(UCM_EVENT_MEM_TYPE_FREE, g_calls[0].type);
    EXPECT_EQ((void*)0x4000, g_calls[0].address);
    EXPECT_EQ(32u, g_calls[0].size);
}

TEST_F(ucm_events, unset_removes_only_the_named_events)
{
    ASSERT_EQ(UCS_OK,
              ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC |
                                    UCM_EVENT_MEM_TYPE_FREE |
                                    UCM_EVENT_FLAG_NO_INSTALL, 0,
                                    recording_cb, (void*)1));
    ASSERT_EQ(UCS_OK,
              ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC |
                                    UCM_EVENT_FLAG_NO_INSTALL, 0,
                                    recording_cb, (void*)2));

    ucm_unset_event_handler(UCM_EVENT_MEM_TYPE_ALLOC, recording_cb, (void*)1);

    dispatch_mem_type(UCM_EVENT_MEM_TYPE_ALLOC, (void*)0x1000, 1);
    dispatch_mem_type(UCM_EVENT_MEM_TYPE_FREE, (void*)0x1000, 1);
    EXPECT_EQ((std::vector<int>{2, 1}), call_ids());

    /* Removing the last event removes the handler. */
    ucm_unset_event_handler(UCM_EVENT_MEM_TYPE_FREE, recording_cb, (void*)1);
    dispatch_mem_type(UCM_EVENT_MEM_TYPE_FREE, (void*)0x1000, 1);
    EXPECT_EQ((std::vector<int>{2, 1}), call_ids());
}

namespace {

std::atomic<int> g_slow_state;

void slow_cb(ucm_event_type_t type, ucm_event_t *event, void *arg)
{
    g_slow_state = 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    g_slow_state = 2;
}

} // namespace

TEST_F(ucm_events, unset_returns_only_after_running_handler_finished)
{
    g_slow_state = 0;
    ASSERT_EQ(UCS_OK,
              ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC |
                                    UCM_EVENT_FLAG_NO_INSTALL, 0, slow_cb,
                                    NULL));

    std::thread reporter([] {
        dispatch_mem_type(UCM_EVENT_MEM_TYPE_ALLOC, (void*)0x1000, 1);
    });
    while (g_slow_state == 0) {
        std::this_thread::yield();
    }

    ucm_unset_event_handler(UCM_EVENT_MEM_TYPE_ALLOC, slow_cb, NULL);
    /* The caller may now release what the handler uses. */
    EXPECT_EQ(2, g_slow_state.load());
    reporter.join();
}

namespace {

ucs_status_t g_nested_status;

void set_from_handler_cb(ucm_event_type_t type, ucm_event_t *event, void *arg)
{
    g_nested_status = ucm_set_event_handler(UCM_EVENT_MEM_TYPE_FREE |
                                            UCM_EVENT_FLAG_NO_INSTALL, 0,
                                            recording_cb, (void*)5);
}

void nested_dispatch_cb(ucm_event_type_t type, ucm_event_t *event, void *arg)
{
    ucm_vm_munmap(event->mem_type.address, event->mem_type.size);
}

} // namespace

TEST_F(ucm_events, changing_handlers_from_a_handler_is_refused)
{
    g_nested_status = UCS_OK;
    ASSERT_EQ(UCS_OK,
              ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC |
                                    UCM_EVENT_FLAG_NO_INSTALL, 0,
                                    set_from_handler_cb, NULL));

    dispatch_mem_type(UCM_EVENT_MEM_TYPE_ALLOC, (void*)0x1000, 1);
    ucm_unset_event_handler(UCM_EVENT_MEM_TYPE_ALLOC, set_from_handler_cb,
                            NULL);
    EXPECT_EQ(UCS_ERR_BUSY, g_nested_status);
}

TEST_F(ucm_events, event_reported_from_a_handler_is_delivered)
{
    ASSERT_EQ(UCS_OK,
              ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC |
                                    UCM_EVENT_FLAG_NO_INSTALL, 0,
                                    nested_dispatch_cb, NULL));
    ASSERT_EQ(UCS_OK,
              ucm_set_event_handler(UCM_EVENT_VM_UNMAPPED |
                                    UCM_EVENT_FLAG_NO_INSTALL, 0,
                                    recording_cb, (void*)1));

    dispatch_mem_type(UCM_EVENT_MEM_TYPE_ALLOC, (void*)0x5000, 77);
    ucm_unset_event_handler(UCM_EVENT_MEM_TYPE_ALLOC, nested_dispatch_cb,
                            NULL);

    std::lock_guard<std::mutex> guard(g_calls_lock);
    ASSERT_EQ(1u, g_calls.size());
    EXPECT_EQ(UCM_EVENT_VM_UNMAPPED, g_calls[0].type);
    EXPECT_EQ((void*)0x5000, g_calls[0].address);
    EXPECT_EQ(77u, g_calls[0].size);
}

TEST_F(ucm_events, external_vm_events_need_no_hooks_and_reach_handlers)
{
    /* Without a producer, VM events cannot be installed... */
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              ucm_set_event_handler(UCM_EVENT_VM_UNMAPPED, 0, recording_cb,
                                    (void*)1));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              ucm_test_external_events(UCM_EVENT_VM_UNMAPPED));

    /* ...but once the caller promises to report them, they can. */
    ucm_set_external_event(UCM_EVENT_VM_UNMAPPED | UCM_EVENT_VM_MAPPED);
    EXPECT_EQ(UCS_OK, ucm_test_external_events(UCM_EVENT_VM_UNMAPPED));
    ASSERT_EQ(UCS_OK, ucm_set_event_handler(UCM_EVENT_VM_UNMAPPED |
                                            UCM_EVENT_VM_MAPPED, 0,
                                            recording_cb, (void*)1));

    int buffer[4];
    ucm_vm_mmap(buffer, sizeof(buffer));
    ucm_vm_munmap(buffer, sizeof(buffer));

    std::lock_guard<std::mutex> guard(g_calls_lock);
    ASSERT_EQ(2u, g_calls.size());
    EXPECT_EQ(UCM_EVENT_VM_MAPPED, g_calls[0].type);
    EXPECT_EQ(UCM_EVENT_VM_UNMAPPED, g_calls[1].type);
    EXPECT_EQ((void*)buffer, g_calls[1].address);
    EXPECT_EQ(sizeof(buffer), g_calls[1].size);
}

TEST_F(ucm_events, unset_external_event_makes_it_unsupported_again)
{
    ucm_set_external_event(UCM_EVENT_VM_UNMAPPED);
    ucm_unset_external_event(UCM_EVENT_VM_UNMAPPED);
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              ucm_test_external_events(UCM_EVENT_VM_UNMAPPED));
}

TEST_F(ucm_events, system_call_events_are_never_installed)
{
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              ucm_set_event_handler(UCM_EVENT_MMAP | UCM_EVENT_MUNMAP, 0,
                                    recording_cb, (void*)1));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, ucm_test_events(UCM_EVENT_MUNMAP));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, ucm_test_events(UCM_EVENT_VM_UNMAPPED));

    /* A failed set registers nothing. */
    ucm_set_external_event(UCM_EVENT_VM_UNMAPPED);
    ucm_vm_munmap((void*)0x1000, 1);
    EXPECT_TRUE(call_ids().empty());
}

TEST_F(ucm_events, invalid_arguments_are_rejected)
{
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC, 0, NULL, NULL));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              ucm_set_event_handler(UCM_EVENT_FLAG_NO_INSTALL, 0,
                                    recording_cb, NULL));
}

TEST_F(ucm_events, producer_is_installed_on_first_need_and_tested)
{
    SKIP_IF_UCM_MODULE_LOADED();

    ucm_event_installer_t installer = {};
    installer.name            = "fake";
    installer.events          = UCM_EVENT_MEM_TYPE_ALLOC |
                                UCM_EVENT_MEM_TYPE_FREE;
    installer.install         = fake_producer::install;
    installer.uninstall       = fake_producer::uninstall;
    installer.test            = fake_producer::test;
    installer.report_existing = fake_producer::report_existing;
    fake_producer::installs       = 0;
    fake_producer::uninstalls     = 0;
    fake_producer::install_status = UCS_OK;

    EXPECT_EQ(UCS_ERR_UNSUPPORTED, ucm_test_events(UCM_EVENT_MEM_TYPE_ALLOC));

    ucm_event_installer_add(&installer);

    /* NO_INSTALL does not install. */
    ASSERT_EQ(UCS_OK, ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC |
                                            UCM_EVENT_FLAG_NO_INSTALL, 0,
                                            recording_cb, (void*)1));
    EXPECT_EQ(0, fake_producer::installs);

    ASSERT_EQ(UCS_OK, ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC, 0,
                                            recording_cb, (void*)2));
    EXPECT_EQ(1, fake_producer::installs);
    EXPECT_EQ(UCS_OK, ucm_test_events(UCM_EVENT_MEM_TYPE_ALLOC));

    /* A reinstall removes and installs again, for the handler that asked. */
    EXPECT_EQ(UCS_OK, ucm_event_reinstall());
    EXPECT_EQ(1, fake_producer::uninstalls);
    EXPECT_EQ(2, fake_producer::installs);

    ucm_event_installer_remove(&installer);
    EXPECT_EQ(2, fake_producer::uninstalls);
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, ucm_test_events(UCM_EVENT_MEM_TYPE_ALLOC));
}

TEST_F(ucm_events, failed_install_registers_no_handler)
{
    SKIP_IF_UCM_MODULE_LOADED();

    ucm_event_installer_t installer = {};
    installer.name      = "failing";
    installer.events    = UCM_EVENT_MEM_TYPE_ALLOC | UCM_EVENT_MEM_TYPE_FREE;
    installer.install   = fake_producer::install;
    installer.uninstall = fake_producer::uninstall;
    installer.test      = fake_producer::test;
    fake_producer::install_status = UCS_ERR_IO_ERROR;

    ucm_event_installer_add(&installer);
    EXPECT_EQ(UCS_ERR_IO_ERROR,
              ucm_set_event_handler(UCM_EVENT_MEM_TYPE_FREE, 0, recording_cb,
                                    (void*)1));
    dispatch_mem_type(UCM_EVENT_MEM_TYPE_FREE, (void*)0x1000, 1);
    EXPECT_TRUE(call_ids().empty());

    ucm_event_installer_remove(&installer);
    fake_producer::install_status = UCS_OK;
}

TEST_F(ucm_events, existing_alloc_flag_replays_to_the_new_handler_only)
{
    SKIP_IF_UCM_MODULE_LOADED();

    ucm_event_installer_t installer = {};
    installer.name            = "fake";
    installer.events          = UCM_EVENT_MEM_TYPE_ALLOC |
                                UCM_EVENT_MEM_TYPE_FREE;
    installer.install         = fake_producer::install;
    installer.uninstall       = fake_producer::uninstall;
    installer.test            = fake_producer::test;
    installer.report_existing = fake_producer::report_existing;
    fake_producer::install_status = UCS_OK;
    ucm_event_installer_add(&installer);

    ASSERT_EQ(UCS_OK, ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC, 0,
                                            recording_cb, (void*)1));
    EXPECT_TRUE(call_ids().empty());

    ASSERT_EQ(UCS_OK,
              ucm_set_event_handler(UCM_EVENT_MEM_TYPE_ALLOC |
                                    UCM_EVENT_FLAG_EXISTING_ALLOC, 0,
                                    recording_cb, (void*)2));
    {
        std::lock_guard<std::mutex> guard(g_calls_lock);
        ASSERT_EQ(1u, g_calls.size());
        EXPECT_EQ(2, g_calls[0].id);
        EXPECT_EQ(UCM_EVENT_MEM_TYPE_ALLOC, g_calls[0].type);
        EXPECT_EQ((void*)0x1000, g_calls[0].address);
    }

    ucm_event_installer_remove(&installer);
}

TEST_F(ucm_events, mem_type_event_keeps_upstream_layout_at_its_start)
{
    /* Programs built against upstream's header read these offsets. */
    EXPECT_EQ(0u, offsetof(ucm_event_t, mem_type.address));
    EXPECT_EQ(sizeof(void*), offsetof(ucm_event_t, mem_type.size));
    EXPECT_EQ(sizeof(void*) + sizeof(size_t),
              offsetof(ucm_event_t, mem_type.mem_type));
    EXPECT_EQ(0u, offsetof(ucm_event_t, vm_unmapped.address));
    EXPECT_EQ(sizeof(void*), offsetof(ucm_event_t, vm_unmapped.size));
    EXPECT_EQ(1 << 20, UCM_EVENT_MEM_TYPE_ALLOC);
    EXPECT_EQ(1 << 21, UCM_EVENT_MEM_TYPE_FREE);
    EXPECT_EQ(1 << 16, UCM_EVENT_VM_MAPPED);
    EXPECT_EQ(1 << 17, UCM_EVENT_VM_UNMAPPED);
    EXPECT_EQ(1 << 24, UCM_EVENT_FLAG_NO_INSTALL);
    EXPECT_EQ(1 << 25, UCM_EVENT_FLAG_EXISTING_ALLOC);
}

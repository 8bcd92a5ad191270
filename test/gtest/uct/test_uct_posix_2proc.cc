/*
 * The posix shared-memory transport between real processes: data in both
 * directions, several senders sharing one FIFO, RMA through packed keys,
 * peers that exit or are killed, blocking waits on the event fd.
 */
#include "uct_test.h"
#include "common/resource_census.h"
#include "common/test_helpers.h"

#include <dirent.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace ucx_test;

namespace {

const uint8_t AM_ID = 5;

std::string pattern_string(uint64_t seed, size_t length)
{
    std::string s(length, '\0');
    for (size_t i = 0; i < length; ++i) {
        s[i] = (char)uct_test_buffer::pattern(seed, i);
    }
    return s;
}

size_t pack_string(void *dest, void *arg)
{
    const std::string *s = static_cast<const std::string*>(arg);
    memcpy(dest, s->data(), s->size());
    return s->size();
}

/* Retry @a op while it says "no resource", progressing @a e (the peer is
 * another process and drains on its own). */
ucs_status_t send_retry(uct_test_entity &e, const std::function<ucs_status_t()> &op,
                        double timeout_sec = 10.0)
{
    ucs_status_t status = UCS_ERR_NO_RESOURCE;
    uct_progress_until([&] {
                           /* Let the receiver run: the test machine may
                            * have fewer cores than busy processes. */
                           sched_yield();
                           return e.progress();
                       },
                       [&] {
                           status = op();
                           return status != UCS_ERR_NO_RESOURCE;
                       },
                       timeout_sec);
    return status;
}

/* The message set of one direction: every am_short size, a range of bcopy
 * sizes and zcopy messages of header + two iov entries. */
struct message_plan {
    std::vector<std::string> expected;

    void send(uct_test_entity &e, uct_ep_h ep, uint64_t seed)
    {
        const uct_iface_attr_t &attr = e.iface_attr();

        for (size_t len = 0; len + 8 <= attr.cap.am.max_short; ++len) {
            std::string payload = pattern_string(seed + len, len);
            uint64_t header     = seed * 1000 + len;
            ASSERT_UCS_OK(send_retry(e, [&] {
                return uct_ep_am_short(ep, AM_ID, header, payload.data(),
                                       (unsigned)len);
            }));
        }
        for (size_t len = 0; len <= attr.cap.am.max_bcopy; len += 997) {
            std::string payload = pattern_string(seed + 5000 + len, len);
            ASSERT_UCS_OK(send_retry(e, [&] {
                ssize_t packed = uct_ep_am_bcopy(ep, AM_ID, pack_string, &payload, 0);
                return (packed < 0) ? (ucs_status_t)packed : UCS_OK;
            }));
        }
        for (size_t len = 2; len <= attr.cap.am.max_zcopy; len += 1499) {
            std::string hdr  = pattern_string(seed + 1, 32);
            std::string data = pattern_string(seed + 9000 + len, len);
            uct_iov_t iov[2] = {{&data[0], len / 2, NULL, 0, 1},
                                {&data[len / 2], len - len / 2, NULL, 0, 1}};
            ASSERT_UCS_OK(send_retry(e, [&] {
                return uct_ep_am_zcopy(ep, AM_ID, hdr.data(), 32, iov, 2, 0, NULL);
            }));
        }
    }

    /* What the receiver must see, computed from its own copy of the limits
     * (both sides run with the same configuration). */
    void expect(const uct_iface_attr_t &attr, uint64_t seed)
    {
        for (size_t len = 0; len + 8 <= attr.cap.am.max_short; ++len) {
            uint64_t header = seed * 1000 + len;
            expected.push_back(std::string((const char*)&header, 8) +
                               pattern_string(seed + len, len));
        }
        for (size_t len = 0; len <= attr.cap.am.max_bcopy; len += 997) {
            expected.push_back(pattern_string(seed + 5000 + len, len));
        }
        for (size_t len = 2; len <= attr.cap.am.max_zcopy; len += 1499) {
            expected.push_back(pattern_string(seed + 1, 32) +
                               pattern_string(seed + 9000 + len, len));
        }
    }
};

void receive_and_check(uct_test_entity &e, am_recorder &rec, uint64_t seed)
{
    message_plan plan;
    plan.expect(e.iface_attr(), seed);
    ASSERT_TRUE(uct_progress_until([&] { return e.progress(); },
                                   [&] { return rec.count() >= plan.expected.size(); }));
    ASSERT_EQ(plan.expected.size(), rec.count());
    for (size_t i = 0; i < rec.count(); ++i) {
        ASSERT_EQ(plan.expected[i], rec.msg(i).data) << "message " << i;
    }
}

struct err_state {
    std::atomic<int>          calls{0};
    std::atomic<ucs_status_t> status{UCS_OK};
};

ucs_status_t record_error(void *arg, uct_ep_h, ucs_status_t status)
{
    err_state *st = static_cast<err_state*>(arg);
    st->status    = status;
    ++st->calls;
    return UCS_OK;
}

/* Short AMs to a peer that was just killed, until the endpoint fails;
 * @return that failure, or UCS_ERR_TIMED_OUT after 10 s without one. */
ucs_status_t send_until_failure(uct_test_entity &e, uct_ep_h ep)
{
    auto deadline       = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    ucs_status_t status = UCS_OK;

    while ((status == UCS_OK) || (status == UCS_ERR_NO_RESOURCE)) {
        if (std::chrono::steady_clock::now() > deadline) {
            return UCS_ERR_TIMED_OUT;
        }
        status = uct_ep_am_short(ep, AM_ID, 0, NULL, 0);
        e.progress();
    }
    return status;
}

/* Whether this process maps or holds a file with inode @a inode. */
bool process_holds_inode(uint64_t inode)
{
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        std::istringstream in(line);
        std::string range, perms, offset, dev;
        uint64_t ino = 0;
        in >> range >> perms >> offset >> dev >> ino;
        if (ino == inode) {
            return true;
        }
    }
    return false;
}

} // namespace

class test_uct_posix_2proc : public uct_test {
};

TEST_P(test_uct_posix_2proc, am_of_every_kind_flows_both_ways_intact)
{
    auto side = [this](oob_channel &ch, bool first) {
        uct_test_entity e(resource());
        am_recorder rec(e, AM_ID);
        uct_ep_h ep = e.connect_over_oob(ch);
        message_plan plan;

        for (int round = 0; round < 2; ++round) {
            if ((round == 0) == first) {
                plan.send(e, ep, 100 + round);
            } else {
                receive_and_check(e, rec, 100 + round);
            }
            ASSERT_TRUE(ch.barrier());
        }
    };
    run_two_processes([&](oob_channel &ch) { side(ch, true); },
                      [&](oob_channel &ch) { side(ch, false); });
}

TEST_P(test_uct_posix_2proc, four_sender_threads_share_one_fifo_without_loss)
{
    const unsigned num_senders = 4, per_sender = 2000;

    run_two_processes(
        [&](oob_channel &ch) {
            /* A small FIFO, so that senders often find it full. */
            uct_entity_params params;
            params.iface_config["FIFO_SIZE"] = "16";
            uct_test_entity e(resource(), params);
            am_recorder rec(e, AM_ID);
            ASSERT_TRUE(ch.send_blob(e.address().pack()));

            ASSERT_TRUE(uct_progress_until([&] { return e.progress(); },
                                           [&] {
                                               return rec.count() >=
                                                      num_senders * per_sender;
                                           }));
            std::vector<uint64_t> next(num_senders, 0);
            for (const am_recorder::message &m : rec.messages()) {
                uint64_t hdr;
                ASSERT_GE(m.data.size(), 8u);
                memcpy(&hdr, m.data.data(), 8);
                unsigned sender = (unsigned)(hdr >> 32);
                ASSERT_LT(sender, num_senders);
                ASSERT_EQ(next[sender], hdr & 0xffffffffu) << "sender " << sender;
                ++next[sender];
                if (m.data.size() > 8) {
                    EXPECT_EQ(pattern_string(hdr, m.data.size() - 8), m.data.substr(8));
                }
            }
            EXPECT_EQ(num_senders * per_sender, rec.count());
            ASSERT_TRUE(ch.barrier());
        },
        [&](oob_channel &ch) {
            std::string blob;
            uct_peer_address peer;
            ASSERT_TRUE(ch.recv_blob(blob));
            ASSERT_TRUE(uct_peer_address::unpack(blob, peer));

            /* One iface per thread: uct objects are single-threaded, the
             * FIFO they all write to is not. */
            std::vector<std::unique_ptr<uct_test_entity>> senders;
            std::vector<uct_ep_h> eps;
            for (unsigned i = 0; i < num_senders; ++i) {
                senders.emplace_back(new uct_test_entity(resource()));
                eps.push_back(senders.back()->create_ep_to_iface(peer.dev_addr,
                                                                 peer.iface_addr));
            }

            std::vector<std::thread> threads;
            for (unsigned i = 0; i < num_senders; ++i) {
                threads.emplace_back([&, i] {
                    for (uint64_t seq = 0; seq < per_sender; ++seq) {
                        uint64_t hdr = ((uint64_t)i << 32) | seq;
                        ucs_status_t status;
                        if (seq % 2) {
                            status = send_retry(*senders[i], [&] {
                                return uct_ep_am_short(eps[i], AM_ID, hdr, NULL, 0);
                            });
                        } else {
                            std::string msg = std::string((const char*)&hdr, 8) +
                                              pattern_string(hdr, 8 + seq % 300);
                            status = send_retry(*senders[i], [&] {
                                ssize_t n = uct_ep_am_bcopy(eps[i], AM_ID, pack_string,
                                                            &msg, 0);
                                return (n < 0) ? (ucs_status_t)n : UCS_OK;
                            });
                        }
                        ASSERT_UCS_OK(status);
                    }
                });
            }
            for (std::thread &t : threads) {
                t.join();
            }
            ASSERT_TRUE(ch.barrier());
        });
}

TEST_P(test_uct_posix_2proc, put_and_get_reach_peer_memory_through_packed_rkey)
{
    const size_t length = 256 * 1024;

    run_two_processes(
        [&](oob_channel &ch) {
            uct_test_entity e(resource());
            uct_ep_h ep = e.connect_over_oob(ch);
            std::string rkey_blob;
            uint64_t remote;
            ASSERT_TRUE(ch.recv_blob(rkey_blob));
            ASSERT_TRUE(ch.recv(&remote, sizeof(remote)));
            uct_test_rkey rkey(e.component(), rkey_blob);

            /* Read what the owner wrote. */
            std::string got(length, '\0');
            uct_iov_t iov = {&got[0], length, NULL, 0, 1};
            ASSERT_UCS_OK(uct_ep_get_zcopy(ep, &iov, 1, remote, rkey.rkey(), NULL));
            EXPECT_EQ(pattern_string(9, length), got);

            /* Write three ranges with the three put flavours. */
            std::string a = pattern_string(10, 200);
            std::string b = pattern_string(11, e.iface_attr().cap.put.max_bcopy);
            std::string c = pattern_string(12, 100000);
            ASSERT_UCS_OK(uct_ep_put_short(ep, a.data(), (unsigned)a.size(), remote,
                                           rkey.rkey()));
            ASSERT_EQ((ssize_t)b.size(), uct_ep_put_bcopy(ep, pack_string, &b,
                                                          remote + 1000, rkey.rkey()));
            uct_iov_t civ = {&c[0], c.size(), NULL, 0, 1};
            ASSERT_UCS_OK(uct_ep_put_zcopy(ep, &civ, 1, remote + 100000, rkey.rkey(),
                                           NULL));
            e.flush_ep(ep);
            ASSERT_TRUE(ch.barrier()); /* the owner checks */
            ASSERT_TRUE(ch.barrier());
        },
        [&](oob_channel &ch) {
            uct_test_entity e(resource());
            e.connect_over_oob(ch);
            size_t len = length;
            void *ptr;
            uct_mem_h memh;
            ASSERT_UCS_OK(uct_md_mem_alloc(e.md(), &len, &ptr, UCS_MEMORY_TYPE_HOST, 0,
                                           "rma", &memh));
            char *mem = static_cast<char*>(ptr);
            std::string pattern = pattern_string(9, length);
            memcpy(mem, pattern.data(), length);

            std::string rkey_blob(e.md_attr().rkey_packed_size, '\0');
            ASSERT_UCS_OK(uct_md_mkey_pack(e.md(), memh, &rkey_blob[0]));
            uint64_t addr = (uintptr_t)mem;
            ASSERT_TRUE(ch.send_blob(rkey_blob));
            ASSERT_TRUE(ch.send(&addr, sizeof(addr)));

            ASSERT_TRUE(ch.barrier());
            std::string b = pattern_string(11, e.iface_attr().cap.put.max_bcopy);
            EXPECT_EQ(pattern_string(10, 200), std::string(mem, 200));
            EXPECT_EQ(pattern.substr(200, 800), std::string(mem + 200, 800));
            EXPECT_EQ(b, std::string(mem + 1000, b.size()));
            EXPECT_EQ(pattern_string(12, 100000), std::string(mem + 100000, 100000));
            ASSERT_TRUE(ch.barrier());
            uct_md_mem_free(e.md(), memh);
        });
}

TEST_P(test_uct_posix_2proc, sender_gets_error_not_hang_when_receiver_exits)
{
    run_two_processes(
        [&](oob_channel &ch) {
            err_state state;
            uct_entity_params params;
            params.err_handler     = record_error;
            params.err_handler_arg = &state;
            uct_test_entity e(resource(), params);
            uct_ep_h ep = e.connect_over_oob(ch);
            ucs_status_t status = UCS_OK;
            uint64_t seq        = 0;

            /* Stream until the peer's departure shows up as an error. */
            auto start = std::chrono::steady_clock::now();
            while ((status == UCS_OK) || (status == UCS_ERR_NO_RESOURCE)) {
                status = uct_ep_am_short(ep, AM_ID, seq, NULL, 0);
                seq   += (status == UCS_OK);
                e.progress();
                ASSERT_LT(std::chrono::steady_clock::now() - start,
                          std::chrono::seconds(10)) << "no error after " << seq;
            }
            EXPECT_GE(seq, 500u);
            EXPECT_TRUE((status == UCS_ERR_CONNECTION_RESET) ||
                        (status == UCS_ERR_ENDPOINT_TIMEOUT)) << ucs_status_string(status);
            e.progress();
            EXPECT_EQ(1, state.calls.load());
            EXPECT_EQ(status, state.status.load());
            EXPECT_EQ(status, uct_ep_flush(ep, 0, NULL));
            ch.barrier(); /* returns false: the peer is gone */
        },
        [&](oob_channel &ch) {
            uct_test_entity e(resource());
            am_recorder rec(e, AM_ID);
            e.connect_over_oob(ch);
            /* Take part of the stream, then leave while it still flows. */
            ASSERT_TRUE(uct_progress_until([&] { return e.progress(); },
                                           [&] { return rec.count() >= 500; }));
        });
}

TEST_P(test_uct_posix_2proc, killed_peer_fails_ep_and_leaves_no_segment_behind)
{
    std::vector<std::string> shm_before = dev_shm_ucx_entries();
    uint64_t fifo_inode = 0, mem_inode = 0;

    two_process_result result = run_two_processes_raw(
        [&](oob_channel &ch) {
            err_state state;
            uct_entity_params params;
            params.err_handler     = record_error;
            params.err_handler_arg = &state;
            uct_test_entity e(resource(), params);
            uct_ep_h ep = e.connect_over_oob(ch);
            std::string rkey_blob, peer_iface;
            pid_t pid;
            ASSERT_TRUE(ch.recv_blob(rkey_blob));
            ASSERT_TRUE(ch.recv_blob(peer_iface));
            ASSERT_TRUE(ch.recv(&pid, sizeof(pid)));
            memcpy(&fifo_inode, &peer_iface[16], 8); /* uct_mm_iface_addr_t::inode */
            memcpy(&mem_inode, &rkey_blob[16], 8);   /* packed rkey inode */

            {
                uct_test_rkey rkey(e.component(), rkey_blob);
                EXPECT_TRUE(process_holds_inode(fifo_inode));
                EXPECT_TRUE(process_holds_inode(mem_inode));
                EXPECT_EQ(shm_before, dev_shm_ucx_entries());
                ASSERT_UCS_OK(uct_ep_flush(ep, 0, NULL));

                ASSERT_EQ(0, kill(pid, SIGKILL));
                EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, send_until_failure(e, ep));
                e.progress();
                EXPECT_EQ(1, state.calls.load());
                EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, uct_ep_flush(ep, 0, NULL));
            }
            e.destroy_ep(ep);

            /* The killed process can no longer release anything; once the
             * survivor lets go, no name, mapping or descriptor remains. */
            EXPECT_FALSE(process_holds_inode(fifo_inode));
            EXPECT_FALSE(process_holds_inode(mem_inode));
            EXPECT_EQ(shm_before, dev_shm_ucx_entries());
        },
        [&](oob_channel &ch) {
            uct_test_entity e(resource());
            e.connect_over_oob(ch);
            size_t len = 1 << 20;
            void *ptr;
            uct_mem_h memh;
            std::string rkey_blob(e.md_attr().rkey_packed_size, '\0');
            pid_t pid = getpid();
            if ((uct_md_mem_alloc(e.md(), &len, &ptr, UCS_MEMORY_TYPE_HOST, 0, "victim",
                                  &memh) != UCS_OK) ||
                (uct_md_mkey_pack(e.md(), memh, &rkey_blob[0]) != UCS_OK) ||
                !ch.send_blob(rkey_blob) || !ch.send_blob(e.iface_address()) ||
                !ch.send(&pid, sizeof(pid))) {
                return;
            }
            for (;;) {
                pause(); /* until SIGKILL */
            }
        },
        20.0);

    EXPECT_NE(std::string::npos, result.error.find("signal 9")) << result.error;
    EXPECT_NE(0u, fifo_inode);
}

/*
 * Kernels before 5.3 and some container profiles have no pidfd_open: the
 * survivor then watches the peer's pid. Its killed child stays a zombie
 * until it is reaped, which kill(pid, 0) cannot tell from a live process;
 * the endpoint must fail all the same. The survivor runs in a child of its
 * own, as the filter that takes pidfd_open away cannot be undone.
 */
TEST_P(test_uct_posix_2proc, killed_peer_is_detected_without_pidfd)
{
#ifndef SYS_pidfd_open
#  define SYS_pidfd_open 434
#endif
    const uct_resource res = resource();

    run_two_processes([](oob_channel &) {}, [res](oob_channel &) {
        ASSERT_TRUE(refuse_syscall(SYS_pidfd_open, ENOSYS));
        two_process_result r = run_two_processes_raw(
            [res](oob_channel &ch) {
                err_state state;
                uct_entity_params params;
                params.err_handler     = record_error;
                params.err_handler_arg = &state;
                uct_test_entity e(res, params);
                uct_ep_h ep = e.connect_over_oob(ch);
                pid_t pid;
                ASSERT_TRUE(ch.recv(&pid, sizeof(pid)));
                ASSERT_UCS_OK(uct_ep_flush(ep, 0, NULL));

                ASSERT_EQ(0, kill(pid, SIGKILL));
                EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, send_until_failure(e, ep))
                        << "a zombie peer counted as alive";
                e.progress();
                EXPECT_EQ(1, state.calls.load());
                e.destroy_ep(ep);
            },
            [res](oob_channel &ch) {
                uct_test_entity e(res);
                e.connect_over_oob(ch);
                pid_t pid = getpid();
                if (!ch.send(&pid, sizeof(pid))) {
                    return;
                }
                for (;;) {
                    pause(); /* until SIGKILL */
                }
            },
            20.0);
        EXPECT_NE(std::string::npos, r.error.find("signal 9")) << r.error;
    }, 40.0);
}

TEST_P(test_uct_posix_2proc, event_fd_wakes_receiver_blocked_in_poll)
{
    run_two_processes(
        [&](oob_channel &ch) {
            uct_test_entity e(resource());
            am_recorder rec(e, AM_ID);
            e.connect_over_oob(ch);
            int fd;
            ASSERT_UCS_OK(uct_iface_event_fd_get(e.iface(), &fd));

            for (size_t expected = 1; expected <= 2; ++expected) {
                ASSERT_UCS_OK(uct_iface_event_arm(e.iface(), UCT_EVENT_RECV));
                char go = 'g';
                ASSERT_TRUE(ch.send(&go, 1));

                struct pollfd pfd = {fd, POLLIN, 0};
                auto start        = std::chrono::steady_clock::now();
                ASSERT_EQ(1, poll(&pfd, 1, 5000)) << "not woken";
                EXPECT_LT(std::chrono::steady_clock::now() - start,
                          std::chrono::seconds(4));
                ASSERT_TRUE(uct_progress_until([&] { return e.progress(); },
                                               [&] { return rec.count() == expected; }));
            }
            ASSERT_TRUE(ch.barrier());
        },
        [&](oob_channel &ch) {
            uct_test_entity e(resource());
            uct_ep_h ep = e.connect_over_oob(ch);
            std::string payload = "wake up";
            char go;

            /* First a plain am_short, then a bcopy with SIGNALED; each sent
             * after the receiver is already asleep. */
            ASSERT_TRUE(ch.recv(&go, 1));
            usleep(100000);
            ASSERT_UCS_OK(uct_ep_am_short(ep, AM_ID, 1, NULL, 0));
            ASSERT_TRUE(ch.recv(&go, 1));
            usleep(100000);
            ASSERT_EQ((ssize_t)payload.size(),
                      uct_ep_am_bcopy(ep, AM_ID, pack_string, &payload,
                                      UCT_SEND_FLAG_SIGNALED));
            ASSERT_TRUE(ch.barrier());
        });
}

/*
 * Not a check, a measurement (run with --gtest_also_run_disabled_tests):
 * 8-byte am_short ping-pong latency and am_bcopy streaming bandwidth
 * between two processes.
 */
TEST_P(test_uct_posix_2proc, DISABLED_pingpong_latency_and_bcopy_bandwidth)
{
    const size_t iters = 200000, warmup = 10000, bw_size = 8192, bw_iters = 200000;

    struct counter {
        static ucs_status_t cb(void *arg, void *, size_t, unsigned)
        {
            ++*static_cast<size_t*>(arg);
            return UCS_OK;
        }
    };

    auto side = [&](oob_channel &ch, bool initiator) {
        uct_test_entity e(resource());
        size_t received = 0;
        uct_iface_set_am_handler(e.iface(), AM_ID, counter::cb, &received, 0);
        uct_ep_h ep = e.connect_over_oob(ch);

        ASSERT_TRUE(ch.barrier());
        /* Time every round trip: on a shared machine the median says what
         * the transport costs, the average what the scheduler did. */
        std::vector<double> rtt;
        rtt.reserve(iters);
        auto start = std::chrono::steady_clock::now(), t0 = start;
        for (size_t i = 0; i < iters + warmup; ++i) {
            if (i == warmup) {
                start = std::chrono::steady_clock::now();
            }
            if (initiator) {
                t0 = std::chrono::steady_clock::now();
                while (uct_ep_am_short(ep, AM_ID, 0, NULL, 0) != UCS_OK) {
                    e.progress();
                }
                while (received <= i) {
                    e.progress();
                }
                if (i >= warmup) {
                    rtt.push_back(std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - t0).count());
                }
            } else {
                while (received <= i) {
                    e.progress();
                }
                while (uct_ep_am_short(ep, AM_ID, 0, NULL, 0) != UCS_OK) {
                    e.progress();
                }
            }
        }
        double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                   start).count();
        if (initiator) {
            std::sort(rtt.begin(), rtt.end());
            printf("posix am_short 8 B latency (half round trip): median %.1f ns, "
                   "average %.1f ns\n", rtt[rtt.size() / 2] / 2 * 1e9,
                   sec / iters / 2 * 1e9);
        }

        ASSERT_TRUE(ch.barrier());
        received = 0;
        std::string data(bw_size, 'b');
        start = std::chrono::steady_clock::now();
        if (initiator) {
            for (size_t i = 0; i < bw_iters; ++i) {
                while (uct_ep_am_bcopy(ep, AM_ID, pack_string, &data, 0) < 0) {
                    e.progress();
                }
            }
        } else {
            while (received < bw_iters) {
                e.progress();
            }
            sec = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                start).count();
            printf("posix am_bcopy %zu B bandwidth: %.0f MB/s\n", bw_size,
                   bw_size * bw_iters / sec / 1e6);
        }
        ASSERT_TRUE(ch.barrier());
    };
    run_two_processes([&](oob_channel &ch) { side(ch, true); },
                      [&](oob_channel &ch) { side(ch, false); });
}

UCT_INSTANTIATE_TEST_SUITE_P(test_uct_posix_2proc, "posix");

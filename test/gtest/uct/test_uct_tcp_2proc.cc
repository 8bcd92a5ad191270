/*
 * The tcp transport between real processes: data in both directions, a
 * peer that exits or is killed in the middle of a stream, and processes in
 * separate network namespaces (a veth pair, and the loopback of another
 * namespace, which must not be mistaken for ours).
 */
#include "test_uct_tcp.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace ucx_test;

namespace {

const uint8_t AM_ID = 3;

/* Message @a i of the stream sent by the side with @a seed: its flavour and
 * size vary with i; the payload is a pattern of (seed, i). */
struct stream_msg {
    enum { SHORT, BCOPY, ZCOPY } kind;
    std::string data;
};

stream_msg stream_message(uint64_t seed, unsigned i, size_t max_bcopy)
{
    static const size_t zcopy_sizes[] = {100000, 1 << 20, 4 << 20, 3, 70000};
    stream_msg m;

    switch (i % 3) {
    case 0:
        m.kind = stream_msg::SHORT;
        m.data = tcp_pattern(8 + i % 200, seed + i);
        break;
    case 1:
        m.kind = stream_msg::BCOPY;
        m.data = tcp_pattern((i % 2) ? max_bcopy : 1 + i * 13, seed + i);
        break;
    default:
        m.kind = stream_msg::ZCOPY;
        m.data = tcp_pattern(zcopy_sizes[(i / 3) % 5], seed + i);
        break;
    }
    return m;
}

/* Send stream_message(seed, 0 .. count-1) on @a ep and wait until the peer's
 * stream (peer_seed) has fully arrived at @a rec, checking every byte. */
void exchange_streams(uct_test_entity &e, uct_ep_h ep, am_recorder &rec, uint64_t seed,
                      uint64_t peer_seed, unsigned count)
{
    auto progress    = [&] { return e.progress(); };
    size_t max_bcopy = e.iface_attr().cap.am.max_bcopy;

    for (unsigned i = 0; i < count; ++i) {
        stream_msg m = stream_message(seed, i, max_bcopy);
        ucs_status_t status;

        switch (m.kind) {
        case stream_msg::SHORT: {
            uint64_t header;
            memcpy(&header, m.data.data(), sizeof(header));
            status = tcp_send_retry([&] {
                return uct_ep_am_short(ep, AM_ID, header, m.data.data() + 8,
                                       (unsigned)m.data.size() - 8);
            }, progress);
            break;
        }
        case stream_msg::BCOPY:
            status = tcp_send_retry([&] { return tcp_am_bcopy(ep, AM_ID, m.data); },
                                    progress);
            break;
        default:
            status = tcp_am_zcopy_wait(ep, AM_ID, "", m.data, progress);
            break;
        }
        ASSERT_UCS_OK(status);
    }

    ASSERT_TRUE(uct_progress_until(progress, [&] { return rec.count() >= count; }, 20))
            << rec.count() << " of " << count << " messages arrived";
    ASSERT_EQ(count, rec.count());
    for (unsigned i = 0; i < count; ++i) {
        ASSERT_TRUE(stream_message(peer_seed, i, max_bcopy).data == rec.msg(i).data)
                << "message " << i;
    }
}

/* Enter the network namespace named @a name (ip netns); the destructor goes
 * back to the one the thread was in. */
class scoped_netns {
public:
    explicit scoped_netns(const std::string &name) : m_orig(-1), m_ok(false)
    {
        m_orig = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        int fd = open(("/var/run/netns/" + name).c_str(), O_RDONLY | O_CLOEXEC);
        if ((m_orig >= 0) && (fd >= 0)) {
            m_ok = (setns(fd, CLONE_NEWNET) == 0);
        }
        if (fd >= 0) {
            close(fd);
        }
    }

    ~scoped_netns()
    {
        if (m_ok) {
            setns(m_orig, CLONE_NEWNET);
        }
        if (m_orig >= 0) {
            close(m_orig);
        }
    }

    bool ok() const { return m_ok; }

private:
    int  m_orig;
    bool m_ok;
};

/* Two network namespaces joined by a veth pair (ucxt0 in the first with
 * 10.213.7.1/24, ucxt1 in the second with 10.213.7.2/24), removed again in
 * the destructor. */
class veth_namespaces {
public:
    veth_namespaces()
    {
        std::string id = std::to_string(getpid());
        m_ns[0]        = "ucxt_a_" + id;
        m_ns[1]        = "ucxt_b_" + id;

        const std::string cmds[] = {
            "ip netns add " + m_ns[0],
            "ip netns add " + m_ns[1],
            "ip -n " + m_ns[0] + " link add ucxt0 type veth peer name ucxt1 netns " +
                    m_ns[1],
            "ip -n " + m_ns[0] + " addr add 10.213.7.1/24 dev ucxt0",
            "ip -n " + m_ns[1] + " addr add 10.213.7.2/24 dev ucxt1",
            "ip -n " + m_ns[0] + " link set ucxt0 up",
            "ip -n " + m_ns[1] + " link set ucxt1 up",
        };
        for (const std::string &cmd : cmds) {
            if (system((cmd + " >/dev/null 2>&1").c_str()) != 0) {
                m_error = "'" + cmd + "' failed";
                return;
            }
        }
    }

    ~veth_namespaces()
    {
        for (const std::string &ns : m_ns) {
            if (system(("ip netns del " + ns + " >/dev/null 2>&1").c_str()) != 0) {
                /* it was never created */
            }
        }
    }

    const std::string &error() const { return m_error; }
    const std::string &ns(int i) const { return m_ns[i]; }

private:
    std::string m_ns[2];
    std::string m_error;
};

/* Bring "lo" up in the current network namespace. */
bool loopback_up()
{
    struct ifreq ifr;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    bool ok;

    if (fd < 0) {
        return false;
    }
    memset(&ifr, 0, sizeof(ifr));
    strcpy(ifr.ifr_name, "lo");
    ok = (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0);
    ifr.ifr_flags |= IFF_UP;
    ok = ok && (ioctl(fd, SIOCSIFFLAGS, &ifr) == 0);
    close(fd);
    return ok;
}

} // namespace


class test_uct_tcp_2proc : public ::testing::Test {
protected:
    void SetUp() override
    {
        if (!tcp_lo_resource(m_res)) {
            GTEST_SKIP() << "the tcp transport offers no 'lo' device here";
        }
    }

    /*
     * The parent streams zcopy messages to the child until its error
     * handler reports the child's death. The child takes a few messages,
     * then exits (@a kill false) or is killed by SIGKILL.
     */
    void check_peer_death_mid_stream(bool kill)
    {
        uct_resource res = m_res;

        auto parent = [res](oob_channel &ch) {
            tcp_err_record err;
            uct_log_capture log(UCS_LOG_LEVEL_WARN);
            uct_test_entity e(res, err.params());
            am_recorder rec(e, AM_ID);
            uct_ep_h ep     = e.connect_over_oob(ch);
            std::string buf = tcp_pattern(256 * 1024, 5);
            uct_test_completion comp;
            unsigned started = 0, errors = 0;
            uct_iov_t iov;

            memset(&iov, 0, sizeof(iov));
            iov.buffer      = &buf[0];
            iov.length      = buf.size();
            iov.count       = 1;
            comp.comp.count = 0; /* nothing in flight */

            auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
            while ((err.calls == 0) && (std::chrono::steady_clock::now() < deadline)) {
                if (comp.comp.count == 0) {
                    comp.comp.count = 1;
                    ucs_status_t st = uct_ep_am_zcopy(ep, AM_ID, NULL, 0, &iov, 1, 0,
                                                      &comp.comp);
                    if (st == UCS_INPROGRESS) {
                        ++started;
                    } else {
                        comp.comp.count = 0;
                        if (UCS_STATUS_IS_ERR(st) && (st != UCS_ERR_NO_RESOURCE)) {
                            ++errors; /* the handler is due at the next progress */
                        }
                    }
                }
                e.progress();
            }

            ASSERT_EQ(1, err.calls) << "the survivor was not told about the peer's death";
            EXPECT_EQ(ep, err.ep);
            EXPECT_TRUE((err.status == UCS_ERR_CONNECTION_RESET) ||
                        (err.status == UCS_ERR_ENDPOINT_TIMEOUT))
                    << ucs_status_string(err.status);
            /* Whatever was in flight has completed, with the failure. */
            EXPECT_EQ(0, comp.comp.count);
            EXPECT_EQ(started, (unsigned)comp.calls);
            if (comp.calls > 0) {
                EXPECT_TRUE((comp.comp.status == UCS_OK) ||
                            (comp.comp.status == err.status));
            }
            EXPECT_EQ(err.status, tcp_am_bcopy(ep, AM_ID, "late"));

            /* The survivor's iface keeps working: a message to itself. */
            uct_ep_h self_ep = e.create_ep_to_iface(e.device_address(),
                                                    e.iface_address());
            ASSERT_UCS_OK(tcp_send_retry([&] { return tcp_am_bcopy(self_ep, AM_ID, "alive"); },
                                         [&] { return e.progress(); }));
            ASSERT_TRUE(uct_progress_until([&] { return e.progress(); }, [&] {
                return !rec.messages().empty() && (rec.messages().back().data == "alive");
            }));
            EXPECT_FALSE(log.contains("tcp")) << log.text();
        };

        auto child = [res, kill](oob_channel &ch) {
            uct_test_entity e(res);
            am_recorder rec(e, AM_ID);
            e.connect_over_oob(ch);
            ASSERT_TRUE(uct_progress_until([&] { return e.progress(); },
                                           [&] { return rec.count() >= 10; }));
            if (kill) {
                raise(SIGKILL);
            }
            _exit(0); /* no clean-up: the process just goes away */
        };

        if (kill) {
            two_process_result r = run_two_processes_raw(parent, child, 30.0);
            EXPECT_FALSE(r.ok);
            EXPECT_NE(std::string::npos, r.error.find("signal 9")) << r.error;
        } else {
            run_two_processes(parent, child, 30.0);
        }
    }

    uct_resource m_res;
};


TEST_F(test_uct_tcp_2proc, processes_exchange_short_bcopy_and_zcopy_messages_both_ways)
{
    unsigned count   = 30; /* not const: clang would call its capture redundant */
    uct_resource res = m_res;

    auto side = [res, count](uint64_t seed, uint64_t peer_seed) {
        return [res, count, seed, peer_seed](oob_channel &ch) {
            uct_test_entity e(res);
            am_recorder rec(e, AM_ID);
            uct_ep_h ep = e.connect_over_oob(ch);

            exchange_streams(e, ep, rec, seed, peer_seed, count);
            /* Both sides have everything before either closes. */
            ASSERT_TRUE(ch.barrier());
        };
    };
    run_two_processes(side(1000, 2000), side(2000, 1000), 60.0);
}

TEST_F(test_uct_tcp_2proc, peer_exiting_mid_stream_fails_the_survivors_ep_without_hanging)
{
    check_peer_death_mid_stream(false);
}

TEST_F(test_uct_tcp_2proc, peer_killed_mid_stream_fails_the_survivors_ep_without_hanging)
{
    check_peer_death_mid_stream(true);
}

TEST_F(test_uct_tcp_2proc, loopback_of_another_network_namespace_is_unreachable)
{
    if (geteuid() != 0) {
        GTEST_SKIP() << "needs root (CAP_SYS_ADMIN) to create a network namespace";
    }
    uct_resource res = m_res;

    run_two_processes(
        [res](oob_channel &ch) {
            uct_test_entity e(res);
            std::string blob;
            uct_peer_address peer;

            ASSERT_TRUE(ch.recv_blob(blob));
            if (blob.empty()) {
                GTEST_SKIP() << "the child could not enter a new network namespace";
            }
            ASSERT_TRUE(uct_peer_address::unpack(blob, peer));
            /* Same address (127.0.0.1), different network: unreachable. */
            EXPECT_FALSE(uct_iface_is_reachable(
                    e.iface(), (const uct_device_addr_t*)peer.dev_addr.data(),
                    (const uct_iface_addr_t*)peer.iface_addr.data()));
            /* Our own loopback address is reachable. */
            std::string dev = e.device_address(), ifa = e.iface_address();
            EXPECT_TRUE(uct_iface_is_reachable(e.iface(),
                                               (const uct_device_addr_t*)dev.data(),
                                               (const uct_iface_addr_t*)ifa.data()));
            ASSERT_TRUE(ch.barrier());
        },
        [res](oob_channel &ch) {
            if ((unshare(CLONE_NEWNET) != 0) || !loopback_up()) {
                ch.send_blob("");
                return;
            }
            uct_test_entity e(res);
            ASSERT_TRUE(ch.send_blob(e.address().pack()));
            ASSERT_TRUE(ch.barrier());
        });
}

TEST_F(test_uct_tcp_2proc, processes_in_two_network_namespaces_talk_over_a_veth_pair)
{
    if (geteuid() != 0) {
        GTEST_SKIP() << "needs root (CAP_NET_ADMIN) to create network namespaces";
    }
    if (system("ip -V >/dev/null 2>&1") != 0) {
        GTEST_SKIP() << "the 'ip' command (iproute2) is not installed";
    }
    veth_namespaces nets;
    if (!nets.error().empty()) {
        GTEST_SKIP() << "cannot create a veth pair between namespaces: " << nets.error();
    }

    auto side = [&nets](int idx) {
        return [&nets, idx](oob_channel &ch) {
            scoped_netns in_ns(nets.ns(idx));
            ASSERT_TRUE(in_ns.ok()) << "cannot enter " << nets.ns(idx);

            std::vector<uct_resource> res = uct_enum_resources("tcp", idx ? "ucxt1" : "ucxt0");
            ASSERT_EQ(1u, res.size()) << "the veth end is not listed as a tcp device";

            uct_test_entity e(res[0]);
            am_recorder rec(e, AM_ID);
            uct_peer_address peer;
            std::string blob;

            ASSERT_TRUE(ch.send_blob(e.address().pack()));
            ASSERT_TRUE(ch.recv_blob(blob));
            ASSERT_TRUE(uct_peer_address::unpack(blob, peer));
            ASSERT_TRUE(uct_iface_is_reachable(
                    e.iface(), (const uct_device_addr_t*)peer.dev_addr.data(),
                    (const uct_iface_addr_t*)peer.iface_addr.data()));

            /* The device address is the veth's, never a wildcard. */
            struct in_addr in;
            memcpy(&in.s_addr, e.device_address().data() + 4, sizeof(in.s_addr));
            EXPECT_STREQ(idx ? "10.213.7.2" : "10.213.7.1", inet_ntoa(in));

            uct_ep_h ep = e.create_ep_to_iface(peer.dev_addr, peer.iface_addr);
            exchange_streams(e, ep, rec, 10 + idx, 11 - idx, 12);
            ASSERT_TRUE(ch.barrier());
        };
    };
    run_two_processes(side(0), side(1), 60.0);
}

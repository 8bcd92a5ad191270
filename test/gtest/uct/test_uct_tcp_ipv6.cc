/*
 * The tcp transport over IPv6, inside one process, on the loopback device's
 * ::1: UCX_TCP_AF_PRIO picks the family, an IPv6 iface listens on and
 * advertises its IPv6 address, every send flavour arrives intact, an iface
 * never pairs with one of the other family, and a raw IPv6 client is held
 * to the same hello rules as an IPv4 one. Link-local and IPv6-only hosts
 * are covered between network namespaces by contrib/tests/netns_node.sh.
 */
#include "test_uct_tcp.h"

#include <arpa/inet.h>
#include <endian.h>
#include <fstream>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <set>
#include <sstream>
#include <sys/socket.h>
#include <unistd.h>

using namespace ucx_test;

namespace
{

const uint8_t AM_ID = 9;

/* Whether "lo" carries ::1 (a host or container may disable IPv6). */
bool lo_has_ipv6()
{
    struct ifaddrs *ifaddrs, *ifa;
    bool found = false;

    if (getifaddrs(&ifaddrs) != 0) {
        return false;
    }
    for (ifa = ifaddrs; ifa != NULL; ifa = ifa->ifa_next) {
        if ((ifa->ifa_addr != NULL) && (ifa->ifa_addr->sa_family == AF_INET6) &&
            !strcmp(ifa->ifa_name, "lo") &&
            IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr)) {
            found = true;
        }
    }
    freeifaddrs(ifaddrs);
    return found;
}

/* Listening IPv6 sockets of the whole host as "[addr]:port", from
 * /proc/net/tcp6 (the address is four host-order 32-bit words). */
std::set<std::string> listening_tcp6()
{
    std::set<std::string> result;
    std::ifstream f("/proc/net/tcp6");
    std::string line;

    std::getline(f, line); /* header */
    while (std::getline(f, line)) {
        std::istringstream ss(line);
        std::string sl, local, remote, state;
        ss >> sl >> local >> remote >> state;
        if ((state != "0A") || (local.size() != 32 + 1 + 4)) {
            continue;
        }
        struct in6_addr a;
        for (int w = 0; w < 4; ++w) {
            uint32_t word = (uint32_t)strtoul(local.substr(w * 8, 8).c_str(), NULL, 16);
            memcpy(&a.s6_addr[w * 4], &word, 4);
        }
        char text[INET6_ADDRSTRLEN];
        inet_ntop(AF_INET6, &a, text, sizeof(text));
        unsigned port = (unsigned)strtoul(local.substr(33).c_str(), NULL, 16);
        result.insert(std::string("[") + text + "]:" + std::to_string(port));
    }
    return result;
}

uct_entity_params af_prio(const std::string &value)
{
    uct_entity_params p;
    p.md_config["AF_PRIO"] = value;
    return p;
}

} // namespace

class test_uct_tcp_ipv6 : public uct_test_base
{
  protected:
    void SetUp() override
    {
        if (!tcp_lo_resource(m_res)) {
            GTEST_SKIP() << "the tcp transport offers no 'lo' device here";
        }
        if (!lo_has_ipv6()) {
            GTEST_SKIP() << "'lo' has no ::1 (IPv6 disabled on this host)";
        }
    }

    uct_test_entity *entity(const std::string &prio = "inet6")
    {
        return create_entity(m_res, af_prio(prio));
    }

    static tcp_dev_addr dev_addr_of(const uct_test_entity &e)
    {
        tcp_dev_addr d;
        std::string blob = e.device_address();
        EXPECT_EQ(sizeof(d), blob.size());
        memcpy(&d, blob.data(), sizeof(d));
        return d;
    }

    void check_roundtrip(uct_ep_h ep, am_recorder &rec,
                         const std::function<ucs_status_t()> &send,
                         const std::string &expected)
    {
        size_t before       = rec.count();
        ucs_status_t status = tcp_send_retry(send, [this] { return progress(); });
        ASSERT_TRUE((status == UCS_OK) || (status == UCS_INPROGRESS))
            << ucs_status_string(status);
        ASSERT_TRUE(progress_until([&] { return rec.count() > before; }))
            << "no message of " << expected.size() << " bytes arrived";
        ASSERT_EQ(before + 1, rec.count());
        ASSERT_TRUE(expected == rec.msg(before).data)
            << "payload of " << expected.size() << " bytes differs";
    }

    uct_resource m_res;
};

TEST_F(test_uct_tcp_ipv6, af_prio_decides_the_family_an_iface_listens_on)
{
    const uint8_t loopback6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    uct_test_entity *v6 = entity("inet6"), *v6_first = entity("inet6,inet");
    uct_test_entity *v4 = entity("inet"), *v4_first = entity("inet,inet6");

    for (uct_test_entity *e : {v6, v6_first}) {
        tcp_dev_addr d = dev_addr_of(*e);
        EXPECT_EQ(TCP_WIRE_VERSION, d.version);
        EXPECT_EQ(6, d.family);
        EXPECT_EQ(0, memcmp(loopback6, d.addr, 16));
    }
    for (uct_test_entity *e : {v4, v4_first}) {
        tcp_dev_addr d = dev_addr_of(*e);
        uint32_t in;
        memcpy(&in, d.addr, 4);
        EXPECT_EQ(4, d.family);
        EXPECT_EQ(htonl(INADDR_LOOPBACK), in);
        for (int i = 4; i < 16; ++i) {
            EXPECT_EQ(0, d.addr[i]) << "byte " << i << " of an IPv4 address";
        }
    }

    /* The IPv6 iface listens on [::1] and nowhere else. */
    tcp_iface_addr ia;
    std::string ifa = v6->iface_address();
    memcpy(&ia, ifa.data(), sizeof(ia));
    std::set<std::string> listening = listening_tcp6();
    EXPECT_TRUE(listening.count("[::1]:" + std::to_string(ntohs(ia.port))))
        << "no listener on [::1]:" << ntohs(ia.port);
    EXPECT_FALSE(listening.count("[::]:" + std::to_string(ntohs(ia.port))));
}

TEST_F(test_uct_tcp_ipv6, every_send_flavour_arrives_intact_over_ipv6)
{
    uct_test_entity *a = entity(), *b = entity();
    auto eps = connect(*a, *b);
    am_recorder rec_a(*a, AM_ID), rec_b(*b, AM_ID);

    ASSERT_TRUE(uct_iface_is_reachable(
        a->iface(), (const uct_device_addr_t *)b->device_address().data(),
        (const uct_iface_addr_t *)b->iface_address().data()));

    /* am_short: header and payload. */
    std::string payload = tcp_pattern(100, 1);
    uint64_t header     = 0x1122334455667788ull;
    std::string expected((const char *)&header, sizeof(header));
    expected += payload;
    check_roundtrip(
        eps.first, rec_b,
        [&] {
            return uct_ep_am_short(eps.first, AM_ID, header, payload.data(),
                                   (unsigned)payload.size());
        },
        expected);

    /* bcopy of a full segment and zcopy of several MiB, in both directions. */
    size_t seg     = a->iface_attr().cap.am.max_bcopy;
    std::string bc = tcp_pattern(seg, 2);
    check_roundtrip(
        eps.first, rec_b, [&] { return tcp_am_bcopy(eps.first, AM_ID, bc); }, bc);
    check_roundtrip(
        eps.second, rec_a, [&] { return tcp_am_bcopy(eps.second, AM_ID, bc); }, bc);

    std::string hdr = tcp_pattern(16, 3);
    std::string big = tcp_pattern(3 * 1024 * 1024 + 7, 4);
    size_t before   = rec_b.count();
    ASSERT_UCS_OK(
        tcp_am_zcopy_wait(eps.first, AM_ID, hdr, big, [this] { return progress(); }));
    ASSERT_TRUE(progress_until([&] { return rec_b.count() > before; }));
    EXPECT_TRUE((hdr + big) == rec_b.msg(before).data);

    a->flush_ep(eps.first);
    b->flush_ep(eps.second);
}

TEST_F(test_uct_tcp_ipv6, an_iface_never_pairs_with_one_of_the_other_family)
{
    uct_test_entity *v6 = entity("inet6"), *v4 = entity("inet");
    std::string dev6 = v6->device_address(), ifa6 = v6->iface_address();
    std::string dev4 = v4->device_address(), ifa4 = v4->iface_address();

    EXPECT_FALSE(uct_iface_is_reachable(v4->iface(),
                                        (const uct_device_addr_t *)dev6.data(),
                                        (const uct_iface_addr_t *)ifa6.data()));
    EXPECT_FALSE(uct_iface_is_reachable(v6->iface(),
                                        (const uct_device_addr_t *)dev4.data(),
                                        (const uct_iface_addr_t *)ifa4.data()));

    uct_log_capture log(UCS_LOG_LEVEL_ERROR);
    uct_ep_params_t params;
    uct_ep_h ep;
    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = v4->iface();
    params.dev_addr   = (const uct_device_addr_t *)dev6.data();
    params.iface_addr = (const uct_iface_addr_t *)ifa6.data();
    EXPECT_EQ(UCS_ERR_UNREACHABLE, uct_ep_create(&params, &ep));
    EXPECT_TRUE(log.contains("peer address is IPv6")) << log.text();
}

TEST_F(test_uct_tcp_ipv6, rejects_ipv6_addresses_no_iface_listens_on)
{
    uct_test_entity *a = entity(), *b = entity();
    std::string good = b->device_address(), ifa = b->iface_address();
    const char *bad[] = {"::", "ff02::1", "ff05::2", "::ffff:127.0.0.1", "::127.0.0.1"};

    for (const char *text : bad) {
        tcp_dev_addr d;
        memcpy(&d, good.data(), sizeof(d));
        ASSERT_EQ(1, inet_pton(AF_INET6, text, d.addr)) << text;
        EXPECT_FALSE(uct_iface_is_reachable(a->iface(), (const uct_device_addr_t *)&d,
                                            (const uct_iface_addr_t *)ifa.data()))
            << text;

        uct_ep_params_t params;
        uct_ep_h ep;
        memset(&params, 0, sizeof(params));
        params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                            UCT_EP_PARAM_FIELD_IFACE_ADDR;
        params.iface      = a->iface();
        params.dev_addr   = (const uct_device_addr_t *)&d;
        params.iface_addr = (const uct_iface_addr_t *)ifa.data();
        EXPECT_EQ(UCS_ERR_INVALID_ADDR, uct_ep_create(&params, &ep)) << text;
    }
}

TEST_F(test_uct_tcp_ipv6, a_raw_ipv6_client_is_held_to_the_hello_rules)
{
    uct_test_entity *a = entity(), *b = entity();
    am_recorder rec(*b, AM_ID);
    tcp_iface_addr ia;
    std::string ifa = b->iface_address();
    memcpy(&ia, ifa.data(), sizeof(ia));

    auto dial = [&]() {
        int fd = socket(AF_INET6, SOCK_STREAM, 0);
        EXPECT_GE(fd, 0);
        struct sockaddr_in6 sa;
        memset(&sa, 0, sizeof(sa));
        sa.sin6_family = AF_INET6;
        sa.sin6_port   = ia.port;
        sa.sin6_addr   = in6addr_loopback;
        EXPECT_EQ(0, ::connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
            << strerror(errno);
        return fd;
    };
    /* hello: "UCTT", the wire version, family, 2 reserved, 16 address bytes, port,
     * 2 reserved; then one 8-byte frame header and a 4-byte payload,
     * padded to 8 bytes as every frame payload is on the wire. */
    auto message = [&](uint8_t family, const char *addr6) {
        std::string m(28 + 8 + 8, '\0');
        memcpy(&m[0], "UCTT", 4);
        m[4] = TCP_WIRE_VERSION;
        m[5] = (char)family;
        inet_pton(AF_INET6, addr6, &m[8]);
        memcpy(&m[24], &ia.port, 2);
        m[28]        = (char)AM_ID;
        uint32_t len = htole32(4);
        memcpy(&m[32], &len, 4);
        memcpy(&m[36], "ping", 4);
        return m;
    };
    auto closed_by_iface = [&](int fd) {
        return progress_until([&] {
            char c;
            ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);
            return (n == 0) || ((n < 0) && (errno != EAGAIN));
        });
    };

    /* A hello naming a multicast or v4-mapped sender is refused. */
    for (const char *addr : {"ff02::1", "::ffff:10.0.0.1"}) {
        int fd        = dial();
        std::string m = message(6, addr);
        ASSERT_EQ((ssize_t)m.size(), send(fd, m.data(), m.size(), MSG_NOSIGNAL));
        EXPECT_TRUE(closed_by_iface(fd)) << addr;
        close(fd);
    }
    EXPECT_EQ(0u, rec.count());

    /* A well-formed IPv6 hello is accepted and its frame delivered. */
    int fd        = dial();
    std::string m = message(6, "::1");
    ASSERT_EQ((ssize_t)m.size(), send(fd, m.data(), m.size(), MSG_NOSIGNAL));
    EXPECT_TRUE(progress_until([&] { return rec.count() == 1; }));
    ASSERT_EQ(1u, rec.count());
    EXPECT_EQ("ping", rec.msg(0).data);
    close(fd);

    /* And real peers still get through. */
    uct_ep_h ep      = a->create_ep_to_iface(b->device_address(), b->iface_address());
    std::string data = tcp_pattern(1000, 5);
    check_roundtrip(
        ep, rec, [&] { return tcp_am_bcopy(ep, AM_ID, data); }, data);
}

/* Bad UCX_TCP_AF_PRIO values are refused when the md opens, naming the
 * variable; nothing else of the md is affected. */
TEST(test_uct_tcp_af_prio, bad_values_fail_md_open_with_a_clear_error)
{
    uct_component_h component = uct_find_component("tcp");
    if (component == NULL) {
        GTEST_SKIP() << "no tcp component in this build";
    }
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"ipx", "unknown address family 'ipx'"},
        {"inet,inet", "'inet' is listed twice"},
        {"inet6,INET", "unknown address family 'INET'"},
        {"", "UCX_TCP_AF_PRIO is empty"},
    };
    for (const auto &c : cases) {
        uct_md_config_t *config;
        uct_md_h md;
        ASSERT_UCS_OK(uct_md_config_read(component, NULL, NULL, &config));
        ASSERT_UCS_OK(uct_config_modify(config, "AF_PRIO", c.first.c_str()));
        uct_log_capture log(UCS_LOG_LEVEL_ERROR);
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_md_open(component, "tcp", config, &md))
            << c.first;
        EXPECT_TRUE(log.contains("UCX_TCP_AF_PRIO")) << log.text();
        EXPECT_TRUE(log.contains(c.second)) << log.text();
        uct_config_release(config);
    }
}

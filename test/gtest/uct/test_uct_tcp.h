/**
 * @file test_uct_tcp.h
 * Helpers shared by the tcp transport suites (test_uct_tcp*.cc): the
 * loopback resource, deterministic payloads, an error-handler recorder and
 * send loops that retry on UCS_ERR_NO_RESOURCE while progressing.
 */
#ifndef UCX_TEST_UCT_TCP_H_
#define UCX_TEST_UCT_TCP_H_

#include "uct_test.h"

#include <chrono>
#include <cstring>
#include <functional>
#include <string>

namespace ucx_test {

/* Wire version of the tcp transport (src/uct/tcp/tcp_wire.h), repeated
 * here on purpose: a change of the wire must show up as a test change. */
const uint8_t TCP_WIRE_VERSION = 3;

/* Wire layout of the tcp addresses (src/uct/tcp/tcp_wire.h), rebuilt here
 * on purpose: the tests check what goes on the wire, not the header. */
struct tcp_dev_addr {
    uint8_t version;
    uint8_t family;
    uint16_t reserved;
    uint8_t addr[16];
    uint64_t loopback_id;
} __attribute__((packed));

/* Set the IPv4 address of a device address (first 4 of its 16 bytes). */
inline void tcp_dev_addr_set_in4(tcp_dev_addr &d, uint32_t in_addr)
{
    memcpy(d.addr, &in_addr, sizeof(in_addr));
}

struct tcp_iface_addr {
    uint8_t version;
    uint8_t reserved;
    uint16_t port;
} __attribute__((packed));

/** The tcp transport on "lo"; false when this build or host has none. */
inline bool tcp_lo_resource(uct_resource &res)
{
    std::vector<uct_resource> all = uct_enum_resources("tcp", "lo");
    if (all.empty()) {
        return false;
    }
    res = all[0];
    return true;
}

/** Base of the tcp suites over the loopback device: skips visibly where
 *  there is none. */
class test_uct_tcp_lo : public uct_test_base {
protected:
    void SetUp() override
    {
        if (!tcp_lo_resource(m_res)) {
            GTEST_SKIP() << "the tcp transport offers no 'lo' device here";
        }
    }

    uct_test_entity *entity(const uct_entity_params &params = uct_entity_params())
    {
        return create_entity(m_res, params);
    }

    uct_resource m_res;
};

/** @a length bytes that depend on @a seed and the position. */
inline std::string tcp_pattern(size_t length, uint64_t seed)
{
    std::string s(length, '\0');
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;

    for (size_t i = 0; i < length; ++i) {
        x    = x * 6364136223846793005ull + 1442695040888963407ull;
        s[i] = (char)(x >> 56);
    }
    return s;
}

/** Records calls of the iface error handler. */
struct tcp_err_record {
    int          calls  = 0;
    ucs_status_t status = UCS_OK;
    uct_ep_h     ep     = NULL;

    static ucs_status_t handler(void *arg, uct_ep_h ep, ucs_status_t status)
    {
        tcp_err_record *self = static_cast<tcp_err_record*>(arg);
        ++self->calls;
        self->status = status;
        self->ep     = ep;
        return UCS_OK;
    }

    /** Entity parameters that install this recorder. */
    uct_entity_params params()
    {
        uct_entity_params p;
        p.err_handler     = handler;
        p.err_handler_arg = this;
        return p;
    }
};

/**
 * Call @a send until it returns something other than UCS_ERR_NO_RESOURCE,
 * calling @a progress in between, for at most @a timeout_sec.
 */
inline ucs_status_t tcp_send_retry(const std::function<ucs_status_t()> &send,
                                   const std::function<unsigned()> &progress,
                                   double timeout_sec = 10.0)
{
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration<double>(timeout_sec);
    ucs_status_t status;

    while ((status = send()) == UCS_ERR_NO_RESOURCE) {
        if (std::chrono::steady_clock::now() > deadline) {
            return UCS_ERR_TIMED_OUT;
        }
        progress();
    }
    return status;
}

/** Pack callback of tcp_am_bcopy(): copies a std::string. */
inline size_t tcp_pack_string(void *dest, void *arg)
{
    const std::string *s = static_cast<const std::string*>(arg);
    memcpy(dest, s->data(), s->size());
    return s->size();
}

/** am_bcopy of @a data as a status: UCS_OK when sent whole. */
inline ucs_status_t tcp_am_bcopy(uct_ep_h ep, uint8_t id, const std::string &data)
{
    ssize_t ret = uct_ep_am_bcopy(ep, id, tcp_pack_string,
                                  const_cast<std::string*>(&data), 0);
    if (ret < 0) {
        return (ucs_status_t)ret;
    }
    return ((size_t)ret == data.size()) ? UCS_OK : UCS_ERR_MESSAGE_TRUNCATED;
}

/**
 * am_zcopy of @a data (split in two iov elements when longer than one byte)
 * after @a header; waits for the completion when the send is in progress.
 */
inline ucs_status_t tcp_am_zcopy_wait(uct_ep_h ep, uint8_t id, const std::string &header,
                                      const std::string &data,
                                      const std::function<unsigned()> &progress)
{
    uct_test_completion comp;
    uct_iov_t iov[2];
    size_t half  = data.size() / 2;
    size_t count = (half > 0) ? 2 : 1;
    ucs_status_t status;

    memset(iov, 0, sizeof(iov));
    iov[0].buffer = const_cast<char*>(data.data());
    iov[0].length = (count == 2) ? half : data.size();
    iov[0].count  = 1;
    iov[1].buffer = const_cast<char*>(data.data()) + half;
    iov[1].length = data.size() - half;
    iov[1].count  = 1;

    status = tcp_send_retry([&] {
        return uct_ep_am_zcopy(ep, id, header.data(), (unsigned)header.size(), iov,
                               count, 0, &comp.comp);
    }, progress);
    if (status == UCS_INPROGRESS) {
        if (!uct_progress_until(progress, [&] { return comp.done(); })) {
            return UCS_ERR_TIMED_OUT;
        }
        status = comp.comp.status;
    }
    return status;
}

} // namespace ucx_test

#endif

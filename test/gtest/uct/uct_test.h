/**
 * @file uct_test.h
 * Reusable fixture for UCT transport suites (self, posix, tcp, cuda ...).
 *
 * Everything here is generic over transports: a suite names a transport
 * (and optionally a device), the fixture finds the component and md that
 * offer it, opens md/worker/iface, and wires endpoints either inside one
 * process or between two processes (common/two_process.h). Connection uses
 * CONNECT_TO_IFACE when the transport offers it, else CONNECT_TO_EP.
 *
 * Typical in-process use:
 *
 *     class test_uct_posix : public ucx_test::uct_test {};
 *     TEST_P(test_uct_posix, am_short_arrives) {
 *         uct_test_entity &s = *create_entity(), &r = *create_entity();
 *         connect(s, r);          // s.ep(0) -> r, r.ep(0) -> s
 *         am_recorder rec(r, 1);  // handler for id 1 on r
 *         ASSERT_UCS_OK(uct_ep_am_short(s.ep(0), 1, 42, buf, 8));
 *         ASSERT_TRUE(progress_until([&] { return rec.count() == 1; }));
 *     }
 *     UCT_INSTANTIATE_TEST_SUITE_P(test_uct_posix, "posix");
 *
 * Two processes:
 *
 *     run_two_processes(
 *         [&](oob_channel &ch) { uct_test_entity e(resource());
 *                                uct_ep_h ep = e.connect_over_oob(ch); ... },
 *         [&](oob_channel &ch) { uct_test_entity e(resource());
 *                                uct_ep_h ep = e.connect_over_oob(ch); ... });
 *
 * Objects of this header are not thread safe (like the UCT objects they wrap).
 * Failures inside helpers are reported with googletest ADD_FAILURE /
 * exceptions (uct_test_error) so that a helper used from a lambda or a
 * child process never leaves a half-built object behind.
 */
#ifndef UCX_TEST_UCT_TEST_H_
#define UCX_TEST_UCT_TEST_H_

#include <uct/api/uct.h>
#include <ucs/debug/log.h>

#include "common/two_process.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

/** Lets googletest print a status by name ("Invalid parameter (-5)"). */
inline void PrintTo(ucs_status_t status, std::ostream *os)
{
    *os << ucs_status_string(status) << " (" << (int)status << ")";
}

/** Assert a UCS_OK status, naming the expression and the status otherwise.
 *  More context can be streamed: ASSERT_UCS_OK(x) << "size " << size; */
#define ASSERT_UCS_OK(_expr)  ASSERT_EQ(UCS_OK, (_expr)) << #_expr
#define EXPECT_UCS_OK(_expr)  EXPECT_EQ(UCS_OK, (_expr)) << #_expr

/** Assert a specific status. */
#define ASSERT_UCS_STATUS(_expected, _expr) ASSERT_EQ((_expected), (_expr)) << #_expr
#define EXPECT_UCS_STATUS(_expected, _expr) EXPECT_EQ((_expected), (_expr)) << #_expr

namespace ucx_test {

/** Thrown by fixture helpers when UCT setup fails; the message names the call. */
class uct_test_error : public std::runtime_error {
public:
    explicit uct_test_error(const std::string &what) : std::runtime_error(what) {}
};

/** Throws uct_test_error naming @a what when @a status is an error. */
void uct_test_check(ucs_status_t status, const std::string &what);

/**
 * A transport on a device, and where it comes from. Printable (gtest uses
 * it as the parameter name: "<tl>/<dev>").
 */
struct uct_resource {
    std::string component; /**< e.g. "self", "posix", "tcp" */
    std::string md_name;   /**< md of the component */
    std::string tl_name;   /**< transport, e.g. "self" */
    std::string dev_name;  /**< device, e.g. "memory", "lo" */
    uct_device_type_t dev_type;

    std::string name() const { return tl_name + "/" + dev_name; }
};

std::ostream &operator<<(std::ostream &os, const uct_resource &res);

/**
 * Every (component, md, tl, device) this build offers, optionally only
 * those of transport @a tl_name ("" = all) and device @a dev_name ("" = all).
 * Opens and closes each md to list its resources.
 */
std::vector<uct_resource> uct_enum_resources(const std::string &tl_name = "",
                                             const std::string &dev_name = "");

/**
 * Find the component by name (uct_query_components), or NULL.
 */
uct_component_h uct_find_component(const std::string &name);

/**
 * Progress @a progress_fn (which returns an event count) until @a pred holds
 * or @a timeout_sec passes. @return whether @a pred became true.
 */
bool uct_progress_until(const std::function<unsigned()> &progress_fn,
                        const std::function<bool()> &pred, double timeout_sec = 10.0);

/** Addresses a peer needs to connect: one blob for oob_channel::send_blob. */
struct uct_peer_address {
    std::string dev_addr;
    std::string iface_addr; /**< empty when the transport lacks CONNECT_TO_IFACE */
    std::string ep_addr;    /**< empty when the transport lacks CONNECT_TO_EP */

    /** Length-prefixed concatenation of the three strings. */
    std::string pack() const;

    /** Inverse of pack(); false on a malformed blob. */
    static bool unpack(const std::string &blob, uct_peer_address &addr);
};

/** Knobs for uct_test_entity. */
struct uct_entity_params {
    /** Config values for uct_config_modify(), e.g. {"MAX_BCOPY", "1k"}. */
    std::map<std::string, std::string> iface_config;
    std::map<std::string, std::string> md_config;
    /** Error handler installed in iface params (NULL: none). */
    uct_error_handler_t err_handler     = NULL;
    void                *err_handler_arg = NULL;
    size_t              rx_headroom     = 0;
    ucs_thread_mode_t   thread_mode     = UCS_THREAD_MODE_SINGLE;
};

/**
 * One side of a test: component + md + worker + iface on a resource, plus
 * the endpoints created from it. The constructor throws uct_test_error when
 * any step fails (releasing what it took); the destructor destroys eps,
 * iface, worker and md in reverse order.
 */
class uct_test_entity {
public:
    explicit uct_test_entity(const uct_resource &res,
                             const uct_entity_params &params = uct_entity_params());
    ~uct_test_entity();

    uct_test_entity(const uct_test_entity &) = delete;
    uct_test_entity &operator=(const uct_test_entity &) = delete;

    const uct_resource &resource() const { return m_res; }
    uct_component_h component() const { return m_component; }
    uct_md_h md() const { return m_md; }
    uct_worker_h worker() const { return m_worker; }
    uct_iface_h iface() const { return m_iface; }
    const uct_md_attr_t &md_attr() const { return m_md_attr; }
    const uct_iface_attr_t &iface_attr() const { return m_iface_attr; }
    size_t rx_headroom() const { return m_rx_headroom; }

    /** Whether the iface has every flag of @a flags (UCT_IFACE_FLAG_*). */
    bool has_cap(uint64_t flags) const
    {
        return (m_iface_attr.cap.flags & flags) == flags;
    }

    /** Address blobs of this side (device_addr_len/iface_addr_len bytes). */
    std::string device_address() const;
    std::string iface_address() const;
    std::string ep_address(uct_ep_h ep) const;

    /** Addresses of this side for a peer: device + iface (+ ep address of
     *  @a ep for CONNECT_TO_EP transports; @a ep may be NULL otherwise). */
    uct_peer_address address(uct_ep_h ep = NULL) const;

    /** Create an ep connected to a remote iface (CONNECT_TO_IFACE); owned by
     *  this entity, appended to eps(). */
    uct_ep_h create_ep_to_iface(const std::string &dev_addr,
                                const std::string &iface_addr);

    /** Create an unconnected ep (CONNECT_TO_EP); complete it with
     *  connect_ep_to_ep(). Appended to eps(). */
    uct_ep_h create_ep();

    void connect_ep_to_ep(uct_ep_h ep, const std::string &dev_addr,
                          const std::string &ep_addr);

    /** Endpoint number @a i (in creation order). */
    uct_ep_h ep(size_t i = 0) const { return m_eps.at(i); }
    size_t num_eps() const { return m_eps.size(); }
    const std::vector<uct_ep_h> &eps() const { return m_eps; }

    /** Destroy one ep now (removes it from eps()). */
    void destroy_ep(uct_ep_h ep);

    /**
     * Connect to a peer in another process: both sides call this at the same
     * time with their end of @a ch. Exchanges uct_peer_address blobs (and for
     * CONNECT_TO_EP, creates the local ep first). Throws on a channel error.
     * @return the new ep (also appended to eps()).
     */
    uct_ep_h connect_over_oob(oob_channel &ch);

    /** One round of uct_worker_progress(). */
    unsigned progress() { return uct_worker_progress(m_worker); }

    /** Flush the iface until done (progressing), or throw on error/timeout. */
    void flush(double timeout_sec = 10.0);

    /** Flush one ep until done (progressing), or throw on error/timeout. */
    void flush_ep(uct_ep_h ep, double timeout_sec = 10.0);

private:
    void cleanup();

    uct_resource          m_res;
    size_t                m_rx_headroom;
    uct_component_h       m_component  = NULL;
    uct_md_config_t       *m_md_config = NULL;
    uct_md_h              m_md         = NULL;
    uct_worker_h          m_worker     = NULL;
    uct_iface_config_t    *m_iface_config = NULL;
    uct_iface_h           m_iface      = NULL;
    uct_md_attr_t         m_md_attr;
    uct_iface_attr_t      m_iface_attr;
    std::vector<uct_ep_h> m_eps;
};

/**
 * Connect @a a and @a b in this process: a new ep of @a a to @a b and a new
 * ep of @a b to @a a (with CONNECT_TO_EP, each to the other's ep). With
 * @a a == @a b, one ep to itself (loopback). Returns {ep of a, ep of b}.
 */
std::pair<uct_ep_h, uct_ep_h> uct_connect(uct_test_entity &a, uct_test_entity &b);

/**
 * Records active messages of one id on one entity (installs itself as the
 * handler; uninstalls in the destructor). Optionally keeps descriptors
 * (returns UCS_INPROGRESS when the transport passes UCT_CB_PARAM_FLAG_DESC)
 * and releases them with uct_iface_release_desc() in release_descs() or the
 * destructor.
 */
class am_recorder {
public:
    struct message {
        std::string data;  /**< payload as delivered (header first for am_short) */
        unsigned    flags;
        void        *desc; /**< when kept: data - rx_headroom, what
                                uct_iface_release_desc() takes; else NULL */
    };

    am_recorder(uct_test_entity &e, uint8_t id, bool keep_desc = false);
    ~am_recorder();

    size_t count() const { return m_msgs.size(); }
    const message &msg(size_t i) const { return m_msgs.at(i); }
    const std::vector<message> &messages() const { return m_msgs; }
    void clear() { release_descs(); m_msgs.clear(); }

    /** Release every kept descriptor. */
    void release_descs();

private:
    static ucs_status_t am_cb(void *arg, void *data, size_t length, unsigned flags);

    uct_test_entity      &m_entity;
    uint8_t              m_id;
    bool                 m_keep_desc;
    std::vector<message> m_msgs;
};

/**
 * A host buffer registered with an entity's md (when the md registers) and
 * with a packed rkey, for put/get and zcopy tests. Fill/check with a
 * deterministic pattern.
 */
class uct_test_buffer {
public:
    uct_test_buffer(uct_test_entity &e, size_t length);
    ~uct_test_buffer();

    uct_test_buffer(const uct_test_buffer &) = delete;
    uct_test_buffer &operator=(const uct_test_buffer &) = delete;

    void *ptr() const { return m_ptr; }
    uint64_t addr() const { return (uintptr_t)m_ptr; }
    size_t length() const { return m_length; }
    uct_mem_h memh() const { return m_memh; }

    /** The packed rkey (md_attr().rkey_packed_size bytes), empty when the md
     *  cannot pack one. */
    const std::string &rkey_blob() const { return m_rkey_blob; }

    /** An iov of the whole buffer (or of [offset, offset + len)). */
    uct_iov_t iov(size_t offset = 0, size_t len = (size_t)-1) const;

    void fill(uint64_t seed);
    void fill_byte(uint8_t byte);
    /** Whether bytes [offset, offset + len) hold the pattern of @a seed
     *  written by fill() (the pattern depends on the absolute offset). */
    bool check(uint64_t seed, size_t offset = 0, size_t len = (size_t)-1) const;

    /** The pattern byte of @a seed at @a offset. */
    static uint8_t pattern(uint64_t seed, size_t offset);

private:
    uct_test_entity &m_entity;
    void            *m_ptr;
    size_t          m_length;
    uct_mem_h       m_memh;
    std::string     m_rkey_blob;
};

/** @a length bytes of uct_test_buffer::pattern() of @a seed, for payloads
 *  a test sends and compares. */
std::string uct_test_pattern_string(uint64_t seed, size_t length);

/** Argument of uct_test_pack_string(): the string a bcopy sends. */
struct uct_test_pack_arg {
    const std::string *data;
};

/** Pack callback of bcopy operations: copies @a arg's string (a
 *  uct_test_pack_arg) to @a dest. */
size_t uct_test_pack_string(void *dest, void *arg);

/** Unpack callback of get_bcopy: assigns the bytes to @a arg, a std::string. */
void uct_test_unpack_string(void *arg, const void *data, size_t length);

/** An unpacked remote key, released in the destructor. */
class uct_test_rkey {
public:
    /** Unpack @a blob with @a component; throws uct_test_error on failure. */
    uct_test_rkey(uct_component_h component, const std::string &blob);
    ~uct_test_rkey();

    uct_test_rkey(const uct_test_rkey &) = delete;
    uct_test_rkey &operator=(const uct_test_rkey &) = delete;

    uct_rkey_t rkey() const { return m_bundle.rkey; }
    uct_rkey_bundle_t &bundle() { return m_bundle; }

private:
    uct_component_h   m_component;
    uct_rkey_bundle_t m_bundle;
};

/**
 * Sends log messages (level @a level and below) to a temporary file for the
 * scope, so a test can check what was logged (and expected errors or
 * warnings do not clutter the output). Restores stderr and the level.
 */
class uct_log_capture {
public:
    explicit uct_log_capture(ucs_log_level_t level = UCS_LOG_LEVEL_WARN);
    ~uct_log_capture();

    /** Everything logged so far. */
    std::string text() const;

    /** Whether the log contains @a needle. */
    bool contains(const std::string &needle) const
    {
        return text().find(needle) != std::string::npos;
    }

private:
    ucs_log_level_t m_saved_level;
    std::string     m_path;
};

/** Completion that counts calls, for zcopy / flush with UCS_INPROGRESS. */
struct uct_test_completion {
    uct_completion_t comp;
    int              calls;

    uct_test_completion(int count = 1);
    bool done() const { return calls > 0; }
};

/**
 * Base fixture: owns entities it creates and progresses all of them.
 * Suites that pin one resource derive from this and pass it to
 * create_entity(); parameterised suites use uct_test.
 */
class uct_test_base : public ::testing::Test {
protected:
    void TearDown() override;

    /** A new entity owned by the fixture (destroyed in TearDown, newest first). */
    uct_test_entity *create_entity(const uct_resource &res,
                                   const uct_entity_params &params = uct_entity_params());

    /** Destroy an entity now. */
    void destroy_entity(uct_test_entity *e);

    const std::vector<std::unique_ptr<uct_test_entity>> &entities() const
    {
        return m_entities;
    }

    /** One progress round of every entity's worker. */
    unsigned progress();

    /** Progress all entities until @a pred or timeout. */
    bool progress_until(const std::function<bool()> &pred, double timeout_sec = 10.0);

    /** Connect two entities of this fixture (see uct_connect()). */
    std::pair<uct_ep_h, uct_ep_h> connect(uct_test_entity &a, uct_test_entity &b)
    {
        return uct_connect(a, b);
    }

private:
    std::vector<std::unique_ptr<uct_test_entity>> m_entities;
};

/**
 * Parameterised fixture: GetParam() is the resource; create_entity() with no
 * resource uses it. Instantiate with UCT_INSTANTIATE_TEST_SUITE_P.
 */
class uct_test : public uct_test_base,
                 public ::testing::WithParamInterface<uct_resource> {
protected:
    using uct_test_base::create_entity;

    const uct_resource &resource() const { return GetParam(); }

    uct_test_entity *create_entity(const uct_entity_params &params = uct_entity_params())
    {
        return create_entity(resource(), params);
    }
};

/** gtest name of a resource parameter ("self_memory"). */
std::string uct_resource_test_name(const ::testing::TestParamInfo<uct_resource> &info);

} // namespace ucx_test

/**
 * Run parameterised suite @a _suite on every device of transport @a _tl
 * found at run time. A build/machine without the transport runs nothing
 * (and gtest is told that this is allowed).
 */
#define UCT_INSTANTIATE_TEST_SUITE_P(_suite, _tl) \
    GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(_suite); \
    INSTANTIATE_TEST_SUITE_P(tl, _suite, \
                             ::testing::ValuesIn(ucx_test::uct_enum_resources(_tl)), \
                             ucx_test::uct_resource_test_name)

#endif

#include "uct_test.h"

#include <ucs/type/status.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace ucx_test {

void uct_test_check(ucs_status_t status, const std::string &what)
{
    if (status != UCS_OK) {
        throw uct_test_error(what + ": " + ucs_status_string(status));
    }
}

std::ostream &operator<<(std::ostream &os, const uct_resource &res)
{
    return os << res.tl_name << "/" << res.dev_name;
}

std::string uct_resource_test_name(const ::testing::TestParamInfo<uct_resource> &info)
{
    std::string name = info.param.tl_name + "_" + info.param.dev_name;

    /* gtest names allow only alphanumerics and '_'. */
    for (char &c : name) {
        if (!isalnum((unsigned char)c)) {
            c = '_';
        }
    }
    return name;
}

uct_component_h uct_find_component(const std::string &name)
{
    uct_component_h *components, found = NULL;
    unsigned num_components;

    if (uct_query_components(&components, &num_components) != UCS_OK) {
        return NULL;
    }

    for (unsigned i = 0; i < num_components; ++i) {
        uct_component_attr_t attr;
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(components[i], &attr) == UCS_OK) &&
            (name == attr.name)) {
            found = components[i];
            break;
        }
    }

    uct_release_component_list(components);
    return found;
}

/* Append the resources of one md to @a result. */
static void uct_enum_md_resources(uct_component_h component, const char *comp_name,
                                  const char *md_name, const std::string &tl_name,
                                  const std::string &dev_name,
                                  std::vector<uct_resource> &result)
{
    uct_tl_resource_desc_t *resources;
    uct_md_config_t *md_config;
    unsigned num_resources;
    uct_md_h md;

    if (uct_md_config_read(component, NULL, NULL, &md_config) != UCS_OK) {
        return;
    }

    ucs_status_t status = uct_md_open(component, md_name, md_config, &md);
    uct_config_release(md_config);
    if (status != UCS_OK) {
        return;
    }

    if (uct_md_query_tl_resources(md, &resources, &num_resources) == UCS_OK) {
        for (unsigned i = 0; i < num_resources; ++i) {
            if ((!tl_name.empty() && (tl_name != resources[i].tl_name)) ||
                (!dev_name.empty() && (dev_name != resources[i].dev_name))) {
                continue;
            }
            uct_resource res;
            res.component = comp_name;
            res.md_name   = md_name;
            res.tl_name   = resources[i].tl_name;
            res.dev_name  = resources[i].dev_name;
            res.dev_type  = resources[i].dev_type;
            result.push_back(res);
        }
        uct_release_tl_resource_list(resources);
    }
    uct_md_close(md);
}

std::vector<uct_resource> uct_enum_resources(const std::string &tl_name,
                                             const std::string &dev_name)
{
    std::vector<uct_resource> result;
    uct_component_h *components;
    unsigned num_components;

    if (uct_query_components(&components, &num_components) != UCS_OK) {
        return result;
    }

    for (unsigned i = 0; i < num_components; ++i) {
        uct_component_attr_t attr;
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                          UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        if (uct_component_query(components[i], &attr) != UCS_OK) {
            continue;
        }

        std::vector<uct_md_resource_desc_t> mds(attr.md_resource_count);
        attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        attr.md_resources = mds.data();
        if (!mds.empty() && (uct_component_query(components[i], &attr) != UCS_OK)) {
            continue;
        }

        for (const uct_md_resource_desc_t &md : mds) {
            uct_enum_md_resources(components[i], attr.name, md.md_name, tl_name,
                                  dev_name, result);
        }
    }

    uct_release_component_list(components);
    return result;
}

bool uct_progress_until(const std::function<unsigned()> &progress_fn,
                        const std::function<bool()> &pred, double timeout_sec)
{
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration<double>(timeout_sec);

    while (!pred()) {
        if (std::chrono::steady_clock::now() > deadline) {
            return pred();
        }
        progress_fn();
    }
    return true;
}

/* ---- addresses ---------------------------------------------------------- */

static void uct_blob_append(std::string &out, const std::string &s)
{
    uint32_t len = (uint32_t)s.size();
    out.append((const char*)&len, sizeof(len));
    out.append(s);
}

static bool uct_blob_take(const std::string &in, size_t &pos, std::string &s)
{
    uint32_t len;

    if (in.size() - pos < sizeof(len)) {
        return false;
    }
    memcpy(&len, in.data() + pos, sizeof(len));
    pos += sizeof(len);
    if (in.size() - pos < len) {
        return false;
    }
    s.assign(in, pos, len);
    pos += len;
    return true;
}

std::string uct_peer_address::pack() const
{
    std::string out;
    uct_blob_append(out, dev_addr);
    uct_blob_append(out, iface_addr);
    uct_blob_append(out, ep_addr);
    return out;
}

bool uct_peer_address::unpack(const std::string &blob, uct_peer_address &addr)
{
    size_t pos = 0;
    return uct_blob_take(blob, pos, addr.dev_addr) &&
           uct_blob_take(blob, pos, addr.iface_addr) &&
           uct_blob_take(blob, pos, addr.ep_addr) && (pos == blob.size());
}

/* ---- entity ------------------------------------------------------------- */

uct_test_entity::uct_test_entity(const uct_resource &res,
                                 const uct_entity_params &params) :
    m_res(res), m_rx_headroom(params.rx_headroom)
{
    memset(&m_md_attr, 0, sizeof(m_md_attr));
    memset(&m_iface_attr, 0, sizeof(m_iface_attr));

    try {
        m_component = uct_find_component(res.component);
        if (m_component == NULL) {
            throw uct_test_error("component '" + res.component + "' not found");
        }

        uct_test_check(uct_md_config_read(m_component, NULL, NULL, &m_md_config),
                       "uct_md_config_read(" + res.component + ")");
        for (const auto &kv : params.md_config) {
            uct_test_check(uct_config_modify(m_md_config, kv.first.c_str(),
                                             kv.second.c_str()),
                           "md config " + kv.first + "=" + kv.second);
        }
        uct_test_check(uct_md_open(m_component, res.md_name.c_str(), m_md_config,
                                   &m_md),
                       "uct_md_open(" + res.md_name + ")");
        uct_test_check(uct_md_query(m_md, &m_md_attr), "uct_md_query");

        uct_test_check(uct_worker_create(NULL, params.thread_mode, &m_worker),
                       "uct_worker_create");

        uct_test_check(uct_md_iface_config_read(m_md, res.tl_name.c_str(), NULL,
                                                NULL, &m_iface_config),
                       "uct_md_iface_config_read(" + res.tl_name + ")");
        for (const auto &kv : params.iface_config) {
            uct_test_check(uct_config_modify(m_iface_config, kv.first.c_str(),
                                             kv.second.c_str()),
                           "iface config " + kv.first + "=" + kv.second);
        }

        uct_iface_params_t iface_params;
        memset(&iface_params, 0, sizeof(iface_params));
        iface_params.field_mask      = UCT_IFACE_PARAM_FIELD_DEVICE |
                                       UCT_IFACE_PARAM_FIELD_RX_HEADROOM;
        iface_params.device.tl_name  = res.tl_name.c_str();
        iface_params.device.dev_name = res.dev_name.c_str();
        iface_params.rx_headroom     = params.rx_headroom;
        if (params.err_handler != NULL) {
            iface_params.field_mask     |= UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                                           UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG;
            iface_params.err_handler     = params.err_handler;
            iface_params.err_handler_arg = params.err_handler_arg;
        }
        uct_test_check(uct_iface_open(m_md, m_worker, &iface_params, m_iface_config,
                                      &m_iface),
                       "uct_iface_open(" + res.name() + ")");
        uct_test_check(uct_iface_query(m_iface, &m_iface_attr), "uct_iface_query");
    } catch (...) {
        cleanup();
        throw;
    }
}

uct_test_entity::~uct_test_entity()
{
    cleanup();
}

void uct_test_entity::cleanup()
{
    while (!m_eps.empty()) {
        uct_ep_destroy(m_eps.back());
        m_eps.pop_back();
    }
    if (m_iface != NULL) {
        uct_iface_close(m_iface);
        m_iface = NULL;
    }
    if (m_iface_config != NULL) {
        uct_config_release(m_iface_config);
        m_iface_config = NULL;
    }
    if (m_worker != NULL) {
        uct_worker_destroy(m_worker);
        m_worker = NULL;
    }
    if (m_md != NULL) {
        uct_md_close(m_md);
        m_md = NULL;
    }
    if (m_md_config != NULL) {
        uct_config_release(m_md_config);
        m_md_config = NULL;
    }
}

std::string uct_test_entity::device_address() const
{
    std::string addr(m_iface_attr.device_addr_len, '\0');
    uct_test_check(uct_iface_get_device_address(m_iface,
                                                (uct_device_addr_t*)&addr[0]),
                   "uct_iface_get_device_address");
    return addr;
}

std::string uct_test_entity::iface_address() const
{
    std::string addr(m_iface_attr.iface_addr_len, '\0');
    uct_test_check(uct_iface_get_address(m_iface, (uct_iface_addr_t*)&addr[0]),
                   "uct_iface_get_address");
    return addr;
}

std::string uct_test_entity::ep_address(uct_ep_h ep) const
{
    std::string addr(m_iface_attr.ep_addr_len, '\0');
    uct_test_check(uct_ep_get_address(ep, (uct_ep_addr_t*)&addr[0]),
                   "uct_ep_get_address");
    return addr;
}

uct_peer_address uct_test_entity::address(uct_ep_h ep) const
{
    uct_peer_address addr;

    addr.dev_addr = device_address();
    if (has_cap(UCT_IFACE_FLAG_CONNECT_TO_IFACE)) {
        addr.iface_addr = iface_address();
    } else if (ep != NULL) {
        addr.ep_addr = ep_address(ep);
    }
    return addr;
}

uct_ep_h uct_test_entity::create_ep_to_iface(const std::string &dev_addr,
                                             const std::string &iface_addr)
{
    uct_ep_params_t params;
    uct_ep_h ep;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = m_iface;
    params.dev_addr   = (const uct_device_addr_t*)dev_addr.data();
    params.iface_addr = (const uct_iface_addr_t*)iface_addr.data();
    uct_test_check(uct_ep_create(&params, &ep), "uct_ep_create(to iface)");
    m_eps.push_back(ep);
    return ep;
}

uct_ep_h uct_test_entity::create_ep()
{
    uct_ep_params_t params;
    uct_ep_h ep;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    params.iface      = m_iface;
    uct_test_check(uct_ep_create(&params, &ep), "uct_ep_create(unconnected)");
    m_eps.push_back(ep);
    return ep;
}

void uct_test_entity::connect_ep_to_ep(uct_ep_h ep, const std::string &dev_addr,
                                       const std::string &ep_addr)
{
    uct_test_check(uct_ep_connect_to_ep(ep, (const uct_device_addr_t*)dev_addr.data(),
                                        (const uct_ep_addr_t*)ep_addr.data()),
                   "uct_ep_connect_to_ep");
}

void uct_test_entity::destroy_ep(uct_ep_h ep)
{
    auto it = std::find(m_eps.begin(), m_eps.end(), ep);
    if (it != m_eps.end()) {
        m_eps.erase(it);
        uct_ep_destroy(ep);
    }
}

uct_ep_h uct_test_entity::connect_over_oob(oob_channel &ch)
{
    uct_peer_address local, remote;
    uct_ep_h ep = NULL;
    std::string blob;

    /* CONNECT_TO_EP needs our ep before its address can be sent. */
    if (!has_cap(UCT_IFACE_FLAG_CONNECT_TO_IFACE)) {
        ep = create_ep();
    }
    local = address(ep);

    if (!ch.send_blob(local.pack()) || !ch.recv_blob(blob)) {
        throw uct_test_error("address exchange with the peer process failed");
    }
    if (!uct_peer_address::unpack(blob, remote)) {
        throw uct_test_error("malformed address blob from the peer process");
    }

    if (ep == NULL) {
        return create_ep_to_iface(remote.dev_addr, remote.iface_addr);
    }
    connect_ep_to_ep(ep, remote.dev_addr, remote.ep_addr);
    return ep;
}

void uct_test_entity::flush(double timeout_sec)
{
    uct_test_completion comp;
    ucs_status_t status;
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration<double>(timeout_sec);

    for (;;) {
        status = uct_iface_flush(m_iface, UCT_FLUSH_FLAG_LOCAL, &comp.comp);
        if (status == UCS_OK) {
            return;
        } else if (status == UCS_INPROGRESS) {
            if (!uct_progress_until([this] { return progress(); },
                                    [&comp] { return comp.done(); }, timeout_sec)) {
                throw uct_test_error("iface flush timed out");
            }
            uct_test_check(comp.comp.status, "iface flush completion");
            return;
        } else if (status != UCS_ERR_NO_RESOURCE) {
            uct_test_check(status, "uct_iface_flush");
        }
        if (std::chrono::steady_clock::now() > deadline) {
            throw uct_test_error("iface flush timed out (no resources)");
        }
        progress();
    }
}

void uct_test_entity::flush_ep(uct_ep_h ep, double timeout_sec)
{
    uct_test_completion comp;
    ucs_status_t status;
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration<double>(timeout_sec);

    for (;;) {
        status = uct_ep_flush(ep, UCT_FLUSH_FLAG_LOCAL, &comp.comp);
        if (status == UCS_OK) {
            return;
        } else if (status == UCS_INPROGRESS) {
            if (!uct_progress_until([this] { return progress(); },
                                    [&comp] { return comp.done(); }, timeout_sec)) {
                throw uct_test_error("ep flush timed out");
            }
            uct_test_check(comp.comp.status, "ep flush completion");
            return;
        } else if (status != UCS_ERR_NO_RESOURCE) {
            uct_test_check(status, "uct_ep_flush");
        }
        if (std::chrono::steady_clock::now() > deadline) {
            throw uct_test_error("ep flush timed out (no resources)");
        }
        progress();
    }
}

std::pair<uct_ep_h, uct_ep_h> uct_connect(uct_test_entity &a, uct_test_entity &b)
{
    if (a.has_cap(UCT_IFACE_FLAG_CONNECT_TO_IFACE) &&
        b.has_cap(UCT_IFACE_FLAG_CONNECT_TO_IFACE)) {
        uct_ep_h ea = a.create_ep_to_iface(b.device_address(), b.iface_address());
        if (&a == &b) {
            return std::make_pair(ea, ea);
        }
        uct_ep_h eb = b.create_ep_to_iface(a.device_address(), a.iface_address());
        return std::make_pair(ea, eb);
    }

    /* CONNECT_TO_EP: both eps exist before either is connected. A loopback
     * needs two eps of the same iface connected to each other. */
    uct_ep_h ea = a.create_ep();
    uct_ep_h eb = b.create_ep();
    a.connect_ep_to_ep(ea, b.device_address(), b.ep_address(eb));
    b.connect_ep_to_ep(eb, a.device_address(), a.ep_address(ea));
    return std::make_pair(ea, eb);
}

/* ---- am recorder -------------------------------------------------------- */

am_recorder::am_recorder(uct_test_entity &e, uint8_t id, bool keep_desc) :
    m_entity(e), m_id(id), m_keep_desc(keep_desc)
{
    uct_test_check(uct_iface_set_am_handler(e.iface(), id, am_cb, this, 0),
                   "uct_iface_set_am_handler");
}

am_recorder::~am_recorder()
{
    release_descs();
    uct_iface_set_am_handler(m_entity.iface(), m_id, NULL, NULL, 0);
}

ucs_status_t am_recorder::am_cb(void *arg, void *data, size_t length, unsigned flags)
{
    am_recorder *self = static_cast<am_recorder*>(arg);
    message msg;

    msg.data.assign((const char*)data, length);
    msg.flags = flags;
    msg.desc  = NULL;
    if (self->m_keep_desc && (flags & UCT_CB_PARAM_FLAG_DESC)) {
        /* What uct_iface_release_desc() takes: the start of the headroom. */
        msg.desc = (char*)data - self->m_entity.rx_headroom();
        self->m_msgs.push_back(msg);
        return UCS_INPROGRESS;
    }
    self->m_msgs.push_back(msg);
    return UCS_OK;
}

void am_recorder::release_descs()
{
    for (message &msg : m_msgs) {
        if (msg.desc != NULL) {
            uct_iface_release_desc(msg.desc);
            msg.desc = NULL;
        }
    }
}

/* ---- buffers and keys --------------------------------------------------- */

uct_test_buffer::uct_test_buffer(uct_test_entity &e, size_t length) :
    m_entity(e), m_ptr(NULL), m_length(length), m_memh(UCT_MEM_HANDLE_NULL)
{
    if (posix_memalign(&m_ptr, 64, std::max<size_t>(length, 1)) != 0) {
        throw uct_test_error("posix_memalign failed");
    }
    memset(m_ptr, 0, length);

    if (e.md_attr().cap.flags & UCT_MD_FLAG_REG) {
        ucs_status_t status = uct_md_mem_reg(e.md(), m_ptr, std::max<size_t>(length, 1),
                                             UCT_MD_MEM_ACCESS_ALL, &m_memh);
        if (status != UCS_OK) {
            free(m_ptr);
            uct_test_check(status, "uct_md_mem_reg");
        }

        m_rkey_blob.assign(e.md_attr().rkey_packed_size, '\0');
        if (!m_rkey_blob.empty()) {
            status = uct_md_mkey_pack(e.md(), m_memh, &m_rkey_blob[0]);
            if (status != UCS_OK) {
                uct_md_mem_dereg(e.md(), m_memh);
                free(m_ptr);
                uct_test_check(status, "uct_md_mkey_pack");
            }
        }
    }
}

uct_test_buffer::~uct_test_buffer()
{
    if (m_memh != UCT_MEM_HANDLE_NULL) {
        uct_md_mem_dereg(m_entity.md(), m_memh);
    }
    free(m_ptr);
}

uct_iov_t uct_test_buffer::iov(size_t offset, size_t len) const
{
    uct_iov_t iov;

    iov.buffer = (char*)m_ptr + offset;
    iov.length = std::min(len, m_length - offset);
    iov.memh   = m_memh;
    iov.stride = 0;
    iov.count  = 1;
    return iov;
}

uint8_t uct_test_buffer::pattern(uint64_t seed, size_t offset)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + offset;

    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 32;
    return (uint8_t)x;
}

std::string uct_test_pattern_string(uint64_t seed, size_t length)
{
    std::string s(length, '\0');
    for (size_t i = 0; i < length; ++i) {
        s[i] = (char)uct_test_buffer::pattern(seed, i);
    }
    return s;
}

size_t uct_test_pack_string(void *dest, void *arg)
{
    const std::string *s = static_cast<uct_test_pack_arg *>(arg)->data;
    memcpy(dest, s->data(), s->size());
    return s->size();
}

void uct_test_unpack_string(void *arg, const void *data, size_t length)
{
    static_cast<std::string *>(arg)->assign((const char *)data, length);
}

void uct_test_buffer::fill(uint64_t seed)
{
    for (size_t i = 0; i < m_length; ++i) {
        ((uint8_t*)m_ptr)[i] = pattern(seed, i);
    }
}

void uct_test_buffer::fill_byte(uint8_t byte)
{
    memset(m_ptr, byte, m_length);
}

bool uct_test_buffer::check(uint64_t seed, size_t offset, size_t len) const
{
    size_t end = (len == (size_t)-1) ? m_length : std::min(m_length, offset + len);

    for (size_t i = offset; i < end; ++i) {
        if (((const uint8_t*)m_ptr)[i] != pattern(seed, i)) {
            return false;
        }
    }
    return true;
}

uct_test_rkey::uct_test_rkey(uct_component_h component, const std::string &blob) :
    m_component(component)
{
    uct_test_check(uct_rkey_unpack(component, blob.data(), &m_bundle),
                   "uct_rkey_unpack");
}

uct_test_rkey::~uct_test_rkey()
{
    uct_rkey_release(m_component, &m_bundle);
}

uct_log_capture::uct_log_capture(ucs_log_level_t level) : m_saved_level(ucs_log_level)
{
    char path[] = "/tmp/ucx_test_uct_log_XXXXXX";
    int fd      = mkstemp(path);

    if (fd >= 0) {
        close(fd);
        m_path = path;
        ucs_log_set_file(path);
    }
    ucs_log_set_level(level);
}

uct_log_capture::~uct_log_capture()
{
    ucs_log_set_file("stderr");
    ucs_log_set_level(m_saved_level);
    if (!m_path.empty()) {
        unlink(m_path.c_str());
    }
}

std::string uct_log_capture::text() const
{
    std::ifstream in(m_path);
    std::stringstream ss;

    fflush(ucs_log_get_stream());
    ss << in.rdbuf();
    return ss.str();
}

static void uct_test_completion_cb(uct_completion_t *self)
{
    uct_test_completion *c = ucs_container_of(self, uct_test_completion, comp);
    ++c->calls;
}

uct_test_completion::uct_test_completion(int count) : calls(0)
{
    comp.func   = uct_test_completion_cb;
    comp.count  = count;
    comp.status = UCS_OK;
}

/* ---- fixture ------------------------------------------------------------ */

void uct_test_base::TearDown()
{
    while (!m_entities.empty()) {
        m_entities.pop_back();
    }
}

uct_test_entity *uct_test_base::create_entity(const uct_resource &res,
                                              const uct_entity_params &params)
{
    m_entities.emplace_back(new uct_test_entity(res, params));
    return m_entities.back().get();
}

void uct_test_base::destroy_entity(uct_test_entity *e)
{
    for (auto it = m_entities.begin(); it != m_entities.end(); ++it) {
        if (it->get() == e) {
            m_entities.erase(it);
            return;
        }
    }
}

unsigned uct_test_base::progress()
{
    unsigned count = 0;
    for (auto &e : m_entities) {
        count += e->progress();
    }
    return count;
}

bool uct_test_base::progress_until(const std::function<bool()> &pred,
                                   double timeout_sec)
{
    return uct_progress_until([this] { return progress(); }, pred, timeout_sec);
}

} // namespace ucx_test

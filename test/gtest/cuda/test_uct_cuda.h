/**
 * @file test_uct_cuda.h
 * Helpers of the cuda_copy / cuda_ipc transport tests: open a transport of
 * libuct_cuda.so on a process's current context, with an ep to itself
 * (cuda_copy) or to a peer's iface (cuda_ipc), and wait for completions.
 * Used only inside processes forked by cuda_in_child()/cuda_two_processes().
 */
#ifndef UCX_TEST_UCT_CUDA_H_
#define UCX_TEST_UCT_CUDA_H_

#ifdef HAVE_CONFIG_H
#include "config.h" /* HAVE_CUDA_COPY_KERNEL, the same in every includer */
#endif

#include "cuda_test.h"
#include "uct/uct_test.h"

#include <uct/api/v2/uct_v2.h>

#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include <memory>
#include <string>

namespace uct_cuda_test {

/* uct_iface_estimate_perf() of every output for @a op between the memory
 * types and devices given; expects UCS_OK. */
inline uct_perf_attr_t
estimate_perf(uct_iface_h iface, uct_ep_operation_t op, ucs_memory_type_t local,
              ucs_memory_type_t remote,
              ucs_sys_device_t local_dev  = UCS_SYS_DEVICE_ID_UNKNOWN,
              ucs_sys_device_t remote_dev = UCS_SYS_DEVICE_ID_UNKNOWN)
{
    uct_perf_attr_t a;

    memset(&a, 0, sizeof(a));
    a.field_mask = UCT_PERF_ATTR_FIELD_OPERATION | UCT_PERF_ATTR_FIELD_LOCAL_MEMORY_TYPE |
                   UCT_PERF_ATTR_FIELD_REMOTE_MEMORY_TYPE |
                   UCT_PERF_ATTR_FIELD_LOCAL_SYS_DEVICE |
                   UCT_PERF_ATTR_FIELD_REMOTE_SYS_DEVICE |
                   UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD |
                   UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD |
                   UCT_PERF_ATTR_FIELD_RECV_OVERHEAD | UCT_PERF_ATTR_FIELD_BANDWIDTH |
                   UCT_PERF_ATTR_FIELD_LATENCY;
    a.operation          = op;
    a.local_memory_type  = local;
    a.remote_memory_type = remote;
    a.local_sys_device   = local_dev;
    a.remote_sys_device  = remote_dev;
    EXPECT_EQ(UCS_OK, uct_iface_estimate_perf(iface, &a));
    return a;
}

/** The resource of transport @a tl ("cuda_copy", "cuda_ipc"), or a failure. */
inline ucx_test::uct_resource find_resource(const std::string &tl)
{
    std::vector<ucx_test::uct_resource> res = ucx_test::uct_enum_resources(tl);
    if (res.empty()) {
        throw ucx_test::uct_test_error("transport " + tl + " not found");
    }
    return res[0];
}

/** cuda_in_child(), turning a fixture exception into a readable failure. */
inline void in_child(const std::function<void()> &fn, double timeout = 60.0)
{
    cuda_test::cuda_in_child([&fn] {
        try {
            fn();
        } catch (const std::exception &e) {
            ADD_FAILURE() << "exception: " << e.what();
        }
    }, timeout);
}

/** Wrap a process function the same way. */
inline ucx_test::process_fn_t guarded(const ucx_test::process_fn_t &fn)
{
    return [fn](ucx_test::oob_channel &ch) {
        try {
            fn(ch);
        } catch (const std::exception &e) {
            ADD_FAILURE() << "exception: " << e.what();
        }
    };
}

/** Wait until @a comp completed, progressing @a e. */
inline bool wait_comp(ucx_test::uct_test_entity &e, ucx_test::uct_test_completion &c,
                      double timeout = 10.0)
{
    return ucx_test::uct_progress_until([&e] { return e.progress(); },
                                        [&c] { return c.done(); }, timeout);
}

/** Run a zcopy operation; wait for it when it is in progress. */
inline ucs_status_t zcopy_wait(ucx_test::uct_test_entity &e,
                               const std::function<ucs_status_t(uct_completion_t*)> &op)
{
    ucx_test::uct_test_completion c;
    ucs_status_t status = op(&c.comp);

    if (status == UCS_INPROGRESS) {
        if (!wait_comp(e, c)) {
            return UCS_ERR_TIMED_OUT;
        }
        status = c.comp.status;
    }
    return status;
}

inline uct_iov_t make_iov(CUdeviceptr ptr, size_t length, uct_mem_h memh = NULL)
{
    uct_iov_t iov;

    iov.buffer = (void*)ptr;
    iov.length = length;
    iov.memh   = memh;
    iov.stride = 0;
    iov.count  = 1;
    return iov;
}

/**
 * A symbol of the loaded libuct_cuda.so module (loaded RTLD_LOCAL by the
 * module loader, so found through its path), or NULL.
 */
inline void *module_symbol(const char *name)
{
    std::string path;

    dl_iterate_phdr([](struct dl_phdr_info *info, size_t, void *arg) -> int {
        if (strstr(info->dlpi_name, "libuct_cuda.so") != NULL) {
            *(std::string*)arg = info->dlpi_name;
            return 1;
        }
        return 0;
    }, &path);
    if (path.empty()) {
        return NULL;
    }
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (handle == NULL) {
        return NULL;
    }
    void *sym = dlsym(handle, name);
    dlclose(handle);
    return sym;
}

/** A process-wide counter of the module (uct_cuda_ipc_export_count,
 *  uct_cuda_ipc_import_count), 0 with a failure if it is not there. */
inline uint64_t module_counter(const char *symbol)
{
    typedef uint64_t (*fn_t)(void);
    fn_t fn = (fn_t)module_symbol(symbol);

    if (fn == NULL) {
        ADD_FAILURE() << symbol << " not found";
        return 0;
    }
    return fn();
}

/** Mapping-cache statistics of a cuda_ipc iface. */
struct ipc_cache_stats {
    uint64_t imports = 0, hits = 0;
    unsigned regions = 0;
};

inline ipc_cache_stats cache_stats(uct_iface_h iface)
{
    typedef void (*fn_t)(uct_iface_h, uint64_t*, uint64_t*, unsigned*);
    fn_t fn = (fn_t)module_symbol("uct_cuda_ipc_iface_cache_stats");
    ipc_cache_stats st;

    if (fn == NULL) {
        ADD_FAILURE() << "uct_cuda_ipc_iface_cache_stats not found";
        return st;
    }
    fn(iface, &st.imports, &st.hits, &st.regions);
    return st;
}

/** Kernel launches of an iface's batched copies and the copies they carried
 *  (from @a symbol: uct_cuda_ipc_iface_batch_stats or
 *  uct_cuda_copy_iface_batch_stats). */
struct batch_stats {
    uint64_t launches = 0, copies = 0;
};

inline batch_stats iface_batch_stats(const char *symbol, uct_iface_h iface)
{
    typedef void (*fn_t)(uct_iface_h, uint64_t*, uint64_t*);
    fn_t fn = (fn_t)module_symbol(symbol);
    batch_stats st;

    if (fn == NULL) {
        ADD_FAILURE() << symbol << " not found";
        return st;
    }
    fn(iface, &st.launches, &st.copies);
    return st;
}

/** Whether this build has the copy kernel (configure found nvcc; the model
 *  has no nvcc of its own, ucx_info -v says). */
inline bool copy_kernel_built()
{
#ifdef HAVE_CUDA_COPY_KERNEL
    return true;
#else
    return false;
#endif
}

} // namespace uct_cuda_test

#endif

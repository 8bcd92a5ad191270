/**
 * @file test_ucp_cuda_stale.cc
 * Issue 19: a send posted right after a blocking fill of a fresh device
 * buffer must carry the new bytes. The real driver may return from a
 * cuMemcpyHtoD from pageable memory (and from a blocking device memset)
 * before the data has landed: the copy is ordered on the legacy default
 * stream (or the per-thread one) and nothing on a non-blocking stream, nor
 * another process reading through an IPC mapping, waits for it. The driver
 * model (CUDASIM_LATE_LANDING=1) lands such a copy at the latest moment the
 * driver's rules allow, so a library that reads the buffer without ordering
 * itself after the legacy stream sees the old bytes every time.
 *
 * Each test: two processes; for each size around the protocol boundaries
 * (8 B eager or zero-copy, just below and at the rendezvous threshold the
 * sender's endpoint computed for device memory that does not export,
 * 64 KiB, 1 MiB, 8 MiB pipelined) the sender allocates a fresh buffer of one
 * kind, sets it to old bytes (0xa5, synchronised), fills it with a new
 * pattern by a blocking copy from pageable memory and posts
 * ucp_tag_send_nbx at once. The receiver (a fresh buffer of the same kind,
 * 0xee) checks every byte after completion: first read back on a
 * non-blocking stream of its own, then on the legacy stream. Orders: the
 * library (context, worker, endpoint) initialised before the application
 * makes its context, or after; and, after the library, an application
 * context of its own (cuCtxCreate) or the primary context of device 1 (an
 * MPI rank choosing its GPU after MPI_Init). Fills: the copy, its
 * per-thread default stream flavour, a blocking cuMemsetD8; and work queued
 * on a default stream without a wait, as CuPy's set() and zeros() leave it
 * (cuMemcpyHtoDAsync from pageable memory on the legacy or the per-thread
 * stream, cuMemsetD8Async), with the receiver's guard memset also pending on
 * its legacy stream when it posts the receive.
 *
 * Each received message prints a "[ stale    ]" line: kind, order, fill,
 * size, the protocol the receiver counted, and what each read saw.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "cuda/cuda_test.h"
#include "cuda/ucp_cuda_peer.h"

#include <ucp/api/ucp.h>
#include <ucp/core/ucp_proto_stats.h>
#include <ucp/rndv/ucp_rndv.h>

#include <cudaTypedefs.h>

#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

using cuda_test::allocation;
using cuda_test::mem_kind;
using ucx_test::oob_channel;

namespace {

const unsigned char k_old   = 0xa5; /* the sender's bytes before the fill */
const unsigned char k_guard = 0xee; /* the receiver's bytes before the message */
const size_t k_vmm_gran     = 2ul << 20;

/** When the application's context comes to be, relative to the library. */
enum class order {
    library_first,  /**< ucp_init/worker/ep, then cuInit + primary context */
    context_first,  /**< primary context current, then the library */
    own_context,    /**< library first, then a cuCtxCreate context */
    other_device    /**< library first, then device 1's primary context (an
                         MPI rank picking its GPU after MPI_Init) */
};

/** How the sender writes the new bytes: "synchronous" calls, and work
 *  queued on a default stream and not waited for (a CuPy array's set() and
 *  fill(): cudaMemcpyAsync / a memset on the legacy stream). */
enum class fill {
    htod,            /**< cuMemcpyHtoD from pageable memory (legacy stream) */
    htod_ptds,       /**< the same, per-thread default stream flavour */
    memset,          /**< cuMemsetD8 (one byte value per message) */
    htod_async,      /**< cuMemcpyHtoDAsync from pageable memory, legacy stream */
    htod_async_ptds, /**< the same on CU_STREAM_PER_THREAD */
    memset_async     /**< cuMemsetD8Async on the legacy stream */
};

/* Stream-ordered fills leave the receiver's guard pending too: it zeroes its
 * buffer on the legacy stream and posts the receive without waiting, as
 * cupy.zeros() then comm.Recv() does. */
bool is_stream_ordered(fill f)
{
    return (f == fill::htod_async) || (f == fill::htod_async_ptds) ||
           (f == fill::memset_async);
}

const char *order_name(order o)
{
    switch (o) {
    case order::library_first: return "library_first";
    case order::context_first: return "context_first";
    case order::own_context:   return "own_context";
    case order::other_device:  return "other_device";
    }
    return "?";
}

const char *fill_name(fill f)
{
    switch (f) {
    case fill::htod:      return "htod";
    case fill::htod_ptds: return "htod_ptds";
    case fill::memset:    return "memset";
    case fill::htod_async:      return "htod_async";
    case fill::htod_async_ptds: return "htod_async_ptds";
    case fill::memset_async:    return "memset_async";
    }
    return "?";
}

/* Inlined even at -O0 (the debug and sanitizer trees): it runs per byte. */
__attribute__((always_inline)) inline unsigned char pattern(size_t i, unsigned seed, fill f)
{
    if ((f == fill::memset) || (f == fill::memset_async)) {
        return (unsigned char)(0x10 + seed); /* never k_old nor k_guard */
    }
    /* Never k_old: a stale byte cannot pass for a new one. */
    unsigned char v = (unsigned char)((i * 131u) ^ (i >> 9) ^ (seed * 17u));
    return (v == k_old) ? (unsigned char)0x5a : v;
}

size_t alloc_size(mem_kind kind, size_t size)
{
    bool vmm = (kind == mem_kind::vmm_posix_fd) || (kind == mem_kind::vmm_no_handle);
    return vmm ? ((size + k_vmm_gran - 1) / k_vmm_gran) * k_vmm_gran : size;
}

void set_env()
{
    /* The realistic rule, whatever the model's default. */
    setenv("CUDASIM_LATE_LANDING", "1", 1);
}

/* The device the application works on. */
int app_device(order o)
{
    return (o == order::other_device) ? 1 : 0;
}

/* Make the application's context current, as cudart would (primary), or a
 * context of its own. */
void make_app_context(order o, CUcontext *own)
{
    CUdevice dev;

    *own = NULL;
    if (o == order::own_context) {
        ASSERT_CU(cuInit(0));
        ASSERT_CU(cuDeviceGet(&dev, 0));
#if CUDA_VERSION >= 13000
        ASSERT_CU(cuCtxCreate(own, NULL, 0, dev));
#else
        ASSERT_CU(cuCtxCreate(own, 0, dev));
#endif
    } else {
        cuda_test::init_device(app_device(o));
    }
}

/* The library's context, worker and endpoint, and the application's
 * context, in the order of the test. */
void setup(order o, cuda_test::ucp_peer &p, oob_channel &oob, CUcontext *own)
{
    set_env();
    if (o == order::context_first) {
        ASSERT_NO_FATAL_FAILURE(make_app_context(o, own));
        ASSERT_NO_FATAL_FAILURE(p.init(oob));
    } else {
        ASSERT_NO_FATAL_FAILURE(p.init(oob));
        ASSERT_NO_FATAL_FAILURE(make_app_context(o, own));
    }
}

/* Sizes around every protocol boundary, with the sender's threshold for
 * device buffers that do not export (the only kind with an eager range). */
std::vector<size_t> sizes_for(ucp_ep_h ep)
{
    size_t thresh = ucp_rndv_thresh(ep, UCP_RNDV_KIND_DEVICE);
    std::vector<size_t> sizes = {8};

    if ((thresh > 9) && (thresh < (64u << 10))) {
        sizes.push_back(thresh - 1);
        sizes.push_back(thresh);
    } else {
        sizes.push_back(4096);
        sizes.push_back(12288);
    }
    sizes.push_back(64u << 10);
    sizes.push_back(1u << 20);
    sizes.push_back(8u << 20);
    return sizes;
}

/* "new bytes", or what else the bytes are than @a want (the pattern, made
 * once per message: under ASan a pattern() call per byte and read was most
 * of these suites' time, and most reads are right, which memcmp says). */
std::string describe(const std::vector<unsigned char> &got,
                     const std::vector<unsigned char> &want, size_t size, size_t *bad_p)
{
    size_t bad = 0, old = 0, guard = 0, first = size;
    std::ostringstream os;

    if (memcmp(got.data(), want.data(), size) == 0) {
        *bad_p = 0;
        return "new bytes";
    }
    for (size_t i = 0; i < size; ++i) {
        if (got[i] != want[i]) {
            first = (bad == 0) ? i : first;
            ++bad;
            old   += (got[i] == k_old);
            guard += (got[i] == k_guard);
        }
    }
    *bad_p = bad;
    if (bad == 0) {
        return "new bytes";
    }
    os << bad << " of " << size << " bytes wrong from byte " << first << " ("
       << old << " the sender's old 0xa5, " << guard << " the receiver's 0xee, "
       << (bad - old - guard) << " other)";
    return os.str();
}

std::string proto_delta(const uint64_t before[UCP_PROTO_STAT_LAST],
                        const uint64_t after[UCP_PROTO_STAT_LAST])
{
    std::string s;

    for (int i = 0; i < UCP_PROTO_STAT_LAST; ++i) {
        if (after[i] != before[i]) {
            s += (s.empty() ? "" : "+");
            s += ucp_proto_stat_name((ucp_proto_stat_t)i);
        }
    }
    return s.empty() ? "?" : s;
}

void receiver(mem_kind kind, order o, fill f, oob_channel &oob)
{
    uint64_t before[UCP_PROTO_STAT_LAST], after[UCP_PROTO_STAT_LAST];
    cuda_test::ucp_peer p;
    CUcontext own;
    CUstream ustream;
    std::string blob;
    unsigned seed = 0;

    ASSERT_NO_FATAL_FAILURE(setup(o, p, oob, &own));
    ASSERT_CU(cuStreamCreate(&ustream, CU_STREAM_NON_BLOCKING));
    ASSERT_TRUE(oob.recv_blob(blob));
    std::vector<size_t> sizes(blob.size() / sizeof(size_t));
    memcpy(sizes.data(), blob.data(), blob.size());

    for (size_t size : sizes) {
        std::vector<unsigned char> user(size), legacy(size);
        ucp_request_param_t param;
        ucp_tag_recv_info_t info;
        allocation buf;
        size_t bad_user, bad_legacy;

        ++seed;
        ASSERT_CU(buf.allocate(kind, alloc_size(kind, size), app_device(o)));
        if (is_stream_ordered(f)) {
            ASSERT_CU(cuCtxSynchronize());
            ASSERT_CU(cuMemsetD8Async(buf.ptr, k_guard, buf.size, CU_STREAM_LEGACY));
        } else {
            ASSERT_CU(cuMemsetD8(buf.ptr, k_guard, buf.size));
            ASSERT_CU(cuCtxSynchronize());
        }
        ucp_worker_proto_stats(p.m_worker, before);
        memset(&param, 0, sizeof(param));
        ASSERT_EQ(UCS_OK, p.wait(ucp_tag_recv_nbx(p.m_worker, (void*)(uintptr_t)buf.ptr,
                                                  size, seed, (ucp_tag_t)-1, &param),
                                 &info))
                << size;
        EXPECT_EQ(size, info.length);
        ucp_worker_proto_stats(p.m_worker, after);
        /* A user stream first: it waits for nothing of the legacy one. */
        ASSERT_CU(cuMemcpyDtoHAsync(user.data(), buf.ptr, size, ustream));
        ASSERT_CU(cuStreamSynchronize(ustream));
        ASSERT_CU(cuMemcpyDtoH(legacy.data(), buf.ptr, size));

        std::vector<unsigned char> want(size);
        for (size_t i = 0; i < size; ++i) {
            want[i] = pattern(i, seed, f);
        }
        std::string u = describe(user, want, size, &bad_user);
        std::string l = describe(legacy, want, size, &bad_legacy);
        printf("[ stale    ] %s %s %s %zu B %s: user stream: %s; legacy stream: %s\n",
               cuda_test::kind_name(kind), order_name(o), fill_name(f), size,
               proto_delta(before, after).c_str(), u.c_str(), l.c_str());
        fflush(stdout);
        EXPECT_EQ(0u, bad_user) << cuda_test::kind_name(kind) << " " << size
                                << " B, read on a non-blocking stream: " << u;
        EXPECT_EQ(0u, bad_legacy) << cuda_test::kind_name(kind) << " " << size
                                  << " B, read on the legacy stream: " << l;
        ASSERT_TRUE(oob.barrier());
    }
    EXPECT_CU(cuStreamDestroy(ustream));
    p.cleanup(oob);
    if (own != NULL) {
        EXPECT_CU(cuCtxDestroy(own));
    }
}

/* Fill @a dst with the message's new bytes by @a f; no synchronisation. */
void fill_buffer(fill f, CUdeviceptr dst, const std::vector<unsigned char> &host,
                 size_t size, unsigned seed)
{
    static PFN_cuMemcpyHtoD_v3020 htod_ptds = NULL;
    CUdriverProcAddressQueryResult found;

    switch (f) {
    case fill::htod:
        ASSERT_CU(cuMemcpyHtoD(dst, host.data(), size));
        break;
    case fill::htod_ptds:
        if (htod_ptds == NULL) {
            ASSERT_CU(cuGetProcAddress("cuMemcpyHtoD", (void**)&htod_ptds, 12000,
                                       CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                                       &found));
            ASSERT_TRUE(htod_ptds != NULL);
        }
        ASSERT_CU(htod_ptds(dst, host.data(), size));
        break;
    case fill::memset:
        ASSERT_CU(cuMemsetD8(dst, pattern(0, seed, f), size));
        break;
    case fill::htod_async:
        ASSERT_CU(cuMemcpyHtoDAsync(dst, host.data(), size, CU_STREAM_LEGACY));
        break;
    case fill::htod_async_ptds:
        ASSERT_CU(cuMemcpyHtoDAsync(dst, host.data(), size, CU_STREAM_PER_THREAD));
        break;
    case fill::memset_async:
        ASSERT_CU(cuMemsetD8Async(dst, pattern(0, seed, f), size, CU_STREAM_LEGACY));
        break;
    }
}

void sender(mem_kind kind, order o, fill f, oob_channel &oob)
{
    cuda_test::ucp_peer p;
    CUcontext own;
    unsigned seed = 0;

    ASSERT_NO_FATAL_FAILURE(setup(o, p, oob, &own));
    std::vector<size_t> sizes = sizes_for(p.m_ep);
    ASSERT_TRUE(oob.send_blob(std::string((const char*)sizes.data(),
                                          sizes.size() * sizeof(size_t))));

    for (size_t size : sizes) {
        std::vector<unsigned char> host(size);
        ucp_request_param_t param;
        allocation buf;

        ++seed;
        /* A fresh buffer the library has never seen, with known old bytes. */
        ASSERT_CU(buf.allocate(kind, alloc_size(kind, size), app_device(o)));
        ASSERT_CU(cuMemsetD8(buf.ptr, k_old, buf.size));
        ASSERT_CU(cuCtxSynchronize());
        for (size_t i = 0; i < size; ++i) {
            host[i] = pattern(i, seed, f);
        }
        ASSERT_NO_FATAL_FAILURE(fill_buffer(f, buf.ptr, host, size, seed));
        memset(&param, 0, sizeof(param));
        ASSERT_EQ(UCS_OK, p.wait(ucp_tag_send_nbx(p.m_ep, (void*)(uintptr_t)buf.ptr,
                                                  size, seed, &param)))
                << size;
        ASSERT_TRUE(oob.barrier());
    }
    p.cleanup(oob);
    if (own != NULL) {
        EXPECT_CU(cuCtxDestroy(own));
    }
}

void run(mem_kind kind, order o, fill f)
{
    cuda_test::cuda_two_processes(
            [&](oob_channel &oob) { receiver(kind, o, f, oob); },
            [&](oob_channel &oob) { sender(kind, o, f, oob); }, 60.0);
}

const mem_kind k_kinds[] = {mem_kind::legacy,         mem_kind::async_default_pool,
                            mem_kind::pool_posix_fd,  mem_kind::pool_no_handle,
                            mem_kind::vmm_posix_fd,   mem_kind::vmm_no_handle,
                            mem_kind::managed};

typedef std::tuple<int, order> param_t;

class test_ucp_cuda_stale : public ::testing::TestWithParam<param_t> {
protected:
    void SetUp() override
    {
        int need = app_device(std::get<1>(GetParam())) + 1;

        if (cuda_test::device_count() < need) {
            GTEST_SKIP() << "needs " << need << " CUDA device(s)";
        }
    }

    mem_kind kind() const { return k_kinds[std::get<0>(GetParam())]; }
    order ord() const { return std::get<1>(GetParam()); }
};

TEST_P(test_ucp_cuda_stale, send_right_after_pageable_copy_carries_new_bytes)
{
    run(kind(), ord(), fill::htod);
}

std::string param_name(const ::testing::TestParamInfo<param_t> &info)
{
    return std::string(cuda_test::kind_name(k_kinds[std::get<0>(info.param)])) + "_" +
           order_name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(kinds, test_ucp_cuda_stale,
                         ::testing::Combine(::testing::Range(0, 7),
                                            ::testing::Values(order::library_first,
                                                              order::context_first)),
                         param_name);

/* Contexts the library cannot have set anything on when it initialised:
 * the application's own, and the primary context of another device (only
 * cuMemAlloc memory there: the other kinds of device 1 also trip over the
 * library working in device 0's context, a matter of its own). */
INSTANTIATE_TEST_SUITE_P(other_contexts, test_ucp_cuda_stale,
                         ::testing::Combine(::testing::Range(0, 7),
                                            ::testing::Values(order::own_context)),
                         param_name);
INSTANTIATE_TEST_SUITE_P(other_device, test_ucp_cuda_stale,
                         ::testing::Combine(::testing::Values(0),
                                            ::testing::Values(order::other_device)),
                         param_name);

class test_ucp_cuda_stale_fill : public test_ucp_cuda_stale {
};

TEST_P(test_ucp_cuda_stale_fill, send_right_after_per_thread_stream_copy_carries_new_bytes)
{
    run(k_kinds[std::get<0>(GetParam())], std::get<1>(GetParam()), fill::htod_ptds);
}

TEST_P(test_ucp_cuda_stale_fill, send_right_after_blocking_memset_carries_new_bytes)
{
    run(k_kinds[std::get<0>(GetParam())], std::get<1>(GetParam()), fill::memset);
}

INSTANTIATE_TEST_SUITE_P(kinds, test_ucp_cuda_stale_fill,
                         ::testing::Combine(::testing::Values(0, 1),
                                            ::testing::Values(order::library_first,
                                                              order::own_context)),
                         param_name);

/*
 * Work the application queued on a default stream and did not wait for:
 * every kind, in the orders where the library was there first and where the
 * context came first (the stream-ordered fills do not depend on a flag of
 * the context, so these two cover the rest).
 */
class test_ucp_cuda_stale_stream : public test_ucp_cuda_stale {
};

TEST_P(test_ucp_cuda_stale_stream, send_right_after_async_copy_on_legacy_stream_carries_new_bytes)
{
    run(kind(), ord(), fill::htod_async);
}

TEST_P(test_ucp_cuda_stale_stream, send_right_after_async_copy_on_per_thread_stream_carries_new_bytes)
{
    run(kind(), ord(), fill::htod_async_ptds);
}

TEST_P(test_ucp_cuda_stale_stream, send_right_after_async_memset_on_legacy_stream_carries_new_bytes)
{
    run(kind(), ord(), fill::memset_async);
}

INSTANTIATE_TEST_SUITE_P(kinds, test_ucp_cuda_stale_stream,
                         ::testing::Combine(::testing::Range(0, 7),
                                            ::testing::Values(order::library_first,
                                                              order::context_first)),
                         param_name);

} // namespace

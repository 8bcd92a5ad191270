/*
 * The rendezvous performance model (ucp_rndv_model.h) on hand-made inputs:
 * protocol times and the thresholds its two rules give, against crossovers
 * worked out by hand. The model's inputs from real transports are checked
 * in test_uct_perf_estimate (uct) and its use by the endpoints in the cuda
 * tests (test_ucp_cuda_rndv_misc.auto_threshold_*).
 */
extern "C" {
#include <ucp/rndv/ucp_rndv_model.h>
}

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace
{

const double us = 1e-6;

ucp_rndv_cost_t cost(double c_us, double gbps)
{
    return ucs_linear_func_make(c_us * us, 1.0 / (gbps * 1e9));
}

/* Round numbers: ctrl 1 us; data messages 1 us + 1 GB/s in one segment;
 * staging 10 us out of a GPU, 5 us into one, at 10 GB/s; a copy into a
 * device fragment 10 us at 1000 GB/s; cuda_ipc 10 us at 100 GB/s between
 * GPUs and at 10 GB/s with host memory. Fragments larger than any size
 * tried, so that each pipeline is one fragment. */
ucp_rndv_model_t round_model(bool cuda = true, bool ipc = true)
{
    ucp_rndv_model_t m = {};

    m.ctrl         = cost(1, INFINITY);
    m.am           = cost(1, 1);
    m.am_seg_c     = 0;
    m.am_seg       = SIZE_MAX / 2;
    m.cuda         = cuda;
    m.d2h          = cost(10, 10);
    m.h2d          = cost(5, 10);
    m.d2d          = cost(10, 1000);
    m.ipc          = ipc;
    m.ipc_d2d      = cost(10, 100);
    m.ipc_d2h      = cost(10, 10);
    m.ipc_h2d      = cost(10, 10);
    m.frag_host    = SIZE_MAX / 2;
    m.frag_cuda    = SIZE_MAX / 2;
    m.frag_cuda_on = 1;
    return m;
}

double t_us(const ucp_rndv_model_t &m, ucp_rndv_model_proto_t p, ucp_rndv_kind_t s,
            ucp_rndv_kind_t r, size_t size)
{
    return ucp_rndv_model_time(&m, p, s, r, size) / us;
}

} // namespace

TEST(test_ucp_rndv_model, protocol_times_add_up_their_steps)
{
    ucp_rndv_model_t m = round_model();
    const size_t n     = 1000000; /* 1 MB: 1000 us at 1 GB/s */

    /* eager device -> device: data 1 + 1000, out 10 + 100, in 5 + 100 */
    EXPECT_NEAR(
        1216.0,
        t_us(m, UCP_RNDV_MODEL_EAGER, UCP_RNDV_KIND_DEVICE, UCP_RNDV_KIND_DEVICE, n),
        1e-6);
    /* eager host -> host: data 1 + 1000, half the second copy 500 */
    EXPECT_NEAR(1501.0,
                t_us(m, UCP_RNDV_MODEL_EAGER, UCP_RNDV_KIND_HOST, UCP_RNDV_KIND_HOST, n),
                1e-6);
    /* get: RTS + read 10 + 10 */
    EXPECT_NEAR(
        21.0,
        t_us(m, UCP_RNDV_MODEL_GET, UCP_RNDV_KIND_DEVICE_EXPORT, UCP_RNDV_KIND_DEVICE, n),
        1e-6);
    /* put: RTS, RTR, ATP + write 10 + 10 */
    EXPECT_NEAR(
        23.0,
        t_us(m, UCP_RNDV_MODEL_PUT, UCP_RNDV_KIND_DEVICE, UCP_RNDV_KIND_DEVICE_EXPORT, n),
        1e-6);
    /* device pipeline, one fragment: RTS, RTR + copy 10 + 1, FRAG 1, read 10 + 10 */
    EXPECT_NEAR(
        34.0,
        t_us(m, UCP_RNDV_MODEL_PIPE_CUDA, UCP_RNDV_KIND_DEVICE, UCP_RNDV_KIND_DEVICE, n),
        1e-6);
    /* host pipeline, one fragment: RTS, RTR + the eager steps */
    EXPECT_NEAR(
        1218.0,
        t_us(m, UCP_RNDV_MODEL_PIPE_AM, UCP_RNDV_KIND_DEVICE, UCP_RNDV_KIND_DEVICE, n),
        1e-6);
    /* a protocol that cannot serve the pair */
    EXPECT_TRUE(std::isinf(ucp_rndv_model_time(
        &m, UCP_RNDV_MODEL_GET, UCP_RNDV_KIND_DEVICE, UCP_RNDV_KIND_DEVICE, n)));
    EXPECT_TRUE(std::isinf(ucp_rndv_model_time(&m, UCP_RNDV_MODEL_PUT, UCP_RNDV_KIND_HOST,
                                               UCP_RNDV_KIND_HOST, n)));
}

TEST(test_ucp_rndv_model, pipelines_overlap_their_stages)
{
    ucp_rndv_model_t m = round_model();
    const size_t frag  = 100000;

    m.frag_host = frag;
    m.frag_cuda = frag;
    /* 10 fragments of device pipeline: the first passes copy (10 + 0.1),
     * FRAG (1) and read (10 + 1); the other 9 at the read's pace, the
     * slowest stage: 9 * 10 + 9 * 1. Plus RTS and RTR. */
    EXPECT_NEAR(2 + 22.1 + 99,
                t_us(m, UCP_RNDV_MODEL_PIPE_CUDA, UCP_RNDV_KIND_DEVICE,
                     UCP_RNDV_KIND_DEVICE, 10 * frag),
                1e-6);
    /* 2.5 fragments: the rest is 1.5 fragments' bytes in 2 fragments */
    EXPECT_NEAR(2 + 22.1 + 2 * 10 + 1.5,
                t_us(m, UCP_RNDV_MODEL_PIPE_CUDA, UCP_RNDV_KIND_DEVICE,
                     UCP_RNDV_KIND_DEVICE, 25 * frag / 10),
                1e-6);
}

TEST(test_ucp_rndv_model, receiver_rules_pick_the_protocol)
{
    ucp_rndv_model_t m = round_model();
    ucp_rndv_model_proto_t p;

    ucp_rndv_model_rndv_time(&m, UCP_RNDV_KIND_DEVICE_EXPORT, UCP_RNDV_KIND_HOST, 8, &p);
    EXPECT_EQ(UCP_RNDV_MODEL_GET, p);
    ucp_rndv_model_rndv_time(&m, UCP_RNDV_KIND_HOST, UCP_RNDV_KIND_DEVICE_EXPORT, 8, &p);
    EXPECT_EQ(UCP_RNDV_MODEL_PUT, p);
    ucp_rndv_model_rndv_time(&m, UCP_RNDV_KIND_DEVICE, UCP_RNDV_KIND_DEVICE, 8, &p);
    EXPECT_EQ(UCP_RNDV_MODEL_PIPE_CUDA, p);
    ucp_rndv_model_rndv_time(&m, UCP_RNDV_KIND_HOST, UCP_RNDV_KIND_HOST, 8, &p);
    EXPECT_EQ(UCP_RNDV_MODEL_PIPE_AM, p);
    m.frag_cuda_on = 0; /* UCX_RNDV_FRAG_MEM_TYPE=host */
    ucp_rndv_model_rndv_time(&m, UCP_RNDV_KIND_DEVICE, UCP_RNDV_KIND_DEVICE, 8, &p);
    EXPECT_EQ(UCP_RNDV_MODEL_PIPE_AM, p);
}

TEST(test_ucp_rndv_model, device_data_over_a_host_lane_reads_host_fragments)
{
    ucp_rndv_model_t m = round_model(true, false);
    ucp_rndv_model_proto_t p;
    const size_t n = 1000000;

    m.host_rma   = 1;
    m.host_get   = cost(3, 2);
    m.staged_get = 1;
    ucp_rndv_model_rndv_time(&m, UCP_RNDV_KIND_DEVICE, UCP_RNDV_KIND_DEVICE, 8, &p);
    EXPECT_EQ(UCP_RNDV_MODEL_PIPE_HOST_GET, p);
    ucp_rndv_model_rndv_time(&m, UCP_RNDV_KIND_HOST, UCP_RNDV_KIND_DEVICE, 8, &p);
    EXPECT_EQ(UCP_RNDV_MODEL_PIPE_HOST_GET, p);
    ucp_rndv_model_rndv_time(&m, UCP_RNDV_KIND_HOST, UCP_RNDV_KIND_HOST, 8, &p);
    EXPECT_EQ(UCP_RNDV_MODEL_GET, p);
    /* one fragment, device -> device: RTS, RTR + out 10 + 100, FRAG 1,
     * read 3 + 500, in 5 + 100 */
    EXPECT_NEAR(2 + 110 + 1 + 503 + 105,
                t_us(m, UCP_RNDV_MODEL_PIPE_HOST_GET, UCP_RNDV_KIND_DEVICE,
                     UCP_RNDV_KIND_DEVICE, n),
                1e-6);
    /* host -> device: RTS + read + in */
    EXPECT_NEAR(1 + 503 + 105,
                t_us(m, UCP_RNDV_MODEL_PIPE_HOST_GET, UCP_RNDV_KIND_HOST,
                     UCP_RNDV_KIND_DEVICE, n),
                1e-6);
    EXPECT_TRUE(std::isinf(ucp_rndv_model_time(
        &m, UCP_RNDV_MODEL_PIPE_HOST_GET, UCP_RNDV_KIND_HOST, UCP_RNDV_KIND_HOST, n)));
    /* UCX_RNDV_PIPELINE_HOST_GET=n, or a device lane to the peer */
    m.staged_get = 0;
    ucp_rndv_model_rndv_time(&m, UCP_RNDV_KIND_DEVICE, UCP_RNDV_KIND_DEVICE, 8, &p);
    EXPECT_EQ(UCP_RNDV_MODEL_PIPE_AM, p);
    m.staged_get = 1;
    m.ipc        = 1;
    ucp_rndv_model_rndv_time(&m, UCP_RNDV_KIND_DEVICE, UCP_RNDV_KIND_DEVICE, 8, &p);
    EXPECT_EQ(UCP_RNDV_MODEL_PIPE_CUDA, p);
}

TEST(test_ucp_rndv_model, exportable_device_sender_reads_at_every_size)
{
    ucp_rndv_model_t m = round_model();

    /* get (11 us + ...) beats the staged eager copy (16 us + ...) at 1 B */
    EXPECT_EQ(1u, ucp_rndv_model_thresh(&m, UCP_RNDV_KIND_DEVICE_EXPORT));
    /* a get dearer than eager at small sizes moves the threshold: with a
     * 20 us read the crossover with device receivers is where
     * 16 + 1.2e-3 S = 21 + 0.01e-3 S (us, S in bytes): S = 4201.68 */
    m.ipc_d2d = cost(20, 100);
    m.ipc_d2h = cost(20, 10);
    EXPECT_EQ(4202u, ucp_rndv_model_thresh(&m, UCP_RNDV_KIND_DEVICE_EXPORT));
}

TEST(test_ucp_rndv_model, other_device_sender_switches_where_the_pipeline_wins)
{
    ucp_rndv_model_t m = round_model();

    /* Own receivers: put to an exportable one (13 us + S/100 GB/s) wins
     * from 1 B; the pipeline to the other (23 us + S/1000 + S/100 GB/s)
     * from 16 + 1.2e-3 S = 23 + 0.011e-3 S: S = 5887.3 */
    EXPECT_EQ(5888u, ucp_rndv_model_thresh(&m, UCP_RNDV_KIND_DEVICE));
    /* Costlier control messages (1.5 us; eager sends none, its data
     * messages keep 1 us) delay it: 16 + 1.2e-3 S = 24.5 + 0.011e-3 S,
     * S = 7148.9 */
    m.ctrl = cost(1.5, INFINITY);
    EXPECT_EQ(7149u, ucp_rndv_model_thresh(&m, UCP_RNDV_KIND_DEVICE));
}

TEST(test_ucp_rndv_model, first_crossover_decides)
{
    ucp_rndv_model_t m = round_model();

    /* 1 ms per staging copy, 64 KiB device fragments: the pipeline (one
     * copy, a read) beats eager (two copies) for small messages, but pays
     * a copy per fragment, so eager's single pair catches up. The
     * threshold stays at the first crossover. */
    m.d2h       = cost(1000, 10);
    m.h2d       = cost(1000, 10);
    m.d2d       = cost(1000, 1000);
    m.frag_cuda = 65536;
    EXPECT_LT(
        t_us(m, UCP_RNDV_MODEL_PIPE_CUDA, UCP_RNDV_KIND_DEVICE, UCP_RNDV_KIND_DEVICE, 8),
        t_us(m, UCP_RNDV_MODEL_EAGER, UCP_RNDV_KIND_DEVICE, UCP_RNDV_KIND_DEVICE, 8));
    EXPECT_GT(t_us(m, UCP_RNDV_MODEL_PIPE_CUDA, UCP_RNDV_KIND_DEVICE,
                   UCP_RNDV_KIND_DEVICE, 100 << 20),
              t_us(m, UCP_RNDV_MODEL_EAGER, UCP_RNDV_KIND_DEVICE, UCP_RNDV_KIND_DEVICE,
                   100 << 20));
    EXPECT_EQ(1u, ucp_rndv_model_thresh(&m, UCP_RNDV_KIND_DEVICE));
}

TEST(test_ucp_rndv_model, host_sender_switches_when_host_receivers_lose_little)
{
    ucp_rndv_model_t m = round_model();

    /* Data messages at 0.7 us per KB (a crossover off the integers). Host
     * receivers only lose (two control messages more), device receivers
     * gain: rendezvous once 2 us <= 5 % of the host eager time, 1 us +
     * 1.5 * 0.7e-3 us * S with the second copy, S >= 37142.9. */
    m.am = cost(1, 1 / 0.7);
    EXPECT_EQ(37143u, ucp_rndv_model_thresh(&m, UCP_RNDV_KIND_HOST));
}

TEST(test_ucp_rndv_model, a_host_lane_reads_host_buffers_once_and_wins_past_the_crossover)
{
    ucp_rndv_model_t m = round_model();
    ucp_rndv_model_proto_t p;

    /* Without the lane, host -> host has no get. */
    EXPECT_TRUE(std::isinf(ucp_rndv_model_time(&m, UCP_RNDV_MODEL_GET, UCP_RNDV_KIND_HOST,
                                               UCP_RNDV_KIND_HOST, 1000)));

    /* The lane reads at 10 GB/s after 1 us: RTS 1 + 1 + S / 10 GB/s. */
    m.host_rma = 1;
    m.host_get = cost(1, 10);
    EXPECT_NEAR(2.1, t_us(m, UCP_RNDV_MODEL_GET, UCP_RNDV_KIND_HOST, UCP_RNDV_KIND_HOST,
                          1000), 1e-9);
    ucp_rndv_model_rndv_time(&m, UCP_RNDV_KIND_HOST, UCP_RNDV_KIND_HOST, 1000, &p);
    EXPECT_EQ(UCP_RNDV_MODEL_GET, p);
    /* Only between host buffers: a device receiver keeps its protocols. */
    EXPECT_TRUE(std::isinf(ucp_rndv_model_time(&m, UCP_RNDV_MODEL_GET, UCP_RNDV_KIND_HOST,
                                               UCP_RNDV_KIND_DEVICE, 1000)));

    /* Eager host -> host is 1 + 1.5e-3 * S us: the read wins once
     * 1.4e-3 * S > 1, from 715 bytes. */
    EXPECT_EQ(715u, ucp_rndv_model_thresh(&m, UCP_RNDV_KIND_HOST));
}

TEST(test_ucp_rndv_model, without_cuda_ipc_only_overlap_gains)
{
    /* No cuda_ipc lane, one fragment per message: rendezvous only adds
     * control messages to the same copies, for every kind. */
    ucp_rndv_model_t m = round_model(true, false);

    EXPECT_EQ(SIZE_MAX, ucp_rndv_model_thresh(&m, UCP_RNDV_KIND_HOST));
    EXPECT_EQ(SIZE_MAX, ucp_rndv_model_thresh(&m, UCP_RNDV_KIND_DEVICE));

    /* Host fragments of 512 KiB, 8 KiB segments, the receive staging of
     * eager charged to both: below a fragment the pipeline is eager plus
     * control messages; beyond, its stages overlap and it wins. */
    m.frag_host  = 512 * 1024;
    m.am_seg     = 8192;
    m.am_seg_c   = 0.1e-6;
    m.recv_stage = 2e-6;
    for (auto kind : {UCP_RNDV_KIND_HOST, UCP_RNDV_KIND_DEVICE}) {
        size_t t = ucp_rndv_model_thresh(&m, kind);
        EXPECT_GT(t, m.frag_host) << ucp_rndv_model_kind_name(kind);
        EXPECT_LT(t, SIZE_MAX) << ucp_rndv_model_kind_name(kind);
    }

    /* No cuda_copy either: no device memory at all. */
    m = round_model(false, false);
    EXPECT_EQ(SIZE_MAX, ucp_rndv_model_thresh(&m, UCP_RNDV_KIND_HOST));
    EXPECT_EQ(SIZE_MAX, ucp_rndv_model_thresh(&m, UCP_RNDV_KIND_DEVICE_EXPORT));
}

TEST(test_ucp_rndv_model, cuda_ipc_without_cuda_copy_still_reads_and_writes)
{
    /* Without cuda_copy nothing stages device data, but a get or a put
     * needs only cuda_ipc: device senders take them at every size. */
    ucp_rndv_model_t m = round_model(false, true);

    EXPECT_TRUE(std::isinf(ucp_rndv_model_time(&m, UCP_RNDV_MODEL_EAGER,
                                               UCP_RNDV_KIND_DEVICE_EXPORT,
                                               UCP_RNDV_KIND_DEVICE, 8)));
    EXPECT_NEAR(21.0, t_us(m, UCP_RNDV_MODEL_GET, UCP_RNDV_KIND_DEVICE_EXPORT,
                           UCP_RNDV_KIND_DEVICE, 1000000), 1e-6);
    EXPECT_EQ(1u, ucp_rndv_model_thresh(&m, UCP_RNDV_KIND_DEVICE_EXPORT));
    EXPECT_EQ(1u, ucp_rndv_model_thresh(&m, UCP_RNDV_KIND_DEVICE));
}

TEST(test_ucp_rndv_model, names)
{
    EXPECT_STREQ("get_zcopy", ucp_rndv_model_proto_name(UCP_RNDV_MODEL_GET));
    EXPECT_STREQ("cuda, no export", ucp_rndv_model_kind_name(UCP_RNDV_KIND_DEVICE));
    EXPECT_STREQ("?", ucp_rndv_model_proto_name(UCP_RNDV_MODEL_LAST));
}

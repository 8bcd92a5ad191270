#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

/*
 * Global state, configuration, the entry check every API call goes through,
 * fork behaviour, cuInit and version queries.
 */
#include "cudasim.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

sim_state_t sim = {
    .lock     = PTHREAD_MUTEX_INITIALIZER,
    .progress = PTHREAD_COND_INITIALIZER,
};

__thread int sim_in_callback;

/**
 * Exported marker: tests look it up with dlsym() to tell the model from the
 * real driver (and skip what is only meaningful on one of them).
 */
const char cudasim_model_info[] = "cudasim " PACKAGE_VERSION
                                  " (CUDA driver API model, driver 13000)";

void sim_warn(const char *fmt, ...)
{
    char buf[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    /* One write() so lines of concurrent processes do not interleave. */
    fprintf(stderr, "cudasim: %s\n", buf);
}

int sim_unmodelled(const char *name)
{
    sim_warn("%s is not modelled; returning CUDA_ERROR_NOT_SUPPORTED", name);
    return CUDA_ERROR_NOT_SUPPORTED;
}

unsigned long long sim_new_id(void)
{
    return ++sim.next_object_id;
}

double sim_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/*
 * The real driver cannot be used in a child forked after cuInit: every call,
 * cuInit included, returns CUDA_ERROR_NOT_INITIALIZED there. Tests that pass
 * on the model must pass on a GPU, so the model does the same. The lock is
 * held across fork so that the child never inherits it locked by a thread
 * it does not have; the forking thread owns it on both sides and unlocks it
 * (initialising a locked mutex again is undefined, and ThreadSanitizer then
 * takes every later use of the lock for a double lock and a race).
 */
static void sim_atfork_prepare(void)
{
    pthread_mutex_lock(&sim.lock);
}

static void sim_atfork_parent(void)
{
    pthread_mutex_unlock(&sim.lock);
}

static void sim_atfork_child(void)
{
    pthread_mutex_unlock(&sim.lock);
    /* Waiters of the parent do not exist here. */
    pthread_cond_init(&sim.progress, NULL);
    if (sim.initialized) {
        sim.poisoned = 1;
    }
}

__attribute__((constructor)) static void sim_constructor(void)
{
    pthread_atfork(sim_atfork_prepare, sim_atfork_parent, sim_atfork_child);
}

CUresult sim_enter_uninit(void)
{
    if (sim_in_callback) {
        return CUDA_ERROR_NOT_PERMITTED;
    }
    pthread_mutex_lock(&sim.lock);
    if (sim.poisoned) {
        pthread_mutex_unlock(&sim.lock);
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    return CUDA_SUCCESS;
}

CUresult sim_enter(void)
{
    CUresult status = sim_enter_uninit();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (!sim.initialized) {
        pthread_mutex_unlock(&sim.lock);
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    return CUDA_SUCCESS;
}

void sim_leave(void)
{
    pthread_mutex_unlock(&sim.lock);
}

/* Parse an integer variable; a malformed value is an error, never ignored. */
static int sim_env_long(const char *name, long min, long max, long dflt,
                        long *value_p)
{
    const char *str = getenv(name);
    char *end;
    long value;

    if ((str == NULL) || (*str == '\0')) {
        *value_p = dflt;
        return 0;
    }
    errno = 0;
    value = strtol(str, &end, 10);
    if ((errno != 0) || (*end != '\0') || (value < min) || (value > max)) {
        sim_warn("invalid %s='%s': expected an integer in [%ld, %ld]", name,
                 str, min, max);
        return -1;
    }
    *value_p = value;
    return 0;
}

static int sim_read_config(sim_config_t *cfg)
{
    long devices, async, delay, late, fabric, cpu, mem_mb, memops, kernels, launch_fail;
    long peer;

    if ((sim_env_long("CUDASIM_DEVICES", 0, SIM_MAX_DEVICES, 2, &devices) != 0) ||
        (sim_env_long("CUDASIM_ASYNC", 0, 1, 0, &async) != 0) ||
        (sim_env_long("CUDASIM_ASYNC_DELAY_US", 0, 10000000, 2000, &delay) != 0) ||
        (sim_env_long("CUDASIM_LATE_LANDING", 0, 1, 1, &late) != 0) ||
        (sim_env_long("CUDASIM_FABRIC", 0, 1, 0, &fabric) != 0) ||
        (sim_env_long("CUDASIM_CPU_ACCESS", 0, 1, 0, &cpu) != 0) ||
        (sim_env_long("CUDASIM_MEMOPS", 0, 1, 1, &memops) != 0) ||
        (sim_env_long("CUDASIM_KERNELS", 0, 1, 1, &kernels) != 0) ||
        (sim_env_long("CUDASIM_PEER", 0, 1, 1, &peer) != 0) ||
        (sim_env_long("CUDASIM_LAUNCH_FAIL", 0, 1L << 30, 0, &launch_fail) != 0) ||
        (sim_env_long("CUDASIM_DEVICE_MEM_MB", 64, 1L << 24, 16384,
                      &mem_mb) != 0)) {
        return -1;
    }
    cfg->num_devices    = (int)devices;
    cfg->async          = (int)async;
    cfg->async_delay_us = (unsigned)delay;
    cfg->late_landing   = (int)late;
    cfg->fabric         = (int)fabric;
    cfg->cpu_access     = (int)cpu;
    cfg->memops         = (int)memops;
    cfg->kernels        = (int)kernels;
    cfg->peer           = (int)peer;
    cfg->launch_fail    = launch_fail;
    cfg->device_mem     = (size_t)mem_mb << 20;
    return 0;
}

static CUresult sim_init_devices(void)
{
    sim_device_t *dev;
    int i;

    for (i = 0; i < sim.cfg.num_devices; ++i) {
        dev          = &sim.devices[i];
        dev->ordinal = i;
        /* Stable UUIDs, distinct per device, recognisable in dumps. */
        memcpy(dev->uuid.bytes, "cudasim-gpu-", 12);
        dev->uuid.bytes[12] = 0;
        dev->uuid.bytes[13] = 0;
        dev->uuid.bytes[14] = (char)(i >> 8);
        dev->uuid.bytes[15] = (char)i;
        dev->primary = calloc(1, sizeof(*dev->primary));
        if (dev->primary == NULL) {
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        dev->primary->magic   = SIM_MAGIC_CTX;
        dev->primary->device  = i;
        dev->primary->primary = 1;
        dev->primary->id      = sim_new_id();
        dev->primary->next    = sim.contexts;
        sim.contexts          = dev->primary;
    }
    return CUDA_SUCCESS;
}

CUresult cuInit(unsigned int Flags)
{
    CUresult status = sim_enter_uninit();

    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (Flags != 0) {
        status = CUDA_ERROR_INVALID_VALUE;
    } else if (!sim.initialized) {
        if (sim_read_config(&sim.cfg) != 0) {
            status = CUDA_ERROR_INVALID_VALUE;
        } else {
            sim.pid = getpid();
            status  = (sim.cfg.num_devices == 0) ? CUDA_ERROR_NO_DEVICE :
                                                   sim_init_devices();
            if (status == CUDA_SUCCESS) {
                sim.initialized = 1;
            }
        }
    }
    sim_leave();
    return status;
}

CUresult cuDriverGetVersion(int *driverVersion)
{
    if (driverVersion == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *driverVersion = SIM_DRIVER_VERSION;
    return CUDA_SUCCESS;
}

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucx_info.h"

#include <ucp/api/ucp.h>
#include <uct/api/uct.h>
#include <ucs/sys/module.h>
#include <ucs/sys/sys.h>
#include <ucm/ucm_config.h>

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Reading the hook mode also makes ucx_info depend on libucm, so that its
 * configuration table is registered for -c even with --as-needed linking. */
static void ucx_info_print_hook_mode(FILE *stream)
{
    ucm_config_t config;

    if (ucm_config_read(&config) == UCS_OK) {
        fprintf(stream, "# CUDA memory hooks: UCX_MEM_CUDA_HOOK_MODE=%s\n",
                ucm_cuda_hook_mode_names[config.cuda_hook_mode]);
    } else {
        fprintf(stream, "# CUDA memory hooks: invalid UCX_MEM_CUDA_HOOK_MODE\n");
    }
}

void ucx_info_print_version(FILE *stream)
{
    char dir[PATH_MAX];

    fprintf(stream, "# Library version: %s\n", ucp_get_version_string());
    if (ucs_sys_get_object_dir((const void*)ucp_get_version_string, dir,
                               sizeof(dir)) == UCS_OK) {
        fprintf(stream, "# Library path: %s/libucp.so.0\n", dir);
    }
    fprintf(stream, "# API headers version: %d.%d\n", UCP_API_MAJOR, UCP_API_MINOR);
    fprintf(stream, "# Configured with: %s\n", UCX_CONFIGURE_ARGS);
    fprintf(stream, "# CUDA: %s\n", UCX_CUDA_SUMMARY);
    ucx_info_print_hook_mode(stream);
    fprintf(stream, "# Module search path:\n");
    ucs_module_print_search_path(stream, "uct");
}

/* One line per optional feature, as a C define, so the output can be
 * compared between builds with diff. */
void ucx_info_print_build_config(FILE *stream)
{
    fprintf(stream, "#define UCX_CONFIGURE_ARGS \"%s\"\n", UCX_CONFIGURE_ARGS);
    fprintf(stream, "#define UCX_BUILD_CC \"%s\"\n", UCX_BUILD_CC);
    fprintf(stream, "#define UCX_BUILD_CFLAGS \"%s\"\n", UCX_BUILD_CFLAGS);
    fprintf(stream, "#define UCX_VERSION \"%s\"\n", PACKAGE_VERSION);
#ifdef HAVE_CUDA
    fprintf(stream, "#define HAVE_CUDA 1\n");
#endif
#ifdef HAVE_HWLOC
    fprintf(stream, "#define HAVE_HWLOC 1\n");
#endif
#ifdef HAVE_VERBS
    fprintf(stream, "#define HAVE_VERBS 1\n");
#endif
#ifdef UCS_ENABLE_ASSERT
    fprintf(stream, "#define UCS_ENABLE_ASSERT 1\n");
#endif
#ifdef UCS_HAVE_SANITIZER
    fprintf(stream, "#define UCS_HAVE_SANITIZER 1\n");
#endif
}

/*
 * -d: every component, its memory domains and, per md, every transport and
 * device with the capabilities an iface opened on it reports. Opening the
 * ifaces is what makes the numbers real (limits depend on configuration).
 */

/* "8K", "64M" when the value is a whole number of binary units, else bytes. */
static const char *ucx_info_size_str(size_t value, char *buf, size_t max)
{
    static const char units[] = "KMGT";
    unsigned i;

    if (value == SIZE_MAX) {
        snprintf(buf, max, "unlimited");
        return buf;
    }
    if (value == UINT_MAX) {
        snprintf(buf, max, "%zu", value);
        return buf;
    }
    for (i = 0; (i < sizeof(units) - 1) && (value >= 1024) && !(value % 1024); ++i) {
        value /= 1024;
    }
    if (i == 0) {
        snprintf(buf, max, "%zu", value);
    } else {
        snprintf(buf, max, "%zu%c", value, units[i - 1]);
    }
    return buf;
}

static const char *ucx_info_device_type_str(uct_device_type_t type)
{
    switch (type) {
    case UCT_DEVICE_TYPE_NET:  return "network";
    case UCT_DEVICE_TYPE_SHM:  return "intra-node";
    case UCT_DEVICE_TYPE_ACC:  return "accelerator";
    case UCT_DEVICE_TYPE_SELF: return "loopback";
    default:                   return "unknown";
    }
}

static void ucx_info_print_md_caps(FILE *stream, const uct_md_attr_t *attr)
{
    char size_buf[32];
    int type, first;

    fprintf(stream, "#     Component: %s\n", attr->component_name);
    if (attr->cap.flags & UCT_MD_FLAG_REG) {
        fprintf(stream, "#             register: %s, cost: %.0f nsec + %.3f nsec/KB\n",
                ucx_info_size_str(attr->cap.max_reg, size_buf, sizeof(size_buf)),
                attr->reg_cost.c * 1e9, attr->reg_cost.m * 1e9 * 1024);
    }
    if (attr->cap.flags & UCT_MD_FLAG_ALLOC) {
        fprintf(stream, "#             allocate: %s\n",
                ucx_info_size_str(attr->cap.max_alloc, size_buf, sizeof(size_buf)));
    }
    fprintf(stream, "#           remote key: %zu bytes%s%s%s\n", attr->rkey_packed_size,
            (attr->cap.flags & UCT_MD_FLAG_NEED_RKEY) ? ", needed for remote access" : "",
            (attr->cap.flags & UCT_MD_FLAG_RKEY_PTR) ? ", rkey_ptr" : "",
            (attr->cap.flags & UCT_MD_FLAG_EXPORTABLE) ? ", exportable" : "");
    if (attr->cap.flags & UCT_MD_FLAG_NEED_MEMH) {
        fprintf(stream, "#           local memh: needed for zero-copy\n");
    }

    fprintf(stream, "#         memory types:");
    first = 1;
    for (type = 0; type < UCS_MEMORY_TYPE_LAST; ++type) {
        uint64_t bit = UCS_BIT(type);
        if (!((attr->cap.access_mem_types | attr->cap.reg_mem_types |
               attr->cap.alloc_mem_types | attr->cap.detect_mem_types) & bit)) {
            continue;
        }
        fprintf(stream, "%s %s (%s%s%s%s)", first ? "" : ",", ucs_memory_type_names[type],
                (attr->cap.access_mem_types & bit) ? "access" : "",
                (attr->cap.reg_mem_types & bit) ? ",reg" : "",
                (attr->cap.alloc_mem_types & bit) ? ",alloc" : "",
                (attr->cap.detect_mem_types & bit) ? ",detect" : "");
        first = 0;
    }
    fprintf(stream, "%s\n", first ? " none" : "");
}

/* One "am_bcopy: <= 8K" style line per supported operation. */
static void ucx_info_print_op(FILE *stream, const char *name, uint64_t flags,
                              uint64_t flag, const char *fmt, size_t limit)
{
    char size_buf[32];

    if (!(flags & flag)) {
        return;
    }
    fprintf(stream, "#            %9s: ", name);
    if (limit == SIZE_MAX) {
        fprintf(stream, "unlimited\n");
    } else {
        fprintf(stream, fmt, ucx_info_size_str(limit, size_buf, sizeof(size_buf)));
        fprintf(stream, "\n");
    }
}

static void ucx_info_print_iface_caps(FILE *stream, const uct_iface_attr_t *attr)
{
    uint64_t flags = attr->cap.flags;
    char size_buf[32], size_buf2[32];

    fprintf(stream, "#\n#      capabilities:\n");
    fprintf(stream, "#            bandwidth: %.2f/ppn + %.2f MB/sec\n",
            attr->bandwidth.shared / 1e6, attr->bandwidth.dedicated / 1e6);
    fprintf(stream, "#              latency: %.0f nsec + %.0f * N\n",
            attr->latency.c * 1e9, attr->latency.m * 1e9);
    fprintf(stream, "#             overhead: %.0f nsec\n", attr->overhead * 1e9);

    ucx_info_print_op(stream, "put_short", flags, UCT_IFACE_FLAG_PUT_SHORT, "<= %s",
                      attr->cap.put.max_short);
    ucx_info_print_op(stream, "put_bcopy", flags, UCT_IFACE_FLAG_PUT_BCOPY, "<= %s",
                      attr->cap.put.max_bcopy);
    if (flags & UCT_IFACE_FLAG_PUT_ZCOPY) {
        fprintf(stream, "#            put_zcopy: %s..%s, up to %zu iov\n",
                ucx_info_size_str(attr->cap.put.min_zcopy, size_buf, sizeof(size_buf)),
                ucx_info_size_str(attr->cap.put.max_zcopy, size_buf2, sizeof(size_buf2)),
                attr->cap.put.max_iov);
    }
    ucx_info_print_op(stream, "get_short", flags, UCT_IFACE_FLAG_GET_SHORT, "<= %s",
                      attr->cap.get.max_short);
    ucx_info_print_op(stream, "get_bcopy", flags, UCT_IFACE_FLAG_GET_BCOPY, "<= %s",
                      attr->cap.get.max_bcopy);
    if (flags & UCT_IFACE_FLAG_GET_ZCOPY) {
        fprintf(stream, "#            get_zcopy: %s..%s, up to %zu iov\n",
                ucx_info_size_str(attr->cap.get.min_zcopy, size_buf, sizeof(size_buf)),
                ucx_info_size_str(attr->cap.get.max_zcopy, size_buf2, sizeof(size_buf2)),
                attr->cap.get.max_iov);
    }
    ucx_info_print_op(stream, "am_short", flags, UCT_IFACE_FLAG_AM_SHORT, "<= %s",
                      attr->cap.am.max_short);
    ucx_info_print_op(stream, "am_bcopy", flags, UCT_IFACE_FLAG_AM_BCOPY, "<= %s",
                      attr->cap.am.max_bcopy);
    if (flags & UCT_IFACE_FLAG_AM_ZCOPY) {
        fprintf(stream, "#             am_zcopy: %s..%s, up to %zu iov\n",
                ucx_info_size_str(attr->cap.am.min_zcopy, size_buf, sizeof(size_buf)),
                ucx_info_size_str(attr->cap.am.max_zcopy, size_buf2, sizeof(size_buf2)),
                attr->cap.am.max_iov);
        fprintf(stream, "#   am_opt_zcopy_align: %zu\n", attr->cap.am.opt_zcopy_align);
        fprintf(stream, "#         am_align_mtu: %zu\n", attr->cap.am.align_mtu);
        fprintf(stream, "#            am header: <= %s\n",
                ucx_info_size_str(attr->cap.am.max_hdr, size_buf, sizeof(size_buf)));
    }
    if (flags & (UCT_IFACE_FLAG_ATOMIC_CPU | UCT_IFACE_FLAG_ATOMIC_DEVICE)) {
        fprintf(stream, "#               domain: %s\n",
                (flags & UCT_IFACE_FLAG_ATOMIC_DEVICE) ? "device" : "cpu");
    }

    fprintf(stream, "#           connection:%s%s%s\n",
            (flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE) ? " to iface" : "",
            ((flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE) &&
             (flags & UCT_IFACE_FLAG_CONNECT_TO_EP)) ? "," : "",
            (flags & UCT_IFACE_FLAG_CONNECT_TO_EP) ? " to ep" : "");
    fprintf(stream, "#              pending: %s\n",
            (flags & UCT_IFACE_FLAG_PENDING) ? "yes" : "no");
    fprintf(stream, "#      device priority: %u\n", attr->priority);
    fprintf(stream, "#              max eps: %s\n",
            (attr->max_num_eps == SIZE_MAX) ? "inf" :
            ucx_info_size_str(attr->max_num_eps, size_buf, sizeof(size_buf)));
    fprintf(stream, "#       device address: %zu bytes\n", attr->device_addr_len);
    if (flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE) {
        fprintf(stream, "#        iface address: %zu bytes\n", attr->iface_addr_len);
    }
    if (flags & UCT_IFACE_FLAG_CONNECT_TO_EP) {
        fprintf(stream, "#           ep address: %zu bytes\n", attr->ep_addr_len);
    }
    fprintf(stream, "#       error handling:%s%s%s\n",
            (flags & UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE) ? " peer failure" : "",
            (flags & UCT_IFACE_FLAG_EP_CHECK) ? " ep_check" : "",
            (flags & (UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                      UCT_IFACE_FLAG_EP_CHECK)) ? "" : " none");
    fprintf(stream, "#       handler thread: %s\n",
            (flags & UCT_IFACE_FLAG_CB_SYNC) ? "progress (sync)" : "-");
    if (attr->cap.event_flags != 0) {
        fprintf(stream, "#               events:%s%s%s\n",
                (attr->cap.event_flags & UCT_IFACE_FLAG_EVENT_SEND_COMP) ? " send_comp" : "",
                (attr->cap.event_flags & UCT_IFACE_FLAG_EVENT_RECV) ? " recv" : "",
                (attr->cap.event_flags & UCT_IFACE_FLAG_EVENT_FD) ? " fd" : "");
    }
}

static void ucx_info_print_resource(FILE *stream, uct_md_h md, uct_worker_h worker,
                                    const uct_tl_resource_desc_t *resource)
{
    uct_iface_config_t *config;
    uct_iface_params_t params;
    uct_iface_attr_t attr;
    uct_iface_h iface;
    ucs_status_t status;

    fprintf(stream, "#\n#      Transport: %s\n", resource->tl_name);
    fprintf(stream, "#         Device: %s\n", resource->dev_name);
    fprintf(stream, "#           Type: %s\n", ucx_info_device_type_str(resource->dev_type));
    if (resource->sys_device == 0xff) {
        fprintf(stream, "#  System device: <unknown>\n");
    } else {
        fprintf(stream, "#  System device: %u\n", resource->sys_device);
    }

    status = uct_md_iface_config_read(md, resource->tl_name, NULL, NULL, &config);
    if (status != UCS_OK) {
        fprintf(stream, "#   < failed to read configuration: %s >\n",
                ucs_status_string(status));
        return;
    }

    memset(&params, 0, sizeof(params));
    params.field_mask      = UCT_IFACE_PARAM_FIELD_DEVICE;
    params.device.tl_name  = resource->tl_name;
    params.device.dev_name = resource->dev_name;
    status = uct_iface_open(md, worker, &params, config, &iface);
    uct_config_release(config);
    if (status != UCS_OK) {
        fprintf(stream, "#   < failed to open interface: %s >\n",
                ucs_status_string(status));
        return;
    }

    status = uct_iface_query(iface, &attr);
    if (status == UCS_OK) {
        ucx_info_print_iface_caps(stream, &attr);
    } else {
        fprintf(stream, "#   < failed to query interface: %s >\n",
                ucs_status_string(status));
    }
    uct_iface_close(iface);
}

static void ucx_info_print_md(FILE *stream, uct_component_h component,
                              const char *md_name)
{
    uct_tl_resource_desc_t *resources = NULL;
    unsigned num_resources = 0, i;
    uct_md_config_t *config;
    uct_worker_h worker;
    uct_md_attr_t attr;
    ucs_status_t status;
    uct_md_h md;

    fprintf(stream, "#\n# Memory domain: %s\n", md_name);

    status = uct_md_config_read(component, NULL, NULL, &config);
    if (status != UCS_OK) {
        fprintf(stream, "#   < failed to read configuration: %s >\n",
                ucs_status_string(status));
        return;
    }
    status = uct_md_open(component, md_name, config, &md);
    uct_config_release(config);
    if (status != UCS_OK) {
        fprintf(stream, "#   < failed to open: %s >\n", ucs_status_string(status));
        return;
    }

    if (uct_md_query(md, &attr) == UCS_OK) {
        ucx_info_print_md_caps(stream, &attr);
    }

    status = uct_md_query_tl_resources(md, &resources, &num_resources);
    if ((status != UCS_OK) || (num_resources == 0)) {
        fprintf(stream, "#   < no supported devices found >\n");
        goto out_close_md;
    }

    status = uct_worker_create(NULL, UCS_THREAD_MODE_SINGLE, &worker);
    if (status != UCS_OK) {
        fprintf(stream, "#   < failed to create a worker: %s >\n",
                ucs_status_string(status));
        goto out_release;
    }
    for (i = 0; i < num_resources; ++i) {
        ucx_info_print_resource(stream, md, worker, &resources[i]);
    }
    uct_worker_destroy(worker);

out_release:
    uct_release_tl_resource_list(resources);
out_close_md:
    uct_md_close(md);
}

void ucx_info_print_devices(FILE *stream)
{
    uct_component_h *components;
    uct_component_attr_t attr;
    unsigned num_components, i, j;
    uct_md_resource_desc_t *mds;
    ucs_status_t status;

    status = uct_query_components(&components, &num_components);
    if (status != UCS_OK) {
        fprintf(stream, "# < failed to list transport components: %s >\n",
                ucs_status_string(status));
        return;
    }

    for (i = 0; i < num_components; ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                          UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        if (uct_component_query(components[i], &attr) != UCS_OK) {
            continue;
        }

        fprintf(stream, "#\n# Component: %s\n", attr.name);
        if (attr.md_resource_count == 0) {
            fprintf(stream, "#   < no memory domains >\n");
            continue;
        }

        mds = calloc(attr.md_resource_count, sizeof(*mds));
        if (mds == NULL) {
            continue;
        }
        attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        attr.md_resources = mds;
        if (uct_component_query(components[i], &attr) == UCS_OK) {
            for (j = 0; j < attr.md_resource_count; ++j) {
                ucx_info_print_md(stream, components[i], mds[j].md_name);
            }
        }
        free(mds);
    }
    fprintf(stream, "#\n");

    uct_release_component_list(components);
}

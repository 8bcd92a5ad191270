#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucp/core/ucp_int.h>
#include <ucs/sys/sys.h>

#include <stdlib.h>
#include <string.h>

/* Features this library implements; the others are refused by name. */
#define UCP_FEATURES_KNOWN     (UCP_FEATURE_TAG | UCP_FEATURE_RMA | \
                                UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64 | \
                                UCP_FEATURE_WAKEUP | UCP_FEATURE_STREAM | \
                                UCP_FEATURE_AM)

/* Newest upstream release whose headers contrib/tests/abi.sh compares with
 * ours (libucx-cu13 1.22): programs built with them run unchanged. */
#define UCP_ABI_CHECKED_MINOR  22

/* Names UCX_TLS may use besides the transport names themselves. */
static const struct {
    const char *alias;
    const char *tls[3];
} ucp_tl_aliases[] = {
    {"shm",  {"posix", "cma", NULL}},
    {"sm",   {"posix", "cma", NULL}},
    {"cuda", {"cuda_copy", "cuda_ipc", NULL}},
};

static const char *ucp_known_tl_names[] = {
    "all", "self", "posix", "cma", "tcp", "cuda_copy", "cuda_ipc"
};

ucs_memory_type_t ucp_memtype_host_lookup(const void *buffer, size_t length)
{
    (void)buffer;
    (void)length;
    return UCS_MEMORY_TYPE_HOST;
}

static int ucp_tl_name_listed(const ucs_config_names_array_t *names,
                              const char *tl_name)
{
    unsigned i, a, k;

    for (i = 0; i < names->count; ++i) {
        if (!strcmp(names->names[i], tl_name)) {
            return 1;
        }
        for (a = 0; a < sizeof(ucp_tl_aliases) / sizeof(ucp_tl_aliases[0]); ++a) {
            if (strcmp(names->names[i], ucp_tl_aliases[a].alias)) {
                continue;
            }
            for (k = 0; ucp_tl_aliases[a].tls[k] != NULL; ++k) {
                if (!strcmp(ucp_tl_aliases[a].tls[k], tl_name)) {
                    return 1;
                }
            }
        }
    }
    return 0;
}

static int ucp_tl_allowed(const ucs_config_allow_list_t *tls, const char *tl_name)
{
    return ucs_config_allow_list_admits(tls, ucp_tl_name_listed(&tls->array, tl_name));
}

/* Warn about UCX_TLS names that select nothing this build knows. */
static void ucp_check_tl_names(ucp_context_h context,
                               const ucs_config_allow_list_t *tls)
{
    unsigned i, k, found;

    for (i = 0; i < tls->array.count; ++i) {
        const char *name = tls->array.names[i];
        found = 0;
        for (k = 0; k < sizeof(ucp_known_tl_names) / sizeof(char*); ++k) {
            found |= !strcmp(name, ucp_known_tl_names[k]);
        }
        for (k = 0; k < sizeof(ucp_tl_aliases) / sizeof(ucp_tl_aliases[0]); ++k) {
            found |= !strcmp(name, ucp_tl_aliases[k].alias);
        }
        for (k = 0; k < context->num_rscs; ++k) {
            found |= !strcmp(name, context->rscs[k].desc.tl_name);
        }
        if (!found) {
            ucs_warn("UCX_TLS: transport '%s' is not known (known: self, posix, cma, "
                     "shm, tcp, cuda_copy, cuda_ipc, cuda)", name);
        }
    }
}

static void ucp_context_close_mds(ucp_context_h context)
{
    unsigned i;

    for (i = 0; i < context->num_mds; ++i) {
        uct_md_close(context->mds[i].md);
    }
    free(context->mds);
    free(context->rscs);
}

/* Open one md and add the resources UCX_TLS allows; the md is kept only when
 * it has at least one. */
static ucs_status_t ucp_context_add_md(ucp_context_h context,
                                       uct_component_h component,
                                       const char *component_name,
                                       const char *md_name,
                                       const ucp_config_t *config,
                                       uct_tl_resource_desc_t **seen,
                                       unsigned *num_seen)
{
    uct_tl_resource_desc_t *tl_rscs;
    uct_md_config_t *md_config;
    unsigned num_tl_rscs, i, added = 0;
    ucp_md_entry_t *entry;
    ucs_status_t status;
    void *ptr;
    uct_md_h md;

    status = uct_md_config_read(component, NULL, NULL, &md_config);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_md_open(component, md_name, md_config, &md);
    uct_config_release(md_config);
    if (status != UCS_OK) {
        ucs_debug("ucp: md %s not opened: %s", md_name, ucs_status_string(status));
        return UCS_OK;
    }

    status = uct_md_query_tl_resources(md, &tl_rscs, &num_tl_rscs);
    if (status != UCS_OK) {
        uct_md_close(md);
        return UCS_OK;
    }

    ptr = realloc(context->rscs, (context->num_rscs + num_tl_rscs + 1) *
                                 sizeof(*context->rscs));
    if (ptr == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto out;
    }
    context->rscs = ptr;
    /* every resource offered, for the warning about device names that
     * select nothing */
    ptr = realloc(*seen, (*num_seen + num_tl_rscs + 1) * sizeof(**seen));
    if (ptr == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto out;
    }
    *seen = ptr;
    memcpy(*seen + *num_seen, tl_rscs, num_tl_rscs * sizeof(*tl_rscs));
    *num_seen += num_tl_rscs;
    for (i = 0; i < num_tl_rscs; ++i) {
        if (!ucp_tl_allowed(&config->tls, tl_rscs[i].tl_name) ||
            !ucp_devices_allowed(config, tl_rscs[i].dev_type,
                                 tl_rscs[i].dev_name)) {
            continue;
        }
        context->rscs[context->num_rscs].md_index = context->num_mds;
        context->rscs[context->num_rscs].desc     = tl_rscs[i];
        ++context->num_rscs;
        ++added;
    }

    if (added == 0) {
        goto out;
    }
    ptr = realloc(context->mds, (context->num_mds + 1) * sizeof(*context->mds));
    if (ptr == NULL) {
        context->num_rscs -= added;
        status = UCS_ERR_NO_MEMORY;
        goto out;
    }
    context->mds = ptr;
    entry        = &context->mds[context->num_mds];
    memset(entry, 0, sizeof(*entry));
    entry->component = component;
    entry->md        = md;
    snprintf(entry->component_name, sizeof(entry->component_name), "%s",
             component_name);
    snprintf(entry->md_name, sizeof(entry->md_name), "%s", md_name);
    uct_md_query(md, &entry->attr);
    ++context->num_mds;
    md = NULL;
    status = UCS_OK;
out:
    uct_release_tl_resource_list(tl_rscs);
    if (md != NULL) {
        uct_md_close(md);
    }
    return status;
}

static ucs_status_t ucp_context_open_resources(ucp_context_h context,
                                               const ucp_config_t *config)
{
    uct_md_resource_desc_t *md_rscs;
    uct_component_attr_t attr;
    uct_component_h *components;
    uct_tl_resource_desc_t *seen = NULL;
    unsigned num_components, c, m, num_seen = 0;
    ucs_status_t status;

    status = uct_query_components(&components, &num_components);
    if (status != UCS_OK) {
        return status;
    }

    for (c = 0; c < num_components; ++c) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                          UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        if (uct_component_query(components[c], &attr) != UCS_OK) {
            continue;
        }
        md_rscs = calloc(attr.md_resource_count + 1, sizeof(*md_rscs));
        if (md_rscs == NULL) {
            status = UCS_ERR_NO_MEMORY;
            break;
        }
        attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        attr.md_resources = md_rscs;
        if ((attr.md_resource_count > 0) &&
            (uct_component_query(components[c], &attr) != UCS_OK)) {
            free(md_rscs);
            continue;
        }
        for (m = 0; (m < attr.md_resource_count) && (status == UCS_OK); ++m) {
            status = ucp_context_add_md(context, components[c], attr.name,
                                        md_rscs[m].md_name, config, &seen,
                                        &num_seen);
        }
        free(md_rscs);
        if (status != UCS_OK) {
            break;
        }
    }
    uct_release_component_list(components);
    if (status == UCS_OK) {
        ucp_devices_check_names(config, seen, num_seen);
    }
    free(seen);
    return status;
}

ucs_status_t ucp_init_version(unsigned api_major_version,
                              unsigned api_minor_version,
                              const ucp_params_t *params,
                              const ucp_config_t *config,
                              ucp_context_h *context_p)
{
    ucp_config_t *own_config = NULL;
    ucp_context_h context;
    ucs_status_t status;
    uint64_t features;

    /* Programs built with upstream's headers up to UCP_ABI_CHECKED_MINOR run
     * on this library (docs/abi.md, checked by contrib/tests/abi.sh); the
     * version decides nothing else, since the values that differ between
     * those releases (memory types above ROCM_MANAGED) mean the same here
     * for every caller: "not a type we report, detect it". */
    if ((api_major_version != UCP_API_MAJOR) ||
        (api_minor_version > UCP_ABI_CHECKED_MINOR)) {
        ucs_warn("ucp: the program was built for UCP API %u.%u; this library "
                 "is %u.%u and runs programs built for 1.13 .. 1.%u",
                 api_major_version, api_minor_version, UCP_API_MAJOR,
                 UCP_API_MINOR, UCP_ABI_CHECKED_MINOR);
    } else {
        ucs_debug("ucp: program built for UCP API %u.%u", api_major_version,
                  api_minor_version);
    }
    if ((params == NULL) || (context_p == NULL) ||
        !(params->field_mask & UCP_PARAM_FIELD_FEATURES)) {
        ucs_error("ucp_init: ucp_params_t::features is required");
        return UCS_ERR_INVALID_PARAM;
    }
    features = params->features;
    if (features & ~(uint64_t)UCP_FEATURES_KNOWN) {
        ucs_error("ucp_init: unknown feature bits 0x%llx",
                  (unsigned long long)(features & ~(uint64_t)UCP_FEATURES_KNOWN));
        return UCS_ERR_INVALID_PARAM;
    }

    if (config == NULL) {
        status = ucp_config_read(NULL, NULL, &own_config);
        if (status != UCS_OK) {
            return status;
        }
        config = own_config;
    }

    if ((config->max_rndv_rails < 1) || (config->max_rndv_rails > UCP_MAX_RAILS) ||
        (config->max_eager_rails < 1) || (config->max_eager_rails > UCP_MAX_RAILS)) {
        ucs_error("ucp_init: UCX_MAX_RNDV_RAILS=%u and UCX_MAX_EAGER_RAILS=%u "
                  "must be 1 .. %d", config->max_rndv_rails,
                  config->max_eager_rails, UCP_MAX_RAILS);
        status = UCS_ERR_INVALID_PARAM;
        goto err_config;
    }

    context = calloc(1, sizeof(*context));
    if (context == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err_config;
    }
    context->features       = features;
    context->memtype_lookup = ucp_memtype_host_lookup;
    context->proto_info     = config->proto_info;
    context->keepalive_ns   = ((config->keepalive_interval == UCS_CONFIG_TIME_INF) ||
                               (config->keepalive_interval <= 0) ||
                               (config->keepalive_interval > 1e9)) ? 0 :
                              (uint64_t)(config->keepalive_interval * 1e9);
    context->keepalive_num_eps = ucs_max(config->keepalive_num_eps, 1u);
    context->keepalive_timeout_ns = ((config->keepalive_timeout == UCS_CONFIG_TIME_INF) ||
                                     (config->keepalive_timeout > 1e9)) ? 0 :
                                    (uint64_t)(ucs_max(config->keepalive_timeout, 1e-9) * 1e9);
    if (params->field_mask & UCP_PARAM_FIELD_REQUEST_SIZE) {
        context->user_req_size = params->request_size;
    }
    if (params->field_mask & UCP_PARAM_FIELD_REQUEST_INIT) {
        context->req_init = params->request_init;
    }
    if (params->field_mask & UCP_PARAM_FIELD_REQUEST_CLEANUP) {
        context->req_cleanup = params->request_cleanup;
    }
    if (params->field_mask & UCP_PARAM_FIELD_TAG_SENDER_MASK) {
        context->tag_sender_mask = params->tag_sender_mask;
    }
    if (params->field_mask & UCP_PARAM_FIELD_MT_WORKERS_SHARED) {
        context->mt_shared = params->mt_workers_shared;
    }
    snprintf(context->name, sizeof(context->name), "%s",
             ((params->field_mask & UCP_PARAM_FIELD_NAME) && (params->name != NULL)) ?
             params->name : "ucp_context");

    status = ucp_context_open_resources(context, config);
    if (status != UCS_OK) {
        goto err_free;
    }
    ucp_check_tl_names(context, &config->tls);
    if (context->num_rscs == 0) {
        ucs_error("ucp_init: UCX_TLS and UCX_{NET,SHM,ACC,SELF}_DEVICES leave "
                  "no usable transport on this host (this build offers self, "
                  "posix, tcp, and cuda_copy/cuda_ipc where CUDA is present)");
        status = UCS_ERR_NO_DEVICE;
        goto err_free;
    }
    status = ucp_config_rndv_resolve(config, &context->rndv);
    if (status != UCS_OK) {
        goto err_free;
    }
    ucp_memtype_context_init(context);

    ucp_config_release(own_config);
    *context_p = context;
    return UCS_OK;

err_free:
    ucp_context_close_mds(context);
    free(context);
err_config:
    ucp_config_release(own_config);
    return status;
}

void ucp_cleanup(ucp_context_h context)
{
    if (context == NULL) {
        return;
    }
    ucp_memtype_context_cleanup(context);
    ucp_context_close_mds(context);
    free(context);
}

ucs_status_t ucp_context_query(ucp_context_h context, ucp_context_attr_t *attr)
{
    if (attr->field_mask & UCP_ATTR_FIELD_REQUEST_SIZE) {
        attr->request_size = sizeof(ucp_request_t);
    }
    if (attr->field_mask & UCP_ATTR_FIELD_THREAD_MODE) {
        attr->thread_mode = context->mt_shared ? UCS_THREAD_MODE_MULTI :
                                                 UCS_THREAD_MODE_SERIALIZED;
    }
    if (attr->field_mask & UCP_ATTR_FIELD_MEMORY_TYPES) {
        /* Device memory when cuda_copy can stage it (a cuda_cpy md opened
         * only to detect device memory refuses it). */
        attr->memory_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
        if ((context->memtype_lookup != ucp_memtype_host_lookup) &&
            (context->mt_detect_md == NULL)) {
            attr->memory_types |= UCS_BIT(UCS_MEMORY_TYPE_CUDA) |
                                  UCS_BIT(UCS_MEMORY_TYPE_CUDA_MANAGED);
        }
    }
    if (attr->field_mask & UCP_ATTR_FIELD_NAME) {
        snprintf(attr->name, sizeof(attr->name), "%s", context->name);
    }
    return UCS_OK;
}

/*
 * The format is upstream's, which Open MPI parses: one "md" line per memory
 * domain, one "resource" line per transport resource whose last word is
 * "<transport>/<device>".
 */
void ucp_context_print_info(const ucp_context_h context, FILE *stream)
{
    unsigned i;

    fprintf(stream, "#\n");
    fprintf(stream, "# UCP context\n");
    fprintf(stream, "#\n");
    for (i = 0; i < context->num_mds; ++i) {
        fprintf(stream, "#            md %-2u :  component %-8s %s\n", i,
                context->mds[i].component_name, context->mds[i].md_name);
    }
    fprintf(stream, "#\n");
    for (i = 0; i < context->num_rscs; ++i) {
        fprintf(stream, "#      resource %-2u :  md %-2u dev %-2u flags -- %s/%s\n",
                i, context->rscs[i].md_index, i, context->rscs[i].desc.tl_name,
                context->rscs[i].desc.dev_name);
    }
    fprintf(stream, "#\n");
}

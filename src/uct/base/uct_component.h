/**
 * @file uct_component.h
 * How transports plug in. A component (a memory-domain type) and its
 * transports describe themselves with ops tables and register from a
 * constructor when their library or module is loaded, so adding a transport
 * touches no central switch.
 */
#ifndef UCT_COMPONENT_H_
#define UCT_COMPONENT_H_

#include <uct/api/uct.h>
#include <ucs/config/parser.h>
#include <ucs/datastruct/list.h>

BEGIN_C_DECLS

typedef struct uct_component uct_component_t;

/** A device a transport can use (filled by uct_tl_t::query_devices). */
typedef struct uct_tl_device_resource {
    char              name[UCT_DEVICE_NAME_MAX];
    uct_device_type_t type;
    uint8_t           sys_device;
} uct_tl_device_resource_t;

/** A transport of a component (self, posix, tcp, cuda_copy, cuda_ipc). */
typedef struct uct_tl {
    char name[UCT_TL_NAME_MAX];

    /** Devices usable through @a md; the array is freed by the caller with free(). */
    ucs_status_t (*query_devices)(uct_md_h md, uct_tl_device_resource_t **devices_p,
                                  unsigned *num_devices_p);

    /** Open an iface; config points to a filled structure of @a config's table. */
    ucs_status_t (*iface_open)(uct_md_h md, uct_worker_h worker,
                               const uct_iface_params_t *params,
                               const uct_iface_config_t *config, uct_iface_h *iface_p);

    /** Iface options table; its structure begins with uct_iface_config_t. */
    ucs_config_table_entry_t *config;

    ucs_list_link_t list; /**< in uct_component_t::tl_list */
} uct_tl_t;

/** A component: one memory-domain type and the transports over it. */
struct uct_component {
    char name[UCT_COMPONENT_NAME_MAX];

    /** Memory domains this component offers now; caller frees with free(). */
    ucs_status_t (*query_md_resources)(uct_component_t *component,
                                       uct_md_resource_desc_t **resources_p,
                                       unsigned *num_resources_p);

    ucs_status_t (*md_open)(uct_component_t *component, const char *md_name,
                            const uct_md_config_t *config, uct_md_h *md_p);

    /**
     * Unpack a peer's key. Must validate every byte (version, kind, lengths)
     * before use: the buffer comes from another process.
     */
    ucs_status_t (*rkey_unpack)(uct_component_t *component, const void *rkey_buffer,
                                uct_rkey_t *rkey_p, void **handle_p);

    /** Optional (NULL: UCS_ERR_UNSUPPORTED). */
    ucs_status_t (*rkey_ptr)(uct_component_t *component, uct_rkey_t rkey, void *handle,
                             uint64_t remote_addr, void **local_addr_p);

    ucs_status_t (*rkey_release)(uct_component_t *component, uct_rkey_t rkey,
                                 void *handle);

    /** Optional (NULL: UCS_ERR_UNSUPPORTED); see uct_rkey_device_id(). */
    ucs_status_t (*rkey_device_id)(uct_component_t *component, uct_rkey_t rkey,
                                   uint8_t id[16]);

    /** md options table; its structure begins with uct_md_config_t. */
    ucs_config_table_entry_t *md_config;

    uint64_t        flags;
    ucs_list_link_t tl_list; /**< uct_tl_t of this component */
    ucs_list_link_t list;    /**< in the global component list */
};

/** Add a component to the global list (idempotent). Thread safe. */
void uct_component_register(uct_component_t *component);

/** Remove it (module unload). Thread safe. */
void uct_component_unregister(uct_component_t *component);

/** Add a transport to its component (idempotent). Thread safe. */
void uct_tl_register(uct_component_t *component, uct_tl_t *tl);

/** Remove a transport from its component. Thread safe. */
void uct_tl_unregister(uct_component_t *component, uct_tl_t *tl);

/**
 * Answer a query_devices call with one device, for transports that have a
 * single, fixed device ("memory", "cuda"). The array is freed by the caller
 * with free().
 */
ucs_status_t uct_tl_single_device(const char *name, uct_device_type_t type,
                                  uct_tl_device_resource_t **devices_p,
                                  unsigned *num_devices_p);

/** Find a transport of @a component by name, or NULL. */
uct_tl_t *uct_component_find_tl(uct_component_t *component, const char *tl_name);

/**
 * Lock / unlock the registry (recursive). Hold it while walking a
 * component's tl_list, since a module loaded by another thread may be adding
 * to it.
 */
void uct_component_registry_lock(void);
void uct_component_registry_unlock(void);

/**
 * A ready-made query_md_resources for components that offer exactly one md,
 * named like the component (self, posix, tcp).
 */
ucs_status_t uct_component_query_single_md(uct_component_t *component,
                                           uct_md_resource_desc_t **resources_p,
                                           unsigned *num_resources_p);

/**
 * Register a component and its config table when the defining library or
 * module loads, unregister on unload. At file scope, once per component.
 */
#define UCT_COMPONENT_REGISTER(_component) \
    static void UCS_F_CTOR UCS_PP_CONCAT(uct_component_ctor_, __LINE__)(void) \
    { \
        uct_component_register(_component); \
    } \
    static void UCS_F_DTOR UCS_PP_CONCAT(uct_component_dtor_, __LINE__)(void) \
    { \
        uct_component_unregister(_component); \
    }

/** Same for a transport of a component. */
#define UCT_TL_REGISTER(_component, _tl) \
    static void UCS_F_CTOR UCS_PP_CONCAT(uct_tl_ctor_, __LINE__)(void) \
    { \
        uct_tl_register(_component, _tl); \
    } \
    static void UCS_F_DTOR UCS_PP_CONCAT(uct_tl_dtor_, __LINE__)(void) \
    { \
        uct_tl_unregister(_component, _tl); \
    }

END_C_DECLS

#endif

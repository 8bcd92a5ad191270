#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <ucs/datastruct/interval_map.h>
#include <ucs/debug/log.h>

/*
 * An AVL tree keyed by range start. Because ranges are disjoint, ordering by
 * start also orders them by end, so "the range containing addr" is simply
 * the node with the greatest start <= addr, if its end is above addr.
 *
 * Insert and remove are recursive and return the new root of the subtree
 * they were given; the recursion depth is the tree height, at most about
 * 1.44 * log2(n), so the stack use is small and bounded.
 */

#define UCS_INTERVAL_MAP_NODES_PER_CHUNK 32

struct ucs_interval_map_node {
    ucs_interval_map_range_t range;    /* first: users get a pointer to it */
    ucs_interval_map_node_t  *child[2]; /* [0] lower starts, [1] higher */
    int                      height;   /* of the subtree; a leaf has 1 */
};


static inline int ucs_interval_map_height(const ucs_interval_map_node_t *node)
{
    return (node == NULL) ? 0 : node->height;
}

static inline void ucs_interval_map_update_height(ucs_interval_map_node_t *node)
{
    int left  = ucs_interval_map_height(node->child[0]);
    int right = ucs_interval_map_height(node->child[1]);

    node->height = 1 + ((left > right) ? left : right);
}

/*
 * Rotate so that @a node moves down to side @a dir (0: left, 1: right) and
 * its child from the other side takes its place. Returns the new subtree
 * root.
 */
static ucs_interval_map_node_t *
ucs_interval_map_rotate(ucs_interval_map_node_t *node, int dir)
{
    ucs_interval_map_node_t *up = node->child[!dir];

    node->child[!dir] = up->child[dir];
    up->child[dir]    = node;
    ucs_interval_map_update_height(node);
    ucs_interval_map_update_height(up);
    return up;
}

/*
 * Restore the AVL property at @a node, whose subtrees are balanced and
 * differ in height by at most 2. Returns the new subtree root.
 */
static ucs_interval_map_node_t *
ucs_interval_map_rebalance(ucs_interval_map_node_t *node)
{
    int diff = ucs_interval_map_height(node->child[1]) -
               ucs_interval_map_height(node->child[0]);
    int heavy;
    ucs_interval_map_node_t *child;

    if ((diff >= -1) && (diff <= 1)) {
        ucs_interval_map_update_height(node);
        return node;
    }

    heavy = (diff > 0);
    child = node->child[heavy];
    /* When the heavy child leans inward, a single rotation would only move
     * the imbalance to the other side: straighten the child first. */
    if (ucs_interval_map_height(child->child[!heavy]) >
        ucs_interval_map_height(child->child[heavy])) {
        node->child[heavy] = ucs_interval_map_rotate(child, heavy);
    }
    return ucs_interval_map_rotate(node, !heavy);
}

static ucs_interval_map_node_t *
ucs_interval_map_tree_insert(ucs_interval_map_node_t *root,
                             ucs_interval_map_node_t *node)
{
    int dir;

    if (root == NULL) {
        return node;
    }

    dir              = node->range.start > root->range.start;
    root->child[dir] = ucs_interval_map_tree_insert(root->child[dir], node);
    return ucs_interval_map_rebalance(root);
}

/* Detach the lowest node of the subtree into @a min_p. */
static ucs_interval_map_node_t *
ucs_interval_map_tree_remove_min(ucs_interval_map_node_t *root,
                                 ucs_interval_map_node_t **min_p)
{
    if (root->child[0] == NULL) {
        *min_p = root;
        return root->child[1];
    }

    root->child[0] = ucs_interval_map_tree_remove_min(root->child[0], min_p);
    return ucs_interval_map_rebalance(root);
}

/*
 * Unlink @a node, which must be in the subtree and still have the start it
 * was inserted with. Nodes are relinked, never copied into each other, so
 * pointers to the other ranges stay valid.
 */
static ucs_interval_map_node_t *
ucs_interval_map_tree_remove(ucs_interval_map_node_t *root,
                             ucs_interval_map_node_t *node)
{
    ucs_interval_map_node_t *successor, *right;
    int dir;

    ucs_assert(root != NULL);

    if (root != node) {
        dir              = node->range.start > root->range.start;
        root->child[dir] = ucs_interval_map_tree_remove(root->child[dir], node);
        return ucs_interval_map_rebalance(root);
    }

    if (node->child[0] == NULL) {
        return node->child[1];
    }
    if (node->child[1] == NULL) {
        return node->child[0];
    }

    right               = ucs_interval_map_tree_remove_min(node->child[1],
                                                           &successor);
    successor->child[0] = node->child[0];
    successor->child[1] = right;
    return ucs_interval_map_rebalance(successor);
}

/* The node with the greatest start <= addr, or NULL. */
static inline ucs_interval_map_node_t *
ucs_interval_map_floor(const ucs_interval_map_t *map, uintptr_t addr)
{
    ucs_interval_map_node_t *node = map->root;
    ucs_interval_map_node_t *best = NULL;

    while (node != NULL) {
        if (node->range.start <= addr) {
            best = node;
            node = node->child[1];
        } else {
            node = node->child[0];
        }
    }
    return best;
}

/* The node with the smallest start > addr, or NULL. */
static ucs_interval_map_node_t *
ucs_interval_map_above(const ucs_interval_map_t *map, uintptr_t addr)
{
    ucs_interval_map_node_t *node = map->root;
    ucs_interval_map_node_t *best = NULL;

    while (node != NULL) {
        if (node->range.start > addr) {
            best = node;
            node = node->child[0];
        } else {
            node = node->child[1];
        }
    }
    return best;
}

/* The first node whose end is above addr. */
static ucs_interval_map_node_t *
ucs_interval_map_lower_bound_node(const ucs_interval_map_t *map,
                                  uintptr_t addr)
{
    ucs_interval_map_node_t *node = ucs_interval_map_floor(map, addr);

    if ((node != NULL) && (addr < node->range.end)) {
        return node;
    }
    return ucs_interval_map_above(map, addr);
}

ucs_status_t ucs_interval_map_init(ucs_interval_map_t *map, const char *name)
{
    ucs_mpool_params_t params;

    ucs_mpool_params_reset(&params);
    params.obj_size       = sizeof(ucs_interval_map_node_t);
    params.objs_per_chunk = UCS_INTERVAL_MAP_NODES_PER_CHUNK;
    params.name           = (name != NULL) ? name : "interval_map";

    map->root  = NULL;
    map->count = 0;
    return ucs_mpool_init(&map->node_mp, &params);
}

/* In-order walk that reports each range, then frees its node. */
static void ucs_interval_map_release_tree(ucs_interval_map_node_t *node,
                                          ucs_interval_map_release_cb_t cb,
                                          void *arg)
{
    ucs_interval_map_node_t *right;

    while (node != NULL) {
        ucs_interval_map_release_tree(node->child[0], cb, arg);
        if (cb != NULL) {
            cb(arg, node->range.start, node->range.end, node->range.value, 0);
        }
        right = node->child[1];
        ucs_mpool_put(node);
        node = right; /* loop instead of recursing on the right side */
    }
}

void ucs_interval_map_cleanup(ucs_interval_map_t *map,
                              ucs_interval_map_release_cb_t release_cb,
                              void *arg)
{
    ucs_debug("interval map '%s': cleanup with %zu ranges",
              ucs_mpool_name(&map->node_mp), map->count);
    ucs_interval_map_release_tree(map->root, release_cb, arg);
    map->root  = NULL;
    map->count = 0;
    ucs_mpool_cleanup(&map->node_mp);
}

ucs_status_t ucs_interval_map_insert(ucs_interval_map_t *map, uintptr_t start,
                                     uintptr_t end, void *value)
{
    ucs_interval_map_node_t *node;

    if (start >= end) {
        return UCS_ERR_INVALID_PARAM;
    }

    node = ucs_interval_map_lower_bound_node(map, start);
    if ((node != NULL) && (node->range.start < end)) {
        return UCS_ERR_ALREADY_EXISTS;
    }

    node = (ucs_interval_map_node_t*)ucs_mpool_get(&map->node_mp);
    if (node == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    node->range.start = start;
    node->range.end   = end;
    node->range.value = value;
    node->child[0]    = NULL;
    node->child[1]    = NULL;
    node->height      = 1;
    map->root         = ucs_interval_map_tree_insert(map->root, node);
    ++map->count;
    return UCS_OK;
}

const ucs_interval_map_range_t *
ucs_interval_map_lookup(const ucs_interval_map_t *map, uintptr_t addr)
{
    ucs_interval_map_node_t *node = ucs_interval_map_floor(map, addr);

    if ((node != NULL) && (addr < node->range.end)) {
        return &node->range;
    }
    return NULL;
}

ucs_interval_map_result_t
ucs_interval_map_lookup_range(const ucs_interval_map_t *map, uintptr_t addr,
                              size_t length,
                              const ucs_interval_map_range_t **range_p)
{
    uintptr_t end = (length > UINTPTR_MAX - addr) ? UINTPTR_MAX : addr + length;
    ucs_interval_map_node_t *node;

    if (range_p != NULL) {
        *range_p = NULL;
    }

    if (end == addr) {
        return UCS_INTERVAL_MAP_MISS;
    }

    node = ucs_interval_map_floor(map, addr);
    if ((node != NULL) && (addr < node->range.end)) {
        if (end > node->range.end) {
            return UCS_INTERVAL_MAP_SPANS;
        }
        if (range_p != NULL) {
            *range_p = &node->range;
        }
        return UCS_INTERVAL_MAP_HIT;
    }

    /* addr itself is in a hole: any range starting before end overlaps. */
    node = ucs_interval_map_above(map, addr);
    if ((node != NULL) && (node->range.start < end)) {
        return UCS_INTERVAL_MAP_SPANS;
    }
    return UCS_INTERVAL_MAP_MISS;
}

/* remove_range() when one range strictly contains [start, end): keep its low
 * part in the existing node and add a node for the high part. */
static ucs_status_t ucs_interval_map_split(ucs_interval_map_t *map,
                                          ucs_interval_map_node_t *node,
                                          uintptr_t start, uintptr_t end,
                                          ucs_interval_map_release_cb_t cb,
                                          void *arg)
{
    ucs_interval_map_node_t *high;

    high = (ucs_interval_map_node_t*)ucs_mpool_get(&map->node_mp);
    if (high == NULL) {
        ucs_error("interval map '%s': no memory to split [0x%lx, 0x%lx)",
                  ucs_mpool_name(&map->node_mp),
                  (unsigned long)node->range.start,
                  (unsigned long)node->range.end);
        return UCS_ERR_NO_MEMORY;
    }

    high->range.start = end;
    high->range.end   = node->range.end;
    high->range.value = node->range.value;
    high->child[0]    = NULL;
    high->child[1]    = NULL;
    high->height      = 1;
    node->range.end   = start;
    map->root         = ucs_interval_map_tree_insert(map->root, high);
    ++map->count;

    if (cb != NULL) {
        cb(arg, start, end, node->range.value, 2);
    }
    return UCS_OK;
}

ucs_status_t ucs_interval_map_remove_range(ucs_interval_map_t *map,
                                           uintptr_t start, uintptr_t end,
                                           ucs_interval_map_release_cb_t release_cb,
                                           void *arg)
{
    ucs_interval_map_node_t *node;
    ucs_interval_map_range_t old;

    if (start >= end) {
        return UCS_ERR_INVALID_PARAM;
    }

    node = ucs_interval_map_lower_bound_node(map, start);
    if ((node != NULL) && (node->range.start < start) &&
        (node->range.end > end)) {
        return ucs_interval_map_split(map, node, start, end, release_cb, arg);
    }

    /* No split from here on, so nothing can fail half-way. Changing a
     * node's start in place (right-edge trim) keeps the tree ordered: its
     * neighbours are outside [start, end) and the new start is inside. */
    while ((node != NULL) && (node->range.start < end)) {
        old = node->range;
        if (old.start < start) {
            node->range.end = start;
            if (release_cb != NULL) {
                release_cb(arg, start, old.end, old.value, 1);
            }
        } else if (old.end > end) {
            node->range.start = end;
            if (release_cb != NULL) {
                release_cb(arg, old.start, end, old.value, 1);
            }
        } else {
            map->root = ucs_interval_map_tree_remove(map->root, node);
            --map->count;
            ucs_mpool_put(node);
            if (release_cb != NULL) {
                release_cb(arg, old.start, old.end, old.value, 0);
            }
        }

        if (old.end >= end) {
            break;
        }
        node = ucs_interval_map_above(map, old.start);
    }

    return UCS_OK;
}

const ucs_interval_map_range_t *
ucs_interval_map_first(const ucs_interval_map_t *map)
{
    ucs_interval_map_node_t *node = map->root;

    if (node == NULL) {
        return NULL;
    }
    while (node->child[0] != NULL) {
        node = node->child[0];
    }
    return &node->range;
}

const ucs_interval_map_range_t *
ucs_interval_map_lower_bound(const ucs_interval_map_t *map, uintptr_t addr)
{
    ucs_interval_map_node_t *node = ucs_interval_map_lower_bound_node(map,
                                                                       addr);

    return (node == NULL) ? NULL : &node->range;
}

const ucs_interval_map_range_t *
ucs_interval_map_next(const ucs_interval_map_t *map,
                      const ucs_interval_map_range_t *range)
{
    ucs_interval_map_node_t *node = ucs_interval_map_above(map, range->start);

    return (node == NULL) ? NULL : &node->range;
}

static void ucs_interval_map_visit(const ucs_interval_map_node_t *node,
                                   ucs_interval_map_visit_cb_t cb, void *arg)
{
    while (node != NULL) {
        ucs_interval_map_visit(node->child[0], cb, arg);
        cb(arg, &node->range);
        node = node->child[1];
    }
}

void ucs_interval_map_for_each(const ucs_interval_map_t *map,
                               ucs_interval_map_visit_cb_t cb, void *arg)
{
    ucs_interval_map_visit(map->root, cb, arg);
}

typedef struct {
    const ucs_interval_map_t *map;
    int                      have_prev;
    uintptr_t                prev_end;
    size_t                   count;
} ucs_interval_map_check_ctx_t;

/* Returns the subtree height, or -1 after logging the first violation. */
static int ucs_interval_map_check_node(const ucs_interval_map_node_t *node,
                                       ucs_interval_map_check_ctx_t *ctx)
{
    const char *name = ucs_mpool_name(&ctx->map->node_mp);
    int left, right;

    if (node == NULL) {
        return 0;
    }

    left = ucs_interval_map_check_node(node->child[0], ctx);
    if (left < 0) {
        return -1;
    }

    if (node->range.start >= node->range.end) {
        ucs_error("interval map '%s': empty range [0x%lx, 0x%lx)", name,
                  (unsigned long)node->range.start,
                  (unsigned long)node->range.end);
        return -1;
    }
    if (ctx->have_prev && (node->range.start < ctx->prev_end)) {
        ucs_error("interval map '%s': range [0x%lx, 0x%lx) overlaps or "
                  "precedes the previous one ending at 0x%lx", name,
                  (unsigned long)node->range.start,
                  (unsigned long)node->range.end,
                  (unsigned long)ctx->prev_end);
        return -1;
    }
    ctx->have_prev = 1;
    ctx->prev_end  = node->range.end;
    ++ctx->count;

    right = ucs_interval_map_check_node(node->child[1], ctx);
    if (right < 0) {
        return -1;
    }

    if ((left - right > 1) || (right - left > 1) ||
        (node->height != 1 + ((left > right) ? left : right))) {
        ucs_error("interval map '%s': node [0x%lx, 0x%lx) has height %d, "
                  "subtrees %d and %d", name,
                  (unsigned long)node->range.start,
                  (unsigned long)node->range.end, node->height, left, right);
        return -1;
    }
    return node->height;
}

ucs_status_t ucs_interval_map_check(const ucs_interval_map_t *map)
{
    ucs_interval_map_check_ctx_t ctx = {map, 0, 0, 0};

    if (ucs_interval_map_check_node(map->root, &ctx) < 0) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (ctx.count != map->count) {
        ucs_error("interval map '%s': %zu ranges in the tree, count says %zu",
                  ucs_mpool_name(&map->node_mp), ctx.count, map->count);
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

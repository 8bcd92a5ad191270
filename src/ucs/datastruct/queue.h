/**
 * @file queue.h
 * Intrusive singly-linked FIFO queue.
 *
 * The user embeds a ucs_queue_elem_t in its own structure. The head keeps a
 * pointer to the first element and a pointer to the last element's "next"
 * field (or to its own "first" field when empty), so pushing at the tail is
 * a store and a pointer update, with no branch on emptiness.
 *
 * Removal from the middle is done through an iterator, which is the address
 * of the link pointing at the element: that is all a singly-linked list
 * needs to unlink in O(1).
 *
 * Ownership: elements stay owned by the caller; the queue never allocates.
 *
 * Thread safety: none. A queue shared between threads must be protected by
 * the caller.
 */
#ifndef UCS_DATASTRUCT_QUEUE_H_
#define UCS_DATASTRUCT_QUEUE_H_

#include <ucs/sys/compiler_def.h>

#include <stddef.h>

BEGIN_C_DECLS

/** Link embedded in every queue element. */
typedef struct ucs_queue_elem {
    struct ucs_queue_elem *next;
} ucs_queue_elem_t;

/** Queue head. */
typedef struct ucs_queue_head {
    ucs_queue_elem_t  *first;
    ucs_queue_elem_t **ptail;  /* the NULL link a push at the tail fills */
} ucs_queue_head_t;

/**
 * Position inside a queue: the address of the link that points at the
 * current element (the head's "first" or the previous element's "next").
 */
typedef ucs_queue_elem_t **ucs_queue_iter_t;


/** Make @a queue empty. Elements it held before are forgotten. */
static inline void ucs_queue_head_init(ucs_queue_head_t *queue)
{
    queue->first = NULL;
    queue->ptail = &queue->first;
}

/** Non-zero when @a queue has no elements. */
static inline int ucs_queue_is_empty(const ucs_queue_head_t *queue)
{
    return queue->first == NULL;
}

/** Number of elements in @a queue. O(n): walks the queue. */
static inline size_t ucs_queue_length(const ucs_queue_head_t *queue)
{
    const ucs_queue_elem_t *elem;
    size_t length = 0;

    for (elem = queue->first; elem != NULL; elem = elem->next) {
        ++length;
    }
    return length;
}

/** Append @a elem at the tail of @a queue. O(1). */
static inline void ucs_queue_push(ucs_queue_head_t *queue,
                                  ucs_queue_elem_t *elem)
{
    elem->next    = NULL;
    *queue->ptail = elem;
    queue->ptail  = &elem->next;
}

/** Insert @a elem at the head of @a queue, to be pulled first. O(1). */
static inline void ucs_queue_push_head(ucs_queue_head_t *queue,
                                       ucs_queue_elem_t *elem)
{
    elem->next = queue->first;
    if (queue->first == NULL) {
        queue->ptail = &elem->next;
    }
    queue->first = elem;
}

/**
 * Remove and return the first element of a queue known to be non-empty.
 * Saves the emptiness check when the caller has already made it.
 */
static inline ucs_queue_elem_t *
ucs_queue_pull_non_empty(ucs_queue_head_t *queue)
{
    ucs_queue_elem_t *elem = queue->first;

    queue->first = elem->next;
    if (queue->first == NULL) {
        queue->ptail = &queue->first;
    }
    return elem;
}

/** Remove and return the first element of @a queue, or NULL if empty. */
static inline ucs_queue_elem_t *ucs_queue_pull(ucs_queue_head_t *queue)
{
    if (queue->first == NULL) {
        return NULL;
    }
    return ucs_queue_pull_non_empty(queue);
}

/**
 * Unlink the element @a iter points at and return it. Afterwards @a iter
 * points at the element that followed (or at the end of the queue), so an
 * iteration continues from there without advancing. O(1).
 */
static inline ucs_queue_elem_t *ucs_queue_del_iter(ucs_queue_head_t *queue,
                                                   ucs_queue_iter_t iter)
{
    ucs_queue_elem_t *elem = *iter;

    *iter = elem->next;
    if (queue->ptail == &elem->next) {
        queue->ptail = iter;
    }
    return elem;
}

/**
 * Unlink @a elem from @a queue. O(n): searches for the link that points at
 * it. @return non-zero when it was found and removed.
 */
static inline int ucs_queue_remove(ucs_queue_head_t *queue,
                                   ucs_queue_elem_t *elem)
{
    ucs_queue_iter_t iter;

    for (iter = &queue->first; *iter != NULL; iter = &(*iter)->next) {
        if (*iter == elem) {
            ucs_queue_del_iter(queue, iter);
            return 1;
        }
    }
    return 0;
}

/**
 * Move all elements of @a src, in order, to the tail of @a dst. @a src
 * becomes empty. O(1).
 */
static inline void ucs_queue_splice(ucs_queue_head_t *dst,
                                    ucs_queue_head_t *src)
{
    if (src->first == NULL) {
        return;
    }

    *dst->ptail = src->first;
    dst->ptail  = src->ptail;
    ucs_queue_head_init(src);
}


/** Element of type @a _type whose member @a _member is @a _link. */
#define ucs_queue_elem(_link, _type, _member) \
    ucs_container_of(_link, _type, _member)

/** First element of a non-empty queue, without removing it. */
#define ucs_queue_head_elem_non_empty(_queue, _type, _member) \
    ucs_queue_elem((_queue)->first, _type, _member)

/** Last element of a non-empty queue, without removing it. */
#define ucs_queue_tail_elem_non_empty(_queue, _type, _member) \
    ucs_queue_elem(ucs_container_of((_queue)->ptail, ucs_queue_elem_t, next), \
                   _type, _member)

/** Remove and return the first element of a non-empty queue. */
#define ucs_queue_pull_elem_non_empty(_queue, _type, _member) \
    ucs_queue_elem(ucs_queue_pull_non_empty(_queue), _type, _member)

/*
 * The iteration macros walk with an iterator (pointer to the link) and only
 * convert a link to its element once the link is known to be non-NULL, so no
 * pointer is ever computed from NULL.
 */

/**
 * Iterate over the elements of @a _queue from head to tail, assigning each to
 * the pointer @a _elem, with @a _iter (a ucs_queue_iter_t variable) pointing
 * at the link to it. The body may remove the current element with
 * ucs_queue_del_iter(_queue, _iter); the iteration then continues with the
 * element that followed. Removing any other element is not allowed. Pushing
 * at the tail is allowed (the new elements are visited too).
 */
#define ucs_queue_for_each_safe(_elem, _iter, _queue, _member) \
    for (_iter = &(_queue)->first; \
         (*(_iter) != NULL) && \
         ((_elem = ucs_queue_elem(*(_iter), __typeof__(*(_elem)), _member)), 1); \
         _iter = (*(_iter) == &(_elem)->_member) ? &(*(_iter))->next : (_iter))

/**
 * Iterate over the elements of @a _queue from head to tail without modifying
 * it. The body must not add or remove elements.
 */
#define ucs_queue_for_each(_elem, _queue, _member) \
    for (ucs_queue_elem_t *UCS_PP_CONCAT(_ucs_qlink_, __LINE__) = (_queue)->first; \
         (UCS_PP_CONCAT(_ucs_qlink_, __LINE__) != NULL) && \
         ((_elem = ucs_queue_elem(UCS_PP_CONCAT(_ucs_qlink_, __LINE__), \
                                  __typeof__(*(_elem)), _member)), 1); \
         UCS_PP_CONCAT(_ucs_qlink_, __LINE__) = \
             UCS_PP_CONCAT(_ucs_qlink_, __LINE__)->next)

END_C_DECLS

#endif

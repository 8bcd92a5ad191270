/**
 * @file list.h
 * Intrusive circular doubly-linked list.
 *
 * The user embeds a ucs_list_link_t in its own structure and the list links
 * those members together; the list never allocates nor frees anything, so
 * every operation is O(1) except ucs_list_length(). The list head is a
 * ucs_list_link_t of its own that is not part of any element: an empty list
 * is a head whose both pointers point back at itself, which removes every
 * NULL check from insertion and removal.
 *
 * Ownership: elements stay owned by the caller; unlinking an element does
 * not touch the memory around the link.
 *
 * Thread safety: none. A list shared between threads must be protected by
 * the caller.
 */
#ifndef UCS_DATASTRUCT_LIST_H_
#define UCS_DATASTRUCT_LIST_H_

#include <ucs/sys/compiler_def.h>

#include <stddef.h>

BEGIN_C_DECLS

/** Link embedded in every list element, and also used as the list head. */
typedef struct ucs_list_link {
    struct ucs_list_link *prev;
    struct ucs_list_link *next;
} ucs_list_link_t;

/** Static initializer of a list head named @a _head (empty list). */
#define UCS_LIST_INITIALIZER(_head) { &(_head), &(_head) }

/** Define and initialize an empty list head named @a _name. */
#define UCS_LIST_HEAD(_name) \
    ucs_list_link_t _name = UCS_LIST_INITIALIZER(_name)


/**
 * Make @a head an empty list. Any elements it linked before are forgotten
 * (not modified).
 */
static inline void ucs_list_head_init(ucs_list_link_t *head)
{
    head->prev = head;
    head->next = head;
}

/**
 * Link @a elem right after @a pos. @a pos may be the head (the element then
 * becomes the first one) or any element of a list. @a elem must not be on a
 * list.
 */
static inline void ucs_list_insert_after(ucs_list_link_t *pos,
                                         ucs_list_link_t *elem)
{
    elem->prev      = pos;
    elem->next      = pos->next;
    pos->next->prev = elem;
    pos->next       = elem;
}

/**
 * Link @a elem right before @a pos. @a pos may be the head (the element then
 * becomes the last one) or any element of a list.
 */
static inline void ucs_list_insert_before(ucs_list_link_t *pos,
                                          ucs_list_link_t *elem)
{
    ucs_list_insert_after(pos->prev, elem);
}

/** Add @a elem as the first element of the list @a head. */
static inline void ucs_list_add_head(ucs_list_link_t *head,
                                     ucs_list_link_t *elem)
{
    ucs_list_insert_after(head, elem);
}

/** Add @a elem as the last element of the list @a head. */
static inline void ucs_list_add_tail(ucs_list_link_t *head,
                                     ucs_list_link_t *elem)
{
    ucs_list_insert_before(head, elem);
}

/**
 * Unlink @a elem from the list it is on. The element's own pointers are left
 * dangling: it must be added to a list (or re-initialized with
 * ucs_list_head_init()) before it is used as a link again.
 */
static inline void ucs_list_del(ucs_list_link_t *elem)
{
    elem->prev->next = elem->next;
    elem->next->prev = elem->prev;
}

/** Non-zero when the list @a head has no elements. */
static inline int ucs_list_is_empty(const ucs_list_link_t *head)
{
    return head->next == head;
}

/** Non-zero when @a elem is the one and only element of the list @a head. */
static inline int ucs_list_is_only(const ucs_list_link_t *head,
                                   const ucs_list_link_t *elem)
{
    return !ucs_list_is_empty(head) && (head->next == elem) &&
           (head->prev == elem);
}

/** Number of elements on the list @a head. O(n): walks the list. */
static inline size_t ucs_list_length(const ucs_list_link_t *head)
{
    const ucs_list_link_t *link;
    size_t length = 0;

    for (link = head->next; link != head; link = link->next) {
        ++length;
    }
    return length;
}

/**
 * Move all elements of @a src, in order, to the place right after @a pos
 * (which is a head or an element of another list). @a src becomes empty.
 * O(1).
 */
static inline void ucs_list_splice_after(ucs_list_link_t *pos,
                                         ucs_list_link_t *src)
{
    ucs_list_link_t *first, *last;

    if (ucs_list_is_empty(src)) {
        return;
    }

    first           = src->next;
    last            = src->prev;
    last->next      = pos->next;
    pos->next->prev = last;
    pos->next       = first;
    first->prev     = pos;
    ucs_list_head_init(src);
}

/**
 * Move all elements of @a src to the end of @a head, keeping their order
 * (concatenation). @a src becomes empty. O(1).
 */
static inline void ucs_list_splice_tail(ucs_list_link_t *head,
                                        ucs_list_link_t *src)
{
    ucs_list_splice_after(head->prev, src);
}

/**
 * Move all elements of @a src to the beginning of @a head, keeping their
 * order. @a src becomes empty. O(1).
 */
static inline void ucs_list_splice_head(ucs_list_link_t *head,
                                        ucs_list_link_t *src)
{
    ucs_list_splice_after(head, src);
}

/**
 * Unlink and return the first link of a non-empty list. The caller checks
 * emptiness first; use ucs_list_extract_head_elem() to get the element.
 */
static inline ucs_list_link_t *ucs_list_extract_head_link(ucs_list_link_t *head)
{
    ucs_list_link_t *first = head->next;

    ucs_list_del(first);
    return first;
}


/** Element of type @a _type whose member @a _member is the link @a _link. */
#define ucs_list_elem(_link, _type, _member) \
    ucs_container_of(_link, _type, _member)

/** First element of a non-empty list. */
#define ucs_list_head_elem(_head, _type, _member) \
    ucs_list_elem((_head)->next, _type, _member)

/** Last element of a non-empty list. */
#define ucs_list_tail_elem(_head, _type, _member) \
    ucs_list_elem((_head)->prev, _type, _member)

/**
 * Element after @a _elem. Only meaningful when @a _elem is not the last one
 * (the link after the last element is the head, not an element).
 */
#define ucs_list_next_elem(_elem, _member) \
    ucs_list_elem((_elem)->_member.next, __typeof__(*(_elem)), _member)

/** Element before @a _elem; only meaningful when it is not the first one. */
#define ucs_list_prev_elem(_elem, _member) \
    ucs_list_elem((_elem)->_member.prev, __typeof__(*(_elem)), _member)

/** Unlink and return the first element of a non-empty list. */
#define ucs_list_extract_head_elem(_head, _type, _member) \
    ucs_list_elem(ucs_list_extract_head_link(_head), _type, _member)

/*
 * The iteration macros below stop when the cursor's link is the head. At
 * that point the cursor is not a real element (it was computed from the
 * head), so the stop test uses address arithmetic only and never accesses a
 * member through the cursor.
 */
#define ucs_list_is_head_(_elem, _head, _member) \
    (((char*)(_elem) + ucs_offsetof(__typeof__(*(_elem)), _member)) == \
     (char*)(_head))

/**
 * Iterate over the elements of @a _head from first to last, assigning each to
 * the pointer @a _elem. The body must not remove @a _elem (use
 * ucs_list_for_each_safe() for that).
 */
#define ucs_list_for_each(_elem, _head, _member) \
    for (_elem = ucs_list_head_elem(_head, __typeof__(*(_elem)), _member); \
         !ucs_list_is_head_(_elem, _head, _member); \
         _elem = ucs_list_next_elem(_elem, _member))

/** Like ucs_list_for_each(), from last to first. */
#define ucs_list_for_each_reverse(_elem, _head, _member) \
    for (_elem = ucs_list_tail_elem(_head, __typeof__(*(_elem)), _member); \
         !ucs_list_is_head_(_elem, _head, _member); \
         _elem = ucs_list_prev_elem(_elem, _member))

/**
 * Iterate like ucs_list_for_each(), reading the next element into @a _tmp
 * before the body runs, so the body may remove (and free) @a _elem. The body
 * must not remove @a _tmp.
 */
#define ucs_list_for_each_safe(_elem, _tmp, _head, _member) \
    for (_elem = ucs_list_head_elem(_head, __typeof__(*(_elem)), _member); \
         !ucs_list_is_head_(_elem, _head, _member) && \
         ((_tmp = ucs_list_next_elem(_elem, _member)), 1); \
         _elem = _tmp)

END_C_DECLS

#endif

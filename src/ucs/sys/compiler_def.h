/**
 * @file compiler_def.h
 * Compiler helpers shared by every layer: C/C++ linkage guards, branch
 * hints, packing, bit helpers and symbol visibility.
 */
#ifndef UCS_COMPILER_DEF_H_
#define UCS_COMPILER_DEF_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#  define BEGIN_C_DECLS extern "C" {
#  define END_C_DECLS   }
#else
#  define BEGIN_C_DECLS
#  define END_C_DECLS
#endif

/** Mark a struct as packed: used only for wire formats, never for hot data. */
#define UCS_S_PACKED             __attribute__((packed))
#define UCS_F_ALWAYS_INLINE      inline __attribute__((always_inline))
#define UCS_F_NOINLINE           __attribute__((noinline))
#define UCS_F_NORETURN           __attribute__((noreturn))
#define UCS_F_MAYBE_UNUSED       __attribute__((unused))
#define UCS_F_PRINTF(_fmt, _va)  __attribute__((format(printf, _fmt, _va)))
#define UCS_F_CTOR               __attribute__((constructor))
#define UCS_F_DTOR               __attribute__((destructor))
#define UCS_V_UNUSED             __attribute__((unused))

#define ucs_likely(_x)           __builtin_expect(!!(_x), 1)
#define ucs_unlikely(_x)         __builtin_expect(!!(_x), 0)

/** Bit number @a _i as an unsigned 64-bit mask. */
#define UCS_BIT(_i)              (1ull << (_i))
/** Mask of the lowest @a _n bits. */
#define UCS_MASK(_n)             (((_n) >= 64) ? ~0ull : (UCS_BIT(_n) - 1))

/** Number of elements of a fixed-size array. */
/* Smaller / larger of two values of one type; each argument is evaluated
 * once. */
#define ucs_min(_a, _b) \
    ({ __typeof__(_a) _ucs_a = (_a); __typeof__(_b) _ucs_b = (_b); \
       (_ucs_a < _ucs_b) ? _ucs_a : _ucs_b; })
#define ucs_max(_a, _b) \
    ({ __typeof__(_a) _ucs_a = (_a); __typeof__(_b) _ucs_b = (_b); \
       (_ucs_a > _ucs_b) ? _ucs_a : _ucs_b; })

/* @a _ptr moved by @a _offset bytes (upstream's name, used by its example
 * programs). */
#define UCS_PTR_BYTE_OFFSET(_ptr, _offset) \
    ((void*)((intptr_t)(_ptr) + (intptr_t)(_offset)))

#define ucs_static_array_size(_a) (sizeof(_a) / sizeof((_a)[0]))

/** Pointer to the structure that contains @a _ptr as member @a _member. */
#define ucs_container_of(_ptr, _type, _member) \
    ((_type*)((char*)(_ptr) - offsetof(_type, _member)))

#define ucs_offsetof(_type, _member) offsetof(_type, _member)

#define UCS_PP_QUOTE_(_x)        #_x
#define UCS_PP_QUOTE(_x)         UCS_PP_QUOTE_(_x)
#define UCS_PP_CONCAT_(_a, _b)   _a##_b
#define UCS_PP_CONCAT(_a, _b)    UCS_PP_CONCAT_(_a, _b)

#define UCS_CACHE_LINE_SIZE      64

#endif

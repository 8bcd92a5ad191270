/**
 * @file sanitizer.h
 * Whether the tests run under a sanitizer (UCX_TEST_SANITIZER), and the heap
 * counter that works with and without one.
 */
#ifndef UCX_TEST_SANITIZER_H_
#define UCX_TEST_SANITIZER_H_

#include <cstddef>
#include <malloc.h>

#if defined(__has_feature)
#  if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#    define UCX_TEST_SANITIZER 1
#  endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#  define UCX_TEST_SANITIZER 1
#endif
#ifdef UCX_TEST_SANITIZER
/* Every sanitizer runtime has it; gcc does not always ship the header. */
extern "C" size_t __sanitizer_get_current_allocated_bytes(void);
#endif

namespace ucx_test {

/** Bytes the heap hands out now (mmap'ed blocks included). */
inline size_t heap_in_use()
{
#ifdef UCX_TEST_SANITIZER
    return __sanitizer_get_current_allocated_bytes();
#else
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
#endif
}

} // namespace ucx_test

#endif

/*
 * Helpers shared by the cmocka unit tests outside the store: allocation
 * failure injection.  Header-only, and included by exactly one file per
 * test binary, since it defines malloc, calloc, realloc and free for the
 * whole process.
 *
 * Outside sanitizer builds (FAILALLOC 1), the wrappers below count live
 * allocations and fail the allocation that drops fail_countdown to 0, so
 * a test can fail the k-th allocation, for every k, and check that
 * nothing leaks.  They also record the largest single request in
 * max_alloc, so a parser can be shown not to allocate from a declared
 * length.  Under ASan the sanitizer owns malloc and FAILALLOC is 0: tests
 * that need the wrappers skip.
 */
#ifndef PK_TESTS_TESTUTIL_H
#define PK_TESTS_TESTUTIL_H

#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__)
#define FAILALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FAILALLOC 0
#endif
#endif
#ifndef FAILALLOC
#define FAILALLOC 1
#endif

#if FAILALLOC
/*
 * glibc's allocator under its exported names; the wrappers below replace
 * malloc for the whole process (sanitizers own malloc, hence the guard).
 * malloc takes no context, so the injection state is file-scope.
 */
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);

static long fail_countdown; /* the allocation that drops it to 0 fails */
static long live_allocs;    /* allocations minus frees */
static size_t max_alloc;    /* largest request since last cleared */

static inline int alloc_fails(size_t n)
{
    if (n > max_alloc) {
        max_alloc = n;
    }
    return fail_countdown > 0 && --fail_countdown == 0;
}

void *malloc(size_t n)
{
    void *p = alloc_fails(n) ? NULL : __libc_malloc(n);

    live_allocs += p != NULL;
    return p;
}

void *calloc(size_t n, size_t size)
{
    void *p = alloc_fails(n * size) ? NULL : __libc_calloc(n, size);

    live_allocs += p != NULL;
    return p;
}

void *realloc(void *p, size_t n)
{
    void *q;

    if (alloc_fails(n)) {
        return NULL;
    }
    q = __libc_realloc(p, n);
    live_allocs += (p == NULL && q != NULL) - (p != NULL && n == 0);
    return q;
}

void free(void *p)
{
    live_allocs -= p != NULL;
    __libc_free(p);
}

/* 0 when something else (valgrind, say) has replaced these wrappers. */
static inline int failalloc_works(void)
{
    void *(*volatile alloc)(size_t) = malloc; /* not a builtin call */
    void *p;

    fail_countdown = 1;
    p = alloc(16);
    fail_countdown = 0;
    free(p);
    return p == NULL;
}
#endif

#endif

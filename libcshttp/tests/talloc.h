/* Test allocations that a failed assertion cannot leak: cmocka leaves a
 * failed test with longjmp, so each test's teardown frees what is left. */
#ifndef CSH_TESTS_TALLOC_H
#define CSH_TESTS_TALLOC_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#define S(lit) lit, (sizeof(lit) - 1)

/* Allocations of the running test, freed by its teardown even when an
 * assertion fails half-way (cmocka leaves a failed test with longjmp). */
static void *live[256];
static size_t nlive;

static inline void *tmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    assert_non_null(p);
    assert_true(nlive < sizeof live / sizeof live[0]);
    live[nlive++] = p;
    return p;
}

static inline void tfree(void *p)
{
    for (size_t i = nlive; i-- > 0;)
        if (live[i] == p) {
            live[i] = live[--nlive];
            break;
        }
    free(p);
}

static inline int free_live(void **state)
{
    (void)state;
    while (nlive) free(live[--nlive]);
    return 0;
}

#endif

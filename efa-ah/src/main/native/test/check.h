/*
 * The C tests' one check: a mismatch is printed with its place and counted, and the test goes on,
 * so that one run shows every failed check; main returns non-zero when failures is not 0.
 */
#ifndef EFA_AH_TEST_CHECK_H
#define EFA_AH_TEST_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK_EQ(expected, actual)                                                             \
    do {                                                                                       \
        long long e_ = (long long)(expected), a_ = (long long)(actual);                        \
        if (e_ != a_) {                                                                        \
            fprintf(stderr, "%s:%d: %s: expected %lld, got %lld\n", __FILE__, __LINE__,        \
                    #actual, e_, a_);                                                          \
            failures++;                                                                        \
        }                                                                                      \
    } while (0)

#endif

/* One line per check ("ok: ..." / "FAILED: ...") and a failure count the program returns, for
 * the fake libibverbs' C test programs (C99: no test framework links into them). */
#ifndef GIDPOLICY_TESTS_FAKELIB_CHECK_H
#define GIDPOLICY_TESTS_FAKELIB_CHECK_H

#include <stdio.h>

static int failures = 0;
#define CHECK(cond, ...)              \
  do {                                \
    if (cond) {                       \
      printf("ok: " __VA_ARGS__);     \
    } else {                          \
      printf("FAILED: " __VA_ARGS__); \
      ++failures;                     \
    }                                 \
    printf("\n");                     \
  } while (0)

#endif

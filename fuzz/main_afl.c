/* A main for AFL++ (afl-clang-fast): persistent mode, the test case read from
 * shared memory, many inputs per process. Built without afl-clang-fast, or
 * run outside afl-fuzz, it reads one input from stdin (or from the files
 * named on the command line) and runs it once, so a crash found by afl-fuzz
 * reproduces with `fuzz_request < crash` or `fuzz_request crash`.
 *
 *   afl-fuzz -i fuzz/corpus/fuzz_request -o out -x fuzz/http.dict -- build-afl/fuzz/fuzz_request */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* read(), used by the AFL++ macros */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifdef __AFL_FUZZ_TESTCASE_LEN
__AFL_FUZZ_INIT();
#endif

#define MAX_INPUT (1u << 20)

/* Runs one input read from `f` (at most MAX_INPUT bytes). */
static int run_fd(FILE *f)
{
    uint8_t *buf = malloc(MAX_INPUT);
    if (!buf) return -1;
    size_t len = fread(buf, 1, MAX_INPUT, f);
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        /* Reproduce: each file named once. */
        int rc = 0;
        for (int i = 1; i < argc; i++) {
            FILE *f = fopen(argv[i], "rb");
            if (!f || run_fd(f) != 0) {
                perror(argv[i]);
                rc = 1;
            }
            if (f) fclose(f);
        }
        return rc;
    }
#ifdef __AFL_FUZZ_TESTCASE_LEN
#ifdef __AFL_HAVE_MANUAL_CONTROL
    __AFL_INIT();
#endif
    unsigned char *shm = __AFL_FUZZ_TESTCASE_BUF;
    while (__AFL_LOOP(100000)) {
        size_t len = (size_t)__AFL_FUZZ_TESTCASE_LEN;
        /* An exact-size copy, so that a read past the input is caught under
         * AFL_USE_ASAN. */
        uint8_t *exact = malloc(len ? len : 1);
        if (!exact) abort();
        memcpy(exact, shm, len);
        LLVMFuzzerTestOneInput(exact, len);
        free(exact);
    }
    return 0;
#else
    return run_fd(stdin) == 0 ? 0 : 1;
#endif
}

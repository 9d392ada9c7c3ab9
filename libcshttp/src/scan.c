/* The scanners' constant table and the CPU check (the scanners themselves
 * are inline, in scan.h). */
#include "scan.h"

#include "cshttp/grammar.h"

/* tchar (RFC 9110 §5.6.2), from its one definition in grammar.h */
#define T_(c) ((c) < 64 ? (CSH_TCHAR_LO >> ((c)&63u)) & 1u : (c) < 128 ? (CSH_TCHAR_HI >> ((c)&63u)) & 1u : 0u)
#define T4_(c) T_(c), T_((c) + 1), T_((c) + 2), T_((c) + 3)
#define T16_(c) T4_(c), T4_((c) + 4), T4_((c) + 8), T4_((c) + 12)
#define T64_(c) T16_(c), T16_((c) + 16), T16_((c) + 32), T16_((c) + 48)
const unsigned char csh__tchar[256] = {T64_(0u), T64_(64u), T64_(128u), T64_(192u)};

int csh__simd_available(void)
{
#ifdef CSH_HAVE_AVX2
    return __builtin_cpu_supports("avx2") ? 1 : 0;
#else
    return 0;
#endif
}

/* The scanners' constant table and the CPU check (the scanners themselves
 * are inline, in scan.h). */
#include "scan.h"

/* tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" /
 *         "_" / "`" / "|" / "~" / DIGIT / ALPHA  (RFC 9110 §5.6.2) */
#define T1 1
const unsigned char csh__tchar[256] = {
    ['!'] = T1, ['#'] = T1, ['$'] = T1, ['%'] = T1, ['&'] = T1, ['\''] = T1, ['*'] = T1,
    ['+'] = T1, ['-'] = T1, ['.'] = T1, ['^'] = T1, ['_'] = T1, ['`'] = T1, ['|'] = T1,
    ['~'] = T1, ['0'] = T1, ['1'] = T1, ['2'] = T1, ['3'] = T1, ['4'] = T1, ['5'] = T1,
    ['6'] = T1, ['7'] = T1, ['8'] = T1, ['9'] = T1, ['A'] = T1, ['B'] = T1, ['C'] = T1,
    ['D'] = T1, ['E'] = T1, ['F'] = T1, ['G'] = T1, ['H'] = T1, ['I'] = T1, ['J'] = T1,
    ['K'] = T1, ['L'] = T1, ['M'] = T1, ['N'] = T1, ['O'] = T1, ['P'] = T1, ['Q'] = T1,
    ['R'] = T1, ['S'] = T1, ['T'] = T1, ['U'] = T1, ['V'] = T1, ['W'] = T1, ['X'] = T1,
    ['Y'] = T1, ['Z'] = T1, ['a'] = T1, ['b'] = T1, ['c'] = T1, ['d'] = T1, ['e'] = T1,
    ['f'] = T1, ['g'] = T1, ['h'] = T1, ['i'] = T1, ['j'] = T1, ['k'] = T1, ['l'] = T1,
    ['m'] = T1, ['n'] = T1, ['o'] = T1, ['p'] = T1, ['q'] = T1, ['r'] = T1, ['s'] = T1,
    ['t'] = T1, ['u'] = T1, ['v'] = T1, ['w'] = T1, ['x'] = T1, ['y'] = T1, ['z'] = T1,
};

int csh__simd_available(void)
{
#ifdef CSH_HAVE_AVX2
    return __builtin_cpu_supports("avx2") ? 1 : 0;
#else
    return 0;
#endif
}

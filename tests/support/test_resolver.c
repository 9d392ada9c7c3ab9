/* Test-only name resolution: getaddrinfo answers the names listed in the
 * environment variable CSHTTP_TEST_HOSTS with the addresses listed there,
 * in that order, whatever /etc/hosts and DNS say; every other name goes
 * to the real getaddrinfo.
 *
 *   CSHTTP_TEST_HOSTS='dual.test=::1,127.0.0.1;hole.test=127.0.0.1:40001,127.0.0.1'
 *
 * An address may carry its own port (an IPv6 one in brackets:
 * [::1]:8080); the others take the service asked for. A name listed with
 * no address fails with EAI_NONAME. An element "wait:MS" makes the
 * look-up take MS milliseconds first, as a DNS server that answers late
 * does (slow.test=wait:2000,127.0.0.1). The list is read at each call, so
 * a test may change it between requests.
 *
 * Linked into a test program, its getaddrinfo is the one the libraries
 * call (the program's symbols come first); built as a shared object it is
 * loaded into a server under test with LD_PRELOAD. Each address becomes
 * the real getaddrinfo's own node (a numeric look-up), so the real
 * freeaddrinfo frees the list. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

typedef int (*gai_fn)(const char *, const char *, const struct addrinfo *, struct addrinfo **);

static gai_fn real_getaddrinfo(void)
{
    static gai_fn fn;
    if (!fn) fn = (gai_fn)dlsym(RTLD_NEXT, "getaddrinfo");
    return fn;
}

/* The entry for `name` in CSHTTP_TEST_HOSTS: its address list, copied
 * into out (NUL-terminated); 0 when the name is not listed. */
static int find_entry(const char *name, char *out, size_t cap)
{
    const char *env = getenv("CSHTTP_TEST_HOSTS");
    if (!env || !name) return 0;
    size_t nl = strlen(name);
    for (const char *e = env; *e;) {
        const char *end = strchr(e, ';');
        if (!end) end = e + strlen(e);
        const char *eq = memchr(e, '=', (size_t)(end - e));
        if (eq && (size_t)(eq - e) == nl && strncasecmp(e, name, nl) == 0) {
            size_t n = (size_t)(end - eq - 1);
            if (n >= cap) n = cap - 1;
            memcpy(out, eq + 1, n);
            out[n] = 0;
            return 1;
        }
        e = *end ? end + 1 : end;
    }
    return 0;
}

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res)
{
    char list[1024];
    gai_fn real = real_getaddrinfo();
    if (!real) return EAI_SYSTEM;
    if (!find_entry(node, list, sizeof list)) return real(node, service, hints, res);
    struct addrinfo h;
    memset(&h, 0, sizeof h);
    if (hints) {
        h.ai_family = hints->ai_family;
        h.ai_socktype = hints->ai_socktype;
        h.ai_protocol = hints->ai_protocol;
    }
    h.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    struct addrinfo *head = NULL, **tail = &head;
    char *save = NULL;
    for (char *a = strtok_r(list, ",", &save); a; a = strtok_r(NULL, ",", &save)) {
        if (strncmp(a, "wait:", 5) == 0) {
            long ms = strtol(a + 5, NULL, 10);
            struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
            while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
            }
            continue;
        }
        const char *host = a, *port = service;
        if (*a == '[') { /* [v6]:port or [v6] */
            char *rb = strchr(a, ']');
            if (!rb) continue;
            *rb = 0;
            host = a + 1;
            if (rb[1] == ':') port = rb + 2;
        } else {
            char *colon = strchr(a, ':');
            if (colon && !strchr(colon + 1, ':')) { /* v4:port; a bare v6 has several */
                *colon = 0;
                port = colon + 1;
            }
        }
        struct addrinfo *one = NULL;
        if (real(host, port, &h, &one) != 0) continue; /* another family than asked */
        *tail = one;
        while (*tail) tail = &(*tail)->ai_next;
    }
    if (!head) return EAI_NONAME;
    *res = head;
    return 0;
}

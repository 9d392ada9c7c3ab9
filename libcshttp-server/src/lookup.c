/* A name's addresses looked up on a thread of its own (lookup.h). */
#include "lookup.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cshttp/server/client.h>

struct cshs_lookup {
    _Atomic int refs;  /* the owner's and the thread's */
    _Atomic int ended; /* set (release) once res and err are in */
    int taken;         /* the owner took the result */
    int notify_fd;
    struct addrinfo *res;
    int err;
    char *host, *port; /* copies: the caller's may go first */
};

static void lookup_unref(cshs_lookup *l)
{
    if (atomic_fetch_sub_explicit(&l->refs, 1, memory_order_acq_rel) != 1) return;
    if (l->res && !l->taken) freeaddrinfo(l->res);
    free(l->host);
    free(l->port);
    free(l);
}

static void *lookup_main(void *arg)
{
    cshs_lookup *l = arg;
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    int r = getaddrinfo(l->host, l->port, &hints, &l->res);
    if (r != 0) l->res = NULL;
    l->err = r == 0 ? 0 : r == EAI_MEMORY ? -ENOMEM : CSHS_CLIENT_E_RESOLVE;
    atomic_store_explicit(&l->ended, 1, memory_order_release);
    if (l->notify_fd >= 0) {
        uint64_t one = 1;
        ssize_t n;
        do
            n = write(l->notify_fd, &one, sizeof one);
        while (n < 0 && errno == EINTR);
        close(l->notify_fd);
    }
    lookup_unref(l);
    return NULL;
}

cshs_lookup *cshs__lookup_start(const char *host, const char *port, int notify_fd)
{
    cshs_lookup *l = calloc(1, sizeof *l);
    if (l) {
        l->host = strdup(host);
        l->port = strdup(port);
    }
    if (!l || !l->host || !l->port) {
        if (l) {
            free(l->host);
            free(l->port);
            free(l);
        }
        if (notify_fd >= 0) close(notify_fd);
        errno = ENOMEM;
        return NULL;
    }
    l->notify_fd = notify_fd;
    atomic_init(&l->refs, 2);
    atomic_init(&l->ended, 0);
    /* getaddrinfo's NSS modules may want more than a small stack: the
     * default one, which costs address space, not memory, until used */
    pthread_attr_t attr;
    pthread_t t;
    int e = pthread_attr_init(&attr);
    if (e == 0) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        e = pthread_create(&t, &attr, lookup_main, l);
        pthread_attr_destroy(&attr);
    }
    if (e != 0) {
        if (notify_fd >= 0) close(notify_fd);
        free(l->host);
        free(l->port);
        free(l);
        errno = e;
        return NULL;
    }
    return l;
}

int cshs__lookup_done(cshs_lookup *l, struct addrinfo **res, int *err)
{
    if (!atomic_load_explicit(&l->ended, memory_order_acquire)) return 0;
    *res = l->taken ? NULL : l->res;
    *err = l->err;
    l->taken = 1;
    return 1;
}

void cshs__lookup_release(cshs_lookup *l)
{
    if (l) lookup_unref(l);
}

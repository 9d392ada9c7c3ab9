/* A thread's own loop (thread_reactor.h): made at the thread's first
 * blocking call of the client, run while it waits, let go when the
 * thread exits. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "server_impl.h"
#include "thread_reactor.h"

/* Never waits longer than this between two looks at the holds (a hold
 * let go without a wake-up cannot happen; this bounds a lost one). */
#define THREAD_LOOP_MAX_WAIT_MS 1000

static _Thread_local cshs_loop *own_loop;
static pthread_key_t own_key;
static pthread_once_t own_once = PTHREAD_ONCE_INIT;

/* At the thread's exit: the thread's reference goes; the sockets still
 * registered there keep the loop until they leave it. */
static void own_exit(void *arg)
{
    own_loop = NULL; /* a later destructor's blocking call makes another */
    cshs__loops_unref(arg);
}

/* In a child of fork(): the loop it inherited is its parent's (the same
 * epoll set, which the parent's threads may wait on), never its own. The
 * child's first blocking call makes one; the inherited descriptors stay
 * as any other the child inherited. */
static void own_forget_in_child(void)
{
    own_loop = NULL;
    pthread_setspecific(own_key, NULL);
}

static int own_key_made; /* pthread_key_create succeeded (set once, under own_once) */

static void own_key_make(void)
{
    if (pthread_key_create(&own_key, own_exit) != 0) return;
    own_key_made = 1;
    pthread_atfork(NULL, NULL, own_forget_in_child);
}

static cshs_loop *loop_make(void)
{
    cshs_loop *l = aligned_alloc(64, (sizeof *l + 63) / 64 * 64);
    if (!l) return NULL;
    memset(l, 0, sizeof *l);
    l->wake_tag = TAG_WAKE;
    l->count = 1;
    atomic_store(&l->refs, 1); /* the thread's */
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    l->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event ev;
    ev.events = EPOLLIN;
    ev.data.ptr = &l->wake_tag;
    if (l->epfd < 0 || l->evfd < 0 || epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->evfd, &ev) < 0) {
        int e = errno;
        if (l->epfd >= 0) close(l->epfd);
        if (l->evfd >= 0) close(l->evfd);
        free(l);
        errno = e;
        return NULL;
    }
    pthread_mutex_init(&l->mu, NULL);
    return l;
}

cshs_reactor *cshs__thread_reactor(void)
{
    if (own_loop) return (cshs_reactor *)own_loop;
    pthread_once(&own_once, own_key_make);
    if (!own_key_made) { /* no key: the loop could not be let go at the thread's exit */
        errno = EAGAIN;
        return NULL;
    }
    cshs_loop *l = loop_make();
    if (!l) return NULL;
    if (pthread_setspecific(own_key, l) != 0) {
        cshs__loops_unref(l);
        errno = ENOMEM;
        return NULL;
    }
    own_loop = l;
    return (cshs_reactor *)l;
}

cshs_reactor *cshs__thread_reactor_enter(cshs_reactor *r)
{
    return (cshs_reactor *)cshs__set_self_loop((cshs_loop *)r);
}

void cshs__thread_reactor_leave(cshs_reactor *before)
{
    cshs__set_self_loop((cshs_loop *)before);
}

static int held(cshs_loop *l)
{
    pthread_mutex_lock(&l->mu);
    int busy = l->holds > 0 || l->watches != NULL;
    pthread_mutex_unlock(&l->mu);
    return busy;
}

void cshs__thread_reactor_run(cshs_reactor *r)
{
    cshs_loop *l = (cshs_loop *)r;
    while (held(l)) {
        int64_t now = cshs__now_ms();
        int64_t due = atomic_load_explicit(&l->watch_due_ms, memory_order_relaxed);
        if (due && now >= due) {
            cshs__expire_watches(l, now);
            continue;
        }
        int64_t wait = due ? due - now : THREAD_LOOP_MAX_WAIT_MS;
        if (wait > THREAD_LOOP_MAX_WAIT_MS) wait = THREAD_LOOP_MAX_WAIT_MS;
        int n = epoll_wait(l->epfd, l->evs, CSHS_LOOP_BATCH, (int)wait);
        for (int i = 0; i < n; i++) {
            uint64_t data = l->evs[i].data.u64;
            void *ptr = (void *)(uintptr_t)(data & CSHS_EV_PTR_MASK);
            int tag = __atomic_load_n((int *)ptr, __ATOMIC_RELAXED);
            if (tag == TAG_WATCH) {
                cshs__watch_event(l, ptr, l->evs[i].events);
            } else if (tag == TAG_PERSISTENT) {
                cshs__persistent_event(l, ptr, (unsigned)(data >> 48), l->evs[i].events);
            } else {
                uint64_t v;
                if (read(l->evfd, &v, sizeof v) < 0) {
                    /* nothing to read: another event woke it too */
                }
            }
        }
    }
}

void cshs__reactor_hold(cshs_reactor *r)
{
    cshs_loop *l = (cshs_loop *)r;
    if (!l || l->srv) return;
    pthread_mutex_lock(&l->mu);
    l->holds++;
    pthread_mutex_unlock(&l->mu);
}

void cshs__reactor_release(cshs_reactor *r)
{
    cshs_loop *l = (cshs_loop *)r;
    if (!l || l->srv) return;
    /* woken under the lock: the thread sees the holds end under it only
     * after this is done with the loop, which may be freed once it has
     * (the thread's exit) */
    pthread_mutex_lock(&l->mu);
    if (--l->holds == 0 && !cshs__on_reactor(r)) cshs__wake_loop(l);
    pthread_mutex_unlock(&l->mu);
}

int cshs__reactor_live(const cshs_reactor *r)
{
    return r && ((const cshs_loop *)r)->srv != NULL;
}

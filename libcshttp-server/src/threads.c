/* The threads: workers (a loop's owner or a job's), parked workers, offloading a
 * handler, and the supervisor that hands a blocked loop to a parked worker. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "list.h"
#include "server_impl.h"

/* ---- threads ---- */

/* The next handler waiting for a thread (under s->mu), or NULL. None is
 * taken once the threads leave: the connections left are freed with the
 * loops. */
static cshs_conn *next_waiting(cshs_server *s)
{
    if (!s->waiting || atomic_load(&s->exiting)) return NULL;
    cshs_conn *c;
    CSHS_FIFO_POP(s->waiting, s->waiting_tail, c, link);
    s->nwaiting--;
    atomic_fetch_sub(&s->c_waiting, 1);
    atomic_fetch_add(&s->c_offloaded, 1);
    return c;
}

static void *worker_main(void *arg)
{
    cshs_worker *w = arg;
    cshs_server *s = w->srv;
    w->tid = (pid_t)syscall(SYS_gettid);
    /* sendfile(2) and OpenSSL's writes to a socket the peer closed raise
     * SIGPIPE: blocked here, they fail with EPIPE instead, whatever the
     * application's disposition */
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, NULL);
    pthread_mutex_lock(&s->mu);
    for (;;) {
        if (w->loop) {
            cshs_loop *l = w->loop;
            w->loop = NULL;
            pthread_mutex_unlock(&s->mu);
            cshs__run_loop(w, l);
            pthread_mutex_lock(&s->mu);
            continue;
        }
        if (w->job) {
            cshs_conn *c = w->job;
            w->job = NULL;
            pthread_mutex_unlock(&s->mu);
            atomic_fetch_add(&s->c_busy, 1);
            cshs__conn_job(w, c);
            atomic_fetch_sub(&s->c_busy, 1);
            pthread_mutex_lock(&s->mu);
            continue;
        }
        if ((w->job = next_waiting(s))) continue;
        if (atomic_load(&s->exiting)) break;
        /* parked: the most recently used is the first one given work */
        CSHS_STACK_PUSH(s->parked, w, next_parked);
        w->on_parked = 1;
        atomic_fetch_add(&s->c_parked, 1);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += (time_t)(s->o.park_after_ms / 1000);
        ts.tv_nsec += (long)(s->o.park_after_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        /* The wait takes no lock: whoever takes this parked worker off the list
         * assigns it under the mutex and posts after unlocking, so the
         * worker wakes without meeting the mutex its waker holds (a
         * condition variable's wait would take it again at once). */
        pthread_mutex_unlock(&s->mu);
        int timed_out = 0;
        while (sem_timedwait(&w->wake, &ts) != 0) {
            if (errno == ETIMEDOUT) {
                timed_out = 1;
                break;
            }
        }
        pthread_mutex_lock(&s->mu);
        if (timed_out && !w->on_parked) {
            /* taken meanwhile: the post is on its way */
            pthread_mutex_unlock(&s->mu);
            while (sem_wait(&w->wake) != 0) {
            }
            pthread_mutex_lock(&s->mu);
            timed_out = 0;
        }
        if (timed_out) {
            /* still on the parked list: taken off it */
            for (cshs_worker **p = &s->parked; *p; p = &(*p)->next_parked)
                if (*p == w) {
                    *p = w->next_parked;
                    atomic_fetch_sub(&s->c_parked, 1);
                    break;
                }
            w->on_parked = 0;
            if (atomic_load(&s->exiting)) break;
            /* idle for park_after_ms beyond the threads kept: leaves, and
             * its slot with it (a server that grows and shrinks for days
             * must not run out of slots) */
            if (s->alive > s->o.min_threads && s->alive > s->nloops + 1) {
                for (unsigned i = 0; i < s->nworkers; i++)
                    if (s->workers[i] == w) {
                        s->workers[i] = s->workers[--s->nworkers];
                        break;
                    }
                s->alive--;
                pthread_mutex_unlock(&s->mu);
                pthread_detach(w->thread);
                cshs__worker_release(w);
                sem_destroy(&w->wake);
                free(w);
                return NULL;
            }
        }
    }
    s->alive--;
    pthread_mutex_unlock(&s->mu);
    cshs__worker_exit(s, w);
    return NULL;
}

/* A new thread (under s->mu), given `loop` or `job` to start with. NULL
 * at `limit` threads or when no thread can be made. */
cshs_worker *cshs__spawn_worker(cshs_server *s, cshs_loop *loop, cshs_conn *job, unsigned limit)
{
    if (s->nworkers >= limit) return NULL;
    cshs_worker *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->srv = s;
    w->loop = loop;
    w->job = job;
    w->handler_ctx = cshs__handler_ctx_new(s);
    if (!w->handler_ctx) {
        free(w);
        return NULL;
    }
    sem_init(&w->wake, 0, 0);
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
        sem_destroy(&w->wake);
        cshs__handler_ctx_free(w->handler_ctx);
        free(w);
        return NULL;
    }
    s->workers[s->nworkers++] = w;
    s->alive++;
    return w;
}

/* A parked worker (under s->mu), or NULL. */
cshs_worker *cshs__take_parked(cshs_server *s)
{
    cshs_worker *w = NULL;
    if (s->parked) {
        CSHS_STACK_POP(s->parked, w, next_parked);
        w->on_parked = 0;
        atomic_fetch_sub(&s->c_parked, 1);
    }
    return w;
}

/* A handler that waits runs on another thread: a parked worker, or a new one;
 * with max_threads running, it waits in the server's queue for the first
 * thread whose job ends (server_impl.h says what each result asks of the
 * caller). A queue is kept only while some thread besides the loops'
 * owners will come back for it. */
int cshs__offload(cshs_server *s, cshs_conn *c, int bounded)
{
    /* a deferred request's connection is busy already, and stays so */
    int was = atomic_exchange(&c->busy, 1);
    pthread_mutex_lock(&s->mu);
    cshs_worker *w = cshs__take_parked(s);
    int post = w != NULL, how = OFFLOAD_RUNS;
    if (w)
        w->job = c;
    else if (!(w = cshs__spawn_worker(s, NULL, c, s->o.max_threads))) {
        /* every thread is busy: the loops' owners, and jobs (or handlers
         * whose loop was handed over) that come back to the queue */
        if (s->nworkers <= s->nloops) {
            how = OFFLOAD_NONE;
        } else if (bounded && s->nwaiting >= s->o.max_waiting_handlers) {
            how = OFFLOAD_FULL;
        } else {
            CSHS_FIFO_APPEND(s->waiting, s->waiting_tail, c, link);
            s->nwaiting++;
            atomic_fetch_add(&s->c_waiting, 1);
            how = OFFLOAD_WAITS;
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (post) sem_post(&w->wake);
    if (w) atomic_fetch_add(&s->c_offloaded, 1);
    if (how == OFFLOAD_NONE || how == OFFLOAD_FULL) atomic_store(&c->busy, was);
    return how;
}

/* ---- the supervisor ---- */

/* Whether a loop has something to serve: events of its batch not served
 * yet, connections posted to go on after it (a deferred request's
 * continuation among them), HTTP/2 streams' news (what a handler that
 * waits for its stream's room needs the loop to send), events in its
 * epoll set, or a sweep that is due. */
static int loop_has_work(cshs_loop *l)
{
    if (atomic_load_explicit(&l->next, memory_order_relaxed) <
            atomic_load_explicit(&l->nev, memory_order_relaxed) ||
        atomic_load_explicit(&l->nposted, memory_order_relaxed) > 0 ||
        atomic_load_explicit(&l->nkicked, memory_order_relaxed) > 0)
        return 1;
    if (cshs__now_ms() > atomic_load_explicit(&l->next_sweep_ms, memory_order_relaxed)) return 1;
    struct pollfd p = {l->epfd, POLLIN, 0};
    return poll(&p, 1, 0) > 0;
}

/* Whether thread tid (of this process) is waiting in the kernel (state S
 * or D in /proc), rather than running or runnable. Read only when a loop
 * has been held past grow_after_us with events waiting. */
static int thread_blocked(pid_t tid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 1; /* cannot tell: as before, a held loop is handed over */
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 1;
    buf[n] = '\0';
    /* "tid (comm) S ...": the state follows the last ')' */
    const char *p = strrchr(buf, ')');
    return !p || p[1] != ' ' || (p[2] != 'R');
}

/* Hands loop l, whose owner has been in a handler since `since`, to a
 * parked or new thread. */
static void hand_over(cshs_server *s, cshs_loop *l, int64_t since, int blocked)
{
    pthread_mutex_lock(&s->mu);
    cshs_worker *w = cshs__take_parked(s);
    int fresh = 0, post = 0;
    if (!w) {
        /* at max_threads too: the loop's old owner becomes one of the
         * threads that run jobs, and a loop is never left to a handler
         * that blocks (at most a thread more per loop) */
        w = cshs__spawn_worker(s, NULL, NULL, s->o.max_threads + s->nloops);
        fresh = 1;
    }
    if (w) {
        if (atomic_compare_exchange_strong(&l->handler_since_us, &since, -1)) {
            /* the old owner no longer touches the loop: its next owner
             * finds this when it starts (the mutex orders it) */
            if (blocked) cshs__offload_more(l);
            w->loop = l;
            atomic_fetch_add(&s->c_handovers, 1);
            post = !fresh;
        } else if (!fresh) {
            /* the handler returned meanwhile: the worker stays parked (it was
             * not posted, and on the list again it is owed no post) */
            CSHS_STACK_PUSH(s->parked, w, next_parked);
            w->on_parked = 1;
            atomic_fetch_add(&s->c_parked, 1);
        }
        /* a fresh thread with nothing to do parks by itself */
    }
    pthread_mutex_unlock(&s->mu);
    if (post) sem_post(&w->wake);
}

void *cshs__supervisor_main(void *arg)
{
    cshs_server *s = arg;
    int64_t next_tick = cshs__now_ms() + (int64_t)s->o.sweep_interval_ms;
    int64_t quiet_since = cshs__now_ms();
    uint64_t last_served = 0;
    unsigned backoff = 0; /* looks spaced grow_after_us << backoff apart */
    pthread_mutex_lock(&s->mu);
    while (!atomic_load(&s->exiting)) {
        pthread_mutex_unlock(&s->mu);
        if (s->nticks && cshs__now_ms() >= next_tick) {
            for (unsigned i = 0; i < s->nticks; i++) s->ticks[i].fn(s->ticks[i].arg);
            next_tick = cshs__now_ms() + (int64_t)s->o.sweep_interval_ms;
        }
        int64_t now_us = cshs__now_us();
        int in_handler = 0, slow = 0;
        for (unsigned i = 0; i < s->nloops; i++) {
            cshs_loop *l = &s->loops[i];
            int64_t since = atomic_load(&l->handler_since_us);
            if (since <= 0) continue;
            in_handler = 1;
            int64_t held = now_us - since;
            if (held >= (int64_t)s->o.grow_after_us / 4) slow = 1;
            if (held < (int64_t)s->o.grow_after_us || !loop_has_work(l)) continue;
            /* A handler blocked in the kernel: the loop goes at once, and
             * its next handlers run on other threads a while. One that
             * computes, or whose thread was only preempted (a machine
             * short of cores), keeps it unless it holds it 20 times as
             * long: another runnable thread would not run sooner. */
            int blocked = thread_blocked(atomic_load(&l->owner_tid));
            if (blocked || held >= 20 * (int64_t)s->o.grow_after_us)
                hand_over(s, l, since, blocked);
        }
        pthread_mutex_lock(&s->mu);
        /* While requests come, look again every grow_after_us: a timer
         * costs less than a loop signalling the supervisor (a futex wake
         * per handler). After 100 ms without a request or a handler,
         * sleep until a loop enters one (wake_supervisor) or a second
         * passes. sup_sleeping is set before the loops are read again: a
         * loop that entered a handler after that read sees the flag and
         * signals. */
        uint64_t served = 0;
        for (unsigned i = 0; i < s->nloops; i++)
            served += atomic_load_explicit(&s->loops[i].k.requests, memory_order_relaxed);
        if (in_handler || served != last_served) quiet_since = cshs__now_ms();
        last_served = served;
        /* While the handlers the looks meet are quick (microseconds; a TLS
         * handshake's connection runs none at all), look less often, down
         * to every 8 grow_after_us: each look wakes this thread, which on
         * busy cores preempts a loop or its client (in a run of TLS
         * handshakes, one look per grow_after_us made the supervisor's
         * wake-ups most of the context switches). A handler seen
         * running for a quarter of grow_after_us brings the looks back to
         * every grow_after_us; so a handler that blocks after quick ones is
         * handed over within 8 grow_after_us, and after that within
         * grow_after_us as before. Go's sysmon backs off the same way. */
        if (slow)
            backoff = 0;
        else if (backoff < 3)
            backoff++;
        int64_t wait_us = (int64_t)s->o.grow_after_us << backoff;
        if (!in_handler && cshs__now_ms() - quiet_since >= 100) {
            atomic_store(&s->sup_sleeping, 1);
            for (unsigned i = 0; i < s->nloops; i++)
                if (atomic_load(&s->loops[i].handler_since_us) > 0) in_handler = 1;
            if (in_handler)
                atomic_store(&s->sup_sleeping, 0);
            else
                wait_us = 1000000;
        }
        if (s->nticks) {
            int64_t to_tick = (next_tick - cshs__now_ms()) * 1000;
            if (to_tick < wait_us) wait_us = to_tick < 100 ? 100 : to_tick;
        }
        if (atomic_load(&s->exiting)) break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ns = ts.tv_nsec + (wait_us % 1000000) * 1000;
        ts.tv_sec += (time_t)(wait_us / 1000000 + ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        pthread_cond_timedwait(&s->sup_cv, &s->mu, &ts);
        atomic_store(&s->sup_sleeping, 0);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* The proxy's buffering of an origin's answer in a temporary file
 * (proxy_buffer.h). */
#define _GNU_SOURCE /* O_TMPFILE */
#include "proxy_buffer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

/* A file handed to responses, waiting for the engine's last range. */
struct spool_file {
    spool_file *next;
    int watch;      /* the spool's description: locks once the other is closed */
    uint64_t bytes; /* counted in proxy_spool.bytes until let go */
};

void spool_init(proxy_spool *sp)
{
    sp->on = 1;
    sp->max_file = (uint64_t)1 << 30;
    sp->max_total = (uint64_t)4 << 30;
    sp->max_held = 256;
    atomic_store(&sp->bytes, 0);
    atomic_store(&sp->held, 0);
    atomic_store(&sp->files, 0);
    atomic_store(&sp->spills, 0);
    pthread_mutex_init(&sp->mu, NULL);
    sp->left = NULL;
}

void spool_writer_init(spool_writer *w)
{
    w->fd = w->watch = -1;
    w->len = 0;
    w->full = 0;
    w->detached = 0;
}

/* An unlinked file in dir: O_TMPFILE, or a named one removed at once. */
static int temp_file(const char *dir)
{
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/cshttpd-proxy-XXXXXX", dir);
    if (n < 0 || (size_t)n >= sizeof path) return -ENAMETOOLONG;
    fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0) return -errno;
    unlink(path);
    return fd;
}

/* w's file and its watch: the shared lock on the description the
 * response's ranges are of lasts as long as any of them is open. */
static int open_file(spool_writer *w, const char *dir)
{
    int fd = temp_file(dir && *dir ? dir : "/tmp");
    if (fd < 0) return fd;
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    int watch = open(self, O_RDONLY | O_CLOEXEC);
    if (watch < 0 || flock(fd, LOCK_SH | LOCK_NB) < 0) {
        int e = -errno;
        if (watch >= 0) close(watch);
        close(fd);
        return e;
    }
    w->fd = fd;
    w->watch = watch;
    return 0;
}

static int write_at(int fd, const char *p, size_t n, off_t at)
{
    while (n > 0) {
        ssize_t k = pwrite(fd, p, n, at);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return -errno;
        p += k;
        n -= (size_t)k;
        at += k;
    }
    return 0;
}

int spool_write(proxy_spool *sp, spool_writer *w, const char *temp_dir, cshw_response *res,
                const void *data, size_t n)
{
    if (w->full) return 0;
    /* room in this answer's file and in all of them, taken before the
     * write so that answers at once never pass max_total together */
    int room = w->len + n <= sp->max_file;
    uint64_t total = atomic_load(&sp->bytes);
    while (room && (room = total + n <= sp->max_total) &&
           !atomic_compare_exchange_weak(&sp->bytes, &total, total + n)) {
    }
    if (!room) {
        w->full = 1;
        atomic_fetch_add(&sp->spills, 1);
        return 0;
    }
    int r = 0;
    if (w->fd < 0) {
        r = open_file(w, temp_dir);
        if (r == 0) atomic_fetch_add(&sp->files, 1);
    }
    if (r == 0) r = write_at(w->fd, data, n, (off_t)w->len);
    if (r < 0) {
        atomic_fetch_sub(&sp->bytes, n);
        w->full = 1;
        return r;
    }
    w->len += n;
    return cshw_response_write_file(res, w->fd, (off_t)(w->len - n), n) < 0 ? -EPIPE : 1;
}

void spool_end(proxy_spool *sp, spool_writer *w)
{
    if (w->fd < 0) return;
    close(w->fd); /* the response's ranges hold their own */
    w->fd = -1;
    spool_file *f = malloc(sizeof *f);
    if (!f) {
        /* cannot wait for its end: counted as gone now (its disk space
         * goes with the last range anyway) */
        close(w->watch);
        atomic_fetch_sub(&sp->bytes, w->len);
        w->watch = -1;
        return;
    }
    f->watch = w->watch;
    f->bytes = w->len;
    w->watch = -1;
    pthread_mutex_lock(&sp->mu);
    f->next = sp->left;
    sp->left = f;
    pthread_mutex_unlock(&sp->mu);
}

void spool_tick(proxy_spool *sp)
{
    spool_file *gone = NULL;
    pthread_mutex_lock(&sp->mu);
    for (spool_file **pp = &sp->left; *pp;) {
        spool_file *f = *pp;
        /* the shared lock went with the last range: nobody sends from it */
        if (flock(f->watch, LOCK_EX | LOCK_NB) == 0) {
            *pp = f->next;
            f->next = gone;
            gone = f;
        } else {
            pp = &f->next;
        }
    }
    pthread_mutex_unlock(&sp->mu);
    while (gone) {
        spool_file *f = gone;
        gone = f->next;
        close(f->watch);
        atomic_fetch_sub(&sp->bytes, f->bytes);
        free(f);
    }
}

void spool_free(proxy_spool *sp)
{
    pthread_mutex_lock(&sp->mu);
    spool_file *f = sp->left;
    sp->left = NULL;
    pthread_mutex_unlock(&sp->mu);
    while (f) {
        spool_file *n = f->next;
        close(f->watch);
        free(f);
        f = n;
    }
    pthread_mutex_destroy(&sp->mu);
}

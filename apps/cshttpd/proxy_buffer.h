/* The proxy's buffering of an origin's answer (nginx's proxy_buffering):
 * a body passed on in pieces is read as fast as the origin sends it and
 * written to a temporary file, and each piece goes to the client as a
 * range of that file (cshw_response_write_file), which the engine sends
 * from its loop at the client's pace. So the origin's connection goes back
 * to the pool when the origin is done, whatever the client reads.
 *
 * Bounds: a file holds at most max_file bytes (an exchange's), and all
 * files together at most max_total; past either, the rest of that answer
 * goes at the client's pace, from memory, and its origin connection stops
 * counting in the pool (cshs_call_detach), up to max_held such
 * connections at once, after which it keeps its place.
 *
 * A file lives until the engine has sent its last range: its bytes count
 * towards max_total until then. To learn when, the file is opened twice:
 * the description handed to the response (every range the engine queues
 * is a dup of it) holds a shared flock, and the spool keeps the other;
 * when the last dup is closed the lock goes, and the spool's tick, trying
 * an exclusive lock on its own description, sees it and lets the file go.
 *
 * Threads: spool_init before the server starts; the rest from any thread
 * at once (the list of files left is under mu). A writer is one
 * exchange's, used by its thread only. */
#ifndef CSHTTPD_PROXY_BUFFER_H
#define CSHTTPD_PROXY_BUFFER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <cshttp/web/response.h>

typedef struct spool_file spool_file;

typedef struct proxy_spool {
    int on;             /* buffering at all (default 1) */
    uint64_t max_file;  /* one answer's file (default 1 GiB, nginx's proxy_max_temp_file_size) */
    uint64_t max_total; /* all files at once (default 4 GiB) */
    unsigned max_held;  /* connections that left their pool's count at once (default 256) */
    _Atomic uint64_t bytes;  /* in files not let go yet */
    _Atomic unsigned held;   /* connections detached now */
    _Atomic uint64_t files;  /* files made (status page) */
    _Atomic uint64_t spills; /* answers that reached a bound (status page) */
    pthread_mutex_t mu;
    spool_file *left; /* files handed to responses, waiting for their end */
} proxy_spool;

/* One answer's file. */
typedef struct spool_writer {
    int fd;       /* the description the response's ranges are of (-1: none yet) */
    int watch;    /* the spool's own description of the same file */
    uint64_t len; /* bytes written */
    int full;     /* a bound was reached: the rest goes from memory */
    int detached; /* its connection left the pool's count (held) */
} spool_writer;

/* Defaults, and the lock. */
void spool_init(proxy_spool *sp);

/* A writer with no file yet. */
void spool_writer_init(spool_writer *w);

/* Writes data to w's file (made in temp_dir on the first call) and hands
 * it to res as a range: 1. 0 when it does not fit the bounds (w->full is
 * set, the spill counted: the caller writes it, and the rest, from
 * memory). < 0: the file could not be made or written (-errno; w->full
 * set: the caller goes on from memory), or res's error. */
int spool_write(proxy_spool *sp, spool_writer *w, const char *temp_dir, cshw_response *res,
                const void *data, size_t n);

/* The answer is over (or failed): w's file waits for the engine to send
 * its last range, its bytes counted until then. */
void spool_end(proxy_spool *sp, spool_writer *w);

/* Lets go of the files whose ranges were all sent (or dropped). From the
 * server's tick. */
void spool_tick(proxy_spool *sp);

/* At exit: every file closed. */
void spool_free(proxy_spool *sp);

#endif

/* The access and error logs (log.h). */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

int log_file_open(log_file *lf, const char *path, int std_fd, char *err, size_t errlen)
{
    lf->fd = -1;
    lf->owned = 0;
    lf->path[0] = '\0';
    if (strcmp(path, "-") == 0) {
        lf->fd = std_fd;
        return 0;
    }
    if (strlen(path) >= sizeof lf->path) {
        snprintf(err, errlen, "%s: path too long", path);
        return -ENAMETOOLONG;
    }
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    lf->fd = fd;
    lf->owned = 1;
    strcpy(lf->path, path);
    return 0;
}

int log_file_reopen(log_file *lf)
{
    if (lf->fd < 0 || !lf->owned) return 0;
    int fd = open(lf->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0) return -errno;
    /* dup2 closes the old file and puts the new one under lf->fd in one
     * step: a write running on another thread holds its own reference to
     * the old file and finishes there; the next one goes to the new file. */
    int r = dup2(fd, lf->fd) < 0 ? -errno : 0;
    if (r == 0) fcntl(lf->fd, F_SETFD, FD_CLOEXEC);
    close(fd);
    return r;
}

void log_file_close(log_file *lf)
{
    if (lf->fd >= 0 && lf->owned) close(lf->fd);
    lf->fd = -1;
}

void log_file_write(const log_file *lf, const char *line, size_t n)
{
    if (lf->fd < 0) return;
    while (n > 0) {
        ssize_t w = write(lf->fd, line, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        line += w;
        n -= (size_t)w;
    }
}

size_t log_escape(char *dst, size_t cap, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    if (cap == 0) return 0;
    if (!s || !*s) s = "-";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\' || c < 0x20 || c > 0x7e) {
            if (n + 4 >= cap) break;
            dst[n++] = '\\';
            dst[n++] = 'x';
            dst[n++] = hex[c >> 4];
            dst[n++] = hex[c & 15];
        } else {
            if (n + 1 >= cap) break;
            dst[n++] = (char)c;
        }
    }
    dst[n] = '\0';
    return n;
}

size_t log_escape_json(char *dst, size_t cap, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    if (cap == 0) return 0;
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            if (n + 2 >= cap) break;
            dst[n++] = '\\';
            dst[n++] = (char)c;
        } else if (c < 0x20 || c > 0x7e) {
            if (n + 6 >= cap) break;
            memcpy(dst + n, "\\u00", 4);
            dst[n + 4] = hex[c >> 4];
            dst[n + 5] = hex[c & 15];
            n += 6;
        } else {
            if (n + 1 >= cap) break;
            dst[n++] = (char)c;
        }
    }
    dst[n] = '\0';
    return n;
}

size_t access_log_format(char *buf, size_t cap, log_format f, const cshs_request_log *e,
                         int64_t duration_us)
{
    /* the body's bytes, as nginx's $body_bytes_sent (an engine older than
     * 0.3.3 does not say: the total then) */
    unsigned long long body = offsetof(cshs_request_log, body_bytes_out) < e->size
                                  ? (unsigned long long)e->body_bytes_out
                                  : (unsigned long long)e->bytes_out;
    /* an engine older than 0.4.7 names no protocol: HTTP/1 then */
    char h1[16];
    const char *proto = offsetof(cshs_request_log, protocol) < e->size && e->protocol
                            ? e->protocol
                            : (snprintf(h1, sizeof h1, "HTTP/1.%d", e->version_minor), h1);
    /* a field may grow 4x when escaped: each gets a bounded share */
    char method[64], target[2048], referer[1024], agent[1024], when[64];
    time_t t = (time_t)(e->time_unix_ms / 1000);
    struct tm tm;
    int n;
    localtime_r(&t, &tm);
    if (f == LOG_JSON) {
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S%z", &tm);
        log_escape_json(method, sizeof method, e->method);
        log_escape_json(target, sizeof target, e->target);
        log_escape_json(referer, sizeof referer, e->referer);
        log_escape_json(agent, sizeof agent, e->user_agent);
        n = snprintf(buf, cap,
                     "{\"time\":\"%s\",\"remote_addr\":\"%s\",\"method\":\"%s\",\"target\":\"%s\","
                     "\"protocol\":\"%s\",\"status\":%d,\"bytes_out\":%llu,"
                     "\"body_bytes\":%llu,"
                     "\"referer\":\"%s\",\"user_agent\":\"%s\",\"duration_ms\":%lld.%03lld,"
                     "\"bytes_in\":%llu}\n",
                     when, e->remote_addr ? e->remote_addr : "", method, target, proto, e->status,
                     (unsigned long long)e->bytes_out, body, referer, agent,
                     (long long)(duration_us / 1000), (long long)(duration_us % 1000),
                     (unsigned long long)e->bytes_in);
    } else {
        strftime(when, sizeof when, "%d/%b/%Y:%H:%M:%S %z", &tm);
        log_escape(method, sizeof method, e->method);
        log_escape(target, sizeof target, e->target);
        log_escape(referer, sizeof referer, e->referer);
        log_escape(agent, sizeof agent, e->user_agent);
        n = snprintf(buf, cap, "%s - - [%s] \"%s %s %s\" %d %llu \"%s\" \"%s\"\n",
                     e->remote_addr ? e->remote_addr : "-", when, method, target, proto, e->status,
                     body, referer, agent);
    }
    if (n < 0) return 0;
    if ((size_t)n >= cap) { /* cut: keep the line a line */
        buf[cap - 2] = '\n';
        return cap - 1;
    }
    return (size_t)n;
}

/* ---- the error log ---- */

static log_file error_log = {STDERR_FILENO, 0, ""};

int error_log_open(const char *path, char *err, size_t errlen)
{
    log_file lf;
    int r = log_file_open(&lf, path, STDERR_FILENO, err, errlen);
    if (r == 0) error_log = lf;
    return r;
}

int error_log_reopen(void)
{
    return log_file_reopen(&error_log);
}

void error_log_close(void)
{
    log_file_close(&error_log);
    error_log.fd = STDERR_FILENO;
}

void error_log_printf(log_level level, const char *fmt, ...)
{
    static const char *const names[] = {"error", "warn", "notice", "info"};
    char line[2048];
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    time_t t = tv.tv_sec;
    localtime_r(&t, &tm);
    size_t n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(line + n, sizeof line - n, ".%03ld", (long)(tv.tv_usec / 1000));
    n += strftime(line + n, sizeof line - n, "%z", &tm);
    n += (size_t)snprintf(line + n, sizeof line - n, " [%s] cshttpd: ", names[level]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    va_end(ap);
    if (m > 0) n += (size_t)m < sizeof line - n - 1 ? (size_t)m : sizeof line - n - 2;
    line[n++] = '\n';
    log_file_write(&error_log, line, n);
}

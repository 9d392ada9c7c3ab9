/* cshttpd's logs: the access log (combined or JSON lines, escaped) and the
 * error log (timestamped, with a level). Each line goes out in one write(2)
 * on an O_APPEND descriptor, so lines from many workers never interleave;
 * log_file_reopen swaps the file under the same descriptor with dup2, so a
 * line written across a reopen lands whole in the old file or the new one. */
#ifndef CSHTTPD_LOG_H
#define CSHTTPD_LOG_H

#include <stddef.h>
#include <stdint.h>

#include <cshttp/server.h>

typedef enum log_format { LOG_COMBINED, LOG_JSON } log_format;

typedef struct log_file {
    int fd;          /* -1: none */
    int owned;       /* a file of ours (not stdout or stderr) */
    char path[4096]; /* reopened from here */
} log_file;

/* Opens `path` for appending ("-": the standard stream std_fd). 0, or
 * -errno with "path: reason" in err. */
int log_file_open(log_file *lf, const char *path, int std_fd, char *err, size_t errlen);

/* Opens the path again and puts the new file under the same descriptor
 * (for logrotate: the old file was moved away). 0 for a standard stream or
 * no file, -errno when the path cannot be opened (the old file stays). */
int log_file_reopen(log_file *lf);

void log_file_close(log_file *lf);

/* One whole line (ending in '\n') in one write. */
void log_file_write(const log_file *lf, const char *line, size_t n);

/* nginx's escaping of a log field: '"', '\\', bytes below 0x20 and above
 * 0x7e as \xHH; NULL or "" gives "-". Writes at most cap-1 bytes and a NUL;
 * returns the length written (a value cut short ends at a whole escape). */
size_t log_escape(char *dst, size_t cap, const char *s);

/* JSON string contents: '"' and '\\' with a backslash, controls and bytes
 * above 0x7e as \u00HH (so the line is ASCII whatever the client sent). */
size_t log_escape_json(char *dst, size_t cap, const char *s);

/* One access-log line, '\n' included, in buf[cap]; its length.
 * duration_us: from the request's first byte to its response handed over
 * (JSON only, as duration_ms with three decimals). */
size_t access_log_format(char *buf, size_t cap, log_format f, const cshs_request_log *e,
                         int64_t duration_us);

/* The error log: where error_log_printf writes (default: stderr). */
typedef enum log_level { LOG_ERROR, LOG_WARN, LOG_NOTICE, LOG_INFO } log_level;
int error_log_open(const char *path, char *err, size_t errlen);
int error_log_reopen(void);
void error_log_close(void);
void error_log_printf(log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif

/* Statuses and the toolkit's own pages: reason phrases (RFC 9110 §15),
 * the Date value (IMF-fixdate, §5.6.7), the small HTML error page, and a
 * whole error response for a head that did not parse. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "context_impl.h"
#include "cshttp/web/error.h"
#include "cshttp/web/html.h"

typedef struct reason {
    short status;
    const char *text;
} reason;

/* RFC 9110 §15, plus registered codes in common use: 103 (RFC 8297),
 * 428, 429, 431 (RFC 6585), 451 (RFC 7725). Sorted by status. */
static const reason reasons[] = {
    {100, "Continue"},
    {101, "Switching Protocols"},
    {103, "Early Hints"},
    {200, "OK"},
    {201, "Created"},
    {202, "Accepted"},
    {203, "Non-Authoritative Information"},
    {204, "No Content"},
    {205, "Reset Content"},
    {206, "Partial Content"},
    {300, "Multiple Choices"},
    {301, "Moved Permanently"},
    {302, "Found"},
    {303, "See Other"},
    {304, "Not Modified"},
    {305, "Use Proxy"},
    {307, "Temporary Redirect"},
    {308, "Permanent Redirect"},
    {400, "Bad Request"},
    {401, "Unauthorized"},
    {402, "Payment Required"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {406, "Not Acceptable"},
    {407, "Proxy Authentication Required"},
    {408, "Request Timeout"},
    {409, "Conflict"},
    {410, "Gone"},
    {411, "Length Required"},
    {412, "Precondition Failed"},
    {413, "Content Too Large"},
    {414, "URI Too Long"},
    {415, "Unsupported Media Type"},
    {416, "Range Not Satisfiable"},
    {417, "Expectation Failed"},
    {421, "Misdirected Request"},
    {422, "Unprocessable Content"},
    {426, "Upgrade Required"},
    {428, "Precondition Required"},
    {429, "Too Many Requests"},
    {431, "Request Header Fields Too Large"},
    {451, "Unavailable For Legal Reasons"},
    {500, "Internal Server Error"},
    {501, "Not Implemented"},
    {502, "Bad Gateway"},
    {503, "Service Unavailable"},
    {504, "Gateway Timeout"},
    {505, "HTTP Version Not Supported"},
};

const char *cshw_response_status_reason(int status)
{
    size_t lo = 0, hi = sizeof reasons / sizeof reasons[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (reasons[mid].status == status) return reasons[mid].text;
        if (reasons[mid].status < status)
            lo = mid + 1;
        else
            hi = mid;
    }
    return "";
}

static void put2(char *p, int v)
{
    p[0] = (char)('0' + v / 10 % 10);
    p[1] = (char)('0' + v % 10);
}

void cshw__http_date(char out[30])
{
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    static _Thread_local time_t last = (time_t)-1;
    static _Thread_local char cached[30];
    time_t now = time(NULL);
    if (now != last) {
        struct tm tm;
        gmtime_r(&now, &tm);
        /* RFC 9110 §5.6.7, in English whatever the locale:
         * "Sun, 06 Nov 1994 08:49:37 GMT" */
        int year = tm.tm_year + 1900;
        memcpy(cached, "Sun, 00 Jan 0000 00:00:00 GMT", 30);
        memcpy(cached, days[tm.tm_wday % 7], 3);
        put2(cached + 5, tm.tm_mday);
        memcpy(cached + 8, months[tm.tm_mon % 12], 3);
        put2(cached + 12, year / 100 % 100);
        put2(cached + 14, year % 100);
        put2(cached + 17, tm.tm_hour);
        put2(cached + 20, tm.tm_min);
        put2(cached + 23, tm.tm_sec);
        last = now;
    }
    memcpy(out, cached, 30);
}

int cshw__error_page(cshw_buf *b, int status, const char *detail)
{
    char title[64];
    snprintf(title, sizeof title, "%d %s", status, cshw_response_status_reason(status));
    int r = cshw_buf_append_str(b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>");
    r |= cshw_html_encode_buf(b, title, strlen(title));
    r |= cshw_buf_append_str(b, "</title></head>\n<body><h1>");
    r |= cshw_html_encode_buf(b, title, strlen(title));
    r |= cshw_buf_append_str(b, "</h1>\n");
    if (detail && *detail) {
        r |= cshw_buf_append_str(b, "<p>");
        r |= cshw_html_encode_buf(b, detail, strlen(detail));
        r |= cshw_buf_append_str(b, "</p>\n");
    }
    r |= cshw_buf_append_str(b, "</body></html>\n");
    return r ? -ENOMEM : 0;
}

/* A whole error response without a context: for a head that did not
 * parse, a body that failed before the handler ran, or a connection
 * refused; Date (RFC 9110 §6.6.1), Content-Length, Connection: close; no
 * content for a HEAD request (RFC 9110 §9.3.2). The bytes written go to
 * *written, and of those the head's to *head (each when not NULL). */
int cshw__write_raw_error(const cshw_transport *t, const cshw_options *o, int status,
                          const char *detail, int head_only, uint64_t *written, uint64_t *head)
{
    cshw_buf page, b;
    cshw_buf_init(&page, NULL);
    cshw_buf_init(&b, NULL);
    char line[128], date[30];
    cshw__http_date(date);
    int r = cshw__error_page(&page, status, detail);
    int n = snprintf(line, sizeof line, "HTTP/1.1 %d %s\r\nDate: %s\r\n", status,
                     cshw_response_status_reason(status), date);
    r |= cshw_buf_append(&b, line, (size_t)n);
    if (o && o->server_header) {
        r |= cshw_buf_append_str(&b, "Server: ");
        r |= cshw_buf_append_str(&b, o->server_header);
        r |= cshw_buf_append_str(&b, "\r\n");
    }
    n = snprintf(line, sizeof line,
                 "Content-Type: text/html; charset=utf-8\r\nContent-Length: %zu\r\n"
                 "Connection: close\r\n\r\n",
                 page.len);
    r |= cshw_buf_append(&b, line, (size_t)n);
    size_t head_len = b.len;
    if (!head_only) r |= cshw_buf_append(&b, page.data, page.len);
    if (r == 0)
        r = t->ops->write(t->io, b.data, b.len);
    else
        r = -ENOMEM;
    if (written) *written = r == 0 ? b.len : 0;
    if (head) *head = r == 0 ? head_len : 0;
    if (r == 0 && t->ops->flush) r = t->ops->flush(t->io);
    cshw_buf_free(&page);
    cshw_buf_free(&b);
    return r;
}

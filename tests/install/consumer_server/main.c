/* An outside program on the installed engine: serve one request on an
 * ephemeral port of 127.0.0.1, print the body received, ask once more
 * through the installed client, print its status and body, stop. */
#define _DEFAULT_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cshttp/server.h>
#include <cshttp/web/response.h>

static void hello(cshw_context *ctx)
{
    cshw_response_puts(cshw_context_response(ctx), "hello, world");
}

int main(void)
{
    if (cshs_version() != CSHS_VERSION_HEX) return 1;
    cshs_options o;
    cshs_options_init(&o);
    o.port = 0;
    cshs_server *s = cshs_server_new(&o, hello, NULL);
    if (!s || cshs_server_start(s) < 0) return 2;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)cshs_server_port(s, 0));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) return 3;
    const char *req = "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if (write(fd, req, strlen(req)) < 0) return 4;
    char buf[4096];
    size_t n = 0;
    ssize_t r;
    while (n < sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0) n += (size_t)r;
    buf[n] = '\0';
    close(fd);
    const char *body = strstr(buf, "\r\n\r\n");
    printf("body=%s\n", body ? body + 4 : "(none)");

    cshs_client *cl = cshs_client_new(NULL);
    if (!cl) return 5;
    char origin[64];
    snprintf(origin, sizeof origin, "http://127.0.0.1:%u", cshs_server_port(s, 0));
    cshs_client_request rq;
    cshs_client_request_init(&rq);
    rq.origin = origin;
    cshs_call *call;
    int r2 = cshs_client_send(cl, &rq, &call);
    if (r2 < 0) {
        printf("client=%s\n", cshs_client_error_name(r2));
        return 6;
    }
    const char *cbody = NULL;
    size_t clen = 0;
    if (cshs_call_read_all(call, 4096, &cbody, &clen) < 0) return 7;
    printf("client=%d %.*s\n", cshs_call_status(call), (int)clen, cbody);
    cshs_call_free(call);
    cshs_client_free(cl);
    cshs_server_free(s);
    return 0;
}

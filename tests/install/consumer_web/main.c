/* An outside program on the installed libcshttp-web: one request through the
 * memory transport, its response printed. */
#include <stdio.h>
#include <string.h>

#include <cshttp/web/web.h>

static void hello(cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    const char *who = cshw_request_query_get(req, "who");
    cshw_response_printf(cshw_context_response(ctx), "hello, %s", who ? who : "nobody");
}

int main(void)
{
    static const char in[] = "GET /hello?who=world HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    cshw_memory *m = cshw_memory_new(in, sizeof in - 1, 0);
    if (!m) return 1;
    int served = cshw_memory_serve(m, NULL, hello);
    size_t n;
    const char *out = cshw_memory_output(m, &n);
    const char *body = strstr(out, "\r\n\r\n");
    printf("served=%d version=%s body=%s\n", served, cshw_version_string(), body ? body + 4 : "");
    cshw_memory_free(m);
    return served == 1 ? 0 : 1;
}

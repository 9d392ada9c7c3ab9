/* An outside program built against an installed libcshttp: parses one
 * request and prints what it found. Used by tests/install. */
#include <cshttp/cshttp.h>

#include <stdio.h>
#include <string.h>

int main(void)
{
    static const char req[] = "GET /hello?who=world HTTP/1.1\r\n"
                              "Host: example.com\r\n"
                              "User-Agent: consumer/1.0\r\n"
                              "\r\n";
    csh_header fields[16];
    csh_parser p;
    csh_parser_init(&p, CSH_REQUEST, fields, 16, NULL, 0);
    int rc = csh_parser_execute(&p, req, sizeof req - 1);
    if (rc != CSH_OK) {
        fprintf(stderr, "parse failed: %s\n", csh_error_name(rc));
        return 1;
    }
    if (csh_version() != CSH_VERSION_HEX) {
        fprintf(stderr, "runtime version %s, headers %s\n", csh_version_string(),
                CSH_VERSION_STRING);
        return 1;
    }
    const csh_message *m = &p.msg;
    printf("method=%s target=%.*s headers=%zu version=%s\n", csh_method_name(m->method),
           (int)m->target.len, csh_span_ptr(req, m->target), m->num_headers, csh_version_string());
    return 0;
}

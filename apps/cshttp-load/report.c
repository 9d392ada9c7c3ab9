#include "report.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

static double rate(const load_result *r)
{
    return r->duration_s > 0 ? (double)r->counts.requests / r->duration_s : 0;
}

static double ms(uint64_t ns)
{
    return (double)ns / 1e6;
}

static uint64_t non_2xx(const load_result *r)
{
    const uint64_t *s = r->counts.status;
    return s[0] + s[1] + s[3] + s[4] + s[5];
}

static unsigned level_threads(const load_options *o, unsigned connections)
{
    unsigned t = o->threads < connections ? o->threads : connections;
    return t ? t : 1;
}

void report_print_level(FILE *out, const load_report *rep, const load_result *r)
{
    const load_options *o = rep->opt;
    const load_counts *c = &r->counts;
    unsigned t = level_threads(o, r->connections);
    fprintf(out, "target     %s\n", o->url);
    fprintf(out, "load       %u connection%s, %u thread%s, %s, pipeline %u, ", r->connections,
            r->connections == 1 ? "" : "s", t, t == 1 ? "" : "s",
            o->keepalive ? "keep-alive" : "no keep-alive", o->keepalive ? o->pipeline : 1);
    if (o->requests)
        fprintf(out, "%llu requests after %.2f s warm-up\n", o->requests, o->warmup_s);
    else
        fprintf(out, "%.2f s after %.2f s warm-up\n", o->duration_s, o->warmup_s);
    fprintf(out, "requests   %llu in %.2f s = %.1f req/s, %.2f MB/s read\n",
            (unsigned long long)c->requests, r->duration_s, rate(r),
            r->duration_s > 0 ? (double)c->read_bytes / r->duration_s / 1e6 : 0);
    const load_histogram *h = &r->hist;
    fprintf(out, "latency    p50 %.3f ms  p90 %.3f ms  p99 %.3f ms  p99.9 %.3f ms  max %.3f ms\n",
            ms(load_histogram_quantile(h, 0.50)), ms(load_histogram_quantile(h, 0.90)),
            ms(load_histogram_quantile(h, 0.99)), ms(load_histogram_quantile(h, 0.999)),
            ms(h->max_ns));
    fprintf(out, "status     2xx %llu  3xx %llu  4xx %llu  5xx %llu\n",
            (unsigned long long)c->status[2], (unsigned long long)c->status[3],
            (unsigned long long)c->status[4], (unsigned long long)c->status[5]);
    fprintf(out,
            "errors     connect %llu  timeout %llu  reset %llu  bad-response %llu  non-2xx %llu\n",
            (unsigned long long)c->err_connect, (unsigned long long)c->err_timeout,
            (unsigned long long)c->err_reset, (unsigned long long)c->err_bad_response,
            (unsigned long long)non_2xx(r));
    if (r->first_error[0]) fprintf(out, "first      %s\n", r->first_error);
    if (r->stalled)
        fprintf(out, "stopped    nothing answered for longer than --timeout (%.3g s)\n",
                o->timeout_s);
    if (r->interrupted) fprintf(out, "stopped    interrupted\n");
    if (r->connections && !c->requests && !r->stalled && !r->interrupted)
        fprintf(out, "stopped    no response completed in the measured window\n");
    fputc('\n', out);
}

void report_print_end(FILE *out, const load_report *rep)
{
    const load_options *o = rep->opt;
    if (o->idle) {
        fprintf(out, "idle       %u held, %u answered\n", rep->idle_held, rep->idle_answered);
        if (rep->idle_error[0]) fprintf(out, "idle error %s\n", rep->idle_error);
    }
    if (rep->num_results > 1) {
        fprintf(out, "%11s %12s %10s %10s %10s %10s %8s\n", "connections", "req/s", "p50 ms",
                "p99 ms", "p99.9 ms", "max ms", "errors");
        const load_result *peak = NULL;
        for (size_t i = 0; i < rep->num_results; i++) {
            const load_result *r = &rep->results[i];
            const load_counts *c = &r->counts;
            fprintf(out, "%11u %12.1f %10.3f %10.3f %10.3f %10.3f %8llu\n", r->connections, rate(r),
                    ms(load_histogram_quantile(&r->hist, 0.5)),
                    ms(load_histogram_quantile(&r->hist, 0.99)),
                    ms(load_histogram_quantile(&r->hist, 0.999)), ms(r->hist.max_ns),
                    (unsigned long long)(c->err_connect + c->err_timeout + c->err_reset +
                                         c->err_bad_response + non_2xx(r)));
            if (!peak || rate(r) > rate(peak)) peak = r;
        }
        fprintf(out, "peak       %.1f req/s at %u connections\n", rate(peak), peak->connections);
    }
}

int report_has_errors(const load_report *rep)
{
    for (size_t i = 0; i < rep->num_results; i++) {
        const load_result *r = &rep->results[i];
        const load_counts *c = &r->counts;
        /* a level that measured nothing is no result either */
        if (c->err_connect || c->err_timeout || c->err_reset || c->err_bad_response || non_2xx(r) ||
            r->stalled || (r->connections && !c->requests))
            return 1;
    }
    return rep->opt->idle && rep->idle_answered < rep->opt->idle;
}

/* A CSV field: quoted when it holds a comma, quote or line break (RFC 4180). */
static void csv_field(FILE *out, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"') fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

void report_write_csv(FILE *out, const load_report *rep)
{
    const load_options *o = rep->opt;
    fputs("label,connections,threads,keepalive,pipeline,duration_s,requests,rps,"
          "read_bytes_per_s,p50_ms,p90_ms,p99_ms,p999_ms,max_ms,status_2xx,status_3xx,"
          "status_4xx,status_5xx,err_connect,err_timeout,err_reset,err_bad_response,non_2xx,"
          "idle_held,idle_answered\n",
          out);
    for (size_t i = 0; i < rep->num_results; i++) {
        const load_result *r = &rep->results[i];
        const load_counts *c = &r->counts;
        const load_histogram *h = &r->hist;
        csv_field(out, o->label);
        fprintf(out,
                ",%u,%u,%d,%u,%.3f,%llu,%.1f,%.0f,%.3f,%.3f,%.3f,%.3f,%.3f,%llu,%llu,%llu,%llu,"
                "%llu,%llu,%llu,%llu,%llu,%u,%u\n",
                r->connections, level_threads(o, r->connections), o->keepalive ? 1 : 0,
                o->keepalive ? o->pipeline : 1, r->duration_s, (unsigned long long)c->requests,
                rate(r), r->duration_s > 0 ? (double)c->read_bytes / r->duration_s : 0,
                ms(load_histogram_quantile(h, 0.5)), ms(load_histogram_quantile(h, 0.9)),
                ms(load_histogram_quantile(h, 0.99)), ms(load_histogram_quantile(h, 0.999)),
                ms(h->max_ns), (unsigned long long)c->status[2], (unsigned long long)c->status[3],
                (unsigned long long)c->status[4], (unsigned long long)c->status[5],
                (unsigned long long)c->err_connect, (unsigned long long)c->err_timeout,
                (unsigned long long)c->err_reset, (unsigned long long)c->err_bad_response,
                (unsigned long long)non_2xx(r), o->idle ? rep->idle_held : 0,
                o->idle ? rep->idle_answered : 0);
    }
}

/* The first "model name" of /proc/cpuinfo, or "unknown CPU". */
static void cpu_model(char *buf, size_t len)
{
    snprintf(buf, len, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10)) continue;
        char *colon = strchr(line, ':');
        if (!colon) continue;
        colon++;
        while (*colon == ' ') colon++;
        colon[strcspn(colon, "\n")] = 0;
        snprintf(buf, len, "%s", colon);
        break;
    }
    fclose(f);
}

static double mem_gib(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (double)pages * (double)size / (1024.0 * 1024 * 1024) : 0;
}

/* Markdown: `|` in a table cell and backticks in code would break it. */
static void md_text(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '|' || *s == '`' || *s == '*' || *s == '_' || *s == '<') fputc('\\', out);
        fputc(*s, out);
    }
}

void report_write_markdown(FILE *out, const load_report *rep)
{
    const load_options *o = rep->opt;
    char cpu[160], when[64];
    struct utsname u;
    cpu_model(cpu, sizeof cpu);
    struct tm tm;
    gmtime_r(&rep->started, &tm);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    fputs("# cshttp-load: ", out);
    md_text(out, o->label);
    fputs("\n\n", out);
    fprintf(out, "- **Time**: %s\n", when);
    fputs("- **Command**: `` ", out);
    for (int i = 0; i < rep->argc; i++) {
        const char *a = rep->argv[i];
        bool quote = strpbrk(a, " \t'\"$&|;<>()*?`\\") || !*a;
        if (i) fputc(' ', out);
        if (!quote) {
            fputs(a, out);
            continue;
        }
        fputc('\'', out);
        for (; *a; a++) {
            if (*a == '\'')
                fputs("'\\''", out);
            else if (*a == '`')
                fputs("'\"`\"'", out);
            else
                fputc(*a, out);
        }
        fputc('\'', out);
    }
    fputs(" ``\n", out);
    fputs("- **Target**: ", out);
    md_text(out, o->url);
    fprintf(out, " (%s)\n", rep->plan ? rep->plan->addr_text : "?");
    fprintf(out, "- **Machine**: %s, %ld cores, %.1f GiB memory", cpu,
            sysconf(_SC_NPROCESSORS_ONLN), mem_gib());
    if (uname(&u) == 0) fprintf(out, ", %s %s %s", u.sysname, u.release, u.machine);
    fputs("\n", out);
    fprintf(out, "- **Load**: %s, pipeline %u, up to %u thread%s, ",
            o->keepalive ? "keep-alive" : "a new connection per request",
            o->keepalive ? o->pipeline : 1, o->threads, o->threads == 1 ? "" : "s");
    if (o->requests)
        fprintf(out, "%llu requests per level", o->requests);
    else
        fprintf(out, "%.2f s per level", o->duration_s);
    fprintf(out, " after %.2f s of warm-up, timeout %.3g s; method %s, %zu request bytes\n",
            o->warmup_s, o->timeout_s, o->method, rep->plan ? rep->plan->request_len : 0);
    fputs("\n| connections | requests | req/s | MB/s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms"
          " | 2xx | non-2xx | connect | timeout | reset | bad response |\n"
          "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n",
          out);
    const load_result *peak = NULL;
    for (size_t i = 0; i < rep->num_results; i++) {
        const load_result *r = &rep->results[i];
        const load_counts *c = &r->counts;
        const load_histogram *h = &r->hist;
        fprintf(out,
                "| %u | %llu | %.1f | %.2f | %.3f | %.3f | %.3f | %.3f | %.3f | %llu | %llu | %llu "
                "| %llu | %llu | %llu |\n",
                r->connections, (unsigned long long)c->requests, rate(r),
                r->duration_s > 0 ? (double)c->read_bytes / r->duration_s / 1e6 : 0,
                ms(load_histogram_quantile(h, 0.5)), ms(load_histogram_quantile(h, 0.9)),
                ms(load_histogram_quantile(h, 0.99)), ms(load_histogram_quantile(h, 0.999)),
                ms(h->max_ns), (unsigned long long)c->status[2], (unsigned long long)non_2xx(r),
                (unsigned long long)c->err_connect, (unsigned long long)c->err_timeout,
                (unsigned long long)c->err_reset, (unsigned long long)c->err_bad_response);
        if (!peak || rate(r) > rate(peak)) peak = r;
    }
    if (rep->num_results > 1)
        fprintf(out, "\nPeak: %.1f req/s at %u connections.\n", rate(peak), peak->connections);
    for (size_t i = 0; i < rep->num_results; i++) {
        const load_result *r = &rep->results[i];
        if (r->first_error[0]) {
            fprintf(out, "\nFirst error at %u connections: ", r->connections);
            md_text(out, r->first_error);
            fputs("\n", out);
        }
        if (r->stalled)
            fprintf(out,
                    "\nAt %u connections the run stopped: nothing answered for longer "
                    "than the timeout.\n",
                    r->connections);
        else if (r->connections && !r->counts.requests)
            fprintf(out, "\nAt %u connections no response completed in the measured window.\n",
                    r->connections);
    }
    if (o->idle) {
        fprintf(out,
                "\nIdle connections: %u opened, %u held (answered their first request), "
                "%u answered a request after the load.\n",
                o->idle, rep->idle_held, rep->idle_answered);
    }
    fputs("\nLatency: from the request's first byte written (without keep-alive: from the "
          "connect) to its response's last byte, in a log-bucket histogram (within 1.6%).\n",
          out);
}

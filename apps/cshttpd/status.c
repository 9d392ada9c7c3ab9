/* The status page: HTML with charts drawn by an inline script from the
 * JSON (no asset from outside the page), and the JSON itself. Answered only
 * to the peers the ACL allows (403 otherwise). */
#include "app.h"
#include "proxy.h"
#include "proxy_buffer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cshttp/web/arena.h>
#include <cshttp/web/buf.h>
#include <cshttp/web/context.h>
#include <cshttp/web/json.h>
#include <cshttp/web/request.h>
#include <cshttp/web/response.h>
#include <cshttp/web/router.h>

/* ---- the ACL ---- */

static int parse_cidr(acl_entry *e, const char *s, size_t len)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf) return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *slash = strchr(buf, '/');
    long bits = -1;
    if (slash) {
        char *end;
        *slash = '\0';
        if (!slash[1]) return -1;
        bits = strtol(slash + 1, &end, 10);
        if (*end || bits < 0) return -1;
    }
    memset(e, 0, sizeof *e);
    if (inet_pton(AF_INET, buf, e->addr) == 1) {
        e->family = 4;
        if (bits > 32) return -1;
        e->bits = bits < 0 ? 32 : (unsigned)bits;
    } else if (inet_pton(AF_INET6, buf, e->addr) == 1) {
        e->family = 6;
        if (bits > 128) return -1;
        e->bits = bits < 0 ? 128 : (unsigned)bits;
    } else {
        return -1;
    }
    return 0;
}

int acl_parse(acl *a, const char *list, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    const char *p = list;
    while (*p) {
        size_t len = strcspn(p, ",");
        const char *item = p;
        while (len && (*item == ' ' || *item == '\t')) item++, len--;
        while (len && (item[len - 1] == ' ' || item[len - 1] == '\t')) len--;
        if (len == 4 && memcmp(item, "unix", 4) == 0) {
            a->unix_peers = 1;
        } else if (a->n == ACL_MAX) {
            snprintf(err, errlen, "status_allow: more than %d entries", ACL_MAX);
            return -1;
        } else if (parse_cidr(&a->e[a->n], item, len) < 0) {
            snprintf(err, errlen, "status_allow: '%.*s' is not an IPv4 or IPv6 CIDR",
                     (int)(len > 64 ? 64 : len), item);
            return -1;
        } else {
            a->n++;
        }
        p += strcspn(p, ",");
        if (*p == ',') p++;
    }
    if (a->n == 0 && !a->unix_peers) {
        snprintf(err, errlen, "status_allow: empty list");
        return -1;
    }
    return 0;
}

void acl_loopback(acl *a)
{
    char err[64];
    acl_parse(a, "127.0.0.0/8,::1/128,unix", err, sizeof err);
}

static int prefix_match(const unsigned char *a, const unsigned char *net, unsigned bits)
{
    unsigned full = bits / 8, rest = bits % 8;
    if (memcmp(a, net, full) != 0) return 0;
    if (!rest) return 1;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return (a[full] & mask) == (net[full] & mask);
}

int acl_allows(const acl *a, const char *remote_addr)
{
    if (!remote_addr) return 0;
    if (strcmp(remote_addr, "unix") == 0) return a->unix_peers;
    unsigned char v4[4], v6[16];
    int is4 = inet_pton(AF_INET, remote_addr, v4) == 1;
    int is6 = !is4 && inet_pton(AF_INET6, remote_addr, v6) == 1;
    if (!is4 && !is6) return 0;
    /* an IPv4 peer on a dual-stack socket: ::ffff:a.b.c.d */
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (is6 && memcmp(v6, mapped, 12) == 0) {
        memcpy(v4, v6 + 12, 4);
        is4 = 1;
    }
    for (size_t i = 0; i < a->n; i++) {
        const acl_entry *e = &a->e[i];
        if (e->family == 4 && is4 && prefix_match(v4, e->addr, e->bits)) return 1;
        if (e->family == 6 && is6 && prefix_match(v6, e->addr, e->bits)) return 1;
    }
    return 0;
}

/* ---- the page ---- */

#define COUNTERS(X)                                                                                \
    X(connections_open)                                                                            \
    X(connections_idle)                                                                            \
    X(connections_active)                                                                          \
    X(connections_total)                                                                           \
    X(requests)                                                                                    \
    X(bytes_in)                                                                                    \
    X(bytes_out)                                                                                   \
    X(idle_memory)                                                                                 \
    X(workers_busy)                                                                                \
    X(workers_total)                                                                               \
    X(workers_parked)                                                                              \
    X(err_parse)                                                                                   \
    X(err_rejected)                                                                                \
    X(err_head_timeout)                                                                            \
    X(err_idle_timeout)                                                                            \
    X(err_body_timeout)                                                                            \
    X(err_send_timeout)                                                                            \
    X(err_io)                                                                                      \
    X(err_tls)                                                                                     \
    X(tls_handshakes)                                                                              \
    X(loops)                                                                                       \
    X(handovers)                                                                                   \
    X(offloaded)                                                                                   \
    X(deferred)                                                                                    \
    X(handlers_waiting)                                                                            \
    X(handlers_declined)                                                                           \
    X(request_temp_bytes)                                                                          \
    X(request_temp_refused)                                                                        \
    X(upgrades)                                                                                    \
    X(tunnels)                                                                                     \
    X(h2_connections)                                                                              \
    X(h2_connections_total)                                                                        \
    X(h2_streams)                                                                                  \
    X(h2_refused)

#define POOL_FIELDS(X)                                                                             \
    X(open)                                                                                        \
    X(idle)                                                                                        \
    X(opening)                                                                                     \
    X(waiters)                                                                                     \
    X(requests)                                                                                    \
    X(opens)                                                                                       \
    X(failures)                                                                                    \
    X(retries)                                                                                     \
    X(acquire_timeouts)                                                                            \
    X(backoff_ms)                                                                                  \
    X(acquire_wait_p50_us)                                                                         \
    X(acquire_wait_p99_us)                                                                         \
    X(looks)                                                                                       \
    X(detached)

/* "proxy": the client's pools, one object per origin (an empty array
 * with proxy routes but no pool yet; absent without --proxy). */
static void pools_json(cshw_json *j, cshw_arena *a, cshs_client *client)
{
    size_t cap = 16, n;
    cshs_client_pool_stats *ps = NULL;
    for (;;) {
        ps = cshw_arena_alloc(a, sizeof *ps * cap);
        if (!ps) return;
        ssize_t r = cshs_client_stats(client, ps, cap);
        if (r < 0) return;
        n = (size_t)r;
        if (n <= cap) break;
        cap = n + 8; /* pools made since: try again with room */
    }
    cshw_json_key(j, "proxy");
    cshw_json_array_begin(j);
    for (size_t i = 0; i < n; i++) {
        cshw_json_object_begin(j);
        cshw_json_key(j, "origin");
        cshw_json_string(j, ps[i].origin);
#define X(f)                                                                                       \
    cshw_json_key(j, #f);                                                                          \
    cshw_json_uint(j, ps[i].f);
        POOL_FIELDS(X)
#undef X
        cshw_json_object_end(j);
    }
    cshw_json_array_end(j);
}

/* "proxy_origins": each prefix's origins, their requests in flight and
 * counters, and how long each is still left out (proxy.h). */
static void origins_json(cshw_json *j, const proxy *p)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    cshw_json_key(j, "proxy_origins");
    cshw_json_array_begin(j);
    for (size_t i = 0; i < p->n; i++)
        for (unsigned k = 0; k < p->routes[i].norigins; k++) {
            const proxy_origin *o = &p->routes[i].origins[k];
            int64_t down = atomic_load(&o->down_until_ms) - now;
            cshw_json_object_begin(j);
            cshw_json_key(j, "prefix");
            cshw_json_string(j, p->routes[i].prefix);
            cshw_json_key(j, "origin");
            cshw_json_string(j, o->url);
            cshw_json_key(j, "active");
            cshw_json_uint(j, atomic_load(&o->active));
            cshw_json_key(j, "requests");
            cshw_json_uint(j, atomic_load(&o->requests));
            cshw_json_key(j, "failures");
            cshw_json_uint(j, atomic_load(&o->failures));
            cshw_json_key(j, "retried");
            cshw_json_uint(j, atomic_load(&o->retried));
            cshw_json_key(j, "down_for_ms");
            cshw_json_uint(j, down > 0 ? (uint64_t)down : 0);
            cshw_json_object_end(j);
        }
    cshw_json_array_end(j);
}

/* "proxy_buffering": the answers' temporary files (proxy_buffer.h). */
static void spool_json(cshw_json *j, proxy_spool *sp)
{
    cshw_json_key(j, "proxy_buffering");
    cshw_json_object_begin(j);
    cshw_json_key(j, "on");
    cshw_json_bool(j, sp->on);
    cshw_json_key(j, "temp_bytes");
    cshw_json_uint(j, atomic_load(&sp->bytes));
    cshw_json_key(j, "temp_max");
    cshw_json_uint(j, sp->max_total);
    cshw_json_key(j, "files");
    cshw_json_uint(j, atomic_load(&sp->files));
    cshw_json_key(j, "spills");
    cshw_json_uint(j, atomic_load(&sp->spills));
    cshw_json_key(j, "held");
    cshw_json_uint(j, atomic_load(&sp->held));
    cshw_json_object_end(j);
}

static cshttpd_app *allowed(cshw_context *ctx)
{
    cshttpd_app *app = cshw_context_app_data(ctx);
    cshw_request *req = cshw_context_request(ctx);
    if (!app || !app->stats || !acl_allows(&app->status_allow, cshw_request_remote_addr(req))) {
        cshw_response_send_error(cshw_context_response(ctx), 403);
        return NULL;
    }
    return app;
}

/* The status as JSON into b (its memory from a): 0, or -ENOMEM. */
static int status_build(cshttpd_app *app, cshw_arena *a, cshw_buf *b)
{
    cshs_counters c;
    cshs_server_counters(app->server, &c);
    stats_sample *s = cshw_arena_alloc(a, sizeof *s * STATS_SAMPLES);
    if (!s) return -ENOMEM;
    size_t ns = stats_series(app->stats, s, STATS_SAMPLES);
    stats_route routes[10];
    size_t nr = stats_routes(app->stats, routes, 10);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t now_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;

    cshw_json j;
    cshw_json_init_buf(&j, b);
    cshw_json_object_begin(&j);
#define X(f)                                                                                       \
    cshw_json_key(&j, #f);                                                                         \
    cshw_json_uint(&j, c.f);
    COUNTERS(X)
#undef X
    cshw_json_key(&j, "loop_connections"); /* each loop's, in its order */
    cshw_json_array_begin(&j);
    for (unsigned i = 0; i < c.loops; i++)
        cshw_json_uint(&j, cshs_server_loop_connections(app->server, i));
    cshw_json_array_end(&j);
    cshw_json_key(&j, "idle_connection_bytes");
    cshw_json_uint(&j, cshs_idle_connection_bytes());
    cshw_json_key(&j, "version");
    cshw_json_string(&j, CSHS_VERSION_STRING);
    cshw_json_key(&j, "uptime_s");
    cshw_json_uint(&j, (uint64_t)((now_ms - stats_started_ms(app->stats)) / 1000));
    cshw_json_key(&j, "workers_min");
    cshw_json_uint(&j, app->workers_min);
    cshw_json_key(&j, "workers_max");
    cshw_json_uint(&j, app->workers_max);
    cshw_json_key(&j, "routes");
    cshw_json_array_begin(&j);
    for (size_t i = 0; i < nr; i++) {
        cshw_json_object_begin(&j);
        cshw_json_key(&j, "path");
        cshw_json_string(&j, routes[i].path);
        cshw_json_key(&j, "requests");
        cshw_json_uint(&j, routes[i].requests);
        cshw_json_object_end(&j);
    }
    cshw_json_array_end(&j);
    if (app->proxy_client) pools_json(&j, a, app->proxy_client);
    if (app->proxy) origins_json(&j, app->proxy);
    if (app->proxy && app->proxy->spool) spool_json(&j, app->proxy->spool);
    /* the time series, one array per figure, oldest first */
    cshw_json_key(&j, "series");
    cshw_json_object_begin(&j);
    cshw_json_key(&j, "interval_s");
    cshw_json_uint(&j, 1);
    cshw_json_key(&j, "t_ms");
    cshw_json_array_begin(&j);
    for (size_t i = 0; i < ns; i++) cshw_json_int(&j, s[i].t_ms);
    cshw_json_array_end(&j);
#define SERIES(name, expr)                                                                         \
    cshw_json_key(&j, name);                                                                       \
    cshw_json_array_begin(&j);                                                                     \
    for (size_t i = 0; i < ns; i++) cshw_json_double(&j, (double)(expr));                          \
    cshw_json_array_end(&j);
    SERIES("rps", s[i].rps)
    SERIES("p50_ms", s[i].p50_ms)
    SERIES("p99_ms", s[i].p99_ms)
    SERIES("open", s[i].open)
    SERIES("idle", s[i].idle)
    SERIES("active", s[i].active)
#undef SERIES
    cshw_json_object_end(&j);
    cshw_json_object_end(&j);
    cshw_buf_append_byte(b, '\n');
    return b->data ? 0 : -ENOMEM;
}

static void status_json(cshw_context *ctx)
{
    cshttpd_app *app = allowed(ctx);
    if (!app) return;
    cshw_buf b;
    cshw_buf_init(&b, cshw_context_arena(ctx));
    if (status_build(app, cshw_context_arena(ctx), &b) < 0) {
        cshw_response_send_error(cshw_context_response(ctx), 500);
        return;
    }
    cshw_response *res = cshw_context_response(ctx);
    cshw_response_set_header(res, "Cache-Control", "no-store");
    cshw_response_set_content_type(res, "application/json", NULL);
    cshw_response_write(res, b.data ? b.data : "", b.len);
    cshw_buf_free(&b);
}

/* The page: its script opens the WebSocket beside it (PATH.ws), which
 * pushes the JSON every second, or, when that fails or closes, fetches
 * the JSON (PATH.json) every 2 s; each series is drawn as an SVG
 * polyline. body's data-feed says which ("socket" or "poll"). Everything is in the page: no asset,
 * no CDN; the Content-Security-Policy forbids loading any. */
static const char page[] =
    "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    "<title>cshttpd status</title>\n<link rel=\"icon\" href=\"data:,\">\n<style>\n"
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em auto;max-width:64em;color:#222;"
    "padding:0 1em}\n"
    "h1{font-size:1.4em;margin:0 0 .2em}#meta{color:#555;margin:0 0 1em}\n"
    ".grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(20em,1fr));gap:1em}\n"
    ".card{border:1px solid #ddd;border-radius:6px;padding:.6em .8em}\n"
    ".card h2{font-size:1em;margin:0 0 .3em;display:flex;justify-content:space-between}\n"
    ".now{font-variant-numeric:tabular-nums;color:#333}\n"
    "svg{width:100%;height:120px;display:block}\n"
    "svg .grid{stroke:#eee}svg text{font-size:10px;fill:#888}\n"
    "polyline{fill:none;stroke-width:1.5}\n"
    ".k{display:inline-block;width:.8em;height:.8em;border-radius:2px;margin:0 .2em 0 .6em}\n"
    "table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.15em .4em;"
    "border-bottom:1px solid #eee}td.n{text-align:right;font-variant-numeric:tabular-nums}\n"
    "#err{color:#b00}\n"
    "</style></head><body>\n"
    "<h1>cshttpd status</h1>\n<p id=\"meta\">loading&hellip;</p><p id=\"err\"></p>\n"
    "<div class=\"grid\">\n"
    "<div class=\"card\"><h2>Requests per second <span class=\"now\" id=\"now-rps\"></span></h2>"
    "<svg id=\"chart-rps\" viewBox=\"0 0 300 120\" preserveAspectRatio=\"none\"></svg></div>\n"
    "<div class=\"card\"><h2>Latency (ms) <span class=\"now\" id=\"now-lat\"></span></h2>"
    "<svg id=\"chart-lat\" viewBox=\"0 0 300 120\" preserveAspectRatio=\"none\"></svg>"
    "<div><span class=\"k\" style=\"background:#2a7\"></span>p50"
    "<span class=\"k\" style=\"background:#d52\"></span>p99</div></div>\n"
    "<div class=\"card\"><h2>Connections <span class=\"now\" id=\"now-conn\"></span></h2>"
    "<svg id=\"chart-conn\" viewBox=\"0 0 300 120\" preserveAspectRatio=\"none\"></svg>"
    "<div><span class=\"k\" style=\"background:#36c\"></span>open"
    "<span class=\"k\" style=\"background:#999\"></span>idle"
    "<span class=\"k\" style=\"background:#e90\"></span>active</div></div>\n"
    "<div class=\"card\"><h2>Busiest paths</h2><table id=\"routes\"></table></div>\n"
    "</div>\n<div id=\"pools\" hidden><h2 style=\"font-size:1em\">Proxy pools</h2>"
    "<table id=\"pool\"></table>\n<h2 style=\"font-size:1em\">Proxy origins</h2>"
    "<table id=\"origins\"></table></div>\n"
    "<h2 style=\"font-size:1em\">Counters</h2><table id=\"counters\"></table>\n"
    "<p>The last 5 minutes, one sample a second. <a id=\"json\" href=\"\">JSON</a></p>\n"
    "<script>\n"
    "'use strict';\n"
    "const SVGNS='http://www.w3.org/2000/svg';\n"
    "const src=location.pathname+'?format=json';\n"
    "document.getElementById('json').href=src;\n"
    "function fmt(v){return v>=100?Math.round(v).toString():(Math.round(v*10)/10).toString();}\n"
    "function draw(id,t,lines){\n"
    "  const svg=document.getElementById(id);\n"
    "  while(svg.firstChild)svg.removeChild(svg.firstChild);\n"
    "  let max=1;for(const l of lines)for(const v of l.v)if(v>max)max=v;\n"
    "  for(const f of [0.25,0.5,0.75]){const g=document.createElementNS(SVGNS,'line');\n"
    "    g.setAttribute('class','grid');g.setAttribute('x1',0);g.setAttribute('x2',300);\n"
    "    g.setAttribute('y1',120*f);g.setAttribute('y2',120*f);svg.appendChild(g);}\n"
    "  const lab=document.createElementNS(SVGNS,'text');lab.setAttribute('x',2);\n"
    "  lab.setAttribute('y',10);lab.textContent=fmt(max);svg.appendChild(lab);\n"
    "  for(const [x,a,t] of [[2,'start','5 min ago'],[298,'end','now']]){\n"
    "    const e=document.createElementNS(SVGNS,'text');e.setAttribute('x',x);\n"
    "    e.setAttribute('y',118);e.setAttribute('text-anchor',a);e.textContent=t;\n"
    "    svg.appendChild(e);}\n"
    "  const now=Date.now(),span=300000;\n"
    "  for(const l of lines){\n"
    "    const pts=[];\n"
    "    for(let i=0;i<l.v.length;i++){\n"
    "      const x=300-(now-t[i])*300/span, y=118-l.v[i]*110/max;\n"
    "      pts.push(Math.max(0,x).toFixed(1)+','+y.toFixed(1));}\n"
    "    const p=document.createElementNS(SVGNS,'polyline');\n"
    "    p.setAttribute('points',pts.join(' '));p.setAttribute('stroke',l.c);\n"
    "    p.setAttribute('data-points',String(pts.length));svg.appendChild(p);}\n"
    "}\n"
    "function row(tb,k,v,cls){const tr=document.createElement('tr');\n"
    "  const a=document.createElement('td');a.textContent=k;\n"
    "  const b=document.createElement('td');b.textContent=v;b.className='n';\n"
    "  tr.appendChild(a);tr.appendChild(b);tb.appendChild(tr);}\n"
    "function last(a){return a.length?a[a.length-1]:0;}\n"
    "function show(d){\n"
    "  const s=d.series,t=s.t_ms;\n"
    "  const up=d.uptime_s,h=Math.floor(up/3600),m=Math.floor(up%3600/60);\n"
    "  document.getElementById('meta').textContent='version '+d.version+' \\u00b7 up '+\n"
    "    (h?h+' h ':'')+m+' min '+(up%60)+' s \\u00b7 workers '+d.workers_busy+' busy of '+\n"
    "    d.workers_total+' ('+d.workers_parked+' parked; '+d.workers_min+'..'+d.workers_max+')';\n"
    "  draw('chart-rps',t,[{v:s.rps,c:'#36c'}]);\n"
    "  draw('chart-lat',t,[{v:s.p50_ms,c:'#2a7'},{v:s.p99_ms,c:'#d52'}]);\n"
    "  draw('chart-conn',t,[{v:s.open,c:'#36c'},{v:s.idle,c:'#999'},{v:s.active,c:'#e90'}]);\n"
    "  document.getElementById('now-rps').textContent=fmt(last(s.rps));\n"
    "  document.getElementById('now-lat').textContent='p50 '+fmt(last(s.p50_ms))+' \\u00b7 p99 '+\n"
    "    fmt(last(s.p99_ms));\n"
    "  document.getElementById('now-conn').textContent=last(s.open)+' open';\n"
    "  const rt=document.getElementById('routes');rt.textContent='';\n"
    "  for(const r of d.routes)row(rt,r.path,r.requests);\n"
    "  if(d.proxy){const pt=document.getElementById('pool');pt.textContent='';\n"
    "    document.getElementById('pools').hidden=false;\n"
    "    const cols=['origin','open','idle','waiters','opens','failures','retries',\n"
    "      'acquire_wait_p50_us','acquire_wait_p99_us'];\n"
    "    const hr=document.createElement('tr');\n"
    "    for(const c of cols){const th=document.createElement('th');\n"
    "      th.textContent=c.replace('acquire_wait_','wait ').replace('_us',' (\u00b5s)');\n"
    "      hr.appendChild(th);}\n"
    "    pt.appendChild(hr);\n"
    "    for(const p of d.proxy){const tr=document.createElement('tr');\n"
    "      for(const c of cols){const td=document.createElement('td');td.textContent=p[c];\n"
    "        if(c!=='origin')td.className='n';tr.appendChild(td);}\n"
    "      pt.appendChild(tr);}\n"
    "    const ot=document.getElementById('origins');ot.textContent='';\n"
    "    const oc=['prefix','origin','active','requests','failures','retried','down_for_ms'];\n"
    "    const oh=document.createElement('tr');\n"
    "    for(const c of oc){const th=document.createElement('th');\n"
    "      th.textContent=c.replace('_ms',' (ms)').replace(/_/g,' ');oh.appendChild(th);}\n"
    "    ot.appendChild(oh);\n"
    "    for(const o of (d.proxy_origins||[])){const tr=document.createElement('tr');\n"
    "      for(const c of oc){const td=document.createElement('td');td.textContent=o[c];\n"
    "        if(c!=='prefix'&&c!=='origin')td.className='n';tr.appendChild(td);}\n"
    "      ot.appendChild(tr);}}\n"
    "  const ct=document.getElementById('counters');ct.textContent='';\n"
    "  for(const k of Object.keys(d))if(typeof d[k]==='number')row(ct,k,d[k]);\n"
    "  document.getElementById('err').textContent='';\n"
    "}\n"
    "async function tick(){\n"
    "  try{const r=await fetch(src,{cache:'no-store'});\n"
    "    if(!r.ok)throw new Error('HTTP '+r.status);show(await r.json());}\n"
    "  catch(e){document.getElementById('err').textContent='cannot read '+src+': '+e.message;}\n"
    "  setTimeout(tick,2000);\n"
    "}\n"
    "let polling=false;\n"
    "function poll(){if(!polling){polling=true;document.body.dataset.feed='poll';tick();}}\n"
    "try{const ws=new WebSocket((location.protocol==='https:'?'wss:':'ws:')+'//'+\n"
    "    location.host+location.pathname+'.ws');\n"
    "  ws.onopen=()=>{document.body.dataset.feed='socket';};\n"
    "  ws.onmessage=(m)=>{if(!polling)show(JSON.parse(m.data));};\n"
    "  ws.onclose=poll;\n"
    "}catch(e){poll();}\n"
    "</script>\n</body></html>\n";

static void status_page(cshw_context *ctx)
{
    const char *format = cshw_request_query_get(cshw_context_request(ctx), "format");
    if (format && strcmp(format, "json") == 0) {
        status_json(ctx);
        return;
    }
    if (!allowed(ctx)) return;
    cshw_response *res = cshw_context_response(ctx);
    cshw_response_set_content_type(res, "text/html", "utf-8");
    cshw_response_set_header(res, "Cache-Control", "no-store");
    cshw_response_set_header(res, "Content-Security-Policy",
                             "default-src 'none'; script-src 'unsafe-inline'; style-src "
                             "'unsafe-inline'; connect-src 'self'; img-src data:");
    cshw_response_set_header(res, "X-Content-Type-Options", "nosniff");
    cshw_response_write(res, page, sizeof page - 1);
}

/* ---- the status socket: PATH.ws ----
 * Each socket open there gets the status JSON once a second, pushed by
 * the engine's tick (from its supervisor's thread, through
 * cshs_websocket_post), so the page needs no poll; the page falls back to
 * polling PATH.json when the socket cannot open or closes. */
#define STATUS_SOCKETS_MAX 64
#define STATUS_PUSH_MS 1000

struct status_push {
    pthread_mutex_t mu;
    cshw_ws *ws[STATUS_SOCKETS_MAX]; /* each retained while listed */
    size_t n;
    int64_t last_ms; /* the tick's own (CLOCK_MONOTONIC) */
};

status_push *status_push_new(void)
{
    status_push *p = calloc(1, sizeof *p);
    if (p) pthread_mutex_init(&p->mu, NULL);
    return p;
}

void status_push_free(status_push *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->n; i++) cshw_ws_release(p->ws[i]);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

static void push_open(cshw_ws *ws, void *arg)
{
    status_push *p = ((cshttpd_app *)arg)->push;
    pthread_mutex_lock(&p->mu);
    int room = p->n < STATUS_SOCKETS_MAX;
    if (room) {
        cshw_ws_retain(ws);
        p->ws[p->n++] = ws;
    }
    pthread_mutex_unlock(&p->mu);
    if (!room) cshw_ws_close(ws, 1013, "too many status sockets: try again later");
}

static void push_message(cshw_ws *ws, int type, const char *data, size_t len, void *arg)
{
    /* the page sends nothing; whatever comes is not read */
    (void)ws, (void)type, (void)data, (void)len, (void)arg;
}

static void push_closed(cshw_ws *ws, int code, const char *reason, size_t len, void *arg)
{
    (void)code, (void)reason, (void)len;
    status_push *p = ((cshttpd_app *)arg)->push;
    int listed = 0;
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < p->n; i++)
        if (p->ws[i] == ws) {
            p->ws[i] = p->ws[--p->n];
            listed = 1;
            break;
        }
    pthread_mutex_unlock(&p->mu);
    if (listed) cshw_ws_release(ws);
}

static const cshw_ws_handlers push_handlers = {
    .open = push_open, .message = push_message, .closed = push_closed};

static void status_socket(cshw_context *ctx)
{
    cshttpd_app *app = allowed(ctx);
    if (!app) return;
    if (!app->push || !app->ws) {
        cshw_response_send_error(cshw_context_response(ctx), 404);
        return;
    }
    cshs_websocket(ctx, app->ws, &push_handlers, app); /* a refusal is answered */
}

void status_push_tick(void *arg)
{
    cshttpd_app *app = arg;
    status_push *p = app->push;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    if (now - p->last_ms < STATUS_PUSH_MS) return;
    p->last_ms = now;
    cshw_ws *to[STATUS_SOCKETS_MAX];
    pthread_mutex_lock(&p->mu);
    size_t n = p->n;
    for (size_t i = 0; i < n; i++) {
        to[i] = p->ws[i];
        cshw_ws_retain(to[i]);
    }
    pthread_mutex_unlock(&p->mu);
    if (n == 0) return;
    cshw_arena *a = cshw_arena_new(65536);
    cshw_buf b;
    cshw_buf_init(&b, a);
    if (a && status_build(app, a, &b) == 0)
        for (size_t i = 0; i < n; i++) cshs_websocket_post(to[i], CSHW_WS_TEXT, b.data, b.len);
    for (size_t i = 0; i < n; i++) cshw_ws_release(to[i]);
    cshw_arena_free(a);
}

int status_routes(cshw_router *r, const char *path)
{
    char json[1100], ws[1100];
    if (strlen(path) > 1000) return -1;
    snprintf(json, sizeof json, "%s.json", path);
    snprintf(ws, sizeof ws, "%s.ws", path);
    int e = cshw_router_add(r, "GET", path, status_page);
    if (e >= 0) e = cshw_router_add(r, "GET", json, status_json);
    if (e >= 0) e = cshw_router_add(r, "GET", ws, status_socket);
    return e;
}

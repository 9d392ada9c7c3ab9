/* The route table: a trie of path segments, each node with its literal
 * children sorted by label (binary search), one parameter child and the
 * routes that end there, with or without a final wildcard. Dispatch walks
 * it depth first in the documented precedence (literal, parameter,
 * wildcard), going back when what follows does not match; each node is
 * visited at most once, so the cost is bounded by the size of the trie,
 * never exponential. Dispatch only reads the router. */
#include "cshttp/web/router.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cshttp/grammar.h>

#include "context_impl.h"
#include "cshttp/web/error.h"
#include "cshttp/web/request.h"
#include "cshttp/web/response.h"
#include "cshttp/web/url.h"
#include "static_priv.h"

#define MAX_METHODS 64
#define ANY_METHOD (-1)      /* a route for "*" */
#define UNKNOWN_METHOD (-2)  /* a request method no route names */
#define STACK_PARAMS 16      /* parameter spans kept on the stack during dispatch */
#define NO_POSITION SIZE_MAX /* an error about the whole route */

typedef struct route {
    int method; /* index in cshw_router.methods, or ANY_METHOD */
    int streams; /* its handler reads the body as it arrives (cshw_router_add_streaming) */
    cshw_handler handler;
    char **names; /* the parameter names, in the order of their segments */
    size_t nnames;
} route;

typedef struct route_list {
    route *items;
    size_t count;
} route_list;

typedef struct node node;
struct node {
    char *label; /* a literal child's segment (not NUL-terminated when empty) */
    size_t label_len;
    node **lit; /* literal children, sorted by label */
    size_t nlit;
    node *param;     /* the "{name}" child */
    route_list end;  /* routes whose pattern ends at this node */
    route_list rest; /* routes whose pattern ends at this node with "/ *" */
};

struct cshw_router {
    node root;
    char *methods[MAX_METHODS];
    size_t nmethods;
    int known[CSH_METHOD_PATCH + 1]; /* csh_method -> index in methods, or UNKNOWN_METHOD */
    size_t max_params;               /* parameters of the pattern that has most */
    int has_static;
    cshw_static_options st;
    char *st_root, *st_index, *st_cache_control; /* the copies st points at */
    int has_error;
    char error[256];
};

/* ---- building ---- */

cshw_router *cshw_router_new(void)
{
    cshw_router *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    for (size_t i = 0; i <= CSH_METHOD_PATCH; i++) r->known[i] = UNKNOWN_METHOD;
    return r;
}

static void free_names(route *rt)
{
    for (size_t i = 0; i < rt->nnames; i++) free(rt->names[i]);
    free(rt->names);
}

static void free_routes(route_list *l)
{
    for (size_t i = 0; i < l->count; i++) free_names(&l->items[i]);
    free(l->items);
}

static void free_node(node *n)
{
    for (size_t i = 0; i < n->nlit; i++) {
        free_node(n->lit[i]);
        free(n->lit[i]);
    }
    free(n->lit);
    if (n->param) {
        free_node(n->param);
        free(n->param);
    }
    free_routes(&n->end);
    free_routes(&n->rest);
    free(n->label);
}

void cshw_router_free(cshw_router *r)
{
    if (!r) return;
    free_node(&r->root);
    for (size_t i = 0; i < r->nmethods; i++) free(r->methods[i]);
    free(r->st_root);
    free(r->st_index);
    free(r->st_cache_control);
    free(r);
}

const char *cshw_router_error(const cshw_router *r)
{
    return r && r->has_error ? r->error : NULL;
}

/* Copies s into out (size cap) with control bytes shown as '?', cut with
 * "..." when longer: the message must stay one printable line. */
static void shown(char *out, size_t cap, const char *s)
{
    size_t i = 0;
    for (; s[i] && i + 4 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        out[i] = (char)(c < 0x20 || c == 0x7f ? '?' : c);
    }
    if (s[i]) {
        memcpy(out + i, "...", 3);
        i += 3;
    }
    out[i] = '\0';
}

static int fail(cshw_router *r, int code, const char *method, const char *pattern, size_t at,
                const char *what)
{
    char m[40], p[160];
    shown(m, sizeof m, method);
    shown(p, sizeof p, pattern);
    if (at == NO_POSITION)
        snprintf(r->error, sizeof r->error, "%s %s: %s", m, p, what);
    else
        snprintf(r->error, sizeof r->error, "%s %s: %s at byte %zu", m, p, what, at);
    r->has_error = 1;
    return code;
}

/* RFC 9110 §5.6.2 tchar, from libcshttp's grammar.h */
static int is_tchar(unsigned char c)
{
    return csh_is_tchar(c);
}

static int is_name_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

enum { SEG_LITERAL, SEG_PARAM, SEG_REST };

typedef struct seg {
    int kind;
    const char *s; /* the literal, or the parameter's name */
    size_t len;
} seg;

/* Splits and checks a pattern into segs (room for one per '/'). */
static int parse_pattern(cshw_router *r, const char *method, const char *pattern, seg *segs,
                         size_t *count, size_t *nparams)
{
    const char *p = pattern;
    size_t n = 0, np = 0;
    if (*p != '/')
        return fail(r, CSHW_E_ROUTE_PATTERN_START, method, pattern, 0, "does not start with '/'");
    while (*p == '/') {
        const char *s = p + 1, *e = s;
        while (*e && *e != '/') e++;
        size_t len = (size_t)(e - s), at = (size_t)(s - pattern);
        int last = *e == '\0';
        seg *g = &segs[n++];
        g->kind = SEG_LITERAL;
        g->s = s;
        g->len = len;
        if (len == 0) {
            /* only the last segment may be empty: "/" and "/users/" */
            if (!last)
                return fail(r, CSHW_E_ROUTE_PATTERN_SEGMENT, method, pattern, at, "empty segment");
        } else if (s[0] == '{') {
            if (len < 2 || s[len - 1] != '}')
                return fail(r, CSHW_E_ROUTE_PARAM_INVALID, method, pattern, at,
                            "parameter is not a whole segment '{name}'");
            if (len == 2)
                return fail(r, CSHW_E_ROUTE_PARAM_EMPTY, method, pattern, at,
                            "empty parameter name");
            for (size_t i = 1; i + 1 < len; i++)
                if (!is_name_char((unsigned char)s[i]))
                    return fail(r, CSHW_E_ROUTE_PARAM_INVALID, method, pattern, at + i,
                                "parameter name has a character other than a letter, a "
                                "digit, '_' or '-'");
            g->kind = SEG_PARAM;
            g->s = s + 1;
            g->len = len - 2;
            for (size_t i = 0; i + 1 < n; i++)
                if (segs[i].kind == SEG_PARAM && segs[i].len == g->len &&
                    memcmp(segs[i].s, g->s, g->len) == 0)
                    return fail(r, CSHW_E_ROUTE_PARAM_DUPLICATE, method, pattern, at,
                                "parameter name used twice");
            np++;
        } else if (len == 1 && s[0] == '*') {
            if (!last)
                return fail(r, CSHW_E_ROUTE_WILDCARD_NOT_LAST, method, pattern, at,
                            "wildcard '*' before the last segment");
            g->kind = SEG_REST;
        } else if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.')) {
            /* a decoded path has its dot-segments resolved: this could never match */
            return fail(r, CSHW_E_ROUTE_PATTERN_SEGMENT, method, pattern, at, "dot segment");
        } else {
            for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];
                if (c == '*')
                    return fail(r, CSHW_E_ROUTE_WILDCARD_NOT_LAST, method, pattern, at + i,
                                "wildcard '*' inside a segment");
                if (c == '{' || c == '}')
                    return fail(r, CSHW_E_ROUTE_PARAM_INVALID, method, pattern, at + i,
                                "parameter is not a whole segment '{name}'");
                if (c <= 0x20 || c == 0x7f || c == '%' || c == '?' || c == '#' || c == '\\')
                    return fail(r, CSHW_E_ROUTE_PATTERN_CHAR, method, pattern, at + i,
                                c == '%' ? "'%': patterns match the decoded path"
                                         : "character not allowed");
            }
        }
        p = e;
    }
    *count = n;
    *nparams = np;
    return 0;
}

static int label_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c) return c;
    return alen < blen ? -1 : alen > blen;
}

/* The index where a child labelled s[0..len) is, or would go; *found set. */
static size_t find_child(const node *n, const char *s, size_t len, int *found)
{
    size_t lo = 0, hi = n->nlit;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = label_cmp(n->lit[mid]->label, n->lit[mid]->label_len, s, len);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = 0;
    return lo;
}

static node *literal_child(node *n, const char *s, size_t len)
{
    int found;
    size_t at = find_child(n, s, len, &found);
    if (found) return n->lit[at];
    node *c = calloc(1, sizeof *c);
    node **lit = realloc(n->lit, (n->nlit + 1) * sizeof *lit);
    char *label = malloc(len + 1);
    if (lit) n->lit = lit;
    if (!c || !lit || !label) {
        free(c);
        free(label);
        return NULL;
    }
    memcpy(label, s, len);
    label[len] = '\0';
    c->label = label;
    c->label_len = len;
    memmove(&n->lit[at + 1], &n->lit[at], (n->nlit - at) * sizeof *lit);
    n->lit[at] = c;
    n->nlit++;
    return c;
}

static int method_index(const cshw_router *r, const char *method)
{
    for (size_t i = 0; i < r->nmethods; i++)
        if (strcmp(r->methods[i], method) == 0) return (int)i;
    return UNKNOWN_METHOD;
}

/* Copies the parameter names of segs into rt. 0 or -ENOMEM. */
static int copy_names(route *rt, const seg *segs, size_t nsegs, size_t nparams)
{
    if (nparams && !(rt->names = calloc(nparams, sizeof *rt->names))) return -ENOMEM;
    for (size_t i = 0; i < nsegs; i++) {
        if (segs[i].kind != SEG_PARAM) continue;
        char *name = malloc(segs[i].len + 1);
        if (!name) return -ENOMEM;
        memcpy(name, segs[i].s, segs[i].len);
        name[segs[i].len] = '\0';
        rt->names[rt->nnames++] = name;
    }
    return 0;
}

/* The node a parsed pattern ends at, made as needed; NULL when out of
 * memory (nodes made so far stay, empty: they match nothing). */
static node *make_path(cshw_router *r, const seg *segs, size_t nsegs)
{
    node *n = &r->root;
    for (size_t i = 0; i < nsegs && n; i++) {
        if (segs[i].kind == SEG_LITERAL) {
            n = literal_child(n, segs[i].s, segs[i].len);
        } else if (segs[i].kind == SEG_PARAM) {
            if (!n->param) n->param = calloc(1, sizeof *n->param);
            n = n->param;
        }
    }
    return n;
}

static int add_route(cshw_router *r, const char *method, int any, const char *pattern,
                     cshw_handler handler, int streams, const seg *segs, size_t nsegs,
                     size_t nparams)
{
    int mi = any ? ANY_METHOD : method_index(r, method);
    if (mi == UNKNOWN_METHOD && r->nmethods == MAX_METHODS)
        return fail(r, CSHW_E_ROUTE_TOO_MANY_METHODS, method, pattern, NO_POSITION,
                    "more than 64 different methods");
    /* before any node is made: dispatch sizes its parameter stack by it,
     * and nodes stay even when this add fails later */
    if (nparams > r->max_params) r->max_params = nparams;

    node *n = make_path(r, segs, nsegs);
    if (!n) return -ENOMEM;
    route_list *l = nsegs && segs[nsegs - 1].kind == SEG_REST ? &n->rest : &n->end;
    for (size_t i = 0; i < l->count && mi != UNKNOWN_METHOD; i++)
        if (l->items[i].method == mi)
            return fail(r, CSHW_E_ROUTE_DUPLICATE, method, pattern, NO_POSITION,
                        "same method and pattern shape as an earlier route");

    route rt = {.method = mi, .streams = streams, .handler = handler, .names = NULL, .nnames = 0};
    char *mcopy = mi == UNKNOWN_METHOD ? strdup(method) : NULL;
    route *items = NULL;
    if ((mi == UNKNOWN_METHOD && !mcopy) || copy_names(&rt, segs, nsegs, nparams) < 0 ||
        !(items = realloc(l->items, (l->count + 1) * sizeof *items))) {
        free(mcopy);
        free_names(&rt);
        return -ENOMEM;
    }
    l->items = items;
    if (mi == UNKNOWN_METHOD) {
        rt.method = (int)r->nmethods;
        r->methods[r->nmethods++] = mcopy;
        for (int id = CSH_METHOD_GET; id <= CSH_METHOD_PATCH; id++)
            if (strcmp(csh_method_name((csh_method)id), method) == 0) r->known[id] = rt.method;
    }
    l->items[l->count++] = rt;
    return 0;
}

static int add(cshw_router *r, const char *method, const char *pattern, cshw_handler handler,
               int streams)
{
    if (!r) return -EINVAL;
    r->has_error = 0;
    if (!method || !pattern || !handler) {
        snprintf(r->error, sizeof r->error, "%s", "NULL method, pattern or handler");
        r->has_error = 1;
        return -EINVAL;
    }
    int any = strcmp(method, "*") == 0;
    for (size_t i = 0; !any && (i == 0 || method[i]); i++)
        if (!is_tchar((unsigned char)method[i]))
            return fail(r, CSHW_E_ROUTE_METHOD_INVALID, method, pattern, NO_POSITION,
                        "method is not a token or '*'");

    /* one segment per '/' */
    size_t slashes = 0;
    for (const char *p = pattern; *p; p++) slashes += *p == '/';
    seg *segs = malloc((slashes ? slashes : 1) * sizeof *segs);
    size_t nsegs = 0, nparams = 0;
    int rc = segs ? parse_pattern(r, method, pattern, segs, &nsegs, &nparams) : -ENOMEM;
    if (rc == 0) rc = add_route(r, method, any, pattern, handler, streams, segs, nsegs, nparams);
    free(segs);
    if (rc == -ENOMEM) fail(r, rc, method, pattern, NO_POSITION, "out of memory");
    return rc;
}

int cshw_router_add(cshw_router *r, const char *method, const char *pattern, cshw_handler handler)
{
    return add(r, method, pattern, handler, 0);
}

int cshw_router_add_streaming(cshw_router *r, const char *method, const char *pattern,
                              cshw_handler handler)
{
    return add(r, method, pattern, handler, 1);
}

static char *dup_or_null(const char *s, int *oom)
{
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *oom = 1;
    return d;
}

int cshw_router_set_static(cshw_router *r, const cshw_static_options *options)
{
    if (!r) return -EINVAL;
    r->has_error = 0;
    cshw_static_options copy, *o = NULL; /* the caller's, read by its size */
    if (options) {
        o = &copy;
        if (cshw__static_options_copy(o, options) < 0) {
            snprintf(r->error, sizeof r->error, "%s",
                     "static options: size must be set by cshw_static_options_init");
            r->has_error = 1;
            return -EINVAL;
        }
    }
    if (o && !o->root) {
        snprintf(r->error, sizeof r->error, "%s", "static options without a root");
        r->has_error = 1;
        return -EINVAL;
    }
    int oom = 0;
    char *root = o ? dup_or_null(o->root, &oom) : NULL;
    char *index = o ? dup_or_null(o->index, &oom) : NULL;
    char *cc = o ? dup_or_null(o->cache_control, &oom) : NULL;
    if (oom) {
        free(root);
        free(index);
        free(cc);
        return -ENOMEM;
    }
    free(r->st_root);
    free(r->st_index);
    free(r->st_cache_control);
    r->st_root = root;
    r->st_index = index;
    r->st_cache_control = cc;
    r->has_static = o != NULL;
    if (o) {
        r->st = *o;
        r->st.root = root;
        r->st.index = index;
        r->st.cache_control = cc;
    }
    return 0;
}

/* ---- dispatch ---- */

typedef struct walk {
    int method;      /* the request's method index, or UNKNOWN_METHOD */
    int get;         /* GET's index, or UNKNOWN_METHOD */
    int is_head;     /* HEAD: served by GET routes when there is no HEAD route */
    const char **ps; /* the parameter segments on the way down */
    size_t *pl;
    size_t np;
    const route *found;
    const char *rest; /* what the wildcard matched, when the route ends in one */
    uint64_t allow;   /* methods of routes that matched the path, not the method */
    int matched;      /* some route matched the path */
} walk;

static const route *pick(const route_list *l, walk *w)
{
    const route *get = NULL, *any = NULL;
    for (size_t i = 0; i < l->count; i++) {
        const route *rt = &l->items[i];
        if (rt->method == w->method) return rt;
        if (rt->method == ANY_METHOD)
            any = rt;
        else if (w->is_head && rt->method == w->get)
            get = rt;
    }
    if (get) return get;
    if (any) return any;
    for (size_t i = 0; i < l->count; i++) w->allow |= UINT64_C(1) << l->items[i].method;
    if (l->count) w->matched = 1;
    return NULL;
}

/* s: the segment to match (after its '/'), NULL when the path has no more. */
static int walk_node(const node *n, const char *s, walk *w)
{
    if (!s) return (w->found = pick(&n->end, w)) != NULL;
    const char *e = s;
    while (*e && *e != '/') e++;
    const char *next = *e ? e + 1 : NULL;
    size_t len = (size_t)(e - s);
    int found;
    size_t at = find_child(n, s, len, &found);
    if (found && walk_node(n->lit[at], next, w)) return 1;
    if (n->param && len > 0) {
        w->ps[w->np] = s;
        w->pl[w->np] = len;
        w->np++;
        if (walk_node(n->param, next, w)) return 1;
        w->np--;
    }
    if (n->rest.count && (w->found = pick(&n->rest, w)) != NULL) {
        w->rest = s;
        return 1;
    }
    return 0;
}

cshw_route_body cshw_router_body_of(const cshw_router *r, const char *head, const csh_message *msg)
{
    if (!r || !head || !msg) return CSHW_ROUTE_BODY_NONE;
    /* the path dispatch will match: the same decoding (cshw_request_path) */
    const char *t = head + msg->target.off, *raw;
    size_t n = msg->target.len, len;
    const char *q = msg->target_form == CSH_TARGET_AUTHORITY ? NULL : memchr(t, '?', n);
    if (q) n = (size_t)(q - t);
    if (cshw__target_path(t, n, msg->target_form, &raw, &len) < 0) return CSHW_ROUTE_BODY_NONE;
    cshw_arena *a = cshw_arena_new(0);
    const char *path = NULL;
    cshw_route_body body = CSHW_ROUTE_BODY_NONE;
    int method = msg->method != CSH_METHOD_OTHER && (int)msg->method <= CSH_METHOD_PATCH
                     ? r->known[msg->method]
                     : UNKNOWN_METHOD;
    if (msg->method == CSH_METHOD_OTHER) {
        char name[64];
        if (msg->method_span.len < sizeof name) {
            memcpy(name, head + msg->method_span.off, msg->method_span.len);
            name[msg->method_span.len] = '\0';
            method = method_index(r, name);
        }
    }
    const char *ps[STACK_PARAMS];
    size_t pl[STACK_PARAMS];
    walk w = {.method = method,
              .get = r->known[CSH_METHOD_GET],
              .is_head = msg->method == CSH_METHOD_HEAD,
              .ps = ps,
              .pl = pl};
    if (r->max_params > STACK_PARAMS && a) {
        w.ps = cshw_arena_alloc(a, r->max_params * sizeof *w.ps);
        w.pl = cshw_arena_alloc(a, r->max_params * sizeof *w.pl);
    }
    /* out of memory: taken as read whole, as before routes said */
    if (!a || !w.ps || !w.pl)
        body = CSHW_ROUTE_BODY_WHOLE;
    else if (cshw_path_decode(a, raw, len, &path, NULL) == 0 && path[0] == '/' &&
             walk_node(&r->root, path + 1, &w))
        body = w.found->streams ? CSHW_ROUTE_BODY_STREAM : CSHW_ROUTE_BODY_WHOLE;
    cshw_arena_free(a);
    return body;
}

/* The context copies the list: only the items and values need the arena. */
static int set_params(cshw_context *ctx, const walk *w)
{
    const route *rt = w->found;
    /* one span per parameter node on the way to the route */
    assert(w->np == rt->nnames);
    size_t n = rt->nnames + (w->rest ? 1 : 0);
    if (n == 0) {
        cshw_context_set_params(ctx, NULL);
        return 0;
    }
    cshw_arena *a = cshw_context_arena(ctx);
    cshw_pair *items = cshw_arena_alloc(a, n * sizeof *items);
    if (!items) return -ENOMEM;
    for (size_t i = 0; i < rt->nnames; i++) {
        char *v = cshw_arena_strndup(a, w->ps[i], w->pl[i]);
        if (!v) return -ENOMEM;
        items[i] = (cshw_pair){rt->names[i], v, strlen(rt->names[i]), w->pl[i]};
    }
    if (w->rest) /* the path is NUL-terminated and lives in the arena too */
        items[n - 1] = (cshw_pair){"*", w->rest, 1, strlen(w->rest)};
    cshw_pairs pairs = {items, n};
    cshw_context_set_params(ctx, &pairs);
    return 0;
}

/* At most 66 names; qsort could allocate, and dispatch must not. */
static void sort_names(const char **list, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        const char *v = list[i];
        size_t j = i;
        for (; j > 0 && strcmp(list[j - 1], v) > 0; j--) list[j] = list[j - 1];
        list[j] = v;
    }
}

/* Answers 405 or 204 (OPTIONS) with Allow: the methods in `bits`, HEAD
 * where GET is, and OPTIONS, sorted. */
static void answer_allow(cshw_router *r, cshw_context *ctx, uint64_t bits, int status)
{
    cshw_response *res = cshw_context_response(ctx);
    const char *list[MAX_METHODS + 2];
    size_t n = 0, total = 1;
    int get = 0, head = 0, options = 0;
    for (size_t i = 0; i < r->nmethods; i++) {
        if (!(bits & (UINT64_C(1) << i))) continue;
        list[n++] = r->methods[i];
        get |= strcmp(r->methods[i], "GET") == 0;
        head |= strcmp(r->methods[i], "HEAD") == 0;
        options |= strcmp(r->methods[i], "OPTIONS") == 0;
    }
    if (get && !head) list[n++] = "HEAD";
    if (!options) list[n++] = "OPTIONS";
    sort_names(list, n);
    for (size_t i = 0; i < n; i++) total += strlen(list[i]) + 2;
    char *allow = cshw_arena_alloc(cshw_context_arena(ctx), total);
    if (!allow) {
        cshw_response_send_error(res, 500);
        return;
    }
    char *p = allow;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(list[i]);
        if (i) {
            memcpy(p, ", ", 2);
            p += 2;
        }
        memcpy(p, list[i], len);
        p += len;
    }
    *p = '\0';
    cshw_response_set_header(res, "Allow", allow);
    if (status == 204)
        cshw_response_set_status(res, 204);
    else
        cshw_response_send_error(res, status);
}

/* cshw_static_serve answers every method itself (405 with Allow for other
 * methods than GET and HEAD on a file) or says why it did not. */
static void serve_static(cshw_router *r, cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    int rc = cshw_static_serve(ctx, &r->st);
    if (rc == 0 || cshw_response_headers_sent(res)) return;
    int status = cshw_error_status(rc); /* 404 for CSHW_E_NOT_FOUND, 500 for -errno */
    cshw_response_send_error(res, status >= 400 && status <= 599 ? status : 500);
}

void cshw_router_dispatch(cshw_router *r, cshw_context *ctx)
{
    cshw_request *req = cshw_context_request(ctx);
    cshw_response *res = cshw_context_response(ctx);
    csh_method id = cshw_request_method_id(req);
    const char *method = cshw_request_method(req);

    if (id == CSH_METHOD_OPTIONS && strcmp(cshw_request_target(req), "*") == 0) {
        /* RFC 9110 §9.3.7: "OPTIONS *" asks about the server as a whole */
        answer_allow(r, ctx, r->nmethods == 64 ? UINT64_MAX : (UINT64_C(1) << r->nmethods) - 1,
                     204);
        return;
    }
    const char *path = cshw_request_path(req);
    if (!path) {
        /* the page names the reason, as the context's own answer would */
        int err = cshw_request_path_error(req);
        if (err < 0)
            cshw__response_auto_error(res, err);
        else
            cshw_response_send_error(res, 400);
        return;
    }

    const char *ps[STACK_PARAMS];
    size_t pl[STACK_PARAMS];
    walk w = {.method = id != CSH_METHOD_OTHER && (int)id <= CSH_METHOD_PATCH
                            ? r->known[id]
                            : method_index(r, method),
              .get = r->known[CSH_METHOD_GET],
              .is_head = id == CSH_METHOD_HEAD,
              .ps = ps,
              .pl = pl};
    if (r->max_params > STACK_PARAMS) {
        cshw_arena *a = cshw_context_arena(ctx);
        w.ps = cshw_arena_alloc(a, r->max_params * sizeof *w.ps);
        w.pl = cshw_arena_alloc(a, r->max_params * sizeof *w.pl);
        if (!w.ps || !w.pl) {
            cshw_response_send_error(res, 500);
            return;
        }
    }
    if (path[0] == '/') walk_node(&r->root, path + 1, &w);

    if (w.found) {
        if (set_params(ctx, &w) < 0) {
            cshw_response_send_error(res, 500);
            return;
        }
        w.found->handler(ctx);
        return;
    }
    if (id == CSH_METHOD_OTHER && w.method == UNKNOWN_METHOD) {
        /* RFC 9110 §9.1: a method that is not GET .. PATCH and that no
         * route names is not implemented here, on any path (the static
         * fallback serves GET and HEAD only) */
        cshw_response_send_error(res, 501);
        return;
    }
    if (w.matched) {
        answer_allow(r, ctx, w.allow, id == CSH_METHOD_OPTIONS ? 204 : 405);
        return;
    }
    if (r->has_static) {
        serve_static(r, ctx);
        return;
    }
    cshw_response_send_error(res, 404);
}

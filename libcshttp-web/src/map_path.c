/* MapPath: a virtual path to a physical path that never leaves the root.
 *
 * Two layers. The first is lexical: the virtual path is split into
 * segments and refused when one is ".." or holds a backslash or a control
 * byte, so the joined path stays under the root by construction (the
 * request path was already percent-decoded with dot-segments resolved, so
 * "%2e%2e" and "%00" arrive here as ".." and a NUL-terminated string, or
 * not at all). The second is symbolic links: a link inside the root may
 * point anywhere, so unless follow_symlinks the target is checked.
 *
 * cshw_static_map_path checks by resolving the path (realpath) and comparing it
 * with the resolved root. That answers a question about a name at one
 * moment; a file served must not depend on such a moment (a link swapped
 * between the check and the open, TOCTOU), so cshw__static_open opens the
 * file itself with openat2(RESOLVE_BENEATH): the kernel refuses, during
 * the open, any resolution that leaves the root (an absolute link, a ".."
 * in a link's target climbing out). Where openat2 is missing (Linux < 5.6,
 * or a seccomp filter that hides it) and for absolute links that do stay
 * inside the root (RESOLVE_BENEATH refuses every absolute link), the
 * portable check runs: realpath, compare with the root, open the resolved
 * path with O_NOFOLLOW, then realpath again and require the same device
 * and inode as the descriptor's fstat, so what is served is a file
 * reachable inside the root whatever was swapped in between. */
#include "cshttp/web/error.h"
#include "cshttp/web/static.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__linux__) && defined(SYS_openat2)
#include <linux/openat2.h>
#define CSHW_HAVE_OPENAT2 1
#endif

#include "static_priv.h"

int cshw__static_no_openat2 = 0;
void (*cshw__static_open_race)(void) = NULL;

static int bad_byte(unsigned char c)
{
    return c < 0x20 || c == 0x7f || c == '\\';
}

int cshw__static_clean_path(cshw_arena *a, const char *vpath, const char **rel, int *trailing_slash)
{
    size_t len = strlen(vpath);
    char *out = cshw_arena_alloc(a, len + 1);
    if (!out) return -ENOMEM;
    size_t n = 0;
    int trailing = 0;
    const char *p = vpath;
    while (*p) {
        while (*p == '/') p++;
        const char *seg = p;
        while (*p && *p != '/') {
            if (bad_byte((unsigned char)*p)) return CSHW_E_MAP_PATH_INVALID;
            p++;
        }
        size_t sl = (size_t)(p - seg);
        if (sl == 0) break;
        trailing = *p == '/';
        if (sl == 1 && seg[0] == '.') continue;
        if (sl == 2 && seg[0] == '.' && seg[1] == '.') return CSHW_E_MAP_PATH_INVALID;
        if (n) out[n++] = '/';
        memcpy(out + n, seg, sl);
        n += sl;
    }
    out[n] = '\0';
    *rel = out;
    if (trailing_slash) *trailing_slash = n ? trailing : 1;
    return 0;
}

/* path is `root` or below it; both resolved (no links, no dot-segments). */
static int is_under(const char *root, const char *path)
{
    size_t n = strlen(root);
    if (n == 1 && root[0] == '/') return path[0] == '/';
    return strncmp(root, path, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static int errno_to_error(int e)
{
    switch (e) {
    case ENOENT:
    case ENOTDIR:
    case ELOOP: /* a link loop, or a link where O_NOFOLLOW refused one */
    case ENAMETOOLONG:
    case ENXIO: /* a socket, or a device without its driver */
    case ENODEV:
        return CSHW_E_NOT_FOUND;
    case EACCES:
    case EPERM:
        return CSHW_E_STATIC_FORBIDDEN;
    default:
        return -e;
    }
}

/* The root's length without its trailing slashes ("/" stays "/"). */
static size_t root_len(const char *root)
{
    size_t rl = strlen(root);
    while (rl > 1 && root[rl - 1] == '/') rl--;
    return rl;
}

/* root + "/" + rel with malloc, without doubling the root's trailing '/'. */
static char *join(const char *root, const char *rel)
{
    size_t rl = root_len(root);
    size_t n = strlen(rel);
    char *s = malloc(rl + 1 + n + 1);
    if (!s) return NULL;
    memcpy(s, root, rl);
    size_t k = rl;
    if (n) {
        if (!(rl == 1 && root[0] == '/')) s[k++] = '/';
        memcpy(s + k, rel, n);
        k += n;
    }
    s[k] = '\0';
    return s;
}

/* Whether `full` (root/rel, rel clean) resolves inside root_real: 0, or an
 * error. A path that does not exist is judged by its deepest existing
 * ancestor; a dangling link on the way counts as outside (its target
 * cannot be checked). */
static int resolves_inside(const char *root_real, char *full, size_t base_len)
{
    for (;;) {
        char *r = realpath(full, NULL);
        if (r) {
            int in = is_under(root_real, r);
            free(r);
            return in ? 0 : CSHW_E_MAP_PATH_OUTSIDE;
        }
        int e = errno;
        if (e == ENOMEM) return -ENOMEM;
        if (e == ELOOP) return CSHW_E_MAP_PATH_OUTSIDE;
        if (e == EACCES) return CSHW_E_STATIC_FORBIDDEN;
        if (e != ENOENT && e != ENOTDIR) return -e;
        struct stat st;
        if (lstat(full, &st) == 0 && S_ISLNK(st.st_mode)) return CSHW_E_MAP_PATH_OUTSIDE;
        char *slash = strrchr(full, '/');
        /* full[0 .. base_len) is the root, which resolved inside itself */
        if (!slash || (size_t)(slash - full) < base_len) return 0;
        *slash = '\0';
    }
}

int cshw_static_map_path(cshw_arena *arena, const cshw_static_options *options,
                         const char *virtual_path, const char **out)
{
    if (out) *out = NULL;
    cshw_static_options copy, *o = &copy; /* the caller's, read by its size */
    if (!arena || !options || !virtual_path || !out || cshw__static_options_copy(o, options) < 0)
        return -EINVAL;
    if (!o->root || !o->root[0]) return CSHW_E_STATIC_NO_ROOT;
    const char *rel;
    int rc = cshw__static_clean_path(arena, virtual_path, &rel, NULL);
    if (rc) return rc;
    char *full = join(o->root, rel);
    if (!full) return -ENOMEM;
    if (!o->follow_symlinks) {
        char *root_real = realpath(o->root, NULL);
        if (!root_real) {
            rc = errno == ENOMEM ? -ENOMEM : CSHW_E_STATIC_NO_ROOT;
        } else {
            char *probe = strdup(full);
            rc = probe ? resolves_inside(root_real, probe, root_len(o->root)) : -ENOMEM;
            free(probe);
            free(root_real);
        }
    }
    if (rc == 0) {
        *out = cshw_arena_strdup(arena, full);
        if (!*out) rc = -ENOMEM;
    }
    free(full);
    return rc;
}

static int open_checked(const char *root, const char *rel, int flags, int *fd, struct stat *st)
{
    char *root_real = realpath(root, NULL);
    if (!root_real) return errno == ENOMEM ? -ENOMEM : CSHW_E_STATIC_NO_ROOT;
    char *full = join(root, rel);
    char *r1 = NULL, *r2 = NULL;
    int rc = 0, f = -1;
    if (!full) {
        rc = -ENOMEM;
        goto out;
    }
    r1 = realpath(full, NULL);
    if (!r1) {
        rc = errno_to_error(errno);
        goto out;
    }
    if (!is_under(root_real, r1)) {
        rc = CSHW_E_MAP_PATH_OUTSIDE;
        goto out;
    }
    if (cshw__static_open_race) cshw__static_open_race();
    f = open(r1, flags | O_NOFOLLOW);
    if (f < 0) {
        rc = errno_to_error(errno);
        goto out;
    }
    struct stat again;
    if (fstat(f, st) != 0) {
        rc = -errno;
        goto out;
    }
    /* What was opened must still be what the root holds at that name. */
    r2 = realpath(r1, NULL);
    if (!r2 || !is_under(root_real, r2) || stat(r2, &again) != 0 || again.st_dev != st->st_dev ||
        again.st_ino != st->st_ino) {
        rc = CSHW_E_MAP_PATH_OUTSIDE;
        goto out;
    }
out:
    if (rc && f >= 0)
        close(f);
    else if (!rc)
        *fd = f;
    free(r2);
    free(r1);
    free(full);
    free(root_real);
    return rc;
}

int cshw__static_open(int rootfd, const char *root, const char *rel, int follow_symlinks, int *fd,
                      struct stat *st)
{
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer. */
    int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
    const char *name = rel[0] ? rel : ".";
    *fd = -1;
    int f;
    if (follow_symlinks) {
        f = openat(rootfd, name, flags);
        if (f < 0) return errno_to_error(errno);
    } else {
#ifdef CSHW_HAVE_OPENAT2
        if (!cshw__static_no_openat2) {
            struct open_how how;
            memset(&how, 0, sizeof how);
            how.flags = (unsigned long long)flags;
            how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
            long r = syscall(SYS_openat2, rootfd, name, &how, sizeof how);
            if (r >= 0) {
                f = (int)r;
                goto opened;
            }
            int e = errno;
            /* EXDEV: left the root, or an absolute link (judged below);
             * ENOSYS/EPERM: no openat2 here (an old kernel, seccomp). */
            if (e != EXDEV && e != ENOSYS && e != EPERM) return errno_to_error(e);
        }
#endif
        return open_checked(root, rel, flags, fd, st);
    }
#ifdef CSHW_HAVE_OPENAT2
opened:
#endif
    if (fstat(f, st) != 0) {
        int e = errno;
        close(f);
        return -e;
    }
    *fd = f;
    return 0;
}

/* A temporary web root for test_static.c and test_map_path.c, made with
 * mkdtemp and removed at the end:
 *
 *   <tmp>/outside.txt            a file outside the root
 *   <tmp>/outdir/secret.txt f.txt  a folder outside the root
 *   <tmp>/rootx/secret.txt       another
 *   <tmp>/root/                  the root
 *     index.html hello.txt data.bin (1000 bytes) big.bin (200000 bytes)
 *     empty.txt page.html (4000 bytes) app.js unknown.xyz
 *     style.css style.css.gz     a precompressed sibling
 *     photo.png photo.png.gz     one of a type not stored compressed
 *     .secret .well-known/acme.txt
 *     docs/index.html            a folder with an index
 *     sub/                       a folder without one: a.txt "b c.txt"
 *                                "<x>&'.txt" "a:b.txt" nested/ .hidden
 *                                link_in_sub (-> ../hello.txt) link_out_sub
 *     "sp ace/"                  a folder with a space in its name
 *     fifo sock                  a FIFO and a socket
 *     link_in -> hello.txt, link_abs_in -> <root>/hello.txt,
 *     link_out -> ../outside.txt, link_out_abs -> <tmp>/outside.txt,
 *     dir_out -> ../outdir, dangling -> nowhere, devnull -> /dev/null,
 *     loop -> loop, link_prefix -> ../rootx/secret.txt (a sibling
 *     folder whose name starts with the root's)
 *     swap/f.txt                 a folder a test swaps for a link
 *     locked/index.html (mode 000)
 *     noread.txt (mode 000), closed/ (mode 000) with closed/x.txt
 *
 * Every file's mtime is FIX_MTIME (Thu, 02 Jan 2020 03:04:05 GMT). */
#ifndef CSHW_TEST_STATIC_FIXTURE_H
#define CSHW_TEST_STATIC_FIXTURE_H

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define FIX_MTIME 1577934245
#define FIX_DATE "Thu, 02 Jan 2020 03:04:05 GMT"

typedef struct fixture {
    char tmp[256];
    char root[300];
    int sock; /* the bound socket, kept open while the root exists */
} fixture;

static int fix_write(const char *dir, const char *name, const void *data, size_t len)
{
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    ssize_t w = len ? write(fd, data, len) : 0;
    close(fd);
    return w == (ssize_t)len ? 0 : -1;
}

static int fix_str(const char *dir, const char *name, const char *s)
{
    return fix_write(dir, name, s, strlen(s));
}

/* byte i of data.bin and big.bin */
static unsigned char fix_byte(size_t i)
{
    return (unsigned char)((i * 7 + i / 251) % 251);
}

static int fix_pattern(const char *dir, const char *name, size_t n)
{
    unsigned char *b = malloc(n);
    if (!b) return -1;
    for (size_t i = 0; i < n; i++) b[i] = fix_byte(i);
    int r = fix_write(dir, name, b, n);
    free(b);
    return r;
}

static int fix_link(const char *dir, const char *target, const char *name)
{
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return symlink(target, p);
}

static int fix_mkdir(const char *dir, const char *name)
{
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return mkdir(p, 0755);
}

/* Sets every mtime under dir (not following links) to FIX_MTIME. */
static void fix_times(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char p[1200];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) fix_times(p);
        struct timespec ts[2] = {{FIX_MTIME, 0}, {FIX_MTIME, 0}};
        utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW);
    }
    closedir(d);
}

static int fix_make(fixture *f)
{
    memset(f, 0, sizeof *f);
    f->sock = -1;
    strcpy(f->tmp, "/tmp/cshw-static-XXXXXX");
    if (!mkdtemp(f->tmp)) return -1;
    chmod(f->tmp, 0755); /* the permission test runs as nobody */
    snprintf(f->root, sizeof f->root, "%s/root", f->tmp);
    int r = mkdir(f->root, 0755);
    r |= fix_str(f->tmp, "outside.txt", "OUTSIDE SECRET\n");
    r |= fix_mkdir(f->tmp, "outdir");
    char outdir[400];
    snprintf(outdir, sizeof outdir, "%s/outdir", f->tmp);
    r |= fix_str(outdir, "secret.txt", "OUTDIR SECRET\n");
    r |= fix_str(outdir, "f.txt", "OUTDIR SECRET F\n");
    /* a sibling whose name starts with the root's */
    r |= fix_mkdir(f->tmp, "rootx");
    snprintf(outdir, sizeof outdir, "%s/rootx", f->tmp);
    r |= fix_str(outdir, "secret.txt", "ROOTX SECRET\n");

    const char *R = f->root;
    r |= fix_str(R, "index.html", "<h1>home</h1>\n");
    r |= fix_str(R, "hello.txt", "hello, world\n");
    r |= fix_pattern(R, "data.bin", 1000);
    r |= fix_pattern(R, "big.bin", 200000);
    r |= fix_str(R, "empty.txt", "");
    char page[4000];
    for (size_t i = 0; i < sizeof page; i++) page[i] = (char)('a' + i % 26);
    r |= fix_write(R, "page.html", page, sizeof page);
    r |= fix_str(R, "app.js", "console.log(1);\n");
    r |= fix_str(R, "unknown.xyz", "?\n");
    r |= fix_str(R, "style.css", "body { color: red; }\n");
    r |= fix_write(R, "style.css.gz", "\x1f\x8b\x08\x00GZIPPED-CSS", 15);
    r |= fix_write(R, "photo.png", "\x89PNG-BYTES", 10);
    r |= fix_write(R, "photo.png.gz", "\x1f\x8b\x08\x00GZIPPED-PNG", 15);
    r |= fix_str(R, ".secret", "dot secret\n");
    r |= fix_mkdir(R, ".well-known");
    char wk[400];
    snprintf(wk, sizeof wk, "%s/.well-known", R);
    r |= fix_str(wk, "acme.txt", "token\n");
    r |= fix_mkdir(R, "docs");
    char docs[400];
    snprintf(docs, sizeof docs, "%s/docs", R);
    r |= fix_str(docs, "index.html", "<h1>docs</h1>\n");
    r |= fix_mkdir(R, "sub");
    char sub[400];
    snprintf(sub, sizeof sub, "%s/sub", R);
    r |= fix_str(sub, "a.txt", "a\n");
    r |= fix_str(sub, "b c.txt", "bc\n");
    r |= fix_str(sub, "<x>&'.txt", "x\n");
    r |= fix_str(sub, "a:b.txt", "ab\n");
    r |= fix_str(sub, ".hidden", "h\n");
    r |= fix_mkdir(sub, "nested");
    r |= fix_link(sub, "../hello.txt", "link_in_sub");
    r |= fix_link(sub, "../../outside.txt", "link_out_sub");
    r |= fix_mkdir(R, "sp ace");
    char sp[400];
    snprintf(sp, sizeof sp, "%s/sp ace", R);
    r |= fix_str(sp, "index.html", "space\n");

    char p[600];
    snprintf(p, sizeof p, "%s/fifo", R);
    r |= mkfifo(p, 0644);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    snprintf(p, sizeof p, "%s/sock", R);
    if (strlen(p) >= sizeof sa.sun_path) return -1;
    memcpy(sa.sun_path, p, strlen(p) + 1);
    f->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (f->sock < 0 || bind(f->sock, (struct sockaddr *)&sa, sizeof sa) != 0) r = -1;

    r |= fix_link(R, "hello.txt", "link_in");
    snprintf(p, sizeof p, "%s/hello.txt", R);
    r |= fix_link(R, p, "link_abs_in");
    r |= fix_link(R, "../outside.txt", "link_out");
    snprintf(p, sizeof p, "%s/outside.txt", f->tmp);
    r |= fix_link(R, p, "link_out_abs");
    r |= fix_link(R, "../outdir", "dir_out");
    r |= fix_link(R, "../rootx/secret.txt", "link_prefix");
    r |= fix_mkdir(R, "swap");
    char swap[400];
    snprintf(swap, sizeof swap, "%s/swap", R);
    r |= fix_str(swap, "f.txt", "inside f\n");
    r |= fix_mkdir(R, "locked");
    char locked[400];
    snprintf(locked, sizeof locked, "%s/locked", R);
    r |= fix_str(locked, "index.html", "locked\n");
    snprintf(p, sizeof p, "%s/index.html", locked);
    r |= chmod(p, 0);
    r |= fix_link(R, "nowhere", "dangling");
    r |= fix_link(R, "/dev/null", "devnull");
    r |= fix_link(R, "loop", "loop");
    r |= fix_str(R, "noread.txt", "no\n");
    snprintf(p, sizeof p, "%s/noread.txt", R);
    r |= chmod(p, 0);
    r |= fix_mkdir(R, "closed");
    char closed[400];
    snprintf(closed, sizeof closed, "%s/closed", R);
    r |= fix_str(closed, "x.txt", "x\n");
    r |= chmod(closed, 0);
    fix_times(R);
    return r ? -1 : 0;
}

static void fix_rm(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (S_ISDIR(st.st_mode)) {
        chmod(path, 0755);
        DIR *d = opendir(path);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d)) != NULL) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
                char p[1200];
                snprintf(p, sizeof p, "%s/%s", path, e->d_name);
                fix_rm(p);
            }
            closedir(d);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

static void fix_free(fixture *f)
{
    if (f->sock >= 0) close(f->sock);
    if (f->tmp[0]) fix_rm(f->tmp);
}

/* Open descriptors of this process. */
static int fix_fd_count(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    int n = 0;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

/* Runs fn(arg) in a child process without the privileges that bypass
 * file permissions (as "nobody" when run as root), and returns its result:
 * fn's value (0: passed), or -1 when the child could not run it. */
static int fix_unprivileged(int (*fn)(void *), void *arg)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        if (geteuid() == 0 && (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0))
            _exit(99);
        _exit(fn(arg) & 0x7f);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

#endif

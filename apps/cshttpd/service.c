/* The systemd unit of --install-service (service.h). */
#include "service.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int service_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 200) return 0;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr(":_.@-", *p)))
            return 0;
    return 1;
}

/* 1 when s is UTF-8 (a unit file is: systemd refuses one that is not). */
static int utf8_ok(const unsigned char *s)
{
    while (*s) {
        unsigned char c = *s++;
        int more = c < 0x80             ? 0
                   : (c & 0xe0) == 0xc0 ? 1
                   : (c & 0xf0) == 0xe0 ? 2
                   : (c & 0xf8) == 0xf0 ? 3
                                        : -1;
        if (more < 0 || (c & 0xfe) == 0xc0 || c > 0xf4) return 0; /* overlong, past U+10FFFF */
        for (; more > 0; more--)
            if ((*s++ & 0xc0) != 0x80) return 0;
    }
    return 1;
}

/* A path as a unit setting takes it: absolute, UTF-8, no whitespace,
 * quotes, backslashes or controls (they would need quoting rules that
 * differ from one setting to another); '%' doubled (systemd's specifiers)
 * and, in a command line (exec), '$' too (systemd expands variables
 * there). */
static int unit_path(char *dst, size_t cap, const char *path, const char *what, int exec, char *err,
                     size_t errlen)
{
    if (path[0] != '/') {
        snprintf(err, errlen, "%s '%s' is not an absolute path", what, path);
        return -1;
    }
    if (!utf8_ok((const unsigned char *)path)) {
        snprintf(err, errlen, "%s: a unit file is UTF-8, and the path is not", what);
        return -1;
    }
    size_t n = 0;
    for (const char *p = path; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c <= 0x20 || c == 0x7f || c == '"' || c == '\'' || c == '\\') {
            snprintf(err, errlen,
                     "%s '%s': a unit file cannot hold a path with spaces, quotes, "
                     "backslashes or control characters",
                     what, path);
            return -1;
        }
        if (n + 3 >= cap) {
            snprintf(err, errlen, "%s: path too long", what);
            return -1;
        }
        if (c == '%' || (exec && c == '$')) dst[n++] = (char)c;
        dst[n++] = (char)c;
    }
    dst[n] = '\0';
    return 0;
}

static int in_home(const char *path)
{
    return strncmp(path, "/home/", 6) == 0 || strcmp(path, "/home") == 0 ||
           strncmp(path, "/root/", 6) == 0 || strcmp(path, "/root") == 0 ||
           strncmp(path, "/run/user/", 10) == 0;
}

static void dir_of(char *dst, size_t cap, const char *path)
{
    snprintf(dst, cap, "%s", path);
    char *slash = strrchr(dst, '/');
    if (slash && slash != dst)
        *slash = '\0';
    else if (slash)
        slash[1] = '\0';
}

#define APPEND(...)                                                                                \
    do {                                                                                           \
        int k_ = snprintf(buf + n, n < cap ? cap - n : 0, __VA_ARGS__);                            \
        if (k_ < 0) return -1;                                                                     \
        n += (size_t)k_;                                                                           \
    } while (0)

int service_unit_text(const service_spec *s, char *buf, size_t cap, char *err, size_t errlen)
{
    char exe[4200], config[4200], config_x[4200], root[4200], p[4200], workdir[4200];
    if (unit_path(exe, sizeof exe, s->exe, "the cshttpd binary", 1, err, errlen) < 0 ||
        unit_path(config, sizeof config, s->config, "the config file", 0, err, errlen) < 0 ||
        unit_path(config_x, sizeof config_x, s->config, "the config file", 1, err, errlen) < 0 ||
        unit_path(root, sizeof root, s->root, "the root", 0, err, errlen) < 0 ||
        (s->workdir &&
         unit_path(workdir, sizeof workdir, s->workdir, "the working folder", 0, err, errlen) < 0))
        return -1;
    int low_port = (s->port && s->port < 1024) || (s->tls_port && s->tls_port < 1024);
    /* a root (or working folder) under /home, /root or /run/user stays readable */
    int root_in_home = in_home(s->root) || (s->workdir && in_home(s->workdir));
    /* PrivateTmp= would hide files the service needs under /tmp */
    int in_tmp = 0;
    const char *mine[] = {s->exe,         s->config,      s->root,        s->readable[0],
                          s->readable[1], s->writable[0], s->writable[1], s->writable[2],
                          s->writable[3], s->workdir};
    for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++)
        if (mine[i] && (!strncmp(mine[i], "/tmp/", 5) || !strncmp(mine[i], "/var/tmp/", 9)))
            in_tmp = 1;
    /* the TLS files as credentials: systemd reads them as root at start
     * (a key is readable by root alone) and gives the dynamic user a copy
     * in $CREDENTIALS_DIRECTORY, which the command line names (it wins
     * over the config file) */
    const char *tls_args = "";
    if (s->tls_credentials && s->readable[0] && s->readable[1])
        tls_args = " --tls-cert ${CREDENTIALS_DIRECTORY}/tls_cert"
                   " --tls-key ${CREDENTIALS_DIRECTORY}/tls_key";
    size_t n = 0;
    APPEND("# Written by cshttpd --install-service; cshttpd --uninstall-service removes it.\n"
           "# The settings are in %s (cshttpd --check-config --config %s).\n"
           "[Unit]\n"
           "Description=cshttpd (%s)\n"
           "Documentation=man:cshttpd(1)\n"
           "After=network-online.target\n"
           "Wants=network-online.target\n"
           "\n"
           "[Service]\n"
           "Type=simple\n"
           "ExecStartPre=%s --check-config --config %s%s\n"
           "ExecStart=%s --config %s%s\n"
           "ExecReload=/bin/kill -HUP $MAINPID\n"
           "KillSignal=SIGTERM\n"
           "TimeoutStopSec=30\n"
           "Restart=on-failure\n"
           "LimitNOFILE=65536\n"
           "\n"
           "# hardening\n"
           "DynamicUser=yes\n"
           "NoNewPrivileges=yes\n"
           "ProtectSystem=strict\n"
           "ProtectHome=%s\n"
           "PrivateTmp=%s\n"
           "PrivateDevices=yes\n"
           "ProtectKernelTunables=yes\n"
           "ProtectKernelModules=yes\n"
           "ProtectKernelLogs=yes\n"
           "ProtectControlGroups=yes\n"
           "ProtectClock=yes\n"
           "ProtectHostname=yes\n"
           "ProtectProc=invisible\n"
           "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX\n"
           "RestrictNamespaces=yes\n"
           "RestrictRealtime=yes\n"
           "RestrictSUIDSGID=yes\n"
           "LockPersonality=yes\n"
           "MemoryDenyWriteExecute=yes\n"
           "SystemCallArchitectures=native\n"
           "SystemCallFilter=@system-service\n"
           "UMask=0027\n"
           "ReadOnlyPaths=%s\n",
           s->config, s->config, s->name, exe, config_x, tls_args, exe, config_x, tls_args,
           root_in_home ? "read-only" : "yes", in_tmp ? "no" : "yes", root);
    if (low_port)
        APPEND("# a port below 1024\n"
               "AmbientCapabilities=CAP_NET_BIND_SERVICE\n"
               "CapabilityBoundingSet=CAP_NET_BIND_SERVICE\n");
    else
        APPEND("CapabilityBoundingSet=\n");
    static const char *const credential[] = {"tls_cert", "tls_key"};
    for (size_t i = 0; i < sizeof s->readable / sizeof s->readable[0]; i++) {
        if (!s->readable[i]) continue;
        if (unit_path(p, sizeof p, s->readable[i], "a TLS file", 0, err, errlen) < 0) return -1;
        if (*tls_args)
            APPEND("LoadCredential=%s:%s\n", credential[i], p);
        else
            APPEND("ReadOnlyPaths=%s\n", p);
    }
    if (s->workdir) /* the config file's relative paths, as they were checked */
        APPEND("WorkingDirectory=%s\n", workdir);
    char done[4][4200];
    size_t ndone = 0;
    for (size_t i = 0; i < sizeof s->writable / sizeof s->writable[0]; i++) {
        if (!s->writable[i]) continue;
        char dir[4200];
        dir_of(dir, sizeof dir, s->writable[i]);
        if (unit_path(p, sizeof p, dir, "a log or pid file's folder", 0, err, errlen) < 0)
            return -1;
        int seen = 0;
        for (size_t k = 0; k < ndone; k++) seen |= strcmp(done[k], p) == 0;
        if (seen) continue;
        strcpy(done[ndone++], p);
        /* /var/log/NAME and /run/NAME: systemd makes the folder and gives
         * it to the dynamic user; elsewhere it must already be writable */
        if (strncmp(dir, "/var/log/", 9) == 0 && dir[9] && !strchr(dir + 9, '/'))
            APPEND("LogsDirectory=%s\n", p + 9);
        else if (strncmp(dir, "/run/", 5) == 0 && dir[5] && !strchr(dir + 5, '/'))
            APPEND("RuntimeDirectory=%s\n", p + 5);
        else
            APPEND("ReadWritePaths=%s\n", p);
    }
    APPEND("\n[Install]\nWantedBy=multi-user.target\n");
    if (n >= cap) {
        snprintf(err, errlen, "the unit is too long");
        return -1;
    }
    return (int)n;
}

/* sd_booted(): systemd is the running init */
static int systemd_running(void)
{
    struct stat st;
    return lstat("/run/systemd/system", &st) == 0 && S_ISDIR(st.st_mode);
}

static int run(const char *const argv[])
{
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void unit_file(char *dst, size_t cap, const char *dir, const char *name)
{
    snprintf(dst, cap, "%s/%s.service", dir, name);
}

int service_install(const service_spec *s)
{
    static char text[65536];
    char err[512], path[4096], tmp[4200];
    int n = service_unit_text(s, text, sizeof text, err, sizeof err);
    if (n < 0) {
        fprintf(stderr, "cshttpd: --install-service: %s\n", err);
        return 1;
    }
    unit_file(path, sizeof path, s->unit_dir, s->name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "cshttpd: --install-service: %s: %s\n", tmp, strerror(errno));
        return 1;
    }
    ssize_t w = write(fd, text, (size_t)n);
    if (w != n || fsync(fd) < 0 || close(fd) < 0 || rename(tmp, path) < 0) {
        fprintf(stderr, "cshttpd: --install-service: %s: %s\n", path,
                w != n ? "short write" : strerror(errno));
        unlink(tmp);
        return 1;
    }
    printf("cshttpd: wrote %s\n", path);
    if (!systemd_running()) {
        printf("cshttpd: systemd is not running here: the unit is written but not enabled "
               "(on a systemd host: systemctl daemon-reload && systemctl enable --now %s)\n",
               s->name);
        return 0;
    }
    char unit[256];
    snprintf(unit, sizeof unit, "%s.service", s->name);
    const char *reload[] = {"systemctl", "daemon-reload", NULL};
    const char *enable[] = {"systemctl", "enable", unit, NULL};
    if (run(reload) != 0 || run(enable) != 0) {
        fprintf(stderr, "cshttpd: systemctl daemon-reload && systemctl enable %s failed\n", unit);
        return 1;
    }
    printf("cshttpd: enabled %s; start it with systemctl start %s\n", unit, unit);
    return 0;
}

int service_uninstall(const char *name, const char *unit_dir)
{
    char path[4096], unit[256];
    unit_file(path, sizeof path, unit_dir, name);
    snprintf(unit, sizeof unit, "%s.service", name);
    if (access(path, F_OK) != 0) {
        fprintf(stderr, "cshttpd: --uninstall-service: %s: %s\n", path, strerror(errno));
        return 1;
    }
    if (systemd_running()) {
        const char *disable[] = {"systemctl", "disable", "--now", unit, NULL};
        if (run(disable) != 0)
            fprintf(stderr, "cshttpd: systemctl disable --now %s failed\n", unit);
    }
    if (unlink(path) < 0) {
        fprintf(stderr, "cshttpd: --uninstall-service: %s: %s\n", path, strerror(errno));
        return 1;
    }
    printf("cshttpd: removed %s\n", path);
    if (systemd_running()) {
        const char *reload[] = {"systemctl", "daemon-reload", NULL};
        run(reload);
    }
    return 0;
}

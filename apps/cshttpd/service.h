/* cshttpd --install-service / --uninstall-service: a hardened systemd unit
 * that starts cshttpd with a config file. */
#ifndef CSHTTPD_SERVICE_H
#define CSHTTPD_SERVICE_H

#include <stddef.h>

typedef struct service_spec {
    const char *name;        /* unit name without ".service" */
    const char *unit_dir;    /* where the unit goes (default /etc/systemd/system) */
    const char *exe;         /* absolute path of cshttpd */
    const char *config;      /* absolute path of the config file */
    const char *root;        /* absolute path of the folder served */
    unsigned port, tls_port; /* the ports; tls_port 0 without HTTPS */
    const char *writable[4]; /* log files and pid file (absolute; NULL: none) */
    const char *readable[2]; /* TLS certificate and key (absolute; NULL: none) */
    /* the TLS files go in as credentials: systemd reads them as root at
     * start (a key only root can read) and hands the unit a copy; else
     * the unit reads them itself, read-only, and a reload sees new ones */
    int tls_credentials;
    /* the folder the config file's relative paths were checked from
     * (absolute), the service's working folder; NULL when none is relative */
    const char *workdir;
} service_spec;

/* The unit's text into buf[cap]; its length, or -1 with a message in err
 * when a path cannot go into a unit (whitespace, quotes, controls, not
 * UTF-8). */
int service_unit_text(const service_spec *s, char *buf, size_t cap, char *err, size_t errlen);

/* Writes the unit (atomically: a temporary file renamed), then, when
 * systemd runs, systemctl daemon-reload and enable. 0, or 1 with the
 * problem printed. */
int service_install(const service_spec *s);

/* Disables (when systemd runs) and removes the unit. 0, or 1. */
int service_uninstall(const char *name, const char *unit_dir);

/* Whether a unit name is usable: [A-Za-z0-9:_.@-], at most 200 bytes. */
int service_name_ok(const char *name);

#endif

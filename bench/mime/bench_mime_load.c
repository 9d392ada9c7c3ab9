/* Loads a mime.types file into the toolkit's table once: what
 * bench/mime/callgrind.sh counts in instructions (cshw_mime_types_load
 * alone, with callgrind's --toggle-collect). Exit 1 when the file fails
 * to load. Usage: bench_mime_load [FILE] (default /etc/mime.types) */
#include <stdio.h>

#include <cshttp/web/mime.h>

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "/etc/mime.types";
    cshw_mime_types *m = cshw_mime_types_new();
    if (!m) {
        fprintf(stderr, "bench_mime_load: out of memory\n");
        return 1;
    }
    char err[512];
    int taken = cshw_mime_types_load(m, path, err, sizeof err);
    if (taken < 0) {
        fprintf(stderr, "bench_mime_load: %s\n", err);
        cshw_mime_types_free(m);
        return 1;
    }
    printf("%s: %d extensions taken\n", path, taken);
    cshw_mime_types_free(m);
    return 0;
}

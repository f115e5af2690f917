/* The syscall floor for composing personas: per directory, open it, then
 * for each bootstrap name openat, fstat, one bounded read into a reused
 * buffer, close. No decoding, no Python: the least any reader can do with
 * these calls. benchmarks/floor.py compiles this into a shared library with
 * the system compiler and calls floor_pass() through ctypes;
 * transcode_floor.c builds on it. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stddef.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *NAMES[] = {"AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md",
                              "TOOLS.md", "HEARTBEAT.md", "MEMORY.md"};

#ifndef O_PATH
#define O_PATH O_RDONLY
#endif

/* Read the first cap + 1 bytes of name in dfd into buf: bytes read, or -1. */
static ssize_t floor_read(int dfd, const char *name, void *buf, long long cap) {
    int fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return -1;
    struct stat st;
    ssize_t got = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, buf, (size_t)cap + 1) : -1;
    close(fd);
    return got;
}

/* One pass over ndirs directories; buf holds at least cap + 1 bytes.
 * Returns the number of bytes read. */
long long floor_pass(const char *const *dirs, int ndirs, char *buf, long long cap) {
    long long bytes = 0;
    for (int d = 0; d < ndirs; d++) {
        int dfd = open(dirs[d], O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) continue;
        for (int n = 0; n < 7; n++) {
            ssize_t got = floor_read(dfd, NAMES[n], buf, cap);
            if (got > 0) bytes += got;
        }
        close(dfd);
    }
    return bytes;
}

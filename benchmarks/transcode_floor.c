/* The transcode floor for large homes: floor.c's system calls, then the one
 * thing any reader returning str must do with the bytes: back off to a
 * character boundary at the cap, validate them as UTF-8 and write them once,
 * as characters of the narrowest width that holds them, into a reused
 * buffer. No trimming, no sections, no Python object. The decoder is the
 * compiled reader's own (capread_utf8.h), the fastest this project has.
 * benchmarks/floor.py builds this into a shared library and calls it
 * through ctypes. */
#include "floor.c"

#include "capread_utf8.h"

void transcode_init(void) { tnx_utf8_init(); }

/* One pass over ndirs directories; buf holds at least cap + 1 bytes and out
 * 4 * (cap + 16) bytes. Returns the characters written, or -1 when a file
 * is not well-formed UTF-8 (the benchmark's data always is). */
long long transcode_pass(const char *const *dirs, int ndirs, unsigned char *buf, long long cap, void *out) {
    long long chars = 0;
    for (int d = 0; d < ndirs; d++) {
        int dfd = open(dirs[d], O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) continue;
        for (int n = 0; n < 7; n++) {
            ssize_t got = floor_read(dfd, NAMES[n], buf, cap);
            if (got <= 0) continue;
            size_t end = (size_t)got;
            if (end > (size_t)cap) { /* cut at the cap, backing off to a character start */
                end = (size_t)cap;
                while (end > 0 && (size_t)cap - end < 3 && (buf[end] & 0xC0) == 0x80) end--;
            }
            tnx_text text;
            if (!tnx_utf8_scan(buf, end, &text)) {
                close(dfd);
                return -1;
            }
            int kind = text.maxchar > 0xFFFF ? 4 : text.maxchar > 0xFF ? 2 : 1;
            tnx_utf8_fill(buf, end, &text, out, kind, text.nchars + 16);
            chars += (long long)text.nchars;
        }
        close(dfd);
    }
    return chars;
}

/* Platform shims and the UTF-8 decoder of the compiled reader.
 *
 * Everything here is plain C that runs without the GIL: opening with
 * openat2 where the kernel has it, nanosecond timestamps on Linux and macOS,
 * and a two-pass decoder for well-formed UTF-8 (scan, then fill a str that
 * CPython allocated). Ill-formed input is left to CPython's own decoder, so
 * U+FFFD replacement is exactly CPython's. */
#ifndef TOOLNEXUS_CAPREAD_C_H
#define TOOLNEXUS_CAPREAD_C_H

#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif
#ifndef O_NOCTTY
#define O_NOCTTY 0
#endif
#ifndef O_DIRECTORY
#define O_DIRECTORY 0
#endif
/* O_PATH needs only search permission on the directory, as a path does. */
#ifdef O_PATH
#define TNX_DIR_FLAGS (O_PATH | O_DIRECTORY | O_CLOEXEC)
#else
#define TNX_DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_CLOEXEC)
#endif
#define TNX_FILE_FLAGS (O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)

/* openat2 has one number on the Linux ABIs that lack the constant in
   older headers; the odd ones out keep the portable fallback. */
#if defined(__linux__) && !defined(SYS_openat2) && !defined(__alpha__) \
    && !defined(__mips__) && !defined(__ia64__)
#define SYS_openat2 437
#endif

static int tnx_openat2_beneath(int dirfd, const char *name) {
#if defined(__linux__) && defined(SYS_openat2)
    /* struct open_how; RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS */
    struct { unsigned long long flags, mode, resolve; } how;
    how.flags = TNX_FILE_FLAGS;
    how.mode = 0;
    how.resolve = 0x08 | 0x02;
    return (int)syscall(SYS_openat2, dirfd, name, &how, sizeof how);
#else
    (void)dirfd; (void)name;
    errno = ENOSYS;
    return -1;
#endif
}

static void tnx_set_errno(int err) { errno = err; }

static long long tnx_mtime_ns(const struct stat *st) {
#if defined(__APPLE__)
    return (long long)st->st_mtimespec.tv_sec * 1000000000LL + st->st_mtimespec.tv_nsec;
#else
    return (long long)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
#endif
}

static long long tnx_ctime_ns(const struct stat *st) {
#if defined(__APPLE__)
    return (long long)st->st_ctimespec.tv_sec * 1000000000LL + st->st_ctimespec.tv_nsec;
#else
    return (long long)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec;
#endif
}

/* ---- UTF-8 ------------------------------------------------------------- */

#define TNX_ASCII_MASK 0x8080808080808080ULL

#define TNX_SCAN_OK 1
#define TNX_SCAN_ILL_FORMED 0
#define TNX_SCAN_DENSE 2

/* How many bytes of s[0:n] are UTF-8 continuation bytes? A loop the
 * compiler vectorizes: a fraction of a cycle per byte. */
static size_t tnx_utf8_continuations(const unsigned char *s, size_t n) {
    size_t count = 0;
    for (size_t i = 0; i < n; i++) count += (s[i] & 0xC0) == 0x80;
    return count;
}

/* Is s[0:n] well-formed UTF-8 (Unicode table 3-7: no overlongs, no
 * surrogates, nothing above U+10FFFF)? If so, count its code points and find
 * the largest one (at least 0x7F, which is all that matters for an all-ASCII
 * text). Returns TNX_SCAN_OK, TNX_SCAN_ILL_FORMED, or TNX_SCAN_DENSE without
 * looking further when over 1/8 of the bytes are continuation bytes: on such
 * text (Tamil, emoji, CJK) CPython's one-pass decoder beats scan-and-fill. */
static int tnx_utf8_scan(const unsigned char *s, size_t n, size_t *nchars, uint32_t *maxchar) {
    size_t i = 0, count = 0;
    uint32_t max = 0x7F;
    if (tnx_utf8_continuations(s, n) * 8 > n) return TNX_SCAN_DENSE;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t word;
            memcpy(&word, s + i, 8);
            if ((word & TNX_ASCII_MASK) == 0) {
                i += 8;
                count += 8;
                continue;
            }
        }
        unsigned int c = s[i];
        uint32_t cp;
        if (c < 0x80) {
            i += 1;
            count += 1;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80) return TNX_SCAN_ILL_FORMED;
            cp = ((c & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu);
            i += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (i + 2 >= n) return TNX_SCAN_ILL_FORMED;
            unsigned int c1 = s[i + 1], c2 = s[i + 2];
            unsigned int lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
            if (c1 < lo || c1 > hi || (c2 & 0xC0) != 0x80) return TNX_SCAN_ILL_FORMED;
            cp = ((c & 0x0Fu) << 12) | ((c1 & 0x3Fu) << 6) | (c2 & 0x3Fu);
            i += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (i + 3 >= n) return TNX_SCAN_ILL_FORMED;
            unsigned int c1 = s[i + 1], c2 = s[i + 2], c3 = s[i + 3];
            unsigned int lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
            if (c1 < lo || c1 > hi || (c2 & 0xC0) != 0x80 || (c3 & 0xC0) != 0x80) {
                return TNX_SCAN_ILL_FORMED;
            }
            cp = ((c & 0x07u) << 18) | ((c1 & 0x3Fu) << 12) | ((c2 & 0x3Fu) << 6) | (c3 & 0x3Fu);
            i += 4;
        } else {
            return TNX_SCAN_ILL_FORMED;
        }
        count += 1;
        if (cp > max) max = cp;
    }
    *nchars = count;
    *maxchar = max;
    return TNX_SCAN_OK;
}

/* Decode well-formed s[0:n] (checked by tnx_utf8_scan) into out, whose
 * characters are 1, 2 or 4 bytes wide: one loop per width, so the inner
 * loops have no branch on it. */
#define TNX_UTF8_FILL(NAME, T)                                                  \
    static void NAME(const unsigned char *s, size_t n, T *out) {              \
        size_t i = 0, j = 0;                                                    \
        while (i < n) {                                                         \
            if (i + 8 <= n) {                                                   \
                uint64_t word;                                                  \
                memcpy(&word, s + i, 8);                                        \
                if ((word & TNX_ASCII_MASK) == 0) {                             \
                    for (int k = 0; k < 8; k++) out[j + k] = (T)s[i + k];       \
                    i += 8;                                                     \
                    j += 8;                                                     \
                    continue;                                                   \
                }                                                               \
            }                                                                   \
            unsigned int c = s[i];                                              \
            if (c < 0x80) {                                                     \
                out[j++] = (T)c;                                                \
                i += 1;                                                         \
            } else if (c < 0xE0) {                                              \
                out[j++] = (T)(((c & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu));       \
                i += 2;                                                         \
            } else if (c < 0xF0) {                                              \
                out[j++] = (T)(((c & 0x0Fu) << 12) | ((s[i + 1] & 0x3Fu) << 6) \
                               | (s[i + 2] & 0x3Fu));                           \
                i += 3;                                                         \
            } else {                                                            \
                out[j++] = (T)(((c & 0x07u) << 18) | ((s[i + 1] & 0x3Fu) << 12) \
                               | ((s[i + 2] & 0x3Fu) << 6) | (s[i + 3] & 0x3Fu)); \
                i += 4;                                                         \
            }                                                                   \
        }                                                                       \
    }

TNX_UTF8_FILL(tnx_utf8_fill1, uint8_t)
TNX_UTF8_FILL(tnx_utf8_fill2, uint16_t)
TNX_UTF8_FILL(tnx_utf8_fill4, uint32_t)

static void tnx_utf8_fill(const unsigned char *s, size_t n, void *out, int kind, uint32_t maxchar) {
    if (maxchar < 0x80) {
        memcpy(out, s, n); /* all ASCII: the bytes are the characters */
    } else if (kind == 1) {
        tnx_utf8_fill1(s, n, (uint8_t *)out);
    } else if (kind == 2) {
        tnx_utf8_fill2(s, n, (uint16_t *)out);
    } else {
        tnx_utf8_fill4(s, n, (uint32_t *)out);
    }
}

#endif /* TOOLNEXUS_CAPREAD_C_H */

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
#include <sched.h>
#include <time.h>
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

/* A change this recent may share its timestamps with the next one: the
 * kernel stamps files from a clock that ticks every 1-10 ms. */
#define RECENT_NS 100000000LL

static long long tnx_ns(struct timespec ts) {
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long tnx_now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return tnx_ns(now);
}

/* st_mtim and st_ctim are st_mtimespec and st_ctimespec on macOS. */
#if defined(__APPLE__)
static long long tnx_mtime_ns(const struct stat *st) { return tnx_ns(st->st_mtimespec); }
static long long tnx_ctime_ns(const struct stat *st) { return tnx_ns(st->st_ctimespec); }
#else
static long long tnx_mtime_ns(const struct stat *st) { return tnx_ns(st->st_mtim); }
static long long tnx_ctime_ns(const struct stat *st) { return tnx_ns(st->st_ctim); }
#endif

/* ---- UTF-8 ------------------------------------------------------------- */

#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#define TNX_SSE2 1
#endif

#define TNX_SCAN_OK 1
#define TNX_SCAN_ILL_FORMED 0
#define TNX_SCAN_DENSE 2
/* Text with more than 1/8 of its bytes in continuation bytes is "dense"
 * (Tamil, emoji, CJK): CPython's one-pass decoder beats scan-and-fill there.
 * The scan checks every TNX_DENSE_STEP bytes, so it gives up early. */
#define TNX_DENSE_STEP 256

/* Are the 16 bytes at p all ASCII? */
static inline int tnx_ascii16(const unsigned char *p) {
#ifdef TNX_SSE2
    return _mm_movemask_epi8(_mm_loadu_si128((const __m128i *)p)) == 0;
#else
    uint64_t a, b;
    memcpy(&a, p, 8);
    memcpy(&b, p + 8, 8);
    return ((a | b) & 0x8080808080808080ULL) == 0;
#endif
}

/* Is s[0:n] well-formed UTF-8 (Unicode table 3-7: no overlongs, no
 * surrogates, nothing above U+10FFFF)? If so, count its code points and find
 * the largest one (at least 0x7F, which is all that matters for an all-ASCII
 * text). Returns TNX_SCAN_OK, TNX_SCAN_ILL_FORMED, or TNX_SCAN_DENSE (then
 * nothing else is known). */
static int tnx_utf8_scan(const unsigned char *s, size_t n, size_t *nchars, uint32_t *maxchar) {
    size_t i = 0, count = 0, check = TNX_DENSE_STEP;
    uint32_t max = 0x7F;
    while (i < n) {
        if (i >= check) {
            if ((i - count) * 8 > i) return TNX_SCAN_DENSE;
            check = i + TNX_DENSE_STEP;
        }
        if (i + 16 <= n && tnx_ascii16(s + i)) {
            i += 16;
            count += 16;
            continue;
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
    if ((n - count) * 8 > n) return TNX_SCAN_DENSE;
    *nchars = count;
    *maxchar = max;
    return TNX_SCAN_OK;
}

/* Widen 16 ASCII bytes at p to 16 characters at out. */
static inline void tnx_widen16_1(const unsigned char *p, uint8_t *out) { memcpy(out, p, 16); }

static inline void tnx_widen16_2(const unsigned char *p, uint16_t *out) {
#ifdef TNX_SSE2
    __m128i v = _mm_loadu_si128((const __m128i *)p), zero = _mm_setzero_si128();
    _mm_storeu_si128((__m128i *)out, _mm_unpacklo_epi8(v, zero));
    _mm_storeu_si128((__m128i *)(out + 8), _mm_unpackhi_epi8(v, zero));
#else
    for (int k = 0; k < 16; k++) out[k] = p[k];
#endif
}

static inline void tnx_widen16_4(const unsigned char *p, uint32_t *out) {
#ifdef TNX_SSE2
    __m128i v = _mm_loadu_si128((const __m128i *)p), zero = _mm_setzero_si128();
    __m128i lo = _mm_unpacklo_epi8(v, zero), hi = _mm_unpackhi_epi8(v, zero);
    _mm_storeu_si128((__m128i *)out, _mm_unpacklo_epi16(lo, zero));
    _mm_storeu_si128((__m128i *)(out + 4), _mm_unpackhi_epi16(lo, zero));
    _mm_storeu_si128((__m128i *)(out + 8), _mm_unpacklo_epi16(hi, zero));
    _mm_storeu_si128((__m128i *)(out + 12), _mm_unpackhi_epi16(hi, zero));
#else
    for (int k = 0; k < 16; k++) out[k] = p[k];
#endif
}

/* Decode well-formed s[0:n] (checked by tnx_utf8_scan) into out, whose
 * characters are 1, 2 or 4 bytes wide: one function per width, so the
 * inner loop has no branch on it. */
#define TNX_UTF8_FILL(NAME, T, WIDEN16)                                        \
    static void NAME(const unsigned char *s, size_t n, T *out) {               \
        size_t i = 0, j = 0;                                                    \
        while (i < n) {                                                         \
            if (i + 16 <= n && tnx_ascii16(s + i)) {                            \
                WIDEN16(s + i, out + j);                                        \
                i += 16;                                                        \
                j += 16;                                                        \
                continue;                                                       \
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

TNX_UTF8_FILL(tnx_utf8_fill1, uint8_t, tnx_widen16_1)
TNX_UTF8_FILL(tnx_utf8_fill2, uint16_t, tnx_widen16_2)
TNX_UTF8_FILL(tnx_utf8_fill4, uint32_t, tnx_widen16_4)

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

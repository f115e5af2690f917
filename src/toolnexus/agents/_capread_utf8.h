/* UTF-8 for the compiled reader: trim, scan, fill, copy.
 *
 * Trim: White_Space at either end of a body, removed at the byte level
 * (each such character has one UTF-8 encoding, and none of its bytes can be
 * taken into a neighbouring sequence, so this equals trimming the decoded
 * text). Scan and fill: a two-pass decoder for well-formed UTF-8 (check,
 * count characters, find the widest; then write them into a str that
 * CPython allocated with that size and width). Copy: characters of one str
 * into a wider or equal one. Plain C that runs without the GIL. Ill-formed
 * input is left to CPython's own decoder, so U+FFFD replacement is exactly
 * CPython's. */
#ifndef TOOLNEXUS_CAPREAD_UTF8_H
#define TOOLNEXUS_CAPREAD_UTF8_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- trim --------------------------------------------------------------- */

/* The length of the White_Space character that s[0:n] starts with, or 0:
 * U+0009..U+000D, U+0020, U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028,
 * U+2029, U+202F, U+205F, U+3000. */
static size_t tnx_space_at(const unsigned char *s, size_t n) {
    unsigned int c = s[0];
    if (c == 0x20 || (c >= 0x09 && c <= 0x0D)) return 1;
    if (c == 0xC2) return n >= 2 && (s[1] == 0x85 || s[1] == 0xA0) ? 2 : 0;
    if (n < 3) return 0;
    if (c == 0xE1) return s[1] == 0x9A && s[2] == 0x80 ? 3 : 0;
    if (c == 0xE2) {
        if (s[1] == 0x80) {
            unsigned int d = s[2];
            return (d >= 0x80 && d <= 0x8A) || d == 0xA8 || d == 0xA9 || d == 0xAF ? 3 : 0;
        }
        return s[1] == 0x81 && s[2] == 0x9F ? 3 : 0;
    }
    if (c == 0xE3) return s[1] == 0x80 && s[2] == 0x80 ? 3 : 0;
    return 0;
}

/* The length of the White_Space character that s[0:n] ends with, or 0. */
static size_t tnx_space_before(const unsigned char *s, size_t n) {
    unsigned int c = s[n - 1];
    if (c == 0x20 || (c >= 0x09 && c <= 0x0D)) return 1;
    if (c < 0x80 || c > 0xBF) return 0;  /* a multi-byte one ends in a continuation byte */
    if (n >= 2 && s[n - 2] == 0xC2) return c == 0x85 || c == 0xA0 ? 2 : 0;
    return n >= 3 && tnx_space_at(s + n - 3, 3) == 3 ? 3 : 0;
}

/* Move *start past the White_Space that s[*start:end] begins with. */
static void tnx_trim_start(const unsigned char *s, size_t *start, size_t end) {
    size_t k;
    while (*start < end && (k = tnx_space_at(s + *start, end - *start)) != 0) *start += k;
}

/* Move *end back over the White_Space that s[start:*end] ends with. */
static void tnx_trim_end(const unsigned char *s, size_t start, size_t *end) {
    size_t k;
    while (*end > start && (k = tnx_space_before(s + start, *end - start)) != 0) *end -= k;
}

/* Narrow [*start, *end) of s to leave out White_Space at both ends. */
static void tnx_trim(const unsigned char *s, size_t *start, size_t *end) {
    tnx_trim_start(s, start, *end);
    tnx_trim_end(s, *start, end);
}

/* ---- copy ---------------------------------------------------------------- */

/* n characters of width from_kind at src, to width to_kind (>= from_kind) at dst. */
static void tnx_copy_chars(const void *src, int from_kind, size_t n, void *dst, int to_kind) {
    size_t i;
    if (from_kind == to_kind) {
        memcpy(dst, src, n * (size_t)to_kind);
    } else if (from_kind == 1 && to_kind == 2) {
        for (i = 0; i < n; i++) ((uint16_t *)dst)[i] = ((const uint8_t *)src)[i];
    } else if (from_kind == 1) {
        for (i = 0; i < n; i++) ((uint32_t *)dst)[i] = ((const uint8_t *)src)[i];
    } else {
        for (i = 0; i < n; i++) ((uint32_t *)dst)[i] = ((const uint16_t *)src)[i];
    }
}

/* ---- scan and fill ------------------------------------------------------- */

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

/* Decode well-formed s[0:n], whose widest character is maxchar, into out,
 * whose characters are kind (1, 2 or 4) bytes wide. */
static void tnx_utf8_fill(const unsigned char *s, size_t n, void *out, int kind, uint32_t maxchar) {
    if (maxchar < 0x80 && kind == 1) {
        memcpy(out, s, n); /* all ASCII into a 1-byte str: the bytes are the characters */
    } else if (kind == 1) {
        tnx_utf8_fill1(s, n, (uint8_t *)out);
    } else if (kind == 2) {
        tnx_utf8_fill2(s, n, (uint16_t *)out);
    } else {
        tnx_utf8_fill4(s, n, (uint32_t *)out);
    }
}

#endif /* TOOLNEXUS_CAPREAD_UTF8_H */

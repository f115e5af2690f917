/* UTF-8 for the compiled reader: trim, copy, and a two-pass decoder.
 *
 * Trim: White_Space at either end of a body, removed at the byte level
 * (each such character has one UTF-8 encoding, and none of its bytes can be
 * taken into a neighbouring sequence, so this equals trimming the decoded
 * text). Copy: characters of one str into a wider or equal one.
 *
 * Decode: scan (is it well-formed UTF-8, how many characters, how wide is
 * the widest), then fill (write the characters into a str that CPython
 * allocated with that size and width). Both have a vector path, chosen at
 * run time (tnx_utf8_init): SSSE3 on x86-64, NEON on AArch64; and a scalar
 * one everywhere. The scan checks 16 bytes at a time with three table
 * lookups per byte pair, after Keiser and Lemire ("Validating UTF-8 in less
 * than one instruction per byte", 2021). The fill widens runs of ASCII
 * directly, and otherwise gathers up to four characters into 32-bit lanes
 * with one shuffle, chosen by where characters end in the next 12 bytes
 * (a table of 4,096 shuffles built at start), and combines their bits with
 * two multiply-adds. A long text is filled as two streams, its halves side
 * by side (the scan counts the characters before the middle), so that the
 * CPU works on two independent chains of steps; ASCII is copied as it is.
 * Plain C that runs without the GIL. Ill-formed input is
 * left to CPython's own decoder, so U+FFFD replacement is exactly CPython's. */
#ifndef TOOLNEXUS_CAPREAD_UTF8_H
#define TOOLNEXUS_CAPREAD_UTF8_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- trim --------------------------------------------------------------- */

/* The length of the White_Space character that s[0:n] starts with, or 0:
 * U+0009..U+000D, U+0020, U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028,
 * U+2029, U+202F, U+205F, U+3000. */
static inline size_t tnx_space_at(const unsigned char *s, size_t n) {
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
static inline size_t tnx_space_before(const unsigned char *s, size_t n) {
    unsigned int c = s[n - 1];
    if (c == 0x20 || (c >= 0x09 && c <= 0x0D)) return 1;
    if (c < 0x80 || c > 0xBF) return 0;  /* a multi-byte one ends in a continuation byte */
    if (n >= 2 && s[n - 2] == 0xC2) return c == 0x85 || c == 0xA0 ? 2 : 0;
    return n >= 3 && tnx_space_at(s + n - 3, 3) == 3 ? 3 : 0;
}

/* Move *start past the White_Space that s[*start:end] begins with. */
static inline void tnx_trim_start(const unsigned char *s, size_t *start, size_t end) {
    size_t k;
    while (*start < end && (k = tnx_space_at(s + *start, end - *start)) != 0) *start += k;
}

/* Move *end back over the White_Space that s[start:*end] ends with. */
static inline void tnx_trim_end(const unsigned char *s, size_t start, size_t *end) {
    size_t k;
    while (*end > start && (k = tnx_space_before(s + start, *end - start)) != 0) *end -= k;
}

/* Narrow [*start, *end) of s to leave out White_Space at both ends. */
static inline void tnx_trim(const unsigned char *s, size_t *start, size_t *end) {
    tnx_trim_start(s, start, *end);
    tnx_trim_end(s, *start, end);
}

/* ---- copy ---------------------------------------------------------------- */

/* n characters of width from_kind at src, to width to_kind (>= from_kind) at dst. */
static inline void tnx_copy_chars(const void *src, int from_kind, size_t n, void *dst, int to_kind) {
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

/* ---- decode ---------------------------------------------------------------- */

#define TNX_SCAN_OK 1

/* What a scan learns of a well-formed text. The fill may decode it as two
 * streams at once, the second from ``split`` (a multiple of 16; 0: one
 * stream), which ``before`` characters precede: two chains of steps that
 * do not wait for each other go nearly twice as fast as one. */
typedef struct {
    size_t nchars;    /* characters */
    uint32_t maxchar; /* the width class of the widest: 0x7F, 0xFF, 0xFFFF or 0x10FFFF */
    size_t split;
    size_t before;
} tnx_text;

/* Texts shorter than this are decoded as one stream. */
#define TNX_SPLIT_MIN 4096

#if defined(__GNUC__) && defined(__x86_64__)
#define TNX_X86 1
#include <immintrin.h>
#define TNX_SSSE3 __attribute__((target("ssse3")))
#elif defined(__aarch64__) && defined(__ARM_NEON)
#define TNX_NEON 1
#include <arm_neon.h>
#endif

/* Which path decodes: 0 scalar, 1 vector (SSSE3 or NEON). */
static int tnx_simd = 0;

/* The width class of the widest character of well-formed text, from its
 * largest byte (a lead byte says the range of its character): what
 * PyUnicode_New needs to pick the str's kind exactly. */
static uint32_t tnx_width_class(unsigned int top) {
    if (top < 0x80) return 0x7F;
    if (top < 0xC4) return 0xFF;
    if (top < 0xF0) return 0xFFFF;
    return 0x10FFFF;
}

/* -- scalar ---------------------------------------------------------------- */

/* Is s[0:n] well-formed UTF-8 (Unicode table 3-7: no overlongs, no
 * surrogates, nothing above U+10FFFF)? If so, count its characters and find
 * the width class of the widest. */
static int tnx_scan_scalar(const unsigned char *s, size_t n, tnx_text *text) {
    size_t i = 0, conts = 0;
    unsigned int top = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t word;
            memcpy(&word, s + i, 8);
            if ((word & 0x8080808080808080ULL) == 0) {
                i += 8;
                continue;
            }
        }
        unsigned int c = s[i];
        if (c < 0x80) {
            i += 1;
            continue;
        }
        if (c > top) top = c;
        if (c >= 0xC2 && c <= 0xDF) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80) return 0;
            i += 2;
            conts += 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (i + 2 >= n) return 0;
            unsigned int c1 = s[i + 1], c2 = s[i + 2];
            unsigned int lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
            if (c1 < lo || c1 > hi || (c2 & 0xC0) != 0x80) return 0;
            i += 3;
            conts += 2;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (i + 3 >= n) return 0;
            unsigned int c1 = s[i + 1], c2 = s[i + 2], c3 = s[i + 3];
            unsigned int lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
            if (c1 < lo || c1 > hi || (c2 & 0xC0) != 0x80 || (c3 & 0xC0) != 0x80) return 0;
            i += 4;
            conts += 3;
        } else {
            return 0;
        }
    }
    text->nchars = n - conts;
    text->maxchar = tnx_width_class(top);
    text->split = text->before = 0;
    return TNX_SCAN_OK;
}

/* Decode well-formed s[0:n] into out, one function per character width. */
#define TNX_FILL_SCALAR(NAME, T)                                                \
    static void NAME(const unsigned char *s, size_t n, T *out) {                \
        size_t i = 0, j = 0;                                                    \
        while (i < n) {                                                         \
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

TNX_FILL_SCALAR(tnx_fill_scalar1, uint8_t)
TNX_FILL_SCALAR(tnx_fill_scalar2, uint16_t)
TNX_FILL_SCALAR(tnx_fill_scalar4, uint32_t)

static void tnx_fill_scalar(const unsigned char *s, size_t n, void *out, int kind) {
    if (kind == 1) {
        tnx_fill_scalar1(s, n, (uint8_t *)out);
    } else if (kind == 2) {
        tnx_fill_scalar2(s, n, (uint16_t *)out);
    } else {
        tnx_fill_scalar4(s, n, (uint32_t *)out);
    }
}

/* -- the vector fill's table ------------------------------------------------ */

/* For each 12-bit mask of where characters end (bit i: byte i is the last
 * byte of a character): how many bytes the first characters (up to four,
 * each at most 4 bytes) take, how many they are, and which shuffle puts
 * them into 32-bit lanes, last byte lowest, unused bytes zero. Only a few
 * hundred shuffles differ, so both tables fit the first-level cache. */
typedef struct {
    uint8_t consumed;
    uint8_t nchars;
    uint16_t shuffle;
} tnx_move;

#define TNX_SHUFFLES 512
static uint8_t tnx_shuffles[TNX_SHUFFLES][16] __attribute__((aligned(16)));
static tnx_move tnx_moves[4096];

static void tnx_build_steps(void) {
    unsigned int count = 0;
    for (unsigned int mask = 0; mask < 4096; mask++) {
        uint8_t shuffle[16];
        unsigned int pos = 0, lanes = 0, index;
        memset(shuffle, 0x80, sizeof shuffle); /* 0x80: a zero byte */
        while (lanes < 4) {
            unsigned int end = pos;
            while (end < 12 && !((mask >> end) & 1)) end++;
            if (end >= 12 || end - pos >= 4) break;
            for (unsigned int k = 0; k <= end - pos; k++) shuffle[lanes * 4 + k] = (uint8_t)(end - k);
            lanes++;
            pos = end + 1;
        }
        for (index = 0; index < count && memcmp(tnx_shuffles[index], shuffle, 16) != 0; index++) continue;
        if (index == count) memcpy(tnx_shuffles[count++], shuffle, 16); /* 341 in all: room enough */
        tnx_moves[mask].consumed = (uint8_t)pos;
        tnx_moves[mask].nchars = (uint8_t)lanes;
        tnx_moves[mask].shuffle = (uint16_t)index;
    }
}

/* Per high nibble of a byte, the bits of it that are payload. */
#define TNX_PAYLOAD_MASKS 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x3F, 0x3F, 0x3F, 0x3F, 0x1F, 0x1F, 0x0F, 0x07

/* -- the vector scan's tables ----------------------------------------------- */

/* Error bits of a byte pair (previous byte, this byte), each a property of
 * the previous byte's high nibble, its low nibble, and this byte's high
 * nibble: a pair is wrong when all three lookups share a bit. TWO_CONTS is
 * right exactly where this byte is the third or fourth of a sequence. */
#define TNX_TOO_SHORT (1 << 0)
#define TNX_TOO_LONG (1 << 1)
#define TNX_OVERLONG_3 (1 << 2)
#define TNX_TOO_LARGE (1 << 3)
#define TNX_SURROGATE (1 << 4)
#define TNX_OVERLONG_2 (1 << 5)
#define TNX_TOO_LARGE_1000 (1 << 6)
#define TNX_OVERLONG_4 (1 << 6)
#define TNX_TWO_CONTS (1 << 7)
#define TNX_CARRY (TNX_TOO_SHORT | TNX_TOO_LONG | TNX_TWO_CONTS)

#define TNX_BYTE_1_HIGH                                                                              \
    TNX_TOO_LONG, TNX_TOO_LONG, TNX_TOO_LONG, TNX_TOO_LONG, TNX_TOO_LONG, TNX_TOO_LONG, TNX_TOO_LONG, \
        TNX_TOO_LONG, TNX_TWO_CONTS, TNX_TWO_CONTS, TNX_TWO_CONTS, TNX_TWO_CONTS,                     \
        TNX_TOO_SHORT | TNX_OVERLONG_2, TNX_TOO_SHORT,                                               \
        TNX_TOO_SHORT | TNX_OVERLONG_3 | TNX_SURROGATE,                                              \
        TNX_TOO_SHORT | TNX_TOO_LARGE | TNX_TOO_LARGE_1000 | TNX_OVERLONG_4
#define TNX_BYTE_1_LOW                                                                         \
    TNX_CARRY | TNX_OVERLONG_3 | TNX_OVERLONG_2 | TNX_OVERLONG_4, TNX_CARRY | TNX_OVERLONG_2,   \
        TNX_CARRY, TNX_CARRY, TNX_CARRY | TNX_TOO_LARGE,                                        \
        TNX_CARRY | TNX_TOO_LARGE | TNX_TOO_LARGE_1000, TNX_CARRY | TNX_TOO_LARGE | TNX_TOO_LARGE_1000, \
        TNX_CARRY | TNX_TOO_LARGE | TNX_TOO_LARGE_1000, TNX_CARRY | TNX_TOO_LARGE | TNX_TOO_LARGE_1000, \
        TNX_CARRY | TNX_TOO_LARGE | TNX_TOO_LARGE_1000, TNX_CARRY | TNX_TOO_LARGE | TNX_TOO_LARGE_1000, \
        TNX_CARRY | TNX_TOO_LARGE | TNX_TOO_LARGE_1000, TNX_CARRY | TNX_TOO_LARGE | TNX_TOO_LARGE_1000, \
        TNX_CARRY | TNX_TOO_LARGE | TNX_TOO_LARGE_1000 | TNX_SURROGATE,                         \
        TNX_CARRY | TNX_TOO_LARGE | TNX_TOO_LARGE_1000, TNX_CARRY | TNX_TOO_LARGE | TNX_TOO_LARGE_1000
#define TNX_BYTE_2_HIGH                                                                                      \
    TNX_TOO_SHORT, TNX_TOO_SHORT, TNX_TOO_SHORT, TNX_TOO_SHORT, TNX_TOO_SHORT, TNX_TOO_SHORT, TNX_TOO_SHORT, \
        TNX_TOO_SHORT,                                                                                       \
        TNX_TOO_LONG | TNX_OVERLONG_2 | TNX_TWO_CONTS | TNX_OVERLONG_3 | TNX_TOO_LARGE_1000 | TNX_OVERLONG_4, \
        TNX_TOO_LONG | TNX_OVERLONG_2 | TNX_TWO_CONTS | TNX_OVERLONG_3 | TNX_TOO_LARGE,                       \
        TNX_TOO_LONG | TNX_OVERLONG_2 | TNX_TWO_CONTS | TNX_SURROGATE | TNX_TOO_LARGE,                        \
        TNX_TOO_LONG | TNX_OVERLONG_2 | TNX_TWO_CONTS | TNX_SURROGATE | TNX_TOO_LARGE,                        \
        TNX_TOO_SHORT, TNX_TOO_SHORT, TNX_TOO_SHORT, TNX_TOO_SHORT
/* The last three bytes of a text must not start a sequence it does not finish. */
#define TNX_INCOMPLETE 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 0xF0 - 1, 0xE0 - 1, 0xC0 - 1

/* The vector fills: decode well-formed s[0:n] into out, with room for
 * ``room`` characters, STEP by STEP (TNX_STEP_SSSE3 or TNX_STEP_NEON): in
 * two streams when the scan split the text, the second one first finished,
 * so the first never writes past where the second began; each stream's
 * last bytes by the scalar loop, which writes no more than it decodes. */
#define TNX_FILL(ATTR, NAME, T, STEP, SCALAR)                                                   \
    ATTR static void NAME(const unsigned char *s, size_t n, const tnx_text *text, T *out,          \
                          size_t room) {                                                          \
        size_t i = 0, j = 0;                                                                       \
        if (text->split) {                                                                         \
            size_t k = text->split, m = text->before;                                              \
            while (k < n && (s[k] & 0xC0) == 0x80) k++; /* the second stream starts at a character */ \
            size_t first = k;                                                                      \
            while (i + 16 <= first && j + 16 <= text->before && k + 16 <= n && m + 16 <= room) {   \
                STEP(s, &i, out, &j);                                                              \
                STEP(s, &k, out, &m);                                                              \
            }                                                                                      \
            while (k + 16 <= n && m + 16 <= room) STEP(s, &k, out, &m);                            \
            SCALAR(s + k, n - k, out + m);                                                         \
            n = first;                                                                             \
            room = text->before;                                                                   \
        }                                                                                          \
        while (i + 16 <= n && j + 16 <= room) STEP(s, &i, out, &j);                                \
        SCALAR(s + i, n - i, out + j);                                                             \
    }

/* No function attribute: for the NEON fills. */
#define TNX_PLAIN

/* -- SSSE3 -------------------------------------------------------------------- */

#ifdef TNX_X86

TNX_SSSE3 static __m128i tnx_errors_ssse3(__m128i input, __m128i prev) {
    const __m128i nibble = _mm_set1_epi8(0x0F);
    const __m128i byte_1_high = _mm_setr_epi8(TNX_BYTE_1_HIGH);
    const __m128i byte_1_low = _mm_setr_epi8(TNX_BYTE_1_LOW);
    const __m128i byte_2_high = _mm_setr_epi8(TNX_BYTE_2_HIGH);
    __m128i prev1 = _mm_alignr_epi8(input, prev, 15);
    __m128i special = _mm_and_si128(
        _mm_and_si128(_mm_shuffle_epi8(byte_1_high, _mm_and_si128(_mm_srli_epi16(prev1, 4), nibble)),
                      _mm_shuffle_epi8(byte_1_low, _mm_and_si128(prev1, nibble))),
        _mm_shuffle_epi8(byte_2_high, _mm_and_si128(_mm_srli_epi16(input, 4), nibble)));
    __m128i third = _mm_subs_epu8(_mm_alignr_epi8(input, prev, 14), _mm_set1_epi8((char)(0xE0 - 0x80)));
    __m128i fourth = _mm_subs_epu8(_mm_alignr_epi8(input, prev, 13), _mm_set1_epi8((char)(0xF0 - 0x80)));
    __m128i must23 = _mm_and_si128(_mm_or_si128(third, fourth), _mm_set1_epi8((char)0x80));
    return _mm_xor_si128(must23, special);
}

/* Continuation bytes (0x80..0xBF) of a block, as 0xFF; the others 0. */
TNX_SSSE3 static __m128i tnx_conts_ssse3(__m128i v) { return _mm_cmpgt_epi8(_mm_set1_epi8(-64), v); }

TNX_SSSE3 static size_t tnx_sum_ssse3(__m128i totals, __m128i counts) {
    uint64_t sums[2];
    _mm_storeu_si128((__m128i *)sums, _mm_add_epi64(totals, _mm_sad_epu8(counts, _mm_setzero_si128())));
    return (size_t)(sums[0] + sums[1]);
}

TNX_SSSE3 static int tnx_scan_ssse3(const unsigned char *s, size_t n, tnx_text *text) {
    const __m128i incomplete = _mm_setr_epi8(TNX_INCOMPLETE);
    __m128i prev = _mm_setzero_si128(), error = _mm_setzero_si128(), pending = _mm_setzero_si128();
    __m128i top = _mm_setzero_si128(), counts = _mm_setzero_si128(), totals = _mm_setzero_si128();
    unsigned char last[16];
    size_t i = 0, blocks = 0, split = n >= TNX_SPLIT_MIN ? (n / 2) & ~(size_t)15 : 0, conts_before = 0;
    for (;;) {
        __m128i v;
        if (i == split && split) conts_before = tnx_sum_ssse3(totals, counts);
        int final = i + 16 > n;
        if (final) { /* the rest, padded with zeros: a sequence cut short by the end fails */
            memset(last, 0, sizeof last);
            memcpy(last, s + i, n - i);
            v = _mm_loadu_si128((const __m128i *)last);
        } else {
            v = _mm_loadu_si128((const __m128i *)(s + i));
        }
        if (!final && _mm_movemask_epi8(v) == 0) {
            error = _mm_or_si128(error, pending);
            pending = _mm_setzero_si128();
        } else {
            error = _mm_or_si128(error, tnx_errors_ssse3(v, prev));
            pending = _mm_subs_epu8(v, incomplete);
            top = _mm_max_epu8(top, v);
            counts = _mm_sub_epi8(counts, tnx_conts_ssse3(v)); /* +1 per continuation byte */
            if (++blocks == 255) { /* before a byte counter can wrap */
                totals = _mm_add_epi64(totals, _mm_sad_epu8(counts, _mm_setzero_si128()));
                counts = _mm_setzero_si128();
                blocks = 0;
            }
        }
        if (final) break;
        prev = v;
        i += 16;
    }
    if (_mm_movemask_epi8(_mm_cmpeq_epi8(error, _mm_setzero_si128())) != 0xFFFF) return 0;
    unsigned char tops[16];
    _mm_storeu_si128((__m128i *)tops, top);
    unsigned int widest = 0;
    for (int k = 0; k < 16; k++)
        if (tops[k] > widest) widest = tops[k];
    text->nchars = n - tnx_sum_ssse3(totals, counts);
    text->maxchar = tnx_width_class(widest);
    text->split = split;
    text->before = split - conts_before;
    return TNX_SCAN_OK;
}

/* Store the 16 ASCII bytes of v as 16 characters of 1, 2 or 4 bytes. */
TNX_SSSE3 static inline void tnx_widen1_ssse3(__m128i v, uint8_t *out) { _mm_storeu_si128((__m128i *)out, v); }
TNX_SSSE3 static inline void tnx_widen2_ssse3(__m128i v, uint16_t *out) {
    __m128i zero = _mm_setzero_si128();
    _mm_storeu_si128((__m128i *)out, _mm_unpacklo_epi8(v, zero));
    _mm_storeu_si128((__m128i *)(out + 8), _mm_unpackhi_epi8(v, zero));
}
TNX_SSSE3 static inline void tnx_widen4_ssse3(__m128i v, uint32_t *out) {
    __m128i zero = _mm_setzero_si128();
    __m128i lo = _mm_unpacklo_epi8(v, zero), hi = _mm_unpackhi_epi8(v, zero);
    _mm_storeu_si128((__m128i *)out, _mm_unpacklo_epi16(lo, zero));
    _mm_storeu_si128((__m128i *)(out + 4), _mm_unpackhi_epi16(lo, zero));
    _mm_storeu_si128((__m128i *)(out + 8), _mm_unpacklo_epi16(hi, zero));
    _mm_storeu_si128((__m128i *)(out + 12), _mm_unpackhi_epi16(hi, zero));
}

/* Store the code points of the first 4 32-bit lanes of cp at width 1, 2 or 4. */
TNX_SSSE3 static inline void tnx_put1_ssse3(__m128i cp, uint8_t *out) {
    int packed = _mm_cvtsi128_si32(_mm_shuffle_epi8(cp, _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1)));
    memcpy(out, &packed, 4);
}
TNX_SSSE3 static inline void tnx_put2_ssse3(__m128i cp, uint16_t *out) {
    _mm_storel_epi64((__m128i *)out, _mm_shuffle_epi8(cp, _mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1)));
}
TNX_SSSE3 static inline void tnx_put4_ssse3(__m128i cp, uint32_t *out) { _mm_storeu_si128((__m128i *)out, cp); }

/* One step of the vector fill at s + *i, writing at out + *j: a run of
 * ASCII (16 characters written, the run's kept), or the next characters, up
 * to four (written as four). The caller leaves 16 bytes to read and 16
 * characters of room. */
#define TNX_STEP_SSSE3(NAME, T, WIDEN, PUT)                                                       \
    TNX_SSSE3 static inline void NAME(const unsigned char *s, size_t *i, T *out, size_t *j) {      \
        const __m128i nibble = _mm_set1_epi8(0x0F), payload = _mm_setr_epi8(TNX_PAYLOAD_MASKS);     \
        __m128i v = _mm_loadu_si128((const __m128i *)(s + *i));                                    \
        unsigned int high = (unsigned int)_mm_movemask_epi8(v);                                   \
        unsigned int ascii = high ? (unsigned int)__builtin_ctz(high) : 16;                        \
        if (ascii >= 4) { /* a run of ASCII: widen all 16, keep what is ASCII */                   \
            WIDEN(v, out + *j);                                                                    \
            *i += ascii;                                                                           \
            *j += ascii;                                                                           \
            return;                                                                                \
        }                                                                                          \
        /* bit k: byte k ends a character (byte k + 1 does not continue it) */                     \
        unsigned int ends = (~(unsigned int)_mm_movemask_epi8(tnx_conts_ssse3(v)) >> 1) & 0xFFF;   \
        tnx_move move = tnx_moves[ends];                                                           \
        __m128i lanes = _mm_shuffle_epi8(v, _mm_load_si128((const __m128i *)tnx_shuffles[move.shuffle])); \
        lanes = _mm_and_si128(lanes, _mm_shuffle_epi8(payload, _mm_and_si128(_mm_srli_epi16(lanes, 4), nibble))); \
        PUT(_mm_madd_epi16(_mm_maddubs_epi16(lanes, _mm_set1_epi16(0x4001)), _mm_set1_epi32(0x10000001)), \
            out + *j);                                                                             \
        *i += move.consumed;                                                                       \
        *j += move.nchars;                                                                         \
    }

TNX_STEP_SSSE3(tnx_step_ssse3_1, uint8_t, tnx_widen1_ssse3, tnx_put1_ssse3)
TNX_STEP_SSSE3(tnx_step_ssse3_2, uint16_t, tnx_widen2_ssse3, tnx_put2_ssse3)
TNX_STEP_SSSE3(tnx_step_ssse3_4, uint32_t, tnx_widen4_ssse3, tnx_put4_ssse3)

TNX_FILL(TNX_SSSE3, tnx_fill_ssse3_1, uint8_t, tnx_step_ssse3_1, tnx_fill_scalar1)
TNX_FILL(TNX_SSSE3, tnx_fill_ssse3_2, uint16_t, tnx_step_ssse3_2, tnx_fill_scalar2)
TNX_FILL(TNX_SSSE3, tnx_fill_ssse3_4, uint32_t, tnx_step_ssse3_4, tnx_fill_scalar4)

#endif /* TNX_X86 */

/* -- NEON --------------------------------------------------------------------- */

#ifdef TNX_NEON

static inline uint8x16_t tnx_errors_neon(uint8x16_t input, uint8x16_t prev) {
    static const uint8_t byte_1_high[16] = {TNX_BYTE_1_HIGH}, byte_1_low[16] = {TNX_BYTE_1_LOW};
    static const uint8_t byte_2_high[16] = {TNX_BYTE_2_HIGH};
    uint8x16_t prev1 = vextq_u8(prev, input, 15);
    uint8x16_t special = vandq_u8(
        vandq_u8(vqtbl1q_u8(vld1q_u8(byte_1_high), vshrq_n_u8(prev1, 4)),
                 vqtbl1q_u8(vld1q_u8(byte_1_low), vandq_u8(prev1, vdupq_n_u8(0x0F)))),
        vqtbl1q_u8(vld1q_u8(byte_2_high), vshrq_n_u8(input, 4)));
    uint8x16_t third = vqsubq_u8(vextq_u8(prev, input, 14), vdupq_n_u8(0xE0 - 0x80));
    uint8x16_t fourth = vqsubq_u8(vextq_u8(prev, input, 13), vdupq_n_u8(0xF0 - 0x80));
    uint8x16_t must23 = vandq_u8(vorrq_u8(third, fourth), vdupq_n_u8(0x80));
    return veorq_u8(must23, special);
}

/* Continuation bytes (0x80..0xBF) of a block, as 0xFF; the others 0. */
static inline uint8x16_t tnx_conts_neon(uint8x16_t v) { return vcltq_s8(vreinterpretq_s8_u8(v), vdupq_n_s8(-64)); }

/* One bit per byte of a 0x00/0xFF mask, as SSE's movemask gives. */
static inline unsigned int tnx_bits_neon(uint8x16_t mask) {
    static const uint8_t weights[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    uint8x16_t bits = vandq_u8(mask, vld1q_u8(weights));
    return (unsigned int)vaddv_u8(vget_low_u8(bits)) | ((unsigned int)vaddv_u8(vget_high_u8(bits)) << 8);
}

static int tnx_scan_neon(const unsigned char *s, size_t n, tnx_text *text) {
    static const uint8_t incomplete_bytes[16] = {TNX_INCOMPLETE};
    const uint8x16_t incomplete = vld1q_u8(incomplete_bytes);
    uint8x16_t prev = vdupq_n_u8(0), error = vdupq_n_u8(0), pending = vdupq_n_u8(0), top = vdupq_n_u8(0);
    unsigned char last[16];
    size_t i = 0, conts = 0, split = n >= TNX_SPLIT_MIN ? (n / 2) & ~(size_t)15 : 0, conts_before = 0;
    for (;;) {
        uint8x16_t v;
        if (i == split && split) conts_before = conts;
        int final = i + 16 > n;
        if (final) { /* the rest, padded with zeros: a sequence cut short by the end fails */
            memset(last, 0, sizeof last);
            memcpy(last, s + i, n - i);
            v = vld1q_u8(last);
        } else {
            v = vld1q_u8(s + i);
        }
        if (!final && vmaxvq_u8(v) < 0x80) {
            error = vorrq_u8(error, pending);
            pending = vdupq_n_u8(0);
        } else {
            error = vorrq_u8(error, tnx_errors_neon(v, prev));
            pending = vqsubq_u8(v, incomplete);
            top = vmaxq_u8(top, v);
            conts += vaddvq_u8(vshrq_n_u8(tnx_conts_neon(v), 7));
        }
        if (final) break;
        prev = v;
        i += 16;
    }
    if (vmaxvq_u8(error) != 0) return 0;
    text->nchars = n - conts;
    text->maxchar = tnx_width_class(vmaxvq_u8(top));
    text->split = split;
    text->before = split - conts_before;
    return TNX_SCAN_OK;
}

static inline void tnx_widen1_neon(uint8x16_t v, uint8_t *out) { vst1q_u8(out, v); }
static inline void tnx_widen2_neon(uint8x16_t v, uint16_t *out) {
    vst1q_u16(out, vmovl_u8(vget_low_u8(v)));
    vst1q_u16(out + 8, vmovl_u8(vget_high_u8(v)));
}
static inline void tnx_widen4_neon(uint8x16_t v, uint32_t *out) {
    uint16x8_t lo = vmovl_u8(vget_low_u8(v)), hi = vmovl_u8(vget_high_u8(v));
    vst1q_u32(out, vmovl_u16(vget_low_u16(lo)));
    vst1q_u32(out + 4, vmovl_u16(vget_high_u16(lo)));
    vst1q_u32(out + 8, vmovl_u16(vget_low_u16(hi)));
    vst1q_u32(out + 12, vmovl_u16(vget_high_u16(hi)));
}
static inline void tnx_put1_neon(uint32x4_t cp, uint8_t *out) {
    uint8x8_t narrow = vmovn_u16(vcombine_u16(vmovn_u32(cp), vdup_n_u16(0)));
    vst1_lane_u32((uint32_t *)(void *)out, vreinterpret_u32_u8(narrow), 0);
}
static inline void tnx_put2_neon(uint32x4_t cp, uint16_t *out) { vst1_u16(out, vmovn_u32(cp)); }
static inline void tnx_put4_neon(uint32x4_t cp, uint32_t *out) { vst1q_u32(out, cp); }

/* One step of the vector fill (as TNX_STEP_SSSE3 says). */
#define TNX_STEP_NEON(NAME, T, WIDEN, PUT)                                                         \
    static inline void NAME(const unsigned char *s, size_t *i, T *out, size_t *j) {                \
        static const uint8_t payload_masks[16] = {TNX_PAYLOAD_MASKS};                              \
        uint8x16_t v = vld1q_u8(s + *i);                                                           \
        unsigned int high = tnx_bits_neon(vcltq_s8(vreinterpretq_s8_u8(v), vdupq_n_s8(0)));        \
        unsigned int ascii = high ? (unsigned int)__builtin_ctz(high) : 16;                        \
        if (ascii >= 4) {                                                                          \
            WIDEN(v, out + *j);                                                                    \
            *i += ascii;                                                                           \
            *j += ascii;                                                                           \
            return;                                                                                \
        }                                                                                          \
        unsigned int ends = (~tnx_bits_neon(tnx_conts_neon(v)) >> 1) & 0xFFF;                      \
        tnx_move move = tnx_moves[ends];                                                           \
        uint8x16_t lanes = vqtbl1q_u8(v, vld1q_u8(tnx_shuffles[move.shuffle]));                    \
        lanes = vandq_u8(lanes, vqtbl1q_u8(vld1q_u8(payload_masks), vshrq_n_u8(lanes, 4)));        \
        uint32x4_t x = vreinterpretq_u32_u8(lanes);                                                \
        uint32x4_t cp = vorrq_u32(                                                                 \
            vorrq_u32(vandq_u32(x, vdupq_n_u32(0xFF)), vshrq_n_u32(vandq_u32(x, vdupq_n_u32(0xFF00)), 2)), \
            vorrq_u32(vshrq_n_u32(vandq_u32(x, vdupq_n_u32(0xFF0000)), 4),                         \
                      vshrq_n_u32(vandq_u32(x, vdupq_n_u32(0xFF000000)), 6)));                     \
        PUT(cp, out + *j);                                                                         \
        *i += move.consumed;                                                                       \
        *j += move.nchars;                                                                         \
    }

TNX_STEP_NEON(tnx_step_neon_1, uint8_t, tnx_widen1_neon, tnx_put1_neon)
TNX_STEP_NEON(tnx_step_neon_2, uint16_t, tnx_widen2_neon, tnx_put2_neon)
TNX_STEP_NEON(tnx_step_neon_4, uint32_t, tnx_widen4_neon, tnx_put4_neon)

TNX_FILL(TNX_PLAIN, tnx_fill_neon_1, uint8_t, tnx_step_neon_1, tnx_fill_scalar1)
TNX_FILL(TNX_PLAIN, tnx_fill_neon_2, uint16_t, tnx_step_neon_2, tnx_fill_scalar2)
TNX_FILL(TNX_PLAIN, tnx_fill_neon_4, uint32_t, tnx_step_neon_4, tnx_fill_scalar4)

#endif /* TNX_NEON */

/* -- dispatch ----------------------------------------------------------------- */

/* Choose the vector path where the CPU has it, and build its table; call
 * once, before decoding (the compiled reader does so when it is imported). */
static void tnx_utf8_init(void) {
#if defined(TNX_X86)
    __builtin_cpu_init();
    tnx_simd = __builtin_cpu_supports("ssse3") ? 1 : 0;
#elif defined(TNX_NEON)
    tnx_simd = 1;
#endif
    if (tnx_simd) tnx_build_steps();
}

/* Is s[0:n] well-formed UTF-8? If so, *text says how many characters, how
 * wide the widest, and where the fill may split it. */
static int tnx_utf8_scan(const unsigned char *s, size_t n, tnx_text *text) {
#if defined(TNX_X86)
    if (tnx_simd) return tnx_scan_ssse3(s, n, text);
#elif defined(TNX_NEON)
    if (tnx_simd) return tnx_scan_neon(s, n, text);
#endif
    return tnx_scan_scalar(s, n, text);
}

/* Decode well-formed s[0:n], as its scan found it, into out, whose
 * characters are kind (1, 2 or 4) bytes wide. ``room`` is how many
 * characters may be written at out: at least as many as s holds; up to 16
 * more than s holds are written when room allows (what follows is written
 * after, so it is overwritten). */
static void tnx_utf8_fill(const unsigned char *s, size_t n, const tnx_text *text, void *out, int kind,
                          size_t room) {
    if (kind == 1 && text->maxchar <= 0x7F) { /* ASCII: the bytes are the characters */
        memcpy(out, s, n);
        return;
    }
#if defined(TNX_X86)
    if (tnx_simd) {
        if (kind == 1) {
            tnx_fill_ssse3_1(s, n, text, (uint8_t *)out, room);
        } else if (kind == 2) {
            tnx_fill_ssse3_2(s, n, text, (uint16_t *)out, room);
        } else {
            tnx_fill_ssse3_4(s, n, text, (uint32_t *)out, room);
        }
        return;
    }
#elif defined(TNX_NEON)
    if (tnx_simd) {
        if (kind == 1) {
            tnx_fill_neon_1(s, n, text, (uint8_t *)out, room);
        } else if (kind == 2) {
            tnx_fill_neon_2(s, n, text, (uint16_t *)out, room);
        } else {
            tnx_fill_neon_4(s, n, text, (uint32_t *)out, room);
        }
        return;
    }
#endif
    tnx_fill_scalar(s, n, out, kind);
}

#endif /* TOOLNEXUS_CAPREAD_UTF8_H */

/* The vector decoder (SSSE3, NEON) against the scalar one: every short
 * sequence at every alignment, and random texts, well-formed or not.
 * Built and run by tests/test_decoder.py; prints "ok <cases>" or the first
 * difference, and exits non-zero on one. Also runs under qemu-aarch64 for
 * the NEON path (see the test). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/toolnexus/agents/_native/include/capread_utf8.h"

static unsigned long long cases;

static uint64_t state = 0x9E3779B97F4A7C15ULL;
static uint32_t next(void) { /* xorshift64*: deterministic */
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return (uint32_t)((state * 0x2545F4914F6CDD1DULL) >> 32);
}

static int fail(const char *what, const unsigned char *s, size_t n) {
    printf("FAIL %s on %zu bytes:", what, n);
    for (size_t i = 0; i < n && i < 64; i++) printf(" %02x", s[i]);
    printf("\n");
    return 1;
}

/* Scan and fill s[0:n] both ways; any difference fails. */
static int check(const unsigned char *s, size_t n) {
    tnx_text want_text, got_text;
    cases++;
    int want = tnx_scan_scalar(s, n, &want_text);
    int got = tnx_utf8_scan(s, n, &got_text);
    if (want != got) return fail("validity", s, n);
    if (!want) return 0;
    size_t want_chars = want_text.nchars;
    uint32_t want_max = want_text.maxchar;
    if (want_chars != got_text.nchars || want_max != got_text.maxchar) return fail("count or width", s, n);
    if (got_text.split) { /* the characters before the split, by counting lead bytes */
        size_t leads = 0;
        for (size_t k = 0; k < got_text.split; k++) leads += (s[k] & 0xC0) != 0x80;
        if (leads != got_text.before || got_text.split % 16 || got_text.split > n) return fail("split", s, n);
    }
    int narrowest = want_max <= 0xFF ? 1 : want_max <= 0xFFFF ? 2 : 4;
    for (int kind = narrowest; kind <= 4; kind *= 2) {
        for (size_t slack = 0; slack <= 16; slack += 16) { /* room: exactly enough, or 16 more */
            size_t room = want_chars + slack, size = (room + 8) * (size_t)kind;
            unsigned char *a = malloc(size), *b = malloc(size);
            memset(a, 0xA5, size);
            memset(b, 0xA5, size);
            tnx_fill_scalar(s, n, a, kind);
            tnx_utf8_fill(s, n, &got_text, b, kind, room);
            if (memcmp(a, b, want_chars * (size_t)kind) != 0) return fail("fill", s, n);
            for (size_t k = room * (size_t)kind; k < size; k++)
                if (b[k] != 0xA5) return fail("write past room", s, n);
            free(a);
            free(b);
        }
    }
    return 0;
}

int main(void) {
    tnx_utf8_init();
    if (!tnx_simd) {
        printf("no vector path on this CPU\n");
        return 2;
    }
    unsigned char buf[96];
    /* Every sequence of 1 to 3 bytes, and 4-byte ones over telling bytes, at
     * each place in 40 bytes of ASCII (across the 16-byte block edges). */
    static const unsigned char tails[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xE0, 0xF0, 0xFF};
    for (unsigned int c0 = 0; c0 < 256; c0++) {
        for (unsigned int c1 = 0; c1 < 256; c1++) {
            for (size_t at = 0; at < 40; at += (c1 % 13 == 0 ? 1 : 7)) {
                memset(buf, 'a', 40);
                buf[at] = (unsigned char)c0;
                if (at + 1 < 40) buf[at + 1] = (unsigned char)c1;
                for (size_t n = at + 1; n <= 40; n += 19)
                    if (check(buf, n)) return 1;
                if (check(buf, 40)) return 1;
            }
            for (unsigned int k = 0; k < sizeof tails; k++) {
                for (size_t at = 13; at < 19; at++) {
                    memset(buf, 'a', 40);
                    buf[at] = (unsigned char)c0;
                    buf[at + 1] = (unsigned char)c1;
                    buf[at + 2] = tails[k];
                    buf[at + 3] = tails[(k * 5 + c1) % sizeof tails];
                    if (check(buf, 40) || check(buf, at + 3) || check(buf, at + 4)) return 1;
                }
            }
        }
    }
    /* Random texts of mixed widths, most well-formed, some broken. */
    static const char *pieces[] = {"a", " ", "\n", "\xc3\xa9", "\xd0\x96", "\xe2\x82\xac", "\xe0\xae\xa4",
                                   "\xe4\xb8\xad", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf", "abcdefghijklmnop",
                                   "\xc2\x80", "\xef\xbb\xbf"};
    static unsigned char text[20000];
    for (int round = 0; round < 200000; round++) {
        /* Mostly short; one in fifty long enough to be split in two streams. */
        size_t n = 0, limit = round % 50 ? next() % 300 : 4000 + next() % 15000;
        while (n < limit) {
            const char *piece = pieces[next() % (sizeof pieces / sizeof *pieces)];
            size_t len = strlen(piece);
            memcpy(text + n, piece, len);
            n += len;
        }
        if (next() % 4 == 0 && n) text[next() % n] = (unsigned char)next(); /* break it, maybe */
        size_t start = next() % 4;
        if (start > n) start = n;
        if (check(text + start, n - start)) return 1;
    }
    printf("ok %llu\n", cases);
    return 0;
}

/*
 * scanner.c - line indexing and orjson-exact JSON validation for awl logs.
 *
 * The validator is a single pass, allocation-free JSON parser whose verdict
 * must equal orjson's (the Python fallback simply calls orjson).  It never
 * punts on validity; it only punts on *field extraction* when a relevant key
 * or value is written with backslash escapes (AWL_FLAG_SLOW), which is rare
 * and which the Python facade resolves with orjson.
 *
 * orjson rules mirrored here (verified against orjson 3.13):
 *   - whitespace is exactly space, \t, \n, \r; a BOM is rejected;
 *   - strings: no raw bytes < 0x20, strict UTF-8 (no overlongs, no encoded
 *     surrogates, nothing above U+10FFFF), escapes \" \\ \/ \b \f \n \r \t
 *     \uXXXX (either hex case), a high surrogate escape must be followed by
 *     a low one and a lone low one is an error;
 *   - numbers: RFC 8259 grammar; a value that rounds to +-inf as a double is
 *     rejected (checked exactly, see number_is_finite);
 *   - at most AWL_MAX_DEPTH nested arrays/objects (1024; 1025 is an error);
 *   - duplicate keys are allowed, the last one wins.
 */
#define _GNU_SOURCE 1 /* memrchr, memmem on glibc */

#include "scanner.h"

#include <string.h>

/* SSE2 is baseline on x86_64; elsewhere a portable SWAR path is used.
 * -DAWL_NO_SIMD forces the portable path (the sanitizer test builds both).
 * With GCC or Clang on x86 the string block loop is also compiled for AVX2
 * and chosen at run time when the CPU has it (awl_simd); -DAWL_NO_AVX2
 * leaves it out.  Nothing is compiled with -mavx2 as a whole: the module
 * must load on any x86_64. */
#if !defined(AWL_NO_SIMD) && (defined(__SSE2__) || defined(_M_X64))
#define AWL_USE_SSE2 1
#include <emmintrin.h>
#if !defined(AWL_NO_AVX2) && (defined(__GNUC__) || defined(__clang__)) && \
    (defined(__x86_64__) || defined(__i386__))
#define AWL_HAVE_AVX2 1
#include <immintrin.h>
#define AWL_AVX2_FN __attribute__((target("avx2")))
#endif
#endif

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
static unsigned awl_ctz32(unsigned x)
{
    unsigned long i;
    _BitScanForward(&i, x);
    return (unsigned)i;
}
static unsigned awl_ctz64(uint64_t x)
{
    unsigned long i;
    _BitScanForward64(&i, x);
    return (unsigned)i;
}
#else
#define awl_ctz32(x) ((unsigned)__builtin_ctz(x))
#define awl_ctz64(x) ((unsigned)__builtin_ctzll(x))
#endif

/* ------------------------------------------------------------------ */
/* Portable memrchr / memmem (GNU extensions).                         */

static const uint8_t *find_last_byte(const uint8_t *s, uint8_t c, size_t n)
{
#if defined(__GLIBC__)
    return (const uint8_t *)memrchr(s, c, n);
#else
    while (n > 0) {
        n--;
        if (s[n] == c)
            return s + n;
    }
    return NULL;
#endif
}

static const uint8_t *find_bytes(const uint8_t *h, size_t hn, const uint8_t *nd,
                                 size_t nn)
{
#if defined(__GLIBC__)
    return (const uint8_t *)memmem(h, hn, nd, nn);
#else
    const uint8_t *end, *p;
    if (nn == 0)
        return h;
    if (hn < nn)
        return NULL;
    end = h + (hn - nn) + 1;
    for (p = h; p < end; p++) {
        p = (const uint8_t *)memchr(p, nd[0], (size_t)(end - p));
        if (p == NULL)
            return NULL;
        if (memcmp(p, nd, nn) == 0)
            return p;
    }
    return NULL;
#endif
}

/* ------------------------------------------------------------------ */
/* Lexical helpers.                                                    */

/* JSON whitespace.  In line mode "\n" is not whitespace but the end of the
 * line, so a parse can run over a whole buffer and stop at the line end. */
static const uint8_t *skip_ws(const uint8_t *p, const uint8_t *e, int line_mode)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' ||
                     (*p == '\n' && !line_mode)))
        p++;
    return p;
}

static int is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

/* Bytes that interrupt a fast skip through a string body. */
static int str_special(uint8_t c)
{
    return c == '"' || c == '\\' || c < 0x20 || c >= 0x80;
}

static int hex_val(uint8_t c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20; /* fold A-F onto a-f; nothing else lands in a-f */
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

static long hex4(const uint8_t *p)
{
    int a = hex_val(p[0]), b = hex_val(p[1]), c = hex_val(p[2]),
        d = hex_val(p[3]);
    if ((a | b | c | d) < 0)
        return -1;
    return ((long)a << 12) | (b << 8) | (c << 4) | d;
}

/* 8 lowercase hex digits (the id format); returns 1 and stores the value. */
static int lower_hex8(const uint8_t *p, size_t n, uint32_t *out)
{
    uint32_t v = 0;
    size_t i;
    if (n != 8)
        return 0;
    for (i = 0; i < 8; i++) {
        uint8_t c = p[i];
        uint32_t d;
        if (c >= '0' && c <= '9')
            d = (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (uint32_t)(c - 'a' + 10);
        else
            return 0;
        v = (v << 4) | d;
    }
    *out = v;
    return 1;
}

/* Validates one UTF-8 sequence at p (p < e, *p >= 0x80); returns the byte
 * after it, or NULL if it is not strict UTF-8 (overlong, surrogate, beyond
 * U+10FFFF, truncated, or a stray continuation byte). */
static const uint8_t *utf8_one(const uint8_t *p, const uint8_t *e)
{
    uint8_t c = *p, lo = 0x80, hi = 0xBF;
    size_t rem = (size_t)(e - p);
    if (c < 0xC2) /* continuation byte, or overlong 2-byte lead */
        return NULL;
    if (c < 0xE0) {
        if (rem < 2 || (p[1] & 0xC0) != 0x80)
            return NULL;
        return p + 2;
    }
    if (c < 0xF0) {
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        else if (c == 0xED)
            hi = 0x9F; /* UTF-16 surrogates */
        if (rem < 3 || p[1] < lo || p[1] > hi || (p[2] & 0xC0) != 0x80)
            return NULL;
        return p + 3;
    }
    if (c < 0xF5) {
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        else if (c == 0xF4)
            hi = 0x8F; /* > U+10FFFF */
        if (rem < 4 || p[1] < lo || p[1] > hi || (p[2] & 0xC0) != 0x80 ||
            (p[3] & 0xC0) != 0x80)
            return NULL;
        return p + 4;
    }
    return NULL;
}

/* Validates the run of non-ASCII UTF-8 starting at p (p < e, *p >= 0x80);
 * returns the first byte after the run, or NULL. */
static const uint8_t *utf8_run(const uint8_t *p, const uint8_t *e)
{
    while (p != NULL && p < e && *p >= 0x80)
        p = utf8_one(p, e);
    return p;
}

#ifndef AWL_USE_SSE2
#define AWL_ONES 0x0101010101010101ULL
#define AWL_HIGHS 0x8080808080808080ULL
/* Nonzero iff any byte of x is '"', '\\', < 0x20 or >= 0x80.  Only the
 * boolean is exact (borrows may smear bits); the caller rescans bytewise. */
static uint64_t swar_special(uint64_t x)
{
    uint64_t q = x ^ (AWL_ONES * '"');
    uint64_t b = x ^ (AWL_ONES * '\\');
    uint64_t zq = (q - AWL_ONES) & ~q;
    uint64_t zb = (b - AWL_ONES) & ~b;
    uint64_t lt = (x - AWL_ONES * 0x20) & ~x;
    return ((zq | zb | lt) | x) & AWL_HIGHS;
}
#endif

/* q at a backslash inside a string: returns the byte after the escape, or
 * NULL if it is malformed (orjson's rules, including surrogate pairing). */
static const uint8_t *scan_escape(const uint8_t *q, const uint8_t *e)
{
    uint8_t c;
    long cp, lo;
    if (e - q < 2)
        return NULL;
    c = q[1];
    if (c != 'u') {
        if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' ||
            c == 'n' || c == 'r' || c == 't')
            return q + 2;
        return NULL;
    }
    if (e - q < 6 || (cp = hex4(q + 2)) < 0)
        return NULL;
    q += 6;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (e - q < 6 || q[0] != '\\' || q[1] != 'u')
            return NULL;
        lo = hex4(q + 2);
        if (lo < 0xDC00 || lo > 0xDFFF)
            return NULL;
        return q + 6;
    }
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return NULL;
    return q;
}

/* q at a byte that stops the fast skip (quote, backslash, control or high
 * byte) with q < e.  Returns the next position to continue skipping from,
 * sets *done when q closes the string, NULL when the string is invalid. */
static const uint8_t *string_special(const uint8_t *q, const uint8_t *e,
                                     int *bs, int *done)
{
    uint8_t c = *q;
    if (c == '"') {
        *done = 1;
        return q + 1;
    }
    if (c == '\\') {
        *bs = 1;
        return scan_escape(q, e);
    }
    if (c < 0x20)
        return NULL;
    return utf8_run(q, e);
}

#ifdef AWL_USE_SSE2
typedef struct block_masks {
    uint64_t quote, bslash, ctl, high;
} block_masks;

/* Byte classes of the 64 bytes at p; bit i is byte i. */
static void string_masks64_sse2(const uint8_t *p, block_masks *m)
{
    const __m128i vq = _mm_set1_epi8('"');
    const __m128i vb = _mm_set1_epi8('\\');
    const __m128i vc = _mm_set1_epi8(0x20);
    uint64_t q = 0, b = 0, c = 0, h = 0;
    int i;
    for (i = 0; i < 4; i++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
        int sh = 16 * i;
        q |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, vq)) << sh;
        b |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, vb)) << sh;
        /* signed compare: bytes 0x00-0x1f and 0x80-0xff are both < 0x20 */
        c |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmplt_epi8(v, vc)) << sh;
        h |= (uint64_t)(unsigned)_mm_movemask_epi8(v) << sh;
    }
    m->quote = q;
    m->bslash = b;
    m->ctl = c & ~h;
    m->high = h;
}

/* Bits strictly below n (n <= 64). */
static uint64_t bits_below(size_t n)
{
    return n >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << n) - 1;
}

/* For the 64 bytes at p: *ok gets the bytes that may follow a backslash
 * (" \ / b f n r t u), *u the 'u' bytes.  Comparing in bulk beats a
 * branch per escape in escape-dense text. */
static void escape_masks64_sse2(const uint8_t *p, uint64_t *ok, uint64_t *u)
{
    const __m128i k1 = _mm_set1_epi8('"'), k2 = _mm_set1_epi8('/');
    const __m128i k3 = _mm_set1_epi8('\\'), k4 = _mm_set1_epi8('b');
    const __m128i k5 = _mm_set1_epi8('f'), k6 = _mm_set1_epi8('n');
    const __m128i k7 = _mm_set1_epi8('r'), k8 = _mm_set1_epi8('t');
    const __m128i k9 = _mm_set1_epi8('u');
    uint64_t o = 0, w = 0;
    int i;
    for (i = 0; i < 4; i++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
        __m128i isu = _mm_cmpeq_epi8(v, k9);
        __m128i a = _mm_or_si128(_mm_cmpeq_epi8(v, k1), _mm_cmpeq_epi8(v, k2));
        __m128i b = _mm_or_si128(_mm_cmpeq_epi8(v, k3), _mm_cmpeq_epi8(v, k4));
        __m128i c = _mm_or_si128(_mm_cmpeq_epi8(v, k5), _mm_cmpeq_epi8(v, k6));
        __m128i d = _mm_or_si128(_mm_cmpeq_epi8(v, k7), _mm_cmpeq_epi8(v, k8));
        __m128i all = _mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d));
        o |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_or_si128(all, isu)) << (16 * i);
        w |= (uint64_t)(unsigned)_mm_movemask_epi8(isu) << (16 * i);
    }
    *ok = o;
    *u = w;
}

/* Positions escaped by a preceding odd run of backslashes (simdjson's
 * trick).  *carry (0 or 1) says byte 0 is escaped by the previous block and
 * receives the same for the next block. */
static uint64_t escaped_mask(uint64_t bs, uint64_t *carry)
{
    const uint64_t even = 0x5555555555555555ULL;
    uint64_t prev = *carry, follows, odd_starts, seq_even;
    bs &= ~prev;
    follows = (bs << 1) | prev;
    odd_starts = bs & ~even & ~follows;
    seq_even = odd_starts + bs;
    *carry = seq_even < bs; /* the addition overflowed */
    return (even ^ (seq_even << 1)) & follows;
}

/* UTF-8 classes of the 64 bytes at p, for the block validator: bytes
 * >= 0xC0 (leads), >= 0xE0 (3/4-byte leads), >= 0xF0 (4-byte leads), and
 * leads that are wrong by themselves or by their next byte: 0xC0/0xC1
 * (overlong), >= 0xF5 (beyond U+10FFFF), 0xE0 not followed by >= 0xA0 and
 * 0xF0 not followed by >= 0x90 (overlong), 0xED followed by >= 0xA0
 * (surrogates), 0xF4 followed by >= 0x90 (beyond U+10FFFF).  The next byte
 * of byte 63 is unknown here; callers validate a lead there separately. */
static void utf8_masks64_sse2(const uint8_t *p, uint64_t *ge_c0, uint64_t *ge_e0,
                              uint64_t *ge_f0, uint64_t *bad)
{
#define AWL_GE(v, x) _mm_cmpeq_epi8(_mm_max_epu8((v), (x)), (v))
    const __m128i c0 = _mm_set1_epi8((char)0xC0), c2 = _mm_set1_epi8((char)0xC2);
    const __m128i e0 = _mm_set1_epi8((char)0xE0), ed = _mm_set1_epi8((char)0xED);
    const __m128i f0 = _mm_set1_epi8((char)0xF0), f4 = _mm_set1_epi8((char)0xF4);
    const __m128i f5 = _mm_set1_epi8((char)0xF5), a0 = _mm_set1_epi8((char)0xA0);
    const __m128i n90 = _mm_set1_epi8((char)0x90);
    __m128i v[5];
    uint64_t a = 0, c = 0, f = 0, b = 0;
    int i;
    for (i = 0; i < 4; i++)
        v[i] = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
    v[4] = _mm_setzero_si128();
    for (i = 0; i < 4; i++) {
        __m128i x = v[i];
        /* the byte after each byte: shift in the first byte of the next lane */
        __m128i nx = _mm_or_si128(_mm_srli_si128(x, 1), _mm_slli_si128(v[i + 1], 15));
        __m128i gc0 = AWL_GE(x, c0), ge0 = AWL_GE(x, e0), gf0 = AWL_GE(x, f0);
        __m128i nge_a0 = AWL_GE(nx, a0), nge_90 = AWL_GE(nx, n90);
        __m128i wrong = _mm_or_si128(AWL_GE(x, f5), _mm_andnot_si128(AWL_GE(x, c2), gc0));
        wrong = _mm_or_si128(wrong, _mm_andnot_si128(nge_a0, _mm_cmpeq_epi8(x, e0)));
        wrong = _mm_or_si128(wrong, _mm_and_si128(nge_a0, _mm_cmpeq_epi8(x, ed)));
        wrong = _mm_or_si128(wrong, _mm_andnot_si128(nge_90, _mm_cmpeq_epi8(x, f0)));
        wrong = _mm_or_si128(wrong, _mm_and_si128(nge_90, _mm_cmpeq_epi8(x, f4)));
        a |= (uint64_t)(unsigned)_mm_movemask_epi8(gc0) << (16 * i);
        c |= (uint64_t)(unsigned)_mm_movemask_epi8(ge0) << (16 * i);
        f |= (uint64_t)(unsigned)_mm_movemask_epi8(gf0) << (16 * i);
        b |= (uint64_t)(unsigned)_mm_movemask_epi8(wrong) << (16 * i);
    }
    *ge_c0 = a;
    *ge_e0 = c;
    *ge_f0 = f;
    *bad = b;
#undef AWL_GE
}

#define AWL_SB_NAME string_blocks_sse2
#define AWL_SB_ATTR
#define AWL_SB_STRING_MASKS string_masks64_sse2
#define AWL_SB_ESCAPE_MASKS escape_masks64_sse2
#define AWL_SB_UTF8_MASKS utf8_masks64_sse2
#include "string_blocks.h"
#undef AWL_SB_NAME
#undef AWL_SB_ATTR
#undef AWL_SB_STRING_MASKS
#undef AWL_SB_ESCAPE_MASKS
#undef AWL_SB_UTF8_MASKS

#ifdef AWL_HAVE_AVX2
/* ------------------------------------------------------------------ */
/* The instruction set in use: the only global state.  Detected from the
 * CPU on first use (set only if nothing set it meanwhile); awl_simd() can
 * lower it so that tests run the baseline on any machine. */

static int g_simd = -1;

static int simd_detect(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? AWL_SIMD_AVX2 : AWL_SIMD_SSE2;
}

static int simd_level(void)
{
    int v = __atomic_load_n(&g_simd, __ATOMIC_RELAXED);
    if (v < 0) {
        int unset = -1;
        v = simd_detect();
        /* Only if still unset: a level awl_simd() set meanwhile stays. */
        if (!__atomic_compare_exchange_n(&g_simd, &unset, v, 0, __ATOMIC_RELAXED,
                                         __ATOMIC_RELAXED))
            v = unset;
    }
    return v;
}

#define AWL_M32(x) ((uint64_t)(uint32_t)_mm256_movemask_epi8(x))

AWL_AVX2_FN static inline void string_masks64_avx2(const uint8_t *p, block_masks *m)
{
    const __m256i vq = _mm256_set1_epi8('"'), vb = _mm256_set1_epi8('\\');
    const __m256i v1f = _mm256_set1_epi8(0x1F);
    __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)p);
    __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
    m->quote = AWL_M32(_mm256_cmpeq_epi8(a, vq)) | AWL_M32(_mm256_cmpeq_epi8(b, vq)) << 32;
    m->bslash = AWL_M32(_mm256_cmpeq_epi8(a, vb)) | AWL_M32(_mm256_cmpeq_epi8(b, vb)) << 32;
    /* unsigned x <= 0x1F, i.e. min(x, 0x1F) == x: high bytes are not controls */
    m->ctl = AWL_M32(_mm256_cmpeq_epi8(_mm256_min_epu8(a, v1f), a)) |
             AWL_M32(_mm256_cmpeq_epi8(_mm256_min_epu8(b, v1f), b)) << 32;
    m->high = AWL_M32(a) | AWL_M32(b) << 32;
}

/* The bytes that may follow a backslash, by a two-nibble table lookup: a
 * byte is in the set when lo[its low nibble] & hi[its high nibble] != 0.
 * Bits: 1 = 0x2_ ('"' '/'), 2 = 0x5_ ('\\'), 4 = 0x6_ (b f n),
 * 8 = 0x7_ (r t u).  Bytes >= 0x80 look up 0 (pshufb's rule). */
AWL_AVX2_FN static inline void escape_masks64_avx2(const uint8_t *p, uint64_t *ok, uint64_t *u)
{
    const __m256i lo_t = _mm256_setr_epi8(0, 0, 13, 0, 8, 8, 4, 0, 0, 0, 0, 0, 2, 0, 4, 1,
                                          0, 0, 13, 0, 8, 8, 4, 0, 0, 0, 0, 0, 2, 0, 4, 1);
    const __m256i hi_t = _mm256_setr_epi8(0, 0, 1, 0, 0, 2, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0,
                                          0, 0, 1, 0, 0, 2, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m256i nib = _mm256_set1_epi8(0x0F), vu = _mm256_set1_epi8('u');
    const __m256i zero = _mm256_setzero_si256();
    uint64_t bad = 0, w = 0;
    int i;
    for (i = 0; i < 2; i++) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32 * i));
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nib);
        __m256i t = _mm256_and_si256(_mm256_shuffle_epi8(lo_t, v), _mm256_shuffle_epi8(hi_t, hi));
        bad |= AWL_M32(_mm256_cmpeq_epi8(t, zero)) << (32 * i);
        w |= AWL_M32(_mm256_cmpeq_epi8(v, vu)) << (32 * i);
    }
    *ok = ~bad;
    *u = w;
}

/* utf8_masks64_sse2 in 32-byte halves; the byte after each byte comes from
 * the half shifted by one across its two 128-bit lanes. */
AWL_AVX2_FN static inline void utf8_masks64_avx2(const uint8_t *p, uint64_t *ge_c0,
                                                 uint64_t *ge_e0, uint64_t *ge_f0,
                                                 uint64_t *bad)
{
#define AWL_GE256(v, x) _mm256_cmpeq_epi8(_mm256_max_epu8((v), (x)), (v))
    const __m256i c0 = _mm256_set1_epi8((char)0xC0), c2 = _mm256_set1_epi8((char)0xC2);
    const __m256i e0 = _mm256_set1_epi8((char)0xE0), ed = _mm256_set1_epi8((char)0xED);
    const __m256i f0 = _mm256_set1_epi8((char)0xF0), f4 = _mm256_set1_epi8((char)0xF4);
    const __m256i f5 = _mm256_set1_epi8((char)0xF5), a0 = _mm256_set1_epi8((char)0xA0);
    const __m256i n90 = _mm256_set1_epi8((char)0x90);
    __m256i v[3];
    uint64_t a = 0, c = 0, f = 0, b = 0;
    int i;
    v[0] = _mm256_loadu_si256((const __m256i *)(const void *)p);
    v[1] = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
    v[2] = _mm256_setzero_si256();
    for (i = 0; i < 2; i++) {
        __m256i x = v[i];
        __m256i nx = _mm256_alignr_epi8(_mm256_permute2x128_si256(x, v[i + 1], 0x21), x, 1);
        __m256i gc0 = AWL_GE256(x, c0), ge0 = AWL_GE256(x, e0), gf0 = AWL_GE256(x, f0);
        __m256i nge_a0 = AWL_GE256(nx, a0), nge_90 = AWL_GE256(nx, n90);
        __m256i wrong = _mm256_or_si256(AWL_GE256(x, f5), _mm256_andnot_si256(AWL_GE256(x, c2), gc0));
        wrong = _mm256_or_si256(wrong, _mm256_andnot_si256(nge_a0, _mm256_cmpeq_epi8(x, e0)));
        wrong = _mm256_or_si256(wrong, _mm256_and_si256(nge_a0, _mm256_cmpeq_epi8(x, ed)));
        wrong = _mm256_or_si256(wrong, _mm256_andnot_si256(nge_90, _mm256_cmpeq_epi8(x, f0)));
        wrong = _mm256_or_si256(wrong, _mm256_and_si256(nge_90, _mm256_cmpeq_epi8(x, f4)));
        a |= AWL_M32(gc0) << (32 * i);
        c |= AWL_M32(ge0) << (32 * i);
        f |= AWL_M32(gf0) << (32 * i);
        b |= AWL_M32(wrong) << (32 * i);
    }
    *ge_c0 = a;
    *ge_e0 = c;
    *ge_f0 = f;
    *bad = b;
#undef AWL_GE256
}

#define AWL_SB_NAME string_blocks_avx2
#define AWL_SB_ATTR AWL_AVX2_FN
#define AWL_SB_STRING_MASKS string_masks64_avx2
#define AWL_SB_ESCAPE_MASKS escape_masks64_avx2
#define AWL_SB_UTF8_MASKS utf8_masks64_avx2
#include "string_blocks.h"
#undef AWL_SB_NAME
#undef AWL_SB_ATTR
#undef AWL_SB_STRING_MASKS
#undef AWL_SB_ESCAPE_MASKS
#undef AWL_SB_UTF8_MASKS
#undef AWL_M32
#endif /* AWL_HAVE_AVX2 */
#endif /* AWL_USE_SSE2 */

/* p points just after an opening quote of a string already validated (see
 * awl_entry_fields): returns the byte after its closing quote, found with
 * memchr alone, or NULL if there is none before e.  Sets *bs when the body
 * contains an escape. */
static const uint8_t *skip_string(const uint8_t *p, const uint8_t *e, int *bs)
{
    const uint8_t *body = p, *q, *b;
    for (;;) {
        q = (const uint8_t *)memchr(p, '"', (size_t)(e - p));
        if (q == NULL)
            return NULL;
        /* A quote after an odd run of backslashes is escaped.  The run
         * cannot reach back past p: p is the body start or follows a quote. */
        for (b = q; b > p && b[-1] == '\\'; b--)
            ;
        if (((q - b) & 1) == 0)
            break;
        p = q + 1;
    }
    if (memchr(body, '\\', (size_t)(q - body)) != NULL)
        *bs = 1;
    return q + 1;
}

/* p points just after an opening quote.  Returns the byte after the closing
 * quote or NULL if the string is invalid or not closed before e.  Loads may
 * touch bytes up to lim (>= e) but never decide anything beyond e.  Sets
 * *bs when the body contains an escape. */
static const uint8_t *scan_string(const uint8_t *p, const uint8_t *e,
                                  const uint8_t *lim, int *bs)
{
    int done = 0;
#ifdef AWL_USE_SSE2
    /* Whole 64-byte blocks first (see string_blocks.h), with AVX2 where
     * the CPU has it; what is left of the string goes through the loop
     * below. */
    if (p < e && (size_t)(lim - p) >= 64) {
#ifdef AWL_HAVE_AVX2
        if (simd_level() >= AWL_SIMD_AVX2)
            p = string_blocks_avx2(p, e, lim, bs, &done);
        else
#endif
            p = string_blocks_sse2(p, e, lim, bs, &done);
        if (p == NULL || done)
            return p;
    }
#endif
    for (;;) {
#ifdef AWL_USE_SSE2
        while (p < e && (size_t)(lim - p) >= 16) {
            const __m128i vq = _mm_set1_epi8('"');
            const __m128i vb = _mm_set1_epi8('\\');
            const __m128i vc = _mm_set1_epi8(0x20);
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
            __m128i x = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(v, vq), _mm_cmpeq_epi8(v, vb)),
                _mm_cmplt_epi8(v, vc));
            unsigned mask = (unsigned)_mm_movemask_epi8(x);
            if (mask != 0) {
                p += awl_ctz32(mask);
                break;
            }
            p += 16;
        }
#else
        while (p < e && (size_t)(lim - p) >= 8) {
            uint64_t x;
            memcpy(&x, p, 8);
            if (swar_special(x))
                break;
            p += 8;
        }
#endif
        while (p < e && !str_special(*p))
            p++;
        if (p >= e)
            return NULL;
        p = string_special(p, e, bs, &done);
        if (p == NULL || done)
            return p;
    }
}

/* Decimal digits of the midpoint between DBL_MAX and 2^1024, i.e.
 * 2^1024 - 2^970.  A decimal number rounds to infinity (round half to even;
 * DBL_MAX has an odd mantissa) exactly when its magnitude is >= this. */
static const char k_dbl_inf_threshold[] =
    "179769313486231580793728971405303415079934132710037826936173"
    "778980444968292764750946649017977587207096330286416692887910"
    "946555547851940402630657488671505820681908902000708383676273"
    "854845817711531764475730270069855571366959622842914819860834"
    "936475292719074168444365510704342711559699508093042880177904"
    "174497792";
#define AWL_THRESHOLD_DIGITS 309

/* Exact test that a number token does not overflow a double.  ip..ie are
 * the integer digits, fp..fe the fraction digits (fp NULL if none), exp the
 * (saturated) decimal exponent. */
static int number_is_finite(const uint8_t *ip, const uint8_t *ie,
                            const uint8_t *fp, const uint8_t *fe, int64_t exp)
{
    const uint8_t *d; /* first significant digit */
    int64_t mag;      /* value is in [10^mag, 10^(mag+1)) */
    size_t i;
    if (*ip != '0') {
        d = ip;
        mag = (int64_t)(ie - ip) - 1 + exp;
    } else {
        if (fp == NULL)
            return 1;
        d = fp;
        while (d < fe && *d == '0')
            d++;
        if (d == fe)
            return 1; /* zero, whatever the exponent */
        mag = -(int64_t)(d - fp) - 1 + exp;
    }
    if (mag < AWL_THRESHOLD_DIGITS - 1)
        return 1;
    if (mag > AWL_THRESHOLD_DIGITS - 1)
        return 0;
    /* Same order of magnitude as the threshold: compare digit strings. */
    {
        int in_int = *ip != '0';
        for (i = 0; i < AWL_THRESHOLD_DIGITS; i++) {
            uint8_t t = (uint8_t)k_dbl_inf_threshold[i], c = '0';
            if (in_int && d == ie) {
                in_int = 0; /* hop over the decimal point */
                d = fp;
            }
            if (in_int)
                c = *d++;
            else if (d != NULL && d < fe)
                c = *d++;
            /* else: digits exhausted, compare as trailing zeros */
            if (c != t)
                return c < t;
        }
    }
    return 0; /* >= threshold */
}

/* Saturation bound for exponents; far beyond any possible digit count. */
#define AWL_EXP_CAP ((int64_t)1 << 56)

/* p at '-' or a digit.  Returns the byte after the number, or NULL. */
static const uint8_t *scan_number(const uint8_t *p, const uint8_t *e)
{
    const uint8_t *ip, *ie, *fp = NULL, *fe = NULL;
    int64_t exp = 0;
    int has_exp = 0;
    if (*p == '-') {
        p++;
        if (p >= e)
            return NULL;
    }
    ip = p;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        p++;
        while (p < e && is_digit(*p))
            p++;
    } else {
        return NULL;
    }
    ie = p;
    if (p < e && *p == '.') {
        p++;
        fp = p;
        while (p < e && is_digit(*p))
            p++;
        if (p == fp)
            return NULL;
        fe = p;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        const uint8_t *ds;
        int neg = 0;
        has_exp = 1;
        p++;
        if (p < e && (*p == '+' || *p == '-')) {
            neg = *p == '-';
            p++;
        }
        ds = p;
        while (p < e && is_digit(*p)) {
            if (exp < AWL_EXP_CAP)
                exp = exp * 10 + (*p - '0');
            p++;
        }
        if (p == ds)
            return NULL;
        if (neg)
            exp = -exp;
    }
    /* Fast path: no exponent and at most 308 integer digits is < 1e308. */
    if (!has_exp && ie - ip < AWL_THRESHOLD_DIGITS)
        return p;
    return number_is_finite(ip, ie, fp, fe, exp) ? p : NULL;
}

/* ------------------------------------------------------------------ */
/* Parser with field extraction.                                       */

enum { K_NONE, K_TYPE, K_ID, K_PARENT, K_MESSAGE, K_ROLE, K_TIMESTAMP, K_PROVIDER, K_MODEL };

/* The top-level string members awl_entry_fields reports, in its order. */
#define AWL_N_EXTRA 3

enum { V_ABSENT = 0, V_STRING, V_OTHER, V_NULL, V_HEX, V_SLOW };

typedef struct fields {
    int key_bs;          /* a top-level key used an escape */
    int type_state;      /* V_ABSENT / V_STRING / V_OTHER */
    int type_bs;
    const uint8_t *type_p;
    size_t type_n;
    int id_state;        /* V_ABSENT / V_OTHER / V_HEX / V_SLOW */
    uint32_t id;
    int parent_state;    /* V_ABSENT / V_OTHER / V_NULL / V_HEX / V_SLOW */
    uint32_t parent;
    int role_state;      /* V_ABSENT / V_STRING / V_OTHER, last "message" */
    int role_bs;
    int msg_key_bs;      /* a key of the last "message" object used escapes */
    const uint8_t *role_p;
    size_t role_n;
    int extra;           /* also capture timestamp/provider/model (K_TIMESTAMP..) */
    int trusted;         /* the line is known valid: skip string bodies unchecked */
    int ex_state[AWL_N_EXTRA]; /* V_ABSENT / V_STRING / V_OTHER, last occurrence */
    int ex_bs[AWL_N_EXTRA];
    const uint8_t *ex_p[AWL_N_EXTRA];
    size_t ex_n[AWL_N_EXTRA];
} fields;

static int key_is(const uint8_t *s, size_t n, const char *lit, size_t ln)
{
    return n == ln && memcmp(s, lit, ln) == 0;
}

static int classify_top_key(const uint8_t *s, size_t n)
{
    switch (n) {
    case 2:
        return key_is(s, n, "id", 2) ? K_ID : K_NONE;
    case 4:
        return key_is(s, n, "type", 4) ? K_TYPE : K_NONE;
    case 7:
        return key_is(s, n, "message", 7) ? K_MESSAGE : K_NONE;
    case 8:
        return key_is(s, n, "parentId", 8) ? K_PARENT : K_NONE;
    default:
        return K_NONE;
    }
}

/* Only asked for by awl_entry_fields, so the scan's key test stays as it was. */
static int classify_extra_key(const uint8_t *s, size_t n)
{
    switch (n) {
    case 5:
        return key_is(s, n, "model", 5) ? K_MODEL : K_NONE;
    case 8:
        return key_is(s, n, "provider", 8) ? K_PROVIDER : K_NONE;
    case 9:
        return key_is(s, n, "timestamp", 9) ? K_TIMESTAMP : K_NONE;
    default:
        return K_NONE;
    }
}

static void reset_role(fields *f)
{
    f->role_state = V_ABSENT;
    f->role_bs = 0;
    f->msg_key_bs = 0;
}

/* A relevant key got a string value [s, s+n). */
static void field_string(fields *f, int k, const uint8_t *s, size_t n, int bs)
{
    uint32_t v = 0;
    switch (k) {
    case K_TYPE:
        f->type_state = V_STRING;
        f->type_p = s;
        f->type_n = n;
        f->type_bs = bs;
        break;
    case K_ID:
        f->id_state = bs ? V_SLOW : lower_hex8(s, n, &v) ? V_HEX : V_OTHER;
        f->id = (f->id_state == V_HEX) ? v : 0;
        break;
    case K_PARENT:
        f->parent_state = bs ? V_SLOW : lower_hex8(s, n, &v) ? V_HEX : V_OTHER;
        f->parent = (f->parent_state == V_HEX) ? v : 0;
        break;
    case K_MESSAGE:
        reset_role(f);
        break;
    case K_ROLE:
        f->role_state = V_STRING;
        f->role_p = s;
        f->role_n = n;
        f->role_bs = bs;
        break;
    case K_TIMESTAMP:
    case K_PROVIDER:
    case K_MODEL:
        f->ex_state[k - K_TIMESTAMP] = V_STRING;
        f->ex_p[k - K_TIMESTAMP] = s;
        f->ex_n[k - K_TIMESTAMP] = n;
        f->ex_bs[k - K_TIMESTAMP] = bs;
        break;
    default:
        break;
    }
}

/* A relevant key got a non-string value (number, literal, container). */
static void field_other(fields *f, int k, int is_null)
{
    switch (k) {
    case K_TYPE:
        f->type_state = V_OTHER;
        f->type_bs = 0;
        break;
    case K_ID:
        f->id_state = V_OTHER;
        f->id = 0;
        break;
    case K_PARENT:
        f->parent_state = is_null ? V_NULL : V_OTHER;
        f->parent = 0;
        break;
    case K_MESSAGE:
        reset_role(f);
        break;
    case K_ROLE:
        f->role_state = V_OTHER;
        f->role_bs = 0;
        break;
    case K_TIMESTAMP:
    case K_PROVIDER:
    case K_MODEL:
        f->ex_state[k - K_TIMESTAMP] = V_OTHER;
        f->ex_bs[k - K_TIMESTAMP] = 0;
        break;
    default:
        break;
    }
}

static int match_lit(const uint8_t *p, const uint8_t *e, const char *lit,
                     size_t n)
{
    return (size_t)(e - p) >= n && memcmp(p, lit, n) == 0;
}

/* The end of the string whose body starts at s: checked, or only found
 * when the caller says the line was validated already (f->trusted). */
static const uint8_t *string_end(const uint8_t *s, const uint8_t *e,
                                 const uint8_t *lim, const fields *f, int *bs)
{
    return f != NULL && f->trusted ? skip_string(s, e, bs) : scan_string(s, e, lim, bs);
}

/* Parses one JSON object with optional surrounding whitespace from p.
 * Returns the position after the object and its trailing whitespace, or
 * NULL if the bytes there are not a valid object.  The document is valid if
 * the result is e (range mode) or, in line mode (where "\n" is not
 * whitespace), e or a "\n".  lim >= e bounds wide loads.  When f is not NULL
 * it receives the top-level fields (meaningful only on success). */
static const uint8_t *parse_doc(const uint8_t *p, const uint8_t *e,
                                const uint8_t *lim, fields *f, int line_mode)
{
    /* 1 = object, 0 = array, per open container; index 0 unused */
    uint8_t stack[AWL_MAX_DEPTH + 1];
    size_t depth = 0;
    int msg_open = 0; /* the depth-2 object being parsed is "message"'s */
    int pend = K_NONE;
    const uint8_t *s;
    int bs;

    p = skip_ws(p, e, line_mode);
    if (p >= e || *p != '{')
        return NULL;
    p++;

open_object:
    if (depth >= AWL_MAX_DEPTH)
        return NULL;
    stack[++depth] = 1;
    p = skip_ws(p, e, line_mode);
    if (p >= e)
        return NULL;
    if (*p == '}') {
        p++;
        goto close;
    }

key:
    if (p >= e || *p != '"')
        return NULL;
    s = p + 1;
    bs = 0;
    p = string_end(s, e, lim, f, &bs);
    if (p == NULL)
        return NULL;
    pend = K_NONE;
    if (f != NULL) {
        if (depth == 1) {
            if (bs)
                f->key_bs = 1; /* might unescape to a relevant key */
            else {
                pend = classify_top_key(s, (size_t)(p - 1 - s));
                if (pend == K_NONE && f->extra)
                    pend = classify_extra_key(s, (size_t)(p - 1 - s));
            }
        } else if (depth == 2 && msg_open) {
            if (bs)
                f->msg_key_bs = 1;
            else if (key_is(s, (size_t)(p - 1 - s), "role", 4))
                pend = K_ROLE;
        }
    }
    p = skip_ws(p, e, line_mode);
    if (p >= e || *p != ':')
        return NULL;
    p = skip_ws(p + 1, e, line_mode);

value:
    if (p >= e)
        return NULL;
    switch (*p) {
    case '{':
        p++;
        if (pend != K_NONE) {
            field_other(f, pend, 0);
            if (pend == K_MESSAGE)
                msg_open = 1;
            pend = K_NONE;
        }
        goto open_object;
    case '[':
        p++;
        if (pend != K_NONE) {
            field_other(f, pend, 0);
            pend = K_NONE;
        }
        if (depth >= AWL_MAX_DEPTH)
            return NULL;
        stack[++depth] = 0;
        p = skip_ws(p, e, line_mode);
        if (p >= e)
            return NULL;
        if (*p == ']') {
            p++;
            goto close;
        }
        goto value;
    case '"':
        s = p + 1;
        bs = 0;
        p = string_end(s, e, lim, f, &bs);
        if (p == NULL)
            return NULL;
        if (pend != K_NONE)
            field_string(f, pend, s, (size_t)(p - 1 - s), bs);
        break;
    case 't':
        if (!match_lit(p, e, "true", 4))
            return NULL;
        p += 4;
        if (pend != K_NONE)
            field_other(f, pend, 0);
        break;
    case 'f':
        if (!match_lit(p, e, "false", 5))
            return NULL;
        p += 5;
        if (pend != K_NONE)
            field_other(f, pend, 0);
        break;
    case 'n':
        if (!match_lit(p, e, "null", 4))
            return NULL;
        p += 4;
        if (pend != K_NONE)
            field_other(f, pend, 1);
        break;
    default:
        if (*p != '-' && !is_digit(*p))
            return NULL;
        p = scan_number(p, e);
        if (p == NULL)
            return NULL;
        if (pend != K_NONE)
            field_other(f, pend, 0);
        break;
    }
    pend = K_NONE;

after_value:
    p = skip_ws(p, e, line_mode);
    if (p >= e)
        return NULL;
    if (stack[depth]) {
        if (*p == ',') {
            p = skip_ws(p + 1, e, line_mode);
            goto key;
        }
        if (*p == '}') {
            p++;
            goto close;
        }
        return NULL;
    }
    if (*p == ',') {
        p = skip_ws(p + 1, e, line_mode);
        goto value;
    }
    if (*p == ']') {
        p++;
        goto close;
    }
    return NULL;

close:
    /* Only the message object can be open at depth 2 while msg_open. */
    if (depth == 2)
        msg_open = 0;
    depth--;
    if (depth == 0)
        return skip_ws(p, e, line_mode);
    goto after_value;
}

static void init_fields(fields *f)
{
    memset(f, 0, sizeof *f);
}

static uint8_t kind_of(const fields *f)
{
    if (f->type_state != V_STRING)
        return AWL_KIND_UNTYPED;
    switch (f->type_n) {
    case 7:
        if (memcmp(f->type_p, "session", 7) == 0)
            return AWL_KIND_SESSION;
        if (memcmp(f->type_p, "message", 7) == 0)
            return AWL_KIND_MESSAGE;
        break;
    case 10:
        if (memcmp(f->type_p, "checkpoint", 10) == 0)
            return AWL_KIND_CHECKPOINT;
        break;
    default:
        break;
    }
    return AWL_KIND_OTHER;
}

static uint8_t role_of(const fields *f)
{
    if (f->role_state == V_ABSENT)
        return AWL_ROLE_NONE;
    if (f->role_state != V_STRING)
        return AWL_ROLE_OTHER;
    if (key_is(f->role_p, f->role_n, "system", 6))
        return AWL_ROLE_SYSTEM;
    if (key_is(f->role_p, f->role_n, "user", 4))
        return AWL_ROLE_USER;
    if (key_is(f->role_p, f->role_n, "assistant", 9))
        return AWL_ROLE_ASSISTANT;
    return AWL_ROLE_OTHER;
}

/* Fills r for the line starting at buf[start] within [start, end); returns
 * the end of the line (the offset of its "\n", or end).  The parse runs in
 * line mode over the rest of the range, so valid lines need no separate
 * newline search; only blank-prefixed or invalid lines use memchr. */
static size_t fill_record(awl_record *r, const uint8_t *buf, size_t len,
                          size_t start, size_t end)
{
    const uint8_t *s = buf + start, *e = buf + end, *q, *stop;
    fields f;
    size_t le;
    uint16_t flags = 0;
    memset(r, 0, sizeof *r);
    r->offset = start;
    q = skip_ws(s, e, 1);
    if (q == e || *q == '\n') {
        le = (size_t)(q - buf);
        r->kind = AWL_KIND_BLANK;
        goto done;
    }
    init_fields(&f);
    stop = parse_doc(q, e, buf + len, &f, 1);
    if (stop == NULL || (stop != e && *stop != '\n')) {
        const uint8_t *nl = (const uint8_t *)memchr(s, '\n', end - start);
        le = nl ? (size_t)(nl - buf) : end;
        r->kind = AWL_KIND_INVALID;
        goto done;
    }
    le = (size_t)(stop - buf);
    if (f.key_bs || (f.type_state == V_STRING && f.type_bs) ||
        f.id_state == V_SLOW || f.parent_state == V_SLOW) {
        r->kind = AWL_KIND_UNTYPED; /* placeholder; the caller re-derives */
        flags |= AWL_FLAG_SLOW;
        goto done;
    }
    r->kind = kind_of(&f);
    if (r->kind == AWL_KIND_MESSAGE) {
        if (f.msg_key_bs || (f.role_state == V_STRING && f.role_bs)) {
            flags |= AWL_FLAG_SLOW;
            goto done;
        }
        r->role = role_of(&f);
    }
    if (f.id_state != V_ABSENT) {
        flags |= AWL_FLAG_ID;
        if (f.id_state == V_HEX) {
            flags |= AWL_FLAG_ID_HEX;
            r->id = f.id;
        }
    }
    if (f.parent_state != V_ABSENT) {
        flags |= AWL_FLAG_PARENT;
        if (f.parent_state == V_NULL)
            flags |= AWL_FLAG_PARENT_NULL;
        else if (f.parent_state == V_HEX) {
            flags |= AWL_FLAG_PARENT_HEX;
            r->parent = f.parent;
        }
    }
done:
    if (le == end)
        flags |= AWL_FLAG_UNTERMINATED;
    r->length = le - start;
    r->flags = flags;
    return le;
}

/* ------------------------------------------------------------------ */
/* Public API.                                                         */

size_t awl_line_starts(const uint8_t *buf, size_t len, size_t pos, size_t end,
                       uint64_t *out, size_t cap, size_t *next_pos)
{
    size_t n = 0;
    if (end > len)
        end = len;
    if (pos > end)
        pos = end;
    while (pos < end && n < cap) {
        const uint8_t *nl = (const uint8_t *)memchr(buf + pos, '\n', end - pos);
        out[n++] = pos;
        pos = nl ? (size_t)(nl - buf) + 1 : end;
    }
    *next_pos = pos;
    return n;
}

int awl_validate(const uint8_t *buf, size_t len, size_t start, size_t end)
{
    if (end > len || start > end)
        return 0;
    return parse_doc(buf + start, buf + end, buf + len, NULL, 0) == buf + end;
}

size_t awl_scan(const uint8_t *buf, size_t len, size_t pos, size_t end,
                awl_record *out, size_t cap, size_t *next_pos)
{
    size_t n = 0;
    if (end > len)
        end = len;
    if (pos > end)
        pos = end;
    while (pos < end && n < cap) {
        size_t le = fill_record(&out[n++], buf, len, pos, end);
        pos = le < end ? le + 1 : end;
    }
    *next_pos = pos;
    return n;
}

int awl_entry_fields(const uint8_t *buf, size_t len, size_t start, size_t end,
                     int trusted, int64_t *out)
{
    fields f;
    int i;
    if (end > len || start > end)
        return 0;
    init_fields(&f);
    f.extra = 1;
    f.trusted = trusted != 0;
    if (parse_doc(buf + start, buf + end, buf + len, &f, 0) != buf + end)
        return 0;
    for (i = 0; i < AWL_N_EXTRA; i++) {
        if (f.key_bs || (f.ex_state[i] == V_STRING && f.ex_bs[i])) {
            out[2 * i] = -2; /* escapes: the caller decodes the line itself */
            out[2 * i + 1] = -2;
        } else if (f.ex_state[i] == V_STRING) {
            out[2 * i] = (int64_t)(f.ex_p[i] - buf);
            out[2 * i + 1] = (int64_t)(f.ex_p[i] - buf + f.ex_n[i]);
        } else {
            out[2 * i] = -1;
            out[2 * i + 1] = -1;
        }
    }
    return 1;
}

#define AWL_NEEDLE_MAX 256

int64_t awl_find(const uint8_t *buf, size_t len, size_t start, size_t end,
                 const uint8_t *needle, size_t n)
{
    const uint8_t *hit;
    if (end > len || start > end)
        return -1;
    hit = find_bytes(buf + start, end - start, needle, n);
    return hit ? (int64_t)(hit - buf) : -1;
}

static int is_ascii_digit(char c) { return (unsigned char)(c - '0') < 10; }

int64_t awl_digit_run(const char *buf, size_t len, size_t start, size_t end, size_t n)
{
    size_t probe, lo, hi;
    if (end > len || start > end)
        return -1;
    if (n == 0)
        return (int64_t)start;
    if (end - start < n)
        return -1;
    /* Every run of n digits in [start, end) holds exactly one byte at
     * start + n - 1 + k*n: only those are looked at until one is a digit. */
    for (probe = start + n - 1; probe < end; probe += n) {
        if (!is_ascii_digit(buf[probe]))
            continue;
        lo = probe;
        while (lo > start && probe - lo < n - 1 && is_ascii_digit(buf[lo - 1]))
            lo--;
        hi = probe + 1;
        while (hi < end && hi - lo < n && is_ascii_digit(buf[hi]))
            hi++;
        if (hi - lo >= n)
            return (int64_t)lo;
    }
    return -1;
}

int64_t awl_find_last(const uint8_t *buf, size_t len, size_t start, size_t end,
                      const uint8_t *type, size_t type_len, int *uncertain)
{
    uint8_t needle[AWL_NEEDLE_MAX];
    size_t needle_n = 0, le, i;
    int any_escape = 0; /* type has chars that can be written as \x too */
    *uncertain = 0;
    if (end > len || start >= end)
        return -1;
    if (type_len + 2 <= AWL_NEEDLE_MAX) {
        needle[0] = '"';
        memcpy(needle + 1, type, type_len);
        needle[type_len + 1] = '"';
        needle_n = type_len + 2;
    }
    for (i = 0; i < type_len; i++) {
        uint8_t c = type[i];
        if (c == '"' || c == '\\' || c == '/' || c < 0x20)
            any_escape = 1;
    }
    le = end;
    if (buf[le - 1] == '\n')
        le--; /* a final "\n" ends the last line, it does not start one */
    for (;;) {
        const uint8_t *nl = find_last_byte(buf + start, '\n', le - start);
        size_t ls = nl ? (size_t)(nl - buf) + 1 : start;
        const uint8_t *s = buf + ls;
        size_t n = le - ls;
        /* Cheap pre-filter: a matching line contains the quoted type
         * verbatim unless the type value is escaped.  Escapes other than
         * \uXXXX can only produce '"', '\\', '/' or control characters. */
        int candidate =
            needle_n == 0 || find_bytes(s, n, needle, needle_n) != NULL ||
            (any_escape ? memchr(s, '\\', n) != NULL
                        : find_bytes(s, n, (const uint8_t *)"\\u", 2) != NULL);
        if (candidate) {
            fields f;
            init_fields(&f);
            /* No "\n" inside [ls, le): range mode is line mode here. */
            if (parse_doc(s, buf + le, buf + len, &f, 0) == buf + le) {
                if (f.key_bs || (f.type_state == V_STRING && f.type_bs)) {
                    *uncertain = 1;
                    return (int64_t)ls;
                }
                if (f.type_state == V_STRING && f.type_n == type_len &&
                    memcmp(f.type_p, type, type_len) == 0)
                    return (int64_t)ls;
            }
        }
        if (ls == start)
            return -1;
        le = ls - 1;
    }
}

int64_t awl_first_bad_line(const awl_record *rec, size_t n, int header)
{
    const uint16_t need = AWL_FLAG_ID | AWL_FLAG_PARENT;
    size_t i = 0;
    if (n == 0)
        return -1;
    if (header) {
        if (rec[0].kind != AWL_KIND_SESSION)
            return 0;
        i = 1;
    }
    for (; i < n; i++) {
        const awl_record *r = &rec[i];
        switch (r->kind) {
        case AWL_KIND_INVALID:
        case AWL_KIND_UNTYPED:
        case AWL_KIND_SESSION:
            return (int64_t)i;
        case AWL_KIND_MESSAGE:
            if ((r->flags & need) != need || r->role == AWL_ROLE_NONE ||
                r->role == AWL_ROLE_OTHER)
                return (int64_t)i;
            break;
        default:
            break;
        }
    }
    return -1;
}

/* A 32-bit mix (Wellons' lowbias32): ids are random, but not to be
 * trusted as such. */
static uint32_t mix32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

/* Slots hold (node position + 1) << 32 | key; 0 is empty.  Returns the
 * slot of key, empty if it is absent, or NULL once *budget probes are
 * spent: ids crafted to collide (mix32 is no secret) must not make an open
 * quadratic, so the caller gives up and the numpy path, O(n log n), links
 * the tree instead. */
static uint64_t *id_slot(uint64_t *table, size_t mask, uint32_t key, size_t *budget)
{
    size_t i = mix32(key) & mask;
    for (;;) {
        uint64_t v = table[i];
        if (v == 0 || (uint32_t)v == key)
            return &table[i];
        if (*budget == 0)
            return NULL;
        (*budget)--;
        i = (i + 1) & mask;
    }
}

int64_t awl_link_tree(const awl_record *rec, size_t n, int64_t *rows,
                      int64_t *parent_pos, uint64_t *table, size_t table_len)
{
    size_t i, nodes = 0, mask = table_len - 1;
    /* Random ids in a table at most half full probe about 1.5 slots per
     * lookup; 8 per record on average is far beyond that. */
    size_t budget = 8 * n + 64;
    if (table_len == 0 || (table_len & mask) != 0)
        return -1;
    memset(table, 0, table_len * sizeof *table);
    for (i = 0; i < n; i++) {
        const awl_record *r = &rec[i];
        uint64_t *slot;
        if ((r->kind != AWL_KIND_MESSAGE && r->kind != AWL_KIND_OTHER) ||
            !(r->flags & AWL_FLAG_ID))
            continue;
        if (!(r->flags & AWL_FLAG_ID_HEX) || 2 * (nodes + 1) > table_len)
            return -1;
        slot = id_slot(table, mask, r->id, &budget);
        if (slot == NULL || *slot != 0)
            return -1; /* too many collisions, or a duplicate id */
        *slot = ((uint64_t)(nodes + 1) << 32) | r->id;
        rows[nodes] = (int64_t)i;
        if (!(r->flags & AWL_FLAG_PARENT) || (r->flags & AWL_FLAG_PARENT_NULL)) {
            parent_pos[nodes] = -1;
        } else if (!(r->flags & AWL_FLAG_PARENT_HEX)) {
            return -1;
        } else {
            uint64_t *ps = id_slot(table, mask, r->parent, &budget);
            uint64_t v = ps == NULL ? 0 : *ps;
            /* absent, or this very node: a later node or none */
            if (v == 0 || (size_t)(v >> 32) - 1 >= nodes)
                return -1;
            parent_pos[nodes] = (int64_t)(v >> 32) - 1;
        }
        nodes++;
    }
    return (int64_t)nodes;
}

int awl_simd(int level)
{
#if defined(AWL_HAVE_AVX2)
    if (level >= 0) {
        int best = simd_detect();
        if (level < AWL_SIMD_SSE2)
            level = AWL_SIMD_SSE2; /* compiled in: the floor of this build */
        __atomic_store_n(&g_simd, level < best ? level : best, __ATOMIC_RELAXED);
    }
    return simd_level();
#elif defined(AWL_USE_SSE2)
    (void)level;
    return AWL_SIMD_SSE2;
#else
    (void)level;
    return AWL_SIMD_NONE;
#endif
}

/*
 * search.c - finding what was said in a session log, at memory speed.
 *
 * awl_search looks for the byte forms a query can take in a log (its
 * "needles", chosen by the caller) with a SIMD substring search that
 * compares two of the needle's rarest bytes 32 (AVX2) or 16 (SSE2) positions
 * at a time, and checks only the lines where one is found: the line must be
 * a valid JSON object (awl_validate, orjson's verdict), a message entry, and
 * one of its content blocks (text, thinking, a tool call's input, a tool
 * result) must hold the query once its JSON string is decoded.  So a match
 * in a key, an id, a type name, a checkpoint or a torn line is never one.
 *
 * The rules mirror awl/store/_search_fallback.py exactly; the tests hold the
 * two equal on every input they try.
 */
#define _GNU_SOURCE 1 /* memrchr on glibc */
#define _FILE_OFFSET_BITS 64

#include "scanner.h"

#include <string.h>

#ifndef _WIN32
#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#endif

/* memrchr is a GNU extension: elsewhere (macOS, Windows), a loop. */
static const void *s_memrchr(const void *s, int c, size_t n)
{
#if defined(__GLIBC__)
    return memrchr(s, c, n);
#else
    const uint8_t *p = (const uint8_t *)s;
    while (n > 0) {
        n--;
        if (p[n] == (uint8_t)c)
            return p + n;
    }
    return NULL;
#endif
}

#if !defined(AWL_NO_SIMD) && (defined(__SSE2__) || defined(_M_X64))
#define AWL_S_SSE2 1
#include <emmintrin.h>
#if !defined(AWL_NO_AVX2) && (defined(__GNUC__) || defined(__clang__)) && \
    (defined(__x86_64__) || defined(__i386__))
#define AWL_S_AVX2 1
#include <immintrin.h>
#define AWL_S_AVX2_FN __attribute__((target("avx2")))
#endif
#endif

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
static unsigned s_ctz(unsigned x)
{
    unsigned long i;
    _BitScanForward(&i, x);
    return (unsigned)i;
}
static unsigned s_popcount64(uint64_t x)
{
    return (unsigned)__popcnt64(x);
}
static unsigned s_ctz64(uint64_t x)
{
    unsigned long i;
    _BitScanForward64(&i, x);
    return (unsigned)i;
}
#else
#define s_ctz(x) ((unsigned)__builtin_ctz(x))
#define s_ctz64(x) ((unsigned)__builtin_ctzll(x))
#define s_popcount64(x) ((unsigned)__builtin_popcountll(x))
#endif

/* ------------------------------------------------------------------ */
/* Needles: found by their two rarest bytes.                          */

/* Bytes of session logs from the most common to the rarer; any byte not
 * listed is rarer still.  A needle is sought by the two bytes that rank
 * latest here, so that few positions pass the SIMD filter. */
static const char COMMON[] =
    " \"etaoinsrhldcu:,mfpgwybvkx.-_/0123456789{}[]\\ETAOINSRHLDCUMFPGWYBVKXjqzJQZ";

static int rank(uint8_t b)
{
    const char *p = memchr(COMMON, b, sizeof COMMON - 1);
    return p == NULL ? 1000 : (int)(p - COMMON);
}

typedef struct needle {
    const uint8_t *bytes; /* lower-cased when fold */
    size_t n;
    size_t i1, i2;        /* positions of the two rarest bytes */
    uint8_t c1, c2;       /* the bytes there (lower-cased when fold) */
    uint8_t f1, f2;       /* 0x20 where folding a letter, else 0 */
    int fold;
} needle;

static int is_alpha(uint8_t b)
{
    return (uint8_t)((b | 0x20) - 'a') < 26;
}

static uint8_t lower(uint8_t b)
{
    return (uint8_t)(b - 'A') < 26 ? (uint8_t)(b | 0x20) : b;
}

/* bytes must stay alive (and lower-cased by the caller when fold). */
static void needle_init(needle *nd, const uint8_t *bytes, size_t n, int fold)
{
    size_t i, best = 0, second = 0;
    int rb = -1, rs = -1;
    nd->bytes = bytes;
    nd->n = n;
    nd->fold = fold;
    for (i = 0; i < n; i++) {
        int r = rank(lower(bytes[i]));
        if (r > rb) {
            second = best, rs = rb;
            best = i, rb = r;
        } else if (r > rs) {
            second = i, rs = r;
        }
    }
    if (n < 2)
        second = best;
    nd->i1 = best < second ? best : second;
    nd->i2 = best < second ? second : best;
    nd->c1 = n ? bytes[nd->i1] : 0;
    nd->c2 = n ? bytes[nd->i2] : 0;
    nd->f1 = (uint8_t)(fold && is_alpha(nd->c1) ? 0x20 : 0);
    nd->f2 = (uint8_t)(fold && is_alpha(nd->c2) ? 0x20 : 0);
}

static int verify(const uint8_t *p, const needle *nd)
{
    size_t k;
    if (!nd->fold)
        return memcmp(p, nd->bytes, nd->n) == 0;
    for (k = 0; k < nd->n; k++)
        if (lower(p[k]) != nd->bytes[k])
            return 0;
    return 1;
}

static const uint8_t *find_portable(const uint8_t *h, size_t n, const needle *nd, size_t i)
{
    for (; i + nd->n <= n; i++)
        if ((uint8_t)(h[i + nd->i1] | nd->f1) == nd->c1 &&
            (uint8_t)(h[i + nd->i2] | nd->f2) == nd->c2 && verify(h + i, nd))
            return h + i;
    return NULL;
}

#ifdef AWL_S_SSE2
static const uint8_t *find_sse2(const uint8_t *h, size_t n, const needle *nd)
{
    const __m128i c1 = _mm_set1_epi8((char)nd->c1), c2 = _mm_set1_epi8((char)nd->c2);
    const __m128i f1 = _mm_set1_epi8((char)nd->f1), f2 = _mm_set1_epi8((char)nd->f2);
    size_t i = 0, m = nd->n;
    for (; i + m + 15 <= n; i += 16) {
        __m128i a = _mm_or_si128(_mm_loadu_si128((const __m128i *)(h + i + nd->i1)), f1);
        __m128i b = _mm_or_si128(_mm_loadu_si128((const __m128i *)(h + i + nd->i2)), f2);
        unsigned mask = (unsigned)_mm_movemask_epi8(
            _mm_and_si128(_mm_cmpeq_epi8(a, c1), _mm_cmpeq_epi8(b, c2)));
        while (mask) {
            unsigned bit = s_ctz(mask);
            if (verify(h + i + bit, nd))
                return h + i + bit;
            mask &= mask - 1;
        }
    }
    return find_portable(h, n, nd, i);
}
#endif

#ifdef AWL_S_AVX2
AWL_S_AVX2_FN static const uint8_t *find_avx2(const uint8_t *h, size_t n, const needle *nd)
{
    const __m256i c1 = _mm256_set1_epi8((char)nd->c1), c2 = _mm256_set1_epi8((char)nd->c2);
    const __m256i f1 = _mm256_set1_epi8((char)nd->f1), f2 = _mm256_set1_epi8((char)nd->f2);
    size_t i = 0, m = nd->n;
    /* 64 bytes a round, tested at once: most rounds find nothing, and one
     * branch per 64 bytes keeps the loop at the speed of the loads. */
    for (; i + m + 63 <= n; i += 64) {
        const uint8_t *p = h + i;
        __m256i a0 = _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(p + nd->i1)), f1);
        __m256i b0 = _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(p + nd->i2)), f2);
        __m256i a1 = _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(p + 32 + nd->i1)), f1);
        __m256i b1 = _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(p + 32 + nd->i2)), f2);
        __m256i e0 = _mm256_and_si256(_mm256_cmpeq_epi8(a0, c1), _mm256_cmpeq_epi8(b0, c2));
        __m256i e1 = _mm256_and_si256(_mm256_cmpeq_epi8(a1, c1), _mm256_cmpeq_epi8(b1, c2));
        __m256i any = _mm256_or_si256(e0, e1);
        if (!_mm256_testz_si256(any, any)) {
            uint64_t mask = (uint64_t)(uint32_t)_mm256_movemask_epi8(e0) |
                            ((uint64_t)(uint32_t)_mm256_movemask_epi8(e1) << 32);
            while (mask) {
                unsigned bit = s_ctz64(mask);
                if (verify(p + bit, nd))
                    return p + bit;
                mask &= mask - 1;
            }
        }
    }
    for (; i + m + 31 <= n; i += 32) {
        __m256i a = _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(h + i + nd->i1)), f1);
        __m256i b = _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(h + i + nd->i2)), f2);
        unsigned mask = (unsigned)_mm256_movemask_epi8(
            _mm256_and_si256(_mm256_cmpeq_epi8(a, c1), _mm256_cmpeq_epi8(b, c2)));
        while (mask) {
            unsigned bit = s_ctz(mask);
            if (verify(h + i + bit, nd))
                return h + i + bit;
            mask &= mask - 1;
        }
    }
    return find_portable(h, n, nd, i);
}
#endif

/* The first place at or after h where the needle is, or NULL. */
static const uint8_t *find_needle(const uint8_t *h, size_t n, const needle *nd, int simd)
{
    if (nd->n == 0)
        return h;
    if (n < nd->n)
        return NULL;
#ifdef AWL_S_AVX2
    if (simd >= AWL_SIMD_AVX2)
        return find_avx2(h, n, nd);
#endif
#ifdef AWL_S_SSE2
    if (simd >= AWL_SIMD_SSE2)
        return find_sse2(h, n, nd);
#endif
    (void)simd;
    return find_portable(h, n, nd, 0);
}

/* ------------------------------------------------------------------ */
/* Walking a line already known to be one valid JSON object.           */

static const uint8_t *ws(const uint8_t *p, const uint8_t *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* p just after an opening quote: the closing quote. */
static const uint8_t *string_end(const uint8_t *p, const uint8_t *e)
{
    for (;;) {
        const uint8_t *q = memchr(p, '"', (size_t)(e - p)), *b;
        if (q == NULL)
            return e;
        b = q;
        while (b > p && b[-1] == '\\')
            b--;
        if (((q - b) & 1) == 0)
            return q;
        p = q + 1;
    }
}

static const uint8_t *skip_value(const uint8_t *p, const uint8_t *e)
{
    if (p >= e)
        return e;
    if (*p == '"')
        return string_end(p + 1, e) + 1;
    if (*p == '{' || *p == '[') {
        size_t depth = 0;
        while (p < e) {
            uint8_t c = *p;
            if (c == '"') {
                p = string_end(p + 1, e) + 1;
                continue;
            }
            if (c == '{' || c == '[')
                depth++;
            else if ((c == '}' || c == ']') && --depth == 0)
                return p + 1;
            p++;
        }
        return e;
    }
    while (p < e && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' &&
           *p != '\n' && *p != '\r')
        p++;
    return p;
}

static int hexval(uint8_t c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = lower(c);
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

static int hex4(const uint8_t *p, const uint8_t *e)
{
    int v = 0, i;
    if (e - p < 4)
        return -1;
    for (i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

static uint8_t *put_utf8(uint8_t *d, unsigned cp)
{
    if (cp < 0x80) {
        *d++ = (uint8_t)cp;
    } else if (cp < 0x800) {
        *d++ = (uint8_t)(0xC0 | (cp >> 6));
        *d++ = (uint8_t)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *d++ = (uint8_t)(0xE0 | (cp >> 12));
        *d++ = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        *d++ = (uint8_t)(0x80 | (cp & 0x3F));
    } else {
        *d++ = (uint8_t)(0xF0 | (cp >> 18));
        *d++ = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
        *d++ = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        *d++ = (uint8_t)(0x80 | (cp & 0x3F));
    }
    return d;
}

/* Decodes the escapes of [s, e) into d (which must hold e - s bytes: no
 * escape decodes to more bytes than it takes).  In a JSON string (lenient
 * == 0) every escape is valid, the validator saw to it.  In the text of a
 * tool call's input (lenient != 0, the second decoding), a backslash that
 * starts no valid escape, and a lone surrogate, are kept as they are. */
static size_t unescape(const uint8_t *s, const uint8_t *e, uint8_t *d, int lenient)
{
    (void)lenient; /* valid JSON strings never reach the lenient cases */
    uint8_t *d0 = d;
    while (s < e) {
        const uint8_t *bs = memchr(s, '\\', (size_t)(e - s));
        size_t run = (size_t)((bs ? bs : e) - s);
        memcpy(d, s, run);
        d += run;
        s += run;
        if (bs == NULL)
            break;
        if (s + 1 >= e) {
            *d++ = *s++;
            break;
        }
        switch (s[1]) {
        case '"': *d++ = '"'; s += 2; continue;
        case '\\': *d++ = '\\'; s += 2; continue;
        case '/': *d++ = '/'; s += 2; continue;
        case 'b': *d++ = '\b'; s += 2; continue;
        case 'f': *d++ = '\f'; s += 2; continue;
        case 'n': *d++ = '\n'; s += 2; continue;
        case 'r': *d++ = '\r'; s += 2; continue;
        case 't': *d++ = '\t'; s += 2; continue;
        case 'u': {
            int cp = hex4(s + 2, e);
            if (cp >= 0 && (cp < 0xD800 || cp > 0xDFFF)) {
                d = put_utf8(d, (unsigned)cp);
                s += 6;
                continue;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF && e - s >= 12 && s[6] == '\\' && s[7] == 'u') {
                int lo = hex4(s + 8, e);
                if (lo >= 0xDC00 && lo <= 0xDFFF) {
                    d = put_utf8(d, 0x10000u + (((unsigned)cp - 0xD800u) << 10) +
                                        ((unsigned)lo - 0xDC00u));
                    s += 12;
                    continue;
                }
            }
            break; /* a lone surrogate or a bad \u (only in lenient text): kept */
        }
        default:
            break;
        }
        *d++ = *s++; /* the backslash, as it is; what follows is copied next */
    }
    return (size_t)(d - d0);
}

/* Whether the raw string [s, e) decodes to the ASCII word w (a key, a type). */
static int string_is(const uint8_t *s, const uint8_t *e, const char *w)
{
    size_t n = strlen(w);
    uint8_t tmp[96]; /* the words asked about are at most 16 characters */
    if (memchr(s, '\\', (size_t)(e - s)) == NULL)
        return (size_t)(e - s) == n && memcmp(s, w, n) == 0;
    /* An ASCII character is at most 6 bytes escaped (\u0061): longer cannot be w. */
    if ((size_t)(e - s) > 6 * n || (size_t)(e - s) > sizeof tmp)
        return 0;
    return unescape(s, e, tmp, 0) == n && memcmp(tmp, w, n) == 0;
}

typedef struct span {
    const uint8_t *s, *e; /* a string's characters, between its quotes */
} span;

enum { F_TYPE, F_TEXT, F_THINKING, F_INPUT, F_CONTENT, F_COUNT };
static const char *const FIELD_NAMES[F_COUNT] = {"type", "text", "thinking", "input", "content"};

/* ------------------------------------------------------------------ */
/* Confirming a candidate line.                                        */

typedef struct query {
    needle nd;
    int simd;
    unsigned role_mask, kind_mask;
    uint8_t *scratch;
    size_t scratch_len;
    size_t needed; /* set when a string needed more scratch than given */
} query;

static int holds(query *q, const uint8_t *text, size_t n)
{
    return find_needle(text, n, &q->nd, q->simd) != NULL;
}

/* 1: a block holds the query (its index and kind set); 0: none; -1: more
 * scratch needed (q->needed). */
static int confirm_block(query *q, const span *f, int kind)
{
    const span *field = NULL;
    size_t raw, n;
    if (!(q->kind_mask & (1u << kind)))
        return 0;
    switch (kind) {
    case AWL_BLOCK_TEXT: field = &f[F_TEXT]; break;
    case AWL_BLOCK_THINKING: field = &f[F_THINKING]; break;
    case AWL_BLOCK_TOOL_USE: field = &f[F_INPUT]; break;
    case AWL_BLOCK_TOOL_RESULT: field = &f[F_CONTENT]; break;
    default: return 0;
    }
    if (field->s == NULL)
        return 0;
    raw = (size_t)(field->e - field->s);
    if (memchr(field->s, '\\', raw) == NULL) {
        if (holds(q, field->s, raw))
            return 1;
        if (kind != AWL_BLOCK_TOOL_USE)
            return 0;
        /* A tool call's input is JSON text: its own strings are decoded
         * too, so that what the model wrote matches as it was meant. */
        if (q->scratch_len < raw) {
            q->needed = raw;
            return -1;
        }
        n = unescape(field->s, field->e, q->scratch, 1);
        return holds(q, q->scratch, n);
    }
    if (q->scratch_len < 2 * raw) {
        q->needed = 2 * raw;
        return -1;
    }
    n = unescape(field->s, field->e, q->scratch, 0);
    if (holds(q, q->scratch, n))
        return 1;
    if (kind != AWL_BLOCK_TOOL_USE)
        return 0;
    n = unescape(q->scratch, q->scratch + n, q->scratch + raw, 1);
    return holds(q, q->scratch + raw, n);
}

static int kind_of(const span *t)
{
    if (t->s == NULL)
        return 0;
    if (string_is(t->s, t->e, "text"))
        return AWL_BLOCK_TEXT;
    if (string_is(t->s, t->e, "thinking"))
        return AWL_BLOCK_THINKING;
    if (string_is(t->s, t->e, "toolUse"))
        return AWL_BLOCK_TOOL_USE;
    if (string_is(t->s, t->e, "toolResult"))
        return AWL_BLOCK_TOOL_RESULT;
    return 0;
}

/* Reads the members of the object at p (just after '{') named in names,
 * the last occurrence of each (as orjson keeps it): string values as spans,
 * others as the value's first byte (in values, when given).  Returns the
 * end of the object. */
static const uint8_t *members(const uint8_t *p, const uint8_t *e, const char *const *names,
                              size_t count, span *strings, const uint8_t **values)
{
    size_t i;
    for (i = 0; i < count; i++) {
        strings[i].s = strings[i].e = NULL;
        if (values)
            values[i] = NULL;
    }
    for (;;) {
        const uint8_t *ks, *ke, *v, *ve;
        p = ws(p, e);
        if (p >= e || *p == '}')
            return p < e ? p + 1 : e;
        if (*p == ',') {
            p++;
            continue;
        }
        ks = p + 1; /* a key */
        ke = string_end(ks, e);
        p = ws(ke + 1, e);
        p = ws(p + 1, e); /* past ':' */
        v = p;
        ve = skip_value(v, e);
        for (i = 0; i < count; i++) {
            if (string_is(ks, ke, names[i])) {
                if (*v == '"') {
                    strings[i].s = v + 1;
                    strings[i].e = ve - 1;
                } else {
                    strings[i].s = strings[i].e = NULL;
                }
                if (values)
                    values[i] = v;
            }
        }
        p = ve;
    }
}

static const char *const TOP[] = {"type", "message"};
static const char *const MESSAGE[] = {"role", "content"};

/* 1 and the first matching block, 0 for none, -1 for more scratch. */
static int confirm_line(query *q, const uint8_t *ls, const uint8_t *le, uint32_t *block,
                        uint8_t *kind, uint8_t *role)
{
    span top[2], msg[2], f[F_COUNT];
    const uint8_t *topv[2], *msgv[2], *p;
    uint32_t index = 0;
    p = ws(ls, le);
    members(p + 1, le, TOP, 2, top, topv);
    if (top[0].s == NULL || !string_is(top[0].s, top[0].e, "message") || topv[1] == NULL ||
        *topv[1] != '{')
        return 0;
    members(topv[1] + 1, le, MESSAGE, 2, msg, msgv);
    *role = AWL_ROLE_NONE;
    if (msg[0].s != NULL) {
        if (string_is(msg[0].s, msg[0].e, "system"))
            *role = AWL_ROLE_SYSTEM;
        else if (string_is(msg[0].s, msg[0].e, "user"))
            *role = AWL_ROLE_USER;
        else if (string_is(msg[0].s, msg[0].e, "assistant"))
            *role = AWL_ROLE_ASSISTANT;
    }
    if (*role == AWL_ROLE_NONE || !(q->role_mask & (1u << *role)) || msgv[1] == NULL ||
        *msgv[1] != '[')
        return 0;
    p = msgv[1] + 1;
    for (;; index++) {
        const uint8_t *v;
        p = ws(p, le);
        if (p < le && *p == ',')
            p = ws(p + 1, le);
        if (p >= le || *p == ']')
            return 0;
        v = p;
        if (*v == '{') {
            int k, r;
            p = members(v + 1, le, FIELD_NAMES, F_COUNT, f, NULL);
            k = kind_of(&f[F_TYPE]);
            r = confirm_block(q, f, k);
            if (r != 0) {
                *block = index;
                *kind = (uint8_t)k;
                return r;
            }
        } else {
            p = skip_value(v, le);
        }
    }
}

/* ------------------------------------------------------------------ */
/* The search.                                                          */

#define AWL_SEARCH_NEEDLES 32

size_t awl_search(const uint8_t *buf, size_t len, size_t pos, size_t end,
                  const uint8_t *needles, const size_t *needle_lens, size_t n_needles,
                  const uint8_t *text, size_t text_len, int flags, unsigned role_mask,
                  unsigned kind_mask, uint8_t *scratch, size_t scratch_len, awl_hit *out,
                  size_t cap, size_t *next_pos, size_t *scratch_needed)
{
    needle nds[AWL_SEARCH_NEEDLES];
    const uint8_t *next[AWL_SEARCH_NEEDLES]; /* each needle's next place; NULL: none left */
    query q;
    size_t count = 0, k;
    int fold = (flags & AWL_SEARCH_FOLD) != 0, every = (flags & AWL_SEARCH_EVERY_LINE) != 0;
    *scratch_needed = 0;
    *next_pos = end;
    if (end > len || pos > end || n_needles > AWL_SEARCH_NEEDLES)
        return 0;
    q.simd = awl_simd(-1);
    needle_init(&q.nd, text, text_len, fold);
    q.role_mask = role_mask;
    q.kind_mask = kind_mask;
    q.scratch = scratch;
    q.scratch_len = scratch_len;
    q.needed = 0;
    for (k = 0; k < n_needles; k++) {
        needle_init(&nds[k], needles, needle_lens[k], fold);
        needles += needle_lens[k];
        next[k] = find_needle(buf + pos, end - pos, &nds[k], q.simd);
    }
    while (pos < end && count < cap) {
        const uint8_t *hit = NULL, *ls, *le, *nl;
        uint32_t block = 0;
        uint8_t kind = 0, role = 0;
        int r;
        if (every) {
            hit = buf + pos;
        } else {
            for (k = 0; k < n_needles; k++) {
                if (next[k] != NULL && next[k] < buf + pos) /* passed: look again */
                    next[k] = find_needle(buf + pos, end - pos, &nds[k], q.simd);
                if (next[k] != NULL && (hit == NULL || next[k] < hit))
                    hit = next[k];
            }
            if (hit == NULL) {
                pos = end; /* no needle left before end */
                break;
            }
        }
        nl = pos < (size_t)(hit - buf) ? s_memrchr(buf + pos, '\n', (size_t)(hit - (buf + pos)))
                                       : NULL;
        ls = nl ? nl + 1 : buf + pos;
        le = memchr(hit, '\n', (size_t)(buf + end - hit));
        if (le == NULL)
            le = buf + end;
        if (ws(ls, le) < le) { /* not a blank line */
            if (!awl_validate(buf, len, (size_t)(ls - buf), (size_t)(le - buf))) {
                r = 1; /* a candidate that is no JSON object: the caller reports it */
                kind = AWL_BLOCK_INVALID;
            } else {
                r = confirm_line(&q, ls, le, &block, &kind, &role);
            }
            if (r < 0) {
                *scratch_needed = q.needed;
                *next_pos = (size_t)(ls - buf);
                return count;
            }
            if (r > 0) {
                out[count].offset = (uint64_t)(ls - buf);
                out[count].length = (uint64_t)(le - ls);
                out[count].block = block;
                out[count].kind = kind;
                out[count].role = role;
                count++;
            }
        }
        pos = (size_t)(le - buf) + 1;
        if (pos > end)
            pos = end;
    }
    *next_pos = pos < end ? pos : end;
    return count;
}

/* ------------------------------------------------------------------ */
/* Counting a byte (line numbers of hits).                              */

size_t awl_count_byte(const uint8_t *buf, size_t len, size_t start, size_t end, uint8_t byte)
{
    size_t n = 0, i = start;
    if (end > len || start > end)
        return 0;
#ifdef AWL_S_SSE2
    {
        const __m128i b = _mm_set1_epi8((char)byte);
        for (; i + 64 <= end; i += 64) {
            uint64_t m0 = (uint32_t)_mm_movemask_epi8(
                _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(buf + i)), b));
            uint64_t m1 = (uint32_t)_mm_movemask_epi8(
                _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(buf + i + 16)), b));
            uint64_t m2 = (uint32_t)_mm_movemask_epi8(
                _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(buf + i + 32)), b));
            uint64_t m3 = (uint32_t)_mm_movemask_epi8(
                _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(buf + i + 48)), b));
            n += s_popcount64(m0 | (m1 << 16) | (m2 << 32) | (m3 << 48));
        }
    }
#endif
    for (; i < end; i++)
        n += buf[i] == byte;
    return n;
}

/* ------------------------------------------------------------------ */
/* Lines that may nest deep (an import's closer look).                  */

/* '[' (0x5b) and '{' (0x7b) differ in bit 0x20 alone, and no other byte
 * becomes 0x7b when that bit is set: one comparison finds both. */
#define S_BRACKET(c) (((c) | 0x20) == 0x7b)

/* From i on, within [i, end): the offset at which the line has held n
 * brackets, held of them counted before i; or -1, *held set to the count of
 * the line open at end.  One byte at a time. */
static int64_t s_bracket_bytes(const uint8_t *buf, size_t i, size_t end, size_t n, size_t *held)
{
    for (; i < end; i++) {
        if (buf[i] == '\n')
            *held = 0;
        else if (S_BRACKET(buf[i]) && ++*held >= n)
            return (int64_t)i;
    }
    return -1;
}

int64_t awl_bracket_run(const char *cbuf, size_t len, size_t start, size_t end, size_t n,
                        size_t before)
{
    const uint8_t *buf = (const uint8_t *)cbuf;
    size_t i = start, held = before;
    if (end > len || start > end)
        return -1;
    if (n <= before)
        return (int64_t)start;
#ifdef AWL_S_SSE2
    {
        /* 64 bytes at a time, one pass: a mask of the brackets and one of the
         * newlines; each line's part of the block counted from them.  The
         * block where a line reaches n is gone through again byte by byte. */
        const __m128i bit = _mm_set1_epi8(0x20), want = _mm_set1_epi8(0x7b);
        const __m128i nl = _mm_set1_epi8('\n');
        for (; i + 64 <= end; i += 64) {
            uint64_t bm = 0, lm = 0;
            size_t held_then = held;
            int k;
            for (k = 0; k < 4; k++) {
                __m128i v = _mm_loadu_si128((const __m128i *)(buf + i + 16 * k));
                bm |= (uint64_t)(uint32_t)_mm_movemask_epi8(
                          _mm_cmpeq_epi8(_mm_or_si128(v, bit), want))
                      << (16 * k);
                lm |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, nl)) << (16 * k);
            }
            if (!bm) {
                if (lm)
                    held = 0;
                continue;
            }
            while (lm) {
                unsigned at = s_ctz64(lm);
                if (held + s_popcount64(bm & ((1ULL << at) - 1)) >= n)
                    return s_bracket_bytes(buf, i, i + 64, n, &held_then);
                held = 0;
                bm &= at == 63 ? 0 : ~((2ULL << at) - 1);
                lm &= lm - 1;
            }
            held += s_popcount64(bm);
            if (held >= n)
                return s_bracket_bytes(buf, i, i + 64, n, &held_then);
        }
    }
#endif
    return s_bracket_bytes(buf, i, end, n, &held);
}

/* awl_search over [pos, end) of the mapped file (the way for a line longer
 * than the read buffer). */
static size_t search_mapped(int fd, size_t size, size_t pos, size_t end, const uint8_t *needles,
                            const size_t *needle_lens, size_t n_needles, const uint8_t *text,
                            size_t text_len, int flags, unsigned role_mask, unsigned kind_mask,
                            uint8_t *scratch, size_t scratch_len, awl_hit *out, size_t cap,
                            size_t *next_pos, size_t *scratch_needed, size_t *last_line,
                            int *error)
{
#ifdef _WIN32
    (void)fd, (void)size, (void)needles, (void)needle_lens, (void)n_needles, (void)text;
    (void)text_len, (void)flags, (void)role_mask, (void)kind_mask, (void)scratch;
    (void)scratch_len, (void)out, (void)cap, (void)scratch_needed, (void)last_line;
    *next_pos = pos;
    *error = -1;
    return 0;
#else
    struct stat st;
    size_t stop = end;
    /* A file that shrank since its size was taken is searched to where it
     * ends now: a mapped page past the end would raise SIGBUS. */
    if (fstat(fd, &st) == 0 && (uint64_t)st.st_size < size) {
        size = (size_t)st.st_size;
        end = end < size ? end : size;
        pos = pos < end ? pos : end;
    }
    if (pos == end || size == 0) {
        *next_pos = stop;
        *last_line = pos;
        return 0;
    }
    void *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        *next_pos = pos;
        *error = errno ? errno : -1;
        return 0;
    }
    const uint8_t *buf = (const uint8_t *)map;
    const void *nl = end - 1 > pos ? s_memrchr(buf + pos, '\n', end - 1 - pos) : NULL;
    *last_line = nl ? (size_t)((const uint8_t *)nl - buf) + 1 : pos;
    size_t n = awl_search(buf, size, pos, end, needles, needle_lens, n_needles, text, text_len,
                          flags, role_mask, kind_mask, scratch, scratch_len, out, cap, next_pos,
                          scratch_needed);
    munmap(map, size);
    if (*next_pos == end)
        *next_pos = stop;
    return n;
#endif
}

size_t awl_search_fd(int fd, size_t size, size_t pos, size_t end, const uint8_t *needles,
                     const size_t *needle_lens, size_t n_needles, const uint8_t *text,
                     size_t text_len, int flags, unsigned role_mask, unsigned kind_mask,
                     uint8_t *scratch, size_t scratch_len, awl_hit *out, size_t cap,
                     size_t *next_pos, size_t *scratch_needed, size_t *last_line, int *error,
                     uint8_t *rbuf, size_t rbuf_len)
{
    size_t base = pos, fill = 0, count = 0;
    *error = 0;
    *next_pos = end;
    *scratch_needed = 0;
    *last_line = end;
    if (end > size || pos > end)
        end = pos = 0;
    if (end == pos)
        return 0;
    if (rbuf == NULL || rbuf_len < 2)
        return search_mapped(fd, size, pos, end, needles, needle_lens, n_needles, text, text_len,
                             flags, role_mask, kind_mask, scratch, scratch_len, out, cap,
                             next_pos, scratch_needed, last_line, error);
#ifdef _WIN32
    *next_pos = pos;
    *error = -1;
    return 0;
#else
    /* Read into the caller's buffer rather than map: on Linux, copying cached
     * pages costs less than faulting them in and unmapping them.  data holds
     * whole lines from base on, then a partial one, which moves to the front
     * for the next read; so that every read lands on a 64-byte boundary (the
     * kernel's copy is several times slower to one that does not), the front
     * is padded to put the partial line's end on one. */
    uint8_t *area = rbuf, *data;
    size_t room = rbuf_len, align = 0, shrunk;
    if (rbuf_len >= 256) {
        size_t skip = (size_t)(-(uintptr_t)rbuf & 63);
        area = rbuf + skip;
        room = (rbuf_len - skip) & ~(size_t)63;
        align = 64;
    }
    data = area;
    shrunk = (size_t)-1;
    for (;;) {
        size_t want = room - (size_t)(data - area) - fill, cut, np = 0, n, k;
        const uint8_t *nl;
        int at_end;
        if (want > end - (base + fill))
            want = end - (base + fill);
        while (want > 0) {
            ssize_t r = pread(fd, data + fill, want, (off_t)(base + fill));
            if (r < 0) {
                if (errno == EINTR)
                    continue;
                *next_pos = base;
                *error = errno ? errno : -1;
                return count;
            }
            if (r == 0) { /* the file shrank under us: it is searched to where it ends */
                shrunk = base + fill;
                break;
            }
            fill += (size_t)r;
            want -= (size_t)r;
        }
        at_end = base + fill >= end || base + fill == shrunk;
        if (at_end) {
            nl = fill > 1 ? s_memrchr(data, '\n', fill - 1) : NULL;
            *last_line = nl ? base + (size_t)(nl - data) + 1 : base;
            cut = fill;
        } else {
            nl = s_memrchr(data, '\n', fill);
            if (nl == NULL) { /* one line longer than the buffer: the caller maps it */
                *next_pos = base;
                *error = AWL_SEARCH_LONG_LINE;
                return count;
            }
            cut = (size_t)(nl - data) + 1;
        }
        n = awl_search(data, fill, 0, cut, needles, needle_lens, n_needles, text, text_len,
                       flags, role_mask, kind_mask, scratch, scratch_len, out + count,
                       cap - count, &np, scratch_needed);
        for (k = count; k < count + n; k++)
            out[k].offset += base;
        count += n;
        if (np < cut || count == cap) { /* full, or a block needs more scratch */
            *next_pos = base + np;
            return count;
        }
        if (at_end) {
            *next_pos = end;
            return count;
        }
        fill -= cut;
        base += cut;
        k = align ? (align - (fill & (align - 1))) & (align - 1) : 0;
        memmove(area + k, data + cut, fill);
        data = area + k;
    }
#endif
}

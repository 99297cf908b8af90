/*
 * Standalone driver for native/search.c under AddressSanitizer/UBSan.
 *
 * Usage: [AWL_SIMD=level] search_driver CORPUS TMPDIR
 * CORPUS is a sequence of cases, all integers little-endian:
 *   u64 len, len bytes        the log bytes
 *   u64 pos, u64 end          the range searched (pos a line start)
 *   u32 n, then n times:      the needles
 *       u64 len, len bytes
 *   u64 len, len bytes        the query text (already lower-cased for FOLD)
 *   u32 flags, u32 role_mask, u32 kind_mask
 *   u32 scratch               the scratch size to start with (grown on request)
 *   u32 cap                   hits per call
 *   u32 opts                  1: also search a file of the bytes (awl_search_fd)
 *                             2: also search every prefix (reads past the end)
 * Every input (bytes, needles, lengths, text, scratch, hit array) is in a
 * heap block of exactly its size, so any read or write past one is an ASan
 * error.  The search runs in calls of cap hits, resuming at *next_pos and
 * growing the scratch to exactly *scratch_needed when asked, as
 * awl/store/_search.py does.  Printed, for the Python side to compare with
 * its reference and across builds:
 *   "# <case>"
 *   "H offset length block kind role"   one per hit
 *   "L last_line"                       awl_search_fd's, with opts & 1
 * and to stderr the level of awl_simd in effect first, and at the end how
 * many calls stopped for scratch and with a full hit array.
 * Checked here (exit 2 on failure): progress and bounds of every call, the
 * same hits in one call with room for all, the same hits and last_line from
 * awl_search_fd, awl_count_byte against a plain count, and bad ranges
 * rejected.  Sanitizer errors abort.
 */
#define _POSIX_C_SOURCE 200809L

#include "scanner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>

static size_t g_case;
/* How often the continuations ran (stderr at the end): calls that stopped
 * for scratch, and calls that stopped with their hit array full. */
static size_t g_calls, g_scratch_stops, g_full_stops;

static void fail(const char *what)
{
    fprintf(stderr, "search_driver: case %zu: %s\n", g_case, what);
    exit(2);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        perror("malloc");
        exit(3);
    }
    return p;
}

/* A copy of [s, s+n) in a block of exactly n bytes (1 if n == 0, unread). */
static uint8_t *exact_copy(const uint8_t *s, size_t n)
{
    uint8_t *p = (uint8_t *)xmalloc(n);
    if (n)
        memcpy(p, s, n);
    return p;
}

typedef struct scase {
    uint8_t *buf;
    size_t len, pos, end;
    size_t n_needles;
    uint8_t *needles;     /* laid end to end, exact block */
    size_t *needle_lens;  /* exact block */
    uint8_t *text;
    size_t text_len;
    int flags;
    unsigned role_mask, kind_mask;
    size_t scratch0, cap;
    unsigned opts;
} scase;

typedef struct hits {
    awl_hit *h;
    size_t n, room;
} hits;

static void push(hits *hs, const awl_hit *h)
{
    if (hs->n == hs->room) {
        hs->room = hs->room ? 2 * hs->room : 16;
        hs->h = (awl_hit *)realloc(hs->h, hs->room * sizeof *hs->h);
        if (hs->h == NULL)
            exit(3);
    }
    hs->h[hs->n++] = *h;
}

static int same_hits(const hits *a, const hits *b)
{
    size_t i;
    if (a->n != b->n)
        return 0;
    for (i = 0; i < a->n; i++)
        if (a->h[i].offset != b->h[i].offset || a->h[i].length != b->h[i].length ||
            a->h[i].block != b->h[i].block || a->h[i].kind != b->h[i].kind ||
            a->h[i].role != b->h[i].role)
            return 0;
    return 1;
}

/* Checks one call's results and appends its hits. */
/* long_stop: the call stopped at a line longer than its read buffer. */
static void take(const scase *c, const uint8_t *buf, size_t pos, size_t end, size_t n,
                 const awl_hit *out, size_t cap, size_t next, size_t needed,
                 size_t scratch_len, hits *hs, int long_stop)
{
    size_t i;
    g_calls++;
    g_scratch_stops += needed != 0;
    g_full_stops += n == cap && next < end;
    if (n > cap)
        fail("more hits than cap");
    if (next < pos || next > end)
        fail("next_pos outside [pos, end]");
    if (needed != 0 && needed <= scratch_len)
        fail("asked for scratch it had");
    if (n == 0 && needed == 0 && next == pos && pos < end && !long_stop)
        fail("no progress");
    if (n < cap && needed == 0 && next != end && !long_stop)
        fail("stopped early without a full hit array or a scratch request");
    for (i = 0; i < n; i++) {
        const awl_hit *h = &out[i];
        if (h->offset < pos || h->offset + h->length > end || h->offset >= next)
            fail("hit outside the range searched");
        if (hs->n && h->offset <= hs->h[hs->n - 1].offset)
            fail("hits not in file order");
        if (h->offset > 0 && buf[h->offset - 1] != '\n' && h->offset != c->pos)
            fail("hit does not start a line");
        if (h->kind > AWL_BLOCK_TOOL_RESULT || h->role > AWL_ROLE_ASSISTANT)
            fail("hit kind or role out of range");
        if (h->kind == AWL_BLOCK_INVALID && (h->block || h->role))
            fail("invalid-line hit with a block or role");
        push(hs, h);
    }
}

/* The search of [pos, end) of buf (len bytes) in calls of c->cap hits. */
static void search_chunked(const scase *c, const uint8_t *buf, size_t len, size_t pos,
                           size_t end, size_t cap, size_t scratch_len, hits *hs)
{
    uint8_t *scratch = (uint8_t *)xmalloc(scratch_len);
    awl_hit *out = (awl_hit *)xmalloc(cap * sizeof *out);
    size_t next, needed, rounds = 0;
    while (pos < end) {
        size_t n = awl_search(buf, len, pos, end, c->needles, c->needle_lens, c->n_needles,
                              c->text, c->text_len, c->flags, c->role_mask, c->kind_mask,
                              scratch, scratch_len, out, cap, &next, &needed);
        take(c, buf, pos, end, n, out, cap, next, needed, scratch_len, hs, 0);
        if (needed) {
            free(scratch);
            scratch_len = needed; /* exactly: a write past it is an ASan error */
            scratch = (uint8_t *)xmalloc(scratch_len);
        }
        pos = next;
        if (++rounds > 4 * (end + 2) + 64)
            fail("too many rounds");
    }
    free(scratch);
    free(out);
}

/* The search of [c->pos, c->end) of the file fd through awl_search_fd, reading
 * through a buffer of rbuf_len bytes (0: none, so mapped), in calls of c->cap
 * hits; checks the hits against want and last_line against expect_last. */
static void search_fd_with(const scase *c, int fd, size_t rbuf_len, size_t expect_last,
                           const hits *want)
{
    size_t pos = c->pos, next, needed, last = 0, rounds = 0;
    size_t scratch_len = c->scratch0;
    uint8_t *scratch = (uint8_t *)xmalloc(scratch_len);
    uint8_t *rbuf = rbuf_len ? (uint8_t *)xmalloc(rbuf_len) : NULL, *use = rbuf;
    size_t use_len = rbuf_len;
    awl_hit *out = (awl_hit *)xmalloc(c->cap * sizeof *out);
    hits got = {NULL, 0, 0};
    int err;
    if (c->pos == c->end) {
        size_t n = awl_search_fd(fd, c->len, c->pos, c->end, c->needles, c->needle_lens,
                                 c->n_needles, c->text, c->text_len, c->flags, c->role_mask,
                                 c->kind_mask, scratch, scratch_len, out, c->cap, &next,
                                 &needed, &last, &err, rbuf, rbuf_len);
        if (n || err || last != c->end || next != c->end)
            fail("fd search of an empty range");
    }
    while (pos < c->end) {
        size_t n = awl_search_fd(fd, c->len, pos, c->end, c->needles, c->needle_lens,
                                 c->n_needles, c->text, c->text_len, c->flags, c->role_mask,
                                 c->kind_mask, scratch, scratch_len, out, c->cap, &next,
                                 &needed, &last, &err, use, use_len);
        int long_stop = err == AWL_SEARCH_LONG_LINE;
        if (long_stop) {
            /* As the Python caller does: on through a map from that line. */
            if (use == NULL || next < pos || next >= c->end || (next && c->buf[next - 1] != '\n'))
                fail("a long line reported where none can be");
            use = NULL;
            use_len = 0;
            err = 0;
        }
        if (err)
            fail("awl_search_fd failed to read or map");
        take(c, c->buf, pos, c->end, n, out, c->cap, next, needed, scratch_len, &got, long_stop);
        if (needed) {
            free(scratch);
            scratch_len = needed;
            scratch = (uint8_t *)xmalloc(scratch_len);
        }
        pos = next;
        if (++rounds > 4 * (c->end + 2) + 64)
            fail("too many fd rounds");
    }
    /* The call that reached the end says where the last line starts. */
    if (last != expect_last) {
        fprintf(stderr, "rbuf %zu: last %zu, expected %zu (pos %zu end %zu len %zu)\n", rbuf_len,
                last, expect_last, c->pos, c->end, c->len);
        fail("awl_search_fd last_line");
    }
    if (!same_hits(&got, want))
        fail("awl_search_fd hits differ from awl_search's");
    /* A file shorter than the caller believes (it shrank after its size was
     * taken): read or mapped, it is searched to where it ends, and the calls
     * end (a mapped page past the end would raise SIGBUS). */
    if (c->end == c->len && c->pos < c->end) {
        hits shrunk = {NULL, 0, 0};
        pos = c->pos;
        use = rbuf;
        use_len = rbuf_len;
        rounds = 0;
        while (pos < c->end + 64) {
            size_t n = awl_search_fd(fd, c->len + 64, pos, c->end + 64, c->needles,
                                     c->needle_lens, c->n_needles, c->text, c->text_len,
                                     c->flags, c->role_mask, c->kind_mask, scratch, scratch_len,
                                     out, c->cap, &next, &needed, &last, &err, use, use_len);
            size_t k;
            int long_stop = err == AWL_SEARCH_LONG_LINE;
            if (long_stop) {
                use = NULL;
                use_len = 0;
                err = 0;
            }
            if (err)
                fail("awl_search_fd on a shrunk file");
            for (k = 0; k < n; k++)
                push(&shrunk, &out[k]);
            if (needed) {
                free(scratch);
                scratch_len = needed;
                scratch = (uint8_t *)xmalloc(scratch_len);
            }
            if (next <= pos && !needed && !long_stop)
                fail("no progress on a shrunk file");
            pos = next;
            if (++rounds > 4 * (c->end + 2) + 64)
                fail("too many rounds on a shrunk file");
        }
        if (!same_hits(&shrunk, want))
            fail("awl_search_fd hits on a shrunk file differ");
        free(shrunk.h);
    }
    /* A range past the file. */
    if (awl_search_fd(fd, c->len, 0, c->len + 1, c->needles, c->needle_lens, c->n_needles,
                      c->text, c->text_len, c->flags, c->role_mask, c->kind_mask, scratch,
                      scratch_len, out, c->cap, &next, &needed, &last, &err, rbuf,
                      rbuf_len) != 0 ||
        err)
        fail("awl_search_fd over a range past the file");
    if (c->len) { /* a descriptor that can be neither read nor mapped */
        size_t n = awl_search_fd(-1, c->len, 0, c->len, c->needles, c->needle_lens,
                                 c->n_needles, c->text, c->text_len, c->flags, c->role_mask,
                                 c->kind_mask, scratch, scratch_len, out, c->cap, &next,
                                 &needed, &last, &err, rbuf, rbuf_len);
        if (n != 0 || err == 0 || next != 0)
            fail("awl_search_fd on a bad descriptor");
    }
    free(got.h);
    free(scratch);
    free(rbuf);
    free(out);
}

static void search_fd(const scase *c, const char *tmpdir, const hits *want)
{
    /* Mapped; read through buffers that hold no line, some lines, every line. */
    static const size_t RBUF[] = {0, 2, 7, 61, 255, 256, 300, 500, 1 << 16};
    char path[4096];
    int fd;
    size_t expect_last, k;
    snprintf(path, sizeof path, "%s/search-XXXXXX", tmpdir);
    fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        exit(3);
    }
    unlink(path);
    if (c->len && write(fd, c->buf, c->len) != (ssize_t)c->len) {
        perror("write");
        exit(3);
    }
    /* Where the last line of [pos, end) starts, end - 1 not looked at. */
    expect_last = c->end;
    if (c->end > c->pos) {
        size_t i;
        expect_last = c->pos;
        for (i = c->end - 1; i > c->pos; i--)
            if (c->buf[i - 1] == '\n') {
                expect_last = i;
                break;
            }
    }
    printf("L %zu\n", expect_last);
    for (k = 0; k < sizeof RBUF / sizeof RBUF[0]; k++)
        search_fd_with(c, fd, RBUF[k], expect_last, want);
    close(fd);
}

static size_t plain_count(const uint8_t *b, size_t s, size_t e, uint8_t byte)
{
    size_t n = 0;
    for (; s < e; s++)
        n += b[s] == byte;
    return n;
}

static void count_bytes(const scase *c)
{
    static const uint8_t bytes[] = {'\n', '"', '\\', 0, 0xff};
    size_t i, k;
    for (k = 0; k < sizeof bytes; k++) {
        uint8_t b = bytes[k];
        if (awl_count_byte(c->buf, c->len, 0, c->len, b) != plain_count(c->buf, 0, c->len, b) ||
            awl_count_byte(c->buf, c->len, c->pos, c->end, b) !=
                plain_count(c->buf, c->pos, c->end, b))
            fail("awl_count_byte");
        /* Every start near the end, so the 64-byte loop's tail is covered. */
        for (i = c->len > 80 ? c->len - 80 : 0; i <= c->len; i++)
            if (awl_count_byte(c->buf, c->len, i, c->len, b) != plain_count(c->buf, i, c->len, b))
                fail("awl_count_byte near the end");
    }
    if (awl_count_byte(c->buf, c->len, 0, c->len + 1, '\n') != 0 ||
        awl_count_byte(c->buf, c->len, c->len, c->len + 64, '\n') != 0 ||
        (c->len && awl_count_byte(c->buf, c->len, 1, 0, '\n') != 0))
        fail("awl_count_byte accepted a bad range");
}

static void run(const scase *c, const char *tmpdir)
{
    hits chunked = {NULL, 0, 0}, whole = {NULL, 0, 0};
    size_t i, next, needed;
    awl_hit one;
    printf("# %zu\n", g_case);
    search_chunked(c, c->buf, c->len, c->pos, c->end, c->cap, c->scratch0, &chunked);
    for (i = 0; i < chunked.n; i++) {
        const awl_hit *h = &chunked.h[i];
        printf("H %llu %llu %u %u %u\n", (unsigned long long)h->offset,
               (unsigned long long)h->length, h->block, h->kind, h->role);
    }
    /* Room for every hit and scratch for any block: one call, same hits. */
    {
        size_t cap = c->end - c->pos + 1, room = 2 * c->len + 1;
        uint8_t *scratch = (uint8_t *)xmalloc(room);
        awl_hit *out = (awl_hit *)xmalloc(cap * sizeof *out);
        size_t n = awl_search(c->buf, c->len, c->pos, c->end, c->needles, c->needle_lens,
                              c->n_needles, c->text, c->text_len, c->flags, c->role_mask,
                              c->kind_mask, scratch, room, out, cap, &next, &needed);
        if (next != c->end || needed != 0)
            fail("one call with room for all did not finish");
        take(c, c->buf, c->pos, c->end, n, out, cap, next, needed, room, &whole, 0);
        if (!same_hits(&whole, &chunked))
            fail("searching in one call differs from searching in small ones");
        free(scratch);
        free(out);
    }
    if (c->opts & 1)
        search_fd(c, tmpdir, &chunked);
    /* Every prefix in an exact-size block: catches reads past the end. */
    if (c->opts & 2) {
        for (i = c->pos; i <= c->end; i++) {
            uint8_t *pre = exact_copy(c->buf, i);
            hits h = {NULL, 0, 0};
            search_chunked(c, pre, i, c->pos, i, c->cap, c->scratch0, &h);
            free(h.h);
            free(pre);
        }
    }
    count_bytes(c);
    /* Bad ranges and too many needles: nothing found, nothing read. */
    if (awl_search(c->buf, c->len, 0, c->len + 1, c->needles, c->needle_lens, c->n_needles,
                   c->text, c->text_len, c->flags, c->role_mask, c->kind_mask, NULL, 0, &one,
                   1, &next, &needed) != 0 ||
        awl_search(c->buf, c->len, c->len + 1, c->len, c->needles, c->needle_lens,
                   c->n_needles, c->text, c->text_len, c->flags, c->role_mask, c->kind_mask,
                   NULL, 0, &one, 1, &next, &needed) != 0 ||
        awl_search(c->buf, c->len, 0, c->len, c->needles, c->needle_lens, 33, c->text,
                   c->text_len, c->flags, c->role_mask, c->kind_mask, NULL, 0, &one, 1, &next,
                   &needed) != 0)
        fail("a bad range or too many needles gave hits");
    free(chunked.h);
    free(whole.h);
}

/* Reading the corpus. */

static FILE *g_in;

static int get(void *p, size_t n)
{
    return fread(p, 1, n, g_in) == n;
}

static uint64_t u64(void)
{
    uint8_t b[8];
    uint64_t v = 0;
    int k;
    if (!get(b, 8))
        exit(65);
    for (k = 7; k >= 0; k--)
        v = (v << 8) | b[k];
    return v;
}

static uint32_t u32(void)
{
    uint8_t b[4];
    if (!get(b, 4))
        exit(65);
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint8_t *blob(size_t n)
{
    uint8_t *p = (uint8_t *)xmalloc(n);
    if (n && !get(p, n))
        exit(65);
    return p;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s CORPUS TMPDIR\n", argv[0]);
        return 64;
    }
    /* AWL_SIMD=<level>: the instruction set (awl_simd), which search.c's
     * needle search follows too; the level goes to stderr. */
    if (getenv("AWL_SIMD") != NULL)
        awl_simd(atoi(getenv("AWL_SIMD")));
    fprintf(stderr, "simd %d\n", awl_simd(-1));
    g_in = fopen(argv[1], "rb");
    if (g_in == NULL) {
        perror(argv[1]);
        return 66;
    }
    for (;;) {
        scase c;
        uint8_t probe;
        size_t k, total = 0;
        uint8_t *parts[64];
        size_t lens[64];
        if (!get(&probe, 1))
            break;
        ungetc(probe, g_in);
        c.len = (size_t)u64();
        c.buf = blob(c.len);
        c.pos = (size_t)u64();
        c.end = (size_t)u64();
        c.n_needles = u32();
        if (c.n_needles > 64 || c.pos > c.end || c.end > c.len)
            return 65;
        for (k = 0; k < c.n_needles; k++) {
            lens[k] = (size_t)u64();
            parts[k] = blob(lens[k]);
            total += lens[k];
        }
        c.needles = (uint8_t *)xmalloc(total);
        c.needle_lens = (size_t *)xmalloc(c.n_needles * sizeof(size_t));
        for (total = 0, k = 0; k < c.n_needles; k++) {
            if (lens[k])
                memcpy(c.needles + total, parts[k], lens[k]);
            total += lens[k];
            c.needle_lens[k] = lens[k];
            free(parts[k]);
        }
        c.text_len = (size_t)u64();
        c.text = blob(c.text_len);
        c.flags = (int)u32();
        c.role_mask = u32();
        c.kind_mask = u32();
        c.scratch0 = u32();
        c.cap = u32();
        c.opts = u32();
        if (c.cap == 0)
            return 65;
        run(&c, argv[2]);
        free(c.buf);
        free(c.needles);
        free(c.needle_lens);
        free(c.text);
        g_case++;
    }
    fclose(g_in);
    fprintf(stderr, "calls %zu scratch-stops %zu full-stops %zu\n", g_calls, g_scratch_stops,
            g_full_stops);
    return 0;
}

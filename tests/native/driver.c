/*
 * Standalone driver for native/scanner.c under AddressSanitizer/UBSan.
 *
 * Usage: [AWL_SIMD=level] driver CORPUS
 * CORPUS is a sequence of records: 8-byte little-endian length, then that
 * many bytes.  Each record is copied into a heap block of exactly its size
 * (so any read past the end is an ASan error) and run through every API
 * function, with consistency checks between them.  Results are printed so
 * the Python side can compare them with orjson and across builds:
 *   "V <0|1>"                      awl_validate of the whole record
 *   "R kind role flags id parent"  one per line of awl_scan
 *   "F <type-index> <offset> <u>"  awl_find_last
 * Exit status 0 means no inconsistency (sanitizer errors abort).
 */
#include "scanner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fail(const char *what, size_t rec)
{
    fprintf(stderr, "driver: inconsistency in record %zu: %s\n", rec, what);
    exit(2);
}

/* A copy of [s, s+n) in a block of exactly n bytes (1 if n == 0, unread). */
static uint8_t *exact_copy(const uint8_t *s, size_t n)
{
    uint8_t *p = (uint8_t *)malloc(n ? n : 1);
    if (p == NULL) {
        perror("malloc");
        exit(3);
    }
    if (n)
        memcpy(p, s, n);
    return p;
}

static const char *const k_types[] = {"message", "checkpoint", "session", "",
                                      "a\"b", "\xc3\xa9"};

static void run(const uint8_t *buf, size_t len, size_t rec)
{
    size_t cap = len + 1, n_all, n, pos, next, i, total;
    awl_record *all = (awl_record *)malloc(cap * sizeof *all);
    awl_record *chunk = (awl_record *)malloc(3 * sizeof *chunk);
    uint64_t *starts = (uint64_t *)malloc(cap * sizeof *starts);
    uint8_t longtype[300];
    int v, u;
    if (!all || !chunk || !starts)
        exit(3);

    v = awl_validate(buf, len, 0, len);
    printf("V %d\n", v);

    n_all = awl_scan(buf, len, 0, len, all, cap, &next);
    if (next != len)
        fail("scan did not finish", rec);
    /* Tree links over exactly sized blocks: never more nodes than records,
     * every parent an earlier node. */
    {
        size_t tl = 16, j;
        int64_t *rows = (int64_t *)malloc((n_all ? n_all : 1) * sizeof *rows);
        int64_t *pp = (int64_t *)malloc((n_all ? n_all : 1) * sizeof *pp);
        uint64_t *table;
        int64_t nodes;
        while (tl < 2 * n_all)
            tl *= 2;
        table = (uint64_t *)malloc(tl * sizeof *table);
        if (!rows || !pp || !table)
            exit(3);
        nodes = awl_link_tree(all, n_all, rows, pp, table, tl);
        if (nodes > (int64_t)n_all)
            fail("more tree nodes than records", rec);
        for (j = 0; nodes > 0 && j < (size_t)nodes; j++)
            if (pp[j] >= (int64_t)j || pp[j] < -1 || rows[j] < 0 || rows[j] >= (int64_t)n_all)
                fail("bad tree link", rec);
        if (awl_link_tree(all, n_all, rows, pp, table, tl - 1) != -1 && tl > 1)
            fail("a table size that is not a power of two was accepted", rec);
        printf("T %lld\n", (long long)nodes);
        printf("B %lld %lld\n", (long long)awl_first_bad_line(all, n_all, 1),
               (long long)awl_first_bad_line(all, n_all, 0));
        free(rows);
        free(pp);
        free(table);
    }
    /* Chunked scanning (cap 3) must give the same records. */
    total = 0;
    pos = 0;
    while (pos < len) {
        n = awl_scan(buf, len, pos, len, chunk, 3, &next);
        if (n == 0 || total + n > n_all ||
            memcmp(chunk, all + total, n * sizeof *chunk) != 0)
            fail("chunked scan differs", rec);
        total += n;
        pos = next;
    }
    if (total != n_all)
        fail("chunked scan count", rec);
    /* Line starts in chunks of 2. */
    total = 0;
    pos = 0;
    while (pos < len) {
        n = awl_line_starts(buf, len, pos, len, starts + total, 2, &next);
        if (n == 0)
            fail("line_starts made no progress", rec);
        total += n;
        pos = next;
    }
    if (total != n_all)
        fail("line_starts count", rec);
    for (i = 0; i < n_all; i++) {
        const awl_record *r = &all[i];
        uint8_t *line;
        int in_place, alone;
        if (starts[i] != r->offset)
            fail("line_starts offset", rec);
        printf("R %u %u %u %u %u\n", r->kind, r->role, r->flags, r->id, r->parent);
        /* The line validated in place, and alone in an exact-size block. */
        in_place = awl_validate(buf, len, r->offset, r->offset + r->length);
        line = exact_copy(buf + r->offset, r->length);
        alone = awl_validate(line, r->length, 0, r->length);
        if (in_place != alone)
            fail("validate depends on the bytes after the range", rec);
        {
            /* Entry fields of the line alone: same verdict, spans inside it. */
            int64_t spans[6], fast[6];
            int j, ok = awl_entry_fields(line, r->length, 0, r->length, 0, spans);
            if (ok != alone)
                fail("entry_fields disagrees with validate", rec);
            for (j = 0; ok && j < 6; j += 2)
                if (spans[j] >= 0 && (spans[j] > spans[j + 1] ||
                                      (uint64_t)spans[j + 1] > r->length))
                    fail("entry_fields span outside the line", rec);
            /* Trusted on a valid line: the same answer; on any other line
             * it need only stay in bounds (ASan checks that). */
            j = awl_entry_fields(line, r->length, 0, r->length, 1, fast);
            if (ok && (j != 1 || memcmp(spans, fast, sizeof spans) != 0))
                fail("trusted entry_fields differs on a valid line", rec);
        }
        if (alone != (r->kind != AWL_KIND_INVALID && r->kind != AWL_KIND_BLANK))
            fail("validate disagrees with scan", rec);
        /* The scan of the line alone, in its exact-size block. */
        n = awl_scan(line, r->length, 0, r->length, chunk, 3, &next);
        free(line);
        if (r->length > 0 &&
            (n != 1 || (chunk[0].flags & ~AWL_FLAG_UNTERMINATED) !=
                           (r->flags & ~AWL_FLAG_UNTERMINATED) ||
             chunk[0].kind != r->kind))
            fail("scan of exact sub-buffer differs", rec);
    }
    /* Every prefix in an exact-size block: catches reads past the end. */
    if (len <= 700) {
        for (i = 0; i <= len; i++) {
            uint8_t *pre = exact_copy(buf, i);
            (void)awl_validate(pre, i, 0, i);
            {
                int64_t spans[6];
                (void)awl_entry_fields(pre, i, 0, i, 0, spans);
                (void)awl_entry_fields(pre, i, 0, i, 1, spans);
            }
            n = awl_scan(pre, i, 0, i, all, cap, &next);
            (void)n;
            (void)awl_find_last(pre, i, 0, i, (const uint8_t *)"message", 7, &u);
            (void)awl_digit_run((const char *)pre, i, 0, i, 3);
            free(pre);
        }
    }
    for (i = 0; i < sizeof k_types / sizeof k_types[0]; i++) {
        const char *t = k_types[i];
        int64_t off = awl_find_last(buf, len, 0, len, (const uint8_t *)t,
                                    strlen(t), &u);
        printf("F %zu %lld %d\n", i, (long long)off, u);
    }
    {
        static const size_t runs[] = {0, 1, 3, 19};
        for (i = 0; i < sizeof runs / sizeof runs[0]; i++)
            printf("D %zu %lld\n", runs[i],
                   (long long)awl_digit_run((const char *)buf, len, 0, len, runs[i]));
    }
    memset(longtype, 'x', sizeof longtype);
    (void)awl_find_last(buf, len, 0, len, longtype, sizeof longtype, &u);
    /* Bad ranges are clamped or rejected, never read out of bounds. */
    (void)awl_validate(buf, len, len, len + 10);
    (void)awl_validate(buf, len, len + 1, len);
    (void)awl_scan(buf, len, len + 5, len + 10, chunk, 3, &next);
    (void)awl_line_starts(buf, len, len + 5, len + 10, starts, 2, &next);
    (void)awl_find_last(buf, len, len, len + 10, longtype, 3, &u);
    (void)awl_digit_run((const char *)buf, len, len, len + 10, 3);
    (void)awl_digit_run((const char *)buf, len, len + 1, len, 3);
    free(all);
    free(chunk);
    free(starts);
}

int main(int argc, char **argv)
{
    FILE *f;
    size_t rec = 0;
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS\n", argv[0]);
        return 64;
    }
    /* AWL_SIMD=<level> runs the scanner at that instruction-set level
     * (awl_simd); the level in effect goes to stderr, stdout stays
     * comparable between runs. */
    if (getenv("AWL_SIMD") != NULL)
        awl_simd(atoi(getenv("AWL_SIMD")));
    fprintf(stderr, "simd %d\n", awl_simd(-1));
    f = fopen(argv[1], "rb");
    if (f == NULL) {
        perror(argv[1]);
        return 66;
    }
    for (;;) {
        uint8_t hdr[8];
        uint64_t len = 0;
        uint8_t *buf;
        int k;
        size_t got = fread(hdr, 1, 8, f);
        if (got == 0)
            break;
        if (got != 8)
            return 65;
        for (k = 7; k >= 0; k--)
            len = (len << 8) | hdr[k];
        buf = (uint8_t *)malloc(len ? (size_t)len : 1);
        if (buf == NULL || fread(buf, 1, (size_t)len, f) != len)
            return 65;
        printf("# %zu\n", rec);
        run(buf, (size_t)len, rec);
        free(buf);
        rec++;
    }
    fclose(f);
    return 0;
}

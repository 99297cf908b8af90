/*
 * scanner.h - fast line indexing and JSON validation for awl session logs.
 *
 * Every function takes an explicit buffer length: buffers are not
 * NUL-terminated and may contain NUL bytes.  `len` is the number of
 * readable bytes at `buf`; a range [start, end) with start <= end <= len
 * selects what is scanned.  Bytes in [end, len) may be *read* (for wide
 * loads) but never influence a result.  No allocation, thread safe; the
 * only global state is the instruction set chosen (awl_simd).
 *
 * The section between AWL_CDEF_BEGIN and AWL_CDEF_END is fed verbatim to
 * cffi's cdef() by native/build_scanner.py, so it must stay plain C
 * declarations (no preprocessor lines, no macros).
 */
#ifndef AWL_SCANNER_H
#define AWL_SCANNER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* AWL_CDEF_BEGIN */
/* One record per line; layout matches awl.scanner.INDEX_DTYPE (32 bytes). */
typedef struct awl_record {
    uint64_t offset;   /* absolute offset of the first byte of the line */
    uint64_t length;   /* bytes in the line, without the "\n" */
    uint32_t id;       /* int(id, 16) when FLAG_ID_HEX, else 0 */
    uint32_t parent;   /* int(parentId, 16) when FLAG_PARENT_HEX, else 0 */
    uint16_t flags;    /* AWL_FLAG_* */
    uint8_t kind;      /* AWL_KIND_* */
    uint8_t role;      /* AWL_ROLE_* (only for AWL_KIND_MESSAGE) */
    uint8_t _pad[4];
} awl_record;

enum {
    AWL_KIND_INVALID = 0,
    AWL_KIND_BLANK = 1,
    AWL_KIND_SESSION = 2,
    AWL_KIND_MESSAGE = 3,
    AWL_KIND_CHECKPOINT = 4,
    AWL_KIND_OTHER = 5,
    AWL_KIND_UNTYPED = 6
};

enum {
    AWL_ROLE_NONE = 0,
    AWL_ROLE_SYSTEM = 1,
    AWL_ROLE_USER = 2,
    AWL_ROLE_ASSISTANT = 3,
    AWL_ROLE_OTHER = 4
};

enum {
    AWL_FLAG_ID = 1,
    AWL_FLAG_ID_HEX = 2,
    AWL_FLAG_PARENT = 4,
    AWL_FLAG_PARENT_NULL = 8,
    AWL_FLAG_PARENT_HEX = 16,
    AWL_FLAG_UNTERMINATED = 32,
    /* Internal: the line is valid JSON but a relevant key or value uses a
     * backslash escape; the caller must re-derive id/parent/kind/role/flags
     * (all but offset, length and UNTERMINATED) itself. */
    AWL_FLAG_SLOW = 32768
};

/* Objects nested deeper than this are rejected (orjson's limit). */
enum { AWL_MAX_DEPTH = 1024 };

/* Writes the absolute start offsets of the lines of [pos, end) to out (at
 * most cap of them); pos must be a line start.  A "\n" at end-1 does not
 * start an empty final line.  *next_pos receives where to resume; it equals
 * end when every line has been reported.  Returns the number written. */
size_t awl_line_starts(const uint8_t *buf, size_t len, size_t pos, size_t end,
                       uint64_t *out, size_t cap, size_t *next_pos);

/* 1 if [start, end) is exactly one JSON object (surrounding JSON whitespace
 * allowed) that orjson would accept, 0 otherwise (also for bad ranges). */
int awl_validate(const uint8_t *buf, size_t len, size_t start, size_t end);

/* One record per line of [pos, end), pos a line start, at most cap of them;
 * *next_pos as for awl_line_starts.  Returns the number written. */
size_t awl_scan(const uint8_t *buf, size_t len, size_t pos, size_t end,
                awl_record *out, size_t cap, size_t *next_pos);

/* The offset of the first occurrence of the n bytes at needle in
 * [start, end), or -1 (also for a bad range).  An empty needle is found at
 * start.  (Python's bytes.find runs a skip search that is slow on JSON;
 * this is memmem.) */
int64_t awl_find(const uint8_t *buf, size_t len, size_t start, size_t end,
                 const uint8_t *needle, size_t n);

/* The offset of the first run of at least n ASCII digits in [start, end)
 * (where the run starts, or start itself when it is cut there), or -1 (also
 * for a bad range; n == 0 is found at start).  A JSON integer that 64 bits
 * cannot hold has 19 digits or more: lines without such a run hold none.
 * Looks at one byte in n where no digit is (a run of n holds one of them).
 * buf is char: Python's bytes pass as they are, with no buffer to make. */
int64_t awl_digit_run(const char *buf, size_t len, size_t start, size_t end, size_t n);

/* The offset of the byte of [start, end) at which the line it is in has
 * held n bytes that are '[' or '{' (before of them counted ahead of start,
 * in the part of start's line that came before it), or -1 (also for a bad
 * range; n <= before is found at start).  A JSON value nested n deep holds
 * n such bytes at least: a line without a run of them is no deeper, and
 * only the lines found need a closer look.  buf is char, as above. */
int64_t awl_bracket_run(const char *buf, size_t len, size_t start, size_t end, size_t n,
                        size_t before);

/* Scanning backward, the start offset of the last line in [start, end)
 * (start a line start) that is a valid JSON object whose top-level "type"
 * (last occurrence) equals the type_len bytes at type (UTF-8, unescaped).
 * -1 if there is none.  If *uncertain is set to 1, the returned line is
 * valid but uses escapes the C code does not resolve; the caller must check
 * it itself and, if it does not match, call again with end = the result. */
int64_t awl_find_last(const uint8_t *buf, size_t len, size_t start, size_t end,
                      const uint8_t *type, size_t type_len, int *uncertain);

/* For the JSON object in [start, end) (surrounding whitespace allowed): the
 * top-level string values of "timestamp", "provider" and "model", in that
 * order.  For member i, out[2i] and out[2i+1] receive the absolute [start,
 * end) of the value's characters between its quotes when it is a string
 * written without escapes (the last occurrence of the key counts, as in
 * orjson); both are -1 when the key is absent or its value is not a string;
 * both are -2 when the caller must decode the line itself (the value, or a
 * top-level key, uses a backslash escape).  Returns 1 when [start, end) is
 * a valid object, 0 otherwise (out is then unspecified).  out holds 6.
 * With trusted nonzero, [start, end) must be a line awl_scan accepted:
 * string bodies are then skipped to their closing quote, not validated,
 * which is several times faster on long text.  On other bytes the result
 * is unspecified, though reads stay within [start, len). */
int awl_entry_fields(const uint8_t *buf, size_t len, size_t start, size_t end,
                     int trusted, int64_t *out);
/* The first of the n records that is not an acceptable log line, or -1:
 * invalid JSON, no string "type", a second session header, or a message
 * without an id, a parentId or a role of system, user or assistant.  With
 * header nonzero, record 0 must be the session header.  Which problem it
 * is, the caller works out itself (awl.index.check_lines). */
int64_t awl_first_bad_line(const awl_record *rec, size_t n, int header);

/* The tree links of an index's nodes, for the common case only.  Nodes are
 * the records of kind MESSAGE or OTHER with AWL_FLAG_ID, in file order.
 * rows[j] receives node j's record index and parent_pos[j] the node
 * position of its parent (-1 when parentId is null or absent); both hold n.
 * table is scratch of table_len entries, a power of two at least twice the
 * node count (2n is always enough); its contents on entry do not matter.
 * Returns the node count, or -1 when the caller must link the tree itself:
 * an id or parentId that is not 8 lowercase hex digits, a duplicate id, a
 * parentId naming no earlier node (missing, or at or after its child: the
 * only way into a cycle), a table too small, or ids that collide in the
 * table far more than random ones do (crafted ids must not make this
 * quadratic). */
int64_t awl_link_tree(const awl_record *rec, size_t n, int64_t *rows,
                      int64_t *parent_pos, uint64_t *table, size_t table_len);

/* ---- search (native/search.c) ---- */

/* A line awl_search found: a message entry one of whose content blocks holds
 * the query (the first such block), or a candidate line that is not a valid
 * JSON object (kind AWL_BLOCK_INVALID). */
typedef struct awl_hit {
    uint64_t offset;   /* the line's first byte */
    uint64_t length;   /* the line's length, without "\n" */
    uint32_t block;    /* index of the block in message.content */
    uint8_t kind;      /* AWL_BLOCK_* */
    uint8_t role;      /* AWL_ROLE_* of the message */
    uint8_t _pad[2];
} awl_hit;

enum {
    AWL_BLOCK_INVALID = 0,
    AWL_BLOCK_TEXT = 1,
    AWL_BLOCK_THINKING = 2,
    AWL_BLOCK_TOOL_USE = 3,
    AWL_BLOCK_TOOL_RESULT = 4
};

enum {
    AWL_SEARCH_FOLD = 1,       /* ASCII letters match either case */
    AWL_SEARCH_EVERY_LINE = 2  /* every line is a candidate (no needles) */
};

/* awl_search_fd's *error for a line longer than its read buffer. */
enum { AWL_SEARCH_LONG_LINE = -2 };

/* Finds, from pos (a line start) to end, the lines holding one of the
 * n_needles byte strings laid end to end at needles (lengths in
 * needle_lens, at most 32 of them) and whose message entry has a content
 * block (text, thinking, a tool call's input, a tool result) that holds the
 * text_len bytes at text once its JSON string is decoded (a tool call's
 * input also once more, as the JSON text it is).  With AWL_SEARCH_FOLD,
 * needles and text must be lower-case and ASCII letters match either case.
 * Only messages whose role bit (1 << AWL_ROLE_*) is in role_mask and blocks
 * whose kind bit (1 << AWL_BLOCK_*) is in kind_mask count.  Writes at most
 * cap hits to out; *next_pos receives where to go on (end when done).  A
 * block that needs more than scratch_len bytes of scratch to decode stops
 * the search before its line: *scratch_needed then says how many (0
 * otherwise). */
size_t awl_search(const uint8_t *buf, size_t len, size_t pos, size_t end,
                  const uint8_t *needles, const size_t *needle_lens, size_t n_needles,
                  const uint8_t *text, size_t text_len, int flags, unsigned role_mask,
                  unsigned kind_mask, uint8_t *scratch, size_t scratch_len, awl_hit *out,
                  size_t cap, size_t *next_pos, size_t *scratch_needed);

/* awl_search over the bytes [pos, end) of the open file fd (size bytes
 * long), which it reads itself into rbuf (rbuf_len bytes; pos must be where a
 * line starts), or maps and unmaps where rbuf is NULL: a caller in Python
 * holds no GIL for any of it, and the process's memory is back as it was on
 * return.  At a line longer than rbuf it stops, with *next_pos at that line
 * and *error AWL_SEARCH_LONG_LINE: the caller searches on through a map of
 * its own (which leaves a torn last line unmapped, so that a writer cutting
 * it cannot raise SIGBUS here).  Also
 * sets *last_line to where the last line of [pos, end) starts (end - 1 is
 * not looked at: it is the last line's own newline, or its last byte).
 * Returns the hits as awl_search does; on a failure to read or map, the hits
 * before it with *error set to errno and *next_pos where it failed (-1 where
 * the platform has neither pread nor mmap). */
size_t awl_search_fd(int fd, size_t size, size_t pos, size_t end, const uint8_t *needles,
                     const size_t *needle_lens, size_t n_needles, const uint8_t *text,
                     size_t text_len, int flags, unsigned role_mask, unsigned kind_mask,
                     uint8_t *scratch, size_t scratch_len, awl_hit *out, size_t cap,
                     size_t *next_pos, size_t *scratch_needed, size_t *last_line, int *error,
                     uint8_t *rbuf, size_t rbuf_len);

/* How many times byte occurs in [start, end) (0 for a bad range). */
size_t awl_count_byte(const uint8_t *buf, size_t len, size_t start, size_t end, uint8_t byte);

/* Instruction sets of the string scanner (see awl_simd). */
enum { AWL_SIMD_NONE = 0, AWL_SIMD_SSE2 = 1, AWL_SIMD_AVX2 = 2 };

/* The instruction set the scanner uses (AWL_SIMD_*): the best the CPU has
 * among those compiled in.  With level >= 0 it is first set to level,
 * bounded by what the CPU has and what this build's floor is (SSE2 builds
 * cannot go below SSE2).  For tests and benchmarks; results never depend
 * on it.  The one piece of global state here. */
int awl_simd(int level);
/* AWL_CDEF_END */

#ifdef __cplusplus
}
#endif

#endif /* AWL_SCANNER_H */

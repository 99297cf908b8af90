/*
 * string_blocks.h - the 64-byte block loop of scan_string, included by
 * scanner.c once per instruction set (SSE2, and AVX2 where the compiler can
 * target it), so both run the same logic over their own byte classifiers.
 *
 * Before including, define:
 *   AWL_SB_NAME          the function to define
 *   AWL_SB_ATTR          its attributes (a target, or nothing)
 *   AWL_SB_STRING_MASKS  (p, block_masks *)                 quote/backslash/control/high
 *   AWL_SB_ESCAPE_MASKS  (p, uint64_t *ok, uint64_t *u)     bytes that may follow '\', 'u's
 *   AWL_SB_UTF8_MASKS    (p, *ge_c0, *ge_e0, *ge_f0, *bad)  UTF-8 lead classes
 *
 * Blocks of a string body are classified 64 bytes at once.  Which bytes are
 * escaped follows from the backslash mask, and escaped bytes, control bytes
 * and UTF-8 are checked for the whole block, so bodies full of \n and \"
 * (tool output, code) or of non-ASCII text cost no branch per character.
 * \u escapes and UTF-8 sequences running into the next block go through the
 * scalar validators; esc_skip/utf_skip mark how far those consumed.
 *
 * p points into a string body with p < e and lim - p >= 64.  Returns NULL
 * when the string is invalid; the byte after the closing quote with *done
 * set when it closes within the blocks; otherwise the position, outside any
 * escape or UTF-8 sequence, where the scalar loop goes on.
 */

AWL_SB_ATTR static const uint8_t *AWL_SB_NAME(const uint8_t *p, const uint8_t *e,
                                              const uint8_t *lim, int *bs, int *done)
{
    const uint8_t *esc_skip = p, *utf_skip = p;
    uint64_t carry = 0;
    while (p < e && (size_t)(lim - p) >= 64) {
        const uint8_t *base = p;
        block_masks m;
        uint64_t esc = 0, quotes, pre, it, um = 0, hh;
        size_t in_range = (size_t)(e - base);
        int closed = 0;
        /* Prefetch well ahead: measured 2-3x on escape-dense text on VMs,
         * where the hardware prefetcher falls behind the branchy loop. */
        _mm_prefetch((const char *)base + 2048, _MM_HINT_T0);
        AWL_SB_STRING_MASKS(base, &m);
        if (m.bslash | carry)
            esc = escaped_mask(m.bslash, &carry);
        quotes = m.quote & ~esc & bits_below(in_range);
        if (quotes) {
            pre = bits_below(awl_ctz64(quotes));
            closed = 1;
        } else if (in_range <= 64) {
            return NULL; /* not closed within the range */
        } else {
            pre = ~(uint64_t)0;
        }
        if (m.ctl & pre)
            return NULL;
        it = esc & pre;
        if (it) {
            *bs = 1;
            {
                uint64_t ok, is_u;
                AWL_SB_ESCAPE_MASKS(base, &ok, &is_u);
                if (it & ~ok)
                    return NULL; /* \x, \U, a raw control or high byte... */
                um = it & is_u;  /* \uXXXX: hex and surrogates, scalar */
            }
            while (um) {
                const uint8_t *q = base + awl_ctz64(um);
                /* the 'u' of a low surrogate was checked with its pair */
                if (q >= esc_skip) {
                    esc_skip = scan_escape(q - 1, e);
                    if (esc_skip == NULL)
                        return NULL;
                }
                um &= um - 1;
            }
        }
        hh = m.high & pre;
        if (hh && utf_skip > base)
            hh &= ~bits_below((size_t)(utf_skip - base));
        if (hh) {
            /* Validate the block's UTF-8 at once: no lead may be wrong and
             * every continuation byte must be exactly where some lead
             * requires one (this also rejects truncated and overlapping
             * sequences).  A sequence running into the next block is left
             * to the scalar validator, which sets utf_skip past it. */
            uint64_t ge_c0, ge_e0, ge_f0, bad, cont, l2, l3, l4, need, cross;
            uint64_t upto_need, upto_lead;
            AWL_SB_UTF8_MASKS(base, &ge_c0, &ge_e0, &ge_f0, &bad);
            cont = hh & ~ge_c0;
            l2 = hh & ge_c0 & ~ge_e0;
            l3 = hh & ge_e0 & ~ge_f0;
            l4 = hh & ge_f0;
            need = (l2 << 1) | (l3 << 1) | (l3 << 2) | (l4 << 1) | (l4 << 2) |
                   (l4 << 3);
            if (closed) {
                /* the quote is not a continuation byte: include it */
                upto_need = upto_lead = bits_below(awl_ctz64(quotes) + 1);
            } else {
                cross = (l2 & ((uint64_t)1 << 63)) | (l3 & ((uint64_t)3 << 62)) |
                        (l4 & ((uint64_t)7 << 61));
                upto_need = upto_lead = ~(uint64_t)0;
                if (cross) {
                    unsigned j = awl_ctz64(cross);
                    upto_need = bits_below(j + 1);
                    upto_lead = bits_below(j);
                    utf_skip = utf8_one(base + j, e);
                    if (utf_skip == NULL)
                        return NULL;
                }
            }
            if (((need ^ cont) & upto_need) | (bad & hh & upto_lead))
                return NULL;
            hh = 0;
        }
        while (hh) {
            size_t adv;
            utf_skip = utf8_run(base + awl_ctz64(hh), e);
            if (utf_skip == NULL)
                return NULL;
            adv = (size_t)(utf_skip - base);
            hh &= ~bits_below(adv);
        }
        if (closed) {
            *done = 1;
            return base + awl_ctz64(quotes) + 1;
        }
        p = base + 64;
    }
    /* Hand over to the scalar loop at a position outside any escape. */
    if (carry)
        p--; /* the backslash whose escaped byte starts the next block */
    if (esc_skip > p)
        p = esc_skip;
    if (utf_skip > p)
        p = utf_skip;
    return p;
}

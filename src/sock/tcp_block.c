/* SPDX-License-Identifier: BSD-3-Clause */
/* Connection blocks: carved from 2 MiB chunks that transparent huge pages can back. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "tcp_internal.h"

/*
 * With tens of thousands of connections their blocks outgrow what the
 * TLB maps with 4 KiB pages (Zen 3's second-level DTLB: 2048 entries, 8
 * MiB), so a cold block costs a page walk as well as its cache misses. The
 * kernel's own sockets live in memory it maps with huge pages; ours come
 * from 2 MiB-aligned chunks advised for transparent huge pages (granted
 * under THP "always" and "madvise", ignored under "never") from the
 * fifth chunk on, when they outgrow 8 MiB. A freed block goes on a free
 * list (LIFO: the one freed last is the warmest); the chunks go back to
 * the system with the stack. A bitmap per chunk says which blocks are
 * live, for the walks that visit every socket (teardown, bind's checks),
 * which a list through the blocks did at 16 bytes a connection.
 *
 * Under AddressSanitizer a free block is poisoned, so that a use after
 * free of a connection is still reported.
 */

#define CHUNK     (2u << 20)
#define HUGE_FROM 4u /* chunks (8 MiB: Zen 3's second-level DTLB with 4 KiB pages) */

#if defined(__SANITIZE_ADDRESS__)
#define HP__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HP__ASAN 1
#endif
#endif
#ifdef HP__ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n)   ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* Blocks per chunk, and the words of a chunk's bitmap of live blocks. */
static uint32_t per_chunk(const struct hp__tcp_blocks *b)
{
    return (uint32_t)(CHUNK / b->size);
}

static uint32_t map_words(const struct hp__tcp_blocks *b)
{
    return (per_chunk(b) + 63u) / 64u;
}

void hp__tcp_blocks_init(struct hp__tcp_blocks *b, size_t size)
{
    memset(b, 0, sizeof *b);
    b->size = (size + 63u) & ~(size_t)63u;
    /* An odd number of lines: with a power-of-two stride (16 lines) line k
     * of every block falls in the same few sets of a cache, and the hot
     * lines of a few hundred connections evict each other (the simulated
     * LL misses of rr doubled at 1024 bytes). */
    if ((b->size / 64u) % 2u == 0)
        b->size += 64u;
}

/* A fresh chunk, 2 MiB-aligned (over-map by one chunk, trim both ends);
 * advised for huge pages when `huge`. */
static void *chunk_map(bool huge)
{
    uint8_t *m =
        mmap(NULL, 2 * (size_t)CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    uintptr_t a = ((uintptr_t)m + CHUNK - 1) & ~(uintptr_t)(CHUNK - 1);
    uint8_t *c = (uint8_t *)a;
    if (c > m)
        munmap(m, (size_t)(c - m));
    if (c + CHUNK < m + 2 * (size_t)CHUNK)
        munmap(c + CHUNK, (size_t)(m + 2 * (size_t)CHUNK - (c + CHUNK)));
#ifdef MADV_HUGEPAGE
    if (huge)
        (void)madvise(c, CHUNK, MADV_HUGEPAGE);
#else
    (void)huge;
#endif
    return c;
}

/* The chunk holding p and p's index in it (p a block of b). */
static uint32_t chunk_of(const struct hp__tcp_blocks *b, const void *p, uint32_t *idx)
{
    uintptr_t base = (uintptr_t)p & ~(uintptr_t)(CHUNK - 1);
    uint32_t k = 0;
    while (k < b->nchunks && (uintptr_t)b->chunks[k] != base)
        k++;
    *idx = (uint32_t)(((uintptr_t)p - base) / b->size);
    return k;
}

static void mark(struct hp__tcp_blocks *b, const void *p, bool live)
{
    uint32_t i, k = chunk_of(b, p, &i);
    if (live)
        b->live[k][i / 64] |= 1ull << (i % 64);
    else
        b->live[k][i / 64] &= ~(1ull << (i % 64));
}

/* Room for one more chunk: its pointer and its bitmap. */
static bool chunk_room(struct hp__tcp_blocks *b)
{
    if (b->nchunks < b->cap)
        return true;
    uint32_t cap = b->cap ? 2 * b->cap : 8;
    void **v = realloc(b->chunks, (size_t)cap * sizeof *v);
    if (!v)
        return false;
    b->chunks = v;
    uint64_t **l = realloc(b->live, (size_t)cap * sizeof *l);
    if (!l)
        return false;
    b->live = l;
    b->cap = cap;
    return true;
}

void *hp__tcp_block_alloc(struct hp__tcp_blocks *b)
{
    void *p = b->free;
    if (p) {
        UNPOISON(p, b->size);
        b->free = *(void **)p;
        b->nlive++;
        mark(b, p, true);
        return p;
    }
    if (b->next == NULL || (size_t)(b->end - b->next) < b->size) {
        if (!chunk_room(b))
            return NULL;
        uint64_t *live = calloc(map_words(b), sizeof *live);
        /* Huge pages once the blocks outgrow what the TLB maps with 4 KiB
         * pages anyway (HUGE_FROM chunks): below that they would only
         * round a small stack's memory up to 2 MiB. */
        uint8_t *c = live ? chunk_map(b->nchunks >= HUGE_FROM) : NULL;
        if (!c) {
            free(live);
            return NULL;
        }
        b->live[b->nchunks] = live;
        b->chunks[b->nchunks++] = c;
        b->next = c;
        b->end = c + CHUNK;
        POISON(c, CHUNK);
    }
    p = b->next;
    b->next += b->size;
    UNPOISON(p, b->size);
    b->nlive++;
    mark(b, p, true);
    return p;
}

void *hp__tcp_block_next(const struct hp__tcp_blocks *b, const void *prev)
{
    uint32_t k = 0, i = 0;
    if (prev) {
        k = chunk_of(b, prev, &i);
        i++;
    }
    for (; k < b->nchunks; k++, i = 0) {
        uint32_t n = per_chunk(b);
        for (; i < n; i++) {
            uint64_t w = b->live[k][i / 64] >> (i % 64);
            if (!w) {
                i |= 63u; /* the rest of this word is free */
                continue;
            }
            i += (uint32_t)__builtin_ctzll(w);
            if (i < n)
                return (uint8_t *)b->chunks[k] + (size_t)i * b->size;
        }
    }
    return NULL;
}

void hp__tcp_block_free(struct hp__tcp_blocks *b, void *p)
{
    if (!p)
        return;
    mark(b, p, false);
    *(void **)p = b->free;
    b->free = p;
    b->nlive--;
    POISON(p, b->size); /* the allocator unpoisons it before reading the link */
}

void hp__tcp_blocks_fini(struct hp__tcp_blocks *b)
{
    for (uint32_t i = 0; i < b->nchunks; i++) {
        UNPOISON(b->chunks[i], CHUNK);
        munmap(b->chunks[i], CHUNK);
        free(b->live[i]);
    }
    free(b->chunks);
    free(b->live);
    memset(b, 0, sizeof *b);
}

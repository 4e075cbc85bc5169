/* SPDX-License-Identifier: BSD-3-Clause */
/* Connection blocks: carved from 2 MiB chunks that transparent huge pages can back. */
#include <errno.h>
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
 * under THP "always" and "madvise", ignored under "never"). A freed block
 * goes on a free list (LIFO: the one freed last is the warmest); the
 * chunks go back to the system with the stack.
 *
 * Under AddressSanitizer a free block is poisoned, so that a use after
 * free of a connection is still reported.
 */

#define CHUNK (2u << 20)

#if defined(__SANITIZE_ADDRESS__)
#define HP__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HP__ASAN 1
#endif
#endif
#ifdef HP__ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

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

/* A fresh chunk, 2 MiB-aligned (over-map by one chunk, trim both ends). */
static void *chunk_map(void)
{
    uint8_t *m = mmap(NULL, 2 * (size_t)CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    uintptr_t a = ((uintptr_t)m + CHUNK - 1) & ~(uintptr_t)(CHUNK - 1);
    uint8_t *c = (uint8_t *)a;
    if (c > m)
        munmap(m, (size_t)(c - m));
    if (c + CHUNK < m + 2 * (size_t)CHUNK)
        munmap(c + CHUNK, (size_t)(m + 2 * (size_t)CHUNK - (c + CHUNK)));
#ifdef MADV_HUGEPAGE
    (void)madvise(c, CHUNK, MADV_HUGEPAGE);
#endif
    return c;
}

void *hp__tcp_block_alloc(struct hp__tcp_blocks *b)
{
    void *p = b->free;
    if (p) {
        UNPOISON(p, b->size);
        b->free = *(void **)p;
        b->nlive++;
        return p;
    }
    if (b->next == NULL || (size_t)(b->end - b->next) < b->size) {
        if (b->nchunks == b->cap) {
            uint32_t cap = b->cap ? 2 * b->cap : 8;
            void **v = realloc(b->chunks, (size_t)cap * sizeof *v);
            if (!v)
                return NULL;
            b->chunks = v;
            b->cap = cap;
        }
        uint8_t *c = chunk_map();
        if (!c)
            return NULL;
        b->chunks[b->nchunks++] = c;
        b->next = c;
        b->end = c + CHUNK;
        POISON(c, CHUNK);
    }
    p = b->next;
    b->next += b->size;
    UNPOISON(p, b->size);
    b->nlive++;
    return p;
}

void hp__tcp_block_free(struct hp__tcp_blocks *b, void *p)
{
    if (!p)
        return;
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
    }
    free(b->chunks);
    memset(b, 0, sizeof *b);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* Benchmark peers: DPDK's raw rte_mempool and its packet buffers (rte_mbuf) from the distro's libdpdk-dev, behind a tiny C API so that the benchmark stays DPDK-free. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_config.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_version.h>

#include "../bench.h" /* the API below, declared under HP_HAVE_DPDK */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc = -EAGAIN;
static char init_why[256];

/* EAL once per process: no huge pages, no PCI scan, no shared config files,
 * no telemetry socket, one lcore (the first CPU this process may use; the
 * measuring threads register themselves as non-EAL lcores). EAL logs to
 * stdout and prints its usage there: both go to stderr instead, so that
 * `--json` stays clean. EAL pins the calling thread to its lcore; the
 * caller's affinity is put back. */
static void eal_init(void)
{
    cpu_set_t saved;
    bool have_saved = pthread_getaffinity_np(pthread_self(), sizeof saved, &saved) == 0;
    int first = 0;
    if (have_saved)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &saved)) {
                first = c;
                break;
            }
    char lcore[16];
    snprintf(lcore, sizeof lcore, "%d", first);
    char *argv[] = {"hotpath", "--no-huge", "--no-pci", "--no-shconf", "--no-telemetry",
                    "-l",      lcore,       "-m",       "256",         "--log-level=error",
                    NULL};
    int argc = (int)(sizeof argv / sizeof argv[0]) - 1;

    rte_openlog_stream(stderr);
    fflush(stdout);
    int out = dup(STDOUT_FILENO);
    if (out >= 0)
        dup2(STDERR_FILENO, STDOUT_FILENO);
    int rc = rte_eal_init(argc, argv);
    int err = rte_errno;
    fflush(stdout);
    if (out >= 0) {
        dup2(out, STDOUT_FILENO);
        close(out);
    }
    if (have_saved)
        pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
    if (rc < 0) {
        snprintf(init_why, sizeof init_why,
                 "rte_eal_init(--no-huge --no-pci --no-shconf -l %d -m 256) failed: %s", first,
                 rte_strerror(err));
        init_rc = err > 0 ? -err : -EINVAL;
        return;
    }
    init_rc = 0;
}

int hp_peer_dpdk_init(const char **why)
{
    pthread_once(&init_once, eal_init);
    if (why)
        *why = init_rc ? init_why : NULL;
    return init_rc;
}

const char *hp_peer_dpdk_version(void)
{
    return rte_version();
}

/* Plain rte_mempool objects of elt_size bytes with the default ops
 * ("ring_mp_mc"), as rte_pktmbuf_pool_create would make for mbufs. */
void *hp_peer_dpdk_pool_create(const char *name, unsigned n, unsigned elt_size, unsigned cache)
{
    struct rte_mempool *mp =
        rte_mempool_create(name, n, elt_size, cache, 0, NULL, NULL, NULL, NULL, SOCKET_ID_ANY, 0);
    if (!mp)
        errno = rte_errno;
    return mp;
}

/* Packet buffers: struct rte_mbuf (128 B) then data_room bytes, headroom
 * (RTE_PKTMBUF_HEADROOM) included, no private area, the default mbuf ops
 * ("ring_mp_mc" unless EAL was told otherwise). */
void *hp_peer_dpdk_mbuf_pool_create(const char *name, unsigned n, unsigned data_room,
                                    unsigned cache)
{
    if (data_room > UINT16_MAX) {
        errno = EINVAL;
        return NULL;
    }
    struct rte_mempool *mp =
        rte_pktmbuf_pool_create(name, n, cache, 0, (uint16_t)data_room, SOCKET_ID_ANY);
    if (!mp)
        errno = rte_errno;
    return mp;
}

/* What a new mbuf of mp looks like: the mempool's element size, the data
 * room (headroom included) and the headroom (data_off) of a new mbuf. */
unsigned hp_peer_dpdk_pool_elt_size(void *mp)
{
    return ((struct rte_mempool *)mp)->elt_size;
}

unsigned hp_peer_dpdk_mbuf_data_room(void *mp)
{
    return rte_pktmbuf_data_room_size(mp);
}

unsigned hp_peer_dpdk_mbuf_headroom(void)
{
    return RTE_PKTMBUF_HEADROOM;
}

void hp_peer_dpdk_pool_free(void *mp)
{
    rte_mempool_free(mp);
}

const char *hp_peer_dpdk_pool_ops(void *mp)
{
    return rte_mempool_get_ops(((struct rte_mempool *)mp)->ops_index)->name;
}

/* Objects in the pool, caches included. */
unsigned hp_peer_dpdk_pool_avail(void *mp)
{
    return rte_mempool_avail_count(mp);
}

/* A thread that is not an EAL lcore has no mempool cache unless it
 * registers: returns its lcore id, or -errno. */
int hp_peer_dpdk_thread_register(void)
{
    if (rte_thread_register() < 0)
        return rte_errno > 0 ? -rte_errno : -EINVAL;
    return (int)rte_lcore_id();
}

void hp_peer_dpdk_thread_unregister(void)
{
    rte_thread_unregister();
}

/* Size of the calling thread's cache in mp, -1 when it has none (then every
 * get and put goes to the ring). */
int hp_peer_dpdk_cache_size(void *mp)
{
    struct rte_mempool_cache *c = rte_mempool_default_cache(mp, rte_lcore_id());
    return c ? (int)c->size : -1;
}

void hp_peer_dpdk_cache_flush(void *mp)
{
    struct rte_mempool_cache *c = rte_mempool_default_cache(mp, rte_lcore_id());
    if (c)
        rte_mempool_cache_flush(c, mp);
}

/* The measured calls: each is one call into this file, as hotpath's are
 * calls into the library. */
int hp_peer_dpdk_get(void *mp, void **obj)
{
    return rte_mempool_get(mp, obj);
}

void hp_peer_dpdk_put(void *mp, void *obj)
{
    rte_mempool_put(mp, obj);
}

int hp_peer_dpdk_get_bulk(void *mp, void **objs, unsigned n)
{
    return rte_mempool_get_bulk(mp, objs, n);
}

void hp_peer_dpdk_put_bulk(void *mp, void *const *objs, unsigned n)
{
    rte_mempool_put_bulk(mp, objs, n);
}

/* Packet buffers. alloc resets each mbuf's metadata (rte_pktmbuf_reset:
 * next, nb_segs, port, ol_flags, packet type, lengths, data_off = headroom),
 * alloc_bulk likewise for each; free goes through rte_pktmbuf_prefree_seg
 * (reference count, segment chain, indirect and external buffers) before
 * putting the mbuf back, free_bulk likewise and puts them back in bulk. */
void *hp_peer_dpdk_mbuf_alloc(void *mp)
{
    return rte_pktmbuf_alloc(mp);
}

int hp_peer_dpdk_mbuf_alloc_bulk(void *mp, void **mbufs, unsigned n)
{
    return rte_pktmbuf_alloc_bulk(mp, (struct rte_mbuf **)mbufs, n);
}

void hp_peer_dpdk_mbuf_free(void *m)
{
    rte_pktmbuf_free(m);
}

void hp_peer_dpdk_mbuf_free_bulk(void **mbufs, unsigned n)
{
    rte_pktmbuf_free_bulk((struct rte_mbuf **)mbufs, n);
}

/* Like hp_buf_append: room for len more bytes at the end of the data,
 * or NULL when the tailroom is short. */
void *hp_peer_dpdk_mbuf_append(void *m, unsigned len)
{
    if (len > UINT16_MAX)
        return NULL;
    return rte_pktmbuf_append(m, (uint16_t)len);
}

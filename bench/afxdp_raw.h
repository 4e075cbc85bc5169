/* SPDX-License-Identifier: BSD-3-Clause */
/* The bare libxdp transmit loop that `hotpath bench afxdp-raw` measures the afxdp link against. */
#ifndef HOTPATH_TOOL_AFXDP_RAW_H
#define HOTPATH_TOOL_AFXDP_RAW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * What `xdpsock -t` does, written straight against <xdp/xsk.h> with none of
 * hotpath in the loop: a UMEM of pre-written frames, then reserve a batch of
 * transmit descriptors, fill them, submit, kick with sendto(), reap the
 * completion ring; repeat.
 */
struct afxdp_raw_opts {
    const char *iface;
    unsigned queue;
    unsigned frame_len; /* bytes without FCS, 60 .. 1514 */
    unsigned batch;     /* descriptors per burst, 1 .. 256 */
    bool skb_mode;      /* generic XDP; otherwise native, and generic if the driver lacks it */
    double warmup_s;    /* run unmeasured first */
    double seconds;     /* then measure this long */
};

struct afxdp_raw_result {
    uint64_t packets; /* descriptors handed to the kernel in the measured window */
    double seconds;   /* the window's wall time */
    double pps;
    double cpu_s;   /* CPU time of the calling thread in the window (system time included) */
    uint64_t kicks; /* sendto() calls in the window */
    bool skb_mode;  /* the XDP mode the socket got */
};

/* Run the loop on the calling thread (pin it first if wanted). 0, or -errno
 * with the reason in why: -EOPNOTSUPP when hotpath was built without
 * libxdp, -EPERM without root's capabilities, -ENODEV without the
 * interface. */
int afxdp_raw_txonly(const struct afxdp_raw_opts *o, struct afxdp_raw_result *r, char *why,
                     size_t why_len);

#endif

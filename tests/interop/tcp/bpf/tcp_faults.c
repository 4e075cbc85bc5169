/* SPDX-License-Identifier: BSD-3-Clause */
/* tc programs for tests/interop/tcp.sh: drop, duplicate and reorder TCP frames on the kernel's veth end (this kernel has no netem). */
/*
 * Built by tcp.sh with
 *   clang -O2 -g -target bpf -I/usr/include/$(uname -m)-linux-gnu \
 *         -DDROP_PPM=... -DDUP_PPM=... -DREORDER_PPM=... -c bpf/tcp_faults.c
 * and attached to the kernel's end of the veth with clsact:
 *
 *   egress  (the kernel's frames towards hotpath): drop DROP_PPM per
 *           million TCP frames (TC_ACT_STOLEN, not SHOT: a SHOT frame is
 *           reported to the sender as NET_XMIT_DROP, and the kernel's TCP
 *           just sends it again at once, no loss at all; a stolen one is
 *           "sent" and gone), duplicate DUP_PPM (bpf_clone_redirect to
 *           the same device; the copy is marked so it is not faulted
 *           again), and send REORDER_PPM through HTB class 1:20, a slower
 *           class than the default 1:10, so that later frames overtake
 *           them (tcp.sh makes the HTB root).
 *   ingress (hotpath's frames towards the kernel): drop DROP_PPM.
 *
 * Only TCP is touched: ARP and NDP go through, so that faults never look
 * like a neighbour that went away.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>

/* After linux/bpf.h, whose types it uses (a block of its own: not sorted). */
#include <bpf/bpf_helpers.h>

#ifndef DROP_PPM
#define DROP_PPM 0
#endif
#ifndef DUP_PPM
#define DUP_PPM 0
#endif
#ifndef REORDER_PPM
#define REORDER_PPM 0
#endif

#define COPY_MARK  0x68706475u /* "hpdu": a duplicate we made */
#define SLOW_CLASS 0x00010020u /* HTB class 1:20 */

static __always_inline int is_tcp(struct __sk_buff *skb)
{
    __u8 b[2];
    if (bpf_skb_load_bytes(skb, 12, b, 2) < 0)
        return 0;
    __u8 proto;
    if (b[0] == 0x08 && b[1] == 0x00) {
        if (bpf_skb_load_bytes(skb, 14 + 9, &proto, 1) < 0)
            return 0;
        return proto == 6;
    }
    if (b[0] == 0x86 && b[1] == 0xdd) {
        if (bpf_skb_load_bytes(skb, 14 + 6, &proto, 1) < 0)
            return 0;
        return proto == 6;
    }
    return 0;
}

static __always_inline int chance(__u32 ppm)
{
    return ppm && bpf_get_prandom_u32() % 1000000u < ppm;
}

SEC("tc/egress")
int toward_hotpath(struct __sk_buff *skb)
{
    if (skb->mark == COPY_MARK) {
        skb->mark = 0;
        return TC_ACT_OK;
    }
    if (!is_tcp(skb))
        return TC_ACT_OK;
    if (chance(DROP_PPM)) {
        /* Freed by the kernel as consumed; the sender hears of no failure. */
        return TC_ACT_STOLEN;
    }
    if (chance(DUP_PPM)) {
        skb->mark = COPY_MARK;
        bpf_clone_redirect(skb, skb->ifindex, 0);
        skb->mark = 0;
    }
    if (chance(REORDER_PPM))
        skb->priority = SLOW_CLASS;
    return TC_ACT_OK;
}

SEC("tc/ingress")
int from_hotpath(struct __sk_buff *skb)
{
    if (is_tcp(skb) && chance(DROP_PPM))
        return TC_ACT_SHOT;
    return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";

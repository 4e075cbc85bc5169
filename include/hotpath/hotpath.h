/* SPDX-License-Identifier: BSD-3-Clause */
/* Umbrella header: includes every public hotpath header. */
#ifndef HOTPATH_HOTPATH_H
#define HOTPATH_HOTPATH_H

#include <hotpath/buf.h>
#include <hotpath/cacheline.h>
#include <hotpath/cksum.h>
#include <hotpath/common.h>
#include <hotpath/cpu.h>
#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/log.h>
#include <hotpath/loop.h>
#include <hotpath/pool.h>
#include <hotpath/sock.h>
#include <hotpath/stack.h>
#include <hotpath/tcp.h>
#include <hotpath/udp.h>
#include <hotpath/wire.h>

#endif

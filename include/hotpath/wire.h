/* SPDX-License-Identifier: BSD-3-Clause */
/* Umbrella header of the wire layer: every packet view (check, accessors, parse, emit). */
#ifndef HOTPATH_WIRE_H
#define HOTPATH_WIRE_H

#include <hotpath/wire/arp.h>
#include <hotpath/wire/common.h>
#include <hotpath/wire/eth.h>
#include <hotpath/wire/icmp.h>
#include <hotpath/wire/icmp6.h>
#include <hotpath/wire/ipv4.h>
#include <hotpath/wire/ipv6.h>
#include <hotpath/wire/l4.h>
#include <hotpath/wire/tcp.h>
#include <hotpath/wire/udp.h>

#endif

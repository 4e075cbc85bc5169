// SPDX-License-Identifier: BSD-3-Clause
// Two smoltcp interfaces, each with its socket set, joined by the wire: side 0 (198.18.0.1, the
// client) and side 1 (198.18.0.2, the server), as in bench/peers/harness.h.

use smoltcp::iface::{Config, Interface, PollResult, SocketHandle, SocketSet};
use smoltcp::socket::{tcp, udp};
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, IpAddress, IpCidr};

use crate::wire::{Dev, Wire};

pub const PORT: u16 = 5201;
pub const UDP_PORT: u16 = 7;
pub const ADDR: [[u8; 4]; 2] = [[198, 18, 0, 1], [198, 18, 0, 2]];
const MAC: [[u8; 6]; 2] = [[2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]];
/// Socket buffers: 256 KiB each way, hotpath's default sndbuf and rcvbuf (smoltcp
/// allocates them up front, hotpath and lwIP as data waits).
pub const TCP_BUF: usize = 256 * 1024;

pub struct Inst {
    pub iface: Interface,
    pub set: SocketSet<'static>,
}

pub struct Pair {
    pub inst: [Inst; 2],
    pub wire: [Wire; 2], // wire[i]: sent by side i
}

/// TCP timestamps (RFC 7323) on, as in hotpath and lwIP: milliseconds.
fn tsval() -> u32 {
    Instant::now().total_millis() as u32
}

pub fn addr(side: usize) -> IpAddress {
    let a = ADDR[side];
    IpAddress::v4(a[0], a[1], a[2], a[3])
}

impl Pair {
    pub fn new() -> Box<Pair> {
        let mut wire = [Wire::new(), Wire::new()];
        let mk = |side: usize, wire: &mut [Wire; 2]| {
            let mut cfg = Config::new(EthernetAddress(MAC[side]).into());
            cfg.random_seed = 0x9e37_79b9_7f4a_7c15 ^ side as u64;
            let (w0, w1) = wire.split_at_mut(1);
            let mut dev = if side == 0 {
                Dev {
                    tx: &mut w0[0],
                    rx: &mut w1[0],
                }
            } else {
                Dev {
                    tx: &mut w1[0],
                    rx: &mut w0[0],
                }
            };
            let mut iface = Interface::new(cfg, &mut dev, Instant::now());
            iface.update_ip_addrs(|a| {
                let _ = a.push(IpCidr::new(addr(side), 24));
            });
            Inst {
                iface,
                set: SocketSet::new(vec![]),
            }
        };
        let a = mk(0, &mut wire);
        let b = mk(1, &mut wire);
        Box::new(Pair { inst: [a, b], wire })
    }

    /// One round of side's interface: ingress and egress of everything ready.
    pub fn poll(&mut self, side: usize) -> bool {
        let (w0, w1) = self.wire.split_at_mut(1);
        let mut dev = if side == 0 {
            Dev {
                tx: &mut w0[0],
                rx: &mut w1[0],
            }
        } else {
            Dev {
                tx: &mut w1[0],
                rx: &mut w0[0],
            }
        };
        let i = &mut self.inst[side];
        i.iface.poll(Instant::now(), &mut dev, &mut i.set) == PollResult::SocketStateChanged
    }

    /// A TCP socket of side, with hotpath's settings: Nagle off, timestamps on.
    pub fn tcp_socket(&mut self, side: usize) -> SocketHandle {
        let mut s = tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0u8; TCP_BUF]),
            tcp::SocketBuffer::new(vec![0u8; TCP_BUF]),
        );
        s.set_nagle_enabled(false);
        s.set_tsval_generator(Some(tsval));
        self.inst[side].set.add(s)
    }

    pub fn udp_socket(&mut self, side: usize) -> SocketHandle {
        let n = 256;
        let rx = udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; n], vec![0u8; n * 128]);
        let tx = udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; n], vec![0u8; n * 128]);
        let mut s = udp::Socket::new(rx, tx);
        s.bind(UDP_PORT).expect("bind");
        self.inst[side].set.add(s)
    }

    pub fn tcp(&mut self, side: usize, h: SocketHandle) -> &mut tcp::Socket<'static> {
        self.inst[side].set.get_mut::<tcp::Socket>(h)
    }

    pub fn frames(&self) -> u64 {
        self.wire[0].frames + self.wire[1].frames
    }
}

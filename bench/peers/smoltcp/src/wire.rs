// SPDX-License-Identifier: BSD-3-Clause
// The in-memory wire between the two interfaces: per direction a ring of frame slots, written in
// place by smoltcp's TxToken and read in place by its RxToken (no copy besides smoltcp's own).

use smoltcp::phy::{self, DeviceCapabilities, Medium};
use smoltcp::time::Instant;

pub const RING: usize = 1024; // frames in flight per direction, as hotpath's mem ring
const FRAME: usize = 1536; // an Ethernet frame of MTU 1500

pub struct Wire {
    slots: Vec<u8>,
    len: Vec<u16>,
    head: usize, // next to read
    tail: usize, // next to write
    pub frames: u64,
    pub drops: u64,
    scratch: Vec<u8>, // where a frame goes when the ring is full (dropped)
}

impl Wire {
    pub fn new() -> Wire {
        Wire {
            slots: vec![0; RING * FRAME],
            len: vec![0; RING],
            head: 0,
            tail: 0,
            frames: 0,
            drops: 0,
            scratch: vec![0; FRAME],
        }
    }

    fn full(&self) -> bool {
        self.tail - self.head == RING
    }

    fn empty(&self) -> bool {
        self.head == self.tail
    }
}

/// One interface's view: what it receives from and what it sends on.
pub struct Dev<'a> {
    pub rx: &'a mut Wire,
    pub tx: &'a mut Wire,
}

pub struct Rx<'a>(&'a mut Wire);
pub struct Tx<'a>(&'a mut Wire);

impl phy::RxToken for Rx<'_> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        let w = self.0;
        let i = w.head % RING;
        w.head += 1;
        let len = w.len[i] as usize;
        f(&w.slots[i * FRAME..i * FRAME + len])
    }
}

impl phy::TxToken for Tx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let w = self.0;
        if w.full() || len > FRAME {
            // Only a reply handed out with a received frame can meet a full ring.
            w.drops += 1;
            let mut s = std::mem::take(&mut w.scratch);
            s.resize(len.max(FRAME), 0);
            let r = f(&mut s[..len]);
            w.scratch = s;
            return r;
        }
        let i = w.tail % RING;
        let r = f(&mut w.slots[i * FRAME..i * FRAME + len]);
        w.len[i] = len as u16;
        w.tail += 1;
        w.frames += 1;
        r
    }
}

impl phy::Device for Dev<'_> {
    type RxToken<'a>
        = Rx<'a>
    where
        Self: 'a;
    type TxToken<'a>
        = Tx<'a>
    where
        Self: 'a;

    fn receive(&mut self, _t: Instant) -> Option<(Rx<'_>, Tx<'_>)> {
        if self.rx.empty() {
            return None;
        }
        Some((Rx(self.rx), Tx(self.tx)))
    }

    fn transmit(&mut self, _t: Instant) -> Option<Tx<'_>> {
        if self.tx.full() {
            return None;
        }
        Some(Tx(self.tx))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut c = DeviceCapabilities::default();
        c.medium = Medium::Ethernet;
        c.max_transmission_unit = 1514; // Ethernet: the MTU of 1500 and the header
        c
    }
}

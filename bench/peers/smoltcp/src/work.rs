// SPDX-License-Identifier: BSD-3-Clause
// The workloads of bench/peers/harness.h on smoltcp, driven as its examples do: poll the
// interface, then look at the sockets when it says their state may have changed, then send
// what the application queued (poll_egress).

use smoltcp::iface::SocketHandle;
use smoltcp::socket::{tcp, udp};
use smoltcp::time::Instant;

use crate::pair::{addr, Pair, PORT, UDP_PORT};
use crate::sys;

pub const RR_FLOWS: usize = 1000;
pub const CRR_PAR: usize = 16;
pub const CRR_MAX: u64 = 12000;
pub const CRR_WARM: u64 = 1000;
pub const CRR_MSG: usize = 64;
pub const UDP_WINDOW: usize = 64;
pub const UDP_MSG: usize = 64;
pub const IDLE_CONNS: usize = 10000;
pub const BULK_CHUNK: usize = 128 * 1024;

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum W {
    Rr1,
    Rr1k,
    Bulk,
    Crr,
    Udp,
    Idle,
}

#[derive(Default, Clone)]
pub struct Res {
    pub ok: bool,
    pub value: f64,
    pub count: u64,
    pub frames: u64,
    pub cpu_s: f64,
    pub seconds: f64,
    pub why: String,
}

/// A client slot of tcp_crr: the socket it uses now, if any.
#[derive(Clone, Copy, Default)]
struct Slot {
    sock: Option<usize>,
    sent: bool,
    got: usize,
}

pub struct Run {
    p: Box<Pair>,
    w: W,
    cli: Vec<SocketHandle>,
    srv: Vec<SocketHandle>,
    out: Vec<bool>,  // tcp_rr: a request is outstanding
    got: Vec<usize>, // server: bytes of the message being received
    slots: Vec<Slot>,
    busy: Vec<bool>, // tcp_crr: the client socket is a slot's
    udp: Vec<SocketHandle>,
    count: u64,
    stop_at: u64,
    port: u16,
    chunk: Vec<u8>,
    acted: [bool; 2], // the application queued data on side i: send it now
    err: Option<String>,
}

impl Run {
    pub fn new(w: W) -> Run {
        Run {
            p: Pair::new(),
            w,
            cli: vec![],
            srv: vec![],
            out: vec![],
            got: vec![],
            slots: vec![],
            busy: vec![],
            udp: vec![],
            count: 0,
            stop_at: 0,
            port: 49152,
            chunk: (0..BULK_CHUNK).map(|k| (k * 7) as u8).collect(),
            acted: [false; 2],
            err: None,
        }
    }

    fn fail(&mut self, why: String) {
        if self.err.is_none() {
            self.err = Some(why);
        }
    }

    /// Side 0 connects socket h to the server from the next ephemeral port
    /// (smoltcp leaves the choice to the application: 49152-65535, as the others).
    fn connect(&mut self, h: SocketHandle) {
        let port = self.port;
        self.port = if self.port == 65535 {
            49152
        } else {
            self.port + 1
        };
        let i = &mut self.p.inst[0];
        let s = i.set.get_mut::<tcp::Socket>(h);
        if let Err(e) = s.connect(i.iface.context(), (addr(1), PORT), port) {
            self.fail(format!("connect: {e:?}"));
        }
        self.acted[0] = true;
    }

    // ---- tcp_rr ------------------------------------------------------------------------

    fn rr_client(&mut self) {
        for i in 0..self.cli.len() {
            let s = self.p.tcp(0, self.cli[i]);
            if s.can_recv() {
                let n = s.recv(|b| (b.len(), b.len())).unwrap_or(0);
                self.count += n as u64;
                self.out[i] = false;
            }
            if !self.out[i] && s.may_send() {
                if s.send_slice(b"x") != Ok(1) {
                    self.fail("tcp_rr: the request did not fit".into());
                }
                self.out[i] = true;
                self.acted[0] = true;
            }
        }
    }

    /// Echo what came, on every server socket.
    fn echo_server(&mut self) {
        let mut buf = [0u8; 64];
        for i in 0..self.srv.len() {
            let s = self.p.tcp(1, self.srv[i]);
            while s.can_recv() {
                let n = s.recv_slice(&mut buf).unwrap_or(0);
                if n == 0 || s.send_slice(&buf[..n]) != Ok(n) {
                    self.err
                        .get_or_insert("tcp_rr: the echo did not fit".into());
                    break;
                }
                self.acted[1] = true;
            }
        }
    }

    // ---- tcp_bulk ----------------------------------------------------------------------

    fn bulk_client(&mut self) {
        let s = self.p.inst[0].set.get_mut::<tcp::Socket>(self.cli[0]);
        while s.can_send() {
            match s.send_slice(&self.chunk) {
                Ok(n) if n > 0 => self.acted[0] = true,
                _ => break,
            }
        }
    }

    fn bulk_server(&mut self) {
        let s = self.p.tcp(1, self.srv[0]);
        while s.can_recv() {
            let n = s.recv(|b| (b.len(), b.len())).unwrap_or(0);
            if n == 0 {
                break;
            }
            self.count += n as u64;
        }
    }
}

// ---- tcp_crr -------------------------------------------------------------------------------

impl Run {
    /// A client socket nobody uses: closed, or in TIME_WAIT, which smoltcp lets
    /// a new connect() take over (its is_open() is false).
    fn free_socket(&mut self) -> Option<usize> {
        (0..self.cli.len()).find(|&i| !self.busy[i] && !self.p.tcp(0, self.cli[i]).is_open())
    }

    fn crr_slot(&mut self, k: usize) {
        let Some(i) = self.slots[k].sock else {
            if self.stop_at > 0 && self.count >= self.stop_at {
                return; // the window is over: the slot waits for the next one
            }
            if let Some(i) = self.free_socket() {
                self.busy[i] = true;
                self.slots[k] = Slot {
                    sock: Some(i),
                    sent: false,
                    got: 0,
                };
                self.connect(self.cli[i]);
            }
            return;
        };
        let s = self.p.tcp(0, self.cli[i]);
        if !self.slots[k].sent && s.may_send() {
            let _ = s.send_slice(&[b'q'; CRR_MSG]);
            self.slots[k].sent = true;
            self.acted[0] = true;
        }
        if s.can_recv() {
            self.slots[k].got += s.recv(|b| (b.len(), b.len())).unwrap_or(0);
        }
        if self.slots[k].got >= CRR_MSG {
            // The response is in: close (the client first, as an HTTP/1.0 client), count.
            s.close();
            self.acted[0] = true;
            self.count += 1;
            self.slots[k].sock = None;
            self.busy[i] = false;
        } else if s.state() == tcp::State::Closed {
            self.fail("tcp_crr: a connection was reset".into());
        }
    }

    fn crr_client(&mut self) {
        for k in 0..self.slots.len() {
            self.crr_slot(k);
            if self.slots[k].sock.is_none() {
                self.crr_slot(k); // its next connection at once
            }
        }
    }

    fn crr_server(&mut self) {
        for i in 0..self.srv.len() {
            let s = self.p.inst[1].set.get_mut::<tcp::Socket>(self.srv[i]);
            if s.can_recv() {
                self.got[i] += s.recv(|b| (b.len(), b.len())).unwrap_or(0);
                if self.got[i] >= CRR_MSG {
                    self.got[i] = 0;
                    let _ = s.send_slice(&[b'r'; CRR_MSG]);
                    self.acted[1] = true;
                }
            }
            match s.state() {
                tcp::State::CloseWait => {
                    s.close(); // the client's FIN: ours
                    self.acted[1] = true;
                }
                tcp::State::Closed => {
                    self.got[i] = 0;
                    let _ = s.listen(PORT); // ready for the next connection
                }
                _ => {}
            }
        }
    }
}

// ---- udp_echo --------------------------------------------------------------------------------

impl Run {
    fn udp_side(&mut self, side: usize) {
        let mut buf = [0u8; 2048];
        let to = (addr(1 - side), UDP_PORT);
        let s = self.p.inst[side].set.get_mut::<udp::Socket>(self.udp[side]);
        while let Ok((data, _meta)) = s.recv() {
            let n = data.len().min(buf.len());
            buf[..n].copy_from_slice(&data[..n]);
            if side == 0 {
                self.count += 1;
            }
            if s.send_slice(&buf[..n], to).is_err() {
                self.err.get_or_insert("udp_echo: send".into());
            }
            self.acted[side] = true;
        }
    }
}

// ---- driving ------------------------------------------------------------------------------------

impl Run {
    fn app(&mut self, side: usize) {
        match (self.w, side) {
            (W::Rr1 | W::Rr1k, 0) => self.rr_client(),
            (W::Rr1 | W::Rr1k, 1) => self.echo_server(),
            (W::Bulk, 0) => self.bulk_client(),
            (W::Bulk, 1) => self.bulk_server(),
            (W::Crr, 0) => self.crr_client(),
            (W::Crr, 1) => self.crr_server(),
            (W::Udp, _) => self.udp_side(side),
            _ => {}
        }
    }

    /// One round: each side polled, its sockets looked at when the poll says so,
    /// and what the application queued sent at once.
    pub fn step(&mut self) {
        for side in 0..2 {
            let changed = self.p.poll(side);
            // tcp_crr's client also acts when a slot is waiting for a socket.
            if changed || (self.w == W::Crr && side == 0) {
                self.app(side);
            }
            if std::mem::take(&mut self.acted[side]) {
                let i = &mut self.p.inst[side];
                let (w0, w1) = self.p.wire.split_at_mut(1);
                let mut dev = if side == 0 {
                    crate::wire::Dev {
                        tx: &mut w0[0],
                        rx: &mut w1[0],
                    }
                } else {
                    crate::wire::Dev {
                        tx: &mut w1[0],
                        rx: &mut w0[0],
                    }
                };
                i.iface.poll_egress(Instant::now(), &mut dev, &mut i.set);
            }
        }
    }

    fn spin(&mut self, until: f64) {
        let mut n = 0u32;
        while self.err.is_none() {
            self.step();
            n += 1;
            if n % 16 == 0
                && (sys::now() >= until || (self.stop_at > 0 && self.count >= self.stop_at))
            {
                break;
            }
        }
    }
}

/// The measured window: its own function, so that callgrind collects in it alone
/// (valgrind --toggle-collect='*measured_window*').
#[inline(never)]
pub fn peers_measured_window(r: &mut Run, secs: f64, res: &mut Res) {
    let (n0, f0) = (r.count, r.p.frames());
    let (t0, c0) = (sys::now(), sys::thread_cpu());
    r.spin(t0 + secs);
    res.cpu_s = sys::thread_cpu() - c0;
    res.seconds = sys::now() - t0;
    res.count = r.count - n0;
    res.frames = r.p.frames() - f0;
}

// ---- set-up and the runs ---------------------------------------------------------------------

impl Run {
    /// n client sockets and n listening server sockets (smoltcp has no accept:
    /// a listening socket becomes the connection), the first connection alone
    /// (the neighbour is resolved), then the rest, 128 handshakes at a time.
    fn open_conns(&mut self, n: usize) -> Result<(), String> {
        for _ in 0..n {
            let h = self.p.tcp_socket(1);
            self.p
                .tcp(1, h)
                .listen(PORT)
                .map_err(|e| format!("listen: {e:?}"))?;
            self.srv.push(h);
            let c = self.p.tcp_socket(0);
            self.cli.push(c);
        }
        self.out = vec![false; n];
        self.got = vec![0; n];
        let deadline = sys::now() + 30.0;
        let (mut asked, mut est) = (0usize, 0usize);
        while est < n {
            let limit = if est == 0 { 1 } else { (est + 128).min(n) };
            while asked < limit {
                self.connect(self.cli[asked]);
                asked += 1;
            }
            self.step();
            est = (0..asked)
                .filter(|&i| self.p.tcp(0, self.cli[i]).state() == tcp::State::Established)
                .count();
            if sys::now() > deadline || self.err.is_some() {
                return Err(self
                    .err
                    .clone()
                    .unwrap_or(format!("only {est} of {n} connections in 30 s")));
            }
        }
        Ok(())
    }

    fn setup(&mut self) -> Result<(), String> {
        match self.w {
            W::Rr1 | W::Bulk => self.open_conns(1),
            W::Rr1k => self.open_conns(RR_FLOWS),
            W::Idle => self.open_conns(IDLE_CONNS),
            W::Crr => {
                for _ in 0..4 * CRR_PAR {
                    let h = self.p.tcp_socket(1);
                    self.p
                        .tcp(1, h)
                        .listen(PORT)
                        .map_err(|e| format!("listen: {e:?}"))?;
                    self.srv.push(h);
                    let c = self.p.tcp_socket(0);
                    self.cli.push(c);
                }
                self.got = vec![0; self.srv.len()];
                self.busy = vec![false; self.cli.len()];
                self.slots = vec![Slot::default(); CRR_PAR];
                Ok(())
            }
            W::Udp => {
                self.udp = vec![self.p.udp_socket(0), self.p.udp_socket(1)];
                let s = self.p.inst[0].set.get_mut::<udp::Socket>(self.udp[0]);
                for _ in 0..UDP_WINDOW {
                    s.send_slice(&[b'u'; UDP_MSG], (addr(1), UDP_PORT))
                        .map_err(|e| format!("udp: {e:?}"))?;
                }
                self.acted[0] = true;
                Ok(())
            }
        }
    }
}

fn result_of(w: W, res: &mut Res) {
    let n = res.count as f64;
    if res.count == 0 || res.cpu_s <= 0.0 {
        res.why = "nothing completed in the window".into();
        return;
    }
    res.value = match w {
        W::Rr1 | W::Rr1k => res.cpu_s * 1e9 / n,
        W::Bulk => n * 8.0 / res.cpu_s / 1e9,
        _ => n / res.cpu_s,
    };
    res.ok = true;
}

/// One pair: set up, warm up, one measured window, added to res.
fn one_pair(w: W, warm: f64, secs: f64, res: &mut Res) -> Result<(), String> {
    let mut r = Run::new(w);
    r.setup()?;
    // tcp_crr: every connection leaves a TIME_WAIT behind at the client in the
    // other stacks, so a round stops short of the ephemeral ports there; here too.
    r.stop_at = if w == W::Crr { CRR_WARM } else { 0 };
    r.spin(sys::now() + warm);
    r.stop_at = if w == W::Crr {
        CRR_MAX - CRR_PAR as u64
    } else {
        0
    };
    let mut one = Res::default();
    if r.err.is_none() {
        peers_measured_window(&mut r, secs, &mut one);
    }
    res.cpu_s += one.cpu_s;
    res.seconds += one.seconds;
    res.count += one.count;
    res.frames += one.frames;
    r.err.map_or(Ok(()), Err)
}

/// Run a speed workload. tcp_crr's rounds end at CRR_MAX connections, in a few
/// tens of ms on a fast stack: fresh pairs until the window's time is spent.
pub fn run(w: W, warm: f64, secs: f64) -> Res {
    let mut res = Res::default();
    for i in 0..100 {
        if i > 0 && (w != W::Crr || res.seconds >= secs) {
            break;
        }
        if let Err(e) = one_pair(w, warm, secs - res.seconds, &mut res) {
            res.why = e;
            return res;
        }
    }
    result_of(w, &mut res);
    res
}

/// 10,000 idle connections: RSS growth per endpoint, and what smoltcp holds for
/// each (its socket storage and the two rings it was given).
pub fn run_idle() -> (Res, Res) {
    let (mut rss, mut acc) = (Res::default(), Res::default());
    sys::malloc_trim();
    let rss0 = sys::rss_bytes();
    let mut r = Run::new(W::Idle);
    if let Err(e) = r.setup() {
        rss.why = e.clone();
        acc.why = e;
        return (rss, acc);
    }
    for _ in 0..8 {
        r.step();
    }
    let ends = 2 * IDLE_CONNS as u64;
    let rss1 = sys::rss_bytes();
    rss.count = ends;
    rss.value = rss1.saturating_sub(rss0) as f64 / ends as f64;
    rss.ok = true;
    acc.count = ends;
    acc.value =
        (std::mem::size_of::<smoltcp::iface::SocketStorage>() + 2 * crate::pair::TCP_BUF) as f64;
    acc.ok = true;
    (rss, acc)
}

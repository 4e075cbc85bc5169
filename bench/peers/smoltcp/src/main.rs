// SPDX-License-Identifier: BSD-3-Clause
// hotpath-peer-smoltcp: smoltcp on the harness of `hotpath bench peers` (bench/peers/harness.h):
// two interfaces joined in memory, one thread polling both, the same workloads; JSON on stdout.
//
// usage: hotpath-peer-smoltcp [--workloads tcp_rr_1,...,idle] [--seconds S] [--warm S]
//        hotpath-peer-smoltcp --version

mod pair;
mod sys;
mod wire;
mod work;

use work::{Res, W};

const WORKLOADS: [(&str, W, &str); 6] = [
    ("tcp_rr_1", W::Rr1, "ns/txn"),
    ("tcp_rr_1000", W::Rr1k, "ns/txn"),
    ("tcp_bulk", W::Bulk, "Gbit/s"),
    ("tcp_crr", W::Crr, "conn/s"),
    ("udp_echo", W::Udp, "echo/s"),
    ("idle", W::Idle, "B/conn"),
];

fn version() -> String {
    format!(
        "{} (crates.io; Ethernet, IPv4, TCP with Reno, UDP; {}, release, LTO)",
        env!("HP_SMOLTCP_VERSION"),
        env!("HP_RUSTC_VERSION")
    )
}

fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn json_res(name: &str, unit: &str, r: &Res) -> String {
    if !r.ok {
        return format!(
            "{{\"workload\": \"{name}\", \"ok\": false, \"why\": {}}}",
            json_str(&r.why)
        );
    }
    format!(
        "{{\"workload\": \"{name}\", \"ok\": true, \"value\": {}, \"unit\": \"{unit}\", \
         \"count\": {}, \"frames\": {}, \"cpu_s\": {}, \"seconds\": {}}}",
        r.value, r.count, r.frames, r.cpu_s, r.seconds
    )
}

fn usage(why: &str) -> ! {
    eprintln!("hotpath-peer-smoltcp: {why}");
    eprintln!(
        "usage: hotpath-peer-smoltcp [--workloads LIST] [--seconds S] [--warm S] | --version"
    );
    std::process::exit(2);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut list, mut secs, mut warm) = (String::new(), 1.0f64, 0.2f64);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = |what: &str| {
            it.next()
                .cloned()
                .unwrap_or_else(|| usage(&format!("{what} wants a value")))
        };
        match a.as_str() {
            "--version" => {
                println!("{}", version());
                return;
            }
            "--workloads" => list = val("--workloads"),
            "--seconds" => {
                secs = val("--seconds")
                    .parse()
                    .unwrap_or_else(|_| usage("--seconds wants seconds"))
            }
            "--warm" => {
                warm = val("--warm")
                    .parse()
                    .unwrap_or_else(|_| usage("--warm wants seconds"))
            }
            _ => usage(&format!("unknown argument '{a}'")),
        }
    }
    if !(secs > 0.0 && warm >= 0.0) {
        usage("--seconds must be positive and --warm not negative");
    }
    let mut out = Vec::new();
    // The idle connections first, while the allocator is fresh: after larger blocks
    // were freed, glibc serves the rings from the heap, zeroed (touched), instead of
    // from fresh mappings, and their RSS would depend on what ran before.
    let mut order = WORKLOADS;
    order.rotate_right(1);
    for (name, w, unit) in order {
        if !list.is_empty() && !list.split(',').any(|x| x == name) {
            continue;
        }
        if w == W::Idle {
            let (rss, acc) = work::run_idle();
            out.push(json_res("idle_rss", unit, &rss));
            out.push(json_res("idle_accounted", unit, &acc));
        } else {
            out.push(json_res(name, unit, &work::run(w, warm, secs)));
        }
    }
    println!(
        "{{\"stack\": \"smoltcp\", \"version\": {}, \"results\": [{}]}}",
        json_str(&version()),
        out.join(", ")
    );
}

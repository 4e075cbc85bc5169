// SPDX-License-Identifier: BSD-3-Clause
// What the driver needs from the system: clocks, resident memory, giving freed heap pages back.

fn clock(id: libc::clockid_t) -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec for clock_gettime to fill.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Seconds on CLOCK_MONOTONIC.
pub fn now() -> f64 {
    clock(libc::CLOCK_MONOTONIC)
}

/// This thread's CPU seconds, as tool_thread_cpu_s() of the C harness.
pub fn thread_cpu() -> f64 {
    clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// Resident set size in bytes, from /proc/self/statm.
pub fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64
}

/// Free heap pages back to the system, so that growth after it is counted.
pub fn malloc_trim() {
    // SAFETY: malloc_trim has no preconditions.
    unsafe { libc::malloc_trim(0) };
}

// SPDX-License-Identifier: BSD-3-Clause
// Build script: the smoltcp release Cargo resolved (from Cargo.lock) and the compiler, for --version.
use std::{env, fs, process::Command};

fn main() {
    let dir = env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let lock = fs::read_to_string(format!("{dir}/Cargo.lock")).unwrap_or_default();
    let mut version = String::from("?");
    let mut it = lock.lines();
    while let Some(line) = it.next() {
        if line.trim() == "name = \"smoltcp\"" {
            if let Some(v) = it.next().and_then(|l| l.trim().strip_prefix("version = ")) {
                version = v.trim_matches('"').to_string();
            }
        }
    }
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rv = Command::new(rustc)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!("cargo:rustc-env=HP_SMOLTCP_VERSION={version}");
    println!("cargo:rustc-env=HP_RUSTC_VERSION={rv}");
    println!("cargo:rerun-if-changed=Cargo.lock");
    println!("cargo:rerun-if-changed=build.rs");
}

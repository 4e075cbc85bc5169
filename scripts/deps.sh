#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Install what `make demo` / `make check` need and say clearly what will be skipped when it cannot.
#
# usage: scripts/deps.sh demo|check|soak   (soak: check's, and matplotlib)
# As root, missing Debian packages are installed with apt-get (non-interactive)
# and missing Python packages with pip. Otherwise nothing is installed: the
# script lists what is missing and what that will skip. It never fails the
# build for an optional piece; it fails only when the compiler or CMake/Ninja
# are missing and cannot be installed.
set -u
mode=${1:-check}

# Debian package -> a file or command that shows it is installed.
required=(cmake:/usr/bin/cmake ninja-build:/usr/bin/ninja gcc:/usr/bin/gcc
          pkg-config:/usr/bin/pkg-config libelf-dev:/usr/include/libelf.h
          libjansson-dev:/usr/include/jansson.h)
optional_demo=(libdpdk-dev:/usr/include/dpdk/rte_ip.h libxdp-dev:/usr/include/xdp/xsk.h
               libbpf-dev:/usr/include/bpf/libbpf.h iproute2:/usr/sbin/ip libssl-dev:/usr/include/openssl/evp.h
               libdw-dev:/usr/include/elfutils/libdw.h valgrind:/usr/include/valgrind/callgrind.h
               dpkg-dev:/usr/bin/dpkg-source
               dpdk-dev:/usr/bin/dpdk-testpmd
               librte-net-memif23:/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0/librte_net_memif.so.23.0
               redis-server:/usr/bin/redis-server redis-tools:/usr/bin/redis-benchmark nginx:/usr/sbin/nginx
               iperf3:/usr/bin/iperf3 wrk:/usr/bin/wrk ethtool:/usr/sbin/ethtool nftables:/usr/sbin/nft)
optional_check=(clang:/usr/bin/clang libclang-rt-14-dev:/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a
                libdpdk-dev:/usr/include/dpdk/rte_ip.h libxdp-dev:/usr/include/xdp/xsk.h
                libbpf-dev:/usr/include/bpf/libbpf.h iproute2:/usr/sbin/ip tshark:/usr/bin/tshark
                libssl-dev:/usr/include/openssl/evp.h libdw-dev:/usr/include/elfutils/libdw.h
                iputils-ping:/usr/bin/ping ethtool:/usr/sbin/ethtool valgrind:/usr/include/valgrind/callgrind.h
                nmap:/usr/bin/nmap hping3:/usr/sbin/hping3 tcpdump:/usr/bin/tcpdump
                gcc-aarch64-linux-gnu:/usr/bin/aarch64-linux-gnu-gcc
                libc6-dev-arm64-cross:/usr/aarch64-linux-gnu/lib/crti.o qemu-user:/usr/bin/qemu-aarch64
                clang-format-14:/usr/bin/clang-format-14 dpkg-dev:/usr/bin/dpkg-source
                dpdk-dev:/usr/bin/dpdk-testpmd
                librte-net-memif23:/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0/librte_net_memif.so.23.0
                redis-server:/usr/bin/redis-server redis-tools:/usr/bin/redis-benchmark nginx:/usr/sbin/nginx
                iperf3:/usr/bin/iperf3 curl:/usr/bin/curl wrk:/usr/bin/wrk nftables:/usr/sbin/nft)
declare -A why=(
  [libdpdk-dev]="the dpdk and dpdk-native rows of 'hotpath bench cksum'"
  [libelf-dev]="code sizes in the benchmark tables"
  [clang]="the clang -Werror build and the libFuzzer smoke runs"
  [libclang-rt-14-dev]="the libFuzzer smoke runs"
  [gcc-aarch64-linux-gnu]="the aarch64 (NEON) cross-build"
  [libc6-dev-arm64-cross]="the aarch64 (NEON) cross-build (the C library to link against)"
  [qemu-user]="running the aarch64 unit tests under emulation"
  [libxdp-dev]="the afxdp link (AF_XDP), its tests and benchmarks"
  [libbpf-dev]="the afxdp link (AF_XDP), its tests and benchmarks"
  [iproute2]="the network-namespace tests and the afxdp rows of the demo"
  [libssl-dev]="SHA-256 digests in 'hotpath connect' (its byte-by-byte check runs without)"
  [libdw-dev]="'hotpath layout' (it reads DWARF with libdw) and its tests"
  [tshark]="reading our pcap files back with Wireshark's dissectors"
  [ethtool]="the afxdp interop tests with the kernel's TCP and UDP, and 'hotpath bench paths' (the veths' checksum and segmentation offloads must be off)"
  [nftables]="the path MTU rows of 'hotpath bench paths' with every ICMP error dropped on the routers (probing)"
  [iputils-ping]="the kernel's ping and ping -6 against hotpath serve (root interop tests)"
  [clang-format-14]="the style check of make check (scripts/style.sh: the C sources against .clang-format)"
  [valgrind]="simulated cache misses per rr transaction (scripts/rr_cachesim.py: the demo's layout step and its test), instructions per transaction of each stack (scripts/peers_profile.py)"
  [dpkg-dev]="lwip row in 'hotpath bench peers' (apt-get source needs dpkg-source to unpack lwIP's source package)"
  [dpdk-dev]="dpdk-testpmd: the memif link against DPDK's own driver (tests/interop/memif.sh) and the testpmd rows of 'hotpath bench memif'"
  [librte-net-memif23]="DPDK's memif driver (net_memif), which dpdk-testpmd loads for tests/interop/memif.sh and 'hotpath bench memif'"
  [nmap]="the hostile scans (tests/hostile/scans.sh: SYN, connect, FIN, NULL, Xmas, ACK, UDP, IPv6, bad checksum and OS detection scans of hotpath serve)"
  [hping3]="the hostile SYN floods (tests/hostile/floods.sh, make soak)"
  [tcpdump]="the hostile garbage suite's record of what it sent (tests/hostile/garbage.sh), kept to replay a failure"
  [redis-server]="redis-server on hotpath (tests/apps/redis.sh, both.sh; the redis rows of 'hotpath bench apps')"
  [redis-tools]="redis-benchmark and redis-cli on hotpath (tests/apps/redis.sh, both.sh; 'hotpath bench apps')"
  [nginx]="nginx on hotpath (tests/apps/nginx.sh, both.sh; the wrk rows of 'hotpath bench apps')"
  [iperf3]="iperf3 on hotpath (tests/apps/iperf3.sh, both.sh; the iperf3 row of 'hotpath bench apps')"
  [curl]="curl on hotpath and checking nginx on hotpath (tests/apps/nginx.sh)"
  [wrk]="wrk against nginx (tests/apps/nginx.sh, both.sh; 'hotpath bench apps')"
)

pkgs=("${required[@]}")
if [ "$mode" = demo ]; then pkgs+=("${optional_demo[@]}"); else pkgs+=("${optional_check[@]}"); fi

missing=()
for entry in "${pkgs[@]}"; do
  name=${entry%%:*}; probe=${entry#*:}
  # The clang runtime's path carries the exact version: accept any.
  if [ "$name" = libclang-rt-14-dev ]; then
    ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 && continue
  fi
  [ -e "$probe" ] || missing+=("$name")
done

have_apt=0; command -v apt-get >/dev/null 2>&1 && have_apt=1
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && [ $have_apt = 1 ]; then
    echo "deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >/tmp/hotpath-deps.log 2>&1; then
      echo "deps: apt-get failed (log: /tmp/hotpath-deps.log); trying one package at a time"
      for p in "${missing[@]}"; do apt-get install -y -qq --no-install-recommends "$p" >>/tmp/hotpath-deps.log 2>&1 || echo "deps: could not install $p"; done
    fi
  else
    echo "deps: not root (or no apt-get): not installing ${missing[*]}"
  fi
fi

# Report what is still missing and what that skips.
fatal=0
for entry in "${pkgs[@]}"; do
  name=${entry%%:*}; probe=${entry#*:}
  if [ "$name" = libclang-rt-14-dev ]; then
    ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 && continue
  fi
  [ -e "$probe" ] && continue
  case " ${required[*]} " in
    *" $entry "*) if [ "$name" = libelf-dev ]; then echo "deps: SKIP: $name missing: no ${why[$name]}"; else echo "deps: MISSING required $name"; fatal=1; fi ;;
    *) echo "deps: SKIP: $name missing: no ${why[$name]:-$name}" ;;
  esac
done

# The peers of `hotpath bench peers` (bench/peers/), fetched into build-peers/ (outside git):
# lwIP from Debian's source package (its binary liblwip-dev is built for threads; the bench
# builds the core itself as NO_SYS with bench/peers/lwip/lwipopts.h), and smoltcp from
# crates.io through cargo (bench/peers/smoltcp/, release with LTO).
root=$(cd "$(dirname "$0")/.." && pwd)
peers=$root/build-peers
peers_log=/tmp/hotpath-deps-peers.log
peers_lwip() {
  [ -f "$peers/lwip/src/core/tcp.c" ] && return 0
  if ! apt-cache showsrc lwip >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ] || [ $have_apt = 0 ]; then
      echo "deps: SKIP: no deb-src entry for Debian and not root: no lwip row in 'hotpath bench peers'"
      return 0
    fi
    # deb-src for the Debian release the machine runs (Debian 12: bookworm).
    local id suite
    id=$( (. /etc/os-release && echo "${ID:-}") 2>/dev/null)
    suite=$( (. /etc/os-release && echo "${VERSION_CODENAME:-}") 2>/dev/null)
    if [ "$id" != debian ] || [ -z "$suite" ]; then
      echo "deps: SKIP: not Debian (${id:-unknown}): add a deb-src entry for lwip yourself; no lwip row in 'hotpath bench peers'"
      return 0
    fi
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: %s\n' \
      "$suite" /usr/share/keyrings/debian-archive-keyring.gpg >/etc/apt/sources.list.d/hotpath-deb-src.sources
    echo "deps: added a deb-src entry (/etc/apt/sources.list.d/hotpath-deb-src.sources) for lwIP's source"
    apt-get update -qq >>"$peers_log" 2>&1
  fi
  rm -rf "$peers/lwip-src" && mkdir -p "$peers/lwip-src"
  if ! (cd "$peers/lwip-src" && apt-get source -qq lwip) >>"$peers_log" 2>&1; then
    echo "deps: SKIP: apt-get source lwip failed (deb-src unreachable? log: $peers_log): no lwip row in 'hotpath bench peers'"
    return 0
  fi
  local d; d=$(find "$peers/lwip-src" -maxdepth 1 -mindepth 1 -type d -name 'lwip-*' | head -1)
  if [ -z "$d" ] || [ ! -f "$d/src/core/tcp.c" ]; then
    echo "deps: SKIP: lwIP's source package has no src/core/tcp.c: no lwip row in 'hotpath bench peers'"
    return 0
  fi
  ln -sfn "lwip-src/$(basename "$d")" "$peers/lwip"
  echo "deps: lwIP source $(basename "$d") in build-peers/lwip"
}
peers_smoltcp() {
  local cargo; cargo=$(command -v cargo || { [ -x "$HOME/.cargo/bin/cargo" ] && echo "$HOME/.cargo/bin/cargo"; })
  if [ -z "$cargo" ]; then
    echo "deps: SKIP: no cargo (smoltcp needs Rust >= 1.91: rustup.rs): no smoltcp row in 'hotpath bench peers'"
    return 0
  fi
  # Run from its folder, so that its .cargo/config.toml (the target CPU) applies.
  if ! (cd "$root/bench/peers/smoltcp" && "$cargo" build --release -q --target-dir "$peers/smoltcp") \
       >>"$peers_log" 2>&1; then
    echo "deps: SKIP: cargo could not build bench/peers/smoltcp (crates.io unreachable, or Rust too old? log: $peers_log): no smoltcp row in 'hotpath bench peers'"
  fi
}
mkdir -p "$peers" 2>/dev/null && { peers_lwip; peers_smoltcp; }

# Python packages: matplotlib for the report's plots (demo, make soak),
# scapy to regenerate test vectors (the committed vectors need no scapy)
# and for the hostile suites' fuzzed frames (tests/hostile/).
if command -v python3 >/dev/null 2>&1; then
  pymods=(matplotlib)
  [ "$mode" = check ] && pymods=(scapy)
  [ "$mode" = soak ] && pymods=(scapy matplotlib)
  for m in "${pymods[@]}"; do
    python3 -c "import $m" >/dev/null 2>&1 && continue
    if [ "$(id -u)" = 0 ]; then
      echo "deps: pip installing $m"
      python3 -m pip install -q --root-user-action=ignore "$m" >/tmp/hotpath-pip.log 2>&1 \
        || python3 -m pip install -q "$m" >>/tmp/hotpath-pip.log 2>&1 \
        || echo "deps: SKIP: pip could not install $m (log: /tmp/hotpath-pip.log)"
    else
      echo "deps: SKIP: python3 module $m missing (not root): no plots / no vector regeneration"
    fi
  done
else
  echo "deps: SKIP: no python3: the report will have no plots"
fi
exit $fatal

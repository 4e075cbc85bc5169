#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Install what `make demo` / `make check` need and say clearly what will be skipped when it cannot.
#
# usage: scripts/deps.sh demo|check
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
               ethtool:/usr/sbin/ethtool nftables:/usr/sbin/nft)
optional_check=(clang:/usr/bin/clang libclang-rt-14-dev:/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a
                libdpdk-dev:/usr/include/dpdk/rte_ip.h libxdp-dev:/usr/include/xdp/xsk.h
                libbpf-dev:/usr/include/bpf/libbpf.h iproute2:/usr/sbin/ip tshark:/usr/bin/tshark
                libssl-dev:/usr/include/openssl/evp.h libdw-dev:/usr/include/elfutils/libdw.h
                iputils-ping:/usr/bin/ping ethtool:/usr/sbin/ethtool valgrind:/usr/include/valgrind/callgrind.h
                gcc-aarch64-linux-gnu:/usr/bin/aarch64-linux-gnu-gcc
                libc6-dev-arm64-cross:/usr/aarch64-linux-gnu/lib/crti.o qemu-user:/usr/bin/qemu-aarch64
                clang-format-14:/usr/bin/clang-format-14 nftables:/usr/sbin/nft)
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
  [valgrind]="simulated cache misses per rr transaction (scripts/rr_cachesim.py: the demo's layout step and its test)"
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

# Python packages: matplotlib for the report's plots (demo), scapy to
# regenerate test vectors (the committed vectors need no scapy).
if command -v python3 >/dev/null 2>&1; then
  pymods=(matplotlib)
  [ "$mode" = check ] && pymods=(scapy)
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

# SPDX-License-Identifier: BSD-3-Clause
# Included by the top-level CMakeLists.txt when HP_BUILD_TOOLS is on.

# ---- the command --------------------------------------------------------
# tools/hotpath: the command a user runs (one file per subcommand);
# bench/: `hotpath bench`, the benchmarks with their peers and kernel
# baselines; tools/common: what both (and devtools/) share. Nothing here is
# compiled into the library.
file(GLOB HP_TOOL_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tools/hotpath/*.c
     ${CMAKE_SOURCE_DIR}/bench/*.c)
add_library(hp_tool_common STATIC ${CMAKE_SOURCE_DIR}/tools/common/util.c ${CMAKE_SOURCE_DIR}/tools/common/json.c
            ${CMAKE_SOURCE_DIR}/tools/common/harness.c ${CMAKE_SOURCE_DIR}/tools/common/frame.c
            ${CMAKE_SOURCE_DIR}/tools/common/echo.c)
target_include_directories(hp_tool_common PUBLIC ${CMAKE_SOURCE_DIR}/tools/common)
target_link_libraries(hp_tool_common PUBLIC hotpath_static hp_netns m)
if(HP_LTO_ON)
  target_compile_definitions(hp_tool_common PRIVATE HP_LIB_LTO=1) # the flags the benchmarks print
endif()
# JSON in the tool (reports, --json, the demo reading its runs back): jansson
# from the distribution (libjansson-dev), never in the library.
pkg_check_modules(JANSSON REQUIRED jansson)
target_include_directories(hp_tool_common SYSTEM PUBLIC ${JANSSON_INCLUDE_DIRS})
target_link_libraries(hp_tool_common PUBLIC ${JANSSON_LINK_LIBRARIES})
add_executable(hotpath ${HP_TOOL_SOURCES})
target_link_libraries(hotpath PRIVATE hp_tool_common hotpath_static m)
if(HP_HAVE_LIBXDP)
  target_compile_definitions(hotpath PRIVATE HP_HAVE_LIBXDP=1)
  target_include_directories(hotpath SYSTEM PRIVATE ${LIBXDP_INCLUDE_DIRS})
endif()
set_source_files_properties(${CMAKE_SOURCE_DIR}/bench/cksum_peers.c PROPERTIES
                            COMPILE_OPTIONS -falign-functions=64)
target_include_directories(hotpath PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tools/hotpath
                           ${CMAKE_SOURCE_DIR}/bench)
include(GNUInstallDirs)
target_compile_definitions(hotpath PRIVATE HP_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
                           HP_DATA_DIR="${CMAKE_INSTALL_PREFIX}/share/hotpath"
                           HP_LIB_DIR="${CMAKE_INSTALL_FULL_LIBDIR}")
# `hotpath run` preloads libhotpath-posix.so from beside the binary.
add_dependencies(hotpath hotpath_posix)
# SHA-256 digests of `hotpath connect` (OpenSSL's libcrypto, optional; in
# tools/common/util.c).
set(HP_HAVE_LIBCRYPTO OFF)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(LIBCRYPTO QUIET libcrypto)
endif()
if(LIBCRYPTO_FOUND)
  set(HP_HAVE_LIBCRYPTO ON)
  target_compile_definitions(hp_tool_common PUBLIC HP_HAVE_LIBCRYPTO=1)
  target_include_directories(hp_tool_common SYSTEM PUBLIC ${LIBCRYPTO_INCLUDE_DIRS})
  target_link_libraries(hp_tool_common PUBLIC ${LIBCRYPTO_LINK_LIBRARIES})
endif()
message(STATUS "hotpath: SHA-256 in hotpath connect ${HP_HAVE_LIBCRYPTO} (libcrypto)")
if(LIBELF_FOUND)
  target_compile_definitions(hp_tool_common PUBLIC HP_HAVE_LIBELF=1)
  target_include_directories(hp_tool_common PUBLIC ${LIBELF_INCLUDE_DIRS})
  target_link_libraries(hp_tool_common PUBLIC ${LIBELF_LINK_LIBRARIES})
endif()

# ---- developer tools (devtools/; built, never installed) ----------------
# hotpath-layout, the layout analyser behind `hotpath layout`: reads DWARF
# with libdw (elfutils, optional: without it the tool says so and exits 2).
set(HP_HAVE_LIBDW OFF)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(LIBDW QUIET libdw)
endif()
file(GLOB HP_LAYOUT_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/devtools/layout/*.c)
add_executable(hotpath-layout ${HP_LAYOUT_SOURCES})
target_link_libraries(hotpath-layout PRIVATE hp_tool_common hotpath_static m)
target_include_directories(hotpath-layout PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_compile_definitions(hotpath-layout PRIVATE HP_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
if(LIBDW_FOUND)
  set(HP_HAVE_LIBDW ON)
  target_compile_definitions(hotpath-layout PRIVATE HP_HAVE_LIBDW=1)
  target_include_directories(hotpath-layout SYSTEM PRIVATE ${LIBDW_INCLUDE_DIRS})
  target_link_libraries(hotpath-layout PRIVATE ${LIBDW_LINK_LIBRARIES})
endif()
message(STATUS "hotpath: hotpath layout ${HP_HAVE_LIBDW} (libdw)")

# DPDK's raw checksum, from the distro's headers, compiled twice: with our
# baseline flags ("dpdk") and with -march=native ("dpdk-native").
if(HP_HAVE_DPDK)
  foreach(variant baseline native)
    set(obj hp_peer_dpdk_${variant})
    add_library(${obj} OBJECT ${CMAKE_SOURCE_DIR}/bench/peers/dpdk_cksum.c)
    # DPDK's headers are not -Wextra clean; they are not our code.
    target_include_directories(${obj} SYSTEM PRIVATE ${DPDK_INCLUDE_DIRS})
    # Every measured function starts on a 64-byte boundary, like ours, so
    # that code placement favours no row.
    target_compile_options(${obj} PRIVATE -Wno-error -Wno-shadow -Wno-strict-prototypes
                           -Wno-missing-prototypes -falign-functions=64)
    target_compile_definitions(${obj} PRIVATE HP_PEER_SUFFIX=${variant})
    if(variant STREQUAL "native")
      target_compile_options(${obj} PRIVATE -march=native)
    endif()
    target_sources(hotpath PRIVATE $<TARGET_OBJECTS:${obj}>)
  endforeach()
  target_compile_definitions(hotpath PRIVATE HP_HAVE_DPDK=1)

  # DPDK's rte_mempool, the peer of `hotpath bench pool`, linked from the
  # distro's shared libraries. The ring driver behind rte_mempool_create's
  # default ops is a plugin (librte_mempool_ring): linked in as well, so that
  # it registers itself without EAL's plugin directory.
  add_library(hp_peer_dpdk_mempool OBJECT ${CMAKE_SOURCE_DIR}/bench/peers/dpdk_mempool.c)
  target_include_directories(hp_peer_dpdk_mempool SYSTEM PRIVATE ${DPDK_INCLUDE_DIRS})
  target_compile_options(hp_peer_dpdk_mempool PRIVATE -Wno-error -Wno-shadow -Wno-strict-prototypes
                         -Wno-missing-prototypes)
  target_compile_definitions(hp_peer_dpdk_mempool PRIVATE HP_HAVE_DPDK=1)
  target_sources(hotpath PRIVATE $<TARGET_OBJECTS:hp_peer_dpdk_mempool>)
  find_library(HP_DPDK_MEMPOOL_RING rte_mempool_ring HINTS ${DPDK_LIBRARY_DIRS})
  if(HP_DPDK_MEMPOOL_RING)
    target_link_libraries(hotpath PRIVATE -Wl,--push-state,--no-as-needed ${HP_DPDK_MEMPOOL_RING}
                          -Wl,--pop-state)
  endif()
  target_link_libraries(hotpath PRIVATE ${DPDK_LDFLAGS})
endif()


# Unit tests of the command's own engines (tests/tool: pure code with time
# injected, like the impairment path; the shared memif options), beside the
# library's unit tests.
if(HP_BUILD_TESTS)
  file(GLOB HP_TOOL_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/tool/*.c)
  if(HP_TOOL_TESTS)
    add_executable(unit_tool ${HP_TOOL_TESTS} ${CMAKE_SOURCE_DIR}/tools/hotpath/impair_path.c
                   ${CMAKE_SOURCE_DIR}/tools/hotpath/memifopt.c)
    set_target_properties(unit_tool PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
    target_link_libraries(unit_tool PRIVATE hp_test_runner hp_tool_common hotpath_static m)
    target_include_directories(unit_tool PRIVATE ${CMAKE_SOURCE_DIR}/tools/hotpath)
    add_test(NAME unit_tool COMMAND unit_tool)
  endif()
endif()

# `hotpath bench peers`: its harness, and lwIP when scripts/deps.sh has fetched its source.
include(${CMAKE_SOURCE_DIR}/bench/peers/peers.cmake)

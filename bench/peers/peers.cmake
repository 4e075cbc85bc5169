# SPDX-License-Identifier: BSD-3-Clause
# `hotpath bench peers`: the harness (bench/peers/*.c) and lwIP, built from its Debian source
# package as NO_SYS with our lwipopts.h when scripts/deps.sh has fetched it into build-peers/.
# Included by tools/tools.cmake after the hotpath target exists.

target_sources(hotpath PRIVATE ${CMAKE_SOURCE_DIR}/bench/peers/peers_harness.c
               ${CMAKE_SOURCE_DIR}/bench/peers/hotpath_peer.c ${CMAKE_SOURCE_DIR}/bench/peers/hotpath_mem.c)
target_include_directories(hotpath PRIVATE ${CMAKE_SOURCE_DIR}/bench/peers)

# The smoltcp driver is built by cargo (scripts/deps.sh) into build-peers/smoltcp; the bench
# runs it from there.
target_compile_definitions(hotpath PRIVATE
  HP_PEERS_SMOLTCP_BIN="${CMAKE_SOURCE_DIR}/build-peers/smoltcp/release/hotpath-peer-smoltcp")

set(HP_LWIP_SRC "${CMAKE_SOURCE_DIR}/build-peers/lwip" CACHE PATH
    "lwIP's source tree for hotpath bench peers (scripts/deps.sh: apt-get source lwip)")
# objcopy of the target's binutils (CMake finds the cross one for a cross compiler).
if(CMAKE_OBJCOPY)
  set(HP_OBJCOPY ${CMAKE_OBJCOPY})
else()
  find_program(HP_OBJCOPY NAMES objcopy)
endif()
set(HP_HAVE_LWIP OFF)
if(EXISTS "${HP_LWIP_SRC}/src/core/tcp.c" AND HP_OBJCOPY)
  set(HP_HAVE_LWIP ON)
  file(GLOB HP_LWIP_CORE ${HP_LWIP_SRC}/src/core/*.c ${HP_LWIP_SRC}/src/core/ipv4/*.c)
  list(APPEND HP_LWIP_CORE ${HP_LWIP_SRC}/src/netif/ethernet.c)
  # lwIP's core, with our flags (-O3 and the baseline ISA, as hotpath) but not our warnings:
  # it is not our code. Nor UBSan in the sanitizer builds: lwIP 2.1.3 shifts a byte into
  # an int's sign bit reading TCP timestamps (tcp_in.c), harmless with gcc and clang.
  add_library(hp_peer_lwip_core OBJECT ${HP_LWIP_CORE})
  target_include_directories(hp_peer_lwip_core PRIVATE ${CMAKE_SOURCE_DIR}/bench/peers/lwip
                             ${HP_LWIP_SRC}/src/include)
  target_compile_options(hp_peer_lwip_core PRIVATE -w -fno-sanitize=undefined)
  # Our glue, one instance's worth: warnings on, lwIP's headers as system headers.
  add_library(hp_peer_lwip_glue OBJECT ${CMAKE_SOURCE_DIR}/bench/peers/lwip/lwip_inst.c)
  target_include_directories(hp_peer_lwip_glue SYSTEM PRIVATE ${CMAKE_SOURCE_DIR}/bench/peers/lwip
                             ${HP_LWIP_SRC}/src/include)
  target_include_directories(hp_peer_lwip_glue PRIVATE ${CMAKE_SOURCE_DIR}/bench/peers
                             ${CMAKE_SOURCE_DIR}/tools/common)
  # lwIP keeps its state in globals, one stack per process: the harness needs two. Link
  # core and glue into one relocatable object, keep only the glue's table global, and name
  # it per copy: hp_peer_lwip_a and hp_peer_lwip_b, each with lwIP's globals of its own.
  set(HP_LWIP_COPIES "")
  foreach(copy a b)
    set(obj ${CMAKE_BINARY_DIR}/peers/lwip_${copy}.o)
    add_custom_command(OUTPUT ${obj}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/peers
      COMMAND ${CMAKE_C_COMPILER} -r -nostdlib -o ${obj}.all
              "$<TARGET_OBJECTS:hp_peer_lwip_core>" "$<TARGET_OBJECTS:hp_peer_lwip_glue>"
      COMMAND ${HP_OBJCOPY} -G hp_peer_lwip_inst ${obj}.all ${obj}.local
      COMMAND ${HP_OBJCOPY} --redefine-sym hp_peer_lwip_inst=hp_peer_lwip_${copy} ${obj}.local ${obj}
      DEPENDS hp_peer_lwip_core hp_peer_lwip_glue "$<TARGET_OBJECTS:hp_peer_lwip_core>"
              "$<TARGET_OBJECTS:hp_peer_lwip_glue>"
      COMMAND_EXPAND_LISTS VERBATIM
      COMMENT "lwIP copy ${copy} for hotpath bench peers")
    list(APPEND HP_LWIP_COPIES ${obj})
  endforeach()
  set_source_files_properties(${HP_LWIP_COPIES} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  get_filename_component(HP_LWIP_REAL "${HP_LWIP_SRC}" REALPATH)
  get_filename_component(HP_LWIP_DIRNAME "${HP_LWIP_REAL}" NAME)
  target_sources(hotpath PRIVATE ${HP_LWIP_COPIES} ${CMAKE_SOURCE_DIR}/bench/peers/lwip/lwip_peer.c)
  set_source_files_properties(${CMAKE_SOURCE_DIR}/bench/peers/lwip/lwip_peer.c PROPERTIES
                              COMPILE_DEFINITIONS "HP_LWIP_SOURCE=\"Debian source ${HP_LWIP_DIRNAME}\"")
  target_compile_definitions(hotpath PRIVATE HP_HAVE_LWIP=1)
endif()
message(STATUS "hotpath: lwIP peer of hotpath bench peers ${HP_HAVE_LWIP} (${HP_LWIP_SRC})")

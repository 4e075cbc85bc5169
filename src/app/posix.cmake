# SPDX-License-Identifier: BSD-3-Clause
# libhotpath-posix.so: the POSIX socket layer (src/app/posix*.c), preloaded into unmodified programs by `hotpath run`.
#
# hotpath_posix_core: the layer without its exported entry points
# (posix_entry.c), a static library for the unit tests (tests/unit/app),
# which call hp__px_*() directly beside the C library's own calls.
# hotpath_posix: the shared library: the layer, its entry points and the
# whole hotpath library inside it, exporting only the C library names of
# posix.map (so a program linked with libhotpath itself sees no clash).
file(GLOB HP_POSIX_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/app/posix*.c)
set(HP_POSIX_ENTRY ${CMAKE_SOURCE_DIR}/src/app/posix_entry.c)
set(HP_POSIX_CORE ${HP_POSIX_SOURCES})
list(REMOVE_ITEM HP_POSIX_CORE ${HP_POSIX_ENTRY})

add_library(hotpath_posix_core STATIC ${HP_POSIX_CORE})
target_include_directories(hotpath_posix_core PUBLIC ${CMAKE_SOURCE_DIR}/include)
set_target_properties(hotpath_posix_core PROPERTIES POSITION_INDEPENDENT_CODE ON C_VISIBILITY_PRESET hidden)
target_link_libraries(hotpath_posix_core PUBLIC hotpath_static Threads::Threads ${CMAKE_DL_LIBS})

add_library(hotpath_posix SHARED ${HP_POSIX_SOURCES} $<TARGET_OBJECTS:hotpath_obj>)
target_include_directories(hotpath_posix PRIVATE ${CMAKE_SOURCE_DIR}/include)
set_target_properties(hotpath_posix PROPERTIES OUTPUT_NAME hotpath-posix C_VISIBILITY_PRESET hidden
                      LINK_DEPENDS ${CMAKE_SOURCE_DIR}/src/app/posix.map)
target_link_options(hotpath_posix PRIVATE -Wl,--version-script=${CMAKE_SOURCE_DIR}/src/app/posix.map
                    -Wl,-z,nodelete)
target_link_libraries(hotpath_posix PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
if(HP_HAVE_LIBXDP)
  target_link_libraries(hotpath_posix PRIVATE ${LIBXDP_LINK_LIBRARIES})
endif()
install(TARGETS hotpath_posix LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

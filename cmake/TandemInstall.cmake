# `cmake --install build --prefix P` puts the public headers under P/include/tandem, libtandem under
# P/lib (GNUInstallDirs' names) and a CMake package under P/lib/cmake/tandem, so that another
# project finds it with find_package(tandem) and links tandem::tandem. Included from the top-level
# CMakeLists.txt after the tandem target is defined.
include(CMakePackageConfigHelpers)

set(TANDEM_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tandem)

# The version in the file name lets programs built against one release keep running when another
# is installed beside it; 0.x releases promise no compatibility, so the whole version is the soname.
set_target_properties(tandem PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION})
# The installed library keeps an RPATH to the folders of its own dependencies that lie outside the
# system's library folders (an HDF5 or libzip under /opt, say), so it loads without
# LD_LIBRARY_PATH. With Debian's packages only HDF5's link folder (.../hdf5/serial) is named, which
# is harmless: its soname, libhdf5_serial.so.103, is found in the system folder. Programs linked against it get an RPATH to P/lib from CMake in their
# build trees (docs/getting-started.md says what to do for installed programs).
set_target_properties(tandem PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)

install(TARGETS tandem EXPORT tandemTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/tandem DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(EXPORT tandemTargets NAMESPACE tandem:: DESTINATION ${TANDEM_INSTALL_CMAKEDIR})

configure_package_config_file(cmake/tandemConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/tandemConfig.cmake
                              INSTALL_DESTINATION ${TANDEM_INSTALL_CMAKEDIR})
# 0.x: only the same major.minor release is a match for find_package(tandem 0.1).
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/tandemConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tandemConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/tandemConfigVersion.cmake
        DESTINATION ${TANDEM_INSTALL_CMAKEDIR})

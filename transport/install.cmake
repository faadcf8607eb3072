# Installs the transport as a library others link: `cmake --install build --prefix P`
# lays out
#   P/include/artune/status.h, P/include/artune/transport/*.h (version.h generated)
#   P/lib/libartune_transport.so.* (SONAME), P/lib/libartune_transport.a
#   P/lib/cmake/ArtuneTransport/  find_package(ArtuneTransport CONFIG): artune::transport
#                                 (shared), artune::transport_static (COMPONENTS static)
#   P/lib/pkgconfig/artune-transport.pc
# All of it is the install component "transport" (`cmake --install build
# --component transport` installs the library alone, without the artune tool).
# The generated control-plane code is inside the libraries; its headers are not
# installed and no public header includes them.
include(CMakePackageConfigHelpers)
set(artune_package_dir ${CMAKE_INSTALL_LIBDIR}/cmake/ArtuneTransport)

install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/ ${CMAKE_CURRENT_BINARY_DIR}/include/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT transport FILES_MATCHING PATTERN "*.h")
# The error type of the public API comes from base/ (its other helpers stay inside).
install(FILES ${PROJECT_SOURCE_DIR}/base/include/artune/status.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/artune COMPONENT transport)
install(TARGETS artune_transport_shared EXPORT ArtuneTransportTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT transport)
install(TARGETS artune_transport EXPORT ArtuneTransportStaticTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT transport)
install(EXPORT ArtuneTransportTargets NAMESPACE artune:: DESTINATION ${artune_package_dir}
        COMPONENT transport)
install(EXPORT ArtuneTransportStaticTargets NAMESPACE artune:: DESTINATION ${artune_package_dir}
        COMPONENT transport)

configure_package_config_file(cmake/ArtuneTransportConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/ArtuneTransportConfig.cmake INSTALL_DESTINATION ${artune_package_dir})
# Before 1.0 a minor release may break the ABI: the same major.minor is compatible.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ArtuneTransportConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ArtuneTransportConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/ArtuneTransportConfigVersion.cmake
        DESTINATION ${artune_package_dir} COMPONENT transport)

# The .pc finds the prefix from its own place (${pcfiledir}), so the file stays
# right whatever prefix `cmake --install --prefix` gives.
file(RELATIVE_PATH artune_pc_to_prefix /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" artune_pc_to_prefix "${artune_pc_to_prefix}")
configure_file(cmake/artune-transport.pc.in ${CMAKE_CURRENT_BINARY_DIR}/artune-transport.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/artune-transport.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT transport)

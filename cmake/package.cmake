# `make package`: a Debian package of the airlock binary, its default configuration under
# /etc/airlock, a hardened systemd unit and the operator documentation. Built with CPack's DEB
# generator; tests/e2e/package_test.cpp builds it, unpacks it and runs what it installed.
include(GNUInstallDirs)

install(TARGETS airlock RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT airlock)
# Absolute: /etc is /etc whatever the prefix (Debian's policy for configuration files).
install(FILES ${PROJECT_SOURCE_DIR}/packaging/airlock.yaml DESTINATION /etc/airlock COMPONENT airlock)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/airlock.service DESTINATION lib/systemd/system COMPONENT airlock)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/configuration.md
              ${PROJECT_SOURCE_DIR}/docs/nginx.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT airlock)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME airlock)
set(CPACK_PACKAGE_VENDOR "airlock")
set(CPACK_PACKAGE_CONTACT "airlock maintainers <airlock@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "governed gateway between AI agents and their MCP tools")
set(CPACK_PACKAGE_DESCRIPTION
    "airlock stands between AI agents and the MCP tools they call: every call is granted by a manifest, checked, signed with Ed25519 provenance and written to a hash-chained journal.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The shared libraries the binary links (OpenSSL, LMDB, yaml-cpp, spdlog, Boost.JSON/URL) become
# Depends: computed by dpkg-shlibdeps, so they match what this build really needs.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/deb/conffiles
    ${PROJECT_SOURCE_DIR}/packaging/deb/postinst
    ${PROJECT_SOURCE_DIR}/packaging/deb/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)

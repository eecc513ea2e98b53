# The Debian package, made by CPack's DEB generator from the install rules (cmake/Install.cmake) of
# the tree scripts/package builds: `cpack -G DEB` there. Depends is computed from the executable by
# dpkg-shlibdeps, not written here; the version is the build's (cmake/Version.cmake), read when
# cpack runs (cmake/PackageVersion.cmake), so the package and `dedupctl version` never disagree.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME dedupctl)
set(CPACK_PACKAGE_VENDOR "the dedupctl authors")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "what a Kafka seek or replay would re-apply, from the log and the dedup store")
set(dedupctl_carries "")
if(dedupctl_client_libs_static)
  set(dedupctl_carries
      "\nIt carries ${DEDUPCTL_CLIENT_LIBS_VERSIONS} (built from Debian 13's\nsource packages) linked statically: Debian 12's librdkafka 2.0.2 cannot\nspeak SCRAM to Kafka 4.x or OIDC, and its hiredis 0.14 has no TLS.")
endif()
# Lines of at most 80 characters, as Debian's policy asks of a description.
# The synopsis is the summary above; CPack puts it on the Description line itself.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "dedupctl reads a Kafka topic and a consumer's dedup placement (Redis keys
with a TTL, a PostgreSQL inbox table) side by side and says, before a
kafka-consumer-groups --reset-offsets or a replay, which events would be
applied again and why: TTL gaps, records lost to a failover, keys built from
the wrong field, claims left in progress. It gates CI on the TTL against the
topic's retention, traces one event for a post-mortem, and replays a range
through the placement so that the replay itself cannot apply an event twice.
${dedupctl_carries}")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# DEBFULLNAME and DEBEMAIL, as dch reads them, name who built the package.
if(DEFINED ENV{DEBEMAIL})
  set(CPACK_DEBIAN_PACKAGE_MAINTAINER "$ENV{DEBFULLNAME} <$ENV{DEBEMAIL}>")
else()
  set(CPACK_DEBIAN_PACKAGE_MAINTAINER "dedupctl maintainers <maintainers@dedupctl.example.org>")
endif()
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# TLS to Kafka, Redis and PostgreSQL verifies servers against the system's CAs unless told a file.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS ca-certificates)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DIRECTORY "${PROJECT_BINARY_DIR}/package")
set(DEDUPCTL_BUILD_INFO_FOR_CPACK "${DEDUPCTL_BUILD_INFO}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/PackageVersion.cmake.in ${PROJECT_BINARY_DIR}/PackageVersion.cmake @ONLY)
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_BINARY_DIR}/PackageVersion.cmake)
# A native package's changelog.gz (Debian's policy), written for the version into cpack's staging
# folder: it exists only in the package, as the version is known only once the tree was built.
set(CPACK_PRE_BUILD_SCRIPTS ${PROJECT_SOURCE_DIR}/cmake/PackageChangelog.cmake)
include(CPack)

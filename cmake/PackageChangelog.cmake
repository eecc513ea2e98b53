# Run by cpack (CPACK_PRE_BUILD_SCRIPTS) once the files are staged: writes the Debian changelog of
# this native package, one entry for the version being packaged, as usr/share/doc/dedupctl/
# changelog.gz (gzip -9n: no name, no time). Its date honours SOURCE_DATE_EPOCH.
string(TIMESTAMP date "%a, %d %b %Y %H:%M:%S +0000" UTC)
set(text "dedupctl (${CPACK_DEBIAN_PACKAGE_VERSION}) unstable; urgency=medium

  * Built by scripts/package from the dedupctl source of this version; what
    changed is in its git history.

 -- ${CPACK_DEBIAN_PACKAGE_MAINTAINER}  ${date}
")
set(docdir "${CPACK_TEMPORARY_DIRECTORY}${CPACK_PACKAGING_INSTALL_PREFIX}/share/doc/dedupctl")
if(NOT IS_DIRECTORY "${docdir}")
  message(FATAL_ERROR "no ${docdir} in cpack's staging folder")
endif()
file(WRITE "${docdir}/changelog" "${text}")
execute_process(COMMAND gzip -9nf "${docdir}/changelog" COMMAND_ERROR_IS_FATAL ANY)

# Run by cpack (CPACK_PRE_BUILD_SCRIPTS) once the files are staged: writes the Debian changelog of
# this native package, one entry for the version being packaged, as usr/share/doc/dedupctl/
# changelog.gz (gzip -9n: no name, no time). Its date honours SOURCE_DATE_EPOCH.
string(TIMESTAMP date "%a, %d %b %Y %H:%M:%S +0000" UTC)
set(text "dedupctl (${CPACK_DEBIAN_PACKAGE_VERSION}) unstable; urgency=medium

  * Built by scripts/package from the dedupctl source of this version; what
    changed is in its git history.

 -- ${CPACK_DEBIAN_PACKAGE_MAINTAINER}  ${date}
")
file(GLOB_RECURSE docdirs LIST_DIRECTORIES true "${CPACK_TEMPORARY_DIRECTORY}/*/share/doc/dedupctl")
list(FILTER docdirs INCLUDE REGEX "/share/doc/dedupctl$")
if(NOT docdirs)
  message(FATAL_ERROR "no share/doc/dedupctl under ${CPACK_TEMPORARY_DIRECTORY}")
endif()
foreach(docdir IN LISTS docdirs)
  file(WRITE "${docdir}/changelog" "${text}")
  execute_process(COMMAND gzip -9nf "${docdir}/changelog" COMMAND_ERROR_IS_FATAL ANY)
endforeach()

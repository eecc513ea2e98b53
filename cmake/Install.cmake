# `cmake --install BUILD --prefix P`: the executable in P/bin, the manual pages in P/share/man/man1
# (gzip -9n, as Debian's policy asks and every man reads), the completion scripts where each shell
# looks for them, the README, the design, the report's contract, the licences and the examples in
# P/share/doc/dedupctl, and the report's JSON Schema in P/share/dedupctl.
# The completion scripts are written at build time by the built `dedupctl completion SHELL`, so
# they know every flag of this build; scripts/package makes the Debian package from the same rules
# (cmake/Package.cmake).
include(GNUInstallDirs)

install(TARGETS dedupctl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Manual pages, compressed without a name or a time in the header so that builds are reproducible.
file(GLOB dedupctl_man_pages CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/man/*.1)
set(dedupctl_man_outputs)
foreach(page IN LISTS dedupctl_man_pages)
  get_filename_component(name "${page}" NAME)
  set(out "${PROJECT_BINARY_DIR}/man/${name}.gz")
  add_custom_command(OUTPUT "${out}"
                     COMMAND ${CMAKE_COMMAND} -E make_directory "${PROJECT_BINARY_DIR}/man"
                     COMMAND sh -c "gzip -9n -c \"$1\" >\"$2.tmp\" && mv \"$2.tmp\" \"$2\"" sh "${page}" "${out}"
                     DEPENDS "${page}" VERBATIM)
  list(APPEND dedupctl_man_outputs "${out}")
endforeach()
add_custom_target(dedupctl_man_pages ALL DEPENDS ${dedupctl_man_outputs})
install(FILES ${dedupctl_man_outputs} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

# Completion scripts, by the names and in the folders each shell searches: bash-completion loads
# completions/NAME when NAME is first completed, zsh's compinit reads #compdef from the files of
# $fpath (Debian's zsh has vendor-completions there), fish reads vendor_completions.d.
set(dedupctl_completions "${PROJECT_BINARY_DIR}/completions")
set(dedupctl_completion_files)
foreach(entry "bash;dedupctl" "zsh;_dedupctl" "fish;dedupctl.fish")
  list(GET entry 0 shell)
  list(GET entry 1 name)
  set(out "${dedupctl_completions}/${shell}/${name}")
  add_custom_command(OUTPUT "${out}"
                     COMMAND ${CMAKE_COMMAND} -E make_directory "${dedupctl_completions}/${shell}"
                     COMMAND sh -c "\"$1\" completion \"$2\" >\"$3.tmp\" && mv \"$3.tmp\" \"$3\""
                             sh "$<TARGET_FILE:dedupctl>" "${shell}" "${out}"
                     DEPENDS dedupctl VERBATIM)
  list(APPEND dedupctl_completion_files "${out}")
endforeach()
add_custom_target(dedupctl_completions ALL DEPENDS ${dedupctl_completion_files})
install(FILES "${dedupctl_completions}/bash/dedupctl" DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
install(FILES "${dedupctl_completions}/zsh/_dedupctl" DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
install(FILES "${dedupctl_completions}/fish/dedupctl.fish"
        DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)

# The README, the licences (copyright: dedupctl's and those of librdkafka and hiredis, which the
# executable carries statically linked, so their notices must travel with it) and the examples:
# a config, the Kubernetes jobs and a kcat -J dump to scan.
set(dedupctl_copyright_text "dedupctl: what a seek or a replay would re-apply, from the log and the dedup placement side by side

Copyright: 2026 the dedupctl authors
License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the \"License\"); you may not use this software
 except in compliance with the License. Its text is LICENSE at the root of the source and, on Debian
 systems, /usr/share/common-licenses/Apache-2.0.
")
if(dedupctl_client_libs_static)
  string(APPEND dedupctl_copyright_text "
The executable carries ${DEDUPCTL_CLIENT_LIBS_VERSIONS}, built from Debian 13's source packages by
scripts/install-deps and linked statically. Their copyright files follow as Debian's maintainers
wrote them.
")
  foreach(library librdkafka hiredis)
    # cmake/ClientLibs.cmake refused a cache without them.
    file(READ "${DEDUPCTL_CLIENT_LIBS}/share/doc/${library}/copyright" library_text)
    string(APPEND dedupctl_copyright_text "\n==== ${library} (debian/copyright of Debian's source package) ====\n\n"
                                          "${library_text}")
  endforeach()
endif()
include(${CMAKE_CURRENT_LIST_DIR}/WriteIfChanged.cmake)
dedupctl_write_if_changed("${PROJECT_BINARY_DIR}/copyright" "${dedupctl_copyright_text}")

set(dedupctl_docdir ${CMAKE_INSTALL_DATADIR}/doc/dedupctl)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/design.md ${PROJECT_SOURCE_DIR}/docs/report-v1.md
        DESTINATION ${dedupctl_docdir})
# The JSON report's schema, where a script that checks reports finds it (docs/report-v1.md).
install(FILES ${PROJECT_SOURCE_DIR}/docs/report-v1.schema.json DESTINATION ${CMAKE_INSTALL_DATADIR}/dedupctl)
install(FILES "${PROJECT_BINARY_DIR}/copyright" DESTINATION ${dedupctl_docdir})
# The licence's text for a prefix of its own; a Debian package refers to common-licenses instead
# (scripts/package turns it off: lintian's extra-license-file).
option(DEDUPCTL_INSTALL_LICENSE "Install the Apache-2.0 text (LICENSE) beside the copyright file" ON)
if(DEDUPCTL_INSTALL_LICENSE)
  install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${dedupctl_docdir})
endif()
install(FILES ${PROJECT_SOURCE_DIR}/examples/dedupctl.toml ${PROJECT_SOURCE_DIR}/examples/orders.ndjson
        DESTINATION ${dedupctl_docdir}/examples)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/k8s DESTINATION ${dedupctl_docdir}/examples)

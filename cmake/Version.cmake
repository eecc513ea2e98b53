# Writes OUTPUT, the source of core::build (core/util/build_info.hpp): the version, the build type and
# the compiler. Run at every build (cmake -P, from CMakeLists.txt), it rewrites OUTPUT only when its
# text changes, so a commit relinks and recompiles one file, not the tree.
#
# The version comes from one place, project(VERSION) in CMakeLists.txt; git says where this build
# stands against it (Debian's version order):
# - at the commit tagged vX.Y.Z, clean: X.Y.Z (a release);
# - N commits after the tag vX.Y.Z: X.Y.Z+N.gHASH (after the release, before the next);
# - no tag vX.Y.Z yet: X.Y.Z~N.gHASH, N the commits in the history (before the release: '~' sorts
#   before X.Y.Z, so the release replaces it);
# - uncommitted changes add .dirty; no git, or no repository (a source tarball): X.Y.Z.
# Inputs: SOURCE_DIR, OUTPUT, PROJECT_VERSION, BUILD_TYPE, COMPILER.
cmake_minimum_required(VERSION 3.25)

set(version "${PROJECT_VERSION}")
find_program(GIT git)
if(GIT AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" describe --tags --long --dirty --abbrev=7
                          --match "v${PROJECT_VERSION}"
                  OUTPUT_VARIABLE described RESULT_VARIABLE described_status ERROR_QUIET
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(described_status EQUAL 0 AND described MATCHES "^v.*-([0-9]+)-g([0-9a-f]+)(-dirty)?$")
    # Anything but the tagged commit itself, clean, is a build after the release.
    if(NOT CMAKE_MATCH_1 EQUAL 0 OR CMAKE_MATCH_3)
      set(version "${PROJECT_VERSION}+${CMAKE_MATCH_1}.g${CMAKE_MATCH_2}")
      if(CMAKE_MATCH_3)
        string(APPEND version ".dirty")
      endif()
    endif()
  else()
    execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" describe --always --dirty --abbrev=7
                    OUTPUT_VARIABLE described RESULT_VARIABLE hash_status ERROR_QUIET
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" rev-list --count HEAD
                    OUTPUT_VARIABLE count RESULT_VARIABLE count_status ERROR_QUIET
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(hash_status EQUAL 0 AND count_status EQUAL 0 AND described MATCHES "^([0-9a-f]+)(-dirty)?$")
      set(version "${PROJECT_VERSION}~${count}.g${CMAKE_MATCH_1}")
      if(CMAKE_MATCH_2)
        string(APPEND version ".dirty")
      endif()
    endif()
  endif()
endif()

set(text "// Written by cmake/Version.cmake at build time; do not edit.
#include \"core/util/build_info.hpp\"

namespace dedupctl::core::build {

std::string_view version() { return \"${version}\"; }
std::string_view build_type() { return \"${BUILD_TYPE}\"; }
std::string_view compiler() { return \"${COMPILER}\"; }

} // namespace dedupctl::core::build
")
include(${CMAKE_CURRENT_LIST_DIR}/WriteIfChanged.cmake)
dedupctl_write_if_changed("${OUTPUT}" "${text}")

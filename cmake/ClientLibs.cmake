# librdkafka and hiredis (with hiredis_ssl), as the targets dedupctl::rdkafka and dedupctl::hiredis.
#
# By default they are the static libraries scripts/install-deps builds from Debian 13's source
# packages into DEDUPCTL_CLIENT_LIBS (~/.cache/dedupctl/client-libs): the executable carries the
# versions it was tested with, and links OpenSSL, libsasl2, libcurl and the codecs of the system.
# A packager sets DEDUPCTL_CLIENT_LIBS to an empty value to use the system's (pkg-config), which
# must be at least the versions below.
set(DEDUPCTL_RDKAFKA_MIN 2.6.1) # SCRAM against Kafka 4.x (librdkafka#4895 fixed in 2.6.1), OIDC
set(DEDUPCTL_HIREDIS_MIN 1.0.0) # TLS (hiredis_ssl), RESP3

if(DEFINED ENV{DEDUPCTL_CLIENT_LIBS})
  set(dedupctl_client_libs_default "$ENV{DEDUPCTL_CLIENT_LIBS}")
elseif(DEFINED ENV{XDG_CACHE_HOME})
  set(dedupctl_client_libs_default "$ENV{XDG_CACHE_HOME}/dedupctl/client-libs")
else()
  set(dedupctl_client_libs_default "$ENV{HOME}/.cache/dedupctl/client-libs")
endif()
set(DEDUPCTL_CLIENT_LIBS "${dedupctl_client_libs_default}"
    CACHE PATH "Static librdkafka and hiredis built by scripts/install-deps; empty: the system's")

if(DEDUPCTL_CLIENT_LIBS)
  if(NOT EXISTS "${DEDUPCTL_CLIENT_LIBS}/.complete")
    message(FATAL_ERROR "DEDUPCTL_CLIENT_LIBS=${DEDUPCTL_CLIENT_LIBS} holds no librdkafka and hiredis: run "
                        "scripts/install-deps, which builds them there from Debian 13's source packages, or "
                        "configure with -DDEDUPCTL_CLIENT_LIBS= to use the system's (librdkafka "
                        "${DEDUPCTL_RDKAFKA_MIN} or newer, hiredis ${DEDUPCTL_HIREDIS_MIN} or newer with hiredis_ssl)")
  endif()
  set(ENV{PKG_CONFIG_PATH} "${DEDUPCTL_CLIENT_LIBS}/lib/pkgconfig:$ENV{PKG_CONFIG_PATH}")
  # Its second line names the Debian source packages built there ("librdkafka 2.8.0-1, hiredis
  # 1.2.0-6"): the Debian package's description says what the executable carries.
  file(STRINGS "${DEDUPCTL_CLIENT_LIBS}/.complete" dedupctl_client_libs_complete LIMIT_COUNT 2)
  list(GET dedupctl_client_libs_complete 1 DEDUPCTL_CLIENT_LIBS_VERSIONS)
  # Their copyright files, which the executable's copyright carries (cmake/Install.cmake): a cache
  # that lacks them was filled by an install-deps older than its recipe v3.
  foreach(library librdkafka hiredis)
    if(NOT EXISTS "${DEDUPCTL_CLIENT_LIBS}/share/doc/${library}/copyright")
      message(FATAL_ERROR "${DEDUPCTL_CLIENT_LIBS}/share/doc/${library}/copyright is missing: "
                          "DEDUPCTL_CLIENT_LIBS was filled by an older scripts/install-deps; run scripts/install-deps again")
    endif()
  endforeach()
  # Only the static libraries are there: their own dependencies are linked as pkg-config says,
  # shared, without following those (libcurl's own are the system's business).
  set(dedupctl_client_libs_static ON)
else()
  set(dedupctl_client_libs_static OFF)
endif()

# Refuses a library older than the minimum, with the reason.
function(dedupctl_client_lib prefix module minimum why)
  pkg_check_modules(${prefix}_ANY QUIET ${module})
  if(NOT ${prefix}_ANY_FOUND)
    message(FATAL_ERROR "${module} not found by pkg-config: run scripts/install-deps (or point "
                        "DEDUPCTL_CLIENT_LIBS at a prefix holding it)")
  endif()
  if(${prefix}_ANY_VERSION VERSION_LESS ${minimum})
    message(FATAL_ERROR "${module} ${${prefix}_ANY_VERSION} is too old: dedupctl needs ${minimum} or newer (${why}). "
                        "Run scripts/install-deps, which builds Debian 13's into ~/.cache/dedupctl/client-libs, "
                        "and configure without -DDEDUPCTL_CLIENT_LIBS=")
  endif()
  pkg_check_modules(${prefix} REQUIRED IMPORTED_TARGET GLOBAL ${module})
  if(dedupctl_client_libs_static)
    execute_process(COMMAND ${PKG_CONFIG_EXECUTABLE} --print-requires-private ${module}
                    OUTPUT_VARIABLE requires OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
    string(REGEX REPLACE "[ \t]*[<>=]+[ \t]*[^ \t\n]+" "" requires "${requires}")
    string(REPLACE "\n" ";" requires "${requires}")
    if(requires)
      pkg_check_modules(${prefix}_PRIVATE REQUIRED IMPORTED_TARGET GLOBAL ${requires})
      target_link_libraries(PkgConfig::${prefix} INTERFACE PkgConfig::${prefix}_PRIVATE)
    endif()
  endif()
  message(STATUS "${module} ${${prefix}_VERSION} (${${prefix}_LINK_LIBRARIES})")
endfunction()

find_package(Threads REQUIRED)
dedupctl_client_lib(RDKAFKA rdkafka ${DEDUPCTL_RDKAFKA_MIN}
                    "SCRAM against Kafka 4.x, librdkafka#4895; OAUTHBEARER OIDC")
dedupctl_client_lib(HIREDIS hiredis ${DEDUPCTL_HIREDIS_MIN} "TLS to Redis")
dedupctl_client_lib(HIREDIS_SSL hiredis_ssl ${DEDUPCTL_HIREDIS_MIN} "TLS to Redis")

add_library(dedupctl_rdkafka INTERFACE)
target_link_libraries(dedupctl_rdkafka INTERFACE PkgConfig::RDKAFKA)
if(dedupctl_client_libs_static)
  # librdkafka.pc's Libs.private.
  target_link_libraries(dedupctl_rdkafka INTERFACE m ${CMAKE_DL_LIBS} rt Threads::Threads)
endif()
add_library(dedupctl::rdkafka ALIAS dedupctl_rdkafka)

pkg_check_modules(OPENSSL REQUIRED IMPORTED_TARGET GLOBAL openssl) # hiredis_ssl.pc's Libs.private
add_library(dedupctl_hiredis INTERFACE)
target_link_libraries(dedupctl_hiredis INTERFACE PkgConfig::HIREDIS_SSL PkgConfig::HIREDIS PkgConfig::OPENSSL)
add_library(dedupctl::hiredis ALIAS dedupctl_hiredis)

# dedupctl_write_if_changed(PATH TEXT): writes TEXT to PATH only when PATH holds something else, so
# that a generated file keeps its time and ninja rebuilds nothing from it. (Not file(CONFIGURE): the
# texts hold '@' and '${'.) Included by CMakeLists.txt's modules and by scripts run with cmake -P.
function(dedupctl_write_if_changed path text)
  set(old "")
  if(EXISTS "${path}")
    file(READ "${path}" old)
  endif()
  if(NOT old STREQUAL text)
    file(WRITE "${path}" "${text}")
  endif()
endfunction()

# The core library is pure: it holds no process spawning, no socket (rtnetlink, PF_ROUTE), no
# getifaddrs and no dlopen, and none of the host library's classes. Read from the symbols, so a
# host source that lands in the core (a file placed in the wrong layer of scripts/layers.txt, a
# core source that starts calling one of these) fails here, not on a user's machine.
#
#   cmake -DNM=<nm> -DCORE_LIBRARY=<libgidpolicy_core.{a,so}> [-DHOST_LIBRARY=<libgidpolicy_host>]
#         [-DPROGRAMS=<a consumer of gidpolicy::core alone>...] -P check_core_symbols.cmake
#
# HOST_LIBRARY is the check's own control: the host library must hold what the core must not, or
# the patterns below no longer match what nm prints and the check would pass on anything.
foreach(_v NM CORE_LIBRARY)
  if(NOT ${_v})
    message(FATAL_ERROR "check_core_symbols.cmake: ${_v} not set")
  endif()
endforeach()

# What the host library calls: undefined references, with or without a version (@GLIBC_...).
set(_calls posix_spawn posix_spawnp fork vfork execv execve execvp socket getifaddrs dlopen dlsym)
string(JOIN "|" _calls_re ${_calls})
set(_undefined_re "(^|\n)[ \t]*U (${_calls_re})(@[^\n]*)?(\n|$)")
# What the host library defines (demangled names of its classes and functions).
set(_defined_re "gidpolicy::(KernelRoutes|SystemInterfaces|verbs::DlopenApi|verbs::GidWatcher|read_host_interfaces|route_peers|read_rdma_state)")

function(_nm out file)
  execute_process(COMMAND "${NM}" -C "${file}" RESULT_VARIABLE _rc OUTPUT_VARIABLE _text ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "${NM} -C ${file} failed (${_rc}): ${_err}")
  endif()
  set(${out} "${_text}" PARENT_SCOPE)
endfunction()

function(_refuse file)
  _nm(_text "${file}")
  if(_text MATCHES "${_undefined_re}")
    string(STRIP "${CMAKE_MATCH_0}" _line)
    message(FATAL_ERROR "${file} calls ${CMAKE_MATCH_2} (nm: '${_line}'): the core must not spawn, "
                        "open sockets, read interfaces or dlopen; that is gidpolicy::host")
  endif()
  if(_text MATCHES "${_defined_re}")
    message(FATAL_ERROR "${file} holds ${CMAKE_MATCH_0}, a part of gidpolicy::host")
  endif()
  message(STATUS "${file}: none of ${_calls}, none of the host library's classes")
endfunction()

if(HOST_LIBRARY)
  _nm(_host "${HOST_LIBRARY}")
  foreach(_must posix_spawn socket getifaddrs dlopen)
    if(NOT _host MATCHES "(^|\n)[ \t]*U ${_must}(@[^\n]*)?(\n|$)")
      message(FATAL_ERROR "${HOST_LIBRARY} shows no undefined '${_must}' in `nm -C`: the check's "
                          "patterns no longer match this nm's output")
    endif()
  endforeach()
  if(NOT _host MATCHES "${_defined_re}")
    message(FATAL_ERROR "${HOST_LIBRARY} defines none of ${_defined_re}: the check's names are stale")
  endif()
endif()
_refuse("${CORE_LIBRARY}")
foreach(_p IN LISTS PROGRAMS)
  _refuse("${_p}")
endforeach()

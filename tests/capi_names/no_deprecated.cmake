# capi.names.no_deprecated: with -DGIDPOLICY_NO_DEPRECATED the old C names are gone.
# deprecated_names.c (old names) must fail to compile, naming an old name; the same compiler
# line without the macro must succeed, so the failure is the macro's doing and not the setup's.
#   cmake -DCC=... -DINCLUDE=... -DSOURCE=... -P no_deprecated.cmake
foreach(_v CC INCLUDE SOURCE)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "${_v} not set")
  endif()
endforeach()
set(_cmd ${CC} -std=c99 -fsyntax-only -Werror=implicit-function-declaration -I${INCLUDE} ${SOURCE})
execute_process(COMMAND ${_cmd} RESULT_VARIABLE _with OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
if(NOT _with EQUAL 0)
  message(FATAL_ERROR "the old names do not compile even without GIDPOLICY_NO_DEPRECATED:\n${_out}")
endif()
execute_process(COMMAND ${_cmd} -DGIDPOLICY_NO_DEPRECATED RESULT_VARIABLE _without OUTPUT_VARIABLE _out
                ERROR_VARIABLE _out)
if(_without EQUAL 0)
  message(FATAL_ERROR "with GIDPOLICY_NO_DEPRECATED the old names still compile")
endif()
foreach(_name gidpolicy_policy gidpolicy_selection)
  if(NOT _out MATCHES "${_name}")
    message(FATAL_ERROR "with GIDPOLICY_NO_DEPRECATED the error does not name ${_name}:\n${_out}")
  endif()
endforeach()
message(STATUS "GIDPOLICY_NO_DEPRECATED hides the old names")

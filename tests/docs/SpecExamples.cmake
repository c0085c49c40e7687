# The specs the docs quote with "@sgid=" mean what the tool does with them: one the docs say
# "is refused" exits 2 from `gidpolicy select --profile SPEC`, every other one is accepted.
#
#   cmake -DCLI=<gidpolicy> -DTABLE=<table file> -DDOCS="<md files>" -P SpecExamples.cmake
cmake_policy(VERSION 3.20)
separate_arguments(_docs UNIX_COMMAND "${DOCS}")
set(_count 0)
foreach(_md IN LISTS _docs)
  file(READ "${_md}" _text)
  # "is refused" may wrap onto the next line.
  string(REGEX MATCHALL "`[a-z0-9:=,.()|*_/-]+@sgid=[0-9]+`([ \n]+is[ \n]+refused)?" _specs "${_text}")
  foreach(_m IN LISTS _specs)
    string(REGEX MATCH "`([^`]+)`" _ "${_m}")
    set(_spec "${CMAKE_MATCH_1}")
    execute_process(COMMAND "${CLI}" select --profile "${_spec}" --input "${TABLE}"
                    RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_VARIABLE _err)
    if(_m MATCHES "refused$")
      if(NOT _rc EQUAL 2)
        message(FATAL_ERROR "${_md}: says `${_spec}` is refused, but the tool exits ${_rc}")
      endif()
    elseif(_rc EQUAL 2)
      message(FATAL_ERROR "${_md}: quotes `${_spec}` as a spec, but the tool refuses it: ${_err}")
    endif()
    math(EXPR _count "${_count} + 1")
  endforeach()
endforeach()
if(_count EQUAL 0)
  message(FATAL_ERROR "no @sgid spec quoted in ${DOCS}")
endif()
message(STATUS "${_count} quoted @sgid specs agree with the tool")

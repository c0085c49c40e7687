# The names 0.2.0 removed (CHANGELOG.md, 0.2.0, "Removed"): no old name compiles any more and
# every new name does. Two units per language: one using every new name (the control: it proves
# the compiler line works, so the other unit's failure is the names' and not the setup's) and one
# using every old name, whose errors must name each old name (so a name brought back by an
# alias, a macro or a forwarding header fails here by name).
#
#   cmake -DLANG=C   -DCOMPILER=<cc>  -DINCLUDES=<dir>... -DWORK=<dir> -P removed_names.cmake
#   cmake -DLANG=CXX -DCOMPILER=<c++> -DINCLUDES=<dir>|<dir>... -DWORK=<dir> -P removed_names.cmake
foreach(_v LANG COMPILER INCLUDES WORK)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "removed_names.cmake: ${_v} not set")
  endif()
endforeach()

# old|new|how a use is spelled (@ stands for the name; the statement's `;` is added, since a `;`
# here would split the list): the 14 C names and the 5 C++ ones.
if(LANG STREQUAL "C")
  set(_prologue "#include <gidpolicy/gidpolicy.h>\n")
  set(_flags -std=c99 -pedantic-errors -Werror=implicit-function-declaration)
  set(_ext c)
  set(_type "@* p@ = 0")
  set(_function "(void)@")
  set(_names
    "gidpolicy_policy|gidpolicy_profile|${_type}"
    "gidpolicy_policy_parse|gidpolicy_profile_parse|${_function}"
    "gidpolicy_policy_spec|gidpolicy_profile_spec|${_function}"
    "gidpolicy_policy_free|gidpolicy_profile_free|${_function}"
    "gidpolicy_selection|gidpolicy_plan|${_type}"
    "gidpolicy_selection_index|gidpolicy_plan_index|${_function}"
    "gidpolicy_selection_sgid_index|gidpolicy_plan_sgid_index|${_function}"
    "gidpolicy_selection_agrees|gidpolicy_plan_agrees|${_function}"
    "gidpolicy_selection_agreement|gidpolicy_plan_agreement|${_function}"
    "gidpolicy_selection_gid|gidpolicy_plan_gid|${_function}"
    "gidpolicy_selection_gid_type|gidpolicy_plan_gid_type|${_function}"
    "gidpolicy_selection_trace|gidpolicy_plan_trace|${_function}"
    "gidpolicy_selection_free|gidpolicy_plan_free|${_function}"
    "gidpolicy_preflight_selection|gidpolicy_preflight_plan|${_function}")
  set(_expected 14)
else()
  # The front door and the fakes' fabric: every public C++ name is reachable from these two.
  set(_prologue "#include <gidpolicy/gidpolicy.hpp>\n#include <gidpolicy/fakes/fake_fabric.hpp>\n")
  set(_flags -std=c++20)
  set(_ext cpp)
  set(_type "[[maybe_unused]] @* p@ = nullptr")
  set(_names
    "gidpolicy::Verdict|gidpolicy::EntryVerdict|${_type}"
    "gidpolicy::Cause|gidpolicy::CandidateCause|${_type}"
    "gidpolicy::DriverProfile|gidpolicy::DriverModel|${_type}"
    "gidpolicy::fleet::Outcome|gidpolicy::LinkOutcome|${_type}"
    "gidpolicy::fakes::Topology|gidpolicy::fleet::Pairing|${_type}")
  set(_expected 5)
endif()
list(LENGTH _names _count)
if(NOT _count EQUAL _expected)
  message(FATAL_ERROR "removed_names.cmake: ${_count} ${LANG} names listed, the release removed ${_expected}")
endif()

set(_include_flags)
string(REPLACE "|" ";" INCLUDES "${INCLUDES}")
foreach(_dir IN LISTS INCLUDES)
  if(_dir)
    list(APPEND _include_flags "-I${_dir}")
  endif()
endforeach()
file(MAKE_DIRECTORY "${WORK}")

# compile(<rc> <log> <which> <column>): a unit using the names of column 0 (old) or 1 (new).
function(compile rc log which column)
  set(_body "")
  set(_n 0)
  foreach(_row IN LISTS _names)
    string(REPLACE "|" ";" _row "${_row}")
    list(GET _row ${column} _name)
    list(GET _row 2 _use)
    # @ in a declarator is the variable: p0, p1, ... (the name itself for a use).
    string(REPLACE "p@" "p${_n}" _use "${_use}")
    string(REPLACE "@" "${_name}" _use "${_use}")
    string(APPEND _body "  { ${_use}; }\n")
    math(EXPR _n "${_n} + 1")
  endforeach()
  set(_tu "${WORK}/${which}_names.${_ext}")
  file(WRITE "${_tu}" "${_prologue}int main(void) {\n${_body}  return 0;\n}\n")
  # LC_ALL=C: the compilers quote names with ASCII quotes, which the check below looks for.
  execute_process(COMMAND ${CMAKE_COMMAND} -E env LC_ALL=C ${COMPILER} ${_flags} -fsyntax-only
                          ${_include_flags} "${_tu}"
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  set(${rc} "${_rc}" PARENT_SCOPE)
  set(${log} "${_out}" PARENT_SCOPE)
endfunction()

compile(_rc _log new 1)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "the new names do not compile (the control):\n${_log}")
endif()
compile(_rc _log old 0)
if(_rc EQUAL 0)
  message(FATAL_ERROR "every removed ${LANG} name still compiles")
endif()
# The errors, one line each, without their suggestions: GCC and Clang name the unknown
# identifier itself, quoted ('Verdict', 'gidpolicy_policy'), and may suggest another old name
# ("did you mean 'gidpolicy_selection_gid'?"), which must not count as that name's refusal.
string(REPLACE ";" "," _log_lines "${_log}")
string(REGEX MATCHALL "[^\n]*error:[^\n]*" _errors "${_log_lines}")
set(_refused "")
foreach(_e IN LISTS _errors)
  string(REGEX REPLACE "did you mean.*$" "" _e "${_e}")
  string(APPEND _refused "${_e}\n")
endforeach()
set(_still)
foreach(_row IN LISTS _names)
  string(REPLACE "|" ";" _row "${_row}")
  list(GET _row 0 _old)
  list(GET _row 1 _new)
  string(REGEX REPLACE "^.*::" "" _last "${_old}")
  if(NOT _refused MATCHES "'${_last}'")
    list(APPEND _still "${_old} (now ${_new})")
  endif()
endforeach()
if(_still)
  string(JOIN "\n  " _list ${_still})
  message(FATAL_ERROR "removed names the compiler did not refuse:\n  ${_list}\n${_log}")
endif()
message(STATUS "${_count} removed ${LANG} names: each refused by name, every new name compiles")

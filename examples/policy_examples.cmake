# The examples in this directory: every examples/*.cpp is one program (one per policy strategy,
# select_spec for the spec grammar, jaccl_style for JACCL's info()/queue_pair_rtr() written with
# gidpolicy, print_table), globbed, so a new example needs no edit here. Each carries its checked
# runs in its own header comment, which this file turns into CTest tests:
#
#   // example-run.NAME: ARGS...       the test example.<program>.NAME runs the program with ARGS
#   // example-expect: REGEX           (one or more lines) the output must match the lines' regexes
#                                      joined by newlines (PASS_REGULAR_EXPRESSION)
#
# `example-run:` without .NAME names the test example.<program>. ARGS split as a shell would
# (quote an argument holding spaces); an argument naming a file of tables/ is that file. An
# example without a checked run, or a run without an expectation, fails the configure step.
# Included from CMakeLists.txt.
file(GLOB _gidpolicy_examples CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
foreach(_src IN LISTS _gidpolicy_examples)
  get_filename_component(_ex ${_src} NAME_WE)
  add_executable(${_ex} ${_src})
  target_link_libraries(${_ex} PRIVATE gidpolicy::gidpolicy)
  gidpolicy_target_options(${_ex})
endforeach()

if(NOT GIDPOLICY_TEST_EXAMPLES)
  return()
endif()

# _gidpolicy_example_test(<test> <program> <arguments text> <expected output regex>)
function(_gidpolicy_example_test test program args_text expect)
  separate_arguments(_words UNIX_COMMAND "${args_text}")
  set(_args)
  foreach(_a IN LISTS _words)
    if(NOT _a STREQUAL "" AND EXISTS "${CMAKE_CURRENT_SOURCE_DIR}/tables/${_a}")
      list(APPEND _args "${CMAKE_CURRENT_SOURCE_DIR}/tables/${_a}")
    else()
      list(APPEND _args "${_a}")
    endif()
  endforeach()
  add_test(NAME ${test} COMMAND ${program} ${_args})
  # The output is the contract; the exit status (1: a selection failed or disagrees) is checked
  # by the regex through the text, so PASS_REGULAR_EXPRESSION alone decides. The property is a
  # list: a ';' of the regex is escaped so that it stays one regex, not two alternatives.
  string(REPLACE ";" "\\;" _regex "${expect}")
  set_tests_properties(${test} PROPERTIES LABELS example PASS_REGULAR_EXPRESSION "${_regex}")
endfunction()

# The comment lines are read by position (string(FIND)), not as a CMake list: a regex may hold
# ';' and unbalanced '[', which a list would split or glue.
foreach(_src IN LISTS _gidpolicy_examples)
  get_filename_component(_ex ${_src} NAME_WE)
  file(READ ${_src} _text)
  set(_test "")
  set(_runs 0)
  while(TRUE)
    string(FIND "${_text}" "\n// example-" _at)
    if(_at EQUAL -1)
      break()
    endif()
    math(EXPR _at "${_at} + 4")  # past "\n// "
    string(SUBSTRING "${_text}" ${_at} -1 _text)
    string(FIND "${_text}" "\n" _eol)
    string(SUBSTRING "${_text}" 0 ${_eol} _line)
    if(_line MATCHES "^example-run(\\.[A-Za-z0-9_.-]+)?: ?(.*)$")
      if(NOT _test STREQUAL "")
        if(NOT _have_expect)
          message(FATAL_ERROR "${_src}: ${_test} has no example-expect line")
        endif()
        _gidpolicy_example_test(${_test} ${_ex} "${_args_text}" "${_expect}")
      endif()
      set(_test "example.${_ex}${CMAKE_MATCH_1}")
      set(_args_text "${CMAKE_MATCH_2}")
      set(_expect "")
      set(_have_expect FALSE)
      math(EXPR _runs "${_runs} + 1")
    elseif(_line MATCHES "^example-expect: ")
      if(_test STREQUAL "")
        message(FATAL_ERROR "${_src}: an example-expect line before any example-run line")
      endif()
      string(SUBSTRING "${_line}" 16 -1 _piece)
      if(_have_expect)
        string(APPEND _expect "\n${_piece}")
      else()
        set(_expect "${_piece}")
        set(_have_expect TRUE)
      endif()
    else()
      message(FATAL_ERROR "${_src}: '${_line}' is neither 'example-run[.NAME]: ARGS' nor 'example-expect: REGEX'")
    endif()
  endwhile()
  if(NOT _test STREQUAL "")
    if(NOT _have_expect)
      message(FATAL_ERROR "${_src}: ${_test} has no example-expect line")
    endif()
    _gidpolicy_example_test(${_test} ${_ex} "${_args_text}" "${_expect}")
  endif()
  if(_runs EQUAL 0)
    message(FATAL_ERROR "${_src}: an example needs at least one '// example-run[.NAME]: ARGS' line "
                        "and its '// example-expect: REGEX' lines (examples/policy_examples.cmake)")
  endif()
endforeach()

# gidpolicy_extract_snippets(<out-dir> <result-var> <markdown files>...)
#
# Every fenced code block tagged as C or C++ (c, cpp, c++, cc, cxx, h, hpp, in any case, with or
# without words after the language) in the given Markdown files must be preceded by a marker
# naming the harness that compiles it:
#
#   <!-- snippet: HARNESS -->          or     <!-- snippet: HARNESS PART -->
#   ```cpp
#   ...
#   ```
#
# HARNESS is a file in tests/docs/harness/ (HARNESS.cpp or HARNESS.c) that includes the block's
# text where it belongs (`#include SNIPPET_<PART>`; PART defaults to MAIN). A block without a
# marker is a configure error: every C/C++ snippet in the docs compiles as written.
#
# Sets <result-var> to a list of "HARNESS|PART|FILE" entries, FILE being the extracted text, named
# after the Markdown file's path in the source tree (README.md -> README_<n>_..., docs/testing.md
# -> docs_testing_<n>_..., fakes/libibverbs/README.md -> fakes_libibverbs_README_<n>_...), so two
# files of the same name never share a snippet file or a test name.
# String functions only (no list operations on the text: C code is full of semicolons).
function(gidpolicy_extract_snippets out_dir result)
  set(_entries)
  set(_written)
  file(MAKE_DIRECTORY "${out_dir}")
  foreach(_md IN LISTS ARGN)
    file(READ "${_md}" _text)
    set(_text "\n${_text}")
    file(RELATIVE_PATH _stem "${PROJECT_SOURCE_DIR}" "${_md}")
    string(REGEX REPLACE "\\.md$" "" _stem "${_stem}")
    string(MAKE_C_IDENTIFIER "${_stem}" _stem)
    # Only a ``` fence at the start of a line is extracted: an indented or ~~~ fence tagged as C or
    # C++ would escape the compiler, so it is refused here rather than skipped.
    string(REGEX MATCHALL "\n[ \t]*(```|~~~)[ \t]*[A-Za-z+]*" _fences "${_text}")
    foreach(_fence IN LISTS _fences)
      string(REGEX MATCH "^\n([ \t]*)(```|~~~)[ \t]*([A-Za-z+]*)$" _ "${_fence}")
      set(_indent "${CMAKE_MATCH_1}")
      set(_fence_mark "${CMAKE_MATCH_2}")
      string(TOLOWER "${CMAKE_MATCH_3}" _fence_lang)
      if(_fence_lang MATCHES "^(c|cpp|c\\+\\+|cc|cxx|h|hpp)$" AND (NOT _indent STREQUAL "" OR _fence_mark STREQUAL "~~~"))
        message(FATAL_ERROR "${_md}: a ${_fence_mark}${_fence_lang} block is indented or fenced with ~~~: "
                            "start C/C++ blocks with ``` at the start of a line so they are compiled")
      endif()
    endforeach()
    set(_n 0)
    while(TRUE)
      string(FIND "${_text}" "\n```" _open)
      if(_open EQUAL -1)
        break()
      endif()
      # The line before the fence, and the fence's language.
      string(SUBSTRING "${_text}" 0 ${_open} _before)
      string(FIND "${_before}" "\n" _prev_nl REVERSE)
      math(EXPR _prev_start "${_prev_nl} + 1")
      string(SUBSTRING "${_before}" ${_prev_start} -1 _prev_line)
      math(EXPR _lang_start "${_open} + 4")
      string(SUBSTRING "${_text}" ${_lang_start} -1 _rest)
      string(FIND "${_rest}" "\n" _eol)
      string(SUBSTRING "${_rest}" 0 ${_eol} _lang)
      string(STRIP "${_lang}" _lang)
      string(REGEX REPLACE "[ \t{].*$" "" _lang "${_lang}")
      string(TOLOWER "${_lang}" _lang)
      math(EXPR _body_start "${_eol} + 1")
      string(SUBSTRING "${_rest}" ${_body_start} -1 _rest)
      string(FIND "${_rest}" "\n```" _close)
      if(_close EQUAL -1)
        message(FATAL_ERROR "${_md}: a ``` fence is not closed")
      endif()
      string(SUBSTRING "${_rest}" 0 ${_close} _body)
      math(EXPR _after "${_close} + 4")
      string(SUBSTRING "${_rest}" ${_after} -1 _text)
      if(NOT _lang MATCHES "^(c|cpp|c\\+\\+|cc|cxx|h|hpp)$")
        continue()
      endif()
      math(EXPR _n "${_n} + 1")
      if(NOT _prev_line MATCHES "^<!-- snippet: ([A-Za-z0-9_]+)( ([A-Z0-9_]+))? -->$")
        message(FATAL_ERROR "${_md}: C/C++ block ${_n} (```${_lang}) has no '<!-- snippet: HARNESS [PART] -->' "
                            "marker on the line before it (tests/docs/ExtractSnippets.cmake)")
      endif()
      set(_harness "${CMAKE_MATCH_1}")
      set(_part "${CMAKE_MATCH_3}")
      if(NOT _part)
        set(_part MAIN)
      endif()
      set(_file "${out_dir}/${_stem}_${_n}_${_harness}_${_part}.inc")
      # Rewrite only when the text changed, so an unrelated README edit rebuilds nothing.
      set(_old "")
      if(EXISTS "${_file}")
        file(READ "${_file}" _old)
      endif()
      if(NOT _old STREQUAL "${_body}\n")
        file(WRITE "${_file}" "${_body}\n")
      endif()
      list(APPEND _entries "${_harness}|${_part}|${_file}")
      list(APPEND _written "${_file}")
    endwhile()
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_md}")
  endforeach()
  # A snippet that moved or went leaves no stale copy behind to be mistaken for a compiled one.
  file(GLOB _old_files "${out_dir}/*.inc")
  foreach(_old_file IN LISTS _old_files)
    if(NOT _old_file IN_LIST _written)
      file(REMOVE "${_old_file}")
    endif()
  endforeach()
  set(${result} "${_entries}" PARENT_SCOPE)
endfunction()

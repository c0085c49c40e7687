# The perftest acceptance tests of the drop-in fake (included by CMakeLists.txt, which calls
# fakelib_perftest_tests once every target exists).
#
# ---- perftest on the fake: unmodified Debian perftest 4.5, server and
# client on loopback, no preload shims. perftest links librdmacm, libmlx5 and libefa, so it
# starts only because the fake exports the whole libibverbs ABI. Its own TCP ports come from a
# block of 64 per build directory (20000-22559), apart from the pingpong block above.
# The one-sided tools (ib_write_*, ib_read_*, ib_atomic_bw) complete because the data path moves
# RDMA writes, reads and atomics without the target polling; the RoCE v1/v2 mismatch fails
# because packets carry the source GID's type. The former are labelled one-sided.
function(fakelib_perftest_tests lib labels tables_dir log_dir port_base script)
  if(NOT TARGET gidpolicy_cli)
    return()
  endif()
  set(_perftest_tools ib_send_bw ib_send_lat ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_atomic_bw)
  foreach(_tool IN LISTS _perftest_tools)
    string(TOUPPER "GIDPOLICY_PERFTEST_${_tool}" _var)
    find_program(${_var} NAMES ${_tool} DOC "perftest's ${_tool} (Debian perftest)")
  endforeach()
  # perftest_test(<name> <tool> <offset> <table> <device> <expect> [SERVER_GID g] [CLIENT_GID g]
  #               [PICK p] [ONE_SIDED] [LOG_HAS re...])
  function(perftest_test name tool offset table device expect)
    cmake_parse_arguments(ARG "ONE_SIDED" "SERVER_GID;CLIENT_GID;PICK" "LOG_HAS" ${ARGN})
    string(TOUPPER "GIDPOLICY_PERFTEST_${tool}" _var)
    if(NOT ${_var})
      return()
    endif()
    set(_args "-n 5 -s 64")
    if(tool STREQUAL "ib_atomic_bw")
      set(_args "-n 5")  # atomics are 8 bytes: perftest refuses -s
    endif()
    set(_extra)
    foreach(_re IN LISTS ARG_LOG_HAS)
      list(APPEND _extra --log-has "${_re}")
    endforeach()
    if(ARG_PICK)
      list(APPEND _extra --pick "${ARG_PICK}")
    endif()
    foreach(_side SERVER_GID CLIENT_GID)
      if(NOT ARG_${_side})
        set(ARG_${_side} auto)
      endif()
    endforeach()
    math(EXPR _port "${port_base} + ${offset}")
    add_test(NAME fakelib.perftest.${name}
      COMMAND ${script} --tool ${${_var}} --lib ${lib} --tables ${tables_dir}/${table} --device ${device}
              --port ${_port} --log ${log_dir}/perftest.${name}.jsonl --cli $<TARGET_FILE:gidpolicy_cli>
              --server-gid ${ARG_SERVER_GID} --client-gid ${ARG_CLIENT_GID} --expect ${expect}
              --args "${_args}" ${_extra})
    # third-party: perftest over the uninstrumented fake (the CLI only computes the expectation).
    set(_test_labels ${labels} perftest third-party)
    if(ARG_ONE_SIDED)
      list(APPEND _test_labels one-sided)
    endif()
    # Above perftest.sh's own guards: 60 s for the server to listen, then 60 s per process.
    set_tests_properties(fakelib.perftest.${name} PROPERTIES LABELS "${_test_labels}" TIMEOUT 180)
  endfunction()

  # Every example table with an Ethernet link layer (the Thunderbolt ones are not: perftest
  # refuses a link layer it does not know), one port each, every tool at gidpolicy's auto index.
  set(_ports ds4-linux-unit.json:ds4_test0 ibm-pr4-cx6.show_gids.txt:mlx5_0
             mooncake-1617-ipv6only.show_gids.txt:rocep105s0 nccl-1573-pod.show_gids.txt:mlx5_1
             nccl-769.devinfo.txt:mlx5_bond_0)
  set(_offset 0)
  foreach(_tool IN LISTS _perftest_tools)
    set(_needs)
    if(NOT _tool MATCHES "^ib_send_")
      set(_needs ONE_SIDED)
    endif()
    foreach(_port IN LISTS _ports)
      string(REPLACE ":" ";" _pd "${_port}")
      list(GET _pd 0 _table)
      list(GET _pd 1 _device)
      string(REGEX REPLACE "\\.(json|txt)$" "" _name "${_table}")
      perftest_test(${_tool}.auto_index_completes.${_name} ${_tool} ${_offset} ${_table} ${_device} ok ${_needs}
        LOG_HAS "\"transition\":\"INIT->RTR\".*\"result\":0")
      math(EXPR _offset "${_offset} + 1")
    endforeach()
  endforeach()

  # An empty slot: the server routes from index 2, a hole in the pod's table, against a client at
  # the link-local index 5 (perftest itself refuses to pair a zero GID with an IPv4-mapped one).
  # Linux fails the server's RTR with ENODATA, and the client's, whose peer advertised the zero
  # GID, with EINVAL: what `gidpolicy simulate` predicts. Both stop; nothing hangs.
  foreach(_tool IN LISTS _perftest_tools)
    perftest_test(${_tool}.empty_slot_fails_rtr ${_tool} ${_offset} nccl-1573-pod.show_gids.txt mlx5_0 rtr-fails
      SERVER_GID 2 CLIENT_GID 5
      LOG_HAS "\"transition\":\"INIT->RTR\".*\"sgid_index\":2,.*\"result\":61,\"error\":\"ENODATA\""
              "\"transition\":\"INIT->RTR\".*\"sgid_index\":5,\"dgid\":\"::\".*\"result\":22")
    math(EXPR _offset "${_offset} + 1")
  endforeach()

  # RoCE v1 source (index 2) against a RoCE v2 peer (index 3), the same IPv4-mapped GID: RTR
  # passes on both sides, the traffic times out in both directions (each side drops the other
  # encapsulation). Latency tests, where both sides send: the first sender ends with retry
  # exceeded, the other waits for a peer that never answers, as on hardware.
  foreach(_tool ib_send_lat ib_write_lat)
    perftest_test(${_tool}.roce_v1_v2_mismatch_times_out ${_tool} ${_offset} nccl-769.devinfo.txt mlx5_bond_0
      one-side-fails SERVER_GID 2 CLIENT_GID 3
      LOG_HAS "\"call\":\"deliver\".*\"result\":\"dropped\",\"reason\":\"a RoCE v. packet reaches a QP that routes RoCE v.")
    math(EXPR _offset "${_offset} + 1")
  endforeach()

  # perftest's own pick (no -x) against gidpolicy's auto, on every Ethernet port of every example
  # table. perftest prefers an IPv4-mapped GID, else the higher RoCE version, and otherwise keeps
  # index 0; gidpolicy's auto never routes from a link-local GID (not routed: RTR passes, traffic
  # times out towards any routed peer). The stated disagreements are the IPv6-only ports.
  set(_picks
    "ds4-linux-unit.json|ds4_test0|agree"
    "ibm-pr4-cx6.show_gids.txt|mlx5_0|agree"
    "nccl-1573-pod.show_gids.txt|mlx5_0|agree"
    "nccl-1573-pod.show_gids.txt|mlx5_1|agree"
    "nccl-769.devinfo.txt|mlx5_bond_0|agree"
    # IPv6-only, one link-local and one ULA GID, both RoCE v2: nothing beats index 0 for
    # perftest, so it keeps the link-local fe80:: GID; auto takes the routable ULA at 1.
    "mooncake-1617-ipv6only.show_gids.txt|rocep105s0|0 1"
    "mooncake-1617-ipv6only.show_gids.txt|rocep121s0|0 1"
    # Only link-local GIDs (v1 at 0, v2 at 1): perftest takes the v2 one; auto finds no entry.
    "mooncake-1617-ipv6only.show_gids.txt|rocep193s0f0|1 none")
  foreach(_entry IN LISTS _picks)
    string(REPLACE "|" ";" _e "${_entry}")
    list(GET _e 0 _table)
    list(GET _e 1 _device)
    list(GET _e 2 _pick)
    string(REGEX REPLACE "\\.(json|txt)$" "" _name "${_table}")
    perftest_test(own_pick_vs_auto.${_name}.${_device} ib_send_bw ${_offset} ${_table} ${_device} pick
      SERVER_GID none CLIENT_GID none PICK "${_pick}")
    math(EXPR _offset "${_offset} + 1")
  endforeach()
  # The perftest profile's oracle: real perftest's own pick (no -x) on every Ethernet port of
  # every example table equals what the profile predicts (perftest_oracle.sh finds the ports).
  if(GIDPOLICY_PERFTEST_IB_SEND_BW)
    math(EXPR _oracle_base "${port_base} + ${_offset}")
    math(EXPR _oracle_ports "64 - ${_offset}")
    get_filename_component(_oracle_script "${script}" DIRECTORY)
    add_test(NAME fakelib.perftest.own_pick_is_the_perftest_profile
      COMMAND ${_oracle_script}/perftest_oracle.sh --tool ${GIDPOLICY_PERFTEST_IB_SEND_BW} --lib ${lib}
              --tables-dir ${tables_dir} --port-base ${_oracle_base} --max-ports ${_oracle_ports}
              --log-dir ${log_dir} --cli $<TARGET_FILE:gidpolicy_cli> --perftest-sh ${script})
    set_tests_properties(fakelib.perftest.own_pick_is_the_perftest_profile PROPERTIES
      LABELS "${labels};perftest;oracle;third-party" TIMEOUT 300)
  endif()
  if(_offset GREATER 64)
    message(FATAL_ERROR "fakelib perftest tests need more than their block of 64 ports")
  endif()
endfunction()

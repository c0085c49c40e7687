# The policy examples: one program per strategy, select_spec for the spec grammar, and
# jaccl_style (JACCL's info()/queue_pair_rtr() written with gidpolicy). Each runs in the suite
# on the real tables in tables/ with its output checked. Included from CMakeLists.txt.
set(_gidpolicy_policy_examples
  jaccl_first_mapped jaccl_legacy ds4_explicit_index ds4_scan ds4_linux validated_explicit ranked first_of
  per_device select_spec jaccl_style stacks)
foreach(_ex IN LISTS _gidpolicy_policy_examples)
  add_executable(${_ex} ${_ex}.cpp)
  target_link_libraries(${_ex} PRIVATE gidpolicy::gidpolicy)
  gidpolicy_target_options(${_ex})
endforeach()

if(NOT GIDPOLICY_TEST_EXAMPLES)
  return()
endif()

# policy_example_test(<name> <program> <expected output regex> ARGS <arguments>...)
# Table file names in the arguments are relative to tables/.
function(policy_example_test name program expect)
  cmake_parse_arguments(ARG "" "" "ARGS" ${ARGN})
  set(_args)
  foreach(_a IN LISTS ARG_ARGS)
    if(EXISTS "${CMAKE_CURRENT_SOURCE_DIR}/tables/${_a}")
      list(APPEND _args "${CMAKE_CURRENT_SOURCE_DIR}/tables/${_a}")
    else()
      list(APPEND _args "${_a}")
    endif()
  endforeach()
  add_test(NAME example.${name} COMMAND ${program} ${_args})
  # The output is the contract; the exit status (1: a selection failed or disagrees) is checked
  # by the regex through the text, so PASS_REGULAR_EXPRESSION alone decides.
  set_tests_properties(example.${name} PROPERTIES LABELS example PASS_REGULAR_EXPRESSION "${expect}")
endfunction()

# The stacks: UCX 1.13 rejects the pod's ports (gid[0] is empty), NCCL takes 7, libfabric's UD the
# empty index 0; on an IPv6-only port NCCL and UCX keep the link-local fe80 at 0, Mooncake the ULA.
policy_example_test(stacks.nccl1573 stacks
  "mlx5_0 port 1: nccl -> index 7, ok\n.*\nmlx5_0 port 1: ucx -> nothing, rejects the port\n  why: .*invalid gid\\[0\\] on mlx5_0:1"
  ARGS nccl-1573-pod.show_gids.txt nccl ucx)
policy_example_test(stacks.ipv6only stacks
  "rocep105s0 port 1: nccl -> index 0, times out.*\n.*\nrocep105s0 port 1: mooncake -> index 1, ok"
  ARGS mooncake-1617-ipv6only.show_gids.txt nccl mooncake)

# JACCL's selection: index 2 (a RoCE v1 entry) on NCCL 769, disagreeing with its literal 1.
policy_example_test(jaccl_first_mapped.nccl769 jaccl_first_mapped
  "mlx5_bond_0 port 1: jaccl -> index 2 ::ffff:200\\.0\\.209\\.6 \\(roce_v1\\)\n  JACCL routes from sgid_index 1: DISAGREES: sgid_index 1 holds fe80::ac0:ebff:feda:1cfb \\(roce_v2\\), not the advertised GID"
  ARGS nccl-769.devinfo.txt)
policy_example_test(jaccl_first_mapped.macmini jaccl_first_mapped
  "rdma_en2 port 1: jaccl -> index 2 ::ffff:10\\.99\\.0\\.3 \\(unknown\\)\n  JACCL routes from sgid_index 1: DISAGREES: sgid_index 1 is empty; the advertised GID ::ffff:10\\.99\\.0\\.3 is at index 2"
  ARGS macmini-mapped-at-2.json)
policy_example_test(jaccl_first_mapped.ds4qa jaccl_first_mapped
  "rdma_en1 port 1: jaccl -> index 1 ::ffff:10\\.99\\.0\\.2 \\(unknown\\)\n  JACCL routes from sgid_index 1: agrees"
  ARGS apple-ds4qa-rdma_en1.devinfo.txt)
policy_example_test(jaccl_first_mapped.noipv4 jaccl_first_mapped
  "rdma_en3 port 1: jaccl failed: no IPv4-mapped GID: rdma_en3 port 1: no entry of \\[0, 16\\) holds an IPv4-mapped .*assign an IPv4 address"
  ARGS apple-mlx4191-rdma_en3-noipv4.devinfo.txt)
policy_example_test(jaccl_legacy.nccl769 jaccl_legacy
  "mlx5_bond_0 port 1: jaccl-legacy -> index 1 fe80::ac0:ebff:feda:1cfb \\(roce_v2\\)\n  warning: advertising a link-local GID"
  ARGS nccl-769.devinfo.txt)
policy_example_test(jaccl_legacy.macmini jaccl_legacy
  "rdma_en2 port 1: jaccl-legacy -> index 1 <zero GID> \\(unknown\\)\n  warning: advertising the zero GID of an empty slot"
  ARGS macmini-mapped-at-2.json)
policy_example_test(ds4_explicit_index.empty ds4_explicit_index
  "rdma_en2 port 1: ds4:index=1 -> index 1 <zero GID>" ARGS macmini-mapped-at-2.json 1)
policy_example_test(ds4_explicit_index.out_of_range ds4_explicit_index
  "mlx5_0 port 1: ds4:index=9 failed: GID index out of range: mlx5_0 port 1: index 9 is not below the entries listed: 8.*\nmlx5_1 port 1: ds4:index=9 failed"
  ARGS nccl-1573-pod.show_gids.txt 9)
policy_example_test(ds4_explicit_index.not_shown ds4_explicit_index
  "mlx5_bond_0 port 1: ds4:index=255 failed: GID entry not shown by the source" ARGS nccl-769.devinfo.txt 255)
policy_example_test(ds4_scan.ibm ds4_scan "mlx5_0 port 1: ds4 -> index 4 ::ffff:172\\.19\\.0\\.60 \\(roce_v1\\)"
  ARGS ibm-pr4-cx6.show_gids.txt)
policy_example_test(ds4_scan.ipv6only ds4_scan
  "rocep105s0 port 1: ds4 failed: no IPv4-mapped GID.*\nrocep121s0 port 1: ds4 failed.*\nrocep193s0f0 port 1: ds4 failed"
  ARGS mooncake-1617-ipv6only.show_gids.txt)
# ds4's own Linux unit table: local 127.0.0.1 -> 3; forced 2 -> 2; forced -1, 1, 4, 5, INT_MAX -> error.
policy_example_test(ds4_linux.local ds4_linux
  "ds4_test0 port 1: ds4-linux:local=127\\.0\\.0\\.1 -> index 3 ::ffff:127\\.0\\.0\\.1 \\(roce_v2\\)"
  ARGS ds4-linux-unit.json --local 127.0.0.1)
policy_example_test(ds4_linux.forced2 ds4_linux "ds4-linux:local=127\\.0\\.0\\.1,index=2 -> index 2 ::ffff:127\\.0\\.0\\.2"
  ARGS ds4-linux-unit.json --local 127.0.0.1 --index 2)
foreach(_forced -1 1 4 5 2147483647)
  policy_example_test(ds4_linux.forced${_forced} ds4_linux "ds4-linux:local=127\\.0\\.0\\.1,index=${_forced} failed: "
    ARGS ds4-linux-unit.json --local 127.0.0.1 --index ${_forced})
endforeach()
policy_example_test(ds4_linux.explain ds4_linux
  "ds4-linux -> index 2 .*\n.*\n  \\[0\\] wrong_type: .*\n  \\[1\\] wrong_type: .*\n  \\[2\\] chosen: .*\n  \\[3\\] lower_rank: .*\n  \\[4\\] zero"
  ARGS ds4-linux-unit.json --explain)
policy_example_test(validated_explicit.good validated_explicit "mlx5_bond_0 port 1: validated:index=3 -> index 3 ::ffff:200\\.0\\.209\\.6 \\(roce_v2\\)"
  ARGS nccl-769.devinfo.txt 3)
policy_example_test(validated_explicit.link_local validated_explicit
  "validated:index=1,family=any failed: link-local GID rejected: mlx5_bond_0 port 1: index 1 holds fe80::ac0:ebff:feda:1cfb \\(roce_v2\\), a link-local GID: not routed on ethernet"
  ARGS nccl-769.devinfo.txt 1 any)
policy_example_test(validated_explicit.empty validated_explicit "rdma_en2 port 1: validated:index=1 failed: GID entry is empty: rdma_en2 port 1: index 1 is empty"
  ARGS macmini-mapped-at-2.json 1)
policy_example_test(ranked.nccl769 ranked "mlx5_bond_0 port 1: auto -> index 3 ::ffff:200\\.0\\.209\\.6 \\(roce_v2\\)"
  ARGS nccl-769.devinfo.txt)
policy_example_test(ranked.pod ranked
  "mlx5_0 port 1: auto -> index 7 ::ffff:10\\.152\\.0\\.12 \\(roce_v2\\)\nmlx5_1 port 1: auto -> index 7 ::ffff:10\\.152\\.4\\.12 \\(roce_v2\\)"
  ARGS nccl-1573-pod.show_gids.txt)
policy_example_test(ranked.ipv6only ranked
  "rocep105s0 port 1: auto -> index 1 fd93:16d3:59b6:10d:690:81ff:fe39:e3e8 \\(roce_v2\\)\nrocep121s0 port 1: auto -> index 1 .*\nrocep193s0f0 port 1: auto failed: no acceptable GID: rocep193s0f0 port 1: no entry qualifies \\(looked at: \\[0\\] link_local, \\[1\\] link_local\\)"
  ARGS mooncake-1617-ipv6only.show_gids.txt)
policy_example_test(ranked.thunderbolt_noipv4 ranked
  "rdma_en3 port 1: auto failed: no acceptable GID.*\nauto: failed: .*\n  \\[0\\] link_local: fe80::347c:94ff:fecd:45c4"
  ARGS apple-mlx4191-rdma_en3-noipv4.devinfo.txt --explain)
policy_example_test(first_of.macmini first_of
  "rdma_en2 port 1: first\\(validated:index=3\\|auto\\) -> index 2 ::ffff:10\\.99\\.0\\.3 \\(unknown\\)\nvalidated:index=3: failed: GID entry is empty: rdma_en2 port 1: index 3 is empty\n  \\[3\\] empty: empty slot\nauto: selected\n  \\[0\\] link_local"
  ARGS macmini-mapped-at-2.json)
policy_example_test(per_device.pod per_device
  "policy per-device\\(mlx5_1=validated:index=6,type=roce_v1;\\*=auto\\)\nmlx5_0 port 1: auto -> index 7 ::ffff:10\\.152\\.0\\.12 \\(roce_v2\\)\nmlx5_1 port 1: validated:index=6,type=roce_v1 -> index 6 ::ffff:10\\.152\\.4\\.12 \\(roce_v1\\)"
  ARGS nccl-1573-pod.show_gids.txt)
policy_example_test(select_spec.jaccl select_spec
  "rdma_en2 port 1: jaccl advertises index 2 ::ffff:10\\.99\\.0\\.3, routes from sgid_index 1: DISAGREES \\(sgid_index 1 is empty; the advertised GID ::ffff:10\\.99\\.0\\.3 is at index 2\\)"
  ARGS macmini-mapped-at-2.json jaccl)
policy_example_test(select_spec.first select_spec
  "mlx5_bond_0 port 1: first\\(validated:index=3,type=roce_v2\\|auto\\) advertises index 3 ::ffff:200\\.0\\.209\\.6, routes from sgid_index 3: agrees"
  ARGS nccl-769.devinfo.txt "first(validated:index=3,type=roce_v2|auto)")
policy_example_test(select_spec.bad_spec select_spec
  "select_spec: invalid policy spec: at position 10: expected an option of validated \\(index, type, family, allow-link-local\\), found 'idx'"
  ARGS nccl-769.devinfo.txt "validated:idx=3")
# JACCL-style pair: fixed, it connects both ways; as shipped, the Mac mini side is refused
# before the driver (or, unchecked, predicted to fail with errno 22 as in MLX PR 3389).
policy_example_test(jaccl_style.fixed jaccl_style
  "rdma_en2 advertises ::ffff:10\\.99\\.0\\.3; rdma_en1 advertises ::ffff:10\\.99\\.0\\.2\nrdma_en2: RTR sgid_index 2 dgid ::ffff:10\\.99\\.0\\.2: predicted ok\nrdma_en1: RTR sgid_index 1 dgid ::ffff:10\\.99\\.0\\.3: predicted ok"
  ARGS macmini-mapped-at-2.json apple-ds4qa-rdma_en1.devinfo.txt)
policy_example_test(jaccl_style.stock_refused jaccl_style
  "rdma_en2: refusing RTR: sgid_index does not hold the advertised GID: sgid_index 1 is empty; the advertised GID ::ffff:10\\.99\\.0\\.3 is at index 2\nrdma_en1: RTR sgid_index 1 dgid ::ffff:10\\.99\\.0\\.3: predicted ok"
  ARGS macmini-mapped-at-2.json apple-ds4qa-rdma_en1.devinfo.txt --profile jaccl)
policy_example_test(jaccl_style.stock_unchecked jaccl_style
  "rdma_en2: RTR sgid_index 1 dgid ::ffff:10\\.99\\.0\\.2: predicted EINVAL \\(22\\): sgid_index 1 is empty\nEINVAL \\(22\\) on darwin:\n  \\[confirmed\\] sgid_index 1 is empty; the advertised GID ::ffff:10\\.99\\.0\\.3 is at index 2"
  ARGS macmini-mapped-at-2.json apple-ds4qa-rdma_en1.devinfo.txt --profile jaccl --unchecked)
policy_example_test(jaccl_style.noipv4 jaccl_style
  "info\\(\\) failed: no IPv4-mapped GID: rdma_en3 port 1: .*assign an IPv4 address"
  ARGS apple-mlx4191-rdma_en3-noipv4.devinfo.txt apple-ds4qa-rdma_en1.devinfo.txt)

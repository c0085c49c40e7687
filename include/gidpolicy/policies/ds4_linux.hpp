// Ds4Linux: ds4's Linux RoCE path, `tp_rdma_linux_gid`, reproduced exactly.
//
// Scans [0, min(gid_tbl_len, 256)) with ibv_query_gid_ex semantics (an empty slot is ENODATA,
// skipped), keeps only non-zero RoCE v2 entries, scores 2 the entry equal to the local address
// of the control TCP socket (an IPv4 address as ::ffff:a.b.c.d) and 1 the others; the first
// best wins. A forced index (ds4's int) must be in range and <= 255, readable, RoCE v2 and
// non-zero, else it is an error; a forced index never falls back to the scan.
//
// ds4's own unit-test table (examples/tables/ds4-linux-unit.json): idx 0,1 v1 ::ffff:127.0.0.1;
// 2 v2 ::ffff:127.0.0.2; 3 v2 ::ffff:127.0.0.1; 4 v2 zero. local 127.0.0.1 -> 3; forced 2 -> 2;
// forced -1, 1, 4, 5, INT_MAX -> error.
//
// Failure: errc::index_out_of_range (forced < 0 or >= gid_tbl_len), errc::index_exceeds_uint8
// (forced > 255), errc::entry_empty / entry_unreadable / entry_not_shown, errc::wrong_gid_type
// (not RoCE v2), errc::entry_zero, errc::no_candidate (scan found no RoCE v2 entry).
//
// Example:
//   Ds4Linux p{.local = parse_address("127.0.0.1").value()};   // spec "ds4-linux:local=127.0.0.1"
#pragma once

#include <gidpolicy/gid.hpp>
#include <gidpolicy/policy.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gidpolicy {

class AnyPolicy;    // any_policy.hpp
class SpecOptions;  // spec_options.hpp

struct Ds4Linux {
  /// The control socket's local address (IPv4 given as ::ffff:a.b.c.d); scores 2 when equal.
  std::optional<Gid> local;
  /// ds4's forced index (an int in ds4, so negative values are representable and rejected).
  std::optional<std::int32_t> index;

  [[nodiscard]] result<Selection> select(const GidTable& table, SelectOptions run = {}) const;
  /// "ds4-linux", "ds4-linux:local=127.0.0.1", "ds4-linux:local=127.0.0.1,index=2".
  [[nodiscard]] std::string spec() const;
  /// Names no peer: it picks from the table alone.
  [[nodiscard]] std::vector<PeerAddress> peers() const { return {}; }
  /// false: it picks only a slot it has checked holds a GID.
  [[nodiscard]] bool picks_unchecked() const noexcept { return false; }
  /// Reads the spec's options (registry.hpp's row for "ds4-linux"; SpecOptions in spec_options.hpp).
  static result<AnyPolicy> from_options(const SpecOptions& options);
  friend bool operator==(const Ds4Linux&, const Ds4Linux&) = default;
};

/// The port ds4 connects from, and its selection there.
struct Ds4LinuxPort {
  std::size_t table = 0;  ///< index into the tables given to choose_port()
  Selection selection;
};

/// ds4's port choice on Linux: ds4 runs tp_rdma_linux_gid on every active port of the candidate
/// devices (all, or only --rdma-device's) and connects from the port whose pick is the control
/// address (`policy.local`), the first such; a port that alone picks anything is taken without
/// a match. Several ports that pick and none holding the address is ds4's refusal, reproduced:
/// errc::no_candidate, "no active RoCEv2 GID for the requested device/index: N ports tie and
/// none holds ADDR; ..." -- picking one GID per port, as select() alone does, would connect
/// where ds4 refuses. Ports that are not ACTIVE/ARMED are skipped; no port picking anything is
/// the last port's select() error (errc::no_candidate "no active port" when none is active).
///
/// Example:
///   auto port = gidpolicy::choose_port(Ds4Linux{.local = control_addr}, tables);
///   if (!port) return port.error();   // ds4's refusal, with every port's reason in the trace
result<Ds4LinuxPort> choose_port(const Ds4Linux& policy, const std::vector<GidTable>& tables,
                                 SelectOptions run = {});

}  // namespace gidpolicy

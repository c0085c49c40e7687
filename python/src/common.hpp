// Shared by the binding sources of the Python module: how a gidpolicy::Error becomes the Python
// exception gidpolicy.Error, and how Python values (str, bytes, Gid) become the library's.
//
// Why exceptions carry the errc by name: the name is what the CLI's JSON "code" key and every
// message use (to_string(errc)), stable across releases; the number is an implementation detail.
#pragma once

#include <gidpolicy/driver_model.hpp>
#include <gidpolicy/error.hpp>
#include <gidpolicy/gid.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/names.hpp>
#include <gidpolicy/profiles.hpp>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace gidpolicy::python {

namespace py = pybind11;

/// A library failure on its way to Python: thrown by unwrap(), turned into gidpolicy.Error by the
/// translator module.cpp registers.
struct Failure {
  Error error;
};

/// The value of `r`, or throw its error as a Failure.
template <class T>
T unwrap(result<T>&& r) {
  if (!r) throw Failure{std::move(r).error()};
  return std::move(r).value();
}
inline void unwrap(result<void>&& r) {
  if (!r) throw Failure{std::move(r).error()};
}
/// `s` quoted for a message (names.hpp's rule: one line of printable ASCII, at most 60 bytes).
inline std::string quote_arg(std::string_view s) { return quote_name(s, 60); }
/// Throw errc::invalid_argument with `detail`.
[[noreturn]] void invalid(std::string detail);

/// A gidpolicy.Error instance for `e` (not raised): what the translator raises, and what a value
/// that carries a failure (a row whose selection failed, a refused RTR) holds.
py::object error_object(const Error& e);

/// A GID given as a Gid, its text (Gid::parse) or its 16 bytes in wire order (any object with
/// the buffer protocol: bytes, bytearray, memoryview). Anything else: invalid_argument naming `what`.
Gid to_gid(const py::handle& value, std::string_view what = "gid");
/// An optional GID: None stays nullopt.
std::optional<Gid> to_optional_gid(const py::handle& value, std::string_view what);

/// Enum names as the library spells them (to_string / *_from_string); an unknown name is
/// invalid_argument listing the accepted ones.
GidType gid_type_arg(std::string_view name);
Platform platform_arg(std::string_view name);
QpKind qp_kind_arg(std::string_view name);
/// A profile given as a Profile or as its spec (parse_profile).
Profile profile_arg(const py::handle& value);
/// The model for `table`: `model` when given, else DriverModel::for_table(table, platform).
DriverModel model_arg(const GidTable& table, const std::optional<DriverModel>& model,
                      const std::optional<std::string>& platform);

// One registration function per binding source (module.cpp calls them in dependency order).
void bind_values(py::module_& m);
void bind_tables(py::module_& m);
void bind_profiles(py::module_& m);
void bind_rtr(py::module_& m);
void bind_stacks(py::module_& m);
void bind_fleet(py::module_& m);
void bind_doctor(py::module_& m);

}  // namespace gidpolicy::python

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

#include <cstdint>
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

/// An argument of the wrong Python type, on its way to gidpolicy.ArgumentTypeError (the
/// translator module.cpp registers; arguments.cpp puts the function's name first).
struct WrongType {
  std::string message;
};
/// Throw WrongType: "`what`: expected `expected`, found <the type of `found`>".
[[noreturn]] void wrong_type(std::string_view what, std::string_view expected, const py::handle& found);

/// A gidpolicy.Error instance for `e` (not raised): what the translator raises, and what a value
/// that carries a failure (a row whose selection failed, a refused RTR) holds.
py::object error_object(const Error& e);

/// `name` under names.hpp's rule for `kind` (the rule every table reader applies), or
/// invalid_argument naming `what` and the problem. A value built in Python then never holds a
/// name the module's own readers would refuse in what it writes.
const std::string& checked_name(const std::string& name, NameKind kind, std::string_view what);
/// A port number as the readers accept it: 1 to 255 (0 too when `zero_ok`: "the whole device").
std::uint32_t checked_port(std::uint32_t port, std::string_view what, bool zero_ok = false);
/// A file system path from Python: a str may hold a NUL byte, where the C call that opens it would
/// silently stop and open another file; refused as invalid_argument naming `what`.
const std::string& checked_path(const std::string& path, std::string_view what);

/// A pickled value's state (py::pickle): a tuple of `n` items, else invalid_argument naming
/// `what`. Every value is rebuilt from it through its constructor's own checks, so a pickle from
/// elsewhere cannot make a value the constructor would refuse.
const py::tuple& pickled(const py::tuple& state, std::size_t n, std::string_view what);

/// py::pickle for a class whose Python constructor takes back, as positional arguments, the tuple
/// `state` returns: unpickling goes through the constructor and every check it makes.
template <class T, class State>
auto pickle_by_constructor(State state) {
  return py::pickle(std::move(state),
                    [](const py::tuple& t) { return py::type::of<T>()(*t).template cast<T>(); });
}

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

/// gidpolicy.ArgumentTypeError (a subclass of gidpolicy.Error and TypeError), created at import.
extern PyObject* g_argument_type_error;
/// Make every pybind11 function of `m` (its submodules and classes too) raise
/// gidpolicy.ArgumentTypeError where pybind11 would raise its own TypeError for arguments of the
/// wrong type (arguments.cpp). Called once, after every binding is registered.
void route_argument_errors(py::module_& m);
/// A gidpolicy.Error-like instance of `type` for `message`: errc invalid_argument.
py::object argument_error_object(const std::string& message);

// One registration function per binding source (module.cpp calls them in dependency order).
void bind_values(py::module_& m);
void bind_tables(py::module_& m);
void bind_profiles(py::module_& m);
void bind_rtr(py::module_& m);
void bind_stacks(py::module_& m);
void bind_fleet(py::module_& m);
void bind_doctor(py::module_& m);

}  // namespace gidpolicy::python

// The extension module gidpolicy._gidpolicy: pybind11 over the C++ API (python/README.md says why
// not the C API). The package gidpolicy re-exports it; gidpolicy/_gidpolicy.pyi types it.
#include "common.hpp"

#include <gidpolicy/qp.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

namespace gidpolicy::python {
namespace {

// Created once at import (the module owns it; pybind11 keeps the handle alive).
PyObject* g_error_type = nullptr;

// Sets the attributes every gidpolicy.Error carries on `obj` (an instance of Error or a subclass).
void set_error_attributes(py::object& obj, const Error& e) {
  const bool ours = e.code.category() == error_category();
  obj.attr("errc") = ours ? py::object(py::str(std::string(to_string(static_cast<errc>(e.code.value())))))
                          : py::object(py::none());
  obj.attr("errno") = ours ? py::object(py::none()) : py::object(py::int_(e.code.value()));
  obj.attr("detail") = py::str(e.detail);
  obj.attr("trace") = e.trace ? py::cast(*e.trace) : py::object(py::none());
}

}  // namespace

PyObject* g_argument_type_error = nullptr;

void invalid(std::string detail) { throw Failure{Error(errc::invalid_argument, std::move(detail))}; }

void wrong_type(std::string_view what, std::string_view expected, const py::handle& found) {
  throw WrongType{std::string(what) + ": expected " + std::string(expected) + ", found " +
                  std::string(py::str(py::type::of(found).attr("__name__")))};
}

const std::string& checked_name(const std::string& name, NameKind kind, std::string_view what) {
  if (auto problem = name_problem(name, kind))
    invalid(std::string(what) + " " + quote_arg(name) + ": " + *problem);
  return name;
}

std::uint32_t checked_port(std::uint32_t port, std::string_view what, bool zero_ok) {
  if ((port == 0 && !zero_ok) || port > 255)
    invalid(std::string(what) + ": expected a port number " + (zero_ok ? "0" : "1") + "-255, found " +
            std::to_string(port));
  return port;
}

const std::string& checked_path(const std::string& path, std::string_view what) {
  if (const auto nul = path.find('\0'); nul != std::string::npos)
    invalid(std::string(what) + " " + quote_name(path, 300) + ": holds a NUL byte at byte " +
            std::to_string(nul) + ", where the file name would end; nothing was opened");
  return path;
}

const py::tuple& pickled(const py::tuple& state, std::size_t n, std::string_view what) {
  if (state.size() != n)
    invalid("pickled " + std::string(what) + ": expected " + std::to_string(n) + " items, found " +
            std::to_string(state.size()));
  return state;
}

py::object argument_error_object(const std::string& message) {
  py::object obj = py::reinterpret_borrow<py::object>(g_argument_type_error)(message);
  const Error e(errc::invalid_argument, message);
  set_error_attributes(obj, e);
  return obj;
}

py::object error_object(const Error& e) {
  py::object type = py::reinterpret_borrow<py::object>(g_error_type);
  py::object obj = type(e.what());
  set_error_attributes(obj, e);
  return obj;
}

Gid to_gid(const py::handle& value, std::string_view what) {
  if (py::isinstance<Gid>(value)) return value.cast<Gid>();
  if (py::isinstance<py::str>(value)) {
    const std::string text = value.cast<std::string>();
    auto g = Gid::parse(text);
    if (!g) throw Failure{Error(g.error().code, std::string(what) + ": " + g.error().detail)};
    return g.value();
  }
  if (PyObject_CheckBuffer(value.ptr()) != 0) {
    Py_buffer view;
    if (PyObject_GetBuffer(value.ptr(), &view, PyBUF_SIMPLE) != 0) throw py::error_already_set();
    const auto len = view.len;
    std::array<std::uint8_t, 16> raw{};
    if (len == 16) std::memcpy(raw.data(), view.buf, 16);
    PyBuffer_Release(&view);
    if (len != 16) invalid(std::string(what) + ": a GID is 16 bytes, found " + std::to_string(len));
    return Gid(raw);
  }
  wrong_type(what, "a Gid, its text or its 16 bytes", value);
}

std::optional<Gid> to_optional_gid(const py::handle& value, std::string_view what) {
  if (value.is_none()) return std::nullopt;
  return to_gid(value, what);
}

GidType gid_type_arg(std::string_view name) {
  if (auto t = gid_type_from_string(name)) return *t;
  invalid("GID type: expected ib, roce_v1, roce_v2 or unknown, found " + quote_arg(name));
}

Platform platform_arg(std::string_view name) {
  if (auto p = platform_from_string(name)) return *p;
  invalid("platform: expected linux or darwin, found " + quote_arg(name));
}

QpKind qp_kind_arg(std::string_view name) {
  for (QpKind k : {QpKind::rc, QpKind::uc, QpKind::ud})
    if (to_string(k) == name) return k;
  invalid("QP type: expected rc, uc or ud, found " + quote_arg(name));
}

Profile profile_arg(const py::handle& value) {
  if (py::isinstance<Profile>(value)) return value.cast<Profile>();
  if (py::isinstance<py::str>(value)) return unwrap(parse_profile(value.cast<std::string>()));
  wrong_type("profile", "a Profile or a spec string", value);
}

DriverModel model_arg(const GidTable& table, const std::optional<DriverModel>& model,
                      const std::optional<std::string>& platform) {
  if (model) return *model;
  if (platform) return DriverModel::for_table(table, platform_arg(*platform));
  return DriverModel::for_table(table);
}

}  // namespace gidpolicy::python

PYBIND11_MODULE(_gidpolicy, m) {
  namespace gp = gidpolicy::python;
  m.doc() = "gidpolicy: choose the RDMA GID you advertise and route from, as one decision";
  m.attr("__version__") = GIDPOLICY_VERSION;
  // gidpolicy.Error: the one exception the library's failures raise. Its attributes are set on
  // each instance (error_object): errc, errno, detail, trace.
  gp::g_error_type = PyErr_NewExceptionWithDoc(
      "gidpolicy.Error",
      "A gidpolicy failure: errc (the code's name, or None for a driver errno), errno (the driver's "
      "errno, or None), detail (what exactly was wrong) and trace (a failed selection's Trace, or None).",
      PyExc_Exception, nullptr);
  if (gp::g_error_type == nullptr) throw pybind11::error_already_set();
  m.add_object("Error", pybind11::handle(gp::g_error_type));
  // gidpolicy.ArgumentTypeError: an argument of the wrong type. A TypeError too, so code written
  // for pybind11's plain TypeError keeps catching it; an Error, as every failure of the module is.
  {
    pybind11::tuple bases =
        pybind11::make_tuple(pybind11::handle(gp::g_error_type), pybind11::handle(PyExc_TypeError));
    gp::g_argument_type_error = PyErr_NewExceptionWithDoc(
        "gidpolicy.ArgumentTypeError",
        "An argument of the wrong type (or a missing or unknown one): the message names the function, "
        "the parameter and the type it expects. errc is 'invalid_argument'.",
        bases.ptr(), nullptr);
    if (gp::g_argument_type_error == nullptr) throw pybind11::error_already_set();
    m.add_object("ArgumentTypeError", pybind11::handle(gp::g_argument_type_error));
  }
  pybind11::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const gp::Failure& f) {
      pybind11::object obj = gp::error_object(f.error);
      PyErr_SetObject(gp::g_error_type, obj.ptr());
    } catch (const gp::WrongType& w) {
      pybind11::object obj = gp::argument_error_object(w.message);
      PyErr_SetObject(gp::g_argument_type_error, obj.ptr());
    } catch (const pybind11::cast_error& e) {
      // A value a binding converts itself (value.cast<T>()) was of the wrong type: pybind11 says
      // RuntimeError. The bindings check types first (wrong_type); this is the backstop.
      pybind11::object obj =
          gp::argument_error_object(std::string("an argument of the wrong type: ") + e.what());
      PyErr_SetObject(gp::g_argument_type_error, obj.ptr());
    }
  });
  gp::bind_values(m);
  gp::bind_tables(m);
  gp::bind_profiles(m);
  gp::bind_rtr(m);
  gp::bind_stacks(m);
  gp::bind_fleet(m);
  gp::bind_doctor(m);
  gp::route_argument_errors(m);
}

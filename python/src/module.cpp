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

}  // namespace

void invalid(std::string detail) { throw Failure{Error(errc::invalid_argument, std::move(detail))}; }

py::object error_object(const Error& e) {
  py::object type = py::reinterpret_borrow<py::object>(g_error_type);
  py::object obj = type(e.what());
  const bool ours = e.code.category() == error_category();
  obj.attr("errc") = ours ? py::object(py::str(std::string(to_string(static_cast<errc>(e.code.value())))))
                          : py::object(py::none());
  obj.attr("errno") = ours ? py::object(py::none()) : py::object(py::int_(e.code.value()));
  obj.attr("detail") = py::str(e.detail);
  obj.attr("trace") = e.trace ? py::cast(*e.trace) : py::object(py::none());
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
  invalid(std::string(what) + ": expected a Gid, its text or its 16 bytes, found " +
          std::string(py::str(py::type::of(value).attr("__name__"))));
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
  invalid("profile: expected a Profile or a spec string, found " +
          std::string(py::str(py::type::of(value).attr("__name__"))));
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
  pybind11::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const gp::Failure& f) {
      pybind11::object obj = gp::error_object(f.error);
      PyErr_SetObject(gp::g_error_type, obj.ptr());
    }
  });
  gp::bind_values(m);
  gp::bind_tables(m);
  gp::bind_profiles(m);
  gp::bind_rtr(m);
  gp::bind_stacks(m);
  gp::bind_fleet(m);
  gp::bind_doctor(m);
}

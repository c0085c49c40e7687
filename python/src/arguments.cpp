// Arguments of the wrong type: gidpolicy.ArgumentTypeError instead of pybind11's plain TypeError.
//
// Why here, once, and not in each binding: pybind11 refuses an argument it cannot convert before
// any binding runs (its dispatcher tries each overload, then sets TypeError with every signature
// in one message), so no exception translator sees it. Each pybind11 function object calls the
// dispatcher through its PyMethodDef; route_argument_errors() points every one of the module's at
// dispatch() below, which calls pybind11's dispatcher unchanged and, only when it failed with
// that TypeError (or with a cast_error from a binding's own conversion, which the translator in
// module.cpp raises as ArgumentTypeError), raises ArgumentTypeError naming the function, the
// parameter, the type it expects and the type it was given. A call that succeeds costs one
// comparison.
#include "common.hpp"

#include <Python.h>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy::python {
namespace {

// pybind11 keeps its dispatcher protected; a derived class may name it.
struct DispatcherAccess : py::cpp_function {
  using py::cpp_function::dispatcher;
};

PyCFunction as_cfunction(PyObject* (*f)(PyObject*, PyObject*, PyObject*)) {
  // Through void(*)(), as pybind11 itself does: PyMethodDef holds every calling convention as
  // PyCFunction, and a direct cast between function types draws -Wcast-function-type.
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(f));
}

// One parameter of a pybind11 signature: "port: int = 1".
struct Param {
  std::string name;
  std::string type;
  bool has_default = false;
};

// The text of `s` between its outer parentheses split at top-level ", " (a default value may
// hold brackets, quotes and commas of its own).
std::vector<std::string> split_params(std::string_view sig) {
  std::vector<std::string> out;
  const auto open = sig.find('(');
  if (open == std::string_view::npos) return out;
  int depth = 0;
  char quote = 0;
  std::string cur;
  for (std::size_t i = open + 1; i < sig.size(); ++i) {
    const char c = sig[i];
    if (quote != 0) {
      cur += c;
      if (c == '\\' && i + 1 < sig.size()) {
        cur += sig[++i];
      } else if (c == quote) {
        quote = 0;
      }
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}' || (c == ')' && depth > 0)) {
      --depth;
    } else if (c == ')') {
      if (!cur.empty()) out.push_back(cur);
      return out;
    } else if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
      if (i + 1 < sig.size() && sig[i + 1] == ' ') ++i;
      continue;
    }
    cur += c;
  }
  return out;
}

std::vector<Param> parse_params(std::string_view sig) {
  std::vector<Param> out;
  for (const std::string& piece : split_params(sig)) {
    Param p;
    const auto colon = piece.find(": ");
    const auto eq = piece.find(" = ", colon == std::string::npos ? 0 : colon);
    p.name = piece.substr(0, std::min(colon, eq));
    if (colon != std::string::npos)
      p.type = piece.substr(colon + 2, eq == std::string::npos ? eq : eq - colon - 2);
    p.has_default = eq != std::string::npos;
    out.push_back(std::move(p));
  }
  return out;
}

// A type as the message shows it: without the extension's module path.
std::string shown_type(std::string type) {
  static constexpr std::string_view kPrefix = "gidpolicy._gidpolicy.";
  for (auto at = type.find(kPrefix); at != std::string::npos; at = type.find(kPrefix, at))
    type.erase(at, kPrefix.size());
  return type;
}

std::string type_name(py::handle value) { return py::str(py::type::of(value).attr("__name__")); }

// The text inside "Name[...]" when `type` is that, else nullopt.
std::optional<std::string> inner(std::string_view type, std::string_view name) {
  if (type.size() < name.size() + 2 || type.substr(0, name.size()) != name || type[name.size()] != '[' ||
      type.back() != ']')
    return std::nullopt;
  return std::string(type.substr(name.size() + 1, type.size() - name.size() - 2));
}

// Whether pybind11 would (as far as the type's text tells) convert `value` to `type`; when it
// would not, where (for a list, the element) and what was found. This only words the message:
// pybind11 has already refused the call, so a doubt answers "accepted" and the message falls
// back to the whole signature.
std::optional<std::string> mismatch(const std::string& type, py::handle value) {
  PyObject* v = value.ptr();
  if (type.empty() || type == "object" || type == "Any" || type == "*args" || type == "**kwargs")
    return std::nullopt;
  if (auto in = inner(type, "Optional")) {
    if (value.is_none()) return std::nullopt;
    return mismatch(*in, value);
  }
  const auto found = [&] { return "found " + type_name(value); };
  if (type == "str")
    return PyUnicode_Check(v) || PyBytes_Check(v) || PyByteArray_Check(v) ? std::nullopt
                                                                          : std::optional(found());
  if (type == "bytes") return PyBytes_Check(v) ? std::nullopt : std::optional(found());
  if (type == "int") return !PyFloat_Check(v) && PyIndex_Check(v) ? std::nullopt : std::optional(found());
  if (type == "float") return PyFloat_Check(v) || PyLong_Check(v) ? std::nullopt : std::optional(found());
  if (type == "bool") {
    // pybind11 converts None and anything with a truth value defined as a number.
    const bool numeric = Py_TYPE(v)->tp_as_number != nullptr && Py_TYPE(v)->tp_as_number->nb_bool != nullptr;
    return v == Py_True || v == Py_False || value.is_none() || numeric ? std::nullopt
                                                                       : std::optional(found());
  }
  if (auto in = inner(type, "List")) {
    if (PyUnicode_Check(v) || PyBytes_Check(v) || !PySequence_Check(v)) return found();
    const py::sequence seq = py::reinterpret_borrow<py::sequence>(value);
    for (std::size_t i = 0; i < seq.size(); ++i)
      if (auto bad = mismatch(*in, seq[i]))
        return "[" + std::to_string(i) + "]: expected " + shown_type(*in) + ", " + *bad;
    return std::nullopt;
  }
  if (inner(type, "Tuple"))
    return !PyUnicode_Check(v) && !PyBytes_Check(v) && PySequence_Check(v) ? std::nullopt
                                                                           : std::optional(found());
  if (inner(type, "Dict")) return PyDict_Check(v) ? std::nullopt : std::optional(found());
  if (type.find('.') != std::string::npos && type.find('[') == std::string::npos) {
    // A bound class, named "module.Qualname": an instance of it (or of a subclass).
    for (const py::handle klass : py::type::of(value).attr("__mro__")) {
      const std::string name = std::string(py::str(klass.attr("__module__"))) + "." +
                               std::string(py::str(klass.attr("__qualname__")));
      if (name == type) return std::nullopt;
    }
    return found();
  }
  return std::nullopt;
}

// The names of property setters, which pybind11 leaves unnamed: set by route_member().
std::map<const py::detail::function_record*, std::string>& setter_names() {
  static auto* names =
      new std::map<const py::detail::function_record*, std::string>();  // lives as the module does
  return *names;
}

const py::detail::function_record* record_of(PyObject* capsule) {
  auto* rec = static_cast<const py::detail::function_record*>(
      PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule)));
  if (rec == nullptr) PyErr_Clear();
  return rec;
}

// "Gid.parse()", "PortInfo()" (its constructor), "read_tables()", "fleet.analyze()", and for a
// property's setter "DriverModel.uc_only".
std::string function_name(const py::detail::function_record& rec) {
  if (auto it = setter_names().find(&rec); it != setter_names().end()) return it->second;
  std::string name = std::string(rec.name) + "()";
  const py::handle scope = rec.scope;
  if (!scope) return name;
  if (PyType_Check(scope.ptr())) {
    const std::string klass = py::str(scope.attr("__name__"));
    return name == "__init__()" ? klass + "()" : klass + "." + name;
  }
  if (py::hasattr(scope, "__name__")) {
    std::string module = py::str(scope.attr("__name__"));
    static constexpr std::string_view kRoot = "gidpolicy._gidpolicy";
    if (module.size() > kRoot.size() && module.compare(0, kRoot.size(), kRoot) == 0)
      return module.substr(kRoot.size() + 1) + "." + name;
  }
  return name;
}

// What is wrong with a call pybind11 refused, in one line naming the parameter.
std::string describe_refusal(const py::detail::function_record& rec, const py::tuple& args,
                             const py::handle kwargs) {
  const std::string fn = function_name(rec);
  std::vector<Param> params = parse_params(rec.signature != nullptr ? rec.signature : "");
  // The instance a method or constructor is called on comes first; the message is about the rest.
  const std::size_t skip = (rec.is_method || rec.is_constructor) ? 1 : 0;
  const auto shown = [&] {
    std::string out;
    for (std::size_t i = skip; i < params.size(); ++i) {
      out += (i > skip ? ", " : "") + params[i].name + ": " + shown_type(params[i].type);
      if (params[i].has_default) out += " = ...";
    }
    return "(" + out + ")";
  };
  if (rec.next != nullptr) return fn + ": no overload accepts these arguments";
  if (args.size() > params.size())
    return fn + ": takes at most " + std::to_string(params.size() - skip) + " positional arguments, " +
           std::to_string(args.size() - skip) + " given; expected " + shown();
  std::vector<py::handle> given(params.size());
  for (std::size_t i = 0; i < args.size(); ++i) given[i] = args[i];
  if (kwargs && PyDict_Check(kwargs.ptr())) {
    for (const auto kv : py::reinterpret_borrow<py::dict>(kwargs)) {
      const std::string key = py::str(kv.first);
      std::size_t k = skip;
      while (k < params.size() && params[k].name != key) ++k;
      if (k == params.size()) return fn + ": no parameter named " + quote_arg(key) + "; expected " + shown();
      if (given[k]) return fn + ": " + key + " given twice";
      given[k] = kv.second;
    }
  }
  for (std::size_t i = skip; i < params.size(); ++i)
    if (!given[i] && !params[i].has_default) return fn + ": missing argument " + params[i].name;
  for (std::size_t i = skip; i < params.size(); ++i) {
    if (!given[i]) continue;
    if (auto bad = mismatch(params[i].type, given[i])) {
      const bool element = (*bad)[0] == '[';
      // A setter's one value has no name of its own: the property names it.
      const bool setter = setter_names().count(&rec) != 0;
      return fn + (setter ? "" : ": " + params[i].name) +
             (element ? "" : ": expected " + shown_type(params[i].type) + ", ") + *bad;
    }
  }
  // Every type looked right: an int outside what the C++ parameter holds (a negative port).
  for (std::size_t i = skip; i < params.size(); ++i) {
    if (!given[i] || !PyLong_Check(given[i].ptr()) || params[i].type.find("int") == std::string::npos)
      continue;
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(given[i].ptr(), &overflow);
    if (overflow != 0 || v < 0 || v > 0xffffffffLL)
      return fn + ": " + params[i].name + ": " + std::string(py::str(given[i])) +
             " is outside the range this parameter holds";
  }
  return fn + ": the arguments do not match " + shown();
}

PyObject* dispatch(PyObject* self, PyObject* args, PyObject* kwargs) {
  PyObject* result = DispatcherAccess::dispatcher(self, args, kwargs);
  if (result != nullptr || PyErr_Occurred() == nullptr) return result;
  if (!PyErr_ExceptionMatches(PyExc_TypeError)) return nullptr;  // a gidpolicy.Error, ...: as raised
  py::error_already_set raised;
  const auto* rec = record_of(self);
  if (rec == nullptr) {
    raised.restore();
    return nullptr;
  }
  try {
    const std::string text = py::str(raised.value());
    const std::string fn = function_name(*rec);
    std::string message;
    if (raised.type().is(py::handle(g_argument_type_error))) {
      // A binding's own check (wrong_type) or conversion: named by the function, once (a call
      // from one binding into another is not routed twice through here, but a Python wrapper
      // of ours may be).
      if (text.compare(0, fn.size(), fn) == 0 || text.find("(): ") != std::string::npos) {
        raised.restore();
        return nullptr;
      }
      message = fn + ": " + text;
    } else if (raised.type().is(py::handle(PyExc_TypeError)) &&
               text.find("(): incompatible ") != std::string::npos) {
      message = describe_refusal(*rec, py::reinterpret_borrow<py::tuple>(args), kwargs);
    } else {
      raised.restore();  // another TypeError (a Python callback's own): as raised
      return nullptr;
    }
    const py::object error = argument_error_object(message);
    PyErr_SetObject(g_argument_type_error, error.ptr());
  } catch (py::error_already_set& e) {
    e.restore();  // wording the message failed: that error, rather than none
  }
  return nullptr;
}

// Point a pybind11 function (possibly a method's wrapper) at dispatch(); `setter` names a
// property's setter.
void route(py::handle fn, const std::string& setter = "") {
  if (fn.ptr() != nullptr && PyInstanceMethod_Check(fn.ptr())) fn = PyInstanceMethod_Function(fn.ptr());
  if (fn.ptr() == nullptr || !PyCFunction_Check(fn.ptr())) return;
  PyMethodDef* def = reinterpret_cast<PyCFunctionObject*>(fn.ptr())->m_ml;
  if (def->ml_meth != as_cfunction(&DispatcherAccess::dispatcher)) return;  // not pybind11's, or done
  def->ml_meth = as_cfunction(&dispatch);
  if (!setter.empty())
    if (const auto* rec = record_of(PyCFunction_GetSelf(fn.ptr()))) setter_names()[rec] = setter;
}

void route_member(const std::string& klass, const std::string& name, py::handle member) {
  PyObject* p = member.ptr();
  if (PyObject_TypeCheck(p, &PyProperty_Type) != 0) {
    route(member.attr("fget"));
    route(member.attr("fset"), klass + "." + name);
  } else if (PyObject_TypeCheck(p, &PyStaticMethod_Type) != 0) {
    route(member.attr("__func__"));
  } else {
    route(member);
  }
}

void route_namespace(py::handle module) {
  const std::string name = py::str(module.attr("__name__"));
  for (const auto kv : py::reinterpret_borrow<py::dict>(module.attr("__dict__"))) {
    const py::handle value = kv.second;
    if (PyModule_Check(value.ptr())) {
      // A submodule of ours (fleet); never a module it merely imported.
      const std::string sub = py::str(value.attr("__name__"));
      if (sub.compare(0, name.size() + 1, name + ".") == 0) route_namespace(value);
    } else if (PyType_Check(value.ptr())) {
      if (std::string(py::str(value.attr("__module__"))).compare(0, 9, "gidpolicy") != 0) continue;
      // tp_dict, the class's own dict (its __dict__ is a read-only proxy of it).
      const py::handle members(reinterpret_cast<PyTypeObject*>(value.ptr())->tp_dict);
      const std::string klass = py::str(value.attr("__name__"));
      for (const auto member : py::reinterpret_borrow<py::dict>(members))
        route_member(klass, py::str(member.first), member.second);
    } else {
      route(value);
    }
  }
}

}  // namespace

void route_argument_errors(py::module_& m) { route_namespace(m); }

}  // namespace gidpolicy::python

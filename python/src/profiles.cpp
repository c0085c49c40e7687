// Profiles and plans: the spec grammar, the registry of built-in specs, Plan with its Selection,
// Trace and Agreement.
#include "common.hpp"

#include <gidpolicy/agreement.hpp>
#include <gidpolicy/plan.hpp>
#include <gidpolicy/policies/registry.hpp>
#include <gidpolicy/trace.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gidpolicy::python {
namespace {

EntryVerdict verdict_arg(std::string_view name) {
  for (unsigned v = 0; v <= static_cast<unsigned>(EntryVerdict::not_requested); ++v)
    if (to_string(static_cast<EntryVerdict>(v)) == name) return static_cast<EntryVerdict>(v);
  invalid("verdict: no verdict is named " + quote_arg(name));
}

std::string_view spec_kind_name(SpecKind k) {
  switch (k) {
    case SpecKind::policy:
      return "policy";
    case SpecKind::profile:
      return "profile";
    case SpecKind::combinator:
      return "combinator";
  }
  return "policy";
}

// A row of the registry as a plain Python object (the row's views point into static storage, but
// a dict of strs keeps the module's values free of lifetimes).
py::dict spec_row(const BuiltinSpec& s) {
  py::dict d;
  d["name"] = std::string(s.name);
  std::vector<std::string> aliases(s.aliases.begin(), s.aliases.end());
  d["aliases"] = aliases;
  d["kind"] = std::string(spec_kind_name(s.kind));
  d["grammar"] = std::string(s.grammar);
  d["summary"] = std::string(s.summary);
  py::list options;
  for (const auto& o : s.options) {
    py::dict od;
    od["key"] = std::string(o.key);
    od["value"] = std::string(o.value);
    od["repeats"] = o.repeats;
    options.append(od);
  }
  d["options"] = options;
  std::vector<std::string> examples(s.examples.begin(), s.examples.end());
  d["examples"] = examples;
  d["literal_source"] = s.literal_source ? py::object(py::int_(*s.literal_source)) : py::object(py::none());
  d["policy_alone"] =
      s.policy_alone.empty() ? py::object(py::none()) : py::object(py::str(std::string(s.policy_alone)));
  return d;
}

}  // namespace

void bind_profiles(py::module_& m) {
  py::class_<TraceStep>(m, "TraceStep", "One entry a policy looked at, and its verdict.")
      .def_readonly("index", &TraceStep::index)
      .def_property_readonly(
          "verdict", [](const TraceStep& s) { return std::string(to_string(s.verdict)); },
          "'chosen', 'candidate', 'empty', 'link_local', ...")
      .def_property_readonly("accepted", [](const TraceStep& s) { return is_accepted(s.verdict); })
      .def_readonly("note", &TraceStep::note)
      .def("__eq__", [](const TraceStep& a, const TraceStep& b) { return a == b; })
      .def(py::pickle(
          [](const TraceStep& s) {
            return py::make_tuple(s.index, std::string(to_string(s.verdict)), s.note);
          },
          [](const py::tuple& t) {
            pickled(t, 3, "TraceStep");
            return TraceStep{t[0].cast<std::uint32_t>(), verdict_arg(t[1].cast<std::string>()),
                             t[2].cast<std::string>()};
          }))
      .def("__repr__", [](const TraceStep& s) {
        return "TraceStep(" + std::to_string(s.index) + ", " + std::string(to_string(s.verdict)) + ")";
      });
  py::class_<Trace::Attempt>(m, "TraceAttempt", "What one policy (one alternative of first()) looked at.")
      .def_readonly("policy", &Trace::Attempt::policy)
      .def_readonly("steps", &Trace::Attempt::steps)
      .def_readonly("error", &Trace::Attempt::error, "'' when this attempt succeeded.")
      .def("__eq__", [](const Trace::Attempt& a, const Trace::Attempt& b) { return a == b; })
      .def(py::pickle([](const Trace::Attempt& a) { return py::make_tuple(a.policy, a.steps, a.error); },
                      [](const py::tuple& t) {
                        pickled(t, 3, "TraceAttempt");
                        return Trace::Attempt{t[0].cast<std::string>(), t[1].cast<std::vector<TraceStep>>(),
                                              t[2].cast<std::string>()};
                      }))
      .def("__repr__", [](const Trace::Attempt& a) {
        return "TraceAttempt(" + a.policy + ", " + std::to_string(a.steps.size()) + " steps" +
               (a.error.empty() ? "" : ", failed") + ")";
      });
  py::class_<Trace>(m, "Trace", "Why each candidate entry was accepted or rejected.")
      .def_readonly("attempts", &Trace::attempts)
      .def("__str__", &Trace::to_string)
      .def("__eq__", [](const Trace& a, const Trace& b) { return a == b; })
      .def(py::pickle([](const Trace& t) { return py::make_tuple(t.attempts); },
                      [](const py::tuple& t) {
                        pickled(t, 1, "Trace");
                        return Trace{t[0].cast<std::vector<Trace::Attempt>>()};
                      }))
      .def("__bool__", [](const Trace& t) { return !t.attempts.empty(); })
      .def("__repr__",
           [](const Trace& t) { return "Trace(" + std::to_string(t.attempts.size()) + " attempts)"; });

  py::class_<Selection>(m, "Selection", "The entry a policy chose (and, when asked, why).")
      .def_readonly("entry", &Selection::entry)
      .def_readonly("trace", &Selection::trace)
      .def_property_readonly("sgid_index", &Selection::sgid_index)
      .def("__repr__", [](const Selection& s) {
        return "Selection(index=" + std::to_string(s.entry.index) + ", gid=" + s.entry.gid.to_string() + ")";
      });

  py::class_<Agreement>(m, "Agreement", "Whether the entry at an sgid_index holds the advertised GID.")
      .def_readonly("agrees", &Agreement::agrees)
      .def_readonly("sgid_index", &Agreement::sgid_index)
      .def_readonly("advertised", &Agreement::advertised)
      .def_readonly("at_index", &Agreement::at_index,
                    "The entry at sgid_index, or None (outside or unlisted).")
      .def_readonly("advertised_at", &Agreement::advertised_at,
                    "The lowest index holding the advertised GID.")
      .def_readonly("explanation", &Agreement::explanation)
      .def("__bool__", [](const Agreement& a) { return a.agrees; })
      .def(
          "check", [](const Agreement& a) { unwrap(a.to_result()); },
          "Raise Error (disagreement) with the explanation unless the two agree.")
      .def("__repr__", [](const Agreement& a) {
        return "Agreement(sgid_index=" + std::to_string(a.sgid_index) +
               ", advertised=" + a.advertised.to_string() + (a.agrees ? ", agrees)" : ", DISAGREES)");
      });

  py::class_<Plan>(m, "Plan", "What a behaviour does on one table: what it advertises, where it routes from.")
      .def_readonly("selection", &Plan::selection)
      .def_readonly("sgid_index", &Plan::sgid_index)
      .def_readonly("agreement", &Plan::agreement)
      .def_property_readonly("agrees", &Plan::agrees)
      .def_property_readonly(
          "advertised", [](const Plan& p) { return p.selection.entry.gid; },
          "The GID this side advertises (selection.entry.gid).")
      .def_property_readonly("trace", [](const Plan& p) { return p.selection.trace; })
      .def("__repr__", [](const Plan& p) {
        return "Plan(advertise " + p.selection.entry.gid.to_string() + " from index " +
               std::to_string(p.selection.entry.index) + ", route from " + std::to_string(p.sgid_index) +
               (p.agrees() ? ", agrees)" : ", DISAGREES)");
      });

  py::class_<Profile>(m, "Profile",
                      "A behaviour: a policy and the rule that turns its pick into an sgid_index.")
      .def(py::init([](const std::string& spec) { return unwrap(parse_profile(spec)); }), py::arg("spec"))
      .def_static(
          "parse", [](const std::string& spec) { return unwrap(parse_profile(spec)); }, py::arg("spec"),
          "Parse a spec ('auto', 'jaccl', 'first(validated:index=7|auto)', 'ds4@sgid=1'). Raises Error "
          "(invalid_policy_spec) naming the position and token.")
      .def_property_readonly("spec", &Profile::spec, "The spec Profile.parse reads back.")
      .def_property_readonly(
          "literal_source",
          [](const Profile& p) -> std::optional<int> {
            if (!p.source.is_literal()) return std::nullopt;
            return p.source.literal_index();
          },
          "The literal sgid_index it routes from (jaccl: 1), or None when it routes from its pick.")
      .def(
          "plan",
          [](const Profile& p, const GidTable& table, bool trace) {
            return unwrap(p.plan(table, {.trace = trace}));
          },
          py::arg("table"), py::arg("trace") = false,
          "Select on the table. Raises Error (no_candidate, ...) with the trace when nothing is acceptable; "
          "a "
          "disagreement is in Plan.agreement, not an error.")
      .def("__str__", &Profile::spec)
      .def("__repr__", [](const Profile& p) { return "Profile('" + p.spec() + "')"; })
      .def("__eq__", [](const Profile& a, const Profile& b) { return a == b; })
      .def("__hash__", [](const Profile& p) { return std::hash<std::string>{}(p.spec()); })
      .def(pickle_by_constructor<Profile>([](const Profile& p) { return py::make_tuple(p.spec()); }));

  m.def(
      "parse_profile", [](const std::string& spec) { return unwrap(parse_profile(spec)); }, py::arg("spec"),
      "Profile.parse(spec).");
  m.def("profiles", &profiles::all,
        "The named behaviours in the order `gidpolicy check` shows them: jaccl, jaccl-legacy, jaccl-fixed, "
        "ds4, "
        "ds4-linux, auto.");
  m.def(
      "builtin_specs",
      [] {
        py::list out;
        for (const auto& s : kBuiltinSpecs) out.append(spec_row(s));
        return out;
      },
      "Every built-in spec name of the grammar, one dict per row: name, aliases, kind, grammar, summary, "
      "options, examples, literal_source, policy_alone.");
  m.def(
      "find_builtin_spec",
      [](const std::string& name) -> py::object {
        const BuiltinSpec* s = find_builtin_spec(name);
        if (s == nullptr) return py::none();
        return spec_row(*s);
      },
      py::arg("name"), "The registry row named `name` (or with it as an alias), or None.");
  m.def(
      "check_agreement",
      [](const GidTable& table, const py::object& advertised, std::uint32_t sgid_index) {
        return check_agreement(table, to_gid(advertised, "advertised"), sgid_index);
      },
      py::arg("table"), py::arg("advertised"), py::arg("sgid_index"),
      "Does the entry at sgid_index hold the advertised GID (16 bytes compared)?");
}

}  // namespace gidpolicy::python

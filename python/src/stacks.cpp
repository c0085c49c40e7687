// Stacks: each RDMA stack's own pick, how it reads a pinned index, and the `env` settings.
#include "common.hpp"

#include <gidpolicy/env.hpp>
#include <gidpolicy/stacks.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gidpolicy::python {
namespace {

const StackInfo& stack_arg(std::string_view name) {
  if (const StackInfo* s = find_stack(name)) return *s;
  invalid("stack: expected one of " + stack_names(StackSet::all) + ", found " + quote_arg(name));
}

std::string env_shape(EnvShape e) {
  switch (e) {
    case EnvShape::per_process_variable:
      return "per_process_variable";
    case EnvShape::per_port_args:
      return "per_port_args";
    case EnvShape::one_device_per_process:
      return "one_device_per_process";
    case EnvShape::jaccl_device_file:
      return "jaccl_device_file";
  }
  return "";
}

std::string pin_rule(PinRule r) {
  switch (r) {
    case PinRule::nccl_param:
      return "nccl_param";
    case PinRule::nvshmem_param:
      return "nvshmem_param";
    case PinRule::ucx_config:
      return "ucx_config";
    case PinRule::atoi:
      return "atoi";
    case PinRule::atoi_fallback:
      return "atoi_fallback";
    case PinRule::integer_param:
      return "integer_param";
    case PinRule::unchecked:
      return "unchecked";
  }
  return "";
}

std::string setting_effect(SettingEffect e) {
  switch (e) {
    case SettingEffect::family:
      return "family";
    case SettingEffect::range:
      return "range";
    case SettingEffect::roce_version:
      return "roce_version";
    case SettingEffect::reachability:
      return "reachability";
    case SettingEffect::not_in_model:
      return "not_in_model";
    case SettingEffect::not_modelled:
      return "not_modelled";
  }
  return "";
}

py::object or_none(std::string_view v) {
  return v.empty() ? py::object(py::none()) : py::str(std::string(v));
}

py::list link_list(const LinkLayers& l) {
  py::list out;
  if (l.infiniband) out.append("infiniband");
  if (l.ethernet) out.append("ethernet");
  if (l.thunderbolt) out.append("thunderbolt");
  return out;
}

py::dict stack_dict(const StackInfo& s) {
  py::dict d;
  d["name"] = std::string(s.name);
  d["title"] = std::string(s.title);
  d["version"] = std::string(s.version);
  d["source"] = std::string(s.source);
  d["pin"] = s.pins.empty() ? std::string() : std::string(s.pins.front().name);
  py::list pins;
  for (const PinVariable& p : s.pins) pins.append(py::make_tuple(std::string(p.name), pin_rule(p.rule)));
  d["pins"] = pins;
  py::list settings;
  for (const SettingVariable& v : s.settings)
    settings.append(py::make_tuple(std::string(v.name), setting_effect(v.effect)));
  d["settings"] = settings;
  d["spec"] = or_none(s.automatic);
  d["predicted"] = s.predicted;
  d["per_process"] = s.env == EnvShape::per_process_variable;
  d["env"] = env_shape(s.env);
  py::dict launch;
  launch["choice"] = std::string(s.launch.choice);
  launch["device"] = or_none(s.launch.device);
  launch["port"] = or_none(s.launch.port);
  launch["read_first"] = or_none(s.launch.read_first);
  d["launch"] = launch;
  launch["choice_reader"] = s.launch.choice_reader == ChoiceReader::stack ? "stack" : "patched_fork";
  d["runs_on"] = link_list(s.runs_on);
  py::list paths;
  for (const StackPath& p : s.paths) {
    py::dict pd;
    pd["spec"] = std::string(p.spec);
    pd["runs_on"] = link_list(p.runs_on);
    pd["automatic"] = p.automatic;
    pd["assumes"] = or_none(p.assumes);
    paths.append(pd);
  }
  d["paths"] = paths;
  d["summary"] = std::string(s.summary);
  return d;
}

// The docstrings that name the table's variables, built from it once.
const char* read_pin_doc() {
  static const std::string doc = [] {
    std::string names;
    for (const auto v : pin_variables()) names += (names.empty() ? "" : ", ") + std::string(v);
    return "The readings of VARIABLE=TEXT (" + names + "); [] for an unknown variable.";
  }();
  return doc.c_str();
}

// A mapping of variable -> value (os.environ, a dict) as the launch's settings, "the environment"
// being their origin; only the variables some stack reads are kept (launch_variables()).
std::vector<LaunchSetting> launch_settings_arg(const py::object& mapping) {
  std::vector<LaunchSetting> out;
  const auto names = launch_variables();
  for (const std::string_view n : names) {
    const py::str key{std::string(n)};
    if (!py::bool_(mapping.attr("__contains__")(key))) continue;
    out.push_back(
        {std::string(n), py::cast<std::string>(mapping.attr("__getitem__")(key)), "the environment"});
  }
  return out;
}

const char* plan_env_doc() {
  static const std::string doc =
      "The settings that make each stack (" + stack_names(StackSet::all) +
      ") use the GID `profile` picks on this host's tables. settings: a mapping of "
      "the launch's variables (os.environ, a dict), which decide each stack's own "
      "choice and the ports its device list opens; with settings, a stack whose own "
      "choice is already the pick on every port it uses gets no pin unless pin=True. "
      "Neither given: every stack is pinned, as before.";
  return doc.c_str();
}

}  // namespace

void bind_stacks(py::module_& m) {
  m.def(
      "stacks",
      [] {
        py::list out;
        for (const auto& s : stack_catalogue()) out.append(stack_dict(s));
        return out;
      },
      "Every stack of the stack table, one dict each: name, title, version, source, pin (its first pin "
      "variable, '' when none), pins ((variable, rule) pairs), settings ((variable, effect) pairs: the other "
      "variables that steer it), spec (its automatic choice; None when not "
      "modelled), predicted, per_process, env (the shape of its settings), launch (with choice_reader: "
      "'stack', or 'patched_fork' when only a patched fork reads its choice), runs_on, paths (each named "
      "profile that models it: spec, runs_on, automatic), summary.");
  m.def(
      "stacks_on",
      [](const GidTable& table) {
        std::vector<std::string> out;
        for (const auto& s : stack_catalogue())
          if (s.runs_on.has(table.port().link_layer)) out.emplace_back(s.name);
        return out;
      },
      py::arg("table"),
      "The names of the stacks that run on the table's link layer, in table order ([] where none does).");
  m.def(
      "unsteerable_failure",
      [](const std::string& name, const GidTable& table) {
        return unsteerable_failure(stack_arg(name), table, DriverModel::for_table(table));
      },
      py::arg("stack"), py::arg("table"),
      "For a stack no setting steers as it ships (JACCL, exo): why its own choice fails on the table and "
      "what must hold on the host; None when it works there, does not run there, or a setting steers it.");
  m.def(
      "stack_profile",
      [](const std::string& name, std::optional<std::int64_t> pinned) {
        return unwrap(stack_profile(stack_arg(name).id, pinned));
      },
      py::arg("stack"), py::arg("pinned") = py::none(),
      "The stack's own choice as a Profile, with nothing set or with its pin set to `pinned`. Raises Error "
      "(not_supported) for a stack whose own choice is not modelled (llama.cpp) without `pinned`.");
  m.def(
      "stack_profile_on",
      [](const std::string& name, const std::string& link_layer, std::optional<std::int64_t> pinned) {
        auto l = link_layer_from_string(link_layer);
        if (!l)
          invalid("link_layer: expected infiniband, ethernet or thunderbolt, found " + quote_arg(link_layer));
        return unwrap(stack_profile_on(stack_arg(name).id, *l, pinned));
      },
      py::arg("stack"), py::arg("link_layer"), py::arg("pinned") = py::none(),
      "stack_profile for the path the stack takes on `link_layer` ('ds4' on 'thunderbolt' is its macOS "
      "scan, on 'ethernet' its Linux RoCE path). Raises Error (not_supported) where it does not run.");

  py::class_<StackPrediction>(m, "StackPrediction",
                              "What a stack would pick on one port and whether it works.")
      .def_readonly("chose", &StackPrediction::chose, "False: the stack refuses the port.")
      .def_readonly("index", &StackPrediction::index)
      .def_readonly("gid", &StackPrediction::gid)
      .def_readonly("works", &StackPrediction::works)
      .def_readonly("err", &StackPrediction::err)
      .def_readonly("outcome", &StackPrediction::outcome)
      .def_readonly("why", &StackPrediction::why)
      .def_readonly("fix", &StackPrediction::fix, "The index to pin when its own choice does not work.")
      .def("__repr__", [](const StackPrediction& p) { return "StackPrediction(" + p.outcome + ")"; });
  m.def(
      "predict_stack",
      [](const std::string& name, const GidTable& table, const py::object& settings) {
        const StackId id = stack_arg(name).id;
        if (settings.is_none()) return unwrap(predict_stack(id, table));
        // The launch's settings (a mapping such as os.environ), read as the stack reads them.
        const StackLaunch launch = read_launch(id, launch_settings_arg(settings));
        if (!launch.uses(table.port().device, table.port().port)) {
          StackPrediction p;
          p.outcome = "not used: " + launch.devices->variable + " leaves this port out";
          p.why = p.outcome;
          return p;
        }
        if (launch.refused) {
          StackPrediction p;
          p.outcome = "does not start: " + launch.pin_variable + " " + *launch.refused;
          p.why = p.outcome;
          return p;
        }
        auto prof = unwrap(stack_profile_for(id, table, launch));
        return predict_profile(prof, table, DriverModel::for_link_layer(table.port().link_layer));
      },
      py::arg("stack"), py::arg("table"), py::arg("settings") = py::none(),
      "The stack's own pick on the table, against a healthy like peer. settings: a mapping of the\n"
      "launch's variables (os.environ, a dict), each read as the stack reads it (its pin, device\n"
      "list, NCCL's family/range/RoCE version); None (the default) predicts its defaults. A port its\n"
      "device list leaves out is 'not used' (chose False).");
  m.def(
      "predict_profile",
      [](const py::object& profile, const GidTable& table, const std::optional<DriverModel>& model,
         const std::optional<std::string>& platform) {
        return predict_profile(profile_arg(profile), table, model_arg(table, model, platform));
      },
      py::arg("profile"), py::arg("table"), py::arg("model") = py::none(), py::arg("platform") = py::none(),
      "predict_stack for any profile (a stack's choice given as a Profile or spec).");

  py::class_<PinReading>(m, "PinReading", "How one stack version reads a pinned index's text.")
      .def_property_readonly("stack",
                             [](const PinReading& r) { return std::string(stack_row(r.stack).name); })
      .def_readonly("reader", &PinReading::reader)
      .def_readonly("value", &PinReading::value, "The index it then uses; None: its automatic choice.")
      .def_readonly("refused", &PinReading::refused)
      .def("__repr__", [](const PinReading& r) {
        const std::string what = r.refused ? "refused"
                                 : r.value ? "index " + std::to_string(*r.value)
                                           : "automatic";
        return "PinReading(" + std::string(stack_row(r.stack).name) + ", " + what + ")";
      });
  m.def("read_pin", &read_pin, py::arg("variable"), py::arg("text"), py::arg("mc_gid_index_set") = false,
        read_pin_doc());
  py::class_<PinJudgement>(m, "PinJudgement", "A pin's verdict on one port.")
      .def_property_readonly(
          "status", [](const PinJudgement& j) { return std::string(to_string(j.status)); },
          "'fine', 'stale' or 'fails'.")
      .def_readonly("summary", &PinJudgement::summary)
      .def_readonly("err", &PinJudgement::err)
      .def_readonly("right_index", &PinJudgement::right_index)
      .def("__repr__", [](const PinJudgement& j) {
        return "PinJudgement(" + std::string(to_string(j.status)) +
               (j.right_index ? ", right_index=" + std::to_string(*j.right_index) : "") + ")";
      });
  m.def(
      "judge_pin",
      [](const PinReading& reading, const GidTable& table, const std::optional<DriverModel>& model,
         const std::optional<std::string>& platform) {
        return judge_pin(reading, table, model_arg(table, model, platform));
      },
      py::arg("reading"), py::arg("table"), py::arg("model") = py::none(), py::arg("platform") = py::none());

  py::class_<EnvSetting>(m, "EnvSetting", "One variable to set.")
      .def(py::init([](std::string name, std::string value) {
             return EnvSetting{std::move(name), std::move(value)};
           }),
           py::arg("name"), py::arg("value"))
      .def_readonly("name", &EnvSetting::name)
      .def_readonly("value", &EnvSetting::value)
      .def("__eq__", [](const EnvSetting& a, const EnvSetting& b) { return a == b; })
      .def(pickle_by_constructor<EnvSetting>(
          [](const EnvSetting& s) { return py::make_tuple(s.name, s.value); }))
      .def("__repr__", [](const EnvSetting& s) { return "EnvSetting(" + s.name + "=" + s.value + ")"; });
  py::class_<EnvPlan>(m, "EnvPlan", "What `gidpolicy env` prints for one host.")
      .def(py::init([](std::vector<EnvSetting> settings, std::vector<std::string> args,
                       std::vector<std::string> why, std::vector<std::string> conflicts) {
             return EnvPlan{std::move(settings), std::move(args), std::move(why), std::move(conflicts)};
           }),
           py::arg("settings") = std::vector<EnvSetting>{}, py::arg("args") = std::vector<std::string>{},
           py::arg("why") = std::vector<std::string>{}, py::arg("conflicts") = std::vector<std::string>{})
      .def_readonly("settings", &EnvPlan::settings)
      .def("__eq__",
           [](const EnvPlan& a, const EnvPlan& b) {
             return std::tie(a.settings, a.args, a.why, a.conflicts) ==
                    std::tie(b.settings, b.args, b.why, b.conflicts);
           })
      .def(pickle_by_constructor<EnvPlan>(
          [](const EnvPlan& p) { return py::make_tuple(p.settings, p.args, p.why, p.conflicts); }))
      .def_property_readonly(
          "variables",
          [](const EnvPlan& p) {
            py::dict d;
            for (const auto& s : p.settings) d[py::str(s.name)] = s.value;
            return d;
          },
          "The settings as a dict, name to value.")
      .def_readonly("args", &EnvPlan::args)
      .def_readonly("why", &EnvPlan::why)
      .def_readonly("conflicts", &EnvPlan::conflicts, "Non-empty: no one value is right; each says why.")
      .def("__repr__", [](const EnvPlan& p) {
        std::string names;
        for (const auto& s : p.settings) names += (names.empty() ? "" : ", ") + s.name;
        return "EnvPlan(" + names +
               (p.conflicts.empty() ? "" : "; " + std::to_string(p.conflicts.size()) + " conflicts") + ")";
      });
  m.def(
      "plan_env",
      [](const std::vector<std::string>& stacks, const std::vector<GidTable>& tables,
         const py::object& profile, const py::object& settings, const std::optional<bool>& pin) {
        if (settings.is_none() && !pin)
          return plan_env(unwrap(parse_env_stacks(stacks)), tables, profile_arg(profile));
        EnvOptions o;
        if (!settings.is_none()) o.settings = launch_settings_arg(settings);
        o.pin = pin.value_or(false);
        return plan_env(unwrap(parse_env_stacks(stacks)), tables, profile_arg(profile), std::nullopt, o);
      },
      py::arg("stacks"), py::arg("tables"), py::arg("profile") = "auto", py::arg("settings") = py::none(),
      py::arg("pin") = py::none(), plan_env_doc());
  m.def(
      "render_dotenv", [](const EnvPlan& plan) { return unwrap(render_dotenv(plan)); }, py::arg("plan"),
      "The plan as a dotenv file. Raises Error (invalid_argument) for a value it cannot hold.");
}

}  // namespace gidpolicy::python

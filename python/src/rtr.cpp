// RTR: driver models, judge_rtr / predict_rtr, the errno explanation (diagnose) and `check`'s rows.
#include "common.hpp"

#include <gidpolicy/check.hpp>
#include <gidpolicy/diagnose.hpp>
#include <gidpolicy/driver_model.hpp>
#include <gidpolicy/rtr.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gidpolicy::python {
namespace {

// Every field of a DriverModel, for == and pickling (the struct has no operator==).
auto model_fields(const DriverModel& d) {
  return std::tie(d.name, d.platform, d.enodata_for_empty_slot, d.grh_required_on_roce,
                  d.family_mismatch_is_einval, d.link_local_source_times_out,
                  d.roce_version_mismatch_times_out, d.uc_only, d.max_qps_per_device, d.index0_times_out,
                  d.source_must_be_ipv4_mapped, d.absent_source_is_einval, d.grh_required,
                  d.uc_waits_for_receive);
}

std::vector<std::string> passed_rules(const RtrVerdict& v) {
  std::vector<std::string> out;
  for (unsigned r = 0; r <= static_cast<unsigned>(RtrRule::qp_limit); ++r)
    if ((v.passed & rule_bit(static_cast<RtrRule>(r))) != 0)
      out.emplace_back(to_string(static_cast<RtrRule>(r)));
  return out;
}

std::optional<GidType> optional_type(const std::optional<std::string>& name) {
  if (!name) return std::nullopt;
  return gid_type_arg(*name);
}

// A peer's Mtu from bytes (None: not sent).
std::optional<Mtu> mtu_arg(std::optional<unsigned> bytes) {
  if (!bytes) return std::nullopt;
  const auto m = mtu_from_bytes(*bytes);
  if (!m) invalid("peer_mtu: expected 256, 512, 1024, 2048 or 4096, found " + std::to_string(*bytes));
  return m;
}

}  // namespace

void bind_rtr(py::module_& m) {
  m.def(
      "host_platform", [] { return std::string(to_string(host_platform())); },
      "Whose errno numbering this build's libibverbs uses: 'linux' or 'darwin'.");
  m.def(
      "errno_name",
      [](int err, const std::string& platform) { return errno_name(platform_arg(platform), err); },
      py::arg("err"), py::arg("platform") = "linux",
      "'EINVAL', 'ENODATA', ... on that platform; else 'errno N'.");

  py::class_<DriverModel>(m, "DriverModel", "A driver's behaviour at QP creation and INIT->RTR, as switches.")
      .def_static("linux_kernel", &DriverModel::linux_kernel)
      .def_static("apple_thunderbolt", &DriverModel::apple_thunderbolt)
      .def_static(
          "by_name",
          [](const std::string& name) {
            auto model = DriverModel::by_name(name);
            if (!model)
              invalid("driver model: expected linux or apple_thunderbolt, found " + quote_arg(name));
            return *model;
          },
          py::arg("name"))
      .def_static(
          "for_table",
          [](const GidTable& t, const std::optional<std::string>& platform) {
            return model_arg(t, std::nullopt, platform);
          },
          py::arg("table"), py::arg("platform") = py::none(),
          "The stock model of `platform` when given, else the one the port's link layer implies.")
      .def_readwrite("name", &DriverModel::name)
      .def_property(
          "platform", [](const DriverModel& d) { return std::string(to_string(d.platform)); },
          [](DriverModel& d, const std::string& p) { d.platform = platform_arg(p); })
      .def_readwrite("enodata_for_empty_slot", &DriverModel::enodata_for_empty_slot)
      .def_readwrite("grh_required_on_roce", &DriverModel::grh_required_on_roce)
      .def_readwrite("family_mismatch_is_einval", &DriverModel::family_mismatch_is_einval)
      .def_readwrite("link_local_source_times_out", &DriverModel::link_local_source_times_out)
      .def_readwrite("roce_version_mismatch_times_out", &DriverModel::roce_version_mismatch_times_out)
      .def_readwrite("uc_only", &DriverModel::uc_only)
      .def_readwrite("max_qps_per_device", &DriverModel::max_qps_per_device)
      .def_readwrite("index0_times_out", &DriverModel::index0_times_out)
      .def_readwrite("source_must_be_ipv4_mapped", &DriverModel::source_must_be_ipv4_mapped)
      .def_readwrite("absent_source_is_einval", &DriverModel::absent_source_is_einval)
      .def_readwrite("grh_required", &DriverModel::grh_required)
      .def_readwrite("uc_waits_for_receive", &DriverModel::uc_waits_for_receive)
      .def("__repr__", [](const DriverModel& d) { return "DriverModel('" + d.name + "')"; })
      .def("__eq__",
           [](const DriverModel& a, const DriverModel& b) { return model_fields(a) == model_fields(b); })
      .def(py::pickle(
          [](const DriverModel& d) {
            return py::make_tuple(d.name, std::string(to_string(d.platform)), d.enodata_for_empty_slot,
                                  d.grh_required_on_roce, d.family_mismatch_is_einval,
                                  d.link_local_source_times_out, d.roce_version_mismatch_times_out, d.uc_only,
                                  d.max_qps_per_device, d.index0_times_out, d.source_must_be_ipv4_mapped,
                                  d.absent_source_is_einval, d.grh_required, d.uc_waits_for_receive);
          },
          [](const py::tuple& t) {
            pickled(t, 14, "DriverModel");
            DriverModel d;
            d.name = t[0].cast<std::string>();
            d.platform = platform_arg(t[1].cast<std::string>());
            for (auto [i, field] : {std::pair{2, &d.enodata_for_empty_slot},
                                    {3, &d.grh_required_on_roce},
                                    {4, &d.family_mismatch_is_einval},
                                    {5, &d.link_local_source_times_out},
                                    {6, &d.roce_version_mismatch_times_out},
                                    {7, &d.uc_only},
                                    {9, &d.index0_times_out},
                                    {10, &d.source_must_be_ipv4_mapped},
                                    {11, &d.absent_source_is_einval},
                                    {12, &d.grh_required},
                                    {13, &d.uc_waits_for_receive}})
              *field = t[static_cast<std::size_t>(i)].cast<bool>();
            d.max_qps_per_device = t[8].cast<unsigned>();
            return d;
          }));

  py::class_<RtrVerdict>(m, "RtrVerdict", "How an INIT->RTR would end, and the rule that decided.")
      .def_property_readonly(
          "outcome", [](const RtrVerdict& v) { return std::string(to_string(v.outcome)); },
          "'ok', 'error', 'times_out' or 'unknown'.")
      .def_readonly("err", &RtrVerdict::err, "The platform's errno for error and times_out, else 0.")
      .def_readonly("reason", &RtrVerdict::reason)
      .def_property_readonly("rule", [](const RtrVerdict& v) { return std::string(to_string(v.rule)); })
      .def_property_readonly("passed", &passed_rules, "The rules the request was checked against and passed.")
      .def(
          "to_string", [](const RtrVerdict& v, const std::string& p) { return v.to_string(platform_arg(p)); },
          py::arg("platform") = "linux")
      .def("__repr__", [](const RtrVerdict& v) {
        return "RtrVerdict(" + std::string(to_string(v.outcome)) +
               (v.err != 0 ? " " + std::to_string(v.err) : "") + ", " + std::string(to_string(v.rule)) + ")";
      });

  py::class_<RtrPrediction>(m, "RtrPrediction", "What an RTR built by RtrBuilder would do.")
      .def_property_readonly(
          "refused",
          [](const RtrPrediction& p) {
            return p.refused ? error_object(*p.refused) : py::object(py::none());
          },
          "The builder's refusal as a (not raised) Error, or None when modify_qp would be called.")
      .def_readonly("verdict", &RtrPrediction::verdict,
                    "The driver's answer (to the unchecked attributes if refused).")
      .def_property_readonly("reaches_driver", &RtrPrediction::reaches_driver)
      .def(
          "to_string",
          [](const RtrPrediction& p, const std::string& pl) { return p.to_string(platform_arg(pl)); },
          py::arg("platform") = "linux")
      .def("__repr__", [](const RtrPrediction& p) {
        return "RtrPrediction(" +
               (p.refused ? std::string("refused") : std::string(to_string(p.verdict.outcome))) + ")";
      });

  m.def(
      "judge_rtr",
      [](const GidTable& table, std::uint32_t sgid_index, const py::object& dgid, const std::string& qp_type,
         bool is_global, const std::optional<std::string>& peer_gid_type, bool source_netdev_present,
         const std::optional<DriverModel>& model, const std::optional<std::string>& platform) {
        RtrRequest r;
        r.qp_type = qp_kind_arg(qp_type);
        r.is_global = is_global;
        r.sgid_index = sgid_index;
        r.dgid = to_gid(dgid, "dgid");
        r.peer_gid_type = optional_type(peer_gid_type);
        r.source_netdev_present = source_netdev_present;
        return judge_rtr(table, r, model_arg(table, model, platform));
      },
      py::arg("table"), py::arg("sgid_index"), py::arg("dgid"), py::arg("qp_type") = "uc",
      py::arg("is_global") = true, py::arg("peer_gid_type") = py::none(),
      py::arg("source_netdev_present") = true, py::arg("model") = py::none(),
      py::arg("platform") = py::none(),
      "Judge an INIT->RTR from sgid_index (as computed, before the uint8_t cast) to dgid, as the model's "
      "driver would (default: DriverModel.for_table).");
  m.def(
      "judge_create_qp",
      [](const std::string& qp_type, unsigned existing_qps, const DriverModel& model) {
        return judge_create_qp(qp_kind_arg(qp_type), existing_qps, model);
      },
      py::arg("qp_type"), py::arg("existing_qps"), py::arg("model"),
      "Judge QP creation: UC-only drivers refuse RC, QP caps refuse the (cap+1)th QP.");
  m.def(
      "predict_rtr",
      [](const GidTable& table, const Plan& plan, const py::object& peer_gid, std::uint32_t peer_qpn,
         std::uint32_t peer_psn, std::uint16_t peer_lid, std::optional<unsigned> peer_mtu,
         const std::optional<std::string>& peer_gid_type, const std::string& qp_type,
         const std::optional<DriverModel>& model, const std::optional<std::string>& platform) {
        PeerInfo peer;
        peer.qpn = peer_qpn;
        peer.psn = peer_psn;
        peer.gid = to_gid(peer_gid, "peer_gid");
        peer.lid = peer_lid;
        peer.mtu = mtu_arg(peer_mtu);
        peer.gid_type = optional_type(peer_gid_type);
        return predict_rtr(table, plan, peer, model_arg(table, model, platform), qp_kind_arg(qp_type));
      },
      py::arg("table"), py::arg("plan"), py::arg("peer_gid"), py::arg("peer_qpn") = 0x11,
      py::arg("peer_psn") = 7, py::arg("peer_lid") = 0, py::arg("peer_mtu") = py::none(),
      py::arg("peer_gid_type") = py::none(), py::arg("qp_type") = "uc", py::arg("model") = py::none(),
      py::arg("platform") = py::none(),
      "Build the RTR attributes for `plan` towards a peer (RtrBuilder, the C API's defaults) and judge "
      "them.");

  py::class_<CandidateCause>(m, "CandidateCause",
                             "One known cause of an errno and how strongly it is supported.")
      .def_readonly("id", &CandidateCause::id)
      .def_property_readonly(
          "likelihood", [](const CandidateCause& c) { return std::string(to_string(c.likelihood)); },
          "'confirmed', 'likely', 'possible' or 'ruled_out'.")
      .def_readonly("summary", &CandidateCause::summary)
      .def_readonly("remedy", &CandidateCause::remedy)
      .def("__repr__", [](const CandidateCause& c) {
        return "CandidateCause(" + c.id + ", " + std::string(to_string(c.likelihood)) + ")";
      });
  py::class_<Diagnosis>(m, "Diagnosis", "The causes of one errno on one platform, most likely first.")
      .def_readonly("err", &Diagnosis::err)
      .def_property_readonly("platform",
                             [](const Diagnosis& d) { return std::string(to_string(d.platform)); })
      .def_readonly("name", &Diagnosis::name)
      .def_readonly("causes", &Diagnosis::causes)
      .def("__str__", &Diagnosis::to_string)
      .def("__repr__", [](const Diagnosis& d) {
        return "Diagnosis(" + d.name + " (" + std::to_string(d.err) + ") on " +
               std::string(to_string(d.platform)) + ", " + std::to_string(d.causes.size()) + " causes)";
      });
  m.def(
      "diagnose",
      [](int err, const std::string& platform, const std::optional<DriverModel>& model,
         const std::optional<GidTable>& table, std::optional<std::uint32_t> sgid_index,
         const py::object& advertised, const py::object& peer_gid,
         const std::optional<std::string>& peer_gid_type, const std::optional<std::string>& qp_type,
         std::optional<unsigned> qps_on_device) {
        DiagnoseContext c;
        if (table) c.table = &*table;
        c.sgid_index = sgid_index;
        c.advertised = to_optional_gid(advertised, "advertised");
        c.peer_gid = to_optional_gid(peer_gid, "peer_gid");
        c.peer_gid_type = optional_type(peer_gid_type);
        if (qp_type) c.qp_type = qp_kind_arg(*qp_type);
        c.qps_on_device = qps_on_device;
        if (model) return diagnose(err, *model, c);
        return diagnose(err, platform_arg(platform), c);
      },
      py::arg("err"), py::arg("platform") = "linux", py::arg("model") = py::none(),
      py::arg("table") = py::none(), py::arg("sgid_index") = py::none(), py::arg("advertised") = py::none(),
      py::arg("peer_gid") = py::none(), py::arg("peer_gid_type") = py::none(),
      py::arg("qp_type") = py::none(), py::arg("qps_on_device") = py::none(),
      "What an RTR errno means: the known causes ranked by what the table shows at the index used. `model` "
      "(when given) wins over `platform`.");

  py::class_<CheckRow>(m, "CheckRow", "One row of `gidpolicy check`: a profile on a table, and its RTR.")
      .def_readonly("profile", &CheckRow::profile)
      .def_property_readonly(
          "error",
          [](const CheckRow& r) { return r.error ? error_object(*r.error) : py::object(py::none()); },
          "The selection's failure as a (not raised) Error, or None.")
      .def_readonly("plan", &CheckRow::plan)
      .def_readonly("prediction", &CheckRow::prediction)
      .def_property_readonly("agrees", &CheckRow::agrees)
      .def("__repr__", [](const CheckRow& r) { return "CheckRow('" + r.profile + "')"; });
  m.def(
      "check",
      [](const GidTable& table, const std::optional<std::vector<py::object>>& profiles,
         const std::optional<std::string>& platform, const std::optional<DriverModel>& model) {
        std::vector<Profile> chosen;
        if (profiles) {
          for (const auto& p : *profiles) chosen.push_back(profile_arg(p));
        } else {
          chosen = profiles::all();
        }
        const DriverModel driver = model_arg(table, model, platform);
        std::vector<CheckRow> rows;
        rows.reserve(chosen.size());
        for (const auto& p : chosen) rows.push_back(check_profile(table, p, driver));
        return rows;
      },
      py::arg("table"), py::arg("profiles") = py::none(), py::arg("platform") = py::none(),
      py::arg("model") = py::none(),
      "`gidpolicy check` on one table: every named profile (or those given, as Profile or spec), each "
      "planned, its RTR predicted towards a peer running the same profile on a like table.");
}

}  // namespace gidpolicy::python

#include "sources.hpp"

#include <gidpolicy/bundle.hpp>
#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/formats/sysfs.hpp>
#include <gidpolicy/verbs/dlopen_api.hpp>
#include <gidpolicy/verbs/snapshot.hpp>
#if GIDPOLICY_CLI_HAVE_LINKED_VERBS
#include <gidpolicy/verbs/libibverbs_api.hpp>
#endif

#include <cstdlib>
#include <filesystem>
#include <memory>

namespace gidpolicy::cli {
namespace {

namespace fs = std::filesystem;

result<std::vector<GidTable>> read_text(const std::string& text, const std::string& source,
                                        std::optional<formats::Format> format) {
  if (!format) return formats::read_tables(text, source);
  if (*format == formats::Format::sysfs)
    return fail(errc::invalid_argument,
                "--input-format sysfs: a sysfs tree is a directory, give it with --sysfs DIR");
  return formats::read_tables_as(text, *format, source);
}

result<std::vector<GidTable>> read_input(const std::string& input, std::optional<formats::Format> format,
                                         std::size_t max_bytes) {
  if (input == "-") {
    // Bounded, binary refused chunk by chunk: `cat /dev/urandom | gidpolicy show --input -`.
    GIDPOLICY_TRY(text, formats::read_text_fd(0, "<stdin>", max_bytes));
    return read_text(text, "<stdin>", format);
  }
  std::error_code ec;
  if (fs::is_directory(input, ec)) {
    if (format && *format != formats::Format::sysfs)
      return fail(errc::invalid_argument,
                  input + " is a directory, not a " + std::string(formats::to_string(*format)) + " file");
    return formats::read_sysfs(input);
  }
  if (!format) return formats::read_tables_file(input, max_bytes);
  GIDPOLICY_TRY(text, formats::read_text_file(input, max_bytes));
  return read_text(text, input, format);
}

std::string list_ports(const std::vector<GidTable>& tables) {
  std::string out;
  for (const auto& t : tables) out += (out.empty() ? "" : ", ") + port_name(t);
  return out.empty() ? "no table" : out;
}

result<std::vector<GidTable>> filter(std::vector<GidTable> tables, const SourceArgs& o,
                                     const std::string& source) {
  if (!o.device && !o.port) return tables;
  std::vector<GidTable> out;
  for (auto& t : tables)
    if ((!o.device || t.port().device == *o.device) && (!o.port || t.port().port == *o.port))
      out.push_back(std::move(t));
  if (out.empty()) {
    // "has no port 2", "has no device mlx5_0", "has no device mlx5_0 port 2".
    std::string what = o.device ? "device " + *o.device : std::string();
    if (o.port) what += (what.empty() ? "port " : " port ") + std::to_string(*o.port);
    return fail(errc::device_not_found, source + " has no " + what + " (it has: " + list_ports(tables) + ")");
  }
  return out;
}

}  // namespace

result<std::unique_ptr<verbs::VerbsApi>> make_api(const std::string& which) {
  if (which == "linked") {
#if GIDPOLICY_CLI_HAVE_LINKED_VERBS
    return std::unique_ptr<verbs::VerbsApi>(std::make_unique<verbs::LibibverbsApi>());
#else
    return fail(errc::not_supported,
                "--verbs linked: this gidpolicy was built without libibverbs-dev; use --verbs dlopen");
#endif
  }
  auto api = std::make_unique<verbs::DlopenApi>();
  if (!api->loaded()) return fail(api->load_error());
  return std::unique_ptr<verbs::VerbsApi>(std::move(api));
}

namespace {

// Ports of a device: the one asked for, or 1, 2, ... until the driver says there is no more.
result<void> snapshot_device(verbs::VerbsApi& api, const std::string& device,
                             std::optional<std::uint32_t> port, std::vector<GidTable>& out) {
  // Diagnosis wants the table of a port that is down too: its state is shown with it.
  verbs::SnapshotOptions options{.allow_inactive = true};
  if (port) {
    GIDPOLICY_TRY(t, verbs::snapshot(api, device, *port, options));
    out.push_back(std::move(t));
    return success();
  }
  for (std::uint32_t p = 1; p <= 255; ++p) {
    auto t = verbs::snapshot(api, device, p, options);
    if (!t) {
      if (p == 1) return fail(t.error());
      break;  // past the device's last port
    }
    out.push_back(std::move(t).value());
  }
  return success();
}

result<Loaded> load_live(const SourceArgs& o) {
  auto api = make_api(o.verbs);
  if (!api) return fail(api.error());
  std::vector<std::string> names;
  if (o.device) {
    names.push_back(*o.device);
  } else {
    auto found = api.value()->device_names();
    if (!found)
      return fail(Error(found.error().code, api.value()->backend_name() + ": " + found.error().detail));
    names = std::move(found).value();
  }
  Loaded loaded{{}, "live devices (" + api.value()->backend_name() + ")"};
  for (const auto& name : names) {
    auto r = snapshot_device(*api.value(), name, o.port, loaded.tables);
    // The code's own words are said once, by the caller: prefix the device to the detail only.
    if (!r) return fail(Error(r.error().code, name + ": " + r.error().detail));
  }
  return loaded;
}

}  // namespace

result<Loaded> load_bundle(const SourceArgs& o) {
  GIDPOLICY_TRY(bundle, read_bundle_file(*o.bundle, o.max_input_bytes));
  GIDPOLICY_TRY(host, read_bundle_host(bundle));
  const std::string source = *o.bundle + (host.host.empty() ? std::string() : " (host " + host.host + ")");
  if (host.tables.empty()) {
    std::string why;
    for (const std::string& n : host.notes) why += (why.empty() ? "" : "; ") + n;
    return fail(errc::no_candidate, source + ": the host it was collected on lists no RDMA port" +
                                        (why.empty() ? std::string() : " (" + why + ")") +
                                        ": gidpolicy doctor --bundle " + *o.bundle + " says why");
  }
  GIDPOLICY_TRY(kept, filter(std::move(host.tables), o, source));
  Loaded out{std::move(kept), source};
  out.bundle_environment = host.environment;
  out.bundle_platform = host.platform;
  host.tables.clear();
  out.bundle_host = std::move(host);
  return out;
}

result<Loaded> load_tables(const SourceArgs& o) {
  if ((o.input ? 1 : 0) + (o.sysfs ? 1 : 0) + (o.bundle ? 1 : 0) > 1)
    return fail(errc::invalid_argument, "give one source: --input, --sysfs or --bundle, not two");
  if (o.bundle) {
    if (o.input_format)
      return fail(errc::invalid_argument, "--input-format needs --input FILE (a bundle says its formats)");
    return load_bundle(o);
  }
  if (o.input_format && !o.input) return fail(errc::invalid_argument, "--input-format needs --input FILE");
  if (!o.input && !o.sysfs) return load_live(o);
  std::string source = o.input ? (*o.input == "-" ? std::string("<stdin>") : *o.input) : *o.sysfs;
  auto tables =
      o.input ? read_input(*o.input, o.input_format, o.max_input_bytes) : formats::read_sysfs(*o.sysfs);
  if (!tables) return fail(tables.error());
  if (tables.value().empty())
    return fail(errc::no_candidate, source +
                                        " lists no port (JSON with \"ports\": [], or show_gids output that "
                                        "found no GID): nothing to do");
  GIDPOLICY_TRY(kept, filter(std::move(tables).value(), o, source));
  return Loaded{std::move(kept), source};
}

result<GidTable> load_host_table(const std::string& spec, std::size_t max_input_bytes) {
  // Try the longest existing path first: "FILE", then "FILE:DEVICE", then "FILE:DEVICE:PORT".
  std::string file = spec;
  std::optional<std::string> device;
  std::optional<std::uint32_t> port;
  std::error_code ec;
  if (!fs::exists(file, ec)) {
    std::size_t last = spec.rfind(':');
    if (last != std::string::npos && fs::exists(spec.substr(0, last), ec)) {
      file = spec.substr(0, last);
      device = spec.substr(last + 1);
    } else if (last != std::string::npos && last > 0) {
      std::size_t before = spec.rfind(':', last - 1);
      if (before != std::string::npos && fs::exists(spec.substr(0, before), ec)) {
        file = spec.substr(0, before);
        device = spec.substr(before + 1, last - before - 1);
        std::string p = spec.substr(last + 1);
        char* end = nullptr;
        unsigned long n = std::strtoul(p.c_str(), &end, 10);
        if (p.empty() || *end != '\0' || n == 0 || n > 255)
          return fail(errc::invalid_argument,
                      spec + ": expected FILE:DEVICE:PORT with PORT 1-255, found port '" + p + "'");
        port = static_cast<std::uint32_t>(n);
      }
    }
  }
  if (device && device->empty()) device.reset();
  GIDPOLICY_TRY(tables, read_input(file, std::nullopt, max_input_bytes));
  if (tables.empty()) return fail(errc::no_candidate, file + " holds no GID table");
  SourceArgs o;
  o.device = device;
  o.port = port;
  GIDPOLICY_TRY(kept, filter(std::move(tables), o, file));
  return kept.front();
}

}  // namespace gidpolicy::cli

// DlopenApi: the VerbsApi backend that loads libibverbs (or Apple's librdma) at run time.
//
// Why: JACCL and ds4 load verbs with dlopen so one binary runs where RDMA is absent; gidpolicy's
// host library (gidpolicy::host) does the same and never links libibverbs. A missing library or symbol is a
// value (errc::library_unavailable / errc::symbol_missing naming the library and the symbol),
// never a crash: every call of a DlopenApi that failed to load returns that error.
//
// Library/hardware gotchas encoded here:
//  * the exported names differ from what verbs.h makes you call: ibv_query_gid_ex and
//    ibv_query_gid_table are inlines over _ibv_query_gid_ex / _ibv_query_gid_table (rdma-core
//    >= v32, IBVERBS_1.11); older libraries lack them and the backend falls back to
//    ibv_query_gid. dlsym("ibv_query_port") finds the IBVERBS_1.1 compat entry point.
//  * on macOS the library is librdma.dylib (macOS >= 26.2, Thunderbolt RDMA).
//
// Example:
//   gidpolicy::verbs::DlopenApi api;                         // libibverbs.so.1 / librdma.dylib
//   if (!api.loaded()) std::cerr << api.load_error().what() << "\n";
//   gidpolicy::verbs::DlopenApi fake("/opt/fake/libibverbs.so.1");
#pragma once

#include <gidpolicy/verbs/function_table_api.hpp>

#include <string>
#include <string_view>

namespace gidpolicy::verbs {

/// "librdma.dylib" on Apple platforms, "libibverbs.so.1" elsewhere.
std::string_view default_verbs_library() noexcept;

/// VerbsApi over a dlopen()ed libibverbs. Not thread-safe.
class DlopenApi final : public FunctionTableApi {
 public:
  /// Load default_verbs_library().
  DlopenApi();
  /// Load `library` (a soname, or a path).
  explicit DlopenApi(std::string library);
  /// Releases every QP and device, then dlclose()s.
  ~DlopenApi() override;

  /// Whether the library and its required symbols were found.
  [[nodiscard]] bool loaded() const noexcept { return load_error_.code.value() == 0; }
  /// Why loading failed (code 0 when it did not): library_unavailable with dlerror()'s text,
  /// or symbol_missing naming every required symbol absent.
  [[nodiscard]] const Error& load_error() const noexcept { return load_error_; }
  [[nodiscard]] const std::string& library() const noexcept { return library_; }

 private:
  std::string library_;
  void* handle_ = nullptr;
  Error load_error_;
};

}  // namespace gidpolicy::verbs

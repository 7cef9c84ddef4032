#pragma once
// KernelPolicy: policy as code. A map from op to implementation (and optionally the precision to
// run it in), read from a JSON or YAML file or from a CLI string like
// "attention=flash_v2,gemm=cublasLt,allreduce=ring". Ops without an entry use "auto": the
// dispatcher picks the implementation it predicts fastest among those the device supports. A
// collective's entry may name the library's protocol as well ("allreduce=ring:ll128").

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/runtime/op.hpp"

namespace syntorch::runtime {

struct PolicyEntry {
  std::string impl = "auto";
  std::optional<DType> precision;      // run the op in this dtype instead of the op's own
  std::optional<std::string> protocol;  // a collective: run it in this protocol of the library
};

class KernelPolicy {
 public:
  // The implementations an op accepts, "auto" first.
  static std::vector<std::string> implementations(OpKind op);

  // "op=impl[:precision|:protocol],..." e.g. "gemm=cublasLt,attention=flash_v2:bf16,allreduce=auto:ll".
  // Problems name `where`.
  static KernelPolicy parse(const std::string& text, Diagnostics& diagnostics, const std::string& where = "--policy");
  // A JSON or YAML file mapping op -> "impl" or {impl: ..., precision: ...}.
  static KernelPolicy load_file(const std::string& path, Diagnostics& diagnostics);
  // What a --policy flag or a study's policy holds: a JSON/YAML file (relative to `base_dir`) when
  // one exists by that name and the text has no '=', else "op=impl[:precision],..."; empty text is
  // the default policy. Problems name `where`.
  static KernelPolicy load(const std::string& text, Diagnostics& diagnostics, const std::string& where,
                           const std::string& base_dir = "");

  // Sets an op's entry. A backward op the policy does not name follows its forward's
  // implementation (not its precision), where it has that implementation.
  void set(OpKind op, PolicyEntry entry);
  const PolicyEntry& entry(OpKind op) const;  // auto where the policy says nothing
  std::string describe() const;  // "gemm=cublasLt,attention=flash_v2" (only explicit entries)

 private:
  std::map<OpKind, PolicyEntry> entries_;
  std::set<OpKind> followers_;  // backward entries taken from their forwards (not described)
};

}  // namespace syntorch::runtime

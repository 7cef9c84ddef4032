#pragma once
// One kernel or collective predicted on its own, as `syntorch kernel` asks for it: the op by name,
// its shape as the op table's parameters, the dtype, a policy or an implementation for it, the
// timing, on a config with its overrides. Everything is checked before the prediction runs, each
// problem named by the flag it came from.

#include <map>
#include <string>
#include <vector>

#include "syntorch/runtime/op.hpp"
#include "syntorch/runtime/predictor.hpp"

namespace syntorch::session {

// What `syntorch kernel` was asked, as text: the op, the machine, the shape, the choices.
struct KernelRequest {
  std::string op;                            // an op table name ("gemm", "allreduce")
  std::string hw;                            // a hardware config file
  std::vector<std::string> sets;             // "/json/pointer=value" overrides
  std::map<std::string, std::string> shape;  // the op's parameters by flag name ("seq-q"), as given
  std::string dtype = "fp16";
  std::string policy;                        // "op=impl,..." or a policy file ("" for none)
  std::string algo;                          // this op's implementation ("" for the policy's)
  std::string timing = "device";             // device, host or events
};

// The op as the request built it, its prediction, and where it ran.
struct KernelResult {
  runtime::OpDesc op;
  runtime::Prediction prediction;
  runtime::Timing timing = runtime::Timing::device;
  std::string device;   // the config's first device
  std::string machine;  // the config's name
  std::string hw_file;
};

// Throws InputError naming the flag (OP, --ranks, --dtype, --algo, --policy, a shape flag) or the
// config for each problem.
KernelResult predict_kernel(const KernelRequest& request);

// What `syntorch kernel --help` lists: the op names, each shape parameter and switch with its help
// (by the op table's key), the timing names.
std::vector<std::string> kernel_op_names();
std::vector<std::pair<std::string, std::string>> kernel_shape_help();
std::vector<std::pair<std::string, std::string>> kernel_switch_help();
std::vector<std::string> kernel_timing_names();

// nccl-tests' bus bandwidth of a collective that took `time_s`: message bytes over time, times the
// factor that makes it comparable with a link's bandwidth (2(n-1)/n for all-reduce, (n-1)/n for
// all-gather, reduce-scatter and all-to-all).
double bus_bandwidth(const runtime::OpDesc& op, double time_s);

}  // namespace syntorch::session

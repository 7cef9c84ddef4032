#pragma once
// A Sink that writes Chakra execution traces, the workload ASTRA-sim replays: for a path like
// "traces/run.et", one file per rank "traces/run.<pid>.et" (pid = rank), each a stream of
// varint32-length-delimited ChakraProtoMsg messages (GlobalMetadata{version "0.0.4"}, then one
// Node per device operation, written as its span arrives), plus "traces/run.comm_groups.json",
// the communicator groups ({"<pg_name>": [ranks...]}) for ASTRA-sim's --comm-group-configuration.
//
// What becomes a node (the simulator's conventions; docs/traces.md lists them):
//   Only spans on thread tracks whose name starts with "stream" (device streams). By category:
//   "kernel"      COMP_NODE: num_ops (int64, args "flops" rounded), tensor_size (uint64, args
//                 "hbm_bytes"), is_cpu_op false
//   "memcpy"      COMP_NODE: num_ops 0, tensor_size (args "bytes"), is_cpu_op false
//   "collective"  COMM_COLL_NODE: comm_type (int64, args "comm_type": "allreduce", "allgather",
//                 "reducescatter", ... as CollectiveCommType), comm_size (int64, args
//                 "comm_bytes"), pg_name (string: args "group", the member ranks "0,1,2,3",
//                 named "0", "1", ... in order of first appearance in the whole trace)
//   "p2p" named "send" / "recv"  COMM_SEND_NODE / COMM_RECV_NODE: comm_src, comm_dst, comm_tag
//                 (int32, args "src", "dst", "tag"), comm_size (int64, args "comm_bytes")
//   "wait"        COMP_NODE with num_ops 0, tensor_size 0 and duration 0: a stream waiting for
//                 another (for a receive), a point that carries the dependency
//   Other spans (host ops, scopes, other categories) are not nodes. Missing numeric args count
//   as 0; a collective without a known comm_type throws std::invalid_argument.
// Ids: args "seq" (an integer, increasing per rank: the simulator numbers each rank's device
// spans) when present, else one more than the rank's previous node (from 0). data_deps: the
// previous node of its stream, and args "after" (the seq of work on another stream of the rank
// that it waited for, e.g. a send after the computation producing its data), which must name an
// earlier node (else std::invalid_argument). start_time_micros is the begin rounded down,
// duration_micros the duration rounded to nearest.
// A rank's file is created with its first stream track, so every rank with a stream has a file.
//
// Files are OutputFiles: written as "<name>.partial" and renamed by finish(); a writer destroyed
// without finish() leaves none of them.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string_view>

#include "syntorch/trace/sink.hpp"

namespace syntorch::trace {

class ChakraWriter final : public Sink {
 public:
  static constexpr std::string_view kVersion = "0.0.4";

  // `path` names the workload: "traces/run.et" (or "traces/run") writes "traces/run.<rank>.et".
  // Creates the comm-groups file's partial at once, so an unwritable directory throws
  // std::runtime_error (naming it) here rather than mid-run.
  explicit ChakraWriter(const std::filesystem::path& path);
  ChakraWriter(const ChakraWriter&) = delete;
  ChakraWriter& operator=(const ChakraWriter&) = delete;
  ~ChakraWriter() override;

  // "traces/run.et" -> "traces/run.3.et" and "traces/run.comm_groups.json".
  static std::filesystem::path rank_path(const std::filesystem::path& path, std::int32_t rank);
  static std::filesystem::path comm_groups_path(const std::filesystem::path& path);

  void on_process(const ProcessInfo& process) override;
  void on_track(const TrackInfo& track) override;
  void on_span(const SpanEvent& span) override;
  void on_instant(const InstantEvent& instant) override;
  void on_counter(const CounterEvent& counter) override;
  void on_flow(const FlowEvent& flow) override;
  // Writes the comm-groups file and commits every file; throws std::runtime_error on a write
  // error (the files not committed by then are removed). Later calls do nothing.
  void finish() override;

  std::uint64_t nodes_written() const noexcept;
  std::size_t ranks_written() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace syntorch::trace

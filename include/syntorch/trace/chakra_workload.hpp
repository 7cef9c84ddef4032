#pragma once
// A Chakra execution trace read as a workload to replay (`syntorch replay`): every rank's nodes
// with their type, dependencies, recorded time and attributes, and the process groups. Reads the
// schema syntorch's Chakra writer emits and what Chakra's converter produces from PyTorch's
// execution-trace observer (ASTRA-sim's example workloads among them).

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace syntorch::trace {

// One node of a rank's trace, its attributes read from whichever value type they carry.
struct ChakraNode {
  enum class Type : std::uint8_t { compute, send, recv, collective, memory, other };
  std::uint64_t id = 0;
  std::string name;
  Type type = Type::other;
  std::vector<std::uint64_t> deps;    // data and control dependencies, in the file's order
  std::uint64_t start_us = 0;
  std::uint64_t duration_us = 0;
  bool is_cpu_op = false;
  double num_ops = 0;                 // recorded FLOPs (0 when absent)
  double tensor_size = 0;             // recorded bytes (0 when absent)
  int comm_type = -1;                 // CollectiveCommType (-1 when absent)
  std::uint64_t comm_size = 0;        // bytes
  std::string pg_name;                // the process group ("" for all ranks)
  int comm_src = -1, comm_dst = -1;
};

struct ChakraRank {
  int rank = 0;
  std::filesystem::path file;
  std::vector<ChakraNode> nodes;  // in file order
};

struct ChakraWorkload {
  std::vector<ChakraRank> ranks;  // by rank, 0..n-1
  // Process groups by name: from "<prefix>.comm_groups.json" beside the rank files when it exists.
  std::map<std::string, std::vector<int>> groups;
  std::filesystem::path groups_file;
};

// Reads "dir/run.<rank>.et" for every rank given "dir/run.et" (or one rank's file by its own
// name), and "dir/run.comm_groups.json" (or `groups_file` when given). Throws TraceFileError
// naming the file and what is wrong: missing ranks, undecodable messages, a node with an
// unknown dependency or a duplicate id, a malformed groups file.
ChakraWorkload read_chakra_workload(const std::filesystem::path& path, const std::filesystem::path& groups_file = {});

}  // namespace syntorch::trace

#pragma once
// Reading one rank's Chakra execution trace file message by message, as both the trace summary
// (`syntorch trace`) and the replay (`syntorch replay`) read it: the GlobalMetadata first, then
// each Node handed to the caller; TraceFileError naming the file, the message and the byte offset
// for anything else.

#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "et_def.pb.h"
#include "proto_io.hpp"
#include "trace_reader.hpp"

namespace syntorch::trace::detail {

std::vector<std::filesystem::path> chakra_files(const std::filesystem::path& path);
std::optional<std::int64_t> rank_of(const std::filesystem::path& file);

// Calls on_node(const ChakraProtoMsg::Node&, on_error) for every node of `file`; on_error(what)
// makes the error to throw for a node the caller refuses.
template <class OnNode>
void read_chakra_file(const std::filesystem::path& file, OnNode&& on_node) {
  InputFile in(file);
  std::string bytes;
  ChakraProtoMsg::GlobalMetadata meta;
  ChakraProtoMsg::Node node;
  std::uint64_t messages = 0;
  const auto bad = [&](std::string_view what) {
    return TraceFileError(fmt::format("'{}' is not a Chakra execution trace: {} (message {}, byte offset {})",
                                      file.string(), what, messages + 1, in.offset()));
  };
  for (;;) {
    std::uint64_t length = 0;
    bool malformed = false;
    if (!read_varint(in, length, malformed)) {
      if (malformed) throw bad("truncated length");
      break;
    }
    if (length > kMaxMessageBytes) throw bad(fmt::format("a {}-byte message", length));
    bytes.resize(length);
    if (!in.read(bytes.data(), length)) throw bad("the file ends inside a message");
    if (messages == 0) {
      if (!meta.ParseFromString(bytes) || meta.version().empty()) throw bad("no GlobalMetadata with a version");
    } else {
      if (!node.ParseFromString(bytes)) throw bad("undecodable Node");
      on_node(node, bad);
    }
    ++messages;
  }
  if (messages == 0) throw bad("the file is empty");
}

}  // namespace syntorch::trace::detail

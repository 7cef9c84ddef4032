#include "syntorch/trace/chakra_writer.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "et_def.pb.h"
#include "json_text.hpp"
#include "proto_io.hpp"
#include "syntorch/trace/output_file.hpp"

namespace syntorch::trace {

namespace et = ChakraProtoMsg;

namespace {

constexpr std::size_t kRankFileBufferBytes = std::size_t{64} << 10;

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

std::filesystem::path workload_prefix(const std::filesystem::path& path) {
  return path.extension() == ".et" ? std::filesystem::path(path).replace_extension() : path;
}

const ArgValue* find_arg(std::span<const Arg> args, std::string_view key) {
  for (const Arg& a : args) {
    if (a.key == key) return &a.value;
  }
  return nullptr;
}

bool is_integer(const ArgValue& v) {
  return v.type() == ArgValue::Type::kUint64 || v.type() == ArgValue::Type::kInt64;
}

// The argument as a number (strings that do not parse count as absent).
std::optional<double> number_of(const ArgValue* v) {
  if (v == nullptr) return std::nullopt;
  switch (v->type()) {
    case ArgValue::Type::kInt64: return static_cast<double>(v->as_int64());
    case ArgValue::Type::kUint64: return static_cast<double>(v->as_uint64());
    case ArgValue::Type::kDouble: return v->as_double();
    case ArgValue::Type::kBool: return v->as_bool() ? 1.0 : 0.0;
    case ArgValue::Type::kString: {
      const std::string_view s = v->as_string();
      double d = 0;
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
      if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
      return d;
    }
  }
  return std::nullopt;
}

// Integer args stay exact; doubles round to nearest; out-of-range values saturate.
std::int64_t int64_of(const ArgValue* v) {
  if (v == nullptr) return 0;
  if (v->type() == ArgValue::Type::kInt64) return v->as_int64();
  if (v->type() == ArgValue::Type::kUint64) {
    return v->as_uint64() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
               ? std::numeric_limits<std::int64_t>::max()
               : static_cast<std::int64_t>(v->as_uint64());
  }
  const double d = number_of(v).value_or(0.0);
  if (!(d == d)) return 0;
  if (d >= 9.2e18) return std::numeric_limits<std::int64_t>::max();
  if (d <= -9.2e18) return std::numeric_limits<std::int64_t>::min();
  return std::llround(d);
}

std::uint64_t uint64_of(const ArgValue* v) {
  if (v == nullptr) return 0;
  if (v->type() == ArgValue::Type::kUint64) return v->as_uint64();
  if (v->type() == ArgValue::Type::kInt64) return v->as_int64() < 0 ? 0 : static_cast<std::uint64_t>(v->as_int64());
  const double d = number_of(v).value_or(0.0);
  if (!(d > 0)) return 0;
  if (d >= 18446744073709551616.0) return std::numeric_limits<std::uint64_t>::max();
  return static_cast<std::uint64_t>(std::floor(d + 0.5));
}

std::int32_t int32_of(const ArgValue* v) {
  const std::int64_t i = int64_of(v);
  if (i > std::numeric_limits<std::int32_t>::max()) return std::numeric_limits<std::int32_t>::max();
  if (i < std::numeric_limits<std::int32_t>::min()) return std::numeric_limits<std::int32_t>::min();
  return static_cast<std::int32_t>(i);
}

// Our collective names (runtime::op_name) and a few spellings of the others, as Chakra's enum.
std::optional<et::CollectiveCommType> comm_type_of(std::string_view name) {
  struct Entry {
    std::string_view name;
    et::CollectiveCommType type;
  };
  static constexpr Entry kTypes[] = {
      {"allreduce", et::ALL_REDUCE},         {"all_reduce", et::ALL_REDUCE},
      {"reduce", et::REDUCE},                {"allgather", et::ALL_GATHER},
      {"all_gather", et::ALL_GATHER},        {"gather", et::GATHER},
      {"scatter", et::SCATTER},              {"broadcast", et::BROADCAST},
      {"alltoall", et::ALL_TO_ALL},          {"all_to_all", et::ALL_TO_ALL},
      {"reducescatter", et::REDUCE_SCATTER}, {"reduce_scatter", et::REDUCE_SCATTER},
      {"barrier", et::BARRIER},
  };
  for (const Entry& e : kTypes) {
    if (e.name == name) return e.type;
  }
  return std::nullopt;
}

// "0,1,2,3" (spaces allowed) -> {0,1,2,3}; nullopt when it is not a list of integers.
std::optional<std::vector<std::int64_t>> parse_ranks(std::string_view text) {
  std::vector<std::int64_t> ranks;
  std::size_t i = 0;
  while (i <= text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    std::int64_t r = 0;
    const auto [end, ec] = std::from_chars(text.data() + i, text.data() + text.size(), r);
    if (ec != std::errc()) return std::nullopt;
    ranks.push_back(r);
    i = static_cast<std::size_t>(end - text.data());
    while (i < text.size() && text[i] == ' ') ++i;
    if (i == text.size()) break;
    if (text[i] != ',') return std::nullopt;
    ++i;
  }
  return ranks;
}

}  // namespace

struct ChakraWriter::Impl {
  struct Rank {
    std::unique_ptr<OutputFile> file;
    bool has_nodes = false;
    std::uint64_t last_id = 0;  // the newest node's id
  };
  struct Track {
    bool declared = false;
    Rank* rank = nullptr;  // set for device streams only
    int rank_id = 0;  // the rank (pid - 1)
    bool has_last = false;
    std::uint64_t last_id = 0;
    // Durations are whole microseconds; the track's running sums keep the rounding from
    // accumulating, so its nodes' durations add up to its exact busy time, rounded once.
    TimePs busy_ps = 0;
    std::uint64_t busy_us = 0;
  };
  struct Group {
    std::string name;
    std::vector<std::int64_t> ranks;
  };

  std::filesystem::path path;
  std::unique_ptr<OutputFile> groups_file;
  std::map<std::int32_t, Rank> ranks;  // node-based: Track keeps pointers
  std::vector<Track> tracks;
  std::unordered_map<std::string, std::size_t, StringHash, std::equal_to<>> group_of_text;
  std::map<std::vector<std::int64_t>, std::size_t> group_of_ranks;
  std::vector<Group> groups;
  // One reused Node per attribute layout, its attributes set up once: a node only overwrites
  // values, so writing one allocates nothing.
  enum Layout : std::size_t { kCompute, kCollective, kCollectiveInGroup, kPointToPoint, kLayouts };
  std::array<et::Node, kLayouts> layouts;
  std::string buffer;
  std::string text;  // sanitised strings
  std::uint64_t nodes = 0;
  bool finished = false;

  void write(Rank& r, const google::protobuf::MessageLite& message) {
    buffer.clear();
    detail::append_length_delimited(buffer, 0, message);
    r.file->write(buffer.data(), buffer.size());
  }

  Rank& open_rank(std::int32_t pid) {
    auto [it, inserted] = ranks.try_emplace(pid);
    if (inserted) {
      OutputFile::Options options;
      options.buffer_bytes = kRankFileBufferBytes;
      try {
        it->second.file = std::make_unique<OutputFile>(ChakraWriter::rank_path(path, rank_of_pid(pid)), options);
      } catch (...) {
        ranks.erase(it);
        throw;
      }
      et::GlobalMetadata meta;
      meta.set_version(std::string(kVersion));
      write(it->second, meta);
    }
    return it->second;
  }

  const std::string& group_name(std::string_view members, std::string_view span_name, std::int32_t pid) {
    if (auto it = group_of_text.find(members); it != group_of_text.end()) return groups[it->second].name;
    auto ranks_list = parse_ranks(members);
    if (!ranks_list) {
      throw std::invalid_argument(fmt::format(
          "trace::ChakraWriter: collective '{}' on rank {}: group \"{}\" is not a comma-separated list of ranks",
          span_name, pid, members));
    }
    auto [it, inserted] = group_of_ranks.try_emplace(*ranks_list, groups.size());
    // Named from 1: ASTRA-sim reserves group 0 for all ranks.
    if (inserted) groups.push_back({std::to_string(groups.size() + 1), std::move(*ranks_list)});
    group_of_text.emplace(std::string(members), it->second);
    return groups[it->second].name;
  }

  Impl() {
    const auto add = [](et::Node& n, const char* name) -> et::AttributeProto& {
      et::AttributeProto* a = n.add_attr();
      a->set_name(name);
      return *a;
    };
    et::Node& comp = layouts[kCompute];
    add(comp, "num_ops").set_int64_val(0);
    add(comp, "tensor_size").set_uint64_val(0);
    add(comp, "is_cpu_op").set_bool_val(false);
    for (const Layout l : {kCollective, kCollectiveInGroup}) {
      add(layouts[l], "comm_type").set_int64_val(0);
      add(layouts[l], "comm_size").set_int64_val(0);
    }
    add(layouts[kCollectiveInGroup], "pg_name").set_string_val("");
    et::Node& p2p = layouts[kPointToPoint];
    add(p2p, "comm_src").set_int32_val(0);
    add(p2p, "comm_dst").set_int32_val(0);
    add(p2p, "comm_tag").set_int32_val(0);
    add(p2p, "comm_size").set_int64_val(0);
  }

  void on_span(const SpanEvent& span) {
    if (finished) [[unlikely]] {
      throw std::logic_error("trace::ChakraWriter: event after finish()");
    }
    if (span.track.index >= tracks.size() || !tracks[span.track.index].declared) [[unlikely]] {
      throw std::logic_error(
          fmt::format("trace::ChakraWriter: span on track {}, which was never declared", span.track.index));
    }
    Track& t = tracks[span.track.index];
    if (t.rank == nullptr) return;  // host tracks hold no nodes

    et::NodeType type;
    if (span.category == "kernel" || span.category == "memcpy" || span.category == "wait") {
      type = et::COMP_NODE;
    } else if (span.category == "collective") {
      type = et::COMM_COLL_NODE;
    } else if (span.category == "p2p" && span.name == "send") {
      type = et::COMM_SEND_NODE;
    } else if (span.category == "p2p" && span.name == "recv") {
      type = et::COMM_RECV_NODE;
    } else {
      return;
    }

    Layout layout = type == et::COMP_NODE ? kCompute : kPointToPoint;
    const ArgValue* group = nullptr;
    if (type == et::COMM_COLL_NODE) {
      group = find_arg(span.args, "group");
      if (group != nullptr && group->type() != ArgValue::Type::kString) group = nullptr;
      layout = group != nullptr ? kCollectiveInGroup : kCollective;
    }
    et::Node& node = layouts[layout];
    Rank& rank = *t.rank;
    // Ids: the span's "seq" when it has one, else the next number from 1, which is how the
    // simulator numbers a rank's device spans (its "after" args refer to these numbers).
    std::uint64_t id = rank.has_nodes ? rank.last_id + 1 : 1;
    if (const ArgValue* seq = find_arg(span.args, "seq"); seq != nullptr && is_integer(*seq)) {
      id = uint64_of(seq);
      if (rank.has_nodes && id <= rank.last_id) {
        throw std::invalid_argument(fmt::format(
            "trace::ChakraWriter: '{}' on rank {} has seq {}, not above the previous node's id {}", span.name,
            t.rank_id, id, rank.last_id));
      }
    }
    node.set_id(id);
    detail::assign_valid_utf8(*node.mutable_name(), span.name);
    node.set_type(type);
    node.clear_data_deps();
    if (t.has_last) node.add_data_deps(t.last_id);
    // "after": the seq of work on another stream this one waited for.
    if (const ArgValue* after = find_arg(span.args, "after"); after != nullptr && is_integer(*after)) {
      const std::uint64_t dep = uint64_of(after);
      if (!rank.has_nodes || dep > rank.last_id) {
        throw std::invalid_argument(fmt::format(
            "trace::ChakraWriter: '{}' on rank {} comes after seq {}, which is not an earlier node", span.name, t.rank_id,
            dep));
      }
      if (!(t.has_last && dep == t.last_id)) node.add_data_deps(dep);
    }
    const bool wait = span.category == "wait";  // a dependency point: its time is the wait itself
    node.set_start_time_micros(span.begin_ps / kPsPerUs);
    const TimePs dur_ps = span.end_ps >= span.begin_ps ? span.end_ps - span.begin_ps : 0;
    std::uint64_t dur_us = 0;
    if (!wait) {
      t.busy_ps += dur_ps;
      const std::uint64_t total_us = (t.busy_ps + kPsPerUs / 2) / kPsPerUs;
      dur_us = total_us - t.busy_us;
      t.busy_us = total_us;
    }
    node.set_duration_micros(dur_us);

    switch (layout) {
      case kCompute: {
        const bool kernel = span.category == "kernel";
        node.mutable_attr(0)->set_int64_val(kernel ? int64_of(find_arg(span.args, "flops")) : 0);
        node.mutable_attr(1)->set_uint64_val(uint64_of(find_arg(span.args, kernel ? "hbm_bytes" : "bytes")));
        break;
      }
      case kCollective:
      case kCollectiveInGroup: {
        const ArgValue* kind = find_arg(span.args, "comm_type");
        const std::optional<et::CollectiveCommType> comm =
            kind != nullptr && kind->type() == ArgValue::Type::kString ? comm_type_of(kind->as_string())
                                                                       : std::nullopt;
        if (!comm) {
          throw std::invalid_argument(fmt::format(
              "trace::ChakraWriter: collective '{}' on rank {} has {} (expected args \"comm_type\": allreduce, "
              "allgather, reducescatter, reduce, gather, scatter, broadcast, alltoall or barrier)",
              span.name, t.rank_id,
              kind == nullptr ? std::string("no comm_type")
                              : fmt::format("comm_type \"{}\"",
                                            kind->type() == ArgValue::Type::kString ? kind->as_string() : "?")));
        }
        node.mutable_attr(0)->set_int64_val(*comm);
        node.mutable_attr(1)->set_int64_val(int64_of(find_arg(span.args, "comm_bytes")));
        if (group != nullptr) {
          node.mutable_attr(2)->mutable_string_val()->assign(group_name(group->as_string(), span.name, t.rank_id));
        }
        break;
      }
      default:  // send / recv
        node.mutable_attr(0)->set_int32_val(int32_of(find_arg(span.args, "src")));
        node.mutable_attr(1)->set_int32_val(int32_of(find_arg(span.args, "dst")));
        node.mutable_attr(2)->set_int32_val(int32_of(find_arg(span.args, "tag")));
        node.mutable_attr(3)->set_int64_val(int64_of(find_arg(span.args, "comm_bytes")));
        break;
    }
    rank.has_nodes = true;
    rank.last_id = id;
    write(rank, node);
    t.has_last = true;
    t.last_id = id;
    ++nodes;
  }

  void finish() {
    fmt::memory_buffer json;
    json.push_back('{');
    for (std::size_t i = 0; i < groups.size(); ++i) {
      fmt::format_to(fmt::appender(json), "{}\n  \"{}\": [{}]", i == 0 ? "" : ",", groups[i].name,
                     fmt::join(groups[i].ranks, ", "));
    }
    detail::append_raw(json, groups.empty() ? "}\n" : "\n}\n");
    groups_file->write(json.data(), json.size());
    for (auto& [pid, r] : ranks) r.file->commit();
    groups_file->commit();
  }
};

ChakraWriter::ChakraWriter(const std::filesystem::path& path) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  impl_->groups_file = std::make_unique<OutputFile>(comm_groups_path(path));
}

ChakraWriter::~ChakraWriter() = default;

std::filesystem::path ChakraWriter::rank_path(const std::filesystem::path& path, std::int32_t rank) {
  std::filesystem::path p = workload_prefix(path);
  p += fmt::format(".{}.et", rank);
  return p;
}

std::filesystem::path ChakraWriter::comm_groups_path(const std::filesystem::path& path) {
  std::filesystem::path p = workload_prefix(path);
  p += ".comm_groups.json";
  return p;
}

void ChakraWriter::on_process(const ProcessInfo&) {}

void ChakraWriter::on_track(const TrackInfo& track) {
  Impl& m = *impl_;
  if (!track.id.valid()) throw std::logic_error("trace::ChakraWriter: track without an id");
  if (track.id.index >= m.tracks.size()) m.tracks.resize(track.id.index + 1);
  Impl::Track& t = m.tracks[track.id.index];
  t.declared = true;
  t.rank_id = rank_of_pid(track.pid);
  if (track.kind == TrackKind::kThread && std::string_view(track.name).starts_with("stream")) {
    t.rank = &m.open_rank(track.pid);
  }
}

void ChakraWriter::on_span(const SpanEvent& span) { impl_->on_span(span); }
void ChakraWriter::on_instant(const InstantEvent&) {}
void ChakraWriter::on_counter(const CounterEvent&) {}
void ChakraWriter::on_flow(const FlowEvent&) {}

void ChakraWriter::finish() {
  if (impl_->finished) return;
  impl_->finished = true;
  try {
    impl_->finish();
  } catch (...) {
    for (auto& [pid, r] : impl_->ranks) r.file->discard();
    impl_->groups_file->discard();
    throw;
  }
}

std::uint64_t ChakraWriter::nodes_written() const noexcept { return impl_->nodes; }
std::size_t ChakraWriter::ranks_written() const noexcept { return impl_->ranks.size(); }

}  // namespace syntorch::trace

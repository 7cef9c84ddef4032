// Reading back Perfetto protobuf (.pftrace) one packet at a time.

#include "perfetto_trace.pb.h"
#include "proto_io.hpp"

#include "trace_reader.hpp"

namespace syntorch::trace::detail {

namespace fs = std::filesystem;
namespace pp = perfetto::protos;


TraceFileSummary read_perfetto(const fs::path& path) {
  InputFile in(path);
  struct Descriptor {
    bool process = false;
    bool thread = false;
    std::int32_t pid = 0;
    std::int32_t tid = 0;
    std::uint64_t parent = 0;
    std::string name;
  };
  std::unordered_map<std::uint64_t, Descriptor> descriptors;
  std::unordered_map<std::uint64_t, std::size_t> track_of_uuid;
  std::vector<std::uint64_t> uuids;  // by track index
  Tally tally;
  const auto track_index = [&](std::uint64_t uuid) {
    auto [it, inserted] = track_of_uuid.try_emplace(uuid, 0);
    if (inserted) {
      it->second = tally.track(std::to_string(uuid));
      uuids.push_back(uuid);
    }
    return it->second;
  };
  std::uint64_t flows = 0;
  pp::TracePacket packet;
  std::string bytes;
  std::uint64_t packets = 0;
  const auto bad = [&](std::string_view what) {
    return TraceFileError(fmt::format("'{}' is not a Perfetto trace: {} (packet {}, byte offset {})", path.string(),
                                      what, packets + 1, in.offset()));
  };
  for (;;) {
    std::uint64_t tag = 0;
    bool malformed = false;
    if (!detail::read_varint(in, tag, malformed)) {
      if (malformed) throw bad("truncated field tag");
      break;
    }
    const std::uint64_t wire = tag & 7;
    if ((tag >> 3) == 0) throw bad("field number 0");
    std::uint64_t length = 0;
    switch (wire) {
      case 0:
        if (!detail::read_varint(in, length, malformed)) throw bad("truncated varint");
        continue;
      case 1: length = 8; break;
      case 5: length = 4; break;
      case 2:
        if (!detail::read_varint(in, length, malformed)) throw bad("truncated length");
        if (length > kMaxMessageBytes) throw bad(fmt::format("a {}-byte packet", length));
        break;
      default: throw bad(fmt::format("unexpected wire type {}", wire));
    }
    bytes.resize(length);
    if (!in.read(bytes.data(), length)) throw bad("the file ends inside a packet");
    if (tag != ((1u << 3) | 2)) continue;  // not Trace.packet
    if (!packet.ParseFromString(bytes)) throw bad("undecodable TracePacket");
    ++packets;
    if (packet.has_track_descriptor()) {
      const pp::TrackDescriptor& d = packet.track_descriptor();
      Descriptor& info = descriptors[d.uuid()];
      info.parent = d.parent_uuid();
      info.name = d.name();
      if (d.has_process()) {
        info.process = true;
        info.pid = d.process().pid();
        if (info.name.empty()) info.name = d.process().process_name();
      }
      if (d.has_thread()) {
        info.thread = true;
        info.pid = d.thread().pid();
        info.tid = d.thread().tid();
        if (info.name.empty()) info.name = d.thread().thread_name();
      }
      if (!info.process) track_index(d.uuid());
      continue;
    }
    if (!packet.has_track_event()) continue;
    const pp::TrackEvent& e = packet.track_event();
    const TimePs ts = packet.timestamp() * 1000;
    flows += static_cast<std::uint64_t>(e.flow_ids_size() + e.terminating_flow_ids_size());
    tally.event(track_index(e.track_uuid()), ts, ts, e.type() != pp::TrackEvent::TYPE_SLICE_END);
  }

  // Name the tracks: the process is the descriptor's own (process tracks), its parent's, or
  // the process descriptor with the thread's pid.
  std::unordered_map<std::int32_t, std::string> process_by_pid;
  for (const auto& [uuid, d] : descriptors) {
    if (d.process) process_by_pid[d.pid] = d.name;
  }
  TraceFileSummary s = tally.finish("perfetto", {path}, flows);
  for (std::size_t i = 0; i < s.tracks.size(); ++i) {
    TrackSummary& t = s.tracks[i];
    const std::uint64_t uuid = uuids[i];
    auto d = descriptors.find(uuid);
    if (d == descriptors.end()) {
      t.process.assign(1, '?');  // (assigning a literal trips a GCC 12 -Wrestrict false positive here)
      t.track = fmt::format("track {}", uuid);
      continue;
    }
    std::string process;
    if (auto parent = descriptors.find(d->second.parent); parent != descriptors.end() && parent->second.process) {
      process = parent->second.name;
    } else if (d->second.thread) {
      auto p = process_by_pid.find(d->second.pid);
      process = p != process_by_pid.end() ? p->second : fmt::format("pid {}", d->second.pid);
    }
    t.process = process;
    t.track = d->second.name.empty() && d->second.thread ? fmt::format("tid {}", d->second.tid) : d->second.name;
  }
  return s;
}


}  // namespace syntorch::trace::detail

// Reading back Chakra execution traces (.et): a rank file, or every rank file of a prefix.

#include <charconv>
#include <map>
#include <optional>

#include "chakra_io.hpp"
#include "syntorch/trace/chakra_writer.hpp"

#include "trace_reader.hpp"

namespace syntorch::trace::detail {

namespace fs = std::filesystem;
namespace et = ChakraProtoMsg;


// The rank of "<prefix>.<rank>.et", when the name has that form.
std::optional<std::int64_t> rank_of(const fs::path& file) {
  const std::string stem = file.stem().string();  // "<prefix>.<rank>"
  const std::size_t dot = stem.rfind('.');
  if (dot == std::string::npos || dot + 1 == stem.size()) return std::nullopt;
  std::int64_t rank = 0;
  const auto [end, ec] = std::from_chars(stem.data() + dot + 1, stem.data() + stem.size(), rank);
  if (ec != std::errc() || end != stem.data() + stem.size()) return std::nullopt;
  return rank;
}

std::vector<fs::path> chakra_files(const fs::path& path) {
  std::error_code ec;
  if (fs::exists(path, ec)) return {path};
  // "dir/run.et" names the workload "dir/run.<rank>.et".
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  const std::string prefix = path.stem().string() + ".";
  std::vector<std::pair<std::int64_t, fs::path>> found;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string name = p.filename().string();
    if (p.extension() != ".et" || !name.starts_with(prefix)) continue;
    if (p.stem().string().size() <= prefix.size() - 1) continue;
    const auto rank = rank_of(p);
    if (rank && p.stem().string() == prefix + std::to_string(*rank)) found.emplace_back(*rank, p);
  }
  if (found.empty()) {
    throw TraceFileError(fmt::format("cannot read '{}': no such file, nor rank files '{}<rank>.et' beside it",
                                     path.string(), (path.parent_path() / prefix).string()));
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> files;
  for (auto& [rank, p] : found) files.push_back(std::move(p));
  return files;
}

TraceFileSummary read_chakra(const fs::path& path) {
  const std::vector<fs::path> files = chakra_files(path);
  Tally tally;
  for (const fs::path& file : files) {
    const auto rank = rank_of(file);
    const std::string process = rank ? fmt::format("rank {}", *rank) : file.filename().string();
    read_chakra_file(file, [&](const et::Node& node, const auto&) {
      const std::size_t i = tally.track(process + "\n" + et::NodeType_Name(node.type()));
      TrackSummary& t = tally.tracks()[i];
      if (t.track.empty()) {
        t.process = process;
        t.track = et::NodeType_Name(node.type());
        if (t.track.empty()) t.track = fmt::format("node type {}", static_cast<int>(node.type()));
      }
      const TimePs begin = node.start_time_micros() * kPsPerUs;
      tally.event(i, begin, begin + node.duration_micros() * kPsPerUs, true);
    });
  }
  return tally.finish("chakra", files, 0);
}


}  // namespace syntorch::trace::detail

#include "common.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "syntorch/base/input_file.hpp"
#include "syntorch/base/units.hpp"
#include "syntorch/session/hardware.hpp"
#include "syntorch/trace/console_summary.hpp"
#include "syntorch/trace/open_trace_writer.hpp"
#include "syntorch/trace/recorder.hpp"

namespace syntorch::cli {

std::string default_hw_config(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path here = fs::path("hw_configs") / name;
  if (exists_no_throw(here)) return here.string();
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path dir = exe.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
      if (exists_no_throw(dir / "hw_configs" / name)) return (dir / "hw_configs" / name).string();
    }
  }
  return here.string();
}

void print_oom_holders(std::ostream& out, const runtime::OomReport& oom) {
  out << "  by purpose:";
  for (std::size_t u = 0; u < os::kMemoryUses; ++u) {
    const std::uint64_t b = oom.memory.allocated_by_use[u];
    if (b > 0) {
      out << fmt::format(" {} {};", os::memory_use_name(static_cast<os::MemoryUse>(u)),
                         units::format_size(static_cast<double>(b)));
    }
  }
  out << "\n  largest live allocations by tensor:\n";
  for (const auto& [name, bytes] : oom.largest) {
    out << fmt::format("    {:<40} {}\n", name, units::format_size(static_cast<double>(bytes)));
  }
}

std::string size(std::uint64_t bytes) { return units::format_size(static_cast<double>(bytes)); }

void add_trace_flags(CLI::App& s, TraceFlags& t) {
  s.add_option("--trace", t.file,
               "Write a trace: .json/.json.gz (Chrome JSON), .pftrace (Perfetto), .et (Chakra, one file per rank), "
               ".csv (one row per kernel)");
  s.add_option("--trace-format", t.format, "chrome, perfetto, chakra, csv (instead of the extension), or "
               "console (a summary of top ops, kernels and scopes, printed after the report)")
      ->check(CLI::IsMember({"chrome", "perfetto", "chakra", "csv", "console"}));
  s.add_option("--trace-level", t.level,
               "op: torch ops and model scopes; kernel: + kernels, collectives, flows, memory; hw: + SM, HBM and "
               "link counters")
      ->check(CLI::IsMember({"op", "kernel", "hw"}))
      ->capture_default_str();
}

bool open_trace(const TraceFlags& t, trace::Recorder& recorder, Context& ctx) {
  if (t.format == "console") {
    recorder.attach(std::make_unique<trace::ConsoleSummary>(ctx.out, 12));
  } else if (!t.file.empty()) {
    const bool chakra = t.format == "chakra" ||
                        (t.format.empty() && trace::trace_format_from_path(t.file) == trace::TraceFormat::kChakra);
    if (chakra && t.level == "op") {
      ctx.err << "--trace-level: op holds no device work, which is all a Chakra trace (.et) has; use kernel or hw\n";
      return false;
    }
    try {
      recorder.attach(trace::open_trace_writer(t.file, t.format.empty() ? std::nullopt : std::optional<std::string>(t.format)));
    } catch (const std::exception& e) {
      ctx.err << fmt::format("--trace: {}\n", e.what());
      return false;
    }
  } else if (!t.format.empty()) {
    ctx.err << fmt::format("--trace-format: {} needs --trace FILE (only console prints without one)\n", t.format);
    return false;
  }
  return true;
}

runtime::TraceLevel trace_level(const TraceFlags& t) {
  return t.level == "op" ? runtime::TraceLevel::op : t.level == "hw" ? runtime::TraceLevel::hw : runtime::TraceLevel::kernel;
}

bool finish_trace(const TraceFlags& t, trace::Recorder& recorder, Context& ctx, bool json) {
  try {
    recorder.finish();  // the file appears under its name only now, complete
  } catch (const std::exception& e) {
    ctx.err << fmt::format("--trace: {}\n", e.what());
    return false;
  }
  if (!json && !t.file.empty() && t.format != "console") {
    ctx.out << fmt::format("  trace written to {}{}\n", t.file,
                           t.file.ends_with(".et") || t.format == "chakra" ? " (one file per rank)"
                                                                          : " (open it in ui.perfetto.dev)");
  }
  return true;
}

std::string zoo_models_text() {
  std::string out = "Models (--model): ";
  std::size_t line = out.size();
  const std::vector<std::string> names = session::zoo_model_names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string item = names[i] + (i + 1 < names.size() ? ", " : "");
    if (line + item.size() > 100) {
      out += "\n  ";
      line = 2;
    }
    out += item;
    line += item.size();
  }
  return out + "\n  (docs/models.md describes each, custom shapes and Hugging Face configs)";
}

}  // namespace syntorch::cli

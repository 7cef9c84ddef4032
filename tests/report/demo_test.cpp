// Example report charts of the kinds a what-if sweep produces. Each must be well-formed SVG; with
// SYNTORCH_REPORT_DEMO_DIR set, they are also written there (with an index.html) for a person to
// look at, e.g. after `rsvg-convert -o line.png line.svg`.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "html_report.hpp"
#include "svg_chart.hpp"
#include "xml_check.hpp"

namespace syntorch::report {
namespace {

namespace fs = std::filesystem;

std::vector<std::pair<std::string, std::string>> demo_charts() {
  std::vector<std::pair<std::string, std::string>> out;

  Chart line;
  line.title = "Decode step time vs HBM bandwidth";
  line.x_label = "HBM bandwidth (B/s)";
  line.y_label = "Decode step time (ms)";
  std::vector<double> bw;
  for (int i = 0; i < 15; ++i) bw.push_back(1e12 + 0.5e12 * i);
  for (const auto& [name, bytes, fixed] : std::vector<std::tuple<std::string, double, double>>{
           {"Llama-3 8B, batch 1", 16e9, 1.2}, {"Llama-3 70B, tp=4", 38e9, 3.5}, {"Mixtral 8x7B, tp=2", 25e9, 2.4}}) {
    Series s{name, bw, {}};
    for (const double b : bw) s.y.push_back(bytes / b * 1e3 + fixed);
    line.series.push_back(std::move(s));
  }
  out.emplace_back("line.svg", render_chart_svg(line));

  Chart logx;
  logx.title = "Throughput vs batch size (log x)";
  logx.x_label = "batch size";
  logx.y_label = "throughput (tokens/s)";
  logx.log_x = true;
  const std::vector<double> batch{1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
  for (const auto& [name, peak, half] : std::vector<std::tuple<std::string, double, double>>{
           {"H100 SXM", 21000, 60}, {"H200", 27000, 70}, {"B200 (FP8)", 52000, 90}, {"MI300X", 30000, 110}}) {
    Series s{name, batch, {}};
    for (const double b : batch) s.y.push_back(peak * b / (b + half));
    logx.series.push_back(std::move(s));
  }
  logx.series[2].y[9] = std::nan("");  // an infeasible (out of memory) point
  out.emplace_back("logx.svg", render_chart_svg(logx));

  Chart bars;
  bars.title = "Prefill throughput by parallel layout";
  bars.x_label = "parallel layout (8 GPUs)";
  bars.y_label = "tokens/s";
  bars.x_categories = {"tp=4 pp=2", "tp=8 pp=1", "tp=2 pp=4"};
  bars.series = {{"H100 SXM", {0, 1, 2}, {18500, 21000, 15200}},
                 {"H200", {0, 1, 2}, {23100, 27400, 19000}},
                 {"B200", {0, 1, 2}, {39000, 44100, 31500}}};
  out.emplace_back("bars.svg", render_chart_svg(bars));

  Chart crowded = bars;
  crowded.title = "Step time by layout & precision <crowded>";
  crowded.y_label = "step time (s)";
  crowded.x_categories = {"tensor parallel 8, pipeline 1, fp16", "tensor parallel 4, pipeline 2, fp16",
                          "tensor parallel 2, pipeline 4, fp8 with a long suffix", "tp=1 pp=8 fp8",
                          "expert parallel 8", "tp=8 + sequence parallel"};
  crowded.series.clear();
  for (int s = 0; s < 5; ++s) {
    Series series{"configuration number " + std::to_string(s + 1), {}, {}};
    for (int c = 0; c < 6; ++c) {
      series.x.push_back(c);
      series.y.push_back(0.004 + 0.001 * ((s * 7 + c * 3) % 9));
    }
    crowded.series.push_back(std::move(series));
  }
  out.emplace_back("bars_crowded.svg", render_chart_svg(crowded));

  Roofline roof;
  roof.title = "H100 SXM roofline (BF16 dense)";
  roof.peak_flops_per_s = 989e12;
  roof.peak_bytes_per_s = 3.35e12;
  roof.points = {{"decode GEMV qkv", 1.9, 5.8e12},      {"decode GEMV mlp", 2.0, 6.2e12},
                 {"attention decode", 1.0, 2.9e12},     {"prefill GEMM qkv", 640, 720e12},
                 {"prefill GEMM mlp", 820, 780e12},     {"flash-attn prefill", 310, 540e12},
                 {"layernorm", 0.6, 1.5e12},            {"softmax", 1.2, 3.1e12},
                 {"all-reduce & add", 0.25, 0.6e12},    {"batched decode b=64", 110, 300e12},
                 {"rotary embedding", 0.9, 2.2e12},     {"lm head b=256", 250, 610e12}};
  out.emplace_back("roofline.svg", render_roofline_svg(roof));

  Chart empty;
  empty.title = "A sweep with no feasible point";
  empty.x_label = "HBM bandwidth (B/s)";
  empty.y_label = "ms";
  out.emplace_back("empty.svg", render_chart_svg(empty));

  Chart negative;
  negative.title = "Speed-up vs baseline";
  negative.x_label = "link bandwidth (GB/s)";
  negative.y_label = "change (%)";
  negative.series = {{"all-reduce", {100, 200, 300, 400, 450, 900}, {-12, -3, 4, 9, 11, 19}}};
  out.emplace_back("single.svg", render_chart_svg(negative, 600, 360));
  return out;
}

TEST(Demo, ChartsAreWellFormedAndWrittenOnRequest) {
  const auto charts = demo_charts();
  for (const auto& [file, svg] : charts) EXPECT_EQ(testing::xml_error(svg), "") << file;
  const char* dir = std::getenv("SYNTORCH_REPORT_DEMO_DIR");
  if (dir == nullptr || *dir == '\0') return;  // set SYNTORCH_REPORT_DEMO_DIR to write the example charts
  fs::create_directories(dir);
  std::vector<std::pair<std::string, std::string>> plots;
  for (const auto& [file, svg] : charts) {
    std::ofstream(fs::path(dir) / file) << svg;
    plots.emplace_back(file, file);
  }
  const Table table{{"config", "HBM (TB/s)", "step (ms)", "tokens/s"},
                    {{"tp=4 pp=2", "3.35", "12.5", "18500"}, {"tp=8 pp=1", "4.8", "9.75", "27400"}}};
  std::ofstream(fs::path(dir) / "index.html")
      << render_index_html("What-if sweep: HBM bandwidth", "Example report from the report tests.", plots, table);
}

}  // namespace
}  // namespace syntorch::report

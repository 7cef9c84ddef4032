// Studies are checked whole before anything runs: how many points they make, and where their
// results would go.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <algorithm>
#include <fstream>

#include <fmt/format.h>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/session/study.hpp"
#include "syntorch/session/sweep.hpp"

namespace {

using namespace syntorch;
namespace fs = std::filesystem;

std::string study(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("syntorch_study_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy(fs::path(SYNTORCH_SOURCE_DIR) / "hw_configs" / "h100_sxm5_80gb.json", dir / "h100.json",
           fs::copy_options::overwrite_existing);
  std::ofstream(dir / name) << text;
  return (dir / name).string();
}

std::string problems(const std::string& path) {
  try {
    session::load_study(path);
  } catch (const InputError& e) {
    return e.diagnostics().to_string();
  }
  return "";
}

std::string values(int n) {
  std::string v = "[";
  for (int i = 1; i <= n; ++i) v += (i > 1 ? ", " : "") + std::to_string(i);
  return v + "]";
}

TEST(Study, TooManyPointsAreRefusedWithTheirCountBeforeAnythingRuns) {
  const std::string axes = "axes:\n  - {param: batch, values: " + values(100) + "}\n  - {param: input_tokens, values: " +
                           values(100) + "}\n  - {param: output_tokens, values: " + values(100) + "}\n" +
                           "  - {param: tp, values: " + values(100) + "}\n";
  const std::string base = "base: {hw: h100.json, model: gpt3-125m}\n";
  const std::string text = problems(study("big.yaml", base + axes));
  EXPECT_NE(text.find("100000000 points (100 x 100 x 100 x 100): more than the 100000"), std::string::npos) << text;
  // Asked for, the same study is accepted (and not expanded here).
  EXPECT_EQ(problems(study("asked.yaml", base + "max_points: 200000000\n" + axes)), "");
}

TEST(Study, ANameThatWouldLeaveTheSweepsFolderIsRefused) {
  const std::string text =
      problems(study("escape.yaml", "name: ../../etc\nbase: {hw: h100.json, model: gpt3-125m}\n"
                                    "axes:\n  - {param: batch, values: [1, 2]}\n"));
  EXPECT_NE(text.find("/name: expected a name for a folder under sweeps/"), std::string::npos) << text;
}

TEST(Study, AKeyGivenTwiceIsRefusedWithBothLinesAsJsonIs) {
  const std::string text = problems(study("twice.yaml", "base:\n  hw: h100.json\n  model: gpt3-125m\n  batch: 1\n"
                                                        "  batch: 8\naxes:\n  - {param: tp, values: [1]}\n"));
  EXPECT_NE(text.find("twice.yaml:5:/base/batch: key \"batch\" given twice (first at line 4)"), std::string::npos)
      << text;
  // The same at the top, inside an axis, and in a flow mapping.
  const std::string top = problems(study("top.yaml", "base: {hw: h100.json, model: gpt3-125m}\n"
                                                     "axes:\n  - {param: tp, values: [1], param: batch}\n"
                                                     "metrics: [tpot_ms]\nmetrics: [ttft_ms]\n"));
  EXPECT_NE(top.find("top.yaml:3:/axes/0/param: key \"param\" given twice"), std::string::npos) << top;
  EXPECT_NE(top.find("top.yaml:5:/metrics: key \"metrics\" given twice (first at line 4)"), std::string::npos) << top;
}

TEST(Study, TextThatIsNotUtf8OrANameWithControlBytesIsRefused) {
  const std::string bad = problems(study("bytes.yaml", "name: caf\xe9\nbase: {hw: h100.json, model: gpt3-125m}\n"
                                                       "axes:\n  - {param: tp, values: [1]}\n"));
  EXPECT_NE(bad.find("bytes.yaml:1: byte 9 is not valid UTF-8 (expected a YAML study in UTF-8)"), std::string::npos)
      << bad;
  const std::string control = problems(study("bell.yaml", "name: \"a\\x07b\"\nbase: {hw: h100.json, model: gpt3-125m}\n"
                                                          "axes:\n  - {param: tp, values: [1]}\n"));
  EXPECT_NE(control.find("/name: expected a name for a folder under sweeps/"), std::string::npos) << control;
  EXPECT_NE(control.find("got \"a\\x07b\""), std::string::npos) << control;
  // UTF-8 names are names like any other.
  EXPECT_EQ(problems(study("utf8.yaml", "name: caf\xc3\xa9\nbase: {hw: h100.json, model: gpt3-125m}\n"
                                        "axes:\n  - {param: tp, values: [1]}\n")),
            "");
}

TEST(Study, AnAliasBombOrDeepNestingIsRefusedNotExpanded) {
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'h'; ++c) {
    bomb += fmt::format("{}: &{} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n", c, c,
                        fmt::arg("p", static_cast<char>(c - 1)));
  }
  const std::string text = problems(study("bomb.yaml", bomb));
  EXPECT_NE(text.find("more than 1000000 nodes once its aliases are expanded"), std::string::npos) << text;
  const std::string deep = problems(study("deep.yaml", "base: " + std::string(100, '[') + std::string(100, ']') + "\n"));
  EXPECT_NE(deep.find("nests deeper than 64 levels"), std::string::npos) << deep;
}

TEST(Study, AKernelShapeNoPointCanRunIsRefusedWhereItIsGiven) {
  const std::string base = problems(study("k0.yaml", "kind: kernel\nbase: {hw: h100.json, op: gemm, n: 64, k: 0}\n"
                                                     "axes:\n  - {param: m, values: [1, 8]}\n"));
  EXPECT_NE(base.find("k0.yaml:2:/base/k: gemm needs k > 0"), std::string::npos) << base;
  const std::string axis = problems(study("m0.yaml", "kind: kernel\nbase: {hw: h100.json, op: gemm, n: 64, k: 64}\n"
                                                     "axes:\n  - {param: m, values: [1, 0, 8]}\n"));
  EXPECT_NE(axis.find("m0.yaml:4:/axes/0/values/1: gemm needs m > 0"), std::string::npos) << axis;
  // An op's own spelling (head-dim) is found as the study writes it (head_dim), on its axis's line.
  const std::string hd = problems(study("hd.yaml", "kind: kernel\nbase: {hw: h100.json, op: attention, batch: 1, heads: 8, "
                                                   "seq_q: 128, seq_kv: 128}\naxes:\n  - {param: head_dim, values: [128, 0]}\n"));
  EXPECT_NE(hd.find("hd.yaml:4:/axes/0/values/1: attention needs head-dim > 0"), std::string::npos) << hd;
  // A rule between parameters that only some combinations break is left to those points' rows.
  EXPECT_EQ(problems(study("causal.yaml", "kind: kernel\nbase: {hw: h100.json, op: attention, batch: 1, heads: 8, "
                                          "head_dim: 128, causal: true}\naxes:\n  - {param: seq_q, values: [128, 4096]}\n"
                                          "  - {param: seq_kv, values: [128, 4096]}\n")),
            "");
  // A shape key of another op, varied for that op, is not this op's problem.
  EXPECT_EQ(problems(study("mixed.yaml", "kind: kernel\nbase: {hw: h100.json, m: 64, n: 64, k: 64, elements: 1024}\n"
                                         "axes:\n  - {param: op, values: [gemm, gelu]}\n")),
            "");
}

}  // namespace

namespace {

TEST(Study, AServeStudyVariesTheRateAndReportsTheServingMetrics) {
  const std::string path = study("serve.yaml", R"(kind: serve
base: {hw: h100.json, model: llama3-8b, requests: 40, input_len: 256, output_len: 16, slo: ttft=1s}
axes:
  - {param: rate, values: [2, 50]}
metrics: [ttft_p99_ms, goodput]
)");
  const session::Study s = session::load_study(path);
  EXPECT_EQ(s.kind, session::StudyKind::serve);
  EXPECT_STREQ(session::study_kind_name(s.kind), "serve");
  const std::vector<session::Point> points = session::expand(s);
  const std::vector<session::SweepRow> rows = session::run_points(s, points, {}, session::SweepOptions{});
  ASSERT_EQ(rows.size(), 2u);
  const auto& names = session::study_metrics(s.kind);
  const auto ttft = static_cast<std::size_t>(std::find(names.begin(), names.end(), "ttft_p99_ms") - names.begin());
  ASSERT_LT(ttft, names.size());
  for (const auto& r : rows) ASSERT_EQ(r.status, "ok") << r.reason;
  EXPECT_GT(rows[1].metrics[ttft], rows[0].metrics[ttft]);  // the queue at 50 a second
  // A serving parameter's bad value is refused at its line, naming it.
  const std::string bad = study("serve_bad.yaml", R"(kind: serve
base: {hw: h100.json, model: llama3-8b, engine: tgi}
axes:
  - {param: arrival, values: [poisson, bursty]}
)");
  const std::string text = problems(bad);
  EXPECT_NE(text.find("tgi"), std::string::npos) << text;
  EXPECT_NE(text.find("bursty"), std::string::npos) << text;
}

TEST(Study, AGraphStudyRunsAModelsIrOnEachMachine) {
  const std::string path = study("graph.yaml", R"(kind: graph
base: {hw: h100.json, graph: gpt.json}
axes:
  - {name: HBM bandwidth, hw: /components/gpu/components/hbm/bandwidth, values: [2 TB/s, 8 TB/s]}
  - {param: framework, values: [eager, native]}
)");
  fs::copy(fs::path(SYNTORCH_SOURCE_DIR) / "examples" / "graphs" / "gpt2_2layer_ir.json",
           fs::path(path).parent_path() / "gpt.json", fs::copy_options::overwrite_existing);
  const session::Study s = session::load_study(path);
  EXPECT_EQ(s.kind, session::StudyKind::graph);
  EXPECT_EQ(s.metrics, (std::vector<std::string>{"time_ms", "achieved_tflops"}));
  const std::vector<session::SweepRow> rows = session::run_points(s, session::expand(s), {}, session::SweepOptions{});
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& r : rows) ASSERT_EQ(r.status, "ok") << r.reason;
  // Native launches leave the graph to the device: faster, and more so with more bandwidth.
  EXPECT_LT(rows[1].metrics[0], rows[0].metrics[0]);
  EXPECT_LT(rows[3].metrics[0], rows[1].metrics[0]);
  const std::string bad = study("graph_bad.yaml", R"(kind: grpah
base: {hw: h100.json}
)");
  EXPECT_NE(problems(bad).find("did you mean \"graph\""), std::string::npos) << problems(bad);
  const std::string missing = study("graph_missing.yaml", R"(kind: graph
base: {hw: h100.json, graph: none.json, framework: jit}
)");
  const std::string text = problems(missing);
  EXPECT_NE(text.find("no graph file \"none.json\""), std::string::npos) << text;
  EXPECT_NE(text.find("expected eager or native, got \"jit\""), std::string::npos) << text;
  const std::string no_graph = study("graph_none.yaml", "kind: graph\nbase: {hw: h100.json}\n");
  EXPECT_NE(problems(no_graph).find("/base/graph: missing"), std::string::npos) << problems(no_graph);
}

}  // namespace

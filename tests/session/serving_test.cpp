// Serving: the rules the serving issue names, each on a small run, and the pieces (traffic,
// KV pool, scheduler, metrics) on their own.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>

#include "run_helpers.hpp"
#include "serving_helpers.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/session/serving/capacity.hpp"
#include "syntorch/session/serving/serve.hpp"
#include "syntorch/session/simulate.hpp"
#include "syntorch/trace/recorder.hpp"
#include "syntorch/trace/sink.hpp"

namespace {

using namespace syntorch;
namespace sv = session::serving;
using session_testing::config;
using session_testing::model;

sv::ServeSpec spec_of(const std::vector<std::pair<std::string, std::string>>& params) {
  return session_testing::serve_spec(params);
}

sv::ServeReport run(const sv::ServeSpec& s, const std::string& hw = "h100_sxm5_80gb.json",
                    trace::Recorder* recorder = nullptr) {
  const hw::Machine m = hw::Machine::load(config(hw));
  return sv::serve(m, runtime::KernelPolicy{}, s, recorder);
}

// Counts the request spans of each name on the requests' lanes.
class RequestSpans : public trace::Sink {
 public:
  void on_process(const trace::ProcessInfo& p) override {
    if (p.name == "requests") pid_ = p.pid;
  }
  void on_track(const trace::TrackInfo& t) override { pids_[t.id.index] = t.pid; }
  void on_span(const trace::SpanEvent& s) override {
    if (pids_[s.track.index] == pid_ && s.category == "request") ++count[std::string(s.name.substr(0, 7))];
  }
  void on_instant(const trace::InstantEvent&) override {}
  void on_counter(const trace::CounterEvent&) override {}
  void on_flow(const trace::FlowEvent&) override {}
  std::map<std::string, int> count;

 private:
  std::int32_t pid_ = -1;
  std::map<std::uint32_t, std::int32_t> pids_;
};

// ---- the pieces ----

TEST(ServingTraffic, PoissonAndGammaGapsHaveTheRatesMeanAndTheirSpread) {
  sv::TrafficSpec t;
  t.requests = 20000;
  t.rate_per_s = 5;
  for (auto [arrival, cv] : {std::pair{sv::Arrival::poisson, 1.0}, std::pair{sv::Arrival::gamma, 3.0},
                             std::pair{sv::Arrival::gamma, 0.5}}) {
    t.arrival = arrival;
    t.cv = cv;
    const std::vector<sv::Request> r = sv::make_requests(t);
    std::vector<double> gaps;
    for (std::size_t i = 1; i < r.size(); ++i) gaps.push_back(r[i].arrival_s - r[i - 1].arrival_s);
    const double mean = std::accumulate(gaps.begin(), gaps.end(), 0.0) / static_cast<double>(gaps.size());
    double var = 0;
    for (double g : gaps) var += (g - mean) * (g - mean);
    const double measured_cv = std::sqrt(var / static_cast<double>(gaps.size())) / mean;
    EXPECT_NEAR(mean, 0.2, 0.2 * 0.05) << "cv " << cv;
    EXPECT_NEAR(measured_cv, cv, cv * 0.08);
  }
}

TEST(ServingTraffic, TheSameSeedGivesTheSameRequestsAndLengthsStayInTheirBounds) {
  sv::TrafficSpec t;
  t.requests = 500;
  t.input.kind = sv::LengthDistribution::Kind::lognormal;
  t.input.mean = 1000;
  t.input.stddev = 0.8;
  t.input.min = 10;
  t.input.max = 4000;
  const std::vector<sv::Request> a = sv::make_requests(t), b = sv::make_requests(t);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].arrival_s, b[i].arrival_s);
    EXPECT_EQ(a[i].input_tokens, b[i].input_tokens);
    EXPECT_GE(a[i].input_tokens, 10);
    EXPECT_LE(a[i].input_tokens, 4000);
  }
  t.seed = 1;
  EXPECT_NE(sv::make_requests(t)[5].input_tokens, a[5].input_tokens);
}

std::string requests_file(const std::string& name) {
  return std::string(SYNTORCH_SOURCE_DIR) + "/tests/data/requests/" + name;
}

TEST(ServingTraffic, RequestFilesInTheCommonFormatsGiveTheirArrivalsAndLengths) {
  Diagnostics d;
  bool timed = false;
  // The Azure LLM inference traces: a date and time, ContextTokens, GeneratedTokens.
  std::vector<sv::Request> r = sv::load_requests_file(requests_file("azure_code.csv"), timed, d);
  ASSERT_TRUE(d.empty()) << d.to_string();
  ASSERT_EQ(r.size(), 5u);
  EXPECT_TRUE(timed);
  EXPECT_NEAR(r[1].arrival_s, 50.9951690 - 46.6805900, 1e-6);
  EXPECT_EQ(r[2].input_tokens, 879);
  EXPECT_EQ(r[2].output_tokens, 2);
  // APEX+'s JSON lines: StartTimeOffset in nanoseconds.
  r = sv::load_requests_file(requests_file("apex_lmsys.jsonl"), timed, d);
  ASSERT_TRUE(d.empty()) << d.to_string();
  EXPECT_NEAR(r[1].arrival_s, 2.0, 1e-9);
  EXPECT_EQ(r[1].input_tokens, 589);
  // Mooncake's: a bare timestamp in milliseconds.
  r = sv::load_requests_file(requests_file("mooncake.jsonl"), timed, d);
  ASSERT_TRUE(d.empty()) << d.to_string();
  EXPECT_NEAR(r[2].arrival_s, 3.5, 1e-9);
  EXPECT_EQ(r[0].input_tokens, 6955);
  // ShareGPT: text, about 4 characters a token; a conversation without a reply is skipped; no times.
  r = sv::load_requests_file(requests_file("sharegpt.json"), timed, d);
  ASSERT_TRUE(d.empty()) << d.to_string();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_FALSE(timed);
  EXPECT_EQ(r[0].input_tokens, 13);  // 50 characters
  EXPECT_EQ(r[0].output_tokens, 2);  // "Paris."
  // In a run: the file's times stretched by time_scale, its first `requests` rows.
  sv::TrafficSpec t;
  t.requests_file = requests_file("apex_lmsys.jsonl");
  t.time_scale = 0.5;
  t.requests = 2;
  t.requests_given = true;
  r = sv::make_requests(t);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_NEAR(r[1].arrival_s, 1.0, 1e-9);
  // Without times, the arrival process's.
  t.requests_file = requests_file("sharegpt.json");
  t.requests_given = false;
  t.arrival = sv::Arrival::fixed;
  t.rate_per_s = 4;
  r = sv::make_requests(t);
  EXPECT_NEAR(r[1].arrival_s, 0.25, 1e-12);
}

TEST(ServingTraffic, ABadRequestFileIsReportedWithItsLine) {
  const std::string path = (std::filesystem::temp_directory_path() / "syntorch_bad_requests.csv").string();
  std::ofstream(path) << "timestamp_s,input_tokens,output_tokens\n0,10,5\nsoon,10,5\n1,0,5\n2,\"10,5\n";
  Diagnostics d;
  bool timed = false;
  sv::load_requests_file(path, timed, d);
  const std::string text = d.to_string();
  EXPECT_NE(text.find(path + ":3"), std::string::npos) << text;
  EXPECT_NE(text.find("\"soon\""), std::string::npos) << text;
  EXPECT_NE(text.find(path + ":4"), std::string::npos) << text;
  EXPECT_NE(text.find("input tokens: expected 1 to"), std::string::npos) << text;
  EXPECT_NE(text.find(path + ":5: a quoted field is not closed on its line"), std::string::npos) << text;
  Diagnostics e;
  sv::load_requests_file(path + ".txt", timed, e);
  EXPECT_FALSE(e.empty());
}

TEST(KvBlockPool, AFreedCachedPageIsTakenAgainUntilANewPageEvictsTheLeastRecentlyFreed) {
  sv::KvBlockPool pool(4, true);
  std::vector<std::int32_t> a, b;
  ASSERT_TRUE(pool.allocate(a, 2, {}));
  pool.cache(a[0], 11);
  pool.cache(a[1], 12);
  pool.release(a);  // both free, still cached
  EXPECT_EQ(pool.free_blocks(), 4);
  const std::uint64_t keys[] = {11, 12, 13};
  EXPECT_EQ(pool.cached_prefix(keys), 2);
  ASSERT_TRUE(pool.allocate(b, 3, std::span<const std::uint64_t>(keys, 2)));  // two hits, one new page
  EXPECT_EQ(pool.free_blocks(), 1);
  EXPECT_EQ(pool.evictions(), 0u);
  pool.release(b);
  std::vector<std::int32_t> c;
  ASSERT_TRUE(pool.allocate(c, 4, {}));  // every page new: the cached ones are evicted
  EXPECT_EQ(pool.evictions(), 2u);
  EXPECT_EQ(pool.cached_prefix(keys), 0);
  std::vector<std::int32_t> d;
  EXPECT_FALSE(pool.allocate(d, 1, {}));
  EXPECT_TRUE(d.empty());
}

TEST(ServingScheduler, ChunkedPrefillSplitsAPromptOverTheTokenBudgetAndDecodeRidesAlong) {
  sv::EngineProfile p;
  p.max_num_batched_tokens = 1000;
  p.max_num_seqs = 8;
  p.block_size = 16;
  std::vector<sv::Request> rs(2);
  rs[0] = {0, 0.0, 100, 3};
  rs[1] = {1, 0.0, 2500, 2};
  sv::Scheduler s(p, 1000, rs);
  s.arrive_until(0);
  const sv::StepPlan& first = s.schedule(0);
  ASSERT_EQ(first.sequences.size(), 2u);
  EXPECT_EQ(first.sequences[0].new_tokens, 100);
  EXPECT_EQ(first.sequences[1].new_tokens, 900);  // the rest of the budget
  EXPECT_FALSE(first.sequences[1].samples);
  s.complete(1.0);
  const sv::StepPlan& second = s.schedule(1);
  ASSERT_EQ(second.sequences.size(), 2u);
  EXPECT_EQ(second.sequences[0].new_tokens, 1);  // decode
  EXPECT_EQ(second.sequences[1].new_tokens, 999);
  EXPECT_EQ(second.sequences[1].context, 1899);
  EXPECT_EQ(s.sequences()[0].first_token_s, 1.0);
}

TEST(ServingMetrics, PercentilesInterpolateBetweenRanksAsNumpyDoes) {
  std::vector<double> v = {4, 1, 3, 2};
  const sv::Distribution d = sv::distribution_of(v);
  EXPECT_DOUBLE_EQ(d.mean, 2.5);
  EXPECT_DOUBLE_EQ(d.median, 2.5);
  EXPECT_DOUBLE_EQ(d.p90, 3.7);
  EXPECT_DOUBLE_EQ(d.p99, 3.97);
}

// ---- whole runs ----

TEST(Serving, OneRequestAtATimeGivesTheSingleRequestSimulateTtftAndTpot) {
  const sv::ServeSpec s = spec_of({{"arrival", "fixed"}, {"rate", "0.2"}, {"requests", "3"}, {"input_len", "2048"},
                                   {"output_len", "32"}});
  const sv::ServeReport r = run(s);
  ASSERT_FALSE(r.oom) << r.oom_reason;
  session::RunSpec g;
  g.model = s.model;
  g.input_tokens = 2048;
  g.output_tokens = 32;
  g.graph = true;
  const hw::Machine m = hw::Machine::load(config("h100_sxm5_80gb.json"));
  const session::RunReport single = session::simulate_generation(m, runtime::KernelPolicy{}, g);
  Diagnostics d;
  const sv::EngineProfile vllm = *sv::engine_profile("vllm", d, "");
  const double step_cpu = vllm.step_overhead_s + vllm.sequence_overhead_s;
  // The engine's own CPU time aside, the same kernels: a decode step replays a graph in both.
  EXPECT_NEAR((r.metrics.tpot_s.mean - step_cpu) / single.tpot_s, 1.0, 0.03);
  // (The prefill's piecewise launches hide behind its GPU time.)
  EXPECT_NEAR((r.metrics.ttft_s.mean - step_cpu) / single.ttft_s, 1.0, 0.03);
  EXPECT_EQ(r.metrics.completed, 3);
  EXPECT_EQ(r.metrics.preemptions, 0);
}

TEST(Serving, LittlesLawHoldsInTheQueue) {
  const sv::ServeReport r = run(spec_of({{"rate", "8"}, {"requests", "150"}, {"input_len", "512"}, {"output_len", "64"},
                                         {"output_dist", "uniform"}, {"output_min", "16"}, {"output_max", "128"}}));
  ASSERT_FALSE(r.oom);
  // L, the mean number of requests in the system, from the engine's own counts over time,
  // against lambda x W from the requests' latencies.
  double area = 0, last = 0;
  for (const sv::StepSample& s : r.steps) {
    area += (s.time_s - last) * (s.running + s.waiting);
    last = s.time_s;
  }
  const double l = area / r.metrics.duration_s;
  const double lambda_w = r.metrics.request_throughput * r.metrics.e2e_s.mean;
  EXPECT_NEAR(l / lambda_w, 1.0, 0.1) << "L " << l << " lambda W " << lambda_w;
}

TEST(Serving, AKvPoolTooSmallForTheBatchPreemptsAndEveryRequestStillCompletes) {
  // 0.235 of 80 GB leaves about 1.8 GB of pool after 16 GB of weights: fewer tokens than the
  // batch's growing contexts need.
  trace::Recorder recorder;
  RequestSpans spans;
  recorder.attach(spans);
  const sv::ServeReport r = run(spec_of({{"arrival", "offline"}, {"requests", "64"}, {"input_len", "1024"},
                                         {"output_len", "512"}, {"memory_fraction", "0.235"}}),
                                "h100_sxm5_80gb.json", &recorder);
  recorder.finish();
  ASSERT_FALSE(r.oom) << r.oom_reason;
  EXPECT_LT(r.kv_tokens, 64 * 1536);
  EXPECT_GT(r.metrics.preemptions, 0);
  EXPECT_EQ(r.metrics.completed, 64);
  std::int64_t in_steps = 0;
  for (const sv::StepSample& s : r.steps) in_steps += s.preempted;
  EXPECT_EQ(in_steps, r.metrics.preemptions);
  // The trace shows each preemption on its request's lane, and every request's phases.
  EXPECT_EQ(spans.count["preempt"], r.metrics.preemptions);
  EXPECT_EQ(spans.count["request"], 64);
  EXPECT_EQ(spans.count["queued"], 64);
}

TEST(Serving, AnEngineWhosePoolCannotHoldTheLongestRequestDoesNotStart) {
  const sv::ServeReport r = run(spec_of({{"requests", "2"}, {"input_len", "8192"}, {"memory_fraction", "0.21"}}));
  EXPECT_TRUE(r.oom);
  EXPECT_NE(r.oom_reason.find("fewer than the longest request"), std::string::npos) << r.oom_reason;
}

TEST(Serving, ThroughputSaturatesAsTheRateRisesAndLatencyGrows) {
  std::vector<double> throughput, ttft;
  for (const char* rate : {"1", "4", "64", "256"}) {
    const sv::ServeReport r =
        run(spec_of({{"rate", rate}, {"requests", "160"}, {"input_len", "1024"}, {"output_len", "64"},
                     {"max_num_seqs", "64"}}));
    throughput.push_back(r.metrics.output_throughput);
    ttft.push_back(r.metrics.ttft_s.p99);
  }
  EXPECT_GT(throughput[1], 3 * throughput[0]);       // below saturation: throughput follows the rate
  EXPECT_LT(throughput[3], 1.15 * throughput[2]);    // past it: flat
  EXPECT_GT(ttft[3], 1.5 * ttft[1]);                 // and the queue shows in the tail
}

TEST(Serving, PrefixCachingSkipsTheCachedBlocksPrefill) {
  const std::vector<std::pair<std::string, std::string>> base = {
      {"arrival", "fixed"}, {"rate", "4"}, {"requests", "40"}, {"input_len", "2048"}, {"output_len", "16"},
      {"shared_prefix", "1536"}};
  auto with = base;
  with.push_back({"prefix_caching", "true"});
  auto without = base;
  without.push_back({"prefix_caching", "false"});
  const sv::ServeReport a = run(spec_of(with)), b = run(spec_of(without));
  // Every request after the first finds the prefix's 96 full pages of 16.
  EXPECT_EQ(a.metrics.prefix_hit_tokens, 39 * 1536);
  EXPECT_EQ(b.metrics.prefix_hit_tokens, 0);
  std::int64_t prefill_a = 0, prefill_b = 0;
  for (const auto& s : a.steps) prefill_a += s.prefill_tokens;
  for (const auto& s : b.steps) prefill_b += s.prefill_tokens;
  EXPECT_EQ(prefill_b - prefill_a, 39 * 1536);
  EXPECT_LT(a.metrics.ttft_s.mean, 0.6 * b.metrics.ttft_s.mean);
}

TEST(Serving, SequencesSharingAPrefixHoldItsPagesOnceInThePool) {
  // 192 sequences at once share 1,920 prompt tokens: counted per sequence their contexts would
  // need several times the pool's pages; held once, they fit.
  const sv::ServeReport r = run(spec_of({{"arrival", "offline"}, {"requests", "192"}, {"input_len", "2048"},
                                         {"output_len", "64"}, {"shared_prefix", "1920"},
                                         {"memory_fraction", "0.3"}}));
  ASSERT_FALSE(r.oom) << r.oom_reason;
  EXPECT_EQ(r.metrics.completed, 192);
  EXPECT_LT(r.kv_tokens, 192 * 2112);
  // Requests admitted in the first step already take the pages its first request fills, as vLLM
  // caches a step's pages when it schedules them.
  EXPECT_GT(r.metrics.prefix_hit_tokens, 150 * 1920);
}

TEST(Serving, WithoutChunkedPrefillAPromptLongerThanAStepIsRefusedBeforeTheRun) {
  const hw::Machine m = hw::Machine::load(config("h100_sxm5_80gb.json"));
  Diagnostics d;
  EXPECT_FALSE(sv::validate_serve(spec_of({{"engine", "trtllm"}, {"input_len", "16384"}}), m, d, "flags"));
  EXPECT_NE(d.to_string().find("max_num_batched_tokens"), std::string::npos) << d.to_string();
  EXPECT_NE(d.to_string().find("chunked_prefill true"), std::string::npos) << d.to_string();
  Diagnostics late;
  EXPECT_FALSE(sv::validate_serve(spec_of({{"rate", "0.00001"}, {"requests", "50"}}), m, late, "flags"));
  EXPECT_NE(late.to_string().find("at most 1e+06 s are simulated"), std::string::npos) << late.to_string();
}

TEST(Serving, SpeculativeDecodingYieldsTheAcceptedProposalsAndOneMoreEachStep) {
  const std::vector<std::pair<std::string, std::string>> base = {
      {"arrival", "fixed"}, {"rate", "1"}, {"requests", "40"}, {"input_len", "512"}, {"output_len", "200"}};
  auto on = base;
  on.push_back({"speculative_tokens", "3"});
  on.push_back({"acceptance_rate", "0.7"});
  const sv::ServeReport plain = run(spec_of(base)), fast = run(spec_of(on));
  EXPECT_EQ(plain.metrics.proposed_tokens, 0);
  ASSERT_GT(fast.metrics.proposed_tokens, 0);
  // Each proposal accepted with probability 0.7 until the first rejection: of 3, on average
  // (0.7 + 0.49 + 0.343) / 3 = 51.1% (fewer proposed near a request's end).
  const double acceptance =
      static_cast<double>(fast.metrics.accepted_tokens) / static_cast<double>(fast.metrics.proposed_tokens);
  EXPECT_NEAR(acceptance, 0.511, 0.02);
  // A verifying step streams the same weights as a decode step: the tokens between them come
  // about 2.5 at a time, so TPOT falls by about that and the gap between steps stays.
  EXPECT_NEAR(plain.metrics.tpot_s.mean / fast.metrics.tpot_s.mean, 2.53, 0.25);
  EXPECT_NEAR(fast.metrics.itl_s.mean / plain.metrics.itl_s.mean, 1.0, 0.05);
  EXPECT_EQ(fast.metrics.output_tokens, 40 * 200);  // never past a request's end
}

// A draft model proposes the tokens in passes of its own before the step verifies them: a
// step costs the target's verification plus K small forwards, so TPOT falls by less than the
// n-gram proposer's (whose proposals cost no GPU time), the draft's weights and KV take memory
// from the pool, and the acceptance is the same rule.
TEST(Serving, ADraftModelsPassesCostTimeAndMemoryBesideTheTargets) {
  const std::vector<std::pair<std::string, std::string>> base = {
      {"arrival", "fixed"}, {"rate", "1"},         {"requests", "30"},       {"input_len", "512"},
      {"output_len", "160"}, {"speculative_tokens", "3"}, {"acceptance_rate", "0.7"}};
  auto drafted = base;
  drafted.push_back({"draft_model", "llama3.2-1b"});
  const sv::ServeReport ngram = run(spec_of(base)), draft = run(spec_of(drafted));
  ASSERT_FALSE(draft.oom) << draft.oom_reason;
  const double acceptance =
      static_cast<double>(draft.metrics.accepted_tokens) / static_cast<double>(draft.metrics.proposed_tokens);
  EXPECT_NEAR(acceptance, 0.511, 0.03);
  // Three passes of a 1B draft beside an 8B target's verification: each step a third or so longer.
  EXPECT_GT(draft.metrics.itl_s.mean, 1.15 * ngram.metrics.itl_s.mean);
  EXPECT_LT(draft.metrics.itl_s.mean, 2.0 * ngram.metrics.itl_s.mean);
  EXPECT_GT(draft.weights_bytes, ngram.weights_bytes + 2e9);  // 1.2 B parameters in 16 bits
  EXPECT_LT(draft.kv_tokens, ngram.kv_tokens);                 // its pages hold both models' KV
  // Without proposals to make, a draft model is refused by name.
  auto none = drafted;
  none.push_back({"speculative_tokens", "0"});
  Diagnostics d;
  EXPECT_FALSE(sv::validate_serve(spec_of(none), hw::Machine::load(config("h100_sxm5_80gb.json")), d, "serve"));
  EXPECT_NE(d.to_string().find("give num_speculative_tokens 1 to 15"), std::string::npos) << d.to_string();
}

TEST(Serving, TheSameInputsGiveTheSameReport) {
  const sv::ServeSpec s = spec_of({{"rate", "20"}, {"requests", "100"}, {"input_dist", "lognormal"},
                                   {"input_stddev", "0.5"}, {"seed", "7"}});
  const std::string a = sv::serve_report_json(run(s), s, "h100").dump();
  const std::string b = sv::serve_report_json(run(s), s, "h100").dump();
  EXPECT_EQ(a, b);
}

TEST(Serving, StepsReusedFromTheirShapeAgreeWithEveryStepSimulated) {
  const std::vector<std::pair<std::string, std::string>> base = {
      {"rate", "30"}, {"requests", "150"}, {"input_len", "512"}, {"input_dist", "lognormal"}, {"input_stddev", "0.5"},
      {"output_len", "64"}, {"output_dist", "lognormal"}, {"output_stddev", "0.5"}};
  auto on = base, off = base;
  on.push_back({"reuse_steps", "true"});
  off.push_back({"reuse_steps", "false"});
  const sv::ServeReport a = run(spec_of(on)), b = run(spec_of(off));
  std::size_t reused = 0;
  for (const auto& s : a.steps) reused += s.reused ? 1 : 0;
  EXPECT_GT(reused, a.steps.size() / 2);
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (auto [x, y] : {std::pair{a.metrics.ttft_s.mean, b.metrics.ttft_s.mean},
                      std::pair{a.metrics.tpot_s.mean, b.metrics.tpot_s.mean},
                      std::pair{a.metrics.e2e_s.p99, b.metrics.e2e_s.p99},
                      std::pair{a.metrics.output_throughput, b.metrics.output_throughput}}) {
    EXPECT_NEAR(x / y, 1.0, 0.01);
  }
}

TEST(Serving, EachEngineProfileServesTheSameTraffic) {
  for (const std::string engine : {"vllm", "sglang", "trtllm"}) {
    const sv::ServeReport r = run(spec_of({{"engine", engine}, {"rate", "16"}, {"requests", "100"}}));
    ASSERT_FALSE(r.oom) << engine << ": " << r.oom_reason;
    EXPECT_EQ(r.metrics.completed, 100) << engine;
    if (engine == "trtllm") {
      EXPECT_EQ(r.metrics.preemptions, 0);  // its whole KV reserved at admission
    }
  }
}

TEST(ServingCapacity, TheCapacityIsTheHighestProbedRateThatMeetsTheObjectivesAtP99) {
  const sv::ServeSpec s = spec_of({{"requests", "120"}, {"input_len", "1024"}, {"output_len", "64"},
                                   {"slo", "ttft=300ms,tpot=25ms"}});
  const hw::Machine m = hw::Machine::load(config("h100_sxm5_80gb.json"));
  const sv::CapacityReport r = sv::capacity_search(m, runtime::KernelPolicy{}, s, 6);
  ASSERT_FALSE(r.oom);
  ASSERT_EQ(r.points.size(), 6u);
  EXPECT_GT(r.capacity_rate_per_s, 0);
  EXPECT_LT(r.capacity_rate_per_s, r.saturation_rate_per_s);
  for (const sv::CapacityPoint& p : r.points) {
    // Met: both p99s within the objectives (300 ms, 25 ms), read off the probe's own metrics.
    EXPECT_EQ(p.meets, p.metrics.ttft_s.p99 <= 0.3 && p.metrics.tpot_s.p99 <= 0.025) << p.rate_per_s;
    EXPECT_EQ(p.meets, p.rate_per_s <= r.capacity_rate_per_s) << p.rate_per_s;
  }
  // Latency grows with the rate along the curve.
  EXPECT_GT(r.points.back().metrics.ttft_s.p99, r.points.front().metrics.ttft_s.p99);
  // Nothing to meet, or no rate to vary: refused.
  Diagnostics d;
  sv::ServeSpec none = s;
  none.slo = {};
  none.traffic.arrival = sv::Arrival::offline;
  EXPECT_FALSE(sv::validate_capacity(none, m, d, "flags"));
  EXPECT_NE(d.to_string().find("needs an objective"), std::string::npos) << d.to_string();
  EXPECT_NE(d.to_string().find("offline arrivals have none"), std::string::npos) << d.to_string();
}

TEST(Serving, BadParametersAreReportedByName) {
  sv::ServeSpec s;
  Diagnostics d;
  session::set_parameter(sv::serving_parameters(), s, "engine", "vllm2", d, "flags");
  session::set_parameter(sv::serving_parameters(), s, "slo", "ttft=fast", d, "flags");
  session::set_parameter(sv::serving_parameters(), s, "memory_fraction", "1.5", d, "flags");
  session::set_parameter(sv::serving_parameters(), s, "input_dist", "zipf", d, "flags");
  const std::string text = d.to_string();
  EXPECT_NE(text.find("expected one of vllm, sglang, trtllm, got \"vllm2\""), std::string::npos) << text;
  EXPECT_NE(text.find("ttft"), std::string::npos) << text;
  EXPECT_NE(text.find("expected a fraction in (0, 1], got \"1.5\""), std::string::npos) << text;
  EXPECT_NE(text.find("zipf"), std::string::npos) << text;
  EXPECT_EQ(d.size(), 4u);
}

}  // namespace

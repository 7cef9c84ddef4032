// Replicas behind a router: the router's policies on their own (what each reads of the replicas'
// reports, and when), and deployments of several replicas run whole.

#include <gtest/gtest.h>

#include "run_helpers.hpp"
#include "serving_helpers.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/session/serving/router.hpp"
#include "syntorch/session/serving/serve.hpp"
#include "syntorch/trace/recorder.hpp"
#include "syntorch/trace/sink.hpp"

namespace {

using namespace syntorch;
namespace sv = session::serving;
using session_testing::config;
using session_testing::model;

std::vector<sv::Request> arrivals(const std::vector<double>& times, std::int64_t input_tokens = 16,
                                  std::int64_t group = -1) {
  std::vector<sv::Request> out;
  for (std::size_t i = 0; i < times.size(); ++i) {
    sv::Request r;
    r.id = static_cast<std::int64_t>(i);
    r.arrival_s = times[i];
    r.input_tokens = input_tokens;
    r.output_tokens = 4;
    r.prefix_group = group;
    r.shared_prefix_tokens = group >= 0 ? input_tokens : 0;
    out.push_back(r);
  }
  return out;
}

TEST(Router, RoundRobinTakesTurns) {
  sv::Router router(sv::RouterPolicy::round_robin, arrivals({0.1, 0.2, 0.3, 0.4, 0.5}), 3, 16, 4);
  EXPECT_EQ(router.take(0, 1.0).size(), 2u);
  EXPECT_EQ(router.routes(), (std::vector<int>{0, 1, 2, 0, 1}));
  EXPECT_EQ(router.take(1, 1.0).size(), 2u);
  EXPECT_FALSE(router.drained(2));
  EXPECT_EQ(router.take(2, 1.0).size(), 1u);
  EXPECT_TRUE(router.drained(2));
}

// A request arriving at a is placed on what the replicas had reported by a - kStateLagS: a
// report dated at the arrival itself, or later, is not read, whichever replica's thread routes it.
TEST(Router, LeastOutstandingReadsOnlyReportsDatedBeforeTheArrival) {
  sv::Router router(sv::RouterPolicy::least_outstanding, arrivals({0.0, 0.0, 1.0, 2.0}), 2, 16, 4);
  // The two first arrivals: one each (ties go to the lower index, then replica 0 has one).
  EXPECT_EQ(router.take(0, 0.0).size(), 1u);
  EXPECT_EQ(router.routes()[1], 1);
  // Replica 1 finished its request at 0.5: the arrival at 1.0 goes to it.
  router.publish(1, 0.5, sv::ReplicaState{1, 0});
  // Replica 1 reports another finish dated at 2.0 exactly, replica 0 none: at 2.0 replica 1 holds
  // one unfinished (the report at 2.0 is too late to count), replica 0 one: the tie goes to 0.
  router.publish(0, 2.0 - sv::Router::kStateLagS / 2, sv::ReplicaState{0, 0});
  router.publish(1, 2.0, sv::ReplicaState{2, 0});
  router.take(1, 2.0);
  EXPECT_EQ(router.routes(), (std::vector<int>{0, 1, 1, 0}));
}

TEST(Router, LeastKvCountsThePromptsRoutedSinceTheLastReport) {
  // Replica 0 reported 10 pages in use, replica 1 20: the first prompt (16 pages of 16 tokens)
  // goes to 0, which then counts 26 against 20: the second goes to 1.
  sv::Router router(sv::RouterPolicy::least_kv, arrivals({1.0, 1.1}, 256), 2, 16, 4);
  router.publish(0, 0.5, sv::ReplicaState{0, 10});
  router.publish(1, 0.5, sv::ReplicaState{0, 20});
  router.take(0, 2.0);
  EXPECT_EQ(router.routes(), (std::vector<int>{0, 1}));
}

TEST(Router, PrefixAffinityKeepsAGroupOnItsReplicaUntilItIsBusierThanTheBalance) {
  // Eight requests of one prefix group, none finishing: with a balance of 2 the group's replica
  // takes requests while it holds at most 2 more than the least loaded, then another does.
  sv::Router router(sv::RouterPolicy::prefix_affinity, arrivals({0.1, 0.2, 0.3, 0.4, 0.5}, 64, 0), 2, 16, 2);
  router.take(0, 1.0);
  EXPECT_EQ(router.routes(), (std::vector<int>{0, 0, 0, 1, 1}));
}

// ---- deployments run whole ----

sv::ServeSpec spec_of(const std::vector<std::pair<std::string, std::string>>& params) {
  return session_testing::serve_spec(params);
}

sv::ServeReport run(const sv::ServeSpec& s, const std::string& hw = "dgx_h100.json") {
  const hw::Machine m = hw::Machine::load(config(hw));
  return sv::serve(m, runtime::KernelPolicy{}, s);
}

// Four replicas under round robin at four times the rate serve each a quarter of the traffic
// (evenly spaced arrivals: each replica sees one replica's stream): four times the throughput at
// one replica's latency, every request served once.
TEST(ServeReplicas, FourReplicasCarryFourTimesTheRateAtOneReplicasLatency) {
  const auto one = run(spec_of({{"tp", "2"}, {"arrival", "fixed"}, {"rate", "4"}, {"requests", "60"},
                                {"input_len", "256"}, {"output_len", "32"}, {"dtype", "bf16"}}));
  const auto four = run(spec_of({{"tp", "2"}, {"replicas", "4"}, {"arrival", "fixed"}, {"rate", "16"},
                                 {"requests", "240"}, {"input_len", "256"}, {"output_len", "32"}, {"dtype", "bf16"}}));
  ASSERT_EQ(four.replicas.size(), 4u);
  for (const sv::ReplicaSummary& r : four.replicas) EXPECT_EQ(r.requests, 60);
  EXPECT_EQ(four.metrics.completed, 240);
  EXPECT_NEAR(four.metrics.request_throughput / one.metrics.request_throughput, 4.0, 0.15);
  EXPECT_NEAR(four.metrics.tpot_s.mean / one.metrics.tpot_s.mean, 1.0, 0.02);
  EXPECT_NEAR(four.metrics.ttft_s.mean / one.metrics.ttft_s.mean, 1.0, 0.02);
}

TEST(ServeReplicas, ADeploymentRunsTheSameTwice) {
  const auto spec = spec_of({{"tp", "2"}, {"replicas", "4"}, {"router", "least_kv"}, {"rate", "60"},
                             {"requests", "300"}, {"input_len", "512"}, {"output_len", "64"},
                             {"output_dist", "lognormal"}, {"output_stddev", "1"}, {"dtype", "bf16"}});
  const auto a = run(spec), b = run(spec);
  EXPECT_EQ(sv::serve_report_json(a, spec, "dgx_h100.json").dump(), sv::serve_report_json(b, spec, "dgx_h100.json").dump());
}

// Requests sharing a prefix find it cached on the replica that served it before: affinity
// computes each group's prefix on fewer replicas than round robin does.
TEST(ServeReplicas, PrefixAffinityFindsMoreOfThePrefixCache) {
  auto spec = spec_of({{"tp", "2"}, {"replicas", "4"}, {"rate", "20"}, {"requests", "400"}, {"input_len", "2560"},
                       {"output_len", "16"}, {"shared_prefix", "2048"}, {"prefix_groups", "64"}, {"dtype", "bf16"}});
  const auto spread = run(spec);
  spec.router = sv::RouterPolicy::prefix_affinity;
  const auto kept = run(spec);
  EXPECT_GT(kept.metrics.prefix_hit_tokens, spread.metrics.prefix_hit_tokens * 5 / 4);
  EXPECT_LT(kept.metrics.ttft_s.mean, spread.metrics.ttft_s.mean);
}

// ---- disaggregated prefill and decode ----

// The peer copies a trace shows (their bytes) and the requests' hand-over spans.
class Transfers : public trace::Sink {
 public:
  void on_process(const trace::ProcessInfo&) override {}
  void on_track(const trace::TrackInfo&) override {}
  void on_span(const trace::SpanEvent& s) override {
    if (s.name == "memcpy PtoP") {
      ++copies;
      for (const trace::Arg& a : s.args) {
        if (a.key == "bytes") bytes += a.value.as_uint64();
      }
    }
    if (s.name == "handed over") ++handovers;
  }
  void on_instant(const trace::InstantEvent&) override {}
  void on_counter(const trace::CounterEvent&) override {}
  void on_flow(const trace::FlowEvent&) override {}
  std::uint64_t bytes = 0;
  int copies = 0, handovers = 0;
};

// Each request's prompt is served by a prefill engine and its keys and values pulled to a decode
// engine: the bytes the model implies (its prompt's tokens times the KV bytes a token takes on a
// device) move once per request and device, the first token comes from the prefill engine and
// the rest from the decode engine.
TEST(ServeDisaggregated, EachPromptsKvCacheMovesToTheDecodeEngineOverTheLinks) {
  trace::Recorder recorder;
  Transfers transfers;
  recorder.attach(transfers);
  const auto spec = spec_of({{"tp", "2"}, {"replicas", "1"}, {"prefill_replicas", "1"}, {"rate", "8"},
                             {"requests", "24"}, {"input_len", "1000"}, {"output_len", "16"}, {"dtype", "bf16"}});
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  const sv::ServeReport r = sv::serve(m, runtime::KernelPolicy{}, spec, &recorder);
  recorder.finish();
  ASSERT_FALSE(r.oom) << r.oom_reason;
  EXPECT_EQ(r.metrics.completed, 24);
  ASSERT_EQ(r.replicas.size(), 2u);
  EXPECT_EQ(r.replicas[0].role, "decode");
  EXPECT_EQ(r.replicas[1].role, "prefill");
  EXPECT_EQ(r.replicas[1].output_tokens, 24);       // the first tokens
  EXPECT_GT(r.replicas[1].kv_used_peak, 0);         // its pages held until pulled
  EXPECT_EQ(r.replicas[0].output_tokens, 24 * 15);  // the rest
  // Llama-3 8B: 32 layers x 8 KV heads x 128 x (K and V) x 2 bytes, 4 KV heads a device at tp 2.
  const std::uint64_t per_token_per_device = 32ULL * 4 * 128 * 2 * 2;
  EXPECT_EQ(transfers.copies, 24);  // the decode engine's first rank (its mirror's are not traced)
  EXPECT_EQ(transfers.bytes, 24ULL * 1000 * per_token_per_device);
  EXPECT_EQ(transfers.handovers, 24);
}

// Decode steps with no prompt among them: the decode engine's inter-token gaps stay even where
// a whole replica's are broken by the prefills it batches in (at equal devices).
TEST(ServeDisaggregated, DecodeAloneKeepsTheInterTokenGapsEven) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  auto spec = spec_of({{"tp", "4"}, {"replicas", "2"}, {"rate", "6"}, {"requests", "60"}, {"input_len", "4096"},
                       {"output_len", "64"}, {"dtype", "bf16"}});
  const sv::ServeReport whole = sv::serve(m, runtime::KernelPolicy{}, spec);
  spec.replicas = 1;
  spec.prefill_replicas = 1;
  const sv::ServeReport split = sv::serve(m, runtime::KernelPolicy{}, spec);
  EXPECT_LT(split.metrics.itl_s.p99, 0.5 * whole.metrics.itl_s.p99);
  EXPECT_EQ(split.metrics.completed, 60);
}

TEST(ServeDisaggregated, ADeploymentRunsTheSameTwice) {
  const auto spec = spec_of({{"tp", "2"}, {"replicas", "2"}, {"prefill_replicas", "2"}, {"router", "least_outstanding"},
                             {"rate", "30"}, {"requests", "120"}, {"input_len", "1024"}, {"output_len", "32"},
                             {"output_dist", "lognormal"}, {"output_stddev", "1"}, {"dtype", "bf16"}});
  const auto a = run(spec), b = run(spec);
  EXPECT_EQ(sv::serve_report_json(a, spec, "dgx_h100.json").dump(), sv::serve_report_json(b, spec, "dgx_h100.json").dump());
}

TEST(ServeReplicas, MoreReplicasThanTheMachineHoldsAreRefusedByName) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  Diagnostics d;
  EXPECT_FALSE(sv::validate_serve(spec_of({{"tp", "4"}, {"replicas", "3"}}), m, d, "serve"));
  EXPECT_NE(d.to_string().find("3 replicas of 4 devices (tp 4) need 12 devices"), std::string::npos) << d.to_string();
  Diagnostics d2;
  EXPECT_FALSE(sv::validate_serve(spec_of({{"tp", "4"}, {"replicas", "2"}, {"prefill_replicas", "1"}}), m, d2, "serve"));
  EXPECT_NE(d2.to_string().find("2 replicas and 1 prefill replicas of 4 devices (tp 4) need 12 devices"),
            std::string::npos)
      << d2.to_string();
}

}  // namespace

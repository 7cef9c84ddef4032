#pragma once
// A router in front of several replicas of one engine, as a deployment's load balancer (vLLM's
// production-stack router, Dynamo's, SGLang's) places requests: each arrival goes to one replica,
// chosen from what the replicas had reported just before it arrived. The replicas' engine loops
// run as programs of one simulation, on threads of their own; each reports its state at its
// step boundaries (publish) and takes what was routed to it (take). A request arriving at a is
// routed from the reports dated before a - kStateLagS, so whichever replica's thread routes it,
// and whenever, the choice is the same: the run is deterministic. Thread-safe.
//
// Its requests are the traffic's, known from the start, or (a disaggregated deployment's decode
// pool) handed over as the run goes (submit, dated when the prefill ended): those are routed
// once a replica's clock is kStateLagS past them, by date then id, when every hand-over dated
// up to there is in.

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "syntorch/session/serving/requests.hpp"

namespace syntorch::session::serving {

enum class RouterPolicy : std::uint8_t {
  round_robin,        // in turn
  least_outstanding,  // fewest requests routed and not finished (ties in turn)
  least_kv,           // least KV pool in use, counting the prompts routed since the last report
  prefix_affinity,    // the replica that last served the request's shared prefix, unless it is
                      // busier than the least loaded by more than the balance slack
};
const std::vector<std::string>& router_policy_names();  // in RouterPolicy order

// What a replica reports at a step boundary.
struct ReplicaState {
  std::int64_t finished = 0;        // requests finished so far
  std::int64_t kv_blocks_used = 0;  // pages of its pool in use
};

class Router {
 public:
  // How far before an arrival the reports it is routed on are dated: the replicas' threads have
  // reported everything up to a simulated time before their simulation passes it by more than a
  // host clock read (100 ns); this keeps every report the choice reads in place.
  static constexpr double kStateLagS = 1e-6;

  // `requests` in arrival order; `replicas` engines with KV pages of `block_size` tokens;
  // `balance_slack` outstanding requests of affinity over the least loaded.
  Router(RouterPolicy policy, std::vector<Request> requests, int replicas, std::int64_t block_size,
         std::int64_t balance_slack);
  // A router of requests handed over as the run goes by `sources` engines, `expected` of them in
  // all.
  Router(RouterPolicy policy, std::size_t expected, int sources, int replicas, std::int64_t block_size,
         std::int64_t balance_slack);
  // A source engine's program has ended (normally or not): once all have, nothing more comes.
  void close_source();
  // A decode engine has pulled request `id`'s keys and values from prefill engine `source`
  // (noticed at `time_s`, a clock read of its own).
  void pulled(double time_s, int source, std::int64_t id);
  // The requests whose keys and values prefill engine `source` may free by `time_s` (pulled at
  // least kStateLagS before), each once.
  std::vector<std::int64_t> take_pulled(int source, double time_s);
  // How many requests came to the router at or before `time_s` (a dynamic router's: those handed
  // over by then, every one of them in once a replica's clock is kStateLagS past).
  std::size_t count_until(double time_s) const;

  // A request handed over at `time_s` (a dynamic router's; its dates of arrival and first token
  // stay the request's own).
  void submit(double time_s, const Request& request);

  // Replica `r`'s state from simulated time `time_s` on (reports come in time order per replica).
  void publish(int r, double time_s, const ReplicaState& state);
  // The requests routed to replica `r` that arrived by `time_s` and it has not taken yet (every
  // arrival up to `time_s` is routed first). Call at a time the replica's simulation stands at.
  std::vector<Request> take(int r, double time_s);
  // The first arrival after `time_s` (infinity when none, and for a dynamic router): when an idle
  // replica looks again.
  double next_arrival_after(double time_s) const;
  // Every request has been routed (a dynamic router's: all `expected` handed over, or all that
  // came before every source closed) and replica `r` has taken all of its own.
  bool drained(int r) const;
  // Which replica each request went to (in the order routed: a static router's, by request
  // index), -1 for one not routed yet.
  std::vector<int> routes() const;

 private:
  struct Report {
    double time_s;
    ReplicaState state;
  };
  // When a request came to the router (its arrival, or its hand-over), and the request.
  struct Item {
    double time_s;
    Request request;
  };
  void route_until_locked(double time_s);
  int choose_locked(std::size_t i);
  // Replica r's last report at or before `time_s` (none before its first).
  const Report* report_at_locked(int r, double time_s) const;

  mutable std::mutex mutex_;
  RouterPolicy policy_;
  bool dynamic_ = false;
  std::size_t expected_ = 0;
  int sources_ = 0, closed_ = 0;
  std::vector<Item> requests_;    // routed or to route, in the order routed
  std::vector<Item> submitted_;   // handed over, not routed yet (a dynamic router's)
  // By source: (noticed at, request id) of pulls its engine has not taken.
  std::vector<std::vector<std::pair<double, std::int64_t>>> pulled_;
  std::int64_t block_size_, balance_slack_;
  std::vector<std::vector<Report>> reports_;    // by replica, in time order
  std::vector<std::vector<std::size_t>> queued_;  // by replica: routed request indices, not taken
  std::vector<std::int64_t> routed_;             // by replica
  std::vector<int> route_;                       // by position in requests_
  std::vector<int> affinity_;                    // by prefix group: the replica that last served it
  std::size_t next_ = 0;                         // the first request not routed
  int last_ = -1;                                // the replica chosen last
};

}  // namespace syntorch::session::serving

#include "syntorch/session/serving/router.hpp"

#include <algorithm>
#include <limits>

namespace syntorch::session::serving {

const std::vector<std::string>& router_policy_names() {
  static const std::vector<std::string> names = {"round_robin", "least_outstanding", "least_kv", "prefix_affinity"};
  return names;
}

Router::Router(RouterPolicy policy, std::vector<Request> requests, int replicas, std::int64_t block_size,
               std::int64_t balance_slack)
    : policy_(policy),
      expected_(requests.size()),
      block_size_(std::max<std::int64_t>(block_size, 1)),
      balance_slack_(balance_slack),
      reports_(static_cast<std::size_t>(replicas)),
      queued_(static_cast<std::size_t>(replicas)),
      routed_(static_cast<std::size_t>(replicas), 0),
      route_(requests.size(), -1) {
  requests_.reserve(requests.size());
  for (Request& q : requests) requests_.push_back({q.arrival_s, std::move(q)});
}

Router::Router(RouterPolicy policy, std::size_t expected, int sources, int replicas, std::int64_t block_size,
               std::int64_t balance_slack)
    : policy_(policy),
      dynamic_(true),
      expected_(expected),
      sources_(sources),
      block_size_(std::max<std::int64_t>(block_size, 1)),
      balance_slack_(balance_slack),
      reports_(static_cast<std::size_t>(replicas)),
      queued_(static_cast<std::size_t>(replicas)),
      routed_(static_cast<std::size_t>(replicas), 0) {}

void Router::pulled(double time_s, int source, std::int64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (static_cast<std::size_t>(source) >= pulled_.size()) pulled_.resize(static_cast<std::size_t>(source) + 1);
  pulled_[static_cast<std::size_t>(source)].emplace_back(time_s, id);
}

std::vector<std::int64_t> Router::take_pulled(int source, double time_s) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::int64_t> out;
  if (static_cast<std::size_t>(source) >= pulled_.size()) return out;
  // Every pull noticed by the cut-off is in; by date, then id, so the order is the run's own.
  auto& mine = pulled_[static_cast<std::size_t>(source)];
  const double cut_s = time_s - kStateLagS;
  const auto ready = std::partition(mine.begin(), mine.end(), [&](const auto& x) { return x.first <= cut_s; });
  std::sort(mine.begin(), ready);
  for (auto it = mine.begin(); it != ready; ++it) out.push_back(it->second);
  mine.erase(mine.begin(), ready);
  return out;
}

void Router::close_source() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++closed_;
}

std::size_t Router::count_until(double time_s) const {
  std::lock_guard<std::mutex> lock(mutex_);
  // requests_ is in time order either way (hand-overs join it a cut-off at a time, each after
  // everything dated up to the one before); the hand-overs not routed yet are few.
  const auto routed = std::upper_bound(requests_.begin(), requests_.end(), time_s,
                                       [](double t, const Item& q) { return t < q.time_s; });
  return static_cast<std::size_t>(routed - requests_.begin()) +
         static_cast<std::size_t>(
             std::count_if(submitted_.begin(), submitted_.end(), [&](const Item& x) { return x.time_s <= time_s; }));
}

void Router::submit(double time_s, const Request& request) {
  std::lock_guard<std::mutex> lock(mutex_);
  submitted_.push_back({time_s, request});
}

void Router::publish(int r, double time_s, const ReplicaState& state) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& reports = reports_[static_cast<std::size_t>(r)];
  if (!reports.empty() && reports.back().time_s == time_s) {
    reports.back().state = state;
  } else {
    reports.push_back({time_s, state});
  }
}

const Router::Report* Router::report_at_locked(int r, double time_s) const {
  const auto& reports = reports_[static_cast<std::size_t>(r)];
  const auto after = std::upper_bound(reports.begin(), reports.end(), time_s,
                                      [](double t, const Report& x) { return t < x.time_s; });
  return after == reports.begin() ? nullptr : &*std::prev(after);
}

int Router::choose_locked(std::size_t i) {
  const Request& q = requests_[i].request;
  const int replicas = static_cast<int>(routed_.size());
  const double seen_s = requests_[i].time_s - kStateLagS;
  // Outstanding: routed, less those its last report before the arrival had finished.
  std::vector<std::int64_t> outstanding(static_cast<std::size_t>(replicas));
  for (int r = 0; r < replicas; ++r) {
    const Report* last = report_at_locked(r, seen_s);
    outstanding[static_cast<std::size_t>(r)] = routed_[static_cast<std::size_t>(r)] - (last ? last->state.finished : 0);
  }
  // The cheapest replica; of equals, the first after the last one chosen (in turn, as a
  // round-robin among the tied).
  const auto cheapest = [&](const auto& cost) {
    int best = -1;
    for (int k = 1; k <= replicas; ++k) {
      const int r = (last_ + k) % replicas;
      if (best < 0 || cost(r) < cost(best)) best = r;
    }
    return best;
  };
  const int least = cheapest([&](int r) { return outstanding[static_cast<std::size_t>(r)]; });
  switch (policy_) {
    case RouterPolicy::round_robin:
      return static_cast<int>(i % static_cast<std::size_t>(replicas));
    case RouterPolicy::least_outstanding:
      return least;
    case RouterPolicy::least_kv: {
      // Pages in use at the last report, and the prompts routed since (not in its pool yet).
      std::vector<double> load(static_cast<std::size_t>(replicas));
      for (int r = 0; r < replicas; ++r) {
        // (The replicas' pools are the same size: pages compare.)
        const Report* last = report_at_locked(r, seen_s);
        const double since_s = last ? last->time_s : -1.0;
        std::int64_t pages = last ? last->state.kv_blocks_used : 0;
        for (std::size_t j = i; j-- > 0;) {
          if (requests_[j].time_s <= since_s) break;
          if (route_[j] == r) pages += (requests_[j].request.input_tokens + block_size_ - 1) / block_size_;
        }
        load[static_cast<std::size_t>(r)] = static_cast<double>(pages);
      }
      return cheapest([&](int r) { return load[static_cast<std::size_t>(r)]; });
    }
    case RouterPolicy::prefix_affinity: {
      if (q.prefix_group < 0) return least;
      const int held = affinity_[static_cast<std::size_t>(q.prefix_group)];
      if (held >= 0 && outstanding[static_cast<std::size_t>(held)] <=
                           outstanding[static_cast<std::size_t>(least)] + balance_slack_) {
        return held;
      }
      return least;
    }
  }
  return least;
}

void Router::route_until_locked(double time_s) {
  if (dynamic_) {
    // Every hand-over dated up to the cut-off is in: those, by date then id, join the requests.
    const double cut_s = time_s - kStateLagS;
    const auto ready = std::partition(submitted_.begin(), submitted_.end(), [&](const Item& x) { return x.time_s <= cut_s; });
    std::sort(submitted_.begin(), ready, [](const Item& a, const Item& b) {
      return a.time_s != b.time_s ? a.time_s < b.time_s : a.request.id < b.request.id;
    });
    requests_.insert(requests_.end(), submitted_.begin(), ready);
    submitted_.erase(submitted_.begin(), ready);
    route_.resize(requests_.size(), -1);
  }
  while (next_ < requests_.size() && requests_[next_].time_s <= time_s) {
    const Request& q = requests_[next_].request;
    if (q.prefix_group >= 0 && static_cast<std::size_t>(q.prefix_group) >= affinity_.size()) {
      affinity_.resize(static_cast<std::size_t>(q.prefix_group) + 1, -1);
    }
    const int r = choose_locked(next_);
    last_ = r;
    route_[next_] = r;
    ++routed_[static_cast<std::size_t>(r)];
    queued_[static_cast<std::size_t>(r)].push_back(next_);
    if (q.prefix_group >= 0) affinity_[static_cast<std::size_t>(q.prefix_group)] = r;
    ++next_;
  }
}

std::vector<Request> Router::take(int r, double time_s) {
  std::lock_guard<std::mutex> lock(mutex_);
  route_until_locked(time_s);
  std::vector<Request> out;
  auto& queue = queued_[static_cast<std::size_t>(r)];
  std::size_t k = 0;
  for (; k < queue.size() && requests_[queue[k]].time_s <= time_s; ++k) out.push_back(requests_[queue[k]].request);
  queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(k));
  return out;
}

double Router::next_arrival_after(double time_s) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (dynamic_) return std::numeric_limits<double>::infinity();
  const auto it = std::upper_bound(requests_.begin(), requests_.end(), time_s,
                                   [](double t, const Item& q) { return t < q.time_s; });
  return it == requests_.end() ? std::numeric_limits<double>::infinity() : it->time_s;
}

bool Router::drained(int r) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const bool all = next_ == expected_ ||
                   (dynamic_ && closed_ == sources_ && submitted_.empty() && next_ == requests_.size());
  return all && queued_[static_cast<std::size_t>(r)].empty();
}

std::vector<int> Router::routes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return route_;
}

}  // namespace syntorch::session::serving

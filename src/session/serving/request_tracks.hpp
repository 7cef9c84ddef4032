#pragma once
// Every request of a serving run as a track in the trace, above the ranks' steps and kernels:
// each request on a lane of its own for its lifetime (lanes reused once free), a span from its
// arrival to its last token holding its phases (queued, prefill, decode, preempted), and the
// engine's running and waiting counts and KV-pool use as counters (a set per replica).

#include <string>
#include <vector>

#include "syntorch/session/serving/scheduler.hpp"
#include "syntorch/session/serving/serve.hpp"
#include "syntorch/trace/recorder.hpp"

namespace syntorch::session::serving {

// `start_s`: the host time serving started (what the sequences' times count from); the engines'
// counters one set per name of `engines` (none given: one engine).
void record_request_tracks(trace::Recorder& recorder, const std::vector<Sequence>& sequences,
                           const std::vector<StepSample>& steps, double start_s,
                           const std::vector<std::string>& engines = {});

}  // namespace syntorch::session::serving

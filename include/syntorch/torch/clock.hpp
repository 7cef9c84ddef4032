#pragma once
// The simulated host clock, for programs that decide what to run next from how far the run has
// come (a serving scheduler admitting the requests that have arrived, a dispatcher): Python's
// time.perf_counter() and time.sleep() on the simulated host. Reading it makes the program wait
// for the simulator to reach that point of it, so every run gives the same answers. Throws
// std::logic_error outside a simulation (no clock runs there) or while capturing a graph.

namespace syntorch::torch::clock {

// Seconds from the run's start on this rank's host.
double now_s();
// The host idles for `seconds` (>= 0), or until its clock reads `time_s`.
void sleep_s(double seconds);
void sleep_until_s(double time_s);

}  // namespace syntorch::torch::clock

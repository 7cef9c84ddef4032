// `syntorch sweep STUDY.yaml [--jobs N] [--out DIR]`: runs a what-if study (a YAML file of a base
// run and axes) in parallel and writes results.csv, results.json, SVG plots and index.html.
// Under MPI (`mpirun -np N syntorch sweep ...`) the ranks split the points and rank 0 gathers
// and writes the results. Ctrl-C stops starting points and keeps every finished one.

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <ostream>
#include <thread>

#ifdef SYNTORCH_HAVE_MPI
#include <mpi.h>
#endif

#include "cli.hpp"
#include "commands.hpp"
#include "outputs.hpp"
#include "syntorch/session/sweep.hpp"
#include "syntorch/session/study.hpp"

namespace syntorch::cli {

namespace {

struct SweepOptions {
  std::string study;
  int jobs = 0;
  std::string out;
};

std::atomic<bool> g_stop{false};
extern "C" void on_interrupt(int) { g_stop.store(true); }

// The MPI world when this process was started by an MPI launcher, else a world of one.
struct World {
  int rank = 0;
  int size = 1;
  bool mpi = false;
};

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"}) {
    if (std::getenv(v) != nullptr) return true;
  }
  return false;
}

nlohmann::json row_json(const session::SweepRow& r) {
  nlohmann::json j;
  j["index"] = r.index;
  j["axis_values"] = r.axis_values;
  j["status"] = r.status;
  j["reason"] = r.reason;
  auto& m = j["metrics"] = nlohmann::json::array();
  for (double v : r.metrics) m.push_back(std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr));
  j["bound"] = r.bound;
  return j;
}

session::SweepRow row_from_json(const nlohmann::json& j) {
  session::SweepRow r;
  r.index = j["index"].get<std::size_t>();
  r.axis_values = j["axis_values"].get<std::vector<std::string>>();
  r.status = j["status"].get<std::string>();
  r.reason = j["reason"].get<std::string>();
  for (const auto& v : j["metrics"]) r.metrics.push_back(v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>());
  r.bound = j["bound"].get<std::string>();
  return r;
}

// Rank 0 receives every rank's rows (serialised as JSON) and returns them all, in point order.
std::vector<session::SweepRow> gather(const World& world, std::vector<session::SweepRow> rows) {
#ifdef SYNTORCH_HAVE_MPI
  if (world.mpi && world.size > 1) {
    nlohmann::json mine = nlohmann::json::array();
    for (const auto& r : rows) mine.push_back(row_json(r));
    const std::string text = mine.dump();
    int length = static_cast<int>(text.size());
    std::vector<int> lengths(static_cast<std::size_t>(world.size));
    MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::vector<int> offsets(static_cast<std::size_t>(world.size), 0);
    std::string all;
    if (world.rank == 0) {
      for (int i = 1; i < world.size; ++i) offsets[i] = offsets[i - 1] + lengths[i - 1];
      all.resize(static_cast<std::size_t>(offsets.back() + lengths.back()));
    }
    MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
    if (world.rank != 0) return {};
    rows.clear();
    for (int i = 0; i < world.size; ++i) {
      for (const auto& j : nlohmann::json::parse(all.substr(offsets[i], lengths[i]))) rows.push_back(row_from_json(j));
    }
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  }
#else
  (void)world;
#endif
  return rows;
}

// Installs the Ctrl-C handler for its lifetime (from before the study is read, so an interrupt
// while validating a large study is an orderly stop too).
struct InterruptGuard {
  void (*previous)(int);
  InterruptGuard() : previous(std::signal(SIGINT, on_interrupt)) { g_stop.store(false); }
  ~InterruptGuard() { std::signal(SIGINT, previous == SIG_ERR ? SIG_DFL : previous); }
};

int run_sweep(const SweepOptions& o, Context& ctx) {
  InterruptGuard interrupt;
  session::Study study;
  try {
    study = session::load_study(o.study);
  } catch (const InputError& e) {
    ctx.err << e.diagnostics().to_string();
    return kExitBadInput;
  }
  if (g_stop.load()) {
    ctx.err << "sweep: interrupted while reading the study; nothing ran\n";
    return 130;
  }
  const std::vector<session::Point> points = session::expand(study);
  World world;
#ifdef SYNTORCH_HAVE_MPI
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (launched_by_mpi() || initialised) {
    if (!initialised) MPI_Init(nullptr, nullptr);
    MPI_Comm_rank(MPI_COMM_WORLD, &world.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world.size);
    world.mpi = true;
  }
#else
  if (launched_by_mpi()) {
    ctx.err << "sweep: started by an MPI launcher, but this syntorch was built without MPI; every rank would run "
               "every point. Install libopenmpi-dev and rebuild.\n";
    return kExitBadInput;
  }
#endif
  const std::string out_dir = o.out.empty() ? fmt::format("sweeps/{}", study.name) : o.out;
  if (world.rank == 0) {
    try {
      sweep::prepare_output_dir(out_dir);
    } catch (const std::exception& e) {
      ctx.err << fmt::format("--out: {}\n", e.what());
#ifdef SYNTORCH_HAVE_MPI
      if (world.mpi && world.size > 1) MPI_Abort(MPI_COMM_WORLD, kExitBadInput);
#endif
      return kExitBadInput;
    }
  }
  std::vector<std::size_t> mine;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (static_cast<int>(i % static_cast<std::size_t>(world.size)) == world.rank) mine.push_back(i);
  }
  session::SweepOptions run;
  run.jobs = o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  run.stop = &g_stop;
  if (world.rank == 0) {
    run.progress = &ctx.err;
    run.progress_is_terminal = isatty(STDERR_FILENO) != 0 && world.size == 1;
  }
  if (world.rank == 0) {
    ctx.out << fmt::format("sweep {}: {} points ({}), {} job(s){}\n", study.name, points.size(),
                           study.zip ? "zipped axes" : "every combination of the axes", run.jobs,
                           world.size > 1 ? fmt::format(" on each of {} MPI ranks", world.size) : "");
  }
  std::vector<session::SweepRow> rows = session::run_points(study, points, mine, run);
  rows = gather(world, std::move(rows));
  int code = g_stop.load() ? 130 : kExitOk;
  if (world.rank == 0) {
    const std::string& dir = out_dir;
    std::map<std::string, int> by_status;
    for (const auto& r : rows) ++by_status[r.status];
    try {
      const sweep::OutputFiles files = sweep::write_outputs(study, rows, dir);
      std::vector<std::string> counts;
      for (const auto& [status, n] : by_status) counts.push_back(fmt::format("{} {}", n, status));
      ctx.out << fmt::format("points: {}\n", join(counts));
      ctx.out << fmt::format("wrote {}, {}, {} plot(s) and {}\n", files.csv, files.json, files.plots.size(), files.html);
      if (g_stop.load()) ctx.out << "interrupted: the finished points are in the results; the rest are marked \"not run\"\n";
    } catch (const std::exception& e) {
      ctx.err << e.what() << "\n";
      code = kExitBadInput;
    }
  }
#ifdef SYNTORCH_HAVE_MPI
  if (world.mpi) {
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (!finalised) MPI_Finalize();
  }
#endif
  return code;
}

}  // namespace

void add_sweep_command(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<SweepOptions>();
  CLI::App* s = app.add_subcommand("sweep", "Run a what-if study (a YAML file of a base run and axes) in parallel");
  s->add_option("study", o->study, "Study file (YAML)")->required();
  s->add_option("--jobs,-j", o->jobs, "Points run at once (default: every core)")->check(CLI::Range(1, 4096));
  s->add_option("--out", o->out, "Output folder (default: sweeps/<study name>)");
  s->callback([&ctx, o] { ctx.action = [&ctx, o] { return run_sweep(*o, ctx); }; });
}

}  // namespace syntorch::cli

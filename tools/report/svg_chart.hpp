#pragma once
// Charts for what-if sweep reports, written as plain SVG 1.1 text (no plotting library): line charts
// over a numeric x, grouped bar charts over categories, and rooflines. The output is deterministic:
// the same input gives byte-identical text (numbers are printed with fixed precision).

#include <string>
#include <string_view>
#include <vector>

namespace syntorch::report {

// One line of a line chart, or one member of every bar group of a bar chart. Points whose x or y is
// NaN or infinite are skipped (a line breaks there); x and y beyond the shorter of the two are ignored.
struct Series {
  std::string name;
  std::vector<double> x;
  std::vector<double> y;
};

// A chart of y over x for several series: a line chart when x is numeric, a grouped bar chart when
// the x values are categories (x_categories non-empty: x[i] is the index of the category of y[i]).
struct Chart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<std::string> x_categories;  // non-empty: categorical x axis, one bar group per category
  bool log_x = false;                     // log scale on x (numeric x only); values <= 0 are left out
  bool log_y = false;                     // log scale on y; values <= 0 are left out (with a note)
  std::string x_unit;                     // the numeric axes' units, SI-prefixed on the ticks ("2 TB/s")
  std::string y_unit;
  std::vector<Series> series;
};

// The chart as an SVG document of the given size in pixels. A chart without any point to draw shows
// a "no data" message.
std::string render_chart_svg(const Chart& chart, int width_px = 760, int height_px = 460);

// One measured or predicted kernel on a roofline: its arithmetic intensity and achieved rate.
struct RooflinePoint {
  std::string label;
  double flops_per_byte = 0.0;
  double flops_per_s = 0.0;
};

// A roofline model of one device: attainable FLOP/s = min(peak_flops, intensity x peak_bandwidth),
// drawn on log-log axes with the ridge point marked and the given points labelled.
struct Roofline {
  std::string title;
  double peak_flops_per_s = 0.0;
  double peak_bytes_per_s = 0.0;
  std::vector<RooflinePoint> points;
};

std::string render_roofline_svg(const Roofline& roofline, int width_px = 760, int height_px = 460);

// The ticks of one axis: its domain (widened to whole tick steps, or to whole decades on a log
// axis), the major ticks with their labels, and the minor ticks (log axes only).
struct AxisTicks {
  double lo = 0.0;
  double hi = 1.0;
  std::vector<double> major;
  std::vector<std::string> labels;  // one per major tick
  std::vector<double> minor;
};

// "Nice" ticks over [lo, hi]: a step of 1, 2 or 5 times a power of ten, as small as possible with at
// most max_ticks ticks (but three when the range straddles zero); the domain is widened to the
// outermost ticks.
// With a unit the labels carry it, SI-prefixed ("500 GB/s", "1 TB/s"; "%" takes no prefix).
AxisTicks linear_ticks(double lo, double hi, int max_ticks, std::string_view unit = {});

// Log ticks over [lo, hi] (both > 0): majors at powers of ten (every k-th decade when there are more
// than max_ticks of them), minors at 2..9 x 10^k (or at the skipped decades). With snap the domain is
// widened to whole decades; without, it stays [lo, hi].
AxisTicks log_ticks(double lo, double hi, int max_ticks, bool snap = true, std::string_view unit = {});

// A number with up to `significant` significant digits: plain between 0.01 and 1000, otherwise with
// an SI prefix ("1.5k", "2M", "3.2G", "500m", "20µ"); a unit is appended after a space ("3.35 TB/s").
std::string format_si(double value, int significant = 3, std::string_view unit = {});

// Text made safe for XML/HTML character data and attribute values: & < > " ' become entities and
// control characters that XML 1.0 forbids are dropped.
std::string escape_xml(std::string_view text);

}  // namespace syntorch::report

#include "svg_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <functional>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace syntorch::report {
namespace {

constexpr double kPi = 3.14159265358979323846;

// Okabe & Ito's colour-blind-safe palette, ordered for contrast on white (the pale yellow last).
constexpr std::array<std::string_view, 8> kPalette{"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                                   "#CC79A7", "#56B4E9", "#000000", "#F0E442"};
constexpr int kMarkerShapes = 5;  // circle, square, triangle, diamond, inverted triangle

constexpr std::string_view kInk = "#222222";        // title, axis lines
constexpr std::string_view kTickInk = "#444444";    // tick labels
constexpr std::string_view kGrid = "#e3e3e3";       // major gridlines
constexpr std::string_view kMinorGrid = "#f1f1f1";  // minor gridlines
constexpr std::string_view kNoteInk = "#777777";

constexpr double kTitleFont = 16;
constexpr double kLabelFont = 13;
constexpr double kTickFont = 11;
constexpr double kLegendFont = 12;
constexpr double kLegendRow = 20;
constexpr double kSwatchWidth = 26;

constexpr std::array<std::string_view, 17> kSiPrefixes{"y", "z", "a", "f", "p", "n", "µ", "m", "",
                                                       "k", "M", "G", "T", "P", "E", "Z", "Y"};

double power_of_ten(int exponent) { return std::pow(10.0, exponent); }

// floor(log10(a)) for a > 0, robust to a being a power of ten printed from a decimal literal.
int floor_log10(double a) { return static_cast<int>(std::floor(std::log10(a) + 1e-9)); }

int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// The engineering exponent (a multiple of 3, within the SI prefixes) for a magnitude > 0.
int si_exponent(double magnitude) { return std::clamp(floor_div(floor_log10(magnitude), 3) * 3, -24, 24); }

std::string_view si_prefix(int exponent3) { return kSiPrefixes[static_cast<std::size_t>(exponent3 / 3 + 8)]; }

void trim_zeros(std::string& s) {
  if (s.find('.') == std::string::npos) return;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
}

// A coordinate or length in the SVG: at most two decimals, no trailing zeros, never "-0".
std::string num(double v) {
  if (!std::isfinite(v)) return "0";
  std::string s = fmt::format("{:.2f}", v);
  trim_zeros(s);
  if (s == "-0") s = "0";
  return s;
}

double round_significant(double v, int significant) {
  if (v == 0.0 || !std::isfinite(v)) return v;
  const int p = floor_log10(std::abs(v));
  const double scale = std::pow(10.0, significant - 1 - p);
  return std::round(v * scale) / scale;
}

// A number with its SI prefix and unit: the prefix joins a symbol ("2 TB/s", "5 ms") but stays on
// the number before a word ("1.5k tokens/s").
std::string with_unit(const std::string& number, std::string_view prefix, std::string_view unit) {
  if (unit.empty()) return number + std::string(prefix);
  const bool word = unit.size() > 1 && unit[0] >= 'a' && unit[0] <= 'z' && unit[1] >= 'a' && unit[1] <= 'z';
  if (word) return number + std::string(prefix) + " " + std::string(unit);
  return number + " " + std::string(prefix) + std::string(unit);
}

// The label of a linear tick at v for a tick step: as many decimals as the step needs; with si the
// value takes its own SI prefix ("500k", "1M", "1.5M"), and with a unit the prefix goes on it
// ("500 GB/s", "1 TB/s").
std::string linear_tick_label(double v, double step, bool si, std::string_view unit) {
  if (v == 0.0) return "0";
  const int e3 = si ? si_exponent(std::abs(v)) : 0;
  const double mantissa = v / power_of_ten(e3);
  const int decimals = std::clamp(e3 - floor_log10(step), 0, 15);
  std::string s = fmt::format("{:.{}f}", mantissa, decimals);
  trim_zeros(s);
  if (s == "-0") s = "0";
  return with_unit(s, si_prefix(e3), unit);
}

// Units that take no SI prefix: a percentage reads "150%", not "150 %" or "0.15 k%".
bool plain_unit(std::string_view unit) { return unit == "%"; }

// Approximate advance width of an ASCII character in em, after DejaVu Sans (a little generous, so
// layouts computed from it leave room in narrower fonts such as Helvetica or Arial).
double char_em(unsigned char c) {
  switch (c) {
    case ' ': return 0.32;
    case 'i': case 'j': case 'l': case '\'': case '|': case '!': case '.': case ',': case ':': case ';':
      return 0.31;
    case 'f': case 't': case 'r': case '(': case ')': case '[': case ']': case '/': case '\\': case '-':
    case 'I': case 'J':
      return 0.42;
    case 'm': case 'w': case 'M': case 'W': case '%': case '@':
      return 0.96;
    case '=': case '+': case '<': case '>': case '~': case '#':
      return 0.84;
    default: break;
  }
  if (c >= '0' && c <= '9') return 0.64;
  if (c >= 'A' && c <= 'Z') return 0.72;
  return 0.62;
}

double text_width(std::string_view s, double font_px) {
  double em = 0.0;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c & 0xC0u) == 0x80u) continue;  // UTF-8 continuation byte
    em += c >= 0x80u ? 0.7 : char_em(c);
  }
  return em * font_px;
}

// s shortened with an ellipsis, at code point boundaries, so it is at most max_px wide: cut at the
// end, or in the middle (keeping the end, which often tells similar names apart).
std::string fit_text(std::string_view s, double font_px, double max_px, bool middle = false) {
  if (text_width(s, font_px) <= max_px) return std::string(s);
  std::vector<std::string_view> chars;  // code points
  for (std::size_t i = 0; i < s.size();) {
    std::size_t j = i + 1;
    while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xC0u) == 0x80u) ++j;
    chars.push_back(s.substr(i, j - i));
    i = j;
  }
  const std::string ellipsis = "…";
  for (std::size_t keep = chars.size(); keep-- > 0;) {
    const std::size_t head = middle ? (keep * 3 + 4) / 5 : keep;
    std::string out;
    for (std::size_t i = 0; i < head; ++i) out += chars[i];
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += ellipsis;
    std::string tail;
    for (std::size_t i = chars.size() - (keep - head); i < chars.size(); ++i) tail += chars[i];
    while (!tail.empty() && tail.front() == ' ') tail.erase(0, 1);
    out += tail;
    if (text_width(out, font_px) <= max_px || keep == 0) return out;
  }
  return ellipsis;
}

// An axis-aligned rectangle in pixels, for keeping labels apart.
struct Box {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;

  double overlap(const Box& o) const {
    const double w = std::min(x1, o.x1) - std::max(x0, o.x0);
    const double h = std::min(y1, o.y1) - std::max(y0, o.y0);
    return w > 0 && h > 0 ? w * h : 0.0;
  }
  bool inside(const Box& o) const { return x0 >= o.x0 && x1 <= o.x1 && y0 >= o.y0 && y1 <= o.y1; }
};

// The pixel box of a label of the given width with its anchor at (x, baseline y).
Box label_box(double x, double y, double width, double font, std::string_view anchor) {
  const double x0 = anchor == "start" ? x : (anchor == "end" ? x - width : x - width / 2);
  return {x0 - 1, y - font * 0.8, x0 + width + 1, y + font * 0.25};
}

// Whether the segment from (x0, y0) to (x1, y1) passes through the box (Liang-Barsky clipping).
bool segment_hits_box(double x0, double y0, double x1, double y1, const Box& b) {
  double t0 = 0, t1 = 1;
  const double dx = x1 - x0, dy = y1 - y0;
  const std::array<std::pair<double, double>, 4> edges{
      {{-dx, x0 - b.x0}, {dx, b.x1 - x0}, {-dy, y0 - b.y0}, {dy, b.y1 - y0}}};
  for (const auto& [p, q] : edges) {
    if (p == 0) {
      if (q < 0) return false;
      continue;
    }
    const double t = q / p;
    if (p < 0) {
      t0 = std::max(t0, t);
    } else {
      t1 = std::min(t1, t);
    }
    if (t0 > t1) return false;
  }
  return true;
}

// Whether two segments cross (touching ends do not count).
bool segments_cross(const std::array<double, 4>& a, const std::array<double, 4>& b) {
  const auto side = [](double ax, double ay, double bx, double by, double cx, double cy) {
    return (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
  };
  const double d1 = side(a[0], a[1], a[2], a[3], b[0], b[1]), d2 = side(a[0], a[1], a[2], a[3], b[2], b[3]);
  const double d3 = side(b[0], b[1], b[2], b[3], a[0], a[1]), d4 = side(b[0], b[1], b[2], b[3], a[2], a[3]);
  return d1 * d2 < 0 && d3 * d4 < 0;
}

// How one piece of text is set: size, anchor, colour, weight, style, rotation about its anchor.
struct TextStyle {
  double size = kTickFont;
  std::string_view anchor = "start";
  std::string_view fill = kTickInk;
  bool bold = false;
  bool italic = false;
  double rotate = 0.0;
};

// The text of one SVG document being written, element by element.
class SvgDoc {
 public:
  SvgDoc(double width, double height) {
    add("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    addf("<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0}\" height=\"{1}\" "
         "viewBox=\"0 0 {0} {1}\" font-family=\"Helvetica, Arial, 'DejaVu Sans', sans-serif\">\n",
         num(width), num(height));
    addf("<rect class=\"background\" x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n",
         num(width), num(height));
  }

  void add(std::string_view s) { out_ += s; }

  template <typename... Args>
  void addf(fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(out_), format, std::forward<Args>(args)...);
  }

  void open_group(std::string_view cls, std::string_view extra = {}) {
    addf("<g class=\"{}\"{}{}>\n", cls, extra.empty() ? "" : " ", extra);
  }
  void close_group() { add("</g>\n"); }

  void line(double x1, double y1, double x2, double y2, std::string_view stroke, double width,
            std::string_view extra = {}) {
    addf("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\"{}{}/>\n", num(x1),
         num(y1), num(x2), num(y2), stroke, num(width), extra.empty() ? "" : " ", extra);
  }

  void text(double x, double y, std::string_view content, const TextStyle& style) {
    addf("<text x=\"{}\" y=\"{}\" font-size=\"{}\"", num(x), num(y), num(style.size));
    if (style.anchor != "start") addf(" text-anchor=\"{}\"", style.anchor);
    if (style.bold) add(" font-weight=\"bold\"");
    if (style.italic) add(" font-style=\"italic\"");
    if (style.rotate != 0.0) addf(" transform=\"rotate({} {} {})\"", num(style.rotate), num(x), num(y));
    addf(" fill=\"{}\">{}</text>\n", style.fill, escape_xml(content));
  }

  std::string finish() {
    add("</svg>\n");
    return std::move(out_);
  }

 private:
  std::string out_;
};

// A filled marker of one of kMarkerShapes shapes centred on (cx, cy), with a tooltip.
void marker(SvgDoc& svg, int shape, double cx, double cy, double r, std::string_view fill,
            std::string_view tooltip) {
  const std::string style = fmt::format("fill=\"{}\" stroke=\"#ffffff\" stroke-width=\"1\"", fill);
  std::string element;
  switch (shape % kMarkerShapes) {
    case 0:
      element = fmt::format("<circle class=\"marker\" cx=\"{}\" cy=\"{}\" r=\"{}\" {}", num(cx), num(cy), num(r), style);
      break;
    case 1: {
      const double s = r * 0.9;
      element = fmt::format("<rect class=\"marker\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" {}", num(cx - s),
                            num(cy - s), num(2 * s), num(2 * s), style);
      break;
    }
    case 2: {
      const double s = r * 1.2;
      element = fmt::format("<path class=\"marker\" d=\"M{} {}L{} {}L{} {}Z\" {}", num(cx), num(cy - s), num(cx + s),
                            num(cy + s * 0.8), num(cx - s), num(cy + s * 0.8), style);
      break;
    }
    case 3: {
      const double s = r * 1.25;
      element = fmt::format("<path class=\"marker\" d=\"M{} {}L{} {}L{} {}L{} {}Z\" {}", num(cx), num(cy - s),
                            num(cx + s), num(cy), num(cx), num(cy + s), num(cx - s), num(cy), style);
      break;
    }
    default: {
      const double s = r * 1.2;
      element = fmt::format("<path class=\"marker\" d=\"M{} {}L{} {}L{} {}Z\" {}", num(cx), num(cy + s), num(cx + s),
                            num(cy - s * 0.8), num(cx - s), num(cy - s * 0.8), style);
      break;
    }
  }
  svg.add(element);
  if (tooltip.empty()) {
    svg.add("/>\n");
  } else {
    svg.addf("><title>{}</title></{}>\n", escape_xml(tooltip),
             shape % kMarkerShapes == 0 ? "circle" : (shape % kMarkerShapes == 1 ? "rect" : "path"));
  }
}

// Maps the data values of one axis onto pixels (p0 at lo, p1 at hi), linearly or by log10.
struct Scale {
  double lo = 0, hi = 1, p0 = 0, p1 = 1;
  bool log = false;

  double operator()(double v) const {
    const double t = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo))
                         : (v - lo) / (hi - lo);
    return p0 + t * (p1 - p0);
  }
};

// The plot area in pixels.
struct Frame {
  double left = 0, top = 0, right = 0, bottom = 0;
  double width() const { return right - left; }
  double height() const { return bottom - top; }
};

// Where the legend goes, a column right of the plot or rows below it, and where each entry sits
// relative to the legend's top-left corner.
struct LegendLayout {
  bool below = false;
  double width = 0;   // the column, when at the right
  double height = 0;  // all rows, when below
  double used_width = 0;  // how wide the entries reach, when below
  std::vector<std::string> names;
  std::vector<std::pair<double, double>> offsets;
};

LegendLayout layout_legend(const std::vector<std::string>& names, double width_px, double height_px,
                           bool allow_right = true) {
  LegendLayout legend;
  if (names.empty()) return legend;
  double widest = 0;
  for (const auto& n : names) widest = std::max(widest, text_width(n, kLegendFont));
  const double column = kSwatchWidth + 6 + widest + 8;
  const double rows_height = static_cast<double>(names.size()) * kLegendRow;
  if (allow_right && column <= 0.3 * width_px && rows_height <= height_px - 110) {
    legend.width = column;
    legend.names = names;
    for (std::size_t i = 0; i < names.size(); ++i) legend.offsets.emplace_back(0.0, static_cast<double>(i) * kLegendRow);
    legend.height = rows_height;
    return legend;
  }
  legend.below = true;
  const double avail = width_px - 40;
  constexpr double kGap = 18;
  // Short entries flow left to right; if that takes more than two rows, use a grid of equal
  // columns (read top to bottom), narrowing the names when the grid would take too much height.
  double x = 0, y = 0;
  for (const auto& n : names) {
    std::string name = fit_text(n, kLegendFont, avail - kSwatchWidth - 6, true);
    const double w = kSwatchWidth + 6 + text_width(name, kLegendFont) + kGap;
    if (x > 0 && x + w - kGap > avail) {
      x = 0;
      y += kLegendRow;
    }
    legend.offsets.emplace_back(x, y);
    legend.names.push_back(std::move(name));
    legend.used_width = std::max(legend.used_width, x + w - kGap);
    x += w;
  }
  legend.height = y + kLegendRow;
  if (legend.height <= 2 * kLegendRow) return legend;
  const std::size_t n = names.size();
  const double item = kSwatchWidth + 6 + std::min(widest, avail - kSwatchWidth - 6);
  auto columns = static_cast<std::size_t>(std::max(1.0, std::floor((avail + kGap) / (item + kGap))));
  const auto rows_for = [n](std::size_t c) { return (n + c - 1) / c; };
  while (columns < 4 && columns < n && static_cast<double>(rows_for(columns)) * kLegendRow > 0.25 * height_px) ++columns;
  const double column_w = (avail + kGap) / static_cast<double>(columns);
  const std::size_t rows = rows_for(columns);
  legend.names.clear();
  legend.offsets.clear();
  for (std::size_t i = 0; i < n; ++i) {
    legend.names.push_back(fit_text(names[i], kLegendFont, column_w - kGap - kSwatchWidth - 6, true));
    legend.offsets.emplace_back(static_cast<double>(i / rows) * column_w, static_cast<double>(i % rows) * kLegendRow);
  }
  legend.height = static_cast<double>(rows) * kLegendRow;
  legend.used_width = avail;
  return legend;
}

// Draws the legend entries with origin (x, y); swatch(i, x, y_centre) draws entry i's symbol.
void draw_legend(SvgDoc& svg, const LegendLayout& legend, double x, double y,
                 const std::function<void(std::size_t, double, double)>& swatch) {
  svg.open_group("legend");
  for (std::size_t i = 0; i < legend.names.size(); ++i) {
    const double ex = x + legend.offsets[i].first;
    const double cy = y + legend.offsets[i].second + kLegendRow / 2;
    swatch(i, ex, cy);
    svg.text(ex + kSwatchWidth + 6, cy + kLegendFont * 0.35, legend.names[i],
             {.size = kLegendFont, .fill = kInk});
  }
  svg.close_group();
}

void draw_title(SvgDoc& svg, std::string_view title, const Frame& frame, double width_px) {
  if (title.empty()) return;
  const double plot_centre = (frame.left + frame.right) / 2;
  const double full = text_width(title, kTitleFont) * 1.08;  // bold
  double x = plot_centre;
  if (full > frame.width()) x = width_px / 2;
  if (x - full / 2 < 8 || x + full / 2 > width_px - 8) x = width_px / 2;
  const std::string shown = fit_text(title, kTitleFont * 1.08, width_px - 16);
  svg.text(x, 28, shown, {.size = kTitleFont, .anchor = "middle", .fill = kInk, .bold = true});
}

void draw_axis_labels(SvgDoc& svg, std::string_view x_label, std::string_view y_label, const Frame& frame,
                      double x_label_baseline, double y_label_x) {
  if (!x_label.empty()) {
    svg.text((frame.left + frame.right) / 2, x_label_baseline, fit_text(x_label, kLabelFont, frame.width() + 60),
             {.size = kLabelFont, .anchor = "middle", .fill = kInk});
  }
  if (!y_label.empty()) {
    const double cy = (frame.top + frame.bottom) / 2;
    svg.text(y_label_x, cy, fit_text(y_label, kLabelFont, frame.height() + 40),
             {.size = kLabelFont, .anchor = "middle", .fill = kInk, .rotate = -90});
  }
}

void draw_note(SvgDoc& svg, std::string_view note, double width_px, double height_px) {
  if (note.empty()) return;
  svg.text(10, height_px - 8, fit_text(note, 10.5, width_px - 20),
           {.size = 10.5, .fill = kNoteInk, .italic = true});
}

// A chart with nothing to draw: the title, an empty frame and a "no data" message.
std::string render_no_data(std::string_view title, std::string_view x_label, std::string_view y_label,
                           double width_px, double height_px) {
  SvgDoc svg(width_px, height_px);
  const Frame frame{.left = y_label.empty() ? 20.0 : 40.0,
                    .top = title.empty() ? 16.0 : 44.0,
                    .right = width_px - 20,
                    .bottom = height_px - (x_label.empty() ? 20.0 : 44.0)};
  draw_title(svg, title, frame, width_px);
  svg.addf("<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"{}\" "
           "stroke-width=\"1\"/>\n",
           num(frame.left), num(frame.top), num(std::max(1.0, frame.width())), num(std::max(1.0, frame.height())),
           kGrid);
  svg.text((frame.left + frame.right) / 2, (frame.top + frame.bottom) / 2 + 6, "no data",
           {.size = 16, .anchor = "middle", .fill = kNoteInk, .italic = true});
  draw_axis_labels(svg, x_label, y_label, frame, frame.bottom + 30, 18);
  return svg.finish();
}

// The range of the finite values added to it.
struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();

  void add(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
};

std::string plural(int n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// The text of a note listing what was left out, or "" when nothing was.
std::string omitted_note(int non_finite, int non_positive_log, int bad_category) {
  std::vector<std::string> parts;
  if (non_finite > 0) parts.push_back(plural(non_finite, "NaN/infinite value", "NaN/infinite values"));
  if (non_positive_log > 0) {
    parts.push_back(plural(non_positive_log, "value <= 0 on a log axis", "values <= 0 on a log axis"));
  }
  if (bad_category > 0) parts.push_back(plural(bad_category, "point without a category", "points without a category"));
  if (parts.empty()) return {};
  std::string note = "Not shown: ";
  for (std::size_t i = 0; i < parts.size(); ++i) note += (i == 0 ? "" : ", ") + parts[i];
  return note + ".";
}

// The drawable points of one series: runs for a line (a line breaks where a point was skipped), or
// one optional value per category for bars.
struct CleanSeries {
  std::string name;
  std::vector<std::vector<std::pair<double, double>>> runs;
  std::vector<std::optional<double>> bars;
  int points = 0;
};

// How the category labels under the bar groups are set: straight, wrapped at spaces, or rotated.
struct CategoryLabels {
  enum class Mode { straight, wrapped, rotated };
  Mode mode = Mode::straight;
  std::vector<std::vector<std::string>> lines;  // per category
  double height = 0;                            // below the plot, ticks included
  double overhang = 0;                          // how far rotated labels reach left of the first group's centre
};

constexpr double kCategoryFont = 12;
constexpr double kRotation = 40;  // degrees

CategoryLabels layout_categories(const std::vector<std::string>& categories, double group_px) {
  CategoryLabels out;
  const double fit = group_px - 8;
  bool straight = true;
  for (const auto& c : categories) straight = straight && text_width(c, kCategoryFont) <= fit;
  if (straight) {
    for (const auto& c : categories) out.lines.push_back({c});
    out.height = 8 + kCategoryFont + 8;
    return out;
  }
  bool wrapped = true;
  std::size_t most_lines = 1;
  for (const auto& c : categories) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start <= c.size()) {
      std::size_t end = c.find(' ', start);
      if (end == std::string::npos) end = c.size();
      const std::string word = c.substr(start, end - start);
      if (!word.empty()) {
        if (text_width(word, kCategoryFont) > fit) wrapped = false;
        if (!lines.empty() && text_width(lines.back() + " " + word, kCategoryFont) <= fit) {
          lines.back() += " " + word;
        } else {
          lines.push_back(word);
        }
      }
      start = end + 1;
    }
    if (lines.empty()) lines.emplace_back();
    most_lines = std::max(most_lines, lines.size());
    out.lines.push_back(std::move(lines));
  }
  if (wrapped && most_lines <= 3) {
    out.mode = CategoryLabels::Mode::wrapped;
    out.height = 8 + static_cast<double>(most_lines) * (kCategoryFont + 2) + 6;
    return out;
  }
  out.mode = CategoryLabels::Mode::rotated;
  out.lines.clear();
  double widest = 0;
  for (const auto& c : categories) {
    out.lines.push_back({fit_text(c, kCategoryFont, 220, true)});
    widest = std::max(widest, text_width(out.lines.back()[0], kCategoryFont));
  }
  const double a = kRotation * kPi / 180;
  out.height = 10 + widest * std::sin(a) + kCategoryFont * std::cos(a) + 8;
  out.overhang = widest * std::cos(a) + 4;
  return out;
}

// Ticks for a numeric axis that fit in length_px: at most one per min_gap_px, and labels that do not
// collide (horizontal labels on a horizontal axis).
AxisTicks fitted_ticks(double lo, double hi, bool log, double length_px, double min_gap_px, bool horizontal,
                       std::string_view unit) {
  int max_ticks = std::clamp(static_cast<int>(length_px / min_gap_px) + 1, 2, 11);
  for (;;) {
    AxisTicks t = log ? log_ticks(lo, hi, max_ticks, true, unit) : linear_ticks(lo, hi, max_ticks, unit);
    if (!horizontal || max_ticks <= 2 || t.major.size() < 2) return t;
    double widest = 0;
    for (const auto& l : t.labels) widest = std::max(widest, text_width(l, kTickFont));
    const double gap = length_px / static_cast<double>(t.major.size() - 1);
    if (widest + 10 <= gap) return t;
    --max_ticks;
  }
}

double widest_label(const AxisTicks& t) {
  double w = 0;
  for (const auto& l : t.labels) w = std::max(w, text_width(l, kTickFont));
  return w;
}

// Gridlines, tick marks and tick labels of a numeric x axis.
void draw_x_ticks(SvgDoc& svg, const AxisTicks& t, const Scale& sx, const Frame& frame) {
  svg.open_group("x-axis", "shape-rendering=\"crispEdges\"");
  for (const double v : t.minor) {
    const double x = sx(v);
    svg.line(x, frame.top, x, frame.bottom, kMinorGrid, 1);
    svg.line(x, frame.bottom, x, frame.bottom + 3, kTickInk, 1);
  }
  for (const double v : t.major) {
    const double x = sx(v);
    svg.line(x, frame.top, x, frame.bottom, kGrid, 1);
    svg.line(x, frame.bottom, x, frame.bottom + 5, kTickInk, 1);
  }
  svg.close_group();
  svg.open_group("x-tick-labels");
  for (std::size_t i = 0; i < t.major.size(); ++i) {
    svg.text(sx(t.major[i]), frame.bottom + 8 + kTickFont, t.labels[i], {.anchor = "middle"});
  }
  svg.close_group();
}

// Gridlines, tick marks and tick labels of a y axis.
void draw_y_ticks(SvgDoc& svg, const AxisTicks& t, const Scale& sy, const Frame& frame) {
  svg.open_group("y-axis", "shape-rendering=\"crispEdges\"");
  for (const double v : t.minor) {
    const double y = sy(v);
    svg.line(frame.left, y, frame.right, y, kMinorGrid, 1);
    svg.line(frame.left - 3, y, frame.left, y, kTickInk, 1);
  }
  for (const double v : t.major) {
    const double y = sy(v);
    svg.line(frame.left, y, frame.right, y, kGrid, 1);
    svg.line(frame.left - 5, y, frame.left, y, kTickInk, 1);
  }
  svg.close_group();
  svg.open_group("y-tick-labels");
  for (std::size_t i = 0; i < t.major.size(); ++i) {
    svg.text(frame.left - 8, sy(t.major[i]) + kTickFont * 0.35, t.labels[i], {.anchor = "end"});
  }
  svg.close_group();
}

void draw_axis_lines(SvgDoc& svg, const Frame& frame) {
  svg.open_group("axes", "shape-rendering=\"crispEdges\"");
  svg.line(frame.left, frame.top, frame.left, frame.bottom, kInk, 1);
  svg.line(frame.left, frame.bottom, frame.right, frame.bottom, kInk, 1);
  svg.close_group();
}

std::string_view colour(std::size_t i) { return kPalette[i % kPalette.size()]; }

}  // namespace

std::string escape_xml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') break;  // not allowed in XML 1.0
        out += ch;
      }
    }
  }
  return out;
}

namespace {

// format_si, optionally with SI prefixes below 1 too ("100m" rather than "0.1").
std::string format_number(double value, int significant, std::string_view unit, bool si_below_one) {
  std::string body;
  if (std::isnan(value)) {
    body = "NaN";
  } else if (std::isinf(value)) {
    body = value > 0 ? "inf" : "-inf";
  } else {
    significant = std::clamp(significant, 1, 15);
    const double r = round_significant(value, significant);
    const double a = std::abs(r);
    const bool prefixed = a != 0.0 && (a < (si_below_one ? 1.0 : 0.01) || a >= 1000);
    const int e3 = prefixed ? si_exponent(a) : 0;
    const double mantissa = r / power_of_ten(e3);
    const int before = mantissa == 0.0 ? 1 : floor_log10(std::abs(mantissa)) + 1;
    body = fmt::format("{:.{}f}", mantissa, std::clamp(significant - before, 0, 20));
    trim_zeros(body);
    if (body == "-0") body = "0";
    return with_unit(body, si_prefix(e3), unit);
  }
  return unit.empty() ? body : body + " " + std::string(unit);
}

}  // namespace

std::string format_si(double value, int significant, std::string_view unit) {
  return format_number(value, significant, unit, false);
}

namespace {
// A value in a point's hover text, in the axis's unit when it has one ("38.38 ms", "2 TB/s").
std::string value_text(double v, std::string_view unit) {
  if (plain_unit(unit)) return format_number(v, 4, {}, false) + std::string(unit);
  return format_number(v, 4, unit, !unit.empty());
}
}  // namespace

AxisTicks linear_ticks(double lo, double hi, int max_ticks, std::string_view unit) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) {
    lo = 0;
    hi = 1;
  }
  if (lo > hi) std::swap(lo, hi);
  max_ticks = std::max(2, max_ticks);
  if (hi - lo <= 1e-12 * std::max(std::abs(lo), std::abs(hi))) {
    if (lo == 0.0) {
      hi = 1;
    } else {
      const double d = std::abs(lo) * 0.1;
      lo -= d;
      hi += d;
    }
  }
  const double base = power_of_ten(floor_log10((hi - lo) / max_ticks));
  constexpr std::array<double, 3> kSteps{1, 2, 5};
  // The smallest step that gives at most max_ticks ticks; a range around zero needs at least three
  // (-step, 0, step), so fall back to the first step that gives three.
  double step = base, n0 = 0, n1 = 1;
  std::optional<std::tuple<double, double, double>> three;
  bool fits = false;
  for (int i = 0; i < 12 && !fits; ++i) {  // up to 1000 x base, i.e. > 100 x the span
    step = base * kSteps[static_cast<std::size_t>(i % 3)] * power_of_ten(i / 3);
    n0 = std::floor(lo / step + 1e-9);
    n1 = std::ceil(hi / step - 1e-9);
    fits = n1 - n0 + 1 <= max_ticks;
    if (n1 - n0 + 1 <= 3 && !three) three = std::tuple(step, n0, n1);
  }
  if (!fits && three) std::tie(step, n0, n1) = *three;
  if (n1 <= n0) n1 = n0 + 1;
  AxisTicks t;
  t.lo = n0 * step;
  t.hi = n1 * step;
  for (double n = n0; n <= n1 + 0.5; n += 1) t.major.push_back(n == 0 ? 0.0 : n * step);
  const double biggest = std::max(std::abs(t.lo), std::abs(t.hi));
  const bool si = plain_unit(unit) ? false : !unit.empty() || biggest >= 1000 || biggest < 0.01;
  for (const double v : t.major) {
    t.labels.push_back(plain_unit(unit) ? linear_tick_label(v, step, false, {}) + std::string(unit)
                                        : linear_tick_label(v, step, si, unit));
  }
  return t;
}

AxisTicks log_ticks(double lo, double hi, int max_ticks, bool snap, std::string_view unit) {
  if (!(lo > 0) || !std::isfinite(lo)) lo = (hi > 0 && std::isfinite(hi)) ? hi / 10 : 1;
  if (!(hi > 0) || !std::isfinite(hi)) hi = lo * 10;
  if (lo > hi) std::swap(lo, hi);
  max_ticks = std::max(2, max_ticks);
  int e0 = floor_log10(lo);
  int e1 = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  if (e1 <= e0) e1 = e0 + 1;
  AxisTicks t;
  if (snap || e1 - e0 < 2) {
    // Whole decades; also when the range holds fewer than two powers of ten, so there is something
    // to label.
    t.lo = power_of_ten(e0);
    t.hi = power_of_ten(e1);
  } else {
    t.lo = lo;
    t.hi = hi;
  }
  int every = 1;
  while ((e1 - e0) / every + 1 > max_ticks) ++every;
  const auto within = [&](double v) { return v >= t.lo * (1 - 1e-9) && v <= t.hi * (1 + 1e-9); };
  for (int k = e0; k <= e1; ++k) {
    const double v = power_of_ten(k);
    if (!within(v)) continue;
    (((k % every) + every) % every == 0 ? t.major : t.minor).push_back(v);
  }
  // Labels: plain from 0.01 to 1000, SI prefixes beyond; when the axis reaches below 0.01, all the
  // labels below 1 take prefixes ("100m", "10m", "1m") so they read alike.
  // With a unit every label takes the prefix it needs ("100 us", "1 ms").
  const bool small = !t.major.empty() && (t.major.front() < 0.01 || (!unit.empty() && t.major.front() < 1));
  for (const double v : t.major) {
    t.labels.push_back(plain_unit(unit) ? format_number(v, 3, {}, false) + std::string(unit)
                                        : format_number(v, 3, unit, small));
  }
  if (every == 1 && e1 - e0 <= 12) {
    for (int k = e0 - 1; k <= e1; ++k) {
      for (int m = 2; m <= 9; ++m) {
        const double v = m * power_of_ten(k);
        if (within(v)) t.minor.push_back(v);
      }
    }
    std::sort(t.minor.begin(), t.minor.end());
  }
  return t;
}

std::string render_chart_svg(const Chart& chart, int width_px, int height_px) {
  const double W = std::clamp(width_px, 200, 20000);
  const double H = std::clamp(height_px, 150, 20000);
  const bool categorical = !chart.x_categories.empty();
  const bool log_x = chart.log_x && !categorical;
  const bool log_y = chart.log_y;
  const std::size_t categories = chart.x_categories.size();

  // Clean the data: drop NaN/inf, values <= 0 on log axes, and category indices out of range.
  int non_finite = 0, non_positive = 0, bad_category = 0, drawable = 0;
  std::vector<CleanSeries> series;
  Range xr, yr;
  for (const auto& s : chart.series) {
    CleanSeries c;
    c.name = s.name;
    if (categorical) c.bars.assign(categories, std::nullopt);
    bool run_open = false;
    const std::size_t n = std::min(s.x.size(), s.y.size());
    for (std::size_t i = 0; i < n; ++i) {
      const double x = s.x[i], y = s.y[i];
      bool ok = true;
      if (!std::isfinite(x) || !std::isfinite(y)) {
        ++non_finite;
        ok = false;
      } else if ((log_x && x <= 0) || (log_y && y <= 0)) {
        ++non_positive;
        ok = false;
      } else if (categorical && (x < 0 || x != std::floor(x) || x >= static_cast<double>(categories))) {
        ++bad_category;
        ok = false;
      }
      if (!ok) {
        run_open = false;
        continue;
      }
      ++c.points;
      ++drawable;
      yr.add(y);
      if (categorical) {
        c.bars[static_cast<std::size_t>(x)] = y;
      } else {
        xr.add(x);
        if (!run_open) c.runs.emplace_back();
        c.runs.back().emplace_back(x, y);
        run_open = true;
      }
    }
    series.push_back(std::move(c));
  }
  if (drawable == 0) return render_no_data(chart.title, chart.x_label, chart.y_label, W, H);
  const std::string note = omitted_note(non_finite, non_positive, bad_category);

  // The y range: bars start at zero; a line chart's y axis includes zero when the data sits not far
  // above (or below) it.
  double ylo = yr.lo, yhi = yr.hi;
  if (!log_y) {
    if (categorical) {
      ylo = std::min(ylo, 0.0);
      yhi = std::max(yhi, 0.0);
    } else if (ylo > 0 && ylo <= 0.5 * yhi) {
      ylo = 0;
    } else if (yhi < 0 && yhi >= 0.5 * ylo) {
      yhi = 0;
    }
  }

  // The legend lists every series when any has a name.
  std::vector<std::string> legend_names;
  bool any_name = false;
  for (const auto& s : series) any_name = any_name || !s.name.empty();
  if (any_name) {
    for (std::size_t i = 0; i < series.size(); ++i) {
      legend_names.push_back(series[i].name.empty() ? fmt::format("series {}", i + 1) : series[i].name);
    }
  }
  const LegendLayout legend = layout_legend(legend_names, W, H);

  // Lay out the margins; the tick labels depend on the plot size and the other way round, so go
  // round a few times.
  const double title_h = chart.title.empty() ? 16 : 44;
  const double x_label_h = chart.x_label.empty() ? 0 : 22;
  const double note_h = note.empty() ? 0 : 16;
  const double legend_below_h = legend.below ? legend.height + 6 : 0;
  const double right_legend = (!legend.names.empty() && !legend.below) ? legend.width + 18 : 0;
  Frame frame{.left = 60, .top = title_h, .right = W - 20, .bottom = H - 40};
  AxisTicks yt, xt;
  CategoryLabels cat;
  double x_block = 8 + kTickFont + 8;
  for (int pass = 0; pass < 3; ++pass) {
    frame.bottom = std::max(frame.top + 40, H - (x_block + x_label_h + legend_below_h + note_h + 8));
    yt = fitted_ticks(ylo, yhi, log_y, frame.height(), 42, false, chart.y_unit);
    double left = 10 + (chart.y_label.empty() ? 0 : 22) + widest_label(yt) + 9;
    double right_margin = right_legend > 0 ? right_legend : 16;
    if (categorical) {
      const double group = (W - right_margin - left) / static_cast<double>(categories);
      cat = layout_categories(chart.x_categories, group);
      if (cat.mode == CategoryLabels::Mode::rotated) left = std::max(left, cat.overhang - group / 2 + 8);
      x_block = cat.height;
    } else {
      xt = fitted_ticks(xr.lo, xr.hi, log_x, W - right_margin - left, 70, true, chart.x_unit);
      if (right_legend == 0 && !xt.labels.empty()) {
        right_margin = std::max(right_margin, text_width(xt.labels.back(), kTickFont) / 2 + 8);
      }
      x_block = 8 + kTickFont + 8;
    }
    frame.left = left;
    frame.right = std::max(frame.left + 40, W - right_margin);
  }
  if (!categorical) xt = fitted_ticks(xr.lo, xr.hi, log_x, frame.width(), 70, true, chart.x_unit);

  const Scale sy{.lo = yt.lo, .hi = yt.hi, .p0 = frame.bottom, .p1 = frame.top, .log = log_y};
  SvgDoc svg(W, H);
  draw_title(svg, chart.title, frame, W);
  draw_y_ticks(svg, yt, sy, frame);

  if (categorical) {
    const double group = frame.width() / static_cast<double>(categories);
    const double inner = group * (series.size() == 1 ? 0.6 : 0.8);
    const double bar = inner / static_cast<double>(series.size());
    const double base_v = log_y ? yt.lo : std::clamp(0.0, yt.lo, yt.hi);
    const double base_y = sy(base_v);
    svg.open_group("bars");
    for (std::size_t si = 0; si < series.size(); ++si) {
      svg.addf("<g class=\"series\" fill=\"{}\">\n", colour(si));
      for (std::size_t ci = 0; ci < categories; ++ci) {
        if (!series[si].bars[ci]) continue;
        const double v = *series[si].bars[ci];
        const double x = frame.left + group * static_cast<double>(ci) + (group - inner) / 2 +
                         bar * static_cast<double>(si) + bar * 0.06;
        const double y = sy(v);
        const double top = std::min(y, base_y);
        const double h = std::max(std::abs(y - base_y), 0.0);
        svg.addf("<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{}</title></rect>\n",
                 num(x), num(top), num(bar * 0.88), num(h),
                 escape_xml(fmt::format("{}{}{}: {}", series[si].name, series[si].name.empty() ? "" : ", ",
                                        chart.x_categories[ci], value_text(v, chart.y_unit))));
      }
      svg.close_group();
    }
    svg.close_group();
    if (!log_y && yt.lo < 0 && yt.hi > 0) svg.line(frame.left, base_y, frame.right, base_y, kInk, 1);
    // Category labels, centred under their groups.
    svg.open_group("x-tick-labels");
    for (std::size_t ci = 0; ci < categories; ++ci) {
      const double cx = frame.left + group * (static_cast<double>(ci) + 0.5);
      svg.line(cx, frame.bottom, cx, frame.bottom + 5, kTickInk, 1, "shape-rendering=\"crispEdges\"");
      const auto& lines = cat.lines[ci];
      if (cat.mode == CategoryLabels::Mode::rotated) {
        svg.text(cx + 4, frame.bottom + 12, lines[0],
                 {.size = kCategoryFont, .anchor = "end", .fill = kInk, .rotate = -kRotation});
      } else {
        for (std::size_t li = 0; li < lines.size(); ++li) {
          svg.text(cx, frame.bottom + 8 + kCategoryFont + static_cast<double>(li) * (kCategoryFont + 2), lines[li],
                   {.size = kCategoryFont, .anchor = "middle", .fill = kInk});
        }
      }
    }
    svg.close_group();
  } else {
    const Scale sx{.lo = xt.lo, .hi = xt.hi, .p0 = frame.left, .p1 = frame.right, .log = log_x};
    draw_x_ticks(svg, xt, sx, frame);
    if (!log_y && yt.lo < 0 && yt.hi > 0) svg.line(frame.left, sy(0), frame.right, sy(0), "#999999", 1);
    svg.open_group("lines");
    for (std::size_t si = 0; si < series.size(); ++si) {
      if (series[si].points == 0) continue;
      std::string d;
      for (const auto& run : series[si].runs) {
        for (std::size_t i = 0; i < run.size(); ++i) {
          d += fmt::format("{}{} {}", i == 0 ? (d.empty() ? "M" : " M") : " L", num(sx(run[i].first)),
                           num(sy(run[i].second)));
        }
      }
      svg.addf("<path class=\"series-line\" d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" "
               "stroke-linejoin=\"round\" stroke-linecap=\"round\"/>\n",
               d, colour(si));
    }
    for (std::size_t si = 0; si < series.size(); ++si) {
      if (series[si].points == 0) continue;
      svg.open_group("markers");
      for (const auto& run : series[si].runs) {
        for (const auto& [x, y] : run) {
          const std::string tip = fmt::format("{}{}x = {}, y = {}", series[si].name, series[si].name.empty() ? "" : ": ",
                                              value_text(x, chart.x_unit), value_text(y, chart.y_unit));
          marker(svg, static_cast<int>(si), sx(x), sy(y), 4, colour(si), tip);
        }
      }
      svg.close_group();
    }
    svg.close_group();
  }
  draw_axis_lines(svg, frame);

  const double x_label_baseline = frame.bottom + x_block + 14;
  // The y label sits just left of the tick labels (the margin may be wider, for rotated categories).
  const double y_label_x = std::max(10 + kLabelFont, frame.left - 9 - widest_label(yt) - 6);
  draw_axis_labels(svg, chart.x_label, chart.y_label, frame, x_label_baseline, y_label_x);

  if (!legend.names.empty()) {
    const double lx = legend.below ? std::max(20.0, std::min(frame.left, W - 20 - legend.used_width)) : frame.right + 18;
    const double ly = legend.below ? frame.bottom + x_block + x_label_h + 6 : frame.top;
    draw_legend(svg, legend, lx, ly, [&](std::size_t i, double x, double cy) {
      if (categorical) {
        svg.addf("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"12\" fill=\"{}\"/>\n", num(x + 6), num(cy - 6),
                 colour(i));
      } else {
        svg.line(x, cy, x + kSwatchWidth, cy, colour(i), 2);
        marker(svg, static_cast<int>(i), x + kSwatchWidth / 2, cy, 4, colour(i), {});
      }
    });
  }
  draw_note(svg, note, W, H);
  return svg.finish();
}

std::string render_roofline_svg(const Roofline& roofline, int width_px, int height_px) {
  const double W = std::clamp(width_px, 200, 20000);
  const double H = std::clamp(height_px, 150, 20000);
  const double peak = roofline.peak_flops_per_s, bandwidth = roofline.peak_bytes_per_s;
  const bool has_roof = std::isfinite(peak) && peak > 0 && std::isfinite(bandwidth) && bandwidth > 0;
  const std::string x_label = "Arithmetic intensity (FLOP/byte)";
  const std::string y_label = "Performance (FLOP/s)";

  std::vector<RooflinePoint> points;
  int skipped = 0;
  Range xr, yr;
  for (const auto& p : roofline.points) {
    if (!std::isfinite(p.flops_per_byte) || !std::isfinite(p.flops_per_s) || p.flops_per_byte <= 0 ||
        p.flops_per_s <= 0) {
      ++skipped;
      continue;
    }
    points.push_back(p);
    xr.add(p.flops_per_byte);
    yr.add(p.flops_per_s);
  }
  if (!has_roof && points.empty()) return render_no_data(roofline.title, x_label, y_label, W, H);

  // Domains: x shows the points and a couple of decades either side of the ridge; y reaches from
  // the lowest point or the roof's left end up to a little above the peak.
  const double ridge = has_roof ? peak / bandwidth : 0.0;
  double xlo = xr.empty() ? ridge / 100 : xr.lo / 2;
  double xhi = xr.empty() ? ridge * 10 : xr.hi * 2;
  if (has_roof) {
    xlo = std::min(xlo, ridge / 100);
    xhi = std::max(xhi, ridge * 10);
  }
  xlo = power_of_ten(floor_log10(xlo));
  xhi = power_of_ten(static_cast<int>(std::ceil(std::log10(xhi) - 1e-9)));
  double ylo = yr.empty() ? std::numeric_limits<double>::infinity() : yr.lo / 2;
  double yhi = yr.empty() ? 0.0 : yr.hi;
  if (has_roof) {
    ylo = std::min(ylo, xlo * bandwidth);
    yhi = std::max(yhi, peak);
  }
  ylo = power_of_ten(floor_log10(ylo));
  yhi *= 3;

  std::vector<std::string> legend_names;
  std::vector<int> legend_kinds;  // 0 roof, 1 memory-bound point, 2 compute-bound point, 3 point
  if (has_roof) {
    legend_names.emplace_back(fmt::format("roof: min({}, intensity × {})", format_si(peak, 3, "FLOP/s"),
                                          format_si(bandwidth, 3, "B/s")));
    legend_kinds.push_back(0);
    bool memory = false, compute = false;
    for (const auto& p : points) (p.flops_per_byte < ridge ? memory : compute) = true;
    if (memory) {
      legend_names.emplace_back("memory-bound point");
      legend_kinds.push_back(1);
    }
    if (compute) {
      legend_names.emplace_back("compute-bound point");
      legend_kinds.push_back(2);
    }
  }
  const LegendLayout legend = layout_legend(legend_names, W, H, false);

  std::string note;
  if (skipped > 0) note = fmt::format("Not shown: {} with a non-positive or non-finite value.", plural(skipped, "point", "points"));
  if (!has_roof) note += std::string(note.empty() ? "" : " ") + "No roof: peak FLOP/s or bandwidth not set.";

  const double title_h = roofline.title.empty() ? 16 : 44;
  const double note_h = note.empty() ? 0 : 16;
  const double legend_h = legend.names.empty() ? 0 : legend.height + 6;
  Frame frame{.left = 70, .top = title_h, .right = W - 24, .bottom = H - (8 + kTickFont + 8 + 22 + legend_h + note_h + 8)};
  frame.bottom = std::max(frame.bottom, frame.top + 40);
  AxisTicks yt = log_ticks(ylo, yhi, std::clamp(static_cast<int>(frame.height() / 36) + 1, 2, 12), false, "FLOP/s");
  frame.left = 10 + 22 + widest_label(yt) + 9;
  AxisTicks xt = fitted_ticks(xlo, xhi, true, frame.width(), 50, true, {});
  const Scale sx{.lo = xt.lo, .hi = xt.hi, .p0 = frame.left, .p1 = frame.right, .log = true};
  const Scale sy{.lo = yt.lo, .hi = yt.hi, .p0 = frame.bottom, .p1 = frame.top, .log = true};

  SvgDoc svg(W, H);
  draw_title(svg, roofline.title, frame, W);

  std::vector<Box> taken;  // label and marker boxes already placed
  std::vector<std::pair<double, double>> centres;  // of the points, in pixels
  for (const auto& p : points) centres.emplace_back(sx(p.flops_per_byte), sy(p.flops_per_s));
  // The roof's pixel y at pixel x (for keeping labels off the line).
  const auto roof_y = [&](double px) {
    const double v = std::pow(10.0, std::log10(xt.lo) + (px - frame.left) / frame.width() *
                                                             (std::log10(xt.hi) - std::log10(xt.lo)));
    return sy(std::min(peak, v * bandwidth));
  };
  const auto crosses_roof = [&](const Box& b) {
    if (!has_roof) return false;
    double lo = std::min(roof_y(b.x0), roof_y(b.x1)), hi = std::max(roof_y(b.x0), roof_y(b.x1));
    const double rx = sx(ridge);
    if (rx > b.x0 && rx < b.x1) {
      lo = std::min(lo, roof_y(rx));
      hi = std::max(hi, roof_y(rx));
    }
    return hi >= b.y0 && lo <= b.y1;
  };

  // The region under the roof, lightly shaded, then the grid over it.
  double slope_start = xt.lo;
  if (has_roof) {
    slope_start = std::max(xt.lo, yt.lo / bandwidth);
    svg.addf("<path class=\"roof-area\" d=\"M{} {} L{} {} L{} {} L{} {} L{} {} Z\" fill=\"#eef3f8\"/>\n",
             num(sx(slope_start)), num(frame.bottom), num(sx(slope_start)), num(sy(slope_start * bandwidth)),
             num(sx(ridge)), num(sy(peak)), num(frame.right), num(sy(peak)), num(frame.right), num(frame.bottom));
  }
  draw_y_ticks(svg, yt, sy, frame);
  draw_x_ticks(svg, xt, sx, frame);

  if (has_roof) {
    svg.open_group("roofline");
    svg.addf("<path class=\"roof\" d=\"M{} {} L{} {} L{} {}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2.5\" "
             "stroke-linejoin=\"round\"/>\n",
             num(sx(slope_start)), num(sy(slope_start * bandwidth)), num(sx(ridge)), num(sy(peak)), num(frame.right),
             num(sy(peak)), kInk);
    // The ridge: a dashed drop to the x axis and a ring at the corner.
    const double rx = sx(ridge), ry = sy(peak);
    svg.line(rx, ry, rx, frame.bottom, "#888888", 1, "stroke-dasharray=\"4 3\"");
    svg.addf("<circle class=\"ridge\" cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"#ffffff\" stroke=\"{}\" stroke-width=\"2\">"
             "<title>{}</title></circle>\n",
             num(rx), num(ry), kInk,
             escape_xml(fmt::format("ridge point: {} at {}", format_si(ridge, 3, "FLOP/byte"),
                                    format_si(peak, 3, "FLOP/s"))));
    taken.push_back({rx - 9, ry - 9, rx + 9, ry + 9});
    taken.push_back({rx - 1.5, ry, rx + 1.5, frame.bottom});
    const std::string ridge_text = fmt::format("ridge {}", format_si(ridge, 3, "FLOP/B"));
    const double ridge_w = text_width(ridge_text, 10.5);
    svg.text(rx + 5, frame.bottom - 6, ridge_text, {.size = 10.5, .fill = "#555555"});
    taken.push_back(label_box(rx + 5, frame.bottom - 6, ridge_w, 10.5, "start"));
    // The compute ceiling, labelled above the flat roof at the right.
    const std::string peak_text = fmt::format("peak {}", format_si(peak, 3, "FLOP/s"));
    const double peak_w = text_width(peak_text, 11.5);
    const double px = frame.right - 6;
    svg.text(px, ry - 7, peak_text, {.size = 11.5, .anchor = "end", .fill = kInk, .bold = true});
    taken.push_back(label_box(px, ry - 7, peak_w * 1.08, 11.5, "end"));
    // The bandwidth, along the slope just above it: at the middle, or nearer an end when points
    // crowd the middle.
    const double x0 = sx(slope_start), y0 = sy(slope_start * bandwidth);
    const double len = std::hypot(rx - x0, ry - y0);
    const std::string bw_text = format_si(bandwidth, 3, "B/s");
    const double bw_w = text_width(bw_text, 11.5) * 1.08;
    const double angle = std::atan2(ry - y0, rx - x0);
    const double c = std::abs(std::cos(angle)), s = std::abs(std::sin(angle));
    const double box_w = bw_w * c + 12 * s, box_h = bw_w * s + 12 * c;
    std::optional<Box> best;
    double best_cost = std::numeric_limits<double>::infinity(), best_x = 0, best_y = 0;
    for (const double t : {0.5, 0.38, 0.62, 0.26, 0.74, 0.15, 0.85}) {
      if (t * len < bw_w / 2 + 6 || (1 - t) * len < bw_w / 2 + 14) continue;  // stay on the slope
      const double mx = x0 + t * (rx - x0) + 8 * std::sin(angle), my = y0 + t * (ry - y0) - 8 * std::cos(angle);
      // The rotated text's bounding rectangle, roughly (its middle sits ~4 px above the baseline).
      const double cx = mx + 4 * std::sin(angle), cy = my - 4 * std::cos(angle);
      const Box box{cx - box_w / 2, cy - box_h / 2, cx + box_w / 2, cy + box_h / 2};
      double cost = 0;
      for (const auto& [px, py] : centres) cost += box.overlap({px - 7, py - 7, px + 7, py + 7});
      if (cost < best_cost) {
        best_cost = cost;
        best = box;
        best_x = mx;
        best_y = my;
      }
      if (cost == 0) break;
    }
    if (best) {
      svg.text(best_x, best_y, bw_text,
               {.size = 11.5, .anchor = "middle", .fill = kInk, .bold = true, .rotate = angle * 180 / kPi});
      taken.push_back(*best);
    }
    svg.close_group();
  }
  draw_axis_lines(svg, frame);

  // Points: memory-bound ones blue circles, compute-bound ones vermillion diamonds.
  svg.open_group("points");
  for (std::size_t i = 0; i < points.size(); ++i) {
    const RooflinePoint& p = points[i];
    const auto [cx, cy] = centres[i];
    const bool memory_bound = has_roof && p.flops_per_byte < ridge;
    std::string tip = fmt::format("{}{}{}, {}", p.label, p.label.empty() ? "" : ": ",
                                  format_si(p.flops_per_byte, 4, "FLOP/byte"), format_si(p.flops_per_s, 4, "FLOP/s"));
    if (has_roof) {
      const double attainable = std::min(peak, p.flops_per_byte * bandwidth);
      tip += fmt::format(" ({:.1f}% of the roof, {}-bound)", 100 * p.flops_per_s / attainable,
                         memory_bound ? "memory" : "compute");
    }
    const int shape = !has_roof ? 0 : (memory_bound ? 0 : 3);
    const std::string_view fill = !has_roof ? kPalette[0] : (memory_bound ? kPalette[0] : kPalette[3]);
    marker(svg, shape, cx, cy, 4.5, fill, tip);
    taken.push_back({cx - 7, cy - 7, cx + 7, cy + 7});
  }
  svg.close_group();

  // Point labels: try the eight compass directions next to the point, then farther out with a
  // leader line; take the spot that overlaps the least of the labels, markers and roof already
  // drawn, inside the plot.
  constexpr double kPointFont = 10.5;
  constexpr double kDiagonal = 0.7;
  constexpr std::array<std::pair<double, double>, 8> kDirections{
      {{1, 0}, {-1, 0}, {0, -1}, {0, 1}, {kDiagonal, -kDiagonal}, {kDiagonal, kDiagonal}, {-kDiagonal, -kDiagonal},
       {-kDiagonal, kDiagonal}}};
  const Box plot_box{frame.left + 1, frame.top + 1, frame.right - 1, frame.bottom - 1};
  std::vector<std::array<double, 4>> leaders;  // x0, y0, x1, y1
  svg.open_group("point-labels");
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (points[i].label.empty()) continue;
    const std::string text = fit_text(points[i].label, kPointFont, 160);
    const double w = text_width(text, kPointFont) + 2, h = kPointFont * 1.05;
    const auto [cx, cy] = centres[i];
    double best = std::numeric_limits<double>::infinity();
    Box best_box;
    int best_ring = 0;
    for (int ring = 0; ring < 6 && best > 0.5; ++ring) {
      const double gap = 7 + 14 * ring;
      for (const auto& [ux, uy] : kDirections) {
        const double ax = cx + gap * ux, ay = cy + gap * uy;
        const double x0 = ux > 0 ? ax : (ux < 0 ? ax - w : ax - w / 2);
        const double y0 = uy > 0 ? ay : (uy < 0 ? ay - h : ay - h / 2);
        const Box box{x0, y0, x0 + w, y0 + h};
        double cost = 0;
        for (const auto& t : taken) {
          const double o = box.overlap(t);
          if (o > 0) cost += 60 + o;
        }
        for (const auto& l : leaders) {
          if (segment_hits_box(l[0], l[1], l[2], l[3], box)) cost += 50;
        }
        if (ring > 0) {  // the leader line should not cross other markers or labels
          const double lx = std::clamp(cx, box.x0, box.x1), ly = std::clamp(cy, box.y0, box.y1);
          const double len = std::max(std::hypot(lx - cx, ly - cy), 1e-9);
          const double sx0 = cx + (lx - cx) * 8 / len, sy0 = cy + (ly - cy) * 8 / len;
          for (const auto& t : taken) {
            if (len > 8 && segment_hits_box(sx0, sy0, lx, ly, t)) cost += 50;
          }
          if (has_roof && (sy0 - roof_y(sx0)) * (ly - roof_y(lx)) < 0) cost += 20;  // crosses the roof
          for (const auto& l : leaders) {
            if (segments_cross(l, {sx0, sy0, lx, ly})) cost += 30;
          }
        }
        if (crosses_roof(box)) cost += 80;
        if (!box.inside(plot_box)) cost += 1e6;
        if (ring > 0) cost += 0.1 * ring;  // nearer is better when both are free
        if (cost < best) {
          best = cost;
          best_box = box;
          best_ring = ring;
        }
      }
    }
    if (best_ring > 0) {  // a leader line from the marker's edge to the nearest point of the label
      const double lx = std::clamp(cx, best_box.x0, best_box.x1);
      const double ly = std::clamp(cy, best_box.y0, best_box.y1);
      const double len = std::hypot(lx - cx, ly - cy);
      if (len > 8) {
        leaders.push_back({cx + (lx - cx) * 6 / len, cy + (ly - cy) * 6 / len, lx, ly});
        svg.line(leaders.back()[0], leaders.back()[1], lx, ly, "#999999", 0.8);
      }
    }
    svg.text(best_box.x0 + 1, best_box.y1 - kPointFont * 0.27, text, {.size = kPointFont, .fill = kInk});
    taken.push_back(best_box);
  }
  svg.close_group();

  draw_axis_labels(svg, x_label, y_label, frame, frame.bottom + 8 + kTickFont + 8 + 14, 10 + kLabelFont);
  if (!legend.names.empty()) {
    const double ly = frame.bottom + 8 + kTickFont + 8 + 22 + 6;
    draw_legend(svg, legend, std::max(20.0, std::min(frame.left, W - 20 - legend.used_width)), ly, [&](std::size_t i, double x, double cy) {
      switch (legend_kinds[i]) {
        case 0: svg.line(x, cy, x + kSwatchWidth, cy, kInk, 2.5); break;
        case 1: marker(svg, 0, x + kSwatchWidth / 2, cy, 4.5, kPalette[0], {}); break;
        default: marker(svg, 3, x + kSwatchWidth / 2, cy, 4.5, kPalette[3], {}); break;
      }
    });
  }
  draw_note(svg, note, W, H);
  return svg.finish();
}

}  // namespace syntorch::report

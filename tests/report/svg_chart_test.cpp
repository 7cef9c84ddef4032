// The SVG charts: nice and log ticks, SI labels, well-formed and escaped SVG for line, bar and
// roofline charts, skipped NaN/inf and non-positive log values, empty charts, determinism.

#include "svg_chart.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "xml_check.hpp"

namespace syntorch::report {
namespace {

using testing::xml_error;

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
  return n;
}

Chart bandwidth_chart() {
  Chart c;
  c.title = "Decode step time vs HBM bandwidth";
  c.x_label = "HBM bandwidth (B/s)";
  c.y_label = "Decode step (ms)";
  const std::vector<double> bw{1e12, 2e12, 3e12, 4e12, 5e12, 6e12, 7e12, 8e12};
  for (const auto& [name, work] : std::vector<std::pair<std::string, double>>{{"Llama-3 8B", 16.0}, {"Llama-3 70B tp=4", 36.0}, {"Mixtral 8x7B", 26.0}}) {
    Series s{name, bw, {}};
    for (const double b : bw) s.y.push_back(work * 1e12 / b + 2.0);
    c.series.push_back(s);
  }
  return c;
}

Chart bar_chart() {
  Chart c;
  c.title = "Throughput by parallel layout";
  c.x_label = "layout";
  c.y_label = "tokens/s";
  c.x_categories = {"tp=4 pp=2", "tp=8 pp=1", "tp=2 pp=4"};
  c.series = {{"H100", {0, 1, 2}, {1800, 2100, 1500}},
              {"H200", {0, 1, 2}, {2300, 2700, 1900}},
              {"B200", {0, 1, 2}, {3900, 4400, 3100}}};
  return c;
}

TEST(LinearTicks, ZeroToSevenPointThree) {
  const AxisTicks t = linear_ticks(0, 7.3, 6);
  EXPECT_EQ(t.major, (std::vector<double>{0, 2, 4, 6, 8}));
  EXPECT_EQ(t.labels, (std::vector<std::string>{"0", "2", "4", "6", "8"}));
  EXPECT_EQ(t.lo, 0);
  EXPECT_EQ(t.hi, 8);
  const AxisTicks fine = linear_ticks(0, 7.3, 10);
  EXPECT_EQ(fine.labels, (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7", "8"}));
  EXPECT_TRUE(fine.minor.empty());
}

TEST(LinearTicks, TerabytesPerSecondGetSiLabels) {
  const AxisTicks t = linear_ticks(1e12, 8e12, 8);
  EXPECT_EQ(t.labels, (std::vector<std::string>{"1T", "2T", "3T", "4T", "5T", "6T", "7T", "8T"}));
  EXPECT_DOUBLE_EQ(t.lo, 1e12);
  EXPECT_DOUBLE_EQ(t.hi, 8e12);
  const AxisTicks coarse = linear_ticks(1e12, 8e12, 5);
  EXPECT_EQ(coarse.labels, (std::vector<std::string>{"0", "2T", "4T", "6T", "8T"}));
}

TEST(LinearTicks, AUnitGoesOnEveryLabelWithItsPrefix) {
  const AxisTicks bw = linear_ticks(0, 7e12, 8, "B/s");
  EXPECT_EQ(bw.labels.front(), "0");
  EXPECT_NE(std::find(bw.labels.begin(), bw.labels.end(), "2 TB/s"), bw.labels.end()) << bw.labels[1];
  const AxisTicks t = linear_ticks(0, 0.0045, 6, "s");
  EXPECT_NE(std::find(t.labels.begin(), t.labels.end(), "1 ms"), t.labels.end()) << t.labels[1];
  const AxisTicks words = linear_ticks(0, 4500, 6, "tokens/s");  // a word keeps the prefix on the number
  EXPECT_NE(std::find(words.labels.begin(), words.labels.end(), "1k tokens/s"), words.labels.end()) << words.labels[1];
  const AxisTicks pct = linear_ticks(0, 90, 4, "%");
  EXPECT_NE(std::find(pct.labels.begin(), pct.labels.end(), "50%"), pct.labels.end()) << pct.labels[1];
  const AxisTicks logs = log_ticks(1e-5, 1e-2, 5, true, "s");
  EXPECT_EQ(logs.labels, (std::vector<std::string>{"10 \xC2\xB5s", "100 \xC2\xB5s", "1 ms", "10 ms"}));  // µs
}

TEST(LinearTicks, FractionsMillionsAndNegatives) {
  EXPECT_EQ(linear_ticks(0, 1, 6).labels, (std::vector<std::string>{"0", "0.2", "0.4", "0.6", "0.8", "1"}));
  EXPECT_EQ(linear_ticks(0, 2.4e6, 6).labels,
            (std::vector<std::string>{"0", "500k", "1M", "1.5M", "2M", "2.5M"}));
  EXPECT_EQ(linear_ticks(0, 0.004, 5).labels, (std::vector<std::string>{"0", "1m", "2m", "3m", "4m"}));
  EXPECT_EQ(linear_ticks(200, 1000, 5).labels, (std::vector<std::string>{"200", "400", "600", "800", "1k"}));
  EXPECT_EQ(linear_ticks(-3, 7, 6).labels, (std::vector<std::string>{"-5", "0", "5", "10"}));
  const AxisTicks t = linear_ticks(-3, 7, 6);
  EXPECT_NE(std::find(t.major.begin(), t.major.end(), 0.0), t.major.end());
}

TEST(LinearTicks, AreOneTwoFiveStepsCoveringTheRange) {
  const std::vector<std::pair<double, double>> ranges{{0, 7.3},     {1e12, 8e12}, {0.013, 0.0171}, {-250, 1234},
                                                      {3, 3},       {0, 0},       {1e-9, 5e-9},    {99, 101},
                                                      {-1e6, -1e3}, {17, 1e5}};
  for (const auto& [lo, hi] : ranges) {
    for (int max_ticks = 2; max_ticks <= 10; ++max_ticks) {
      const AxisTicks t = linear_ticks(lo, hi, max_ticks);
      ASSERT_GE(t.major.size(), 2u) << lo << ".." << hi;
      EXPECT_LE(static_cast<int>(t.major.size()), std::max(max_ticks, lo < 0 && hi > 0 ? 3 : 2)) << lo << ".." << hi << " max " << max_ticks;
      EXPECT_EQ(t.labels.size(), t.major.size());
      const double slack = 1e-9 * std::max(1.0, std::abs(hi - lo));
      EXPECT_LE(t.lo, lo + slack) << lo << ".." << hi << " max " << max_ticks;
      EXPECT_GE(t.hi, hi - slack) << lo << ".." << hi << " max " << max_ticks;
      const double step = t.major[1] - t.major[0];
      const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
      EXPECT_TRUE(std::abs(mantissa - 1) < 1e-6 || std::abs(mantissa - 2) < 1e-6 || std::abs(mantissa - 5) < 1e-6)
          << "step " << step;
      for (std::size_t i = 1; i < t.labels.size(); ++i) EXPECT_NE(t.labels[i], t.labels[i - 1]);
    }
  }
}

TEST(LogTicks, PowersOfTenWithMinorTicks) {
  const AxisTicks t = log_ticks(1, 1000, 8);
  EXPECT_EQ(t.labels, (std::vector<std::string>{"1", "10", "100", "1k"}));
  EXPECT_EQ(t.minor.size(), 24u);  // 2..9 in each of three decades
  EXPECT_DOUBLE_EQ(t.minor.front(), 2);
  EXPECT_DOUBLE_EQ(t.minor.back(), 900);
  const AxisTicks widened = log_ticks(3, 7, 8);  // inside one decade: widened to 1..10
  EXPECT_EQ(widened.labels, (std::vector<std::string>{"1", "10"}));
  EXPECT_EQ(log_ticks(0.002, 0.5, 8).labels, (std::vector<std::string>{"1m", "10m", "100m", "1"}));
  EXPECT_EQ(log_ticks(0.02, 50, 8).labels, (std::vector<std::string>{"0.01", "0.1", "1", "10", "100"}));
}

TEST(LogTicks, ManyDecadesSkipSomeAndKeepThemAsMinors) {
  const AxisTicks t = log_ticks(1e-3, 1e15, 8);
  EXPECT_EQ(t.labels, (std::vector<std::string>{"1m", "1", "1k", "1M", "1G", "1T", "1P"}));
  EXPECT_EQ(t.minor.size(), 12u);  // the skipped decades
  const AxisTicks unsnapped = log_ticks(3e-2, 2e4, 10, false);
  EXPECT_DOUBLE_EQ(unsnapped.lo, 3e-2);
  EXPECT_DOUBLE_EQ(unsnapped.hi, 2e4);
  EXPECT_EQ(unsnapped.labels, (std::vector<std::string>{"0.1", "1", "10", "100", "1k", "10k"}));
}

TEST(FormatSi, PlainOrPrefixed) {
  EXPECT_EQ(format_si(1500), "1.5k");
  EXPECT_EQ(format_si(2e6), "2M");
  EXPECT_EQ(format_si(3.2e9), "3.2G");
  EXPECT_EQ(format_si(0.5), "0.5");
  EXPECT_EQ(format_si(0.0005), "500µ");
  EXPECT_EQ(format_si(0.005), "5m");
  EXPECT_EQ(format_si(5e-6), "5µ");
  EXPECT_EQ(format_si(999.96), "1k");
  EXPECT_EQ(format_si(-1500), "-1.5k");
  EXPECT_EQ(format_si(0), "0");
  EXPECT_EQ(format_si(12.345), "12.3");
  EXPECT_EQ(format_si(3.35e12, 3, "B/s"), "3.35 TB/s");
  EXPECT_EQ(format_si(989e12, 3, "FLOP/s"), "989 TFLOP/s");
  EXPECT_EQ(format_si(std::numeric_limits<double>::quiet_NaN()), "NaN");
}

TEST(EscapeXml, EscapesMarkupAndDropsControlCharacters) {
  EXPECT_EQ(escape_xml("a&b <c> \"d\" 'e'\x01"), "a&amp;b &lt;c&gt; &quot;d&quot; &#39;e&#39;");
}

TEST(LineChart, WellFormedWithALinePerSeriesAndALegend) {
  const std::string svg = render_chart_svg(bandwidth_chart());
  EXPECT_EQ(xml_error(svg), "");
  EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"series-line\""), 3);
  EXPECT_EQ(count(svg, "class=\"marker\""), 3 * 8 + 3);  // the points and one per legend swatch
  for (const char* name : {"Llama-3 8B", "Llama-3 70B tp=4", "Mixtral 8x7B"}) {
    EXPECT_NE(svg.find(std::string(">") + name + "</text>"), std::string::npos) << name;
  }
  for (const char* tick : {">1T<", ">4T<", ">8T<"}) EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  EXPECT_NE(svg.find("Decode step (ms)"), std::string::npos);
  EXPECT_NE(svg.find("Decode step time vs HBM bandwidth"), std::string::npos);
}

TEST(LineChart, LegendStaysOutsideThePlotArea) {
  const std::string svg = render_chart_svg(bandwidth_chart());
  // The x axis line is the second line in the axes group; legend text starts right of its end.
  const std::regex axis(R"re(<g class="axes"[^>]*>\n<line[^\n]*\n<line x1="([0-9.]+)" y1="([0-9.]+)" x2="([0-9.]+)")re");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, axis));
  const double right = std::stod(m[3]);
  const double bottom = std::stod(m[2]);
  const std::size_t legend = svg.find("<g class=\"legend\">");
  ASSERT_NE(legend, std::string::npos);
  const std::regex text(R"re(<text x="([0-9.]+)" y="([0-9.]+)")re");
  const std::string rest = svg.substr(legend, svg.find("</g>", legend) - legend);
  int texts = 0;
  for (auto it = std::sregex_iterator(rest.begin(), rest.end(), text); it != std::sregex_iterator(); ++it) {
    ++texts;
    EXPECT_TRUE(std::stod((*it)[1]) > right || std::stod((*it)[2]) > bottom);
  }
  EXPECT_EQ(texts, 3);
}

TEST(LineChart, ManyLongNamesGoBelowInColumnsKeepingTheirEnds) {
  Chart c;
  for (int i = 0; i < 10; ++i) {
    c.series.push_back({"model variant with a rather long descriptive name #" + std::to_string(i), {1, 2, 3},
                        {1.0 + i, 2.0 + i, 1.5 + i}});
  }
  const std::string svg = render_chart_svg(c);
  EXPECT_EQ(xml_error(svg), "");
  const std::regex axis(R"re(<g class="axes"[^>]*>\n<line[^\n]*\n<line x1="([0-9.]+)" y1="([0-9.]+)")re");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, axis));
  const double bottom = std::stod(m[2]);
  const std::size_t legend = svg.find("<g class=\"legend\">");
  ASSERT_NE(legend, std::string::npos);
  const std::string rest = svg.substr(legend, svg.find("</g>", legend) - legend);
  const std::regex text(R"re(<text x="([0-9.]+)" y="([0-9.]+)"[^>]*>([^<]*)</text>)re");
  std::set<double> columns;
  int texts = 0;
  for (auto it = std::sregex_iterator(rest.begin(), rest.end(), text); it != std::sregex_iterator(); ++it) {
    ++texts;
    EXPECT_GT(std::stod((*it)[2]), bottom);  // below the plot
    columns.insert(std::stod((*it)[1]));
    EXPECT_NE((*it)[3].str().find("#" + std::to_string(texts - 1)), std::string::npos) << (*it)[3];
  }
  EXPECT_EQ(texts, 10);
  EXPECT_GE(columns.size(), 2u);
}

TEST(LineChart, NamesAreEscaped) {
  Chart c;
  c.title = "A & B <latency> \"p99\"";
  c.series = {{"tp<4 & \"fast\"", {1, 2, 3}, {3, 1, 2}}};
  const std::string svg = render_chart_svg(c);
  EXPECT_EQ(xml_error(svg), "");
  EXPECT_NE(svg.find("tp&lt;4 &amp; &quot;fast&quot;"), std::string::npos);
  EXPECT_NE(svg.find("A &amp; B &lt;latency&gt; &quot;p99&quot;"), std::string::npos);
  EXPECT_EQ(svg.find("<latency>"), std::string::npos);
}

TEST(LineChart, SingleSeriesAndSinglePointWork) {
  Chart one;
  one.series = {{"only", {1, 2, 4, 8}, {10, 12, 11, 15}}};
  const std::string svg = render_chart_svg(one);
  EXPECT_EQ(xml_error(svg), "");
  EXPECT_EQ(count(svg, "class=\"series-line\""), 1);
  Chart point;
  point.series = {{"", {5}, {5}}};
  const std::string p = render_chart_svg(point);
  EXPECT_EQ(xml_error(p), "");
  EXPECT_EQ(count(p, "class=\"marker\""), 1);
  EXPECT_EQ(p.find("class=\"legend\""), std::string::npos);  // nothing to name
}

TEST(LineChart, SkipsNanAndInfinityAndBreaksTheLine) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  Chart c;
  c.series = {{"gappy", {1, 2, 3, 4, 5, inf}, {1, nan, 3, 4, 5, 6}}};
  const std::string svg = render_chart_svg(c);
  EXPECT_EQ(xml_error(svg), "");
  EXPECT_EQ(count(svg, "class=\"marker\"") - 1, 4);  // minus the legend swatch
  EXPECT_FALSE(std::regex_search(svg, std::regex("[^a-z/](nan|inf)[^a-z]")));
  const std::regex path(R"re(class="series-line" d="([^"]*)")re");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, path));
  EXPECT_EQ(count(m[1], "M"), 2);  // two runs: 1 and 3..5
  EXPECT_NE(svg.find("Not shown: 2 NaN/infinite values."), std::string::npos);
}

TEST(LineChart, LogAxesLeaveOutNonPositiveValuesWithANote) {
  Chart c;
  c.title = "Step time vs batch";
  c.log_x = true;
  c.log_y = true;
  c.series = {{"decode", {0, 1, 4, 16, 64, 256}, {-1, 2, 3, 5, 12, 40}}};
  const std::string svg = render_chart_svg(c);
  EXPECT_EQ(xml_error(svg), "");
  EXPECT_EQ(count(svg, "class=\"marker\"") - 1, 5);
  EXPECT_NE(svg.find("1 value &lt;= 0 on a log axis"), std::string::npos);
  for (const char* tick : {">1<", ">10<", ">100<", ">1k<"}) EXPECT_NE(svg.find(tick), std::string::npos) << tick;
}

TEST(BarChart, OneRectPerValueAndCategoryLabels) {
  const std::string svg = render_chart_svg(bar_chart());
  EXPECT_EQ(xml_error(svg), "");
  EXPECT_EQ(count(svg, "class=\"bar\""), 9);
  EXPECT_EQ(count(svg, "class=\"series-line\""), 0);
  for (const char* name : {"H100", "H200", "B200"}) {
    EXPECT_NE(svg.find(std::string(">") + name + "</text>"), std::string::npos);
  }
  for (const char* cat : {"tp=4", "pp=2", "tp=8", "pp=4"}) EXPECT_NE(svg.find(cat), std::string::npos);
}

TEST(BarChart, MissingAndOutOfRangeValuesAreLeftOut) {
  Chart c = bar_chart();
  c.series[0].x = {0, 2, 7};
  c.series[1].y[1] = std::numeric_limits<double>::quiet_NaN();
  const std::string svg = render_chart_svg(c);
  EXPECT_EQ(xml_error(svg), "");
  EXPECT_EQ(count(svg, "class=\"bar\""), 7);
  EXPECT_NE(svg.find("1 point without a category"), std::string::npos);
}

TEST(BarChart, LongCategoryNamesAreRotated) {
  Chart c = bar_chart();
  c.x_categories = {"tensor-parallel=4,pipeline-parallel=2", "tensor-parallel=8,pipeline-parallel=1",
                    "tensor-parallel=2,pipeline-parallel=4"};
  const std::string svg = render_chart_svg(c, 500, 400);
  EXPECT_EQ(xml_error(svg), "");
  EXPECT_NE(svg.find("transform=\"rotate(-40"), std::string::npos);
}

TEST(Chart, EmptyChartsSayNoData) {
  for (const Chart& c : {Chart{}, Chart{.title = "t", .x_label = "x", .y_label = "y", .x_categories = {}, .log_x = false,
                                       .log_y = false, .x_unit = {}, .y_unit = {}, .series = {{"all nan", {std::nan("")}, {1}}}},
                         Chart{.title = "bars", .x_label = {}, .y_label = {}, .x_categories = {"a"}, .log_x = false,
                               .log_y = false, .x_unit = {}, .y_unit = {}, .series = {}}}) {
    const std::string svg = render_chart_svg(c);
    EXPECT_EQ(xml_error(svg), "");
    EXPECT_NE(svg.find(">no data</text>"), std::string::npos);
  }
}

TEST(Chart, OutputIsDeterministic) {
  EXPECT_EQ(render_chart_svg(bandwidth_chart()), render_chart_svg(bandwidth_chart()));
  EXPECT_EQ(render_chart_svg(bar_chart(), 640, 400), render_chart_svg(bar_chart(), 640, 400));
}

Roofline h100_roofline() {
  Roofline r;
  r.title = "H100 SXM roofline";
  r.peak_flops_per_s = 989e12;
  r.peak_bytes_per_s = 3.35e12;
  r.points = {{"decode GEMV qkv", 1.9, 5.8e12},      {"decode GEMV mlp", 2.0, 6.2e12},
              {"attention decode", 1.0, 2.9e12},     {"prefill GEMM qkv", 640, 720e12},
              {"prefill GEMM mlp", 820, 780e12},     {"flash-attn prefill", 310, 540e12},
              {"layernorm", 0.6, 1.5e12},            {"softmax <fused>", 1.2, 3.1e12},
              {"all-reduce & add", 0.25, 0.6e12},    {"batched decode b=64", 110, 300e12}};
  return r;
}

TEST(Roofline, RoofRidgePointsAndLabels) {
  const std::string svg = render_roofline_svg(h100_roofline());
  EXPECT_EQ(xml_error(svg), "");
  EXPECT_EQ(count(svg, "class=\"roof\""), 1);
  EXPECT_EQ(count(svg, "class=\"ridge\""), 1);
  EXPECT_NE(svg.find("FLOP/byte"), std::string::npos);
  EXPECT_NE(svg.find("(FLOP/s)"), std::string::npos);
  EXPECT_NE(svg.find("peak 989 TFLOP/s"), std::string::npos);
  EXPECT_NE(svg.find("3.35 TB/s"), std::string::npos);
  EXPECT_NE(svg.find("ridge 295 FLOP/B"), std::string::npos);
  EXPECT_NE(svg.find(">softmax &lt;fused&gt;</text>"), std::string::npos);
  EXPECT_NE(svg.find(">all-reduce &amp; add</text>"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"marker\""), 10 + 2);  // points, legend swatches
  EXPECT_EQ(render_roofline_svg(h100_roofline()), svg);
}

TEST(Roofline, BadPointsAreSkippedAndEmptyOnesSayNoData) {
  Roofline r = h100_roofline();
  r.points.push_back({"zero", 0, 1e12});
  r.points.push_back({"nan", std::nan(""), 1e12});
  const std::string svg = render_roofline_svg(r);
  EXPECT_EQ(xml_error(svg), "");
  EXPECT_NE(svg.find("Not shown: 2 points"), std::string::npos);
  EXPECT_NE(render_roofline_svg(Roofline{}).find(">no data</text>"), std::string::npos);
  Roofline no_roof;
  no_roof.points = {{"k", 10, 1e12}};
  const std::string points_only = render_roofline_svg(no_roof);
  EXPECT_EQ(xml_error(points_only), "");
  EXPECT_EQ(count(points_only, "class=\"roof\""), 0);
  EXPECT_NE(points_only.find("No roof"), std::string::npos);
}

}  // namespace
}  // namespace syntorch::report

// The report's index page: a self-contained HTML5 document with the plots above the table and all
// text escaped.

#include "html_report.hpp"

#include <gtest/gtest.h>

#include <string>

#include "svg_chart.hpp"
#include "xml_check.hpp"

namespace syntorch::report {
namespace {

using testing::xml_error;

TEST(IndexHtml, PlotsAboveTheTableAndEverythingEscaped) {
  const Table table{{"config", "step (ms)", "note"},
                    {{"tp=4 & pp=2", "12.5", "<fastest>"}, {"tp=8", "14.25 ms", "\"quoted\""}, {"short row"}}};
  const std::string html = render_index_html("Sweep <hbm> & \"bw\"", "First paragraph & more.\n\nSecond <p>.",
                                             {{"Step time vs bandwidth", "step_time.svg"}, {"Roofline & co", "roof line.svg"}},
                                             table);
  EXPECT_EQ(xml_error(html, true), "");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<style>"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);  // self-contained
  EXPECT_NE(html.find("<title>Sweep &lt;hbm&gt; &amp; &quot;bw&quot;</title>"), std::string::npos);
  EXPECT_NE(html.find("<h1>Sweep &lt;hbm&gt; &amp; &quot;bw&quot;</h1>"), std::string::npos);
  EXPECT_NE(html.find("<p class=\"description\">First paragraph &amp; more.</p>"), std::string::npos);
  EXPECT_NE(html.find("<p class=\"description\">Second &lt;p&gt;.</p>"), std::string::npos);
  EXPECT_NE(html.find("<img src=\"step_time.svg\" alt=\"Step time vs bandwidth\">"), std::string::npos);
  EXPECT_NE(html.find("<figcaption>Roofline &amp; co</figcaption>"), std::string::npos);
  EXPECT_NE(html.find("<td>tp=4 &amp; pp=2</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>&lt;fastest&gt;</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">12.5</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">14.25 ms</td>"), std::string::npos);
  EXPECT_NE(html.find("<th class=\"num\">step (ms)</th>"), std::string::npos);  // a column of numbers
  EXPECT_NE(html.find("<th>note</th>"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>short row</td><td class=\"num\"></td><td></td></tr>"), std::string::npos);
  EXPECT_LT(html.find("<img"), html.find("<table>"));
  EXPECT_EQ(html.find("<fastest>"), std::string::npos);
}

TEST(IndexHtml, InlineSvgIsEmbeddedWithoutItsDeclaration) {
  Chart c;
  c.title = "inline";
  c.series = {{"s", {1, 2}, {3, 4}}};
  const HtmlPage page{.title = "t", .description = "", .plots = {{.caption = "c", .file = {}, .inline_svg = render_chart_svg(c)}},
                      .table = {}};
  const std::string html = render_html_page(page);
  EXPECT_EQ(xml_error(html, true), "");
  EXPECT_NE(html.find("<figure>\n<svg xmlns="), std::string::npos);
  EXPECT_EQ(html.find("<?xml"), std::string::npos);
  EXPECT_EQ(html.find("<table>"), std::string::npos);  // no table given
}

TEST(IndexHtml, Deterministic) {
  const Table table{{"a"}, {{"1"}}};
  EXPECT_EQ(render_index_html("t", "d", {{"c", "f.svg"}}, table), render_index_html("t", "d", {{"c", "f.svg"}}, table));
}

}  // namespace
}  // namespace syntorch::report

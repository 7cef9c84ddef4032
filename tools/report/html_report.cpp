#include "html_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <string_view>
#include <system_error>
#include <vector>

#include "svg_chart.hpp"

namespace syntorch::report {
namespace {

constexpr std::string_view kStyle = R"(
  :root { color-scheme: light; }
  body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #222;
         background: #fff; margin: 0 auto; padding: 24px 32px 48px; max-width: 1600px; line-height: 1.45; }
  h1 { font-size: 1.6em; margin: 0 0 0.4em; }
  p.description { margin: 0 0 0.8em; max-width: 72em; color: #333; }
  .plots { display: flex; flex-wrap: wrap; gap: 20px; margin: 1.2em 0 1.6em; }
  figure { margin: 0; padding: 10px; border: 1px solid #e3e3e3; border-radius: 6px; background: #fff;
           max-width: 100%; box-sizing: border-box; }
  figure img, figure svg { display: block; max-width: 100%; height: auto; }
  figcaption { font-size: 0.92em; color: #444; margin-top: 6px; text-align: center; }
  .table-wrap { overflow-x: auto; }
  table { border-collapse: collapse; font-size: 0.9em; }
  th, td { padding: 5px 10px; border-bottom: 1px solid #e3e3e3; text-align: left; white-space: nowrap; }
  th { background: #f4f6f8; position: sticky; top: 0; border-bottom: 2px solid #c9d1d9; }
  tbody tr:nth-child(even) { background: #fafbfc; }
  tbody tr:hover { background: #eef3f8; }
  td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
)";

// Whether a cell holds a number, optionally followed by a short unit ("12.5", "3 ms", "40%").
bool numeric_cell(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  if (s.empty()) return false;
  if (s.front() == '+') s.remove_prefix(1);
  double value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end == s.data()) return false;
  std::string_view rest(end, static_cast<std::size_t>(s.data() + s.size() - end));
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return rest.size() <= 8 && std::all_of(rest.begin(), rest.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '%' || c == '/';
         });
}

// The SVG text without its XML declaration, for inlining into HTML.
std::string_view strip_xml_declaration(std::string_view svg) {
  if (svg.substr(0, 5) == "<?xml") {
    const std::size_t end = svg.find("?>");
    if (end != std::string_view::npos) svg.remove_prefix(end + 2);
  }
  while (!svg.empty() && (svg.front() == '\n' || svg.front() == '\r' || svg.front() == ' ')) svg.remove_prefix(1);
  return svg;
}

void paragraphs(std::string& out, std::string_view text) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find("\n\n", start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view para = text.substr(start, end - start);
    while (!para.empty() && (para.front() == '\n' || para.front() == ' ')) para.remove_prefix(1);
    while (!para.empty() && (para.back() == '\n' || para.back() == ' ')) para.remove_suffix(1);
    if (!para.empty()) out += fmt::format("<p class=\"description\">{}</p>\n", escape_xml(para));
    start = end + 2;
  }
}

}  // namespace

std::string render_html_page(const HtmlPage& page) {
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += fmt::format("<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n", escape_xml(page.title), kStyle);
  out += fmt::format("<h1>{}</h1>\n", escape_xml(page.title));
  paragraphs(out, page.description);
  if (!page.plots.empty()) {
    out += "<section class=\"plots\">\n";
    for (const auto& plot : page.plots) {
      out += "<figure>\n";
      if (!plot.inline_svg.empty()) {
        out += strip_xml_declaration(plot.inline_svg);
        if (out.back() != '\n') out += '\n';
      } else {
        out += fmt::format("<img src=\"{}\" alt=\"{}\">\n", escape_xml(plot.file), escape_xml(plot.caption));
      }
      if (!plot.caption.empty()) out += fmt::format("<figcaption>{}</figcaption>\n", escape_xml(plot.caption));
      out += "</figure>\n";
    }
    out += "</section>\n";
  }
  const Table& table = page.table;
  std::size_t columns = table.header.size();
  for (const auto& row : table.rows) columns = std::max(columns, row.size());
  if (columns > 0) {
    // A column is right-aligned when at least half of its non-empty cells are numbers.
    std::vector<bool> numeric(columns, false);
    for (std::size_t c = 0; c < columns; ++c) {
      int numbers = 0, filled = 0;
      for (const auto& row : table.rows) {
        if (c >= row.size() || row[c].empty()) continue;
        ++filled;
        numbers += numeric_cell(row[c]) ? 1 : 0;
      }
      numeric[c] = numbers > 0 && 2 * numbers >= filled;
    }
    out += "<div class=\"table-wrap\">\n<table>\n";
    if (!table.header.empty()) {
      out += "<thead>\n<tr>";
      for (std::size_t c = 0; c < columns; ++c) {
        out += fmt::format("<th{}>{}</th>", numeric[c] ? " class=\"num\"" : "",
                           c < table.header.size() ? escape_xml(table.header[c]) : std::string());
      }
      out += "</tr>\n</thead>\n";
    }
    out += "<tbody>\n";
    for (const auto& row : table.rows) {
      out += "<tr>";
      for (std::size_t c = 0; c < columns; ++c) {
        const std::string cell = c < row.size() ? row[c] : std::string();
        out += numeric[c] ? "<td class=\"num\">" : "<td>";
        out += escape_xml(cell);
        out += "</td>";
      }
      out += "</tr>\n";
    }
    out += "</tbody>\n</table>\n</div>\n";
  }
  out += "</body>\n</html>\n";
  return out;
}

std::string render_index_html(const std::string& title, const std::string& description,
                              const std::vector<std::pair<std::string, std::string>>& plots, const Table& table) {
  HtmlPage page{.title = title, .description = description, .plots = {}, .table = table};
  for (const auto& [caption, file] : plots) page.plots.push_back({.caption = caption, .file = file, .inline_svg = {}});
  return render_html_page(page);
}

}  // namespace syntorch::report

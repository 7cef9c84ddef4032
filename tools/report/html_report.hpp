#pragma once
// The index page of a what-if sweep report: a self-contained HTML5 document (inline CSS, no
// scripts) with a title, a description, the plots and then a table of results. All text is escaped.

#include <string>
#include <utility>
#include <vector>

namespace syntorch::report {

// A table of text cells: one header row, then the data rows (rows may be shorter or longer than the
// header; missing cells are left empty).
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

// One plot on the page: its caption and either an SVG file beside the page (shown with <img>) or,
// when inline_svg is set, the SVG text itself.
struct HtmlPlot {
  std::string caption;
  std::string file;
  std::string inline_svg;
};

// The whole page: title, description (blank lines separate paragraphs), plots, table.
struct HtmlPage {
  std::string title;
  std::string description;
  std::vector<HtmlPlot> plots;
  Table table;
};

std::string render_html_page(const HtmlPage& page);

// index.html for plots stored as SVG files next to it: plots are (caption, SVG file name) pairs.
std::string render_index_html(const std::string& title, const std::string& description,
                              const std::vector<std::pair<std::string, std::string>>& plots, const Table& table);

}  // namespace syntorch::report

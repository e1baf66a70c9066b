// The night as text people read: the terminal report (80 columns, colour
// only when asked), the same content as Markdown, and one self-contained
// HTML page (inline SVG timeline, incident notes rendered by cmark-gfm,
// pictures as data: URIs).
#pragma once

#include <string>

#include "report/night.h"

namespace phoenix::report {

std::string terminal(const Night& n, bool color, int width = 80);
std::string markdown(const Night& n);
// out_dir: where the page will be written (links to notes are relative to it).
std::string html(const Night& n, const std::string& out_dir = "");

// Pieces the HTML page is made of (tested on their own).
std::string timeline_svg(const Night& n, int width = 1000, const std::string& id = "timeline-svg");
std::string render_commonmark(const std::string& markdown);  // cmark-gfm, unsafe HTML escaped
std::string html_escape(const std::string& s);

// Word-wraps text to width, the first line after `first`, the rest indented by `indent` spaces.
std::string wrap(const std::string& text, int width, const std::string& first, int indent);

}  // namespace phoenix::report

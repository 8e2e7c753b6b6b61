// SPDX-License-Identifier: MIT
// report.md's one escaping of text from records and tasks (report/detail/markdown_text.hpp): no
// raw tag, link, image or autolink survives, table cells stay whole; and a report built on records
// whose regime and arm labels are hostile carries none of them raw (issue 51, item 5).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "latentaudit/report/report.hpp"
#include "support/synthetic_records.hpp"

using namespace latentaudit;

TEST_CASE("markdown_text: tags, links, images, autolinks and cell breaks are inert") {
  using detail::markdown_text;
  CHECK(markdown_text("<script>alert(1)</script>") == "&lt;script>alert\\(1\\)&lt;/script>");
  CHECK(markdown_text("[x](javascript:alert(1))") == "\\[x\\]\\(javascript:alert\\(1\\)\\)");
  CHECK(markdown_text("![i](https://evil.example/x.png)") == "\\!\\[i\\]\\(https\\://evil.example/x.png\\)");
  CHECK(markdown_text("see www.example.com") == "see www\\.example.com");
  CHECK(markdown_text("a|b*c_d`e\\f~g") == "a\\|b\\*c\\_d\\`e\\\\f\\~g");
  CHECK(markdown_text("line\nbreak\x01") == "line\\x0Abreak\\x01");
  CHECK(markdown_text("need, x >= 1 & y") == "need, x >= 1 \\& y");
  CHECK(markdown_text("> quoted") == "\\> quoted");
  CHECK(markdown_text("accuracy: 0.5 (kv_full)") == "accuracy: 0.5 \\(kv\\_full\\)");
  CHECK(detail::markdown_code("need.kv_beats_no_comm") == "`need.kv_beats_no_comm`");
  CHECK(detail::markdown_code("a`b|<c>") == "a\\`b\\|&lt;c>");
}

TEST_CASE("report.md: hostile regime and arm labels from the records are never rendered") {
  auto recs = test::synthetic_records({.items = 40, .seeds = 2});
  for (auto& r : recs) {
    r.regime = "<script>alert(1)</script>";
    if (r.arm == "kv_full") {
      r.arm_kind = "kv_full";
      r.arm = "[click](javascript:alert(1))";
    } else if (r.arm == "text_full") {
      r.arm_kind = "text_full";
      r.arm = "![img](https://evil.example/x.png)";
    }
  }
  const auto md = report_markdown(build_audit_report(recs, {.bootstrap_replicates = 200}));
  INFO(md);
  CHECK(md.find("<script>") == std::string::npos);
  CHECK(md.find("](javascript:") == std::string::npos);
  CHECK(md.find("![img]") == std::string::npos);
  CHECK(md.find("](https://evil") == std::string::npos);
  CHECK(md.find("&lt;script>") != std::string::npos);  // still there, as text
}

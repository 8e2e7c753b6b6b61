// SPDX-License-Identifier: MIT
// latentaudit: definitions of trial/task_file.hpp (header-only mode includes this file; compiled
// mode compiles it once in latentaudit::compiled, docs/building.md).
#ifndef LATENTAUDIT_TRIAL_IMPL_TASK_FILE_INL_HPP
#define LATENTAUDIT_TRIAL_IMPL_TASK_FILE_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <istream>
#include <set>
#include <sstream>

#include "../../core/detail/check.hpp"
#include "../../core/error.hpp"
#include "../../core/file_check.hpp"
#include "../../core/hash.hpp"
#include "../detail/answer_regex.hpp"
#include "../task_file.hpp"

namespace latentaudit {

LATENTAUDIT_INLINE const char* task_scoring_name(task_scoring s) noexcept {
  switch (s) {
    case task_scoring::token_exact:
      return "token_exact";
    case task_scoring::exact:
      return "exact";
    case task_scoring::normalized:
      return "normalized";
    case task_scoring::contains:
      return "contains";
    case task_scoring::regex:
      return "regex";
    case task_scoring::first_word:
      return "first_word";
    case task_scoring::word_prefix:
      return "word_prefix";
  }
  return "token_exact";
}

LATENTAUDIT_INLINE std::optional<task_scoring> parse_task_scoring(std::string_view name) noexcept {
  for (auto s :
       {task_scoring::token_exact, task_scoring::exact, task_scoring::normalized, task_scoring::contains,
        task_scoring::regex, task_scoring::first_word, task_scoring::word_prefix})
    if (name == task_scoring_name(s)) return s;
  if (name == "first-word") return task_scoring::first_word;
  if (name == "word-prefix") return task_scoring::word_prefix;
  return std::nullopt;
}

LATENTAUDIT_INLINE std::string normalize_answer(std::string_view text) {
  std::string s;
  s.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && std::ispunct(u)) continue;
    s.push_back(u < 0x80 && std::isspace(u) ? ' ' : static_cast<char>(u < 0x80 ? std::tolower(u) : u));
  }
  std::string out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    std::size_t j = i;
    while (j < s.size() && s[j] != ' ') ++j;
    if (j > i) {
      const std::string_view w(s.data() + i, j - i);
      if (w != "a" && w != "an" && w != "the") {
        if (!out.empty()) out.push_back(' ');
        out.append(w);
      }
    }
    i = j;
  }
  return out;
}

namespace detail {

// The first whitespace-separated word of `text` with ASCII punctuation stripped from both its ends
// (first_word scoring: "Max. Max was" -> "Max"); a text of whitespace and punctuation gives "".
inline std::string first_word_of(std::string_view text) {
  auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
  auto punct = [](char c) {
    return static_cast<unsigned char>(c) < 0x80 && std::ispunct(static_cast<unsigned char>(c));
  };
  std::size_t b = 0;
  while (b < text.size() && ws(text[b])) ++b;
  std::size_t e = b;
  while (e < text.size() && !ws(text[e])) ++e;
  while (b < e && punct(text[b])) ++b;
  while (e > b && punct(text[e - 1])) --e;
  return std::string(text.substr(b, e - b));
}

// `text` without whitespace and ASCII punctuation at its ends (an accepted answer under first_word).
inline std::string strip_word_edges(std::string_view text) {
  auto edge = [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x80 && (std::ispunct(u) || std::isspace(u));
  };
  std::size_t b = 0, e = text.size();
  while (b < e && edge(text[b])) ++b;
  while (e > b && edge(text[e - 1])) --e;
  return std::string(text.substr(b, e - b));
}

// "<file>:<line>:<field>: <message>" as corrupt_data.
[[noreturn]] inline void task_error(const std::string& file, std::uint64_t line, std::string_view field,
                                    std::string_view what) {
  LATENTAUDIT_THROW(
      corrupt_data(file + ":" + std::to_string(line) + ":" + std::string(field) + ": " + std::string(what)));
}

inline bool has_control(std::string_view s) {
  return std::any_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; });
}

// The fields of a task line that latentaudit reads; every other member is carried as `extra`.
inline bool task_field_known(std::string_view k) {
  static constexpr std::array<std::string_view, 21> known = {"id",
                                                             "document",
                                                             "document_tokens",
                                                             "text_document",
                                                             "text_document_tokens",
                                                             "prompt",
                                                             "prompt_tokens",
                                                             "query",
                                                             "query_tokens",
                                                             "answers",
                                                             "stale_answer",
                                                             "stale_answer_tokens",
                                                             "queries",
                                                             "regime",
                                                             "covariates",
                                                             "instruction",
                                                             "instruction_tokens",
                                                             "budget_cuts",
                                                             "continuation",
                                                             "continuation_tokens",
                                                             "latentaudit_tasks"};
  return std::find(known.begin(), known.end(), k) != known.end();
}

struct task_line_reader {
  const std::string& file;
  std::uint64_t line;

  [[noreturn]] void fail(std::string_view field, std::string_view what) const {
    task_error(file, line, field, what);
  }

  std::vector<token_id> ids(const json_value& v, std::string_view field) const {
    if (!v.is_array()) fail(field, "must be a list of token ids (integers)");
    std::vector<token_id> out;
    out.reserve(v.as_array().size());
    for (const auto& x : v.as_array()) {
      if (!x.is_number()) fail(field, "must be a list of token ids (integers)");
      const double d = x.as_number();
      if (!(d >= 0 && d <= 2147483647.0) || d != std::floor(d))
        fail(field, "holds " + write_json(x) + ", not a token id (an integer in [0, 2^31))");
      out.push_back(static_cast<token_id>(d));
    }
    return out;
  }

  // `name` (text) or `name_tokens` (ids) of object `o`; both is an error.
  task_text text_or_tokens(const json_value& o, const std::string& name, std::string_view where = {}) const {
    const json_value* t = o.find(name);
    const json_value* k = o.find(name + "_tokens");
    const std::string pre = where.empty() ? std::string() : std::string(where) + ".";
    if (t != nullptr && t->is_null()) t = nullptr;
    if (k != nullptr && k->is_null()) k = nullptr;
    if (t != nullptr && k != nullptr)
      fail(pre + name, "give either '" + name + "' or '" + name + "_tokens', not both");
    task_text out;
    if (t != nullptr) {
      if (!t->is_string())
        fail(pre + name, "must be a string (or give '" + name + "_tokens', a list of token ids)");
      out.text = t->as_string();
    } else if (k != nullptr) {
      out.tokens = ids(*k, pre + name + "_tokens");
    }
    return out;
  }

  std::vector<task_text> answers(const json_value& o, std::string_view where,
                                 const task_file_limits& lim) const {
    const std::string field = where.empty() ? "answers" : std::string(where) + ".answers";
    const json_value* a = o.find("answers");
    if (a == nullptr || a->is_null()) fail(field, "missing: every query needs a list of accepted answers");
    if (!a->is_array()) fail(field, "must be a list of answers (strings, or lists of token ids)");
    if (a->as_array().empty()) fail(field, "is empty: every query needs at least one accepted answer");
    if (a->as_array().size() > lim.max_answers)
      fail(field, "lists more than " + std::to_string(lim.max_answers) + " answers");
    std::vector<task_text> out;
    for (std::size_t i = 0; i < a->as_array().size(); ++i) {
      const auto& x = a->as_array()[i];
      const std::string f = field + "[" + std::to_string(i) + "]";
      task_text t;
      if (x.is_string()) {
        if (x.as_string().empty()) fail(f, "is an empty answer");
        t.text = x.as_string();
      } else if (x.is_array()) {
        t.tokens = ids(x, f);
        if (t.tokens.empty()) fail(f, "is an empty answer");
      } else {
        fail(f, "must be a string or a list of token ids");
      }
      out.push_back(std::move(t));
    }
    return out;
  }

  void covariates(const json_value& o, std::string_view where, std::vector<covariate>& nums,
                  std::vector<latentaudit::covariate_label>& labels, const task_file_limits& lim) const {
    const json_value* c = o.find("covariates");
    if (c == nullptr || c->is_null()) return;
    const std::string field = where.empty() ? "covariates" : std::string(where) + ".covariates";
    if (!c->is_object()) fail(field, "must be an object of numbers or labels (strings)");
    for (const auto& [name, v] : c->as_object()) {
      const std::string f = field + "." + name;
      if (name.empty() || has_control(name)) fail(f, "names must be non-empty without control characters");
      for (const auto& x : nums)
        if (x.name == name) fail(f, "repeats a covariate of the task");
      for (const auto& x : labels)
        if (x.name == name) fail(f, "repeats a covariate of the task");
      if (v.is_number()) {
        if (!std::isfinite(v.as_number())) fail(f, "must be finite");
        nums.push_back({name, v.as_number()});
      } else if (v.is_string()) {
        if (has_control(v.as_string())) fail(f, "must not hold control characters");
        labels.push_back({name, v.as_string()});
      } else if (v.is_bool()) {
        labels.push_back({name, v.as_bool() ? "true" : "false"});
      } else {
        fail(f, "must be a number or a label (string)");
      }
      if (nums.size() + labels.size() > lim.max_covariates)
        fail(field, "more than " + std::to_string(lim.max_covariates) + " covariates");
    }
  }

  task_query query(const json_value& o, std::string_view where, const task_file_limits& lim) const {
    task_query q;
    q.query = text_or_tokens(o, "query", where);
    if (q.query.empty() || (q.query.text && q.query.text->empty()))
      fail(where.empty() ? "query" : std::string(where) + ".query",
           "missing: every query needs 'query' or 'query_tokens'");
    q.answers = answers(o, where, lim);
    q.stale_answer = text_or_tokens(o, "stale_answer", where);
    return q;
  }
};

// The next line of `in` (without its newline) into `line`; false at the end. A line longer than
// `max` bytes is refused without reading it whole.
inline bool read_bounded_line(std::istream& in, std::string& line, std::size_t max, const std::string& file,
                              std::uint64_t lineno) {
  line.clear();
  bool any = false;
  for (;;) {
    const int c = in.get();
    if (c == std::char_traits<char>::eof()) return any;
    any = true;
    if (c == '\n') return true;
    if (line.size() >= max)
      task_error(file, lineno, "(line)",
                 "is longer than " + std::to_string(max) + " bytes (the reader's limit)");
    line.push_back(static_cast<char>(c));
  }
}

}  // namespace detail

LATENTAUDIT_INLINE task_file read_task_stream(std::istream& in, const std::string& name,
                                              const task_file_limits& limits) {
  task_file f;
  f.path = name;
  std::set<std::string> ids;
  std::string line;
  sha256 h;
  bool first = true;
  for (std::uint64_t lineno = 1;; ++lineno) {
    if (!detail::read_bounded_line(in, line, limits.max_line_bytes, name, lineno)) break;
    h.update(std::string_view(line));
    h.update(std::string_view("\n"));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const detail::task_line_reader rd{name, lineno};
    json_value j;
    try {
      j = parse_json(line, {.max_depth = 16, .max_bytes = limits.max_line_bytes});
    } catch (const error& e) {
      rd.fail("(json)", e.what());
    }
    if (!j.is_object()) rd.fail("(line)", "must be a JSON object");
    if (const json_value* hv = j.find("latentaudit_tasks"); hv != nullptr) {  // the header line
      if (!first) rd.fail("latentaudit_tasks", "the header must be the file's first line");
      if (!hv->is_number() || hv->as_number() != 1)
        rd.fail("latentaudit_tasks", "must be 1 (the format's version)");
      f.header.present = true;
      for (const auto& [k, v] : j.as_object()) {
        if (k == "latentaudit_tasks") continue;
        if (k == "scoring") {
          if (!v.is_string() || !parse_task_scoring(v.as_string()))
            rd.fail(
                k, "must be one of token_exact, exact, normalized, contains, regex, first_word, word_prefix");
          f.header.scoring = parse_task_scoring(v.as_string());
        } else if (k == "bos") {
          const auto x = rd.ids(json_value(json_value::array_type{v}), "bos");
          f.header.bos = x[0];
        } else if (k == "max_answer_tokens") {
          if (!v.is_number() || !(v.as_number() >= 1 && v.as_number() <= 4096) ||
              v.as_number() != std::floor(v.as_number()))
            rd.fail(k, "must be an integer in [1, 4096]");
          f.header.max_answer_tokens = static_cast<std::int32_t>(v.as_number());
        } else {
          rd.fail(k, "is not a header field (scoring, bos, max_answer_tokens)");
        }
      }
      first = false;
      continue;
    }
    first = false;
    if (f.tasks.size() >= limits.max_tasks)
      rd.fail("(line)", "the file holds more than " + std::to_string(limits.max_tasks) + " tasks");
    task_entry t;
    t.line = lineno;
    const json_value* id = j.find("id");
    if (id == nullptr || id->is_null())
      rd.fail("id", "missing: every task needs an id (a string or an integer)");
    if (id->is_string()) {
      t.id = id->as_string();
    } else if (id->is_number() && id->as_number() >= 0 && id->as_number() <= json_max_exact_integer &&
               id->as_number() == std::floor(id->as_number())) {
      std::string s;
      detail::append_json_number(s, id->as_number());
      t.id = s;
    } else {
      rd.fail("id", "must be a string or a non-negative integer");
    }
    if (t.id.empty() || detail::has_control(t.id))
      rd.fail("id", "must be non-empty without control characters");
    if (!ids.insert(t.id).second) rd.fail("id", "'" + t.id + "' repeats an earlier task's id");
    t.document = rd.text_or_tokens(j, "document");
    if (t.document.empty() || (t.document.text && t.document.text->empty()))
      rd.fail("document", "missing: give 'document' (text) or 'document_tokens' (ids)");
    t.text_document = rd.text_or_tokens(j, "text_document");
    t.prompt = rd.text_or_tokens(j, "prompt");
    t.instruction = rd.text_or_tokens(j, "instruction");
    t.continuation = rd.text_or_tokens(j, "continuation");
    if (t.continuation.text && t.continuation.text->empty())
      rd.fail("continuation", "is empty (leave it out instead)");
    if (const json_value* r = j.find("regime"); r != nullptr && !r->is_null()) {
      const std::string rs = r->is_string() ? r->as_string() : std::string();
      bool found = false;
      for (auto g : {task_regime::need, task_regime::no_need, task_regime::stale, task_regime::conflict})
        if (rs == regime_name(g)) t.regime = g, found = true;
      if (!found) rd.fail("regime", "must be one of need, no_need, stale, conflict");
    }
    rd.covariates(j, "", t.covariates, t.labels, limits);
    if (const json_value* qs = j.find("queries"); qs != nullptr && !qs->is_null()) {
      for (const char* k : {"query", "query_tokens", "answers", "stale_answer", "stale_answer_tokens"})
        if (j.find(k) != nullptr) rd.fail(k, "give the query inside 'queries' or at the top level, not both");
      if (!qs->is_array() || qs->as_array().empty())
        rd.fail("queries", "must be a non-empty list of queries");
      if (qs->as_array().size() > limits.max_queries)
        rd.fail("queries", "lists more than " + std::to_string(limits.max_queries) + " queries");
      for (std::size_t i = 0; i < qs->as_array().size(); ++i) {
        const auto& q = qs->as_array()[i];
        const std::string where = "queries[" + std::to_string(i) + "]";
        if (!q.is_object()) rd.fail(where, "must be an object {query, answers, ...}");
        for (const auto& [k, v] : q.as_object()) {
          (void)v;
          if (k != "query" && k != "query_tokens" && k != "answers" && k != "stale_answer" &&
              k != "stale_answer_tokens" && k != "covariates")
            rd.fail(where + "." + k,
                    "is not a query field (query, query_tokens, answers, stale_answer, "
                    "stale_answer_tokens, covariates)");
        }
        task_query tq = rd.query(q, where, limits);
        std::vector<covariate> nums = t.covariates;  // names must not repeat the task's
        std::vector<covariate_label> labels = t.labels;
        rd.covariates(q, where, nums, labels, limits);
        tq.covariates.assign(nums.begin() + static_cast<std::ptrdiff_t>(t.covariates.size()), nums.end());
        tq.labels.assign(labels.begin() + static_cast<std::ptrdiff_t>(t.labels.size()), labels.end());
        t.queries.push_back(std::move(tq));
      }
    } else {
      t.queries.push_back(rd.query(j, "", limits));
    }
    if (const json_value* bc = j.find("budget_cuts"); bc != nullptr && !bc->is_null()) {
      for (auto x : rd.ids(*bc, "budget_cuts")) t.budget_cuts.push_back(x);
      if (t.budget_cuts.empty()) rd.fail("budget_cuts", "must not be empty (leave it out instead)");
      for (std::size_t i = 1; i < t.budget_cuts.size(); ++i)
        if (t.budget_cuts[i] < t.budget_cuts[i - 1]) rd.fail("budget_cuts", "must be non-decreasing");
    }
    json_value extra = json_value::object();
    for (const auto& [k, v] : j.as_object())
      if (!detail::task_field_known(k)) extra.set(k, v);
    // Every record of the task carries its id, covariates and extra fields: bounded here, at load,
    // so that no record outgrows the journal's line limit after the trials have run.
    std::size_t carried = 0;
    auto carry = [&](const std::string& field, std::size_t bytes) {
      carried += bytes;
      if (carried > limits.max_record_fields_bytes)
        rd.fail(field, "brings the task's id, covariates and other fields to more than " +
                           std::to_string(limits.max_record_fields_bytes) +
                           " bytes of JSON, which every record of the task carries (a record line "
                           "holds at most 1 MiB; docs/tasks.md)");
    };
    auto json_bytes = [](const json_value& v) { return write_json(v).size(); };
    carry("id", json_bytes(json_value(t.id)));
    auto carry_covariates = [&](const std::string& pre, const std::vector<covariate>& nums,
                                const std::vector<covariate_label>& labels) {
      for (const auto& c : nums) carry(pre + "covariates." + c.name, json_bytes(json_value(c.name)) + 32);
      for (const auto& c : labels)
        carry(pre + "covariates." + c.name, json_bytes(json_value(c.name)) + json_bytes(json_value(c.value)));
    };
    carry_covariates("", t.covariates, t.labels);
    for (const auto& [k, v] : extra.as_object()) carry(k, json_bytes(json_value(k)) + json_bytes(v));
    const std::size_t task_carried = carried;  // and one query's covariates per record
    for (std::size_t qi = 0; qi < t.queries.size(); ++qi) {
      carried = task_carried;
      carry_covariates("queries[" + std::to_string(qi) + "].", t.queries[qi].covariates,
                       t.queries[qi].labels);
    }
    if (!extra.as_object().empty()) t.extra = std::move(extra);
    f.tasks.push_back(std::move(t));
  }
  if (in.bad()) detail::task_error(name, 0, "(file)", "read error");
  f.sha256 = to_hex(h.finish());
  return f;
}

LATENTAUDIT_INLINE task_file read_task_file(const std::filesystem::path& path,
                                            const task_file_limits& limits) {
  (void)require_regular_file(path, "task file");
  std::ifstream in(path, std::ios::binary);
  if (!in) LATENTAUDIT_THROW(invalid_argument("cannot open task file '" + path.string() + "'"));
  return read_task_stream(in, path.string(), limits);
}

namespace detail {
inline void put_text(json_value& j, const std::string& name, const task_text& t) {
  if (t.text) {
    j.set(name, *t.text);
  } else if (!t.tokens.empty()) {
    json_value a = json_value::array_type{};
    for (auto x : t.tokens) a.push_back(x);
    j.set(name + "_tokens", std::move(a));
  }
}
inline json_value covariates_json(const std::vector<covariate>& nums,
                                  const std::vector<latentaudit::covariate_label>& labels) {
  json_value c = json_value::object();
  for (const auto& x : nums) c.set(x.name, x.value);
  for (const auto& x : labels) c.set(x.name, x.value);
  return c;
}
inline void put_query(json_value& j, const task_query& q) {
  put_text(j, "query", q.query);
  json_value a = json_value::array_type{};
  for (const auto& x : q.answers) {
    if (x.text) {
      a.push_back(*x.text);
    } else {
      json_value ids = json_value::array_type{};
      for (auto t : x.tokens) ids.push_back(t);
      a.push_back(std::move(ids));
    }
  }
  j.set("answers", std::move(a));
  put_text(j, "stale_answer", q.stale_answer);
}
}  // namespace detail

LATENTAUDIT_INLINE std::string task_entry_line(const task_entry& t) {
  json_value j = json_value::object();
  j.set("id", t.id);
  detail::put_text(j, "document", t.document);
  detail::put_text(j, "text_document", t.text_document);
  detail::put_text(j, "prompt", t.prompt);
  if (t.queries.size() == 1 && t.queries[0].covariates.empty() && t.queries[0].labels.empty()) {
    detail::put_query(j, t.queries[0]);
  } else {
    json_value qs = json_value::array_type{};
    for (const auto& q : t.queries) {
      json_value o = json_value::object();
      detail::put_query(o, q);
      if (!q.covariates.empty() || !q.labels.empty())
        o.set("covariates", detail::covariates_json(q.covariates, q.labels));
      qs.push_back(std::move(o));
    }
    j.set("queries", std::move(qs));
  }
  j.set("regime", regime_name(t.regime));
  if (!t.covariates.empty() || !t.labels.empty())
    j.set("covariates", detail::covariates_json(t.covariates, t.labels));
  detail::put_text(j, "instruction", t.instruction);
  detail::put_text(j, "continuation", t.continuation);
  if (!t.budget_cuts.empty()) {
    json_value a = json_value::array_type{};
    for (auto x : t.budget_cuts) a.push_back(static_cast<double>(x));
    j.set("budget_cuts", std::move(a));
  }
  if (t.extra.is_object())
    for (const auto& [k, v] : t.extra.as_object())
      if (!detail::task_field_known(k)) j.set(k, v);
  return write_json(j);
}

LATENTAUDIT_INLINE std::string task_header_line(const task_file_header& h) {
  json_value j = json_value::object();
  j.set("latentaudit_tasks", 1);
  if (h.scoring) j.set("scoring", task_scoring_name(*h.scoring));
  if (h.bos) j.set("bos", *h.bos);
  if (h.max_answer_tokens > 0) j.set("max_answer_tokens", h.max_answer_tokens);
  return write_json(j);
}

LATENTAUDIT_INLINE void write_task_file(const std::filesystem::path& path, const task_file& f) {
  // To a temporary renamed over `path` when complete: a full disk or a file-size limit (EFBIG)
  // leaves the old file or none, never a partial one.
  require_output_file(path, "task file");
  const auto tmp = output_temp_path(path);
  std::error_code ec;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) LATENTAUDIT_THROW(invalid_argument("cannot write task file '" + path.string() + "'"));
    if (f.header.present) out << task_header_line(f.header) << '\n';
    for (const auto& t : f.tasks) {
      if (!out) break;
      out << task_entry_line(t) << '\n';
    }
    out.close();
    if (!out) {
      const int err = errno;
      std::filesystem::remove(tmp, ec);
      LATENTAUDIT_THROW(invalid_argument("cannot write task file '" + path.string() +
                                         "': " + std::strerror(err != 0 ? err : EIO)));
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    LATENTAUDIT_THROW(invalid_argument("cannot write task file '" + path.string() + "': " + ec.message()));
  }
}

LATENTAUDIT_INLINE task_entry organism_task_entry(const organism_item& it) {
  const trial_task& s = it.task;
  task_entry t;
  t.id = "organism-" + std::to_string(s.item);
  t.document.tokens = s.document;
  t.text_document.tokens = s.text_document;
  t.prompt.tokens = s.own_prompt;
  t.regime = s.regime;
  t.covariates = s.covariates;
  t.budget_cuts = s.budget_cuts;
  for (const auto& q : it.queries) {
    task_query tq;
    tq.query.tokens = q.query;
    tq.answers.push_back(task_text{std::nullopt, q.answer});
    tq.stale_answer.tokens = q.stale_answer;
    tq.covariates.push_back({"needed_position", static_cast<double>(q.needed_position)});
    t.queries.push_back(std::move(tq));
  }
  return t;
}

LATENTAUDIT_INLINE task_file organism_task_file(const organism_format& f, const organism_task_options& o,
                                                std::uint64_t items) {
  task_file out;
  out.path = "(organism)";
  out.header.present = true;
  out.header.scoring = task_scoring::token_exact;
  out.header.bos = f.bos;
  out.tasks.reserve(static_cast<std::size_t>(items));
  for (std::uint64_t i = 0; i < items; ++i)
    out.tasks.push_back(organism_task_entry(make_organism_item(f, o, i)));
  return out;
}

namespace detail {

// Length of the common prefix of two token sequences.
inline std::size_t common_prefix(const std::vector<token_id>& a, const std::vector<token_id>& b) {
  std::size_t k = 0;
  while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
  return k;
}

// A task's text fields tokenized as the text they form together (docs/tasks.md, "Text at field
// boundaries"): the document begins the text, the prompt and each query continue it. A field ends
// where the joint tokenization stops agreeing with the tokenization of the text up to the field's
// end (their common prefix): a token that a tokenizer merges across a boundary goes to the later
// field. Shared fields (document, prompt) end at the earliest such point over the task's queries.
struct joint_text {
  std::vector<token_id> document;              // A's document (without BOS)
  std::vector<token_id> prompt;                // B's own prompt (may be empty)
  std::vector<std::vector<token_id>> queries;  // each query, continuing document + prompt
  std::vector<std::string> contexts;           // document + prompt + query i (its trailing space moved out)
  std::vector<std::vector<token_id>> context_tokens;  // encode(contexts[i])
  std::vector<std::string> moved;                     // query i's trailing whitespace (lm-eval)
  std::vector<std::size_t> query_begin;               // where query i starts in context_tokens[i]
};

// The joint tokenization of `doc`, `prompt` and each of `queries` through `encode`. A query's
// trailing whitespace is moved out of B's context to the front of what is scored after it, as
// lm-eval-harness's _encode_pair does.
inline joint_text split_joint_text(const std::function<std::vector<token_id>(std::string_view)>& encode,
                                   const std::string& doc, const std::string& prompt,
                                   const std::vector<std::string>& queries) {
  joint_text j;
  const auto doc_alone = encode(doc);
  const auto doc_prompt = prompt.empty() ? doc_alone : encode(doc + prompt);
  std::size_t doc_end = doc_alone.size(), prompt_end = doc_prompt.size();
  for (const auto& q : queries) {
    const auto keep = q.find_last_not_of(" \t\r\n\v\f");
    const std::size_t cut = keep == std::string::npos ? q.size() : keep + 1;
    j.moved.push_back(q.substr(cut));
    j.contexts.push_back(doc + prompt + q.substr(0, cut));
    j.context_tokens.push_back(encode(j.contexts.back()));
    doc_end = std::min(doc_end, common_prefix(doc_alone, j.context_tokens.back()));
    prompt_end = std::min(prompt_end, common_prefix(doc_prompt, j.context_tokens.back()));
  }
  prompt_end = std::max(prompt_end, doc_end);
  const auto& first = j.context_tokens.front();
  j.document.assign(first.begin(), first.begin() + static_cast<std::ptrdiff_t>(doc_end));
  j.prompt.assign(first.begin() + static_cast<std::ptrdiff_t>(doc_end),
                  first.begin() + static_cast<std::ptrdiff_t>(std::min(prompt_end, first.size())));
  for (const auto& c : j.context_tokens) {
    j.query_begin.push_back(std::min(prompt_end, c.size()));
    j.queries.emplace_back(c.begin() + static_cast<std::ptrdiff_t>(j.query_begin.back()), c.end());
  }
  return j;
}

// lm-eval's target delimiter between context `i` of `j` and `target`: the query's trailing
// whitespace when it had some (moved here), else a space unless the target begins with whitespace.
inline std::string joint_delimiter(const joint_text& j, std::size_t i, const std::string& target) {
  const bool space_first = !target.empty() && std::isspace(static_cast<unsigned char>(target.front()));
  return !j.moved[i].empty() ? j.moved[i] : space_first ? std::string() : std::string(" ");
}

// Query i of `j` and what is scored after it (answers, stale value, continuation: `targets`, text),
// split on the joint tokenization of context + delimiter + target (docs/tasks.md, "Text at field
// boundaries"):
//  - when the context's own tokens begin every target's joint text (the tokenizer keeps the
//    boundary, the usual case), lm-eval's split: the query is j.queries[i] and each target's tokens
//    are the joint text's past the context's (_encode_pair: whole[len(context_enc):]);
//  - when a tokenizer merges a token across the boundary (a BPE that attaches the space after a
//    word to the word: "green" is `gre` `en` alone, `green▁` before "puzzle"), lm-eval's split
//    would cut the joint text inside a token. B's context then ends where every target's joint text
//    stops agreeing with the tokens of the text up to the target's first character (context +
//    delimiter: the boundary token `green▁` moves into B's context, the answer starts at `pu`), or
//    with the context's own tokens if they agree further; each target is the rest of its joint
//    text. A boundary token that also holds the target's characters stays with the target.
// Falls back to lm-eval's split if the boundary would reach into the document or prompt (B's query
// would lose all its tokens or the shared fields would differ).
struct joint_split {
  std::vector<token_id> query;                 // B's query tokens
  std::vector<std::vector<token_id>> targets;  // each target's tokens, in the order given
};

inline joint_split split_joint_targets(const std::function<std::vector<token_id>(std::string_view)>& encode,
                                       const joint_text& j, std::size_t i,
                                       const std::vector<std::string>& targets) {
  const auto& ctx = j.context_tokens[i];
  const std::size_t n = ctx.size(), begin = j.query_begin[i];
  std::vector<std::vector<token_id>> whole;
  std::size_t k = n;           // B's context: the first k tokens of every target's joint text
  std::size_t least_kept = n;  // the shortest agreement of a joint text with the context's tokens
  for (const auto& t : targets) {
    const std::string upto = j.contexts[i] + joint_delimiter(j, i, t);
    whole.push_back(encode(upto + t));
    const std::size_t kept = common_prefix(ctx, whole.back());
    least_kept = std::min(least_kept, kept);
    if (kept < n) k = std::min(k, std::max(kept, common_prefix(encode(upto), whole.back())));
  }
  for (const auto& w : whole) k = std::min(k, common_prefix(whole.front(), w));
  joint_split out;
  const bool lm_eval = least_kept == n || least_kept < begin || k <= begin;
  if (lm_eval) k = n;
  out.query = lm_eval ? j.queries[i]
                      : std::vector<token_id>(whole.front().begin() + static_cast<std::ptrdiff_t>(begin),
                                              whole.front().begin() + static_cast<std::ptrdiff_t>(k));
  for (const auto& w : whole)
    out.targets.push_back(w.size() <= k
                              ? std::vector<token_id>()
                              : std::vector<token_id>(w.begin() + static_cast<std::ptrdiff_t>(k), w.end()));
  return out;
}

}  // namespace detail

LATENTAUDIT_INLINE task_file_source::task_file_source(task_file f, text_codec codec,
                                                      task_engine_limits limits,
                                                      std::optional<task_scoring> scoring)
    : file_(std::move(f)), codec_(std::move(codec)) {
  const std::string& name = file_.path;
  bool any_text_answer = false;
  for (const auto& t : file_.tasks)
    for (const auto& q : t.queries)
      for (const auto& a : q.answers) any_text_answer |= a.is_text();
  scoring_ = scoring                ? *scoring
             : file_.header.scoring ? *file_.header.scoring
             : any_text_answer      ? task_scoring::exact
                                    : task_scoring::token_exact;
  const bool text_scoring = scoring_ != task_scoring::token_exact;
  const std::int32_t V = limits.vocab_size;
  if (V <= 0) detail::throw_invalid("task_file_source", "limits.vocab_size", "must be > 0");
  const token_id bos = file_.header.bos ? *file_.header.bos : codec_.bos;
  if (file_.header.bos && (*file_.header.bos < 0 || *file_.header.bos >= V))
    detail::task_error(name, 1, "bos",
                       "token " + std::to_string(*file_.header.bos) +
                           " lies outside the engine's vocabulary [0, " + std::to_string(V) + ")");
  tasks_.reserve(file_.tasks.size());
  for (std::size_t i = 0; i < file_.tasks.size(); ++i) {
    const task_entry& e = file_.tasks[i];
    const std::uint64_t ln = e.line;
    auto fail = [&](std::string_view field, std::string_view what) {
      detail::task_error(name, ln, field, what);
    };
    // A field's token ids: the ids given (checked against the vocabulary), or the text encoded.
    auto tokens_of = [&](const task_text& t, const std::string& field) -> std::vector<token_id> {
      if (t.text) {
        has_text_ = true;
        if (!codec_)
          fail(field, "is text, but the engine has no tokenizer (give '" + field +
                          "_tokens', or a tokenizer: --engine llama.cpp, or --tokenizer F.gguf)");
        auto ids = codec_.encode(*t.text);
        for (auto x : ids)
          if (x < 0 || x >= V)
            fail(field, "the tokenizer returned id " + std::to_string(x) + " outside the vocabulary [0, " +
                            std::to_string(V) + ")");
        return ids;
      }
      for (auto x : t.tokens)
        if (x < 0 || x >= V)
          fail(field + "_tokens", "holds token " + std::to_string(x) +
                                      ", outside the engine's vocabulary [0, " + std::to_string(V) + ")");
      return t.tokens;
    };
    auto checked = [&](std::vector<token_id> ids, const std::string& field) {
      has_text_ = true;
      for (auto x : ids)
        if (x < 0 || x >= V)
          fail(field, "the tokenizer returned id " + std::to_string(x) + " outside the vocabulary [0, " +
                          std::to_string(V) + ")");
      return ids;
    };
    // Text fields as the text they form together (docs/tasks.md, "Text at field boundaries"): a
    // text document, a text prompt (or none) and text queries, on an engine with a tokenizer.
    std::optional<detail::joint_text> jt;
    if (codec_ && e.document.is_text() && (e.prompt.empty() || e.prompt.is_text()) &&
        std::all_of(e.queries.begin(), e.queries.end(),
                    [](const task_query& q) { return q.query.is_text(); })) {
      std::vector<std::string> texts;
      for (const auto& q : e.queries) texts.push_back(*q.query.text);
      jt = detail::split_joint_text(codec_.encode, *e.document.text, e.prompt.text.value_or(""), texts);
    }
    // Query qi and what is scored after it (its text answers, stale value, continuation) split on
    // their joint tokenization (detail::split_joint_targets); `split` then hands out the targets'
    // tokens in that order. A target that is not joint text is given as ids or encoded on its own.
    detail::joint_split split;
    std::size_t next_target = 0;
    auto joint = [&](const task_text& t) { return jt && t.text && !t.text->empty(); };
    auto target_of = [&](const task_text& t, const std::string& field) {
      if (joint(t)) return checked(std::move(split.targets[next_target++]), field);
      return tokens_of(t, field);
    };
    prepared_task p;
    trial_task& s = p.shared;
    s.item = i;
    s.regime = e.regime;
    s.id = e.id;
    s.extra = e.extra;
    s.covariates = e.covariates;
    s.labels = e.labels;
    s.document = jt ? checked(jt->document, "document") : tokens_of(e.document, "document");
    if (e.document.is_text() && bos >= 0) s.document.insert(s.document.begin(), bos);
    if (s.document.empty()) fail("document", "is empty after tokenization");
    if (std::none_of(s.covariates.begin(), s.covariates.end(),
                     [](const covariate& c) { return c.name == "doc_tokens"; }) &&
        std::none_of(s.labels.begin(), s.labels.end(),
                     [](const covariate_label& c) { return c.name == "doc_tokens"; }))
      s.covariates.push_back({"doc_tokens", static_cast<double>(s.document.size())});  // A's document length
    if (!e.text_document.empty()) {
      s.text_document = tokens_of(e.text_document, "text_document");
      if (jt && e.text_document.is_text()) {  // ends where it stops agreeing with each joint text
        std::size_t end = s.text_document.size();
        for (const auto& c : jt->contexts)
          end = std::min(end, detail::common_prefix(
                                  s.text_document,
                                  codec_.encode(*e.text_document.text + c.substr(e.document.text->size()))));
        s.text_document.resize(end);
      }
      if (e.text_document.is_text() && bos >= 0) s.text_document.insert(s.text_document.begin(), bos);
    }
    s.own_prompt = jt ? checked(jt->prompt, "prompt") : tokens_of(e.prompt, "prompt");
    s.instruction = tokens_of(e.instruction, "instruction");
    if (jt && e.instruction.is_text()) {  // A writes after document + instruction: its continuation
      const auto whole = codec_.encode(*e.document.text + *e.instruction.text);
      const auto n = std::min(whole.size(), jt->document.size());
      s.instruction = checked({whole.begin() + static_cast<std::ptrdiff_t>(n), whole.end()}, "instruction");
    }
    if (bos >= 0) s.no_relay_prefix = {bos};
    if (!e.budget_cuts.empty()) {
      if (e.document.is_text() || e.text_document.is_text())
        fail("budget_cuts", "needs token documents (document_tokens): cuts count tokens");
      if (e.budget_cuts.back() > static_cast<std::int64_t>(s.relay_text().size()))
        fail("budget_cuts", "a cut of " + std::to_string(e.budget_cuts.back()) +
                                " tokens lies past the text relay's " +
                                std::to_string(s.relay_text().size()) + " tokens");
      s.budget_cuts = e.budget_cuts;
    }
    std::size_t longest_answer = 0;
    for (std::size_t qi = 0; qi < e.queries.size(); ++qi) {
      const task_query& q = e.queries[qi];
      const std::string pre = e.queries.size() == 1 ? std::string() : "queries[" + std::to_string(qi) + "].";
      prepared_query pq;
      if (jt) {
        std::vector<std::string> targets;
        if (scoring_ != task_scoring::regex)
          for (const auto& a : q.answers)
            if (joint(a)) targets.push_back(*a.text);
        if (joint(q.stale_answer)) targets.push_back(*q.stale_answer.text);
        if (joint(e.continuation)) targets.push_back(*e.continuation.text);
        split = detail::split_joint_targets(codec_.encode, *jt, qi, targets);
        next_target = 0;
      }
      pq.query = jt ? checked(std::move(split.query), pre + "query") : tokens_of(q.query, pre + "query");
      if (pq.query.empty()) fail(pre + "query", "is empty after tokenization");
      pq.covariates = q.covariates;
      pq.labels = q.labels;
      for (std::size_t ai = 0; ai < q.answers.size(); ++ai) {
        const task_text& a = q.answers[ai];
        const std::string af = pre + "answers[" + std::to_string(ai) + "]";
        if (scoring_ == task_scoring::regex) {
          if (!a.text) fail(af, "regex scoring needs answers as strings (patterns)");
          std::string why;
          auto m = detail::compile_answer_regex(*a.text, why);
          if (!m) fail(af, why);
          pq.answer_texts.push_back(*a.text);
          pq.patterns.push_back(std::move(m));
          continue;
        }
        if (a.text && !codec_)
          fail(af, "is text, but the engine has no tokenizer (give token-id answers, or a tokenizer)");
        if (!a.text && text_scoring && !codec_)
          fail(af, std::string("scoring '") + task_scoring_name(scoring_) +
                       "' compares text, but the engine has no tokenizer to decode B's answer");
        std::vector<token_id> ids;
        if (a.text) {
          has_text_ = true;
          ids = joint(a) ? std::move(split.targets[next_target++]) : codec_.encode(*a.text);
          if (ids.empty()) fail(af, "is empty after tokenization");
        } else {
          ids = a.tokens;
        }
        for (auto x : ids)
          if (x < 0 || x >= V)
            fail(af, "holds token " + std::to_string(x) + ", outside the engine's vocabulary [0, " +
                         std::to_string(V) + ")");
        if (text_scoring) pq.answer_texts.push_back(a.text ? *a.text : codec_.decode(ids));
        longest_answer = std::max(longest_answer, ids.size());
        pq.answers.push_back(std::move(ids));
      }
      pq.stale_answer = target_of(q.stale_answer, pre + "stale_answer");
      if (!e.continuation.empty()) {
        pq.continuation = target_of(e.continuation, "continuation");
        if (pq.continuation.empty()) fail("continuation", "is empty after tokenization");
      }
      p.queries.push_back(std::move(pq));
    }
    if (scoring_ != task_scoring::token_exact && !codec_)
      fail("(scoring)", std::string("scoring '") + task_scoring_name(scoring_) +
                            "' decodes B's answer to text, but the engine has no tokenizer");
    const std::int32_t header_gen = file_.header.max_answer_tokens;
    s.max_answer_tokens = header_gen > 0                    ? header_gen
                          : scoring_ == task_scoring::regex ? 16
                          : scoring_ == task_scoring::token_exact
                              ? 0
                              : static_cast<std::int32_t>(longest_answer + 4);
    if (limits.max_context > 0) {
      const std::size_t gen =
          s.max_answer_tokens > 0 ? static_cast<std::size_t>(s.max_answer_tokens) : longest_answer;
      std::size_t longest_query = 0;  // with the longer of B's answer and the continuation
      for (const auto& pq : p.queries)
        longest_query =
            std::max(longest_query,
                     pq.query.size() + (pq.continuation.size() > gen ? pq.continuation.size() - gen : 0));
      const std::size_t doc = std::max(s.document.size(), s.relay_text().size());
      const std::size_t need = doc + s.own_prompt.size() + longest_query + gen;
      if (need > static_cast<std::size_t>(limits.max_context))
        fail(e.document.is_text() ? "document" : "document_tokens",
             "the document (" + std::to_string(doc) + " tokens) with B's prompt, query and answer needs " +
                 std::to_string(need) + " positions, longer than the engine's context of " +
                 std::to_string(limits.max_context));
    }
    tasks_.push_back(std::move(p));
    // The entry's contents now live in the prepared task: freed as we go, so that the peak holds
    // one copy of the file's tasks, not two.
    file_.tasks[i] = task_entry{};
  }
  file_.tasks.clear();
  file_.tasks.shrink_to_fit();
}

LATENTAUDIT_INLINE bool task_file_source::has_budget_units() const noexcept {
  return !tasks_.empty() && std::all_of(tasks_.begin(), tasks_.end(),
                                        [](const prepared_task& p) { return p.shared.has_budget_units(); });
}

LATENTAUDIT_INLINE trial_task task_file_source::task(std::uint64_t item, std::uint64_t seed,
                                                     std::uint64_t master_seed) const {
  if (item >= tasks_.size())
    detail::throw_invalid(
        "task_file_source::task", "item",
        "is " + std::to_string(item) + ", the file holds " + std::to_string(tasks_.size()) + " tasks");
  const prepared_task& p = tasks_[static_cast<std::size_t>(item)];
  trial_task t = p.shared;
  t.seed = seed;
  const std::size_t qi = task_query_index(master_seed, item, seed, p.queries.size());
  const prepared_query& q = p.queries[qi];
  t.query_index = static_cast<std::int32_t>(qi);
  t.query = q.query;
  t.stale_answer = q.stale_answer;
  t.continuation = q.continuation;
  t.covariates.insert(t.covariates.end(), q.covariates.begin(), q.covariates.end());
  t.labels.insert(t.labels.end(), q.labels.begin(), q.labels.end());
  if (!q.answers.empty()) {
    t.answer = q.answers[0];
    t.other_answers.assign(q.answers.begin() + 1, q.answers.end());
  }
  if (scoring_ != task_scoring::token_exact) {
    const auto mode = scoring_;
    const auto decode = codec_.decode;
    auto accepted = q.answer_texts;
    const bool folds = mode == task_scoring::normalized || mode == task_scoring::contains ||
                       mode == task_scoring::word_prefix;
    if (folds)
      for (auto& a : accepted) a = normalize_answer(a);
    if (mode == task_scoring::first_word)  // the answer itself, its ends' whitespace and punctuation stripped
      for (auto& a : accepted) a = detail::strip_word_edges(a);
    t.score = [mode, folds, decode, accepted, patterns = q.patterns](std::span<const token_id> generated) {
      answer_check c;
      std::string text = decode(generated);
      if (mode != task_scoring::regex) {  // B's answer: its first line, trimmed
        const auto nl = text.find('\n');
        if (nl != std::string::npos) text.resize(nl);
        const auto b = text.find_first_not_of(" \t\r");
        const auto e = text.find_last_not_of(" \t\r");
        text = b == std::string::npos ? std::string() : text.substr(b, e - b + 1);
      }
      const std::string norm = folds                              ? normalize_answer(text)
                               : mode == task_scoring::first_word ? detail::first_word_of(text)
                                                                  : text;
      for (std::size_t k = 0; k < accepted.size(); ++k) {
        const std::string& a = accepted[k];
        switch (mode) {
          case task_scoring::exact:
          case task_scoring::normalized:
            c.correct = norm == a;
            break;
          case task_scoring::contains:
            c.correct = !a.empty() && norm.find(a) != std::string::npos;
            break;
          case task_scoring::first_word:
            c.correct = !a.empty() && norm == a;
            break;
          case task_scoring::word_prefix:  // whole words: "max" begins "max max was", not "maxine"
            c.correct =
                !a.empty() && norm.starts_with(a) && (norm.size() == a.size() || norm[a.size()] == ' ');
            break;
          case task_scoring::regex:
            c.correct = patterns[k](text);
            break;
          case task_scoring::token_exact:
            break;
        }
        if (c.correct) break;
      }
      c.text = std::move(text);
      return c;
    };
  }
  return t;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_TRIAL_IMPL_TASK_FILE_INL_HPP

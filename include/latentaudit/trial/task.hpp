// SPDX-License-Identifier: MIT
// latentaudit: trial tasks — what agent A reads, what agent B is asked — and the generator of
// model-organism tasks (multi-query associative recall, tools/organism/train.py) in two regimes:
// need (only A's document holds the answer) and no_need (B's own prompt holds the pairs too).
#ifndef LATENTAUDIT_TRIAL_TASK_HPP
#define LATENTAUDIT_TRIAL_TASK_HPP

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "../core/detail/check.hpp"
#include "../core/detail/file_check.hpp"
#include "../core/error.hpp"
#include "../core/json.hpp"
#include "../core/rng.hpp"
#include "../core/types.hpp"
#include "record.hpp"

namespace latentaudit {

/// @brief Whether B needs A's information to answer.
enum class task_regime : std::uint8_t {
  need,     ///< only A's document holds the answer
  no_need,  ///< B's own prompt holds the same pairs: relay should change nothing
};

/// @brief "need" or "no_need".
[[nodiscard]] constexpr const char* regime_name(task_regime r) noexcept {
  return r == task_regime::need ? "need" : "no_need";
}

/// @brief One trial task. B's context is built by the arm: [relay (A's document as text or KV)]
/// [own_prompt][query]; B must produce `answer` after the query.
struct trial_task {
  std::uint64_t item = 0;                  ///< item index (the document)
  std::uint64_t seed = 0;                  ///< seed index (which pair is asked)
  task_regime regime = task_regime::need;  ///< need / no_need
  std::vector<token_id> document;          ///< what A reads (starts with BOS)
  std::vector<token_id> own_prompt;        ///< B's own context after the relay and before the query (no BOS)
  std::vector<token_id> no_relay_prefix;   ///< what B's context starts with when nothing is relayed (BOS)
  std::vector<token_id> query;             ///< the query tokens; B answers after the last
  std::vector<token_id> answer;            ///< the reference answer tokens
  std::int32_t pairs = 0;                  ///< key-value pairs in the document (0 if not an organism task)
  std::vector<covariate> covariates;       ///< doc_tokens, pairs, needed_position, ...

  /// @brief The text a lossy text relay of the first `k` units carries: for organism tasks the
  /// BOS and the first k pairs of the document.
  [[nodiscard]] std::vector<token_id> document_prefix_pairs(std::int32_t k) const {
    const auto n = std::min<std::size_t>(document.size(), 1 + 2 * static_cast<std::size_t>(std::max(k, 0)));
    return {document.begin(), document.begin() + static_cast<std::ptrdiff_t>(n)};
  }
};

/// @brief The token map of an organism (task.json beside the weights).
struct organism_format {
  std::int32_t vocab_size = 0;   ///< logits per position
  token_id bos = 0;              ///< start of document
  token_id sep = 1;              ///< separator before the queries
  token_id key_first = 4;        ///< first key token
  std::int32_t key_count = 0;    ///< keys
  token_id value_first = 0;      ///< first value token
  std::int32_t value_count = 0;  ///< values
  std::int32_t max_pairs = 0;    ///< the largest N the model was trained for

  /// @brief Reads `dir/task.json`.
  /// @throws corrupt_data naming the file and the field if it is missing, malformed, or the
  ///         ranges overlap or leave the vocabulary.
  [[nodiscard]] static organism_format load(const std::filesystem::path& dir) {
    const auto path = dir / "task.json";
    std::uint64_t size = 0;
    try {
      size = detail::require_regular_file(path, "organism_format::load: task file");
    } catch (const invalid_argument& e) {
      LATENTAUDIT_THROW(corrupt_data(e.what()));
    }
    if (size > (1u << 16))
      LATENTAUDIT_THROW(corrupt_data("organism_format::load: " + path.string() + " is larger than 64 KiB"));
    std::ifstream in(path, std::ios::binary);
    if (!in) LATENTAUDIT_THROW(corrupt_data("organism_format::load: cannot open '" + path.string() + "'"));
    std::ostringstream ss;
    ss << in.rdbuf();
    json_value j;
    try {
      j = parse_json(ss.str(), {.max_depth = 8, .max_bytes = 1 << 16});
    } catch (const error& e) {
      LATENTAUDIT_THROW(corrupt_data("organism_format::load: " + path.string() + ": " + e.what()));
    }
    return from_json(j, path.string());
  }

  /// @brief Reads the fields from a parsed task.json; `where` names the source in errors.
  /// @throws corrupt_data as load().
  [[nodiscard]] static organism_format from_json(const json_value& j,
                                                 const std::string& where = "task.json") {
    auto fail = [&](const std::string& what) {
      LATENTAUDIT_THROW(corrupt_data("organism_format: " + where + ": " + what));
    };
    if (!j.is_object()) fail("must be a JSON object");
    auto field = [&](const char* key) -> std::int32_t {
      const json_value* v = j.find(key);
      if (v == nullptr || !v->is_number()) fail(std::string("field '") + key + "' must be an integer");
      const double x = v->as_number();
      if (x != static_cast<double>(static_cast<std::int64_t>(x)) || x < 0 || x > 1e7)
        fail(std::string("field '") + key + "' must be an integer in [0, 1e7]");
      return static_cast<std::int32_t>(x);
    };
    organism_format f;
    f.vocab_size = field("vocab_size");
    f.bos = field("bos");
    f.sep = field("sep");
    f.key_first = field("key_first");
    f.key_count = field("key_count");
    f.value_first = field("value_first");
    f.value_count = field("value_count");
    f.max_pairs = field("max_pairs");
    if (f.key_count < 1 || f.value_count < 2) fail("needs key_count >= 1 and value_count >= 2");
    if (f.max_pairs < 1 || f.max_pairs > f.key_count) fail("needs 1 <= max_pairs <= key_count");
    const auto ke = static_cast<std::int64_t>(f.key_first) + f.key_count,
               ve = static_cast<std::int64_t>(f.value_first) + f.value_count;
    if (ke > f.vocab_size || ve > f.vocab_size || f.bos >= f.vocab_size || f.sep >= f.vocab_size)
      fail("token ranges must lie inside vocab_size " + std::to_string(f.vocab_size));
    if (!(ke <= f.value_first || ve <= f.key_first)) fail("key and value ranges overlap");
    auto inside = [](std::int64_t t, std::int64_t a, std::int64_t e) { return t >= a && t < e; };
    if (inside(f.bos, f.key_first, ke) || inside(f.bos, f.value_first, ve) ||
        inside(f.sep, f.key_first, ke) || inside(f.sep, f.value_first, ve) || f.bos == f.sep)
      fail("bos and sep must be distinct and outside the key and value ranges");
    return f;
  }
};

/// @brief How organism tasks are drawn.
struct organism_task_options {
  std::uint64_t seed = 1;         ///< the design's master seed
  std::int32_t min_pairs = 2;     ///< fewest pairs in a document
  std::int32_t max_pairs = 0;     ///< most pairs in a need-regime document (0 = the model's max_pairs)
  double no_need_fraction = 0.5;  ///< share of items in the no_need regime

  /// @brief The options as a JSON object (part of the design identity, trial_design::identity):
  /// every field that changes a task. A field added here must be added to this object too.
  [[nodiscard]] json_value to_json() const {
    json_value j = json_value::object();
    j.set("seed", static_cast<double>(seed));
    j.set("min_pairs", min_pairs);
    j.set("max_pairs", max_pairs);
    j.set("no_need_fraction", no_need_fraction);
    return j;
  }
};

/// @brief The organism task for (item, seed): the document (N pairs, distinct keys, N drawn
/// uniformly in [min_pairs, max_pairs]; no_need documents use at most max_pairs / 2 pairs, so B's
/// context holding both copies stays within the trained length) depends on (options.seed, item);
/// the queried pair depends on (options.seed, item, seed). Regime: item-level, drawn with
/// probability no_need_fraction. Streams: make_stream({options.seed, item, 0xD0C, 0}) for the
/// document and make_stream({options.seed, item, 0x0A5C, seed}) for the query.
/// @throws invalid_argument if the options do not fit the format.
[[nodiscard]] inline trial_task make_organism_task(const organism_format& f, const organism_task_options& o,
                                                   std::uint64_t item, std::uint64_t seed) {
  constexpr std::string_view fn = "make_organism_task";
  const std::int32_t maxp = o.max_pairs == 0 ? f.max_pairs : o.max_pairs;
  if (maxp < 1 || maxp > f.max_pairs)
    detail::throw_invalid(
        fn, "options.max_pairs",
        "must be 0 or in [1, " + std::to_string(f.max_pairs) + "], got " + std::to_string(o.max_pairs));
  if (o.min_pairs < 1 || o.min_pairs > maxp)
    detail::throw_invalid(
        fn, "options.min_pairs",
        "must be in [1, max_pairs = " + std::to_string(maxp) + "], got " + std::to_string(o.min_pairs));
  if (!(o.no_need_fraction >= 0.0 && o.no_need_fraction <= 1.0))
    detail::throw_invalid(fn, "options.no_need_fraction",
                          "must be in [0, 1], got " + detail::number_text(o.no_need_fraction));
  auto g = make_stream({o.seed, item, 0xD0C, 0});
  trial_task t;
  t.item = item;
  t.seed = seed;
  t.regime = uniform01(g) < o.no_need_fraction ? task_regime::no_need : task_regime::need;
  const std::int32_t hi = t.regime == task_regime::no_need ? std::max(o.min_pairs, maxp / 2) : maxp;
  const auto n =
      static_cast<std::int32_t>(o.min_pairs + static_cast<std::int32_t>(uniform_index(
                                                  g, static_cast<std::uint32_t>(hi - o.min_pairs + 1))));
  // n distinct keys: partial Fisher-Yates over the key range.
  std::vector<token_id> keys(static_cast<std::size_t>(f.key_count));
  std::iota(keys.begin(), keys.end(), f.key_first);
  std::vector<token_id> values(static_cast<std::size_t>(n));
  for (std::int32_t i = 0; i < n; ++i) {
    const auto j =
        i + static_cast<std::int32_t>(uniform_index(g, static_cast<std::uint32_t>(f.key_count - i)));
    std::swap(keys[static_cast<std::size_t>(i)], keys[static_cast<std::size_t>(j)]);
    values[static_cast<std::size_t>(i)] =
        f.value_first + static_cast<token_id>(uniform_index(g, static_cast<std::uint32_t>(f.value_count)));
  }
  t.pairs = n;
  t.document.push_back(f.bos);
  for (std::int32_t i = 0; i < n; ++i) {
    t.document.push_back(keys[static_cast<std::size_t>(i)]);
    t.document.push_back(values[static_cast<std::size_t>(i)]);
  }
  t.no_relay_prefix = {f.bos};
  if (t.regime == task_regime::no_need) {  // the same pairs, in another order
    std::vector<std::int32_t> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    for (std::int32_t i = n - 1; i > 0; --i)
      std::swap(order[static_cast<std::size_t>(i)],
                order[uniform_index(g, static_cast<std::uint32_t>(i + 1))]);
    for (auto i : order) {
      t.own_prompt.push_back(keys[static_cast<std::size_t>(i)]);
      t.own_prompt.push_back(values[static_cast<std::size_t>(i)]);
    }
  }
  auto q = make_stream({o.seed, item, 0x0A5C, static_cast<std::uint32_t>(seed)});
  const auto asked = static_cast<std::int32_t>(uniform_index(q, static_cast<std::uint32_t>(n)));
  t.query = {f.sep, keys[static_cast<std::size_t>(asked)]};
  t.answer = {values[static_cast<std::size_t>(asked)]};
  t.covariates = {{"doc_tokens", static_cast<double>(t.document.size())},
                  {"pairs", static_cast<double>(n)},
                  {"needed_position", static_cast<double>(asked)},
                  {"own_tokens", static_cast<double>(t.own_prompt.size())}};
  return t;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_TRIAL_TASK_HPP

// SPDX-License-Identifier: MIT
// latentaudit: trial tasks — what agent A reads, what agent B is asked — and the generator of
// model-organism tasks (multi-query associative recall, tools/organism/train.py) in four regimes:
// need (only A's document holds the answer), no_need (B's own prompt holds the pairs too), stale
// (A's cache is of an older version of the document) and conflict (A's document binds B's keys to
// other values).
#ifndef LATENTAUDIT_TRIAL_TASK_HPP
#define LATENTAUDIT_TRIAL_TASK_HPP

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "../core/file_check.hpp"
#include "../core/json.hpp"
#include "../core/rng.hpp"
#include "../core/types.hpp"
#include "record.hpp"

namespace latentaudit {

/// @brief Whether B needs A's information to answer, and whether that information is current.
enum class task_regime : std::uint8_t {
  need,      ///< only A's document holds the answer
  no_need,   ///< B's own prompt holds the same pairs: relay should change nothing
  stale,     ///< A's cache is of version 1; the document changed since (version 2, what text relays)
             ///< and the query asks about a changed pair: a cache relay carries the old value
  conflict,  ///< B's own prompt holds the right pairs; A's document binds the same keys to other values
};

/// @brief "need", "no_need", "stale" or "conflict" (the record's `regime`).
[[nodiscard]] constexpr const char* regime_name(task_regime r) noexcept {
  switch (r) {
    case task_regime::need:
      return "need";
    case task_regime::no_need:
      return "no_need";
    case task_regime::stale:
      return "stale";
    case task_regime::conflict:
      return "conflict";
  }
  return "need";
}

/// @brief What B's greedy answer scored: whether it is accepted, and (text scoring) its decoded
/// text, which the record keeps (`answer_text`).
struct answer_check {
  bool correct = false;  ///< an accepted answer
  std::string text;      ///< B's answer as scored (text scoring only; empty otherwise)
};

/// @brief One trial task. B's context is built by the arm: [relay (A's document as text or KV)]
/// [own_prompt][query]; B must produce an accepted answer after the query.
struct trial_task {
  std::uint64_t item = 0;                  ///< item index (the document)
  std::uint64_t seed = 0;                  ///< seed index (which query is asked)
  task_regime regime = task_regime::need;  ///< need / no_need / stale / conflict
  std::vector<token_id> document;          ///< what A reads (starts with BOS); every KV arm relays its cache
  /// What the text arms relay when it differs from `document` (stale: the current version 2 of the
  /// document, while A's cache is of version 1); empty = `document`. See relay_text().
  std::vector<token_id> text_document;
  std::vector<token_id> own_prompt;       ///< B's own context after the relay and before the query (no BOS)
  std::vector<token_id> no_relay_prefix;  ///< what B's context starts with when nothing is relayed (BOS)
  std::vector<token_id> query;            ///< the query tokens; B answers after the last
  std::vector<token_id> answer;           ///< the reference answer tokens (the first accepted answer)
  /// Further accepted answers (token-exact scoring: B's answer is correct when its first |a| tokens
  /// equal one of `answer` and these). Ignored when `score` is set.
  std::vector<std::vector<token_id>> other_answers;
  /// Tokens B generates; 0 = the longest accepted answer's length (see answer_tokens()).
  std::int32_t max_answer_tokens = 0;
  /// The scorer of B's generated tokens when it is not token-exact (text scoring of a task file:
  /// exact, normalized, contains, regex over the detokenized answer); empty = token-exact.
  std::function<answer_check(std::span<const token_id>)> score;
  /// A's message instruction (the messages' arms: A writes after the document and these tokens);
  /// empty = the engine's or organism's default instruction.
  std::vector<token_id> instruction;
  /// Budget units of the text relay: budget_cuts[k] = the number of leading tokens of relay_text()
  /// that carry the first k units (organism: 1 + 2k, the BOS and k pairs), non-decreasing. Empty =
  /// the task has no budget units, and text_budget arms do not apply (document_prefix_pairs throws).
  std::vector<std::int64_t> budget_cuts;
  /// stale: the answer under the version A's cache was built from (the stale value); empty otherwise.
  /// The driver records whether B's answer equals it (trial_record::stale_answer).
  std::vector<token_id> stale_answer;
  /// A continuation B is teacher-forced on after the query (tokens of the text that follows the
  /// query, docs/tasks.md): its log-likelihood is recorded as continuation_logprob,
  /// continuation_tokens and continuation_prob. Empty = none (nothing is recorded).
  std::vector<token_id> continuation;
  std::int32_t pairs = 0;                   ///< key-value pairs in the document (0 if not an organism task)
  std::vector<covariate> covariates;        ///< doc_tokens, pairs, needed_position, ...
  std::vector<covariate_label> labels;      ///< label covariates (task files), by name
  std::string id;                           ///< the task's id (task files; "" otherwise)
  std::optional<std::int32_t> query_index;  ///< which of the task's queries is asked (task files)
  json_value extra;  ///< a task file's unknown fields (an object, or null), carried into the records

  /// @brief The document the text arms carry: `text_document`, or `document` when that is empty.
  [[nodiscard]] const std::vector<token_id>& relay_text() const noexcept {
    return text_document.empty() ? document : text_document;
  }

  /// @brief Whether the task has budget units (text_budget arms apply).
  [[nodiscard]] bool has_budget_units() const noexcept { return !budget_cuts.empty(); }

  /// @brief The text a lossy text relay of the first `k` budget units carries: the first
  /// budget_cuts[k] tokens of relay_text() (organism tasks: the BOS and the first k pairs), all of it
  /// when k is past the last cut.
  /// @throws invalid_argument if the task has no budget units (budget_cuts empty).
  [[nodiscard]] std::vector<token_id> document_prefix_pairs(std::int32_t k) const {
    if (budget_cuts.empty())
      detail::throw_invalid("trial_task::document_prefix_pairs", "budget_cuts",
                            "is empty: task '" + (id.empty() ? std::to_string(item) : id) +
                                "' has no budget units, so text_budget arms do not apply to it");
    const auto& doc = relay_text();
    const auto kk = static_cast<std::size_t>(std::max(k, 0));
    const auto cut = kk < budget_cuts.size()
                         ? static_cast<std::size_t>(std::max<std::int64_t>(budget_cuts[kk], 0))
                         : doc.size();
    const auto n = std::min(doc.size(), cut);
    return {doc.begin(), doc.begin() + static_cast<std::ptrdiff_t>(n)};
  }

  /// @brief The tokens B generates: max_answer_tokens, or the longest accepted answer's length.
  [[nodiscard]] std::size_t answer_tokens() const noexcept {
    if (max_answer_tokens > 0) return static_cast<std::size_t>(max_answer_tokens);
    std::size_t n = answer.size();
    for (const auto& a : other_answers) n = std::max(n, a.size());
    return n;
  }

  /// @brief Scores B's generated tokens: `score` when set, else token-exact — correct when the
  /// first |a| generated tokens equal an accepted answer a (`answer` or one of `other_answers`).
  [[nodiscard]] answer_check check_answer(std::span<const token_id> generated) const {
    if (score) return score(generated);
    auto match = [&](const std::vector<token_id>& a) {
      return !a.empty() && a.size() <= generated.size() && std::equal(a.begin(), a.end(), generated.begin());
    };
    answer_check c;
    c.correct = match(answer) || std::any_of(other_answers.begin(), other_answers.end(), match);
    return c;
  }
};

/// @brief The record's `stale_answer` for B's generated answer on `task`: in the stale regime
/// (with a known stale value) whether `generated` starts with task.stale_answer (equals it when B
/// generates exactly its length); nothing otherwise.
[[nodiscard]] inline std::optional<bool> stale_answer_of(const trial_task& task,
                                                         const std::vector<token_id>& generated) {
  if (task.regime != task_regime::stale || task.stale_answer.empty()) return std::nullopt;
  return task.stale_answer.size() <= generated.size() &&
         std::equal(task.stale_answer.begin(), task.stale_answer.end(), generated.begin());
}

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
  /// The instruction token after which the organism recites its document (trained with the recite
  /// task; trial/message.hpp organism_message_options), absent otherwise.
  std::optional<token_id> recite;
  std::optional<token_id> message_stop;  ///< the token that ends a recited message (with `recite`)

  /// @brief Reads `dir/task.json` (the one reader of an organism's task.json).
  /// @throws corrupt_data naming the file and the field if it is missing, malformed, or the
  ///         ranges overlap or leave the vocabulary.
  [[nodiscard]] static organism_format load(const std::filesystem::path& dir) {
    const auto path = dir / "task.json";
    std::uint64_t size = 0;
    try {
      size = require_regular_file(path, "organism_format::load: task file");
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
      // Range first: converting a double outside int64's range (1e300) is undefined behaviour.
      if (!(x >= 0 && x <= 1e7) || x != std::floor(x))
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
    if (j.find("recite") != nullptr) {  // an organism trained to recite: its message tokens
      auto token = [&](const char* key) -> token_id {
        const json_value* v = j.find(key);
        if (v == nullptr || !v->is_number() || !(v->as_number() >= 0) || v->as_number() >= f.vocab_size ||
            v->as_number() != std::floor(v->as_number()))
          fail(std::string("field '") + key + "' must be a token id in [0, vocab_size)");
        return static_cast<token_id>(v->as_number());
      };
      f.recite = token("recite");
      f.message_stop = token("message_stop");
    }
    return f;
  }
};

/// @brief How organism tasks are drawn. The defaults draw need and no_need items only, as before
/// the stale and conflict regimes existed (callers that ask for `.no_need_fraction = 0` still get
/// need items only); `latentaudit audit` sets no_need 0.3, stale 0.1 and conflict 0.1.
struct organism_task_options {
  std::uint64_t seed = 1;          ///< the design's master seed
  std::int32_t min_pairs = 2;      ///< fewest pairs in a document
  std::int32_t max_pairs = 0;      ///< most pairs in a need-regime document (0 = the model's max_pairs)
  double no_need_fraction = 0.5;   ///< share of items in the no_need regime
  double stale_fraction = 0.0;     ///< share of items in the stale regime
  double conflict_fraction = 0.0;  ///< share of items in the conflict regime (need: the rest)

  /// @brief Checks the options against an organism's format.
  /// @throws invalid_argument naming the option.
  void validate(const organism_format& f) const {
    constexpr std::string_view fn = "organism_task_options";
    const std::int32_t maxp = max_pairs == 0 ? f.max_pairs : max_pairs;
    if (maxp < 1 || maxp > f.max_pairs)
      detail::throw_invalid(
          fn, "max_pairs",
          "must be 0 or in [1, " + std::to_string(f.max_pairs) + "], got " + std::to_string(max_pairs));
    if (min_pairs < 1 || min_pairs > maxp)
      detail::throw_invalid(
          fn, "min_pairs",
          "must be in [1, max_pairs = " + std::to_string(maxp) + "], got " + std::to_string(min_pairs));
    const std::pair<const char*, double> shares[] = {{"no_need_fraction", no_need_fraction},
                                                     {"stale_fraction", stale_fraction},
                                                     {"conflict_fraction", conflict_fraction}};
    for (const auto& [name, x] : shares)
      if (!(x >= 0.0 && x <= 1.0))
        detail::throw_invalid(fn, name, "must be in [0, 1], got " + number_text(x));
    if (!(no_need_fraction + stale_fraction + conflict_fraction <= 1.0 + 1e-12))
      detail::throw_invalid(
          fn, "no_need_fraction + stale_fraction + conflict_fraction",
          "must be at most 1, got " + number_text(no_need_fraction + stale_fraction + conflict_fraction));
    if (f.value_count < 2) detail::throw_invalid(fn, "format.value_count", "must be at least 2");
  }

  /// @brief The options as JSON (part of a design's identity: a resume with other task options is
  /// refused).
  [[nodiscard]] json_value to_json() const {
    json_value j;
    j.set("seed", static_cast<double>(seed));
    j.set("min_pairs", static_cast<double>(min_pairs));
    j.set("max_pairs", static_cast<double>(max_pairs));
    j.set("no_need_fraction", no_need_fraction);
    j.set("stale_fraction", stale_fraction);
    j.set("conflict_fraction", conflict_fraction);
    return j;
  }
};

namespace detail {
// Share of the document's keys (tokens at the key positions 1, 3, 5, ... of an organism document)
// that also appear in B's own prompt: the "prompt overlap" a serving stack can compute before a
// transfer. 0 for an empty document.
[[nodiscard]] inline double organism_prompt_overlap(const organism_format& f,
                                                    const std::vector<token_id>& doc,
                                                    const std::vector<token_id>& own) {
  std::size_t keys = 0, shared = 0;
  for (std::size_t i = 1; i < doc.size(); i += 2) {
    if (doc[i] < f.key_first || doc[i] >= f.key_first + f.key_count) continue;
    ++keys;
    for (std::size_t k = 0; k < own.size(); k += 2)
      if (own[k] == doc[i]) {
        ++shared;
        break;
      }
  }
  return keys == 0 ? 0.0 : static_cast<double>(shared) / static_cast<double>(keys);
}

// A value token other than `v`, uniform over the other value_count − 1 values.
[[nodiscard]] inline token_id other_value(const organism_format& f, token_id v, philox4x32& g) {
  const auto off = static_cast<token_id>(1 + uniform_index(g, static_cast<std::uint32_t>(f.value_count - 1)));
  return f.value_first + (v - f.value_first + off) % f.value_count;
}
}  // namespace detail

/// @brief One askable query of an organism item: the query tokens, the answer, the stale value
/// (stale items) and the asked pair's index in A's document.
struct organism_query {
  std::vector<token_id> query;         ///< {sep, key}
  std::vector<token_id> answer;        ///< the value B must give
  std::vector<token_id> stale_answer;  ///< stale items: the version-1 value; empty otherwise
  std::int32_t needed_position = 0;    ///< index of the asked pair in A's document
};

/// @brief An organism item (a document and everything but the query): `task` holds the fields
/// shared by every query (query, answer and stale_answer empty, covariates without
/// needed_position) and `queries` the pairs the query may ask about, in document order.
/// make_organism_task picks one by seed; `latentaudit organism tasks` writes all of them, one task
/// line per item (trial/task_file.hpp), and the built-in audit reads those lines back.
struct organism_item {
  trial_task task;                      ///< the shared fields
  std::vector<organism_query> queries;  ///< the askable pairs (stale: the changed ones)
};

/// @brief Which of `n` askable queries the unit (item, seed) asks under master seed `seed`:
/// uniform_index(make_stream({seed, item, 0x0A5C, seed index}), n). The organism and every task
/// file with several queries per task select the same way.
[[nodiscard]] inline std::size_t task_query_index(std::uint64_t master_seed, std::uint64_t item,
                                                  std::uint64_t seed, std::size_t n) {
  if (n <= 1) return 0;
  auto q = make_stream({master_seed, item, 0x0A5C, static_cast<std::uint32_t>(seed)});
  return uniform_index(q, static_cast<std::uint32_t>(n));
}

/// @brief The organism item `item` (make_organism_task's document, regime and askable queries).
/// @throws invalid_argument as make_organism_task.
[[nodiscard]] inline organism_item make_organism_item(const organism_format& f,
                                                      const organism_task_options& o, std::uint64_t item);

/// @brief The organism task of unit (item, seed) of `it`: query task_query_index(o.seed, item,
/// seed, queries), its covariate needed_position appended.
[[nodiscard]] inline trial_task organism_task_of(const organism_item& it, std::uint64_t master_seed,
                                                 std::uint64_t seed) {
  trial_task t = it.task;
  t.seed = seed;
  const auto& q = it.queries[task_query_index(master_seed, t.item, seed, it.queries.size())];
  t.query = q.query;
  t.answer = q.answer;
  t.stale_answer = q.stale_answer;
  t.covariates.push_back({"needed_position", static_cast<double>(q.needed_position)});
  return t;
}

/// @brief The organism task for (item, seed).
///
/// The regime is item-level: the first uniform u of the document stream picks no_need when
/// u < no_need_fraction, stale below no_need_fraction + stale_fraction, conflict below that plus
/// conflict_fraction, and need otherwise (so with the same no_need_fraction, need and no_need items
/// are bit-identical to those of a design without stale and conflict items). The document has N
/// pairs with distinct keys, N uniform in [min_pairs, max_pairs]; no_need and conflict documents
/// use at most max_pairs / 2 pairs, so B's context holding both copies stays within the trained
/// length. The queried pair depends on (options.seed, item, seed).
/// - need: A's document only. no_need: B's own prompt holds the same pairs, in another order.
/// - stale: `document` (what A reads, and every KV arm relays) is version 1; version 2
///   (`text_document`, what the text arms relay) gives c pairs new values (c uniform in
///   [1, max(1, N / 2)]; each new value uniform over the other values), and the query asks about
///   one of the changed pairs. `answer` is the version-2 value, `stale_answer` the version-1 value.
/// - conflict: B's own prompt holds the pairs (as no_need) and `answer` is B's own value; A's
///   document binds the same keys, in their drawn order, each to another value.
///
/// Covariates: doc_tokens, pairs, own_tokens, cache_age_versions (document version minus the
/// version A's cache is of: 1 for stale, else 0), prompt_overlap (share of A's document keys in B's
/// own prompt: 1 for no_need and conflict, 0 for need and stale) and needed_position (index of the
/// asked pair in A's document). Budget units (budget_cuts): the BOS and k pairs, 1 + 2k tokens,
/// k = 0..N.
///
/// Streams: make_stream({options.seed, item, 0xD0C, 0}) for the regime and the document (and the
/// own prompt's order), make_stream({options.seed, item, 0x57A1E, 0}) for a stale item's changes,
/// make_stream({options.seed, item, 0xC0F1C7, 0}) for a conflict item's other values and
/// make_stream({options.seed, item, 0x0A5C, seed}) for the query.
/// @throws invalid_argument if the options do not fit the format (organism_task_options::validate).
[[nodiscard]] inline trial_task make_organism_task(const organism_format& f, const organism_task_options& o,
                                                   std::uint64_t item, std::uint64_t seed) {
  return organism_task_of(make_organism_item(f, o, item), o.seed, seed);
}

[[nodiscard]] inline organism_item make_organism_item(const organism_format& f,
                                                      const organism_task_options& o, std::uint64_t item) {
  o.validate(f);
  const std::int32_t maxp = o.max_pairs == 0 ? f.max_pairs : o.max_pairs;
  auto g = make_stream({o.seed, item, 0xD0C, 0});
  organism_item it;
  trial_task& t = it.task;
  t.item = item;
  const double u = uniform01(g);
  t.regime = u < o.no_need_fraction                                            ? task_regime::no_need
             : u < o.no_need_fraction + o.stale_fraction                       ? task_regime::stale
             : u < o.no_need_fraction + o.stale_fraction + o.conflict_fraction ? task_regime::conflict
                                                                               : task_regime::need;
  const bool own_copy = t.regime == task_regime::no_need || t.regime == task_regime::conflict;
  const std::int32_t hi = own_copy ? std::max(o.min_pairs, maxp / 2) : maxp;
  const auto n =
      static_cast<std::int32_t>(o.min_pairs + static_cast<std::int32_t>(uniform_index(
                                                  g, static_cast<std::uint32_t>(hi - o.min_pairs + 1))));
  const auto un = static_cast<std::size_t>(n);
  // n distinct keys: partial Fisher-Yates over the key range.
  std::vector<token_id> keys(static_cast<std::size_t>(f.key_count));
  std::iota(keys.begin(), keys.end(), f.key_first);
  std::vector<token_id> values(un);
  for (std::int32_t i = 0; i < n; ++i) {
    const auto j =
        i + static_cast<std::int32_t>(uniform_index(g, static_cast<std::uint32_t>(f.key_count - i)));
    std::swap(keys[static_cast<std::size_t>(i)], keys[static_cast<std::size_t>(j)]);
    values[static_cast<std::size_t>(i)] =
        f.value_first + static_cast<token_id>(uniform_index(g, static_cast<std::uint32_t>(f.value_count)));
  }
  auto write_document = [&](const std::vector<token_id>& vals) {
    std::vector<token_id> doc{f.bos};
    for (std::size_t i = 0; i < un; ++i) {
      doc.push_back(keys[i]);
      doc.push_back(vals[i]);
    }
    return doc;
  };
  t.pairs = n;
  t.document = write_document(values);
  t.no_relay_prefix = {f.bos};
  if (own_copy) {  // the same pairs, in another order
    std::vector<std::int32_t> order(un);
    std::iota(order.begin(), order.end(), 0);
    for (std::int32_t i = n - 1; i > 0; --i)
      std::swap(order[static_cast<std::size_t>(i)],
                order[uniform_index(g, static_cast<std::uint32_t>(i + 1))]);
    for (auto i : order) {
      t.own_prompt.push_back(keys[static_cast<std::size_t>(i)]);
      t.own_prompt.push_back(values[static_cast<std::size_t>(i)]);
    }
  }
  // The pairs the query may ask about: all, or (stale) the changed ones.
  std::vector<std::size_t> askable(un);
  std::iota(askable.begin(), askable.end(), std::size_t{0});
  std::vector<token_id> answer_values = values, stale_values;
  if (t.regime == task_regime::stale) {
    auto c = make_stream({o.seed, item, 0x57A1E, 0});
    const auto changed = static_cast<std::size_t>(
        1 + uniform_index(c, static_cast<std::uint32_t>(std::max<std::int32_t>(1, n / 2))));
    for (std::size_t i = 0; i < changed; ++i)  // partial Fisher-Yates: the changed pairs
      std::swap(askable[i], askable[i + uniform_index(c, static_cast<std::uint32_t>(un - i))]);
    askable.resize(changed);
    std::sort(askable.begin(), askable.end());
    for (auto i : askable) answer_values[i] = detail::other_value(f, values[i], c);
    stale_values = values;                            // version 1: what A read
    t.text_document = write_document(answer_values);  // version 2: the current text
  } else if (t.regime == task_regime::conflict) {
    auto c = make_stream({o.seed, item, 0xC0F1C7, 0});
    std::vector<token_id> other(un);
    for (std::size_t i = 0; i < un; ++i) other[i] = detail::other_value(f, values[i], c);
    t.document = write_document(other);  // A's document: B's keys bound to other values
  }
  for (auto asked : askable) {
    organism_query q;
    q.query = {f.sep, keys[asked]};
    q.answer = {answer_values[asked]};
    if (!stale_values.empty()) q.stale_answer = {stale_values[asked]};
    q.needed_position = static_cast<std::int32_t>(asked);
    it.queries.push_back(std::move(q));
  }
  for (std::int32_t k = 0; k <= n; ++k) t.budget_cuts.push_back(1 + 2 * static_cast<std::int64_t>(k));
  t.covariates = {{"doc_tokens", static_cast<double>(t.document.size())},
                  {"pairs", static_cast<double>(n)},
                  {"own_tokens", static_cast<double>(t.own_prompt.size())},
                  {"cache_age_versions", t.regime == task_regime::stale ? 1.0 : 0.0},
                  {"prompt_overlap", detail::organism_prompt_overlap(f, t.document, t.own_prompt)}};
  return it;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_TRIAL_TASK_HPP

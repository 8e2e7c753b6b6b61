// SPDX-License-Identifier: MIT
// latentaudit: task files — the user's own tasks as JSONL (docs/tasks.md). One task per line
// (`id`; the document A reads, `document` or `document_tokens`; B's own context, `prompt` or
// `prompt_tokens`; the query, `query` or `query_tokens`; `answers`; optional `regime`,
// `covariates`, `instruction` or `instruction_tokens`, `queries` for several queries per task,
// `text_document`/`text_document_tokens`, `stale_answers`, `budget_cuts`; any other field is kept and
// carried into the records), an optional first header line {"latentaudit_tasks": 1, "scoring": ...}.
//   read_task_file      a bounded, streaming reader: every error is "file:line:field: message"
//   write_task_file     the writer (the organism's tasks, converters)
//   text_codec          text ↔ token ids (an engine's tokenizer); empty = no tokenizer
//   task_file_source    a read file checked against an engine (vocabulary, context, tokenizer) and
//                       turned into the trial tasks of (item, seed): items = tasks, the seed picks
//                       which query (task_query_index) and every random stream
//   organism_task_entry an organism item as a task line: the built-in audit writes the organism's
//                       items through this and reads them back through task_file_source (one path)
#ifndef LATENTAUDIT_TRIAL_TASK_FILE_HPP
#define LATENTAUDIT_TRIAL_TASK_FILE_HPP

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../core/json.hpp"
#include "../core/types.hpp"
#include "record.hpp"
#include "task.hpp"

namespace latentaudit {

/// @brief An engine's tokenizer as two functions: text → token ids (no BOS or other special
/// tokens) and token ids → text. A default-constructed codec is "no tokenizer": a task file with
/// text fields is then refused (file:line:field). `bos` (≥ 0) is prepended to text documents and is
/// B's context when nothing is relayed; -1 = none.
struct text_codec {
  std::function<std::vector<token_id>(std::string_view)> encode;  ///< text → ids (no specials)
  std::function<std::string(std::span<const token_id>)> decode;   ///< ids → text
  token_id bos = -1;                                              ///< BOS id, or -1 for none

  /// @brief Whether the codec can encode and decode (a tokenizer is present).
  [[nodiscard]] explicit operator bool() const noexcept { return encode && decode; }
};

/// @brief How B's answer is scored (declared once per file, or by `--scoring`).
enum class task_scoring : std::uint8_t {
  token_exact,  ///< B's first |a| generated tokens equal an accepted answer a (token ids)
  exact,        ///< the detokenized answer (first line, trimmed) equals an accepted answer
  normalized,   ///< equal after normalization (lower case, punctuation and a/an/the dropped, spaces folded)
  contains,     ///< the normalized answer contains a normalized accepted answer
  regex,        ///< an accepted answer is an RE2 regex that matches somewhere in the answer (needs RE2)
  first_word,   ///< B's first word, ASCII punctuation stripped from its ends, equals an accepted answer
  word_prefix,  ///< B's normalized answer begins with a normalized accepted answer, at a word boundary
};

/// @brief "token_exact", "exact", "normalized", "contains", "regex", "first_word" or "word_prefix".
[[nodiscard]] LATENTAUDIT_INLINE const char* task_scoring_name(task_scoring s) noexcept;

/// @brief The scoring named `name` (also "first-word", "word-prefix"), or nothing.
[[nodiscard]] LATENTAUDIT_INLINE std::optional<task_scoring> parse_task_scoring(
    std::string_view name) noexcept;

/// @brief SQuAD-style normalization of a text answer: lower case (ASCII), ASCII punctuation
/// removed, the articles a/an/the removed, whitespace runs folded to one space, trimmed.
[[nodiscard]] LATENTAUDIT_INLINE std::string normalize_answer(std::string_view text);

/// @brief One text-or-tokens field of a task line (`document` or `document_tokens`, ...).
struct task_text {
  std::optional<std::string> text;  ///< the text form, when the line gave text
  std::vector<token_id> tokens;     ///< the token form, when the line gave ids
  /// @brief Whether the field was given as text.
  [[nodiscard]] bool is_text() const noexcept { return text.has_value(); }
  /// @brief Whether the field is absent (neither text nor ids).
  [[nodiscard]] bool empty() const noexcept { return !text && tokens.empty(); }
};

/// @brief One query of a task: the query, its accepted answers (strings, or token-id lists) and
/// optional stale values and query-level covariates (merged after the task's).
struct task_query {
  task_text query;                      ///< `query` or `query_tokens`
  std::vector<task_text> answers;       ///< `answers` (at least one)
  task_text stale_answer;               ///< `stale_answer` / `stale_answer_tokens` (stale regime)
  std::vector<covariate> covariates;    ///< numeric query-level covariates
  std::vector<covariate_label> labels;  ///< label query-level covariates
};

/// @brief One task line as read.
struct task_entry {
  std::string id;                          ///< `id` (unique, non-empty)
  std::uint64_t line = 0;                  ///< 1-based line in the file (0 when built in memory)
  task_text document;                      ///< `document` / `document_tokens` (required)
  task_text text_document;                 ///< `text_document` / `text_document_tokens`: what text arms relay
  task_text prompt;                        ///< `prompt` / `prompt_tokens` (B's own context; may be absent)
  task_text instruction;                   ///< `instruction` / `instruction_tokens` (A's message)
  std::vector<task_query> queries;         ///< the top-level query/answers, or `queries`
  task_regime regime = task_regime::need;  ///< `regime` (default need)
  std::vector<covariate> covariates;       ///< numeric `covariates`
  std::vector<covariate_label> labels;     ///< label `covariates`
  std::vector<std::int64_t> budget_cuts;   ///< `budget_cuts` (token documents only)
  /// `continuation` / `continuation_tokens`: text whose teacher-forced log-likelihood after the
  /// query B's records carry (continuation_logprob, _tokens, _prob; every query of the task)
  task_text continuation;
  json_value extra;  ///< every other field (object), kept for the records
};

/// @brief The optional header line of a task file: {"latentaudit_tasks": 1, "scoring": ...,
/// "bos": id, "max_answer_tokens": n}.
struct task_file_header {
  std::optional<task_scoring> scoring;  ///< declared scoring
  std::optional<token_id> bos;          ///< B's no-relay context for token tasks (and text, over the codec's)
  std::int32_t max_answer_tokens = 0;   ///< tokens B generates (0 = the default, docs/tasks.md)
  bool present = false;                 ///< whether the file had a header line
};

/// @brief A read task file.
struct task_file {
  std::string path;               ///< the file's name as given (in every error)
  task_file_header header;        ///< the header (defaults when absent)
  std::vector<task_entry> tasks;  ///< the tasks in file order (item i = tasks[i])
  /// SHA-256 of the file's lines, each followed by "\n" (64 hex digits; "" when built in memory)
  std::string sha256;
};

/// @brief The reader's bounds.
struct task_file_limits {
  std::size_t max_line_bytes = std::size_t{1} << 22;  ///< one line (4 MiB)
  std::uint64_t max_tasks = 10'000'000;               ///< task lines
  std::size_t max_queries = 4096;                     ///< queries per task
  std::size_t max_answers = 256;                      ///< answers per query
  std::size_t max_covariates = 64;                    ///< covariates per task (task + query level)
  /// What every record of a task carries from its line (task_id, covariates and labels, the extra
  /// fields as task_fields), as JSON bytes: 256 KiB, so that a record always fits the journal's
  /// line limit (max_record_line_bytes, 1 MiB) and stays readable by `report` and `--resume`.
  std::size_t max_record_fields_bytes = std::size_t{1} << 18;
};

/// @brief Reads a task file line by line (never more than limits.max_line_bytes of a line in
/// memory); blank lines are skipped.
/// @throws corrupt_data "<path>:<line>:<field>: <message>" for bad JSON, an oversize line, a
///         missing or mistyped field, a duplicate id, a token id < 0; invalid_argument if the
///         path is not a readable regular file.
[[nodiscard]] LATENTAUDIT_INLINE task_file read_task_file(const std::filesystem::path& path,
                                                          const task_file_limits& limits = {});

/// @brief Reads a task file from a stream; `name` stands for the file in errors.
/// @throws corrupt_data as read_task_file.
[[nodiscard]] LATENTAUDIT_INLINE task_file read_task_stream(std::istream& in, const std::string& name,
                                                            const task_file_limits& limits = {});

/// @brief One task line (no newline), the fields in the order of docs/tasks.md.
[[nodiscard]] LATENTAUDIT_INLINE std::string task_entry_line(const task_entry& t);

/// @brief The header line (no newline).
[[nodiscard]] LATENTAUDIT_INLINE std::string task_header_line(const task_file_header& h);

/// @brief Writes `f` (the header when f.header.present, then one line per task) to `path`.
/// @throws invalid_argument naming the path if it cannot be written.
LATENTAUDIT_INLINE void write_task_file(const std::filesystem::path& path, const task_file& f);

/// @brief The organism item `it` as a task line: document_tokens, text_document_tokens (stale),
/// prompt_tokens, `queries` (every askable pair: query_tokens, answers, stale_answer_tokens,
/// covariate needed_position), regime, covariates, budget_cuts (1 + 2k), id "organism-<item>".
[[nodiscard]] LATENTAUDIT_INLINE task_entry organism_task_entry(const organism_item& it);

/// @brief The organism's first `items` items as a task file (header: token_exact scoring, bos).
[[nodiscard]] LATENTAUDIT_INLINE task_file organism_task_file(const organism_format& f,
                                                              const organism_task_options& o,
                                                              std::uint64_t items);

/// @brief What a task file is checked against: the engine's vocabulary and context.
struct task_engine_limits {
  std::int32_t vocab_size = 0;   ///< token ids must lie in [0, vocab_size)
  std::int64_t max_context = 0;  ///< B's longest context + answer (0 = unchecked)
};

/// @brief A task file checked against an engine and tokenized: the trial tasks of (item, seed).
class task_file_source {
 public:
  /// @brief Checks and tokenizes every task of `f` before any trial runs.
  /// @param scoring the `--scoring` option (wins over the header); default: the header's, else
  ///        token_exact when every answer is token ids, exact otherwise.
  /// Each task gets the covariate doc_tokens (A's document length in tokens) unless it names one.
  /// Text fields are tokenized as the text they form together (docs/tasks.md, "Text at field
  /// boundaries"): each target scored after a query (answers, stale_answer, continuation) follows
  /// lm-eval's target delimiter and split, except that a token the tokenizer merges across the
  /// query's end and the delimiter (a trailing-space BPE's `green▁`) goes to B's query, so the
  /// target starts at its own first token.
  /// @throws corrupt_data "<file>:<line>:<field>: <message>": a text field without a tokenizer
  ///         (empty codec), a token id outside [0, vocab_size), an empty document or query, a
  ///         document (with prompt, query and answer) longer than the context, a text answer under
  ///         token_exact without a tokenizer, a regex that does not compile (or is longer than
  ///         4096 bytes, or needs more than 1 MiB; or regex scoring in a build without RE2), budget_cuts on a
  ///         text document or decreasing or past the document.
  LATENTAUDIT_INLINE task_file_source(task_file f, text_codec codec, task_engine_limits limits,
                                      std::optional<task_scoring> scoring = std::nullopt);

  /// @brief Number of tasks (the design's items).
  [[nodiscard]] std::uint64_t items() const noexcept { return tasks_.size(); }

  /// @brief The scoring in force.
  [[nodiscard]] task_scoring scoring() const noexcept { return scoring_; }

  /// @brief Whether every task has budget units (text_budget arms apply).
  [[nodiscard]] LATENTAUDIT_INLINE bool has_budget_units() const noexcept;

  /// @brief Whether any task is given as text (its identity needs the tokenizer's).
  [[nodiscard]] bool has_text() const noexcept { return has_text_; }

  /// @brief The file read: its path, header and sha256 (its tasks are empty: their contents live
  /// in the prepared tasks, and each entry is freed once prepared, which halves the peak memory).
  [[nodiscard]] const task_file& file() const noexcept { return file_; }

  /// @brief The trial task of unit (item, seed) under master seed `master_seed`: the task's query
  /// task_query_index(master_seed, item, seed, queries).
  /// @throws invalid_argument if item >= items().
  [[nodiscard]] LATENTAUDIT_INLINE trial_task task(std::uint64_t item, std::uint64_t seed,
                                                   std::uint64_t master_seed) const;

 private:
  struct prepared_query {
    std::vector<token_id> query, stale_answer, continuation;
    std::vector<std::vector<token_id>> answers;                   // token form (empty under regex)
    std::vector<std::string> answer_texts;                        // text form (text scoring)
    std::vector<std::function<bool(std::string_view)>> patterns;  // compiled (regex scoring)
    std::vector<covariate> covariates;
    std::vector<covariate_label> labels;
  };
  struct prepared_task {
    trial_task shared;
    std::vector<prepared_query> queries;
  };
  task_file file_;
  text_codec codec_;
  task_scoring scoring_ = task_scoring::token_exact;
  bool has_text_ = false;
  std::vector<prepared_task> tasks_;
};

}  // namespace latentaudit

#ifndef LATENTAUDIT_COMPILED_LIB
#include "impl/task_file-inl.hpp"
#endif

#endif  // LATENTAUDIT_TRIAL_TASK_FILE_HPP

// SPDX-License-Identifier: MIT
// latentaudit: the conformance kit every engine must pass (the CPU one, the CUDA one, a user's).
// Each check opens its own sequences and closes them (scoped_seq: also when the engine throws).
//   split_prefill   prefill(A) then prefill(B) gives the logits of prefill(A + B)
//   relay           export A's cache, import it into a fresh sequence, prefill B: same logits
//   shift           prefill A at 0, shift by δ, decode: same logits as prefilling A at δ
//   erase           prefill A + B, erase B, prefill B again: same logits
//   masked_relay    a relay imported with every layer masked leaves B attending only to itself
//                   (skipped, with the reason, unless caps.partial_layer_import)
//   fingerprint     an import with a mismatched fingerprint is refused (incompatible_model)
//   gate            an import whose positions fail the consistency gate is refused (corrupt_data)
// The kit reads engine_capabilities: a check needing an ability the engine does not declare is
// reported as skipped (with the capability named), never as passed. Every call passes all of its
// arguments (engine/concepts.hpp), and every logits vector is checked against rows × vocab_size.
#ifndef LATENTAUDIT_ENGINE_CONFORMANCE_HPP
#define LATENTAUDIT_ENGINE_CONFORMANCE_HPP

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "concepts.hpp"

namespace latentaudit {

/// @brief Inputs of the conformance kit.
struct conformance_options {
  std::vector<token_id> a;  ///< agent A's tokens (the relayed document), non-empty
  std::vector<token_id> b;  ///< agent B's tokens, non-empty
  position_t delta = 5;     ///< shift distance
  double tolerance = 1e-4;  ///< max |Δ logit| allowed (f32 engines)
};

/// @brief The outcome of one check.
struct conformance_result {
  std::string check;     ///< check name
  bool passed = false;   ///< whether it passed (false when skipped)
  bool skipped = false;  ///< not run: the engine does not declare the capability it needs (detail says which)
  double max_abs_diff = 0;  ///< largest |Δ logit| (logit checks)
  std::string detail;       ///< what failed, if anything
};

namespace detail {
inline double max_abs_diff(const std::vector<float>& x, const std::vector<float>& y) {
  if (x.size() != y.size()) return std::numeric_limits<double>::infinity();
  double m = 0;
  for (std::size_t i = 0; i < x.size(); ++i) m = std::max(m, static_cast<double>(std::fabs(x[i] - y[i])));
  return m;
}
}  // namespace detail

/// @brief Runs every check on `engine`.
/// @throws invalid_argument if a or b is empty.
template <inference_engine B>
[[nodiscard]] std::vector<conformance_result> run_conformance(B& engine, const conformance_options& o) {
  constexpr std::string_view fn = "run_conformance";
  if (o.a.empty()) detail::throw_invalid(fn, "options.a", "must not be empty");
  if (o.b.empty()) detail::throw_invalid(fn, "options.b", "must not be empty");
  const auto na = static_cast<position_t>(o.a.size()), nb = static_cast<position_t>(o.b.size());
  const engine_info& info = engine.info();
  const auto n_layers = static_cast<std::int64_t>(info.fingerprint.n_layers);
  const auto vocab = static_cast<std::size_t>(info.vocab_size);
  if (vocab == 0) LATENTAUDIT_THROW(engine_error("run_conformance: the engine reports vocab_size 0"));
  std::vector<token_id> ab = o.a;
  ab.insert(ab.end(), o.b.begin(), o.b.end());
  const std::span<const token_id> A(o.a), Bt(o.b), AB(ab);
  const forward_options all{.all_logits = true}, last{};
  std::vector<conformance_result> out;
  // logits of a forward, checked against its declared shape (rows × vocab_size)
  auto logits = [&](forward_output f, std::int64_t new_tokens, bool every) {
    const std::int64_t rows = every ? new_tokens : 1;
    if (f.rows != rows || f.logits.size() != static_cast<std::size_t>(rows) * vocab)
      LATENTAUDIT_THROW(engine_error("run_conformance: the engine returned " + std::to_string(f.rows) +
                                     " rows and " + std::to_string(f.logits.size()) + " logits, expected " +
                                     std::to_string(rows) + " x vocab_size " + std::to_string(vocab)));
    return std::move(f.logits);
  };
  auto logit_check = [&](std::string name, const std::vector<float>& got, const std::vector<float>& want) {
    conformance_result r{.check = std::move(name)};
    r.max_abs_diff = detail::max_abs_diff(got, want);
    r.passed = r.max_abs_diff <= o.tolerance;
    if (!r.passed)
      r.detail = "max |delta logit| " + number_text(r.max_abs_diff) + " > " + number_text(o.tolerance);
    out.push_back(std::move(r));
  };
  // reference: A + B in one prefill (B's rows are the last nb rows)
  std::vector<float> want;
  {
    scoped_seq<B> ref(engine);
    auto every = logits(engine.prefill(ref.id(), AB, 0, all), na + nb, true);
    want.assign(every.end() - static_cast<std::ptrdiff_t>(static_cast<std::size_t>(nb) * vocab), every.end());
    ref.close();
  }
  {
    scoped_seq<B> s(engine);
    (void)logits(engine.prefill(s.id(), A, 0, last), na, false);
    logit_check("split_prefill", logits(engine.prefill(s.id(), Bt, na, all), nb, true), want);
    s.close();
  }
  kv_block relayed;
  {
    scoped_seq<B> sa(engine);
    (void)logits(engine.prefill(sa.id(), A, 0, last), na, false);
    relayed = engine.export_kv(sa.id(), index_range{0, na}, index_range{0, n_layers});
    sa.close();
    if (relayed.n_tokens() != na || static_cast<std::int64_t>(relayed.n_layers()) != n_layers)
      LATENTAUDIT_THROW(engine_error("run_conformance: export_kv returned " +
                                     std::to_string(relayed.n_tokens()) + " tokens of " +
                                     std::to_string(relayed.n_layers()) + " layers, expected " +
                                     std::to_string(na) + " of " + std::to_string(n_layers)));
    scoped_seq<B> sb(engine);
    engine.import_kv(sb.id(), relayed, import_options{});
    logit_check("relay", logits(engine.prefill(sb.id(), Bt, na, all), nb, true), want);
    sb.close();
  }
  {
    scoped_seq<B> s1(engine), s2(engine);
    (void)logits(engine.prefill(s1.id(), A, 0, last), na, false);
    engine.shift(s1.id(), 0, na, o.delta);
    (void)logits(engine.prefill(s2.id(), A, o.delta, last), na, false);
    const position_t p = na + o.delta;
    logit_check("shift", logits(engine.decode(s1.id(), o.b[0], p, last), 1, false),
                logits(engine.decode(s2.id(), o.b[0], p, last), 1, false));
    s1.close();
    s2.close();
  }
  {
    scoped_seq<B> s(engine);
    (void)logits(engine.prefill(s.id(), AB, 0, last), na + nb, false);
    engine.erase(s.id(), na, na + nb);
    const std::int64_t left = engine.n_tokens(s.id());
    logit_check("erase", logits(engine.prefill(s.id(), Bt, na, all), nb, true), want);
    if (left != na) {
      out.back().passed = false;
      out.back().detail = "erase left " + std::to_string(left) + " tokens, expected " + std::to_string(na);
    }
    s.close();
  }
  if (!info.caps.partial_layer_import) {
    out.push_back({.check = "masked_relay",
                   .skipped = true,
                   .detail = "the engine does not declare engine_capabilities::partial_layer_import "
                             "(no per-layer visibility mask)"});
  } else {
    scoped_seq<B> s(engine), alone(engine);
    engine.import_kv(
        s.id(), relayed,
        import_options{.layer_mask = std::vector<bool>(static_cast<std::size_t>(n_layers), false)});
    logit_check("masked_relay", logits(engine.prefill(s.id(), Bt, na, all), nb, true),
                logits(engine.prefill(alone.id(), Bt, na, all), nb, true));
    s.close();
    alone.close();
  }
  auto refusal = [&](std::string name, kv_block blk, bool want_incompatible) {
    conformance_result r{.check = std::move(name)};
    scoped_seq<B> s(engine);
    try {
      engine.import_kv(s.id(), blk, import_options{});
      r.detail = "the import was accepted";
    } catch (const incompatible_model&) {
      r.passed = want_incompatible;
      if (!r.passed) r.detail = "refused as incompatible_model, expected corrupt_data";
    } catch (const corrupt_data&) {
      r.passed = !want_incompatible;
      if (!r.passed) r.detail = "refused as corrupt_data, expected incompatible_model";
    }
    s.close();
    out.push_back(std::move(r));
  };
  {
    auto other = relayed;
    auto fp = other.fingerprint();
    fp.weights_hash ^= 0x9E3779B97F4A7C15ULL;
    other.set_fingerprint(fp);
    refusal("fingerprint", std::move(other), true);
  }
  {
    auto bad = relayed;
    if (bad.n_tokens() >= 2)
      bad.positions()[1] = bad.positions()[0];
    else
      bad.positions()[0] = -1;
    refusal("gate", std::move(bad), false);
  }
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ENGINE_CONFORMANCE_HPP

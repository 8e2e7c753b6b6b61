// SPDX-License-Identifier: MIT
// latentaudit: the conformance kit every backend must pass (the CPU one, the CUDA one, a user's).
// Each check opens its own sequences and closes them.
//   split_prefill   prefill(A) then prefill(B) gives the logits of prefill(A + B)
//   relay           export A's cache, import it into a fresh sequence, prefill B: same logits
//   shift           prefill A at 0, shift by δ, decode: same logits as prefilling A at δ
//   erase           prefill A + B, erase B, prefill B again: same logits
//   masked_relay    a relay imported with every layer masked leaves B attending only to itself
//   fingerprint     an import with a mismatched fingerprint is refused (incompatible_model)
//   gate            an import whose positions fail the consistency gate is refused (corrupt_data)
#ifndef LATENTAUDIT_BACKEND_CONFORMANCE_HPP
#define LATENTAUDIT_BACKEND_CONFORMANCE_HPP

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../core/detail/check.hpp"
#include "../core/error.hpp"
#include "concepts.hpp"

namespace latentaudit {

/// @brief Inputs of the conformance kit.
struct conformance_options {
  std::vector<token_id> a;  ///< agent A's tokens (the relayed document), non-empty
  std::vector<token_id> b;  ///< agent B's tokens, non-empty
  position_t delta = 5;     ///< shift distance
  double tolerance = 1e-4;  ///< max |Δ logit| allowed (f32 backends)
};

/// @brief The outcome of one check.
struct conformance_result {
  std::string check;        ///< check name
  bool passed = false;      ///< whether it passed
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

/// @brief Runs every check on `backend`.
/// @throws invalid_argument if a or b is empty.
template <inference_backend B>
[[nodiscard]] std::vector<conformance_result> run_conformance(B& backend, const conformance_options& o) {
  constexpr std::string_view fn = "run_conformance";
  if (o.a.empty()) detail::throw_invalid(fn, "options.a", "must not be empty");
  if (o.b.empty()) detail::throw_invalid(fn, "options.b", "must not be empty");
  const auto na = static_cast<position_t>(o.a.size()), nb = static_cast<position_t>(o.b.size());
  const auto n_layers = static_cast<std::int64_t>(backend.info().fingerprint.n_layers);
  std::vector<token_id> ab = o.a;
  ab.insert(ab.end(), o.b.begin(), o.b.end());
  std::vector<conformance_result> out;
  auto logit_check = [&](std::string name, const std::vector<float>& got, const std::vector<float>& want) {
    conformance_result r{.check = std::move(name)};
    r.max_abs_diff = detail::max_abs_diff(got, want);
    r.passed = r.max_abs_diff <= o.tolerance;
    if (!r.passed)
      r.detail = "max |delta logit| " + detail::number_text(r.max_abs_diff) + " > " +
                 detail::number_text(o.tolerance);
    out.push_back(std::move(r));
  };
  // reference: A + B in one prefill
  const seq_id ref = backend.open_seq();
  const auto want = backend.prefill(ref, ab, 0).logits;
  backend.close_seq(ref);
  {
    const seq_id s = backend.open_seq();
    (void)backend.prefill(s, o.a, 0);
    logit_check("split_prefill", backend.prefill(s, o.b, na).logits, want);
    backend.close_seq(s);
  }
  kv_block relayed;
  {
    const seq_id sa = backend.open_seq();
    (void)backend.prefill(sa, o.a, 0);
    relayed = backend.export_kv(sa, {0, na}, {0, n_layers});
    backend.close_seq(sa);
    const seq_id sb = backend.open_seq();
    backend.import_kv(sb, relayed, {});
    logit_check("relay", backend.prefill(sb, o.b, na).logits, want);
    backend.close_seq(sb);
  }
  {
    const seq_id s1 = backend.open_seq(), s2 = backend.open_seq();
    (void)backend.prefill(s1, o.a, 0);
    backend.shift(s1, 0, na, o.delta);
    (void)backend.prefill(s2, o.a, o.delta);
    logit_check("shift", backend.decode(s1, o.b[0], na + o.delta).logits,
                backend.decode(s2, o.b[0], na + o.delta).logits);
    backend.close_seq(s1);
    backend.close_seq(s2);
  }
  {
    const seq_id s = backend.open_seq();
    (void)backend.prefill(s, ab, 0);
    backend.erase(s, na, na + nb);
    const bool sized = backend.n_tokens(s) == na;
    logit_check("erase", backend.prefill(s, o.b, na).logits, want);
    if (!sized) {
      out.back().passed = false;
      out.back().detail =
          "erase left " + std::to_string(backend.n_tokens(s)) + " tokens, expected " + std::to_string(na);
    }
    backend.close_seq(s);
  }
  {
    const seq_id s = backend.open_seq(), alone = backend.open_seq();
    backend.import_kv(s, relayed,
                      {.layer_mask = std::vector<bool>(static_cast<std::size_t>(n_layers), false)});
    logit_check("masked_relay", backend.prefill(s, o.b, na).logits, backend.prefill(alone, o.b, na).logits);
    backend.close_seq(s);
    backend.close_seq(alone);
  }
  auto refusal = [&](std::string name, kv_block blk, bool want_incompatible) {
    conformance_result r{.check = std::move(name)};
    const seq_id s = backend.open_seq();
    try {
      backend.import_kv(s, blk, {});
      r.detail = "the import was accepted";
    } catch (const incompatible_model&) {
      r.passed = want_incompatible;
      if (!r.passed) r.detail = "refused as incompatible_model, expected corrupt_data";
    } catch (const corrupt_data&) {
      r.passed = !want_incompatible;
      if (!r.passed) r.detail = "refused as corrupt_data, expected incompatible_model";
    }
    backend.close_seq(s);
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

#endif  // LATENTAUDIT_BACKEND_CONFORMANCE_HPP

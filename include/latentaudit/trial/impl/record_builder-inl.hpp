// SPDX-License-Identifier: MIT
// latentaudit: definitions of trial/record_builder.hpp (header-only mode includes this file; compiled mode
// compiles it once in latentaudit::compiled)
#ifndef LATENTAUDIT_TRIAL_IMPL_RECORD_BUILDER_INL_HPP
#define LATENTAUDIT_TRIAL_IMPL_RECORD_BUILDER_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../record_builder.hpp"

namespace latentaudit {

[[nodiscard]] LATENTAUDIT_INLINE json_value
transfer_record_json(const transfer_record& tr, const std::optional<quantize_spec>& wire_quantization) {
  json_value j;
  j.set("policy", tr.policy);
  json_value layers = json_value::array_type{};
  for (auto l : tr.layers) layers.push_back(l);
  j.set("layers", std::move(layers));
  j.set("tokens_in", static_cast<double>(tr.tokens_in));
  j.set("tokens_kept", static_cast<double>(tr.tokens_kept));
  j.set("bytes_before", static_cast<double>(tr.bytes_before));
  j.set("bytes_after", static_cast<double>(tr.bytes_after));
  if (!tr.noise.empty()) {
    json_value nz = json_value::array_type{};
    for (const auto& n : tr.noise) {
      json_value o;
      o.set("sigma", n.sigma_requested);
      o.set("signal_rms", n.signal_rms);
      o.set("realized_snr_db",
            std::isfinite(n.realized_snr_db) ? json_value(n.realized_snr_db) : json_value(nullptr));
      nz.push_back(std::move(o));
    }
    j.set("noise", std::move(nz));
  }
  if (tr.placebo) j.set("placebo", std::string(placebo_kind_name(*tr.placebo)));
  if (wire_quantization)
    j.set("wire_quantization", std::string(quant_scheme_name(wire_quantization->scheme)));
  j.set("position_mode", std::string(position_mode_name(tr.mode)));
  return j;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_TRIAL_IMPL_RECORD_BUILDER_INL_HPP

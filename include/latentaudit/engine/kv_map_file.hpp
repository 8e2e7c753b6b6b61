// SPDX-License-Identifier: MIT
// latentaudit: the file of a cross-model cache map (kv/kv_map.hpp) — safetensors, one f32 weight
// [out, in] and bias [out] per target layer ("layer.<l>.weight", "layer.<l>.bias"), and in
// __metadata__ the format, both models' fingerprints, the ridge, the calibration's size and hash,
// and per target layer its source layers and calibration R² per KV head. One writer
// (write_kv_map), one reader (read_kv_map), which checks every field and every shape against the
// fingerprints before it reads a weight. docs/mapping.md.
#ifndef LATENTAUDIT_ENGINE_KV_MAP_FILE_HPP
#define LATENTAUDIT_ENGINE_KV_MAP_FILE_HPP

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "../core/hash.hpp"
#include "../core/json.hpp"
#include "../kv/kv_map.hpp"
#include "safetensors.hpp"

namespace latentaudit {

/// @brief The format tag of a map file's metadata ("format").
inline constexpr std::string_view kv_map_format = "latentaudit kv map 1";

namespace detail {

inline json_value fingerprint_json(const model_fingerprint& f) {
  json_value j = json_value::object();
  j.set("architecture", f.architecture);
  j.set("n_layers", static_cast<double>(f.n_layers));
  j.set("n_heads", static_cast<double>(f.n_heads));
  j.set("n_kv_heads", static_cast<double>(f.n_kv_heads));
  j.set("head_dim_k", static_cast<double>(f.head_dim_k));
  j.set("head_dim_v", static_cast<double>(f.head_dim_v));
  j.set("rope_pairing", std::string(rope_pairing_name(f.rope.pairing)));
  j.set("rope_theta", static_cast<double>(f.rope.theta));
  j.set("rope_rotary_dims", static_cast<double>(f.rope.rotary_dims));
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(f.weights_hash));
  j.set("weights_hash", std::string(hex));
  return j;
}

inline model_fingerprint fingerprint_of_json(const json_value& j, const std::string& where) {
  auto bad = [&](const std::string& field, const std::string& why) {
    LATENTAUDIT_THROW(corrupt_data(where + "." + field + " " + why));
  };
  if (!j.is_object()) LATENTAUDIT_THROW(corrupt_data(where + " must be an object"));
  auto int_of = [&](const char* k, double lo, double hi) {
    const json_value* v = j.find(k);
    if (v == nullptr || !v->is_number() || !(v->as_number() >= lo && v->as_number() <= hi) ||
        std::floor(v->as_number()) != v->as_number())
      bad(k, "must be an integer in [" + number_text(lo) + ", " + number_text(hi) + "]");
    return static_cast<std::int32_t>(v->as_number());
  };
  auto str_of = [&](const char* k) {
    const json_value* v = j.find(k);
    if (v == nullptr || !v->is_string()) bad(k, "must be a string");
    return v->as_string();
  };
  model_fingerprint f;
  f.architecture = str_of("architecture");
  f.n_layers = int_of("n_layers", 1, 4096);
  f.n_heads = int_of("n_heads", 1, 4096);
  f.n_kv_heads = int_of("n_kv_heads", 1, 4096);
  f.head_dim_k = int_of("head_dim_k", 1, 4096);
  f.head_dim_v = int_of("head_dim_v", 1, 4096);
  const std::string pairing = str_of("rope_pairing");
  if (pairing == "neox")
    f.rope.pairing = rope_pairing::neox;
  else if (pairing == "norm")
    f.rope.pairing = rope_pairing::norm;
  else if (pairing == "none")
    f.rope.pairing = rope_pairing::none;
  else
    bad("rope_pairing", "must be neox, norm or none");
  const json_value* theta = j.find("rope_theta");
  if (theta == nullptr || !theta->is_number() || !(theta->as_number() > 0) ||
      !std::isfinite(theta->as_number()))
    bad("rope_theta", "must be a positive number");
  f.rope.theta = static_cast<float>(theta->as_number());
  f.rope.rotary_dims = int_of("rope_rotary_dims", 0, f.head_dim_k);
  const std::string hex = str_of("weights_hash");
  if (hex.size() != 16 || hex.find_first_not_of("0123456789abcdef") != std::string::npos)
    bad("weights_hash", "must be 16 lower-case hex digits");
  f.weights_hash = std::stoull(hex, nullptr, 16);
  return f;
}

}  // namespace detail

/// @brief Writes `m` to `path` (safetensors, f32; see the file comment), `calibration_sha256`
/// naming the calibration data and `calibration_documents` the hash of each calibration document
/// (calibration_document_hash): the audit refuses a map calibrated on one of its items.
/// @throws invalid_argument for a malformed map or an unwritable path
inline void write_kv_map(const std::filesystem::path& path, const kv_map& m,
                         const std::string& calibration_sha256,
                         std::span<const std::uint64_t> calibration_documents) {
  check_kv_map("write_kv_map", m);
  std::string docs;
  docs.reserve(16 * calibration_documents.size());
  for (const std::uint64_t h : calibration_documents)
    for (int i = 15; i >= 0; --i) docs += "0123456789abcdef"[(h >> (4 * i)) & 0xF];
  std::vector<tensor_to_write> tensors;
  json_value layers = json_value::array();
  for (std::size_t l = 0; l < m.layers.size(); ++l) {
    const auto& lm = m.layers[l];
    tensors.push_back({.name = "layer." + std::to_string(l) + ".weight",
                       .type = dtype::f32,
                       .shape = {static_cast<std::int64_t>(lm.out), static_cast<std::int64_t>(lm.in)},
                       .values = lm.weight});
    tensors.push_back({.name = "layer." + std::to_string(l) + ".bias",
                       .type = dtype::f32,
                       .shape = {static_cast<std::int64_t>(lm.out)},
                       .values = lm.bias});
    json_value o = json_value::object();
    json_value src = json_value::array(), rk = json_value::array(), rv = json_value::array();
    for (const auto s : lm.source_layers) src.push_back(static_cast<double>(s));
    for (const double x : lm.r2_key) rk.push_back(x);
    for (const double x : lm.r2_value) rv.push_back(x);
    o.set("source_layers", std::move(src));
    o.set("r2_key", std::move(rk));
    o.set("r2_value", std::move(rv));
    layers.push_back(std::move(o));
  }
  const std::map<std::string, std::string> meta = {
      {"format", std::string(kv_map_format)},
      {"source", write_json(detail::fingerprint_json(m.source))},
      {"target", write_json(detail::fingerprint_json(m.target))},
      {"ridge", number_text(m.ridge)},
      {"calibration_sequences", std::to_string(m.calibration_sequences)},
      {"calibration_tokens", std::to_string(m.calibration_tokens)},
      {"calibration_sha256", calibration_sha256},
      {"calibration_documents", docs},
      {"layers", write_json(layers)}};
  write_safetensors(path, tensors, meta);
}

/// @brief A map file read back (read_kv_map): the map, its id and its calibration.
struct kv_map_file {
  kv_map map;                      ///< the map
  std::string id;                  ///< kv_map_id(map)
  std::string calibration_sha256;  ///< the calibration data's hash
  /// calibration_document_hash of each calibration document, ascending (the audit refuses a map
  /// whose calibration holds one of its items' documents)
  std::vector<std::uint64_t> calibration_documents;
};

/// @brief The one reader of a map file: the safetensors header (its own limits), then the
/// metadata — format, fingerprints, ridge, calibration, per layer its source layers and R² — each
/// checked, then every tensor's shape against the fingerprints before it is read, then the map
/// (check_kv_map: finite numbers).
/// @throws corrupt_data naming the file and the field; invalid_argument if it is not a file
[[nodiscard]] inline kv_map_file read_kv_map(const std::filesystem::path& path) {
  const auto st = safetensors_file::open(path);
  const std::string where = path.string() + ": __metadata__";
  const auto& md = st.metadata();
  auto field = [&](const char* k) -> const std::string& {
    const auto it = md.find(k);
    if (it == md.end()) LATENTAUDIT_THROW(corrupt_data(where + " has no '" + k + "'"));
    return it->second;
  };
  auto parsed = [&](const char* k) {
    try {
      return parse_json(field(k), {.max_depth = 8, .max_bytes = std::size_t{1} << 20});
    } catch (const error& e) {
      LATENTAUDIT_THROW(corrupt_data(where + "." + k + ": " + e.what()));
    }
  };
  auto count = [&](const char* k) {
    const std::string& v = field(k);
    if (v.empty() || v.size() > 15 || v.find_first_not_of("0123456789") != std::string::npos)
      LATENTAUDIT_THROW(corrupt_data(where + "." + k + " must be a whole number"));
    return static_cast<std::size_t>(std::stoull(v));
  };
  if (field("format") != kv_map_format)
    LATENTAUDIT_THROW(corrupt_data(where + ".format must be '" + std::string(kv_map_format) + "'"));
  kv_map_file f;
  auto& m = f.map;
  m.source = detail::fingerprint_of_json(parsed("source"), where + ".source");
  m.target = detail::fingerprint_of_json(parsed("target"), where + ".target");
  {
    const auto r = parsed("ridge");
    if (!r.is_number() || !(r.as_number() > 0) || !std::isfinite(r.as_number()))
      LATENTAUDIT_THROW(corrupt_data(where + ".ridge must be a positive number"));
    m.ridge = r.as_number();
  }
  m.calibration_sequences = count("calibration_sequences");
  m.calibration_tokens = count("calibration_tokens");
  f.calibration_sha256 = field("calibration_sha256");
  if (f.calibration_sha256.size() != 64 ||
      f.calibration_sha256.find_first_not_of("0123456789abcdef") != std::string::npos)
    LATENTAUDIT_THROW(corrupt_data(where + ".calibration_sha256 must be 64 lower-case hex digits"));
  {
    const std::string& docs = field("calibration_documents");
    if (docs.size() != 16 * m.calibration_sequences ||
        docs.find_first_not_of("0123456789abcdef") != std::string::npos)
      LATENTAUDIT_THROW(
          corrupt_data(where + ".calibration_documents must hold 16 hex digits per calibration sequence (" +
                       std::to_string(m.calibration_sequences) + ")"));
    f.calibration_documents.reserve(m.calibration_sequences);
    for (std::size_t i = 0; i < docs.size(); i += 16)
      f.calibration_documents.push_back(std::stoull(docs.substr(i, 16), nullptr, 16));
    std::sort(f.calibration_documents.begin(), f.calibration_documents.end());
  }
  const auto layers = parsed("layers");
  if (!layers.is_array() || layers.as_array().size() != static_cast<std::size_t>(m.target.n_layers))
    LATENTAUDIT_THROW(corrupt_data(where + ".layers must hold one entry per target layer"));
  const std::size_t sw = static_cast<std::size_t>(m.source.n_kv_heads) *
                         static_cast<std::size_t>(m.source.head_dim_k + m.source.head_dim_v);
  const std::size_t out = static_cast<std::size_t>(m.target.n_kv_heads) *
                          static_cast<std::size_t>(m.target.head_dim_k + m.target.head_dim_v);
  for (std::size_t l = 0; l < layers.as_array().size(); ++l) {
    const auto& e = layers.as_array()[l];
    const std::string at = where + ".layers[" + std::to_string(l) + "]";
    const json_value* src = e.is_object() ? e.find("source_layers") : nullptr;
    if (src == nullptr || !src->is_array() || src->as_array().empty() ||
        src->as_array().size() > static_cast<std::size_t>(m.source.n_layers))
      LATENTAUDIT_THROW(corrupt_data(at + ".source_layers must list 1 to " +
                                     std::to_string(m.source.n_layers) + " source layers"));
    kv_layer_map lm;
    for (const auto& s : src->as_array()) {
      if (!s.is_number() || !(s.as_number() >= 0 && s.as_number() < m.source.n_layers) ||
          std::floor(s.as_number()) != s.as_number() ||
          (!lm.source_layers.empty() && s.as_number() <= lm.source_layers.back()))
        LATENTAUDIT_THROW(corrupt_data(at + ".source_layers must be ascending source layers"));
      lm.source_layers.push_back(static_cast<layer_index>(s.as_number()));
    }
    for (const auto& [key, into] : {std::pair<const char*, std::vector<double>*>{"r2_key", &lm.r2_key},
                                    std::pair<const char*, std::vector<double>*>{"r2_value", &lm.r2_value}}) {
      const json_value* r = e.find(key);
      if (r == nullptr || !r->is_array() ||
          r->as_array().size() != static_cast<std::size_t>(m.target.n_kv_heads))
        LATENTAUDIT_THROW(corrupt_data(at + "." + key + " must hold one number per target KV head"));
      for (const auto& x : r->as_array()) {
        if (!x.is_number()) LATENTAUDIT_THROW(corrupt_data(at + "." + key + " must hold numbers"));
        into->push_back(x.as_number());
      }
    }
    lm.in = lm.source_layers.size() * sw;
    lm.out = out;
    const std::int64_t wshape[] = {static_cast<std::int64_t>(lm.out), static_cast<std::int64_t>(lm.in)};
    const std::int64_t bshape[] = {static_cast<std::int64_t>(lm.out)};
    lm.weight = st.read_f32("layer." + std::to_string(l) + ".weight", wshape);
    lm.bias = st.read_f32("layer." + std::to_string(l) + ".bias", bshape);
    m.layers.push_back(std::move(lm));
  }
  try {
    check_kv_map("read_kv_map", m);
  } catch (const invalid_argument& e) {
    LATENTAUDIT_THROW(corrupt_data(path.string() + ": " + e.what()));
  }
  f.id = kv_map_id(m);
  return f;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ENGINE_KV_MAP_FILE_HPP

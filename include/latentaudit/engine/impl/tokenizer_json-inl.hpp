// SPDX-License-Identifier: MIT
// latentaudit: definitions of engine/tokenizer_json.hpp (the tokenizer.json reader).
#ifndef LATENTAUDIT_ENGINE_IMPL_TOKENIZER_JSON_INL_HPP
#define LATENTAUDIT_ENGINE_IMPL_TOKENIZER_JSON_INL_HPP

#include "../../core/detail/internal_header_check.hpp"

#include "../tokenizer_json.hpp"

namespace latentaudit {

namespace detail {

[[noreturn]] inline void tokenizer_json_fail(const std::string& where, std::string_view field,
                                             const std::string& what) {
  LATENTAUDIT_THROW(corrupt_data("tokenizer.json '" + where + "': " + std::string(field) + ": " + what));
}

/// The member `key` of object o as a string ("" when absent or null); fails on another type.
inline std::string tokenizer_json_string(const json_value& o, std::string_view key, const std::string& where,
                                         std::string_view field) {
  const json_value* v = o.is_object() ? o.find(key) : nullptr;
  if (v == nullptr || v->is_null()) return {};
  if (!v->is_string()) tokenizer_json_fail(where, field, "must be a string");
  return v->as_string();
}

/// The member `key` of object o as a boolean (`fallback` when absent or null).
inline bool tokenizer_json_bool(const json_value& o, std::string_view key, bool fallback,
                                const std::string& where, std::string_view field) {
  const json_value* v = o.is_object() ? o.find(key) : nullptr;
  if (v == nullptr || v->is_null()) return fallback;
  if (!v->is_bool()) tokenizer_json_fail(where, field, "must be a boolean");
  return v->as_bool();
}

/// A token given as a string or as {"content": string} (tokenizer_config.json's bos_token, ...).
inline std::string tokenizer_config_token(const json_value* v, const std::string& where,
                                          std::string_view field) {
  if (v == nullptr || v->is_null()) return {};
  if (v->is_string()) return v->as_string();
  if (v->is_object()) return tokenizer_json_string(*v, "content", where, field);
  tokenizer_json_fail(where, field, "must be a string or an object with \"content\"");
}

}  // namespace detail

LATENTAUDIT_INLINE tokenizer_json tokenizer_json::load(const std::filesystem::path& path,
                                                       const tokenizer_json_limits& limits) {
  std::error_code ec;
  const bool dir = std::filesystem::is_directory(path, ec);
  const auto file = dir ? path / "tokenizer.json" : path;
  const auto size = require_regular_file(file, "tokenizer.json");
  if (size > limits.max_file_bytes)
    LATENTAUDIT_THROW(corrupt_data("tokenizer.json '" + file.string() + "' is " + std::to_string(size) +
                                   " bytes, above the limit of " + std::to_string(limits.max_file_bytes)));
  auto read = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) LATENTAUDIT_THROW(invalid_argument("cannot open '" + p.string() + "'"));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  std::optional<json_value> config;
  const auto cfg_path = file.parent_path() / "tokenizer_config.json";
  if (std::filesystem::is_regular_file(cfg_path, ec)) {
    if (std::filesystem::file_size(cfg_path, ec) > (std::uint64_t{1} << 20))
      LATENTAUDIT_THROW(
          corrupt_data("tokenizer_config.json '" + cfg_path.string() + "' is larger than 1 MiB"));
    try {
      config = parse_json(read(cfg_path), {.max_depth = 32, .max_bytes = std::size_t{1} << 20});
    } catch (const error& e) {
      LATENTAUDIT_THROW(corrupt_data("tokenizer_config.json '" + cfg_path.string() + "': " + e.what()));
    }
  }
  return parse(read(file), file.string(), config ? &*config : nullptr, limits);
}

LATENTAUDIT_INLINE tokenizer_json tokenizer_json::parse(std::string_view text, const std::string& where,
                                                        const json_value* config,
                                                        const tokenizer_json_limits& limits) {
  json_value root;
  try {
    root = parse_json(text, {.max_depth = 64, .max_bytes = static_cast<std::size_t>(limits.max_file_bytes)});
  } catch (const error& e) {
    LATENTAUDIT_THROW(corrupt_data("tokenizer.json '" + where + "': " + e.what()));
  }
  if (!root.is_object()) detail::tokenizer_json_fail(where, "the file", "must be a JSON object");
  tokenizer_json t;
  t.max_text_bytes_ = limits.max_text_bytes;
  const json_value* model = root.find("model");
  if (model == nullptr || !model->is_object())
    detail::tokenizer_json_fail(where, "model", "must be an object");
  t.read_model(*model, where, limits);
  t.read_normalization(root, where);
  t.read_added(root, where, limits);
  t.read_specials(root, config, where);
  return t;
}

LATENTAUDIT_INLINE void tokenizer_json::read_model(const json_value& model, const std::string& where,
                                                   const tokenizer_json_limits& limits) {
  const std::string type = detail::tokenizer_json_string(model, "type", where, "model.type");
  if (!type.empty() && type != "BPE")
    detail::tokenizer_json_fail(where, "model.type",
                                "'" + type + "' is not supported (this reader implements BPE only)");
  if (const json_value* d = model.find("dropout");
      d != nullptr && !d->is_null() && !(d->is_number() && d->as_number() == 0))
    detail::tokenizer_json_fail(where, "model.dropout", "BPE dropout is not supported");
  for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (!detail::tokenizer_json_string(model, k, where, std::string("model.") + k).empty())
      detail::tokenizer_json_fail(where, std::string("model.") + k, "is not supported");
  byte_fallback_ = detail::tokenizer_json_bool(model, "byte_fallback", false, where, "model.byte_fallback");
  fuse_unk_ = detail::tokenizer_json_bool(model, "fuse_unk", false, where, "model.fuse_unk");
  ignore_merges_ = detail::tokenizer_json_bool(model, "ignore_merges", false, where, "model.ignore_merges");
  const json_value* vocab = model.find("vocab");
  if (vocab == nullptr || !vocab->is_object())
    detail::tokenizer_json_fail(where, "model.vocab", "must be an object");
  if (vocab->size() > limits.max_tokens)
    detail::tokenizer_json_fail(
        where, "model.vocab",
        std::to_string(vocab->size()) + " entries, above the limit of " + std::to_string(limits.max_tokens));
  for (const auto& [piece, idv] : vocab->as_object()) {
    const std::string field = "model.vocab['" + piece.substr(0, 64) + "']";
    if (piece.empty() || piece.size() > limits.max_token_bytes)
      detail::tokenizer_json_fail(
          where, field, "a token's text must have 1 to " + std::to_string(limits.max_token_bytes) + " bytes");
    if (!idv.is_number() || idv.as_number() < 0 ||
        idv.as_number() >= static_cast<double>(limits.max_tokens) ||
        idv.as_number() != static_cast<double>(static_cast<std::int64_t>(idv.as_number())))
      detail::tokenizer_json_fail(
          where, field, "the id must be an integer in [0, " + std::to_string(limits.max_tokens) + ")");
    const auto id = static_cast<token_id>(idv.as_number());
    if (!vocab_.emplace(piece, id).second) detail::tokenizer_json_fail(where, field, "appears twice");
    if (pieces_.size() <= static_cast<std::size_t>(id)) pieces_.resize(static_cast<std::size_t>(id) + 1);
    if (!pieces_[static_cast<std::size_t>(id)].empty())
      detail::tokenizer_json_fail(where, field, "id " + std::to_string(id) + " is given to two tokens");
    pieces_[static_cast<std::size_t>(id)] = piece;
  }
  const json_value* merges = model.find("merges");
  if (merges != nullptr && !merges->is_null()) {
    if (!merges->is_array()) detail::tokenizer_json_fail(where, "model.merges", "must be an array");
    if (merges->size() > limits.max_merges)
      detail::tokenizer_json_fail(where, "model.merges",
                                  std::to_string(merges->size()) + " merges, above the limit of " +
                                      std::to_string(limits.max_merges));
    std::int32_t rank = 0;
    for (const auto& m : merges->as_array()) {
      const std::string field = "model.merges[" + std::to_string(rank) + "]";
      std::string a, b;
      if (m.is_string()) {
        const std::string& s = m.as_string();
        const auto sp = s.find(' ');
        if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
          detail::tokenizer_json_fail(where, field, "must be two tokens separated by one space");
        a = s.substr(0, sp);
        b = s.substr(sp + 1);
      } else if (m.is_array() && m.size() == 2 && m.at(0).is_string() && m.at(1).is_string()) {
        a = m.at(0).as_string();
        b = m.at(1).as_string();
      } else {
        detail::tokenizer_json_fail(where, field, "must be a string \"a b\" or an array of two strings");
      }
      const auto ia = vocab_.find(a), ib = vocab_.find(b), iab = vocab_.find(a + b);
      if (ia == vocab_.end() || ib == vocab_.end() || iab == vocab_.end())
        detail::tokenizer_json_fail(where, field,
                                    "'" + a + "', '" + b + "' or their concatenation is not in model.vocab");
      const auto key = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(ia->second)) << 32) |
                       static_cast<std::uint32_t>(ib->second);
      if (merges_.emplace(key, std::make_pair(rank, iab->second)).second)
        merge_list_.emplace_back(ia->second, ib->second);
      ++rank;
    }
  }
  const std::string unk = detail::tokenizer_json_string(model, "unk_token", where, "model.unk_token");
  if (!unk.empty()) {
    const auto u = vocab_.find(unk);
    if (u == vocab_.end())
      detail::tokenizer_json_fail(where, "model.unk_token", "'" + unk + "' is not in model.vocab");
    unk_ = u->second;
  }
  byte_ids_.fill(-1);
  for (const auto& [piece, id] : vocab_)
    if (const int b = detail::byte_piece_value(piece); b >= 0) byte_ids_[static_cast<std::size_t>(b)] = id;
}

LATENTAUDIT_INLINE void tokenizer_json::read_normalization(const json_value& root, const std::string& where) {
  auto one = [&](const json_value& n, const std::string& field) {
    if (!n.is_object()) detail::tokenizer_json_fail(where, field, "must be an object");
    const std::string type = detail::tokenizer_json_string(n, "type", where, field + ".type");
    if (type == "Prepend") {
      prepend_ = prepend_scheme::always;
      prepend_text_ = detail::tokenizer_json_string(n, "prepend", where, field + ".prepend");
      replace_.emplace_back(std::string{}, prepend_text_);  // an empty pattern marks the Prepend step
    } else if (type == "Replace") {
      const json_value* pat = n.find("pattern");
      const std::string from =
          pat != nullptr ? detail::tokenizer_json_string(*pat, "String", where, field + ".pattern.String")
                         : "";
      if (from.empty())
        detail::tokenizer_json_fail(where, field + ".pattern",
                                    "only a non-empty {\"String\": ...} pattern is supported (no Regex)");
      replace_.emplace_back(from, detail::tokenizer_json_string(n, "content", where, field + ".content"));
    } else {
      detail::tokenizer_json_fail(where, field + ".type",
                                  "'" + type + "' is not supported (Prepend, Replace or a Sequence of them)");
    }
  };
  if (const json_value* n = root.find("normalizer"); n != nullptr && !n->is_null()) {
    if (detail::tokenizer_json_string(*n, "type", where, "normalizer.type") == "Sequence") {
      const json_value* list = n->find("normalizers");
      if (list == nullptr || !list->is_array() || list->size() > 16)
        detail::tokenizer_json_fail(where, "normalizer.normalizers", "must be an array of at most 16");
      for (std::size_t i = 0; i < list->size(); ++i)
        one(list->at(i), "normalizer.normalizers[" + std::to_string(i) + "]");
    } else {
      one(*n, "normalizer");
    }
  }
  if (const json_value* p = root.find("pre_tokenizer"); p != nullptr && !p->is_null()) {
    const std::string type = detail::tokenizer_json_string(*p, "type", where, "pre_tokenizer.type");
    if (type != "Metaspace")
      detail::tokenizer_json_fail(
          where, "pre_tokenizer.type",
          "'" + type + "' is not supported (null or Metaspace; byte-level BPE is not)");
    metaspace_ = detail::tokenizer_json_string(*p, "replacement", where, "pre_tokenizer.replacement");
    if (metaspace_.empty())
      detail::tokenizer_json_fail(where, "pre_tokenizer.replacement", "must be a non-empty string");
    metaspace_split_ = detail::tokenizer_json_bool(*p, "split", true, where, "pre_tokenizer.split");
    std::string scheme =
        detail::tokenizer_json_string(*p, "prepend_scheme", where, "pre_tokenizer.prepend_scheme");
    if (scheme.empty())
      scheme =
          detail::tokenizer_json_bool(*p, "add_prefix_space", true, where, "pre_tokenizer.add_prefix_space")
              ? "always"
              : "never";
    if (scheme != "always" && scheme != "first" && scheme != "never")
      detail::tokenizer_json_fail(where, "pre_tokenizer.prepend_scheme", "must be always, first or never");
    if (prepend_ != prepend_scheme::never && scheme != "never")
      detail::tokenizer_json_fail(where, "pre_tokenizer",
                                  "a Metaspace prepend after a Prepend normalizer is not supported");
    if (scheme != "never") {
      prepend_ = scheme == "always" ? prepend_scheme::always : prepend_scheme::first;
      prepend_text_ = metaspace_;
    }
  }
  if (const json_value* d = root.find("decoder"); d != nullptr && d->is_object()) {
    auto byte_level = [&](const json_value& x) {
      return detail::tokenizer_json_string(x, "type", where, "decoder.type") == "ByteLevel";
    };
    bool bl = byte_level(*d);
    if (const json_value* list = d->find("decoders"); list != nullptr && list->is_array())
      for (const auto& x : list->as_array()) bl = bl || (x.is_object() && byte_level(x));
    if (bl)
      detail::tokenizer_json_fail(where, "decoder", "a ByteLevel decoder (byte-level BPE) is not supported");
  }
}

LATENTAUDIT_INLINE void tokenizer_json::read_added(const json_value& root, const std::string& where,
                                                   const tokenizer_json_limits& limits) {
  const json_value* list = root.find("added_tokens");
  if (list != nullptr && !list->is_null()) {
    if (!list->is_array() || list->size() > limits.max_tokens)
      detail::tokenizer_json_fail(where, "added_tokens",
                                  "must be an array of at most " + std::to_string(limits.max_tokens));
    for (std::size_t i = 0; i < list->size(); ++i) {
      const json_value& a = list->at(i);
      const std::string field = "added_tokens[" + std::to_string(i) + "]";
      if (!a.is_object()) detail::tokenizer_json_fail(where, field, "must be an object");
      added x;
      x.content = detail::tokenizer_json_string(a, "content", where, field + ".content");
      if (x.content.empty() || x.content.size() > limits.max_token_bytes)
        detail::tokenizer_json_fail(where, field + ".content",
                                    "must have 1 to " + std::to_string(limits.max_token_bytes) + " bytes");
      const json_value* id = a.find("id");
      if (id == nullptr || !id->is_number() || id->as_number() < 0 ||
          id->as_number() >= static_cast<double>(limits.max_tokens) ||
          id->as_number() != static_cast<double>(static_cast<std::int64_t>(id->as_number())))
        detail::tokenizer_json_fail(where, field + ".id",
                                    "must be an integer in [0, " + std::to_string(limits.max_tokens) + ")");
      x.id = static_cast<token_id>(id->as_number());
      x.special = detail::tokenizer_json_bool(a, "special", false, where, field + ".special");
      x.normalized = detail::tokenizer_json_bool(a, "normalized", !x.special, where, field + ".normalized");
      for (const char* k : {"lstrip", "rstrip", "single_word"})
        if (detail::tokenizer_json_bool(a, k, false, where, field + "." + k))
          detail::tokenizer_json_fail(where, field + "." + k, "true is not supported");
      if (const auto v = vocab_.find(x.content); v != vocab_.end() && v->second != x.id)
        detail::tokenizer_json_fail(where, field,
                                    "'" + x.content + "' has id " + std::to_string(v->second) +
                                        " in model.vocab, not " + std::to_string(x.id));
      if (pieces_.size() <= static_cast<std::size_t>(x.id))
        pieces_.resize(static_cast<std::size_t>(x.id) + 1);
      auto& slot = pieces_[static_cast<std::size_t>(x.id)];
      if (!slot.empty() && slot != x.content)
        detail::tokenizer_json_fail(where, field,
                                    "id " + std::to_string(x.id) + " is '" + slot + "' in model.vocab");
      slot = x.content;
      vocab_.emplace(x.content, x.id);
      added_.push_back(std::move(x));
    }
  }
  if (pieces_.size() > limits.max_tokens) detail::tokenizer_json_fail(where, "model.vocab", "too many ids");
  kinds_.assign(pieces_.size(), token_kind::normal);
  for (std::size_t i = 0; i < pieces_.size(); ++i) {
    if (pieces_[i].empty())
      detail::tokenizer_json_fail(where, "model.vocab",
                                  "id " + std::to_string(i) + " has no token (ids must be 0..n-1)");
    if (detail::byte_piece_value(pieces_[i]) >= 0) kinds_[i] = token_kind::byte;
  }
  for (const auto& a : added_)
    kinds_[static_cast<std::size_t>(a.id)] = a.special ? token_kind::control : token_kind::user_defined;
  if (unk_ >= 0) kinds_[static_cast<std::size_t>(unk_)] = token_kind::unknown;
  // leftmost-longest matching tries the longest first
  std::stable_sort(added_.begin(), added_.end(),
                   [](const added& a, const added& b) { return a.content.size() > b.content.size(); });
}

LATENTAUDIT_INLINE void tokenizer_json::read_specials(const json_value& root, const json_value* config,
                                                      const std::string& where) {
  auto id_of = [&](const std::string& s, std::string_view field) {
    const auto v = vocab_.find(s);
    if (v == vocab_.end()) detail::tokenizer_json_fail(where, field, "'" + s + "' is not a token");
    return v->second;
  };
  // post_processor TemplateProcessing: a special token before $A is the BOS it adds
  if (const json_value* pp = root.find("post_processor"); pp != nullptr && pp->is_object()) {
    if (const json_value* single = pp->find("single");
        single != nullptr && single->is_array() && single->size() > 0) {
      if (const json_value* st = single->at(0).is_object() ? single->at(0).find("SpecialToken") : nullptr) {
        bos_ =
            id_of(detail::tokenizer_json_string(*st, "id", where, "post_processor.single[0].SpecialToken.id"),
                  "post_processor.single[0].SpecialToken.id");
        add_bos_ = true;
      }
    }
  }
  if (config == nullptr || !config->is_object()) return;
  const std::string cw = "tokenizer_config.json";
  if (const auto b = detail::tokenizer_config_token(config->find("bos_token"), where, cw + " bos_token");
      !b.empty())
    bos_ = id_of(b, cw + " bos_token");
  if (const auto e = detail::tokenizer_config_token(config->find("eos_token"), where, cw + " eos_token");
      !e.empty())
    eos_ = id_of(e, cw + " eos_token");
  add_bos_ = detail::tokenizer_json_bool(*config, "add_bos_token", add_bos_, where, cw + " add_bos_token") &&
             bos_ >= 0;
}

LATENTAUDIT_INLINE std::string tokenizer_json::normalize(std::string_view s, bool first) const {
  std::string out(s);
  for (const auto& [from, to] : replace_) {
    if (from.empty()) {  // Prepend (HF: only to a non-empty text)
      if (!out.empty()) out.insert(0, to);
    } else {
      out = detail::replace_all(out, from, to);
    }
  }
  if (!metaspace_.empty()) {
    out = detail::replace_all(out, " ", metaspace_);
    const bool pre = prepend_ == prepend_scheme::always || (prepend_ == prepend_scheme::first && first);
    if (pre && !out.empty() && out.rfind(metaspace_, 0) != 0) out.insert(0, metaspace_);
  }
  return out;
}

LATENTAUDIT_INLINE std::vector<std::pair<std::string, token_id>> tokenizer_json::split_added(
    std::string_view s, const std::vector<const added*>& set) const {
  std::vector<std::pair<std::string, token_id>> out;
  std::size_t start = 0, i = 0;
  while (i < s.size()) {
    const added* hit = nullptr;
    for (const added* a : set)  // longest first (added_ is sorted so)
      if (s.compare(i, a->content.size(), a->content) == 0) {
        hit = a;
        break;
      }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    if (i > start) out.emplace_back(std::string(s.substr(start, i - start)), -1);
    out.emplace_back(std::string(), hit->id);
    i += hit->content.size();
    start = i;
  }
  if (start < s.size()) out.emplace_back(std::string(s.substr(start)), -1);
  return out;
}

LATENTAUDIT_INLINE void tokenizer_json::bpe_word(std::string_view w, std::vector<token_id>& out) const {
  if (w.empty()) return;
  if (ignore_merges_)
    if (const auto v = vocab_.find(std::string(w)); v != vocab_.end()) {
      out.push_back(v->second);
      return;
    }
  struct symbol {
    token_id id;
    std::int64_t prev, next;
    bool alive;
  };
  std::vector<symbol> sym;
  std::optional<token_id> pending_unk;  // as tokenizers' merge_word: an unk waits to be fused
  auto add = [&](token_id id) {
    const auto n = static_cast<std::int64_t>(sym.size());
    sym.push_back({id, n - 1, n + 1, true});
  };
  std::string ch;
  for (std::size_t i = 0; i < w.size();) {
    const std::size_t len = std::min(detail::utf8_length(static_cast<unsigned char>(w[i])), w.size() - i);
    ch.assign(w.substr(i, len));
    i += len;
    if (const auto v = vocab_.find(ch); v != vocab_.end()) {
      if (pending_unk) add(*pending_unk);
      pending_unk.reset();
      add(v->second);
      continue;
    }
    if (byte_fallback_ && std::all_of(ch.begin(), ch.end(), [&](char c) {
          return byte_ids_[static_cast<unsigned char>(c)] >= 0;
        })) {
      for (const char c : ch)
        add(byte_ids_[static_cast<unsigned char>(c)]);  // the pending unk waits (as tokenizers)
      continue;
    }
    if (unk_ < 0) continue;  // no unk token: the character is dropped
    if (pending_unk && !fuse_unk_) add(*pending_unk);
    pending_unk = unk_;
  }
  if (pending_unk) add(*pending_unk);
  if (sym.empty()) return;
  sym.back().next = -1;
  struct cand {
    std::int32_t rank;
    std::int64_t pos;
    token_id new_id;
    bool operator<(const cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  auto merge_of = [&](token_id a, token_id b) -> const std::pair<std::int32_t, token_id>* {
    const auto it = merges_.find((static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
                                 static_cast<std::uint32_t>(b));
    return it == merges_.end() ? nullptr : &it->second;
  };
  std::priority_queue<cand> q;
  for (std::size_t i = 0; i + 1 < sym.size(); ++i)
    if (const auto* m = merge_of(sym[i].id, sym[i + 1].id))
      q.push({m->first, static_cast<std::int64_t>(i), m->second});
  while (!q.empty()) {
    const cand top = q.top();
    q.pop();
    auto& left = sym[static_cast<std::size_t>(top.pos)];
    if (!left.alive || left.next < 0) continue;
    auto& right = sym[static_cast<std::size_t>(left.next)];
    const auto* m = merge_of(left.id, right.id);
    if (m == nullptr || m->second != top.new_id) continue;  // an expired entry
    left.id = top.new_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) sym[static_cast<std::size_t>(right.next)].prev = top.pos;
    if (left.prev >= 0)
      if (const auto* mp = merge_of(sym[static_cast<std::size_t>(left.prev)].id, left.id))
        q.push({mp->first, left.prev, mp->second});
    if (left.next >= 0)
      if (const auto* mn = merge_of(left.id, sym[static_cast<std::size_t>(left.next)].id))
        q.push({mn->first, top.pos, mn->second});
  }
  for (const auto& s : sym)
    if (s.alive) out.push_back(s.id);
}

LATENTAUDIT_INLINE void tokenizer_json::bpe_segment(std::string_view s, std::vector<token_id>& out) const {
  if (metaspace_.empty() || !metaspace_split_) {
    bpe_word(s, out);
    return;
  }
  std::size_t start = 0;  // Metaspace split: each word begins at a replacement (merged with the next)
  for (std::size_t i = s.find(metaspace_, 1); i != std::string_view::npos; i = s.find(metaspace_, i + 1)) {
    bpe_word(s.substr(start, i - start), out);
    start = i;
  }
  bpe_word(s.substr(start), out);
}

LATENTAUDIT_INLINE std::vector<token_id> tokenizer_json::encode(std::string_view text, bool special) const {
  if (text.size() > max_text_bytes_)
    detail::throw_invalid("tokenizer_json::encode", "text",
                          "has " + std::to_string(text.size()) + " bytes, above the limit of " +
                              std::to_string(max_text_bytes_));
  std::vector<const added*> raw, norm;
  for (const auto& a : added_)
    if (special || !a.special) (a.normalized ? norm : raw).push_back(&a);
  std::vector<token_id> out;
  if (special && add_bos_ && bos_ >= 0) out.push_back(bos_);
  bool first = true;
  for (const auto& [piece, id] : split_added(text, raw)) {
    if (id >= 0) {
      out.push_back(id);
      first = false;
      continue;
    }
    for (const auto& [sub, sid] : split_added(normalize(piece, first), norm)) {
      if (sid >= 0)
        out.push_back(sid);
      else
        bpe_segment(sub, out);
    }
    first = false;
  }
  return out;
}

LATENTAUDIT_INLINE std::string tokenizer_json::decode(std::span<const token_id> ids, bool special) const {
  const std::string space = !metaspace_.empty()     ? metaspace_
                            : prepend_text_.empty() ? std::string("\xE2\x96\x81")
                                                    : prepend_text_;
  std::string out;
  for (const token_id id : ids) {
    if (id < 0 || id >= vocab_size())
      detail::throw_invalid(
          "tokenizer_json::decode", "ids",
          "holds " + std::to_string(id) + ", outside [0, " + std::to_string(vocab_size()) + ")");
    const auto i = static_cast<std::size_t>(id);
    if (kinds_[i] == token_kind::control && !special) continue;
    if (kinds_[i] == token_kind::byte) {
      out.push_back(static_cast<char>(detail::byte_piece_value(pieces_[i])));
      continue;
    }
    out += detail::replace_all(pieces_[i], space, " ");
  }
  if (prepends_space() && !out.empty() && out[0] == ' ') out.erase(0, 1);
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ENGINE_IMPL_TOKENIZER_JSON_INL_HPP

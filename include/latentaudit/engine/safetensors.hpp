// SPDX-License-Identifier: MIT
// latentaudit: a bounded, validated reader (and a writer) of HF safetensors files.
//
// Format: u64 little-endian header length N, then N bytes of JSON
//   {"name": {"dtype": "F32", "shape": [d0, d1, ...], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value", ...}}
// then the data buffer; offsets are relative to its start. The reader checks, before allocating
// anything a header claims: N against the file size and a limit, the JSON against size and depth
// limits (duplicate keys refused), every dtype, every shape (non-negative, product × element size
// = end − begin without overflow), offsets inside the buffer, no overlaps and no holes (the
// format requires the buffer to be entirely indexed), and the metadata to be strings.
#ifndef LATENTAUDIT_ENGINE_SAFETENSORS_HPP
#define LATENTAUDIT_ENGINE_SAFETENSORS_HPP

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/file_check.hpp"
#include "../core/json.hpp"

namespace latentaudit {

/// @brief One tensor of a safetensors file.
struct tensor_info {
  std::string name;                 ///< HF tensor name, e.g. "model.layers.0.self_attn.q_proj.weight"
  dtype type = dtype::f32;          ///< element type
  std::vector<std::int64_t> shape;  ///< dimensions (row-major)
  std::uint64_t begin = 0;          ///< byte offset in the data buffer
  std::uint64_t end = 0;            ///< one past the last byte
  /// @brief Number of elements.
  [[nodiscard]] std::uint64_t elements() const noexcept {
    std::uint64_t n = 1;
    for (auto d : shape) n *= static_cast<std::uint64_t>(d);
    return n;
  }
};

/// @brief Limits of the reader.
struct safetensors_limits {
  std::uint64_t max_header_bytes = 100u << 20;  ///< the format's own limit is 100 MB
  std::size_t max_tensors = 1u << 20;           ///< tensors in one file
  std::size_t max_rank = 8;                     ///< dimensions of one tensor
};

/// @brief An opened safetensors file: validated header, tensors read on demand.
class safetensors_file {
 public:
  /// @brief Opens and validates `path` (reads only the header).
  /// @throws corrupt_data naming the file and the problem; invalid_argument if it cannot be opened.
  static safetensors_file open(const std::filesystem::path& path, const safetensors_limits& limits = {}) {
    safetensors_file f;
    f.path_ = path;
    {  // by type first: a directory, FIFO or device is never opened (a FIFO would block)
      std::error_code ec;
      const auto st = std::filesystem::status(path, ec);
      if (!ec && st.type() != std::filesystem::file_type::not_found &&
          st.type() != std::filesystem::file_type::regular)
        detail::throw_invalid("safetensors_file::open", "path",
                              "'" + path.string() + "' is " + file_kind_text(st) + ", not a regular file");
    }
    std::ifstream in(path, std::ios::binary);
    if (!in)
      detail::throw_invalid("safetensors_file::open", "path", "cannot be opened: '" + path.string() + "'");
    in.seekg(0, std::ios::end);
    const auto size = static_cast<std::uint64_t>(in.tellg());
    in.seekg(0);
    std::uint64_t n = 0;
    if (size < 8 || !in.read(reinterpret_cast<char*>(&n), 8))
      f.fail("file is shorter than the 8-byte header length");
    if (n > limits.max_header_bytes)
      f.fail("header length " + std::to_string(n) + " exceeds the limit " +
             std::to_string(limits.max_header_bytes));
    if (n > size - 8)
      f.fail("header length " + std::to_string(n) + " exceeds the file size " + std::to_string(size));
    std::string header(static_cast<std::size_t>(n), '\0');
    if (!in.read(header.data(), static_cast<std::streamsize>(n))) f.fail("cannot read the header");
    f.data_offset_ = 8 + n;
    f.parse_header(header, size - 8 - n, limits);
    return f;
  }

  /// @brief The tensors, in data order.
  [[nodiscard]] const std::vector<tensor_info>& tensors() const noexcept { return tensors_; }
  /// @brief The `__metadata__` entries.
  [[nodiscard]] const std::map<std::string, std::string>& metadata() const noexcept { return metadata_; }
  /// @brief The tensor named `name`, or nullptr.
  [[nodiscard]] const tensor_info* find(std::string_view name) const noexcept {
    for (const auto& t : tensors_)
      if (t.name == name) return &t;
    return nullptr;
  }

  /// @brief Reads tensor `name` as f32 (converting f16 / bf16), checking its shape.
  /// @throws corrupt_data if the tensor is missing or not a float type; shape_mismatch if its shape
  ///         differs from `expected_shape` (when non-empty).
  [[nodiscard]] std::vector<float> read_f32(std::string_view name,
                                            std::span<const std::int64_t> expected_shape = {}) const {
    const tensor_info& t = tensor_f32(name, expected_shape);
    std::vector<float> out(t.elements());
    read_into(t, out);
    return out;
  }

  /// @brief Tensor `name`, checked as read_f32 checks it (present, a float type, of `expected_shape`
  /// when non-empty), without reading it: what a caller checks before it allocates the tensor's storage.
  /// @throws as read_f32.
  [[nodiscard]] const tensor_info& tensor_f32(std::string_view name,
                                              std::span<const std::int64_t> expected_shape = {}) const {
    const tensor_info* t = find(name);
    if (t == nullptr) fail("missing tensor '" + std::string(name) + "'");
    if (!is_floating(t->type))
      fail("tensor '" + std::string(name) + "' has dtype " + std::string(dtype_name(t->type)) +
           ", expected F32, F16 or BF16");
    if (!expected_shape.empty() &&
        !std::equal(expected_shape.begin(), expected_shape.end(), t->shape.begin(), t->shape.end())) {
      std::string m = "safetensors: tensor '" + std::string(name) + "' in '" + path_.string() +
                      "' has shape " + shape_text(t->shape) + ", expected " +
                      shape_text(std::vector<std::int64_t>(expected_shape.begin(), expected_shape.end()));
      LATENTAUDIT_THROW(shape_mismatch(m));
    }
    return *t;
  }

  /// @brief Reads tensor `name` as f32 into `out` (the caller's storage, e.g. a matrix's, of exactly
  /// the tensor's element count; allocated after tensor_f32 accepted the tensor): read_f32 without
  /// its vector; an f32 tensor is read in place.
  /// @throws as read_f32; invalid_argument if `out` has another size than the tensor.
  void read_f32_into(std::string_view name, std::span<const std::int64_t> expected_shape,
                     std::span<float> out) const {
    const tensor_info& t = tensor_f32(name, expected_shape);
    detail::check_same_size("safetensors_file::read_f32_into", "out", out.size(), "the tensor's elements",
                            static_cast<std::size_t>(t.elements()));
    read_into(t, out);
  }

  /// @brief The file's path.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    LATENTAUDIT_THROW(corrupt_data("safetensors: '" + path_.string() + "': " + what));
  }
  // Tensor `t`'s values as f32 into `out` (t.elements() floats): an f32 tensor's bytes straight into
  // `out`, an f16 / bf16 one's through a buffer of its own size.
  void read_into(const tensor_info& t, std::span<float> out) const {
    std::ifstream in(path_, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(data_offset_ + t.begin));
    const auto bytes = static_cast<std::streamsize>(t.end - t.begin);
    auto read = [&](void* dst) {
      if (bytes != 0 && !in.read(static_cast<char*>(dst), bytes)) fail("cannot read tensor '" + t.name + "'");
    };
    if (t.type == dtype::f32) {  // the stored bytes are the values (little-endian, as decode_to_float)
      read(out.data());
      return;
    }
    std::vector<std::byte> raw(static_cast<std::size_t>(bytes));
    read(raw.data());
    decode_to_float(t.type, raw, out);
  }
  static std::string shape_text(const std::vector<std::int64_t>& s) {
    std::string out = "[";
    for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
  }
  static std::optional<dtype> parse_st_dtype(std::string_view s) {
    if (s == "F32") return dtype::f32;
    if (s == "F16") return dtype::f16;
    if (s == "BF16") return dtype::bf16;
    if (s == "I8") return dtype::i8;
    if (s == "U8") return dtype::u8;
    if (s == "I32") return dtype::i32;
    return std::nullopt;
  }
  void parse_header(const std::string& text, std::uint64_t buffer_size, const safetensors_limits& limits) {
    json_value h;
    try {
      h = parse_json(text, {.max_depth = 4, .max_bytes = static_cast<std::size_t>(limits.max_header_bytes)});
    } catch (const corrupt_data& e) {
      fail(std::string("malformed header JSON: ") + e.what());
    }
    if (!h.is_object()) fail("header is not a JSON object");
    if (h.as_object().size() > limits.max_tensors + 1)
      fail("more tensors than the limit " + std::to_string(limits.max_tensors));
    for (const auto& [name, v] : h.as_object()) {
      if (name == "__metadata__") {
        if (!v.is_object()) fail("__metadata__ is not an object");
        for (const auto& [k, s] : v.as_object()) {
          if (!s.is_string()) fail("__metadata__ entry '" + k + "' is not a string");
          metadata_[k] = s.as_string();
        }
        continue;
      }
      if (!v.is_object()) fail("entry '" + name + "' is not an object");
      tensor_info t;
      t.name = name;
      const json_value* dt = v.find("dtype");
      const json_value* shape = v.find("shape");
      const json_value* off = v.find("data_offsets");
      if (dt == nullptr || shape == nullptr || off == nullptr || v.as_object().size() != 3)
        fail("entry '" + name + "' must have exactly dtype, shape and data_offsets");
      if (!dt->is_string()) fail("dtype of '" + name + "' is not a string");
      const auto type = parse_st_dtype(dt->as_string());
      if (!type) fail("tensor '" + name + "' has unsupported dtype '" + dt->as_string() + "'");
      t.type = *type;
      if (!shape->is_array() || shape->as_array().size() > limits.max_rank)
        fail("shape of '" + name + "' is not an array of at most " + std::to_string(limits.max_rank) +
             " dimensions");
      std::uint64_t elements = 1;
      bool overflow = false;
      for (const auto& d : shape->as_array()) {
        if (!d.is_number() || !(d.as_number() >= 0) ||
            d.as_number() != static_cast<double>(static_cast<std::int64_t>(d.as_number())) ||
            d.as_number() > 9.0e15)
          fail("shape of '" + name + "' has a dimension that is not a non-negative integer");
        const auto n = static_cast<std::uint64_t>(d.as_number());
        t.shape.push_back(static_cast<std::int64_t>(n));
        if (n != 0 && elements > UINT64_MAX / n) overflow = true;
        elements *= n;
      }
      if (!off->is_array() || off->as_array().size() != 2)
        fail("data_offsets of '" + name + "' is not a pair");
      for (const auto& o : off->as_array())
        if (!o.is_number() || !(o.as_number() >= 0) ||
            o.as_number() != static_cast<double>(static_cast<std::uint64_t>(o.as_number())))
          fail("data_offsets of '" + name + "' are not non-negative integers");
      t.begin = static_cast<std::uint64_t>(off->as_array()[0].as_number());
      t.end = static_cast<std::uint64_t>(off->as_array()[1].as_number());
      if (t.end < t.begin || t.end > buffer_size)
        fail("data_offsets of '" + name + "' [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
             ") lie outside the data buffer of " + std::to_string(buffer_size) + " bytes");
      if (overflow || elements > UINT64_MAX / dtype_size(t.type) ||
          elements * dtype_size(t.type) != t.end - t.begin)
        fail("tensor '" + name + "' has shape " + shape_text(t.shape) + " and dtype " +
             std::string(dtype_name(t.type)) + " but occupies " + std::to_string(t.end - t.begin) + " bytes");
      tensors_.push_back(std::move(t));
    }
    std::sort(tensors_.begin(), tensors_.end(), [](const auto& a, const auto& b) {
      return a.begin < b.begin || (a.begin == b.begin && a.end < b.end);
    });
    std::uint64_t at = 0;
    for (const auto& t : tensors_) {
      if (t.begin < at) fail("tensor '" + t.name + "' overlaps the previous tensor");
      if (t.begin > at) fail("the data buffer has a hole before tensor '" + t.name + "'");
      at = t.end;
    }
    if (at != buffer_size)
      fail("the data buffer has " + std::to_string(buffer_size - at) + " bytes no tensor uses");
  }

  std::filesystem::path path_;
  std::uint64_t data_offset_ = 0;
  std::vector<tensor_info> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// @brief A tensor to write: name, dtype, shape and f32 values (converted to the dtype).
struct tensor_to_write {
  std::string name;                 ///< tensor name
  dtype type = dtype::f32;          ///< stored element type (f32, f16, bf16)
  std::vector<std::int64_t> shape;  ///< dimensions
  std::vector<float> values;        ///< row-major values (product of shape)
};

/// @brief Writes a safetensors file (tensors in the given order, header padded with spaces to a
/// multiple of 8 bytes as HF does).
/// @throws shape_mismatch if values disagree with a shape; invalid_argument on a bad dtype or an
///         unwritable path.
inline void write_safetensors(const std::filesystem::path& path, const std::vector<tensor_to_write>& tensors,
                              const std::map<std::string, std::string>& metadata = {}) {
  constexpr std::string_view fn = "write_safetensors";
  json_value h = json_value::object();
  if (!metadata.empty()) {
    json_value m = json_value::object();
    for (const auto& [k, v] : metadata) m.set(k, v);
    h.set("__metadata__", std::move(m));
  }
  std::uint64_t at = 0;
  for (const auto& t : tensors) {
    if (!is_floating(t.type)) detail::throw_invalid(fn, "tensors.type", "must be f32, f16 or bf16");
    std::uint64_t n = 1;
    for (auto d : t.shape) {
      if (d < 0) detail::throw_invalid(fn, "tensors.shape", "must be non-negative");
      n *= static_cast<std::uint64_t>(d);
    }
    detail::check_same_size(fn, "values of '" + t.name + "'", t.values.size(), "product of its shape", n);
    json_value e = json_value::object();
    e.set("dtype", t.type == dtype::f32 ? "F32" : t.type == dtype::f16 ? "F16" : "BF16");
    json_value s = json_value::array();
    for (auto d : t.shape) s.push_back(d);
    e.set("shape", std::move(s));
    json_value o = json_value::array();
    o.push_back(at);
    at += n * dtype_size(t.type);
    o.push_back(at);
    e.set("data_offsets", std::move(o));
    h.set(t.name, std::move(e));
  }
  std::string header = write_json(h);
  while (header.size() % 8 != 0) header.push_back(' ');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) detail::throw_invalid(fn, "path", "cannot be written: '" + path.string() + "'");
  const std::uint64_t n = header.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  for (const auto& t : tensors) {
    std::vector<std::byte> bytes(t.values.size() * dtype_size(t.type));
    encode_from_float(t.type, t.values, bytes);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  if (!out) detail::throw_invalid(fn, "path", "writing failed: '" + path.string() + "'");
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_ENGINE_SAFETENSORS_HPP

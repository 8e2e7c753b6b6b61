// SPDX-License-Identifier: MIT
// latentaudit: a bounded, validated reader and a streaming writer of GGUF files, llama.cpp's model
// format (versions 2 and 3; llama.cpp v0.5.0 writes 3). docs/gguf.md describes the format and the
// Llama export built on it (tools/cli/cmd_gguf.cpp).
//
// Layout (little-endian):
//   "GGUF", u32 version, i64 n_tensors, i64 n_kv,
//   n_kv    × { string key, u32 value type, value },
//   n_tensors × { string name, u32 n_dims, i64 ne[n_dims], u32 ggml type, u64 offset },
//   zero padding to the alignment (u32 key "general.alignment", a power of two, default 32), then
//   the data section. A string is u64 length + bytes (no terminator); a value is a scalar, a string
//   or an array (u32 element type, u64 count, the elements; arrays do not nest). ne[0] is the
//   innermost (contiguous) dimension: an HF weight of shape [out, in] has ne = {in, out} and the
//   same bytes. Each tensor's offset is relative to the data section and a multiple of the alignment.
//
// Like engine/safetensors.hpp, the reader checks every count and length before allocating what it
// claims: the tensor and key counts against limits and against the bytes left in the file (each
// entry needs a minimum number of bytes), every string length and array count likewise, value and
// element types, unique non-empty keys and tensor names (names below 64 bytes, as ggml requires),
// 1 to 4 dimensions, non-negative dimensions whose product and byte size do not overflow, the ggml
// type (its block size must divide ne[0]), aligned offsets, every tensor inside the file and no two
// overlapping. Errors are corrupt_data naming the file and the problem.
#ifndef LATENTAUDIT_ENGINE_GGUF_HPP
#define LATENTAUDIT_ENGINE_GGUF_HPP

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/detail/check.hpp"
#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/file_check.hpp"

namespace latentaudit {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader and writer assume a little-endian host");

/// @brief Type of a GGUF metadata value (or of an array's elements); the numbers are the format's.
enum class gguf_value_type : std::uint32_t {
  u8 = 0,       ///< uint8
  i8 = 1,       ///< int8
  u16 = 2,      ///< uint16
  i16 = 3,      ///< int16
  u32 = 4,      ///< uint32
  i32 = 5,      ///< int32
  f32 = 6,      ///< float32
  boolean = 7,  ///< bool (one byte, 0 or 1)
  string = 8,   ///< u64 length + UTF-8 bytes
  array = 9,    ///< u32 element type + u64 count + elements (never an element type)
  u64 = 10,     ///< uint64
  i64 = 11,     ///< int64
  f64 = 12,     ///< float64
};

/// @brief Name of a value type ("u32", "string", ...).
[[nodiscard]] constexpr std::string_view gguf_value_type_name(gguf_value_type t) noexcept {
  constexpr std::array<std::string_view, 13> names{"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                                   "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<std::uint32_t>(t);
  return i < names.size() ? names[i] : std::string_view("invalid");
}

/// @brief Bytes of one element of a fixed-size value type (0 for string and array).
[[nodiscard]] constexpr std::size_t gguf_value_type_size(gguf_value_type t) noexcept {
  switch (t) {
    case gguf_value_type::u8:
    case gguf_value_type::i8:
    case gguf_value_type::boolean:
      return 1;
    case gguf_value_type::u16:
    case gguf_value_type::i16:
      return 2;
    case gguf_value_type::u32:
    case gguf_value_type::i32:
    case gguf_value_type::f32:
      return 4;
    case gguf_value_type::u64:
    case gguf_value_type::i64:
    case gguf_value_type::f64:
      return 8;
    default:
      return 0;
  }
}

/// @brief A GGUF metadata value: a scalar, a string, or an array of one element type.
class gguf_value {
 public:
  gguf_value() = default;
  /// @brief Scalars, typed by their C++ type (pass exactly typed values: `std::uint32_t{4}`).
  static gguf_value of(std::uint8_t v) { return scalar(gguf_value_type::u8, v); }
  /// @copydoc of(std::uint8_t)
  static gguf_value of(std::int8_t v) { return scalar(gguf_value_type::i8, v); }
  /// @copydoc of(std::uint8_t)
  static gguf_value of(std::uint16_t v) { return scalar(gguf_value_type::u16, v); }
  /// @copydoc of(std::uint8_t)
  static gguf_value of(std::int16_t v) { return scalar(gguf_value_type::i16, v); }
  /// @copydoc of(std::uint8_t)
  static gguf_value of(std::uint32_t v) { return scalar(gguf_value_type::u32, v); }
  /// @copydoc of(std::uint8_t)
  static gguf_value of(std::int32_t v) { return scalar(gguf_value_type::i32, v); }
  /// @copydoc of(std::uint8_t)
  static gguf_value of(std::uint64_t v) { return scalar(gguf_value_type::u64, v); }
  /// @copydoc of(std::uint8_t)
  static gguf_value of(std::int64_t v) { return scalar(gguf_value_type::i64, v); }
  /// @copydoc of(std::uint8_t)
  static gguf_value of(float v) { return scalar(gguf_value_type::f32, v); }
  /// @copydoc of(std::uint8_t)
  static gguf_value of(double v) { return scalar(gguf_value_type::f64, v); }
  /// @copydoc of(std::uint8_t)
  static gguf_value of(bool v) {
    return scalar(gguf_value_type::boolean, static_cast<std::uint8_t>(v ? 1 : 0));
  }
  /// @brief A string scalar.
  static gguf_value of(std::string v) {
    gguf_value r;
    r.type_ = gguf_value_type::string;
    r.strings_.push_back(std::move(v));
    return r;
  }
  /// @copydoc of(std::string)
  static gguf_value of(const char* v) { return of(std::string(v)); }
  /// @brief An array of numbers of element type `T` (one of the scalar types above but bool).
  template <class T>
  static gguf_value array(std::span<const T> values) {
    gguf_value r;
    r.type_ = type_of<T>();
    r.array_ = true;
    r.count_ = values.size();
    r.raw_.resize(values.size() * sizeof(T));
    if (!values.empty()) std::memcpy(r.raw_.data(), values.data(), r.raw_.size());
    return r;
  }
  /// @brief An array of strings.
  static gguf_value array(std::vector<std::string> values) {
    gguf_value r;
    r.type_ = gguf_value_type::string;
    r.array_ = true;
    r.count_ = values.size();
    r.strings_ = std::move(values);
    return r;
  }

  /// @brief The scalar type, or the element type of an array.
  [[nodiscard]] gguf_value_type type() const noexcept { return type_; }
  /// @brief Whether this is an array.
  [[nodiscard]] bool is_array() const noexcept { return array_; }
  /// @brief Number of elements (1 for a scalar).
  [[nodiscard]] std::size_t size() const noexcept { return array_ ? count_ : 1; }
  /// @brief Element `i` as an unsigned integer (any integer type holding a non-negative value).
  /// @throws invalid_argument on another type, a negative value or `i` out of range.
  [[nodiscard]] std::uint64_t as_uint(std::size_t i = 0) const {
    const auto v = integer(i, "as_uint");
    if (signed_type() && static_cast<std::int64_t>(v) < 0)
      detail::throw_invalid("gguf_value::as_uint", "value", "is negative");
    return v;
  }
  /// @brief Element `i` as a signed integer (any integer type within int64's range).
  /// @throws invalid_argument on another type, an out-of-range value or `i` out of range.
  [[nodiscard]] std::int64_t as_int(std::size_t i = 0) const {
    const auto v = integer(i, "as_int");
    if (!signed_type() && v > static_cast<std::uint64_t>(INT64_MAX))
      detail::throw_invalid("gguf_value::as_int", "value", "exceeds int64");
    return static_cast<std::int64_t>(v);
  }
  /// @brief Element `i` of an f32 or f64 value.
  /// @throws invalid_argument on another type or `i` out of range.
  [[nodiscard]] double as_float(std::size_t i = 0) const {
    check_index(i, "as_float");
    if (type_ == gguf_value_type::f32) return load<float>(i);
    if (type_ == gguf_value_type::f64) return load<double>(i);
    wrong_type("as_float", "f32 or f64");
  }
  /// @brief Element `i` of a bool value.
  /// @throws invalid_argument on another type or `i` out of range.
  [[nodiscard]] bool as_bool(std::size_t i = 0) const {
    check_index(i, "as_bool");
    if (type_ != gguf_value_type::boolean) wrong_type("as_bool", "bool");
    return load<std::uint8_t>(i) != 0;
  }
  /// @brief Element `i` of a string value.
  /// @throws invalid_argument on another type or `i` out of range.
  [[nodiscard]] const std::string& as_string(std::size_t i = 0) const {
    check_index(i, "as_string");
    if (type_ != gguf_value_type::string) wrong_type("as_string", "string");
    return strings_[i];
  }
  /// @brief The elements of a string value (one for a scalar).
  /// @throws invalid_argument on another type.
  [[nodiscard]] const std::vector<std::string>& strings() const {
    if (type_ != gguf_value_type::string) wrong_type("strings", "string");
    return strings_;
  }
  /// @brief The little-endian bytes of a numeric or bool value (size() × element size).
  [[nodiscard]] std::span<const std::byte> raw() const noexcept { return raw_; }

  /// @brief Equality of type, shape and content.
  friend bool operator==(const gguf_value&, const gguf_value&) = default;

 private:
  friend class gguf_file;
  friend class gguf_writer;
  template <class T>
  static constexpr gguf_value_type type_of() {
    if constexpr (std::is_same_v<T, std::uint8_t>)
      return gguf_value_type::u8;
    else if constexpr (std::is_same_v<T, std::int8_t>)
      return gguf_value_type::i8;
    else if constexpr (std::is_same_v<T, std::uint16_t>)
      return gguf_value_type::u16;
    else if constexpr (std::is_same_v<T, std::int16_t>)
      return gguf_value_type::i16;
    else if constexpr (std::is_same_v<T, std::uint32_t>)
      return gguf_value_type::u32;
    else if constexpr (std::is_same_v<T, std::int32_t>)
      return gguf_value_type::i32;
    else if constexpr (std::is_same_v<T, std::uint64_t>)
      return gguf_value_type::u64;
    else if constexpr (std::is_same_v<T, std::int64_t>)
      return gguf_value_type::i64;
    else if constexpr (std::is_same_v<T, float>)
      return gguf_value_type::f32;
    else if constexpr (std::is_same_v<T, double>)
      return gguf_value_type::f64;
    else
      static_assert(sizeof(T) == 0, "gguf_value::array: unsupported element type");
  }
  template <class T>
  static gguf_value scalar(gguf_value_type t, T v) {
    gguf_value r;
    r.type_ = t;
    r.raw_.resize(sizeof(T));
    std::memcpy(r.raw_.data(), &v, sizeof(T));
    return r;
  }
  template <class T>
  [[nodiscard]] T load(std::size_t i) const {
    T v;
    std::memcpy(&v, raw_.data() + i * sizeof(T), sizeof(T));
    return v;
  }
  [[nodiscard]] bool signed_type() const noexcept {
    return type_ == gguf_value_type::i8 || type_ == gguf_value_type::i16 || type_ == gguf_value_type::i32 ||
           type_ == gguf_value_type::i64;
  }
  void check_index(std::size_t i, std::string_view fn) const {
    if (i >= size())
      detail::throw_invalid("gguf_value::" + std::string(fn), "i",
                            std::to_string(i) + " is out of range (" + std::to_string(size()) + " elements)");
  }
  [[noreturn]] void wrong_type(std::string_view fn, std::string_view expected) const {
    detail::throw_invalid(
        "gguf_value::" + std::string(fn), "value",
        "has type " + std::string(gguf_value_type_name(type_)) + ", expected " + std::string(expected));
  }
  // raw bits of an integer element, sign-extended for signed types
  [[nodiscard]] std::uint64_t integer(std::size_t i, std::string_view fn) const {
    check_index(i, fn);
    switch (type_) {
      case gguf_value_type::u8:
        return load<std::uint8_t>(i);
      case gguf_value_type::i8:
        return static_cast<std::uint64_t>(static_cast<std::int64_t>(load<std::int8_t>(i)));
      case gguf_value_type::u16:
        return load<std::uint16_t>(i);
      case gguf_value_type::i16:
        return static_cast<std::uint64_t>(static_cast<std::int64_t>(load<std::int16_t>(i)));
      case gguf_value_type::u32:
        return load<std::uint32_t>(i);
      case gguf_value_type::i32:
        return static_cast<std::uint64_t>(static_cast<std::int64_t>(load<std::int32_t>(i)));
      case gguf_value_type::u64:
        return load<std::uint64_t>(i);
      case gguf_value_type::i64:
        return static_cast<std::uint64_t>(load<std::int64_t>(i));
      default:
        wrong_type(fn, "an integer type");
    }
  }

  gguf_value_type type_ = gguf_value_type::u8;
  bool array_ = false;
  std::size_t count_ = 0;             // elements of an array
  std::vector<std::byte> raw_;        // numeric and bool elements
  std::vector<std::string> strings_;  // string elements
};

/// @brief Block size and bytes per block of a ggml tensor type (llama.cpp v0.5.0's table).
struct ggml_type_layout {
  std::string_view name;    ///< ggml_type_name(), e.g. "f32", "q4_K"
  std::uint32_t block = 0;  ///< elements per block (0: removed or unknown type)
  std::uint32_t bytes = 0;  ///< bytes per block
};

/// @brief Layout of ggml type `id`, or nullopt for ids that are unknown, deprecated or removed.
[[nodiscard]] inline std::optional<ggml_type_layout> ggml_type_layout_of(std::uint32_t id) noexcept {
  // ggml_blck_size / ggml_type_size of every ggml_type of llama.cpp v0.5.0 (GGML_TYPE_COUNT = 43)
  static constexpr std::array<ggml_type_layout, 43> table{{
      {"f32", 1, 4},      {"f16", 1, 2},        {"q4_0", 32, 18},    {"q4_1", 32, 20},     {"", 0, 0},
      {"", 0, 0},         {"q5_0", 32, 22},     {"q5_1", 32, 24},    {"q8_0", 32, 34},     {"q8_1", 32, 36},
      {"q2_K", 256, 84},  {"q3_K", 256, 110},   {"q4_K", 256, 144},  {"q5_K", 256, 176},   {"q6_K", 256, 210},
      {"q8_K", 256, 292}, {"iq2_xxs", 256, 66}, {"iq2_xs", 256, 74}, {"iq3_xxs", 256, 98}, {"iq1_s", 256, 50},
      {"iq4_nl", 32, 18}, {"iq3_s", 256, 110},  {"iq2_s", 256, 82},  {"iq4_xs", 256, 136}, {"i8", 1, 1},
      {"i16", 1, 2},      {"i32", 1, 4},        {"i64", 1, 8},       {"f64", 1, 8},        {"iq1_m", 256, 56},
      {"bf16", 1, 2},     {"", 0, 0},           {"", 0, 0},          {"", 0, 0},           {"tq1_0", 256, 54},
      {"tq2_0", 256, 66}, {"", 0, 0},           {"", 0, 0},          {"", 0, 0},           {"mxfp4", 32, 17},
      {"nvfp4", 64, 36},  {"q1_0", 128, 18},    {"q2_0", 64, 18},
  }};
  if (id >= table.size() || table[id].block == 0) return std::nullopt;
  return table[id];
}

/// @brief ggml type ids of the element types the writer produces and read_f32 converts.
inline constexpr std::uint32_t ggml_type_f32 = 0, ggml_type_f16 = 1, ggml_type_bf16 = 30;

/// @brief One tensor of a GGUF file.
struct gguf_tensor_info {
  std::string name;              ///< e.g. "blk.0.attn_q.weight"
  std::vector<std::int64_t> ne;  ///< ggml dimensions, ne[0] innermost (contiguous)
  std::uint32_t ggml_type = 0;   ///< ggml type id (0 f32, 1 f16, 30 bf16, quantized types ...)
  std::uint64_t offset = 0;      ///< byte offset in the data section
  std::uint64_t bytes = 0;       ///< bytes of data
  /// @brief Row-major shape (ne reversed): [out, in] for a weight matrix.
  [[nodiscard]] std::vector<std::int64_t> shape() const { return {ne.rbegin(), ne.rend()}; }
  /// @brief Number of elements.
  [[nodiscard]] std::uint64_t elements() const noexcept {
    std::uint64_t n = 1;
    for (auto d : ne) n *= static_cast<std::uint64_t>(d);
    return n;
  }
  /// @brief The element dtype for f32, f16 and bf16 tensors, else nullopt.
  [[nodiscard]] std::optional<dtype> float_type() const noexcept {
    if (ggml_type == ggml_type_f32) return dtype::f32;
    if (ggml_type == ggml_type_f16) return dtype::f16;
    if (ggml_type == ggml_type_bf16) return dtype::bf16;
    return std::nullopt;
  }
};

/// @brief Limits of the GGUF reader (defaults hold real models: a 405B Llama has ~1.1k tensors,
/// vocabularies reach ~260k tokens and ~500k merges).
struct gguf_limits {
  std::uint64_t max_tensors = 1u << 16;         ///< tensors in one file
  std::uint64_t max_kv = 1u << 16;              ///< metadata entries
  std::uint64_t max_string_bytes = 1u << 24;    ///< one key or string value
  std::uint64_t max_array_elements = 1u << 26;  ///< one array
  std::uint64_t max_alignment = 1u << 16;       ///< general.alignment
};

/// @brief A GGUF file opened for reading: validated header and metadata, tensors read on demand.
class gguf_file {
 public:
  /// @brief Opens and validates `path` (reads the header and the metadata, not the tensor data).
  /// @throws corrupt_data naming the file and the problem; invalid_argument if it cannot be opened.
  static gguf_file open(const std::filesystem::path& path, const gguf_limits& limits = {}) {
    gguf_file f;
    f.name_ = path.string();
    f.path_ = path;
    std::ifstream in(path, std::ios::binary);
    if (!in) detail::throw_invalid("gguf_file::open", "path", "cannot be opened: '" + path.string() + "'");
    in.seekg(0, std::ios::end);
    const auto end = in.tellg();
    if (end < 0) detail::throw_invalid("gguf_file::open", "path", "cannot be read: '" + path.string() + "'");
    in.seekg(0);
    stream_source src{in, static_cast<std::uint64_t>(end)};
    f.parse_header(src, limits);
    return f;
  }
  /// @brief Parses a GGUF file held in memory; `bytes` must outlive the object (tensors are read
  /// from it). `name` names it in errors.
  ///
  /// @code
  /// const std::vector<std::byte> bytes = slurp(path);  // the whole file, kept while f is used
  /// const auto f = gguf_file::parse(bytes);
  /// @endcode
  /// @throws corrupt_data naming `name` and the problem.
  static gguf_file parse(std::span<const std::byte> bytes, const gguf_limits& limits = {},
                         std::string name = "<memory>") {
    gguf_file f;
    f.name_ = std::move(name);
    f.buffer_ = bytes;
    f.in_memory_ = true;
    span_source src{bytes};
    f.parse_header(src, limits);
    return f;
  }

  /// @brief Format version (2 or 3).
  [[nodiscard]] std::uint32_t version() const noexcept { return version_; }
  /// @brief Alignment of the data section and of each tensor.
  [[nodiscard]] std::uint64_t alignment() const noexcept { return alignment_; }
  /// @brief File offset of the data section.
  [[nodiscard]] std::uint64_t data_offset() const noexcept { return data_offset_; }
  /// @brief Metadata entries in file order.
  [[nodiscard]] const std::vector<std::pair<std::string, gguf_value>>& metadata() const noexcept {
    return kv_;
  }
  /// @brief Tensors in file order.
  [[nodiscard]] const std::vector<gguf_tensor_info>& tensors() const noexcept { return tensors_; }
  /// @brief The value of `key`, or nullptr.
  [[nodiscard]] const gguf_value* find(std::string_view key) const noexcept {
    for (const auto& [k, v] : kv_)
      if (k == key) return &v;
    return nullptr;
  }
  /// @brief The tensor named `name`, or nullptr.
  [[nodiscard]] const gguf_tensor_info* find_tensor(std::string_view name) const noexcept {
    for (const auto& t : tensors_)
      if (t.name == name) return &t;
    return nullptr;
  }
  /// @brief Scalar `key` as a string.
  /// @throws corrupt_data if it is missing or not a string scalar.
  [[nodiscard]] const std::string& get_string(std::string_view key) const {
    return require(key, gguf_value_type::string).as_string();
  }
  /// @brief Scalar `key` as an unsigned integer (any integer type with a non-negative value).
  /// @throws corrupt_data if it is missing, not an integer scalar or negative.
  [[nodiscard]] std::uint64_t get_uint(std::string_view key) const {
    const gguf_value& v = require(key, std::nullopt);
    try {
      return v.as_uint();
    } catch (const invalid_argument& e) {
      fail("key '" + std::string(key) + "': " + e.what());
    }
  }
  /// @brief Scalar `key` as a floating-point number (f32 or f64).
  /// @throws corrupt_data if it is missing or not a floating-point scalar.
  [[nodiscard]] double get_float(std::string_view key) const {
    const gguf_value& v = require(key, std::nullopt);
    try {
      return v.as_float();
    } catch (const invalid_argument& e) {
      fail("key '" + std::string(key) + "': " + e.what());
    }
  }

  /// @brief The raw bytes of a tensor.
  /// @throws corrupt_data if the file cannot be read (changed since it was opened).
  [[nodiscard]] std::vector<std::byte> read_raw(const gguf_tensor_info& t) const {
    std::vector<std::byte> raw(static_cast<std::size_t>(t.bytes));
    const std::uint64_t at = data_offset_ + t.offset;
    if (in_memory_) {
      if (at > buffer_.size() || buffer_.size() - at < t.bytes)
        fail("tensor '" + t.name + "' lies outside the buffer");
      if (!raw.empty()) std::memcpy(raw.data(), buffer_.data() + at, raw.size());
      return raw;
    }
    std::ifstream in(path_, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(at));
    if (!raw.empty() &&
        !in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size())))
      fail("cannot read tensor '" + t.name + "'");
    return raw;
  }
  /// @brief Reads an f32, f16 or bf16 tensor as f32, in row-major order of shape() (the file's order).
  /// @throws corrupt_data if `name` is missing or of another type.
  [[nodiscard]] std::vector<float> read_f32(std::string_view name) const {
    const gguf_tensor_info* t = find_tensor(name);
    if (t == nullptr) fail("missing tensor '" + std::string(name) + "'");
    const auto type = t->float_type();
    if (!type) {
      const auto layout = ggml_type_layout_of(t->ggml_type);
      fail("tensor '" + std::string(name) + "' has ggml type " + std::string(layout ? layout->name : "?") +
           ", expected f32, f16 or bf16");
    }
    const auto raw = read_raw(*t);
    std::vector<float> out(static_cast<std::size_t>(t->elements()));
    decode_to_float(*type, raw, out);
    return out;
  }
  /// @brief The name errors use: the path, or the name given to parse().
  [[nodiscard]] const std::string& name() const noexcept { return name_; }

 private:
  struct stream_source {
    std::ifstream& in;
    std::uint64_t bytes;
    std::uint64_t pos = 0;
    [[nodiscard]] std::uint64_t size() const noexcept { return bytes; }
    [[nodiscard]] std::uint64_t remaining() const noexcept { return bytes - pos; }
    bool read(void* dst, std::size_t n) {
      if (n > remaining()) return false;
      if (n != 0 && !in.read(static_cast<char*>(dst), static_cast<std::streamsize>(n))) return false;
      pos += n;
      return true;
    }
  };
  struct span_source {
    std::span<const std::byte> bytes;
    std::uint64_t pos = 0;
    [[nodiscard]] std::uint64_t size() const noexcept { return bytes.size(); }
    [[nodiscard]] std::uint64_t remaining() const noexcept { return bytes.size() - pos; }
    bool read(void* dst, std::size_t n) {
      if (n > remaining()) return false;
      if (n != 0) std::memcpy(dst, bytes.data() + pos, n);
      pos += n;
      return true;
    }
  };

  [[noreturn]] void fail(const std::string& what) const {
    LATENTAUDIT_THROW(corrupt_data("gguf: '" + name_ + "': " + what));
  }
  const gguf_value& require(std::string_view key, std::optional<gguf_value_type> type) const {
    const gguf_value* v = find(key);
    if (v == nullptr) fail("missing key '" + std::string(key) + "'");
    if (v->is_array()) fail("key '" + std::string(key) + "' is an array, expected a scalar");
    if (type && v->type() != *type)
      fail("key '" + std::string(key) + "' has type " + std::string(gguf_value_type_name(v->type())) +
           ", expected " + std::string(gguf_value_type_name(*type)));
    return *v;
  }

  template <class Source>
  void parse_header(Source& src, const gguf_limits& lim) {
    const std::uint64_t file_size = src.size();
    auto at = [&] { return " (at byte " + std::to_string(src.pos) + ")"; };
    auto get = [&](auto& v, const char* what) {
      if (!src.read(&v, sizeof(v))) fail(std::string("truncated while reading ") + what + at());
    };
    auto read_string = [&](std::string& s, const char* what) {
      std::uint64_t n = 0;
      get(n, what);
      if (n > lim.max_string_bytes)
        fail(std::string(what) + " of " + std::to_string(n) + " bytes exceeds the limit " +
             std::to_string(lim.max_string_bytes) + at());
      if (n > src.remaining())
        fail(std::string(what) + " of " + std::to_string(n) + " bytes exceeds the file" + at());
      s.resize(static_cast<std::size_t>(n));
      if (!src.read(s.data(), s.size())) fail(std::string("truncated while reading ") + what + at());
    };
    std::array<char, 4> magic{};
    if (!src.read(magic.data(), 4)) fail("file is shorter than the 4-byte magic");
    if (std::string_view(magic.data(), 4) != "GGUF") fail("not a GGUF file (no 'GGUF' magic)");
    get(version_, "version");
    if (version_ != 2 && version_ != 3)
      fail("GGUF version " + std::to_string(version_) + " is not supported (2 or 3)");
    std::int64_t n_tensors = 0, n_kv = 0;
    get(n_tensors, "tensor count");
    get(n_kv, "metadata count");
    // a tensor entry takes at least 8 (name length) + 4 (n_dims) + 4 (type) + 8 (offset) bytes,
    // a metadata entry at least 8 (key length) + 1 (key) + 4 (type) + 1 (value) bytes
    if (n_tensors < 0 || static_cast<std::uint64_t>(n_tensors) > lim.max_tensors)
      fail("tensor count " + std::to_string(n_tensors) + " is not in [0, " + std::to_string(lim.max_tensors) +
           "]");
    if (n_kv < 0 || static_cast<std::uint64_t>(n_kv) > lim.max_kv)
      fail("metadata count " + std::to_string(n_kv) + " is not in [0, " + std::to_string(lim.max_kv) + "]");
    const auto nt = static_cast<std::uint64_t>(n_tensors), nk = static_cast<std::uint64_t>(n_kv);
    if (nt > src.remaining() / 24 || nk > (src.remaining() - nt * 24) / 14)
      fail(std::to_string(n_tensors) + " tensors and " + std::to_string(n_kv) +
           " metadata entries cannot fit in the file's " + std::to_string(file_size) + " bytes");

    std::unordered_set<std::string> keys;
    kv_.reserve(static_cast<std::size_t>(n_kv));
    for (std::int64_t i = 0; i < n_kv; ++i) {
      std::string key;
      read_string(key, "metadata key");
      if (key.empty()) fail("metadata entry " + std::to_string(i) + " has an empty key");
      if (!keys.insert(key).second) fail("duplicate metadata key '" + key + "'");
      std::uint32_t raw_type = 0;
      get(raw_type, "value type");
      gguf_value v;
      std::uint64_t count = 1;
      if (raw_type == static_cast<std::uint32_t>(gguf_value_type::array)) {
        v.array_ = true;
        get(raw_type, "array element type");
        if (raw_type == static_cast<std::uint32_t>(gguf_value_type::array))
          fail("key '" + key + "' is a nested array (not supported by GGUF readers)");
        get(count, "array length");
        if (count > lim.max_array_elements)
          fail("key '" + key + "' has " + std::to_string(count) + " elements, above the limit " +
               std::to_string(lim.max_array_elements));
      }
      if (raw_type > static_cast<std::uint32_t>(gguf_value_type::f64))
        fail("key '" + key + "' has invalid value type " + std::to_string(raw_type));
      v.type_ = static_cast<gguf_value_type>(raw_type);
      v.count_ = static_cast<std::size_t>(count);
      if (v.type_ == gguf_value_type::string) {
        if (count > src.remaining() / 8)
          fail("key '" + key + "': " + std::to_string(count) + " strings cannot fit in the file" + at());
        v.strings_.resize(static_cast<std::size_t>(count));
        for (auto& s : v.strings_) read_string(s, "string value");
      } else {
        const std::size_t es = gguf_value_type_size(v.type_);
        if (count > src.remaining() / es)
          fail("key '" + key + "': " + std::to_string(count) + " values of " + std::to_string(es) +
               " bytes exceed the file" + at());
        v.raw_.resize(static_cast<std::size_t>(count) * es);
        if (!src.read(v.raw_.data(), v.raw_.size())) fail("truncated value of key '" + key + "'" + at());
      }
      kv_.emplace_back(std::move(key), std::move(v));
    }

    alignment_ = 32;
    if (const gguf_value* a = find("general.alignment")) {
      if (a->is_array() || a->type() != gguf_value_type::u32) fail("general.alignment is not a u32");
      alignment_ = a->as_uint();
      if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0 || alignment_ > lim.max_alignment)
        fail("general.alignment " + std::to_string(alignment_) + " is not a power of two up to " +
             std::to_string(lim.max_alignment));
    }

    std::unordered_set<std::string> names;
    tensors_.reserve(static_cast<std::size_t>(n_tensors));
    for (std::int64_t i = 0; i < n_tensors; ++i) {
      gguf_tensor_info t;
      read_string(t.name, "tensor name");
      if (t.name.empty() || t.name.size() >= 64)
        fail("tensor " + std::to_string(i) + " has a name of " + std::to_string(t.name.size()) +
             " bytes (ggml requires 1 to 63)");
      if (!names.insert(t.name).second) fail("duplicate tensor name '" + t.name + "'");
      std::uint32_t n_dims = 0;
      get(n_dims, "dimension count");
      if (n_dims == 0 || n_dims > 4)
        fail("tensor '" + t.name + "' has " + std::to_string(n_dims) + " dimensions (1 to 4)");
      t.ne.resize(n_dims);
      std::uint64_t elements = 1;
      bool overflow = false;
      for (auto& d : t.ne) {
        get(d, "dimension");
        if (d < 0) fail("tensor '" + t.name + "' has a negative dimension " + std::to_string(d));
        const auto u = static_cast<std::uint64_t>(d);
        if (u != 0 && elements > static_cast<std::uint64_t>(INT64_MAX) / u) overflow = true;
        elements *= u;
      }
      if (overflow) fail("tensor '" + t.name + "' has more elements than int64 holds");
      get(t.ggml_type, "ggml type");
      const auto layout = ggml_type_layout_of(t.ggml_type);
      if (!layout) fail("tensor '" + t.name + "' has unknown ggml type " + std::to_string(t.ggml_type));
      if (static_cast<std::uint64_t>(t.ne[0]) % layout->block != 0)
        fail("tensor '" + t.name + "': ne[0] = " + std::to_string(t.ne[0]) + " is not a multiple of the " +
             std::string(layout->name) + " block size " + std::to_string(layout->block));
      const std::uint64_t blocks = elements / layout->block;
      if (blocks > UINT64_MAX / layout->bytes) fail("tensor '" + t.name + "' has a byte size above 2^64");
      t.bytes = blocks * layout->bytes;
      get(t.offset, "tensor offset");
      if (t.offset % alignment_ != 0)
        fail("tensor '" + t.name + "' has offset " + std::to_string(t.offset) +
             ", not a multiple of the alignment " + std::to_string(alignment_));
      tensors_.push_back(std::move(t));
    }

    // the data section starts at the next multiple of the alignment
    const std::uint64_t header_end = src.pos;
    data_offset_ = header_end + (alignment_ - header_end % alignment_) % alignment_;
    if (!tensors_.empty() && data_offset_ > file_size)
      fail("the data section would start at byte " + std::to_string(data_offset_) +
           ", past the end of the file (" + std::to_string(file_size) + " bytes)");
    const std::uint64_t data_size = tensors_.empty() ? 0 : file_size - data_offset_;
    std::vector<const gguf_tensor_info*> order;
    order.reserve(tensors_.size());
    for (const auto& t : tensors_) {
      if (t.offset > data_size || data_size - t.offset < t.bytes)
        fail("tensor '" + t.name + "' [" + std::to_string(t.offset) + ", +" + std::to_string(t.bytes) +
             ") lies outside the data section of " + std::to_string(data_size) + " bytes");
      order.push_back(&t);
    }
    std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return a->offset < b->offset; });
    for (std::size_t i = 1; i < order.size(); ++i)
      if (order[i]->offset < order[i - 1]->offset + order[i - 1]->bytes)
        fail("tensor '" + order[i]->name + "' overlaps tensor '" + order[i - 1]->name + "'");
  }

  std::string name_;
  std::filesystem::path path_;
  std::span<const std::byte> buffer_;
  bool in_memory_ = false;
  std::uint32_t version_ = 0;
  std::uint64_t alignment_ = 32;
  std::uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, gguf_value>> kv_;
  std::vector<gguf_tensor_info> tensors_;
};

/// @brief Writes a GGUF (version 3) file: metadata in insertion order, then tensors whose values
/// are produced one at a time while writing (peak memory: one tensor), each converted from f32 to
/// its stored type (f32, f16 or bf16, rounding to nearest even) and padded to the alignment.
class gguf_writer {
 public:
  /// @brief Produces a tensor's row-major f32 values when the writer reaches it.
  using producer = std::function<std::vector<float>()>;

  /// @brief A writer with data alignment `alignment` (a power of two; written as
  /// general.alignment when it is not GGUF's default 32).
  /// @throws invalid_argument on an alignment that is not a power of two.
  explicit gguf_writer(std::uint32_t alignment = 32) : alignment_(alignment) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
      detail::throw_invalid("gguf_writer", "alignment",
                            "must be a power of two, got " + std::to_string(alignment));
    if (alignment != 32) set("general.alignment", gguf_value::of(alignment));
  }

  /// @brief Adds metadata entry `key`.
  /// @throws invalid_argument on an empty or duplicate key.
  void set(std::string key, gguf_value value) {
    if (key.empty()) detail::throw_invalid("gguf_writer::set", "key", "must not be empty");
    for (const auto& [k, v] : kv_)
      if (k == key) detail::throw_invalid("gguf_writer::set", "key", "'" + key + "' is already set");
    kv_.emplace_back(std::move(key), std::move(value));
  }

  /// @brief Adds a tensor of row-major `shape` (1 to 4 positive dimensions; written as ne =
  /// shape reversed) stored as `type`, whose values `values` produces at write time.
  /// @throws invalid_argument on a bad name (empty, 64 bytes or more, duplicate), shape or type.
  void add_tensor(std::string name, dtype type, std::vector<std::int64_t> shape, producer values) {
    constexpr std::string_view fn = "gguf_writer::add_tensor";
    if (name.empty() || name.size() >= 64)
      detail::throw_invalid(fn, "name", "'" + name + "' must have 1 to 63 bytes");
    for (const auto& t : tensors_)
      if (t.name == name) detail::throw_invalid(fn, "name", "'" + name + "' is already added");
    if (!is_floating(type)) detail::throw_invalid(fn, "type", "must be f32, f16 or bf16");
    if (shape.empty() || shape.size() > 4)
      detail::throw_invalid(fn, "shape", "of '" + name + "' must have 1 to 4 dimensions");
    std::uint64_t n = 1;
    for (auto d : shape) {
      if (d <= 0) detail::throw_invalid(fn, "shape", "of '" + name + "' must have positive dimensions");
      n *= static_cast<std::uint64_t>(d);
    }
    tensors_.push_back({std::move(name), type, std::move(shape), n, std::move(values)});
  }
  /// @brief Adds a tensor whose values are given now.
  /// @throws invalid_argument as above; shape_mismatch if values.size() differs from the shape's.
  void add_tensor(std::string name, dtype type, std::vector<std::int64_t> shape, std::vector<float> values) {
    std::uint64_t n = 1;
    for (auto d : shape) n *= static_cast<std::uint64_t>(std::max<std::int64_t>(d, 0));
    detail::check_same_size("gguf_writer::add_tensor", "values of '" + name + "'", values.size(),
                            "product of its shape", static_cast<std::size_t>(n));
    add_tensor(std::move(name), type, std::move(shape),
               producer([v = std::move(values)]() mutable { return std::move(v); }));
  }

  /// @brief Writes the file: to `path` + ".partial" first, renamed to `path` when complete (an
  /// interrupted or failed write leaves no file at `path`). Producers run once each, in order.
  /// @throws invalid_argument if the file cannot be written or `path` exists and is not a regular
  ///         file (a device, a directory: never renamed over); shape_mismatch if a producer returns
  ///         the wrong number of values; whatever a producer throws (the partial file is removed).
  void write(const std::filesystem::path& path) {
    constexpr std::string_view fn = "gguf_writer::write";
    require_output_file(path, "gguf_writer::write: path");
    std::filesystem::path tmp = path;
    tmp += ".partial";
    try {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) detail::throw_invalid(fn, "path", "cannot be written: '" + path.string() + "'");
      std::uint64_t pos = 0;
      auto put_bytes = [&](const void* p, std::size_t n) {
        out.write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
        pos += n;
      };
      auto put = [&](auto v) { put_bytes(&v, sizeof(v)); };
      auto put_string = [&](const std::string& s) {
        put(static_cast<std::uint64_t>(s.size()));
        put_bytes(s.data(), s.size());
      };
      auto pad = [&] {
        static constexpr std::array<char, 64> zeros{};
        std::uint64_t n = (alignment_ - pos % alignment_) % alignment_;
        while (n > 0) {
          const auto k = std::min<std::uint64_t>(n, zeros.size());
          put_bytes(zeros.data(), static_cast<std::size_t>(k));
          n -= k;
        }
      };
      put_bytes("GGUF", 4);
      put(std::uint32_t{3});
      put(static_cast<std::int64_t>(tensors_.size()));
      put(static_cast<std::int64_t>(kv_.size()));
      for (const auto& [key, v] : kv_) {
        put_string(key);
        if (v.is_array()) {
          put(static_cast<std::uint32_t>(gguf_value_type::array));
          put(static_cast<std::uint32_t>(v.type()));
          put(static_cast<std::uint64_t>(v.size()));
        } else {
          put(static_cast<std::uint32_t>(v.type()));
        }
        if (v.type() == gguf_value_type::string)
          for (const auto& s : v.strings_) put_string(s);
        else
          put_bytes(v.raw_.data(), v.raw_.size());
      }
      std::uint64_t offset = 0;
      for (const auto& t : tensors_) {
        put_string(t.name);
        put(static_cast<std::uint32_t>(t.shape.size()));
        for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) put(static_cast<std::int64_t>(*it));
        put(static_cast<std::uint32_t>(t.type == dtype::f32   ? ggml_type_f32
                                       : t.type == dtype::f16 ? ggml_type_f16
                                                              : ggml_type_bf16));
        put(offset);
        const std::uint64_t bytes = t.elements * dtype_size(t.type);
        offset += bytes + (alignment_ - bytes % alignment_) % alignment_;
      }
      pad();
      for (auto& t : tensors_) {
        std::vector<float> values = t.values();
        detail::check_same_size(fn, "values of '" + t.name + "'", values.size(), "product of its shape",
                                static_cast<std::size_t>(t.elements));
        std::vector<std::byte> bytes(values.size() * dtype_size(t.type));
        encode_from_float(t.type, values, bytes);
        put_bytes(bytes.data(), bytes.size());
        pad();
      }
      out.close();
      if (!out) detail::throw_invalid(fn, "path", "writing failed: '" + path.string() + "'");
      std::error_code ec;
      std::filesystem::rename(tmp, path, ec);
      if (ec)
        detail::throw_invalid(fn, "path", "cannot be written: '" + path.string() + "': " + ec.message());
    } catch (...) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw;
    }
  }

 private:
  struct pending_tensor {
    std::string name;
    dtype type;
    std::vector<std::int64_t> shape;
    std::uint64_t elements;
    producer values;
  };
  std::uint32_t alignment_;
  std::vector<std::pair<std::string, gguf_value>> kv_;
  std::vector<pending_tensor> tensors_;
};

}  // namespace latentaudit

#endif  // LATENTAUDIT_ENGINE_GGUF_HPP

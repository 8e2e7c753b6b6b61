// SPDX-License-Identifier: MIT
// latentaudit Python module: records (the C++ reader and record parser), the audit report (the
// library call `latentaudit report` makes) and the KV policies on arrays.
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <latentaudit/dist/shard.hpp>
#include <latentaudit/kv.hpp>
#include <latentaudit/report/report.hpp>
#include <latentaudit/runner/report_input.hpp>
#include <latentaudit/trial/design.hpp>
#include <latentaudit/trial/journal.hpp>
#include <latentaudit/trial/record.hpp>

#include "common.hpp"

namespace latentaudit::python {

namespace {

using namespace pybind11::literals;

// A record from its JSON text, validated by the C++ parser (record_from_json).
trial_record record_of_text(std::string_view text, std::string_view where) {
  const json_value j = parse_json(text);
  return record_from_json(j, where);
}

// The records of a path as `latentaudit report --records PATH` reads them (read_report_input, the
// library's one path from a records file or audit directory to a report's records and options): the
// design's arms, an audit stopped when decided (its rule and schedule), the task file design.json
// names and, for a directory, the design as the denominator. Where the records disagree with the
// design beside them, a Python UserWarning each (the CLI's stderr warnings).
std::vector<trial_record> records_of_path(const std::filesystem::path& path, audit_options& o) {
  auto in = read_report_input(path, o);
  for (const auto& w : in.design_warnings)
    if (PyErr_WarnEx(PyExc_UserWarning, w.c_str(), 1) != 0) throw py::error_already_set();
  return std::move(in.records);
}

// Interned Python keys: one str object per distinct object key, shared by every record.
class key_cache {
 public:
  py::str get(std::string_view k) {
    for (const auto& [name, obj] : keys_)
      if (name == k) return obj;
    keys_.emplace_back(std::string(k), py::str(k.data(), k.size()));
    return keys_.back().second;
  }

 private:
  std::vector<std::pair<std::string, py::str>> keys_;
};

// The Python objects of a canonical record line (record_to_line's JSON), built straight from its
// text as json.loads would (a number with a fraction or exponent a float, else an int; objects
// dicts in member order), without an intermediate tree: read_records' hot loop.
class line_reader {
 public:
  line_reader(std::string_view text, key_cache& keys) : s_(text), keys_(keys) {}

  py::object value() {
    skip();
    if (i_ >= s_.size()) fail();
    switch (s_[i_]) {
      case '{':
        return object();
      case '[':
        return array();
      case '"':
        return py::str(string());
      case 't':
        return word("true", py::bool_(true));
      case 'f':
        return word("false", py::bool_(false));
      case 'n':
        return word("null", py::none());
      default:
        return number();
    }
  }

 private:
  [[noreturn]] void fail() const {
    throw corrupt_data("read_records: malformed canonical record line at offset " + std::to_string(i_));
  }
  void skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    skip();
    if (i_ >= s_.size() || s_[i_] != c) fail();
    ++i_;
  }
  py::object word(std::string_view w, py::object v) {
    if (s_.substr(i_, w.size()) != w) fail();
    i_ += w.size();
    return v;
  }
  py::object number() {
    const std::size_t b = i_;
    bool real = false;
    while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) != 0 || s_[i_] == '-' ||
                              s_[i_] == '+' || s_[i_] == '.' || s_[i_] == 'e' || s_[i_] == 'E')) {
      real = real || s_[i_] == '.' || s_[i_] == 'e' || s_[i_] == 'E';
      ++i_;
    }
    if (i_ == b) fail();
    const std::string t(s_.substr(b, i_ - b));
    if (real) return py::float_(std::strtod(t.c_str(), nullptr));
    char* end = nullptr;
    errno = 0;
    const long long x = std::strtoll(t.c_str(), &end, 10);
    if (errno == 0 && end == t.c_str() + t.size()) return py::int_(x);
    return py::reinterpret_steal<py::object>(PyLong_FromString(t.c_str(), nullptr, 10));
  }
  static void utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  std::uint32_t hex4() {
    if (i_ + 4 > s_.size()) fail();
    std::uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[i_++];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= static_cast<std::uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= static_cast<std::uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        v |= static_cast<std::uint32_t>(c - 'A' + 10);
      else
        fail();
    }
    return v;
  }
  std::string string() {
    ++i_;  // the opening quote
    std::string out;
    while (true) {
      const std::size_t b = i_;
      while (i_ < s_.size() && s_[i_] != '"' && s_[i_] != '\\') ++i_;
      out.append(s_.substr(b, i_ - b));
      if (i_ >= s_.size()) fail();
      if (s_[i_++] == '"') return out;
      if (i_ >= s_.size()) fail();
      const char e = s_[i_++];
      switch (e) {
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          std::uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && s_.substr(i_, 2) == "\\u") {
            i_ += 2;
            const std::uint32_t lo = hex4();
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          utf8(out, cp);
          break;
        }
        default:
          out.push_back(e);
      }
    }
  }
  py::object array() {
    ++i_;
    py::list out;
    skip();
    if (i_ < s_.size() && s_[i_] == ']') return (++i_, std::move(out));
    while (true) {
      out.append(value());
      skip();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      expect(']');
      return std::move(out);
    }
  }
  py::object object() {
    ++i_;
    py::dict out;
    skip();
    if (i_ < s_.size() && s_[i_] == '}') return (++i_, std::move(out));
    while (true) {
      skip();
      if (i_ >= s_.size() || s_[i_] != '"') fail();
      const std::size_t b = i_ + 1;
      std::size_t e = b;
      while (e < s_.size() && s_[e] != '"' && s_[e] != '\\') ++e;
      py::str key;
      if (e < s_.size() && s_[e] == '"') {  // a plain key: interned
        key = keys_.get(s_.substr(b, e - b));
        i_ = e + 1;
      } else {
        key = py::str(string());
      }
      expect(':');
      out[key] = value();
      skip();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      expect('}');
      return std::move(out);
    }
  }

  std::string_view s_;
  std::size_t i_ = 0;
  key_cache& keys_;
};

}  // namespace

void bind_records(py::module_& m) {
  m.def(
      "_read_records",
      [](const std::string& path, bool columns) -> py::object {
        // Read, canonicalise and parse back without the GIL; only the Python objects are built with it.
        std::vector<std::string> lines;
        {
          py::gil_scoped_release unlocked;
          const auto records = dist::read_records_input(path).records;
          lines.reserve(records.size());
          for (const auto& r : records) lines.push_back(record_to_line(r));
        }
        key_cache keys;
        if (!columns) {
          py::list rows(lines.size());
          for (std::size_t i = 0; i < lines.size(); ++i) rows[i] = line_reader(lines[i], keys).value();
          return std::move(rows);
        }
        // Columns: every top-level field, in first-seen order, one list per field (None where a
        // record lacks it, as pandas fills a missing key).
        // Keys are interned (key_cache), so a column is found by the key object's identity.
        std::vector<std::pair<py::object, py::list>> cols;
        auto column = [&](py::handle key) -> py::list& {
          for (auto& [k, c] : cols)
            if (k.ptr() == key.ptr()) return c;
          py::list c(lines.size());
          for (std::size_t i = 0; i < lines.size(); ++i) c[i] = py::none();
          cols.emplace_back(py::reinterpret_borrow<py::object>(key), std::move(c));
          return cols.back().second;
        };
        for (std::size_t i = 0; i < lines.size(); ++i) {
          const py::dict row = line_reader(lines[i], keys).value();
          for (auto [k, x] : row) column(k)[i] = x;
        }
        py::dict out;
        for (auto& [k, c] : cols) out[k] = std::move(c);
        return std::move(out);
      },
      "path"_a, "columns"_a = false,
      "Records of a file or audit directory (read_records_input) in canonical form: a list of dicts, "
      "or with columns a dict of one list per field.");
  m.def(
      "_record_field_names",
      [] {
        std::vector<std::string> out;
        for (const auto n : record_field_names()) out.emplace_back(n);
        return out;
      },
      "Every top-level field a record may hold (record_field_names), in docs/records.md's order.");
  m.def(
      "_closest_record_field", [](const std::string& name) { return closest_record_field(name); }, "name"_a,
      "The known record field closest to name (closest_record_field), \"\" when none is close.");
  m.def(
      "_read_record_lines",
      [](const std::string& path) {
        const auto records = dist::read_records_input(path).records;
        std::vector<std::string> lines;
        lines.reserve(records.size());
        for (const auto& r : records) lines.push_back(record_to_line(r));
        return lines;
      },
      "path"_a, "Records of a file or audit directory (read_records_set), each as its canonical JSON line.");
  m.def(
      "_canonical_record",
      [](const std::string& text, const std::string& where) {
        const auto r = record_of_text(text, where);
        return std::make_tuple(record_to_line(r), r.item, r.seed, r.arm);
      },
      "text"_a, "where"_a = "record",
      "A record's JSON text validated by record_from_json: (canonical line, item, seed, arm).");
  m.def(
      "_report",
      [](const py::object& lines, const py::object& path, const py::object& out, double margin, double alpha,
         std::size_t bootstrap, std::uint64_t seed, std::optional<double> latency_slo_s,
         std::optional<double> prefill_tokens_per_s, bool link_measured, unsigned threads) {
        if (threads > 1024)
          throw invalid_argument("report: threads must lie in [0, 1024] (0 = all cores), got " +
                                 std::to_string(threads));
        audit_options o;
        o.equivalence_margin = margin;
        o.noninferiority_margin = margin;
        o.alpha = alpha;
        o.bootstrap_replicates = bootstrap;
        o.seed = seed;
        o.threads = threads;
        o.latency_slo_s = latency_slo_s;
        o.prefill_tokens_per_s = prefill_tokens_per_s;
        o.link_measured = link_measured;
        std::vector<trial_record> records;
        if (!path.is_none()) {
          records = records_of_path(py::str(path).cast<std::string>(), o);
        } else {
          std::size_t i = 0;
          for (auto line : lines)
            records.push_back(
                record_of_text(line.cast<std::string>(), "records[" + std::to_string(i++) + "]"));
        }
        if (records.empty()) throw invalid_argument("report: no records");
        std::string text;
        {
          py::gil_scoped_release unlocked;
          if (out.is_none()) {
            text = write_json(report_json(build_audit_report(records, o)), {.indent = 1});
          } else {
            const std::filesystem::path dir = py::str(out).cast<std::string>();
            // One writer per directory, as the CLI: a report into a directory a running audit holds is
            // refused.
            directory_lock lock(dir, "out");
            text = write_json(report_json(run_audit_report(records, o, dir)), {.indent = 1});
          }
        }
        return text;
      },
      "lines"_a, "path"_a, "out"_a, "margin"_a, "alpha"_a, "bootstrap"_a, "seed"_a, "latency_slo_s"_a,
      "prefill_tokens_per_s"_a, "link_measured"_a, "threads"_a,
      "The audit report (report.json's text) of records given as JSON lines or a path; writes report.md, "
      "report.json and the SVG plots into out when given (run_audit_report).");
}

namespace {

constexpr std::pair<std::string_view, rope_pairing> pairing_names[] = {
    {"none", rope_pairing::none}, {"neox", rope_pairing::neox}, {"norm", rope_pairing::norm}};
constexpr std::pair<std::string_view, noise_scale> noise_scale_names[] = {
    {"absolute", noise_scale::absolute},
    {"rms_layer", noise_scale::rms_layer},
    {"rms_head", noise_scale::rms_head},
    {"rms_channel", noise_scale::rms_channel},
    {"snr_db", noise_scale::snr_db}};
constexpr std::pair<std::string_view, kv_part> part_names[] = {
    {"keys", kv_part::keys}, {"values", kv_part::values}, {"both", kv_part::both}};
// The names of kv/quantize.hpp's one scheme table (all_quant_schemes, quant_scheme_name).
constexpr auto scheme_names = [] {
  std::array<std::pair<std::string_view, quant_scheme>, all_quant_schemes.size()> t{};
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = {quant_scheme_name(all_quant_schemes[i]), all_quant_schemes[i]};
  return t;
}();
constexpr std::pair<std::string_view, position_mode> position_mode_names[] = {
    {"preserve", position_mode::preserve},
    {"rebase_contiguous", position_mode::rebase_contiguous},
    {"append_after", position_mode::append_after}};

// The element type of a K or V array: float32, float16, or bfloat16 (an ml_dtypes/torch-exported
// "bfloat16" array, or 16-bit integers holding bfloat16 bits when bf16 is set).
dtype element_type(const py::array& a, bool bf16, std::string_view fn, std::string_view name) {
  const auto dt = a.dtype();
  const auto dt_name = py::cast<std::string>(dt.attr("name"));
  if (bf16 || dt_name == "bfloat16") {
    if (dt.itemsize() != 2)
      throw invalid_argument(std::string(fn) + ": " + std::string(name) +
                             " must have 2-byte elements for bfloat16");
    return dtype::bf16;
  }
  if (dt.kind() == 'f' && dt.itemsize() == 4) return dtype::f32;
  if (dt.kind() == 'f' && dt.itemsize() == 2) return dtype::f16;
  throw invalid_argument(std::string(fn) + ": " + std::string(name) +
                         " must be float32, float16 or bfloat16, got " + dt_name);
}

// Token positions from Python: integers (a TypeError naming `name` for floats, complex or objects)
// in [0, 2^31 - 1], the range of position_t, checked before the conversion (never wrapped).
std::vector<position_t> positions_of(const py::object& value, std::string_view fn, std::string_view name) {
  const auto a = py::array::ensure(value);
  if (!a) throw py::type_error(std::string(fn) + ": " + std::string(name) + " must be an array of integers");
  const char kind = a.dtype().kind();
  if (kind != 'i' && kind != 'u' && !(a.size() == 0 && kind == 'f'))
    throw py::type_error(std::string(fn) + ": " + std::string(name) + " must hold integers, got dtype " +
                         py::cast<std::string>(a.dtype().attr("name")));
  if (a.ndim() != 1)
    throw shape_mismatch(std::string(fn) + ": " + std::string(name) + " must be 1-dimensional, got " +
                         std::to_string(a.ndim()) + " dimensions");
  const auto wide = py::array_t<std::int64_t, py::array::forcecast>::ensure(a);  // exact for int64/uint32
  if (kind == 'u' && a.dtype().itemsize() == 8) {  // uint64 above 2^63 would wrap in int64
    const auto u = py::array_t<std::uint64_t, py::array::forcecast>::ensure(a);
    for (py::ssize_t t = 0; t < u.shape(0); ++t)
      if (u.at(t) > static_cast<std::uint64_t>(std::numeric_limits<position_t>::max()))
        throw invalid_argument(std::string(fn) + ": " + std::string(name) + "[" + std::to_string(t) +
                               "] must lie in [0, 2^31 - 1], got " + std::to_string(u.at(t)));
  }
  std::vector<position_t> out(static_cast<std::size_t>(wide.shape(0)));
  for (py::ssize_t t = 0; t < wide.shape(0); ++t) {
    const std::int64_t x = wide.at(t);
    if (x < 0 || x > std::numeric_limits<position_t>::max())
      throw invalid_argument(std::string(fn) + ": " + std::string(name) + "[" + std::to_string(t) +
                             "] must lie in [0, 2^31 - 1], got " + std::to_string(x));
    out[static_cast<std::size_t>(t)] = static_cast<position_t>(x);
  }
  return out;
}

// Worker threads of the KV functions: 0 (all cores) to 1024, as the estimators' `threads`.
unsigned threads_of(std::int64_t threads, std::string_view fn) {
  if (threads < 0 || threads > 1024)
    throw invalid_argument(std::string(fn) + ": threads must lie in [0, 1024] (0 = all cores), got " +
                           std::to_string(threads));
  return static_cast<unsigned>(threads);
}

// What the Python caller gives: K and V [layers][tokens][kv_heads][head_dim], positions, RoPE.
struct block_input {
  py::array k, v;
  py::object positions = py::none();
  std::string pairing = "neox";
  double theta = 10000.0;
  std::int32_t rotary_dims = 0;
  py::object layers = py::none();
  std::int32_t n_layers = 0;
  bool bf16 = false;
};

kv_block make_block(const block_input& in, std::string_view fn) {
  if (in.k.ndim() != 4 || in.v.ndim() != 4)
    throw shape_mismatch(std::string(fn) +
                         ": k and v must be 4-dimensional [layers][tokens][kv_heads][head_dim], got " +
                         std::to_string(in.k.ndim()) + " and " + std::to_string(in.v.ndim()) + " dimensions");
  for (int d = 0; d < 3; ++d)
    if (in.k.shape(d) != in.v.shape(d))
      throw shape_mismatch(std::string(fn) + ": k and v differ in dimension " + std::to_string(d) + " (" +
                           std::to_string(in.k.shape(d)) + " vs " + std::to_string(in.v.shape(d)) + ")");
  const dtype type = element_type(in.k, in.bf16, fn, "k");
  if (element_type(in.v, in.bf16, fn, "v") != type)
    throw invalid_argument(std::string(fn) + ": k and v differ in dtype");
  const auto L = static_cast<std::size_t>(in.k.shape(0));
  const auto T = static_cast<std::int64_t>(in.k.shape(1));
  std::vector<layer_index> layers;
  if (in.layers.is_none()) {
    for (std::size_t i = 0; i < L; ++i) layers.push_back(static_cast<layer_index>(i));
  } else {
    layers = in.layers.cast<std::vector<layer_index>>();
    if (layers.size() != L)
      throw shape_mismatch(std::string(fn) + ": layers has " + std::to_string(layers.size()) +
                           " entries, k has " + std::to_string(L) + " layers");
  }
  model_fingerprint fp;
  fp.architecture = "python";
  fp.n_layers = in.n_layers > 0 ? in.n_layers : (layers.empty() ? 0 : layers.back() + 1);
  fp.n_kv_heads = static_cast<std::int32_t>(in.k.shape(2));
  fp.n_heads = fp.n_kv_heads;
  fp.head_dim_k = static_cast<std::int32_t>(in.k.shape(3));
  fp.head_dim_v = static_cast<std::int32_t>(in.v.shape(3));
  fp.rope = rope_descriptor{.pairing = parse_choice(fn, "pairing", in.pairing, pairing_names),
                            .theta = static_cast<float>(in.theta),
                            .rotary_dims = in.rotary_dims};
  kv_block b(std::move(fp), std::move(layers), T, type);
  const std::size_t es = dtype_size(type);
  // One copy into the block, layer by layer: a C-contiguous input by memcpy, any other (strided,
  // broadcast) by numpy.copyto into a view of the block's layer, never through an intermediate
  // contiguous copy of the whole input.
  const py::object copyto = py::module_::import("numpy").attr("copyto");
  const py::capsule no_owner(&b, [](void*) {});  // the views below do not own the block's memory
  for (std::size_t i = 0; i < L; ++i) {
    const auto copy = [&](const py::array& src, bool value) {
      const std::size_t n = (value ? b.v_elements() : b.k_elements()) * es;
      std::byte* out = nullptr;
      if (type == dtype::f32)
        out = reinterpret_cast<std::byte*>(value ? b.v<float>(i).data() : b.k<float>(i).data());
      if (type == dtype::f16)
        out = reinterpret_cast<std::byte*>(value ? b.v<Eigen::half>(i).data() : b.k<Eigen::half>(i).data());
      if (type == dtype::bf16)
        out = reinterpret_cast<std::byte*>(value ? b.v<Eigen::bfloat16>(i).data()
                                                 : b.k<Eigen::bfloat16>(i).data());
      if (src.flags() & py::array::c_style) {
        std::memcpy(out, static_cast<const std::byte*>(src.data()) + i * n, n);
        return;
      }
      const auto H = src.shape(2), D = src.shape(3), e = static_cast<py::ssize_t>(es);
      py::array dst(src.dtype(), std::vector<py::ssize_t>{src.shape(1), H, D},
                    std::vector<py::ssize_t>{H * D * e, D * e, e}, out, no_owner);
      copyto(dst, src[py::int_(i)]);
    };
    copy(in.k, false);
    copy(in.v, true);
  }
  if (!in.positions.is_none()) {
    const auto p = positions_of(in.positions, fn, "positions");
    if (static_cast<std::int64_t>(p.size()) != T)
      throw shape_mismatch(std::string(fn) + ": positions must be 1-dimensional with one entry per token (" +
                           std::to_string(T) + ")");
    std::copy(p.begin(), p.end(), b.positions().begin());
  }
  return b;
}

// K, V (in the block's dtype: float32, float16, or uint16 bfloat16 bits) and positions. K and V
// are views of the block's own storage, not copies: the block moves into a capsule the two arrays
// keep alive. The storage holds layer after layer, each K [tokens][heads][dim] then V, so K and V
// are strided across layers (torch.from_numpy shares them as they are).
py::tuple block_arrays(kv_block block, const py::object& like) {
  const auto L = static_cast<py::ssize_t>(block.n_layers()), T = static_cast<py::ssize_t>(block.n_tokens()),
             H = static_cast<py::ssize_t>(block.n_kv_heads());
  py::dtype dt = block.type() == dtype::f32   ? py::dtype::of<float>()
                 : block.type() == dtype::f16 ? py::dtype("float16")
                                              : py::dtype::of<std::uint16_t>();
  if (block.type() == dtype::bf16 && !like.is_none())
    dt = py::array(like).dtype();  // ml_dtypes bfloat16 stays
  py::array_t<position_t> p(T);
  std::copy(block.positions().begin(), block.positions().end(), p.mutable_data());
  const std::vector<py::ssize_t> k_shape{L, T, H, block.head_dim_k()}, v_shape{L, T, H, block.head_dim_v()};
  if (L == 0 || T == 0 || H == 0)  // nothing to share
    return py::make_tuple(py::array(dt, k_shape), py::array(dt, v_shape), p);
  auto* owned = new kv_block(std::move(block));
  const py::capsule keep(owned, [](void* x) { delete static_cast<kv_block*>(x); });
  const auto es = static_cast<py::ssize_t>(dtype_size(owned->type()));
  auto first = [&](bool value) -> std::byte* {
    if (owned->type() == dtype::f32)
      return reinterpret_cast<std::byte*>(value ? owned->v<float>(0).data() : owned->k<float>(0).data());
    if (owned->type() == dtype::f16)
      return reinterpret_cast<std::byte*>(value ? owned->v<Eigen::half>(0).data()
                                                : owned->k<Eigen::half>(0).data());
    return reinterpret_cast<std::byte*>(value ? owned->v<Eigen::bfloat16>(0).data()
                                              : owned->k<Eigen::bfloat16>(0).data());
  };
  const auto layer = static_cast<py::ssize_t>(owned->k_elements() + owned->v_elements()) * es;
  const auto dk = owned->head_dim_k(), dv = owned->head_dim_v();
  py::array k(dt, k_shape, std::vector<py::ssize_t>{layer, H * dk * es, dk * es, es}, first(false), keep);
  py::array v(dt, v_shape, std::vector<py::ssize_t>{layer, H * dv * es, dv * es, es}, first(true), keep);
  return py::make_tuple(k, v, p);
}

#define LATENTAUDIT_PY_BLOCK_ARGS                                                             \
  "positions"_a = py::none(), "pairing"_a = "neox", "theta"_a = 10000.0, "rotary_dims"_a = 0, \
  "layers"_a = py::none(), "n_layers"_a = 0, "bf16"_a = false

block_input input_of(py::array k, py::array v, py::object positions, std::string pairing, double theta,
                     std::int32_t rotary_dims, py::object layers, std::int32_t n_layers, bool bf16) {
  return block_input{std::move(k),       std::move(v), std::move(positions),
                     std::move(pairing), theta,        rotary_dims,
                     std::move(layers),  n_layers,     bf16};
}

index_range band_of(const py::object& band, std::string_view fn, std::string_view name) {
  index_range r{0, std::numeric_limits<std::int64_t>::max()};
  if (band.is_none()) return r;
  const auto t = band.cast<py::tuple>();
  if (t.size() != 2)
    throw invalid_argument(std::string(fn) + ": " + std::string(name) + " must be (first, last)");
  r.first = t[0].cast<std::int64_t>();
  if (!t[1].is_none()) r.last = t[1].cast<std::int64_t>();
  if (r.first < 0 || r.last <= r.first)
    throw invalid_argument(std::string(fn) + ": " + std::string(name) +
                           " must be (first, last) with 0 <= first < last (last None: to the end), got (" +
                           std::to_string(r.first) + ", " + std::to_string(r.last) + ")");
  return r;
}

std::vector<std::byte> key_bytes(const py::object& key) {
  if (key.is_none()) return {};
  const std::string s = key.cast<py::bytes>();
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

}  // namespace

namespace {

// The KV policies of the Python module on arrays: noise, quantization, placebos and the wire.
void bind_kv_transforms(py::module_& m) {
  using K = py::array;
  m.def(
      "add_noise",
      [](K k, K v, double sigma, py::object positions, std::string pairing, double theta,
         std::int32_t rotary_dims, py::object layers, std::int32_t n_layers, bool bf16,
         const std::string& scale, const std::string& part, const py::object& layer_band,
         const py::object& token_band, std::uint64_t seed, std::uint64_t item, std::int64_t threads) {
        constexpr std::string_view fn = "add_noise";
        if (!std::isfinite(sigma) ||
            (scale == "snr_db" ? std::fabs(sigma) > 1000.0 : !(sigma >= 0 && sigma <= 1e6)))
          throw invalid_argument(std::string(fn) + ": sigma must be finite and lie in " +
                                 (scale == "snr_db" ? "[-1000, 1000] dB" : "[0, 1e6] (relative to the RMS)") +
                                 ", got " + latentaudit::number_text(sigma));
        auto b = make_block(input_of(k, v, std::move(positions), std::move(pairing), theta, rotary_dims,
                                     std::move(layers), n_layers, bf16),
                            fn);
        noise_spec s;
        s.sigma = sigma;
        s.scale = parse_choice(fn, "scale", scale, noise_scale_names);
        s.part = parse_choice(fn, "part", part, part_names);
        s.layers = band_of(layer_band, fn, "layer_band");
        s.tokens = band_of(token_band, fn, "token_band");
        s.seed = seed;
        s.item = item;
        s.threads = threads_of(threads, fn);
        noise_record r;
        {
          py::gil_scoped_release unlocked;
          r = add_noise(b, s);
        }
        const auto arrays = block_arrays(std::move(b), k);
        py::dict rec("sigma_requested"_a = r.sigma_requested, "sigma_applied_rms"_a = r.sigma_applied_rms,
                     "signal_rms"_a = r.signal_rms, "realized_snr_db"_a = r.realized_snr_db,
                     "elements"_a = r.elements);
        return py::make_tuple(arrays[0], arrays[1], rec);
      },
      "k"_a, "v"_a, "sigma"_a, py::kw_only(), LATENTAUDIT_PY_BLOCK_ARGS, "scale"_a = "rms_layer",
      "part"_a = "both", "layer_band"_a = py::none(), "token_band"_a = py::none(), "seed"_a = 0, "item"_a = 0,
      "threads"_a = 1,
      "Gaussian noise relative to the RMS (the noise arms' add_noise, same counter-based streams): returns "
      "(k, v, record).");
  m.def(
      "quantize_roundtrip",
      [](K k, K v, py::object positions, std::string pairing, double theta, std::int32_t rotary_dims,
         py::object layers, std::int32_t n_layers, bool bf16, const std::string& scheme,
         std::int32_t group_size, bool keys_per_channel, std::int64_t threads) {
        constexpr std::string_view fn = "quantize_roundtrip";
        auto b = make_block(input_of(k, v, std::move(positions), std::move(pairing), theta, rotary_dims,
                                     std::move(layers), n_layers, bf16),
                            fn);
        const quantize_spec s{.scheme = parse_choice(fn, "scheme", scheme, scheme_names),
                              .group_size = group_size,
                              .keys_per_channel = keys_per_channel};
        quantize_record r;
        {
          py::gil_scoped_release unlocked;
          r = quantize_roundtrip(b, s, threads_of(threads, fn));
        }
        const auto arrays = block_arrays(std::move(b), k);
        py::dict rec("scheme"_a = std::string(quant_scheme_name(r.scheme)), "group_size"_a = r.group_size,
                     "original_bytes"_a = r.original_bytes, "quantized_bytes"_a = r.quantized_bytes,
                     "groups"_a = r.groups, "max_abs_error"_a = r.max_abs_error,
                     "max_error_over_half_step"_a = r.max_error_over_half_step, "rms_error"_a = r.rms_error);
        return py::make_tuple(arrays[0], arrays[1], rec);
      },
      "k"_a, "v"_a, py::kw_only(), LATENTAUDIT_PY_BLOCK_ARGS, "scheme"_a = "int8", "group_size"_a = 32,
      "keys_per_channel"_a = true, "threads"_a = 1,
      "int8/int4/fp8 quantize-dequantize round trip (what a receiver decodes): returns (k, v, record).");
  m.def(
      "zeroed_placebo",
      [](K k, K v, py::object positions, std::string pairing, double theta, std::int32_t rotary_dims,
         py::object layers, std::int32_t n_layers, bool bf16) {
        const auto b = make_block(input_of(k, v, std::move(positions), std::move(pairing), theta, rotary_dims,
                                           std::move(layers), n_layers, bf16),
                                  "zeroed_placebo");
        const auto a = block_arrays(zeroed_placebo(b), k);
        return py::make_tuple(a[0], a[1]);
      },
      "k"_a, "v"_a, py::kw_only(), LATENTAUDIT_PY_BLOCK_ARGS, "The zeroed placebo: (k, v) of zeros.");
  m.def(
      "random_placebo",
      [](K k, K v, py::object positions, std::string pairing, double theta, std::int32_t rotary_dims,
         py::object layers, std::int32_t n_layers, bool bf16, std::uint64_t seed, std::uint64_t item) {
        const auto b = make_block(input_of(k, v, std::move(positions), std::move(pairing), theta, rotary_dims,
                                           std::move(layers), n_layers, bf16),
                                  "random_placebo");
        const auto a = block_arrays(random_placebo(b, seed, item), k);
        return py::make_tuple(a[0], a[1]);
      },
      "k"_a, "v"_a, py::kw_only(), LATENTAUDIT_PY_BLOCK_ARGS, "seed"_a = 0, "item"_a = 0,
      "The moment-matched random placebo (per layer, part and head), the C++ arm's stream: (k, v).");
  m.def(
      "random_derangement", &random_derangement, "n"_a, "seed"_a,
      "The pairing placebo's assignment (another item's cache): item i receives the cache of item result[i] "
      "(never i).");
  m.def(
      "set_positions",
      [](K k, K v, py::object positions, std::string pairing, double theta, std::int32_t rotary_dims,
         py::object layers, std::int32_t n_layers, bool bf16, const py::object& to) {
        constexpr std::string_view fn = "set_positions";
        const auto new_positions = positions_of(to, fn, "new_positions");
        auto b = make_block(input_of(k, v, std::move(positions), std::move(pairing), theta, rotary_dims,
                                     std::move(layers), n_layers, bf16),
                            fn);
        set_positions(b, new_positions);
        return block_arrays(std::move(b), k);
      },
      "k"_a, "v"_a, py::kw_only(), LATENTAUDIT_PY_BLOCK_ARGS, "new_positions"_a,
      "RoPE re-rotation: moves token t to new_positions[t], re-rotating its keys: (k, v, positions).");
  m.def(
      "apply_position_mode",
      [](K k, K v, py::object positions, std::string pairing, double theta, std::int32_t rotary_dims,
         py::object layers, std::int32_t n_layers, bool bf16, const std::string& mode,
         position_t first_position, position_t receiver_next) {
        constexpr std::string_view fn = "apply_position_mode";
        auto b = make_block(input_of(k, v, std::move(positions), std::move(pairing), theta, rotary_dims,
                                     std::move(layers), n_layers, bf16),
                            fn);
        apply_position_mode(b, parse_choice(fn, "mode", mode, position_mode_names), first_position,
                            receiver_next);
        return block_arrays(std::move(b), k);
      },
      "k"_a, "v"_a, py::kw_only(), LATENTAUDIT_PY_BLOCK_ARGS, "mode"_a, "first_position"_a = 0,
      "receiver_next"_a = 0,
      "Places a relayed block (preserve, rebase_contiguous, append_after): (k, v, positions).");
}

// The KV policies' layer and token selections.
void bind_kv_selection(py::module_& m) {
  using K = py::array;
  m.def(
      "apply_selection",
      [](K k, K v, py::object positions, std::string pairing, double theta, std::int32_t rotary_dims,
         py::object layers, std::int32_t n_layers, bool bf16, py::object select_layers, py::object tokens) {
        constexpr std::string_view fn = "apply_selection";
        const auto b = make_block(input_of(k, v, std::move(positions), std::move(pairing), theta, rotary_dims,
                                           std::move(layers), n_layers, bf16),
                                  fn);
        kv_selection sel;
        sel.layers = select_layers.is_none() ? std::vector<layer_index>(b.layers().begin(), b.layers().end())
                                             : select_layers.cast<std::vector<layer_index>>();
        std::vector<std::int64_t> all(static_cast<std::size_t>(b.n_tokens()));
        std::iota(all.begin(), all.end(), std::int64_t{0});
        if (tokens.is_none()) {
          sel.tokens.assign(sel.layers.size(), all);
        } else {
          const auto list = tokens.cast<py::list>();
          const bool per_layer = !list.empty() && py::isinstance<py::sequence>(list[0]);
          if (per_layer)
            sel.tokens = tokens.cast<std::vector<std::vector<std::int64_t>>>();
          else
            sel.tokens.assign(sel.layers.size(), tokens.cast<std::vector<std::int64_t>>());
        }
        auto out = apply_selection(b, sel);
        py::object mask = py::none();
        if (out.has_token_mask()) {
          py::array_t<std::uint8_t> m8(
              {static_cast<py::ssize_t>(out.n_layers()), static_cast<py::ssize_t>(out.n_tokens())});
          std::copy(out.token_mask().begin(), out.token_mask().end(), m8.mutable_data());
          mask = m8;
        }
        std::vector<layer_index> kept(out.layers().begin(), out.layers().end());
        const auto a = block_arrays(std::move(out), k);
        return py::dict("k"_a = a[0], "v"_a = a[1], "positions"_a = a[2], "layers"_a = std::move(kept),
                        "token_mask"_a = mask);
      },
      "k"_a, "v"_a, py::kw_only(), LATENTAUDIT_PY_BLOCK_ARGS, "select_layers"_a = py::none(),
      "tokens"_a = py::none(),
      "Keeps the selected layers (model ids) and tokens (one list for every layer, or one list per selected "
      "layer: then absent tokens are masked): a dict of k, v, positions, layers, token_mask "
      "([layers][tokens] "
      "0/1, None when every layer keeps every token).");
  m.def(
      "tokens_sinks_window",
      [](std::int64_t n, std::int64_t sinks, std::int64_t window) {
        // n bounded by the positions' range before any work
        if (n < 0 || n > std::numeric_limits<position_t>::max())
          throw invalid_argument("tokens_sinks_window: n must lie in [0, 2^31 - 1] (token positions), got " +
                                 std::to_string(n));
        return tokens_sinks_window(n, sinks, window);
      },
      "n"_a, "sinks"_a, "window"_a, "StreamingLLM: the first `sinks` and the last `window` of n tokens.");
  m.def(
      "tokens_heavy_hitters",
      [](const f64_array& scores, std::int64_t heavy, std::int64_t recent) {
        return tokens_heavy_hitters(vec(scores, "tokens_heavy_hitters", "scores"), heavy, recent);
      },
      "scores"_a, "heavy"_a, "recent"_a,
      "H2O: the `recent` last tokens plus the `heavy` tokens with the largest accumulated attention.");
  m.def(
      "tokens_snapkv",
      [](const f64_array& attention, std::int64_t budget, std::int64_t kernel) {
        constexpr std::string_view fn = "tokens_snapkv";
        if (attention.ndim() != 2)
          throw shape_mismatch(std::string(fn) + ": attention must be 2-dimensional [window][n]");
        return tokens_snapkv(
            std::span<const double>(attention.data(), static_cast<std::size_t>(attention.size())),
            attention.shape(1), attention.shape(0), budget, kernel);
      },
      "attention"_a, "budget"_a, "kernel"_a = 7,
      "SnapKV voting over the observation window's attention [window][n] (summed over heads).");
  m.def("pyramid_budgets", &pyramid_budgets, "n_layers"_a, "average"_a, "beta"_a = 20.0,
        "PyramidKV per-layer token budgets, decreasing with depth, averaging `average`.");
  m.def(
      "pyramid_selection",
      [](const f64_array& scores, const std::vector<std::int64_t>& budgets, std::int64_t window) {
        constexpr std::string_view fn = "pyramid_selection";
        if (scores.ndim() != 2)
          throw shape_mismatch(std::string(fn) + ": scores must be 2-dimensional [layers][n]");
        const auto s =
            pyramid_selection(std::span<const double>(scores.data(), static_cast<std::size_t>(scores.size())),
                              static_cast<std::int32_t>(scores.shape(0)), scores.shape(1), budgets, window);
        return py::make_tuple(s.layers, s.tokens);
      },
      "scores"_a, "budgets"_a, "window"_a,
      "PyramidKV: per layer the budgets[l] best-scored tokens plus the last `window`: (layers, tokens per "
      "layer).");
  m.def(
      "kvcomm_selection",
      [](std::int32_t n_layers, std::int64_t n_tokens, const std::vector<layer_index>& selected,
         std::int64_t sinks) {
        const auto s = kvcomm_selection(n_layers, n_tokens, selected, sinks);
        return py::make_tuple(s.layers, s.tokens);
      },
      "n_layers"_a, "n_tokens"_a, "selected"_a, "sinks"_a,
      "KVComm: every layer, those not selected keeping only the first `sinks` tokens: (layers, tokens per "
      "layer).");
  m.def(
      "encode_relay",
      [](K k, K v, py::object positions, std::string pairing, double theta, std::int32_t rotary_dims,
         py::object layers, std::int32_t n_layers, bool bf16, const py::object& key,
         const py::object& quantize, std::int32_t group_size, bool keys_per_channel) {
        constexpr std::string_view fn = "encode_relay";
        const auto b = make_block(input_of(k, v, std::move(positions), std::move(pairing), theta, rotary_dims,
                                           std::move(layers), n_layers, bf16),
                                  fn);
        const auto kb = key_bytes(key);
        wire_encode_options o{.hmac_key = kb};
        if (!quantize.is_none())
          o.quantize = quantize_spec{
              .scheme = parse_choice(fn, "quantize", quantize.cast<std::string>(), scheme_names),
              .group_size = group_size,
              .keys_per_channel = keys_per_channel};
        const auto bytes = encode_relay(b, o);
        return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      },
      "k"_a, "v"_a, py::kw_only(), LATENTAUDIT_PY_BLOCK_ARGS, "key"_a = py::none(), "quantize"_a = py::none(),
      "group_size"_a = 32, "keys_per_channel"_a = true,
      "A KV relay frame (docs/wire-format.md), HMAC-SHA256-tagged when key (bytes) is given.");
  m.def(
      "decode_relay",
      [](const py::bytes& frame, const py::object& key, bool require_authentication) {
        const std::string_view s = frame;
        const auto kb = key_bytes(key);
        const auto d = decode_relay(
            std::as_bytes(std::span<const char>(s.data(), s.size())),
            wire_decode_options{.hmac_key = kb, .require_authentication = require_authentication});
        if (d.kind != relay_kind::kv) throw invalid_argument("decode_relay: the frame carries text, not KV");
        const auto a = block_arrays(d.kv, py::none());
        const auto& fp = d.kv.fingerprint();
        py::dict out("k"_a = a[0], "v"_a = a[1], "positions"_a = a[2], "has_tag"_a = d.has_tag,
                     "authenticated"_a = d.authenticated, "crc"_a = d.crc, "wire_bytes"_a = d.wire_bytes,
                     "dtype"_a = std::string(dtype_name(d.kv.type())),
                     "layers"_a = std::vector<layer_index>(d.kv.layers().begin(), d.kv.layers().end()),
                     "pairing"_a = std::string(rope_pairing_name(fp.rope.pairing)), "theta"_a = fp.rope.theta,
                     "rotary_dims"_a = fp.rope.rotary_dims,
                     "quantization"_a =
                         d.quantization
                             ? py::object(py::str(std::string(quant_scheme_name(d.quantization->scheme))))
                             : py::object(py::none()));
        return out;
      },
      "frame"_a, py::kw_only(), "key"_a = py::none(), "require_authentication"_a = false,
      "Decodes a KV relay frame (CRC and, with key, the HMAC verified): a dict with k, v (bfloat16 as uint16 "
      "bits), positions, has_tag, authenticated, dtype, layers, RoPE, quantization.");
}

}  // namespace

void bind_kv(py::module_& m) {
  bind_kv_transforms(m);
  bind_kv_selection(m);
}

}  // namespace latentaudit::python

// SPDX-License-Identifier: MIT
// `latentaudit gguf export`: an HF Llama checkpoint (the organisms included) to a GGUF file that
// llama.cpp runs (engine/gguf_export.hpp, docs/gguf.md); `latentaudit gguf inspect`: a GGUF file's
// header, scalar metadata and tensors, validated by the bounded reader (engine/gguf.hpp).
#include <latentaudit/core/file_check.hpp>
#include <latentaudit/engine/gguf.hpp>
#include <latentaudit/engine/gguf_export.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "cli.hpp"
#include "output_guard.hpp"

namespace latentaudit::cli {
namespace {

std::vector<option_spec> export_options() {
  return {{"--model", "DIR", "HF Llama checkpoint directory: config.json and model.safetensors (required)"},
          {"--out", "FILE", "GGUF file to write (replaced whole, or not written on error) (required)"},
          {"--dtype", "T", "storage of the 2-D weights: f32, f16 or bf16 (1-D norms stay f32); default f32"},
          {"--name", "NAME", "general.name in the file; default the model directory's name"},
          {"--vocab", "FILE",
           "copy the tokenizer (every tokenizer.* key) of this GGUF file, e.g. one of llama.cpp's "
           "ggml-vocab-*.gguf; its token count must equal the checkpoint's vocab_size (default: the folder's "
           "tokenizer.json as a 'llama' vocabulary when it has one, else no tokenizer)"},
          common_option("--pretty")};
}

std::vector<option_spec> gguf_inspect_options() {
  return {{"--tensors", "", "list every tensor (name, ggml type, shape, offset)"}, common_option("--pretty")};
}

int run_export(std::span<const std::string> words) {
  const auto args = arguments::parse(words, export_options(), "gguf export");
  if (args.help()) {
    std::fputs(
        help_text("latentaudit gguf export --model DIR --out FILE.gguf [options]",
                  "Converts an HF Llama checkpoint (LlamaForCausalLM: GQA, tied or untied embeddings, no\n"
                  "biases or rope scaling; the model organisms included) into a GGUF file that llama.cpp\n"
                  "runs as architecture 'llama': hyperparameters as llama.cpp's convert_hf_to_gguf.py\n"
                  "writes them, Q and K rows permuted to llama.cpp's adjacent-pair RoPE, the folder's\n"
                  "tokenizer.json as a 'llama' vocabulary (else tokenizer.ggml.model 'none', token ids\n"
                  "only) unless --vocab copies one from another GGUF file, and the reference engine's\n"
                  "weights hash\n"
                  "as latentaudit.source.weights_hash. Run llama.cpp with flash attention off and an f32\n"
                  "KV cache to reproduce the reference engine's logits (docs/gguf.md, docs/engines.md).\n"
                  "Prints a JSON summary. Bad input (another architecture, a missing or mis-shaped tensor)\n"
                  "exits 2 with one line.\n",
                  export_options())
            .c_str(),
        stdout);
    return exit_ok;
  }
  const std::string model = args.require("--model");
  const std::string out = args.require("--out");
  require_output_file(out, "--out");  // before the conversion, not after it
  refuse_output_over_inputs("gguf export", "--out", out,
                            {{"--model", model}, {"--vocab", args.get("--vocab").value_or("")}});
  const auto type = *parse_dtype(args.choice("--dtype", "f32", {"f32", "f16", "bf16"}));
  const auto s = export_llama_gguf(
      model, out,
      {.type = type, .name = args.get("--name").value_or(""), .vocab = args.get("--vocab").value_or("")});
  json_value j = json_value::object();
  j.set("out", out);
  j.set("architecture", "llama");
  j.set("dtype", std::string(dtype_name(type)));
  j.set("tensors", static_cast<std::uint64_t>(s.tensors));
  j.set("bytes", s.file_bytes);
  j.set("vocab_size", s.config.vocab_size);
  j.set("layers", s.config.n_layers);
  j.set("heads", s.config.n_heads);
  j.set("kv_heads", s.config.n_kv_heads);
  j.set("head_dim", s.config.head_dim);
  j.set("tied_embeddings", s.config.tie_word_embeddings);
  if (!s.tokenizer.empty()) j.set("tokenizer_from", s.tokenizer);  // --vocab, or the folder's tokenizer.json
  j.set("weights_hash", std::to_string(s.weights_hash));           // decimal text: u64 exceeds a JSON double
  print_json(j, args.has("--pretty"));
  return exit_ok;
}

json_value value_json(const gguf_value& v) {
  switch (v.type()) {
    case gguf_value_type::string:
      return json_value(v.as_string());
    case gguf_value_type::f32:
    case gguf_value_type::f64:
      return json_value(v.as_float());
    case gguf_value_type::boolean:
      return json_value(v.as_bool());
    case gguf_value_type::u64:
    case gguf_value_type::i64:  // 64-bit integers as decimal text: a JSON double rounds beyond 2^53
      return v.type() == gguf_value_type::u64 ? json_value(std::to_string(v.as_uint()))
                                              : json_value(std::to_string(v.as_int()));
    default:
      return json_value(v.as_int());
  }
}

int run_gguf_inspect(std::span<const std::string> words) {
  std::vector<std::string> rest;
  std::string file;
  for (const auto& w : words) {
    if (file.empty() && w.rfind("--", 0) != 0)
      file = w;
    else
      rest.push_back(w);
  }
  const auto args = arguments::parse(rest, gguf_inspect_options(), "gguf inspect");
  if (args.help()) {
    std::fputs(
        help_text("latentaudit gguf inspect FILE [options]",
                  "Validates a GGUF file with the bounded reader and prints its version, alignment,\n"
                  "scalar metadata (arrays as their element type and length) and tensor count as JSON.\n"
                  "A malformed file exits 2 with one line naming the problem.\n",
                  gguf_inspect_options())
            .c_str(),
        stdout);
    return exit_ok;
  }
  if (file.empty())
    throw usage_error("gguf inspect: missing the GGUF FILE (see 'latentaudit gguf inspect --help')");
  const auto f = gguf_file::open(file);
  json_value j = json_value::object();
  j.set("file", file);
  j.set("version", static_cast<std::uint64_t>(f.version()));
  j.set("alignment", f.alignment());
  json_value meta = json_value::object();
  for (const auto& [key, v] : f.metadata()) {
    if (v.is_array()) {
      json_value a = json_value::object();
      a.set("array", std::string(gguf_value_type_name(v.type())));
      a.set("length", static_cast<std::uint64_t>(v.size()));
      meta.set(key, std::move(a));
    } else {
      meta.set(key, value_json(v));
    }
  }
  j.set("metadata", std::move(meta));
  j.set("tensor_count", static_cast<std::uint64_t>(f.tensors().size()));
  if (args.has("--tensors")) {
    json_value ts = json_value::array();
    for (const auto& t : f.tensors()) {
      json_value o = json_value::object();
      o.set("name", t.name);
      const auto layout = ggml_type_layout_of(t.ggml_type);
      o.set("type", std::string(layout ? layout->name : "?"));
      json_value shape = json_value::array();
      for (auto d : t.shape()) shape.push_back(d);
      o.set("shape", std::move(shape));
      o.set("offset", t.offset);
      o.set("bytes", t.bytes);
      ts.push_back(std::move(o));
    }
    j.set("tensors", std::move(ts));
  }
  print_json(j, args.has("--pretty"));
  return exit_ok;
}

int run_gguf(std::span<const std::string> words) {
  if (words.empty())
    throw usage_error("gguf: missing command (export or inspect; see 'latentaudit gguf --help')");
  if (words[0] == "--help") {
    std::fputs(
        "usage: latentaudit gguf <export|inspect> ...\n\n"
        "  export --model DIR --out FILE.gguf   convert an HF Llama checkpoint to GGUF for llama.cpp\n"
        "  inspect FILE                         validate a GGUF file and print its metadata\n\n"
        "Run 'latentaudit gguf <command> --help' for the options.\n",
        stdout);
    return exit_ok;
  }
  if (words[0] == "export") return run_export(words.subspan(1));
  if (words[0] == "inspect") return run_gguf_inspect(words.subspan(1));
  throw usage_error("gguf: unknown command '" + words[0] + "' (expected export or inspect)");
}

[[maybe_unused]] const bool registered_gguf = register_subcommand(
    {"gguf", "convert a Llama checkpoint to GGUF for llama.cpp (gguf export) or inspect one (gguf inspect)",
     run_gguf});

}  // namespace
}  // namespace latentaudit::cli

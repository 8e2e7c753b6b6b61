// SPDX-License-Identifier: MIT
// `latentaudit tokenize --vocab F.gguf --text STRING [--special]`: the token ids llama.cpp's
// tokenizer of a GGUF vocabulary gives a text (engine/llama_cpp_tokenizer.hpp), or `--model DIR` those
// of an HF tokenizer.json (engine/tokenizer_json.hpp) or, `--model F.gguf`, of a GGUF file's
// SentencePiece vocabulary (engine/spm_tokenizer.hpp; both without llama.cpp), as a JSON array —
// what an audit of a text task feeds the model. A CLI built without llama.cpp says so and exits 2.
#include <latentaudit/engine/spm_tokenizer.hpp>
#include <latentaudit/engine/tokenizer_json.hpp>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli.hpp"
#include "engine_select.hpp"
#include "gguf_check.hpp"

#if LATENTAUDIT_CLI_LLAMA_CPP
#include <latentaudit/engine/llama_cpp_tokenizer.hpp>
#endif

namespace latentaudit::cli {
namespace {

std::vector<option_spec> tokenize_options() {
  return {
      {"--vocab", "FILE",
       "GGUF file whose tokenizer to use (loaded vocab-only: a model exported with --vocab, or one of "
       "llama.cpp's ggml-vocab-*.gguf); or"},
      {"--model", "DIR",
       "HF model folder (or tokenizer.json file) whose tokenizer.json to use (engine/tokenizer_json.hpp), "
       "or a GGUF file whose SentencePiece vocabulary to use (engine/spm_tokenizer.hpp), as the reference "
       "engine does; no llama.cpp needed; one of --vocab and --model is required"},
      {"--text", "STRING", "the text to tokenize (required; may be empty: --text \"\")"},
      {"--special", "",
       "add the vocabulary's BOS/EOS and parse special-token text such as <s> (default: neither)"},
      {"--decode", "", "print {\"ids\": [...], \"text\": detokenized ids} instead of the array"}};
}

// Prints the ids of `text` under `tok` (either tokenizer: tokenizer_json or llama_cpp_tokenizer, the
// same encode/decode calls) as a JSON array, or with `decode` as {"ids": [...], "text": ...}.
template <class Tokenizer>
int print_tokens(const Tokenizer& tok, const std::string& text, bool special, bool decode) {
  const auto ids = tok.encode(text, special);
  json_value a = json_value::array();
  for (const auto id : ids) a.push_back(static_cast<std::int64_t>(id));
  if (!decode) {
    print_json(a, false);
    return exit_ok;
  }
  json_value j = json_value::object();
  j.set("ids", std::move(a));
  j.set("text", tok.decode(ids, special));
  print_json(j, false);
  return exit_ok;
}

// Whether `p` names a tokenizer.json (any *.json file) rather than a GGUF file.
bool is_json_file(const std::filesystem::path& p) { return p.extension() == ".json"; }

int run_tokenize(std::span<const std::string> words) {
  const auto specs = tokenize_options();
  const auto args = arguments::parse(words, specs, "tokenize");
  if (args.help()) {
    std::fputs(
        help_text("latentaudit tokenize (--vocab F.gguf | --model DIR|F.gguf) --text STRING [--special]",
                  "Prints the token ids of STRING under the GGUF file's tokenizer (llama.cpp,\n"
                  "vocab-only load) as a JSON array: no BOS or other special token is added, and\n"
                  "special-token text is tokenized as plain text, unless --special. These are the ids\n"
                  "an audit of a text task (audit --tasks) feeds the model for a text field. --vocab\n"
                  "needs a latentaudit built with llama.cpp (else exit 2); --model reads an HF\n"
                  "tokenizer.json, or a GGUF file's SentencePiece vocabulary, itself (as the reference\n"
                  "engine tokenizes). A file without a tokenizer (tokenizer.ggml.model 'none') or a\n"
                  "malformed or unsupported tokenizer.json or vocabulary exits 2.\n",
                  specs)
            .c_str(),
        stdout);
    return exit_ok;
  }
  // The empty text is a text (llama.cpp tokenizes it to [], or to [BOS] with --special).
  const auto text_arg = args.get("--text");
  if (!text_arg) throw usage_error("tokenize: missing required option --text");
  const std::string& text = *text_arg;
  if (const auto model = args.get("--model")) {  // an HF tokenizer.json: the library's own reader
    if (args.get("--vocab")) throw usage_error("tokenize: give --vocab or --model, not both");
    std::error_code ec;
    if (std::filesystem::is_regular_file(*model, ec) && !is_json_file(*model))  // a GGUF file
      return print_tokens(spm_tokenizer::load(*model), text, args.has("--special"), args.has("--decode"));
    return print_tokens(tokenizer_json::load(*model), text, args.has("--special"), args.has("--decode"));
  }
  const std::string vocab = args.require("--vocab");
#if LATENTAUDIT_CLI_LLAMA_CPP
  check_gguf_for_llama(vocab, "tokenize", "--vocab", true);  // before llama.cpp parses it
  return print_tokens(llama_cpp_tokenizer::load(vocab), text, args.has("--special"), args.has("--decode"));
#else
  throw usage_error(
      "tokenize: this latentaudit was built without llama.cpp, whose tokenizers it uses (run "
      "scripts/install-deps.sh, then configure with -DLATENTAUDIT_LLAMA_CPP=ON)");
#endif
}

[[maybe_unused]] const bool registered_tokenize = register_subcommand(
    {"tokenize", "token ids of a text under a GGUF vocabulary's tokenizer (llama.cpp), as a JSON array",
     run_tokenize});

}  // namespace
}  // namespace latentaudit::cli

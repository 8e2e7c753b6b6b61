// SPDX-License-Identifier: MIT
// Test support: the texts the tokenizer comparisons run (docs/real-models.md): a few hundred story
// sentences, spacing and punctuation variants, and characters outside small vocabularies.
#ifndef LATENTAUDIT_TESTS_SUPPORT_TOKENIZER_TEXTS_HPP
#define LATENTAUDIT_TESTS_SUPPORT_TOKENIZER_TEXTS_HPP

#include <string>
#include <vector>

namespace latentaudit::test {

/// A few hundred texts (333): story sentences, spacing and punctuation variants, and characters
/// outside the 656K vocabulary (accents, emoji, CJK, control bytes, tabs).
inline std::vector<std::string> tokenizer_texts() {
  const std::vector<std::string> base = {
      "Once upon a time, there was a little girl named Lily.",
      "She loved to play outside in the sun.",
      "One day, Tom went to the park with his dog Max.",
      "\"Can I have the ball?\" asked Sue. Her mom said, \"Yes, you can!\"",
      "The big, red car went vroom! It was very fast.",
      "Lily had a dog. The dog was named Max. At the park, Lily threw the ball to",
      "They were happy and played all day.\nThe end.",
      "Ben and Mia found a shiny rock. It was 3 years old... or 100?",
      "<|start_story|>Once upon a time<|end_story|>",
      "  two leading spaces, and  double  spaces ",
      "UPPER CASE and MiXeD cAsE words",
      "numbers 0123456789 and symbols #$%&*+/=@[]^_`{|}~",
      "",
      " ",
      "a",
      " Max",
      "Max",
  };
  const std::vector<std::string> odd = {"caf\xC3\xA9",
                                        "na\xC3\xAFve r\xC3\xA9sum\xC3\xA9",
                                        "\xF0\x9F\x98\x80",
                                        "\xF0\x9F\x90\xB6 dog \xF0\x9F\x90\xB1",
                                        "\xE4\xB8\x96\xE7\x95\x8C",
                                        "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E text",
                                        "tab\there",
                                        "bell\x07 and \x01\x02\x1f",
                                        "\xC2\xA0nbsp",
                                        "\xE2\x80\x94"
                                        "dash\xE2\x80\x94"};
  std::vector<std::string> out = base;
  for (const auto& o : odd) out.push_back(o);
  // combinations: every base sentence with every odd piece before, inside and after
  for (std::size_t i = 0; i < base.size(); ++i)
    for (std::size_t j = 0; j < odd.size(); ++j) {
      const auto& b = base[i];
      const auto& o = odd[j];
      switch ((i + j) % 3) {
        case 0:
          out.push_back(o + " " + b);
          break;
        case 1:
          out.push_back(b.substr(0, b.size() / 2) + o + b.substr(b.size() / 2));
          break;
        default:
          out.push_back(b + o);
          break;
      }
    }
  // sentence pairs joined by a space, a newline and nothing
  for (std::size_t i = 0; i < base.size(); ++i)
    for (std::size_t j = i + 1; j < base.size(); ++j) out.push_back(base[i] + (j % 2 ? " " : "\n") + base[j]);
  return out;
}

}  // namespace latentaudit::test

#endif  // LATENTAUDIT_TESTS_SUPPORT_TOKENIZER_TEXTS_HPP

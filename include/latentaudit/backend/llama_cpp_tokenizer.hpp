// SPDX-License-Identifier: MIT
// Deprecated: the engine module was named backend/; this header forwards to
// <latentaudit/engine/llama_cpp_tokenizer.hpp> so that code written against the former path keeps compiling.
#ifndef LATENTAUDIT_DEPRECATED_BACKEND_LLAMA_CPP_TOKENIZER_HPP
#define LATENTAUDIT_DEPRECATED_BACKEND_LLAMA_CPP_TOKENIZER_HPP

#include "../engine/llama_cpp_tokenizer.hpp"  // IWYU pragma: export

#endif  // LATENTAUDIT_DEPRECATED_BACKEND_LLAMA_CPP_TOKENIZER_HPP

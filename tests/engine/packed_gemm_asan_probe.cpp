// SPDX-License-Identifier: MIT
// The sanitizer stage's proof that the packed product's one check per call finds what ASan's check
// on each of the kernel's loads and stores would (engine/detail/packed_gemm.hpp: the kernel runs
// uninstrumented under AddressSanitizer, and packed_gemm_check tests every byte it will touch
// first). `packed_gemm_asan_probe WHICH` multiplies 7 rows by a 40 x 32 weight with one buffer a
// float short or one panel too many: x (an input row's last float), y (an output row's last
// float), panels (a panel past the packed weight), or none (the valid call, exit 0).
// tests/CMakeLists.txt runs each under ASan and expects its heap-buffer-overflow report.
#include <latentaudit/config.hpp>  // first: the detail header below is internal
#include <latentaudit/engine/detail/packed_gemm.hpp>

#include <cstdio>
#include <string_view>
#include <vector>

int main(int argc, char** argv) {
  namespace d = latentaudit::detail;
  const std::string_view which = argc > 1 ? argv[1] : "";
  if (which != "x" && which != "y" && which != "panels" && which != "none") {
    std::fprintf(stderr, "usage: packed_gemm_asan_probe x|y|panels|none\n");
    return 2;
  }
  if (!d::packed_gemm_available()) {
    std::puts("no AVX2/FMA here: the packed kernel does not run");
    return 0;
  }
  constexpr std::int64_t in = 32, out = 40, n = 7;
  const std::vector<float> w(out * in, 0.5f);
  const auto pw = d::pack_weight(w.data(), out, in, in);
  std::vector<float> x(n * in - (which == "x" ? 1 : 0), 1.0f);
  std::vector<float> y(n * out - (which == "y" ? 1 : 0), 0.0f);
  d::packed_gemm(x.data(), in, pw, y.data(), out, n, 0, pw.panel_count() + (which == "panels" ? 1 : 0));
  std::printf("y[0] = %g\n", static_cast<double>(y[0]));  // 32 x 0.5 x 1
  return y[0] == 16.0f ? 0 : 1;
}

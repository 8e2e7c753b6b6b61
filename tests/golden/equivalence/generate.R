# SPDX-License-Identifier: MIT
# Golden values for estimators/equivalence.hpp: TOST equivalence and non-inferiority "by hand" with
# R's t.test (R 4.2.2, stats): for bounds (low, high) and level alpha,
#   lower test  t.test(treated, control, alternative = "greater", mu = low)   H1: delta > low
#   upper test  t.test(treated, control, alternative = "less",    mu = high)  H1: delta < high
#   interval    t.test(treated, control, conf.level = 1 - 2 * alpha)$conf.int
# and non-inferiority with margin m:
#   higher is better  t.test(..., alternative = "greater", mu = -m)           H1: delta > -m
#   lower is better   t.test(..., alternative = "less",    mu = +m)           H1: delta < +m
# with var.equal = TRUE for "student" and paired = TRUE for "paired".
# Run from this directory:  Rscript generate.R   (then /usr/bin/python3 generate.py)
options(digits = 17)
set.seed(4242)

datasets <- list()
add <- function(name, treated, control, bounds, margins) {
  datasets[[name]] <<- list(treated = treated, control = control, bounds = bounds, margins = margins)
}
# bounds: list of c(low, high); margins: vector of positive non-inferiority margins
add("near_zero", rnorm(20, 0.1, 1), rnorm(25, 0, 1.3), list(c(-0.8, 0.8), c(-0.3, 0.9), c(-2, 2)), c(0.5, 1))
add("clearly_different", rnorm(30, 1.5, 1), rnorm(30, 0, 1), list(c(-0.5, 0.5), c(-3, 3)), c(0.25, 2))
base <- rnorm(30, 0, 2)
add("offset_1e6", 1e6 + base + rnorm(30, 0.05, 0.4), 1e6 + base + rnorm(30, 0, 0.4),
    list(c(-0.5, 0.5), c(-0.1, 0.25)), c(0.1, 0.3))
add("large_equivalent", rnorm(500, 0.02, 1), rnorm(480, 0, 1), list(c(-0.2, 0.2), c(0.01, 0.5)), c(0.05, 0.2))
add("lopsided", rnorm(6, 0.2, 2), rnorm(60, 0, 0.3), list(c(-1, 1), c(-4, 5)), c(1, 3))
add("bounds_off_zero", rnorm(40, 0.6, 0.5), rnorm(40, 0, 0.5), list(c(0.2, 1.0), c(0.5, 0.7)), c(0.1))

f17 <- function(x) vapply(x, function(v) format(v, digits = 17), "")
eq <- list(); ni <- list(); data_rows <- list()
for (name in names(datasets)) {
  d <- datasets[[name]]
  data_rows[[length(data_rows) + 1]] <- data.frame(dataset = name, arm = "treated",
    i = seq_along(d$treated) - 1, y = f17(d$treated))
  data_rows[[length(data_rows) + 1]] <- data.frame(dataset = name, arm = "control",
    i = seq_along(d$control) - 1, y = f17(d$control))
  designs <- c("welch", "student")
  if (length(d$treated) == length(d$control)) designs <- c(designs, "paired")
  tt <- function(design, ...) t.test(d$treated, d$control, var.equal = (design == "student"),
                                     paired = (design == "paired"), ...)
  est_of <- function(r) if (length(r$estimate) == 1) unname(r$estimate) else unname(r$estimate[1] - r$estimate[2])
  for (design in designs) {
    for (alpha in c(0.05, 0.1, 0.025)) {
      ci <- tt(design, conf.level = 1 - 2 * alpha)
      for (b in d$bounds) {
        lo <- tt(design, alternative = "greater", mu = b[1])
        hi <- tt(design, alternative = "less", mu = b[2])
        eq[[length(eq) + 1]] <- data.frame(
          dataset = name, design = design, low = f17(b[1]), high = f17(b[2]), alpha = f17(alpha),
          estimate = f17(est_of(ci)), std_error = f17(ci$stderr), df = f17(unname(ci$parameter)),
          t_lower = f17(unname(lo$statistic)), p_lower = f17(lo$p.value),
          t_upper = f17(unname(hi$statistic)), p_upper = f17(hi$p.value),
          p_value = f17(max(lo$p.value, hi$p.value)),
          ci_low = f17(ci$conf.int[1]), ci_high = f17(ci$conf.int[2]),
          equivalent = as.integer(max(lo$p.value, hi$p.value) < alpha))
      }
      for (m in d$margins) {
        for (better in c("higher", "lower")) {
          r <- if (better == "higher") tt(design, alternative = "greater", mu = -m)
               else tt(design, alternative = "less", mu = m)
          ni[[length(ni) + 1]] <- data.frame(
            dataset = name, design = design, margin = f17(m), better = better, alpha = f17(alpha),
            estimate = f17(est_of(r)), std_error = f17(r$stderr), df = f17(unname(r$parameter)),
            statistic = f17(unname(r$statistic)), p_value = f17(r$p.value),
            ci_low = f17(ci$conf.int[1]), ci_high = f17(ci$conf.int[2]),
            non_inferior = as.integer(r$p.value < alpha))
        }
      }
    }
  }
}
write.csv(do.call(rbind, data_rows), "data.csv", row.names = FALSE, quote = FALSE)
write.csv(do.call(rbind, eq), "r_tost.csv", row.names = FALSE, quote = FALSE)
write.csv(do.call(rbind, ni), "r_non_inferiority.csv", row.names = FALSE, quote = FALSE)
cat("R", R.version.string, "\n")

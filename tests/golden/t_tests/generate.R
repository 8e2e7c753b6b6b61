# SPDX-License-Identifier: MIT
# Golden values for estimators/difference_in_means.hpp from R's t.test (R 4.2.2, stats).
# Run from this directory:  Rscript generate.R   (then /usr/bin/python3 generate.py, which reads data.csv)
# Writes data.csv (dataset, arm, i, y) and r_results.csv (one row per dataset x test x level x mu).
options(digits = 17)
set.seed(20261129)

datasets <- list()
add <- function(name, treated, control) datasets[[name]] <<- list(treated = treated, control = control)
# 1. small unequal arms, unequal variances
add("small_unequal", rnorm(12, 0.3, 1), rnorm(15, 0, 1.5))
# 2. very unequal arms and variances (Welch df far from n1 + n0 - 2)
add("lopsided", rnorm(5, 1, 3), rnorm(40, 0, 0.5))
# 3. large common offset 1e6 + noise (tests accurate means and variances)
base <- rnorm(30)
add("offset_1e6", 1e6 + base + rnorm(30, 0.2, 1), 1e6 + base + rnorm(30, 0, 1))
# 4. larger skewed arms
add("skewed", rexp(200, 1 / 2), rexp(150, 1 / 1.5) + 0.1)
# 5. the minimum size, n = 2 in each arm
add("minimum", c(0.4, 1.9), c(-0.3, 0.25))
# 6. correlated pairs (paired design)
u <- rnorm(25, 5, 2)
add("pairs", u + 0.4 + rnorm(25, 0, 0.5), u + rnorm(25, 0, 0.5))
# 7. one arm constant (Welch df = n0 - 1, SE from the other arm only)
add("one_constant", rep(2.5, 8), rnorm(8, 2, 1))
# 8. tiny scale (values ~ 1e-7)
add("tiny_scale", rnorm(20, 3e-7, 1e-7), rnorm(18, 2e-7, 2e-7))
# 9. paired, large offset
v <- rnorm(40, 0, 3)
add("pairs_offset_1e6", 1e6 + v + rnorm(40, -0.1, 0.3), 1e6 + v + rnorm(40, 0, 0.3))

f17 <- function(x) vapply(x, function(v) format(v, digits = 17), "")
rows <- list()
data_rows <- list()
for (name in names(datasets)) {
  d <- datasets[[name]]
  data_rows[[length(data_rows) + 1]] <- data.frame(dataset = name, arm = "treated",
    i = seq_along(d$treated) - 1, y = f17(d$treated))
  data_rows[[length(data_rows) + 1]] <- data.frame(dataset = name, arm = "control",
    i = seq_along(d$control) - 1, y = f17(d$control))
  tests <- c("welch", "student")
  if (length(d$treated) == length(d$control)) tests <- c(tests, "paired")
  for (test in tests) {
    for (level in c(0.9, 0.95, 0.99)) {
      for (mu in c(0, 0.5, -1.25)) {
        if (name == "tiny_scale") mu <- mu * 1e-7
        r <- t.test(d$treated, d$control, var.equal = (test == "student"),
                    paired = (test == "paired"), conf.level = level, mu = mu)
        est <- if (test == "paired") unname(r$estimate) else unname(r$estimate[1] - r$estimate[2])
        rows[[length(rows) + 1]] <- data.frame(
          dataset = name, test = test, level = f17(level), mu = f17(mu),
          estimate = f17(est), std_error = f17(r$stderr), df = f17(unname(r$parameter)),
          statistic = f17(unname(r$statistic)), p_value = f17(r$p.value),
          ci_low = f17(r$conf.int[1]), ci_high = f17(r$conf.int[2]))
      }
    }
  }
}
write.csv(do.call(rbind, data_rows), "data.csv", row.names = FALSE, quote = FALSE)
write.csv(do.call(rbind, rows), "r_results.csv", row.names = FALSE, quote = FALSE)
cat("R", R.version.string, "\n")

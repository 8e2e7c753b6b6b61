# SPDX-License-Identifier: MIT
# Golden values for estimators/power.hpp.
#  t_power.csv   R's power.t.test (stats, R 4.2.2): power for given n/delta, n for given power
#                (with tol = 1e-12 instead of the default eps^0.25, so the root is exact to the
#                accuracy of pt/qt), delta (MDE) for given n, and the smallest integer n reaching
#                the power (found here by stepping integer n through power.t.test).
#  mcnemar.csv   Connor (1987) sample size and power, computed by hand from the formula, and the
#                exact power of the exact conditional McNemar test by summation over the number of
#                discordant pairs, with the rejection decided by binom.test(b, m)$p.value <= alpha.
# Run from this directory: Rscript generate.R
f17 <- function(x) vapply(x, function(v) if (is.na(v)) "NA" else format(v, digits = 17), "")

# ---- t tests ----------------------------------------------------------------------------------
grid <- expand.grid(type = c("paired", "one.sample", "two.sample"),
                    alternative = c("two.sided", "one.sided"), strict = c(FALSE, TRUE),
                    stringsAsFactors = FALSE)
grid <- grid[!(grid$alternative == "one.sided" & grid$strict), ]  # strict only matters two-sided
settings <- list(  # n, delta, sd, sig.level, power
  c(n = 20, delta = 0.5, sd = 1, alpha = 0.05, power = 0.8),
  c(n = 7.5, delta = 1.3, sd = 2, alpha = 0.01, power = 0.9),
  c(n = 150, delta = 0.2, sd = 0.7, alpha = 0.1, power = 0.5),
  c(n = 3, delta = 2, sd = 1, alpha = 0.05, power = 0.95),
  c(n = 1000, delta = 0.05, sd = 0.4, alpha = 0.001, power = 0.99),
  c(n = 40, delta = -0.6, sd = 1.5, alpha = 0.05, power = 0.8)
)
rows <- list()
for (g in seq_len(nrow(grid))) {
  type <- grid$type[g]; alt <- grid$alternative[g]; strict <- grid$strict[g]
  for (s in settings) {
    pw <- power.t.test(n = s[["n"]], delta = s[["delta"]], sd = s[["sd"]], sig.level = s[["alpha"]],
                       type = type, alternative = alt, strict = strict)$power
    if (s[["delta"]] < 0 && alt == "one.sided") {
      n_sol <- NA; n_req <- NA; d_sol <- NA
    } else {
      n_sol <- power.t.test(delta = s[["delta"]], sd = s[["sd"]], sig.level = s[["alpha"]], power = s[["power"]],
                            type = type, alternative = alt, strict = strict, tol = 1e-12)$n
      pw_at <- function(k) power.t.test(n = k, delta = s[["delta"]], sd = s[["sd"]], sig.level = s[["alpha"]],
                                        type = type, alternative = alt, strict = strict)$power
      n_req <- max(2, ceiling(n_sol) - 2)
      while (pw_at(n_req) < s[["power"]]) n_req <- n_req + 1
      d_sol <- power.t.test(n = s[["n"]], sd = s[["sd"]], sig.level = s[["alpha"]], power = s[["power"]],
                            type = type, alternative = alt, strict = strict, tol = 1e-12)$delta
    }
    rows[[length(rows) + 1]] <- data.frame(
      type = type, alternative = alt, strict = as.integer(strict), n = f17(s[["n"]]), delta = f17(s[["delta"]]),
      sd = f17(s[["sd"]]), alpha = f17(s[["alpha"]]), target_power = f17(s[["power"]]), power = f17(pw),
      n_solved = f17(n_sol), n_required = ifelse(is.na(n_req), "NA", as.character(n_req)), delta_solved = f17(d_sol))
  }
}
write.table(do.call(rbind, rows), "t_power.csv", sep = ",", quote = FALSE, row.names = FALSE)

# ---- McNemar ----------------------------------------------------------------------------------
connor_n <- function(p10, p01, alpha, power, sides) {
  psi <- p10 + p01; d <- p10 - p01
  za <- qnorm(alpha / sides, lower.tail = FALSE); zb <- qnorm(power)
  (za * sqrt(psi) + zb * sqrt(psi - d^2))^2 / d^2
}
connor_power <- function(n, p10, p01, alpha, sides) {
  psi <- p10 + p01; d <- abs(p10 - p01)
  za <- qnorm(alpha / sides, lower.tail = FALSE)
  pnorm((sqrt(n) * d - za * sqrt(psi)) / sqrt(psi - d^2))
}
# P(reject | m) for the exact conditional test, cached per (m, configuration).
rej_cache <- new.env()
reject_prob <- function(m, pi1, alpha, sides) {
  key <- paste(m, pi1, alpha, sides)
  if (!is.null(rej_cache[[key]])) return(rej_cache[[key]])
  b <- 0:m
  pv <- vapply(b, function(x) binom.test(x, m, 0.5,
                 alternative = if (sides == 2) "two.sided" else "greater")$p.value, 0)
  r <- sum(dbinom(b, m, pi1)[pv <= alpha])
  rej_cache[[key]] <- r
  r
}
exact_power <- function(n, p10, p01, alpha, sides) {
  psi <- p10 + p01; pi1 <- max(p10, p01) / psi   # b = count in the larger discordant cell
  m <- 1:n
  sum(dbinom(m, n, psi) * vapply(m, reject_prob, 0, pi1 = pi1, alpha = alpha, sides = sides))
}
mc <- list(  # p10, p01, alpha, power, sides, n for the power columns
  c(0.25, 0.10, 0.05, 0.80, 2, 60), c(0.10, 0.25, 0.05, 0.90, 2, 120), c(0.30, 0.15, 0.01, 0.80, 2, 100),
  c(0.20, 0.05, 0.05, 0.80, 1, 40), c(0.45, 0.40, 0.05, 0.80, 2, 150), c(0.05, 0.00, 0.05, 0.80, 2, 90),
  c(0.12, 0.08, 0.10, 0.70, 1, 200))
mrows <- list()
for (s in mc) {
  p10 <- s[1]; p01 <- s[2]; alpha <- s[3]; power <- s[4]; sides <- s[5]; n <- s[6]
  nc <- connor_n(p10, p01, alpha, power, sides)
  ex_req <- 1
  while (exact_power(ex_req, p10, p01, alpha, sides) < power && ex_req < 1000) ex_req <- ex_req + 1
  if (exact_power(ex_req, p10, p01, alpha, sides) < power) ex_req <- NA
  mrows[[length(mrows) + 1]] <- data.frame(
    p10 = f17(p10), p01 = f17(p01), alpha = f17(alpha), target_power = f17(power), sides = sides, n = n,
    connor_n = f17(nc), connor_required = ceiling(nc), connor_power = f17(connor_power(n, p10, p01, alpha, sides)),
    exact_power = f17(exact_power(n, p10, p01, alpha, sides)),
    exact_required = ifelse(is.na(ex_req), "NA", as.character(ex_req)))
}
write.table(do.call(rbind, mrows), "mcnemar.csv", sep = ",", quote = FALSE, row.names = FALSE)

# SPDX-License-Identifier: MIT
# Golden values for include/latentaudit/estimators/paired_binary.hpp from R's own functions:
#   mcnemar.test(correct = TRUE/FALSE), binom.test(b, b + c, 0.5) for the exact p-value,
#   prop.test(x, n, correct = FALSE/TRUE) for Wilson limits, prop.test(c(x1, x0), c(n1, n0),
#   correct = FALSE/TRUE) for the unpaired test. No installed R package computes Newcombe's
#   intervals (PropCIs, DescTools, ratesci are not installed), so the square-and-add combination
#   is coded here by hand on top of R's Wilson limits (and again, independently, in generate.py).
# Run from this directory: Rscript generate.R   (R 4.2; writes *.csv next to this script)
options(digits = 17, warn = 1)
fmt <- function(x) ifelse(is.na(x), "NA", format(x, digits = 17))

# ---------------------------------------------------------------- data sets (raw 0/1 vectors)
set.seed(20261129)
paired_sets <- list(
  list(id = "p_n20",   n = 20,   probs = c(0.30, 0.25, 0.10, 0.35)),
  list(id = "p_n50",   n = 50,   probs = c(0.45, 0.15, 0.15, 0.25)),
  list(id = "p_n200",  n = 200,  probs = c(0.50, 0.12, 0.05, 0.33)),
  list(id = "p_n1000", n = 1000, probs = c(0.20, 0.03, 0.06, 0.71)),
  list(id = "p_n7",    n = 7,    probs = c(0.20, 0.40, 0.00, 0.40)))
paired_rows <- list()
for (s in paired_sets) {
  cell <- sample(1:4, s$n, replace = TRUE, prob = s$probs)   # 1 = both, 2 = treated only, 3 = control only, 4 = neither
  treated <- as.integer(cell %in% c(1, 2)); control <- as.integer(cell %in% c(1, 3))
  paired_rows[[s$id]] <- data.frame(dataset = s$id, treated = treated, control = control)
}
paired_data <- do.call(rbind, paired_rows)
write.csv(paired_data, "paired_data.csv", row.names = FALSE, quote = FALSE)

unpaired_sets <- list(
  list(id = "u_30_25",     n1 = 30,   n0 = 25,   p1 = 0.5,  p0 = 0.3),
  list(id = "u_100_120",   n1 = 100,  n0 = 120,  p1 = 0.62, p0 = 0.55),
  list(id = "u_12_9",      n1 = 12,   n0 = 9,    p1 = 0.9,  p0 = 0.2),
  list(id = "u_2000_1500", n1 = 2000, n0 = 1500, p1 = 0.04, p0 = 0.06))
unpaired_rows <- list()
for (s in unpaired_sets) {
  y1 <- rbinom(s$n1, 1, s$p1); y0 <- rbinom(s$n0, 1, s$p0)
  unpaired_rows[[s$id]] <- data.frame(dataset = s$id, arm = c(rep("treated", s$n1), rep("control", s$n0)),
                                      y = c(y1, y0))
}
unpaired_data <- do.call(rbind, unpaired_rows)
write.csv(unpaired_data, "unpaired_data.csv", row.names = FALSE, quote = FALSE)

# ---------------------------------------------------------------- paired tables
# case, a (both), b (treated only), c (control only), d (neither)
tab <- data.frame(case = character(), a = numeric(), b = numeric(), c = numeric(), d = numeric())
add <- function(tab, case, a, b, c, d) rbind(tab, data.frame(case = case, a = a, b = b, c = c, d = d))
tab <- add(tab, "newcombe_a", 36, 12, 2, 0)    # Newcombe (1998c) examples
tab <- add(tab, "newcombe_b", 18, 12, 2, 18)
tab <- add(tab, "newcombe_c", 53, 0, 0, 1)
tab <- add(tab, "newcombe_d", 0, 30, 0, 0)
tab <- add(tab, "cavo_2012", 59, 6, 16, 80)    # Fagerland, Lydersen & Laake (2017), ch. 8
tab <- add(tab, "b_zero", 10, 0, 5, 15)
tab <- add(tab, "c_zero", 10, 7, 0, 3)
tab <- add(tab, "b_eq_c", 4, 6, 6, 9)
tab <- add(tab, "diff_one", 3, 5, 4, 8)
tab <- add(tab, "all_concordant", 20, 0, 0, 30)
tab <- add(tab, "only_both", 12, 0, 0, 0)
tab <- add(tab, "n1_discordant", 0, 1, 0, 0)
tab <- add(tab, "n2_split", 0, 1, 1, 0)
tab <- add(tab, "only_discordant", 0, 9, 3, 0)
tab <- add(tab, "small_skewed", 1, 0, 4, 0)
tab <- add(tab, "large_1e5", 41234, 6021, 5790, 46955)
tab <- add(tab, "large_extreme", 99000, 900, 30, 70)
tab <- add(tab, "large_tail", 50000, 2000, 1000, 47000)
for (s in paired_sets) {
  dd <- paired_rows[[s$id]]
  tab <- add(tab, paste0("data:", s$id), sum(dd$treated == 1 & dd$control == 1), sum(dd$treated == 1 & dd$control == 0),
             sum(dd$treated == 0 & dd$control == 1), sum(dd$treated == 0 & dd$control == 0))
}
levels <- c(0.95, 0.90, 0.99, 0.5, 0.999)

wilson <- function(x, n, level, correct = FALSE) {
  if (!correct) return(as.numeric(prop.test(x, n, conf.level = level, correct = FALSE)$conf.int))
  # prop.test shrinks the Yates term to |x - n p| when that is < 1/2; choose p so it never is.
  p0 <- if (x >= 1) (x - 0.75) / n else 0.75 / n
  as.numeric(prop.test(x, n, p = p0, conf.level = level, correct = TRUE)$conf.int)
}

paired_out <- list()
for (i in seq_len(nrow(tab))) for (level in levels) {
  a <- tab$a[i]; b <- tab$b[i]; c <- tab$c[i]; d <- tab$d[i]; n <- a + b + c + d
  m <- matrix(c(a, c, b, d), 2)    # rows: treated 1/0, columns: control 1/0
  exact_p <- if (b + c > 0) binom.test(b, b + c, 0.5)$p.value else 1
  if (b + c > 0) {
    mc0 <- suppressWarnings(mcnemar.test(m, correct = FALSE)); mc1 <- suppressWarnings(mcnemar.test(m, correct = TRUE))
    chi2 <- unname(mc0$statistic); chi2_p <- mc0$p.value; chi2cc <- unname(mc1$statistic); chi2cc_p <- mc1$p.value
  } else {
    chi2 <- chi2_p <- chi2cc <- chi2cc_p <- NA
  }
  p1 <- (a + b) / n; p2 <- (a + c) / n
  w1 <- suppressWarnings(wilson(a + b, n, level)); w2 <- suppressWarnings(wilson(a + c, n, level))
  e <- a + b; f <- c + d; g <- a + c; h <- b + d
  if (e * f * g * h == 0) phi <- 0 else {
    num <- a * d - b * c
    if (num > 0) num <- max(num - n / 2, 0)
    phi <- num / sqrt(e * f * g * h)
  }
  dl1 <- p1 - w1[1]; du1 <- w1[2] - p1; dl2 <- p2 - w2[1]; du2 <- w2[2] - p2
  est <- (b - c) / n
  lo <- est - sqrt(dl1^2 - 2 * phi * dl1 * du2 + du2^2)
  hi <- est + sqrt(du1^2 - 2 * phi * du1 * dl2 + dl2^2)
  se <- sqrt((b + c) - (b - c)^2 / n) / n
  paired_out[[length(paired_out) + 1]] <- data.frame(
    case = tab$case[i], a = a, b = b, c = c, d = d, level = fmt(level), exact_p = fmt(exact_p),
    chi2 = fmt(chi2), chi2_p = fmt(chi2_p), chi2_cc = fmt(chi2cc), chi2_cc_p = fmt(chi2cc_p),
    phi = fmt(phi), estimate = fmt(est), std_error = fmt(se), ci_low = fmt(lo), ci_high = fmt(hi),
    wilson_t_low = fmt(w1[1]), wilson_t_high = fmt(w1[2]), wilson_c_low = fmt(w2[1]), wilson_c_high = fmt(w2[2]))
}
write.csv(do.call(rbind, paired_out), "paired_r.csv", row.names = FALSE, quote = FALSE)

# ---------------------------------------------------------------- unpaired tables
ut <- data.frame(case = character(), x1 = numeric(), n1 = numeric(), x0 = numeric(), n0 = numeric())
uadd <- function(ut, case, x1, n1, x0, n0) rbind(ut, data.frame(case = case, x1 = x1, n1 = n1, x0 = x0, n0 = n0))
ut <- uadd(ut, "newcombe_a", 56, 70, 48, 80)   # Newcombe (1998b) examples (a)-(h)
ut <- uadd(ut, "newcombe_b", 9, 10, 3, 10)
ut <- uadd(ut, "newcombe_c", 6, 7, 2, 7)
ut <- uadd(ut, "newcombe_d", 5, 56, 0, 29)
ut <- uadd(ut, "newcombe_e", 0, 10, 0, 20)
ut <- uadd(ut, "newcombe_f", 0, 10, 0, 10)
ut <- uadd(ut, "newcombe_g", 10, 10, 0, 20)
ut <- uadd(ut, "newcombe_h", 10, 10, 0, 10)
ut <- uadd(ut, "perondi_2004", 7, 34, 1, 34)   # Fagerland, Lydersen & Laake (2017), ch. 4
ut <- uadd(ut, "all_ones", 5, 5, 8, 8)
ut <- uadd(ut, "n1_each", 1, 1, 0, 1)
ut <- uadd(ut, "equal_props", 6, 20, 3, 10)
ut <- uadd(ut, "tiny_diff", 50, 101, 50, 100)  # |diff| < s/2: the corrected z is 0
ut <- uadd(ut, "large_1e5", 51234, 100000, 50012, 100000)
ut <- uadd(ut, "large_rare", 12, 100000, 31, 100000)
for (s in unpaired_sets) {
  dd <- unpaired_rows[[s$id]]
  ut <- uadd(ut, paste0("data:", s$id), sum(dd$y[dd$arm == "treated"]), sum(dd$arm == "treated"),
             sum(dd$y[dd$arm == "control"]), sum(dd$arm == "control"))
}
unpaired_out <- list()
for (i in seq_len(nrow(ut))) for (level in levels) for (correct in c(FALSE, TRUE)) {
  x1 <- ut$x1[i]; n1 <- ut$n1[i]; x0 <- ut$x0[i]; n0 <- ut$n0[i]
  p1 <- x1 / n1; p0 <- x0 / n0; est <- p1 - p0
  w1 <- suppressWarnings(wilson(x1, n1, level, correct)); w0 <- suppressWarnings(wilson(x0, n0, level, correct))
  lo <- est - sqrt((p1 - w1[1])^2 + (w0[2] - p0)^2)
  hi <- est + sqrt((w1[2] - p1)^2 + (p0 - w0[1])^2)
  se <- sqrt(p1 * (1 - p1) / n1 + p0 * (1 - p0) / n0)
  pt <- suppressWarnings(prop.test(c(x1, x0), c(n1, n0), correct = correct))
  chi2 <- unname(pt$statistic); pval <- pt$p.value
  if (is.nan(chi2)) { chi2 <- NA; pval <- NA }
  unpaired_out[[length(unpaired_out) + 1]] <- data.frame(
    case = ut$case[i], x1 = x1, n1 = n1, x0 = x0, n0 = n0, level = fmt(level), correct = as.integer(correct),
    estimate = fmt(est), std_error = fmt(se), chi2 = fmt(chi2), p_value = fmt(pval),
    ci_low = fmt(lo), ci_high = fmt(hi), wilson_t_low = fmt(w1[1]), wilson_t_high = fmt(w1[2]),
    wilson_c_low = fmt(w0[1]), wilson_c_high = fmt(w0[2]))
}
write.csv(do.call(rbind, unpaired_out), "unpaired_r.csv", row.names = FALSE, quote = FALSE)
cat("wrote paired_data.csv, unpaired_data.csv, paired_r.csv, unpaired_r.csv\n")

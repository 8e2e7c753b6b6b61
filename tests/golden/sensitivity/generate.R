# SPDX-License-Identifier: MIT
# Golden values for estimators/sensitivity.hpp (R 4.2, base only: EValue, rbounds and
# sensitivitymv are not installed here). Run from this directory: Rscript generate.R
#   evalue.csv      E-values by hand (VanderWeele & Ding 2017; conversions as EValue's evalues.OR
#                   / evalues.MD: RR ~ OR (rare), sqrt(OR) (common); RR ~ exp(0.91 d), CI exp(0.91 d
#                   -/+ 1.78 se))
#   pairs.csv       40 matched pairs (with ties in |d| and two zero differences)
#   small_pairs.csv 12 pairs (no ties, no zeros) for the exact method
#   rosenbaum.csv   bounds at several Gamma: normal approximation as in rbounds::psens (zeros dropped,
#                   average ranks, no continuity correction; upper tails by pnorm(lower.tail = FALSE)
#                   instead of psens' 1 - pnorm), and exact bounds by full enumeration of the 2^12
#                   sign patterns; at Gamma = 1 also wilcox.test(paired, "greater") p-values
#   critical.csv    Gamma* where the upper bound reaches alpha, by uniroot on log Gamma (tol 1e-15)
full <- function(df) { for (j in seq_along(df)) if (is.numeric(df[[j]]))
  df[[j]] <- ifelse(is.na(df[[j]]), "NA", sprintf("%.17g", df[[j]])); df }

# ---- E-values -------------------------------------------------------------------------------
thr <- function(x, x0) { r <- if (x >= x0) x / x0 else x0 / x; r + sqrt(r * (r - 1)) }
ev_rr <- function(est, lo, hi, true = 1) {
  point <- if (est == true) 1 else thr(est, true)
  ci <- NA
  if (est > true && !is.na(lo)) ci <- if (lo <= true) 1 else thr(lo, true)
  if (est < true && !is.na(hi)) ci <- if (hi >= true) 1 else thr(hi, true)
  c(point, ci)
}
ev <- NULL
add <- function(case, kind, est, lo, hi, rare, true, rr, rlo, rhi, rtrue) {
  v <- ev_rr(rr, rlo, rhi, rtrue)
  ev <<- rbind(ev, data.frame(case = case, kind = kind, est = est, lo = lo, hi = hi, rare = rare, true = true,
                              point = v[1], ci = v[2]))
}
rrc <- function(case, est, lo, hi, true = 1) add(case, "rr", est, lo, hi, NA, true, est, lo, hi, true)
orc <- function(case, est, lo, hi, rare, true = 1) {
  f <- if (rare) identity else sqrt
  add(case, "or", est, lo, hi, as.numeric(rare), true, f(est), f(lo), f(hi), f(true))
}
mdc <- function(case, d, se, true = 0) add(case, "smd", d, se, NA, NA, true, exp(0.91 * d),
                                            exp(0.91 * d - 1.78 * se), exp(0.91 * d + 1.78 * se), exp(0.91 * true))
rrc("published_breastfeeding", 3.9, 1.8, 8.7)  # VanderWeele & Ding 2017: E = 7.26, CI 3.0
rrc("rr_protective", 0.8, 0.71, 0.91)
rrc("rr_ci_covers", 1.3, 0.9, 1.8)
rrc("rr_true", 2.5, 1.9, 3.3, true = 1.5)
rrc("rr_no_ci", 1.7, NA, NA)
orc("or_rare", 2.5, 1.4, 4.2, TRUE)
orc("or_common", 2.5, 1.4, 4.2, FALSE)
orc("or_common_protective", 0.6, 0.45, 0.8, FALSE)
mdc("smd_pos", 0.5, 0.1)
mdc("smd_neg", -0.3, 0.12)
mdc("smd_covers", 0.1, 0.2)
mdc("smd_true", 0.6, 0.1, true = 0.2)
write.csv(full(ev), "evalue.csv", row.names = FALSE, quote = FALSE)

# ---- Rosenbaum bounds -----------------------------------------------------------------------
set.seed(31337)
n <- 40
c0 <- round(rnorm(n, 10, 2), 1)
t1 <- round(c0 + 0.6 + rnorm(n, 0, 1), 1)
t1[c(3, 17)] <- c0[c(3, 17)]  # two zero differences
write.csv(full(data.frame(treated = t1, control = c0)), "pairs.csv", row.names = FALSE, quote = FALSE)
m <- 12
sc <- rnorm(m)
st <- sc + 0.8 + rnorm(m)
write.csv(full(data.frame(treated = st, control = sc)), "small_pairs.csv", row.names = FALSE, quote = FALSE)

prep <- function(tr, ct) {
  d <- tr - ct
  d <- d[d != 0]
  q <- rank(abs(d), ties.method = "average")
  list(q = q, T = sum(q * (d > 0)))
}
normal_bounds <- function(tr, ct, g) {
  s <- prep(tr, ct)
  pp <- g / (1 + g); pm <- 1 / (1 + g)
  V <- sum(s$q^2 * pp * (1 - pp))
  c(T = s$T, E_up = sum(s$q) * pp, E_lo = sum(s$q) * pm, V = V,
    p_up = pnorm((s$T - sum(s$q) * pp) / sqrt(V), lower.tail = FALSE),
    p_lo = pnorm((s$T - sum(s$q) * pm) / sqrt(V), lower.tail = FALSE))
}
signs <- as.matrix(expand.grid(rep(list(0:1), m)))  # all 2^12 patterns
exact_bounds <- function(tr, ct, g) {
  s <- prep(tr, ct)
  tt <- drop(signs %*% s$q)
  k <- rowSums(signs)
  tail <- function(p) sum((p^k * (1 - p)^(length(s$q) - k))[tt >= s$T - 1e-9])
  c(T = s$T, p_up = tail(g / (1 + g)), p_lo = tail(1 / (1 + g)))
}
ro <- NULL
for (g in c(1, 1.5, 2, 3, 5)) {
  b <- normal_bounds(t1, c0, g)
  ro <- rbind(ro, data.frame(data = "pairs", method = "normal", gamma = g, T = b[["T"]], E_up = b[["E_up"]],
                             E_lo = b[["E_lo"]], V = b[["V"]], p_up = b[["p_up"]], p_lo = b[["p_lo"]]))
  e <- exact_bounds(st, sc, g)
  ro <- rbind(ro, data.frame(data = "small_pairs", method = "exact", gamma = g, T = e[["T"]], E_up = NA, E_lo = NA,
                             V = NA, p_up = e[["p_up"]], p_lo = e[["p_lo"]]))
  b <- normal_bounds(st, sc, g)
  ro <- rbind(ro, data.frame(data = "small_pairs", method = "normal", gamma = g, T = b[["T"]], E_up = b[["E_up"]],
                             E_lo = b[["E_lo"]], V = b[["V"]], p_up = b[["p_up"]], p_lo = b[["p_lo"]]))
}
# Peer at Gamma = 1: wilcox.test (normal with R's tie correction, no continuity correction; exact).
w1 <- suppressWarnings(wilcox.test(t1, c0, paired = TRUE, alternative = "greater", exact = FALSE, correct = FALSE))
w2 <- wilcox.test(st, sc, paired = TRUE, alternative = "greater", exact = TRUE)
ro <- rbind(ro, data.frame(data = "pairs", method = "wilcox.test_normal", gamma = 1, T = unname(w1$statistic),
                           E_up = NA, E_lo = NA, V = NA, p_up = w1$p.value, p_lo = w1$p.value))
ro <- rbind(ro, data.frame(data = "small_pairs", method = "wilcox.test_exact", gamma = 1, T = unname(w2$statistic),
                           E_up = NA, E_lo = NA, V = NA, p_up = w2$p.value, p_lo = w2$p.value))
write.csv(full(ro), "rosenbaum.csv", row.names = FALSE, quote = FALSE)

crit <- function(f, alpha) {
  h <- function(lg) f(exp(lg)) - alpha
  exp(uniroot(h, c(0, 10), tol = 1e-15, maxiter = 1000)$root)
}
cr <- data.frame(data = c("pairs", "pairs", "small_pairs", "small_pairs"),
                 method = c("normal", "normal", "normal", "exact"), alpha = c(0.05, 0.01, 0.05, 0.05))
cr$gamma <- c(crit(function(g) normal_bounds(t1, c0, g)[["p_up"]], 0.05),
              crit(function(g) normal_bounds(t1, c0, g)[["p_up"]], 0.01),
              crit(function(g) normal_bounds(st, sc, g)[["p_up"]], 0.05),
              crit(function(g) exact_bounds(st, sc, g)[["p_up"]], 0.05))
write.csv(full(cr), "critical.csv", row.names = FALSE, quote = FALSE)
print(ev[ev$case == "published_breastfeeding", ]); print(cr)
cat("wilcox.test normal vs our normal at Gamma=1:", w1$p.value, normal_bounds(t1, c0, 1)[["p_up"]], "\n")
cat("wilcox.test exact vs enumeration at Gamma=1:", w2$p.value, exact_bounds(st, sc, 1)[["p_up"]], "\n")

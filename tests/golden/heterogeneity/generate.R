# SPDX-License-Identifier: MIT
# Golden values for estimators/heterogeneity.hpp (R 4.2; stats, sandwich, lmtest).
# Run from this directory: Rscript generate.R
#   unpaired.csv   n = 300: y, t, gs (string labels), gi (integer labels), m (moderator)
#   paired.csv     n = 120 pairs: y1, y0, gs, m
#   subgroups.csv  per analysis and group: t.test (Welch / paired) estimate, se, df, t, p, CI, and
#                  p.adjust(method = "holm" / "BH") over the groups; bin edges for binned analyses
#   interaction.csv per analysis and HC type: lmtest::waldtest(full, restricted,
#                  vcov = sandwich::vcovHC(full, type), test = "Chisq" / "F"), and the same
#                  statistic computed by hand (b' V^-1 b) as a cross-check
# Group order: labels sorted bytewise (C locale, sort(method = "radix")), integers numerically;
# bins from quantile(m, (0:K)/K) (type 7) with cut(include.lowest = TRUE, right = TRUE).
suppressMessages({ library(sandwich); library(lmtest) })
full <- function(df) { for (j in seq_along(df)) if (is.numeric(df[[j]]))
  df[[j]] <- ifelse(is.na(df[[j]]), "NA", sprintf("%.17g", df[[j]])); df }
set.seed(424242)
n <- 300
gs <- sample(c("b_low", "a_mid", "C_high"), n, replace = TRUE)
gi <- sample(c(2L, 10L, 33L, 7L), n, replace = TRUE)
m <- rexp(n)
t <- rbinom(n, 1, 0.5)
eff <- c(b_low = 0.2, a_mid = 0.8, C_high = 1.5)[gs]
y <- 1 + eff * t + 0.6 * m * t + 0.3 * m + rnorm(n, sd = ifelse(t == 1, 1.3, 1))
write.csv(full(data.frame(y = y, t = t, gs = gs, gi = gi, m = m)), "unpaired.csv", row.names = FALSE, quote = FALSE)

np <- 120
pg <- sample(c("x", "Y", "z"), np, replace = TRUE)
pm <- rnorm(np)
y0 <- rnorm(np) + pm
y1 <- y0 + 0.5 + c(x = 0, Y = 0.6, z = -0.3)[pg] + 0.4 * pm + rnorm(np, sd = 0.8)
write.csv(full(data.frame(y1 = y1, y0 = y0, gs = pg, m = pm)), "paired.csv", row.names = FALSE, quote = FALSE)

sub <- NULL; inter <- NULL
analyse <- function(name, g, paired, edges = NULL) {
  lev <- if (is.numeric(g)) sort(unique(g)) else sort(unique(g), method = "radix")
  f <- factor(g, levels = lev)
  rows <- NULL
  for (k in seq_along(lev)) {
    s <- f == lev[k]
    tt <- if (paired) t.test(y1[s], y0[s], paired = TRUE) else t.test(y[s & t == 1], y[s & t == 0])
    rows <- rbind(rows, data.frame(analysis = name, group = as.character(lev[k]), estimate = unname(if (paired) tt$estimate else tt$estimate[1] - tt$estimate[2]),
                                   se = tt$stderr, df = unname(tt$parameter), statistic = unname(tt$statistic),
                                   p = tt$p.value, ci_low = tt$conf.int[1], ci_high = tt$conf.int[2],
                                   lower_edge = if (is.null(edges)) NA else edges[k],
                                   upper_edge = if (is.null(edges)) NA else edges[k + 1]))
  }
  rows$p_holm <- p.adjust(rows$p, "holm"); rows$p_bh <- p.adjust(rows$p, "BH")
  sub <<- rbind(sub, rows)
  if (paired) {
    d <- y1 - y0; fit <- lm(d ~ f); fit0 <- lm(d ~ 1)
  } else {
    fit <- lm(y ~ t * f); fit0 <- lm(y ~ t + f)
  }
  q <- length(lev) - 1
  for (type in c("HC0", "HC1", "HC2", "HC3")) {
    V <- vcovHC(fit, type = type)
    wc <- waldtest(fit, fit0, vcov = V, test = "Chisq")
    wf <- waldtest(fit, fit0, vcov = V, test = "F")
    idx <- (length(coef(fit)) - q + 1):length(coef(fit))
    b <- coef(fit)[idx]
    W <- drop(t(b) %*% solve(V[idx, idx]) %*% b)
    inter <<- rbind(inter, data.frame(analysis = name, type = type, chisq = wc$Chisq[2], df = q,
                                      p_chisq = wc$`Pr(>Chisq)`[2], f = wf$F[2], df_residual = fit$df.residual,
                                      p_f = wf$`Pr(>F)`[2], chisq_by_hand = W))
  }
}
analyse("str", gs, FALSE)
analyse("int", gi, FALSE)
K <- 4; br <- quantile(m, (0:K) / K, names = FALSE)
analyse("bins4", as.integer(cut(m, br, include.lowest = TRUE, right = TRUE)), FALSE, edges = br)
analyse("paired_str", pg, TRUE)
K <- 3; brp <- quantile(pm, (0:K) / K, names = FALSE)
analyse("paired_bins3", as.integer(cut(pm, brp, include.lowest = TRUE, right = TRUE)), TRUE, edges = brp)
write.csv(full(sub), "subgroups.csv", row.names = FALSE, quote = FALSE)
write.csv(full(inter), "interaction.csv", row.names = FALSE, quote = FALSE)
cat("max rel. diff waldtest vs by hand:", max(abs(inter$chisq - inter$chisq_by_hand) / inter$chisq), "\n")

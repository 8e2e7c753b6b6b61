# SPDX-License-Identifier: MIT
# Golden values for include/latentaudit/estimators/regression.hpp from R lm + sandwich + lmtest.
# Run from this directory: Rscript generate.R   (R 4.2.2, sandwich 3.0-2, lmtest 0.9-40)
# Writes data.csv (the simulated data), r_terms.csv (one row per fit × coefficient) and
# r_fits.csv (per-fit scalars), r_wald.csv (Wald tests). All numbers with 17 significant digits.
suppressPackageStartupMessages({ library(sandwich); library(lmtest) })
options(digits = 17)
set.seed(20261129)
n <- 240; G <- 30
cl <- sample(rep(seq_len(G), times = rep_len(c(4, 6, 8, 10, 12), G)))[seq_len(n)]
cl[is.na(cl)] <- G
u <- rnorm(G)[cl]
x1 <- rnorm(n) + 0.5 * u
x2 <- rbinom(n, 1, 0.4)
x3 <- runif(n, -1, 2)
w <- runif(n, 0.5, 2)
y <- 1 + 0.5 * x1 - 0.3 * x2 + 0.2 * x3 + u + rnorm(n) * (0.5 + abs(x3))
d <- data.frame(y, x1, x2, x3, w, cl)
fmt <- function(x) format(x, digits = 17)
write.csv(data.frame(lapply(d, fmt)), "data.csv", row.names = FALSE, quote = FALSE)

fits <- list()
terms <- list()
add <- function(name, fit, V, dist, df) {
  b <- coef(fit); se <- sqrt(diag(V)); stat <- b / se
  if (dist == "normal") { p <- 2 * pnorm(-abs(stat)); q <- qnorm(0.975) } else {
    p <- 2 * pt(-abs(stat), df); q <- qt(0.975, df) }
  if (dist == "t_residual") {  # cross-check against coeftest / coefci (t with the residual df)
    ct <- coeftest(fit, vcov. = V)
    stopifnot(isTRUE(all.equal(unname(ct[, 4]), unname(p), tolerance = 1e-14)))
    ci <- coefci(fit, vcov. = V)
    stopifnot(isTRUE(all.equal(unname(ci[, 1]), unname(b - q * se), tolerance = 1e-14)))
  }
  terms[[length(terms) + 1]] <<- data.frame(fit = name, term = names(b), estimate = fmt(b), se = fmt(se),
    statistic = fmt(stat), p = fmt(p), ci_low = fmt(b - q * se), ci_high = fmt(b + q * se))
}
m <- lm(y ~ x1 + x2 + x3, data = d)
mw <- lm(y ~ x1 + x2 + x3, data = d, weights = w)
dfr <- df.residual(m)
for (fit_name in c("ols", "wls")) {
  fit <- if (fit_name == "ols") m else mw
  add(paste0(fit_name, "_classical_t"), fit, vcov(fit), "t_residual", dfr)
  for (ty in c("HC0", "HC1", "HC2", "HC3")) add(paste0(fit_name, "_", tolower(ty), "_t"), fit, vcovHC(fit, type = ty), "t_residual", dfr)
  add(paste0(fit_name, "_cr1_t"), fit, vcovCL(fit, cluster = ~cl, type = "HC1", cadjust = TRUE), "t_residual", dfr)
  add(paste0(fit_name, "_cr1_g_t"), fit, vcovCL(fit, cluster = ~cl, type = "HC0", cadjust = TRUE), "t_residual", dfr)
  add(paste0(fit_name, "_cr0_t"), fit, vcovCL(fit, cluster = ~cl, type = "HC0", cadjust = FALSE), "t_residual", dfr)
  add(paste0(fit_name, "_cr1_normal"), fit, vcovCL(fit, cluster = ~cl, type = "HC1"), "normal", Inf)
  add(paste0(fit_name, "_cr1_tcluster"), fit, vcovCL(fit, cluster = ~cl, type = "HC1"), "t_cluster", G - 1)
  add(paste0(fit_name, "_hc3_normal"), fit, vcovHC(fit, type = "HC3"), "normal", Inf)
}
# CR1 by hand (re-derivation of the sandwich formula).
X <- model.matrix(m); e <- resid(m); B <- solve(crossprod(X)); k <- ncol(X)
S <- rowsum(X * e, d$cl); V <- B %*% crossprod(S) %*% B * G / (G - 1) * (n - 1) / (n - k)
stopifnot(isTRUE(all.equal(V, vcovCL(m, cluster = ~cl), tolerance = 1e-13, check.attributes = FALSE)))
write.csv(do.call(rbind, terms), "r_terms.csv", row.names = FALSE, quote = FALSE)

s <- summary(m); sw <- summary(mw)
write.csv(data.frame(fit = c("ols", "wls"), sigma = fmt(c(s$sigma, sw$sigma)), r_squared = fmt(c(s$r.squared, sw$r.squared)),
                     adj_r_squared = fmt(c(s$adj.r.squared, sw$adj.r.squared)), df_residual = c(dfr, df.residual(mw))),
          "r_fits.csv", row.names = FALSE, quote = FALSE)

# Wald tests of x1 = x2 = 0 and of x1 - x3 = 0.1 with several covariances.
wald <- function(name, fit, V, R, r, df2) {
  Rb <- R %*% coef(fit) - r; W <- drop(t(Rb) %*% solve(R %*% V %*% t(R), Rb)); q <- nrow(R)
  data.frame(test = name, chi2 = fmt(W), chi2_p = fmt(pchisq(W, q, lower.tail = FALSE)), f = fmt(W / q),
             df1 = q, df2 = df2, f_p = fmt(pf(W / q, q, df2, lower.tail = FALSE)))
}
R1 <- rbind(c(0, 1, 0, 0), c(0, 0, 1, 0)); r1 <- c(0, 0)
R2 <- rbind(c(0, 1, 0, -1)); r2 <- 0.1
wt <- rbind(wald("x1_x2_hc1", m, vcovHC(m, type = "HC1"), R1, r1, dfr),
            wald("x1_x2_cr1", m, vcovCL(m, cluster = ~cl), R1, r1, dfr),
            wald("x1_x2_cr1_tcluster", m, vcovCL(m, cluster = ~cl), R1, r1, G - 1),
            wald("x1_minus_x3_classical", m, vcov(m), R2, r2, dfr))
# lmtest::waldtest (F with the residual df) agrees with our F version for x1 = x2 = 0 under HC1.
wtl <- waldtest(m, lm(y ~ x3, data = d), vcov = vcovHC(m, type = "HC1"), test = "F")
stopifnot(isTRUE(all.equal(wtl$F[2], as.numeric(wt$f[1]), tolerance = 1e-12)))
write.csv(wt, "r_wald.csv", row.names = FALSE, quote = FALSE)

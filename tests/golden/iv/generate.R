# SPDX-License-Identifier: MIT
# Golden values for include/latentaudit/estimators/instrumental.hpp: 2SLS by hand with matrices,
# checked against AER::ivreg (+ sandwich vcovHC/vcovCL), first-stage F statistics and the Wald
# (binary instrument) estimator with its delta-method SE. Run from this directory:
# Rscript generate.R (R 4.2.2, AER 1.2-10, sandwich 3.0-2, lmtest 0.9-40).
suppressPackageStartupMessages({ library(sandwich); library(lmtest); library(AER) })
options(digits = 17)
fmt <- function(x) format(x, digits = 17)
set.seed(777)
n <- 300; G <- 30
cl <- rep(seq_len(G), length.out = n)
x <- rnorm(n)
z <- rbinom(n, 1, 0.5)
z2 <- rnorm(n)
v <- rnorm(n) + 0.3 * rnorm(G)[cl]
complier <- rbinom(n, 1, 0.6)
d <- as.integer(complier * z + (1 - complier) * (v > 0.8))
y <- 1 + 0.5 * x + 2 * d + 0.8 * v + rnorm(n) * (1 + 0.5 * z2^2) + 0.4 * rnorm(G)[cl]
dd <- data.frame(y, x, d, z, z2, cl)
dd$d2 <- d + 0.3 * z2 + 0.2 * rnorm(n)   # a continuous endogenous regressor for the overidentified model
write.csv(data.frame(y = fmt(y), x = fmt(x), d = d, z = z, z2 = fmt(z2), cl = cl, d2 = fmt(dd$d2)), "data.csv",
          row.names = FALSE, quote = FALSE)

# ---- 2SLS by hand ------------------------------------------------------------------------------
tsls <- function(X, Z, y) {
  Xh <- Z %*% solve(crossprod(Z), crossprod(Z, X))
  b <- solve(crossprod(Xh, X), crossprod(Xh, y)); e <- drop(y - X %*% b)
  list(b = drop(b), e = e, Xh = Xh, B = solve(crossprod(Xh)), X = X, Z = Z)
}
rows <- list()
emit <- function(name, f, V, df) {
  b <- f$b; se <- sqrt(diag(V)); s <- b / se
  p <- if (is.infinite(df)) 2 * pnorm(-abs(s)) else 2 * pt(-abs(s), df)
  q <- if (is.infinite(df)) qnorm(0.975) else qt(0.975, df)
  rows[[length(rows) + 1]] <<- data.frame(fit = name, term = colnames(f$X), estimate = fmt(b), se = fmt(se), statistic = fmt(s),
                                          p = fmt(p), ci_low = fmt(b - q * se), ci_high = fmt(b + q * se))
}
hc <- function(f, type) {
  n <- nrow(f$X); k <- ncol(f$X); e <- f$e
  h <- rowSums((f$X %*% f$B) * f$Xh)   # AER::hatvalues.ivreg: x_i' (Xh'Xh)^-1 xh_i
  om <- switch(type, HC0 = e^2, HC1 = e^2 * n / (n - k), HC2 = e^2 / (1 - h), HC3 = e^2 / (1 - h)^2)
  f$B %*% crossprod(f$Xh * sqrt(om)) %*% f$B
}
cr1 <- function(f, cl) {
  n <- nrow(f$X); k <- ncol(f$X); Gc <- length(unique(cl))
  S <- rowsum(f$Xh * f$e, cl); f$B %*% crossprod(S) %*% f$B * Gc / (Gc - 1) * (n - 1) / (n - k)
}
models <- list(
  just = list(X = cbind("(Intercept)" = 1, x = x, d = d), Z = cbind("(Intercept)" = 1, x = x, z = z),
              iv = ivreg(y ~ x + d | x + z, data = dd)),
  over = list(X = cbind("(Intercept)" = 1, x = x, d2 = dd$d2), Z = cbind("(Intercept)" = 1, x = x, z = z, z2 = z2),
              iv = ivreg(y ~ x + d2 | x + z + z2, data = dd)))
fs_rows <- list()
for (mn in names(models)) {
  mm <- models[[mn]]; f <- tsls(mm$X, mm$Z, y); k <- ncol(mm$X); dfr <- n - k
  # cross-checks against AER::ivreg + sandwich
  stopifnot(isTRUE(all.equal(unname(f$b), unname(coef(mm$iv)), tolerance = 1e-12)))
  Vc <- sum(f$e^2) / dfr * f$B
  stopifnot(isTRUE(all.equal(Vc, vcov(mm$iv), tolerance = 1e-12, check.attributes = FALSE)))
  for (ty in c("HC0", "HC1", "HC2", "HC3"))
    stopifnot(isTRUE(all.equal(hc(f, ty), vcovHC(mm$iv, type = ty), tolerance = 1e-11, check.attributes = FALSE)))
  stopifnot(isTRUE(all.equal(cr1(f, cl), vcovCL(mm$iv, cluster = ~cl, type = "HC1"), tolerance = 1e-11, check.attributes = FALSE)))
  emit(paste0(mn, "_classical_t"), f, Vc, dfr)
  for (ty in c("HC0", "HC1", "HC2", "HC3")) emit(paste0(mn, "_", tolower(ty), "_t"), f, hc(f, ty), dfr)
  emit(paste0(mn, "_cr1_tcluster"), f, cr1(f, cl), G - 1)
  emit(paste0(mn, "_cr1_normal"), f, cr1(f, cl), Inf)
  # first stage: endogenous on all instruments; F for the excluded ones
  endo <- mm$X[, 3]; exo <- mm$Z[, 1:2]; excl <- colnames(mm$Z)[-(1:2)]; q <- length(excl)
  fs <- lm(endo ~ mm$Z - 1); fr <- lm(endo ~ exo - 1)
  rss_u <- sum(resid(fs)^2); rss_r <- sum(resid(fr)^2); kz <- ncol(mm$Z)
  F_classical <- ((rss_r - rss_u) / q) / (rss_u / (n - kz))
  stopifnot(isTRUE(all.equal(F_classical, anova(fr, fs)$F[2], tolerance = 1e-12)))
  Rm <- matrix(0, q, kz); for (j in seq_len(q)) Rm[j, 2 + j] <- 1
  wald_F <- function(V) { b <- Rm %*% coef(fs); drop(t(b) %*% solve(Rm %*% V %*% t(Rm), b)) / q }
  F_hc1 <- wald_F(vcovHC(fs, type = "HC1")); F_cr1 <- wald_F(vcovCL(fs, cluster = cl, type = "HC1"))
  fs_rows[[mn]] <- data.frame(fit = mn, q = q, F_classical = fmt(F_classical),
                              p_classical = fmt(pf(F_classical, q, n - kz, lower.tail = FALSE)), F_hc1 = fmt(F_hc1),
                              p_hc1 = fmt(pf(F_hc1, q, n - kz, lower.tail = FALSE)), F_cr1 = fmt(F_cr1),
                              p_cr1_tcluster = fmt(pf(F_cr1, q, G - 1, lower.tail = FALSE)),
                              partial_r2 = fmt((rss_r - rss_u) / rss_r), sigma = fmt(sqrt(sum(f$e^2) / dfr)))
}
write.csv(do.call(rbind, rows), "r_terms.csv", row.names = FALSE, quote = FALSE)
write.csv(do.call(rbind, fs_rows), "r_first_stage.csv", row.names = FALSE, quote = FALSE)

# ---- Wald estimator (binary z) with the delta-method SE ------------------------------------------
i1 <- z == 1; i0 <- z == 0; n1 <- sum(i1); n0 <- sum(i0)
itt_y <- mean(y[i1]) - mean(y[i0]); itt_d <- mean(d[i1]) - mean(d[i0]); late <- itt_y / itt_d
delta <- function(den) {
  vv <- function(a, b, idx) sum((a[idx] - mean(a[idx])) * (b[idx] - mean(b[idx]))) / (sum(idx) - den)
  Vy <- vv(y, y, i1) / n1 + vv(y, y, i0) / n0; Vd <- vv(d, d, i1) / n1 + vv(d, d, i0) / n0
  C <- vv(y, d, i1) / n1 + vv(y, d, i0) / n0
  c(se = sqrt((Vy - 2 * late * C + late^2 * Vd) / itt_d^2), se_itt_y = sqrt(Vy), se_itt_d = sqrt(Vd))
}
s1 <- delta(1); s0 <- delta(0)
# identities: Wald = 2SLS with X = (1, d), Z = (1, z); population-variance delta SE = 2SLS HC0
fw <- tsls(cbind(1, d), cbind(1, z), y)
stopifnot(isTRUE(all.equal(late, unname(fw$b[2]), tolerance = 1e-12)))
stopifnot(isTRUE(all.equal(unname(s0["se"]), sqrt(hc(fw, "HC0")[2, 2]), tolerance = 1e-12)))
wrow <- function(name, s) data.frame(fit = name, late = fmt(late), se = fmt(s[["se"]]), itt_y = fmt(itt_y), se_itt_y = fmt(s[["se_itt_y"]]),
                                     itt_d = fmt(itt_d), se_itt_d = fmt(s[["se_itt_d"]]),
                                     p = fmt(2 * pnorm(-abs(late / s[["se"]]))), ci_low = fmt(late - qnorm(0.975) * s[["se"]]),
                                     ci_high = fmt(late + qnorm(0.975) * s[["se"]]))
write.csv(rbind(wrow("sample", s1), wrow("population", s0)), "r_wald.csv", row.names = FALSE, quote = FALSE)

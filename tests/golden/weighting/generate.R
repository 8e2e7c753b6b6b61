# SPDX-License-Identifier: MIT
# Golden values for estimators/weighting.hpp (R 4.2; stats::glm, sandwich, numDeriv).
# Run from this directory: Rscript generate.R
#   data.csv          n = 400: y, t, x1, x2, x3
#   glm.csv           glm(t ~ x1 + x2 + x3, binomial, epsilon = 1e-14): coefficients, vcov, deviances
#   results.csv       IPW (HT / Hajek x ATE / ATT x trimming none / clip / drop) and AIPW, by hand
#                     from the glm fit; stacked M-estimation SE with an analytic Jacobian and, without
#                     trimming, with numDeriv::jacobian; weights-known SE; peer check of the Hajek
#                     weights-known SE against lm(y ~ t, weights) + sandwich::vcovHC(type = "HC0")
#   separation_*.csv  data sets with complete / quasi-complete separation (glm warns)
suppressMessages({ library(sandwich); library(numDeriv) })
options(digits = 17)
# Full-precision CSV: every number with 17 significant digits (round-trips exactly).
full <- function(df) { for (j in seq_along(df)) if (is.numeric(df[[j]]))
  df[[j]] <- ifelse(is.na(df[[j]]), "NA", sprintf("%.17g", df[[j]])); df }
set.seed(20261129)
n <- 400
x1 <- rnorm(n); x2 <- rnorm(n); x3 <- rbinom(n, 1, 0.4)
lp <- -0.3 + 0.8 * x1 - 0.5 * x2 + 0.6 * x3
t <- rbinom(n, 1, plogis(lp))
y <- 1 + 2 * t + x1 + 0.5 * x2^2 - 0.7 * x3 + 0.5 * t * x1 + rnorm(n)
d <- data.frame(y = y, t = t, x1 = x1, x2 = x2, x3 = x3)
write.csv(full(d), "data.csv", row.names = FALSE, quote = FALSE)

fit <- glm(t ~ x1 + x2 + x3, family = binomial, data = d,
           control = glm.control(epsilon = 1e-14, maxit = 100))
X <- model.matrix(fit)
V <- vcov(fit)
# vcov(glm) uses the IRLS weights of the last iteration, i.e. at the previous iterate (~1e-7 away
# in relative terms when the deviance criterion is 1e-14); vfinal is (X'WX)^-1 at the final fit.
pf <- fitted(fit)
Vfinal <- solve(crossprod(X * sqrt(pf * (1 - pf))))
g <- data.frame(name = c(paste0("coef", 0:3), paste0("vcov", rep(0:3, each = 4), rep(0:3, 4)),
                         paste0("vfinal", rep(0:3, each = 4), rep(0:3, 4)), "deviance", "null_deviance"),
                value = c(coef(fit), as.vector(t(V)), as.vector(t(Vfinal)), deviance(fit), fit$null.deviance))
write.csv(full(g), "glm.csv", row.names = FALSE, quote = FALSE)

eraw <- as.vector(plogis(X %*% coef(fit)))

# Estimating functions. theta = (gamma, beta); gamma = (mu1, mu0) (Hajek) or tau (HT).
# Returns the n x k matrix of Psi_i(theta); e is recomputed from beta (no trimming) or given.
psi_mat <- function(gam, beta, estimand, norm, eclip = NULL, keep = rep(TRUE, n)) {
  er <- as.vector(plogis(X %*% beta))
  e <- if (is.null(eclip)) er else eclip
  if (estimand == "ate") {
    if (norm == "hajek") {
      m <- cbind(t * (y - gam[1]) / e, (1 - t) * (y - gam[2]) / (1 - e))
    } else {
      m <- cbind(t * y / e - (1 - t) * y / (1 - e) - gam[1])
    }
  } else {
    o <- e / (1 - e)
    if (norm == "hajek") {
      m <- cbind(t * (y - gam[1]), (1 - t) * o * (y - gam[2]))
    } else {
      m <- cbind(t * y - (1 - t) * y * o - gam[1] * t)
    }
  }
  m[!keep, ] <- 0
  cbind(m, X * (t - er))
}

ipw_case <- function(estimand, norm, trim, eps = 0.05) {
  e <- eraw; de <- eraw * (1 - eraw); keep <- rep(TRUE, n)
  out <- (eraw < eps | eraw > 1 - eps)
  ntrim <- if (trim == "none") 0 else sum(out)
  if (trim == "clip") { e <- pmin(pmax(eraw, eps), 1 - eps); de[out] <- 0 }
  if (trim == "drop") { keep <- !out; de[out] <- 0 }
  tk <- t[keep]; yk <- y[keep]; ek <- e[keep]
  if (estimand == "ate") { w <- ifelse(tk == 1, 1 / ek, 1 / (1 - ek)) } else { w <- ifelse(tk == 1, 1, ek / (1 - ek)) }
  if (norm == "hajek") {
    mu1 <- sum(w * yk * tk) / sum(w * tk); mu0 <- sum(w * yk * (1 - tk)) / sum(w * (1 - tk))
    gam <- c(mu1, mu0); cvec <- c(1, -1)
  } else {
    den <- if (estimand == "ate") sum(keep) else sum(tk)
    mu1 <- sum(w * yk * tk) / den; mu0 <- sum(w * yk * (1 - tk)) / den
    gam <- mu1 - mu0; cvec <- 1
  }
  G <- length(gam); p <- ncol(X)
  P <- psi_mat(gam, coef(fit), estimand, norm, eclip = e, keep = keep)
  B <- crossprod(P)
  # Analytic Jacobian sum_i dPsi_i/dtheta'.
  A <- matrix(0, G + p, G + p)
  kt <- keep * t; kc <- keep * (1 - t)
  if (estimand == "ate" && norm == "hajek") {
    A[1, 1] <- -sum(kt / e); A[2, 2] <- -sum(kc / (1 - e))
    A[1, (G + 1):(G + p)] <- colSums(X * (-kt * (y - mu1) * de / e^2))
    A[2, (G + 1):(G + p)] <- colSums(X * (kc * (y - mu0) * de / (1 - e)^2))
  } else if (estimand == "ate") {
    A[1, 1] <- -sum(keep)
    A[1, (G + 1):(G + p)] <- colSums(X * (-kt * y * de / e^2 - kc * y * de / (1 - e)^2))
  } else if (norm == "hajek") {
    A[1, 1] <- -sum(kt); A[2, 2] <- -sum(kc * e / (1 - e))
    A[2, (G + 1):(G + p)] <- colSums(X * (kc * (y - mu0) * de / (1 - e)^2))
  } else {
    A[1, 1] <- -sum(kt)
    A[1, (G + 1):(G + p)] <- colSums(X * (-kc * y * de / (1 - e)^2))
  }
  A[(G + 1):(G + p), (G + 1):(G + p)] <- -crossprod(X * (eraw * (1 - eraw)), X)
  Ai <- solve(A)
  C <- Ai %*% B %*% t(Ai)
  cc <- c(cvec, rep(0, p))
  se_stacked <- sqrt(drop(t(cc) %*% C %*% cc))
  Ag <- A[1:G, 1:G, drop = FALSE]; Bg <- B[1:G, 1:G, drop = FALSE]
  Cg <- solve(Ag) %*% Bg %*% t(solve(Ag))
  se_known <- sqrt(drop(t(cvec) %*% Cg %*% cvec))
  se_nd <- NA
  if (trim == "none") {
    f <- function(th) colSums(psi_mat(th[1:G], th[(G + 1):(G + p)], estimand, norm))
    J <- numDeriv::jacobian(f, c(gam, coef(fit)))
    Ji <- solve(J)
    se_nd <- sqrt(drop(t(cc) %*% (Ji %*% B %*% t(Ji)) %*% cc))
  }
  se_hc0 <- NA
  if (norm == "hajek") {
    lw <- lm(yk ~ tk, weights = w)
    se_hc0 <- sqrt(vcovHC(lw, type = "HC0")[2, 2])
  }
  data.frame(case = paste("ipw", estimand, norm, trim, sep = "_"), estimate = mu1 - mu0,
             se_stacked = se_stacked, se_known = se_known, se_stacked_numderiv = se_nd,
             se_hc0_lm = se_hc0, mu1 = mu1, mu0 = mu0, n_trimmed = ntrim)
}

aipw_case <- function(estimand, trim, eps = 0.05) {
  e <- eraw; keep <- rep(TRUE, n)
  out <- (eraw < eps | eraw > 1 - eps)
  ntrim <- if (trim == "none") 0 else sum(out)
  if (trim == "clip") e <- pmin(pmax(eraw, eps), 1 - eps)
  if (trim == "drop") keep <- !out
  dk <- d[keep, ]; ek <- e[keep]; tk <- dk$t; yk <- dk$y
  f0 <- lm(y ~ x1 + x2 + x3, data = dk[tk == 0, ]); m0 <- predict(f0, newdata = dk)
  if (estimand == "ate") {
    f1 <- lm(y ~ x1 + x2 + x3, data = dk[tk == 1, ]); m1 <- predict(f1, newdata = dk)
    a1 <- m1 + tk * (yk - m1) / ek; a0 <- m0 + (1 - tk) * (yk - m0) / (1 - ek)
    psi <- a1 - a0; tau <- mean(psi); mu1 <- mean(a1); mu0 <- mean(a0)
  } else {
    n1 <- sum(tk); o <- ek / (1 - ek)
    tau <- sum((tk - (1 - tk) * o) * (yk - m0)) / n1
    mu1 <- mean(yk[tk == 1]); mu0 <- mu1 - tau
    psi <- (length(yk) / n1) * (tk * (yk - m0 - tau) - (1 - tk) * o * (yk - m0))
  }
  data.frame(case = paste("aipw", estimand, trim, sep = "_"), estimate = tau,
             se_stacked = NA, se_known = sd(psi) / sqrt(length(psi)), se_stacked_numderiv = NA,
             se_hc0_lm = NA, mu1 = mu1, mu0 = mu0, n_trimmed = ntrim)
}

res <- NULL
for (est in c("ate", "att")) for (tr in c("none", "clip", "drop")) {
  for (nm in c("ht", "hajek")) res <- rbind(res, ipw_case(est, nm, tr))
  res <- rbind(res, aipw_case(est, tr))
}
write.csv(full(res), "results.csv", row.names = FALSE, quote = FALSE)
cat("max rel. diff analytic vs numDeriv stacked SE:",
    max(abs(res$se_stacked - res$se_stacked_numderiv) / res$se_stacked, na.rm = TRUE), "\n")
cat("max rel. diff weights-known vs vcovHC HC0:",
    max(abs(res$se_known - res$se_hc0_lm) / res$se_known, na.rm = TRUE), "\n")

# Separation data sets: complete (x1 separates) and quasi-complete (x2 = 1 implies t = 1).
set.seed(7)
m <- 60
s1 <- data.frame(x1 = sort(rnorm(m)), x2 = rnorm(m)); s1$t <- as.numeric(seq_len(m) > 25)
write.csv(full(s1), "separation_complete.csv", row.names = FALSE, quote = FALSE)
s2 <- data.frame(x1 = rnorm(m), x2 = rep(c(0, 1), length.out = m))
s2$t <- ifelse(s2$x2 == 1, 1, rbinom(m, 1, 0.4))
write.csv(full(s2), "separation_quasi.csv", row.names = FALSE, quote = FALSE)
for (s in list(s1, s2)) {
  w <- tryCatch(glm(t ~ x1 + x2, binomial, data = s), warning = function(w) conditionMessage(w))
  cat("glm on separated data:", if (is.character(w)) w else "no warning", "\n")
}

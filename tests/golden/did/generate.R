# SPDX-License-Identifier: MIT
# Golden values for include/latentaudit/estimators/difference_in_differences.hpp from R lm +
# sandwich::vcovCL / vcovHC + lmtest::coeftest. Run from this directory: Rscript generate.R
# (R 4.2.2, sandwich 3.0-2, lmtest 0.9-40). Writes:
#   panel2.csv, r_2x2.csv       2 x 2 design (60 units x 2 periods): cell means + HC2, lm(y ~ treated*post) + vcovCL(~unit)
#   panel.csv, r_twfe.csv       staggered, unbalanced panel: TWFE lm(y ~ d + factor(unit) + factor(time)) + vcovCL(~unit)
#   r_event.csv, r_pretrend.csv event study (lead/lag dummies, reference -1) + Wald pre-trend tests
suppressPackageStartupMessages({ library(sandwich); library(lmtest) })
options(digits = 17)
fmt <- function(x) format(x, digits = 17)
set.seed(424242)

# ---- 2 x 2 -------------------------------------------------------------------------------------
U2 <- 60
p2 <- expand.grid(post = 0:1, unit = seq_len(U2))
p2$treated <- as.integer(p2$unit <= 25)
a <- rnorm(U2, sd = 1)[p2$unit]
p2$y <- 2 + a + 0.4 * p2$treated + 0.7 * p2$post + 1.25 * p2$treated * p2$post + rnorm(nrow(p2), sd = 0.5 + p2$treated)
write.csv(data.frame(y = fmt(p2$y), treated = p2$treated, post = p2$post, unit = p2$unit), "panel2.csv",
          row.names = FALSE, quote = FALSE)
m2 <- lm(y ~ treated * post, data = p2)
rows <- list()
term_row <- function(name, fit, V, term, df) {
  b <- coef(fit)[[term]]; se <- sqrt(V[term, term]); s <- b / se
  p <- if (is.infinite(df)) 2 * pnorm(-abs(s)) else 2 * pt(-abs(s), df)
  q <- if (is.infinite(df)) qnorm(0.975) else qt(0.975, df)
  data.frame(fit = name, estimate = fmt(b), se = fmt(se), statistic = fmt(s), df = df, p = fmt(p),
             ci_low = fmt(b - q * se), ci_high = fmt(b + q * se))
}
# Cell means with the four cell variances: SE = sqrt(sum s_c^2 / n_c) equals HC2 of the saturated lm.
cells <- aggregate(y ~ treated + post, data = p2, FUN = function(v) c(m = mean(v), v = var(v), n = length(v)))
vc <- cells$y[, "v"] / cells$y[, "n"]
df_satt <- sum(vc)^2 / sum(vc^2 / (cells$y[, "n"] - 1))
V2 <- vcovHC(m2, type = "HC2")
stopifnot(isTRUE(all.equal(sqrt(sum(vc)), sqrt(V2["treated:post", "treated:post"]), tolerance = 1e-13)))
rows[[1]] <- term_row("means_satterthwaite", m2, V2, "treated:post", df_satt)
rows[[2]] <- term_row("means_normal", m2, V2, "treated:post", Inf)
Vcl <- vcovCL(m2, cluster = ~unit, type = "HC1")
rows[[3]] <- term_row("reg_cr1_t", m2, Vcl, "treated:post", df.residual(m2))
rows[[4]] <- term_row("reg_cr1_tcluster", m2, Vcl, "treated:post", U2 - 1)
rows[[5]] <- term_row("reg_cr1_normal", m2, Vcl, "treated:post", Inf)
stopifnot(isTRUE(all.equal(coeftest(m2, vcov. = Vcl)["treated:post", 4], as.numeric(rows[[3]]$p), tolerance = 1e-14)))
write.csv(do.call(rbind, rows), "r_2x2.csv", row.names = FALSE, quote = FALSE)

# ---- staggered unbalanced panel ----------------------------------------------------------------
U <- 40; years <- 2001:2008
pn <- expand.grid(time = years, unit = seq_len(U))
start <- c(rep(NA, 14), rep(2004, 14), rep(2006, 12))[pn$unit]  # 14 never treated, two cohorts
pn$d <- as.integer(!is.na(start) & pn$time >= start)
alpha <- rnorm(U)[pn$unit]; gamma <- (0.3 * (years - 2001))[pn$time - 2000]
rel <- ifelse(is.na(start), NA, pn$time - start)
effect <- ifelse(is.na(rel) | rel < 0, 0, 1 + 0.2 * rel)
pn$y <- alpha + gamma + effect + rnorm(nrow(pn)) + 0.5 * rnorm(U)[pn$unit] * (pn$time > 2004)
# unbalanced: 16 unit-periods missing (never a unit's first treated period, so the cohorts, which
# latentaudit derives from the observed d, stay 2004 and 2006)
st_row <- c(rep(NA, 14), rep(2004, 14), rep(2006, 12))[pn$unit]
droppable <- which(is.na(st_row) | pn$time != st_row)
pn <- pn[-sample(droppable, 16), ]
pn$start <- c(rep(NA, 14), rep(2004, 14), rep(2006, 12))[pn$unit]
write.csv(data.frame(y = fmt(pn$y), d = pn$d, unit = pn$unit, time = pn$time), "panel.csv", row.names = FALSE, quote = FALSE)
n <- nrow(pn); G <- length(unique(pn$unit)); Tn <- length(unique(pn$time))
mt <- lm(y ~ d + factor(unit) + factor(time), data = pn)
k_counted <- length(coef(mt)); k_nested <- 1 + (Tn - 1)
Vt <- vcovCL(mt, cluster = ~unit, type = "HC1")
tw <- list(term_row("twfe_cr1_counted_t", mt, Vt, "d", df.residual(mt)),
           term_row("twfe_cr1_counted_tcluster", mt, Vt, "d", G - 1))
# nested rule: unit effects are not counted in k, (n - 1)/(n - k_nested)
Vn <- vcovCL(mt, cluster = ~unit, type = "HC0", cadjust = TRUE) * (n - 1) / (n - k_nested)
tw[[3]] <- term_row("twfe_cr1_nested_tcluster", mt, Vn, "d", G - 1)
tw[[4]] <- term_row("twfe_hc1_counted_t", mt, vcovHC(mt, type = "HC1"), "d", df.residual(mt))
tw[[5]] <- term_row("twfe_classical_counted_t", mt, vcov(mt), "d", df.residual(mt))
tw[[6]] <- term_row("twfe_cr0_counted_normal", mt, vcovCL(mt, cluster = ~unit, type = "HC0", cadjust = FALSE), "d", Inf)
write.csv(do.call(rbind, tw), "r_twfe.csv", row.names = FALSE, quote = FALSE)

# ---- event study -------------------------------------------------------------------------------
pn$rel <- ifelse(is.na(pn$start), NA, pn$time - pn$start)
event <- function(name, first, last, bin) {
  dd <- pn
  r <- dd$rel
  if (bin) { r <- ifelse(!is.na(r) & r < first, first, r); r <- ifelse(!is.na(r) & r > last, last, r) }
  else { keep <- is.na(r) | (r >= first & r <= last); dd <- dd[keep, ]; r <- r[keep] }
  ks <- setdiff(first:last, -1)
  nm <- function(k) paste0("rel_", ifelse(k < 0, paste0("m", -k), k))
  for (k in ks) dd[[nm(k)]] <- as.integer(!is.na(r) & r == k)
  vars <- nm(ks)
  f <- as.formula(paste("y ~", paste(vars, collapse = " + "), "+ factor(unit) + factor(time)"))
  m <- lm(f, data = dd)
  V <- vcovCL(m, cluster = ~unit, type = "HC1")
  Gd <- length(unique(dd$unit))
  out <- do.call(rbind, lapply(ks, function(k) cbind(term_row(name, m, V, nm(k), df.residual(m)), rel = k)))
  leads <- nm(ks[ks < -1])
  R <- matrix(0, length(leads), length(coef(m)), dimnames = list(leads, names(coef(m))))
  for (l in leads) R[l, l] <- 1
  b <- R %*% coef(m); W <- drop(t(b) %*% solve(R %*% V %*% t(R), b)); q <- length(leads)
  pt_row <- data.frame(fit = name, n = nrow(dd), chi2 = fmt(W), chi2_p = fmt(pchisq(W, q, lower.tail = FALSE)), df1 = q,
                       df2_resid = df.residual(m), f_p_resid = fmt(pf(W / q, q, df.residual(m), lower.tail = FALSE)),
                       df2_cluster = Gd - 1, f_p_cluster = fmt(pf(W / q, q, Gd - 1, lower.tail = FALSE)))
  list(out = out, pt = pt_row)
}
e1 <- event("binned_m4_3", -4, 3, TRUE)
e2 <- event("full", min(pn$rel, na.rm = TRUE), max(pn$rel, na.rm = TRUE), FALSE)
e3 <- event("trimmed_m3_2", -3, 2, FALSE)
write.csv(rbind(e1$out, e2$out, e3$out), "r_event.csv", row.names = FALSE, quote = FALSE)
write.csv(rbind(e1$pt, e2$pt, e3$pt), "r_pretrend.csv", row.names = FALSE, quote = FALSE)

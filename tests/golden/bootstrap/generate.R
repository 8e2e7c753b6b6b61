# SPDX-License-Identifier: MIT
# Golden values for latentaudit's bootstrap intervals from R boot 1.3-28 (R 4.2).
# Run from this directory: Rscript generate.R
# Writes, per design (two-arm stratified mean difference; paired mean difference):
#   boot_<design>_data.csv        the simulated data
#   boot_<design>_replicates.csv  t* and the bootstrap variance v* (boot's t[,1], t[,2])
#   boot_<design>_influence.csv   empinf(type = "jack") influence values (data row order)
#   boot_<design>_ci.csv          boot.ci(..., L = jackknife L) for norm, basic, perc, bca, stud
#   boot_<design>_values.csv      t0, v0, the acceleration a = sum(L^3)/(6 sum(L^2)^1.5), R
library(boot)
options(digits = 17)
fmt <- function(x) format(x, digits = 17)
write_tab <- function(df, file) {
  for (j in seq_along(df)) if (is.numeric(df[[j]])) df[[j]] <- fmt(df[[j]])
  write.csv(df, file, row.names = FALSE, quote = FALSE)
}
export <- function(name, data, b, L) {
  write_tab(data, sprintf("boot_%s_data.csv", name))
  write_tab(data.frame(t = b$t[, 1], v = b$t[, 2]), sprintf("boot_%s_replicates.csv", name))
  write_tab(data.frame(L = L), sprintf("boot_%s_influence.csv", name))
  a <- sum(L^3) / (6 * sum(L^2)^1.5)
  write_tab(data.frame(name = c("t0", "v0", "acceleration", "R"),
                       value = c(b$t0[1], b$t0[2], a, b$R)), sprintf("boot_%s_values.csv", name))
  rows <- list()
  for (conf in c(0.95, 0.8)) {
    ci <- boot.ci(b, conf = conf, type = c("norm", "basic", "perc", "bca", "stud"), L = L)
    get <- function(m) { x <- ci[[m]]; c(x[1, ncol(x) - 1], x[1, ncol(x)]) }
    for (m in c("normal", "basic", "percent", "bca", "student")) {
      lim <- get(m)
      rows[[length(rows) + 1]] <- data.frame(level = conf, method = m, low = lim[1], high = lim[2])
    }
  }
  write_tab(do.call(rbind, rows), sprintf("boot_%s_ci.csv", name))
}

# ---- two arms, stratified by arm: mean(treated) - mean(control), variance s1^2/n1 + s0^2/n0
set.seed(20261129)
n1 <- 37; n0 <- 53
y1 <- rexp(n1, rate = 1) * 2 + 0.5          # skewed treated arm
y0 <- exp(rnorm(n0, 0, 0.8))                # log-normal control arm
two <- data.frame(y = c(y1, y0), arm = c(rep(1, n1), rep(0, n0)))   # treated rows first
stat_two <- function(d, i) {
  dd <- d[i, ]
  a <- dd$y[dd$arm == 1]; b <- dd$y[dd$arm == 0]
  c(mean(a) - mean(b), var(a) / length(a) + var(b) / length(b))
}
b_two <- boot(two, stat_two, R = 1999, strata = two$arm)
L_two <- empinf(b_two, type = "jack", index = 1)
export("two_arm", two, b_two, L_two)

# ---- paired: mean of within-pair differences, variance s_d^2/n; R = 1500 (non-integer (R+1)alpha)
set.seed(7031)
n <- 45
ctl <- rgamma(n, shape = 2, rate = 1)
trt <- ctl + rexp(n, rate = 2) - 0.3
paired <- data.frame(treated = trt, control = ctl)
stat_paired <- function(d, i) {
  dd <- d[i, ]
  diff <- dd$treated - dd$control
  c(mean(diff), var(diff) / length(diff))
}
b_paired <- boot(paired, stat_paired, R = 1500)
L_paired <- empinf(b_paired, type = "jack", index = 1)
export("paired", paired, b_paired, L_paired)
cat("boot golden files written\n")

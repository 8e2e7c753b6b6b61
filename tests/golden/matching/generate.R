# Golden values for latentaudit's nearest-neighbour matching (include/latentaudit/estimators/matching.hpp)
# from R's Matching::Match (Matching 4.10-8, R 4.2). Run from this directory: Rscript generate.R
# Writes data_<name>.csv (y, tr, x1..xk), configs.csv (one row per Match call with the outputs),
# pairs_<id>.csv (matched rows: 0-based index_treated, index_control, weight) for some configs and
# balance.csv (Matching:::balanceUV before/after matching for one config).
suppressMessages(library(Matching))
options(digits = 17)
fmt <- function(x) format(x, digits = 17)

make_data <- function(name, n, k, seed, discrete) {
  set.seed(seed)
  X <- matrix(rnorm(n * k), n, k)
  for (j in discrete) X[, j] <- sample(0:3, n, replace = TRUE)   # discrete covariates -> ties
  lin <- 0.6 * X[, 1] - 0.3 * X[, k]
  tr <- rbinom(n, 1, plogis(-0.4 + lin))
  y <- as.vector(1 + X %*% seq(1, 0.4, length.out = k) + 0.5 * X[, 1]^2 + (2 + 0.5 * X[, 1]) * tr + rnorm(n))
  d <- data.frame(y = y, tr = tr, X)
  names(d) <- c("y", "tr", paste0("x", 1:k))
  write.csv(data.frame(lapply(d, fmt)), paste0("data_", name, ".csv"), row.names = FALSE, quote = FALSE)
  d
}

datasets <- list(
  ties    = make_data("ties", 400, 3, 101, discrete = c(2, 3)),   # heavy ties (x3 discrete, x2 discrete)
  smooth  = make_data("smooth", 300, 2, 202, discrete = integer(0)),  # continuous: no ties
  mixed   = make_data("mixed", 2000, 4, 303, discrete = c(3)),    # larger, some ties
  small   = make_data("small", 200, 3, 404, discrete = c(2))      # caliper / exact
)

configs <- list()
add <- function(...) configs[[length(configs) + 1]] <<- list(...)
for (est in c("ATT", "ATC", "ATE")) for (M in c(1, 3)) for (ba in c(FALSE, TRUE)) for (vc in c(0, 3)) {
  add(data = "ties", estimand = est, M = M, ties = TRUE, weight = 1, bias = ba, varcalc = vc, caliper = NA, exact = "")
  add(data = "smooth", estimand = est, M = M, ties = TRUE, weight = 2, bias = ba, varcalc = vc, caliper = NA, exact = "")
}
for (est in c("ATT", "ATC", "ATE")) for (M in c(1, 3)) {
  add(data = "smooth", estimand = est, M = M, ties = FALSE, weight = 1, bias = FALSE, varcalc = 0, caliper = NA, exact = "")
  add(data = "smooth", estimand = est, M = M, ties = TRUE, weight = 1, bias = FALSE, varcalc = 0, caliper = NA, exact = "")
  add(data = "mixed", estimand = est, M = M, ties = TRUE, weight = 1, bias = M == 3, varcalc = if (M == 1) 0 else 2, caliper = NA, exact = "")
  add(data = "mixed", estimand = est, M = M, ties = TRUE, weight = 2, bias = M == 1, varcalc = 0, caliper = NA, exact = "")
  add(data = "small", estimand = est, M = M, ties = TRUE, weight = 1, bias = FALSE, varcalc = 0, caliper = 0.25, exact = "")
  add(data = "small", estimand = est, M = M, ties = TRUE, weight = 1, bias = FALSE, varcalc = 2, caliper = 0.5, exact = "")
  add(data = "small", estimand = est, M = M, ties = TRUE, weight = 1, bias = FALSE, varcalc = 0, caliper = NA, exact = "x2")
  add(data = "small", estimand = est, M = M, ties = TRUE, weight = 1, bias = TRUE, varcalc = 0, caliper = 0.5, exact = "x2")
}

pairs_for <- c(1, 2, 4, 26, 50, 51, 52, 53, 56, 60)  # config ids whose matched rows are exported
rows <- list()
for (id in seq_along(configs)) {
  cf <- configs[[id]]
  d <- datasets[[cf$data]]
  X <- as.matrix(d[, grep("^x", names(d))])
  k <- ncol(X)
  cal <- if (is.na(cf$caliper)) NULL else cf$caliper
  ex <- NULL
  if (nchar(cf$exact) > 0) ex <- colnames(X) %in% strsplit(cf$exact, ";")[[1]]
  call <- function(sample, version = "standard")
    Match(Y = d$y, Tr = d$tr, X = X, estimand = cf$estimand, M = cf$M, BiasAdjust = cf$bias,
          ties = cf$ties, Weight = cf$weight, Var.calc = cf$varcalc, caliper = cal, exact = ex,
          sample = sample, version = version)
  r <- suppressWarnings(call(FALSE))
  rs <- suppressWarnings(call(TRUE))
  se <- if (is.null(r$se)) NA else r$se
  se_sample <- if (is.null(rs$se)) NA else rs$se
  # The AI variance restricted to the matched focal units (latentaudit's default when a caliper or
  # exact matching drops units; Match itself keeps the dropped units in SN with YCAUS = 0).
  se_matched <- NA
  se_matched_sample <- NA
  if (cf$ties && !cf$bias) {
    ai <- suppressWarnings(call(FALSE, "MatchbyAI"))
    Trf <- if (cf$estimand == "ATC") 1 - d$tr else d$tr
    n <- length(d$y)
    iot.t <- if (cf$estimand == "ATE") rep(1, n) else Trf
    iot.c <- if (cf$estimand == "ATE") rep(1, n) else 1 - Trf
    focal <- rep(0, n); focal[unique(ai$MatchLoopC[, 1])] <- 1
    iot.t <- iot.t * focal
    w <- ai$weights
    tau <- d$y[ai$index.treated] - d$y[ai$index.control]
    e <- sum(w * tau) / sum(w)
    sig <- if (cf$varcalc == 0) rep(0.5 * sum(w * (tau - e)^2) / sum(w), n) else ai$Sigs
    ef <- if (cf$estimand == "ATC") -e else e
    SN <- sum(iot.t)
    K <- ai$Kcount; KK <- ai$KKcount
    vp <- if (cf$estimand == "ATE") sum(sig * (K^2 + 2 * K - KK)) else sum(sig * (iot.c * K^2 - iot.c * KK))
    vp <- (vp + sum(iot.t * (ai$YCAUS - ef)^2)) / SN^2
    vs <- sum(sig * (iot.t + iot.c * K)^2) / SN^2
    se_matched <- sqrt(vp); se_matched_sample <- sqrt(vs)
  }
  rows[[id]] <- data.frame(id = id, data = cf$data, estimand = cf$estimand, M = cf$M, ties = as.integer(cf$ties),
    weight = cf$weight, bias = as.integer(cf$bias), varcalc = cf$varcalc,
    caliper = if (is.na(cf$caliper)) "NA" else fmt(cf$caliper), exact = if (nchar(cf$exact)) cf$exact else "none",
    est = fmt(r$est), se = fmt(se), se_sample = fmt(se_sample), se_matched = fmt(se_matched),
    se_matched_sample = fmt(se_matched_sample), est_noadj = fmt(r$est.noadj),
    se_standard = fmt(r$se.standard), wnobs = fmt(r$wnobs), nrows = length(r$weights),
    ndrops_matches = r$ndrops.matches, pairs = as.integer(id %in% pairs_for))
  if (id %in% pairs_for) {
    write.csv(data.frame(index_treated = r$index.treated - 1, index_control = r$index.control - 1,
                         weight = fmt(r$weights)), paste0("pairs_", id, ".csv"), row.names = FALSE, quote = FALSE)
  }
}
write.csv(do.call(rbind, rows), "configs.csv", row.names = FALSE, quote = FALSE)

# Balance (Matching:::balanceUV, as MatchBalance uses it) for config 1 (ties data, ATT, M = 1) and
# the ATC config 13 (control SD in the denominator).
bal <- list()
for (id in c(1, 13)) {
  cf <- configs[[id]]
  d <- datasets[[cf$data]]
  X <- as.matrix(d[, grep("^x", names(d))])
  r <- Match(Y = d$y, Tr = d$tr, X = X, estimand = cf$estimand, M = cf$M, Weight = cf$weight)
  for (j in seq_len(ncol(X))) {
    b0 <- Matching:::balanceUV(X[d$tr == 1, j], X[d$tr == 0, j], estimand = cf$estimand)
    b1 <- Matching:::balanceUV(X[r$index.treated, j], X[r$index.control, j], weights = r$weights,
                               match = TRUE, estimand = cf$estimand)
    bal[[length(bal) + 1]] <- data.frame(id = id, covariate = j - 1,
      mean_t_before = fmt(b0$mean.Tr), mean_c_before = fmt(b0$mean.Co), sdiff_before = fmt(b0$sdiff),
      var_ratio_before = fmt(b0$var.ratio), mean_t_after = fmt(b1$mean.Tr), mean_c_after = fmt(b1$mean.Co),
      sdiff_after = fmt(b1$sdiff), var_ratio_after = fmt(b1$var.ratio))
  }
}
write.csv(do.call(rbind, bal), "balance.csv", row.names = FALSE, quote = FALSE)
cat("configs:", length(configs), "\n")

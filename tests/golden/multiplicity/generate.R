# SPDX-License-Identifier: MIT
# Golden values for estimators/multiplicity.hpp: R's stats::p.adjust on several p-value vectors
# (random, ties, p = 0 and p = 1, n = 1, n = 2, an explicit family size, NA entries).
# Run from this directory: Rscript generate.R   (R 4.2.2; writes p_values.csv and p_adjust.csv)
set.seed(20261129)
cases <- list(
  uniform20 = runif(20),
  skewed50  = runif(50)^4,                              # many small p-values
  ties      = c(0.01, 0.04, 0.01, 0.02, 0.04, 0.5, 0.04, 1, 0, 0.02),
  zero_one  = c(0, 1, 0.5, 0, 1, 0.3),
  single    = c(0.03),
  pair      = c(0.04, 0.02),
  all_equal = rep(0.02, 5),
  tiny      = c(1e-300, 3e-12, 2e-9, 0.049, 0.051, 0.7),
  with_na   = c(0.01, NA, 0.04, 0.03, NA, 0.2)
)
# (case, family size n) pairs: n = NA means R's default (number of non-missing p-values).
runs <- list(
  list("uniform20", NA), list("skewed50", NA), list("ties", NA), list("zero_one", NA),
  list("single", NA), list("pair", NA), list("all_equal", NA), list("tiny", NA),
  list("with_na", NA), list("uniform20", 35), list("single", 4), list("ties", 12)
)
methods <- c("none", "bonferroni", "holm", "hochberg", "BH", "BY")
f17 <- function(x) vapply(x, function(v) if (is.na(v)) "NA" else format(v, digits = 17), "")
pv <- do.call(rbind, lapply(names(cases), function(nm)
  data.frame(case = nm, index = seq_along(cases[[nm]]) - 1L, p = f17(cases[[nm]]))))
write.table(pv, "p_values.csv", sep = ",", quote = FALSE, row.names = FALSE)
rows <- list()
for (r in runs) {
  nm <- r[[1]]; n <- r[[2]]; p <- cases[[nm]]
  for (m in methods) {
    adj <- if (is.na(n)) p.adjust(p, m) else p.adjust(p, m, n = n)
    rows[[length(rows) + 1]] <- data.frame(case = nm, family_size = ifelse(is.na(n), 0L, n),
                                           method = m, index = seq_along(p) - 1L, adjusted = f17(adj))
  }
}
write.table(do.call(rbind, rows), "p_adjust.csv", sep = ",", quote = FALSE, row.names = FALSE)

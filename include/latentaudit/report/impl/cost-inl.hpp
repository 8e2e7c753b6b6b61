// SPDX-License-Identifier: MIT
// latentaudit: definitions of report/cost.hpp (header-only mode includes this file; compiled mode compiles it once in src/)
#ifndef LATENTAUDIT_REPORT_IMPL_COST_INL_HPP
#define LATENTAUDIT_REPORT_IMPL_COST_INL_HPP

#include "../cost.hpp"

#include <fmt/format.h>

#include <Eigen/Cholesky>
#include <Eigen/QR>
#include <algorithm>
#include <cmath>
#include <utility>

#include "../../core/detail/check.hpp"
#include "../../core/error.hpp"
#include "../../estimators/weighting.hpp"
#include "../detail/record_units.hpp"

namespace latentaudit {

LATENTAUDIT_INLINE std::string cost_finding_id(std::string_view link_name) {
  std::string id = "cost.relay_pays_on_";
  for (char c : link_name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    id.push_back(ok ? c : '_');
  }
  return id;
}

LATENTAUDIT_INLINE double relay_gate_model::probability(std::span<const double> x) const {
  constexpr std::string_view fn = "relay_gate_model::probability";
  if (coefficients.empty())
    detail::throw_invalid(fn, "coefficients", "must hold a fitted model (intercept first)");
  detail::check_same_size(fn, "x", x.size(), "features", features.size());
  detail::check_same_size(fn, "coefficients", coefficients.size(), "features + 1", features.size() + 1);
  detail::check_finite(fn, "x", x);
  double eta = coefficients[0];
  for (std::size_t j = 0; j < x.size(); ++j) eta += coefficients[j + 1] * x[j];
  return detail::expit(eta);
}

namespace detail {

LATENTAUDIT_INLINE std::string seconds_text(double s) {
  const double a = std::fabs(s);
  if (a >= 1.0) return fmt::format("{:.3g} s", s);
  if (a >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} µs", s * 1e6);
}

LATENTAUDIT_INLINE std::string bytes_text(double b) {
  const double a = std::fabs(b);
  if (a >= 1e9) return fmt::format("{:.3g} GB", b / 1e9);
  if (a >= 1e6) return fmt::format("{:.3g} MB", b / 1e6);
  if (a >= 1e3) return fmt::format("{:.3g} kB", b / 1e3);
  return fmt::format("{:.3g} B", b);
}

LATENTAUDIT_INLINE double median_of(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  const std::size_t m = x.size() / 2;
  return x.size() % 2 == 1 ? x[m] : 0.5 * (x[m - 1] + x[m]);
}

LATENTAUDIT_INLINE break_even_solution solve_break_even(double d, double delta_bytes) {
  break_even_solution s;
  if (delta_bytes > 0) {
    if (d > 0) {
      s.region = break_even_region::above;
      s.bandwidth = delta_bytes / d;
    } else {
      s.region = break_even_region::never;
    }
  } else if (delta_bytes < 0) {
    if (d >= 0) {
      s.region = break_even_region::always;
    } else {
      s.region = break_even_region::below;
      s.bandwidth = delta_bytes / d;
    }
  } else {
    s.region = d > 0 ? break_even_region::always : break_even_region::never;
  }
  return s;
}

LATENTAUDIT_INLINE void check_link(std::string_view fn, const link_preset& l) {
  if (!(l.bandwidth_bytes_s > 0) || !std::isfinite(l.bandwidth_bytes_s)) {
    throw_invalid(
        fn, "options.links",
        "must have bandwidths > 0, got " + number_text(l.bandwidth_bytes_s) + " for '" + l.name + "'");
  }
  if (!(l.alpha_s >= 0) || !std::isfinite(l.alpha_s)) {
    throw_invalid(fn, "options.links",
                  "must have alpha >= 0, got " + number_text(l.alpha_s) + " for '" + l.name + "'");
  }
}

LATENTAUDIT_INLINE std::vector<link_preset> links_to_evaluate(std::string_view fn,
                                                              std::span<const trial_record> records,
                                                              const cost_options& o,
                                                              std::vector<std::string>& notes) {
  std::vector<link_preset> links = o.links;
  if (links.empty()) {
    links = link_presets();
    std::vector<std::string> seen;
    for (const auto& r : records) {
      if (r.link.rfind("custom:", 0) != 0) continue;
      if (std::find(seen.begin(), seen.end(), r.link) != seen.end()) continue;
      seen.push_back(r.link);
      try {
        links.push_back(find_link(r.link));
      } catch (const error&) {
        notes.push_back("the records name the link '" + r.link +
                        "', which is not a valid custom link; skipped");
      }
    }
  }
  for (const auto& l : links) check_link(fn, l);
  return links;
}

}  // namespace detail

LATENTAUDIT_INLINE cost_benefit_result cost_benefit_analysis(std::span<const trial_record> records,
                                                             const cost_options& options) {
  constexpr std::string_view fn = "cost_benefit_analysis";
  const cost_options& o = options;
  detail::check_level_replicates(fn, o.level, o.bootstrap_replicates);
  detail::check_positive(fn, "options.margin", o.margin);
  if (o.latency_slo_s) detail::check_positive(fn, "options.latency_slo_s", *o.latency_slo_s);
  if (o.relay_arm.empty() || o.text_arm.empty() || o.relay_arm == o.text_arm) {
    detail::throw_invalid(fn, "options.relay_arm", "and options.text_arm must be non-empty and differ");
  }
  cost_benefit_result out;
  const auto links = detail::links_to_evaluate(fn, records, o, out.notes);
  const std::string method_base =
      "need regime, paired per (item, seed): text − relay receiver latency with transfer "
      "recomputed for the link, cluster bootstrap (item) percentile";
  auto all_inconclusive = [&](const std::string& why) {
    out.missing = why;
    for (const auto& l : links)
      out.findings.push_back(detail::inconclusive_finding(cost_finding_id(l.name), method_base, why));
    return out;
  };
  for (const auto& arm : {o.relay_arm, o.text_arm}) {
    if (!detail::has_arm(records, arm))
      return all_inconclusive("arm '" + arm + "' is absent from the records");
  }
  const std::string arms[] = {o.relay_arm, o.text_arm};
  const auto all = detail::group_units(fn, records, arms);
  std::vector<const detail::record_unit*> units;
  std::size_t paired = 0;
  for (const auto& u : all) {
    if (!u.has({0, 1})) continue;
    ++paired;
    if (u.arms[0]->regime == "need") units.push_back(&u);
  }
  if (paired == 0) {
    return all_inconclusive("no (item, seed) unit has both '" + o.relay_arm + "' and '" + o.text_arm + "'");
  }
  if (units.empty()) return all_inconclusive("no paired unit is in the need regime");
  const std::size_t n = units.size();
  const double nn = static_cast<double>(n);
  std::vector<double> base(n), extra_bytes(n), acc(n);
  std::vector<std::size_t> cluster(n);
  double bytes_relay = 0, bytes_text = 0, f_relay = 0, f_text = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& k = *units[i]->arms[0];
    const auto& t = *units[i]->arms[1];
    base[i] =
        (t.latency.receiver_s() - t.latency.transfer_s) - (k.latency.receiver_s() - k.latency.transfer_s);
    extra_bytes[i] = static_cast<double>(k.bytes) - static_cast<double>(t.bytes);
    acc[i] = (k.correct ? 1.0 : 0.0) - (t.correct ? 1.0 : 0.0);
    cluster[i] = static_cast<std::size_t>(units[i]->item);
    bytes_relay += static_cast<double>(k.bytes);
    bytes_text += static_cast<double>(t.bytes);
    f_relay += k.bytes > 0 ? 1.0 : 0.0;
    f_text += t.bytes > 0 ? 1.0 : 0.0;
  }
  bytes_relay /= nn;
  bytes_text /= nn;
  f_relay /= nn;
  f_text /= nn;
  double mean_base = 0;
  for (double b : base) mean_base += b;
  mean_base /= nn;
  const detail::clustered_mean_options cm{
      .level = o.level, .replicates = o.bootstrap_replicates, .seed = o.seed};
  const auto acc_e = detail::clustered_mean(acc, cluster, cm);
  auto bytes_e = detail::clustered_mean(extra_bytes, cluster, cm);
  bytes_e.estimand = "extra_bytes";
  for (const auto& l : links) {
    link_cost c;
    c.link = l;
    c.units = n;
    std::vector<double> saved(n), relay_s(n), text_s(n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto& k = *units[i]->arms[0];
      const auto& t = *units[i]->arms[1];
      relay_s[i] = k.latency.receiver_s() - k.latency.transfer_s + l.transfer_seconds(k.bytes);
      text_s[i] = t.latency.receiver_s() - t.latency.transfer_s + l.transfer_seconds(t.bytes);
      saved[i] = text_s[i] - relay_s[i];
    }
    c.saved_s = detail::clustered_mean(saved, cluster, cm);
    c.saved_s.estimand = "saved_seconds";
    c.extra_bytes = bytes_e;
    c.accuracy_difference = acc_e;
    c.accuracy_difference.estimand = "accuracy_difference";
    c.latency_slo_s = o.latency_slo_s ? *o.latency_slo_s : detail::median_of(text_s);
    for (std::size_t i = 0; i < n; ++i) {
      c.slo_met_relay += relay_s[i] <= c.latency_slo_s ? 1.0 : 0.0;
      c.slo_met_text += text_s[i] <= c.latency_slo_s ? 1.0 : 0.0;
    }
    c.slo_met_relay /= nn;
    c.slo_met_text /= nn;
    const double d = mean_base + l.alpha_s * (f_text - f_relay);
    const auto be = detail::solve_break_even(d, bytes_relay - bytes_text);
    c.region = be.region;
    c.break_even_bandwidth_bytes_s = be.bandwidth;
    if (f_relay > 0 && c.saved_s.estimate > 0) c.break_even_extra_alpha_s = c.saved_s.estimate / f_relay;
    // Verdict.
    const std::string id = cost_finding_id(l.name);
    const std::string method =
        method_base + "; accuracy non-inferiority margin " + detail::number_text(o.margin);
    if (!detail::has_interval(c.saved_s) || !detail::has_interval(c.accuracy_difference)) {
      out.findings.push_back(detail::inconclusive_finding(
          id, method, "the saved latency or the accuracy difference has no interval (a single item?)"));
      out.findings.back().n = n;
      out.findings.back().estimate = c.saved_s.estimate;
      out.links.push_back(std::move(c));
      continue;
    }
    const bool saves = c.saved_s.ci_low > 0, costs = c.saved_s.ci_high < 0;
    const bool non_inferior = c.accuracy_difference.ci_low > -o.margin;
    const bool inferior = c.accuracy_difference.ci_high < -o.margin;
    const bool slo_ok = c.slo_met_relay >= c.slo_met_text;
    if (saves && non_inferior && slo_ok) {
      c.pays = verdict::yes;
    } else if (costs || inferior || (saves && non_inferior && !slo_ok)) {
      c.pays = verdict::no;
    } else {
      c.pays = verdict::inconclusive;
    }
    std::string be_text;
    switch (c.region) {
      case break_even_region::above:
        be_text = fmt::format("relay saves above {:.3g} GB/s", *c.break_even_bandwidth_bytes_s / 1e9);
        break;
      case break_even_region::below:
        be_text = fmt::format("relay saves below {:.3g} GB/s", *c.break_even_bandwidth_bytes_s / 1e9);
        break;
      case break_even_region::always:
        be_text = "relay saves at every bandwidth";
        break;
      case break_even_region::never:
        be_text = "relay saves at no bandwidth";
        break;
    }
    finding f{.id = id,
              .answer = c.pays,
              .estimate = c.saved_s.estimate,
              .ci_low = c.saved_s.ci_low,
              .ci_high = c.saved_s.ci_high,
              .method = method,
              .n = n,
              .detail = fmt::format(
                  "on {} the relay saves {} [{}, {}] of receiver latency, moves {} more, accuracy "
                  "{:+.3f} [{:+.3f}, {:+.3f}] (margin {:.3g}); SLO {} met by {:.0f} % (relay) vs "
                  "{:.0f} % (text); {}",
                  l.name, detail::seconds_text(c.saved_s.estimate), detail::seconds_text(c.saved_s.ci_low),
                  detail::seconds_text(c.saved_s.ci_high), detail::bytes_text(bytes_relay - bytes_text),
                  c.accuracy_difference.estimate, c.accuracy_difference.ci_low, c.accuracy_difference.ci_high,
                  o.margin, detail::seconds_text(c.latency_slo_s), 100 * c.slo_met_relay,
                  100 * c.slo_met_text, be_text)};
    out.findings.push_back(std::move(f));
    out.links.push_back(std::move(c));
  }
  return out;
}

namespace detail {

LATENTAUDIT_INLINE Eigen::VectorXd ridge_logistic(std::string_view fn, const Eigen::MatrixXd& x,
                                                  std::span<const double> y, double ridge) {
  const Eigen::Index n = x.rows(), p = x.cols() + 1;
  Eigen::MatrixXd x1(n, p);
  x1.col(0).setOnes();
  x1.rightCols(p - 1) = x;
  Eigen::VectorXd beta = Eigen::VectorXd::Zero(p);
  Eigen::VectorXd pen = Eigen::VectorXd::Constant(p, ridge);
  pen(0) = 0;
  for (int it = 0; it < 200; ++it) {
    const Eigen::VectorXd eta = x1 * beta;
    Eigen::VectorXd mu(n), w(n), r(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      mu(i) = expit(eta(i));
      w(i) = std::max(mu(i) * (1 - mu(i)), 1e-12);
      r(i) = y[static_cast<std::size_t>(i)] - mu(i);
    }
    Eigen::MatrixXd h = x1.transpose() * w.asDiagonal() * x1;
    h.diagonal() += pen;
    const Eigen::VectorXd g = x1.transpose() * r - pen.cwiseProduct(beta);
    const Eigen::VectorXd step = h.ldlt().solve(g);
    if (!step.allFinite()) break;
    beta += step;
    if (step.norm() < 1e-10 * (1 + beta.norm())) return beta;
  }
  throw_numerical(fn, "the penalized gate model did not converge");
}

LATENTAUDIT_INLINE void check_gate_options(std::string_view fn, const relay_gate_options& o) {
  check_open_unit(fn, "options.train_fraction", o.train_fraction);
  check_open_unit(fn, "options.threshold", o.threshold);
  check_positive(fn, "options.margin", o.margin);
  check_positive(fn, "options.ridge", o.ridge);
  check_level_replicates(fn, o.level, o.bootstrap_replicates);
  if (o.relay_arm.empty() || o.control_arm.empty() || o.relay_arm == o.control_arm) {
    throw_invalid(fn, "options.relay_arm", "and options.control_arm must be non-empty and differ");
  }
}

}  // namespace detail

LATENTAUDIT_INLINE relay_gate_result fit_relay_gate(std::span<const trial_record> records,
                                                    const relay_gate_options& options) {
  constexpr std::string_view fn = "fit_relay_gate";
  const relay_gate_options& o = options;
  detail::check_gate_options(fn, o);
  relay_gate_result out;
  out.model.threshold = o.threshold;
  const std::string id = "gate.matches_always_relay";
  const std::string method = fmt::format(
      "logistic gate on features known before transfer, items split {:.0f}/{:.0f} by hash; held-out accuracy "
      "vs "
      "always-relay (non-inferiority margin {:.3g}) and bytes saved, cluster bootstrap (item) percentile",
      100 * o.train_fraction, 100 * (1 - o.train_fraction), o.margin);
  auto give_up = [&](std::string why) {
    out.missing = why;
    out.findings.push_back(detail::inconclusive_finding(id, method, std::move(why)));
    return out;
  };
  for (const auto& arm : {o.relay_arm, o.control_arm}) {
    if (!detail::has_arm(records, arm)) return give_up("arm '" + arm + "' is absent from the records");
  }
  const std::string arms[] = {o.relay_arm, o.control_arm, o.text_arm};
  const auto all = detail::group_units(fn, records, arms);
  std::vector<const detail::record_unit*> units;
  for (const auto& u : all)
    if (u.has({0, 1})) units.push_back(&u);
  if (units.empty())
    return give_up("no (item, seed) unit has both '" + o.relay_arm + "' and '" + o.control_arm + "'");
  const std::size_t n = units.size();
  // Candidate features.
  struct candidate {
    std::string name;
    std::vector<double> values;
    std::size_t missing = 0;
  };
  std::vector<candidate> cand{{"doc_tokens", std::vector<double>(n), 0},
                              {"need", std::vector<double>(n), 0},
                              {"relay_bytes", std::vector<double>(n), 0},
                              {"attention_mass", std::vector<double>(n), 0}};
  std::vector<double> label(n);
  std::vector<bool> train(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& k = *units[i]->arms[0];
    const auto& c = *units[i]->arms[1];
    auto d = k.covariate_value("doc_tokens");
    if (!d) d = c.covariate_value("doc_tokens");
    if (d)
      cand[0].values[i] = *d;
    else
      ++cand[0].missing;
    cand[1].values[i] = k.regime == "need" ? 1.0 : 0.0;
    cand[2].values[i] = static_cast<double>(k.bytes);
    if (k.attention_mass)
      cand[3].values[i] = *k.attention_mass;
    else
      ++cand[3].missing;
    label[i] = k.correct && !c.correct ? 1.0 : 0.0;
    train[i] = detail::item_uniform(o.split_seed, units[i]->item, 4) < o.train_fraction;
  }
  bool any_regime = false;
  for (const auto* u : units) any_regime = any_regime || !u->arms[0]->regime.empty();
  if (!any_regime) cand[1].missing = n;
  std::vector<std::size_t> tr, te;
  std::vector<std::size_t> tr_items, te_items;
  for (std::size_t i = 0; i < n; ++i) {
    (train[i] ? tr : te).push_back(i);
    (train[i] ? tr_items : te_items).push_back(static_cast<std::size_t>(units[i]->item));
  }
  for (auto* v : {&tr_items, &te_items}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  out.train_units = tr.size();
  out.test_units = te.size();
  out.train_items = tr_items.size();
  out.test_items = te_items.size();
  if (tr_items.size() < 2 || te_items.size() < 2) {
    return give_up(
        fmt::format("the item split leaves {} training and {} held-out items; at least 2 of each are needed",
                    tr_items.size(), te_items.size()));
  }
  double pos = 0;
  for (auto i : tr) pos += label[i];
  out.train_positive_rate = pos / static_cast<double>(tr.size());
  if (pos == 0 || pos == static_cast<double>(tr.size())) {
    return give_up(fmt::format("'relay helps' is {} on every training unit; the gate cannot be fitted",
                               pos == 0 ? "false" : "true"));
  }
  // Feature selection on the training units: present, varying, not collinear.
  std::vector<std::size_t> kept;
  std::vector<double> mean, sd;
  Eigen::MatrixXd xs(static_cast<Eigen::Index>(tr.size()), 0);
  for (std::size_t j = 0; j < cand.size(); ++j) {
    const auto& c = cand[j];
    if (c.missing > 0) {
      out.dropped_features.push_back(
          c.name + (c.name == "need" ? ": no record has a regime"
                                     : fmt::format(": missing on {} of {} units", c.missing, n)));
      continue;
    }
    std::vector<double> v;
    for (auto i : tr) v.push_back(c.values[i]);
    const auto [m, s] = detail::mean_sd(v);
    if (!(s > 0)) {
      out.dropped_features.push_back(c.name + ": constant among training units");
      continue;
    }
    Eigen::MatrixXd trial(xs.rows(), xs.cols() + 1);
    trial.leftCols(xs.cols()) = xs;
    for (std::size_t r = 0; r < tr.size(); ++r)
      trial(static_cast<Eigen::Index>(r), xs.cols()) = (v[r] - m) / s;
    Eigen::MatrixXd with1(trial.rows(), trial.cols() + 1);
    with1.col(0).setOnes();
    with1.rightCols(trial.cols()) = trial;
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(with1);
    qr.setThreshold(1e-9);
    if (qr.rank() < with1.cols()) {
      out.dropped_features.push_back(c.name + ": collinear with the features before it");
      continue;
    }
    xs = std::move(trial);
    kept.push_back(j);
    mean.push_back(m);
    sd.push_back(s);
  }
  std::vector<double> ytr;
  for (auto i : tr) ytr.push_back(label[i]);
  const std::size_t p = kept.size();
  Eigen::VectorXd beta(static_cast<Eigen::Index>(p + 1));
  if (p == 0) {
    beta(0) = std::log(out.train_positive_rate / (1 - out.train_positive_rate));
  } else {
    try {
      beta = logistic_regression(xs, ytr).coefficients;
    } catch (const numerical_error&) {
      try {
        beta = detail::ridge_logistic(fn, xs, ytr, o.ridge);
        out.model.penalized = true;
      } catch (const numerical_error& e) {
        return give_up(std::string("the gate model could not be fitted: ") + e.what());
      }
    } catch (const invalid_argument& e) {
      return give_up(std::string("the gate model could not be fitted: ") + e.what());
    }
  }
  // Raw-scale coefficients.
  out.model.coefficients.assign(p + 1, 0.0);
  out.model.coefficients[0] = beta(0);
  for (std::size_t j = 0; j < p; ++j) {
    const double b = beta(static_cast<Eigen::Index>(j + 1));
    out.model.features.push_back(cand[kept[j]].name);
    out.model.coefficients[j + 1] = b / sd[j];
    out.model.coefficients[0] -= b * mean[j] / sd[j];
  }
  // Held-out policies.
  const std::size_t m = te.size();
  std::vector<double> g_acc(m), g_bytes(m), r_acc(m), r_bytes(m), c_acc(m), c_bytes(m), t_acc(m), t_bytes(m),
      diff(m), saved(m);
  std::vector<std::size_t> cl(m);
  std::size_t relayed = 0;
  bool text_ok = !o.text_arm.empty();
  std::vector<double> x(p);
  for (std::size_t r = 0; r < m; ++r) {
    const auto& u = *units[te[r]];
    const auto& k = *u.arms[0];
    const auto& c = *u.arms[1];
    for (std::size_t j = 0; j < p; ++j) x[j] = cand[kept[j]].values[te[r]];
    const bool relay = out.model.relays(x);
    relayed += relay;
    r_acc[r] = k.correct ? 1.0 : 0.0;
    r_bytes[r] = static_cast<double>(k.bytes);
    c_acc[r] = c.correct ? 1.0 : 0.0;
    c_bytes[r] = static_cast<double>(c.bytes);
    g_acc[r] = relay ? r_acc[r] : c_acc[r];
    g_bytes[r] = relay ? r_bytes[r] : c_bytes[r];
    diff[r] = g_acc[r] - r_acc[r];
    saved[r] = r_bytes[r] - g_bytes[r];
    cl[r] = static_cast<std::size_t>(u.item);
    if (u.arms[2] == nullptr) {
      text_ok = false;
    } else {
      t_acc[r] = u.arms[2]->correct ? 1.0 : 0.0;
      t_bytes[r] = static_cast<double>(u.arms[2]->bytes);
    }
  }
  const detail::clustered_mean_options cm{
      .level = o.level, .replicates = o.bootstrap_replicates, .seed = o.seed};
  auto policy = [&](std::string name, bool available, const std::vector<double>& a,
                    const std::vector<double>& b, double rate) {
    policy_value v;
    v.name = std::move(name);
    v.available = available;
    v.relay_rate = rate;
    if (available) {
      v.accuracy = detail::clustered_mean(a, cl, cm);
      v.bytes = detail::clustered_mean(b, cl, cm);
    } else {
      v.accuracy.status = v.bytes.status = estimate_status::degenerate;
    }
    return v;
  };
  const double rate = static_cast<double>(relayed) / static_cast<double>(m);
  out.policies.push_back(policy("gate", true, g_acc, g_bytes, rate));
  out.policies.push_back(policy("always_relay", true, r_acc, r_bytes, 1.0));
  out.policies.push_back(policy("never_relay", true, c_acc, c_bytes, 0.0));
  out.policies.push_back(policy("always_text", text_ok, t_acc, t_bytes, 0.0));
  out.accuracy_vs_always_relay = detail::clustered_mean(diff, cl, cm);
  out.accuracy_vs_always_relay.estimand = "accuracy_gate_minus_always_relay";
  out.bytes_saved = detail::clustered_mean(saved, cl, cm);
  out.bytes_saved.estimand = "bytes_saved";
  const auto& a = out.accuracy_vs_always_relay;
  const auto& s = out.bytes_saved;
  verdict v = verdict::inconclusive;
  if (detail::has_interval(a) && detail::has_interval(s)) {
    if (a.ci_low > -o.margin && s.ci_low > 0) {
      v = verdict::yes;
    } else if (a.ci_high < -o.margin || s.ci_high <= 0) {
      v = verdict::no;
    }
  }
  out.findings.push_back(finding{
      .id = id,
      .answer = v,
      .estimate = a.estimate,
      .ci_low = a.ci_low,
      .ci_high = a.ci_high,
      .method = method,
      .n = m,
      .detail = fmt::format(
          "on {} held-out units the gate relays {:.0f} %: accuracy vs always-relay {} (margin {:.3g}), "
          "bytes saved per request {} [{}, {}]",
          m, 100 * rate, detail::estimate_text(a), o.margin, detail::bytes_text(s.estimate),
          detail::bytes_text(s.ci_low), detail::bytes_text(s.ci_high))});
  return out;
}

}  // namespace latentaudit

#endif  // LATENTAUDIT_REPORT_IMPL_COST_INL_HPP

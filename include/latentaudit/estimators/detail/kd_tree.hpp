// SPDX-License-Identifier: MIT
// latentaudit: a static k-d tree for exact nearest-neighbour queries in squared Euclidean distance,
// used by nearest-neighbour matching. Two queries: the k nearest points that pass a filter (with a
// deterministic (distance, index) order), and every filtered point within a squared radius (needed
// to keep all ties of the M-th distance). Both are exact: pruning uses the squared distance from the
// query to a node's bounding box, which never exceeds the distance to any point inside it.
#ifndef LATENTAUDIT_ESTIMATORS_DETAIL_KD_TREE_HPP
#define LATENTAUDIT_ESTIMATORS_DETAIL_KD_TREE_HPP

#include "../../core/detail/internal_header_check.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

namespace latentaudit::detail {

/// @brief A neighbour found by a query: squared distance and the caller's point index.
struct kd_neighbor {
  double dist2 = 0;       ///< squared Euclidean distance to the query
  std::size_t index = 0;  ///< index of the point as given to the tree's constructor
};

/// @brief Orders neighbours by squared distance, then by index (deterministic tie-break).
[[nodiscard]] inline bool kd_closer(const kd_neighbor& a, const kd_neighbor& b) noexcept {
  return a.dist2 < b.dist2 || (a.dist2 == b.dist2 && a.index < b.index);
}

/// @brief Static k-d tree over points in `dim` dimensions (coordinates copied at construction).
///
/// Nodes split the coordinate of largest spread at the median (std::nth_element), leaves hold at
/// most `leaf_size` points; every node keeps its bounding box. Construction O(n log n); queries on
/// well-spread data O(log n + output). Queries are const and may run concurrently.
class kd_tree {
 public:
  /// @brief Builds the tree. `coords` is row-major: point p has coordinates coords[p*dim .. p*dim+dim).
  /// `ids` gives the index reported for each point (e.g. its row in the full data set).
  kd_tree(std::span<const double> coords, std::span<const std::size_t> ids, std::size_t dim,
          std::size_t leaf_size = 12)
      : dim_(dim), leaf_size_(leaf_size < 1 ? 1 : leaf_size) {
    const std::size_t n = ids.size();
    pts_.assign(coords.begin(), coords.begin() + static_cast<std::ptrdiff_t>(n * dim));
    ids_.assign(ids.begin(), ids.end());
    order_.resize(n);
    for (std::size_t i = 0; i < n; ++i) order_[i] = i;
    if (n > 0) {
      nodes_.reserve(2 * (n / leaf_size_ + 1));
      build(0, n);
    }
    // Store the coordinates in tree order so that leaves are contiguous in memory.
    std::vector<double> sorted(n * dim);
    std::vector<std::size_t> sorted_ids(n);
    for (std::size_t i = 0; i < n; ++i) {
      std::copy_n(pts_.begin() + static_cast<std::ptrdiff_t>(order_[i] * dim), dim,
                  sorted.begin() + static_cast<std::ptrdiff_t>(i * dim));
      sorted_ids[i] = ids_[order_[i]];
    }
    pts_ = std::move(sorted);
    ids_ = std::move(sorted_ids);
  }

  /// @brief Number of points.
  [[nodiscard]] std::size_t size() const noexcept { return ids_.size(); }

  /// @brief The k nearest points to q that satisfy accept(index), in (distance, index) order.
  /// Returns fewer than k when fewer points are accepted. `out` is overwritten.
  template <class Accept>
  void nearest(const double* q, std::size_t k, Accept&& accept, std::vector<kd_neighbor>& out) const {
    out.clear();
    if (k == 0 || nodes_.empty()) return;
    knn(0, q, k, accept, out);
  }

  /// @brief Every point with squared distance <= radius2 to q that satisfies accept(index),
  /// appended to `out` in no particular order.
  template <class Accept>
  void within(const double* q, double radius2, Accept&& accept, std::vector<kd_neighbor>& out) const {
    if (nodes_.empty()) return;
    range(0, q, radius2, accept, out);
  }

 private:
  struct node {
    std::size_t begin = 0, end = 0;   // points [begin, end) in tree order
    std::size_t left = 0, right = 0;  // children (0 = leaf; the root is never a child)
    std::size_t box = 0;              // offset of lo[dim], hi[dim] in boxes_
  };

  std::size_t build(std::size_t begin, std::size_t end) {
    const std::size_t id = nodes_.size();
    nodes_.push_back(node{begin, end, 0, 0, boxes_.size()});
    boxes_.resize(boxes_.size() + 2 * dim_);
    double* lo = boxes_.data() + nodes_[id].box;
    double* hi = lo + dim_;
    for (std::size_t d = 0; d < dim_; ++d) {
      lo[d] = std::numeric_limits<double>::infinity();
      hi[d] = -std::numeric_limits<double>::infinity();
    }
    for (std::size_t i = begin; i < end; ++i) {
      const double* p = pts_.data() + order_[i] * dim_;
      for (std::size_t d = 0; d < dim_; ++d) {
        lo[d] = std::min(lo[d], p[d]);
        hi[d] = std::max(hi[d], p[d]);
      }
    }
    if (end - begin <= leaf_size_) return id;
    std::size_t split = 0;
    double spread = -1;
    for (std::size_t d = 0; d < dim_; ++d) {
      if (hi[d] - lo[d] > spread) {
        spread = hi[d] - lo[d];
        split = d;
      }
    }
    if (!(spread > 0)) return id;  // all points identical: keep as one leaf
    const std::size_t mid = begin + (end - begin) / 2;
    std::nth_element(
        order_.begin() + static_cast<std::ptrdiff_t>(begin),
        order_.begin() + static_cast<std::ptrdiff_t>(mid), order_.begin() + static_cast<std::ptrdiff_t>(end),
        [&](std::size_t a, std::size_t b) { return pts_[a * dim_ + split] < pts_[b * dim_ + split]; });
    const std::size_t l = build(begin, mid);
    const std::size_t r = build(mid, end);
    nodes_[id].left = l;
    nodes_[id].right = r;
    return id;
  }

  [[nodiscard]] double box_dist2(std::size_t n, const double* q) const noexcept {
    const double* lo = boxes_.data() + nodes_[n].box;
    const double* hi = lo + dim_;
    double s = 0;
    for (std::size_t d = 0; d < dim_; ++d) {
      const double e = q[d] < lo[d] ? lo[d] - q[d] : (q[d] > hi[d] ? q[d] - hi[d] : 0.0);
      s += e * e;
    }
    return s;
  }

  [[nodiscard]] double point_dist2(std::size_t i, const double* q) const noexcept {
    const double* p = pts_.data() + i * dim_;
    double s = 0;
    for (std::size_t d = 0; d < dim_; ++d) {
      const double e = p[d] - q[d];
      s += e * e;
    }
    return s;
  }

  template <class Accept>
  void knn(std::size_t n, const double* q, std::size_t k, Accept& accept,
           std::vector<kd_neighbor>& best) const {
    const node& nd = nodes_[n];
    if (nd.left == 0) {
      for (std::size_t i = nd.begin; i < nd.end; ++i) {
        const kd_neighbor c{point_dist2(i, q), ids_[i]};
        if (best.size() == k && !kd_closer(c, best.back())) continue;
        if (!accept(c.index)) continue;
        // insertion into the sorted list of the best k
        auto pos = std::upper_bound(best.begin(), best.end(), c, kd_closer);
        if (best.size() == k) best.pop_back();
        best.insert(pos, c);
      }
      return;
    }
    const double dl = box_dist2(nd.left, q), dr = box_dist2(nd.right, q);
    const std::size_t first = dl <= dr ? nd.left : nd.right;
    const std::size_t second = dl <= dr ? nd.right : nd.left;
    const double d1 = std::min(dl, dr), d2 = std::max(dl, dr);
    if (best.size() < k || d1 <= best.back().dist2) knn(first, q, k, accept, best);
    if (best.size() < k || d2 <= best.back().dist2) knn(second, q, k, accept, best);
  }

  template <class Accept>
  void range(std::size_t n, const double* q, double r2, Accept& accept, std::vector<kd_neighbor>& out) const {
    const node& nd = nodes_[n];
    if (nd.left == 0) {
      for (std::size_t i = nd.begin; i < nd.end; ++i) {
        const double d2 = point_dist2(i, q);
        if (d2 <= r2 && accept(ids_[i])) out.push_back({d2, ids_[i]});
      }
      return;
    }
    if (box_dist2(nd.left, q) <= r2) range(nd.left, q, r2, accept, out);
    if (box_dist2(nd.right, q) <= r2) range(nd.right, q, r2, accept, out);
  }

  std::size_t dim_;
  std::size_t leaf_size_;
  std::vector<double> pts_;
  std::vector<std::size_t> ids_;
  std::vector<std::size_t> order_;
  std::vector<node> nodes_;
  std::vector<double> boxes_;
};

}  // namespace latentaudit::detail

#endif  // LATENTAUDIT_ESTIMATORS_DETAIL_KD_TREE_HPP

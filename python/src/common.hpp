// SPDX-License-Identifier: MIT
// latentaudit Python module: helpers shared by the binding files (arrays in, result classes out,
// option strings to enums). Not part of the library: glue for pybind11 only.
#ifndef LATENTAUDIT_PYTHON_COMMON_HPP
#define LATENTAUDIT_PYTHON_COMMON_HPP

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <latentaudit/core/error.hpp>

namespace latentaudit::python {

namespace py = pybind11;

/// A float64 array in C order: numpy arrays of any real dtype and Python sequences convert to it
/// (a copy only where the input is not already float64 and contiguous).
using f64_array = py::array_t<double, py::array::c_style | py::array::forcecast>;

/// The 1-D view of `a`; shape_mismatch (ValueError) naming the function and argument otherwise.
inline std::span<const double> vec(const f64_array& a, std::string_view fn, std::string_view name) {
  if (a.ndim() != 1)
    throw shape_mismatch(std::string(fn) + ": " + std::string(name) + " must be 1-dimensional, got " +
                         std::to_string(a.ndim()) + " dimensions");
  return {a.data(), static_cast<std::size_t>(a.shape(0))};
}

/// `e` parsed from its name among `choices` (a C array or std::array of {name, value} pairs);
/// invalid_argument listing them otherwise.
template <class Choices>
auto parse_choice(std::string_view fn, std::string_view arg, std::string_view name, const Choices& choices) {
  std::string list;
  for (const auto& [n, v] : choices) {
    if (n == name) return v;
    list += (list.empty() ? "" : ", ") + std::string(n);
  }
  throw invalid_argument(std::string(fn) + ": " + std::string(arg) + " must be one of " + list + ", got '" +
                         std::string(name) + "'");
}

/// The name of `v` among `choices` ("unknown" if none).
template <class E, std::size_t N>
std::string choice_name(E v, const std::pair<std::string_view, E> (&choices)[N]) {
  for (const auto& [n, c] : choices)
    if (c == v) return std::string(n);
  return "unknown";
}

/// A Python value without bound C++ objects: results (anything with to_dict) become dicts, lists and
/// tuples become lists of plain values, everything else stays as it is.
inline py::object plain(py::handle v) {
  if (py::hasattr(v, "to_dict")) return v.attr("to_dict")();
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    py::list out;
    for (auto x : v) out.append(plain(x));
    return py::object(std::move(out));
  }
  return py::reinterpret_borrow<py::object>(v);
}

/// A read-only result class: every field is an attribute, `_fields` lists them in order,
/// `to_dict()` returns them as a dict (nested results as dicts), `repr()` shows the scalars.
template <class T>
class result_class {
 public:
  result_class(py::handle scope, const char* name, const char* doc) : cls_(scope, name, doc) {}

  /// A member shown as it is (numbers, strings, vectors as lists, nested results).
  template <class M>
  result_class& field(const char* name, M T::*member, const char* doc = "") {
    cls_.def_readonly(name, member, doc);
    names_.emplace_back(name);
    return *this;
  }
  /// A value computed from the object (enum names, Eigen vectors as numpy arrays).
  template <class F>
  result_class& computed(const char* name, F&& f, const char* doc = "") {
    cls_.def_property_readonly(name, std::forward<F>(f), doc);
    names_.emplace_back(name);
    return *this;
  }
  py::class_<T>& finish() {
    py::tuple fields(names_.size());
    for (std::size_t i = 0; i < names_.size(); ++i) fields[i] = py::str(names_[i]);
    cls_.attr("_fields") = fields;
    auto names = names_;
    cls_.def(
        "to_dict",
        [names](py::object self) {
          py::dict d;
          for (const auto& n : names) d[py::str(n)] = plain(self.attr(n.c_str()));
          return d;
        },
        "The fields as a dict (nested results as dicts).");
    cls_.def("__repr__", [names](py::object self) {
      std::string s = py::str(py::type::of(self).attr("__name__"));
      s += "(";
      bool first = true;
      for (const auto& n : names) {
        py::object v = self.attr(n.c_str());
        if (!(py::isinstance<py::float_>(v) || py::isinstance<py::int_>(v) || py::isinstance<py::str>(v) ||
              py::isinstance<py::bool_>(v)))
          continue;
        s += (first ? "" : ", ") + n + "=" + std::string(py::repr(v));
        first = false;
      }
      return s + ")";
    });
    return cls_;
  }

 private:
  py::class_<T> cls_;
  std::vector<std::string> names_;
};

void bind_estimators(py::module_& m);
void bind_records(py::module_& m);
void bind_kv(py::module_& m);

}  // namespace latentaudit::python

#endif  // LATENTAUDIT_PYTHON_COMMON_HPP

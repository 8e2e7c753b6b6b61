// SPDX-License-Identifier: MIT
// latentaudit Python module `_latentaudit` (wrapped by python/latentaudit/__init__.py): the
// exception translation and the submodules. docs/python.md describes the API.
#include <latentaudit/version.hpp>

#include "common.hpp"

namespace py = pybind11;

namespace latentaudit::python {
void bind_relay_policy(py::module_& m);  // relay_policy.cpp: la.RelayPolicy's evaluator
// relay_monitor.cpp: la.RelayMonitor's always-valid switch
void bind_relay_monitor(py::module_& m);
}  // namespace latentaudit::python

PYBIND11_MODULE(_latentaudit, m) {
  m.doc() = "latentaudit: causal audits of KV-cache relay between LLM agents (C++ core)";
  m.attr("__version__") = LATENTAUDIT_PYTHON_VERSION;
  // The library's exception hierarchy as Python classes under latentaudit.Error. Bad input
  // (invalid_argument, shape_mismatch, corrupt_data, incompatible_model) and undefined statistics
  // (numerical_error) are also ValueErrors, engine failures RuntimeErrors, so callers can catch
  // either the library's class or Python's usual one. The classes live as long as the process.
  py::object type = py::module_::import("builtins").attr("type");
  auto make = [&](const char* name, py::handle a, py::handle b, const char* doc) -> PyObject* {
    py::dict ns;
    ns["__module__"] = "latentaudit";
    ns["__doc__"] = doc;
    py::object cls = b ? type(name, py::make_tuple(a, b), ns) : type(name, py::make_tuple(a), ns);
    m.attr(name) = cls;
    return cls.release().ptr();
  };
  static PyObject* const base = make("Error", PyExc_Exception, {}, "Base of every latentaudit error.");
  static PyObject* const invalid =
      make("InvalidArgument", base, PyExc_ValueError, "An argument is outside its domain.");
  static PyObject* const shape =
      make("ShapeMismatch", invalid, {}, "Two arguments disagree in size or shape.");
  static PyObject* const incompatible = make("IncompatibleModel", base, PyExc_ValueError,
                                             "A cache does not belong to the model it is offered to.");
  static PyObject* const corrupt =
      make("CorruptData", base, PyExc_ValueError, "A file, relay frame or record is malformed.");
  static PyObject* const auth =
      make("AuthenticationFailed", corrupt, {}, "A relay frame failed authentication.");
  static PyObject* const numerical =
      make("NumericalError", base, PyExc_ValueError, "The statistics are undefined for these data.");
  static PyObject* const engine =
      make("EngineError", base, PyExc_RuntimeError, "An inference engine failed an operation.");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const latentaudit::authentication_failed& e) {
      PyErr_SetString(auth, e.what());
    } catch (const latentaudit::shape_mismatch& e) {
      PyErr_SetString(shape, e.what());
    } catch (const latentaudit::invalid_argument& e) {
      PyErr_SetString(invalid, e.what());
    } catch (const latentaudit::incompatible_model& e) {
      PyErr_SetString(incompatible, e.what());
    } catch (const latentaudit::corrupt_data& e) {
      PyErr_SetString(corrupt, e.what());
    } catch (const latentaudit::numerical_error& e) {
      PyErr_SetString(numerical, e.what());
    } catch (const latentaudit::engine_error& e) {
      PyErr_SetString(engine, e.what());
    } catch (const latentaudit::error& e) {
      PyErr_SetString(base, e.what());
    }
  });
  latentaudit::python::bind_estimators(m);
  latentaudit::python::bind_records(m);
  latentaudit::python::bind_relay_policy(m);
  latentaudit::python::bind_relay_monitor(m);
  auto kv = m.def_submodule("kv", "KV transfer policies on arrays");
  latentaudit::python::bind_kv(kv);
}

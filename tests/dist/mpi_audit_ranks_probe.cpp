// SPDX-License-Identifier: MIT
// The library's dist::mpi_audit_ranks (dist/mpi_audit_ranks.hpp) on its own, without the CLI, in
// two ranks of `mpirun -np 2` (tests/dist/mpi_audit_ranks_test.cpp starts it): a failing step
// throws rank_failure on every rank with the failing rank, its message and the options' exit code
// (the front end's classify first); run() returns the failing rank's code on every rank. Prints
// "ok" on each rank whose checks hold; exit 0 only if all do.
#include <latentaudit/dist/mpi_audit_ranks.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace {

// A front end's own exception type, which its classify maps.
struct front_end_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace

int main() {
  using namespace latentaudit;
  dist::mpi_audit_ranks ranks({.classify = [](std::exception_ptr e) -> std::pair<int, std::string> {
                                 try {
                                   std::rethrow_exception(e);
                                 } catch (const front_end_error& x) {
                                   return {9, std::string("front end: ") + x.what()};
                                 } catch (...) {
                                   return dist::mpi_audit_ranks::default_classify(
                                       std::current_exception(), {.bad_input_code = 5, .internal_code = 7});
                                 }
                               },
                               .bad_input_code = 5,
                               .internal_code = 7});
  bool ok = ranks.size() == 2;
  const int me = ranks.rank();
  // run() first (after an agreed step failure a rank fails alone): an exception that leaves the
  // body is agreed on; every rank returns its code
  const int code = ranks.run([&]() -> int {
    if (me == 1) throw std::logic_error("a bug");
    ranks.step([] {});
    return 0;
  });
  ok = ok && code == 7;
  ranks.step([] {});  // every rank succeeds: returns
  try {
    ranks.step([&] {
      if (me == 1) throw error("rank one's data is bad");
    });
    ok = false;
  } catch (const dist::rank_failure& f) {
    ok = ok && f.rank() == 1 && f.code() == 5 && std::string(f.what()) == "rank one's data is bad";
  }
  try {
    ranks.step([&] {
      if (me == 0) throw front_end_error("bad option");
    });
    ok = false;
  } catch (const dist::rank_failure& f) {
    ok = ok && f.rank() == 0 && f.code() == 9 && std::string(f.what()) == "front end: bad option";
  }
  std::printf("%s rank %d\n", ok ? "ok" : "FAILED", me);
  return ok ? 0 : 1;
}

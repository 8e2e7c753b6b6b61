// SPDX-License-Identifier: MIT
// A two-rank MPI program for tests/dist/transport_mpi_test.cpp (started by `mpirun -np 2`):
//   relay MODELS: rank 1 serves agent A (dist::serve_sender) over dist::mpi_transport, rank 0
//     runs a small design through it and in process, and checks that the records agree but for
//     timings (and that every relay carries transfer_measured_s); prints "relay records equal: N".
//   frames: ping-pong of frames of 1 kB..8 MB ("go" then the frame, as the relay protocol times it),
//     printing "frame BYTES SECONDS" per exchange, then a 10 GB length announcement that the
//     receiver must refuse before allocation ("refused: ...").
// Exit status 0 when every check holds.
#include <latentaudit/dist/mpi_runtime.hpp>
#include <latentaudit/dist/relay_protocol.hpp>
#include <latentaudit/dist/transport_mpi.hpp>
#include <latentaudit/engine/reference_cpu.hpp>
#include <latentaudit/trial.hpp>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>

using namespace latentaudit;

namespace {

std::string timeless(trial_record r) {
  r.latency = {};
  r.transfer_measured_s.reset();
  for (auto& x : r.latency_repeats_s) x = 0.0;
  return record_to_line(r);
}

int relay(const dist::communicator& comm, const std::string& models) {
  auto a = reference_cpu_engine::load(models + "/organism-a");
  auto b = reference_cpu_engine::load(models + "/organism-b");
  const auto fmt = organism_format::load(models + "/organism-a");
  trial_design d{.seed = 5, .items = 4, .seeds = 1};
  d.arms = {parse_arm("no_comm"), parse_arm("text_full"), parse_arm("kv_full"),
            parse_arm("kv_int8"), parse_arm("deranged"),  parse_arm("cross_model")};
  const organism_task_options to{.seed = d.seed};
  auto tasks = [&](std::uint64_t i, std::uint64_t s) { return make_organism_task(fmt, to, i, s); };
  dist::mpi_transport link(comm, 1 - comm.rank(), {.timeout_s = 60});
  trial_driver<reference_cpu_engine> drv(a, &b);
  if (comm.rank() == 1) {
    (void)dist::serve_sender(drv, d, tasks, link);
    return 0;
  }
  std::map<trial_key, std::string> local;
  drv.run(d, tasks, [&](const trial_record& r) { local[{r.item, r.seed, r.arm}] = timeless(r); });
  dist::channel_sender remote(link);
  drv.set_remote_sender(&remote);
  std::size_t equal = 0, measured = 0, bad = 0;
  drv.run(d, tasks, [&](const trial_record& r) {
    equal += local.at({r.item, r.seed, r.arm}) == timeless(r);
    measured += r.transfer_measured_s.has_value();
    bad += (r.bytes > 0) != r.transfer_measured_s.has_value();
  });
  std::printf("relay records equal: %zu of %zu; measured: %zu\n", equal, local.size(), measured);
  return equal == local.size() && bad == 0 && measured == 4 * 5 ? 0 : 1;
}

int frames(const dist::communicator& comm) {
  dist::mpi_transport link(comm, 1 - comm.rank(), {.timeout_s = 60});
  const std::size_t sizes[] = {1000, 10000, 100000, 1000000, 8000000};
  std::vector<std::byte> buf;
  static constexpr std::byte go[] = {std::byte{'g'}, std::byte{'o'}};
  for (std::size_t sz : sizes) {
    const std::vector<std::byte> frame(sz, std::byte{7});
    for (int rep = 0; rep < 20; ++rep) {
      if (comm.rank() == 0) {
        const auto t0 = std::chrono::steady_clock::now();
        link.send(go);
        link.receive(buf);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (buf != frame) return 1;
        std::printf("frame %zu %.9f\n", sz, s);
      } else {
        link.receive(buf);
        link.send(frame);
      }
    }
  }
  if (comm.rank() == 1) {  // a bare 10 GB length: no payload follows
    const std::uint64_t n = 10'000'000'000ull;
    return MPI_Send(&n, 1, MPI_UINT64_T, 0, 0x4C41, comm.native()) == MPI_SUCCESS ? 0 : 1;
  }
  try {
    link.receive(buf);
  } catch (const link_error& e) {
    std::printf("refused: %s\n", e.what());
    return buf.size() < 100000000 ? 0 : 1;
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    dist::mpi_runtime rt;
    dist::communicator comm;
    if (comm.size() != 2) {
      std::fprintf(stderr, "mpi_relay_probe: needs 2 ranks\n");
      return 2;
    }
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "relay" && argc > 2) return relay(comm, argv[2]);
    if (mode == "frames") return frames(comm);
    std::fprintf(stderr, "usage: mpi_relay_probe relay MODELS_DIR | frames\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_relay_probe: %s\n", e.what());
    return 1;
  }
}

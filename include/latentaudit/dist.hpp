// SPDX-License-Identifier: MIT
// latentaudit: sharded audits — unit assignment, per-rank records files and their reading as one
// set (docs/distributed.md). The MPI layer (dist/mpi_runtime.hpp, dist/transport_mpi.hpp,
// dist/mpi_audit_ranks.hpp) needs mpi.h and is included separately (like the llama.cpp engine's
// headers).
#ifndef LATENTAUDIT_DIST_HPP
#define LATENTAUDIT_DIST_HPP

#include "dist/audit_ranks.hpp"
#include "dist/relay_auth.hpp"
#include "dist/relay_protocol.hpp"
#include "dist/shard.hpp"
#include "dist/transport.hpp"

#endif  // LATENTAUDIT_DIST_HPP

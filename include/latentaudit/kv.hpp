// SPDX-License-Identifier: MIT
// latentaudit: module header for KV blocks, transfer policies, positions and the relay wire format.
#ifndef LATENTAUDIT_KV_HPP
#define LATENTAUDIT_KV_HPP

#include "core.hpp"
#include "kv/kv_block.hpp"
#include "kv/kv_map.hpp"
#include "kv/llama_state.hpp"
#include "kv/map_screen.hpp"
#include "kv/noise.hpp"
#include "kv/placebo.hpp"
#include "kv/policy_spec.hpp"
#include "kv/quantize.hpp"
#include "kv/rope.hpp"
#include "kv/selection.hpp"
#include "kv/transfer_policy.hpp"
#include "kv/wire.hpp"

#endif  // LATENTAUDIT_KV_HPP

// SPDX-License-Identifier: MIT
// Builds the tests' precompiled header (tests/support/pch.hpp).

// SPDX-License-Identifier: MIT
// latentaudit: module header for trials — tasks, arms, designs, the driver, records and the journal.
#ifndef LATENTAUDIT_TRIAL_HPP
#define LATENTAUDIT_TRIAL_HPP

#include "core.hpp"
#include "engine.hpp"
#include "kv.hpp"
#include "trial/arm.hpp"
#include "trial/arm_schedule.hpp"
#include "trial/design.hpp"
#include "trial/driver.hpp"
#include "trial/engine_support.hpp"
#include "trial/journal.hpp"
#include "trial/link.hpp"
#include "trial/message.hpp"
#include "trial/record.hpp"
#include "trial/record_builder.hpp"
#include "trial/reference_driver.hpp"
#include "trial/remote_sender.hpp"
#include "trial/task.hpp"
#include "trial/task_file.hpp"
#include "trial/workers.hpp"

#endif  // LATENTAUDIT_TRIAL_HPP

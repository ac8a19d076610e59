#pragma once
// A calibration fitted on the months before a date and carried to the days after it, as a user
// carries one to a month it has not seen: the judged month's own jobs tell it nothing but the
// rules it applies to every job.
//
// What the fitted calibration assumes for the days after `until`:
//   limits, priority weights, scheduler settings, weekly boundaries  as fitted;
//   room      the last four fitted weeks' room, repeated week for week: the later days are
//             as congested or idle as the weeks just before, with the same spread (a constant
//             mean room would shut out every job larger than what it leaves, for good);
//   down      no down window is foreseen (one open at `until` ends there);
//   dependencies and followers  the fitted rules, applied to every job of the log (a job's
//             dependency is read off the log as its submission would be seen live), with the
//             fitted verdicts: links kept only where the fitted months told them apart from
//             chance, followers only where their fit kept feedback; no test reruns on later jobs.
#include <vector>

#include "mirage/core/Job.h"
#include "mirage/simulator/Calibration.h"

namespace mirage {

inline constexpr Seconds kRoomRepeated = 28 * kDay;

// Room and down windows from `until` to `horizon`, as above; the rest of `c` untouched.
void carry_past_fit(Calibration& c, Seconds until, Seconds horizon);

// The calibration inferred from the jobs of `jobs` submitted before `until`, carried past it,
// with dependencies and followers over all of `jobs` by its fitted rules and verdicts.
Calibration infer_calibration_before(const std::vector<Job>& jobs, Seconds until,
                                     const ClusterSpec& spec,
                                     const CalibrationSettings& settings = {});

}  // namespace mirage

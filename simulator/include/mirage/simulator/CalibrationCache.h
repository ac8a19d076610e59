#pragma once
// Inferred calibrations kept in the user's cache directory ($XDG_CACHE_HOME/mirage/calibrations),
// so that a trace is inferred once and every later replay of it on the same machine reads the
// result: `simulate`, `eval`, `train`, `trace fidelity|waits|calibrate` and the daemon's
// simulator backend. Unlike the TOML a person edits (CalibrationFile.h), an entry holds the
// calibration exactly (CBOR: every double as its bits), the chosen replay's waits included, so a
// cached run prints what an inferring run prints, byte for byte.
//
// An entry is keyed by everything the inference reads: the jobs' content, the machine (nodes,
// GPUs, allocation, scheduler and priority settings, as a slurm.conf sets them), the settings, the
// date a forward fit stops at, and kCalibrationCodeVersion. It stores its whole key and a
// checksum; one whose key differs (a hash collision, another trace of the same name), or that is
// truncated or corrupt, is inferred again and rewritten (atomically), never trusted.
//
// MIRAGE_CALIBRATION_CACHE=off infers every time and touches no entry, as CCACHE_DISABLE does;
// removing the folder is always safe.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mirage/core/ClusterSpec.h"
#include "mirage/core/Job.h"
#include "mirage/simulator/Calibration.h"

namespace mirage {

// Bump whenever the inference (or anything it replays with) changes what it infers: every entry
// of an older version is then stale. Entries do not name the build, so that rebuilding the same
// code keeps them.
inline constexpr int kCalibrationCodeVersion = 6;  // 6: the limits' null matched by size
// Likewise for what a forward fit does past its cut (ForwardCalibration.h): its entries alone go
// stale. 2: the links' and feedback's verdicts kept as fitted, not tested again on later jobs.
inline constexpr int kForwardCarryVersion = 2;

// The key of the calibration inferred from `jobs` on `spec` with `settings`, fitted on the jobs
// submitted before `fit_until` where it is given (ForwardCalibration.h).
std::string calibration_cache_key(const std::vector<Job>& jobs, const ClusterSpec& spec,
                                  const CalibrationSettings& settings,
                                  std::optional<Seconds> fit_until);

// An entry's bytes, and back: nothing where the bytes are not a whole, intact entry of `key`.
std::string encode_calibration_entry(const std::string& key, const Calibration& c);
std::optional<Calibration> decode_calibration_entry(std::string_view bytes, const std::string& key);

struct CachedCalibration {
  Calibration calibration;
  bool read = false;  // read from the cache; else inferred now
  std::string path;   // the entry (empty where the cache is off)
  std::string note;   // where the entry could not be saved, why; else empty
};

// The entry of `key` in the cache of trace `trace_name`, or `infer()`, saved there. Never throws
// for the cache's sake: an unwritable cache directory is said in `note`.
CachedCalibration cached_or_inferred(const std::string& trace_name, const std::string& key,
                                     const std::function<Calibration()>& infer);

// Where `cached` came from, for the one line a command prints: "inferred from TRACE (...), saved
// to PATH" or "of TRACE read from PATH (...)".
std::string describe_cached(const CachedCalibration& cached, const std::string& trace_name);

}  // namespace mirage

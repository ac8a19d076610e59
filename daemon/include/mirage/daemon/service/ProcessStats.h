#pragma once
// This process's resident memory, from /proc/self/status (VmRSS), in KiB; 0 when unknown.
namespace mirage::daemon {
long current_rss_kib();
}  // namespace mirage::daemon

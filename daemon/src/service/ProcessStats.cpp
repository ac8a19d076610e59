#include "mirage/daemon/service/ProcessStats.h"

#include <fstream>
#include <string>

namespace mirage::daemon {

long current_rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

}  // namespace mirage::daemon

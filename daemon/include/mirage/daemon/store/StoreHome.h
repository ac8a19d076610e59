#pragma once
// Where a store belongs: the path it was made at, kept in it. A copy of the store at another path
// (copied to a second login node's disk, a backup restored beside it) has the same store id, so
// its jobs' tags are the first's: a daemon on each would follow and submit the same campaigns'
// segments, each twice. A process that acts on a store (daemon, tick, a request without a daemon)
// therefore refuses one opened at a path other than its own, naming its own; the user who moved
// it there (the first is gone for good) says so once, which binds it to the new path.
#include <stdexcept>
#include <string>

namespace mirage::daemon {

class CampaignStore;

// The store is a copy of one that belongs elsewhere: one line naming that place.
class StoreCopyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Whether `a` and `b` name one file (a symlink, the same home mounted at two places): one store.
bool same_store_file(const std::string& a, const std::string& b);

// Records `path` as the store's home if it has none yet (a store made before homes were kept);
// throws StoreCopyError when its home is another file than `path`, unless `moved`, which
// rebinds it to `path`.
void check_store_home(CampaignStore& store, const std::string& path, bool moved);

}  // namespace mirage::daemon

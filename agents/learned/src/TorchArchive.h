#pragma once
// Reads the archive LibTorch's torch::serialize::OutputArchive writes (a zip file holding a
// pickled module and its tensors' raw bytes) without LibTorch, so that `mirage` decides with a
// model file while LibTorch stays in the training plugin. Only what model files hold is read:
// nested modules, float32 tensors and strings.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mirage::learned {

struct ArchiveTensor {
  std::vector<std::int64_t> sizes;
  std::vector<float> values;  // row-major
};

// One module of the archive: its tensors (parameters and buffers), its string attributes and
// its submodules, each in the order they were written.
struct ArchiveModule {
  std::vector<std::pair<std::string, ArchiveTensor>> tensors;
  std::vector<std::pair<std::string, std::string>> strings;
  std::vector<std::pair<std::string, ArchiveModule>> children;

  const ArchiveTensor* tensor(const std::string& name) const;
  const std::string* string(const std::string& name) const;
  const ArchiveModule* child(const std::string& name) const;
};

// The archive's root module. Throws InputError naming `path` (field "policy") when the file is
// not such an archive or holds something else than the above.
ArchiveModule read_torch_archive(const std::string& path);

}  // namespace mirage::learned

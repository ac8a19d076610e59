#include "mirage/daemon/slurm/OutputFile.h"

#include <pwd.h>

#include <algorithm>

#include "mirage/daemon/slurm/BatchScriptDirectives.h"

namespace mirage::daemon {

std::string expand_output_pattern(std::string_view pattern, const OutputNames& n) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    std::size_t k = i + 1;
    int width = 0;
    while (k < pattern.size() && pattern[k] >= '0' && pattern[k] <= '9')
      width = std::min(10, width * 10 + (pattern[k++] - '0'));
    if (k == pattern.size()) return {};
    auto padded = [&](std::uint64_t v) {
      std::string digits = std::to_string(v);
      if (static_cast<int>(digits.size()) < width)
        digits.insert(0, static_cast<std::size_t>(width) - digits.size(), '0');
      return digits;
    };
    switch (pattern[k]) {
      case '%': out += '%'; break;
      case 'j': out += padded(static_cast<std::uint64_t>(n.job)); break;
      case 'A': out += padded(n.array_job.value_or(static_cast<std::uint64_t>(n.job))); break;
      case 'a':
        if (!n.array_task) return {};
        out += padded(*n.array_task);
        break;
      case 'x': out += n.name; break;
      case 'u': out += n.user; break;
      default: return {};  // the node, step or task: not known before it runs
    }
    i = k;
  }
  if (out.empty() || out == "/dev/null") return {};
  if (out[0] != '/') {
    if (n.work_dir.empty()) return {};
    out = n.work_dir + (n.work_dir.back() == '/' ? "" : "/") + out;
  }
  return out;
}

bool names_one_job(std::string_view pattern, bool array) {
  for (std::size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] != '%') continue;
    std::size_t k = i + 1;
    while (k < pattern.size() && pattern[k] >= '0' && pattern[k] <= '9') ++k;
    if (k == pattern.size()) return false;
    if (pattern[k] == 'j' || (pattern[k] == 'A' && !array)) return true;
    if (pattern[k] == '%') i = k;  // a literal percent sign
  }
  return false;
}

OutputPlace output_place(std::string_view script, const std::vector<std::string>& options,
                         const std::string& submit_dir) {
  OutputPlace p{"slurm-%j.out", submit_dir};
  const BatchScriptDirectives d = read_batch_directives(script, "the script");
  if (d.output) p.pattern = d.output->value;
  if (d.chdir) p.work_dir = d.chdir->value;
  // The command line's options win over the script's, the last of each.
  for (std::size_t i = 0; i < options.size(); ++i) {
    const std::string& o = options[i];
    auto take = [&](std::string_view lng, std::string_view shrt, std::string& into) {
      const std::string eq = std::string(lng) + "=";
      if (o.rfind(eq, 0) == 0) {
        into = o.substr(eq.size());
      } else if ((o == lng || o == shrt) && i + 1 < options.size()) {
        into = options[++i];
      } else if (o.size() > 2 && o.rfind(shrt, 0) == 0) {
        into = o.substr(2 + (o[2] == '='));
      } else {
        return false;
      }
      return true;
    };
    if (!take("--output", "-o", p.pattern)) take("--chdir", "-D", p.work_dir);
  }
  if (!p.work_dir.empty() && p.work_dir[0] != '/' && !submit_dir.empty())
    p.work_dir = submit_dir + "/" + p.work_dir;
  return p;
}

std::string user_name_of(unsigned uid) {
  // Reentrant: the event loop and the Slurm thread both ask.
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || !found || !found->pw_name)
    return {};
  return found->pw_name;
}

}  // namespace mirage::daemon

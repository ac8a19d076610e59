// fuzz_inputs: repeatable fuzzing of the files a user hands mirage, through the real entry points
// (read_trace strict and lenient, plain and gzip; load_daemon_config). Seeds are the shipped
// samples and the example config; each mutant is written to a file and read in a forked child
// with a time limit. Findings: a crash, a hang, an error or example message that does not name
// the file, carries raw control bytes or runs past 2 KiB, a broken invariant of a successful read,
// and a cut-off gzip copy that reads without error. Each is printed with its kind, index and
// mutations, and its file saved under --out; the same seed and index always make the same mutant.
// Exit status: 0 when there is no finding, 1 otherwise.
//
//   build/tests/fuzz/fuzz_inputs --seed 1 --count 300     # CTest's short run (test fuzz_inputs)
//   build/tests/fuzz/fuzz_inputs --seed 1 --count 2000    # the longer run, the same program
//   build/tests/fuzz/fuzz_inputs --corpus traces/samples --corpus DIR_OF_REAL_LOGS  #
//   docs/traces.md build/tests/fuzz/fuzz_inputs --replay fuzz-findings/trace-17.swf --kind trace #
//   in-process,
//                                                                           # e.g. under gdb
// Undefined behaviour and memory errors show only in a sanitized build (no memory limit there):
//   cmake -S . -B build-asan -DMIRAGE_BUILD_BENCH=OFF
//         -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
//   cmake --build build-asan -j2 --target fuzz_inputs
//   ASAN_OPTIONS=detect_leaks=0 build-asan/tests/fuzz/fuzz_inputs --count 1500 --timeout-ms 20000
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "Checks.h"
#include "Corpus.h"
#include "Mutator.h"
#include "Sandbox.h"
#include "mirage/core/Error.h"
#include "support/GzipBytes.h"

namespace mirage::fuzz {
namespace {

namespace fs = std::filesystem;

enum class Kind { kTrace, kGzip, kConfig };
constexpr std::array<const char*, 3> kKindNames = {"trace", "gzip", "config"};

// AddressSanitizer reserves terabytes of address space: no limit then.
#if defined(__SANITIZE_ADDRESS__)
constexpr int kDefaultMemoryMb = 0;
#else
constexpr int kDefaultMemoryMb = 2048;
#endif

struct Options {
  std::uint64_t seed = 1;
  int count = 300;
  int timeout_ms = 5000;
  int memory_mb = kDefaultMemoryMb;
  std::vector<std::string> corpus = {MIRAGE_SOURCE_DIR "/traces/samples"};
  std::vector<std::string> config = {MIRAGE_SOURCE_DIR "/daemon/config/mirage.example.toml"};
  std::vector<std::string> kinds = {"trace", "gzip", "config"};
  std::string out = "fuzz-findings";
  std::string replay;
  bool print_messages = false;
};

struct Mutant {
  std::string bytes;
  std::string seed_name;
  std::string extension;
  std::vector<std::string> mutations;
  bool must_fail = false;  // a cut-off gzip copy: reading it must be an error
};

// Each mutant has its own generator, so that one can be remade from the seed and its index.
Rng rng_for(std::uint64_t seed, Kind kind, int index) {
  std::seed_seq seq{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                    static_cast<std::uint32_t>(kind), static_cast<std::uint32_t>(index)};
  return Rng(seq);
}

Mutant text_mutant(const Seed& seed, Rng& rng, Syntax syntax) {
  Mutant m{seed.text, seed.name, seed.extension, {}, false};
  for (std::size_t n = 1 + pick(rng, 4); n > 0; --n)
    m.mutations.push_back(mutate_text(m.bytes, rng, syntax));
  return m;
}

// The seed (sometimes mutated) gzip'd as one to three members, then cut short, damaged, given
// more data, or left valid.
Mutant gzip_mutant(const Seed& seed, Rng& rng) {
  Mutant m{"", seed.name, seed.extension + ".gz", {}, false};
  std::string text = seed.text;
  if (pick(rng, 2) == 0)
    for (std::size_t n = 1 + pick(rng, 2); n > 0; --n)
      m.mutations.push_back("text: " + mutate_text(text, rng, Syntax::kTrace));
  const std::size_t members = pick(rng, 4) == 0 ? 2 + pick(rng, 2) : 1;
  std::vector<std::size_t> ends;  // where each member ends in the compressed bytes
  for (std::size_t i = 0, begin = 0; i < members; ++i) {
    std::size_t end = i + 1 == members ? text.size() : text.find('\n', pick(rng, text.size() + 1));
    end = end == std::string::npos ? text.size() : std::max(end + 1, begin);
    m.bytes += test_support::gzip_bytes(std::string_view(text).substr(begin, end - begin),
                                        1 + static_cast<int>(pick(rng, 9)));
    ends.push_back(m.bytes.size());
    begin = end;
  }
  if (members > 1) m.mutations.push_back(std::to_string(members) + " gzip members");
  switch (pick(rng, 10)) {
    case 0:
    case 1:
    case 2:
    case 3: {
      const std::size_t cut = pick(rng, m.bytes.size());
      m.must_fail = cut > 0 && std::find(ends.begin(), ends.end(), cut) == ends.end();
      m.bytes.resize(cut);
      m.mutations.push_back("cut at byte " + std::to_string(cut));
      break;
    }
    case 4:
    case 5:
    case 6:
      for (std::size_t n = 1 + pick(rng, 3); n > 0; --n)
        m.mutations.push_back(mutate_bytes(m.bytes, rng));
      break;
    case 7: {
      const std::size_t what = pick(rng, 3);
      m.mutations.push_back(what == 0   ? "zero padding"
                            : what == 1 ? "text after the stream"
                                        : "an empty member");
      m.bytes += what == 0   ? std::string(1 + pick(rng, 1024), '\0')
                 : what == 1 ? std::string("1 2 3\n")
                             : test_support::gzip_bytes("");
      m.must_fail = what == 1;
      break;
    }
    default: break;  // valid
  }
  return m;
}

Mutant make_mutant(Kind kind, int index, const Options& o, const std::vector<Seed>& traces,
                   const std::vector<Seed>& configs) {
  Rng rng = rng_for(o.seed, kind, index);
  const auto i = static_cast<std::size_t>(index);
  switch (kind) {
    case Kind::kTrace: return text_mutant(traces[i % traces.size()], rng, Syntax::kTrace);
    case Kind::kGzip: return gzip_mutant(traces[i % traces.size()], rng);
    case Kind::kConfig: return text_mutant(configs[i % configs.size()], rng, Syntax::kToml);
  }
  return {};
}

std::function<void(const Report&)> check_for(Kind kind, const std::string& path) {
  if (kind == Kind::kConfig) return [path](const Report& r) { check_config(path, r); };
  return [path](const Report& r) { check_trace(path, r); };
}

Kind kind_named(const std::string& name) {
  for (std::size_t k = 0; k < kKindNames.size(); ++k)
    if (name == kKindNames[k]) return static_cast<Kind>(k);
  throw std::runtime_error("unknown kind " + name);
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  if (!out) throw std::runtime_error("cannot write " + path);
}

struct Tally {
  int inputs = 0;
  int rejected_strict = 0;  // mutants whose strict read (or the config load) was an error
  int rejected_lenient = 0;
  std::map<std::string, int> findings;  // category -> mutants with such a finding
  double slowest = 0;
};

// One saved finding: its file, and how it was made.
void save(const Options& o, Kind kind, int index, const Mutant& m,
          const std::vector<Finding>& findings) {
  fs::create_directories(o.out);
  const std::string base =
      (fs::path(o.out) /
       fmt::format("{}-{}{}", kKindNames[static_cast<int>(kind)], index, m.extension))
          .string();
  write_file(base, m.bytes);
  std::string notes = fmt::format("kind {} index {} seed {} from {}\nmutations:\n",
                                  kKindNames[static_cast<int>(kind)], index, o.seed, m.seed_name);
  for (const std::string& mutation : m.mutations) notes += "  " + escape_control(mutation) + "\n";
  for (const Finding& f : findings) notes += f.category + ": " + f.detail + "\n";
  write_file(base + ".finding", notes);
  fmt::print("  saved {} (replay: fuzz_inputs --replay {} --kind {})\n", base, base,
             kKindNames[static_cast<int>(kind)]);
}

int replay(const Options& o) {
  if (o.kinds.size() != 1) throw std::runtime_error("--replay needs one --kind");
  const Kind kind = kind_named(o.kinds.front());
  check_for(kind, o.replay)(
      [](char tag, std::string_view text) { fmt::print("{}: {}\n", tag, escape_control(text)); });
  return 0;
}

int run(const Options& o) {
  if (!o.replay.empty()) return replay(o);
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<Seed> traces = load_trace_seeds(o.corpus);
  const std::vector<Seed> configs = load_config_seeds(o.config);
  fmt::print("fuzz_inputs: seed {}, {} inputs per kind, timeout {} ms, memory {} MiB\n", o.seed,
             o.count, o.timeout_ms, o.memory_mb);
  for (const Seed& s : traces) fmt::print("  trace seed: {}\n", s.name);
  for (const Seed& s : configs) fmt::print("  config seed: {}\n", s.name);
  std::fflush(stdout);

  std::string dir_template = (fs::temp_directory_path() / "mirage-fuzz-XXXXXX").string();
  if (!mkdtemp(dir_template.data())) throw std::runtime_error("cannot make a temporary folder");
  const fs::path dir = dir_template;
  std::map<Kind, Tally> tallies;
  int total_findings = 0;
  for (const std::string& kind_name : o.kinds) {
    const Kind kind = kind_named(kind_name);
    Tally& tally = tallies[kind];
    for (int index = 0; index < o.count; ++index) {
      const Mutant m = make_mutant(kind, index, o, traces, configs);
      const std::string path =
          (dir / fmt::format("m-{}-{}{}", kind_name, index, m.extension)).string();
      write_file(path, m.bytes);
      const Outcome outcome = run_sandboxed(check_for(kind, path), o.timeout_ms,
                                            static_cast<std::size_t>(o.memory_mb) << 20);
      fs::remove(path);
      ++tally.inputs;
      tally.slowest = std::max(tally.slowest, outcome.seconds);
      if (o.print_messages)
        for (const Message& msg : outcome.messages)
          if (msg.tag == kInputError || msg.tag == kOtherError)
            fmt::print("{} #{}: {}\n", kind_name, index, escape_control(msg.text));
      const Rejections rejected = rejections(outcome);
      tally.rejected_strict += rejected.strict;
      tally.rejected_lenient += rejected.lenient;
      const std::vector<Finding> findings = judge(outcome, path, m.must_fail);
      if (findings.empty()) continue;
      ++total_findings;
      std::map<std::string, bool> seen;
      for (const Finding& f : findings)
        if (!seen[f.category]) {
          seen[f.category] = true;
          ++tally.findings[f.category];
        }
      fmt::print("FINDING {} #{} (from {}):\n", kind_name, index, m.seed_name);
      for (const std::string& mutation : m.mutations)
        fmt::print("  mutation: {}\n", escape_control(mutation));
      for (const Finding& f : findings) fmt::print("  {}: {}\n", f.category, f.detail);
      save(o, kind, index, m, findings);
      std::fflush(stdout);
    }
  }
  fs::remove_all(dir);

  // (category, column) of the findings.
  const std::vector<std::pair<std::string, std::string>> columns = {
      {"crash", "crashes"},
      {"hang", "hangs"},
      {"nameless message", "nameless"},
      {"raw control bytes", "control"},
      {"overlong message", "overlong"},
      {"broken invariant", "broken"},
      {"truncation accepted", "truncations"}};
  std::string table = fmt::format("\n{:<8}{:>8}{:>8}{:>9}", "kind", "inputs", "errors", "lenient");
  for (const auto& [category, column] : columns) table += fmt::format("{:>12}", column);
  table += fmt::format("{:>10}\n", "slowest");
  Tally sum;
  for (const auto& [kind, t] : tallies) {
    table += fmt::format("{:<8}{:>8}{:>8}{:>9}", kKindNames[static_cast<int>(kind)], t.inputs,
                         t.rejected_strict,
                         kind == Kind::kConfig ? "-" : std::to_string(t.rejected_lenient));
    for (const auto& [category, column] : columns) {
      const auto it = t.findings.find(category);
      table += fmt::format("{:>12}", it == t.findings.end() ? 0 : it->second);
    }
    table += fmt::format("{:>9.3f}s\n", t.slowest);
    sum.inputs += t.inputs;
    sum.rejected_strict += t.rejected_strict;
  }
  fmt::print("{}", table);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("{} inputs, {} rejected (strict read or config load), {} with findings, {:.1f} s\n",
             sum.inputs, sum.rejected_strict, total_findings, wall);
  if (total_findings > 0) {
    fmt::print("FAILED: findings saved under {}\n", o.out);
    return 1;
  }
  fmt::print(
      "OK: no crash, hang, nameless, unsafe or overlong message, broken invariant or "
      "accepted truncation\n");
  return 0;
}

}  // namespace
}  // namespace mirage::fuzz

int main(int argc, char** argv) {
  mirage::fuzz::Options o;
  CLI::App app{"Fuzz the trace readers and the daemon config through their real entry points"};
  app.add_option("--seed", o.seed, "seed of the mutations (the same seed, the same mutants)");
  app.add_option("--count", o.count, "mutants per kind")->check(CLI::PositiveNumber);
  app.add_option("--timeout-ms", o.timeout_ms, "a mutant still being read after this hangs")
      ->check(CLI::PositiveNumber);
  app.add_option("--memory-mb", o.memory_mb, "address space of each read (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--corpus", o.corpus, "folders or files of seed traces (plain or gzip)");
  app.add_option("--config", o.config, "seed daemon config files");
  app.add_option("--kind", o.kinds, "what to fuzz: trace, gzip, config (default: all)")
      ->check(CLI::IsMember({"trace", "gzip", "config"}));
  app.add_option("--out", o.out, "folder for the findings' files");
  app.add_flag("--print-messages", o.print_messages,
               "print every error message, to review what users would read");
  app.add_option("--replay", o.replay, "read one saved file in-process and print the messages");
  CLI11_PARSE(app, argc, argv);
  try {
    return mirage::fuzz::run(o);
  } catch (const std::exception& e) {
    fmt::print(stderr, "fuzz_inputs: {}\n", e.what());
    return 2;
  }
}

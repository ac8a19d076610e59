#pragma once
// Mutations of input files for fuzz_inputs: the damage real files suffer (bit flips, cut-off
// copies, lost or doubled lines) and the values that break parsers (huge and negative numbers,
// control bytes, empty fields, very long lines). Each returns a short description of what it did,
// so that a finding can be read without a debugger.
#include <random>
#include <string>

namespace mirage::fuzz {

using Rng = std::mt19937_64;

enum class Syntax { kTrace, kToml };

// One random mutation of a text (trace row or TOML line level, or raw bytes).
std::string mutate_text(std::string& text, Rng& rng, Syntax syntax);

// One random mutation of compressed bytes: flips, insertions, deletions, appended data.
// Truncation is left to the caller, which knows where gzip members end.
std::string mutate_bytes(std::string& bytes, Rng& rng);

// A uniformly drawn index below n (0 when n is 0).
std::size_t pick(Rng& rng, std::size_t n);

}  // namespace mirage::fuzz

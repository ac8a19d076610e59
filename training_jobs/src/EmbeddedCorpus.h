#pragma once
// training_jobs/data/corpus.txt, compiled in (cmake/EmbedCorpus.cmake), so the trainer needs no
// data file on the compute nodes.
#include <string_view>

namespace mirage::training {
std::string_view embedded_corpus();
}

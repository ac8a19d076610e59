# Turns the corpus text into a C++ source defining mirage::training::embedded_corpus().
# Run as: cmake -DINPUT=... -DOUTPUT=... -P EmbedCorpus.cmake
file(READ "${INPUT}" content HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${content}")
file(WRITE "${OUTPUT}" "// Generated from training_jobs/data/corpus.txt by EmbedCorpus.cmake; do not edit.\n"
  "#include \"EmbeddedCorpus.h\"\n"
  "namespace mirage::training {\nnamespace {\nconst unsigned char kCorpus[] = {${bytes}};\n}\n"
  "std::string_view embedded_corpus() {\n"
  "  return {reinterpret_cast<const char*>(kCorpus), sizeof kCorpus};\n}\n}\n")

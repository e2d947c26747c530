// attention-cli: the native front end of the core, used by scripts, tests and checks
// outside the project. It only dispatches; each subcommand lives in its own file.
#include <cstdio>
#include <cstring>

#include "cli/commands.h"

namespace {

void PrintUsage(FILE* out) {
  std::fprintf(out,
               "usage:\n"
               "  attention-cli tokenize (--vocab FILE | --model FILE) [--json | --lines] TEXT|-\n"
               "  attention-cli analyze --model FILE [--json] TEXT|-\n"
               "  attention-cli bench --model FILE\n"
               "  attention-cli compare --reference FILE --model FILE... --sentences FILE\n"
               "  attention-cli info --model FILE [--json]\n"
               "  attention-cli profile --model FILE --sentences FILE --json [--per-sentence]\n"
               "  attention-cli contribution --model FILE --sentences FILE --json\n"
               "  attention-cli lens-set --model FILE --sentences FILE --json\n"
               "  attention-cli lenses --model FILE [--mask POS] [--target POS] [--flow-rows all|POS] [--json] TEXT|-\n"
               "TEXT '-' reads standard input.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    PrintUsage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const char* command = argv[1];
  if (std::strcmp(command, "tokenize") == 0) return attn::cli::RunTokenize(argc - 2, argv + 2);
  if (std::strcmp(command, "analyze") == 0) return attn::cli::RunAnalyze(argc - 2, argv + 2);
  if (std::strcmp(command, "bench") == 0) return attn::cli::RunBench(argc - 2, argv + 2);
  if (std::strcmp(command, "compare") == 0) return attn::cli::RunCompare(argc - 2, argv + 2);
  if (std::strcmp(command, "info") == 0) return attn::cli::RunInfo(argc - 2, argv + 2);
  if (std::strcmp(command, "profile") == 0) return attn::cli::RunProfile(argc - 2, argv + 2);
  if (std::strcmp(command, "contribution") == 0) return attn::cli::RunContribution(argc - 2, argv + 2);
  if (std::strcmp(command, "lens-set") == 0) return attn::cli::RunLensSet(argc - 2, argv + 2);
  if (std::strcmp(command, "lenses") == 0) return attn::cli::RunLenses(argc - 2, argv + 2);
  std::fprintf(stderr, "attention-cli: unknown command '%s'.\n", command);
  PrintUsage(stderr);
  return 2;
}

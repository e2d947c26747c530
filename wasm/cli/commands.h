// The CLI's subcommands; main.cc only dispatches. Each returns the process exit code and
// writes errors to stderr saying what was wrong and what to do.
#pragma once

namespace attn::cli {

// attention-cli tokenize (--vocab FILE | --model FILE) [--json | --lines] TEXT|-
int RunTokenize(int argc, char** argv);
// attention-cli analyze --model FILE [--json] TEXT|-
int RunAnalyze(int argc, char** argv);
// attention-cli bench --model FILE
int RunBench(int argc, char** argv);
// attention-cli compare --reference REF.attn --model FILE... --sentences FILE (compare_command.cc)
int RunCompare(int argc, char** argv);
// attention-cli info --model FILE [--json] (info_command.cc)
int RunInfo(int argc, char** argv);
// attention-cli profile --model FILE --sentences FILE --json (set_commands.cc)
int RunProfile(int argc, char** argv);
// attention-cli contribution --model FILE --sentences FILE --json (set_commands.cc)
int RunContribution(int argc, char** argv);
// attention-cli lens-set --model FILE --sentences FILE --json (set_commands.cc)
int RunLensSet(int argc, char** argv);

// attention-cli lenses --model FILE [--target POS] [--json] TEXT (lenses_command.cc)
int RunLenses(int argc, char** argv);

}  // namespace attn::cli

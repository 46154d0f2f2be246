// `tern check`: the battery of src/check, with tern's engine as the
// numerics suite's --reference-model.
#include "app/commands.h"
#include "app/numerics_reference.h"
#include "check/cli.h"

namespace tern::app {

Command RegisterCheck(CLI::App& app) { return check::RegisterCheck(app, LoadEngineReference); }

}  // namespace tern::app

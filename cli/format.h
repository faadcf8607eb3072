// Text formatting shared by the subcommands' human output: the report room's
// (artune/report/text_table.h), named in the CLI's namespace.
#pragma once

#include "artune/report/text_table.h"

namespace artune::cli {

using report::FormatHumanBytes;
using report::FormatNumber;
using report::PrintTable;
using report::ShortTime;

}  // namespace artune::cli

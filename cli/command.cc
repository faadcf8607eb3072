#include "command.h"

#include <unistd.h>

#include <iostream>

namespace artune::cli {

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case ErrorCode::kOk:
      return kExitOk;
    case ErrorCode::kInvalidArgument:
      return kExitUsage;
    case ErrorCode::kCorruption:
      return kExitValidation;
    case ErrorCode::kUnavailable:
    case ErrorCode::kTimeout:  // a peer that does not answer in time is unavailable too
    case ErrorCode::kPermissionDenied:
    case ErrorCode::kUnsupported:
      return kExitUnavailable;
    default:
      return kExitFailure;
  }
}

void RunCommand(Context& context, const std::function<Status()>& body) {
  Status status = body();
  if (!status.ok()) {
    std::cerr << "artune: " << status.message() << "\n";
  }
  context.exit_code = ExitCodeFor(status);
}

Result<std::unique_ptr<db::Store>> OpenStoreForReading(const Context& context) {
  return db::Store::Open(db::ResolveDatabasePath(context.globals.db_path), db::OpenMode::kExisting);
}

bool ShowProgress(const Context& context) {
  return !context.globals.quiet && isatty(STDERR_FILENO) == 1;
}

const CLI::Validator& HostPortValidator() {
  static const CLI::Validator validator(
      [](const std::string& value) -> std::string {
        const size_t colon = value.rfind(':');
        if (value.empty()) return "an empty address: give HOST:PORT";
        if (colon == std::string::npos || colon == 0 || colon + 1 == value.size()) {
          return "`" + value + "` is not HOST:PORT";
        }
        return "";
      },
      "HOST:PORT");
  return validator;
}

}  // namespace artune::cli

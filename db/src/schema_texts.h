// The CREATE text each schema version's migration runs, built from column lists
// so that tables of the same shape are declared once. The text must stay byte for
// byte what each migration has always run (migrations_test's golden digest).
#pragma once

#include <array>
#include <string>

namespace artune::db {

// SchemaTexts()[v - 1] is what migration v runs.
const std::array<std::string, 12>& SchemaTexts();

}  // namespace artune::db

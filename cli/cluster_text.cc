#include "cluster_text.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string_view>
#include <vector>

#include "artune/cluster/cluster_choice.h"
#include "format.h"

namespace artune::cli {
namespace {

// Backgrounds of the 256-colour palette from best (green) to worst (red), each
// light enough for the terminal's default dark text to stay readable.
constexpr int kShades[] = {120, 157, 229, 216, 210};
constexpr int kShadeCount = static_cast<int>(std::size(kShades));

std::string Shaded(const std::string& text, int shade) {
  return "\x1b[30;48;5;" + std::to_string(kShades[shade]) + "m" + text + "\x1b[0m";
}

std::string PadLeft(const std::string& text, size_t width) {
  return text.size() >= width ? text : std::string(width - text.size(), ' ') + text;
}

}  // namespace

std::string LinkEndText(const std::string& host, const std::string& device) {
  return device.empty() ? host : host + " (" + device + ")";
}

bool StdoutTakesColour() {
  if (std::getenv("NO_COLOR") != nullptr || isatty(STDOUT_FILENO) != 1) return false;
  const char* term = std::getenv("TERM");
  return term != nullptr && *term != '\0' && std::string_view(term) != "dumb";
}

std::string ClusterHeatmapText(const tuner::ClusterData& data,
                               const tuner::ClusterAnalysis& analysis, bool colour) {
  const tuner::HostMatrix& matrix = analysis.matrix;
  if (matrix.omitted_hosts > 0) {
    return "No heatmap: " + std::to_string(matrix.omitted_hosts) + " hosts are more than " +
           std::to_string(tuner::kMatrixMaxHosts) +
           " a grid can show; the links above and the outliers below speak for them\n";
  }
  if (matrix.config_key.empty() || matrix.hosts.empty()) return "";
  const auto [best, worst] = tuner::MatrixRange(matrix, data.input.goal);
  // Every cell as text first, so all share one width and shading covers the cell.
  std::vector<std::vector<std::string>> texts(matrix.hosts.size());
  size_t width = 4;  // "FAIL"
  for (size_t r = 0; r < matrix.hosts.size(); ++r) {
    for (const auto& cell : matrix.cells[r]) {
      std::string text = "-";
      if (cell.value) {
        text = FormatNumber(*cell.value, 2) + (cell.outlier ? "!" : "");
      } else if (cell.failed) {
        text = "FAIL";
      } else if (cell.links > 0) {
        text = "?";  // linked, but this config has no validated trial there
      }
      width = std::max(width, text.size());
      texts[r].push_back(std::move(text));
    }
  }
  std::vector<std::vector<std::string>> grid;
  std::vector<std::string> header = {"client \\ server"};
  for (const std::string& host : matrix.hosts) header.push_back(host);
  grid.push_back(std::move(header));
  for (size_t r = 0; r < matrix.hosts.size(); ++r) {
    std::vector<std::string> row = {matrix.hosts[r]};
    for (size_t c = 0; c < matrix.hosts.size(); ++c) {
      std::string text = PadLeft(texts[r][c], width);
      const auto& value = matrix.cells[r][c].value;
      if (colour && value && best && worst) {
        const double span = *worst - *best;
        const double t = span == 0 ? 0 : (*value - *best) / span;
        const int shade =
            std::clamp(static_cast<int>(std::lround(t * (kShadeCount - 1))), 0, kShadeCount - 1);
        text = Shaded(" " + text + " ", shade);
      } else if (colour) {
        text = " " + text + " ";  // the width of a shaded cell
      }
      row.push_back(std::move(text));
    }
    grid.push_back(std::move(row));
  }

  std::ostringstream out;
  out << data.objective << " under " << (matrix.is_winner ? "the winner " : "the default ")
      << tuner::KnobKeyText(matrix.config_key)
      << ", client (rows) to server (columns); ! outlier, FAIL failed, ? not measured with "
         "this config, - no link\n";
  std::vector<bool> right(grid.front().size(), true);
  right[0] = false;
  PrintTable(grid, right, out);
  if (best && worst) {
    if (colour) {
      out << "shading: best " << FormatNumber(*best, 2) << " ";
      for (int shade = 0; shade < kShadeCount; ++shade) out << Shaded("   ", shade);
      out << " " << FormatNumber(*worst, 2) << " worst\n";
    } else {
      out << "best " << FormatNumber(*best, 2) << ", worst " << FormatNumber(*worst, 2) << "\n";
    }
  }
  return out.str();
}

}  // namespace artune::cli

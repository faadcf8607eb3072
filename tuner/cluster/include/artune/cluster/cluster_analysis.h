// What a cluster sweep (`artune sweep --mpi`: every link of a pair schedule measured
// by its own sweep) says as a whole: the best config of each link, one winner for
// the cluster, a host x host matrix for the heatmap, the links that stand out from
// the others, and hosts whose devices differ enough to deserve their own winner.
//
// Pure functions over plain values: the CLI reads the store (cluster, links, each
// link's trials) into a ClusterInput; `results --cluster`, `report`, the dashboard
// and `apply config --cluster` all print the same ClusterAnalysis. Thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "artune/tuner/goal.h"

namespace artune::tuner {

// How the configs' values over the links fold into one score per config.
enum class ClusterGoal {
  // The config whose worst link is best: no link is left slow (synchronous
  // training waits for its slowest link).
  kWorstLink,
  // The config with the best geometric mean over the links: each link's ratio
  // between two configs counts alike whatever the link's own scale.
  kGeomean,
};
// "worst-link", "geomean".
std::string_view ClusterGoalName(ClusterGoal goal);
// The inverse of ClusterGoalName; nullopt for other text.
std::optional<ClusterGoal> ParseClusterGoal(std::string_view text);

struct LinkEnd {
  std::string host;
  std::string device;  // "mlx5_0", "rxe0", "tcp:eth0"; "" when not known
};

struct LinkInput {
  LinkEnd client;
  LinkEnd server;
  bool ok = false;    // the link was measured (its sweep ran); false: it failed
  std::string error;  // why a failed link failed
  // Per config (db::TrialKnobKey text): the objective of its ok, validated trial.
  // Configs that failed or corrupted data are not here.
  std::map<std::string, double> objectives;
  // The config the link's own sweep chose at its final re-measurement (its
  // verdict's best_knobs), "" when none: the link's best is that choice when it is
  // among `objectives`, as `results --sweep ID` of the link shows it, else the best
  // objective.
  std::string chosen;
};

struct ClusterInput {
  std::vector<LinkInput> links;
  ObjectiveGoal goal = ObjectiveGoal::kMin;
  std::string default_key;  // TrialKnobKey of the transport's defaults; "" when not known
  ClusterGoal cluster_goal = ClusterGoal::kWorstLink;
};

// A link is usable when it is ok and has at least one validated objective.
bool LinkUsable(const LinkInput& link);

// (a) One row per input link, in input order.
struct LinkRow {
  size_t link = 0;       // index into ClusterInput::links
  std::string best_key;  // "" when the link is not usable
  double best_objective = 0;
  std::optional<double> default_objective;
  // How much better the best is than the default on this link, as a factor >= 1
  // when better (min: default / best; max: best / default); nullopt without the
  // default or with a zero value.
  std::optional<double> gain;
  std::optional<double> winner_objective;  // the cluster winner on this link
};

// A config's score over the usable links (the cluster goal's fold).
struct ConfigScore {
  std::string key;
  double score = 0;         // worst link, or geometric mean
  double worst = 0;         // its worst link's objective
  size_t worst_link = 0;    // index of that link
  double geomean = 0;       // 0 when a value is not positive (no geometric mean)
  bool geomean_ok = false;  // every value positive
};

// (b) The config measured on every usable link that scores best, and why.
struct ClusterWinner {
  std::optional<ConfigScore> winner;         // nullopt: no config was measured on every usable link
  std::optional<ConfigScore> default_score;  // the default, when measured on every usable link
  // Every config measured on every usable link, best first (ties: the default, then
  // key order).
  std::vector<ConfigScore> candidates;
  std::string reason;  // one sentence on how it was chosen, or why there is none
};

// (c) The objective under one config over client host (rows) x server host
// (columns), both the sorted list of every host that appears in a link.
//
// A grid grows with the square of the hosts: at 4096 hosts it would be 16 M cells
// (hundreds of MB, and no terminal or page shows it), while a sampled schedule
// measures only a few links per host. Past kMatrixMaxHosts the matrix is left
// empty (omitted_hosts says how many there were) and the links speak for
// themselves (rows, outliers).
inline constexpr size_t kMatrixMaxHosts = 128;
struct HostMatrix {
  std::string config_key;  // the winner's, else the default's; "" when neither
  bool is_winner = false;
  std::vector<std::string> hosts;  // empty when omitted
  size_t omitted_hosts = 0;        // the host count when over kMatrixMaxHosts, else 0
  struct Cell {
    std::optional<double> value;  // the worst link's objective when several share the cell
    size_t links = 0;             // links from this client host to this server host
    bool failed = false;          // some link here failed
    bool outlier = false;         // some link here is an outlier
  };
  std::vector<std::vector<Cell>> cells;  // [client][server]
};

// (d) A link worse than the others under the matrix config.
struct Outlier {
  size_t link = 0;
  std::string config_key;
  double objective = 0;
  double median = 0;      // over every usable link measured with the config
  double scale = 0;       // the scaled MAD, or the relative floor when larger
  double deviations = 0;  // (objective - median) / scale, in the goal's bad direction
};
// A link is an outlier when it is worse than the median by more than this many
// scales ("MADs" in what the CLI prints).
inline constexpr double kOutlierDeviations = 3.0;
// The median absolute deviation times this is the standard deviation of normally
// spread values (1 / Phi^-1(3/4)), so 3 MADs is about 3 sigma (Leys et al. 2013).
// Unscaled, 3 MADs is 2 sigma: on the first real run (4 ranks on one machine, every
// link alike, short trials) that flagged a link 18 % above the median by noise alone.
inline constexpr double kMadToSigma = 1.4826;
// The scale is never below this fraction of the median's magnitude. When most links
// agree to the last digit the median absolute deviation is 0 (or tiny), and any
// other link would be infinitely many MADs away; yet a sweep's own medians move by a
// few percent from one run to the next (load drift, the lab saw 20 % in a minute), so
// a link has to be kOutlierDeviations x 5 % = 15 % worse than the median before it is
// worth a look.
inline constexpr double kOutlierFloor = 0.05;
// The links' median of `values` and the scale deviations are counted in: the
// scaled MAD, or the relative floor when larger. The one rule for swept links
// (FindOutliers) and for link models (ModelOutliers).
struct OutlierScale {
  double median = 0;
  double scale = 0;
};
OutlierScale OutlierScaleOf(std::vector<double> values);
// An outlier's deviations for reading: one decimal ("3.8"), or two where one would
// round down to the threshold itself ("3.04", not "3.0", which reads as not more).
std::string FormatDeviations(double deviations);
// Outliers need at least this many usable links with the config: with two, both
// are one MAD from their median and neither can stand out.
inline constexpr size_t kOutlierMinLinks = 3;

// (e) Hosts grouped by the class of their devices.
struct HostGroup {
  std::string device_class;  // "mlx5", "rxe", "tcp", "mlx5+rxe" (a host with both)
  std::vector<std::string> hosts;
  std::vector<size_t> links;  // usable links with both ends in the group
  ClusterWinner winner;       // over those links only
};
struct HostGrouping {
  // By device class; one group: no split. Hosts whose devices are not known (every
  // link end of theirs has device "") are in no group, unless no host's is known:
  // then every host is in one group of class "".
  std::vector<HostGroup> groups;
  // The groups' winners are not all the same config (then each group should get
  // its own config); false with one group.
  bool winners_differ = false;
  std::string reason;  // why the hosts were split, and what that changed
};

// The class of a device, the closest the store comes to a NIC model: a verbs
// device's name without its instance number ("mlx5_0", "mlx5_1" -> "mlx5";
// "rxe0" -> "rxe"; "bnxt_re1" -> "bnxt_re"), "tcp" for any "tcp:IFACE", and the
// name itself when it has no number. "" stays "".
std::string DeviceClass(std::string_view device);

struct ClusterAnalysis {
  std::vector<LinkRow> rows;
  ClusterWinner winner;
  HostMatrix matrix;
  std::vector<Outlier> outliers;  // in input order
  HostGrouping grouping;
  size_t usable_links = 0;
  size_t failed_links = 0;
};

// Scores the configs measured on every one of `links` (indices into input.links;
// unusable ones are skipped) by input.cluster_goal.
ClusterWinner ChooseClusterWinner(const ClusterInput& input, const std::vector<size_t>& links);

// The outliers among the usable links under `config_key` (median and MAD over the
// links that measured it).
std::vector<Outlier> FindOutliers(const ClusterInput& input, const std::string& config_key);

ClusterAnalysis AnalyzeCluster(const ClusterInput& input);

// The best and worst values of the matrix's cells under `goal` (the heatmap's
// scale); nullopt when no cell has a value.
struct ObjectiveRange {
  std::optional<double> best, worst;
};
ObjectiveRange MatrixRange(const HostMatrix& matrix, ObjectiveGoal goal);

}  // namespace artune::tuner

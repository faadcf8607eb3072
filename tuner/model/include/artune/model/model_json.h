// The model room's records as the CLI prints and stores them: a stored link model
// as JSON (`artune model list|show|measure`, `artune results --models|--model ID`),
// and a
// prediction as its stored record and its JSON (`artune predict`).
//
// Threading: pure functions over plain values.
#pragma once

#include <nlohmann/json.hpp>

#include "artune/db/store.h"
#include "artune/model/measure.h"
#include "artune/model/predict.h"
#include "artune/tuner/search_space.h"
#include "artune/tuner/sweep_plan.h"
#include "artune/tuner/workload.h"

namespace artune::model {

// {id, created_at, host, peer, fabric, rounds, duration_s, points}: `points` the
// count, or with_points the array of every point.
nlohmann::ordered_json LinkModelJson(const db::LinkModelRecord& model, bool with_points);

// `artune model measure --json`: LinkModelJson with every point, then whether it
// was `stored` and the report's spreads over rounds.
nlohmann::ordered_json MeasuredLinkModelJson(const db::LinkModelRecord& record,
                                             const MeasureReport& report, bool stored);

// Calls in flight a predicted pass keeps: the plan's, else the capture's (capped as
// the sweep caps it), else the sweep's default; never more than the pass has
// messages (a pass ends when all its calls have completed).
double PassInflight(const tuner::SweepPlan& plan, const tuner::Workload& workload);

// The record `artune predict` stores (id 0 until the store gives one).
db::PredictionRecord PredictionRecordOf(const Prediction& prediction,
                                        const db::LinkModelRecord& model,
                                        const tuner::Workload& workload,
                                        const tuner::SearchSpace& space);

// `artune predict --json`: the record's id (null when not `stored`), the best and
// the default with their terms, the margin, the deciding terms and every config.
nlohmann::ordered_json PredictionJson(const db::PredictionRecord& record,
                                      const Prediction& prediction, bool stored, double compute_s);

}  // namespace artune::model

#pragma once
// What the journal benches append: an agent run's admission and its effect records, the same in
// every bench so their figures compare; and the percentile they report latencies by.

#include "core/journal.hpp"

#include <boost/json/object.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace airlock::bench {

inline core::new_record admitted() {
    boost::json::object body;
    body["agent"] = {{"name", "bench"}, {"version", "1"}, {"digest", std::string(64, '0')}};
    body["input"] = "go";
    body["mode"] = "agent";
    body["admitted_at"] = "2026-11-30T00:00:00Z";
    return {core::record_kind::run_admitted, body};
}

// The effect_started record of the run's i-th call, a mutating tool's.
inline core::new_record effect(int i) {
    boost::json::object body;
    body["effect_key"] = "e" + std::to_string(i);
    body["target"] = "tool";
    body["tool"] = "tool://ledger/post";
    body["arguments"] = {{"account", "acct-42"}, {"amount", i}};
    body["mutates"] = true;
    body["attempt"] = 1;
    return {core::record_kind::effect_started, body};
}

// The p-quantile (0..1) of v, nearest rank below; 0 for none.
inline double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

}  // namespace airlock::bench

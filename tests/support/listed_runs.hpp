#pragma once
// The run ids of one page of GET /v1/runs, from its body.

#include <boost/json/parse.hpp>

#include <set>
#include <string>

namespace airlock::testing {

inline std::set<std::string> listed_run_ids(std::string const& body) {
    std::set<std::string> out;
    auto const page = boost::json::parse(body);
    for (auto const& run : page.at("runs").as_array()) out.insert(std::string(run.at("run_id").as_string()));
    return out;
}

}  // namespace airlock::testing

#pragma once
// `airlock ask`: one completion through a configured model provider, by hand — to check a
// provider's endpoint, key, egress entry and model before agents depend on it.

#include <string>
#include <vector>

namespace airlock::service {

int run_ask(std::vector<std::string> const& args);

}  // namespace airlock::service

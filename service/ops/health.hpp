#pragma once
// GET /healthz (the process is alive and serving) and GET /readyz (it should be sent traffic: the
// journal is open and takes appends, every required upstream answers, it is not draining). Both are unauthenticated;
// their bodies name checks and states only, never addresses, paths or errors.

#include "service/http/http_server.hpp"

#include <string>
#include <vector>

namespace airlock::service {

struct readiness_inputs {
    enum class upstream_state { unknown, up, down, refused };  // refused: egress does not allow it; never contacted
    struct upstream {
        std::string name;
        bool optional = false;  // `optional: true` in the configuration: reported, never blocking
        upstream_state state = upstream_state::unknown;
    };
    bool journal_open = false;
    // Why appends fail now: "map_full", "disk_full" or "write_failed"; empty while they succeed.
    std::string journal_fault;
    bool draining = false;
    std::vector<upstream> upstreams;
    // auth.oauth: an issuer whose keys are not held (never fetched, or past their max age) refuses
    // every token it issued. state: "keys", "no_keys" or "keys_expired".
    struct issuer {
        std::string issuer;
        std::string state;
    };
    std::vector<issuer> issuers;
};

struct readiness {
    bool ready = false;
    std::vector<std::string> failed;  // names of the checks that failed, in order
    std::string body;                 // the JSON /readyz answers
};

// {"status":"ready"|"not_ready","failed":[...],"checks":{"journal":{"ok":true,"state":"open|closed|map_full|disk_full|write_failed"},
//  "draining":{...},"upstream:NAME":{"ok":..,"state":"up|down|unknown|refused"[,"optional":true]},
//  "oauth:ISSUER":{"ok":..,"state":"keys|no_keys|keys_expired"}}}
readiness evaluate_readiness(readiness_inputs const& in);

// 200 {"status":"ok"} for GET and HEAD; 405 otherwise.
http_response healthz_response(http_request const& req);
// 200 when ready, 503 when not, with evaluate_readiness's body; 405 for methods but GET and HEAD.
http_response readyz_response(http_request const& req, readiness_inputs const& in);

}  // namespace airlock::service

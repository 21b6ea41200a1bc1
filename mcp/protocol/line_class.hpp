#pragma once
// What a line a server writes on its stdout is, as the stdio transport reads it (both eras frame
// JSON-RPC one message per line). Pure: the transport acts on the answer (route a message, fail
// the call a broken reply answers, log and skip the rest).

#include "mcp/protocol/jsonrpc.hpp"
#include "mcp/protocol/line_framer.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace airlock::mcp {

struct line_class {
    enum class kind {
        blank,             // only spaces, tabs and CRs: skipped without a word
        message,           // a JSON-RPC message: `msg`
        unreadable_reply,  // not valid JSON-RPC, but a JSON object with an id and no method: the reply
                           // to request `id` that could not be understood; `reason` says why
        not_json_rpc,      // anything else: skipped; `reason` says why
    };
    kind what = kind::blank;
    std::string_view text;  // the line without a trailing CR
    std::optional<message> msg;
    std::optional<request_id> id;
    std::string reason;
};

// `line` is one line without its newline.
line_class classify_line(std::string_view line);

// What a line too long to be read (line_framer's oversized) can be told to be from its first and
// last bytes: a request or notification (it has a method), the reply to `id`, or a reply whose id
// could not be seen.
struct oversized_class {
    enum class kind { not_a_reply, reply_to, reply_to_unknown };
    kind what = kind::reply_to_unknown;
    std::optional<request_id> id;
};

oversized_class classify_oversized(oversized_line const& skipped);

}  // namespace airlock::mcp

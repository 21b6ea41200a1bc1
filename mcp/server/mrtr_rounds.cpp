#include "mcp/server/mrtr_rounds.hpp"

#include "core/sha256.hpp"
#include "mcp/server/rules.hpp"

#include <openssl/rand.h>

#include <stdexcept>

namespace airlock::mcp::mrtr_rounds {

namespace json = boost::json;

core::result<attempt> read_attempt(mcp::request& r) {
    attempt out;
    if (!mcp::mrtr::allows_input_required(r.method) || !r.params ||
        (!r.params->contains("inputResponses") && !r.params->contains("requestState")))
        return out;
    auto responses = mcp::mrtr::input_responses_of(*r.params);
    if (!responses) return responses.error();
    out.responses = std::move(*responses);
    out.retry = r.params->contains("requestState");
    if (!out.retry) r.params->erase("inputResponses");
    return out;
}

std::optional<std::string> cannot_ask(std::string_view method, std::string_view during) {
    if (mcp::mrtr::allows_input_required(during)) return std::nullopt;
    return std::string(method) + " cannot be asked during " + std::string(during) +
           ": protocol 2026-07-28 asks clients only during tools/call, prompts/get and resources/read";
}

filed file_question(input_state& in, std::string const& method, json::object params, std::shared_ptr<answer_channel> answer,
                    limits const& l) {
    filed out;
    auto hint = mcp::mrtr::take_key_hint(params);
    auto cap = rules::client_capability_for(method);
    if (hint && !in.open.contains(*hint)) {
        out.key = *hint;
    } else {
        do out.key = std::string(cap ? *cap : "input") + "-" + std::to_string(in.next_key++);
        while (in.open.contains(out.key));
    }
    if (in.prefill) {
        if (auto it = in.prefill->find(out.key); it != in.prefill->end()) {
            // An answer the client gave ahead of the question counts when it fits; one that does
            // not is dropped and the question asked properly.
            if (!mcp::mrtr::check_input_response(method, it->value(), out.key)) out.ahead = it->value().as_object();
            in.prefill->erase(it);
        }
    }
    if (out.ahead) return out;
    if (in.open.size() >= l.max_questions) {
        out.refused = "too many questions to the client are open in this request";
        return out;
    }
    in.open[out.key] = input_state::question{method, std::move(params), std::move(answer)};
    if (!in.round_due) out.schedule_round = in.round_due = true;
    return out;
}

void forget_question(input_state& in, std::string const& key, std::shared_ptr<answer_channel> const& answer) {
    if (auto it = in.open.find(key); it != in.open.end() && it->second.answer == answer) in.open.erase(it);
}

void fill_random(random_source const& random, std::uint8_t* out, std::size_t n) {
    if (random) {
        random(out, n);
    } else if (RAND_bytes(out, static_cast<int>(n)) != 1) {
        throw std::runtime_error("the system's random number generator failed");
    }
}

mcp::mrtr::state_sealer fresh_sealer(random_source const& random) {
    std::array<std::uint8_t, 32> key{};
    fill_random(random, key.data(), key.size());
    return mcp::mrtr::state_sealer(key);
}

std::optional<json::object> issue_round(input_state& in, mcp::mrtr::state_sealer const& sealer, std::string_view principal,
                                        std::string_view method, json::object const& params, std::size_t pending,
                                        limits const& l, random_source const& random) {
    if (in.pending_id.empty()) {
        if (pending >= l.max_pending) return std::nullopt;
        std::uint8_t b[16];
        fill_random(random, b, sizeof b);
        in.pending_id = core::to_hex(b, sizeof b);
        in.digest = mcp::mrtr::request_digest(method, params);
    }
    json::object requests;
    for (auto const& [key, q] : in.open) requests[key] = json::object{{"method", q.method}, {"params", q.params}};
    ++in.round;
    auto lapse = std::chrono::ceil<std::chrono::seconds>(l.ttl);
    auto expires =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch() + lapse).count();
    mcp::mrtr::request_state st{in.pending_id, in.round, expires};
    auto state = sealer.seal(st, principal, in.digest);
    in.parked = true;
    return mcp::mrtr::input_required_result(std::move(requests), std::move(state));
}

core::result<mcp::mrtr::request_state> open_retry(mcp::mrtr::state_sealer const& sealer, mcp::request const& r,
                                                  std::string_view principal) {
    auto const& params = *r.params;
    auto const& text = params.at("requestState");
    if (!text.is_string()) return core::make_error("invalid_params", "params.requestState must be a string");
    auto digest = mcp::mrtr::request_digest(r.method, params);
    auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    return sealer.open(text.get_string(), principal, digest, now);
}

core::result<resumed> resume(input_state& in, std::uint64_t round, std::optional<json::object> const& responses,
                             mcp::request_id const& retry_id) {
    if (!in.parked || in.round != round)
        return core::make_error("invalid_params", "params.requestState is stale: a later round of this request was issued, "
                                                  "or another retry is using it");
    if (responses)
        for (auto const& [key, q] : in.open)
            if (auto const* a = responses->if_contains(key))
                if (auto why = mcp::mrtr::check_input_response(q.method, *a, "params.inputResponses." + std::string(key)))
                    return core::make_error("invalid_params", *why);
    resumed out;
    in.parked = false;
    in.reply_id = retry_id;
    if (in.expiry) in.expiry->cancel();
    if (responses)
        for (auto q = in.open.begin(); q != in.open.end();) {
            auto const* a = responses->if_contains(q->first);
            if (!a) {
                ++q;
                continue;
            }
            out.answers.emplace_back(q->second.answer, a->as_object());
            q = in.open.erase(q);
        }
    if (in.parked_final) {
        out.done = std::move(in.parked_final);
        in.parked_final.reset();
    } else if (!in.open.empty() && !in.round_due) {
        // Questions left unanswered are asked again in the next round (with any new ones).
        in.round_due = out.schedule_round = true;
    }
    return out;
}

void hand_over(resumed& r) {
    for (auto& [channel, answer] : r.answers) {
        auto result = std::make_shared<mcp::handler_result>(std::move(answer));
        channel->try_send(boost::system::error_code{}, std::move(result));
    }
    r.answers.clear();
}

bool lapse(input_state& in, std::uint64_t round) {
    if (!in.parked || in.round != round) return false;
    in.parked_final.reset();
    return true;
}

}  // namespace airlock::mcp::mrtr_rounds

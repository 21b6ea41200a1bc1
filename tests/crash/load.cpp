#include "tests/crash/load.hpp"

#include "tests/crash/deployment.hpp"
#include "tests/support/http_get.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <chrono>
#include <sstream>

namespace airlock::crash {

namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

std::string percent_encoded(std::string const& s) {
    std::string out;
    for (unsigned char c : s) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.') out += static_cast<char>(c);
        else {
            char buf[4];
            std::snprintf(buf, sizeof buf, "%%%02X", c);
            out += buf;
        }
    }
    return out;
}

std::optional<json::object> parsed_object(std::string const& text) {
    boost::system::error_code ec;
    auto v = json::parse(text, ec);
    if (ec || !v.is_object()) return std::nullopt;
    return v.as_object();
}

call_outcome read_call_answer(testing::raw_response const& r) {
    if (r.status == 0) return {};
    auto m = rpc_message(r.body);
    if (!m) return {r.status >= 400 ? call_outcome::refused : call_outcome::none, r.body};
    if (auto const* result = m->if_contains("result"); result && result->is_object()) {
        auto const& o = result->as_object();
        std::string text;
        if (auto const* content = o.if_contains("content"); content && content->is_array() && !content->as_array().empty())
            if (auto const* t = content->as_array()[0].as_object().if_contains("text"); t && t->is_string()) text = t->as_string();
        auto const* err = o.if_contains("isError");
        bool failed = err && err->is_bool() && err->as_bool();
        return {failed ? call_outcome::tool_error : call_outcome::ok, text};
    }
    std::string message;
    if (auto const* e = m->if_contains("error"); e && e->is_object())
        if (auto const* t = e->as_object().if_contains("message"); t && t->is_string()) message = t->as_string();
    return {call_outcome::refused, message};
}

bool answered(call_outcome const& a) { return a.kind == call_outcome::ok || a.kind == call_outcome::tool_error; }

}  // namespace

std::string add_arguments(std::string const& key) {
    return R"({"key":)" + json::serialize(json::string(key)) + R"(,"amount":1})";
}

call_outcome gateway_call(std::uint16_t port, std::string const& tool, std::string const& arguments) {
    return read_call_answer(testing::modern_post(port, gateway_token, "tools/call", tool,
                                                 R"("name":")" + tool + R"(","arguments":)" + arguments + ","));
}

std::optional<json::object> rpc_message(std::string const& body) {
    if (auto direct = parsed_object(body)) return direct;
    // An SSE stream: the answer is the last event's data.
    std::optional<json::object> last;
    std::istringstream in(body);
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.rfind("data:", 0) == 0)
            if (auto m = parsed_object(line.substr(5)); m && (m->contains("result") || m->contains("error"))) last = m;
    }
    return last;
}

rest_answer rest(std::uint16_t port, std::string const& token, std::string const& method, std::string const& target,
                 std::string const& body) {
    std::string r = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                    "\r\nConnection: close\r\nAuthorization: Bearer " + token + "\r\n";
    if (method == "POST")
        r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    auto answer = testing::raw_http(port, r + "\r\n" + body, 15s);
    return {answer.status, answer.body};
}

std::string call_key(std::string const& tag, std::string const& loop, int i) {
    return tag + "-" + loop + "-" + std::to_string(i);
}

load::load(std::uint16_t port, std::string tag) : port_(port), tag_(std::move(tag)) {
    threads_.emplace_back([this] { legacy_loop(0); });
    threads_.emplace_back([this] { legacy_loop(1); });
    threads_.emplace_back([this] { modern_loop(0); });
    threads_.emplace_back([this] { modern_loop(1); });
    threads_.emplace_back([this] { run_loop("counter", 0); });
    threads_.emplace_back([this] { run_loop("counter", 1); });
    threads_.emplace_back([this] { run_loop("reviewed", 0); });
    threads_.emplace_back([this] { operator_loop(); });
}

load::~load() { stop(); }

told load::stop() {
    stopping_ = true;
    for (auto& t : threads_)
        if (t.joinable()) t.join();
    std::lock_guard lock(mutex_);
    return told_;
}

void load::record(told_call c) {
    std::lock_guard lock(mutex_);
    told_.calls.push_back(std::move(c));
}

void load::count(int told::*field, std::string const& said) {
    std::lock_guard lock(mutex_);
    ++(told_.*field);
    if (field == &told::refused && told_.first_refusal.empty()) told_.first_refusal = said;
}

// One 2025-11-25 session at a time; a session the server no longer knows (after a restart) is
// opened again.
void load::legacy_loop(int n) {
    std::string session;
    for (int i = 0; go(i); ++i) {
        if (session.empty()) session = testing::legacy_session(port_, gateway_token);
        if (session.empty()) {
            count(&told::unanswered);
            std::this_thread::sleep_for(50ms);
            continue;
        }
        auto key = call_key(tag_, "legacy" + std::to_string(n), i);
        auto body = R"({"jsonrpc":"2.0","id":)" + std::to_string(i + 2) +
                    R"(,"method":"tools/call","params":{"name":"counter__add","arguments":)" + add_arguments(key) + "}}";
        auto r = testing::legacy_post(port_, gateway_token, session, body);
        auto a = read_call_answer(r);
        if (answered(a)) record({key, "2025-11-25", a.kind == call_outcome::ok});
        else {
            count(a.kind == call_outcome::refused ? &told::refused : &told::unanswered, a.text);
            session.clear();
        }
    }
}

void load::modern_loop(int n) {
    for (int i = 0; go(i); ++i) {
        auto key = call_key(tag_, "modern" + std::to_string(n), i);
        auto a = gateway_call(port_, "counter__add", add_arguments(key));
        if (answered(a)) record({key, "2026-07-28", a.kind == call_outcome::ok});
        else {
            count(a.kind == call_outcome::refused ? &told::refused : &told::unanswered, a.text);
            std::this_thread::sleep_for(20ms);
        }
    }
}

// Runs are started without waiting for them, a few a second per loop: what a client is told is
// the admission (202 and the run's id).
void load::run_loop(std::string agent, int n) {
    for (int i = 0; go(i); ++i) {
        auto input = json::serialize(json::string(call_key(tag_, agent + std::to_string(n), i)));
        auto r = rest(port_, gateway_token, "POST", "/v1/runs", R"({"agent":")" + agent + R"(","input":)" + input + "}");
        auto body = r.status == 202 ? parsed_object(r.body) : std::nullopt;
        if (body && body->contains("run_id")) {
            std::lock_guard lock(mutex_);
            told_.runs.emplace_back(body->at("run_id").as_string());
        } else {
            count(r.status == 0 ? &told::unanswered : &told::refused, r.body);
        }
        std::this_thread::sleep_for(agent == "reviewed" ? 150ms : 100ms);
    }
}

// The operator approves every pending call it finds, oldest runs first.
void load::operator_loop() {
    for (int i = 0; go(i); ++i) {
        std::this_thread::sleep_for(100ms);
        auto listed = rest(port_, operator_token, "GET", "/v1/runs?status=awaiting_approval&limit=20");
        auto page = listed.status == 200 ? parsed_object(listed.body) : std::nullopt;
        if (!page) continue;
        for (auto const& run : page->at("runs").as_array()) {
            if (stopping_) return;
            auto id = std::string(run.at("run_id").as_string());
            auto pending = rest(port_, operator_token, "GET", "/v1/runs/" + id + "/approvals?status=pending");
            auto approvals = pending.status == 200 ? parsed_object(pending.body) : std::nullopt;
            if (!approvals) continue;
            for (auto const& a : approvals->at("approvals").as_array()) {
                auto effect = std::string(a.at("effect_key").as_string());
                auto decided = rest(port_, operator_token, "POST",
                                    "/v1/runs/" + id + "/approvals/" + percent_encoded(effect),
                                    R"({"decision":"approve","reason":"crash rounds"})");
                if (decided.status == 200) {
                    std::lock_guard lock(mutex_);
                    told_.approvals.push_back(effect);
                } else {
                    count(decided.status == 0 ? &told::unanswered : &told::refused, decided.body);
                }
            }
        }
    }
}

}  // namespace airlock::crash

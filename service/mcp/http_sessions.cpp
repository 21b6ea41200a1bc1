#include "service/mcp/http_sessions.hpp"

namespace airlock::service {

namespace {

std::shared_ptr<http_session> as_http(std::shared_ptr<mcp::session_record> s) {
    return std::static_pointer_cast<http_session>(std::move(s));
}

std::vector<std::shared_ptr<http_session>> as_http(std::vector<std::shared_ptr<mcp::session_record>> all) {
    std::vector<std::shared_ptr<http_session>> out;
    out.reserve(all.size());
    for (auto& s : all) out.push_back(as_http(std::move(s)));
    return out;
}

}  // namespace

http_sessions::admission http_sessions::admit(std::shared_ptr<http_session> const& s) {
    std::lock_guard lock(mutex_);
    auto a = table_.admit(s);
    return {a.refused, as_http(std::move(a.expired)), table_.size()};
}

http_sessions::lookup http_sessions::find(std::string_view id, std::string const& principal, bool touch) {
    std::lock_guard lock(mutex_);
    auto found = table_.find(id, principal, touch);
    return {as_http(std::move(found.live)), as_http(std::move(found.expired))};
}

std::vector<std::shared_ptr<http_session>> http_sessions::sweep() {
    std::lock_guard lock(mutex_);
    return as_http(table_.sweep());
}

bool http_sessions::remove(std::shared_ptr<http_session> const& s) {
    std::lock_guard lock(mutex_);
    return table_.remove(s);
}

std::vector<std::shared_ptr<http_session>> http_sessions::take_all() {
    std::lock_guard lock(mutex_);
    return as_http(table_.take_all());
}

std::size_t http_sessions::size() const {
    std::lock_guard lock(mutex_);
    return table_.size();
}

http_sessions::holdings http_sessions::release(http_session& s) {
    holdings out;
    std::lock_guard lock(mutex_);
    for (auto& [key, w] : s.in_flight)
        if (auto rq = w.lock()) out.running.push_back(std::move(rq));
    s.in_flight.clear();
    out.stream = std::move(s.get_stream);
    return out;
}

void http_sessions::add_request(http_session& s, std::shared_ptr<mcp::served_request> const& rq) {
    std::lock_guard lock(mutex_);
    s.in_flight[rq->key] = rq;
}

void http_sessions::end_request(http_session& s, std::shared_ptr<mcp::served_request> const& rq) {
    std::lock_guard lock(mutex_);
    if (auto it = s.in_flight.find(rq->key); it != s.in_flight.end() && it->second.lock() == rq) s.in_flight.erase(it);
    table_.touch(s);
}

std::shared_ptr<mcp::served_request> http_sessions::request(http_session& s, std::string const& key) {
    std::lock_guard lock(mutex_);
    auto it = s.in_flight.find(key);
    return it == s.in_flight.end() ? nullptr : it->second.lock();
}

bool http_sessions::open_stream(http_session& s, std::shared_ptr<listen_stream> const& ls) {
    std::lock_guard lock(mutex_);
    if (s.get_stream && !s.get_stream->ended) return false;
    s.get_stream = ls;
    return true;
}

void http_sessions::close_stream(http_session& s, std::shared_ptr<listen_stream> const& ls) {
    std::lock_guard lock(mutex_);
    if (s.get_stream == ls) s.get_stream.reset();
    table_.touch(s);
}

std::vector<std::shared_ptr<listen_stream>> http_sessions::take_streams() {
    std::vector<std::shared_ptr<listen_stream>> out;
    std::lock_guard lock(mutex_);
    table_.for_each([&](mcp::session_record& r) {
        auto& s = static_cast<http_session&>(r);
        if (s.get_stream) out.push_back(std::move(s.get_stream));
    });
    return out;
}

}  // namespace airlock::service

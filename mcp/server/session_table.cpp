#include "mcp/server/session_table.hpp"

#include "mcp/server/rules.hpp"

#include <algorithm>

namespace airlock::mcp {

session_table::session_table(options o) : options_(std::move(o)) {}

session_table::time_point session_table::now() const {
    return options_.clock ? options_.clock() : std::chrono::steady_clock::now();
}

bool session_table::expired(session_record const& s, time_point t) const {
    return !s.busy() && t - s.last_seen > options_.idle_timeout;
}

// Sessions enter and leave the table only through these two, so `held_` always counts what each
// principal holds.
void session_table::add(std::shared_ptr<session_record> const& s) {
    sessions_[s->id] = s;
    held_[s->principal].insert(s->id);
}

session_table::map::iterator session_table::drop(map::iterator it) {
    if (auto h = held_.find(it->second->principal); h != held_.end()) {
        h->second.erase(it->first);
        if (h->second.empty()) held_.erase(h);
    }
    return sessions_.erase(it);
}

std::size_t session_table::held_by(std::string const& principal) const {
    auto h = held_.find(principal);
    return h == held_.end() ? 0 : h->second.size();
}

// Whole seconds until the first of the principal's sessions has idled out at the pace of `t`, if
// its client does nothing: the soonest its next initialize can succeed without a DELETE. A busy
// session restarts its idle clock when it is done, so it counts as a full idle timeout. Expiry is
// "idle for longer than the timeout", hence + 1.
std::int64_t session_table::seconds_until_a_slot_frees(std::string const& principal, time_point t) const {
    auto soonest = options_.idle_timeout;
    if (auto h = held_.find(principal); h != held_.end())
        for (auto const& id : h->second) {
            auto it = sessions_.find(id);
            if (it == sessions_.end() || it->second->busy()) continue;
            auto left = options_.idle_timeout - std::chrono::duration_cast<std::chrono::milliseconds>(t - it->second->last_seen);
            soonest = std::min(soonest, std::max(left, std::chrono::milliseconds(0)));
        }
    return std::chrono::duration_cast<std::chrono::seconds>(soonest).count() + 1;
}

// The expired sessions of one principal only: as cheap as its share is small.
std::vector<std::shared_ptr<session_record>> session_table::reap_of(std::string const& principal, time_point t) {
    std::vector<std::shared_ptr<session_record>> ended;
    auto h = held_.find(principal);
    if (h == held_.end()) return ended;
    std::vector<std::string> ids(h->second.begin(), h->second.end());
    for (auto const& id : ids) {
        auto it = sessions_.find(id);
        if (it == sessions_.end() || !expired(*it->second, t)) continue;
        ended.push_back(it->second);
        drop(it);
    }
    return ended;
}

session_table::admission session_table::admit(std::shared_ptr<session_record> const& s) {
    admission out;
    auto const t = now();
    s->last_seen = t;
    auto const& principal = s->principal;
    // The sweep runs at most once a second; a principal at its share gets back a slot one of its
    // own sessions idled out of meanwhile rather than a 429 it cannot explain.
    if (held_by(principal) >= options_.max_per_principal) out.expired = reap_of(principal, t);
    if (auto holding = held_by(principal); holding >= options_.max_per_principal) {
        out.refused = refusal{refusal::kind::principal_share, holding, seconds_until_a_slot_frees(principal, t)};
    } else if (sessions_.size() >= options_.max_sessions) {
        // Any client's DELETE or the once-a-second sweep may free a slot, so a second is the
        // shortest wait worth asking for. Finding the table's next expiry would cost a scan of
        // every session on each refusal, just when refusals come in numbers.
        out.refused = refusal{refusal::kind::table_full, 0, 1};
    } else {
        do s->id = rules::new_session_id(options_.random);
        while (sessions_.contains(s->id));
        add(s);
    }
    return out;
}

session_table::lookup session_table::find(std::string_view id, std::string const& principal, bool touch) {
    lookup out;
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second->principal != principal) return out;
    auto const t = now();
    if (!expired(*it->second, t)) {
        if (touch) it->second->last_seen = t;
        out.live = it->second;
        return out;
    }
    out.expired = it->second;
    drop(it);
    return out;
}

std::vector<std::shared_ptr<session_record>> session_table::sweep() {
    std::vector<std::shared_ptr<session_record>> ended;
    auto const t = now();
    if (t - last_sweep_ < std::chrono::seconds(1) && last_sweep_ != time_point{}) return ended;
    last_sweep_ = t;
    for (auto it = sessions_.begin(); it != sessions_.end();) {
        if (expired(*it->second, t)) {
            ended.push_back(it->second);
            it = drop(it);
        } else {
            ++it;
        }
    }
    return ended;
}

bool session_table::remove(std::shared_ptr<session_record> const& s) {
    auto it = sessions_.find(s->id);
    if (it == sessions_.end() || it->second != s) return false;
    drop(it);
    return true;
}

std::vector<std::shared_ptr<session_record>> session_table::take_all() {
    std::vector<std::shared_ptr<session_record>> all;
    for (auto& [id, s] : sessions_) all.push_back(s);
    sessions_.clear();
    held_.clear();
    return all;
}

}  // namespace airlock::mcp

#pragma once
// The ledger of the TELLER example as a typed in-process ToolBox: the same two tools, schemas and
// answers as the stdio MCP server beside it (examples/ledger/server.mjs), for tests and benchmarks
// that want the ledger without a child process.
//
//     auto state = std::make_shared<airlock::examples::ledger_state>();  // AC-1 holds 42
//     auto box = airlock::examples::make_ledger_toolbox(state);          // tool://ledger/read, /post
//     router->add_route("ledger", box);
//     ... state->posts() == 0
//
//   read {account}          -> {account, balance}; an unknown account fails the call
//   post {account, amount}  -> adds amount (minor units) to the account: {account, posted, balance}
// An empty account fails either call. Calls may run concurrently (from any thread): the state
// locks. Only calls that did their work are counted.

#include "core/toolbox.hpp"

#include <boost/describe.hpp>
#include <boost/json/object.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace airlock::examples {

struct ledger_read_args {
    std::string account;
    static constexpr core::field_doc field_docs[] = {{"account", "The account, e.g. AC-1."}};
};
BOOST_DESCRIBE_STRUCT(ledger_read_args, (), (account))

struct ledger_post_args {
    std::string account;
    std::int64_t amount = 0;
    static constexpr core::field_doc field_docs[] = {{"account", "The account, e.g. AC-1."},
                                                     {"amount", "The amount, in minor units."}};
};
BOOST_DESCRIBE_STRUCT(ledger_post_args, (), (account, amount))

// Balances and call counts; the opening balances are the server's default (LEDGER_OPENING unset).
class ledger_state {
public:
    ledger_state() = default;
    explicit ledger_state(std::map<std::string, std::int64_t> opening) : balances_(std::move(opening)) {}

    std::optional<std::int64_t> balance(std::string const& account) const {
        std::lock_guard lock(mutex_);
        auto it = balances_.find(account);
        if (it == balances_.end()) return std::nullopt;
        return it->second;
    }
    std::uint64_t reads() const {
        std::lock_guard lock(mutex_);
        return reads_;
    }
    std::uint64_t posts() const {
        std::lock_guard lock(mutex_);
        return posts_;
    }

    // The tools' bodies: an answer, or the text of a failed call.
    core::tool_result<boost::json::value> read(std::string const& account) {
        if (account.empty()) return failed("account must be a non-empty string");
        std::lock_guard lock(mutex_);
        auto it = balances_.find(account);
        if (it == balances_.end()) return failed("no account " + account);
        ++reads_;
        return boost::json::value(boost::json::object{{"account", account}, {"balance", it->second}});
    }
    core::tool_result<boost::json::value> post(std::string const& account, std::int64_t amount) {
        if (account.empty()) return failed("account must be a non-empty string");
        std::lock_guard lock(mutex_);
        auto& balance = balances_[account];
        balance += amount;
        ++posts_;
        return boost::json::value(boost::json::object{{"account", account}, {"posted", amount}, {"balance", balance}});
    }

private:
    static core::tool_error failed(std::string text) {
        return core::tool_error{core::tool_error_kind::tool_failed, "", std::move(text)};
    }

    mutable std::mutex mutex_;
    std::map<std::string, std::int64_t> balances_{{"AC-1", 42}};
    std::uint64_t reads_ = 0;
    std::uint64_t posts_ = 0;
};

// A ToolBox serving tool://ledger/read (declared read-only) and tool://ledger/post over `state`.
inline std::shared_ptr<core::toolbox> make_ledger_toolbox(std::shared_ptr<ledger_state> state) {
    auto box = std::make_shared<core::toolbox>("ledger");
    // The names are fixed and valid, so adding cannot fail.
    (void)box->add<ledger_read_args>("read", {.description = "Read a ledger account's balance.", .mutates = false},
                                     [state](ledger_read_args a) { return state->read(a.account); });
    (void)box->add<ledger_post_args>("post", {.description = "Post an amount (minor units) to an account."},
                                     [state](ledger_post_args a) { return state->post(a.account, a.amount); });
    return box;
}

}  // namespace airlock::examples

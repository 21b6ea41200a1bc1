#include "service/ops/journal_retention.hpp"

#include "core/rfc3339.hpp"
#include "mcp/client/spawn_logged.hpp"
#include "service/ops/journal_prune.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace airlock::service::ops {

namespace asio = boost::asio;
using namespace std::chrono_literals;

journal_retention::journal_retention(asio::any_io_executor exec, std::shared_ptr<store::lmdb_store> journal,
                                     std::chrono::milliseconds retention)
    : journal_(std::move(journal)), retention_(retention), timer_(std::make_shared<asio::steady_timer>(std::move(exec))) {}

std::chrono::milliseconds journal_retention::interval() const noexcept {
    return std::clamp<std::chrono::milliseconds>(retention_ / 4, 1s, 1h);
}

void journal_retention::start() { mcp::spawn_logged(timer_->get_executor(), async_loop(), "journal retention"); }

void journal_retention::stop() {
    stopped_ = true;
    asio::post(timer_->get_executor(), [timer = timer_] { timer->cancel(); });
}

asio::awaitable<void> journal_retention::async_loop() {
    auto self = shared_from_this();
    while (!stopped_) {
        auto const cutoff = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now() - retention_);
        prune_request request{cutoff};
        auto pruned = co_await async_prune(*journal_, request);
        if (!pruned)
            spdlog::warn("journal retention: prune of runs sealed before {} failed: {}", core::rfc3339(cutoff),
                         pruned.error().message);
        else if (!pruned->runs.empty())
            spdlog::info("journal retention: pruned {} runs ({} records) sealed before {}; journaled as run {}",
                         pruned->runs.size(), pruned->records, core::rfc3339(cutoff), pruned->record_run);
        if (stopped_) break;
        timer_->expires_after(interval());
        boost::system::error_code ec;
        co_await timer_->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
}

}  // namespace airlock::service::ops

#pragma once
// A byte stream, plain or TLS, behind one type. Beast's HTTP operations are templates on the
// stream: a file that reads and writes HTTP over a TCP stream and over a TLS one compiles each
// composed operation, and every coroutine that awaits one, twice. Over any_stream they are
// compiled once; the stream's own read_some / write_some / shutdown are compiled once per real
// stream type, behind a virtual call that takes a type-erased completion handler.
//
// `Lowest` is the layer both kinds share (a beast::basic_stream, which holds the socket and the
// deadlines): next_layer() returns it, so beast::get_lowest_layer(s) finds it as for the real
// stream. The erased handler keeps the caller's executor, allocator and cancellation slot, so a
// cancelled wait (awaitable operators, a strand) behaves as it does on the real stream.

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/system/error_code.hpp>

#include <array>
#include <cstddef>
#include <type_traits>
#include <utility>

namespace airlock::mcp {

namespace detail {

// The first buffers of a sequence (at most as many as one scatter/gather system call takes, the
// same cap Asio applies), held by value so an operation can keep them while it is in flight.
// read_some and write_some may transfer less than the whole sequence: the callers loop.
template <class Buffer>
class buffer_window {
public:
    static constexpr std::size_t max_buffers = 64;

    template <class Sequence>
    explicit buffer_window(Sequence const& sequence) {
        auto it = boost::asio::buffer_sequence_begin(sequence);
        auto const end = boost::asio::buffer_sequence_end(sequence);
        for (; it != end && count_ < max_buffers; ++it) buffers_[count_++] = Buffer(*it);
    }

    Buffer const* begin() const noexcept { return buffers_.data(); }
    Buffer const* end() const noexcept { return buffers_.data() + count_; }

private:
    std::array<Buffer, max_buffers> buffers_{};
    std::size_t count_ = 0;
};

// Whether a stream ends with a TLS close_notify (it has async_shutdown) or by shutting down the
// socket's sending side.
template <class Stream>
concept has_async_shutdown = requires(Stream& s) { s.async_shutdown(std::declval<void (*)(boost::system::error_code)>()); };

}  // namespace detail

template <class Lowest>
class any_stream {
public:
    using executor_type = boost::asio::any_io_executor;
    using lowest_type = Lowest;
    using mutable_buffers = detail::buffer_window<boost::asio::mutable_buffer>;
    using const_buffers = detail::buffer_window<boost::asio::const_buffer>;
    using io_handler = boost::asio::any_completion_handler<void(boost::system::error_code, std::size_t)>;
    using shutdown_handler = boost::asio::any_completion_handler<void(boost::system::error_code)>;

    any_stream() = default;
    any_stream(any_stream const&) = delete;
    any_stream& operator=(any_stream const&) = delete;
    virtual ~any_stream() = default;

    virtual executor_type get_executor() = 0;
    virtual Lowest& next_layer() = 0;
    // Closes the socket at once: pending operations complete with operation_aborted.
    virtual void close() = 0;

    template <class MutableBufferSequence, class Token>
    auto async_read_some(MutableBufferSequence const& buffers, Token&& token) {
        auto initiate = [this](auto handler, mutable_buffers const& b) { do_read_some(b, io_handler(std::move(handler))); };
        return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
            initiate, token, mutable_buffers(buffers));
    }

    template <class ConstBufferSequence, class Token>
    auto async_write_some(ConstBufferSequence const& buffers, Token&& token) {
        auto initiate = [this](auto handler, const_buffers const& b) { do_write_some(b, io_handler(std::move(handler))); };
        return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(initiate, token,
                                                                                               const_buffers(buffers));
    }

    // TLS: sends close_notify (and waits for the peer's). Plain: shuts down the sending side.
    template <class Token>
    auto async_shutdown(Token&& token) {
        auto initiate = [this](auto handler) { do_shutdown(shutdown_handler(std::move(handler))); };
        return boost::asio::async_initiate<Token, void(boost::system::error_code)>(initiate, token);
    }

protected:
    virtual void do_read_some(mutable_buffers const& buffers, io_handler handler) = 0;
    virtual void do_write_some(const_buffers const& buffers, io_handler handler) = 0;
    virtual void do_shutdown(shutdown_handler handler) = 0;
};

// The any_stream over a real `Stream` (a basic_stream, or an ssl_stream over one), which it owns.
template <class Stream>
class any_stream_of final : public any_stream<std::remove_reference_t<decltype(boost::beast::get_lowest_layer(std::declval<Stream&>()))>> {
    using base = any_stream<std::remove_reference_t<decltype(boost::beast::get_lowest_layer(std::declval<Stream&>()))>>;

public:
    template <class... Args>
    explicit any_stream_of(Args&&... args) : stream_(std::forward<Args>(args)...) {}

    Stream& get() noexcept { return stream_; }

    typename base::executor_type get_executor() override { return stream_.get_executor(); }
    typename base::lowest_type& next_layer() override { return boost::beast::get_lowest_layer(stream_); }
    void close() override { boost::beast::get_lowest_layer(stream_).close(); }

private:
    // Boost 1.81's erased handler carries an executor (any_completion_executor) that cannot be
    // required to be non-blocking, which Beast and Asio ask of a handler's executor when they post
    // its completion. The handler is bound to the stream's own executor instead: both users keep
    // the stream and the coroutines awaiting it on one strand, so the completion runs where it
    // would have. The erased handler's cancellation slot and allocator still pass through.
    auto bound(auto handler) { return boost::asio::bind_executor(stream_.get_executor(), std::move(handler)); }

    void do_read_some(typename base::mutable_buffers const& buffers, typename base::io_handler handler) override {
        stream_.async_read_some(buffers, bound(std::move(handler)));
    }
    void do_write_some(typename base::const_buffers const& buffers, typename base::io_handler handler) override {
        stream_.async_write_some(buffers, bound(std::move(handler)));
    }
    void do_shutdown(typename base::shutdown_handler handler) override {
        if constexpr (detail::has_async_shutdown<Stream>) {
            stream_.async_shutdown(bound(std::move(handler)));
        } else {
            boost::system::error_code ec;
            boost::beast::get_lowest_layer(stream_).socket().shutdown(boost::asio::socket_base::shutdown_send, ec);
            auto complete = [h = std::move(handler), ec]() mutable { std::move(h)(ec); };
            boost::asio::post(stream_.get_executor(), std::move(complete));
        }
    }

    Stream stream_;
};

}  // namespace airlock::mcp

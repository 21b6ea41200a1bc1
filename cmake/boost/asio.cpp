// The one translation unit that compiles Asio's implementation (with its OpenSSL glue).
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>

// The one translation unit that compiles Beast's implementation.
#include <boost/beast/src.hpp>

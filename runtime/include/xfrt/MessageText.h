//===- MessageText.h - Input quoted in messages, safe for a terminal --*- C++ -*-===//
//
// An error that quotes what the user gave (an option's value, a line of a batch file) shows
// at most the first 80 bytes of it, then "…", with every control character and invalid UTF-8
// byte written as an escape (\n, \t, \x1b): a 20 MB value is not echoed whole, and an escape
// sequence in a file never reaches the terminal. printableMessage is the last line of defence
// where a whole message is printed.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_MESSAGETEXT_H
#define XFRT_MESSAGETEXT_H

#include <cstddef>
#include <string>
#include <string_view>

namespace xfrt {

// 'TEXT' with TEXT cut to `maxBytes` (on a character boundary, then "…") and escaped (a
// backslash as \\ too).
std::string quoteInput(std::string_view text, size_t maxBytes = 80);

// The message's control characters escaped the same way (backslashes kept: a quote inside it
// is escaped already), cut to `maxBytes` (then "… (N more bytes)").
std::string printableMessage(std::string_view message, size_t maxBytes = 4096);

} // namespace xfrt

#endif // XFRT_MESSAGETEXT_H

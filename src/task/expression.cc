#include "task/expression.h"

#include <cctype>

#include "common/error.h"

namespace ptxbench {
namespace {

// Recursive descent: expr := term (('+'|'-') term)*; term := factor (('*'|'/') factor)*;
// factor := number | name | '(' expr ')' | '-' factor. Evaluated in double so that large
// products (10·B·H·S²·D) do not overflow.
class Parser {
 public:
  Parser(std::string_view text, const Axes& axes) : s_(text), axes_(axes) {}
  double Parse() {
    double v = Expr();
    Skip();
    if (pos_ != s_.size()) Fail("unexpected '" + std::string(1, s_[pos_]) + "'");
    return v;
  }

 private:
  [[noreturn]] void Fail(const std::string& why) {
    throw InputError("FLOP formula \"" + std::string(s_) + "\": " + why);
  }
  void Skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool Eat(char c) {
    Skip();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  double Expr() {
    double v = Term();
    for (;;) {
      if (Eat('+'))
        v += Term();
      else if (Eat('-'))
        v -= Term();
      else
        return v;
    }
  }
  double Term() {
    double v = Factor();
    for (;;) {
      if (Eat('*')) {
        v *= Factor();
      } else if (Eat('/')) {
        double d = Factor();
        if (d == 0) Fail("division by zero");
        v /= d;
      } else {
        return v;
      }
    }
  }
  double Factor() {
    Skip();
    if (Eat('(')) {
      double v = Expr();
      if (!Eat(')')) Fail("missing ')'");
      return v;
    }
    if (Eat('-')) return -Factor();
    if (pos_ >= s_.size()) Fail("unexpected end");
    size_t start = pos_;
    if (std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      return std::stod(std::string(s_.substr(start, pos_ - start)));
    }
    if (std::isalpha(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_') {
      while (pos_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
        ++pos_;
      std::string name(s_.substr(start, pos_ - start));
      auto it = axes_.find(name);
      if (it == axes_.end()) Fail("unknown axis '" + name + "'");
      return static_cast<double>(it->second);
    }
    Fail("unexpected '" + std::string(1, s_[pos_]) + "'");
  }

  std::string_view s_;
  const Axes& axes_;
  size_t pos_ = 0;
};

}  // namespace

double EvaluateFormula(std::string_view formula, const Axes& axes) {
  return Parser(formula, axes).Parse();
}

}  // namespace ptxbench

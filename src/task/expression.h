// Integer arithmetic over named axes, for the FLOP formulas of task definitions
// ("2*M*N*K", "4*B*H*S*S*D/2"). Data files carry the formula; this evaluates it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace ptxbench {

using Axes = std::map<std::string, int64_t>;

// Supports + - * / (integer division), parentheses, decimal integers and axis names.
// Throws InputError naming the formula on a syntax error or an unknown axis.
double EvaluateFormula(std::string_view formula, const Axes& axes);

}  // namespace ptxbench

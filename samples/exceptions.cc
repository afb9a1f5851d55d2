/* SPDX-License-Identifier: MIT */
// exceptions: a C++ exception thrown three calls deep and caught at the top,
// so the unwinder closes frames; names in the trace are demangled.
//
//   ptscope run -- build/samples/exceptions
#include <cstdio>
#include <stdexcept>
#include <string>

namespace shop {

struct Order {
	int id;
	int quantity;
};

static void validate(const Order &o)
{
	if (o.quantity <= 0)
		throw std::invalid_argument("order " + std::to_string(o.id) +
					    " has no items");
}

static int price(const Order &o)
{
	validate(o);
	return o.quantity * 3;
}

template <typename T> static T total(const T *orders, int n)
{
	T sum{};
	for (int i = 0; i < n; i++)
		sum.quantity += price(orders[i]);
	return sum;
}

} // namespace shop

int main()
{
	shop::Order orders[] = {{1, 2}, {2, 5}, {3, 0}, {4, 1}};
	try {
		shop::Order t = shop::total(orders, 4);
		std::printf("exceptions: total %d\n", t.quantity);
	} catch (const std::exception &e) {
		std::printf("exceptions: caught: %s\n", e.what());
	}
	return 0;
}

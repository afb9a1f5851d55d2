/* SPDX-License-Identifier: MIT */
/* The JSON reader's values (see json_reader.h): how JSON scalars become
 * ptscope values.  Timestamps and durations are microseconds in any JSON
 * number form, turned into nanoseconds exactly as Perfetto's JSON importer
 * rounds them; pids, tids and ids may be numbers or strings; an argument
 * is a bool, an integer, a double, a pointer ("0x..." text) or a string.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "src/output/json_reader.h"

uint64_t jr_fnv1a(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

uint64_t jr_hash_ident(const char *s, size_t n)
{
	uint64_t h = jr_fnv1a(s, n);

	h = (h ^ (h >> 31) ^ (h >> 62)) & 0x7fffffff;
	return h ? h : 1;
}

int jr_is_integer_text(const char *s, size_t n)
{
	size_t i = 0;

	if (n && s[0] == '-')
		i = 1;
	if (i == n)
		return 0;
	for (; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

int jr_parse_u64(const char *s, size_t n, int hex_ok, uint64_t *out)
{
	uint64_t v = 0;
	unsigned base = 10, d;
	size_t i = 0;

	if (hex_ok && n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
	}
	if (i == n)
		return -1;
	for (; i < n; i++) {
		char c = s[i];

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (base == 16 && c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return -1;
		if (v > (UINT64_MAX - d) / base)
			return -1;
		v = v * base + d;
	}
	*out = v;
	return 0;
}

/* Exact decimal µs → ns (rounded half up) for integer text. */
static int parse_us_exact(const char *s, size_t n, uint64_t *ns)
{
	char digits[400];
	size_t nd = 0, i = 0;
	long point = 0, exp10 = 0;
	int seen_point = 0, seen_digit = 0, exp_neg = 0;
	uint64_t v = 0;

	if (i < n && (s[i] == '-' || s[i] == '+')) {
		if (s[i] == '-')
			return -1;
		i++;
	}
	for (; i < n; i++) {
		char c = s[i];

		if (c >= '0' && c <= '9') {
			seen_digit = 1;
			if (!nd && c == '0') { /* leading zero */
				if (seen_point)
					point--;
				continue;
			}
			if (nd == sizeof(digits))
				return -1;
			digits[nd++] = c;
			if (!seen_point)
				point++;
		} else if (c == '.' && !seen_point) {
			seen_point = 1;
		} else {
			break;
		}
	}
	if (!seen_digit)
		return -1;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '-' || s[i] == '+'))
			exp_neg = s[i++] == '-';
		if (i == n)
			return -1;
		for (; i < n; i++) {
			if (s[i] < '0' || s[i] > '9')
				return -1;
			if (exp10 < 100000)
				exp10 = exp10 * 10 + (s[i] - '0');
		}
		point += exp_neg ? -exp10 : exp10;
	}
	if (i != n)
		return -1;
	point += 3; /* µs → ns: digits before this index are whole ns */
	if (point > 20)
		return nd ? -1 : (*ns = 0, 0);
	for (long k = 0; k < point; k++) {
		unsigned d = (size_t)k < nd ? (unsigned)(digits[k] - '0') : 0;

		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	if (point >= 0 && (size_t)point < nd && digits[point] >= '5') {
		if (v == UINT64_MAX)
			return -1;
		v++;
	}
	*ns = v;
	return 0;
}

/* A fractional or exponent µs value, computed exactly as Perfetto's JSON
 * importer does (integer part + fraction digits / 10^k as doubles, times a
 * power of ten, then rounded µs * 1000), so that a trace converted from JSON
 * keeps the very nanoseconds Perfetto shows for the JSON itself. */
static int parse_us_like_perfetto(const char *s, size_t n, uint64_t *ns)
{
	uint64_t ip = 0, fp = 0, div = 1, e = 0;
	double d, scale = 1, x;
	size_t i = 0;
	int exp_neg = 0;
	int64_t whole;

	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
		ip = ip * 10 + (uint64_t)(s[i] - '0');
	if (i < n && s[i] == '.')
		for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
			fp = fp * 10 + (uint64_t)(s[i] - '0');
			div *= 10;
		}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '-' || s[i] == '+'))
			exp_neg = s[i++] == '-';
		for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			if (e < 100000)
				e = e * 10 + (uint64_t)(s[i] - '0');
	}
	d = (double)(int64_t)ip + (double)(int64_t)fp / (double)div;
	for (uint64_t k = 0; k < e && scale < 1e300; k++)
		scale *= 10;
	d = exp_neg ? d / scale : d * scale;
	if (!(d >= 0) || d >= 9.2e15) /* ns must fit Perfetto's int64 */
		return -1;
	whole = (int64_t)d;
	if ((double)whole == d) {
		*ns = (uint64_t)whole * 1000;
		return 0;
	}
	x = d * 1000.0;
	whole = (int64_t)x;
	*ns = (uint64_t)whole + (x - (double)whole >= 0.5);
	return 0;
}

/* 1 if @s is a non-negative decimal number (JSON-like, '+' allowed);
 * *is_int says it has neither fraction nor exponent. */
static int us_syntax(const char *s, size_t n, int *is_int)
{
	size_t i = 0, d0;

	*is_int = 1;
	if (i < n && s[i] == '+')
		i++;
	d0 = i;
	while (i < n && s[i] >= '0' && s[i] <= '9')
		i++;
	if (i == d0) /* a digit must come first, as in JSON */
		return 0;
	if (i < n && s[i] == '.') {
		size_t f0 = ++i;

		*is_int = 0;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == f0)
			return 0;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		size_t e0;

		*is_int = 0;
		i++;
		if (i < n && (s[i] == '-' || s[i] == '+'))
			i++;
		e0 = i;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == e0)
			return 0;
	}
	return i == n;
}

int jr_parse_us(const char *s, size_t n, uint64_t *ns)
{
	int is_int;

	if (!us_syntax(s, n, &is_int))
		return -1;
	if (is_int)
		return parse_us_exact(s, n, ns);
	return parse_us_like_perfetto(s[0] == '+' ? s + 1 : s,
				      s[0] == '+' ? n - 1 : n, ns);
}
void jr_set_id(struct jr_id *id, const char *s, size_t n)
{
	id->set = 1;
	if (jr_parse_u64(s, n, 1, &id->v))
		id->v = jr_fnv1a(s, n);
}

/* "0x" and 1-16 hex digits: how Chrome writes pointers. */
static int looks_like_pointer(const char *s, size_t n)
{
	if (n < 3 || n > 18 || s[0] != '0' || s[1] != 'x')
		return 0;
	for (size_t i = 2; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f') ||
		      (s[i] >= 'A' && s[i] <= 'F')))
			return 0;
	return 1;
}

void jr_scalar_arg(struct jr_arg *a, enum jr_vtype t, const char *s, size_t n,
		   int b)
{
	char tmp[64];
	char *end;

	switch (t) {
	case V_NULL:
		a->type = PS_ARG_NULL;
		return;
	case V_BOOL:
		a->type = PS_ARG_BOOL;
		a->v.b = b;
		return;
	case V_STRING:
		a->type = PS_ARG_STRING;
		if (looks_like_pointer(s, n) && !jr_parse_u64(s, n, 1, &a->v.u))
			a->type = PS_ARG_POINTER;
		return;
	case V_NUMBER:
		break;
	}
	if (jr_is_integer_text(s, n)) {
		if (s[0] != '-' && !jr_parse_u64(s, n, 0, &a->v.u)) {
			a->type = a->v.u > INT64_MAX ? PS_ARG_UINT : PS_ARG_INT;
			return;
		}
		if (s[0] == '-' && n < 21) {
			memcpy(tmp, s, n);
			tmp[n] = '\0';
			errno = 0;
			a->v.i = strtoll(tmp, &end, 10);
			if (!errno) {
				a->type = PS_ARG_INT;
				return;
			}
		}
	}
	if (n >= sizeof(tmp))
		n = sizeof(tmp) - 1;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	a->type = PS_ARG_DOUBLE;
	a->v.d = strtod(tmp, NULL);
}

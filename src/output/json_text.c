/* SPDX-License-Identifier: MIT */
/* Text helpers the JSON writer and reader share (json.h): UTF-8 checks,
 * growable arrays, shortest round-trip doubles. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptscope/error.h"
#include "src/output/json.h"

size_t json_utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len, i;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

int json_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t nc = *cap ? *cap : 64;
	void *np;

	if (need <= *cap)
		return 0;
	while (nc < need)
		nc *= 2;
	np = realloc(*p, nc * elem);
	if (!np)
		return PS_ERR_NOMEM;
	*p = np;
	*cap = nc;
	return 0;
}

size_t json_format_double(char *buf, double d)
{
	int p;

	if (isnan(d))
		return (size_t)snprintf(buf, 32, "nan");
	if (isinf(d))
		return (size_t)snprintf(buf, 32, d < 0 ? "-inf" : "inf");
	for (p = 15; p < 17; p++) {
		snprintf(buf, 32, "%.*g", p, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	if (p == 17)
		snprintf(buf, 32, "%.17g", d);
	return strlen(buf);
}

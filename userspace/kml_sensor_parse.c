// SPDX-License-Identifier: GPL-2.0
/*
 * Argument parsing for kml-sensor: temperatures are typed in degrees
 * Celsius ("-3.25") and carried as integer milli-degrees, without ever
 * going through floating point, so "0.1" is exactly 100 mC.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "kml_sensor_parse.h"

/* "[-]D[.DDD]" degrees Celsius to milli-degrees; -EINVAL if malformed or
 * beyond +/-2,000,000 mC (far outside any sensor range). */
int kml_parse_celsius(const char *s, int32_t *mc)
{
	int neg = 0, frac_digits = 0, int_digits = 0;
	int64_t v = 0;

	if (*s == '-' || *s == '+')
		neg = *s++ == '-';
	for (; *s >= '0' && *s <= '9'; s++) {
		v = v * 10 + (*s - '0');
		if (++int_digits > 7)
			return -EINVAL;
	}
	v *= 1000;
	if (*s == '.') {
		int scale = 100;

		for (s++; *s >= '0' && *s <= '9'; s++) {
			if (++frac_digits > 3)
				return -EINVAL;
			v += (*s - '0') * scale;
			scale /= 10;
		}
		if (!frac_digits)
			return -EINVAL;
	}
	if (*s || !int_digits || v > 2000000)
		return -EINVAL;
	*mc = (int32_t)(neg ? -v : v);
	return 0;
}

/* Decimal unsigned integer in [0, max]. */
int kml_parse_uint(const char *s, uint32_t max, uint32_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > max)
			return -EINVAL;
	}
	*out = (uint32_t)v;
	return 0;
}

/* Milli-degrees as "-3.250". */
void kml_format_celsius(int32_t mc, char *buf, unsigned int len)
{
	int64_t v = mc;
	const char *sign = v < 0 ? "-" : "";

	if (v < 0)
		v = -v;
	snprintf(buf, len, "%s%lld.%03lld", sign, (long long)(v / 1000),
		 (long long)(v % 1000));
}

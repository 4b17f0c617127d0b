// SPDX-License-Identifier: GPL-2.0
/*
 * Argument parsing for kml-sensor: temperatures are typed in degrees
 * Celsius ("-3.25") and carried as integer milli-degrees, without ever
 * going through floating point, so "0.1" is exactly 100 mC.
 */
#include <ctype.h>
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

/* An unsigned integer in [0, max]: decimal, or hexadecimal after 0x. */
int kml_parse_uint(const char *s, uint32_t max, uint32_t *out)
{
	unsigned int base = s[0] == '0' && (s[1] == 'x' || s[1] == 'X') ? 16 : 10;
	uint64_t v = 0;

	if (base == 16)
		s += 2;
	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		int d = isdigit((unsigned char)*s) ? *s - '0' :
			base == 16 && isxdigit((unsigned char)*s) ?
			tolower((unsigned char)*s) - 'a' + 10 : -1;

		if (d < 0)
			return -EINVAL;
		v = v * base + (uint64_t)d;
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

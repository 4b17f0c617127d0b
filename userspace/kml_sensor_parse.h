/* SPDX-License-Identifier: GPL-2.0 */
#ifndef KML_SENSOR_PARSE_H
#define KML_SENSOR_PARSE_H

#include <stdint.h>

int kml_parse_celsius(const char *s, int32_t *mc);
int kml_parse_uint(const char *s, uint32_t max, uint32_t *out);
void kml_format_celsius(int32_t mc, char *buf, unsigned int len);

#endif

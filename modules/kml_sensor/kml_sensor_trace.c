// SPDX-License-Identifier: GPL-2.0
/*
 * The one file that instantiates kml_sensor's tracepoints: with
 * CREATE_TRACE_POINTS, the header's TRACE_EVENT()s expand into the events'
 * code and tracefs descriptions instead of declarations. Kept apart so
 * kml_sensor_main.c reads as the driver, and built without gcov: the
 * generated code's branches are the kernel's, not ours to cover.
 */
#define CREATE_TRACE_POINTS
#include "kml_sensor_trace.h"

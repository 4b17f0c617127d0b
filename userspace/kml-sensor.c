// SPDX-License-Identifier: GPL-2.0
/*
 * kml-sensor: the client of /dev/kml_sensor. Every subcommand is one or
 * two ioctls, so this file doubles as a worked example of the uapi.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "kml_cli.h"

#include <linux/kml_sensor.h>
#include "kml_sensor_parse.h"

static const char *prog = "kml-sensor";
static const char *device = KML_SENSOR_DEVICE;
static int json;
static struct kml_sensor_info info;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--json] COMMAND [ARGS]\n"
		"\n"
		"  info                     channels, ranges, ABI version\n"
		"  read [CH]                latest reading of one channel, or all\n"
		"  watch [-c|--count N]     readings of all channels, every period\n"
		"  alarm set CH LOW HIGH    alarm outside [LOW, HIGH] degrees C (root)\n"
		"  alarm off CH             disable a channel's alarm (root)\n"
		"  alarm get [CH]           show alarm settings\n"
		"  wait [-t|--seconds S]    block until an alarm, print it (exit 3 on timeout)\n"
		"  period [MS]              show or set (root) the sampling period\n"
		"  inject CH VALUE|clear    hold a channel at VALUE degrees C (root)\n"
		"  reset                    back to defaults (root)\n"
		"\n"
		"  -j, --json               JSON output\n"
		"  -h, --help               this text, also `help`\n"
		"  -V, --version            the client's version\n"
		"Temperatures are degrees Celsius with up to 3 decimals, e.g. -3.25.\n"
		"KML_SENSOR_DEVICE overrides %s.\n", prog, KML_SENSOR_DEVICE);
}

/* One place turns the driver's errno into a sentence. */
static void ioctl_failed(const char *what)
{
	int e = errno;

	switch (e) {
	case EPERM:
		kml_die("%s needs root (CAP_SYS_ADMIN)", what);
	case EINVAL:
		kml_die("%s: invalid argument (channels 0..%u, %d.000..%d.000 C, period %u..%u ms)",
		    what, info.nchannels ? info.nchannels - 1 : 0,
		    KML_SENSOR_MIN_MC / 1000, KML_SENSOR_MAX_MC / 1000,
		    KML_SENSOR_PERIOD_MIN_MS, KML_SENSOR_PERIOD_MAX_MS);
	case ENOTTY:
		kml_die("%s: %s does not understand this request (module and client from different versions?)",
		    what, device);
	default:
		kml_die("%s: %s", what, strerror(e));
	}
}

static int open_device(int flags)
{
	int fd = open(device, flags | O_CLOEXEC);

	if (fd < 0) {
		if (errno == ENOENT)
			kml_die_not_loaded("kml_sensor", device);
		kml_die("cannot open %s: %s", device, strerror(errno));
	}
	if (ioctl(fd, KML_SENSOR_IOC_GET_INFO, &info))
		ioctl_failed("info");
	if (info.abi_version != KML_SENSOR_ABI_VERSION)
		kml_die("%s speaks ABI %u, this client ABI %u", device,
		    info.abi_version, KML_SENSOR_ABI_VERSION);
	return fd;
}

/*
 * The device, opened by the first command that needs it once its words
 * are checked: a usage error is one whether the module is loaded or not.
 */
static int dev_fd = -1;

static int dev(void)
{
	if (dev_fd < 0)
		dev_fd = open_device(O_RDONLY);
	return dev_fd;
}

/* A channel number's syntax: its range is the device's to tell. */
static uint32_t parse_channel(const char *s)
{
	uint32_t ch;

	if (kml_parse_uint(s, UINT32_MAX, &ch))
		kml_usage_error("bad channel '%s': give a channel number", s);
	return ch;
}

/* The device, and @ch (given as @s) one of its channels. */
static int dev_channel(uint32_t ch, const char *s)
{
	int fd = dev();

	if (ch >= info.nchannels)
		kml_die("bad channel '%s': the device has channels 0..%u", s,
		    info.nchannels - 1);
	return fd;
}

static int32_t parse_temp(const char *s)
{
	int32_t mc;

	if (kml_parse_celsius(s, &mc))
		kml_usage_error("bad temperature '%s': give degrees C, e.g. 21.5", s);
	return mc;
}

static const char *temp(int32_t mc)
{
	static char bufs[4][24];
	static int i;

	i = (i + 1) % 4;
	kml_format_celsius(mc, bufs[i], sizeof(bufs[i]));
	return bufs[i];
}

static void print_reading(const struct kml_sensor_reading *r, const char *sep)
{
	if (json)
		printf("%s{\"channel\":%u,\"value_mc\":%d,\"seq\":%" PRIu64
		       ",\"timestamp_ns\":%" PRIu64 "}", sep, r->channel,
		       r->value_mc, (uint64_t)r->seq, (uint64_t)r->timestamp_ns);
	else
		printf("probe%-3u %10s C   seq %-8" PRIu64 " t %" PRIu64 " ns\n",
		       r->channel, temp(r->value_mc), (uint64_t)r->seq,
		       (uint64_t)r->timestamp_ns);
}

static void read_all(int fd)
{
	struct kml_sensor_read_all all = { .flags = 0 };
	uint32_t i;

	if (ioctl(fd, KML_SENSOR_IOC_READ_ALL, &all))
		ioctl_failed("read");
	if (json)
		printf("[");
	for (i = 0; i < all.nchannels; i++)
		print_reading(&all.readings[i], i ? "," : "");
	if (json)
		printf("]\n");
}

static int cmd_info(int argc, char **argv)
{
	kml_operands(argc - 1, argv + 1, 0, 0);
	dev();
	if (json) {
		printf("{\"abi_version\":%u,\"channels\":%u,\"units\":\"millidegree_celsius\","
		       "\"min_mc\":%d,\"max_mc\":%d,\"period_min_ms\":%u,"
		       "\"period_max_ms\":%u,\"queue_len\":%u}\n",
		       info.abi_version, info.nchannels, info.min_mc, info.max_mc,
		       info.period_min_ms, info.period_max_ms, info.queue_len);
		return 0;
	}
	printf("device      %s (ABI %u)\n", device, info.abi_version);
	printf("channels    %u\n", info.nchannels);
	printf("range       %s .. %s C\n", temp(info.min_mc), temp(info.max_mc));
	printf("period      %u .. %u ms\n", info.period_min_ms, info.period_max_ms);
	printf("alarm queue %u records (each open file may fall this far behind)\n",
	       info.queue_len);
	return 0;
}

static int cmd_read(int argc, char **argv)
{
	struct kml_sensor_reading r = { 0 };

	argc--;	/* past the name */
	argv++;
	kml_operands(argc, argv, 0, 1);
	if (argc == 0) {
		read_all(dev());
		return 0;
	}
	r.channel = parse_channel(argv[0]);
	if (ioctl(dev_channel(r.channel, argv[0]), KML_SENSOR_IOC_READ, &r))
		ioctl_failed("read");
	print_reading(&r, "");
	if (json)
		printf("\n");
	return 0;
}

/* -t 5 or --seconds 5: @argv's value of option @s or @l, or NULL. */
static const char *option_value(int argc, char **argv, const char *s, const char *l)
{
	if (argc && (!strcmp(argv[0], s) || !strcmp(argv[0], l))) {
		if (argc < 2)
			kml_usage_error("option '%s' needs a value", argv[0]);
		kml_operands(argc - 2, argv + 2, 0, 0);
		return argv[1];
	}
	kml_operands(argc, argv, 0, 0);
	return NULL;
}

static int cmd_watch(int argc, char **argv)
{
	const char *v = option_value(argc - 1, argv + 1, "-c", "--count");
	long count = -1, n;
	uint32_t period;
	struct timespec ts;
	int fd;

	/* Strict: "2x" is refused, not read as 2 (kml_arg_number()). */
	if (v)
		count = (long)kml_arg_number(v, 1000000000, "count (1..1000000000)");
	if (!count)
		kml_usage_error("%s", "bad count '0': give a positive number");
	fd = dev();
	for (n = 0; count < 0 || n < count; n++) {
		if (ioctl(fd, KML_SENSOR_IOC_GET_PERIOD, &period))
			ioctl_failed("period");
		if (n) {
			ts.tv_sec = period / 1000;
			ts.tv_nsec = (long)(period % 1000) * 1000000;
			nanosleep(&ts, NULL);
		}
		read_all(fd);
		if (!json)
			printf("\n");
		kml_flush();
	}
	return 0;
}

static int cmd_alarm(int argc, char **argv)
{
	struct kml_sensor_alarm a = { 0 };
	uint32_t ch;
	int fd;

	argc--;	/* past the name */
	argv++;
	if (!argc)
		kml_usage_error("%s", "give set, off or get");
	if (!strcmp(argv[0], "set")) {
		kml_operands(argc - 1, argv + 1, 3, 3);
		a.channel = parse_channel(argv[1]);
		a.flags = KML_SENSOR_ALARM_ENABLED;
		a.low_mc = parse_temp(argv[2]);
		a.high_mc = parse_temp(argv[3]);
		if (a.low_mc > a.high_mc)
			kml_usage_error("LOW (%s) must not be above HIGH (%s)", argv[2], argv[3]);
		if (ioctl(dev_channel(a.channel, argv[1]), KML_SENSOR_IOC_SET_ALARM, &a))
			ioctl_failed("alarm set");
		return 0;
	}
	if (!strcmp(argv[0], "off")) {
		kml_operands(argc - 1, argv + 1, 1, 1);
		a.channel = parse_channel(argv[1]);
		fd = dev_channel(a.channel, argv[1]);
		if (ioctl(fd, KML_SENSOR_IOC_GET_ALARM, &a))
			ioctl_failed("alarm off");
		a.flags = 0;
		if (ioctl(fd, KML_SENSOR_IOC_SET_ALARM, &a))
			ioctl_failed("alarm off");
		return 0;
	}
	if (!strcmp(argv[0], "get")) {
		uint32_t first, last;

		kml_operands(argc - 1, argv + 1, 0, 1);
		if (argc == 2) {
			first = last = parse_channel(argv[1]);
			fd = dev_channel(first, argv[1]);
		} else {
			fd = dev();
			first = 0;
			last = info.nchannels - 1;
		}
		if (json)
			printf("[");
		for (ch = first; ch <= last; ch++) {
			a.channel = ch;
			if (ioctl(fd, KML_SENSOR_IOC_GET_ALARM, &a))
				ioctl_failed("alarm get");
			if (json)
				printf("%s{\"channel\":%u,\"enabled\":%s,\"low_mc\":%d,\"high_mc\":%d}",
				       ch == first ? "" : ",", ch,
				       a.flags & KML_SENSOR_ALARM_ENABLED ? "true" : "false",
				       a.low_mc, a.high_mc);
			else
				printf("probe%-3u %-4s %10s .. %s C\n", ch,
				       a.flags & KML_SENSOR_ALARM_ENABLED ? "on" : "off",
				       temp(a.low_mc), temp(a.high_mc));
		}
		if (json)
			printf("]\n");
		return 0;
	}
	kml_usage_error("unknown alarm command '%s': give set, off or get", argv[0]);
}

static const char *const zone_name[] = { "normal", "low", "high" };

static int cmd_wait(int argc, char **argv)
{
	const char *v = option_value(argc - 1, argv + 1, "-t", "--seconds");
	struct kml_sensor_event ev;
	struct pollfd p = { .fd = -1, .events = POLLIN };
	int timeout_ms = -1, r;
	ssize_t n;

	if (v) {
		uint32_t s;

		if (kml_parse_uint(v, 86400, &s))
			kml_usage_error("bad timeout '%s': give whole seconds, 0..86400", v);
		timeout_ms = (int)s * 1000;
	}
	p.fd = dev();
	r = poll(&p, 1, timeout_ms);
	if (r < 0)
		kml_die("poll: %s", strerror(errno));
	if (r == 0) {
		fprintf(stderr, "%s: no alarm within %d s\n", prog, timeout_ms / 1000);
		return 3;
	}
	n = read(p.fd, &ev, sizeof(ev));
	if (n != (ssize_t)sizeof(ev))
		kml_die("read: %s", n < 0 ? strerror(errno) : "short record");
	if (json)
		printf("{\"channel\":%u,\"value_mc\":%d,\"zone\":\"%s\",\"seq\":%" PRIu64
		       ",\"timestamp_ns\":%" PRIu64 ",\"lost\":%u}\n", ev.channel,
		       ev.value_mc, ev.kind < 3 ? zone_name[ev.kind] : "?",
		       (uint64_t)ev.seq, (uint64_t)ev.timestamp_ns, ev.lost);
	else
		printf("probe%u %s C: %s%s\n", ev.channel, temp(ev.value_mc),
		       ev.kind < 3 ? zone_name[ev.kind] : "?",
		       ev.lost ? " (alarms were lost before this one)" : "");
	return 0;
}

static int cmd_period(int argc, char **argv)
{
	uint32_t ms;

	argc--;	/* past the name */
	argv++;
	kml_operands(argc, argv, 0, 1);
	if (argc == 0) {
		if (ioctl(dev(), KML_SENSOR_IOC_GET_PERIOD, &ms))
			ioctl_failed("period");
		printf(json ? "{\"period_ms\":%u}\n" : "%u ms\n", ms);
		return 0;
	}
	if (kml_parse_uint(argv[0], UINT32_MAX, &ms))
		kml_usage_error("bad period '%s': give milliseconds", argv[0]);
	if (ioctl(dev(), KML_SENSOR_IOC_SET_PERIOD, &ms))
		ioctl_failed("period");
	return 0;
}

static int cmd_inject(int argc, char **argv)
{
	struct kml_sensor_inject in = { 0 };

	argc--;	/* past the name */
	argv++;
	kml_operands(argc, argv, 2, 2);
	in.channel = parse_channel(argv[0]);
	if (!strcmp(argv[1], "clear"))
		in.flags = KML_SENSOR_INJECT_CLEAR;
	else
		in.value_mc = parse_temp(argv[1]);
	if (ioctl(dev_channel(in.channel, argv[0]), KML_SENSOR_IOC_INJECT, &in))
		ioctl_failed("inject");
	return 0;
}

static int cmd_reset(int argc, char **argv)
{
	kml_operands(argc - 1, argv + 1, 0, 0);
	if (ioctl(dev(), KML_SENSOR_IOC_RESET))
		ioctl_failed("reset");
	return 0;
}

/* kml-sensor.1's COMMANDS, in short. */
static const struct kml_cmd cmds[] = {
	{ "info", "",
	  "The ABI version, the number of channels, the temperature and period\n"
	  "ranges, and how many alarm records an open file may fall behind.\n",
	  cmd_info },
	{ "read", "[CH]",
	  "The latest reading of channel CH, or of every channel (one snapshot).\n",
	  cmd_read },
	{ "watch", "[-c|--count COUNT]",
	  "The readings of every channel once per sampling period.\n"
	  "  -c, --count COUNT    stop after COUNT rounds (1..1000000000)\n",
	  cmd_watch },
	{ "alarm", "set CH LOW HIGH | off CH | get [CH]",
	  "  set CH LOW HIGH      alarm when CH leaves [LOW, HIGH] degrees C (root)\n"
	  "  off CH               disable CH's alarm, keeping its thresholds (root)\n"
	  "  get [CH]             each channel's alarm: on or off, and its thresholds\n",
	  cmd_alarm },
	{ "wait", "[-t|--seconds SECONDS]",
	  "Block until a channel changes its alarm zone and print that record.\n"
	  "  -t, --seconds SECONDS  give up after SECONDS (0..86400), exit status 3\n",
	  cmd_wait },
	{ "period", "[MS]",
	  "Show the sampling period, or set it to MS milliseconds (10..10000; root).\n",
	  cmd_period },
	{ "inject", "CH VALUE|clear",
	  "Hold channel CH at VALUE degrees C, or let it follow the simulation\n"
	  "again with clear (root).\n",
	  cmd_inject },
	{ "reset", "",
	  "Put the simulation, the thresholds and the period back to their\n"
	  "defaults (root).\n",
	  cmd_reset },
	{ NULL, NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *env = getenv("KML_SENSOR_DEVICE");
	const struct kml_cmd *cmd;
	int c, ret;

	kml_prog = prog;
	kml_cli_common(&argc, argv, &json, usage, cmds);
	if (env && *env)
		device = env;
	while ((c = getopt_long(argc, argv, "+:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			kml_bad_option(c, argv);
		}
	}
	if (optind >= argc)
		kml_usage_error("%s", "no command given");
	cmd = kml_find_cmd(cmds, argv[optind]);
	if (!cmd)
		kml_usage_error("unknown command '%s'", argv[optind]);
	/* Each command checks its words before it opens the device. */
	ret = cmd->run(argc - optind, argv + optind);
	if (dev_fd >= 0)
		close(dev_fd);
	return ret;
}

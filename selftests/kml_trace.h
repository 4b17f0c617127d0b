/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tracefs from a selftest: each test gets a trace instance of its own
 * (instances/<name>), with its own buffer, event switches, filters and
 * triggers, so it sees only what it enabled and leaves the top-level
 * buffer, and any other tool using it, alone.
 *
 *	struct kml_trace t;
 *	kml_trace_open(&t, "kml_sensor_fields");	// 0, or -ENODEV: no tracing
 *	kml_trace_set(&t, "events/kml_sensor/sample/enable", "1");
 *	... cause events ...
 *	char *text = kml_trace_get(&t, "trace");	// malloc'd
 *	kml_trace_line(text, "sample", 1)		// the 2nd sample's line
 *	kml_trace_field(line, "value_mc", &v)		// "value_mc=42000"
 *	kml_trace_close(&t);				// triggers off, rmdir
 */
#ifndef KML_TRACE_H
#define KML_TRACE_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define KML_TRACEFS "/sys/kernel/tracing"
#define KML_TRACE_MAX_TRIGGERS 8

struct kml_trace {
	char dir[256];
	/* triggers set through kml_trace_set(), removed by close */
	char trig_file[KML_TRACE_MAX_TRIGGERS][512];
	char trig_val[KML_TRACE_MAX_TRIGGERS][256];
	int ntrig;
};

/*
 * tracefs, mounted if it is not (our guest mounts only debugfs). The
 * directory exists exactly when the kernel has tracing: without it the
 * caller SKIPs; with it, a failure to mount is a failure.
 */
static inline int kml_tracefs(void)
{
	struct stat st;

	if (stat(KML_TRACEFS, &st))
		return -ENODEV;
	if (!access(KML_TRACEFS "/instances", F_OK))
		return 0;
	if (mount("nodev", KML_TRACEFS, "tracefs", 0, NULL) && errno != EBUSY)
		return -errno;
	return access(KML_TRACEFS "/instances", F_OK) ? -errno : 0;
}

static inline int kml_trace_write_path(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	ssize_t n;
	int err;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	err = n < 0 ? -errno : 0;
	close(fd);
	return err;
}

/* A fresh instance named @name (one left by a killed run is replaced). */
static inline int kml_trace_open(struct kml_trace *t, const char *name)
{
	int ret = kml_tracefs();

	memset(t, 0, sizeof(*t));
	if (ret)
		return ret;
	snprintf(t->dir, sizeof(t->dir), KML_TRACEFS "/instances/%s", name);
	rmdir(t->dir);
	return mkdir(t->dir, 0700) ? -errno : 0;
}

/*
 * Writes @val to @file of the instance: 0 or -errno (a bad filter or
 * trigger is -EINVAL). Triggers are remembered and removed by close:
 * an instance whose events have triggers cannot be removed. So one that
 * could not be remembered (too many, or too long) is not set: -ENOSPC.
 */
static inline int kml_trace_set(struct kml_trace *t, const char *file,
				const char *val)
{
	char path[512];
	size_t len = strlen(file);
	int trig = len > 8 && !strcmp(file + len - 8, "/trigger") &&
		   val[0] != '!';
	int ret;

	if (trig && (t->ntrig == KML_TRACE_MAX_TRIGGERS ||
		     strlen(val) + 2 > sizeof(t->trig_val[0])))
		return -ENOSPC;
	snprintf(path, sizeof(path), "%s/%s", t->dir, file);
	ret = kml_trace_write_path(path, val);
	if (!ret && trig) {
		snprintf(t->trig_file[t->ntrig], sizeof(t->trig_file[0]), "%s",
			 path);
		snprintf(t->trig_val[t->ntrig], sizeof(t->trig_val[0]), "!%s",
			 val);
		t->ntrig++;
	}
	return ret;
}

/* The whole of @file of the instance, NUL-terminated; NULL on error. */
static inline char *kml_trace_get(struct kml_trace *t, const char *file)
{
	size_t cap = 65536, len = 0;
	char path[512], *buf = malloc(cap), *nb;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", t->dir, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || !buf) {
		if (fd >= 0)
			close(fd);
		free(buf);
		return NULL;
	}
	while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
		len += n;
		if (cap - len < 4096) {
			nb = realloc(buf, cap * 2);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
	}
	close(fd);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	buf[len] = '\0';
	return buf;
}

/* Clears the instance's buffer. */
static inline int kml_trace_clear(struct kml_trace *t)
{
	return kml_trace_set(t, "trace", "");
}

/*
 * The @nth (from 0) line of @text recording @event (": event: " in the
 * trace file's format), as a pointer into @text; NULL if there are fewer.
 */
static inline const char *kml_trace_line(const char *text, const char *event,
					 int nth)
{
	char pat[128];
	const char *p = text, *hit, *bol;

	snprintf(pat, sizeof(pat), ": %s: ", event);
	while ((hit = strstr(p, pat))) {
		for (bol = hit; bol > text && bol[-1] != '\n'; bol--)
			;
		if (*bol != '#' && nth-- == 0)
			return bol;
		p = hit + strlen(pat);
	}
	return NULL;
}

/* How many lines of @text record @event. */
static inline int kml_trace_count(const char *text, const char *event)
{
	int n = 0;

	while (kml_trace_line(text, event, n))
		n++;
	return n;
}

/*
 * The value of "key=value" on the line starting at @line: its text
 * (up to a blank, at most @len - 1 bytes) in @val. 0, or -ENOENT (and
 * @val empty: a caller that checks it after a failure reads "").
 */
static inline int kml_trace_str(const char *line, const char *key, char *val,
				size_t len)
{
	const char *eol = strchr(line, '\n'), *p = line;
	size_t klen = strlen(key), n = 0;

	val[0] = '\0';
	if (!eol)
		eol = line + strlen(line);
	while ((p = strstr(p, key)) && p < eol) {
		if ((p == line || p[-1] == ' ') && p[klen] == '=') {
			p += klen + 1;
			while (p + n < eol && p[n] != ' ' && n + 1 < len)
				n++;
			memcpy(val, p, n);
			val[n] = '\0';
			return 0;
		}
		p += klen;
	}
	return -ENOENT;
}

/* The same, as a number (decimal, or 0x hex): 0, or -ENOENT / -EINVAL. */
static inline int kml_trace_field(const char *line, const char *key,
				  long long *v)
{
	char val[64], *end;

	*v = 0;
	if (kml_trace_str(line, key, val, sizeof(val)))
		return -ENOENT;
	errno = 0;
	*v = strtoll(val, &end, 0);
	if (errno == ERANGE)	/* a u64 above LLONG_MAX: keep its bits */
		*v = (long long)strtoull(val, &end, 0);
	return end == val || *end ? -EINVAL : 0;
}

/* Whether the kernel lists @what ("system:event\n") among its events. */
static inline int kml_trace_listed(const char *what)
{
	struct kml_trace top = { .dir = KML_TRACEFS };
	char *all = kml_trace_get(&top, "available_events");
	int found = all && strstr(all, what);

	free(all);
	return found;
}

/*
 * Bytes of an event's record that no field covers, from the text of its
 * format file: holes between fields, and the padding after the last one
 * up to the record's alignment. TP_fast_assign() writes fields only, so
 * such bytes keep what the ring buffer held before and reach raw readers
 * (perf, BPF). -1 if @format lists no field.
 */
static inline int kml_trace_format_hidden(const char *format)
{
	unsigned int end = 0, align = 1, hidden = 0, off, size, elem, count;
	const char *p = format, *o, *b;

	while ((p = strstr(p, "field:"))) {
		o = strstr(p, "offset:");
		if (!o || sscanf(o, "offset:%u; size:%u;", &off, &size) != 2)
			return -1;
		/* an array's alignment is its element's; __data_loc is a u32 */
		elem = size;
		b = memchr(p, '[', o - p);
		if (strstr(p, "__data_loc") && strstr(p, "__data_loc") < o)
			elem = 4;
		else if (b && sscanf(b, "[%u]", &count) == 1 && count)
			elem = size / count;
		if (elem > 8)
			elem = 8;
		if (elem > align)
			align = elem;
		if (off > end)
			hidden += off - end;
		if (off + size > end)
			end = off + size;
		p = o;
	}
	return end ? (int)(hidden + (align - end % align) % align) : -1;
}

/* kml_trace_format_hidden() of SYSTEM:EVENT, or -errno. */
static inline int kml_trace_hidden_bytes(const char *system, const char *event)
{
	struct kml_trace top = { .dir = KML_TRACEFS };
	char file[128];
	char *text;
	int n = kml_tracefs();

	if (n)
		return n;
	snprintf(file, sizeof(file), "events/%s/%s/format", system, event);
	text = kml_trace_get(&top, file);
	if (!text)
		return -ENOENT;
	n = kml_trace_format_hidden(text);
	free(text);
	return n;
}

/* Turns the instance's events and triggers off and removes it. */
static inline int kml_trace_close(struct kml_trace *t)
{
	int i;

	if (!t->dir[0])
		return 0;
	for (i = t->ntrig - 1; i >= 0; i--)
		kml_trace_write_path(t->trig_file[i], t->trig_val[i]);
	t->ntrig = 0;
	kml_trace_set(t, "events/enable", "0");
	if (rmdir(t->dir))
		return -errno;
	t->dir[0] = '\0';
	return 0;
}

#endif /* KML_TRACE_H */

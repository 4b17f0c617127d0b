/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the kmodlab selftests: loading modules straight with
 * finit_module(2)/delete_module(2) (no dependency on kmod's tools), and
 * running a client. KMODLAB_KO_DIR names the build's module tree and
 * KMODLAB_BIN the clients' directory (scripts/guest/selftests.sh sets both).
 */
#ifndef KML_SELFTEST_H
#define KML_SELFTEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * The harness gives a test without TEST_F_TIMEOUT 30 s, which a test that
 * runs a client a dozen times needs on a loaded 2-core machine under
 * emulation (nl.client_ct_words_round_trip timed out at 30.2 s in a
 * Debian 13 guest beside two kernel builds): a verdict must not depend on
 * the host's speed. The harness's macros read this where a test is
 * defined, so every test of ours gets 300 s; a hang still ends.
 */
#ifdef TEST_TIMEOUT_DEFAULT
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 300
#endif

static inline const char *kml_ko_path(const char *rel)
{
	static char path[4096];
	const char *dir = getenv("KMODLAB_KO_DIR");

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : ".", rel);
	return path;
}

/* Unloads @name, waiting out a brief busy period; 0 if it is not loaded. */
static inline int kml_unload(const char *name)
{
	for (int i = 0; i < 100; i++) {
		if (!syscall(SYS_delete_module, name, O_NONBLOCK) || errno == ENOENT)
			return 0;
		if (errno != EAGAIN && errno != EBUSY)
			return -errno;
		usleep(20000);
	}
	return -EBUSY;
}

/* Loads modules/<rel> with @params: 0 or -errno (-EEXIST if loaded). */
static inline int kml_load(const char *rel, const char *params)
{
	int fd = open(kml_ko_path(rel), O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
	close(fd);
	return ret;
}

/* Like kml_load(), but an already loaded module is fine. */
static inline int kml_load_once(const char *rel, const char *params)
{
	int ret = kml_load(rel, params);

	return ret == -EEXIST ? 0 : ret;
}

/* An address that is never mapped, hidden from the compiler's checks. */
static inline void *kml_bad_ptr(void)
{
	static volatile unsigned long p = 16;

	return (void *)p;
}

/* Runs a shell command; its output (truncated) in @out, its exit status. */
static inline int kml_run(const char *cmd, char *out, size_t outlen)
{
	FILE *p = popen(cmd, "r");
	size_t n;
	int st;

	if (!p)
		return -1;
	n = fread(out, 1, outlen - 1, p);
	out[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Runs KMODLAB_BIN/<client> with printf-style arguments, stderr included. */
#define KML_CLIENT(client, fmt, ...) ({					\
	const char *bin_ = getenv("KMODLAB_BIN");			\
	snprintf(cmd, sizeof(cmd), "%s/" client " " fmt " 2>&1",	\
		 bin_ ? bin_ : ".", ##__VA_ARGS__);			\
	kml_run(cmd, out, sizeof(out));					\
})

/*
 * The same with its standard output on /dev/full (stderr kept), at most
 * 60 s: a client must say it could not write and exit 1, not 0, and a
 * loop must stop (timeout's 124 if it does not).
 */
#define KML_CLIENT_FULL(client, fmt, ...) ({				\
	const char *bin_ = getenv("KMODLAB_BIN");			\
	snprintf(cmd, sizeof(cmd), "timeout 60 %s/" client " " fmt	\
		 " 2>&1 >/dev/full", bin_ ? bin_ : ".", ##__VA_ARGS__);	\
	kml_run(cmd, out, sizeof(out));					\
})

/*
 * Appends to @log (NUL-terminated, @len bytes of room) the kernel log's
 * records read from @fd (/dev/kmsg, O_NONBLOCK) since the last call, as
 * "<level> <text>\n" lines.
 */
static inline void kml_kmsg_drain(int fd, char *log, size_t len)
{
	size_t used = strlen(log);
	char rec[8192];

	for (;;) {
		ssize_t n = read(fd, rec, sizeof(rec) - 1);
		char *text, *nl;

		if (n < 0 && errno == EPIPE)
			continue;	/* records overwritten before we read them */
		if (n <= 0)
			break;
		rec[n] = '\0';
		/* "prefix,seq,usec,flags;text\n" plus continuation lines */
		text = strchr(rec, ';');
		if (!text)
			continue;
		nl = strchr(++text, '\n');
		if (nl)
			*nl = '\0';
		if (used < len)
			used += snprintf(log + used, len - used, "%d %s\n",
					 atoi(rec) & 7, text);
	}
}

#endif /* KML_SELFTEST_H */

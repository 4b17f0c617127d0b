/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Allocation-failure injection for the kmodlab selftests.
 *
 * A kernel built with CONFIG_FAULT_INJECTION has a per-thread file,
 * /proc/thread-self/fail-nth: writing N to it makes the N-th allocation
 * check (kmalloc with FAILSLAB, alloc_pages with FAIL_PAGE_ALLOC) of that
 * thread fail, once. Reading it back gives what is left of N: 0 means the
 * failure was injected, anything else that the call made fewer than N
 * allocations. A test walks a system call's allocations like this (the
 * way syzkaller and the kernel's own selftests reach error paths):
 *
 *	for (n = 1; n <= KML_FAULT_MAX; n++) {
 *		kml_fault_arm(&f, n);
 *		ret = the_call(...);
 *		if (!kml_fault_fired(&f))
 *			break;		// it made fewer than n allocations
 *		// the n-th failed: expect a clean error and no change
 *	}
 *
 * Between arming and the call, nothing else may allocate: no printf, no
 * open(). The file is opened once, before the walk, for the same reason.
 */
#ifndef KML_FAULT_H
#define KML_FAULT_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A walk that gets here is stuck: no call of ours makes that many. */
#define KML_FAULT_MAX 5000

#define KML_FAULT_KNOBS 6

struct kml_fault {
	int fd;			/* /proc/thread-self/fail-nth */
	/* The injectors' settings before kml_fault_init(), put back on exit. */
	char saved[KML_FAULT_KNOBS][16];
};

static const char *const kml_fault_knobs[KML_FAULT_KNOBS][2] = {
	{ "/sys/kernel/debug/failslab/ignore-gfp-wait", "N" },
	{ "/sys/kernel/debug/failslab/verbose", "0" },
	{ "/sys/kernel/debug/fail_page_alloc/ignore-gfp-wait", "N" },
	{ "/sys/kernel/debug/fail_page_alloc/ignore-gfp-highmem", "N" },
	{ "/sys/kernel/debug/fail_page_alloc/min-order", "0" },
	{ "/sys/kernel/debug/fail_page_alloc/verbose", "0" },
};

static inline int kml_fault_read_knob(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return n ? -errno : -EIO;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static inline int kml_fault_knob(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* Closes the file and puts the injectors' settings back. */
static inline void kml_fault_exit(struct kml_fault *f)
{
	size_t i;

	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	for (i = 0; i < KML_FAULT_KNOBS; i++)
		if (f->saved[i][0])
			kml_fault_knob(kml_fault_knobs[i][0], f->saved[i]);
	memset(f->saved, 0, sizeof(f->saved));
}

/* Logged when injection starts; must match scripts/vm-run.sh. */
#define KML_FAULT_MARK "kmodlab: allocation-failure injection armed"

/*
 * Opens this thread's fail-nth file and sets the injectors so that every
 * allocation can be failed: by default failslab and fail_page_alloc skip
 * GFP_KERNEL (sleeping) requests, fail_page_alloc skips order 0 and
 * highmem, and each injected failure prints a stack trace (slow on a
 * serial console). These settings are system-wide: kml_fault_exit()
 * puts back what it found (on a user's own test machine too). Returns 0,
 * or -errno when the kernel cannot inject (the caller SKIPs: a stock
 * kernel has no CONFIG_FAULT_INJECTION).
 */
static inline int kml_fault_init(struct kml_fault *f)
{
	int ret = 0;
	size_t i;

	memset(f, 0, sizeof(*f));
	f->fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	if (f->fd < 0)
		return -errno;
	for (i = 0; i < KML_FAULT_KNOBS && !ret; i++)
		ret = kml_fault_read_knob(kml_fault_knobs[i][0], f->saved[i],
					  sizeof(f->saved[i]));
	for (i = 0; i < KML_FAULT_KNOBS && !ret; i++)
		ret = kml_fault_knob(kml_fault_knobs[i][0], kml_fault_knobs[i][1]);
	if (ret)
		kml_fault_exit(f);
	else	/* scripts/vm-run.sh: what follows may be the kernel's reaction */
		kml_fault_knob("/dev/kmsg", KML_FAULT_MARK "\n");
	return ret;
}

/* The next system calls' @n-th allocation will fail (0 disarms). */
static inline int kml_fault_arm(struct kml_fault *f, unsigned int n)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%u", n);

	return pwrite(f->fd, buf, len, 0) == len ? 0 : -errno;
}

/*
 * Whether the armed failure was injected; disarms in any case, so that a
 * call that made fewer allocations leaves nothing armed behind it.
 */
static inline int kml_fault_fired(struct kml_fault *f)
{
	char buf[16] = "";
	ssize_t n = pread(f->fd, buf, sizeof(buf) - 1, 0);

	kml_fault_arm(f, 0);
	return n > 0 && buf[0] == '0';
}

#endif /* KML_FAULT_H */

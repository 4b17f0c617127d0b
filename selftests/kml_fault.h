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

/* The stack filter's range, set only by kml_fault_modules_only(). */
#define KML_FAULT_RANGE 4

struct kml_fault {
	int fd;			/* /proc/thread-self/fail-nth */
	/* The injectors' settings before kml_fault_init(), put back on exit. */
	char saved[KML_FAULT_KNOBS][16];
	char saved_range[KML_FAULT_RANGE][24];
};

static const char *const kml_fault_knobs[KML_FAULT_KNOBS][2] = {
	{ "/sys/kernel/debug/failslab/ignore-gfp-wait", "N" },
	{ "/sys/kernel/debug/failslab/verbose", "0" },
	{ "/sys/kernel/debug/fail_page_alloc/ignore-gfp-wait", "N" },
	{ "/sys/kernel/debug/fail_page_alloc/ignore-gfp-highmem", "N" },
	{ "/sys/kernel/debug/fail_page_alloc/min-order", "0" },
	{ "/sys/kernel/debug/fail_page_alloc/verbose", "0" },
};

static const char *const kml_fault_range[KML_FAULT_RANGE] = {
	"/sys/kernel/debug/failslab/require-start",
	"/sys/kernel/debug/failslab/require-end",
	"/sys/kernel/debug/fail_page_alloc/require-start",
	"/sys/kernel/debug/fail_page_alloc/require-end",
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
	for (i = 0; i < KML_FAULT_RANGE; i++)
		if (f->saved_range[i][0])
			kml_fault_knob(kml_fault_range[i], f->saved_range[i]);
	memset(f->saved, 0, sizeof(f->saved));
	memset(f->saved_range, 0, sizeof(f->saved_range));
}

/* ULONG_MAX of a 64-bit kernel, as the debugfs files take it */
#define KML_FAULT_END "18446744073709551615"

/*
 * Sets the stack filter's range to [@start, @end) on both injectors,
 * saving what was there the first time (kml_fault_exit() puts it back).
 */
static inline int kml_fault_set_range(struct kml_fault *f, const char *start,
				      const char *end)
{
	int ret = 0;
	size_t i;

	for (i = 0; i < KML_FAULT_RANGE && !ret && !f->saved_range[0][0]; i++)
		ret = kml_fault_read_knob(kml_fault_range[i], f->saved_range[i],
					  sizeof(f->saved_range[i]));
	for (i = 0; i < KML_FAULT_RANGE && !ret; i++)
		ret = kml_fault_knob(kml_fault_range[i], i % 2 ? end : start);
	return ret;
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
	/* every allocation, even if a test that died left a narrower range */
	if (!ret && !access(kml_fault_range[0], W_OK))
		ret = kml_fault_set_range(f, "0", KML_FAULT_END);
	if (ret)
		kml_fault_exit(f);
	else	/* scripts/vm-run.sh: what follows may be the kernel's reaction */
		kml_fault_knob("/dev/kmsg", KML_FAULT_MARK "\n");
	return ret;
}

/*
 * Counts only the allocations made with a module's code on the stack
 * (CONFIG_FAULT_INJECTION_STACKTRACE_FILTER's require-start/end, which
 * fail-nth honours on 6.12 and 7.3): a walk of finit_module() or of a new
 * namespace then fails what our init and pernet code allocate, directly
 * or through the kernel functions they call, and skips the hundreds of
 * allocations the loader or the other subsystems make on their own
 * (minutes per walk on a KASAN kernel, and not our error paths). On
 * x86-64 the modules live above the kernel image, so the range is from
 * the image's end (_end in /proc/kallsyms) up. Returns 0; -EOPNOTSUPP
 * when the kernel has no stack filter (the walk then goes over every
 * allocation, slower and as right, as on a kernel whose fail-nth ignores
 * the range); -ENOENT when kallsyms hides the addresses.
 */
/*
 * The address of kernel symbol @name and of the next symbol above it
 * (@next, 0 if none), from /proc/kallsyms. -EOPNOTSUPP if the kernel has
 * no stack filter, -ENOENT if no such symbol or kptr_restrict hides them.
 */
static inline int kml_fault_symbol(const char *name, unsigned long long *addr,
				   unsigned long long *next)
{
	unsigned long long a, found = 0, above = 0;
	char line[256], sym[128], type;
	FILE *ksyms;

	if (access(kml_fault_range[0], W_OK))
		return errno == ENOENT ? -EOPNOTSUPP : -errno;
	ksyms = fopen("/proc/kallsyms", "re");
	if (!ksyms)
		return -errno;
	while (fgets(line, sizeof(line), ksyms))
		if (sscanf(line, "%llx %c %127s", &a, &type, sym) == 3 &&
		    !strchr(line, '[') && !found && !strcmp(sym, name))
			found = a;
	rewind(ksyms);
	while (found && fgets(line, sizeof(line), ksyms))
		if (sscanf(line, "%llx %c %127s", &a, &type, sym) == 3 &&
		    a > found && (!above || a < above))
			above = a;
	fclose(ksyms);
	/* 0: kptr_restrict shows every address as 0 */
	if (found < 0xffff800000000000ULL)
		return -ENOENT;
	*addr = found;
	*next = above;
	return 0;
}

static inline int kml_fault_modules_only(struct kml_fault *f)
{
	unsigned long long end = 0, next = 0;
	char start[24];
	int ret = kml_fault_symbol("_end", &end, &next);

	if (ret)
		return ret;
	snprintf(start, sizeof(start), "%llu", end);
	return kml_fault_set_range(f, start, KML_FAULT_END);
}

/*
 * Counts only the allocations made with the kernel function @func on the
 * stack, to walk the failures of one step of the core that our code must
 * survive (a later pernet init failing after ours succeeded). Returns as
 * kml_fault_modules_only().
 */
static inline int kml_fault_only_under(struct kml_fault *f, const char *func)
{
	unsigned long long addr = 0, next = 0;
	char start[24], end[24];
	int ret = kml_fault_symbol(func, &addr, &next);

	if (ret)
		return ret;
	if (!next)
		return -ENOENT;
	snprintf(start, sizeof(start), "%llu", addr);
	snprintf(end, sizeof(end), "%llu", next);
	return kml_fault_set_range(f, start, end);
}

/*
 * In a test: the range must be set, unless this kernel has no stack
 * filter (then the walk goes over everything: slower, as right).
 */
#define KML_FAULT_RANGE_OR_ALL(call) do {					\
	int ret_ = (call);							\
										\
	if (ret_ == -EOPNOTSUPP)						\
		TH_LOG("no stack filter here: the walk covers the kernel's own allocations too"); \
	else									\
		ASSERT_EQ(0, ret_) TH_LOG(#call ": %s", strerror(-ret_));	\
} while (0)

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

// SPDX-License-Identifier: GPL-2.0
/*
 * Selftests for kml_hello, lab "hello"'s first module, run as root inside
 * the test guest (scripts/guest/selftests.sh sets KMODLAB_KO_DIR).
 *
 * What a module prints is its behaviour here: the tests read the kernel
 * log through /dev/kmsg, from where it ended before each load, so older
 * messages never count. modinfo's fields come straight from the .ko's
 * .modinfo section, so no tool is needed.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "../kml_selftest.h"
#include "../kml_fault.h"

#define KO	"modules/kml_hello/kml_hello.ko"
#define SYSMOD	"/sys/module/kml_hello"
#define PARAMS	SYSMOD "/parameters/"
#define LOGLEN	65536

/*
 * kml_hello's lines in @log at level @maxlevel or more urgent that
 * contain @needle, case ignored.
 */
static int count_lines(const char *log, const char *needle, int maxlevel)
{
	const char *line = log;
	char buf[8192];
	int n = 0;

	while (*line) {
		const char *end = strchr(line, '\n');
		size_t l = end ? (size_t)(end - line) : strlen(line);

		snprintf(buf, sizeof(buf), "%.*s", (int)l, line);
		if (atoi(buf) <= maxlevel && !strncmp(buf + 2, "kml_hello: ", 11) &&
		    strcasestr(buf + 13, needle))
			n++;
		line += l + (end ? 1 : 0);
	}
	return n;
}

/* The contents of sysfs file @path (at most @len - 1 bytes), or "" if none. */
static const char *read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	return buf;
}

/* Writes @val to sysfs file @path: 0 or -errno. */
static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) != (ssize_t)strlen(val))
		ret = -errno;
	close(fd);
	return ret;
}

static int loaded(void)
{
	return access(SYSMOD, F_OK) == 0;
}

/* The permission bits of @path, or -1. */
static int mode_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : (int)(st.st_mode & 07777);
}

/*
 * The @nth (from 0) "@key=value" string of the .modinfo section of the
 * module file @ko, copied to @out; 0, or -1 if there is none. The .ko is
 * a relocatable ELF64 object whatever this program was built as.
 */
static int modinfo(const char *ko, const char *key, int nth, char *out, size_t len)
{
	FILE *f = fopen(ko, "rb");
	const Elf64_Shdr *sh;
	const Elf64_Ehdr *eh;
	const char *names;
	char *img = NULL;
	size_t klen = strlen(key);
	long size;
	int ret = -1;

	if (!f)
		return -1;
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < (long)sizeof(*eh) ||
	    fseek(f, 0, SEEK_SET) || !(img = malloc(size)) ||
	    fread(img, 1, size, f) != (size_t)size)
		goto out;
	eh = (const Elf64_Ehdr *)img;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(*sh) > (uint64_t)size ||
	    eh->e_shstrndx >= eh->e_shnum)
		goto out;
	sh = (const Elf64_Shdr *)(img + eh->e_shoff);
	names = img + sh[eh->e_shstrndx].sh_offset;
	for (int i = 0; i < eh->e_shnum; i++) {
		const char *p, *end;

		if (strcmp(names + sh[i].sh_name, ".modinfo") ||
		    sh[i].sh_offset + sh[i].sh_size > (uint64_t)size)
			continue;
		p = img + sh[i].sh_offset;
		end = p + sh[i].sh_size;
		/* NUL-separated "key=value" strings, maybe padded with NULs */
		for (; p < end; p += strnlen(p, end - p) + 1) {
			if (strncmp(p, key, klen) || p[klen] != '=' || nth--)
				continue;
			snprintf(out, len, "%.*s", (int)strnlen(p + klen + 1, end - p - klen - 1),
				 p + klen + 1);
			ret = 0;
			break;
		}
	}
out:
	free(img);
	fclose(f);
	return ret;
}

/* The description modinfo gives parameter @name ("parm=name:description"). */
static int parm_desc(const char *name, char *out, size_t len)
{
	char v[512];
	size_t l = strlen(name);

	for (int i = 0; !modinfo(kml_ko_path(KO), "parm", i, v, sizeof(v)); i++)
		if (!strncmp(v, name, l) && v[l] == ':') {
			snprintf(out, len, "%s", v + l + 1);
			return 0;
		}
	return -1;
}

FIXTURE(hello) {
	int kmsg;
	char *log;
};

FIXTURE_SETUP(hello)
{
	ASSERT_EQ(0, kml_unload("kml_hello"));
	self->log = calloc(1, LOGLEN);
	ASSERT_NE(NULL, self->log);
	/* From the end of the log: only what is logged from now on counts. */
	self->kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ASSERT_GE(self->kmsg, 0);
	ASSERT_GE(lseek(self->kmsg, 0, SEEK_END), 0);
}

FIXTURE_TEARDOWN(hello)
{
	kml_unload("kml_hello");
	close(self->kmsg);
	free(self->log);
}

#define DRAIN() kml_kmsg_drain(self->kmsg, self->log, LOGLEN)
#define CLEAR() (self->log[0] = '\0')

/* Step 1: init greets once by default, exit says goodbye once. */
TEST_F(hello, load_unload_messages)
{
	char buf[64];

	ASSERT_EQ(0, kml_load(KO, ""));
	EXPECT_TRUE(loaded());
	EXPECT_STREQ("live\n", read_file(SYSMOD "/initstate", buf, sizeof(buf)));
	DRAIN();
	EXPECT_EQ(1, count_lines(self->log, "Hello, world!", 7)) TH_LOG("log:\n%s", self->log);
	EXPECT_EQ(0, count_lines(self->log, "goodbye", 7));
	CLEAR();
	ASSERT_EQ(0, kml_unload("kml_hello"));
	EXPECT_FALSE(loaded());
	DRAIN();
	EXPECT_EQ(1, count_lines(self->log, "Goodbye, world!", 7)) TH_LOG("log:\n%s", self->log);
	EXPECT_EQ(0, count_lines(self->log, "Hello", 7));
}

/* Step 1: the identity modinfo prints. */
TEST_F(hello, modinfo_fields)
{
	char v[512];

	ASSERT_EQ(0, modinfo(kml_ko_path(KO), "license", 0, v, sizeof(v)))
		TH_LOG("no .modinfo in %s?", kml_ko_path(KO));
	EXPECT_STREQ("GPL", v);
	ASSERT_EQ(0, modinfo(kml_ko_path(KO), "author", 0, v, sizeof(v)))
		TH_LOG("no MODULE_AUTHOR()");
	EXPECT_NE(0, strlen(v));
	ASSERT_EQ(0, modinfo(kml_ko_path(KO), "description", 0, v, sizeof(v)))
		TH_LOG("no MODULE_DESCRIPTION()");
	EXPECT_NE(0, strlen(v));
	ASSERT_EQ(0, modinfo(kml_ko_path(KO), "name", 0, v, sizeof(v)));
	EXPECT_STREQ("kml_hello", v);
}

/* Step 2: parameters set at load are used, and shown read-only in sysfs. */
TEST_F(hello, parameters_in_sysfs)
{
	char buf[128];

	ASSERT_EQ(0, kml_load(KO, "greeting=\"Good morning\" count=3"));
	EXPECT_STREQ("Good morning\n", read_file(PARAMS "greeting", buf, sizeof(buf)));
	EXPECT_STREQ("3\n", read_file(PARAMS "count", buf, sizeof(buf)));
	EXPECT_EQ(0444, mode_of(PARAMS "greeting"));
	EXPECT_EQ(0444, mode_of(PARAMS "count"));
	/* Read-only means read-only for root as well. */
	EXPECT_EQ(-EACCES, write_file(PARAMS "count", "5"));
	EXPECT_STREQ("3\n", read_file(PARAMS "count", buf, sizeof(buf)));
	DRAIN();
	EXPECT_EQ(3, count_lines(self->log, "Good morning, world!", 7))
		TH_LOG("log:\n%s", self->log);
	EXPECT_EQ(0, count_lines(self->log, "Hello", 7));
	ASSERT_EQ(0, kml_unload("kml_hello"));

	/* Without parameters, the defaults. */
	ASSERT_EQ(0, kml_load(KO, ""));
	EXPECT_STREQ("Hello\n", read_file(PARAMS "greeting", buf, sizeof(buf)));
	EXPECT_STREQ("1\n", read_file(PARAMS "count", buf, sizeof(buf)));
}

/* Step 2: modinfo describes the parameters and their types. */
TEST_F(hello, parameters_in_modinfo)
{
	static const char *const want[][2] = {
		{ "greeting", "greeting:charp" },
		{ "count", "count:int" },
	};
	char v[512];

	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, parm_desc(want[i][0], v, sizeof(v)))
			TH_LOG("no MODULE_PARM_DESC(%s, ...)", want[i][0]);
		EXPECT_NE(0, strlen(v));
	}
	/* parmtype entries, in whatever order */
	for (int i = 0; i < 2; i++) {
		int found = 0;

		for (int k = 0; !modinfo(kml_ko_path(KO), "parmtype", k, v, sizeof(v)); k++)
			found |= !strcmp(v, want[i][1]);
		EXPECT_TRUE(found) TH_LOG("no parmtype %s", want[i][1]);
	}
}

/* Step 3: values the kernel can parse but the module must refuse. */
TEST_F(hello, bad_parameters_refused)
{
	static const char *const bad[] = {
		"count=0", "count=11", "count=-1", "greeting=", "count=2 greeting=",
	};

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int ret;

		CLEAR();
		ret = kml_load(KO, bad[i]);
		EXPECT_EQ(-EINVAL, ret) TH_LOG("insmod kml_hello.ko %s", bad[i]);
		EXPECT_FALSE(loaded()) TH_LOG("%s", bad[i]);
		if (!ret)
			kml_unload("kml_hello");
		DRAIN();
		/* ...saying why, at error level, and without any greeting. */
		EXPECT_LE(1, count_lines(self->log, "", 3))
			TH_LOG("%s: no pr_err() in the log:\n%s", bad[i], self->log);
		EXPECT_EQ(0, count_lines(self->log, "world", 7)) TH_LOG("%s", bad[i]);
	}
	/* What the kernel cannot parse it refuses itself, before init. */
	EXPECT_EQ(-EINVAL, kml_load(KO, "count=three"));
	EXPECT_FALSE(loaded());
	/* The limits themselves are fine. */
	EXPECT_EQ(0, kml_load(KO, "count=1"));
	EXPECT_EQ(0, kml_unload("kml_hello"));
	EXPECT_EQ(0, kml_load(KO, "count=10 greeting=Hi"));
	EXPECT_TRUE(loaded());
}

/* Step 4: root changes goodbyes in sysfs; unloading uses the new value. */
TEST_F(hello, writable_parameter)
{
	char buf[64];

	ASSERT_EQ(0, kml_load(KO, ""));
	EXPECT_EQ(0644, mode_of(PARAMS "goodbyes"));
	EXPECT_STREQ("1\n", read_file(PARAMS "goodbyes", buf, sizeof(buf)));
	ASSERT_EQ(0, write_file(PARAMS "goodbyes", "3\n"));
	EXPECT_STREQ("3\n", read_file(PARAMS "goodbyes", buf, sizeof(buf)));
	DRAIN();
	CLEAR();
	ASSERT_EQ(0, kml_unload("kml_hello"));
	DRAIN();
	EXPECT_EQ(3, count_lines(self->log, "Goodbye, world!", 7)) TH_LOG("log:\n%s", self->log);

	/* The same parameter on the insmod command line. */
	ASSERT_EQ(0, kml_load(KO, "goodbyes=2"));
	EXPECT_STREQ("2\n", read_file(PARAMS "goodbyes", buf, sizeof(buf)));
	CLEAR();
	ASSERT_EQ(0, kml_unload("kml_hello"));
	DRAIN();
	EXPECT_EQ(2, count_lines(self->log, "Goodbye, world!", 7)) TH_LOG("log:\n%s", self->log);
	/* ...and described for modinfo. */
	ASSERT_EQ(0, parm_desc("goodbyes", buf, sizeof(buf)));
	EXPECT_NE(0, strlen(buf));
}

/* Step 4: the set callback refuses bad values, in sysfs and at insmod. */
TEST_F(hello, writable_parameter_validates)
{
	static const char *const bad[] = { "0", "11", "abc", "", "-1" };
	char buf[64];

	ASSERT_EQ(0, kml_load(KO, "goodbyes=4"));
	ASSERT_STREQ("4\n", read_file(PARAMS "goodbyes", buf, sizeof(buf)));
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (!bad[i][0])
			continue;	/* an empty write() never reaches the module */
		EXPECT_EQ(-EINVAL, write_file(PARAMS "goodbyes", bad[i])) TH_LOG("'%s'", bad[i]);
		EXPECT_STREQ("4\n", read_file(PARAMS "goodbyes", buf, sizeof(buf)));
	}
	ASSERT_EQ(0, kml_unload("kml_hello"));
	EXPECT_EQ(-EINVAL, kml_load(KO, "goodbyes=0"));
	EXPECT_FALSE(loaded());
	EXPECT_EQ(-EINVAL, kml_load(KO, "goodbyes=11"));
	EXPECT_FALSE(loaded());
	EXPECT_EQ(0, kml_load(KO, "goodbyes=10"));
}

/* Not graded (true of any out-of-tree module): the 'O' taint. */
TEST_F(hello, taints_out_of_tree)
{
	char buf[64];
	unsigned long long tainted;

	ASSERT_EQ(0, kml_load(KO, ""));
	EXPECT_NE(NULL, strchr(read_file(SYSMOD "/taint", buf, sizeof(buf)), 'O'))
		TH_LOG("taint '%s'", buf);
	tainted = strtoull(read_file("/proc/sys/kernel/tainted", buf, sizeof(buf)), NULL, 10);
	EXPECT_NE(0, tainted & (1ULL << 12)) TH_LOG("tainted %llu", tainted);
}

/* Not graded: the errors insmod and rmmod report, from their syscalls. */
TEST_F(hello, load_and_unload_errors)
{
	int fd;

	ASSERT_EQ(0, kml_load(KO, ""));
	/* "File exists": a module is loaded once. */
	EXPECT_EQ(-EEXIST, kml_load(KO, ""));
	ASSERT_EQ(0, kml_unload("kml_hello"));
	/* "not currently loaded" */
	EXPECT_EQ(-1, syscall(SYS_delete_module, "kml_hello", O_NONBLOCK));
	EXPECT_EQ(ENOENT, errno);
	/* "Invalid module format": an ELF file, but not a module. */
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	EXPECT_EQ(-1, syscall(SYS_finit_module, fd, "", 0));
	EXPECT_EQ(ENOEXEC, errno);
	close(fd);
	/* "No such file": a typo in the path, found before any syscall. */
	EXPECT_EQ(-ENOENT, kml_load("modules/kml_hello/kml_helo.ko", ""));
	EXPECT_FALSE(loaded());
}

/*
 * Not graded: finit_module() with each of the loader's allocations failed
 * in turn. Each failure is an error before init runs (no greeting, not
 * loaded); a failure the loader can do without still gives a whole load.
 */
TEST_F_TIMEOUT(hello, fault_load, 600)
{
	/* On the stack: no page fault in the call may take the failure. */
	char params[] = "count=2";
	unsigned int n, fired = 0, refused = 0;
	struct kml_fault f;
	long ret;
	int fd, err;

	ret = kml_fault_init(&f);
	if (ret)
		SKIP(return, "no fault injection in this kernel (%s)", strerror(-ret));
	fd = open(kml_ko_path(KO), O_RDONLY | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	for (n = 1; n <= KML_FAULT_MAX; n++) {
		CLEAR();
		ASSERT_EQ(0, kml_fault_arm(&f, n));
		ret = syscall(SYS_finit_module, fd, params, 0);
		err = errno;
		if (!kml_fault_fired(&f)) {
			ASSERT_EQ(0, ret) TH_LOG("n=%u: %s", n, strerror(err));
			break;
		}
		fired++;
		DRAIN();
		if (ret) {
			refused++;
			/*
			 * On a kernel with module BTF (the default test
			 * kernel's, for lab bpf), a failure injected while the
			 * loader checks the module's BTF can come back as
			 * "Max chain length or cycle detected", -ELOOP (seen
			 * on 6.12): the kernel's answer, which it logs, not
			 * the module's.
			 */
			if (err == ELOOP && strstr(self->log, "failed to validate module [kml_hello] BTF"))
				err = ENOMEM;
			EXPECT_EQ(ENOMEM, err) TH_LOG("n=%u: %s", n, strerror(err));
			ASSERT_FALSE(loaded()) TH_LOG("n=%u", n);
			ASSERT_EQ(0, count_lines(self->log, "world", 7)) TH_LOG("n=%u", n);
			continue;
		}
		ASSERT_TRUE(loaded()) TH_LOG("n=%u", n);
		ASSERT_EQ(2, count_lines(self->log, "Hello, world!", 7)) TH_LOG("n=%u", n);
		ASSERT_EQ(0, kml_unload("kml_hello"));
		DRAIN();	/* its goodbye, before the next CLEAR() */
	}
	close(fd);
	kml_fault_exit(&f);
	ASSERT_LE(n, KML_FAULT_MAX);
	TH_LOG("finit_module: %u allocation failures injected, %u refused the load",
	       fired, refused);
	EXPECT_GT(refused, 0);
	DRAIN();
	EXPECT_TRUE(loaded());
	EXPECT_EQ(2, count_lines(self->log, "Hello, world!", 7)) TH_LOG("log:\n%s", self->log);
}

TEST_HARNESS_MAIN

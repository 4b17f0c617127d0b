# SPDX-License-Identifier: GPL-2.0
# kmodlab: see README.md. `make help` lists the targets.

KVER    ?= 6.12
PROFILE ?= default
export KVER PROFILE

TOP     := $(CURDIR)
BUILD   := $(TOP)/build
KSCRIPT := $(TOP)/scripts/kernel.sh

# `make install` is for a real host: the running kernel, unless told.
ifneq ($(filter install,$(MAKECMDGOALS)),)
KDIR ?= /lib/modules/$(shell uname -r)/build
endif

# KMODLAB_GCOV=0: modules without gcov profiling (make bench), built apart
KML_NOGCOV := $(if $(filter 0,$(KMODLAB_GCOV)),-nogcov)

# KDIR defaults to the cached test kernel; point it at any configured tree
# (e.g. /lib/modules/$(uname -r)/build) to build for a real host.
ifeq ($(origin KDIR),undefined)
# Resolved when the recipe runs: `kernel` may have just installed the
# source package, which changes the cache key.
KDIR      = $$($(KSCRIPT) kdir)
KDIR_DEP  := kernel
KBUILDDIR := $(BUILD)/kmod/$(KVER)-$(PROFILE)$(KML_NOGCOV)
else
KDIR_DEP  :=
# Named after the kernel it is for (its release), where the tree says.
KBUILDDIR := $(BUILD)/kmod/$(or $(shell cat '$(KDIR)/include/config/kernel.release' 2>/dev/null),custom-$(shell echo '$(KDIR)' | md5sum | cut -c1-8))$(KML_NOGCOV)
# Another kernel is a real host's: no test-only modules (one WARNs on
# purpose) unless asked for (KMODLAB_TESTS=1: its selftests need them).
ifneq ($(KMODLAB_TESTS),1)
export KMODLAB_NO_TESTS := 1
endif
endif
# kselftest_harness.h comes from a kernel source tree, never the repo:
# KSRC=, else the tree KDIR= names when it is a source tree whose harness
# selects tests (-r/-T: the scripts and the labs run one test at a time;
# 6.1's runs them all whatever it is told), so a kernel of your own needs
# no Debian package, else 6.12's from Debian's linux-source.
ifeq ($(origin KSRC),undefined)
KDIR_HARNESS := $(if $(KDIR_DEP),,$(firstword $(shell grep -l -e 'T:r:' \
	$(wildcard $(KDIR)/tools/testing/selftests/kselftest_harness.h \
	$(KDIR)/source/tools/testing/selftests/kselftest_harness.h) /dev/null)))
ifneq ($(KDIR_HARNESS),)
KSRC    := $(KDIR_HARNESS:%/tools/testing/selftests/kselftest_harness.h=%)
else
KSRC     = $(shell KVER=6.12 $(KSCRIPT) src)
endif
endif

CC      ?= gcc
# What `kml-x --version` says: the release (dkms.conf's, as for the
# modules), and the commit when built from git.
KML_VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' $(TOP)/dkms.conf)$(shell \
	git -C $(TOP) rev-parse --short HEAD 2>/dev/null | sed 's/^/+g/')
USER_CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror \
	       -I$(TOP)/uapi -I$(TOP)/userspace -DKML_VERSION='"$(KML_VERSION)"'
SELFTEST_CFLAGS := $(USER_CFLAGS) -isystem $(KSRC)/tools/testing/selftests
HOSTTEST_CFLAGS := $(SELFTEST_CFLAGS) -O1 -fsanitize=address,undefined \
		   -fno-omit-frame-pointer -fno-sanitize-recover=all

CLIENTS   := kml-stats kml-sensor kml-probe kml-ring kml-filter
SELFTESTS := kml_stats_test kml_sensor_test kml_probe_test kml_ring_test kml_filter_test \
	     kml_hello_test kml_debug_test
# labs/bpf's: built by `make bpf`, not `selftests` (it needs clang, bpftool
# and a kernel with BTF: the default profile's)
BPF_SELFTESTS := kml_bpf_test
HOSTTESTS := test_kml_stats_logic test_kml_stats_client test_kml_sensor_logic \
	     test_kml_probe_logic test_kml_ring_logic test_kml_filter_logic \
	     test_kml_trace_parse test_kml_probe_file test_kml_cli test_kml_nl \
	     test_kml_filter_genl test_kml_perf_data test_kml_bpf_logic
FUZZERS   := fuzz_kml_stats fuzz_kml_ring fuzz_kml_filter fuzz_kml_filter_pkt \
	     fuzz_kml_probe_file fuzz_kml_nl fuzz_kml_filter_genl

GOALS := all help kernel modules userspace selftests bpf selftests32 hosttests fuzz check lint demo vm \
	bench bench-build lint-host install install-userspace uninstall uninstall-userspace deb dkms-install check-all check-full readme-matrix \
	check-stock check-loaded gdb decode \
	lab lab-list lab-build grade grade-all submit lab-check test kernel-export kernel-import coverage \
	workshop-bundle workshop-install \
	clean distclean
.PHONY: $(GOALS)

# `make check kml_sensor` would run the whole check before make noticed
# that kml_sensor is no target: refuse unknown goals before anything runs.
# (Files under build/ stay valid goals.)
unknown_goals := $(filter-out $(GOALS) build/% $(BUILD)/%,$(MAKECMDGOALS))
ifneq ($(unknown_goals),)
$(error '$(firstword $(unknown_goals))' is not a make target (make help lists them).$(if \
  $(filter kml_% stats sensor probe ring filter hello,$(unknown_goals)), To test one module: \
  make test T=$(firstword $(unknown_goals)).)$(if $(filter check,$(MAKECMDGOALS)), Variables \
  go as NAME=value: make check KVER=6.1))
endif

all: modules userspace selftests hosttests

help:
	@echo 'make            (make all) build modules, clients, selftests (and the test kernel if needed)'
	@echo 'make modules, make userspace, make selftests, make selftests32, make hosttests, make fuzz'
	@echo '                one part of that (build/): the modules, the clients, the guest selftests,'
	@echo '                their -m32 build, the host unit tests, the fuzz targets'
	@echo 'make bpf        lab bpf'"'"'s BPF programs, their loader kml-bpf and its selftest (clang, bpftool, libbpf)'
	@echo 'make test T=kml_x  the fast loop: one module'"'"'s selftests and coverage in a guest (T=kml_bpf: lab bpf'"'"'s)'
	@echo 'make check      everything: host tests, guest selftests, coverage'
	@echo 'make check-all  what CI runs: every kernel of the README'"'"'s matrix, with a table of parts and seconds'
	@echo 'make check-full check-all plus what does not fit CI (the 6.1 and 7.3 test kernels, per-test coverage, Debian 12'"'"'s and 13'"'"'s 6.12)'
	@echo 'make readme-matrix  the README'"'"'s kernel matrix from the last check-all/check-full'
	@echo 'make check-stock  the selftests on Debian'"'"'s own cloud kernel (STOCK=6.1|6.12|deb13|deb13-bpo)'
	@echo 'make check-loaded make check while stress-ng keeps every host CPU busy'
	@echo 'make check COVERAGE=per-test  coverage captured after each test, not each program'
	@echo 'make coverage FROM=F  lcov report from counters kml-gcov-collect gathered (any kernel)'
	@echo 'make demo       boot the test kernel, load the modules, run each client'
	@echo 'make lint       checkpatch, sparse, W=1, kernel-doc, cppcheck, -Werror userspace'
	@echo 'make lint-host  the same without the module build and sparse: no kernel is built'
	@echo 'make bench      benchmarks in one guest run, reported as ratios (STOCK=6.12: on that stock kernel)'
	@echo 'make bench-build  the benchmarks built, not run'
	@echo 'make vm         interactive guest shell with the modules built'
	@echo 'make vm GDB=1   the same with a gdb stub (GDB=wait: stopped until gdb continues); make gdb attaches'
	@echo 'make decode [DIR=d] < oops.txt  a call trace with source lines (decode_stacktrace.sh, vmlinux, the modules)'
	@echo 'make lab-list   the workshop labs; make lab LAB=x [STEP=n], make grade LAB=x, make submit NAME=you'
	@echo 'make grade-all LAB=x DIRS="trees or archives" CSV=f  an instructor'"'"'s batch: scores and each step'"'"'s first failure'
	@echo 'make lab-build LAB=x DIR=d  compile a student tree; make lab-check [LAB=x]  every step of every lab is real'
	@echo 'make kernel-export [F=f], make kernel-import F=f  carry a built test kernel to other machines (a workshop room)'
	@echo 'make workshop-bundle [F=f.tar]  one archive for a room offline: this tree, the kernels, every package a seat needs'
	@echo 'make workshop-install  on a seat, as root, from the unpacked bundle (or scripts/workshop.sh install): no network'
	@echo 'make kernel     build the cached test kernel (KVER=6.12|6.1|7.3, PROFILE=default|debug|kcsan)'
	@echo 'make KDIR=/lib/modules/$$(uname -r)/build modules   build for a real host'
	@echo 'make install    modules (+depmod), clients, uapi headers, udev rule, man pages, bash'
	@echo '                completion, for the running kernel (DESTDIR=, PREFIX=, KDIR=)'
	@echo 'make install-userspace  the same without the modules: needs no kernel tree'
	@echo 'make uninstall  undoes make install (same KREL, DESTDIR=, PREFIX=); make uninstall-userspace'
	@echo '                undoes make install-userspace'
	@echo 'make dkms-install   the modules as a DKMS package (rebuilt for every new kernel)'
	@echo 'make deb            Debian packages: kmodlab-dkms, kmodlab, kmodlab-dev (build/deb/, lintian-checked)'
	@echo 'make clean      remove build/; make distclean  and the kernel cache (~/.cache/kmodlab)'
	@echo 'make help       this list'

kernel:
	$(KSCRIPT) build

# For a classroom: the instructor exports the built test kernel once,
# students import it instead of building (labs/README.md).
kernel-export:
	$(KSCRIPT) build
	$(KSCRIPT) export $(or $(F),kmodlab-kernel-$(KVER)-$(PROFILE).tar.gz)

kernel-import:
	$(KSCRIPT) import $(or $(F),$(error F=<archive from make kernel-export>))

# A room offline: one archive with this tree, the kernels and the
# packages a seat needs; on each seat, as root: scripts/workshop.sh install
workshop-bundle:
	$(TOP)/scripts/workshop.sh bundle $(F)

workshop-install:
	$(TOP)/scripts/workshop.sh install $(F)

# ---- kernel modules, built in a mirror of the sources ----
# WERROR=0 keeps warnings warnings (work in progress). Diagnostics name
# the real source (modules/...), not its link in the build mirror.
# KMODLAB_MODULES="kml_stats kml_sensor" builds only those (make test).
modules: $(KDIR_DEP)
	@$(TOP)/scripts/mirror.sh $(TOP) $(KBUILDDIR)
	@bash -c 'set -o pipefail; $(MAKE) -C $(KDIR) M=$(KBUILDDIR) W=1 \
		$(if $(filter 0,$(WERROR)),,KCFLAGS=-Werror) $(if $(C),C=$(C)) \
		$(if $(KMODLAB_MODULES),KMODLAB_MODULES="$(KMODLAB_MODULES)") modules 2>&1 | \
		sed -u -E "s|$(KBUILDDIR)/((modules\|uapi)/[^: ]*\.[ch]):|$(TOP)/\1:|g"'

# ---- userspace ----
CLI := userspace/kml_cli.c
# The clients as installed: a package build adds its distribution's
# hardening flags (debian/rules passes dpkg-buildflags' here).
CLIENT_CC = $(CC) $(USER_CFLAGS) $(CLIENT_CFLAGS) $(CLIENT_LDFLAGS)

$(BUILD)/bin/kml-stats: userspace/kml-stats.c userspace/kml_stats_parse.c $(CLI) \
		       userspace/kml_stats_parse.h uapi/linux/kml_stats.h
	@mkdir -p $(@D)
	$(CLIENT_CC) -o $@ userspace/kml-stats.c userspace/kml_stats_parse.c $(CLI)

$(BUILD)/bin/kml-sensor: userspace/kml-sensor.c userspace/kml_sensor_parse.c $(CLI) \
			userspace/kml_sensor_parse.h uapi/linux/kml_sensor.h
	@mkdir -p $(@D)
	$(CLIENT_CC) -o $@ userspace/kml-sensor.c userspace/kml_sensor_parse.c $(CLI)

RING_LIB := userspace/kml_ring_lib.c modules/kml_ring/kml_ring_logic.c
PROBE_FILE := userspace/kml_probe_file.c
PERF_DATA := userspace/kml_perf_data.c
PROBE_HDR := userspace/kml_probe_file.h userspace/kml_probe_cmd.h uapi/linux/kml_probe.h \
	     userspace/kml_perf_data.h \
	     uapi/linux/kml_ring.h userspace/kml_ring_lib.h

$(BUILD)/bin/kml-probe: userspace/kml-probe.c userspace/kml_probe_record.c $(PROBE_FILE) \
		$(PERF_DATA) $(RING_LIB) $(PROBE_HDR) $(CLI)
	@mkdir -p $(@D)
	$(CLIENT_CC) -o $@ $< userspace/kml_probe_record.c $(PROBE_FILE) $(PERF_DATA) \
		$(RING_LIB) $(CLI)

$(BUILD)/bin/kml-ring: userspace/kml-ring.c $(RING_LIB) userspace/kml_ring_lib.h $(CLI) \
		userspace/kml_stats_parse.c modules/kml_ring/kml_ring_logic.h uapi/linux/kml_ring.h
	@mkdir -p $(@D)
	$(CLIENT_CC) -o $@ $< $(RING_LIB) userspace/kml_stats_parse.c $(CLI)

FILTER_LIB := userspace/kml_filter_parse.c modules/kml_filter/kml_filter_logic.c
FILTER_HDR := userspace/kml_filter_parse.h modules/kml_filter/kml_filter_logic.h \
	      uapi/linux/kml_filter.h
NL_LIB := userspace/kml_nl.c
NL_HDR := userspace/kml_nl.h
# the client's generic netlink: libkml_nl and the kml_filter messages
FILTER_NL := userspace/kml_filter_genl.c $(NL_LIB)
FILTER_NL_HDR := userspace/kml_filter_genl.h $(NL_HDR)

# `log` follows a kml_ring: the ring library too
$(BUILD)/bin/kml-filter: userspace/kml-filter.c $(FILTER_LIB) $(FILTER_HDR) $(FILTER_NL) \
		$(FILTER_NL_HDR) $(RING_LIB) userspace/kml_ring_lib.h $(CLI)
	@mkdir -p $(@D)
	$(CLIENT_CC) -o $@ $< $(FILTER_LIB) $(FILTER_NL) $(RING_LIB) $(CLI)

userspace: $(addprefix $(BUILD)/bin/,$(CLIENTS))

# kml-filter as a 32-bit process, for the compat ioctl selftest (which
# reports SKIP without it): static, so the guest needs no 32-bit libc.
$(BUILD)/bin/kml-filter-m32: userspace/kml-filter.c $(FILTER_LIB) $(FILTER_HDR) $(FILTER_NL) \
		$(FILTER_NL_HDR) $(RING_LIB) userspace/kml_ring_lib.h $(CLI)
	@mkdir -p $(@D)
	@if echo 'int main(void) { return 0; }' | \
	    $(CC) -m32 -static -x c -o /dev/null - 2>/dev/null; then \
		$(CC) -m32 -static $(USER_CFLAGS) -o $@ $< $(FILTER_LIB) $(FILTER_NL) $(RING_LIB) $(CLI); \
	else echo 'kml_filter: no -m32 -static toolchain, 32-bit client not built'; fi

$(KSRC)/tools/testing/selftests/kselftest_harness.h:
	KVER=6.12 $(KSCRIPT) unpack

$(BUILD)/selftests/kml_stats_test: selftests/kml_stats/kml_stats_test.c selftests/kml_selftest.h selftests/kml_fault.h selftests/kml_trace.h \
		userspace/kml_stats_parse.c userspace/kml_stats_parse.h \
		$(KSRC)/tools/testing/selftests/kselftest_harness.h
	@mkdir -p $(@D)
	$(CC) $(SELFTEST_CFLAGS) -o $@ $< userspace/kml_stats_parse.c -lpthread

$(BUILD)/selftests/kml_sensor_test: selftests/kml_sensor/kml_sensor_test.c selftests/kml_selftest.h selftests/kml_fault.h selftests/kml_trace.h \
		uapi/linux/kml_sensor.h $(KSRC)/tools/testing/selftests/kselftest_harness.h
	@mkdir -p $(@D)
	$(CC) $(SELFTEST_CFLAGS) -o $@ $< -lpthread

# (kml_probe_file.c: each call of a recording, to hold perf's reading to)
$(BUILD)/selftests/kml_probe_test: selftests/kml_probe/kml_probe_test.c selftests/kml_selftest.h selftests/kml_fault.h selftests/kml_trace.h \
		uapi/linux/kml_probe.h $(PROBE_FILE) userspace/kml_probe_file.h \
		$(KSRC)/tools/testing/selftests/kselftest_harness.h
	@mkdir -p $(@D)
	$(CC) $(SELFTEST_CFLAGS) -o $@ $< $(PROBE_FILE) -lpthread

$(BUILD)/selftests/kml_ring_test: selftests/kml_ring/kml_ring_test.c selftests/kml_selftest.h selftests/kml_fault.h selftests/kml_trace.h \
		$(RING_LIB) userspace/kml_ring_lib.h modules/kml_ring/kml_ring_logic.h \
		uapi/linux/kml_ring.h $(KSRC)/tools/testing/selftests/kselftest_harness.h
	@mkdir -p $(@D)
	$(CC) $(SELFTEST_CFLAGS) -o $@ $< $(RING_LIB) -lpthread

$(BUILD)/selftests/kml_filter_test: selftests/kml_filter/kml_filter_test.c selftests/kml_selftest.h selftests/kml_fault.h selftests/kml_trace.h \
		selftests/kml_net.h \
		$(FILTER_LIB) $(FILTER_HDR) userspace/kml_nl.c userspace/kml_nl.h \
		$(KSRC)/tools/testing/selftests/kselftest_harness.h
	@mkdir -p $(@D)
	$(CC) $(SELFTEST_CFLAGS) -o $@ $< $(FILTER_LIB) userspace/kml_nl.c -lpthread

$(BUILD)/selftests/kml_hello_test: selftests/kml_hello/kml_hello_test.c selftests/kml_selftest.h selftests/kml_fault.h selftests/kml_trace.h \
		$(KSRC)/tools/testing/selftests/kselftest_harness.h
	@mkdir -p $(@D)
	$(CC) $(SELFTEST_CFLAGS) -o $@ $<

$(BUILD)/selftests/kml_debug_test: selftests/kml_debug/kml_debug_test.c selftests/kml_selftest.h \
		$(KSRC)/tools/testing/selftests/kselftest_harness.h
	@mkdir -p $(@D)
	$(CC) $(SELFTEST_CFLAGS) -o $@ $<

selftests: $(addprefix $(BUILD)/selftests/,$(SELFTESTS)) $(BUILD)/bin/kml-filter-m32

# labs/bpf: its programs, their loader and its selftest. vmlinux.h comes
# from the default profile's test kernel of this KVER, the one with BTF
# (scripts/kconfig/btf.config); the loader then runs on any kernel with
# BTF (CO-RE).
BPF_KDIR = $$(PROFILE=default $(KSCRIPT) kdir)
bpf: $(BUILD)/selftests/kml_bpf_test
	+$(MAKE) -C $(TOP)/bpf KDIR=$(BPF_KDIR) O=$(BUILD)/bpf

$(BUILD)/selftests/kml_bpf_test: selftests/kml_bpf/kml_bpf_test.c selftests/kml_selftest.h selftests/kml_net.h \
		uapi/linux/kml_probe.h $(KSRC)/tools/testing/selftests/kselftest_harness.h
	@mkdir -p $(@D)
	$(CC) $(SELFTEST_CFLAGS) -o $@ $< -lpthread

# The same selftests as 32-bit programs (gcc -m32), run in the guest
# through IA32 emulation: the uapi must have one layout for both, and
# every ioctl must work through .compat_ioctl. The 64-bit binary is a
# prerequisite only to inherit its dependencies.
ST_SRC_kml_stats_test  := selftests/kml_stats/kml_stats_test.c userspace/kml_stats_parse.c
ST_SRC_kml_sensor_test := selftests/kml_sensor/kml_sensor_test.c
ST_SRC_kml_probe_test  := selftests/kml_probe/kml_probe_test.c $(PROBE_FILE)
ST_SRC_kml_ring_test   := selftests/kml_ring/kml_ring_test.c $(RING_LIB)
ST_SRC_kml_filter_test := selftests/kml_filter/kml_filter_test.c $(FILTER_LIB) userspace/kml_nl.c
ST_SRC_kml_hello_test  := selftests/kml_hello/kml_hello_test.c
ST_SRC_kml_debug_test  := selftests/kml_debug/kml_debug_test.c

$(BUILD)/selftests32/%: $(BUILD)/selftests/%
	@mkdir -p $(@D)
	$(CC) -m32 $(SELFTEST_CFLAGS) -o $@ $(ST_SRC_$*) -lpthread

selftests32: $(addprefix $(BUILD)/selftests32/,$(SELFTESTS))

$(BUILD)/host/test_kml_stats_logic: selftests/host/test_kml_stats_logic.c \
		modules/kml_stats/kml_stats_logic.c modules/kml_stats/kml_stats_logic.h
	@mkdir -p $(@D)
	$(CC) $(HOSTTEST_CFLAGS) -o $@ $< modules/kml_stats/kml_stats_logic.c

$(BUILD)/host/test_kml_trace_parse: selftests/host/test_kml_trace_parse.c \
		selftests/kml_trace.h
	@mkdir -p $(@D)
	$(CC) $(HOSTTEST_CFLAGS) -o $@ $<

$(BUILD)/host/test_kml_stats_client: selftests/host/test_kml_stats_client.c \
		userspace/kml_stats_parse.c userspace/kml_stats_parse.h
	@mkdir -p $(@D)
	$(CC) $(HOSTTEST_CFLAGS) -o $@ $< userspace/kml_stats_parse.c

$(BUILD)/host/test_kml_sensor_logic: selftests/host/test_kml_sensor_logic.c \
		modules/kml_sensor/kml_sensor_logic.c modules/kml_sensor/kml_sensor_logic.h \
		userspace/kml_sensor_parse.c userspace/kml_sensor_parse.h
	@mkdir -p $(@D)
	$(CC) $(HOSTTEST_CFLAGS) -o $@ $< modules/kml_sensor/kml_sensor_logic.c \
		userspace/kml_sensor_parse.c

$(BUILD)/host/test_kml_bpf_logic: selftests/host/test_kml_bpf_logic.c bpf/kml_bpf.h \
		modules/kml_stats/kml_stats_logic.h
	@mkdir -p $(@D)
	$(CC) $(HOSTTEST_CFLAGS) -o $@ $<

$(BUILD)/host/test_kml_probe_logic: selftests/host/test_kml_probe_logic.c \
		modules/kml_probe/kml_probe_logic.c modules/kml_probe/kml_probe_logic.h
	@mkdir -p $(@D)
	$(CC) $(HOSTTEST_CFLAGS) -o $@ $< modules/kml_probe/kml_probe_logic.c

# It also runs every client: they are built first.
$(BUILD)/host/test_kml_cli: selftests/host/test_kml_cli.c $(CLI) userspace/kml_cli.h \
		$(addprefix $(BUILD)/bin/,$(CLIENTS))
	@mkdir -p $(@D)
	$(CC) $(HOSTTEST_CFLAGS) -DKML_BIN_DIR='"$(BUILD)/bin"' -DKML_CORPUS_DIR='"$(TOP)/selftests/fuzz/corpus"' -o $@ $< $(CLI)

$(BUILD)/host/test_kml_probe_file: selftests/host/test_kml_probe_file.c $(PROBE_FILE) \
		userspace/kml_probe_file.h
	@mkdir -p $(@D)
	$(CC) $(HOSTTEST_CFLAGS) -o $@ $< $(PROBE_FILE)
	@# and as a 32-bit program, where size_t arithmetic on file fields can
	@# wrap (no sanitizers there: the host has no 32-bit libasan)
	@if echo 'int main(void) { return 0; }' | $(CC) -m32 -x c -o /dev/null - 2>/dev/null; then \
		$(CC) -m32 $(SELFTEST_CFLAGS) -o $@-m32 $< $(PROBE_FILE); \
	else echo 'kml-probe file reader: no -m32 toolchain, 32-bit host test not built'; fi

# perf.data from a recording; with perf (PERF=, default perf) also read back by it.
$(BUILD)/host/test_kml_perf_data: selftests/host/test_kml_perf_data.c $(PROBE_FILE) $(PERF_DATA) \
		userspace/kml_probe_file.h userspace/kml_perf_data.h
	@mkdir -p $(@D)
	$(CC) $(HOSTTEST_CFLAGS) -DKML_CORPUS_DIR='"$(TOP)/selftests/fuzz/corpus"' -o $@ $< \
		$(PROBE_FILE) $(PERF_DATA)

$(BUILD)/host/test_kml_ring_logic: selftests/host/test_kml_ring_logic.c \
		modules/kml_ring/kml_ring_logic.c modules/kml_ring/kml_ring_logic.h
	@mkdir -p $(@D)
	$(CC) $(HOSTTEST_CFLAGS) -o $@ $< modules/kml_ring/kml_ring_logic.c

$(BUILD)/host/test_kml_filter_logic: selftests/host/test_kml_filter_logic.c $(FILTER_LIB) $(FILTER_HDR) \
		selftests/host/kml_filter_abi_check.h
	@mkdir -p $(@D)
	@# the uapi layout as a 32-bit caller sees it, if the compiler can target one
	@if echo '#include <linux/types.h>' | $(CC) -m32 -fsyntax-only -x c - 2>/dev/null; then \
		$(CC) -m32 -std=c11 -Wall -Wextra -Werror -fsyntax-only -I$(TOP)/uapi \
			-x c selftests/host/kml_filter_abi_check.h; \
	else echo 'kml_filter: no -m32 compiler, 32-bit uapi layout unchecked'; fi
	$(CC) $(HOSTTEST_CFLAGS) -o $@ $< $(FILTER_LIB)

$(BUILD)/host/test_kml_nl: selftests/host/test_kml_nl.c $(NL_LIB) $(NL_HDR)
	@mkdir -p $(@D)
	$(CC) $(HOSTTEST_CFLAGS) -o $@ $< $(NL_LIB)
	@# and as a 32-bit program, as kml-filter-m32 will use it: lengths
	@# from the wire are added to a 32-bit size_t there
	@if echo 'int main(void) { return 0; }' | $(CC) -m32 -x c -o /dev/null - 2>/dev/null; then \
		$(CC) -m32 $(SELFTEST_CFLAGS) -o $@-m32 $< $(NL_LIB); \
	else echo 'libkml_nl: no -m32 toolchain, 32-bit host test not built'; fi

$(BUILD)/host/test_kml_filter_genl: selftests/host/test_kml_filter_genl.c $(FILTER_LIB) \
		$(FILTER_HDR) $(FILTER_NL) $(FILTER_NL_HDR)
	@mkdir -p $(@D)
	$(CC) $(HOSTTEST_CFLAGS) -o $@ $< $(FILTER_LIB) $(FILTER_NL)

hosttests: $(addprefix $(BUILD)/host/,$(HOSTTESTS))

# libFuzzer targets (clang); `make check` runs each for a bounded time.
$(BUILD)/fuzz/fuzz_kml_stats: selftests/fuzz/fuzz_kml_stats.c \
		modules/kml_stats/kml_stats_logic.c userspace/kml_stats_parse.c
	@mkdir -p $(@D)
	clang -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -I$(TOP)/uapi \
		-fsanitize=fuzzer,address,undefined -o $@ $^

$(BUILD)/fuzz/fuzz_kml_ring: selftests/fuzz/fuzz_kml_ring.c modules/kml_ring/kml_ring_logic.c
	@mkdir -p $(@D)
	clang -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -I$(TOP)/uapi \
		-fsanitize=fuzzer,address,undefined -o $@ $^

$(BUILD)/fuzz/fuzz_kml_filter: selftests/fuzz/fuzz_kml_filter.c $(FILTER_LIB)
	@mkdir -p $(@D)
	clang -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -I$(TOP)/uapi -I$(TOP)/userspace \
		-fsanitize=fuzzer,address,undefined -o $@ $^

$(BUILD)/fuzz/fuzz_kml_filter_pkt: selftests/fuzz/fuzz_kml_filter_pkt.c \
		modules/kml_filter/kml_filter_logic.c modules/kml_filter/kml_filter_logic.h
	@mkdir -p $(@D)
	clang -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -I$(TOP)/uapi \
		-fsanitize=fuzzer,address,undefined -o $@ $< modules/kml_filter/kml_filter_logic.c

$(BUILD)/fuzz/fuzz_kml_probe_file: selftests/fuzz/fuzz_kml_probe_file.c $(PROBE_FILE) \
		$(PERF_DATA) userspace/kml_probe_file.h userspace/kml_perf_data.h
	@mkdir -p $(@D)
	clang -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -I$(TOP)/uapi \
		-fsanitize=fuzzer,address,undefined -o $@ $< $(PROBE_FILE) $(PERF_DATA)

$(BUILD)/fuzz/fuzz_kml_nl: selftests/fuzz/fuzz_kml_nl.c $(NL_LIB) $(NL_HDR)
	@mkdir -p $(@D)
	clang -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -I$(TOP)/uapi \
		-fsanitize=fuzzer,address,undefined -o $@ $< $(NL_LIB)

$(BUILD)/fuzz/fuzz_kml_filter_genl: selftests/fuzz/fuzz_kml_filter_genl.c $(FILTER_LIB) \
		$(FILTER_HDR) $(FILTER_NL) $(FILTER_NL_HDR)
	@mkdir -p $(@D)
	clang -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -I$(TOP)/uapi -I$(TOP)/userspace \
		-fsanitize=fuzzer,address,undefined -o $@ $< $(FILTER_LIB) $(FILTER_NL)

fuzz: $(addprefix $(BUILD)/fuzz/,$(FUZZERS))

# Benchmarks: built with the same flags, run only by `make bench`.
$(BUILD)/bench/kml_sensor_bench: selftests/bench/kml_sensor_bench.c uapi/linux/kml_sensor.h
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) -o $@ $<

$(BUILD)/bench/kml_probe_bench: selftests/bench/kml_probe_bench.c uapi/linux/kml_probe.h \
				selftests/kml_trace.h
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) -o $@ $<

$(BUILD)/bench/kml_ring_bench: selftests/bench/kml_ring_bench.c $(RING_LIB) userspace/kml_ring_lib.h \
			       selftests/kml_trace.h
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) -o $@ $< $(RING_LIB)

$(BUILD)/bench/kml_filter_bench: selftests/bench/kml_filter_bench.c $(FILTER_LIB) $(FILTER_HDR) \
		userspace/kml_nl.c userspace/kml_nl.h
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) -o $@ $< $(FILTER_LIB) userspace/kml_nl.c -lpthread

$(BUILD)/bench/kml_record_bench: selftests/bench/kml_record_bench.c $(PROBE_FILE) \
		userspace/kml_probe_file.h uapi/linux/kml_probe.h
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) -o $@ $< $(PROBE_FILE)

bench-build: $(BUILD)/bench/kml_sensor_bench $(BUILD)/bench/kml_probe_bench \
	     $(BUILD)/bench/kml_record_bench \
	     $(BUILD)/bench/kml_ring_bench $(BUILD)/bench/kml_filter_bench

# ---- running ----
check:
	$(TOP)/scripts/check.sh

# What CI runs: every kernel in the README's matrix, in two lanes, one
# summed last line; check-full adds what does not fit CI's budget.
check-all:
	$(TOP)/scripts/check-all.sh

check-full:
	$(TOP)/scripts/check-all.sh full

# The README's kernel matrix, from the last check-all or check-full
readme-matrix:
	$(TOP)/scripts/readme-matrix.sh

# make check with every host CPU kept busy: verdicts must not depend on speed.
# The coverage report from counters gathered by scripts/kml-gcov-collect on
# any test machine (README, "Coverage on your own kernel"); GCOV=gcov-N
# when the modules' compiler is not the default gcc.
coverage:
	$(TOP)/scripts/coverage.sh --out $(or $(OUT),$(BUILD)/coverage) \
		$(if $(MIN),--min $(MIN) --branch-min $(MIN)) \
		$(or $(FROM),$(error FROM=<archive or directory from kml-gcov-collect>))

check-loaded:
	$(TOP)/scripts/check-loaded.sh

# The selftests on Debian's own cloud kernel (STOCK=6.1|6.12|deb13|deb13-bpo), no gcov.
check-stock:
	$(TOP)/scripts/stock.sh

lint:
	$(TOP)/scripts/lint.sh

# the same without the module build and sparse: no kernel to build first
lint-host:
	$(TOP)/scripts/lint.sh --host

# ---- workshop labs (labs/README.md) ----
# make lab LAB=<name> [STEP=n] [DIR=work/<name>] [FORCE=1]: a student tree
# make grade LAB=<name> [DIR=…]: build it, run its graded selftests, score
LAB_PY = $(TOP)/scripts/lab.py
lab-list:
	@$(LAB_PY) list

lab:
	@$(LAB_PY) gen $(or $(LAB),$(error LAB=<name>: see make lab-list)) \
		--step $(or $(STEP),1) $(if $(DIR),--dir '$(DIR)') $(if $(FORCE),--force)

lab-build: $(KDIR_DEP)
	+@$(LAB_PY) build $(LAB) $(if $(DIR),--dir '$(DIR)')

grade: $(KDIR_DEP) userspace selftests
	+@$(LAB_PY) grade $(LAB) $(if $(DIR),--dir '$(DIR)')

# a student's hand-in: make submit [LAB=x] [DIR=work/x] [NAME=$USER] writes
# NAME-x.tar.gz beside the tree (its sources only)
submit:
	@$(LAB_PY) submit $(LAB) $(if $(DIR),--dir '$(DIR)') $(if $(NAME),--name '$(NAME)')

# an instructor's batch: make grade-all LAB=x DIRS="tree1 alice-x.tar.gz ..." CSV=scores.csv
# (trees, or archives from make submit; the CSV gives each step's first failure)
grade-all: $(KDIR_DEP) userspace selftests
	+@$(LAB_PY) grade-many $(LAB) --csv $(or $(CSV),scores-$(LAB).csv) $(DIRS)

# every step of every lab is real, every catalogued mistake loses its step
# (part of make check-all); PROFILE=debug: the mistakes only it can see
lab-check: $(KDIR_DEP) userspace selftests
	+$(LAB_PY) check $(if $(LAB),--only $(LAB)) $(if $(filter debug,$(PROFILE)),--mistakes-only)

demo:
	$(TOP)/scripts/demo.sh

bench:
	$(TOP)/scripts/bench.sh

# GDB=1: a gdb stub for `make gdb`; GDB=wait: and the guest waits for it
vm: all
	$(TOP)/scripts/vm-run.sh --interactive \
		$(if $(GDB),--gdb $(BUILD)/vm/gdb.sock $(if $(filter wait,$(GDB)),--gdb-wait))

# gdb on the guest of `make vm GDB=1`, with the kernel's lx-* commands
gdb:
	$(TOP)/scripts/gdb.sh

# an oops (a console log) on stdin, decoded to source lines; DIR= a lab tree
decode:
	@$(TOP)/scripts/decode.sh $(if $(DIR),--ko-dir $(DIR))

# ---- installing on a real host (see README: "On a real host") ----
PREFIX  ?= /usr/local
VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' $(TOP)/dkms.conf)

# The release as the running kernel reports it (Debian's kernel.release differs).
KREL = $$(sed -n 's/.*UTS_RELEASE "\(.*\)"/\1/p' $(KDIR)/include/generated/utsrelease.h)

# Signing: the kernel signs at modules_install when CONFIG_MODULE_SIG_ALL
# is set, with the key its build left behind. Distribution headers have
# no key (it never leaves the distribution's builders): then say so once
# and install unsigned, instead of one OpenSSL error per module.
SIG_KEY = $$(sed -n 's/^CONFIG_MODULE_SIG_KEY="\(.*\)"/\1/p' $(KDIR)/include/config/auto.conf)

install: userspace
	@test -f $(KDIR)/Makefile || { echo "kmodlab: no kernel build tree at $(KDIR):" \
		"install the headers of the kernel to build for (Debian: apt-get install" \
		"linux-headers-$$(uname -r)), or give KDIR=/path/to/its/build/tree"; exit 1; }
	$(TOP)/scripts/mirror.sh $(TOP) $(KBUILDDIR)-install
	$(MAKE) -C $(KDIR) M=$(KBUILDDIR)-install KMODLAB_NO_TESTS=1 modules
	@key=$(SIG_KEY); sign=; \
	if grep -qs '^CONFIG_MODULE_SIG_ALL=y' $(KDIR)/include/config/auto.conf; then \
		case $$key in /*) ;; *) key=$(KDIR)/$$key ;; esac; \
		if [ -n "$(SIG_KEY)" ] && [ -r "$$key" ]; then echo "kmodlab: signing the modules with $$key"; \
		else sign=CONFIG_MODULE_SIG_ALL=; \
			echo "kmodlab: installing UNSIGNED modules (no signing key in $(KDIR))." \
			"They load on a kernel that does not enforce signatures (taint E); under" \
			"Secure Boot or lockdown, or with module.sig_enforce=1, they are refused:" \
			"sign them with a key the kernel trusts (e.g. a MOK enrolled with mokutil," \
			"as DKMS does: make dkms-install)."; fi; \
	fi; \
	bash -c "set -o pipefail; $(MAKE) -s -C $(KDIR) M=$(KBUILDDIR)-install KMODLAB_NO_TESTS=1 \
		$$sign KERNELRELEASE=$(KREL) INSTALL_MOD_DIR=updates/kmodlab \
		$(if $(DESTDIR),INSTALL_MOD_PATH=$(DESTDIR)) modules_install 2>&1 | \
		{ grep -v \"missing 'System.map' file. Skipping depmod\" || true; }"
	@# depmod for the installed kernel; under DESTDIR (a package being
	@# built) that is the target's job, when the package is installed
	$(if $(DESTDIR),@echo "kmodlab: DESTDIR install: run \`depmod $(KREL)\` on the target (a package's postinst does)",depmod $(KREL))
	$(MAKE) -f $(TOP)/Makefile install-userspace

# Everything but the modules, which needs no kernel tree: the clients,
# the uapi headers, the udev rule, the man pages (gzip -9n, as Debian
# ships them) and the bash completion, under each client's name (bash-
# completion loads a command's completion from the file of its name).
MANDIR     ?= $(PREFIX)/share/man
# /etc for a local install (the admin's place); a package uses /lib
UDEVRULESDIR ?= /etc/udev/rules.d
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions

install-userspace: userspace
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include/linux \
		$(DESTDIR)$(UDEVRULESDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man4 \
		$(DESTDIR)$(BASHCOMPDIR)
	install -m 0755 $(addprefix $(BUILD)/bin/,$(CLIENTS)) $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 $(wildcard uapi/linux/kml_*.h) $(DESTDIR)$(PREFIX)/include/linux/
	install -m 0644 scripts/udev/60-kmodlab.rules $(DESTDIR)$(UDEVRULESDIR)/
	set -e; for page in $(wildcard man/*.1 man/*.4); do \
		dest=$(DESTDIR)$(MANDIR)/man$${page##*.}/$${page##*/}.gz; \
		gzip -9n -c $$page > $$dest; chmod 0644 $$dest; \
	done
	install -m 0644 scripts/completion/kmodlab.bash $(DESTDIR)$(BASHCOMPDIR)/$(firstword $(CLIENTS))
	set -e; for c in $(wordlist 2,$(words $(CLIENTS)),$(CLIENTS)); do \
		ln -sfn $(firstword $(CLIENTS)) $(DESTDIR)$(BASHCOMPDIR)/$$c; \
	done

# Undoes make install for KREL (modules, then what install-userspace put).
uninstall: uninstall-userspace
	rm -rf $(DESTDIR)/lib/modules/$(KREL)/updates/kmodlab
	$(if $(DESTDIR),,depmod $(KREL))

uninstall-userspace:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/bin/,$(CLIENTS)) \
		$(addprefix $(DESTDIR)$(PREFIX)/include/linux/,$(notdir $(wildcard uapi/linux/kml_*.h))) \
		$(DESTDIR)$(UDEVRULESDIR)/60-kmodlab.rules \
		$(foreach p,$(wildcard man/*.1 man/*.4),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(p)))/$(notdir $(p)).gz) \
		$(addprefix $(DESTDIR)$(BASHCOMPDIR)/,$(CLIENTS))

# Debian packages (kmodlab-dkms, kmodlab, kmodlab-dev) in build/deb/, lintian-checked
deb:
	$(TOP)/scripts/deb.sh

# DKMS_KVER=<release> builds for that kernel instead of the running one.
dkms-install:
	@if dpkg -S /usr/src/kmodlab-$(VERSION) > /dev/null 2>&1; then \
		echo "kmodlab: /usr/src/kmodlab-$(VERSION) belongs to the kmodlab-dkms package:" \
			"remove it first (apt-get remove kmodlab-dkms), or leave DKMS to it"; exit 1; fi
	-dkms remove -m kmodlab -v $(VERSION) --all
	rm -rf /usr/src/kmodlab-$(VERSION)
	install -d /usr/src/kmodlab-$(VERSION)
	cp -r Kbuild dkms.conf modules uapi /usr/src/kmodlab-$(VERSION)/
	dkms add -m kmodlab -v $(VERSION)
	dkms build -m kmodlab -v $(VERSION) $(if $(DKMS_KVER),-k $(DKMS_KVER))
	dkms install -m kmodlab -v $(VERSION) $(if $(DKMS_KVER),-k $(DKMS_KVER))

clean:
	rm -rf $(BUILD)

# Also forget the cached kernels (they take minutes to rebuild).
distclean: clean
	rm -rf $${XDG_CACHE_HOME:-$$HOME/.cache}/kmodlab

# The fast loop: one module's selftests (or some), one guest, coverage.
test: $(KDIR_DEP)
	@$(TOP)/scripts/test.sh

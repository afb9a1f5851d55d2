# SPDX-License-Identifier: MIT
# ptscope — plain GNU make, out-of-tree objects in $(BUILD).
#
#   make            build everything (ptscope, tools, tests, samples)
#   make deps       install the Debian packages we need (idempotent, quick)
#   make check      deps + build + every test, closing "N passed, N failed"
#   make demo       deps + build + record samples/demo into demo.fxt
#   make bench      benchmarks (results: docs/bench-*.md)
#   make check-asan every test under ASan + UBSan + LeakSanitizer, no reports
#   make check-tsan the tests that decode on several threads, under
#                   ThreadSanitizer, no reports (CI)
#   make install    install under $(DESTDIR)$(PREFIX) (default /usr/local)
#   make uninstall  remove what install put there
#   make fuzz       every libFuzzer target for FUZZ_SECONDS (clang)
#   make check-fuzz a short fuzz pass (CI)
#   make soak       stay attached for SOAK_SECONDS, RSS/fds must stay flat
#
# Sources are found by wildcard, so a new file needs no Makefile edit:
#   decoder/*.c          → $(BUILD)/libptscope_decoder.a
#   perfdata/*.c         → $(BUILD)/libptscope_perfdata.a (perf.data import,
#                          on top of the decoder's public API)
#   src/output/*.c       → $(BUILD)/libptscope_output.a (writers, readers)
#   src/**/*.c (others)  → $(BUILD)/libptscope_app.a + src/main.c → ptscope
#   tools/*.c            → $(BUILD)/tools/NAME, one program each
#   tests/unit/test_*.c  → $(BUILD)/tests/test_NAME, one program each
#   tests/fuzz/fuzz_*.c  → build-fuzz/fuzz/NAME (libFuzzer), and all of them
#                          into $(BUILD)/tests/test_fuzz_regress
#   samples/*.c, *.cc    → $(BUILD)/samples/NAME (samples/libX.c → libX.so)

BUILD ?= build
CC ?= gcc
CXX ?= g++
PROTOC_C ?= protoc-c

OPT ?= -O2
CFLAGS ?= $(OPT) -g
WARN := -Wall -Wextra -Wstrict-prototypes -Wno-unused-parameter \
	-Wno-missing-field-initializers
ifeq ($(DEV),1)
WARN += -Werror
endif
SANITIZE ?=
BASE_CFLAGS := -std=gnu11 $(WARN) $(CFLAGS) -D_GNU_SOURCE \
	-Iinclude -I. -I$(BUILD)/gen -MMD -MP
ALL_CFLAGS := $(BASE_CFLAGS) $(SANITIZE)
PLAIN_LDFLAGS := $(LDFLAGS)
LDFLAGS += $(SANITIZE)
# capstone is not linked: decoder/capstone_load.c loads it on first use.
LIBS := -lbpf -lipt -ldw -lelf -lprotobuf-c -lyajl -lz -lpthread -ldl \
	/usr/lib/x86_64-linux-gnu/libiberty.a

# Samples are the programs we trace: debug info, frame pointers, no
# inlining, so their calls are real calls a reader can follow.
SAMPLE_CFLAGS := -g -O1 -fno-inline -fno-omit-frame-pointer -Iinclude -pthread

PROTOS := $(wildcard src/output/*.proto)
GEN_C := $(patsubst src/output/%.proto,$(BUILD)/gen/%.pb-c.c,$(PROTOS))
GEN_H := $(GEN_C:.c=.h)

# eBPF sidecar: src/bpf/X.bpf.c → X.bpf.o (clang -target bpf, CO-RE
# against vmlinux.h made from this kernel's BTF) → X.skel.h (bpftool gen
# skeleton), included by src/bpf/X.c.  The syscall name table comes from
# the kernel headers.
BPF_CLANG ?= clang
BPFTOOL ?= bpftool
LLVM_STRIP ?= $(firstword $(shell command -v llvm-strip llvm-strip-14 2>/dev/null) true)
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
BPF_SRCS := $(wildcard src/bpf/*.bpf.c)
BPF_SKELS := $(patsubst src/bpf/%.bpf.c,$(BUILD)/gen/bpf/%.skel.h,$(BPF_SRCS))
VMLINUX_H := $(BUILD)/gen/bpf/vmlinux.h
SYSCALL_NAMES := $(BUILD)/gen/syscall_names.h
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_x86 -I$(BUILD)/gen/bpf -I. \
	-Wall -Wno-unused-function

DEC_SRCS := $(wildcard decoder/*.c)
PD_SRCS := $(wildcard perfdata/*.c)
OUT_SRCS := $(wildcard src/output/*.c)
APP_SRCS := $(filter-out src/main.c src/output/% %.bpf.c,$(shell find src -name '*.c' | sort))
TOOL_SRCS := $(wildcard tools/*.c)
TEST_SRCS := $(wildcard tests/unit/test_*.c)
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
SAMPLE_C := $(filter-out samples/lib%.c,$(wildcard samples/*.c))
SAMPLE_LIB_C := $(wildcard samples/lib*.c)
SAMPLE_CXX := $(wildcard samples/*.cc)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
DEC_OBJS := $(call obj,$(DEC_SRCS))
PD_OBJS := $(call obj,$(PD_SRCS))
OUT_OBJS := $(call obj,$(OUT_SRCS)) $(patsubst $(BUILD)/gen/%.c,$(BUILD)/obj/gen/%.o,$(GEN_C))
APP_OBJS := $(call obj,$(APP_SRCS))

DEC_LIB := $(BUILD)/libptscope_decoder.a
PD_LIB := $(BUILD)/libptscope_perfdata.a
OUT_LIB := $(BUILD)/libptscope_output.a
APP_LIB := $(BUILD)/libptscope_app.a
# Each library before the ones it uses (perfdata uses the decoder).
ALL_LIBS := $(APP_LIB) $(OUT_LIB) $(PD_LIB) $(DEC_LIB)

PTSCOPE := $(BUILD)/ptscope
TOOLS := $(patsubst tools/%.c,$(BUILD)/tools/%,$(TOOL_SRCS))
TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
SAMPLES := $(patsubst samples/%.c,$(BUILD)/samples/%,$(SAMPLE_C)) \
	$(patsubst samples/%.cc,$(BUILD)/samples/%,$(SAMPLE_CXX)) \
	$(patsubst samples/%.c,$(BUILD)/samples/%.so,$(SAMPLE_LIB_C))

# The QEMU plugin (GPL-2.0-or-later, qemu/): our sources plus the PT
# emulation core, position-independent, only the plugin API exported.
# Never sanitized: it is loaded into qemu-x86_64, which has no ASan runtime.
PLUGIN := $(BUILD)/qemu/libptscope-qemu.so
PLUGIN_SRCS := $(wildcard qemu/*.c) \
	$(wildcard src/record/emulate/*.c) decoder/error.c decoder/capstone_load.c \
	src/record/qemu/qemu_shebang.c
PLUGIN_OBJS := $(patsubst %.c,$(BUILD)/pic/%.o,$(PLUGIN_SRCS))

.PHONY: all programs deps check check-asan check-tsan test demo bench clean format install \
	uninstall fuzz fuzz-build check-fuzz soak
.SECONDARY:
.DELETE_ON_ERROR:
all: $(PTSCOPE) $(PLUGIN) $(TOOLS) $(TESTS) $(SAMPLES)
# what the end-to-end tests run, without the unit tests
programs: $(PTSCOPE) $(PLUGIN) $(TOOLS) $(SAMPLES)

deps:
	@scripts/deps.sh

$(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h: src/output/%.proto
	@mkdir -p $(BUILD)/gen
	$(PROTOC_C) --proto_path=src/output --c_out=$(BUILD)/gen $<

# Everything that may include a generated header waits for it.
$(DEC_OBJS) $(PD_OBJS) $(OUT_OBJS) $(APP_OBJS): | $(GEN_H)
$(APP_OBJS): | $(BPF_SKELS) $(SYSCALL_NAMES)

$(VMLINUX_H):
	@mkdir -p $(dir $@)
	@test -r $(VMLINUX_BTF) || { echo "ptscope: $(VMLINUX_BTF) is missing: this kernel has no BTF, which the eBPF sidecar needs to build (set VMLINUX_BTF=FILE to use another kernel's BTF)" >&2; exit 1; }
	$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/bpf/%.bpf.o: src/bpf/%.bpf.c $(VMLINUX_H) $(wildcard src/bpf/*.h)
	$(BPF_CLANG) $(BPF_CFLAGS) -c $< -o $@
	$(LLVM_STRIP) -g $@

$(BUILD)/gen/bpf/%.skel.h: $(BUILD)/gen/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< name ps_$* > $@.tmp && mv $@.tmp $@

$(SYSCALL_NAMES): /usr/include/x86_64-linux-gnu/asm/unistd_64.h
	@mkdir -p $(dir $@)
	sed -n 's/^#define __NR_\([a-z0-9_]*\) \([0-9]*\)$$/[\2] = "\1",/p' $< > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Wno-unused-parameter -c -o $@ $<

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(DEC_LIB): $(DEC_OBJS)
	@rm -f $@; ar rcs $@ $^
$(PD_LIB): $(PD_OBJS)
	@rm -f $@; ar rcs $@ $^
$(OUT_LIB): $(OUT_OBJS)
	@rm -f $@; ar rcs $@ $^
$(APP_LIB): $(APP_OBJS)
	@rm -f $@; ar rcs $@ $(if $^,$^,)

$(PTSCOPE): $(BUILD)/obj/src/main.o $(ALL_LIBS)
	$(CC) $(LDFLAGS) -o $@ $< $(ALL_LIBS) $(LIBS)

$(BUILD)/tools/%: $(BUILD)/obj/tools/%.o $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(ALL_LIBS) $(LIBS)

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -fPIC -fvisibility=hidden -c -o $@ $<

$(PLUGIN): $(PLUGIN_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(PLAIN_LDFLAGS) -shared -Wl,-z,defs -o $@ $^ -lipt -lpthread -ldl \
		-Wl,--unresolved-symbols=ignore-in-object-files

# The double of the kernel's perf_event/intel_pt code (tests/kernel/)
# goes into every test program, like the harness.
TEST_SUPPORT := $(BUILD)/obj/tests/harness.o $(BUILD)/obj/tests/support.o \
	$(call obj,$(wildcard tests/kernel/*.c))
# -rdynamic: test_qemu_plugin exports a double of QEMU's plugin API.
# test_insn compares with capstone itself.
$(BUILD)/tests/test_insn: LIBS += -lcapstone
$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(TEST_SUPPORT) $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -rdynamic -o $@ $< $(TEST_SUPPORT) $(ALL_LIBS) $(LIBS)

# Fuzz targets: each tests/fuzz/fuzz_NAME.c registers one target.  The
# regression test links them all; `make fuzz` links each alone with
# libFuzzer (clang, in build-fuzz/).
FUZZ_OBJS := $(call obj,$(FUZZ_SRCS) tests/fuzz/registry.c)
$(BUILD)/tests/test_fuzz_regress: $(BUILD)/obj/tests/unit/test_fuzz_regress.o \
		$(FUZZ_OBJS) $(TEST_SUPPORT) $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(FUZZ_OBJS) $(TEST_SUPPORT) $(ALL_LIBS) $(LIBS)

FUZZ_BUILD := build-fuzz
FUZZ_CC ?= clang
FUZZ_SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
FUZZ_PROGS := $(patsubst tests/fuzz/fuzz_%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))
FUZZ_SECONDS ?= 60
$(BUILD)/fuzz/%: $(BUILD)/obj/tests/fuzz/fuzz_%.o \
		$(BUILD)/obj/tests/fuzz/registry.o \
		$(BUILD)/obj/tests/fuzz/libfuzzer_main.o $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $(filter %.o,$^) $(ALL_LIBS) $(LIBS)
fuzz-build: $(FUZZ_PROGS)

$(BUILD)/samples/%: samples/%.c include/ptscope/trigger.h
	@mkdir -p $(dir $@)
	$(CC) $(SAMPLE_CFLAGS) -o $@ $<
# samples/libNAME.c: a library a sample loads (plugin dlopens libplugin.so).
$(BUILD)/samples/lib%.so: samples/lib%.c
	@mkdir -p $(dir $@)
	$(CC) $(SAMPLE_CFLAGS) -fPIC -shared -o $@ $<
$(BUILD)/samples/%: samples/%.cc include/ptscope/trigger.h
	@mkdir -p $(dir $@)
	$(CXX) $(SAMPLE_CFLAGS) -o $@ $<

check: deps
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) tests/run.sh

# Same as check without installing anything (for developers).
test: all
	@BUILD=$(BUILD) tests/run.sh

# Every test again under AddressSanitizer, UBSan and LeakSanitizer, in
# build-asan/; any report fails it (CI runs it after check).
ASAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer
check-asan: deps
	@$(MAKE) --no-print-directory all BUILD=build-asan SANITIZE="$(ASAN_FLAGS)"
	@BUILD=build-asan scripts/check_sanitized.sh asan

# The decoder's threads (decoder/split.c: -j; decoder/crew.c, its thread
# pool) under ThreadSanitizer, in build-tsan/: the tests that decode on
# several threads; any report fails it (CI runs it after check-asan).
TSAN_FLAGS := -fsanitize=thread -fno-omit-frame-pointer
check-tsan: deps
	@$(MAKE) --no-print-directory programs build-tsan/tests/test_crew \
		BUILD=build-tsan SANITIZE="$(TSAN_FLAGS)"
	@BUILD=build-tsan scripts/check_sanitized.sh tsan

# libFuzzer: every target for FUZZ_SECONDS each (docs/fuzzing.md).
fuzz: deps
	@$(MAKE) --no-print-directory fuzz-build BUILD=$(FUZZ_BUILD) \
		CC=$(FUZZ_CC) SANITIZE="$(FUZZ_SANITIZE) -fsanitize=fuzzer-no-link"
	@scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

# The short pass CI runs: CHECK_FUZZ_SECONDS per target.
CHECK_FUZZ_SECONDS ?= 10
check-fuzz:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(CHECK_FUZZ_SECONDS)

# Attached for SOAK_SECONDS (default 120) to a busy sample (docs/safety.md).
soak: deps
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) tests/soak.sh $${SOAK_SECONDS:-120}

demo: deps
	@$(MAKE) --no-print-directory all
	@scripts/demo.sh $(BUILD)

bench: deps
	@$(MAKE) --no-print-directory all OPT=-O2
	@scripts/bench.sh $(BUILD)

# ---- install -------------------------------------------------------------
# What a distribution ships: the program, its man page, the header-only
# trigger API, bash completion, the documentation and, when it was built,
# the QEMU plugin (GPL-2.0-or-later, loaded into qemu-x86_64 by the qemu
# backend), which ptscope finds at ../lib/ptscope/ from its own binary,
# and the samples `ptscope selftest` records (../lib/ptscope/samples/).
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/ptscope
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
INSTALL ?= install
QEMU_PLUGIN := $(BUILD)/qemu/libptscope-qemu.so
DOCS := README.md LICENSE $(wildcard docs/*.md)

install: $(PTSCOPE) $(PLUGIN) $(SAMPLES)
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(INCLUDEDIR)/ptscope $(DESTDIR)$(BASHCOMPDIR) \
		$(DESTDIR)$(DOCDIR)
	$(INSTALL) -m 755 $(PTSCOPE) $(DESTDIR)$(BINDIR)/ptscope
	$(INSTALL) -m 644 docs/ptscope.1 $(DESTDIR)$(MANDIR)/man1/ptscope.1
	$(INSTALL) -m 644 include/ptscope/trigger.h \
		$(DESTDIR)$(INCLUDEDIR)/ptscope/trigger.h
	$(INSTALL) -m 644 contrib/bash-completion/ptscope \
		$(DESTDIR)$(BASHCOMPDIR)/ptscope
	$(INSTALL) -m 644 $(DOCS) $(DESTDIR)$(DOCDIR)/
	$(INSTALL) -d $(DESTDIR)$(LIBDIR)/ptscope/samples
	$(INSTALL) -m 755 $(SAMPLES) $(DESTDIR)$(LIBDIR)/ptscope/samples/
	if [ -f $(QEMU_PLUGIN) ]; then \
		$(INSTALL) -d $(DESTDIR)$(LIBDIR)/ptscope && \
		$(INSTALL) -m 755 $(QEMU_PLUGIN) \
			$(DESTDIR)$(LIBDIR)/ptscope/libptscope-qemu.so; \
	fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/ptscope \
		$(DESTDIR)$(MANDIR)/man1/ptscope.1 \
		$(DESTDIR)$(INCLUDEDIR)/ptscope/trigger.h \
		$(DESTDIR)$(BASHCOMPDIR)/ptscope \
		$(DESTDIR)$(LIBDIR)/ptscope/libptscope-qemu.so
	rm -rf $(DESTDIR)$(LIBDIR)/ptscope/samples
	rm -f $(addprefix $(DESTDIR)$(DOCDIR)/,$(notdir $(DOCS)))
	-rmdir $(DESTDIR)$(INCLUDEDIR)/ptscope $(DESTDIR)$(LIBDIR)/ptscope \
		$(DESTDIR)$(DOCDIR) 2>/dev/null

format:
	clang-format -i $$(git ls-files '*.c' '*.h' | grep -v '^$(BUILD)/')

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj $(BUILD)/pic -name '*.d' 2>/dev/null)

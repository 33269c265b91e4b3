# svc: chat-session service. `make` builds build/svc and build/svc-fcgi.
CC      ?= cc
PKGS    := fcgi json-c yaml-0.1 zlib libcurl libcrypto sqlite3
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lfcgi -ljson-c -lyaml -lz -lcurl -lcrypto -lsqlite3)
WARN    := -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow -Wmissing-prototypes -Wformat=2 \
           -Wcast-qual -Wvla -Wundef
CFLAGS  ?= -O2 -g
# SAN is the sanitizer flags of `make asan`; kept apart so CFLAGS on the command line works.
SAN     ?=
# TEST_HOOKS=1 compiles in the test hooks (SVC_TEST_* in docs/TESTING.md: the crash hook of
# core/fsio.h and the others). `make test` and `make asan` set it and build into their own
# directories, so build/ (what is installed) never carries them (`make no-test-hooks`).
TEST_HOOKS ?=
# The version, from one place: the file VERSION (svc --version, svc-fcgi --version, health,
# the openapi document, make deb's debian/changelog).
VERSION := $(shell cat VERSION)
VERSION_DEF := -DSVC_VERSION='"$(VERSION)"'
ALL_CFLAGS = $(CPPFLAGS) $(CFLAGS) $(SAN) -std=c11 -D_GNU_SOURCE $(WARN) $(PKG_CFLAGS) -Icore \
  $(VERSION_DEF) $(if $(TEST_HOOKS),-DSVC_TEST_HOOKS)
LDLIBS  += $(PKG_LIBS)
# libunistring (case folding and normalisation for search) has no pkg-config file on Debian
LDLIBS  += -lunistring -lm
B       ?= build

CORE_SRC := $(wildcard core/*.c)
CGI_SRC  := $(wildcard cgi/*.c)
CLI_SRC  := $(wildcard cli/*.c)
UNIT_SRC := $(wildcard t/unit/*.c)
CORE_OBJ := $(CORE_SRC:%.c=$(B)/%.o)
CGI_OBJ  := $(CGI_SRC:%.c=$(B)/%.o) $(B)/cgi/openapi_yaml.o
CLI_OBJ  := $(CLI_SRC:%.c=$(B)/%.o)
UNIT_BIN := $(UNIT_SRC:t/unit/%.c=$(B)/t/%.t)

.PHONY: all deps test no-test-hooks unit asan fuzz run bench bench-bodies bench-hosts bench-agent bench-window bench-scale clean format install deb torture valgrind powercut powercut-tools
all: $(B)/svc $(B)/svc-fcgi

deps:
	@scripts/install-deps

$(B)/%.o: %.c $(wildcard core/*.h cgi/*.h cli/*.h) Makefile VERSION
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -c $< -o $@

# docs/openapi.yaml compiled into svc-fcgi as one string (GET /api/openapi.json converts it),
# its object among cgi/'s
%/cgi/openapi_yaml.c: docs/openapi.yaml Makefile
	@mkdir -p $(dir $@)
	@echo "  GEN     $@"
	@{ echo '/* docs/openapi.yaml as a string: written by the Makefile, do not edit */'; \
	  echo 'const char *h_openapi_yaml(void);'; echo 'const char *h_openapi_yaml(void)'; \
	  echo '{'; echo '    return'; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/        "/' -e 's/$$/\\n"/' $<; \
	  echo '        ;'; echo '}'; } >$@

.SECONDARY: $(B)/cgi/openapi_yaml.c build-fuzz/cgi/openapi_yaml.c
$(B)/cgi/openapi_yaml.o: $(B)/cgi/openapi_yaml.c
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -c $< -o $@

$(B)/libsvccore.a: $(CORE_OBJ)
	@rm -f $@
	@ar rcs $@ $^

$(B)/svc: $(CLI_OBJ) $(B)/libsvccore.a
	@echo "  LINK    $@"
	@$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $(CLI_OBJ) $(B)/libsvccore.a $(LDLIBS)

$(B)/svc-fcgi: $(CGI_OBJ) $(B)/libsvccore.a
	@echo "  LINK    $@"
	@$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $(CGI_OBJ) $(B)/libsvccore.a $(LDLIBS)

$(B)/t/%.t: t/unit/%.c t/unit/tap.h $(B)/libsvccore.a
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(ALL_CFLAGS) $(LDFLAGS) -It/unit -o $@ $< $(B)/libsvccore.a $(LDLIBS)

unit: $(UNIT_BIN)

# The whole suite: C unit tests, then integration tests through nginx.
# Built with the test hooks into build-test/ (SVC_BUILD=$PWD/build-test for one test file).
# Every answer the tests get is recorded in BUILD/answers (SVC_ANSWERS) and validated against
# docs/openapi.yaml afterwards (t/openapi/answers.t), even when a test failed.
SUITE = rm -rf $(1)/answers; \
  SVC_ANSWERS=$(abspath $(1))/answers SVC_BUILD=$(abspath $(1)) prove -j2 --timer --exec t/run-one $(1)/t/ t/; \
  suite=$$?; SVC_ANSWERS=$(abspath $(1))/answers prove t/openapi/answers.t && exit $$suite
test: deps
	@$(MAKE) --no-print-directory no-test-hooks
	@$(MAKE) --no-print-directory B=build-test TEST_HOOKS=1 all unit powercut-tools
	$(call SUITE,build-test)

# What gets installed (build/) must hold no test hook: none of their SVC_TEST_ names.
no-test-hooks:
	@$(MAKE) --no-print-directory B=build all
	@if grep -l SVC_TEST_ build/svc build/svc-fcgi; then \
	  echo "test hooks compiled into build/ (put them under #ifdef SVC_TEST_HOOKS)"; exit 1; fi

# The whole suite under AddressSanitizer and UBSan, in its own build dir.
# The flags reach the suite too: a test that builds (t/75-route-access, t/53, t/55) builds
# as the asan build did.
ASAN_VARS = CC=clang CFLAGS="-O1 -g" LDFLAGS="-fsanitize=address,undefined" \
  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
asan: deps
	@$(MAKE) --no-print-directory B=build-asan TEST_HOOKS=1 $(ASAN_VARS) all unit powercut-tools
	$(ASAN_VARS) ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  sh -c '$(call SUITE,build-asan)'

# libFuzzer harnesses (run by `make check`): the config loader, the JSON parser, the session
# readers, the index file, line/run files with fsck, the HTTP request layer, the OpenAI SSE
# reader, import bundles (run from the top directory), the jobs state file and ChatGPT
# exports.
# The library and handlers are compiled once (coverage without libFuzzer's main), in
# parallel; each harness links them. t/fuzz/sandbox.h keeps a harness's files out of ~/.svc.
FUZZ := config json session index files http sse import jobs chatgpt
FUZZ_CFLAGS := -O1 -g -fsanitize=address,undefined -std=c11 -D_GNU_SOURCE $(WARN) -Icore -Icgi $(PKG_CFLAGS) \
  $(VERSION_DEF)
FUZZ_OBJ := $(patsubst %.c,build-fuzz/obj/%.o,$(CORE_SRC) $(filter-out cgi/main.c,$(CGI_SRC)) \
  build-fuzz/cgi/openapi_yaml.c)
FUZZ_BIN := $(FUZZ:%=build-fuzz/%_fuzz)
.SECONDARY: $(FUZZ_OBJ)
fuzz:
	@$(MAKE) --no-print-directory -s -j$(shell nproc 2>/dev/null || echo 2) $(FUZZ_BIN)

build-fuzz/obj/%.o: %.c $(wildcard core/*.h cgi/*.h) Makefile
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	@clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

build-fuzz/obj/build-fuzz/cgi/openapi_yaml.o: build-fuzz/cgi/openapi_yaml.c
	@mkdir -p $(dir $@)
	@clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

build-fuzz/%_fuzz: t/fuzz/%_fuzz.c t/fuzz/sandbox.h $(FUZZ_OBJ)
	@echo "  FUZZ    $@"
	@clang $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(FUZZ_OBJ) $(PKG_LIBS) -lunistring -o $@

# The C unit tests and the CLI tests (every t/*.t that drives the svc tool) under memcheck,
# against the test build (t/09 needs its crash hook): any memcheck error or definite leak
# fails (the reports stay in build-test/vg/); a CLI test that fails only because valgrind
# is slow is reported, not counted.
VG_CLI := $(shell grep -l SvcCliTest t/*.t 2>/dev/null)
valgrind: deps
	@$(MAKE) --no-print-directory B=build-test TEST_HOOKS=1 all unit
	@rm -rf build-test/vg && mkdir -p build-test/vg
	@fail=0; for t in build-test/t/*.t; do \
	  valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
	    --log-file=build-test/vg/unit.%p.log $$t >/dev/null || { echo "valgrind: $$t failed"; fail=1; }; \
	done; \
	SVC_VALGRIND=$(abspath build-test/vg) SVC_BUILD=$(abspath build-test) prove $(VG_CLI) || \
	  echo "valgrind: some CLI tests failed under valgrind (their timing assertions are not made for it); memcheck's verdict follows"; \
	if grep -l "ERROR SUMMARY: [1-9]\|definitely lost: [1-9]" build-test/vg/*.log 2>/dev/null; then fail=1; fi; \
	test $$fail = 0 && echo "valgrind: clean"

# Two pools on one root under SIGKILL for 10,000 turns (not in CI; t/45-torture.t is short).
torture: deps all
	SVC_BUILD=$(abspath $(B)) scripts/torture --turns 10000

# svc under simulated power cuts (docs/TESTING.md "Power cuts"): pcfs, a FUSE filesystem
# that keeps what was not synced apart and loses it at a cut, and nosync.so, a preload that
# turns fsync, fdatasync and syncfs into no-ops (LD_PRELOAD=$(B)/powercut/nosync.so make
# powercut must fail). Test tools, built apart from what gets installed. A cut before each
# sync of a few turns, then POWERCUT_POINTS random cuts of a mixed load (seed POWERCUT_SEED,
# else drawn and printed); LD_PRELOAD reaches the svc processes it starts.
POWERCUT_POINTS ?= 6
POWERCUT_SEED ?=
$(B)/powercut/pcfs: t/powercut/pcfs.c Makefile
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	@$(CC) $(CFLAGS) -std=c11 -D_GNU_SOURCE $(WARN) $$(pkg-config --cflags fuse3) -o $@ $< \
	  $$(pkg-config --libs fuse3) -lpthread
$(B)/powercut/nosync.so: t/powercut/nosync.c Makefile
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	@$(CC) $(CFLAGS) -std=c11 -D_GNU_SOURCE $(WARN) -shared -fPIC -o $@ $<
powercut-tools: $(B)/powercut/pcfs $(B)/powercut/nosync.so
powercut: deps
	@$(MAKE) --no-print-directory all powercut-tools
	SVC_BUILD=$(abspath $(B)) t/powercut/run --points $(POWERCUT_POINTS) $(if $(POWERCUT_SEED),--seed $(POWERCUT_SEED))

# `make check`: every C file formatted as .clang-format says (a dry run, nothing is
# rewritten), the session layout named in core/layout.c only (check-layout), no C library
# function defined by svc (check-libc), then each libFuzzer
# harness for FUZZ_SECONDS on its corpus, t/fuzz/corpus/<name>/ (new inputs go to
# build-fuzz/corpus-<name>/, the committed corpus is only read).
C_FILES := $(wildcard core/*.[ch] cgi/*.[ch] cli/*.[ch] t/unit/*.[ch] t/fuzz/*.[ch] t/powercut/*.c bench/*.c)
FUZZ_SECONDS ?= 30
.PHONY: check check-format check-layout check-libc check-fuzz
check: check-format check-layout check-libc check-fuzz
check-format:
	@echo "  FORMAT  $(words $(C_FILES)) C files"
	@clang-format --dry-run -Werror $(C_FILES)
# No program defines a function of the C library (read, poll, malloc...): each function both
# programs define globally is looked up in libc.so.6's exports and in a list of the usual ones.
LIBC_SO = $(shell $(CC) -print-file-name=libc.so.6)
LIBC_FUNCS := read write poll ppoll select pselect malloc calloc realloc reallocarray free \
  aligned_alloc posix_memalign memalign valloc pvalloc open openat close accept accept4
check-libc: all
	@{ printf '%s\n' $(LIBC_FUNCS); nm -D --defined-only $(LIBC_SO) | \
	  awk '$$2 ~ /^[TWi]$$/ { sub(/@.*/, "", $$3); print $$3 }'; } | sort -u >$(B)/libc.funcs
	@for p in $(B)/svc $(B)/svc-fcgi; do \
	  f=$$(nm --defined-only $$p | awk '$$2 ~ /^[TWi]$$/ { print $$3 }' | sort -u | comm -12 - $(B)/libc.funcs); \
	  if [ -n "$$f" ]; then echo "  LIBC    $$p defines C library functions:" $$f; exit 1; fi; \
	done; echo "  LIBC    no C library function defined in $(B)/svc or $(B)/svc-fcgi"
# The session layout's names (layout.h's enum svc_file) are spelled in core/layout.c alone: a
# string literal holding one in any other source of the programs fails (comments aside).
# cgi/routes.c holds HTTP paths (.../messages/{message_id}/...), not file names.
LAYOUT_SRC := $(filter-out core/layout.c cgi/routes.c,$(wildcard core/*.[ch] cgi/*.[ch] cli/*.[ch]))
LAYOUT_RE  := "[^"]*(session_(%|")|/session_|session\.json|agent_(%|")|agents/agent_|agent\.json|/messages/|message_(%|"|[0-9<])|multi_agents|svc_turns\.jsonl|svc_memory\.json|\.svc\.(run\.)?lock|\.svc_(index|runs|responses|import))|"agents"
check-layout:
	@echo "  LAYOUT  names in core/layout.c only ($(words $(LAYOUT_SRC)) other C files)"
	@for f in $(LAYOUT_SRC); do sed -e 's|/\*.*||' -e 's|^[[:space:]]*\*.*||' $$f | \
	  grep -nE '$(LAYOUT_RE)' | sed "s|^|$$f:|"; done | grep . && \
	  { echo "  LAYOUT  a layout name outside core/layout.c: ask layout.h for it"; exit 1; } || true
# Each harness runs with HOME an empty directory of its own (and no SVC_HOME): a harness
# that writes into it (~/.svc) fails the check.
check-fuzz: fuzz
	@for f in $(FUZZ); do echo "  FUZZ    $$f for $(FUZZ_SECONDS) s on t/fuzz/corpus/$$f"; \
	  rm -rf build-fuzz/home-$$f && mkdir -p build-fuzz/corpus-$$f build-fuzz/home-$$f && \
	  env -u SVC_HOME -u SVC_CONFIG HOME=$(abspath build-fuzz)/home-$$f \
	  build-fuzz/$${f}_fuzz -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    build-fuzz/corpus-$$f t/fuzz/corpus/$$f >build-fuzz/$$f.log 2>&1 || \
	  { tail -n 40 build-fuzz/$$f.log; echo "  FUZZ    $$f FAILED (build-fuzz/$$f.log)"; exit 1; }; \
	  grep -h '^stat::number_of_executed_units' build-fuzz/$$f.log | sed "s/^/  FUZZ    $$f: /"; \
	  if [ -n "$$(ls -A build-fuzz/home-$$f)" ]; then \
	    echo "  FUZZ    $$f FAILED: it wrote into its home:"; find build-fuzz/home-$$f | head; exit 1; fi; \
	done

# make run [PORT=8080]: svc behind a private nginx on 127.0.0.1:PORT until Ctrl-C (exit 0).
# Only what building and serving need (no Apache, browser or test tools). A taken port is
# one line before anything is installed or built.
PORT ?= 8080
ifneq ($(filter run,$(MAKECMDGOALS)),)
PORT_TAKEN := $(shell scripts/serve --check-port '$(PORT)' 2>&1)
$(if $(PORT_TAKEN),$(error $(PORT_TAKEN)))
endif
run:
	@scripts/install-deps --serve
	@$(MAKE) --no-print-directory all
	@SVC_BUILD=$(abspath $(B)) exec scripts/serve --port '$(PORT)'

bench: deps all
	scripts/bench

# The largest bodies against a small turn (docs/BENCH.md "Largest bodies").
bench-bodies: deps all
	SVC_BUILD=$(abspath $(B)) scripts/bench-bodies

# An agent's loop: a client-tool round trip and a stream replay (docs/BENCH.md).
bench-agent: deps all
	scripts/bench-agent

# The window cache's gain in instructions per turn, cache auto against off (docs/CACHES.md).
bench-window: deps all
	scripts/bench-window

# 1k and 100k sessions (BENCH_SCALE_SIZES adds 1000000): start, list, memory, fsck (docs/BENCH.md).
bench-scale: deps all
	SVC_BUILD=$(abspath $(B)) scripts/bench-scale

# Several hosts on one GlusterFS volume against one host and local disk (docs/BENCH.md).
bench-hosts: deps all
	SVC_BUILD=$(abspath build) perl bench/hosts.pl

format:
	clang-format -i $(C_FILES)

# make install [PREFIX=/usr/local] [DESTDIR=...]: programs, man pages, units, sysusers.d,
# tmpfiles.d, the nginx and Apache files, the README with the guides in docs/ (share/doc/svc,
# docs/ kept as a directory so the README's links hold), and /etc/svc/agents.yaml (never
# over an existing one; exports go to /var/lib/svc/exports, which the units and tmpfiles.d
# create, instead of the seed's ~/Desktop/svc-chat-export for a person's machine). The nginx
# files name the directory they are installed in (NGINXDIR) and each other through
# NGINX_INCLUDE: `svc` (relative to nginx's configuration directory: /etc/nginx/svc) unless
# given, as make deb gives /usr/share/svc/nginx. svc-jobs.service/.timer are installed when
# nginx/ has them.
PREFIX     ?= /usr/local
SYSCONFDIR ?= /etc
BINDIR     ?= $(PREFIX)/bin
SBINDIR    ?= $(BINDIR)
DATADIR    ?= $(PREFIX)/share/svc
MANDIR     ?= $(PREFIX)/share/man
UNITDIR    ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
NGINXDIR   ?= $(SYSCONFDIR)/nginx/svc
NGINX_INCLUDE ?= svc
DASHBOARDDIR ?= $(NGINXDIR)/dashboard
MODELDIR   ?= $(NGINXDIR)/model.d
MODEL_INCLUDE ?= $(NGINX_INCLUDE)/model.d
UNITS      := nginx/svc.service nginx/svc.socket $(wildcard nginx/svc-jobs.service nginx/svc-jobs.timer)
NGINX_FILES := svc.conf svc-api.conf svc-model.conf svc-stream.conf svc-errors.conf \
               fastcgi_params.conf svc-upstream.conf nginx-example.conf
MAN_PAGES  := $(wildcard man/*.[1-8])
NGINX_SED  := -e 's|include svc/model.d/|include $(MODEL_INCLUDE)/|' -e 's|include svc/|include $(NGINX_INCLUDE)/|' \
  -e 's|/etc/nginx/svc/dashboard/|$(DASHBOARDDIR)/|g' -e 's|/etc/nginx/svc/model.d/|$(MODELDIR)/|g' \
  -e 's|/etc/nginx/svc/|$(NGINXDIR)/|g'
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) \
	  $(DESTDIR)$(TMPFILESDIR) $(DESTDIR)$(NGINXDIR) $(DESTDIR)$(MODELDIR) $(DESTDIR)$(DASHBOARDDIR)/vendor \
	  $(DESTDIR)$(DATADIR)/apache $(DESTDIR)$(PREFIX)/share/doc/svc/docs
	install -d -m 0750 $(DESTDIR)$(SYSCONFDIR)/svc
	install -m 0755 $(B)/svc $(DESTDIR)$(BINDIR)/
	install -m 0755 $(B)/svc-fcgi $(DESTDIR)$(SBINDIR)/
	for m in $(MAN_PAGES); do install -d $(DESTDIR)$(MANDIR)/man$${m##*.} && \
	  install -m 0644 $$m $(DESTDIR)$(MANDIR)/man$${m##*.}/ || exit 1; done
	for u in $(UNITS); do \
	  sed -e 's|/usr/local/bin/svc-fcgi|$(SBINDIR)/svc-fcgi|g' -e 's|/usr/local/bin/|$(BINDIR)/|g' $$u \
	    > $(DESTDIR)$(UNITDIR)/$${u##*/} && chmod 0644 $(DESTDIR)$(UNITDIR)/$${u##*/} || exit 1; done
	install -m 0644 nginx/svc.sysusers $(DESTDIR)$(SYSUSERSDIR)/svc.conf
	install -m 0644 nginx/svc.tmpfiles $(DESTDIR)$(TMPFILESDIR)/svc.conf
	for f in $(NGINX_FILES); do \
	  sed $(NGINX_SED) nginx/$$f > $(DESTDIR)$(NGINXDIR)/$$f && chmod 0644 $(DESTDIR)$(NGINXDIR)/$$f || exit 1; done
	install -m 0644 nginx/model.d/README $(DESTDIR)$(MODELDIR)/
	install -m 0644 nginx/dashboard/*.html nginx/dashboard/*.css nginx/dashboard/*.js $(DESTDIR)$(DASHBOARDDIR)/
	install -m 0644 nginx/dashboard/vendor/* $(DESTDIR)$(DASHBOARDDIR)/vendor/
	for f in nginx/apache-*.conf; do \
	  sed 's|Define SVC_BIN_DIR /usr/local/bin|Define SVC_BIN_DIR $(SBINDIR)|' $$f \
	    > $(DESTDIR)$(DATADIR)/apache/$${f##*/} && chmod 0644 $(DESTDIR)$(DATADIR)/apache/$${f##*/} || exit 1; done
	install -m 0644 README $(DESTDIR)$(PREFIX)/share/doc/svc/
	install -m 0644 docs/*.md docs/*.png docs/openapi.yaml $(DESTDIR)$(PREFIX)/share/doc/svc/docs/
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/svc/agents.yaml ]; then \
	  echo "  KEEP    $(DESTDIR)$(SYSCONFDIR)/svc/agents.yaml (exists; the reference is in $(DATADIR)/agents.yaml)"; \
	else sed 's|^\(  export_default_dir:\) ~/Desktop/svc-chat-export  |\1 /var/lib/svc/exports|' conf/agents.yaml \
	  > $(DESTDIR)$(SYSCONFDIR)/svc/agents.yaml && chmod 0640 $(DESTDIR)$(SYSCONFDIR)/svc/agents.yaml; fi
	install -m 0644 conf/agents.yaml $(DESTDIR)$(DATADIR)/agents.yaml

# make deb [DEB_DIR=build/deb]: the Debian package, built by Debian's tools
# (dpkg-buildpackage -b -us -uc, debian/) in a copy of the tree under DEB_DIR, so that the
# .deb, .changes and .buildinfo land in DEB_DIR and never beside the tree; debian/changelog
# is written there from VERSION; lintian must report no error (debian/README.source lists
# the warnings kept and why).
DEB_DIR ?= build/deb
deb:
	@scripts/deb '$(DEB_DIR)'

clean:
	rm -rf build build-asan build-test build-fuzz

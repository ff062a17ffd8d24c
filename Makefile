# screentime — build, test, install. See README.md.
#
#   sudo make install   system packages, release build, install, start the agent
#   make test           system packages, build, every test suite (fails if any test skipped)

PREFIX      ?= /usr/local
SYSCONFDIR  ?= /etc
DESTDIR     ?=
SWIFT       ?= swift

# Debian packages the build and the tests need. Each later part adds its own here.
#   publicsuffix  the Public Suffix List the tests parse (and the agent reads)
#   tzdata        the time zones the schedule tests run in (Europe/Berlin, America/New_York)
DEB_PACKAGES := publicsuffix tzdata

SWIFT_SOURCES := $(shell find Sources Tests Benchmarks -name '*.swift' 2>/dev/null) Package.swift

.PHONY: all deps build test bench lint format install uninstall clean

all: build

# Installs only what is missing, quietly when nothing is. As a non-root user it names what is
# missing and stops, rather than asking for a password halfway through.
deps:
	@missing=""; \
	for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" -ne 0 ]; then \
	    echo "missing system packages:$$missing"; \
	    echo "install them with: sudo make deps   (or: sudo apt-get install$$missing)"; \
	    exit 1; \
	  fi; \
	  echo "installing:$$missing"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

build: deps
	$(SWIFT) build -c release

test: deps
	$(SWIFT) build --build-tests
	scripts/run-tests

bench: deps
	$(SWIFT) run -c release ScreenTimeBenchmarks

lint:
	$(SWIFT) format lint --strict --parallel --recursive $(SWIFT_SOURCES)

format:
	$(SWIFT) format format --in-place --parallel --recursive $(SWIFT_SOURCES)

# Installs what exists so far: configuration defaults (never overwriting a guardian's edits) and
# the release binaries. The agent and its service arrive with the agent's issue.
install: build
	install -d $(DESTDIR)$(SYSCONFDIR)/screentime
	@for f in $$(cd etc/screentime && find . -type f | sed "s,^\./,,"); do \
	  if [ -e "$(DESTDIR)$(SYSCONFDIR)/screentime/$$f" ]; then \
	    echo "keeping $(SYSCONFDIR)/screentime/$$f"; \
	  else \
	    install -D -m 0644 "etc/screentime/$$f" "$(DESTDIR)$(SYSCONFDIR)/screentime/$$f"; \
	  fi; \
	done
	@bin=$$($(SWIFT) build -c release --show-bin-path); \
	for b in screentimed screentime screentime-shield; do \
	  if [ -x "$$bin/$$b" ]; then install -D -m 0755 "$$bin/$$b" "$(DESTDIR)$(PREFIX)/bin/$$b"; fi; \
	done
	@echo "installed screentime under $(DESTDIR)$(PREFIX) and $(DESTDIR)$(SYSCONFDIR)/screentime"

# Keeps the configuration unless PURGE=1.
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/screentimed $(DESTDIR)$(PREFIX)/bin/screentime $(DESTDIR)$(PREFIX)/bin/screentime-shield
	@if [ "$(PURGE)" = "1" ]; then rm -rf $(DESTDIR)$(SYSCONFDIR)/screentime; fi

clean:
	rm -rf .build

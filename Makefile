# screentime — build, test, install. See README.md.
#
#   sudo make install   system packages, release build, install, start the agent
#   make test           system packages, build, every test suite (fails if any test skipped)

PREFIX      ?= /usr/local
SYSCONFDIR  ?= /etc
DESTDIR     ?=
SWIFT       ?= swift

# Debian packages the build and the tests need. Each later part adds its own here.
#   publicsuffix    the Public Suffix List the tests parse (and the agent reads)
#   tzdata          the time zones the schedule tests run in (Europe/Berlin, America/New_York)
#   libpam0g-dev    PAM, for a guardian's password given in a child's session
#   libsqlite3-dev  SQLite, the agent's state (GRDB)
#   passwd util-linux  useradd/groupadd/chpasswd and setpriv, for the integration tests' users
#   python3-dnspython  the reference DNS decoder the DNS parser is differential-tested against
#   libnetfilter-queue-dev  the NFQUEUE the agent reads the children's DNS from
#   iptables        the agent's own chains that send a child's DNS to that queue
#   iproute2        network namespaces for the DNS integration tests
#   dnsmasq-base    the real resolver the DNS tests and benchmark ask (the binary, no service)
#   bind9-dnsutils  dig, the DNS client the tests run as a child
#   dnsperf         the DNS load generator of `make bench`
#   gcc libc6-dev   the C fixture programs the process-shield tests and benchmark run as a child
#   procps          pkill, to end what a test user left running
#   libcap-dev      libcap, with which the agent drops the capabilities it does not need
#   uidmap          newuidmap, with which a test child runs as one of its subordinate uids
#   libnl-3-dev libnl-route-3-dev  libnl-3, through which the agent opens every netlink socket (the
#                   proc connector; libnl-route-3 brings up an extension's loopback)
#   tshark          the reference reader the TLS ClientHello parser is differential-tested against
#   curl openssl    the real HTTPS clients (and the test certificates) of the connection tests
#   iperf3          the bulk download of `make bench`'s connection figures
#   chromium firefox-esr  the real browsers (headless) that must not load a shielded site through
#                   a custom DoH provider while the agent's browser policies are in place
#   libnss3-tools   certutil, which makes those browsers trust the tests' certificate authority
#   libxcb1-dev libxcb-res0-dev libxcb-sync-dev  XCB with X-Resource and SYNC: the agent's own reading
#                   of an X11 session's focus, window owners and idle time
#   xvfb openbox xdotool x11-utils x11-apps xterm xauth  the real X11 desktops the usage tests and
#                   benchmark run as a child (a server, a window manager, clients, focus switching)
#   sway foot       a real Wayland desktop (headless sway and its terminal) run as a child
#   weston          a Wayland compositor that is not sway (headless), whose focus cannot be read
#   libsystemd-dev  sd-bus, through which the agent reads logind's sessions and their hints
#   dbus-daemon python3-dbusmock  the tests' own system bus, with a mock of logind on it
#   gnome-shell     GNOME's compositor (headless), with the screentime-focus extension
#   libgtk-4-dev    GTK 4, the shield window's toolkit
#   netpbm          xwdtopnm and pnmtopng: the tests' screenshots of the shield window
DEB_PACKAGES := publicsuffix tzdata libpam0g-dev libsqlite3-dev passwd util-linux python3-dnspython \
	libnetfilter-queue-dev iptables iproute2 dnsmasq-base bind9-dnsutils dnsperf gcc libc6-dev procps \
	libcap-dev uidmap libnl-3-dev libnl-route-3-dev tshark curl openssl iperf3 \
	chromium firefox-esr libnss3-tools \
	libxcb1-dev libxcb-res0-dev libxcb-sync-dev xvfb openbox xdotool x11-utils x11-apps xterm xauth sway foot \
	libsystemd-dev dbus-daemon python3-dbusmock weston gnome-shell libgtk-4-dev netpbm

SWIFT_SOURCES := $(shell find Sources Tests Benchmarks Examples -name '*.swift' 2>/dev/null) Package.swift

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
	$(SWIFT) build -c release
	$(SWIFT) run -c release ScreenTimeBenchmarks
	@echo
	Benchmarks/dns-filter.sh "$$($(SWIFT) build -c release --show-bin-path)"
	@echo
	Benchmarks/process-shield.sh "$$($(SWIFT) build -c release --show-bin-path)"
	@echo
	Benchmarks/proc-connector.sh "$$($(SWIFT) build -c release --show-bin-path)"
	@echo
	Benchmarks/connections.sh "$$($(SWIFT) build -c release --show-bin-path)"
	@echo
	Benchmarks/focus.sh "$$($(SWIFT) build -c release --show-bin-path)"
	@echo
	Benchmarks/scheduler.sh "$$($(SWIFT) build -c release --show-bin-path)"
	@echo
	Benchmarks/shield.sh "$$($(SWIFT) build -c release --show-bin-path)"

lint:
	$(SWIFT) format lint --strict --parallel --recursive $(SWIFT_SOURCES)

format:
	$(SWIFT) format format --in-place --parallel --recursive $(SWIFT_SOURCES)

GUARDIAN_GROUP ?= screentime-guardians
# The account guardian apps' extensions run as (the launcher starts them, without network).
EXTENSION_USER ?= screentime-ext
# The GNOME Shell extension that tells the agent the window in front (packaging/gnome-shell).
SHELL_EXTENSION := screentime-focus@screentime.local
BINARIES := screentimed screentime screentime-shield

# Installs the binaries, configuration defaults (never overwriting a guardian's edits), the PAM
# stack, the guardian group, the state and run directories, and starts the agent: through systemd
# where systemd runs, else under packaging/screentimed-supervise (pid file, restart on crash).
install: build
	@bin=$$($(SWIFT) build -c release --show-bin-path); \
	for b in $(BINARIES); do install -D -m 0755 "$$bin/$$b" "$(DESTDIR)$(PREFIX)/bin/$$b"; done
	install -D -m 0755 packaging/screentimed-supervise $(DESTDIR)$(PREFIX)/sbin/screentimed-supervise
	install -d $(DESTDIR)$(SYSCONFDIR)/screentime/categories
	@for f in $$(cd etc/screentime && find . -type f | sed "s,^\./,,"); do \
	  if [ -e "$(DESTDIR)$(SYSCONFDIR)/screentime/$$f" ]; then \
	    echo "keeping $(SYSCONFDIR)/screentime/$$f"; \
	  else \
	    install -D -m 0644 "etc/screentime/$$f" "$(DESTDIR)$(SYSCONFDIR)/screentime/$$f"; \
	  fi; \
	done
	install -D -m 0644 packaging/pam.d/screentime $(DESTDIR)$(SYSCONFDIR)/pam.d/screentime
	for f in metadata.json extension.js; do \
	  install -D -m 0644 "packaging/gnome-shell/$(SHELL_EXTENSION)/$$f" \
	    "$(DESTDIR)$(PREFIX)/share/gnome-shell/extensions/$(SHELL_EXTENSION)/$$f"; \
	done
	sed 's,/usr/local/bin/,$(PREFIX)/bin/,' packaging/screentimed.service > screentimed.service.tmp && \
	  install -D -m 0644 screentimed.service.tmp $(DESTDIR)/etc/systemd/system/screentimed.service; \
	  rm -f screentimed.service.tmp
	install -d -m 0700 $(DESTDIR)/var/lib/screentime
	@if [ -z "$(DESTDIR)" ]; then \
	  getent group $(GUARDIAN_GROUP) >/dev/null || groupadd --system $(GUARDIAN_GROUP); \
	  getent passwd $(EXTENSION_USER) >/dev/null || \
	    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin $(EXTENSION_USER); \
	  install -d -m 0755 /run/screentime; \
	  if [ -d /run/systemd/system ]; then \
	    systemctl daemon-reload && systemctl enable screentimed.service && systemctl restart screentimed.service; \
	    echo "screentimed runs under systemd (systemctl status screentimed)"; \
	  else \
	    SCREENTIMED=$(PREFIX)/bin/screentimed $(PREFIX)/sbin/screentimed-supervise restart; \
	  fi; \
	  echo "installed. Guardians are root and members of $(GUARDIAN_GROUP): sudo usermod -aG $(GUARDIAN_GROUP) YOU"; \
	fi

# Stops the agent and removes what install put in place; keeps the state, the configuration and
# the guardian group unless PURGE=1. The agent's firewall chains go with it (stopping the agent
# alone leaves them, so that the children's DNS fails closed).
uninstall:
	@if [ -z "$(DESTDIR)" ]; then \
	  if [ -d /run/systemd/system ]; then systemctl disable --now screentimed.service 2>/dev/null || true; \
	  elif [ -x $(PREFIX)/sbin/screentimed-supervise ]; then $(PREFIX)/sbin/screentimed-supervise stop; fi; \
	  if [ -x $(PREFIX)/bin/screentimed ]; then $(PREFIX)/bin/screentimed --remove-firewall || true; fi; \
	fi
	for b in $(BINARIES); do rm -f $(DESTDIR)$(PREFIX)/bin/$$b; done
	rm -f $(DESTDIR)$(PREFIX)/sbin/screentimed-supervise $(DESTDIR)/etc/systemd/system/screentimed.service
	rm -f $(DESTDIR)$(SYSCONFDIR)/pam.d/screentime
	rm -rf $(DESTDIR)$(PREFIX)/share/gnome-shell/extensions/$(SHELL_EXTENSION)
	@if [ "$(PURGE)" = "1" ]; then \
	  rm -rf $(DESTDIR)$(SYSCONFDIR)/screentime $(DESTDIR)/var/lib/screentime $(DESTDIR)/var/log/screentime; \
	  if [ -z "$(DESTDIR)" ]; then groupdel $(GUARDIAN_GROUP) 2>/dev/null || true; userdel $(EXTENSION_USER) 2>/dev/null || true; fi; \
	  echo "removed screentime, its state and configuration"; \
	else \
	  echo "removed screentime; kept /var/lib/screentime and $(SYSCONFDIR)/screentime (make uninstall PURGE=1 removes them)"; \
	fi

clean:
	rm -rf .build

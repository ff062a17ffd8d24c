# screentime — build, test, install. See README.md.
#
#   sudo make install   system packages, release build, install, start the agent
#   make test           system packages, the house format (make lint), build, every test suite
#                       (fails if any test skipped)

PREFIX      ?= /usr/local
SYSCONFDIR  ?= /etc
DESTDIR     ?=
SWIFT       ?= swift

# Debian packages, by purpose: `sudo make install` installs what building and running need
# (RUN_PACKAGES, BUILD_PACKAGES), `make deb` adds PACKAGING_PACKAGES, and `make test` and
# `make bench` add TEST_PACKAGES. The package's Depends list only what running needs (its
# shared libraries, and RUN_PACKAGES).
#
# Running:
#   publicsuffix    the Public Suffix List the agent reads (a shielded site's registrable domain)
#   tzdata          the time zones schedules and downtime are kept in
#   passwd          useradd/groupadd, for the accounts the setup makes
#   iptables        the agent's own chains that send a child's DNS and connections to its queue
RUN_PACKAGES := publicsuffix tzdata passwd iptables
# Building (the headers and libraries the programs link):
#   libc6-dev       C headers, for the package's own C targets
#   libpam0g-dev    PAM, for a guardian's password given in a child's session
#   libsqlite3-dev  SQLite, the agent's state (ScreenTimeSQLite)
#   libnetfilter-queue-dev  the NFQUEUE the agent reads the children's DNS from
#   libcap-dev      libcap, with which the agent drops the capabilities it does not need
#   libnl-3-dev libnl-route-3-dev  libnl-3, through which the agent opens every netlink socket (the
#                   proc connector; libnl-route-3 brings up an extension's loopback)
#   libxcb1-dev libxcb-res0-dev libxcb-sync-dev libxcb-xinput-dev  XCB with X-Resource, SYNC and
#                   XInput 2: the agent's own reading of an X11 session's focus, window owners,
#                   clicks and idle time
#   libsystemd-dev  sd-bus, through which the agent reads logind's sessions and their hints
#   libbpf-dev      libbpf, which loads the DNS fast path's kernel programs (their compiled code is
#                   in Sources/CDNSFastPath, made by `make bpf` with the Swift toolchain's clang)
#   libgtk-4-dev    GTK 4, the shield window's toolkit
#   libqrencode-dev the QR code `screentime web pair` prints for a phone's camera
#   gcc             the PAM module (plain C, built outside SwiftPM)
#   patchelf        the installed programs' library path, set to the Swift runtime installed with
#                   them (see RELEASE)
BUILD_PACKAGES := gcc libc6-dev libpam0g-dev libsqlite3-dev libnetfilter-queue-dev libcap-dev \
	libnl-3-dev libnl-route-3-dev libxcb1-dev libxcb-res0-dev libxcb-sync-dev libxcb-xinput-dev \
	libsystemd-dev libbpf-dev libgtk-4-dev libqrencode-dev patchelf
# Packaging (`make deb`):
#   dpkg-dev        dpkg-shlibdeps: the package's dependencies, computed from its binaries
PACKAGING_PACKAGES := dpkg-dev
# Testing and benchmarks (`make test`, `make bench`), never on a family's machine by
# `make install`:
#   python3-dnspython  the reference DNS decoder the DNS parser is differential-tested against
#   util-linux      setpriv, with which the integration tests run programs as their test users
#   iproute2        network namespaces for the DNS integration tests
#   dnsmasq-base    the real resolver the DNS tests and benchmark ask (the binary, no service)
#   bind9-dnsutils  dig, the DNS client the tests run as a child
#   dnsperf         the DNS load generator of `make bench`
#   gcc             (also) the C fixture programs the process-shield tests and benchmark run as a child
#   procps          pkill, to end what a test user left running
#   zbar-tools      zbarimg, the QR reader the pairing code's test reads it back with
#   uidmap          newuidmap, with which a test child runs as one of its subordinate uids
#   tshark          the reference reader the TLS ClientHello parser is differential-tested against
#   curl openssl    the real HTTPS clients (and the test certificates) of the connection tests
#   iperf3          the bulk download of `make bench`'s connection figures
#   chromium firefox-esr  the real browsers (headless) that must not load a shielded site through
#                   a custom DoH provider while the agent's browser policies are in place
#   libnss3-tools   certutil, which makes those browsers trust the tests' certificate authority
#   chromium-driver python3-selenium  a guardian's phone: Chromium driven headless in a
#                   phone-sized window through the dashboard's pages
#   libxcb-shape0-dev  the X shape extension a test's hostile game uses (a window clicks go through)
#   xvfb openbox xdotool x11-utils x11-apps xterm xauth  the real X11 desktops the usage tests and
#                   benchmark run as a child (a server, a window manager, clients, focus switching)
#   sway foot       a real Wayland desktop (headless sway and its terminal) run as a child
#   weston          a Wayland compositor that is not sway (headless), whose focus cannot be read
#   dbus-daemon python3-dbusmock  the tests' own system bus, with a mock of logind on it
#   gnome-shell     GNOME's compositor (headless), with the screentime-focus extension
#   kwin-wayland    KDE's compositor (headless, --virtual), with the screentime-focus script
#   netpbm          xwdtopnm and pnmtopng: the tests' screenshots of the shield window
#   debootstrap     the clean Debian 12 root the package test installs the package into
#   lintian         the package's checks (make lint-deb)
#   gdb             the threads of a test run that stalled, printed before it is ended (scripts/run-tests)
#   logrotate       reads the package's rotation of the agent's log, in the package test
#   valgrind        callgrind, which finds the functions the agent runs (make link-order)
#   conntrack       takes a connection's entry out of the kernel's table, as time does, in a test
#   nftables        nft, with which `make bench` sets up the least a DNS filter in netfilter costs
TEST_PACKAGES := python3-dnspython util-linux iproute2 dnsmasq-base bind9-dnsutils dnsperf gcc procps \
	zbar-tools uidmap tshark curl openssl iperf3 chromium firefox-esr libnss3-tools chromium-driver \
	python3-selenium libxcb-shape0-dev xvfb openbox xdotool x11-utils x11-apps xterm xauth sway foot \
	dbus-daemon python3-dbusmock weston gnome-shell kwin-wayland netpbm debootstrap lintian gdb logrotate valgrind conntrack nftables

SWIFT_SOURCES := $(shell find Sources Tests Benchmarks Examples -name '*.swift' 2>/dev/null) Package.swift
# What the installed programs (screentimed, screentime-web, screentime-shield, screentime) are made
# of, of this package's own: these import FoundationEssentials and never Foundation, which would
# load ICU and its libraries into the agent, the dashboard (10 MB of memory), each shield window the
# child is shown and each command, and bring ICU's 40 MB into the package.
ESSENTIALS_ONLY := Sources/ScreenTimeCore Sources/ScreenTimeIPC Sources/ScreenTimeClient \
  Sources/ScreenTimeReports Sources/ScreenTimeWeb Sources/screentime-web Sources/screentime-shield \
  Sources/FamilyControls Sources/screentime Sources/ScreenTimeSQLite Sources/ScreenTimeAgent \
  Sources/LinuxSupport Sources/screentimed

.PHONY: all deps test-deps deb-deps print-packages build docs stage test package-in-a-clean-root package-test lint-deb bench bpf link-order lint format install uninstall deb clean

all: build

# Installs only what is missing of the packages given, quietly when nothing is. As a non-root
# user it names what is missing and stops, rather than asking for a password halfway through.
install_packages = @missing=""; \
	for p in $(1); do \
	  dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" -ne 0 ]; then \
	    echo "missing system packages:$$missing"; \
	    echo "install them with: sudo make $@   (or: sudo apt-get install$$missing)"; \
	    exit 1; \
	  fi; \
	  echo "installing:$$missing"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# The package lists, for the package test (what `sudo make install` would install).
print-packages:
	@echo "run: $(RUN_PACKAGES)"; echo "build: $(BUILD_PACKAGES)"
	@echo "packaging: $(PACKAGING_PACKAGES)"; echo "test: $(TEST_PACKAGES)"

# What building and running need (`sudo make install`).
deps:
	$(call install_packages,$(RUN_PACKAGES) $(BUILD_PACKAGES))

# And what packaging, the tests and the benchmarks need.
test-deps:
	$(call install_packages,$(RUN_PACKAGES) $(BUILD_PACKAGES) $(PACKAGING_PACKAGES) $(TEST_PACKAGES))

deb-deps:
	$(call install_packages,$(RUN_PACKAGES) $(BUILD_PACKAGES) $(PACKAGING_PACKAGES))

# The PAM module: plain C, loaded into every program that logs anyone in (login, sshd, su, the
# display manager), so not linked by SwiftPM, which would bring the Swift runtime. It exports the
# pam_sm_* functions alone.
PAM_MODULE := .build/pam_screentime.so
$(PAM_MODULE): Sources/pam_screentime/pam_screentime.c Sources/pam_screentime/json.c Sources/pam_screentime/json.h
	@mkdir -p .build
	printf '{ global: pam_sm_*; local: *; };\n' > .build/pam_screentime.map
	$(CC) -shared -fPIC -O2 -Wall -Wextra -Werror -fstack-protector-strong -D_FORTIFY_SOURCE=2 \
	  -Wl,-z,relro,-z,now -Wl,--version-script=.build/pam_screentime.map $(LDFLAGS) \
	  -o $@ Sources/pam_screentime/pam_screentime.c Sources/pam_screentime/json.c -lpam

build: deps $(PAM_MODULE)
	$(SWIFT) build $(RELEASE)

# Prints how long each part took (build, the tests' parts, the package's build and test). One
# release build serves all of it: the tests run on the programs `make deb` then packages, and
# `make install` installs. The package is made from that build (`make deb` finds it done) and
# installed into a clean Debian root beside the root integration tests, at the lowest CPU
# priority (its agent has names, uids and marks of its own); then, once no test runs, on this
# machine itself.
test: test-deps lint
	@began=$$(cut -d. -f1 /proc/uptime); $(SWIFT) build $(RELEASE) --build-tests || exit 1; \
	echo "make test: build $$(( $$(cut -d. -f1 /proc/uptime) - began )) s"
	SCREENTIME_TESTS_BIN=$$($(SWIFT) build $(RELEASE) --show-bin-path) \
	  SCREENTIME_BESIDE_TESTS='$(MAKE) --no-print-directory package-in-a-clean-root' \
	  SCREENTIME_BESIDE_LOG=$(CURDIR)/.build/package.log scripts/run-tests
	@cat .build/package.log
	@began=$$(cut -d. -f1 /proc/uptime); Tests/Package/run --on-this-machine $(DEB)/screentime_$(VERSION)_$(ARCH).deb \
	  || exit 1; echo "make test: package test on this machine $$(( $$(cut -d. -f1 /proc/uptime) - began )) s"

# make test's package part beside the tests: the package of the tested build (quickly compressed),
# and its test in a clean Debian root.
package-in-a-clean-root:
	@began=$$(cut -d. -f1 /proc/uptime); $(MAKE) --no-print-directory deb DEB_COMPRESSION='-Zxz -z1' || exit 1; \
	echo "make test: package build $$(( $$(cut -d. -f1 /proc/uptime) - began )) s"
	@began=$$(cut -d. -f1 /proc/uptime); Tests/Package/run --in-a-clean-root $(DEB)/screentime_$(VERSION)_$(ARCH).deb \
	  || exit 1; echo "make test: package test in a clean root $$(( $$(cut -d. -f1 /proc/uptime) - began )) s"

# The package, built and installed into a clean Debian 12 root, then purged (Tests/Package/run).
package-test: test-deps deb
	Tests/Package/run $(DEB)/screentime_$(VERSION)_$(ARCH).deb

# lintian's view of the package (its remaining warnings are explained in README's packaging notes).
lint-deb: test-deps deb
	lintian --no-tag-display-limit $(DEB)/screentime_$(VERSION)_$(ARCH).deb

bench: test-deps $(PAM_MODULE)
	$(SWIFT) build $(RELEASE)
	$(SWIFT) run $(RELEASE) ScreenTimeBenchmarks
	@echo
	Benchmarks/dns-filter.sh "$$($(SWIFT) build $(RELEASE) --show-bin-path)"
	@echo
	Benchmarks/process-shield.sh "$$($(SWIFT) build $(RELEASE) --show-bin-path)"
	@echo
	Benchmarks/proc-connector.sh "$$($(SWIFT) build $(RELEASE) --show-bin-path)"
	@echo
	Benchmarks/connections.sh "$$($(SWIFT) build $(RELEASE) --show-bin-path)"
	@echo
	Benchmarks/focus.sh "$$($(SWIFT) build $(RELEASE) --show-bin-path)"
	@echo
	Benchmarks/scheduler.sh "$$($(SWIFT) build $(RELEASE) --show-bin-path)"
	@echo
	Benchmarks/shield.sh "$$($(SWIFT) build $(RELEASE) --show-bin-path)"
	@echo
	Benchmarks/web.sh "$$($(SWIFT) build $(RELEASE) --show-bin-path)"
	@echo
	Benchmarks/pam-login.sh "$$($(SWIFT) build $(RELEASE) --show-bin-path)"
	@echo
	Benchmarks/agent-memory.sh "$$($(SWIFT) build $(RELEASE) --show-bin-path)"

# The DNS fast path's kernel programs (Sources/CDNSFastPath/bpf), compiled by the clang that comes
# with Swift into the header the agent embeds them from; again after a change to them. The
# header is committed: building needs no BPF compiler, and a test checks it is current.
BPF_SOURCE := Sources/CDNSFastPath/bpf/dns-fast-path.bpf.c
BPF_HEADER := Sources/CDNSFastPath/dns_fast_path_object.h
bpf:
	scripts/bpf-object $(BPF_SOURCE) $(BPF_HEADER)

# The agent's layout of its code (scripts/link-order): again after a change to what it runs often.
link-order: test-deps
	$(SWIFT) build $(RELEASE) --product screentimed
	$(SWIFT) build $(RELEASE) --product screentime
	scripts/link-order "$$($(SWIFT) build $(RELEASE) --show-bin-path)"

lint:
	@$(SWIFT) format lint --strict --parallel --recursive $(SWIFT_SOURCES) && echo "lint: the house format holds"
	@if grep -rnE '^(@[a-zA-Z]+ )*((public|package|internal) )?import (Glibc|C[A-Z][A-Za-z]*)$$' Sources/ScreenTimeAgent; then \
	  echo "lint: ScreenTimeAgent imports Glibc or a C shim above; its system calls belong in LinuxSupport"; exit 1; \
	else echo "lint: ScreenTimeAgent makes no system call of its own"; fi
	@if grep -rnE '^(@[a-zA-Z]+ )*((public|package|internal) )?import Foundation$$' $(ESSENTIALS_ONLY); then \
	  echo "lint: the modules above are the installed programs' and import FoundationEssentials only (Foundation brings ICU)"; \
	  exit 1; else echo "lint: the installed programs' modules import FoundationEssentials, not Foundation"; fi
	@long=$$(find Sources -name '*.swift' -exec awk 'END { if (NR > 400) print FILENAME ": " NR " lines" }' {} \;); \
	if [ -n "$$long" ]; then echo "$$long"; echo "lint: a Swift file in Sources is over 400 lines; split it by concern"; exit 1; \
	else echo "lint: no Swift file in Sources is over 400 lines"; fi

format:
	$(SWIFT) format format --in-place --parallel --recursive $(SWIFT_SOURCES)

GUARDIAN_GROUP ?= screentime-guardians
# The account guardian apps' extensions run as (the launcher starts them, without network).
EXTENSION_USER ?= screentime-ext
# The GNOME Shell extension that tells the agent the window in front (packaging/gnome-shell).
SHELL_EXTENSION := screentime-focus@screentime.local
# KWin's script that tells the same, through the agent's relay (packaging/kwin).
KWIN_SCRIPT := screentime-focus
# The release build: what `make install` and `make deb` install, and what `make test` tests (one
# build, so the tests run on the programs a family gets). The command line, the shield window and
# the dashboard link the Swift runtime as shared libraries: `stage` installs the ones they use
# once, in lib/screentime/, and points the programs there (their RUNPATH). The agent, which runs
# all day, has the parts of the runtime it uses linked in (Package.swift): fewer resident pages
# than the shared libraries cost it. Optimised for size (-Osize): a smaller program is fewer pages
# in memory; the agent's time goes to the kernel, not its code (docs/developer-guide.md). Each
# function in a section of its own (-function-sections), so that the linker drops the ones nothing
# calls and lays out the agent's in the order of Sources/screentimed/link-order.txt (`make
# link-order`): the code it runs together, in fewer resident pages.
# (Package.swift compiles the modules the tests `@testable import` for testing, and the tests
# themselves unoptimised, in this build.) No debug information: the installed programs are
# stripped, so it would be made only to be thrown away (making it took 14 s of a fresh build's 432).
RELEASE := -c release -debug-info-format none -Xswiftc -Osize -Xswiftc -Xfrontend -Xswiftc -function-sections
VERSION := $(shell sed -n 's/.*static let current = "\(.*\)".*/\1/p' Sources/ScreenTimeAgent/Policy/PolicyService.swift)
ARCH := $(shell dpkg --print-architecture)
# Where the unit and zsh's completions go: `make install`'s places; the package's differ.
UNITDIR ?= /etc/systemd/system
ZSH_COMPLETIONS ?= $(PREFIX)/share/zsh/site-functions
DOCS := .build/docs
DEB := .build/deb
# How the package's contents are compressed: xz at its highest level (about a minute on 2 cores);
# `make test` uses level 1 (quicker, a few MB bigger), its package the same files.
DEB_COMPRESSION ?= -Zxz -z9 -Sextreme

# Man pages and completions, made from the binaries themselves: swift-argument-parser writes the
# completions and screentime(1) and screentimed(8) from the commands' own definitions, and
# screentimed.json(5) comes from the configuration's key list, so none of them can drift.
docs: build
	@bin=$$($(SWIFT) build $(RELEASE) --show-bin-path); \
	rm -rf $(DOCS) && mkdir -p $(DOCS)/man $(DOCS)/completions && \
	for shell in bash zsh fish; do \
	  "$$bin/screentime" --generate-completion-script $$shell > $(DOCS)/completions/screentime.$$shell || exit 1; \
	done && \
	"$$bin/screentimed" --configuration-manual > $(DOCS)/man/screentimed.json.5 && \
	$(SWIFT) package plugin generate-manual --help >/dev/null && \
	tool=$$(find .build \( -path '*/debug/generate-manual-tool' -o -path '*/debug/generate-manual' \) \
	  -type f -perm -u+x | head -n 1) && \
	{ [ -x "$$tool" ] || { echo "swift-argument-parser's generate-manual tool was not built"; exit 1; }; } && \
	"$$tool" "$$bin/screentime" --section 1 --authors "the screentime developers" -o $(DOCS)/man && \
	"$$tool" "$$bin/screentimed" --section 8 --authors "the screentime developers" -o $(DOCS)/man && \
	sed -i 's/^$$/.Pp/' $(DOCS)/man/screentime.1 $(DOCS)/man/screentimed.8 && \
	sed -i '1{/^#!/d}' $(DOCS)/completions/screentime.bash && \
	cp packaging/man/* $(DOCS)/man/ && \
	ls $(DOCS)/man $(DOCS)/completions

# Everything screentime installs, into $(DESTDIR)$(PREFIX): the one list `make install` and
# `make deb` share. Each file put in place is written to lib/screentime/installed, which
# `make uninstall` removes. Configuration files a guardian edited are kept (DESTDIR empty).
stage:
	@set -e; bin=$$($(SWIFT) build $(RELEASE) --show-bin-path); root="$(DESTDIR)"; \
	list=$$(mktemp); \
	put() { mode=$$1; from=$$2; to=$$3; install -D -m $$mode "$$from" "$$root$$to"; echo "$$to" >> $$list; }; \
	program() { put 0755 "$$bin/$$1" $$2; strip --strip-unneeded "$$root$$2"; \
	  patchelf --set-rpath '$$ORIGIN/../lib/screentime' "$$root$$2"; }; \
	runtime=$$(ldd "$$bin/screentime" "$$bin/screentime-shield" "$$bin/screentimed" "$$bin/screentime-web" \
	  | awk '$$3 ~ /\/lib\/swift\/linux\/[^/]*\.so$$/ { print $$3 }' | sort -u); \
	[ -n "$$runtime" ] || { echo "stage: the programs use no Swift runtime library: ldd found none"; exit 1; }; \
	for lib in $$runtime; do \
	  put 0644 "$$lib" $(PREFIX)/lib/screentime/$${lib##*/}; strip --strip-unneeded "$$root$(PREFIX)/lib/screentime/$${lib##*/}"; \
	  patchelf --set-rpath '$$ORIGIN' "$$root$(PREFIX)/lib/screentime/$${lib##*/}"; \
	done; \
	program screentime $(PREFIX)/bin/screentime; \
	program screentime-shield $(PREFIX)/bin/screentime-shield; \
	program screentimed $(PREFIX)/sbin/screentimed; \
	put 0644 $(PAM_MODULE) $(PREFIX)/lib/screentime/pam_screentime.so; strip --strip-unneeded "$$root$(PREFIX)/lib/screentime/pam_screentime.so"; \
	program screentime-web $(PREFIX)/bin/screentime-web; \
	put 0755 packaging/screentimed-supervise $(PREFIX)/sbin/screentimed-supervise; \
	put 0755 packaging/screentime-setup $(PREFIX)/lib/screentime/screentime-setup; \
	for f in $$(cd etc/screentime && find . -type f | sed "s,^\./,," | sort); do \
	  if [ -z "$(DESTDIR)" ] && [ -e "$(SYSCONFDIR)/screentime/$$f" ]; then echo "keeping $(SYSCONFDIR)/screentime/$$f"; \
	  else put 0644 "etc/screentime/$$f" $(SYSCONFDIR)/screentime/$$f; fi; \
	done; \
	put 0644 packaging/pam.d/screentime $(SYSCONFDIR)/pam.d/screentime; \
	put 0644 packaging/logrotate/screentime $(SYSCONFDIR)/logrotate.d/screentime; \
	sed 's,@LIBDIR@,$(PREFIX)/lib,' packaging/pam-configs/screentime > $(DOCS)/pam-configs; \
	put 0644 $(DOCS)/pam-configs /usr/share/pam-configs/screentime; \
	sed 's,@SBINDIR@,$(PREFIX)/sbin,' packaging/screentimed.service > $(DOCS)/screentimed.service; \
	put 0644 $(DOCS)/screentimed.service $(UNITDIR)/screentimed.service; \
	for f in metadata.json extension.js; do \
	  put 0644 "packaging/gnome-shell/$(SHELL_EXTENSION)/$$f" $(PREFIX)/share/gnome-shell/extensions/$(SHELL_EXTENSION)/$$f; \
	done; \
	for f in metadata.json contents/code/main.js; do \
	  put 0644 "packaging/kwin/$(KWIN_SCRIPT)/$$f" $(PREFIX)/share/kwin/scripts/$(KWIN_SCRIPT)/$$f; \
	done; \
	for page in $$(ls $(DOCS)/man); do \
	  section=$${page##*.}; gzip -9n < $(DOCS)/man/$$page > $(DOCS)/$$page.gz; \
	  put 0644 $(DOCS)/$$page.gz $(PREFIX)/share/man/man$$section/$$page.gz; \
	done; \
	put 0644 $(DOCS)/completions/screentime.bash $(PREFIX)/share/bash-completion/completions/screentime; \
	put 0644 $(DOCS)/completions/screentime.zsh $(ZSH_COMPLETIONS)/_screentime; \
	put 0644 $(DOCS)/completions/screentime.fish $(PREFIX)/share/fish/vendor_completions.d/screentime.fish; \
	put 0644 README.md $(PREFIX)/share/doc/screentime/README.md; \
	for f in guardian-guide child developer-guide architecture threat-model; do \
	  put 0644 docs/$$f.md $(PREFIX)/share/doc/screentime/docs/$$f.md; \
	done; \
	put 0644 packaging/debian/copyright $(PREFIX)/share/doc/screentime/copyright; \
	echo $(PREFIX)/lib/screentime/installed >> $$list; \
	install -D -m 0644 $$list "$$root$(PREFIX)/lib/screentime/installed"; rm -f $$list

# From a source tree: system packages, the release build, man pages and completions, every file
# in place (`stage`), then what the package's postinst does too (packaging/screentime-setup):
# the accounts, the state directory, the PAM hooks, and the agent started (through systemd where
# systemd runs, else under screentimed-supervise: pid file, restart on crash).
install: docs
	$(MAKE) --no-print-directory stage DESTDIR=
	@# An older install kept the agent in bin/, and had a PAM hook program.
	@rm -f $(PREFIX)/bin/screentimed $(PREFIX)/sbin/screentime-pam
	SBINDIR=$(PREFIX)/sbin GUARDIAN_GROUP=$(GUARDIAN_GROUP) EXTENSION_USER=$(EXTENSION_USER) \
	  $(PREFIX)/lib/screentime/screentime-setup configure
	@echo "installed. Guardians are root and members of $(GUARDIAN_GROUP): sudo usermod -aG $(GUARDIAN_GROUP) YOU"

# Stops the agent (its firewall chains, browser policies and PAM hooks go with it) and removes
# every file `stage` put in place; keeps the state, the configuration and the accounts unless
# PURGE=1.
uninstall:
	@if [ -x $(PREFIX)/lib/screentime/screentime-setup ]; then \
	  SBINDIR=$(PREFIX)/sbin $(PREFIX)/lib/screentime/screentime-setup stop; fi
	@if [ -f $(PREFIX)/lib/screentime/installed ]; then \
	  for f in $$(cat $(PREFIX)/lib/screentime/installed); do \
	    case "$$f" in $(SYSCONFDIR)/screentime/*) [ "$(PURGE)" = "1" ] && rm -f "$$f";; *) rm -f "$$f";; esac; \
	  done; \
	  rmdir $(PREFIX)/lib/screentime $(PREFIX)/share/doc/screentime/docs $(PREFIX)/share/doc/screentime \
	    $(PREFIX)/share/gnome-shell/extensions/$(SHELL_EXTENSION) \
	    $(PREFIX)/share/kwin/scripts/$(KWIN_SCRIPT)/contents/code $(PREFIX)/share/kwin/scripts/$(KWIN_SCRIPT)/contents \
	    $(PREFIX)/share/kwin/scripts/$(KWIN_SCRIPT) 2>/dev/null || true; \
	fi
	@if [ "$(PURGE)" = "1" ]; then \
	  rm -rf $(SYSCONFDIR)/screentime; \
	  GUARDIAN_GROUP=$(GUARDIAN_GROUP) EXTENSION_USER=$(EXTENSION_USER) sh packaging/screentime-setup purge; \
	  echo "removed screentime, its state and configuration"; \
	else \
	  echo "removed screentime; kept /var/lib/screentime and $(SYSCONFDIR)/screentime (make uninstall PURGE=1 removes them)"; \
	fi

# The Debian package, from the same list: staged under /usr, its dependencies computed from the
# binaries (dpkg-shlibdeps), every file under /etc a conffile.
deb: deb-deps docs
	@set -e; rm -rf $(DEB) && mkdir -p $(DEB)/root/DEBIAN $(DEB)/debian; \
	$(MAKE) --no-print-directory stage DESTDIR=$(CURDIR)/$(DEB)/root PREFIX=/usr \
	  UNITDIR=/lib/systemd/system ZSH_COMPLETIONS=/usr/share/zsh/vendor-completions >/dev/null; \
	root=$(DEB)/root; \
	gzip -9n < packaging/debian/changelog > $$root/usr/share/doc/screentime/changelog.gz; \
	chmod 0644 $$root/usr/share/doc/screentime/changelog.gz; \
	(cd $$root && find etc -type f | sed 's,^,/,' | sort) > $$root/DEBIAN/conffiles; \
	for script in postinst prerm postrm; do install -m 0755 packaging/debian/$$script $$root/DEBIAN/$$script; done; \
	printf 'Source: screentime\n\nPackage: screentime\nArchitecture: any\n' > $(DEB)/debian/control; \
	shlibs=$$(cd $(DEB) && dpkg-shlibdeps -O -lroot/usr/lib/screentime -e root/usr/bin/screentime \
	  -e root/usr/bin/screentime-shield -e root/usr/bin/screentime-web -e root/usr/sbin/screentimed \
	  $$(ls root/usr/lib/screentime/*.so | sed 's/^/-e /') 2>shlibdeps.log | sed -n 's/^shlibs:Depends=//p'); \
	[ -n "$$shlibs" ] || { cat $(DEB)/shlibdeps.log; echo "dpkg-shlibdeps found no dependency"; exit 1; }; \
	size=$$(du -sk --exclude=DEBIAN $$root | cut -f1); \
	sed -e "s/@VERSION@/$(VERSION)/" -e "s/@ARCH@/$(ARCH)/" -e "s/@SIZE@/$$size/" -e "s/@SHLIBS@/$$shlibs/" \
	  packaging/debian/control.in > $$root/DEBIAN/control; \
	dpkg-deb --root-owner-group $(DEB_COMPRESSION) --build $$root $(DEB)/screentime_$(VERSION)_$(ARCH).deb >/dev/null; \
	deb=$(DEB)/screentime_$(VERSION)_$(ARCH).deb; \
	echo "the package: $$(( $$(stat -c %s $$deb) / 1048576 )) MB, $$(( size / 1024 )) MB installed; its programs:"; \
	for p in usr/bin/screentime usr/bin/screentime-shield usr/bin/screentime-web usr/sbin/screentimed usr/lib/screentime/pam_screentime.so; do \
	  printf '  %-44s %6d KB\n' "/$$p" $$(( $$(stat -c %s $$root/$$p) / 1024 )); \
	done; \
	printf '  %-44s %6d KB\n' "/usr/lib/screentime/lib*.so (Swift's runtime)" \
	  $$(( $$(cat $$root/usr/lib/screentime/lib*.so | wc -c) / 1024 )); \
	echo "$(CURDIR)/$$deb"

clean:
	rm -rf .build

# sonde build, run and test. Every install step lives here so a fresh
# machine (Debian 12, root) needs nothing else: `make run`, `make test`.

GO       ?= go
BIN      := bin/sonde
QUIC_BIN := bin/sonde-quic
VERSION  := $(shell git describe --always --dirty 2>/dev/null || echo dev)
GOFILES  := $(shell find cmd internal -name '*.go' -not -name '*_test.go' 2>/dev/null)
# Debian packages the tests and benchmarks use (peers and tools).
APT_PKGS := snmpd snmp prometheus-node-exporter qemu-user-static lintian iperf3 irtt iputils-ping iproute2 tcpdump tshark tcptrace chromium firefox-esr postgresql \
            prometheus-smokeping-prober sqlite3 curl
NDT7_DIR := test/interop/ndt7
WEB_SRC  := $(wildcard web/src/*) web/build.mjs web/package.json web/package-lock.json

# Release targets: home gateways and Raspberry Pis (linux/arm64) are where
# a monitor lives; macOS and Windows run analyze, report and the tests
# that need no lab.
RELEASE_TARGETS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64
# Cheap portability check of make test: everything compiles for these.
CROSS_TARGETS   := darwin/amd64 windows/amd64 linux/arm64

.PHONY: build run test cross deps apt-deps node-deps web bench release monitor-release deb clean

build: $(BIN) $(QUIC_BIN)

# sonde-quic (quic/, Rust + quinn): the lab's QUIC endpoint that spins.
# Optional: without cargo the Go side builds and the spin lab tests skip.
$(QUIC_BIN): $(wildcard quic/src/*.rs) quic/Cargo.toml quic/Cargo.lock
	@if command -v cargo >/dev/null; then \
		cargo build --release --locked --manifest-path quic/Cargo.toml --target-dir quic/target && \
		mkdir -p bin && cp quic/target/release/sonde-quic $(QUIC_BIN); \
	else echo "make: no cargo; skipping bin/sonde-quic (the QUIC spin-bit lab tests will skip)"; fi

# The browser page (TypeScript) is built into web/dist, which the binary
# embeds. web/dist is committed, so a machine without npm still builds.
web/dist/app.js: $(WEB_SRC)
	@if command -v npm >/dev/null; then \
		cd web && { [ node_modules/.package-lock.json -nt package-lock.json ] || npm ci --no-audit --no-fund --loglevel=error; } && npm run --silent build; \
	else echo "make: no npm; using the committed web/dist"; fi

web: web/dist/app.js

$(BIN): $(GOFILES) go.mod go.sum web/dist/app.js
	$(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/sonde

# The main job: the full test suite across an emulated bufferbloated ADSL
# line (seed 001), with the configured ground truth next to each figure.
# Building the lab needs root; otherwise test against the embedded server.
run: build
	@if [ "$$(id -u)" = 0 ]; then ./$(BIN) test --lab adsl; \
	else echo "make run: not root, so no emulated path (the lab needs CAP_NET_ADMIN); testing against the embedded loopback server instead"; \
	./$(BIN) test; fi

# Every test of the project. Root-only tests (namespaces, capture) skip with
# a reason when not root; CI runs as root. Packages run one at a time (-p 1):
# the lab's accuracy tests hold timing to 0.2 ms and must not share the two
# cores with Chromium or a loopback throughput test.
test: build deps cross
	$(GO) vet ./...
	cd web && npm test --silent
	$(GO) test -count=1 -p 1 -timeout 15m ./...
	# The store on its second SQLite driver (ncruces/go-sqlite3, the mips one)
	# and in the monitor-only build (no SQLite, no PostgreSQL: the journal).
	$(GO) test -count=1 -p 1 -tags sqlite_ncruces ./internal/store/
	$(GO) test -count=1 -p 1 -tags monitoronly -run 'Journal|Conformance' ./internal/store/
	# The monitor-only build's sonde(1) (docs/sonde-monitor.1) is current.
	$(GO) test -count=1 -tags monitoronly -run '^TestMonitorManPage$$' ./cmd/sonde/

# Compile (no link, nothing written) for the other systems and arm64, so a
# Linux-only call outside a _linux.go file fails here, not on a user's Mac;
# vet there too, which also compiles the test files (a test of Linux-only
# code is a _linux_test.go file).
cross:
	@for t in $(CROSS_TARGETS); do \
		echo "go build ./... for $$t"; \
		CGO_ENABLED=0 GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) build ./... || exit 1; \
	done
	@for os in darwin windows; do \
		echo "go vet ./... for $$os"; \
		CGO_ENABLED=0 GOOS=$$os $(GO) vet ./... || exit 1; \
	done

# Static binaries for every release target in dist/ (gitignored), named
# sonde-VERSION-OS-ARCH[.exe], with the version string and no local paths.
release: web/dist/app.js
	@mkdir -p dist
	@for t in $(RELEASE_TARGETS); do \
		os=$${t%/*}; arch=$${t#*/}; ext=; [ $$os = windows ] && ext=.exe; \
		out=dist/sonde-$(VERSION)-$$os-$$arch$$ext; echo "$$out"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath \
			-ldflags "-s -w -X main.version=$(VERSION)" -o $$out ./cmd/sonde || exit 1; \
	done

# The monitor-only build for gateways and small boards (docs/monitor.md,
# "Where to run it"): the same code as sonde with tag monitoronly, which
# wires only `sonde monitor` (run, status, report, alerts: probing,
# counters, the journal store, ship, /metrics, the dashboard) and leaves out
# the server, test clients, WebRTC, capture analysis, the emulator and lab,
# SQLite and the PostgreSQL driver. Named sonde-monitor-VERSION-linux-ARCH;
# linux-arm is ARMv7 (Pi 2 and later), linux-armv6 ARMv6 (Pi Zero, Pi 1),
# linux-mipsle MIPS32 little-endian without an FPU (GOMIPS=softfloat:
# OpenWrt's MT7621 routers).
MONITOR_TARGETS := amd64 arm64 arm:7 armv6:6 mipsle
# Size (the bar is 12 MB stripped; docs/monitor.md has the steps): no
# HTTP/2 in net/http (the monitor speaks HTTP/1.1 to servers and browsers)
# and no inlining (-l: 1.2 MB less on arm64; the soak's CPU is measured with
# it). test/smallbox builds with the same flags.
MONITOR_BUILD := -tags monitoronly,nethttpomithttp2 -gcflags=all=-l -trimpath
monitor-release: web/dist/app.js
	@mkdir -p dist
	@for t in $(MONITOR_TARGETS); do \
		name=$${t%%:*}; goarm=$${t#*:}; arch=$$name; [ $$name = armv6 ] && arch=arm; [ $$goarm = $$t ] && goarm=; \
		out=dist/sonde-monitor-$(VERSION)-linux-$$name; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch GOARM=$$goarm GOMIPS=softfloat $(GO) build $(MONITOR_BUILD) \
			-ldflags "-s -w -X main.version=$(VERSION)" -o $$out ./cmd/sonde || exit 1; \
		echo "$$out $$(stat -c %s $$out) bytes"; \
	done

# Debian packages of sonde for amd64, arm64 and armhf (ARMv7) in dist/, and
# of sonde-monitor (the monitor-only build alone, with its own sonde(1):
# docs/sonde-monitor.1) for arm64 and armhf, with systemd units for sonde serve and sonde monitor run (contrib/deb),
# checked by lintian when it is installed (errors fail the build). The
# binary is static, as Go's are (lintian's override says so: it exempts
# only Go packages built from a Debian source package).
DEB_VERSION := 0.0~git$(shell git rev-parse --short HEAD 2>/dev/null || echo 0)
DEB_TARGETS := amd64:amd64: arm64:arm64: armhf:arm:7
deb: web/dist/app.js
	@mkdir -p dist
	@for t in $(DEB_TARGETS); do \
		debarch=$${t%%:*}; rest=$${t#*:}; arch=$${rest%%:*}; goarm=$${rest#*:}; \
		bin=dist/sonde-deb-linux-$$debarch; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch GOARM=$$goarm $(GO) build -trimpath \
			-ldflags "-s -w -X main.version=$(DEB_VERSION)" -o $$bin ./cmd/sonde || exit 1; \
		out=dist/sonde_$(DEB_VERSION)_$$debarch.deb; \
		sh contrib/deb/build-deb.sh $(DEB_VERSION) $$debarch $$bin $$out || exit 1; rm -f $$bin; \
		if command -v lintian >/dev/null; then lintian --fail-on error $$out || exit 1; fi; \
		[ $$debarch = amd64 ] && continue; \
		bin=dist/sonde-monitor-deb-linux-$$debarch; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch GOARM=$$goarm $(GO) build $(MONITOR_BUILD) \
			-ldflags "-s -w -X main.version=$(DEB_VERSION)" -o $$bin ./cmd/sonde || exit 1; \
		out=dist/sonde-monitor_$(DEB_VERSION)_$$debarch.deb; \
		sh contrib/deb/build-deb.sh $(DEB_VERSION) $$debarch $$bin $$out monitor || exit 1; rm -f $$bin; \
		if command -v lintian >/dev/null; then lintian --fail-on error $$out || exit 1; fi; \
	done

deps: apt-deps node-deps

# Install the Debian packages that are missing (apt-get update first, once).
apt-deps:
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" != 0 ]; then echo "make: missing Debian packages:$$missing (run as root to install)"; \
		else echo "make: installing$$missing"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi; \
	fi

# The ndt7 reference client (interop test) and the page's build and test
# tools (esbuild, TypeScript, playwright-core for the Chromium test).
node-deps:
	@if [ -f $(NDT7_DIR)/package-lock.json ] && [ ! -d $(NDT7_DIR)/node_modules ]; then \
		cd $(NDT7_DIR) && npm ci --no-audit --no-fund --loglevel=error; fi
	@[ web/node_modules/.package-lock.json -nt web/package-lock.json ] || (cd web && npm ci --no-audit --no-fund --loglevel=error)

bench: build apt-deps
	bash bench/tcp.sh
	bash bench/udp.sh
	bash bench/iperf3.sh
	bash bench/browser.sh
	bash bench/browser_rtc.sh
	bash bench/analyze.sh
	bash bench/capture.sh
	bash bench/monitor_soak.sh
	bash bench/monitor_peers.sh
	$(GO) test -run XXX -bench Emulator -benchtime 1x ./bench/

clean:
	rm -rf bin dist

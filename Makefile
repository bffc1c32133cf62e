# The one test command: `make test`. It installs what the tests need
# (redis-server, beanstalkd, chromium and chromium-driver for the dashboard
# test) when they are missing and it runs as root, and
# otherwise says how to get them.

GO ?= go
APT_PACKAGES := redis-server:redis-server beanstalkd:beanstalkd chromium:chromium chromedriver:chromium-driver

.PHONY: test deps vet build

test: deps vet
	$(GO) test -race -count=1 -timeout 20m ./...
	$(GO) test -run '^$$' -fuzz FuzzAPI -fuzztime 10s ./server/httpapi/
	$(GO) test -run '^$$' -fuzz FuzzCommands -fuzztime 10s ./server/beanstalk/

vet:
	$(GO) vet ./...
	cd bench && $(GO) vet ./...

# The commit and version go in by hand too, for environments that turn off
# the go command's own stamp (GOFLAGS=-buildvcs=false), and since a build
# from a checkout has no module version: make build VERSION=v1.2.3 (default:
# what git describe says of the checkout).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
BUILDINFO = github.com/hourglass-io/hourglass/internal/buildinfo
build:
	$(GO) build -ldflags "-X $(BUILDINFO).commit=$$(git rev-parse --short HEAD 2>/dev/null)$$(git diff --quiet HEAD 2>/dev/null || echo -dirty) -X $(BUILDINFO).version=$(VERSION)" -o bin/hourglass ./cmd/hourglass

deps:
	@missing=""; \
	for pair in $(APT_PACKAGES); do \
		bin=$${pair%%:*}; pkg=$${pair##*:}; \
		command -v $$bin >/dev/null 2>&1 || missing="$$missing $$pkg"; \
	done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing:$$missing"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
		else \
			echo "missing:$$missing — install with: sudo apt-get install -y$$missing" >&2; exit 1; \
		fi; \
	fi

# The one test command is `make test`: it installs what is missing (Debian
# packages, Go modules), then runs the whole offline suite.
GO ?= go

.PHONY: test deps lint unit unit-warm warm module vm bench demo demo-check

# The ordinary suite first (with the VM tier's caches filled beside it),
# then the VM tier (never beside the suite: 2 cores), then the demo's own
# check (so `make demo` cannot rot).
test: deps lint module unit-warm vm demo-check

# The web golden configuration in QEMU at https://box.localhost:8443/, until
# Ctrl-C.
demo: deps
	$(GO) run ./cmd/agent-box-demo

# Boots the demo, logs in, types into a terminal (WebSocket client, then
# headless chromium; screenshot under the VM logs), stops.
demo-check: deps
	$(GO) run ./cmd/agent-box-demo -check

deps:
	./scripts/deps

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

module:
	$(GO) run ./cmd/assemble-module -check

# The VM tier's and the demo's caches (the guest image, the pinned agent
# CLIs, the web assets): downloads and unpacking, built once.
warm: deps
	$(GO) run ./cmd/agent-box-demo -warm

# `make unit` with `make warm` beside it: a cold cache is mostly network
# and disk, which the unit tests leave idle. Both must succeed.
unit-warm:
	@log=$$(mktemp); \
	$(GO) run ./cmd/agent-box-demo -warm >"$$log" 2>&1 & warm=$$!; \
	$(MAKE) --no-print-directory unit; rc=$$?; \
	if ! wait $$warm; then echo "make warm failed:"; cat "$$log"; rm -f "$$log"; exit 1; fi; \
	grep '^vmtest:' "$$log"; rm -f "$$log"; exit $$rc

unit:
	$(GO) test -count=1 ./...
	@# The security scores, printed (the test enforces the threshold).
	@$(GO) test -count=1 -run TestUnitsExposureIsUnderTheirCeilings -v ./internal/golden | grep -E 'exposure' | sed 's/^ *//'

# Offline VM tier: boots the golden bytes under real systemd in QEMU.
vm:
	$(GO) test -tags vm -count=1 -timeout 40m -run TestScenarios -v ./internal/vmtest

bench:
	$(GO) test -run '^$$' -bench . -count 5 ./internal/assemble

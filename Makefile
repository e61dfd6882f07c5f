# The one test command is `make test`: it installs what is missing (Debian
# packages, Go modules), then runs the whole offline suite.
GO ?= go

.PHONY: test deps lint unit module vm bench demo demo-check

# The ordinary suite first, then the VM tier (never both at once: 2 cores),
# then the demo's own check (so `make demo` cannot rot).
test: deps lint module unit vm demo-check

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

unit:
	$(GO) test -count=1 ./...
	@# The security scores, printed (the test enforces the threshold).
	@$(GO) test -count=1 -run TestUnitsExposureIsUnderTheirCeilings -v ./internal/golden | grep -E 'exposure' | sed 's/^ *//'

# Offline VM tier: boots the golden bytes under real systemd in QEMU.
vm:
	$(GO) test -tags vm -count=1 -timeout 40m -run TestScenarios -v ./internal/vmtest

bench:
	$(GO) test -run '^$$' -bench . -count 5 ./internal/assemble

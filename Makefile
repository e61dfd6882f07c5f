# The one test command is `make test`: it installs what is missing (Debian
# packages, Go modules), then runs the whole offline suite.
GO ?= go

.PHONY: test deps lint unit module bench

test: deps lint module unit

deps:
	./scripts/deps

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

module:
	$(GO) run ./cmd/assemble-module -check

unit:
	$(GO) test -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -count 5 ./internal/assemble

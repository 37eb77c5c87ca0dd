# drover's build. Go comes from /usr/local/go on a fresh machine; modules
# from the Go module proxy.
export PATH := /usr/local/go/bin:$(PATH)
GO ?= go
BIN := bin/drover

.PHONY: build test lint dev dev-stop bench clean lambda

## build: the drover binary (CLI, dev agent, task supervisor) into bin/
build:
	$(GO) build -o $(BIN) ./cmd/drover

## test: every test (unit, conformance, integration, end to end), race detector on
test: lint
	$(GO) test -race -timeout 20m ./...
	@# The reference scenarios' summary (go test hides a passing package's output).
	@$(GO) test -count=1 -run '^TestOracle$$' -v ./reconcile/ | grep '^oracle'

## lint: gofmt and go vet must be clean
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## dev: start the dev agent in the background and run the example job
dev: build
	@scripts/dev.sh start

## dev-stop: stop the dev agent started by `make dev` (its tasks stop too)
dev-stop:
	@scripts/dev.sh stop

## bench: the benchmarks whose figures the README reports
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./reconcile/ ./scheduler/
	$(GO) test -run '^$$' -bench . -benchmem -cpu 1 ./placement/

## lambda: the AWS home's Lambda functions as bootstrap binaries for
## provided.al2023 on arm64, into build/<function>/bootstrap (template.yaml
## and infra/ deploy these)
LAMBDAS := api evaluate sweeper authorizer
lambda:
	@for f in $(LAMBDAS); do \
		GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' \
			-o build/$$f/bootstrap ./functions/$$f || exit 1; \
	done
	@for f in $(LAMBDAS); do printf '%-28s %s bytes\n' build/$$f/bootstrap $$(stat -c %s build/$$f/bootstrap); done

clean:
	rm -rf bin .dev-data build

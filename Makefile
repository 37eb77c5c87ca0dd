# drover's build. Go comes from /usr/local/go on a fresh machine; modules
# from the Go module proxy.
export PATH := /usr/local/go/bin:$(PATH)
GO ?= go
BIN := bin/drover

.PHONY: build test lint dev dev-stop bench clean lambda bench-c1m bench-burst chaos chaos-aws chaos-proc

## build: the drover binary (CLI, dev agent, task supervisor) into bin/
build:
	$(GO) build -o $(BIN) ./cmd/drover

## test: every test (unit, conformance, integration, end to end), race detector on
test: lint
	@# The AWS packages' tests run on kumo and on moto; without moto its leg is skipped (.ci/run requires it).
	@command -v moto_server >/dev/null 2>&1 || python3 -c 'import moto.server' >/dev/null 2>&1 || \
		{ if [ "$$DROVER_REQUIRE_MOTO" = 1 ]; then echo "moto is required (DROVER_REQUIRE_MOTO=1): pip install 'moto[server]'"; exit 1; fi; \
		  echo "moto not found: the AWS packages' moto leg is skipped (install it: pip install 'moto[server]')"; }
	$(GO) test -race -timeout 20m ./...
	@# The chaos suite must catch a deliberately broken invariant: a build whose
	@# stores skip the commit-time capacity check (embedded; DynamoDB, on kumo).
	DROVER_EMULATORS=kumo $(GO) test -count=1 -tags drover_broken_capacity -run '^TestBrokenCapacityCheckIsCaught$$' ./chaos/ ./chaos/aws/
	@# The reference scenarios' summary (go test hides a passing package's output).
	@$(GO) test -count=1 -run '^TestOracle$$' -v ./reconcile/ | grep '^oracle'

## lint: gofmt and go vet must be clean; AWS's linter passes on template.yaml
## with informational checks on, and infra/ is formatted as terraform fmt
## wants (each tool skipped with a line when absent; DROVER_REQUIRE_TOOLS=1,
## as .ci/run sets, makes a missing tool an error). terraform validate and the
## SAM transform run as Go tests in infra/.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@if command -v cfn-lint >/dev/null; then echo "cfn-lint --include-checks I -- template.yaml"; cfn-lint --include-checks I -- template.yaml; \
	elif [ "$${DROVER_REQUIRE_TOOLS:-}" = 1 ]; then echo "cfn-lint is required (pip install cfn-lint)"; exit 1; \
	else echo "cfn-lint not found: template.yaml not linted (pip install cfn-lint)"; fi
	@if command -v terraform >/dev/null; then echo "terraform fmt -check -recursive infra"; TF_CLI_CONFIG_FILE=/dev/null terraform fmt -check -diff -recursive infra; \
	elif [ "$${DROVER_REQUIRE_TOOLS:-}" = 1 ]; then echo "terraform is required"; exit 1; \
	else echo "terraform not found: infra/ formatting not checked"; fi

## chaos: the fault-schedule suite on SEEDS seeds (default 1000) from
## FIRST (default 1), with its summary table; SEED=N replays one seed;
## FEATURES=none|all|canaries,drains,... and STEPS=N shape the schedules
## (as a finding's replay command names them)
SEEDS ?= 1000
FIRST ?= 1
CHAOSFLAGS = $(if $(FEATURES),-features '$(FEATURES)') $(if $(STEPS),-steps $(STEPS))
# SEED with SEEDS given too: passed on, so that the suite refuses the pair.
SEEDFLAGS = -seed $(SEED)$(if $(filter command line,$(origin SEEDS)), -seeds $(SEEDS))
# The numbers are checked here: go test answers a flag it cannot parse
# with its whole usage. NAME=VALUE pairs; "?" after the name: may be empty;
# "-" : may be negative (the suite then says what it takes).
CHECKNUMS = for v in 'SEEDS-=$(SEEDS)' 'FIRST=$(FIRST)' 'SEED?-=$(SEED)' 'STEPS?-=$(STEPS)' 'PARALLEL=$(PARALLEL)'; do \
	name=$${v%%=*}; val=$${v\#*=}; num=$$val; \
	case $$name in *-) num=$${val\#-};; esac; \
	case $$name in *\?*) [ -z "$$val" ] && continue;; esac; \
	case $$num in ''|*[!0-9]*) echo "make: $${name%%[?-]*}=$$val: a whole number is wanted"; exit 2;; esac; \
	done; \
	[ "$(PARALLEL)" -ge 1 ] || { echo "make: PARALLEL=$(PARALLEL): at least 1 (schedules played at once)"; exit 2; }
# The many-seed runs filter go test's output: pipefail keeps its status.
chaos chaos-aws chaos-proc: SHELL := /bin/bash
chaos:
	@$(CHECKNUMS); set -o pipefail; if [ -n "$(SEED)" ]; then $(GO) test -count=1 -v -run '^TestChaos$$' ./chaos/ $(SEEDFLAGS) $(CHAOSFLAGS); \
	else $(GO) test -count=1 -timeout 60m -run '^TestChaos$$' ./chaos/ -v -seeds $(SEEDS) -first-seed $(FIRST) $(CHAOSFLAGS) | grep -v '^=== RUN'; fi

## chaos-aws: the same on the AWS home, on kumo (EMULATORS=kumo,moto adds
## moto's leg: about 6 s a schedule there)
EMULATORS ?= kumo
chaos-aws:
	@$(CHECKNUMS); set -o pipefail; if [ -n "$(SEED)" ]; then DROVER_EMULATORS=$(EMULATORS) $(GO) test -count=1 -v -run '^TestChaos$$' ./chaos/aws/ $(SEEDFLAGS) $(CHAOSFLAGS); \
	else DROVER_EMULATORS=$(EMULATORS) $(GO) test -count=1 -timeout 120m -run '^TestChaos$$' ./chaos/aws/ -v -seeds $(SEEDS) -first-seed $(FIRST) $(CHAOSFLAGS) | grep -v '^=== RUN'; fi

## chaos-proc: the process-level leg of the embedded home (real drover
## server and clients; kill -9, SIGSTOP past the heartbeat TTL) on SEEDS
## seeds from FIRST, PARALLEL schedules at once (default 2), with its
## summary table; SEED=N replays one (up to 5 times, until it fails);
## STEPS=N shapes the schedules (FEATURES does not apply here)
PARALLEL ?= 2
chaos-proc:
	@$(CHECKNUMS); set -o pipefail; if [ -n "$(SEED)" ]; then $(GO) test -count=1 -v -run '^TestChaosProc$$' ./chaos/proc/ $(SEEDFLAGS) -repeat 5 $(CHAOSFLAGS); \
	else $(GO) test -count=1 -timeout 600m -parallel $(PARALLEL) -run '^TestChaosProc$$' ./chaos/proc/ -v -seeds $(SEEDS) -first-seed $(FIRST) $(CHAOSFLAGS) | grep -v '^=== \|^    --- PASS\|^        --- PASS'; fi

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

## bench-c1m: the C1M shape, small by default (100 jobs × 1,000 allocs on
## 1,000 nodes); ARGS="-nodes 5000 -jobs 1000 -count 1000" is Nomad's C1M
bench-c1m:
	$(GO) run ./cmd/drover-bench c1m $(ARGS)

## bench-burst: 4,000 one-alloc jobs registered as fast as the API takes
## them on 3 nodes, then purged
bench-burst:
	$(GO) run ./cmd/drover-bench burst $(ARGS)

## lambda: the AWS home's Lambda functions as bootstrap binaries for
## provided.al2023 on arm64, into build/<function>/bootstrap, and each zipped
## as Lambda takes it into build/<function>.zip (infra/ deploys these; the
## zips carry no timestamps, so an unchanged binary gives the same zip)
LAMBDAS := api evaluate sweeper authorizer
LAMBDA_BUILD = GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w'
lambda:
	@for f in $(LAMBDAS); do \
		$(LAMBDA_BUILD) -o build/$$f/bootstrap ./functions/$$f || exit 1; \
		out=$$($(GO) run github.com/aws/aws-lambda-go/cmd/build-lambda-zip -o build/$$f.zip build/$$f/bootstrap 2>&1) || \
			{ printf '%s\nmake lambda: zipping build/%s/bootstrap failed\n' "$$out" "$$f" >&2; exit 1; }; \
	done
	@for f in $(LAMBDAS); do printf '%-28s %s bytes\n' build/$$f/bootstrap $$(wc -c < build/$$f/bootstrap | tr -d ' '); done

## build-<Function>: what `sam build` runs for each function of template.yaml
## (Metadata BuildMethod: makefile): its bootstrap into $(ARTIFACTS_DIR)
.PHONY: build-ApiFunction build-EvaluateFunction build-SweeperFunction build-AuthorizerFunction
build-ApiFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/api
build-EvaluateFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/evaluate
build-SweeperFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/sweeper
build-AuthorizerFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/authorizer

clean:
	rm -rf bin .dev-data build .aws-sam

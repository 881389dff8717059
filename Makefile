# Developer shortcuts; CI runs .ci/run.
.PHONY: test test-race test-short bench lint run

test:
	go test ./... ./integration/...

test-race:
	go test -race ./... ./integration/...

test-short:
	go test -short ./... ./integration/...

bench:
	go test -run '^$$' -bench . -benchtime 20000x -count 5 ./relay/ ./integration/relay/

lint:
	gofmt -l . && go vet ./... ./integration/...

run:
	go run ./cmd/herald run

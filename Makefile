# Developer shortcuts; CI runs .ci/run.
.PHONY: test test-race test-short bench lint run

test:
	go test ./...

test-race:
	go test -race ./...

test-short:
	go test -short ./...

bench:
	go test -run '^$$' -bench . -benchtime 20000x -count 5 ./relay/

lint:
	gofmt -l . && go vet ./...

run:
	go run ./cmd/herald run
